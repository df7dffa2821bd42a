//! The wide layout: it reproduces the octree walk, holds every body once, is the breadth-first
//! layout reordered, and its check catches damage; node queries and the strata's allocation.

use super::*;

#[test]
fn wide_layout_reproduces_the_octree_walk() {
    // The same draws from the same weights: the wide layout's estimates equal the octree walk's
    // to float32 rounding of the children's sums (a different pick or roulette draw would change
    // an estimate by far more). Every kernel kind, S = 1 and 3, both stream kinds.
    let mut setups = kernels();
    setups.push((Kernel::Shifted.spec(0.1), awkward_sources(3000, 8)));
    setups.push((Kernel::Smooth.spec(20.0), awkward_sources(1 << 14, 9)));
    setups.push((Kernel::Winding.spec(0.0), sphere_sources(1 << 13, 0.3, 10)));
    let mut q = random_queries(1500, 17);
    q.extend_from_slice(&QUERIES);
    let (mut exact, mut total, mut worst) = (0usize, 0usize, 0.0f64);
    for (k, src) in &setups {
        let t = SbhTree::build(src);
        let (blocks, entries) = t.wide.counts();
        assert!(blocks >= 1 && entries >= 1);
        let bf = cpu::brute_force(src, &q, *k).unwrap();
        // |terms| scale of each query: the direct sum of absolute terms (winding: both signs).
        let scale: Vec<f64> = {
            let abs = Sources {
                bodies: src.bodies.clone(),
                dipoles: src.dipoles.clone(),
            };
            if k.kind == dev::KIND_WINDING {
                q.iter()
                    .map(|qq| {
                        abs.bodies
                            .iter()
                            .zip(&abs.dipoles)
                            .map(|(b, a)| dev::term(*k, *qq, b, *a).abs() as f64)
                            .sum()
                    })
                    .collect()
            } else {
                bf.iter().map(|x| x.abs()).collect()
            }
        };
        for (samples, seed, coherent) in [(1, 5, false), (1, 6, true), (3, 7, true)] {
            let p = SbhParams::new(*k, samples, seed);
            let wide = cpu::estimate_layout(src, &t, &q, &p, coherent, None, true).unwrap();
            let octree = cpu::estimate_layout(src, &t, &q, &p, coherent, None, false).unwrap();
            for (i, (a, b)) in wide.iter().zip(&octree).enumerate() {
                total += 1;
                exact += (a == b) as usize;
                let e = (a - b).abs() as f64 / scale[i].max(1e-30);
                worst = worst.max(e);
                assert!(
                    e <= 1e-5,
                    "kind {} S {samples} query {i}: wide {a} octree {b} (|terms| {:.3e})",
                    k.kind,
                    scale[i]
                );
            }
            // levels = 1 does not read the wide layout.
            let p1 = SbhParams { levels: 1, ..p };
            let w1 = cpu::estimate_layout(src, &t, &q, &p1, coherent, None, true).unwrap();
            let o1 = cpu::estimate_layout(src, &t, &q, &p1, coherent, None, false).unwrap();
            assert_eq!(w1, o1);
        }
    }
    println!(
        "wide vs octree: {exact} of {total} estimates bit-identical, worst difference {worst:.2e} of Σ|terms|"
    );
}

