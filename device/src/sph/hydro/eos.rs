//! Equations of state: pressure and sound speed from density and specific internal energy,
//! evaluated per particle by material id ([`Material`]): the ideal gas and Tillotson's planetary
//! materials, variants of one enum so that every kernel and the CPU solver dispatch alike.

use super::Float;
use super::tillotson::Tillotson;

/// Pressure and sound speed of a material from `ρ` and `u`.
pub trait Eos<R: Float> {
    fn pressure(&self, rho: R, u: R) -> R;
    fn sound_speed(&self, rho: R, u: R) -> R;
}

/// The ideal gas, `P = (γ − 1) ρ u`, `c_s = √(γ (γ − 1) u)`, any `γ > 1` (the caller checks).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IdealGas<R> {
    pub gamma: R,
}

impl<R: Float> Eos<R> for IdealGas<R> {
    #[inline(always)]
    fn pressure(&self, rho: R, u: R) -> R {
        (self.gamma - R::ONE) * rho * u
    }
    #[inline(always)]
    fn sound_speed(&self, _rho: R, u: R) -> R {
        (self.gamma * (self.gamma - R::ONE) * u).fsqrt()
    }
}

impl<R: Float> IdealGas<R> {
    /// The specific internal energy at pressure `p` and density `rho`.
    #[inline(always)]
    pub fn energy(&self, rho: R, p: R) -> R {
        p / ((self.gamma - R::ONE) * rho)
    }
}

/// A material: one equation of state, chosen per particle by its material id from a table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Material<R> {
    IdealGas(IdealGas<R>),
    Tillotson(Tillotson<R>),
}

impl<R: Float> Eos<R> for Material<R> {
    #[inline(always)]
    fn pressure(&self, rho: R, u: R) -> R {
        match self {
            Material::IdealGas(g) => g.pressure(rho, u),
            Material::Tillotson(t) => t.pressure(rho, u),
        }
    }
    #[inline(always)]
    fn sound_speed(&self, rho: R, u: R) -> R {
        match self {
            Material::IdealGas(g) => g.sound_speed(rho, u),
            Material::Tillotson(t) => t.sound_speed(rho, u),
        }
    }
}
