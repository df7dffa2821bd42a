//! SPH hydrodynamics formulas: kernel values and derivatives, the density sum with its
//! smoothing-length derivative, the grad-h correction, the constant-mass-in-kernel smoothing
//! length, the equation of state ([`eos`]) and the pair terms of the momentum and energy
//! equations with artificial viscosity, its switches and the time step ([`force`]).
//!
//! One copy, generic over the precision ([`Float`]): the float64 CPU solver and the float32
//! kernels call these functions. Conventions as in [`crate::sph`]: `h` is the kernel's support
//! radius (`W(r, h) = 0` for `r ≥ h`); `dx = r_i − r_j`, `dv = v_i − v_j`; `∇W` is the gradient
//! with respect to `r_i`.

pub mod eos;
pub mod force;
pub mod hsearch;
pub mod tillotson;
#[cfg(test)]
mod tillotson_tests;

pub use eos::{Eos, IdealGas, Material};
pub use force::{
    ForceSide, PairTerms, Viscosity, alpha_rate, balsara, cfl_dt, pair_terms, signal_velocity,
};
pub use hsearch::{HLimits, HSearch};
pub use tillotson::Tillotson;

use super::{dshape_in_support, kernel_shape};
use crate::fem::Real;
use crate::math;

/// [`Real`] with the few functions the hydro formulas need beyond arithmetic, each one PTX
/// instruction on the device (the nvptx build has no libm) and `std` on the host.
pub trait Float: Real {
    fn fsqrt(self) -> Self;
    /// `e^x` (float32: `ex2.approx` on the device; float64: see `math::exp_f64`).
    fn fexp(self) -> Self;
    #[inline(always)]
    fn fabs(self) -> Self {
        if self < Self::ZERO { -self } else { self }
    }
    /// The larger of two; `o` when either is NaN-compared false.
    #[inline(always)]
    fn fmax(self, o: Self) -> Self {
        if self > o { self } else { o }
    }
    #[inline(always)]
    fn fmin(self, o: Self) -> Self {
        if self < o { self } else { o }
    }
    /// Neither infinite nor NaN.
    fn finite(self) -> bool;
}

impl Float for f32 {
    #[inline(always)]
    fn fsqrt(self) -> f32 {
        math::sqrt(self)
    }
    #[inline(always)]
    fn fexp(self) -> f32 {
        math::exp(self)
    }
    #[inline(always)]
    fn finite(self) -> bool {
        self.is_finite()
    }
}

impl Float for f64 {
    #[inline(always)]
    fn fsqrt(self) -> f64 {
        math::sqrt_f64(self)
    }
    #[inline(always)]
    fn fexp(self) -> f64 {
        math::exp_f64(self)
    }
    #[inline(always)]
    fn finite(self) -> bool {
        self.is_finite()
    }
}

