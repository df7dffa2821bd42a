//! The N-body loop on the GPU against the float64 CPU reference: forces and potential of the first
//! state, a short run's energy and Lagrangian radii, no particle lost or duplicated by the
//! tree-order gathers, and a blow-up stopped with the particle named.

mod common;

use warpkit::nbody::Particles;
use warpkit::nbody::cpu::{Diagnostics, Simulation, direct_sum};
use warpkit::nbody::gpu::{ForceOptions, GpuSim, NbodyGpuError};
use warpkit::nbody::ic::{Encounter, Plummer};

fn plummer(n: usize, seed: u64) -> Particles {
    Plummer::henon(n, seed).generate()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Relative errors of GPU accelerations and potentials against float64 direct summation, matched
/// by particle id (the GPU reorders particles).
fn errors(
    p: &Particles,
    gpu_state: &Particles,
    gpu_acc: &[[f64; 3]],
    gpu_pot: &[f64],
    eps: f64,
) -> (f64, f64) {
    let n = p.len();
    let (mut acc, mut pot) = (vec![[0.0; 3]; n], vec![0.0; n]);
    direct_sum(&p.pos, &p.mass, eps, &mut acc, &mut pot);
    let index: std::collections::HashMap<u64, usize> =
        p.id.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let mut ea = Vec::new();
    let mut ep = Vec::new();
    for (j, id) in gpu_state.id.iter().enumerate() {
        let i = index[id];
        let a = acc[i];
        let d = [
            gpu_acc[j][0] - a[0],
            gpu_acc[j][1] - a[1],
            gpu_acc[j][2] - a[2],
        ];
        let norm = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        ea.push(norm(d) / norm(a));
        ep.push(((gpu_pot[j] - pot[i]) / pot[i]).abs());
    }
    (median(ea), median(ep))
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn first_forces_and_potential_match_the_float64_direct_sum() {
    let gpu = common::gpu();
    let p = plummer(20000, 7);
    let eps = 0.05;
    let mut f = ForceOptions::default();
    f.params.eps = eps as f32;
    f.params.theta = 0.4;
    let mut sim = GpuSim::new(&gpu, &p, f).unwrap();
    let (state, pot) = sim.state().unwrap();
    let acc: Vec<[f64; 3]> = sim
        .accelerations()
        .unwrap()
        .iter()
        .map(|a| [a.x as f64, a.y as f64, a.z as f64])
        .collect();
    let (ea, ep) = errors(&p, &state, &acc, &pot, eps);
    println!("median relative error: acceleration {ea:.3e}, potential {ep:.3e}");
    // Quadrupole forces at θ = 0.4 and monopole potentials: both well under 1e-3 at the median.
    assert!(ea < 1e-3, "acceleration median error {ea}");
    assert!(ep < 1e-3, "potential median error {ep}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_short_run_keeps_energy_and_matches_the_cpu_reference() {
    let gpu = common::gpu();
    let p = plummer(4096, 11);
    let (eps, dt, steps) = (0.05, 0.01, 200);
    let mut f = ForceOptions::default();
    f.params.eps = eps as f32;
    f.params.theta = 0.3;
    let mut sim = GpuSim::new(&gpu, &p, f).unwrap();
    let (s0, pot0) = sim.state().unwrap();
    let d0 = Diagnostics::compute(&s0, &pot0, 0.0);
    for s in 1..=steps {
        sim.step(dt, s == steps).unwrap();
    }
    let (s1, pot1) = sim.state().unwrap();
    let d1 = Diagnostics::compute(&s1, &pot1, sim.time);
    let mut cpu = Simulation::new(p.clone(), eps, dt).unwrap();
    cpu.run(steps).unwrap();
    let c1 = cpu.diagnostics();
    let drift = ((d1.total - d0.total) / d0.total).abs();
    println!(
        "GPU |ΔE/E| = {drift:.3e}; half-mass radius GPU {:.5} CPU {:.5}; E GPU {:.6} CPU {:.6}",
        d1.lagrangian_radii[2], c1.lagrangian_radii[2], d1.total, c1.total
    );
    assert!(drift < 2e-3, "energy drift {drift}");
    // Two chaotic systems part ways, but their structure does not in two time units.
    for (g, c) in d1.lagrangian_radii.iter().zip(&c1.lagrangian_radii) {
        assert!((g - c).abs() / c < 0.02, "Lagrangian radii {g} vs {c}");
    }
    // Momentum stays near zero (the tree is not symmetric: a small drift, not rounding).
    let pnorm = d1.momentum.iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!(pnorm < 1e-3, "momentum {pnorm}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gathers_lose_and_duplicate_no_particle() {
    let gpu = common::gpu();
    let p = Encounter::default().generate();
    let mut sim = GpuSim::new(&gpu, &p, ForceOptions::default()).unwrap();
    for _ in 0..30 {
        sim.step(0.02, false).unwrap();
    }
    let (s, _) = sim.state().unwrap();
    let mut ids = s.id.clone();
    ids.sort_unstable();
    let mut want = p.id.clone();
    want.sort_unstable();
    assert_eq!(ids, want);
    // Types follow their ids.
    let ty: std::collections::HashMap<u64, u8> =
        p.id.iter().copied().zip(p.ptype.iter().copied()).collect();
    assert!(s.id.iter().zip(&s.ptype).all(|(id, t)| ty[id] == *t));
    // And masses theirs.
    let m: std::collections::HashMap<u64, f64> =
        p.id.iter().copied().zip(p.mass.iter().copied()).collect();
    assert!(
        s.id.iter()
            .zip(&s.mass)
            .all(|(id, x)| (m[id] as f32) as f64 == *x)
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_blow_up_names_the_step_and_particle() {
    let gpu = common::gpu();
    let mut p = plummer(1000, 3);
    p.vel[123] = [3e38, 0.0, 0.0];
    let id = p.id[123];
    let mut sim = GpuSim::new(&gpu, &p, ForceOptions::default()).unwrap();
    let mut err = None;
    for _ in 0..5 {
        // The first drift carries it past f32::MAX.
        if let Err(e) = sim.step(10.0, false) {
            err = Some(e);
            break;
        }
    }
    match err {
        Some(NbodyGpuError::BlowUp { step, id: got, .. }) => {
            assert_eq!(got, id);
            assert_eq!(step, 1);
        }
        other => panic!("expected a blow-up, got {other:?}"),
    }
}
