//! The combined gravity + density walk on the GPU against its CPU twin (which
//! equals the two separate CPU walks bit for bit, see `host/combined/tests.rs`) and against the
//! two separate GPU walks on the same tree: neighbour counts exactly, accelerations and densities
//! to float32 rounding. Outputs are poisoned before each launch (NaN / u32::MAX never pass).

mod common;

use common::gpu;
use warpkit::bh::Params;
use warpkit::bh::scene::{self, Scene};
use warpkit::combined::gpu::DeviceCombined;
use warpkit::combined::{Form, Options, Results, cpu};
use warpkit::device::bh::{Accel, Body};
use warpkit::device::combined::{PART_BOTH, PART_DENSITY, PART_GRAVITY};
use warpkit::device::rng;
use warpkit::sph::SmoothingKernel;
use warpkit::sph::cpu::SphTree;

fn rel(a: &Accel, b: &Accel) -> f64 {
    let d = [(a.x - b.x) as f64, (a.y - b.y) as f64, (a.z - b.z) as f64];
    let nb = ((b.x as f64).powi(2) + (b.y as f64).powi(2) + (b.z as f64).powi(2)).sqrt();
    let e = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() / nb.max(1e-30);
    if e.is_nan() { f64::INFINITY } else { e }
}

/// Accelerations agree to float32 rounding: 99% to 1e-5 and all to 1e-2 (as `gpu_bh`: a centre
/// of mass rounded differently can flip a rare opening decision, moving a body by the BH error).
fn assert_acc_close(got: &[Accel], want: &[Accel], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let mut e: Vec<f64> = got.iter().zip(want).map(|(a, b)| rel(a, b)).collect();
    e.sort_by(f64::total_cmp);
    let (p99, max) = (e[e.len() * 99 / 100], e[e.len() - 1]);
    assert!(
        p99 < 1e-5 && max < 1e-2,
        "{what}: accelerations p99 {p99:.2e} max {max:.2e}"
    );
}

/// Counts exactly, densities to float32 summation order: a sum of `k` terms in another order
/// may differ by about `k` roundings (the Plummer set's wide initial h gives some particles
/// 10^4 neighbours and more), so each density within `1e-5 + 1e-7 k` relative.
fn assert_density_close(got: &Results, want: &Results, what: &str) {
    assert_eq!(got.counts, want.counts, "{what}: counts");
    for (i, ((&a, &b), &k)) in got.rho.iter().zip(&want.rho).zip(&want.counts).enumerate() {
        let d = ((a - b) as f64).abs() / (b as f64).abs().max(1e-30);
        let bound = 1e-5 + 1e-7 * k as f64;
        assert!(
            d < bound,
            "{what}: density {i} ({k} neighbours) differs by {d:.2e}"
        );
    }
}

/// Random smoothing lengths in `[lo, hi)`.
fn random_h(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    (0..n as u64)
        .map(|i| lo + (hi - lo) * rng::uniform_f32(seed, i))
        .collect()
}

/// A seed that differs from run to run (printed, so a failure can be replayed).
fn fresh_seed() -> u64 {
    let s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    println!("seed {s}");
    s
}

fn lattice_with_piles() -> Vec<Body> {
    let mut b: Vec<Body> = (0..729)
        .map(|i| Body {
            x: (i % 9) as f32,
            y: (i / 9 % 9) as f32,
            z: (i / 81) as f32,
            m: 1.0,
        })
        .collect();
    for i in 0..60 {
        b.push(b[(i * 37) % 729]);
    }
    b.extend(std::iter::repeat_n(
        Body {
            x: 4.0,
            y: 4.0,
            z: 4.0,
            m: 1.0,
        },
        40,
    ));
    b
}

fn options(quadrupole: bool, eps: f32, kernel: SmoothingKernel) -> Options {
    Options {
        gravity: Params {
            theta: 0.5,
            eps,
            g: 1.0,
        },
        kernel,
        quadrupole,
    }
}