#[test]
fn wide_layout_holds_every_body_once() {
    for (_, src) in kernels()
        .into_iter()
        .chain([(Kernel::Shifted.spec(0.1), awkward_sources(5000, 2))])
    {
        let t = SbhTree::build(&src);
        t.wide.check(&t.view_octree(&src)).unwrap();
        let w = &t.wide;
        let mut chains = false;
        let mut seen = vec![0u32; src.bodies.len()];
        let mut r = 0usize;
        while r < w.meta.len() {
            let h = w.meta[r];
            let base = r + dev::WIDE_HEAD as usize;
            let mut weight = [0.0f32; 8];
            for o in 0..8u32 {
                let (lo, hi) = h.group(o);
                assert!(hi - lo <= 8);
                for e in lo..hi {
                    let m = w.meta[base + e as usize];
                    assert_eq!(m.slot() / 8, o);
                    weight[o as usize] += m.weight();
                    if m.link() < 0 {
                        let mut b = -1 - m.link();
                        loop {
                            seen[b as usize] += 1;
                            b = t.tree.next[b as usize];
                            if b < 0 {
                                break;
                            }
                        }
                    } else {
                        assert!(h.is_cell(o));
                    }
                }
                // The header's child weight is the child's summary (a cell's weight equals the sum
                // of its slots' weights up to rounding).
                let hw = [w.pm[r].x, w.pm[r].y, w.pm[r].z, w.pm[r].m][o as usize % 4];
                let hw = if o < 4 {
                    hw
                } else {
                    [w.pm[r + 1].x, w.pm[r + 1].y, w.pm[r + 1].z, w.pm[r + 1].m][o as usize - 4]
                };
                assert!(
                    (hw - weight[o as usize]).abs() <= 1e-5 * hw.abs().max(1e-30),
                    "{hw} {}",
                    weight[o as usize]
                );
            }
            chains |= h.flags() & dev::WIDE_CHAINS != 0;
            r = base + dev::wide_padded(h.count()) as usize;
        }
        assert!(
            seen.iter().all(|&s| s == 1),
            "every body in exactly one entry chain"
        );
        // The awkward sources' coincident bodies form bucket chains, which the headers flag.
        assert_eq!(chains, src.bodies.len() == 5000);
    }
}

/// Every setup of the wide-layout tests: each kernel kind, bucket chains and weightless bodies, a
/// deeper tree, and dipoles.
fn wide_setups() -> Vec<(KernelSpec, Sources)> {
    let mut setups = kernels();
    setups.push((Kernel::Shifted.spec(0.1), awkward_sources(3000, 8)));
    setups.push((Kernel::Smooth.spec(20.0), awkward_sources(1 << 14, 9)));
    setups.push((Kernel::Winding.spec(0.0), sphere_sources(1 << 13, 0.3, 10)));
    setups.push((Kernel::Plummer.spec(0.0), uniform_sources(1, 11)));
    setups
}

#[test]
fn top_down_layout_is_the_breadth_first_layout_reordered() {
    // The GPU build's steps (depth parities top down, a scan of the rows in cell order, one
    // `wide_block` per wide node) run on the host give the host builder's blocks bit for bit in
    // another order, so the estimates are bit-identical too.
    let mut q = random_queries(500, 19);
    q.extend_from_slice(&QUERIES);
    for (k, src) in wide_setups() {
        let t = SbhTree::build(&src);
        let v = t.view_octree(&src);
        let td = wide::WideTree::build_top_down(&v, t.tree.used_cells(), !src.dipoles.is_empty());
        let blocks = td.same_blocks(&t.wide).unwrap();
        assert_eq!(blocks, t.wide.counts().0);
        assert_eq!(td.check(&v).unwrap(), t.wide.check(&v).unwrap());
        assert_eq!(td.meta.len(), t.wide.meta.len());
        if src.bodies.len() > 1 {
            assert_ne!(td.meta, t.wide.meta, "the orders should differ");
        }
        let mut t2 = t.clone();
        t2.wide = td;
        for (samples, coherent) in [(1, true), (2, false)] {
            let p = SbhParams::new(k, samples, 21);
            let a = cpu::estimate(&src, &t, &q, &p, coherent).unwrap();
            let b = cpu::estimate(&src, &t2, &q, &p, coherent).unwrap();
            assert_eq!(
                a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                b.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                "kind {}",
                k.kind
            );
        }
    }
}

