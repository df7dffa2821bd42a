//! The force pass: pressure and viscous accelerations, `du/dt` and the largest signal velocity
//! of every particle, summed over the symmetric pairs `r < max(h_i, h_j)` with
//! `warpkit_device::sph::hydro::pair_terms` (odd in `i ↔ j` to the bit, so momentum is conserved
//! to the rounding of the sums).

use super::cells::CellList;
use super::{Boundary, Gas, HydroParams};
use crate::device::sph::hydro::{ForceSide, pair_terms};
use rayon::prelude::*;

fn side(gas: &Gas, u: &[f64], cond: f64, i: usize) -> ForceSide<f64> {
    let rho = gas.rho[i];
    ForceSide {
        h: gas.h[i],
        rho,
        pf: gas.f[i] * gas.p[i] / (rho * rho),
        c: gas.cs[i],
        alpha: gas.alpha[i],
        balsara: gas.balsara[i],
        p: gas.p[i],
        u: u[i],
        alpha_u: cond,
    }
}

/// `acc`, `du` and `vsig` of every particle, with velocities `vel` and energies `u` (the
/// predicted ones within a step) and the density pass's `ρ`, `P`, `c_s`, `f` and Balsara factors.
pub fn forces(
    gas: &mut Gas,
    vel: &[[f64; 3]],
    u: &[f64],
    params: &HydroParams,
    boundary: &Boundary,
) {
    forces_of(gas, vel, u, params, boundary, None)
}

/// [`forces`] of the particles `active` (all when `None`); the others keep theirs.
pub fn forces_of(
    gas: &mut Gas,
    vel: &[[f64; 3]],
    u: &[f64],
    params: &HydroParams,
    boundary: &Boundary,
    active: Option<&[usize]>,
) {
    let cond = params.conduction;
    let cells = CellList::with_h(&gas.pos, &gas.h, boundary);
    let kernel = params.kernel.code();
    let g: &Gas = gas;
    let one = |i: usize| {
        let si = side(g, u, cond, i);
        let vi = vel[i];
        let mut acc = [0.0; 3];
        let mut du = 0.0;
        // The self pair's signal velocity: a lone particle still has a sound crossing time.
        let mut vsig = 2.0 * si.c;
        cells.for_each_symmetric(&g.pos, &g.h, g.pos[i], si.h, |j, dx, _| {
            if j == i {
                return;
            }
            let vj = vel[j];
            let dv = [vi[0] - vj[0], vi[1] - vj[1], vi[2] - vj[2]];
            let t = pair_terms(kernel, dx, dv, &si, &side(g, u, cond, j));
            let m = g.mass[j];
            for (a, ta) in acc.iter_mut().zip(t.acc) {
                *a += m * ta;
            }
            du += m * t.du;
            vsig = f64::max(vsig, t.vsig);
        });
        (i, acc, du, vsig)
    };
    let out: Vec<(usize, [f64; 3], f64, f64)> = match active {
        None => (0..g.len()).into_par_iter().map(one).collect(),
        Some(a) => a.par_iter().map(|&i| one(i)).collect(),
    };
    for (i, a, d, v) in out {
        gas.acc[i] = a;
        gas.du[i] = d;
        gas.vsig[i] = v;
    }
}