/// Fresh random sets of every scene (1 … 40 000 bodies, random h) and an integer lattice with
/// duplicated points and a coincident pile (h at exactly the lattice spacings, and mixed).
fn cases(seed: u64) -> Vec<(String, Vec<Body>, Vec<f32>)> {
    let mut cases: Vec<(String, Vec<Body>, Vec<f32>)> = Vec::new();
    for (scene, n, hs) in [
        (Scene::Uniform, 1, (0.1, 0.2)),
        (Scene::Uniform, 31, (0.1, 1.0)),
        (Scene::Uniform, 33, (0.1, 1.0)),
        (Scene::Uniform, 5000, (0.03, 0.12)),
        (Scene::Plummer, 5000, (0.01, 0.4)),
        (Scene::Plummer, 40_000, (0.005, 0.1)),
        (Scene::Lattice, 4096, (0.05, 0.15)),
    ] {
        let s = seed.wrapping_add(n as u64);
        let mut b = scene::generate(scene, n, s);
        scene::shuffle(&mut b, s);
        let h = random_h(n, s ^ 0x5eed, hs.0, hs.1);
        cases.push((format!("{scene:?} n={n}"), b, h));
    }
    let b = lattice_with_piles();
    let n = b.len();
    cases.push(("lattice h=2.5".into(), b.clone(), vec![2.5; n]));
    let mixed = (0..n)
        .map(|i| 0.5 + (rng::draw_u64(seed, i as u64) % 4) as f32)
        .collect();
    cases.push(("lattice mixed h".into(), b, mixed));

    cases
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_combined_equals_its_cpu_twin_and_the_separate_walks() {
    let gpu = gpu();
    let cases = cases(fresh_seed());
    for (what, b, h) in &cases {
        for (quad, eps, kernel) in [
            (false, 0.05, SmoothingKernel::CubicSpline),
            (true, 0.05, SmoothingKernel::CubicSpline),
            (false, 0.0, SmoothingKernel::WendlandC2),
        ] {
            let o = options(quad, eps, kernel);
            let case = format!("{what} quad {quad} ε {eps} {kernel:?}");
            let t = SphTree::new(b, h);
            let want = cpu::combined(b, h, &t, &o, PART_BOTH);
            let mut d = DeviceCombined::new(&gpu, b, h, &o).unwrap();
            let (got, walks, _) = d.combined(&gpu, &o, PART_BOTH).unwrap();
            assert_acc_close(&got.acc, &want.acc, &case);
            assert_density_close(&got, &want, &case);
            // Every body's own term at least; a body per pair tested.
            assert!(got.counts.iter().all(|&c| c >= 1), "{case}");
            assert!(walks.near >= got.counts.iter().map(|&c| c as u64).sum::<u64>());
            // The two separate GPU walks on the same tree.
            let (acc, _) = d.gravity_group(&gpu, &o).unwrap();
            assert_acc_close(&got.acc, &acc, &format!("{case} vs bh_gravity_group"));
            let (_, rho, _) = d.sph_group(&gpu, &o, false).unwrap();
            let (counts, _, _) = d.sph_group(&gpu, &o, true).unwrap();
            let sep = Results {
                acc: Vec::new(),
                counts,
                rho,
            };
            assert_density_close(&got, &sep, &format!("{case} vs sph_group"));
            // One part alone.
            let (g, _, _) = d.combined(&gpu, &o, PART_GRAVITY).unwrap();
            assert!(g.counts.is_empty() && g.rho.is_empty());
            assert_acc_close(&g.acc, &want.acc, &format!("{case} gravity alone"));
            let (dn, _, _) = d.combined(&gpu, &o, PART_DENSITY).unwrap();
            assert!(dn.acc.is_empty());
            assert_density_close(&dn, &want, &format!("{case} density alone"));
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_combined_at_2_18_matches_and_reports_times() {
    let backend = warpkit::backend::Backend::Gpu(std::sync::Arc::new(gpu()));
    let seed = fresh_seed();
    let n = 1 << 18;
    for scene in [Scene::Uniform, Scene::Plummer] {
        let mut b = scene::generate(scene, n, seed);
        scene::shuffle(&mut b, seed);
        let h0 = warpkit::sph::initial_h(&b, 64.0);
        let h = random_h(n, seed + 1, 0.7 * h0, 1.3 * h0);
        let o = options(false, 0.05, SmoothingKernel::CubicSpline);
        let want = cpu::evaluate(&b, &h, &o);
        // The vote form on the uniform set (its CPU twin walks each warp alone: on the Plummer
        // set's dense centre at this h, minutes), with its own twin's gravity: it opens cells
        // per body, not per group.
        let forms: &[Form] = if scene == Scene::Uniform {
            &[Form::Group, Form::Vote]
        } else {
            &[Form::Group]
        };
        let vote = (forms.len() > 1)
            .then(|| cpu::combined_vote(&b, &h, &SphTree::new(&b, &h).without_ranges(), &o));
        for &form in forms {
            let c = warpkit::combined::compare(&backend, &b, &h, &o, form, 3).unwrap();
            let case = format!("{scene:?} {form:?}");
            let want_acc = match (&vote, form) {
                (Some(v), Form::Vote) => &v.acc,
                _ => &want.acc,
            };
            assert_acc_close(&c.combined.acc, want_acc, &case);
            assert_density_close(&c.combined, &want, &case);
            assert_eq!(c.separate.counts, want.counts, "{case}: separate counts");
            println!(
                "{case} 2^18: combined {:.3} ms, gravity {:.3} + density {:.3} = {:.3} ms: {:.2}×",
                c.times.combined,
                c.times.gravity,
                c.times.density,
                c.times.separate(),
                c.times.speedup()
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_combined_vote_equals_its_cpu_twin_and_the_seed_walks() {
    let gpu = gpu();
    for (what, b, h) in &cases(fresh_seed()) {
        for (theta, eps, kernel) in [
            (0.5, 0.05, SmoothingKernel::CubicSpline),
            (0.8, 0.0, SmoothingKernel::WendlandC2),
        ] {
            let mut o = options(false, eps, kernel);
            o.gravity.theta = theta;
            let case = format!("{what} vote θ {theta} ε {eps} {kernel:?}");
            let t = SphTree::new(b, h).without_ranges();
            let want = cpu::combined_vote(b, h, &t, &o);
            let mut d = DeviceCombined::new(&gpu, b, h, &o).unwrap();
            let (got, _) = d.combined_vote(&gpu, &o).unwrap();
            assert_acc_close(&got.acc, &want.acc, &case);
            assert_density_close(&got, &want, &case);
            assert!(got.counts.iter().all(|&c| c >= 1), "{case}");
            // The seed's two walks on the same tree.
            let (acc, _) = d.gravity_vote(&gpu, &o).unwrap();
            assert_acc_close(&got.acc, &acc, &format!("{case} vs bh_gravity"));
            let (_, rho, _) = d.sph_vote(&gpu, &o, false).unwrap();
            let (counts, _, _) = d.sph_vote(&gpu, &o, true).unwrap();
            let sep = Results {
                acc: Vec::new(),
                counts,
                rho,
            };
            assert_density_close(&got, &sep, &format!("{case} vs sph_vote"));
        }
    }
    // Quadrupoles are refused, before any launch.
    let (_, b, h) = &cases(1)[3];
    let o = options(true, 0.05, SmoothingKernel::CubicSpline);
    let mut d = DeviceCombined::new(&gpu, b, h, &o).unwrap();
    assert!(d.combined_vote(&gpu, &o).is_err());
}
