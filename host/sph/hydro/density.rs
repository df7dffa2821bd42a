//! The density pass: each particle's smoothing length iterated to constant mass in the kernel
//! (Newton's method on `g(h) = (4π/3) h³ ρ(h) − N_ngb m`, safeguarded by bisection in the
//! bracket found so far), and with the converged sums the grad-h factor, `∇·v`, `|∇×v|`, the
//! Balsara factor, the pressure and the sound speed.

use super::cells::CellList;
use super::{Boundary, Gas, HydroError, HydroParams};
use crate::device::sph::hydro::hsearch::{H_CONVERGED, H_ITERATING, H_TOO_LARGE};
use crate::device::sph::hydro::{
    DensitySum, Eos, HLimits, HSearch, balsara, grad_h_factor, h3_for_density,
};
use rayon::prelude::*;

/// Newton steps at most per particle.
const MAX_ITER: u32 = 100;

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

/// The CPU's iteration limits: float64 sums resolve the bracket to 1e-12.
pub fn limits(params: &HydroParams, boundary: &Boundary) -> HLimits<f64> {
    HLimits {
        n_ngb: params.n_ngb,
        tol: params.h_tol,
        h_max: 0.99 * boundary.half_width(),
        collapse: 1e-12,
        max_steps: MAX_ITER,
    }
}

/// Iterates `h` of particle `i` from `gas.h[i]` ([`HSearch`]).
fn iterate(
    gas: &Gas,
    vel: &[[f64; 3]],
    cells: &CellList,
    params: &HydroParams,
    lim: &HLimits<f64>,
    i: usize,
) -> Result<Converged, HydroError> {
    let kernel = params.kernel.code();
    let mut s = HSearch::start(gas.h[i], lim);
    loop {
        let sum = sums(gas, vel, cells, kernel, i, s.h);
        s.update(sum.rho, sum.drho_dh, gas.mass[i], lim);
        match s.status {
            H_ITERATING => {}
            H_CONVERGED => return Ok(Converged { h: s.h, sum }),
            H_TOO_LARGE => {
                return Err(HydroError::HTooLarge {
                    index: i,
                    h: s.h,
                    half: lim.h_max / 0.99,
                    n_ngb: params.n_ngb,
                });
            }
            _ => return Err(HydroError::HNoConvergence { index: i, h: s.h }),
        }
    }
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
    density_of(gas, vel, u, params, boundary, None)
}

/// [`density`] for the particles `active` (all when `None`); the others keep their `h`, `ρ`,
/// `f`, velocity derivatives and Balsara factor, and take `P` and `c_s` at their energies `u`.
pub fn density_of(
    gas: &mut Gas,
    vel: &[[f64; 3]],
    u: &[f64],
    params: &HydroParams,
    boundary: &Boundary,
    active: Option<&[usize]>,
) -> Result<(), HydroError> {
    let lim = limits(params, boundary);
    let cells = CellList::with_h(&gas.pos, &gas.h, boundary);
    let n = gas.len();
    let g: &Gas = gas;
    let run = |i: usize| (i, iterate(g, vel, &cells, params, &lim, i));
    let out: Vec<(usize, Result<Converged, HydroError>)> = match active {
        None => (0..n).into_par_iter().map(run).collect(),
        Some(a) => {
            let out = a.par_iter().map(|&i| run(i)).collect();
            for (i, &ui) in u.iter().enumerate() {
                set_eos(gas, i, ui, params);
            }
            out
        }
    };
    for (i, c) in out {
        let c = c?;
        set_state(gas, i, c.h, &c.sum, u[i], params);
    }
    Ok(())
}

/// Particle `i`'s pressure and sound speed at its density and the energy `u`.
pub fn set_eos(gas: &mut Gas, i: usize, u: f64, params: &HydroParams) {
    let mat = params.materials[gas.mat[i] as usize];
    gas.p[i] = mat.pressure(gas.rho[i], u);
    gas.cs[i] = mat.sound_speed(gas.rho[i], u);
}

/// Particle `i`'s state from its converged `h` and gather sums, with energy `u`: `ρ`, `f`,
/// `∇·v`, `|∇×v|`, `P`, `c_s` and the Balsara factor (the GPU pass's too).
pub fn set_state(
    gas: &mut Gas,
    i: usize,
    h: f64,
    sum: &DensitySum<f64>,
    u: f64,
    params: &HydroParams,
) {
    let rho = sum.rho;
    gas.h[i] = h;
    gas.rho[i] = rho;
    gas.f[i] = grad_h_factor(h, rho, sum.drho_dh);
    gas.div_v[i] = sum.div_v();
    gas.curl_v[i] = sum.curl_v();
    set_eos(gas, i, u, params);
    gas.balsara[i] = if params.viscosity.balsara {
        balsara(gas.div_v[i], gas.curl_v[i], gas.cs[i], h)
    } else {
        1.0
    };
}

/// A first smoothing length for particles of mass `m` at density `rho`.
pub fn h_guess(rho: f64, m: f64, n_ngb: f64) -> f64 {
    h3_for_density(rho, m, n_ngb).cbrt()
}