#[test]
fn layout_check_catches_damage() {
    let src = awkward_sources(3000, 12);
    let t = SbhTree::build(&src);
    let v = t.view_octree(&src);
    let (blocks, entries) = t.wide.check(&v).unwrap();
    assert_eq!((blocks, entries), t.wide.counts());
    // Entries: every body once (chains counted at their head) plus every non-root block.
    let heads = (0..src.bodies.len())
        .filter(|&b| !t.tree.next.contains(&(b as i32)))
        .count();
    assert_eq!(entries, heads + blocks - 1);
    let damaged = |f: &dyn Fn(&mut wide::WideTree)| {
        let mut w = t.wide.clone();
        f(&mut w);
        w.check(&v).is_err()
    };
    let first_entry = dev::WIDE_HEAD as usize;
    assert!(damaged(&|w| w.pm[0].x *= 1.01)); // a pick weight
    assert!(damaged(&|w| w.meta[first_entry].0[2] ^= 1 << 20)); // an entry's weight
    assert!(damaged(&|w| w.meta[first_entry].0[3] ^= 8)); // a slot in the wrong group
    assert!(damaged(&|w| w.meta[1].0[0] = 1)); // the unused header row
    assert!(damaged(&|w| {
        // Two blocks' links swapped: the counts no longer match (or the weights).
        let links: Vec<usize> = (0..w.meta.len())
            .filter(|&r| w.meta[r].link() > 0 && r >= first_entry && r < 70)
            .collect();
        let (a, b) = (links[0], links[1]);
        let (la, lb) = (w.meta[a].0[0], w.meta[b].0[0]);
        w.meta[a].0[0] = lb;
        w.meta[b].0[0] = la;
    }));
    assert!(damaged(&|w| {
        // A body entry made to point at another body.
        let r = (0..w.meta.len())
            .find(|&r| w.meta[r].link() < -1 && w.meta[r].aux() == -1 && r >= first_entry)
            .unwrap();
        w.meta[r].0[0] += 1;
    }));
    // same_blocks sees a changed summary.
    let mut w = t.wide.clone();
    w.pm[first_entry].x += 1e-3;
    assert!(w.same_blocks(&t.wide).is_err());
}

#[test]
fn node_queries_span_the_cube_faces_included() {
    let q = node_queries(3);
    assert_eq!(q.len(), 27);
    assert_eq!(q[0], [-0.5, -0.5, -0.5]);
    assert_eq!(q[13], [0.0, 0.0, 0.0]);
    assert_eq!(q[26], [0.5, 0.5, 0.5]);
    assert_eq!(q[1], [0.0, -0.5, -0.5], "x fastest");
}

#[test]
fn stratum_allocation_doubles_near_strata_and_thins_far_ones() {
    use crate::device::sbh::{FAR_KEEP, FAR_STRATUM, NEAR_STRATUM, NEAREST_STRATUM, stratum_paths};
    let p = SbhParams::new(Kernel::Shifted.spec(0.1), 3, 5);
    // Each path returns 1: the average is 1 whenever every path is kept.
    let run = |p: &SbhParams, key: u64, beta: f32| {
        let mut calls = Vec::new();
        let avg = stratum_paths(p, key, 7, beta, |s| {
            calls.push(s);
            1.0
        });
        (avg, calls)
    };
    let (avg, calls) = run(&p, 1, 0.5 * NEAREST_STRATUM);
    assert_eq!(
        (avg, calls),
        (1.0, (0..9).collect::<Vec<u32>>()),
        "nearest: 3S paths"
    );
    let (avg, calls) = run(&p, 1, 0.5 * (NEAREST_STRATUM + NEAR_STRATUM));
    assert_eq!(
        (avg, calls),
        (1.0, (0..6).collect::<Vec<u32>>()),
        "near: 2S paths"
    );
    let (avg, calls) = run(&p, 1, 0.5 * (NEAR_STRATUM + FAR_STRATUM));
    assert_eq!((avg, calls), (1.0, vec![0, 1, 2]), "between: S paths");
    let (avg, calls) = run(
        &SbhParams {
            allocate: false,
            ..p
        },
        1,
        0.0,
    );
    assert_eq!((avg, calls), (1.0, vec![0, 1, 2]), "the paper's: S paths");
    // Far: each path kept with probability FAR_KEEP, weighted by 1/FAR_KEEP: over many keys the
    // kept share and the mean converge to FAR_KEEP and 1.
    let (mut kept, mut sum) = (0usize, 0.0f64);
    for key in 0..4000u64 {
        let (avg, calls) = run(&p, key, 2.0 * FAR_STRATUM);
        assert!(calls.iter().all(|&s| s < 3));
        kept += calls.len();
        sum += avg as f64;
    }
    let share = kept as f64 / (3.0 * 4000.0);
    assert!((share - FAR_KEEP as f64).abs() < 0.02, "kept share {share}");
    assert!((sum / 4000.0 - 1.0).abs() < 0.03, "mean {}", sum / 4000.0);
}
