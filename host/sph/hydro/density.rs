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
#[derive(Clone, Copy)]
pub struct Converged {
    pub h: f64,
    pub sum: DensitySum<f64>,
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
    let run = |i: usize| iterate(g, vel, &cells, params, &lim, i);
    // In index order, so that an error names the first particle that failed.
    let new: Vec<Option<Converged>> = match active {
        None => {
            let out: Vec<_> = (0..n).into_par_iter().map(run).collect();
            out.into_iter()
                .map(|c| c.map(Some))
                .collect::<Result<_, _>>()?
        }
        Some(a) => {
            let out: Vec<_> = a.par_iter().map(|&i| run(i)).collect();
            let mut new = vec![None; n];
            for (&i, c) in a.iter().zip(out) {
                new[i] = Some(c?);
            }
            new
        }
    };
    set_states(gas, &new, u, params);
    Ok(())
}

/// Each particle's state with energy `u`, in parallel: where `new` holds its converged `h`
/// and gather sums (the CPU's pass or the GPU's), `h`, `ρ`, `f`, `∇·v`, `|∇×v|`, `P`, `c_s` and
/// the Balsara factor; elsewhere only `P` and `c_s` at its current density.
pub fn set_states(gas: &mut Gas, new: &[Option<Converged>], u: &[f64], params: &HydroParams) {
    let Gas {
        h,
        rho,
        f,
        div_v,
        curl_v,
        p,
        cs,
        balsara: bal,
        mat,
        ..
    } = gas;
    let state = (h, rho, f, div_v, curl_v, bal);
    (state, p, cs, &*mat, u, new).into_par_iter().for_each(
        |((h, rho, f, div_v, curl_v, bal), p, cs, &m, &u, new)| {
            if let Some(c) = new {
                *h = c.h;
                *rho = c.sum.rho;
                *f = grad_h_factor(c.h, c.sum.rho, c.sum.drho_dh);
                *div_v = c.sum.div_v();
                *curl_v = c.sum.curl_v();
            }
            let mat = params.materials[m as usize];
            *p = mat.pressure(*rho, u);
            *cs = mat.sound_speed(*rho, u);
            if new.is_some() {
                *bal = if params.viscosity.balsara {
                    balsara(*div_v, *curl_v, *cs, *h)
                } else {
                    1.0
                };
            }
        },
    );
}

/// A first smoothing length for particles of mass `m` at density `rho`.
pub fn h_guess(rho: f64, m: f64, n_ngb: f64) -> f64 {
    h3_for_density(rho, m, n_ngb).cbrt()
}
