//! A hydro run's state in a Gadget snapshot: gas (type 0) with its SPH fields, and back. The
//! snapshot holds, besides positions, velocities, masses, `u`, `ρ` and `h`, what the next step
//! uses before its own force pass (accelerations, `du/dt`, signal velocities, α; ∇·v and the
//! Balsara factors, which block steps use until a particle's next pass): the forces of
//! a step are computed with velocities and energies predicted to its end, so recomputing them
//! from the snapshot's state would give other values, and a restart would drift away from the
//! run that did not stop. With them (format 2, float64) the restart continues to round-off.

use super::density::h_guess;
use super::{Boundary, Collisionless, Gas, HydroError, HydroParams, Sim};
use crate::nbody::Particles;
use crate::nbody::snapshot::{GasFields, Snapshot, header_for};

/// The snapshot of `sim`'s state at `sim.t`: the gas (type 0), then the collisionless
/// particles with their types, ids 1..=N in the run's order.
pub fn snapshot_of(sim: &Sim) -> Snapshot {
    let g = &sim.gas;
    let c = &sim.collisionless;
    let n = g.len() + c.len();
    let mut s = Snapshot {
        particles: Particles {
            pos: [g.pos.as_slice(), &c.pos].concat(),
            vel: [g.vel.as_slice(), &c.vel].concat(),
            mass: [g.mass.as_slice(), &c.mass].concat(),
            id: (1..=n as u64).collect(),
            ptype: std::iter::repeat_n(0, g.len())
                .chain(c.ptype.iter().map(|&t| t as u8))
                .collect(),
        },
        gas: Some(GasFields {
            u: g.u.clone(),
            rho: g.rho.clone(),
            hsml: g.h.clone(),
            acc: g.acc.clone(),
            du_dt: g.du.clone(),
            vsig: g.vsig.clone(),
            alpha: g.alpha.clone(),
            div_v: g.div_v.clone(),
            balsara: g.balsara.clone(),
            pressure: g.p.clone(),
            mat: g.mat.clone(),
        }),
        potential: (!sim.phi.is_empty()).then(|| sim.phi.clone()),
        ..Default::default()
    };
    s.header = header_for(&s);
    s.header.time = sim.t;
    if let Boundary::Periodic(l) = sim.boundary
        && l[0] == l[1]
        && l[1] == l[2]
    {
        s.header.box_size = l[0];
    }
    s
}

/// The gas of a snapshot, in its order: `h` from HSML, else guessed from RHO, else from the mean
/// density of the box (periodic) or of the gas's bounding box (open); α from ALPH, else
/// `alpha_max`. An error for a snapshot without gas or with other particle types.
pub fn gas_of(s: &Snapshot, params: &HydroParams, boundary: &Boundary) -> Result<Gas, String> {
    let (gas, rest) = particles_of(s, params, boundary)?;
    if !rest.is_empty() {
        return Err(format!(
            "the snapshot holds {} particles of types 1–5 besides its {} gas particles; only \
             gas is taken here",
            rest.len(),
            gas.len()
        ));
    }
    Ok(gas)
}

/// The gas (type 0, as [`gas_of`]) and the collisionless particles (types 1–5) of a snapshot,
/// each in the snapshot's order.
pub fn particles_of(
    s: &Snapshot,
    params: &HydroParams,
    boundary: &Boundary,
) -> Result<(Gas, Collisionless), String> {
    let all = &s.particles;
    let n_gas = all.ptype.iter().take_while(|&&t| t == 0).count();
    let Some(fields) = s.gas.as_ref().filter(|_| n_gas > 0) else {
        return Err("the snapshot holds no gas particles (type 0): `warpkit sph` needs gas".into());
    };
    if all.ptype[n_gas..].contains(&0) {
        return Err("the snapshot's gas particles (type 0) do not come first".into());
    }
    let rest = Collisionless {
        pos: all.pos[n_gas..].to_vec(),
        vel: all.vel[n_gas..].to_vec(),
        mass: all.mass[n_gas..].to_vec(),
        ptype: all.ptype[n_gas..].iter().map(|&t| t as u32).collect(),
        acc: vec![[0.0; 3]; all.len() - n_gas],
    };
    let p = Particles {
        pos: all.pos[..n_gas].to_vec(),
        vel: all.vel[..n_gas].to_vec(),
        mass: all.mass[..n_gas].to_vec(),
        id: all.id[..n_gas].to_vec(),
        ptype: all.ptype[..n_gas].to_vec(),
    };
    let h = if !fields.hsml.is_empty() {
        fields.hsml.clone()
    } else if !fields.rho.is_empty() {
        (0..n_gas)
            .map(|i| h_guess(fields.rho[i], p.mass[i], params.n_ngb))
            .collect()
    } else {
        let volume = match boundary {
            Boundary::Periodic(l) => l[0] * l[1] * l[2],
            Boundary::Open => (0..3)
                .map(|k| {
                    let (lo, hi) = p
                        .pos
                        .iter()
                        .fold((f64::INFINITY, f64::NEG_INFINITY), |a, x| {
                            (a.0.min(x[k]), a.1.max(x[k]))
                        });
                    (hi - lo).max(1e-12)
                })
                .product(),
        };
        let rho = p.mass.iter().sum::<f64>() / volume;
        p.mass
            .iter()
            .map(|&m| h_guess(rho, m, params.n_ngb))
            .collect()
    };
    let mut gas = Gas::new(
        p.pos.clone(),
        p.vel.clone(),
        p.mass.clone(),
        fields.u.clone(),
        h,
        params.viscosity.alpha_max,
    );
    if !fields.alpha.is_empty() {
        gas.alpha = fields.alpha.clone();
    }
    if !fields.mat.is_empty() {
        gas.mat = fields.mat.clone();
    }
    Ok((gas, rest))
}

/// A run continued from snapshot `s` at its header's time after `step` steps, its passes on
/// `backend`. Densities and
/// forces are computed as for any start; the snapshot's accelerations, `du/dt` and signal
/// velocities, when it has all three, then replace the forces, and the run continues exactly
/// (`true`); without them it continues from forces recomputed at the snapshot's state (`false`).
pub fn sim_of(
    s: &Snapshot,
    params: HydroParams,
    boundary: Boundary,
    step: u64,
    backend: crate::backend::Backend,
) -> Result<(Sim, bool), HydroError> {
    let (gas, rest) = particles_of(s, &params, &boundary).map_err(HydroError::Params)?;
    let mut sim = Sim::with_collisionless(gas, rest, params, boundary, backend)?;
    sim.t = s.header.time;
    sim.step = step;
    let f = s.gas.as_ref().expect("checked by gas_of");
    let exact = !f.acc.is_empty() && !f.du_dt.is_empty() && !f.vsig.is_empty();
    if exact {
        sim.gas.acc = f.acc.clone();
        sim.gas.du = f.du_dt.clone();
        sim.gas.vsig = f.vsig.clone();
        // The density pass's velocity-dependent results, from the predicted velocities of the
        // run's last pass (block steps use them until a particle's next pass).
        if !f.div_v.is_empty() && !f.balsara.is_empty() {
            sim.gas.div_v = f.div_v.clone();
            sim.gas.balsara = f.balsara.clone();
        }
    }
    Ok((sim, exact))
}
