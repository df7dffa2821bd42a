//! Gas and collisionless particles in one run: gravity of everything on everything, the
//! conserved totals with shared and block steps, the restart, the snapshot case and the
//! refusals.

use super::ic_gravity::{self, EVRARD_GAMMA};
use super::*;
use crate::backend::Backend;
use crate::nbody::ic::Plummer;

fn params(solver: GravitySolver, block_levels: u32) -> HydroParams {
    HydroParams {
        self_gravity: true,
        gravity: Gravity {
            solver,
            ..Gravity::default()
        },
        block_levels,
        ..HydroParams::ideal_gas(EVRARD_GAMMA)
    }
}

/// An Evrard gas sphere (mass 1) inside a Plummer sphere of `n_halo` collisionless particles of
/// mass 1, both at rest as a whole.
fn gas_in_halo(n_gas: usize, n_halo: usize, p: &HydroParams) -> (Gas, Collisionless) {
    let gas = ic_gravity::evrard(n_gas, p);
    let h = Plummer::henon(n_halo, 7).softened(p.gravity.eps).generate();
    (gas, Collisionless::new(h.pos, h.vel, h.mass, 1))
}

#[test]
fn collisionless_particles_feel_and_source_the_gravity_of_everything() {
    let p = params(GravitySolver::Direct, 0);
    let (gas, halo) = gas_in_halo(400, 300, &p);
    let sim = Sim::with_collisionless(
        gas.clone(),
        halo.clone(),
        p.clone(),
        Boundary::Open,
        Backend::Cpu,
    )
    .unwrap();
    // The hydro accelerations alone, from the same gas without gravity.
    let hydro = Sim::new(
        gas.clone(),
        HydroParams {
            self_gravity: false,
            ..p.clone()
        },
        Boundary::Open,
    )
    .unwrap();
    // The float64 direct sum over all 700 particles.
    let pos = [gas.pos.as_slice(), &halo.pos].concat();
    let mass = [gas.mass.as_slice(), &halo.mass].concat();
    let mut acc = vec![[0.0; 3]; pos.len()];
    let mut pot = vec![0.0; pos.len()];
    crate::nbody::cpu::direct_sum(&pos, &mass, p.gravity.eps, &mut acc, &mut pot);
    let scale = acc
        .iter()
        .map(|a| (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt())
        .fold(0.0, f64::max);
    // Gravity on the gas (total less hydro), then on the halo, against the direct sum's rows.
    let gravity = (sim.gas.acc.iter().zip(&hydro.gas.acc))
        .map(|(t, h)| core::array::from_fn::<f64, 3, _>(|k| t[k] - h[k]))
        .chain(sim.collisionless.acc.iter().copied());
    let worst = gravity
        .zip(&acc)
        .flat_map(|(g, a)| (0..3).map(move |k| (g[k] - a[k]).abs() / scale))
        .fold(0.0, f64::max);
    assert!(
        worst < 1e-12,
        "accelerations differ by {worst:.2e} of the largest"
    );
    assert_eq!(sim.phi.len(), pos.len());
    let w: f64 = (0..pos.len()).map(|i| 0.5 * mass[i] * pot[i]).sum();
    let d = sim.diagnostics();
    assert!(
        (d.potential - w).abs() < 1e-12 * w.abs(),
        "{} {w}",
        d.potential
    );
    // The halo's kinetic energy is in the total.
    let k_halo: f64 = (0..halo.len())
        .map(|j| 0.5 * halo.mass[j] * halo.vel[j].iter().map(|v| v * v).sum::<f64>())
        .sum();
    assert!(k_halo > 0.01);
    assert!(
        (d.kinetic - k_halo).abs() < 1e-12 * k_halo,
        "{} {k_halo}",
        d.kinetic
    );
}

/// `|ΔE/E|`, the momentum (of `Σ m|v|`) and the change of angular momentum (of `Σ m |x||v|`)
/// over `t_end` for the gas sphere in its halo.
fn conserved(p: &HydroParams, t_end: f64) -> (f64, f64, f64, Sim) {
    let (gas, halo) = gas_in_halo(600, 600, p);
    let mut sim =
        Sim::with_collisionless(gas, halo, p.clone(), Boundary::Open, Backend::Cpu).unwrap();
    let d0 = sim.diagnostics();
    sim.run_to(t_end).unwrap();
    let d = sim.diagnostics();
    let de = ((d.total - d0.total) / d0.total).abs();
    let dp = d.momentum.iter().map(|x| x.abs()).fold(0.0, f64::max) / d.momentum_scale;
    let g = &sim.gas;
    let c = &sim.collisionless;
    let norm = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    let scale: f64 = (g.mass.iter().zip(&g.pos).zip(&g.vel))
        .chain(c.mass.iter().zip(&c.pos).zip(&c.vel))
        .map(|((m, &x), &v)| m * norm(x) * norm(v))
        .sum();
    let dl = norm(core::array::from_fn(|k| {
        d.angular_momentum[k] - d0.angular_momentum[k]
    })) / scale;
    (de, dp, dl, sim)
}

#[test]
fn a_gas_sphere_in_a_collisionless_halo_conserves_energy_and_momentum() {
    let (de, dp, dl, shared) = conserved(&params(GravitySolver::Direct, 0), 0.5);
    eprintln!(
        "shared steps: |ΔE/E| = {de:.2e}, momentum {dp:.2e}, angular momentum {dl:.2e}, {} steps",
        shared.step
    );
    assert!(de < 5e-4, "{de}");
    assert!(dp < 1e-12, "{dp}");
    // Pair forces along the separations (pressure, viscosity, direct-sum gravity) and the
    // leapfrog keep angular momentum to rounding.
    assert!(dl < 1e-12, "{dl}");
    let (de, dp, _, block) = conserved(&params(GravitySolver::Direct, 4), 0.5);
    eprintln!(
        "block steps: |ΔE/E| = {de:.2e}, momentum {dp:.2e}, {} updates against {}",
        block.updates, shared.updates
    );
    assert!(de < 1e-3, "{de}");
    // The kicks of a particle and its neighbours fall at different times: momentum is kept to
    // the integration's accuracy, not to rounding.
    assert!(dp < 2e-4, "{dp}");
    assert!(block.updates < shared.updates);
    // The halo moved under gravity: its particles are not where they started.
    let (_, halo) = gas_in_halo(600, 600, &params(GravitySolver::Direct, 0));
    let moved = (0..halo.len())
        .map(|j| {
            (0..3)
                .map(|k| (block.collisionless.pos[j][k] - halo.pos[j][k]).abs())
                .sum::<f64>()
        })
        .fold(0.0, f64::max);
    assert!(moved > 1e-2, "{moved}");
}

#[test]
fn a_restart_with_collisionless_particles_continues_the_run() {
    use crate::nbody::snapshot::{Format, Precision, encode_gadget, parse_gadget};
    // Shared and block steps, with and without the halo: under block steps the inactive
    // particles' ∇·v and Balsara factors must come back too.
    for (levels, with_halo) in [(0, true), (3, true), (3, false)] {
        let p = params(GravitySolver::Tree, levels);
        let (gas, mut halo) = gas_in_halo(300, 200, &p);
        if !with_halo {
            halo = Collisionless::default();
        }
        let start = || {
            Sim::with_collisionless(
                gas.clone(),
                halo.clone(),
                p.clone(),
                Boundary::Open,
                Backend::Cpu,
            )
            .unwrap()
        };
        let (mut whole, mut first) = (start(), start());
        for _ in 0..6 {
            whole.step(f64::INFINITY).unwrap();
        }
        for _ in 0..3 {
            first.step(f64::INFINITY).unwrap();
        }
        let mut bytes = Vec::new();
        let s = snapio::snapshot_of(&first);
        encode_gadget(&s, Format::Gadget2, Precision::Double, &mut bytes).unwrap();
        let (mut rest, exact) = snapio::sim_of(
            &parse_gadget(&bytes).unwrap(),
            p.clone(),
            Boundary::Open,
            first.step,
            Backend::Cpu,
        )
        .unwrap();
        assert!(exact);
        assert_eq!(rest.collisionless.len(), halo.len());
        for _ in 0..3 {
            rest.step(f64::INFINITY).unwrap();
        }
        assert_eq!((rest.t, rest.step), (whole.t, whole.step));
        let rel = |x: f64, y: f64| (x - y).abs() / x.abs().max(1e-3);
        let (a, b) = (&whole.collisionless, &rest.collisionless);
        let mut e: f64 = 0.0;
        for j in 0..a.len() {
            for k in 0..3 {
                e = e.max(rel(a.pos[j][k], b.pos[j][k]).max(rel(a.vel[j][k], b.vel[j][k])));
            }
        }
        for i in 0..whole.gas.len() {
            e = e.max(rel(whole.gas.u[i], rest.gas.u[i]));
            for k in 0..3 {
                e = e.max(rel(whole.gas.vel[i][k], rest.gas.vel[i][k]));
            }
        }
        eprintln!("block levels {levels}, halo {with_halo}: restart differs by {e:.2e}");
        assert!(
            e <= 1e-12,
            "block levels {levels}: the restart differs by {e:.3e}"
        );
    }
}

#[test]
fn a_snapshot_with_collisionless_particles_runs_with_gravity_on() {
    use super::cli::{SphConfig, build};
    use crate::nbody::snapshot::{Format, Precision, write_gadget};
    let p = params(GravitySolver::Tree, 0);
    let (gas, halo) = gas_in_halo(200, 100, &p);
    let sim = Sim::with_collisionless(gas, halo, p, Boundary::Open, Backend::Cpu).unwrap();
    let dir = std::env::temp_dir().join(format!("warpkit-sph-halo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("halo.gadget");
    write_gadget(
        &file,
        &snapio::snapshot_of(&sim),
        Format::Gadget2,
        Precision::Single,
    )
    .unwrap();
    let text = format!(
        "[ic]\nkind = \"snapshot\"\nfile = {:?}\n[run]\nt_end = 0.01\n",
        file.display().to_string()
    );
    let c: SphConfig = toml::from_str(&text).unwrap();
    let (mut from, t_end) = build(&c).unwrap();
    assert!(from.params.self_gravity);
    assert_eq!(
        (from.gas.len(), from.collisionless.len()),
        (sim.gas.len(), 100)
    );
    from.run_to(t_end).unwrap();
    // Switched off by the user: refused, with the reason.
    let off: SphConfig = toml::from_str(&format!("{text}self_gravity = false\n")).unwrap();
    let e = build(&off).err().unwrap();
    assert!(format!("{e:#}").contains("need self-gravity"), "{e:#}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_collisionless_particles_are_refused() {
    let p = params(GravitySolver::Direct, 0);
    let (gas, halo) = gas_in_halo(200, 50, &p);
    let run = |h: Collisionless, p: &HydroParams| {
        Sim::with_collisionless(gas.clone(), h, p.clone(), Boundary::Open, Backend::Cpu).err()
    };
    let no_gravity = HydroParams {
        self_gravity: false,
        ..p.clone()
    };
    assert_eq!(
        run(halo.clone(), &no_gravity),
        Some(HydroError::CollisionlessWithoutGravity(50))
    );
    let mut h = halo.clone();
    h.mass[7] = -1.0;
    assert!(matches!(
        run(h, &p),
        Some(HydroError::BadCollisionless {
            index: 7,
            what: "mass",
            ..
        })
    ));
    let mut h = halo.clone();
    h.pos[3][1] = f64::NAN;
    assert!(matches!(
        run(h, &p),
        Some(HydroError::BadCollisionless { index: 3, .. })
    ));
    let mut h = halo.clone();
    h.ptype[0] = 0;
    assert!(matches!(
        run(h, &p),
        Some(HydroError::BadCollisionless { what: "type", .. })
    ));
    let mut h = halo;
    h.vel.pop();
    assert!(matches!(run(h, &p), Some(HydroError::Length { .. })));
}
