//! Self-gravitating initial conditions, in units G = M = R = 1, open boundary: the Evrard
//! collapse and an n = 1 polytrope. Both place equal-mass particles by stretching a cubic
//! lattice cut to the unit sphere radially, `r ↦ r'` with `M(r') = r³` (the lattice's own
//! enclosed mass fraction), so that the enclosed mass follows the profile's `M(r)`.

use super::density::h_guess;
use super::{Gas, HydroError, HydroParams, Sim};
use crate::device::sph::hydro::{IdealGas, Material};
use core::f64::consts::PI;

/// The Evrard (1988) collapse, as set up by Springel et al. (2001, Gadget): a cold gas sphere of
/// mass 1 and radius 1 with `ρ = 1 / (2π r)` (`M(r) = r²`), `u = 0.05`, γ = 5/3, at rest.
pub const EVRARD_U: f64 = 0.05;
pub const EVRARD_GAMMA: f64 = 5.0 / 3.0;

/// The n = 1 polytrope's adiabatic index (`P = K ρ²`).
pub const POLYTROPE_GAMMA: f64 = 2.0;

/// Points of a cubic lattice inside the unit sphere, about `n` of them (cell-centred, so that
/// none sits at the origin and the set is mirror-symmetric in every axis).
pub fn lattice_sphere(n: usize) -> Vec<[f64; 3]> {
    let a = (4.0 * PI / (3.0 * n as f64)).cbrt();
    let k = (1.0 / a).ceil() as i64 + 1;
    let mut out = Vec::with_capacity(n + n / 8);
    for i in -k..k {
        for j in -k..k {
            for l in -k..k {
                let p = [
                    (i as f64 + 0.5) * a,
                    (j as f64 + 0.5) * a,
                    (l as f64 + 0.5) * a,
                ];
                if p[0] * p[0] + p[1] * p[1] + p[2] * p[2] < 1.0 {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// Stretches the unit-sphere lattice radially by `r ↦ radius(r³)` (`radius` the inverse of the
/// target's enclosed mass fraction), returning the positions and their radii.
fn stretch(n: usize, radius: impl Fn(f64) -> f64) -> Vec<[f64; 3]> {
    lattice_sphere(n)
        .into_iter()
        .map(|p| {
            let r = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
            let s = radius(r * r * r) / r;
            [p[0] * s, p[1] * s, p[2] * s]
        })
        .collect()
}

fn norm(p: [f64; 3]) -> f64 {
    (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt()
}

/// Gas at rest at `pos` with equal masses (total 1), `u` and the smoothing-length guess from
/// the profile's density at each radius.
fn gas_of(
    pos: Vec<[f64; 3]>,
    rho: impl Fn(f64) -> f64,
    u: impl Fn(f64) -> f64,
    params: &HydroParams,
) -> Gas {
    let n = pos.len();
    let m = 1.0 / n as f64;
    let r: Vec<f64> = pos.iter().map(|&p| norm(p)).collect();
    let h = r
        .iter()
        .map(|&r| h_guess(rho(r), m, params.n_ngb))
        .collect();
    let u = r.iter().map(|&r| u(r)).collect();
    Gas::new(
        pos,
        vec![[0.0; 3]; n],
        vec![m; n],
        u,
        h,
        params.viscosity.alpha_max,
    )
}

/// The Evrard sphere's density `1 / (2π r)`.
pub fn evrard_density(r: f64) -> f64 {
    1.0 / (2.0 * PI * r)
}

/// The Evrard sphere with about `n` particles: `M(r') = r'² = r³` gives `r' = r^{3/2}`.
pub fn evrard(n: usize, params: &HydroParams) -> Gas {
    let pos = stretch(n, |f| f.sqrt());
    // ρ ∝ 1/r diverges at the centre: the h guess caps it (the iteration finds the true h).
    gas_of(pos, |r| evrard_density(r.max(1e-3)), |_| EVRARD_U, params)
}

/// The n = 1 polytrope of mass 1 and radius 1 (Lane–Emden, `ρ = ρ_c sin ξ / ξ`, `ξ = π r`):
/// central density, `K` of `P = K ρ²` for gravitational constant `g`.
pub struct Polytrope {
    pub rho_c: f64,
    pub k: f64,
}

impl Polytrope {
    /// `M = 4 ρ_c R³ / π` and `R = √(π K / (2 G))` with M = R = 1.
    pub fn new(g: f64) -> Self {
        Polytrope {
            rho_c: PI / 4.0,
            k: 2.0 * g / PI,
        }
    }

    /// Lane–Emden density at radius `r` (0 outside).
    pub fn density(&self, r: f64) -> f64 {
        if r >= 1.0 {
            0.0
        } else if r < 1e-8 {
            self.rho_c
        } else {
            let xi = PI * r;
            self.rho_c * xi.sin() / xi
        }
    }

    /// Enclosed mass fraction `(sin ξ − ξ cos ξ) / π`.
    pub fn mass(r: f64) -> f64 {
        let xi = PI * r.min(1.0);
        (xi.sin() - xi * xi.cos()) / PI
    }

    /// The radius enclosing mass fraction `f ∈ [0, 1]` (bisection: `mass` is monotonic).
    pub fn radius_of_mass(f: f64) -> f64 {
        let (mut lo, mut hi) = (0.0, 1.0);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if Self::mass(mid) < f {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        0.5 * (lo + hi)
    }
}

/// The n = 1 polytrope with about `n` particles, at rest, `u = P / ((γ − 1) ρ) = K ρ` (γ = 2)
/// from the Lane–Emden density, for gravitational constant `g`.
pub fn polytrope(n: usize, g: f64, params: &HydroParams) -> Gas {
    let poly = Polytrope::new(g);
    let eos = IdealGas {
        gamma: POLYTROPE_GAMMA,
    };
    let pos = stretch(n, Polytrope::radius_of_mass);
    // Near the surface the density vanishes: the h guess uses a floor of 1% of ρ_c.
    gas_of(
        pos,
        |r| poly.density(r).max(0.01 * poly.rho_c),
        |r| {
            let rho = poly.density(r);
            if rho > 0.0 {
                eos.energy(rho, poly.k * rho * rho)
            } else {
                0.0
            }
        },
        params,
    )
}

/// Relaxes a polytrope into the discrete equilibrium of its particles before a run: steps until
/// `t_settle` with the velocities damped by `exp(−dt/τ)` after each step and the energies held
/// on the adiabat, `u = K ρ^(γ−1) / (γ − 1)` at the SPH density (so that viscous heating of the
/// damped oscillation does not raise the entropy). The time and step count restart at 0.
pub fn settle(sim: &mut Sim, k: f64, t_settle: f64, tau: f64) -> Result<(), HydroError> {
    // The polytrope's adiabat is an ideal gas's; other materials keep their u.
    settle_with(sim, t_settle, tau, |_, m, rho| match m {
        Material::IdealGas(eos) => Some(eos.energy(rho, k * rho.powf(eos.gamma))),
        _ => None,
    })?;
    sim.t = 0.0;
    sim.step = 0;
    Ok(())
}

/// Damped steps from `sim.t` to `t_end`: after each step the velocities are multiplied by
/// `exp(−dt/τ)` and each particle's `u` is set to `adiabat(id, material, ρ)` where that is `Some`
/// (the energy on the body's adiabat at its SPH density), so that the body relaxes to the
/// equilibrium of its particles without heating.
pub fn settle_with(
    sim: &mut Sim,
    t_end: f64,
    tau: f64,
    adiabat: impl Fn(usize, &Material<f64>, f64) -> Option<f64>,
) -> Result<(), HydroError> {
    while sim.t < t_end * (1.0 - 1e-12) {
        let dt = sim.step(t_end - sim.t)?;
        let damp = (-dt / tau).exp();
        let g = &mut sim.gas;
        for i in 0..g.len() {
            g.vel[i].iter_mut().for_each(|v| *v *= damp);
            let id = g.mat[i] as usize;
            if let Some(u) = adiabat(id, &sim.params.materials[id], g.rho[i]) {
                g.u[i] = u;
            }
        }
    }
    Ok(())
}
