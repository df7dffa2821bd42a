//! Self-gravity of the gas: the tree against the float64 direct sum, the Evrard collapse's
//! energies, the n = 1 polytrope's equilibrium, and the refusals.

use super::ic_gravity::{self, EVRARD_GAMMA, POLYTROPE_GAMMA, Polytrope};
use super::*;

fn gravity_params(gamma: f64, solver: GravitySolver) -> HydroParams {
    HydroParams {
        self_gravity: true,
        gravity: Gravity {
            solver,
            ..Gravity::default()
        },
        ..HydroParams::ideal_gas(gamma)
    }
}

fn radius(p: [f64; 3]) -> f64 {
    (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt()
}

/// The fraction of the particles within `r` against the profile's `M(r)`, largest deviation over
/// r = 0.1 … 0.9.
fn mass_profile_error(gas: &Gas, mass: impl Fn(f64) -> f64) -> f64 {
    let mut r: Vec<f64> = gas.pos.iter().map(|&p| radius(p)).collect();
    r.sort_by(f64::total_cmp);
    (1..10)
        .map(|k| {
            let rk = 0.1 * k as f64;
            let inside = r.partition_point(|&x| x < rk) as f64 / r.len() as f64;
            (inside - mass(rk)).abs()
        })
        .fold(0.0, f64::max)
}

#[test]
fn stretched_lattices_follow_the_evrard_and_polytrope_mass_profiles() {
    let params = HydroParams::ideal_gas(EVRARD_GAMMA);
    let ev = ic_gravity::evrard(3000, &params);
    assert!((2700..3300).contains(&ev.len()), "{} particles", ev.len());
    let total: f64 = ev.mass.iter().sum();
    assert!((total - 1.0).abs() < 1e-12);
    assert!(ev.pos.iter().all(|&p| radius(p) < 1.0));
    let e = mass_profile_error(&ev, |r| r * r);
    assert!(e < 0.02, "Evrard M(r) off by {e}");
    assert!(ev.u.iter().all(|&u| u == ic_gravity::EVRARD_U));
    let po = ic_gravity::polytrope(3000, 1.0, &params);
    let e = mass_profile_error(&po, Polytrope::mass);
    assert!(e < 0.02, "polytrope M(r) off by {e}");
    // The profile's own consistency: M(r) is the integral of 4π r² ρ (midpoint rule).
    let poly = Polytrope::new(1.0);
    let steps = 20000;
    let dr = 1.0 / steps as f64;
    let m: f64 = (0..steps)
        .map(|k| {
            let r = (k as f64 + 0.5) * dr;
            4.0 * core::f64::consts::PI * r * r * poly.density(r) * dr
        })
        .sum();
    assert!((m - 1.0).abs() < 1e-6, "polytrope mass {m}");
    assert!((Polytrope::mass(Polytrope::radius_of_mass(0.3)) - 0.3).abs() < 1e-12);
}

#[test]
fn tree_self_gravity_matches_the_direct_sum() {
    let params = HydroParams::ideal_gas(EVRARD_GAMMA);
    let gas = ic_gravity::evrard(3000, &params);
    let grav = Gravity::default();
    let (tree, tree_pot) = gravity::accelerations(&gas.pos, &gas.mass, &grav).unwrap();
    let direct = Gravity {
        solver: GravitySolver::Direct,
        ..grav
    };
    let (exact, pot) = gravity::accelerations(&gas.pos, &gas.mass, &direct).unwrap();
    let mut err: Vec<f64> = tree
        .iter()
        .zip(&exact)
        .map(|(a, b)| radius([a[0] - b[0], a[1] - b[1], a[2] - b[2]]) / radius(*b))
        .collect();
    err.sort_by(f64::total_cmp);
    let (median, p99) = (err[err.len() / 2], err[err.len() * 99 / 100]);
    assert!(
        median < 2e-3 && p99 < 2e-2,
        "median {median:e}, 99% {p99:e}"
    );
    let w_tree = gravity::potential_energy_of(&gas.mass, &tree_pot);
    let w = gravity::potential_energy_of(&gas.mass, &pot);
    assert!(
        ((w_tree - w) / w).abs() < 2e-3,
        "W tree {w_tree}, direct {w}"
    );
    // The ρ ∝ 1/r sphere's binding energy is −(2/3) G M² / R; softening and the discrete
    // particles make it a little shallower.
    assert!(w > -2.0 / 3.0 && w < -0.62, "W = {w}");
    // Inside the sphere g(r) = G M(r) / r² = 1 away from the centre and the rim.
    for (p, a) in gas.pos.iter().zip(&exact) {
        let r = radius(*p);
        if (0.3..0.8).contains(&r) {
            let ar = -(a[0] * p[0] + a[1] * p[1] + a[2] * p[2]) / r;
            assert!((ar - 1.0).abs() < 0.05, "g(r = {r}) = {ar}");
        }
    }
}

#[test]
fn self_gravity_is_refused_in_a_periodic_box_and_with_bad_parameters() {
    let params = gravity_params(EVRARD_GAMMA, GravitySolver::Tree);
    let gas = ic_gravity::evrard(500, &params);
    let with = |p: &HydroParams, b: Boundary| Sim::new(gas.clone(), p.clone(), b).err();
    assert_eq!(
        with(&params, Boundary::Periodic([2.0; 3])),
        Some(HydroError::PeriodicGravity)
    );
    let bad: [fn(&mut Gravity); 6] = [
        |g| g.eps = 0.0,
        |g| g.eps = f64::NAN,
        |g| g.g = -1.0,
        |g| g.theta = 0.0,
        |g| g.theta = 3.0,
        |g| g.eta = f64::INFINITY,
    ];
    for f in bad {
        let mut p = params.clone();
        f(&mut p.gravity);
        let e = with(&p, Boundary::Open);
        assert!(matches!(e, Some(HydroError::Gravity(_))), "{e:?}");
        assert!(e.unwrap().to_string().starts_with("self-gravity: "));
    }
    // The direct sum ignores θ; without self-gravity nothing is checked.
    let mut p = params.clone();
    p.gravity.solver = GravitySolver::Direct;
    p.gravity.theta = 0.0;
    assert!(with(&p, Boundary::Open).is_none());
    p.self_gravity = false;
    p.gravity.eps = -1.0;
    assert!(with(&p, Boundary::Open).is_none());
}

#[test]
#[ignore]
fn explore_evrard() {
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let t_end: f64 = std::env::var("T")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let params = gravity_params(EVRARD_GAMMA, GravitySolver::Direct);
    let gas = ic_gravity::evrard(n, &params);
    let mut sim = Sim::new(gas, params, Boundary::Open).unwrap();
    let d0 = sim.diagnostics();
    println!("n {} {:?}", sim.gas.len(), d0);
    let start = std::time::Instant::now();
    let mut next = 0.1;
    while sim.t < t_end {
        sim.step(t_end - sim.t).unwrap();
        if sim.t >= next {
            let d = sim.diagnostics();
            println!(
                "t {:.3} step {} K {:.4} U {:.4} W {:.4} E {:.5} err {:.2e} {:.1}s",
                d.t,
                d.step,
                d.kinetic,
                d.thermal,
                d.potential,
                d.total,
                (d.total - d0.total) / d0.total.abs(),
                start.elapsed().as_secs_f64()
            );
            next += 0.1;
        }
    }
}

#[test]
#[ignore]
fn explore_polytrope() {
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let t_end: f64 = std::env::var("T")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let params = gravity_params(POLYTROPE_GAMMA, GravitySolver::Direct);
    let gas = ic_gravity::polytrope(n, 1.0, &params);
    let mut sim = Sim::new(gas, params, Boundary::Open).unwrap();
    let d0 = sim.diagnostics();
    println!("n {} {:?}", sim.gas.len(), d0);
    let poly = Polytrope::new(1.0);
    let start = std::time::Instant::now();
    let mut next = 0.0;
    while sim.t < t_end {
        if sim.t >= next {
            let g = &sim.gas;
            let vrms = (g
                .vel
                .iter()
                .map(|v| v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
                .sum::<f64>()
                / g.len() as f64)
                .sqrt();
            let mut bins = [(0.0, 0.0, 0usize); 5];
            for i in 0..g.len() {
                let r = (g.pos[i][0].powi(2) + g.pos[i][1].powi(2) + g.pos[i][2].powi(2)).sqrt();
                let b = (r / 0.1) as usize;
                if b < 5 {
                    bins[b].0 += g.rho[i];
                    bins[b].1 += poly.density(r);
                    bins[b].2 += 1;
                }
            }
            let ratios: Vec<String> = bins.iter().map(|b| format!("{:.3}", b.0 / b.1)).collect();
            let d = sim.diagnostics();
            println!(
                "t {:.2} step {} vrms {:.4} E err {:.2e} rho/LE {:?} {:.1}s",
                sim.t,
                sim.step,
                vrms,
                (d.total - d0.total) / d0.total.abs(),
                ratios,
                start.elapsed().as_secs_f64()
            );
            next += 0.25;
        }
        sim.step(t_end - sim.t).unwrap();
    }
}
