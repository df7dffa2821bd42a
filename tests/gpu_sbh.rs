//! Stochastic Barnes–Hut and Barnes–Hut at query points on the GPU against the CPU twin.
//! Same seed and streams → the kernel draws the random numbers the CPU draws, so the estimates
//! agree to float32 rounding except where an approximate `rsqrt`/`exp` moves a draw across a
//! path or roulette boundary (rare: a few queries in a thousand at most).

mod common;

use common::{EDGE_SIZES, gpu};
use warpkit::device::bh::Body;
use warpkit::device::sbh::{KernelSpec, SbhParams, has_quadrupole};
use warpkit::sbh::wide::WideTree;
use warpkit::sbh::{self, Kernel, Moments, SbhError, SbhTree, Sources, Warps, cpu, gpu as sgpu};

fn setups() -> Vec<(KernelSpec, Sources)> {
    vec![
        (Kernel::Shifted.spec(0.1), sbh::uniform_sources(1 << 14, 1)),
        (Kernel::Plummer.spec(0.05), sbh::uniform_sources(5000, 2)),
        (
            Kernel::Winding.spec(0.0),
            sbh::sphere_sources(1 << 14, 0.3, 3),
        ),
        (Kernel::Smooth.spec(50.0), sbh::uniform_sources(5000, 4)),
    ]
}

/// The winding number sums large terms of both signs near the surface (and the estimator's
/// contribution exchange adds child-minus-parent differences), so the two backends' rounding
/// differs by up to ~Σ|terms|·1e-7 rather than |sum|·1e-7; both stay far below the methods' own
/// errors (≥ 1e-3), and a different random draw would still show as an O(1e-2) change.
fn tolerance(k: KernelSpec, tol: f32) -> f32 {
    if k.kind == warpkit::device::sbh::KIND_WINDING {
        tol * 10.0
    } else {
        tol
    }
}

