//! The bodies and the run of a validated impact case ([`super::cli::validate`]): the solver's
//! parameters, each body settled (or taken from its snapshot), both placed on the orbit, and the
//! simulation that starts from them.

use super::cli::*;
use super::orbit;
use crate::backend::Backend;
use crate::planet::cli::EARTH_MASS;
use crate::planet::settle::{self, SettleOptions};
use crate::sph::hydro::{Boundary, Gas, HydroParams, Sim};
use anyhow::Result;

/// The run's solver parameters: the case's materials, softening and gravity, and the
/// planetary defaults.
pub fn run_params(c: &ImpactConfig, setup: &Setup) -> Result<HydroParams> {
    let opts = SettleOptions {
        solver: c.run.gravity_solver,
        ..settle_options(c)
    };
    let materials = setup
        .materials
        .iter()
        .map(|m| material_of(m))
        .collect::<Result<_>>()?;
    let mut params = settle::planetary_params(materials, setup.eps, &opts);
    params.gravity.theta = c.run.theta;
    params.courant = c.run.courant;
    params.block_levels = c.run.block_levels;
    Ok(params)
}

/// A body's gas at rest at the origin: a snapshot's, or the built planet's placed and settled.
fn settled_gas(c: &ImpactConfig, body: &Body, backend: &Backend) -> Result<Gas> {
    match &body.source {
        Source::Snapshot { gas, .. } => Ok(gas.as_ref().clone()),
        Source::Built {
            planet,
            profile,
            placed,
        } => {
            let opts = settle_options(c);
            let mut sim = settle::sim_of(planet, profile, placed, &opts, backend.clone())?;
            println!(
                "{}: {:.4} Earth masses, radius {:.1} km, {} particles of {:.4e} kg; settling {} \
                 dynamical times ({:.0} s)",
                body.name,
                body.mass / EARTH_MASS,
                body.radius / 1e3,
                body.particles,
                body.particle_mass,
                opts.t_settle,
                opts.t_settle * settle::dynamical_time(profile)
            );
            if opts.t_settle > 0.0 {
                crate::planet::cli::settle_in_chunks(&mut sim, planet, profile, &opts, body.name)?;
            }
            let mut gas = sim.gas;
            // At rest, its centre of mass at the origin (the settling may shift it slightly).
            gas.vel.iter_mut().for_each(|v| *v = [0.0; 3]);
            recentre(&mut gas);
            Ok(gas)
        }
    }
}

/// The bodies settled (those built here), put on their orbit in the centre-of-mass frame with
/// the run's material ids, as one gas: the target's particles first (ids 1..=N_t in the
/// snapshots), then the impactor's. The settling's passes run on `backend`.
pub fn assemble(c: &ImpactConfig, setup: &Setup, backend: &Backend) -> Result<Gas> {
    let (st, si) =
        orbit::centre_of_mass_frame(setup.target.mass, setup.impactor.mass, &setup.start);
    let (mut pos, mut vel, mut mass, mut u, mut h) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut mat, mut alpha) = (vec![], vec![]);
    for (body, state) in [(&setup.target, st), (&setup.impactor, si)] {
        let g = settled_gas(c, body, backend)?;
        let ids: Vec<u32> = body
            .materials
            .iter()
            .map(|m| {
                setup
                    .materials
                    .iter()
                    .position(|n| n == m)
                    .expect("every body's material is the run's") as u32
            })
            .collect();
        for i in 0..g.len() {
            pos.push(core::array::from_fn(|k| g.pos[i][k] + state.pos[k]));
            vel.push(core::array::from_fn(|k| g.vel[i][k] + state.vel[k]));
            mat.push(ids[g.mat[i] as usize]);
        }
        mass.extend(g.mass);
        u.extend(g.u);
        h.extend(g.h);
        alpha.extend(g.alpha);
    }
    let mut gas = Gas::new(pos, vel, mass, u, h, 1.0);
    gas.mat = mat;
    gas.alpha = alpha;
    Ok(gas)
}

/// The run at t = 0: the gas of [`assemble`] with densities and forces computed, passes on
/// `backend`.
pub fn build(c: &ImpactConfig, setup: &Setup, backend: Backend) -> Result<Sim> {
    let gas = assemble(c, setup, &backend)?;
    let params = run_params(c, setup)?;
    Ok(Sim::with_backend(gas, params, Boundary::Open, backend)?)
}
