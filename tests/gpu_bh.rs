//! Barnes–Hut on the GPU against the CPU twin and float64 direct summation.

mod common;

use common::gpu;
use warpkit::bh::gpu::Traversal;
use warpkit::bh::scene::{self, Scene};
use warpkit::bh::{Params, check_tree, cpu, gpu as bhgpu, relative_errors};
use warpkit::device::bh::{Accel, Body};

fn rel(a: &Accel, b: &Accel) -> f64 {
    let d = [(a.x - b.x) as f64, (a.y - b.y) as f64, (a.z - b.z) as f64];
    let nb = ((b.x as f64).powi(2) + (b.y as f64).powi(2) + (b.z as f64).powi(2)).sqrt();
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() / nb.max(1e-30)
}

/// GPU and CPU twin agree to float32 rounding: the trees are identical for distinct bodies, so
/// groups open the same cells; a centre of mass rounded differently can flip a rare opening
/// decision, which moves a body by the BH error (1e-3), so 99% must agree to 1e-5, all to 1e-2.
fn assert_matches_cpu(bodies: &[Body], got: &[Accel], order_sorted: bool, p: &Params, what: &str) {
    let tree = cpu::build_tree(bodies);
    let identity: Vec<u32> = (0..bodies.len() as u32).collect();
    let want = cpu::gravity(
        bodies,
        &tree,
        if order_sorted { &tree.sort } else { &identity },
        p,
    );
    let mut e: Vec<f64> = got.iter().zip(&want).map(|(a, b)| rel(a, b)).collect();
    e.sort_by(f64::total_cmp);
    let p99 = e[(e.len() * 99) / 100];
    let max = *e.last().unwrap();
    assert!(
        p99 < 1e-5 && max < 1e-2,
        "{what}: p99 {p99:.2e} max {max:.2e}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_tree_invariants_and_cpu_parity() {
    let gpu = gpu();
    let p = Params::default();
    for scene in [Scene::Lattice, Scene::Uniform, Scene::Plummer] {
        for n in [1usize, 2, 31, 33, 257, 4097, 100_000] {
            let mut b = scene::generate(scene, n, n as u64);
            scene::shuffle(&mut b, 1);
            for sorted in [false, true] {
                let run = bhgpu::gravity(&gpu, &b, &p, sorted, true).unwrap();
                check_tree(&b, run.tree.as_ref().unwrap())
                    .unwrap_or_else(|e| panic!("{scene:?} n={n}: {e}"));
                assert_matches_cpu(
                    &b,
                    &run.acc,
                    sorted,
                    &p,
                    &format!("{scene:?} n={n} sorted={sorted}"),
                );
            }
            // The warp-group kernel against its CPU twin (tree order, as it is meant to run).
            let o = bhgpu::Options {
                sorted: true,
                traversal: Traversal::Group,
                ..Default::default()
            };
            let run = bhgpu::gravity_with(&gpu, &b, &p, &o).unwrap();
            let tree = cpu::build_tree(&b);
            let want = cpu::gravity_group(&b, &tree, &p, false, None);
            let oq = bhgpu::Options {
                quadrupole: true,
                ..o
            };
            let runq = bhgpu::gravity_with(&gpu, &b, &p, &oq).unwrap();
            let wantq = cpu::gravity_group(&b, &tree, &p, true, None);
            let mut eq: Vec<f64> = runq
                .acc
                .iter()
                .zip(&wantq)
                .map(|(a, w)| rel(a, w))
                .collect();
            eq.sort_by(f64::total_cmp);
            let (q99, qmax) = (eq[eq.len() * 99 / 100], eq[eq.len() - 1]);
            assert!(
                q99 < 1e-5 && qmax < 1e-2,
                "quad {scene:?} n={n}: p99 {q99:.2e} max {qmax:.2e}"
            );
            let mut e: Vec<f64> = run.acc.iter().zip(&want).map(|(a, w)| rel(a, w)).collect();
            e.sort_by(f64::total_cmp);
            let (p99, max) = (e[e.len() * 99 / 100], e[e.len() - 1]);
            assert!(
                p99 < 1e-5 && max < 1e-2,
                "group {scene:?} n={n}: p99 {p99:.2e} max {max:.2e}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_buckets_duplicates_and_grows_on_overflow() {
    let gpu = gpu();
    let mut b: Vec<Body> = (0..4096)
        .map(|i| Body {
            x: (i % 16) as f32 * 0.01,
            y: 0.5,
            z: -0.25,
            m: 1.0 / 4096.0,
        })
        .collect();
    b.extend(scene::uniform(4096, 4));
    let p = Params {
        theta: 0.5,
        eps: 0.01,
        g: 1.0,
    };
    let run = bhgpu::gravity_with(
        &gpu,
        &b,
        &p,
        &bhgpu::Options {
            sorted: true,
            keep_tree: true,
            cells: Some(8),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(
        run.retries > 0,
        "8 cells cannot hold the tree: the build must have retried"
    );
    assert!(run.header.bucketed >= 4096 - 16);
    check_tree(&b, run.tree.as_ref().unwrap()).unwrap();
    assert!(
        run.acc
            .iter()
            .all(|a| a.x.is_finite() && a.y.is_finite() && a.z.is_finite())
    );
    // Bucket chains (and so warp groups) may be ordered differently from the CPU's, and forces
    // inside the row of clumps nearly cancel, so compare both against float64 direct summation,
    // with errors normalised by the mean acceleration.
    let reference = bhgpu::brute_force_f64(&gpu, &b, &p).unwrap();
    let cpu_tree = cpu::build_tree(&b);
    let cpu_acc = cpu::gravity(&b, &cpu_tree, &cpu_tree.sort, &p);
    let norm = |r: &[f64; 3]| (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]).sqrt();
    let mean_ref = reference.iter().map(norm).sum::<f64>() / b.len() as f64;
    let err = |acc: &[Accel]| {
        acc.iter()
            .zip(&reference)
            .map(|(a, r)| norm(&[a.x as f64 - r[0], a.y as f64 - r[1], a.z as f64 - r[2]]))
            .sum::<f64>()
            / b.len() as f64
            / mean_ref
    };
    let (e_gpu, e_cpu) = (err(&run.acc), err(&cpu_acc));
    // Half the mass sits in 16 point clumps: θ = 0.5 errs by about 2% here (measured on the H200:
    // GPU 1.97e-2, CPU 1.97e-2). The GPU must match its twin's accuracy, not a guessed bound.
    assert!(
        (e_gpu - e_cpu).abs() <= 0.1 * e_cpu && e_gpu < 5e-2,
        "normalised mean error: GPU {e_gpu:.2e}, CPU {e_cpu:.2e}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_accuracy_against_f64_brute_force() {
    let gpu = gpu();
    let b = scene::uniform(100_000, 11);
    let reference = bhgpu::brute_force_f64(
        &gpu,
        &b,
        &Params {
            theta: 0.5,
            eps: 0.0,
            g: 1.0,
        },
    )
    .unwrap();
    // The GPU f64 reference equals the CPU f64 reference on a sample.
    let idx: Vec<usize> = (0..b.len()).step_by(997).collect();
    let cpu_ref = cpu::brute_force_f64(
        &b,
        &idx,
        &Params {
            theta: 0.5,
            eps: 0.0,
            g: 1.0,
        },
    );
    for (k, &i) in idx.iter().enumerate() {
        for c in 0..3 {
            assert!((reference[i][c] - cpu_ref[k][c]).abs() <= 1e-9 * cpu_ref[k][c].abs().max(1.0));
        }
    }
    let mut last = 0.0;
    for theta in [0.0f32, 0.3, 0.5, 0.8] {
        let p = Params {
            theta,
            eps: 0.0,
            g: 1.0,
        };
        let run = bhgpu::gravity(&gpu, &b, &p, true, false).unwrap();
        let e = relative_errors(&run.acc, &reference);
        let o = bhgpu::Options {
            sorted: true,
            traversal: Traversal::Group,
            ..Default::default()
        };
        let group = bhgpu::gravity_with(&gpu, &b, &p, &o).unwrap();
        let eg = relative_errors(&group.acc, &reference);
        let mean_g = eg.iter().sum::<f64>() / eg.len() as f64;
        assert!(
            theta > 0.5 || mean_g < 1e-3,
            "group θ = {theta}: mean {mean_g}"
        );
        let mean = e.iter().sum::<f64>() / e.len() as f64;
        if theta == 0.0 {
            assert!(mean < 1e-5, "θ = 0: mean {mean}");
        }
        if theta == 0.5 {
            assert!(mean < 1e-3, "θ = 0.5: mean {mean}");
        }
        assert!(
            mean >= last,
            "errors not monotone in θ at {theta}: {mean} < {last}"
        );
        last = mean;
    }
    let (brute, _) = bhgpu::brute_force(
        &gpu,
        &b,
        &Params {
            theta: 0.5,
            eps: 0.0,
            g: 1.0,
        },
    )
    .unwrap();
    let e = relative_errors(&brute, &reference);
    assert!(e.iter().sum::<f64>() / (e.len() as f64) < 1e-5);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sparse_and_dense_storage_give_the_same_tree_and_forces() {
    use warpkit::bh::gpu::Storage;
    let gpu = gpu();
    let p = Params::default();
    for n in [4096usize, 1 << 17] {
        let mut b = scene::lattice(n);
        scene::shuffle(&mut b, 5);
        let run = |storage, traversal, cells| {
            let o = bhgpu::Options {
                sorted: true,
                keep_tree: true,
                storage,
                traversal,
                cells,
                ..Default::default()
            };
            bhgpu::gravity_with(&gpu, &b, &p, &o).unwrap()
        };
        for traversal in [Traversal::Vote, Traversal::Group] {
            let dense = run(Storage::Dense, traversal, None);
            // Start with too small an address space: the build must retry with 8× more.
            let sparse = run(Storage::Sparse, traversal, Some(8));
            assert!(sparse.retries > 0);
            check_tree(&b, sparse.tree.as_ref().unwrap())
                .unwrap_or_else(|e| panic!("sparse n={n}: {e}"));
            assert_eq!(
                sparse.tree.as_ref().unwrap().sort,
                dense.tree.as_ref().unwrap().sort
            );
            let worst = sparse
                .acc
                .iter()
                .zip(&dense.acc)
                .map(|(a, d)| rel(a, d))
                .fold(0.0, f64::max);
            assert!(
                worst < 1e-6,
                "n={n} {traversal:?}: storages differ by {worst:.2e}"
            );
        }
    }
    // Too deep for the implicit octree: a clear error.
    let deep = scene::plummer(20_000, 3);
    let o = bhgpu::Options {
        sorted: true,
        storage: Storage::Sparse,
        ..Default::default()
    };
    let err = bhgpu::gravity_with(&gpu, &deep, &p, &o)
        .err()
        .expect("a Plummer sphere is too deep for sparse storage");
    assert!(err.to_string().contains("Sparse"), "{err}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_bodies_per_lane_matches_its_cpu_twin() {
    let gpu = gpu();
    let p = Params::default();
    for scene in [Scene::Uniform, Scene::Plummer] {
        for n in [1usize, 33, 65, 4097, 100_000] {
            let mut b = scene::generate(scene, n, n as u64 + 3);
            scene::shuffle(&mut b, 2);
            let o = bhgpu::Options {
                sorted: true,
                traversal: Traversal::Group2,
                keep_tree: true,
                ..Default::default()
            };
            let run = bhgpu::gravity_with(&gpu, &b, &p, &o).unwrap();
            let gt = run.tree.as_ref().unwrap();
            assert_eq!(gt.group_size, 64);
            check_tree(&b, gt).unwrap_or_else(|e| panic!("{scene:?} n={n}: {e}"));
            let mut tree = cpu::build_tree(&b);
            cpu::sort_with_groups(&mut tree, 64);
            let want = cpu::gravity_group(&b, &tree, &p, false, None);
            let mut e: Vec<f64> = run.acc.iter().zip(&want).map(|(a, w)| rel(a, w)).collect();
            e.sort_by(f64::total_cmp);
            let (p99, max) = (e[e.len() * 99 / 100], e[e.len() - 1]);
            assert!(
                p99 < 1e-5 && max < 1e-2,
                "group2 {scene:?} n={n}: p99 {p99:.2e} max {max:.2e}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn relative_criterion_matches_its_cpu_twin() {
    use warpkit::bh::Relative;
    let gpu = gpu();
    let p = Params::default();
    for (scene, n) in [
        (Scene::Plummer, 40_000usize),
        (Scene::Uniform, 30_000),
        (Scene::Plummer, 33),
    ] {
        let mut b = scene::generate(scene, n, 7 + n as u64);
        scene::shuffle(&mut b, 3);
        for quad in [false, true] {
            let crit = Relative {
                alpha: 0.002,
                theta_max: Relative::THETA_MAX,
            };
            let o = bhgpu::Options {
                sorted: true,
                traversal: Traversal::Group2,
                quadrupole: quad,
                relative: Some(crit),
                ..Default::default()
            };
            let run = bhgpu::gravity_with(&gpu, &b, &p, &o).unwrap();
            assert!(run.times.prepass > 0.0 && run.times.gravity > 0.0);
            let mut tree = cpu::build_tree(&b);
            cpu::sort_with_groups(&mut tree, warpkit::device::bh::GROUP_SIZE_2);
            let old = cpu::gravity_group(&b, &tree, &p, quad, None);
            let want = cpu::gravity_group(&b, &tree, &p, quad, Some((crit, &old)));
            let mut e: Vec<f64> = run.acc.iter().zip(&want).map(|(a, w)| rel(a, w)).collect();
            e.sort_by(f64::total_cmp);
            let (p99, max) = (e[e.len() * 99 / 100], e[e.len() - 1]);
            assert!(
                p99 < 1e-5 && max < 1e-2,
                "relative {scene:?} n={n} quad={quad}: p99 {p99:.2e} max {max:.2e}"
            );
        }
    }
}

/// The counted rate: the group kernels' interaction counter equals the sum of the
/// host's replay of every group's walk over the GPU's own tree (`cpu::listed_kinds`), which also
/// gives the quadrupole share behind `warpkit gravity`'s TFLOP/s.
#[test]
#[ignore = "needs a CUDA GPU"]
fn interaction_counter_matches_the_host_replay() {
    use warpkit::bh::Relative;
    let gpu = gpu();
    let p = Params::default();
    let mut b = scene::generate(Scene::Plummer, 50_000, 11);
    scene::shuffle(&mut b, 5);
    let rel = Relative {
        alpha: 0.002,
        theta_max: Relative::THETA_MAX,
    };
    for (traversal, quad, relative) in [
        (Traversal::Group, false, None),
        (Traversal::Group, true, None),
        (Traversal::Group2, false, None),
        (Traversal::Group2, true, None),
        (Traversal::Group2, true, Some(rel)),
    ] {
        let o = bhgpu::Options {
            sorted: true,
            traversal,
            quadrupole: quad,
            relative,
            keep_tree: true,
            ..Default::default()
        };
        let run = bhgpu::gravity_with(&gpu, &b, &p, &o).unwrap();
        let tree = run.tree.as_ref().unwrap();
        let all: Vec<usize> = (0..tree.groups.len()).collect();
        let k = cpu::listed_kinds(&b, tree, &p, quad, relative, &all);
        let (got, want) = (run.header.interactions as f64, (k.bodies + k.cells) as f64);
        // Geometric: the same float32 tests on the same tree. Relative: the bound comes from
        // first-pass accelerations summed in another order (a few decisions may flip).
        let tol = if relative.is_some() { 1e-3 } else { 1e-6 };
        assert!(
            (got - want).abs() <= tol * want,
            "{traversal:?} quad={quad} rel={}: counter {got} replay {want}",
            relative.is_some()
        );
        assert!(k.cells > 0 && k.bodies > 0, "{k:?}");
    }
}

/// The radix sort equals a stable CPU sort (keys and the order of equal keys) on random keys,
/// keys with few distinct values, sorted and reversed input, and sizes around the tile.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_radix_sort_is_a_stable_sort() {
    use warpkit::device::rng::draw_u64;
    let gpu = gpu();
    let tile = warpkit::device::sort::RADIX_TILE as usize;
    for (case, n) in [
        ("random", 1usize),
        ("random", 255),
        ("random", tile - 1),
        ("random", tile + 1),
        ("random", 1_000_003),
        ("few", 300_000),
        ("sorted", 70_000),
        ("reversed", 70_000),
    ] {
        let seed = n as u64 * 7 + 1;
        let keys: Vec<u64> = (0..n)
            .map(|i| match case {
                "random" => draw_u64(seed, i as u64) >> 1,
                "few" => (draw_u64(seed, i as u64) % 5) << 40,
                "sorted" => i as u64 * 977,
                _ => (n - i) as u64 * 977,
            })
            .collect();
        let mut want: Vec<(u64, u32)> = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, i as u32))
            .collect();
        want.sort_by_key(|p| p.0);
        let (k, v) = bhgpu::radix_sort(&gpu, &keys).unwrap();
        let got: Vec<(u64, u32)> = k.into_iter().zip(v).collect();
        assert!(got == want, "{case} n={n}: the GPU sort differs");
    }
}

/// The sorted build makes the locked insertion's tree (shape, cells, depth, buckets) and the same
/// forces, on the scenes, a cluster below the keys' resolution and coincident bodies.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_sorted_build_makes_the_insertion_tree() {
    use warpkit::bh::gpu::Build;
    use warpkit::bh::tree_shape;
    let gpu = gpu();
    let p = Params::default();
    let cases = common::tree_build_cases(&[1, 2, 33, 4097, 300_000], (20_000, 500));
    for (name, b) in cases {
        let want = cpu::build_tree(&b);
        for build in [Build::Sorted, Build::Locked] {
            let o = bhgpu::Options {
                sorted: true,
                keep_tree: true,
                build,
                ..Default::default()
            };
            let run = bhgpu::gravity_with(&gpu, &b, &p, &o).unwrap();
            let t = run.tree.as_ref().unwrap();
            // The box check fails at float32 resolution (depth 30 near 3.0) for any build.
            if name != "tight cluster" {
                check_tree(&b, t).unwrap_or_else(|e| panic!("{name} {build:?}: {e}"));
            }
            assert_eq!(tree_shape(t), tree_shape(&want), "{name} {build:?}: shape");
            let used = |t: &warpkit::bh::Tree| t.cells() as i64 - t.header.bottom as i64;
            assert_eq!(used(t), used(&want), "{name} {build:?}: cells");
            assert_eq!(t.header.depth, want.header.depth, "{name} {build:?}: depth");
            assert_eq!(t.header.bucketed, want.header.bucketed, "{name} {build:?}");
            assert_matches_cpu(&b, &run.acc, true, &p, &format!("{name} {build:?}"));
        }
    }
}

/// `bh::potential` on the GPU (`bh_gravity_group2_pot` on a tree built for the call) against its
/// CPU twin: the same groups and lists, so float32 rounding apart (99% to 1e-5, all to 1e-3 for
/// a rare opening decision flipped by rounding).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_potential_matches_the_cpu_twin() {
    let gpu = gpu();
    let b = scene::generate(Scene::Plummer, 20_000, 4);
    let p = Params {
        theta: 0.5,
        eps: 0.02,
        g: 1.0,
    };
    let backend = warpkit::backend::Backend::Gpu(std::sync::Arc::new(gpu));
    let (acc, pot) = warpkit::bh::potential(&backend, &b, &p).unwrap();
    let (want_acc, want_pot) =
        warpkit::bh::potential(&warpkit::backend::Backend::Cpu, &b, &p).unwrap();
    let mut e: Vec<f64> = pot
        .iter()
        .zip(&want_pot)
        .map(|(&a, &w)| ((a - w) as f64 / w as f64).abs())
        .collect();
    e.sort_by(f64::total_cmp);
    let (p99, max) = (e[e.len() * 99 / 100], *e.last().unwrap());
    assert!(
        p99 < 1e-5 && max < 1e-3,
        "potential: p99 {p99:.2e} max {max:.2e}"
    );
    let mut e: Vec<f64> = acc.iter().zip(&want_acc).map(|(a, w)| rel(a, w)).collect();
    e.sort_by(f64::total_cmp);
    assert!(e[e.len() * 99 / 100] < 1e-5, "accelerations");
}
