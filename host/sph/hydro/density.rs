//! The density pass: each particle's smoothing length iterated to constant mass in the kernel
//! (Newton's method on `g(h) = (4π/3) h³ ρ(h) − N_ngb m`, safeguarded by bisection in the
//! bracket found so far), and with the converged sums the grad-h factor, `∇·v`, `|∇×v|`, the
//! Balsara factor, the pressure and the sound speed.

use super::cells::CellList;
use super::{Boundary, Gas, HydroError, HydroParams};
use crate::device::sph::hydro::{
    DensitySum, Eos, balsara, grad_h_factor, h_residual, h3_for_density,
};
use rayon::prelude::*;

/// Newton steps at most per particle.
const MAX_ITER: usize = 100;

/// One particle's converged gather sums.
struct Converged {
    h: f64,
    sum: DensitySum<f64>,
}

/// The density sums of particle `i` at smoothing length `h`.
fn sums(
    gas: &Gas,
    vel: &[[f64; 3]],
    cells: &CellList,
    kernel: u32,
    i: usize,
    h: f64,
) -> DensitySum<f64> {
    let mut d = DensitySum::ZERO;
    let vi = vel[i];
    cells.for_each_within(&gas.pos, gas.pos[i], h, |j, dx, r| {
        let vj = vel[j];
        let dv = [vi[0] - vj[0], vi[1] - vj[1], vi[2] - vj[2]];
        d.add(kernel, h, dx, r, dv, gas.mass[j]);
    });
    d
}

/// Iterates `h` of particle `i` from `gas.h[i]`.
fn iterate(
    gas: &Gas,
    vel: &[[f64; 3]],
    cells: &CellList,
    params: &HydroParams,
    half: f64,
    i: usize,
) -> Result<Converged, HydroError> {
    let kernel = params.kernel.code();
    let m = gas.mass[i];
    let target = params.n_ngb * m;
    let (mut lo, mut hi) = (0.0f64, f64::INFINITY);
    let mut h = gas.h[i].min(0.99 * half);
    for _ in 0..MAX_ITER {
        let sum = sums(gas, vel, cells, kernel, i, h);
        let (g, dg) = h_residual(h, sum.rho, sum.drho_dh, m, params.n_ngb);
        if g.abs() <= params.h_tol * target {
            return Ok(Converged { h, sum });
        }
        if g < 0.0 {
            lo = h;
        } else {
            hi = h;
        }
        if lo >= 0.99 * half {
            return Err(HydroError::HTooLarge {
                index: i,
                h,
                half,
                n_ngb: params.n_ngb,
            });
        }
        // Newton, limited to a factor 2 per step (Gadget-2) and kept inside the bracket.
        let newton = h - g / dg;
        let mut next = if dg > 0.0 && newton.is_finite() {
            newton.clamp(0.5 * h, 2.0 * h)
        } else if g < 0.0 {
            2.0 * h
        } else {
            0.5 * h
        };
        if next <= lo || next >= hi {
            next = if hi.is_finite() {
                0.5 * (lo + hi)
            } else {
                2.0 * h
            };
        }
        h = next.min(0.99 * half);
        if hi.is_finite() && hi - lo <= 1e-12 * hi {
            break;
        }
    }
    Err(HydroError::HNoConvergence { index: i, h })
}

/// The density pass over all particles with velocities `vel` and energies `u` (the predicted
/// ones within a step): `h`, `ρ`, `f`, `∇·v`, `|∇×v|`, Balsara factor, `P`, `c_s`.
pub fn density(
    gas: &mut Gas,
    vel: &[[f64; 3]],
    u: &[f64],
    params: &HydroParams,
    boundary: &Boundary,
) -> Result<(), HydroError> {
    let half = boundary.half_width();
    let cells = CellList::with_h(&gas.pos, &gas.h, boundary);
    let n = gas.len();
    let g: &Gas = gas;
    let out: Vec<Result<Converged, HydroError>> = (0..n)
        .into_par_iter()
        .map(|i| iterate(g, vel, &cells, params, half, i))
        .collect();
    for (i, c) in out.into_iter().enumerate() {
        let c = c?;
        let rho = c.sum.rho;
        let mat = params.materials[gas.mat[i] as usize];
        gas.h[i] = c.h;
        gas.rho[i] = rho;
        gas.f[i] = grad_h_factor(c.h, rho, c.sum.drho_dh);
        gas.div_v[i] = c.sum.div_v();
        gas.curl_v[i] = c.sum.curl_v();
        gas.p[i] = mat.pressure(rho, u[i]);
        gas.cs[i] = mat.sound_speed(rho, u[i]);
        gas.balsara[i] = if params.viscosity.balsara {
            balsara(gas.div_v[i], gas.curl_v[i], gas.cs[i], c.h)
        } else {
            1.0
        };
    }
    Ok(())
}

/// A first smoothing length for particles of mass `m` at density `rho`.
pub fn h_guess(rho: f64, m: f64, n_ngb: f64) -> f64 {
    h3_for_density(rho, m, n_ngb).cbrt()
}