/// Fraction of queries where `a` and `b` differ by more than `tol` (relative to max(|b|, 1e-3)).
fn mismatches(a: &[f32], b: &[f32], tol: f32) -> (usize, f32) {
    let mut worst = 0.0f32;
    let bad = a
        .iter()
        .zip(b)
        .filter(|(x, y)| {
            let e = (*x - *y).abs() / y.abs().max(1e-3);
            worst = worst.max(e);
            e.is_nan() || e > tol
        })
        .count();
    (bad, worst)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sbh_estimate_matches_cpu_twin() {
    let g = gpu();
    for (k, src) in setups() {
        let t = SbhTree::build(&src);
        let dt = sgpu::DeviceTree::upload(&g, &src, &t).unwrap();
        for &nq in EDGE_SIZES.iter().chain(&[20_000]) {
            let q = sbh::random_queries(nq, nq as u64);
            for (levels, coherent) in [(2, false), (2, true), (1, false)] {
                let p = SbhParams {
                    kernel: k,
                    samples: 2,
                    seed: 11,
                    levels,
                    allocate: true,
                };
                let (got, _) = sgpu::estimate(&g, &src, &dt, &q, &p, coherent).unwrap();
                let want = cpu::estimate(&src, &t, &q, &p, coherent).unwrap();
                let (bad, worst) = mismatches(&got, &want, tolerance(k, 1e-4));
                assert!(
                    bad * 200 <= nq.max(200),
                    "kind {} nq {nq} levels {levels} coherent {coherent}: {bad} mismatches, worst {worst:.2e}",
                    k.kind
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wide_layout_on_the_gpu_matches_the_cpu_twin_and_the_octree_walk() {
    // levels = 2 reads the wide-node layout on both backends (uploaded from `SbhTree::build`, or
    // built from a GPU-built tree); the kernel without it walks the octree's slots. All three give
    // the CPU twin's draws, for every kernel kind, in Morton order with coherent streams (the
    // benchmark's configuration) and without.
    let g = gpu();
    for (k, src) in setups() {
        let t = SbhTree::build(&src);
        let dt = sgpu::DeviceTree::upload(&g, &src, &t).unwrap();
        for &nq in EDGE_SIZES.iter().chain(&[20_000]) {
            let q = sbh::random_queries(nq, 90 + nq as u64);
            let order = sbh::query_order(&q);
            for (samples, coherent, o) in [(1, true, Some(order.as_slice())), (2, false, None)] {
                let p = SbhParams::new(k, samples, 13);
                let (got, _) = sgpu::estimate_ordered(&g, &src, &dt, &q, &p, coherent, o).unwrap();
                let want = cpu::estimate_ordered(&src, &t, &q, &p, coherent, o).unwrap();
                let (bad, worst) = mismatches(&got, &want, tolerance(k, 1e-4));
                assert!(
                    bad * 200 <= nq.max(200) && worst.is_finite(),
                    "wide: kind {} nq {nq} S {samples}: {bad} mismatches, worst {worst:.2e}",
                    k.kind
                );
                let octree = cpu::estimate_layout(&src, &t, &q, &p, coherent, o, false).unwrap();
                let (bad, worst) = mismatches(&got, &octree, tolerance(k, 1e-4));
                assert!(
                    bad * 200 <= nq.max(200) && worst.is_finite(),
                    "wide vs octree twin: kind {} nq {nq} S {samples}: {bad} mismatches, worst {worst:.2e}",
                    k.kind
                );
            }
        }
    }
    // A GPU-built tree gets its wide layout too; without it the kernel walks the slots: the same
    // estimates either way.
    let k = Kernel::Shifted.spec(0.1);
    let src = sbh::uniform_sources(1 << 16, 23);
    let q = sbh::grid_queries(40);
    let order = sbh::query_order(&q);
    let p = SbhParams::new(k, 1, 4);
    let (on_gpu, _) = sgpu::DeviceTree::build_on_gpu(&g, &src).unwrap();
    assert!(on_gpu.wide_ms() > 0.0);
    let (a, wide_ms) =
        sgpu::estimate_ordered(&g, &src, &on_gpu, &q, &p, true, Some(&order)).unwrap();
    let plain = on_gpu.without_wide();
    let (b, octree_ms) =
        sgpu::estimate_ordered(&g, &src, &plain, &q, &p, true, Some(&order)).unwrap();
    let (bad, worst) = mismatches(&a, &b, 1e-4);
    assert!(
        bad * 200 <= q.len(),
        "GPU-built tree, wide vs octree walk: {bad} mismatches, worst {worst:.2e}"
    );
    println!("64000 queries, 2^16 sources: wide {wide_ms:.3} ms, octree walk {octree_ms:.3} ms");
    // Quadrupoles need a tree summarized with them: refused without, and with them the GPU
    // tree's sums match the CPU twin run on that same tree.
    let bh = |dt: &sgpu::DeviceTree| {
        sgpu::barnes_hut_grouped(
            &g,
            &src,
            dt,
            &q,
            k,
            2.0,
            Some(&order),
            Warps::Morton,
            Moments::Quadrupole,
        )
    };
    assert!(matches!(
        bh(&plain),
        Err(sgpu::SbhGpuError::Input(SbhError::NoQuadrupoles))
    ));
    let (with_quad, _) =
        sgpu::DeviceTree::build_on_gpu_with(&g, &src, sgpu::WideBuild::Gpu, true).unwrap();
    let (got, _) = bh(&with_quad).unwrap();
    let host = with_quad.to_host(&g).unwrap();
    assert_eq!(host.tree.cell_quad.len(), host.tree.cells());
    let want = cpu::barnes_hut_grouped(
        &src,
        &host,
        &q,
        k,
        2.0,
        Some(&order),
        Warps::Morton,
        Moments::Quadrupole,
    )
    .unwrap();
    let (bad, worst) = mismatches(&got, &want, tolerance(k, 1e-5));
    assert!(
        bad * 100 <= q.len() && worst < 1e-3,
        "GPU-built tree with quadrupoles: {bad} mismatches, worst {worst:.2e}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sbh_gpu_error_statistics_match_cpu() {
    // Statistically: over a grid the mean and median errors of the two backends agree within 5%.
    let g = gpu();
    let k = Kernel::Shifted.spec(0.1);
    let src = sbh::uniform_sources(1 << 15, 5);
    let t = SbhTree::build(&src);
    let dt = sgpu::DeviceTree::upload(&g, &src, &t).unwrap();
    let q = sbh::grid_queries(24);
    let exact = cpu::brute_force(&src, &q, k).unwrap();
    let p = SbhParams::new(k, 1, 3);
    let (got, _) = sgpu::estimate(&g, &src, &dt, &q, &p, true).unwrap();
    let want = cpu::estimate(&src, &t, &q, &p, true).unwrap();
    let (eg, ec) = (
        sbh::error_stats(k, &got, &exact),
        sbh::error_stats(k, &want, &exact),
    );
    assert!(
        (eg.mean / ec.mean - 1.0).abs() < 0.05 && (eg.median / ec.median - 1.0).abs() < 0.05,
        "gpu {eg:?} cpu {ec:?}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn barnes_hut_and_brute_force_match_cpu() {
    let g = gpu();
    for (k, src) in setups() {
        let t = SbhTree::build(&src);
        let dt = sgpu::DeviceTree::upload(&g, &src, &t).unwrap();
        for &nq in EDGE_SIZES {
            let q = sbh::random_queries(nq, 7 + nq as u64);
            let (got, _) = sgpu::barnes_hut(&g, &src, &dt, &q, k, 2.0).unwrap();
            let want = cpu::barnes_hut(&src, &t, &q, k, 2.0).unwrap();
            // A rounded far-field test can flip a rare opening decision (a BH-sized change).
            let (bad, worst) = mismatches(&got, &want, tolerance(k, 1e-5));
            assert!(
                bad * 100 <= nq.max(100) && worst < 1e-2,
                "kind {} nq {nq}: {bad} mismatches, worst {worst:.2e}",
                k.kind
            );
            let (bf, _) = sgpu::brute_force(&g, &src, &dt, &q, k).unwrap();
            let bc = cpu::brute_force(&src, &q, k).unwrap();
            for (i, (a, b)) in bf.iter().zip(&bc).enumerate() {
                assert!(
                    (a - b).abs() <= tolerance(k, 1e-5) as f64 * b.abs().max(1e-3),
                    "kind {} query {i}: {a} vs {b}",
                    k.kind
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn grouped_barnes_hut_matches_its_cpu_twin() {
    // The same warps (32 consecutive positions of the order) traverse the same cells on both
    // backends; only the list's summation order differs.
    let g = gpu();
    for (k, src) in setups() {
        let t = SbhTree::build(&src);
        let dt = sgpu::DeviceTree::upload(&g, &src, &t).unwrap();
        for &nq in EDGE_SIZES.iter().chain(&[20_000]) {
            let q = sbh::random_queries(nq, 70 + nq as u64);
            let order = sbh::query_order(&q);
            let cases = [
                (None, Warps::Morton),
                (Some(order.as_slice()), Warps::Morton),
                (Some(order.as_slice()), Warps::Rows),
            ];
            let moments: &[Moments] = if has_quadrupole(k) {
                &[Moments::Monopole, Moments::Quadrupole]
            } else {
                &[Moments::Monopole]
            };
            for (o, w) in cases {
                for &m in moments {
                    for beta in [1.0, 2.0, f32::INFINITY] {
                        let (got, _) =
                            sgpu::barnes_hut_grouped(&g, &src, &dt, &q, k, beta, o, w, m).unwrap();
                        let want = cpu::barnes_hut_grouped(&src, &t, &q, k, beta, o, w, m).unwrap();
                        let (bad, worst) = mismatches(&got, &want, tolerance(k, 1e-5));
                        assert!(
                            bad * 100 <= nq.max(100) && worst < 1e-3,
                            "kind {} nq {nq} β {beta} ordered {} {w:?} {m:?}: {bad} mismatches, worst {worst:.2e}",
                            k.kind,
                            o.is_some()
                        );
                    }
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_input_fails_before_launch() {
    let g = gpu();
    let src = sbh::uniform_sources(100, 1);
    let t = SbhTree::build(&src);
    let dt = sgpu::DeviceTree::upload(&g, &src, &t).unwrap();
    let q = sbh::grid_queries(2);
    let p = SbhParams::new(Kernel::Shifted.spec(0.1), 0, 1);
    assert!(matches!(
        sgpu::estimate(&g, &src, &dt, &q, &p, false),
        Err(sgpu::SbhGpuError::Input(SbhError::Samples(0)))
    ));
    assert!(matches!(
        sgpu::barnes_hut(&g, &src, &dt, &q, p.kernel, 0.0),
        Err(sgpu::SbhGpuError::Input(SbhError::Beta(_)))
    ));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tree_built_on_the_gpu_gives_the_uploaded_trees_estimates() {
    let g = gpu();
    let k = Kernel::Shifted.spec(0.1);
    let src = sbh::uniform_sources(1 << 15, 21);
    let q = sbh::random_queries(20_000, 22);
    let (on_gpu, ms) = sgpu::DeviceTree::build_on_gpu(&g, &src).unwrap();
    assert!(ms > 0.0);
    let uploaded = sgpu::DeviceTree::upload(&g, &src, &SbhTree::build(&src)).unwrap();
    let p = SbhParams::new(k, 1, 9);
    // The same octree (cells numbered differently), the same draws: the same estimates.
    let (a, _) = sgpu::estimate(&g, &src, &on_gpu, &q, &p, false).unwrap();
    let (b, _) = sgpu::estimate(&g, &src, &uploaded, &q, &p, false).unwrap();
    let (bad, worst) = mismatches(&a, &b, 1e-5);
    assert!(
        bad * 200 <= q.len() && worst < 1e-2,
        "{bad} mismatches, worst {worst:.2e}"
    );
    let (c, _) = sgpu::barnes_hut(&g, &src, &on_gpu, &q, k, 2.0).unwrap();
    let (d, _) = sgpu::barnes_hut(&g, &src, &uploaded, &q, k, 2.0).unwrap();
    let (bad, worst) = mismatches(&c, &d, 1e-5);
    assert!(
        bad * 100 <= q.len() && worst < 1e-2,
        "BH: {bad} mismatches, worst {worst:.2e}"
    );
    // Dipoles need the host build.
    let sphere = sbh::sphere_sources(4096, 0.3, 3);
    assert!(sgpu::DeviceTree::build_on_gpu(&g, &sphere).is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn brute_force_partial_tiles_and_query_blocks_match_cpu() {
    // Source counts that end in a partial tile whose length is not a multiple of the kernel's
    // 4-source unroll (the remainder loop), and query counts around the 512 queries of a block
    // (4 per thread), for every kernel kind.
    let g = gpu();
    for m in [1usize, 3, 130, 1001] {
        let setups = [
            (Kernel::Shifted.spec(0.1), sbh::uniform_sources(m, 31)),
            (Kernel::Plummer.spec(0.05), sbh::uniform_sources(m, 32)),
            (Kernel::Winding.spec(0.0), sbh::sphere_sources(m, 0.3, 33)),
            (Kernel::Smooth.spec(50.0), sbh::uniform_sources(m, 34)),
        ];
        for (k, src) in setups {
            let t = SbhTree::build(&src);
            let dt = sgpu::DeviceTree::upload(&g, &src, &t).unwrap();
            for nq in [1usize, 511, 512, 513, 2049] {
                let q = sbh::random_queries(nq, 40 + nq as u64);
                let (bf, ms) = sgpu::brute_force(&g, &src, &dt, &q, k).unwrap();
                assert!(ms >= 0.0);
                let bc = cpu::brute_force(&src, &q, k).unwrap();
                for (i, (a, b)) in bf.iter().zip(&bc).enumerate() {
                    assert!(
                        (a - b).abs() <= tolerance(k, 1e-5) as f64 * b.abs().max(1e-3),
                        "kind {} m {m} nq {nq} query {i}: {a} vs {b}",
                        k.kind
                    );
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn morton_ordered_launches_match_the_ordered_cpu_twin() {
    // Queries evaluated in Morton order (`order` argument of both query kernels): the same draws
    // as the ordered CPU twin, sums scattered back to the caller's order; BH does not depend on
    // the order at all.
    let g = gpu();
    for (k, src) in setups() {
        let t = SbhTree::build(&src);
        let dt = sgpu::DeviceTree::upload(&g, &src, &t).unwrap();
        for &nq in EDGE_SIZES.iter().chain(&[20_000]) {
            let q = sbh::random_queries(nq, 50 + nq as u64);
            let order = sbh::query_order(&q);
            let p = SbhParams::new(k, 1, 12);
            for coherent in [false, true] {
                let (got, _) =
                    sgpu::estimate_ordered(&g, &src, &dt, &q, &p, coherent, Some(&order)).unwrap();
                let want = cpu::estimate_ordered(&src, &t, &q, &p, coherent, Some(&order)).unwrap();
                let (bad, worst) = mismatches(&got, &want, tolerance(k, 1e-4));
                assert!(
                    bad * 200 <= nq.max(200) && worst.is_finite(),
                    "kind {} nq {nq} coherent {coherent}: {bad} mismatches, worst {worst:.2e}",
                    k.kind
                );
            }
            let (ordered, _) =
                sgpu::barnes_hut_ordered(&g, &src, &dt, &q, k, 2.0, Some(&order)).unwrap();
            let (plain, _) = sgpu::barnes_hut(&g, &src, &dt, &q, k, 2.0).unwrap();
            assert_eq!(ordered, plain, "kind {} nq {nq}", k.kind);
        }
    }
    // A bad order is refused before the launch.
    let src = sbh::uniform_sources(100, 1);
    let dt = sgpu::DeviceTree::upload(&g, &src, &SbhTree::build(&src)).unwrap();
    let q = sbh::grid_queries(2);
    assert!(matches!(
        sgpu::barnes_hut_ordered(
            &g,
            &src,
            &dt,
            &q,
            Kernel::Shifted.spec(0.1),
            2.0,
            Some(&[0; 8])
        ),
        Err(sgpu::SbhGpuError::Input(SbhError::Order(_)))
    ));
}

/// Uniform sources with coincident copies (bucket chains), every weight positive (the GPU tree
/// build's requirement).
fn chained_sources(m: usize, seed: u64) -> Sources {
    let mut src = sbh::uniform_sources(m, seed);
    let n = src.bodies.len();
    for i in 0..n / 50 {
        src.bodies[n - 1 - i] = Body {
            m: src.bodies[i].m * (1.0 + (i % 3) as f32),
            ..src.bodies[i]
        };
    }
    src
}

fn bits(w: &WideTree) -> (Vec<[u32; 4]>, Vec<[i32; 4]>) {
    (
        w.pm.iter()
            .map(|b| [b.x, b.y, b.z, b.m].map(f32::to_bits))
            .collect(),
        w.meta.iter().map(|m| m.0).collect(),
    )
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wide_layout_built_on_the_gpu_is_the_host_builders() {
    // The GPU's wide layout of a GPU-built octree, downloaded: bit for bit the CPU twin of the GPU
    // steps (same order) and the host builder's blocks (another order) on that very octree, and
    // it passes the layout's structural checks. The kernel reading it gives the CPU twin's
    // estimates for every kernel kind the GPU build supports, and a tree whose layout the host
    // built (another GPU build of the same sources) gives the same estimates.
    let g = gpu();
    let kinds = [
        Kernel::Shifted.spec(0.1),
        Kernel::Plummer.spec(0.05),
        Kernel::Smooth.spec(50.0),
    ];
    let mut sources: Vec<Sources> = EDGE_SIZES
        .iter()
        .map(|&m| sbh::uniform_sources(m, 40 + m as u64))
        .collect();
    sources.push(chained_sources(5000, 7));
    sources.push(chained_sources(1 << 16, 8));
    sources.push(sbh::uniform_sources(1 << 18, 9));
    let q = sbh::random_queries(4097, 31);
    let order = sbh::query_order(&q);
    for src in &sources {
        let m = src.bodies.len();
        let (dt, ms) = sgpu::DeviceTree::build_on_gpu(&g, src).unwrap();
        assert_eq!(dt.wide_build(), sgpu::WideBuild::Gpu);
        assert!(
            dt.wide_ms() > 0.0 && ms > dt.wide_ms(),
            "{ms} {}",
            dt.wide_ms()
        );
        let host = dt.to_host(&g).unwrap();
        let v = host.view_octree(src);
        let twin = WideTree::build_top_down(&v, host.tree.used_cells(), false);
        assert!(
            bits(&twin) == bits(&host.wide),
            "M = {m}: GPU layout != its CPU twin"
        );
        let bfs = WideTree::build(&v, false);
        let blocks = host
            .wide
            .same_blocks(&bfs)
            .unwrap_or_else(|e| panic!("M = {m}: GPU layout vs host builder: {e}"));
        let (checked, entries) = host
            .wide
            .check(&v)
            .unwrap_or_else(|e| panic!("M = {m}: {e}"));
        assert_eq!(checked, blocks);
        let (dh, _) =
            sgpu::DeviceTree::build_on_gpu_with(&g, src, sgpu::WideBuild::Host, false).unwrap();
        let mut host_bfs = host.clone();
        host_bfs.wide = bfs;
        for k in kinds {
            for (samples, coherent, o) in [(1, true, Some(order.as_slice())), (2, false, None)] {
                let p = SbhParams::new(k, samples, 17);
                let (got, _) = sgpu::estimate_ordered(&g, src, &dt, &q, &p, coherent, o).unwrap();
                let want = cpu::estimate_ordered(src, &host, &q, &p, coherent, o).unwrap();
                let (bad, worst) = mismatches(&got, &want, tolerance(k, 1e-4));
                assert!(
                    bad * 200 <= q.len() && worst.is_finite(),
                    "M = {m} kind {} S {samples}: GPU vs twin: {bad} mismatches, worst {worst:.2e}",
                    k.kind
                );
                // The twin on the host builder's layout of the same tree: the same bits.
                let bfs_est = cpu::estimate_ordered(src, &host_bfs, &q, &p, coherent, o).unwrap();
                assert!(
                    want.iter()
                        .zip(&bfs_est)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "M = {m} kind {}: twin on GPU layout vs host layout",
                    k.kind
                );
                let (other, _) = sgpu::estimate_ordered(&g, src, &dh, &q, &p, coherent, o).unwrap();
                let (bad, worst) = mismatches(&got, &other, 1e-5);
                assert!(
                    bad * 200 <= q.len() && worst < 1e-2,
                    "M = {m} kind {}: GPU layout vs host layout: {bad} mismatches, worst {worst:.2e}",
                    k.kind
                );
            }
        }
        println!(
            "M = {m}: {blocks} blocks, {entries} entries, {} rows; trees {ms:.3} ms, of which wide layout {:.3} ms (host build: {:.1} ms)",
            host.wide.meta.len(),
            dt.wide_ms(),
            dh.wide_ms()
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn both_trees_build_on_the_gpu_at_2_20() {
    // The layout of the paper's table's sources (M = 2^20) checked, and the build timed (median of
    // 7 after a warm-up) for the report: the 5 ms target is a benchmark, not an assertion.
    let g = gpu();
    let src = sbh::uniform_sources(1 << 20, 1);
    let (dt, _) = sgpu::DeviceTree::build_on_gpu(&g, &src).unwrap();
    let host = dt.to_host(&g).unwrap();
    host.wide.check(&host.view_octree(&src)).unwrap();
    let (mut total, mut wide) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        let (dt, ms) = sgpu::DeviceTree::build_on_gpu(&g, &src).unwrap();
        total.push(ms);
        wide.push(dt.wide_ms());
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (total, wide) = (median(&mut total), median(&mut wide));
    println!(
        "M = 2^20: both trees {total:.3} ms on the GPU (octree {:.3} ms, wide layout {wide:.3} ms); {} rows",
        total - wide,
        host.wide.meta.len()
    );
    assert!(total > 0.0 && wide >= 0.0 && wide <= total);
}
