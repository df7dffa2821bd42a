//! SPH on the GPU against the CPU twins (whose neighbour sets equal the O(N²) brute force, see
//! `host/sph/tests.rs`): exact counts and lists for every search and criterion, density, the
//! smoothing-length iteration, bad input.

mod common;

use common::gpu;
use warpkit::bh::scene::{self, Scene};
use warpkit::device::bh::Body;
use warpkit::device::rng;
use warpkit::sph::gpu::{DeviceSph, SphGpuError};
use warpkit::sph::{
    Criterion, DEFAULT_MAX_PAIRS, HParams, Method, SmoothingKernel, SphError, cpu, initial_h,
};

fn random_h(n: usize, seed: u64, lo: f32, hi: f32, zeros: bool) -> Vec<f32> {
    (0..n as u64)
        .map(|i| {
            if zeros && rng::draw_u64(seed + 1, i).is_multiple_of(9) {
                0.0
            } else {
                lo + (hi - lo) * rng::uniform_f32(seed, i)
            }
        })
        .collect()
}

/// An integer lattice 0..=8 (pairs at exactly h, particles on the tree's dividing planes) with
/// 60 duplicated points and a pile of 40 coincident particles.
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

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_neighbour_sets_equal_the_cpu_exactly() {
    let gpu = gpu();
    let mut cases: Vec<(String, Vec<Body>, Vec<f32>)> = Vec::new();
    for (scene, n, hs) in [
        (Scene::Uniform, 1, (0.1, 0.2)),
        (Scene::Uniform, 31, (0.1, 1.0)),
        (Scene::Uniform, 33, (0.1, 1.0)),
        (Scene::Uniform, 5000, (0.02, 0.15)),
        (Scene::Plummer, 5000, (0.01, 0.5)),
        (Scene::Plummer, 40_000, (0.005, 0.1)),
    ] {
        let mut b = scene::generate(scene, n, 3 + n as u64);
        scene::shuffle(&mut b, 1);
        let h = random_h(n, 11 + n as u64, hs.0, hs.1, true);
        cases.push((format!("{scene:?} n={n}"), b, h));
    }
    let b = lattice_with_piles();
    let n = b.len();
    for hv in [1.0f32, 2.0, 0.0] {
        cases.push((format!("lattice h={hv}"), b.clone(), vec![hv; n]));
    }
    let mixed = (0..n)
        .map(|i| (rng::draw_u64(5, i as u64) % 4) as f32)
        .collect();
    cases.push(("lattice mixed h".into(), b, mixed));

    for (what, b, h) in &cases {
        let mut d = DeviceSph::new(&gpu, b, h).unwrap();
        // The root's box is the particles' box and largest h.
        let boxes = d.download_boxes(&gpu).unwrap();
        let t = cpu::SphTree::new(b, h);
        assert_eq!(
            boxes[d.octree.layout.root() as usize],
            t.boxes[t.tree.root() as usize],
            "{what}: root box"
        );
        for crit in Criterion::ALL {
            let want = cpu::neighbours(Method::Group, b, h, crit, DEFAULT_MAX_PAIRS).unwrap();
            for method in Method::ALL {
                let (c, _) = d.counts(&gpu, method, crit).unwrap();
                assert_eq!(c, want.counts(), "{what} {method:?} {crit:?}: counts");
                if b.len() <= 5000 {
                    let (nb, _) = d.neighbours(&gpu, method, crit, DEFAULT_MAX_PAIRS).unwrap();
                    assert_eq!(nb, want, "{what} {method:?} {crit:?}: lists");
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_counts_at_2_16_equal_the_cpu() {
    let gpu = gpu();
    let n = 1 << 16;
    for scene in [Scene::Uniform, Scene::Plummer] {
        let b = scene::generate(scene, n, 77);
        let h0 = initial_h(&b, 64.0);
        let h = random_h(n, 78, 0.5 * h0, 1.5 * h0, false);
        let mut d = DeviceSph::new(&gpu, &b, &h).unwrap();
        for crit in Criterion::ALL {
            let want = cpu::counts(Method::Group, &b, &h, crit).unwrap();
            for method in Method::ALL {
                let (c, ms) = d.counts(&gpu, method, crit).unwrap();
                assert_eq!(c, want, "{scene:?} {method:?} {crit:?}");
                println!("{scene:?} 2^16 {crit:?} {method:?}: {ms:.3} ms");
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_density_matches_the_cpu_and_the_lattice() {
    let gpu = gpu();
    let n = 20_000;
    let b = scene::generate(Scene::Plummer, n, 9);
    let h = random_h(n, 10, 0.05, 0.4, false);
    let mut d = DeviceSph::new(&gpu, &b, &h).unwrap();
    for kernel in [SmoothingKernel::CubicSpline, SmoothingKernel::WendlandC2] {
        let want = cpu::density(Method::Group, &b, &h, kernel).unwrap();
        for method in Method::ALL {
            let (rho, _) = d.density(&gpu, method, kernel).unwrap();
            let worst = rho
                .iter()
                .zip(&want)
                .map(|(a, w)| ((a - w) / w).abs())
                .fold(0.0f32, f32::max);
            assert!(worst < 1e-5, "{kernel:?} {method:?}: {worst:.2e}");
        }
    }
    // Unit lattice, unit masses: ρ = 1 inside.
    let k = 24usize;
    let lat: Vec<Body> = (0..k * k * k)
        .map(|i| Body {
            x: (i % k) as f32,
            y: (i / k % k) as f32,
            z: (i / (k * k)) as f32,
            m: 1.0,
        })
        .collect();
    let h = vec![3.3f32; lat.len()];
    let mut d = DeviceSph::new(&gpu, &lat, &h).unwrap();
    for kernel in [SmoothingKernel::CubicSpline, SmoothingKernel::WendlandC2] {
        for method in Method::ALL {
            let (rho, _) = d.density(&gpu, method, kernel).unwrap();
            for (i, p) in lat.iter().enumerate() {
                if p.pos()
                    .iter()
                    .all(|&x| (3.3..=(k - 1) as f32 - 3.3).contains(&x))
                {
                    assert!(
                        (rho[i] - 1.0).abs() < 0.01,
                        "{kernel:?} {method:?} ρ[{i}] = {}",
                        rho[i]
                    );
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_h_iteration_converges_and_agrees_with_its_counts() {
    let gpu = gpu();
    let hp = HParams {
        target: 64.0,
        tol: 2.0,
        max_iter: 40,
    };
    for scene in [Scene::Uniform, Scene::Plummer] {
        let b = scene::generate(scene, 1 << 16, 31);
        for method in Method::ALL {
            let (r, ms) = warpkit::sph::gpu::iterate_h(&gpu, method, &b, None, &hp).unwrap();
            assert!(
                r.unconverged.is_empty(),
                "{scene:?} {method:?}: {}",
                r.report()
            );
            let c = cpu::counts(Method::Group, &b, &r.h, Criterion::Gather).unwrap();
            assert_eq!(c, r.counts, "{scene:?} {method:?}");
            println!("{scene:?} 2^16 {method:?}: {} in {ms:.2} ms", r.report());
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_bad_input_is_refused_and_all_pairs_are_bounded() {
    let gpu = gpu();
    let b = scene::generate(Scene::Uniform, 3000, 2);
    let mut h = vec![0.1f32; 3000];
    h[5] = f32::NAN;
    assert!(matches!(
        DeviceSph::new(&gpu, &b, &h),
        Err(SphGpuError::Input(SphError::BadH { index: 5, .. }))
    ));
    assert!(matches!(
        DeviceSph::new(&gpu, &[], &[]),
        Err(SphGpuError::Input(SphError::Empty))
    ));
    // Every particle neighbours every other: counted, then the lists refused with their size,
    // or filled when allowed.
    let huge = vec![1e30f32; 3000];
    let mut d = DeviceSph::new(&gpu, &b, &huge).unwrap();
    for method in Method::ALL {
        let (c, _) = d.counts(&gpu, method, Criterion::Symmetric).unwrap();
        assert!(c.iter().all(|&k| k == 3000), "{method:?}");
        let e = d
            .neighbours(&gpu, method, Criterion::Gather, 1_000_000)
            .err()
            .unwrap();
        assert!(
            matches!(
                e,
                SphGpuError::Input(SphError::TooManyPairs {
                    pairs: 9_000_000,
                    ..
                })
            ),
            "{e}"
        );
        let (nb, _) = d
            .neighbours(&gpu, method, Criterion::Gather, DEFAULT_MAX_PAIRS)
            .unwrap();
        assert_eq!(nb.list.len(), 9_000_000);
    }
    let mut z = vec![0.1f32; 3000];
    z[0] = 0.0;
    let mut d = DeviceSph::new(&gpu, &b, &z).unwrap();
    assert!(matches!(
        d.density(&gpu, Method::Group, SmoothingKernel::CubicSpline),
        Err(SphGpuError::Input(SphError::ZeroH { index: 0 }))
    ));
}

/// The h iteration's pieces against their CPU twins: the local-density guess (one formula;
/// cube roots through the device's approximate exp2/log2, so to 1e-5), and passes over a subset
/// of iterating particles: counts of exactly those particles, the same steps, and the same pairs
/// tested (walks, their splits and the cell stencils decide alike).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_guess_and_active_passes_equal_the_cpu() {
    let gpu = gpu();
    for scene in [Scene::Uniform, Scene::Plummer] {
        let b = scene::generate(scene, 1 << 16, 12);
        let tree = warpkit::bh::cpu::build_tree(&b);
        let want = cpu::guess_h(&b, &tree, 64.0);
        let mut d = DeviceSph::new(&gpu, &b, &vec![1.0; b.len()]).unwrap();
        let got = d.guess_h(&gpu, 64.0).unwrap();
        let worst = got
            .iter()
            .zip(&want)
            .map(|(a, w)| ((a - w) / w).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-5, "{scene:?}: guess {worst:.2e}");
        // Every third particle's converged h perturbed: one pass from the same h counts alike,
        // tests the same pairs and steps h alike (to the cube root's rounding); the passes after
        // it serve the particles still iterating, and their final counts are the CPU's at the
        // final h.
        let r = cpu::iterate_h(Method::Group, &b, None, &HParams::default()).unwrap();
        let mut h = r.h.clone();
        for x in h.iter_mut().step_by(3) {
            *x *= 1.3;
        }
        let hp1 = HParams {
            max_iter: 1,
            ..HParams::default()
        };
        for method in Method::ALL {
            let what = format!("{scene:?} {method:?}");
            let mut d = DeviceSph::new(&gpu, &b, &h).unwrap();
            let (g, _) = d.iterate_h(&gpu, method, &hp1, false).unwrap();
            let c = cpu::iterate_h(method, &b, Some(&h), &hp1).unwrap();
            assert_eq!(g.passes[0].active, c.passes[0].active, "{what}");
            assert_eq!(g.passes[0].found, c.passes[0].found, "{what}");
            assert_eq!(g.passes[0].tested, c.passes[0].tested, "{what}");
            assert_eq!(g.passes[0].groups, c.passes[0].groups, "{what}");
            assert_eq!(g.counts, c.counts, "{what}");
            let worst =
                g.h.iter()
                    .zip(&c.h)
                    .map(|(a, w)| ((a - w) / w).abs())
                    .fold(0.0f32, f32::max);
            assert!(worst < 1e-5, "{what}: h {worst:.2e}");
            let mut d = DeviceSph::new(&gpu, &b, &h).unwrap();
            let (g, ms) = d
                .iterate_h(&gpu, method, &HParams::default(), false)
                .unwrap();
            assert!(g.unconverged.is_empty(), "{what}: {}", g.report());
            assert!(g.passes.windows(2).all(|w| w[1].active <= w[0].active));
            let want = cpu::counts(Method::Cells, &b, &g.h, Criterion::Gather).unwrap();
            assert_eq!(g.counts, want, "{what}");
            println!("{what}: {} in {ms:.3} ms\n{}", g.report(), g.pass_table());
        }
    }
}

/// `sph_active_groups` gathers exactly the walks of the warp groups with a particle
/// still iterating (`cpu::active_groups` on the device's sort and groups), for none, a clustered few, a scattered third and all
/// of the particles; and the h iteration's later passes walk fewer groups than there are.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_active_groups_equal_the_cpu() {
    use warpkit::device::sph::{H_CONVERGED, HState};
    let gpu = gpu();
    let n = 1 << 16;
    let b = scene::generate(Scene::Plummer, n, 12);
    let t = warpkit::bh::cpu::build_tree(&b);
    let h = cpu::guess_h(&b, &t, 64.0);
    let mut d = DeviceSph::new(&gpu, &b, &h).unwrap();
    // The device's own sort and groups (the CPU tree's are checked against them elsewhere).
    let sort = gpu.download(&d.octree.tree.sort).unwrap();
    let mut groups = gpu.download(&d.octree.tree.groups).unwrap();
    groups.truncate(d.ngroups as usize);
    type Pick = (&'static str, fn(u32) -> bool);
    let picks: [Pick; 4] = [
        ("none", |_| false),
        ("few", |i| i.is_multiple_of(5000)),
        ("third", |i| i.is_multiple_of(3)),
        ("all", |_| true),
    ];
    for (what, on) in picks {
        let state: Vec<HState> = (0..n as u32)
            .map(|i| {
                let mut s = HState::start(h[i as usize]);
                if !on(i) {
                    s.state = H_CONVERGED;
                }
                s
            })
            .collect();
        let got = d.active_groups(&gpu, &state).unwrap();
        let mut want = cpu::active_groups(&b, &h, &sort, &groups, &|i| on(i));
        want.sort_unstable();
        assert_eq!(got, want, "{what}");
    }
    let (r, ms) = d
        .iterate_h(&gpu, Method::Group, &HParams::default(), true)
        .unwrap();
    assert!(r.unconverged.is_empty(), "{}", r.report());
    assert!(r.passes.last().unwrap().groups < r.passes[0].groups);
    assert!(r.passes.iter().all(|p| p.groups <= p.active));
    println!("{} in {ms:.3} ms\n{}", r.report(), r.pass_table());
}

/// Times (no assertions): uniform and Plummer 2^20 at 64 neighbours, each search's density and
/// count pass, and the h iteration, for the lead's table.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_sph_timings() {
    let gpu = gpu();
    for scene in [Scene::Uniform, Scene::Plummer] {
        let b = scene::generate(scene, 1 << 20, 5);
        let hp = HParams::default();
        let (r, ms_h) = warpkit::sph::gpu::iterate_h(&gpu, Method::Group, &b, None, &hp).unwrap();
        let mut d = DeviceSph::new(&gpu, &b, &r.h).unwrap();
        println!(
            "{scene:?} 2^20: tree {:.2} ms, boxes {:.3} ms, h iteration {ms_h:.2} ms ({})",
            d.tree_ms,
            d.boxes_ms,
            r.report()
        );
        print!("{}", r.pass_table());
        let (_, dm) = d
            .density(&gpu, Method::Group, SmoothingKernel::CubicSpline)
            .unwrap();
        println!("  h iteration + density (group): {:.3} ms", ms_h + dm);
        // The cell list on the Plummer sphere puts most particles in a few cells (minutes).
        for method in Method::ALL {
            if scene == Scene::Plummer && method == Method::Cells {
                continue;
            }
            let (_, c) = d.counts(&gpu, method, Criterion::Gather).unwrap();
            let (_, dm) = d
                .density(&gpu, method, SmoothingKernel::CubicSpline)
                .unwrap();
            println!("  {method:?}: count {c:.3} ms, density {dm:.3} ms");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// the hydro force pass on the GPU against the float64 CPU solver
// ---------------------------------------------------------------------------------------------

#[path = "gpu_sph/hydro.rs"]
mod hydro;