/// `a · b`.
#[inline(always)]
pub fn dot<R: Float>(a: [R; 3], b: [R; 3]) -> R {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// `a × b`.
#[inline(always)]
pub fn cross<R: Float>(a: [R; 3], b: [R; 3]) -> [R; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// `W(r, h)`, normalised in 3D, zero for `r ≥ h`.
#[inline(always)]
pub fn w<R: Float>(kernel: u32, r: R, h: R) -> R {
    let inv = R::ONE / h;
    kernel_shape(kernel, r * inv) * (inv * inv * inv)
}

/// `∂W/∂r (r, h)`, zero for `r ≥ h` (non-positive: both kernels decrease).
#[inline(always)]
pub fn dw_dr<R: Float>(kernel: u32, r: R, h: R) -> R {
    let inv = R::ONE / h;
    let q = r * inv;
    if q < R::ONE {
        dshape_in_support(kernel, q) * (inv * inv) * (inv * inv)
    } else {
        R::ZERO
    }
}

/// `∂W/∂h (r, h)`: with `W = w(q)/h³`, `q = r/h`, it is `−(3 w(q) + q w'(q)) / h⁴`, the term
/// of `∂ρ/∂h` in the grad-h correction (Springel & Hernquist 2002, eq. 8).
#[inline(always)]
pub fn dw_dh<R: Float>(kernel: u32, r: R, h: R) -> R {
    let inv = R::ONE / h;
    let q = r * inv;
    if q < R::ONE {
        let s = kernel_shape(kernel, q);
        let ds = dshape_in_support(kernel, q);
        -(R::from_f64(3.0) * s + q * ds) * (inv * inv) * (inv * inv)
    } else {
        R::ZERO
    }
}

/// `∇_i W(|dx|, h) = ∂W/∂r · dx / r` for `dx = r_i − r_j` at distance `r`; zero at `r = 0`
/// (the self term exerts no force). Odd in `dx` exactly, so pair terms cancel to the bit.
#[inline(always)]
pub fn grad_w<R: Float>(kernel: u32, dx: [R; 3], r: R, h: R) -> [R; 3] {
    if r > R::ZERO {
        let f = dw_dr(kernel, r, h) / r;
        [f * dx[0], f * dx[1], f * dx[2]]
    } else {
        [R::ZERO; 3]
    }
}

/// A particle's gather sums over its neighbours `j` (`r < h_i`, itself included): density
/// `ρ = Σ m_j W(h_i)`, `∂ρ/∂h = Σ m_j ∂W/∂h`, and the velocity derivatives
/// `ρ ∇·v = −Σ m_j dv · ∇W`, `ρ ∇×v = Σ m_j dv × ∇W` (Monaghan 1992, as Gadget-2).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DensitySum<R> {
    pub rho: R,
    pub drho_dh: R,
    /// `Σ m_j dv · ∇W`.
    pub div: R,
    /// `Σ m_j dv × ∇W`.
    pub curl: [R; 3],
}

impl<R: Float> Default for DensitySum<R> {
    fn default() -> Self {
        Self::ZERO
    }
}

impl<R: Float> DensitySum<R> {
    pub const ZERO: Self = DensitySum {
        rho: R::ZERO,
        drho_dh: R::ZERO,
        div: R::ZERO,
        curl: [R::ZERO; 3],
    };

    /// Adds neighbour `j` of mass `mj` at `dx` (distance `r`) moving at `dv` relative to `i`;
    /// nothing outside the support.
    #[inline(always)]
    pub fn add(&mut self, kernel: u32, h: R, dx: [R; 3], r: R, dv: [R; 3], mj: R) {
        if r < h {
            self.rho += mj * w(kernel, r, h);
            self.drho_dh += mj * dw_dh(kernel, r, h);
            let g = grad_w(kernel, dx, r, h);
            self.div += mj * dot(dv, g);
            let c = cross(dv, g);
            for (k, ck) in c.iter().enumerate() {
                self.curl[k] += mj * *ck;
            }
        }
    }

    /// `∇·v`.
    #[inline(always)]
    pub fn div_v(&self) -> R {
        -self.div / self.rho
    }

    /// `|∇×v|`.
    #[inline(always)]
    pub fn curl_v(&self) -> R {
        dot(self.curl, self.curl).fsqrt() / self.rho
    }
}

/// The grad-h correction `f_i = [1 + (h_i / (3 ρ_i)) ∂ρ_i/∂h_i]⁻¹` (Springel & Hernquist 2002,
/// eq. 8; Monaghan 2002) that the momentum and energy equations multiply `P_i/ρ_i²` by.
#[inline(always)]
pub fn grad_h_factor<R: Float>(h: R, rho: R, drho_dh: R) -> R {
    R::ONE / (R::ONE + h * drho_dh / (R::from_f64(3.0) * rho))
}

/// `4π/3`.
const FOUR_THIRDS_PI: f64 = 4.0 / 3.0 * core::f64::consts::PI;

/// The smoothing-length condition of Springel & Hernquist (2002, eq. 6) in the support-radius
/// convention: the kernel sphere holds a fixed mass, `(4π/3) h³ ρ(h) = N_ngb m` (constant
/// `ρh³`, so the neighbour number is `N_ngb` on average). Returns the residual `g(h)` and its
/// derivative `g'(h) = 4π h² ρ + (4π/3) h³ ∂ρ/∂h` (`= 4π h² ρ / f` with `f` the grad-h factor),
/// for a Newton step.
#[inline(always)]
pub fn h_residual<R: Float>(h: R, rho: R, drho_dh: R, m: R, n_ngb: R) -> (R, R) {
    let c = R::from_f64(FOUR_THIRDS_PI);
    let h3 = h * h * h;
    let g = c * h3 * rho - n_ngb * m;
    let dg = R::from_f64(3.0) * c * h * h * rho + c * h3 * drho_dh;
    (g, dg)
}

/// The smoothing length at which a uniform density `rho` puts mass `n_ngb · m` in the kernel:
/// the first guess and the fall-back of the iteration (`h = ∛(3 N m / (4π ρ))`), here as `h³`.
#[inline(always)]
pub fn h3_for_density<R: Float>(rho: R, m: R, n_ngb: R) -> R {
    n_ngb * m / (R::from_f64(FOUR_THIRDS_PI) * rho)
}

/// The time-step limiter of block steps (Saitoh & Makino 2009): neighbours' steps differ by at
/// most a factor 4. The level (deeper: shorter step) a particle wanting level `k` takes beside a
/// neighbour at level `kj`.
#[inline(always)]
pub fn limited_level(k: u32, kj: u32) -> u32 {
    k.max(kj.saturating_sub(2))
}

/// The level an inactive neighbour at level `kj` is woken to by a particle at level `k` (Durier
/// & Dalla Vecchia 2012), where its step is more than 4× as long.
#[inline(always)]
pub fn wake_level(k: u32, kj: u32) -> Option<u32> {
    (kj + 2 < k).then(|| k - 2)
}

#[cfg(test)]
mod tests;
