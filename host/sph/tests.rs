//! CPU correctness: every search against the O(N²) brute force, exactly; density against the
//! lattice's analytic value; the smoothing-length iteration; bad input.

use super::cpu::{self, Collect};
use super::*;
use crate::bh;
use crate::bh::scene::{self, Scene};
use crate::device::rng;
use crate::device::sph::Count;

fn brute_lists(bodies: &[Body], h: &[f32], crit: Criterion) -> Neighbours {
    let rows = cpu::brute_force(bodies, h, crit, |_| Collect(Vec::new()));
    let counts: Vec<u32> = rows.iter().map(|r| r.0.len() as u32).collect();
    let (offsets, _) = offsets_of(&counts);
    let list = rows.into_iter().flat_map(|r| r.0).collect();
    Neighbours { offsets, list }
}

/// Every method and criterion gives the brute force's lists exactly.
fn assert_all_match(bodies: &[Body], h: &[f32], what: &str) {
    for crit in Criterion::ALL {
        let want = brute_lists(bodies, h, crit);
        for method in Method::ALL {
            let got = cpu::neighbours(method, bodies, h, crit, DEFAULT_MAX_PAIRS).unwrap();
            if got != want {
                let i = (0..bodies.len())
                    .find(|&i| got.row(i) != want.row(i))
                    .unwrap_or(0);
                panic!(
                    "{what}, {method:?}, {crit:?}: particle {i}: {:?} but brute force {:?}",
                    got.row(i),
                    want.row(i)
                );
            }
            let counts = cpu::counts(method, bodies, h, crit).unwrap();
            assert_eq!(counts, want.counts(), "{what}, {method:?}, {crit:?} counts");
        }
    }
}

/// Per-particle h spread over `[lo, hi)`, some exactly zero when `zeros`.
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

#[test]
fn searches_equal_brute_force_on_random_and_clustered_sets() {
    for (scene, n, hs) in [
        (Scene::Uniform, 1500, (0.02, 0.2)),
        (Scene::Plummer, 1500, (0.01, 0.5)),
        (Scene::Uniform, 33, (0.1, 1.0)),
    ] {
        let seed = 17 + n as u64;
        let b = scene::generate(scene, n, seed);
        let h = random_h(n, seed, hs.0, hs.1, true);
        assert_all_match(&b, &h, &format!("{scene:?} n={n}"));
    }
    // One particle, alone with itself (h > 0) or with nothing (h = 0).
    let one = scene::generate(Scene::Uniform, 1, 3);
    assert_all_match(&one, &[0.5], "one particle");
    assert_eq!(
        cpu::counts(Method::Group, &one, &[0.0], Criterion::Gather).unwrap(),
        [0]
    );
}

#[test]
fn boundaries_coincident_particles_and_zero_h_are_exact() {
    // An integer lattice 0..=8: every distance is exactly representable, so pairs at exactly h
    // test the strict boundary, and the octree's dividing planes (x = 4, 2, 6, …) and the cell
    // grid's faces pass through particles.
    let mut b: Vec<Body> = (0..729)
        .map(|i| Body {
            x: (i % 9) as f32,
            y: (i / 9 % 9) as f32,
            z: (i / 81) as f32,
            m: 1.0,
        })
        .collect();
    // Coincident particles: copies of lattice points (buckets in the tree), and a pile of 40.
    for i in 0..60 {
        b.push(b[(i * 37) % 729]);
    }
    for _ in 0..40 {
        b.push(Body {
            x: 4.0,
            y: 4.0,
            z: 4.0,
            m: 1.0,
        });
    }
    let n = b.len();
    for (what, h) in [
        ("h = 1", vec![1.0; n]),
        ("h = 2", vec![2.0; n]),
        ("h = sqrt 2", vec![2f32.sqrt(); n]),
        (
            "h in {0, 1, 2, 3}",
            (0..n)
                .map(|i| (rng::draw_u64(5, i as u64) % 4) as f32)
                .collect(),
        ),
        ("h = 0", vec![0.0; n]),
    ] {
        assert_all_match(&b, &h, what);
    }
    // The strict boundary, pinned: with h = 1 a lattice point has only itself and its copies.
    let c = cpu::counts(Method::Group, &b[..729], &[1.0; 729], Criterion::Gather).unwrap();
    assert!(c.iter().all(|&k| k == 1));
    let c = cpu::counts(
        Method::Vote,
        &b[..729],
        &[1.0f32.next_up(); 729],
        Criterion::Gather,
    )
    .unwrap();
    assert_eq!(c[4 + 9 * 4 + 81 * 4], 7); // itself and 6 faces
}

#[test]
fn cell_boxes_bound_their_particles() {
    let n = 3000;
    let b = scene::generate(Scene::Plummer, n, 99);
    let h = random_h(n, 99, 0.0, 0.3, true);
    let t = cpu::SphTree::new(&b, &h);
    let root = &t.boxes[t.tree.root() as usize];
    let (lo, hi) = bounds(&b);
    assert_eq!((root.lo, root.hi), (lo, hi));
    assert_eq!(root.hmax, h.iter().cloned().fold(0.0, f32::max));
    // Every cell's box holds the particles of its sort range exactly, and the group walks read
    // the same ranges.
    let nn = t.tree.n as i32;
    let mut start = vec![0u32; t.tree.cells()];
    fn place(t: &cpu::SphTree, cell: i32, s: u32, start: &mut [u32]) {
        start[cell as usize] = s;
        let mut s = s;
        for o in 0..8 {
            let ch = t.tree.child[t.tree.layout.slot(cell, o)];
            if ch >= t.tree.n as i32 {
                place(t, ch - t.tree.n as i32, s, start);
                s += t.tree.count[(ch - t.tree.n as i32) as usize];
            } else {
                let mut j = ch;
                while j >= 0 {
                    s += 1;
                    j = t.tree.next[j as usize];
                }
            }
        }
    }
    place(&t, t.tree.root(), 0, &mut start);
    for c in t.tree.header.bottom..t.tree.cells() as i32 {
        // The walks' ranges (`cpu::cell_starts`, iterative) equal this recursive placement.
        assert_eq!(t.start[c as usize], start[c as usize], "start of cell {c}");
        let s = start[c as usize] as usize;
        let members = &t.tree.sort[s..s + t.tree.count[c as usize] as usize];
        let want = members.iter().fold(dev::CellBox::EMPTY, |bx, &i| {
            bx.with_point(b[i as usize].pos(), h[i as usize])
        });
        assert_eq!(t.boxes[c as usize], want, "cell {c}");
    }
    assert!(nn > 0);
}

#[test]
fn density_is_within_a_percent_inside_a_lattice() {
    // Unit spacing, unit masses: ρ = 1. Interior particles (at least h from every face).
    let k = 16;
    let b: Vec<Body> = (0..k * k * k)
        .map(|i| Body {
            x: (i % k) as f32,
            y: (i / k % k) as f32,
            z: (i / (k * k)) as f32,
            m: 1.0,
        })
        .collect();
    // Support radii of 2.5 and 3.3 spacings (about 65 and 150 neighbours) for M4; Wendland C2
    // overestimates by 1.3% at 65 (its self-contribution bias, Dehnen & Aly 2012), so 3.3 and 4.
    for (kernel, hs) in [
        (SmoothingKernel::CubicSpline, [2.5f32, 3.3]),
        (SmoothingKernel::WendlandC2, [3.3, 4.0]),
    ] {
        for hv in hs {
            let h = vec![hv; b.len()];
            let inner: Vec<usize> = (0..b.len())
                .filter(|&i| {
                    b[i].pos()
                        .iter()
                        .all(|&x| x >= hv && x <= (k - 1) as f32 - hv)
                })
                .collect();
            let want = cpu::density_f64(&b, &h, kernel, &inner);
            for method in Method::ALL {
                let rho = cpu::density(method, &b, &h, kernel).unwrap();
                for (&i, w) in inner.iter().zip(&want) {
                    let r = rho[i] as f64;
                    assert!(
                        (r - 1.0).abs() < 0.01,
                        "{kernel:?} h {hv} {method:?}: ρ[{i}] = {r}"
                    );
                    assert!((r - w).abs() < 1e-5 * w, "{kernel:?}: f32 {r} f64 {w}");
                }
            }
        }
    }
}

#[test]
fn density_matches_the_float64_reference_on_random_sets() {
    let n = 2000;
    let b = scene::generate(Scene::Plummer, n, 7);
    let h = random_h(n, 8, 0.05, 0.4, false);
    let targets: Vec<usize> = (0..n).step_by(7).collect();
    for kernel in [SmoothingKernel::CubicSpline, SmoothingKernel::WendlandC2] {
        let want = cpu::density_f64(&b, &h, kernel, &targets);
        for method in Method::ALL {
            let rho = cpu::density(method, &b, &h, kernel).unwrap();
            for (&i, w) in targets.iter().zip(&want) {
                assert!(
                    (rho[i] as f64 - w).abs() < 2e-5 * w,
                    "{kernel:?} {method:?} {i}: {} vs {w}",
                    rho[i]
                );
            }
        }
    }
}

#[test]
fn h_iteration_converges_or_names_the_particles_that_do_not() {
    let hp = HParams {
        target: 32.0,
        tol: 1.0,
        max_iter: 40,
    };
    for scene in [Scene::Uniform, Scene::Plummer] {
        let b = scene::generate(scene, 4000, 21);
        for method in Method::ALL {
            let r = cpu::iterate_h(method, &b, None, &hp).unwrap();
            assert!(
                r.unconverged.is_empty(),
                "{scene:?} {method:?}: {}",
                r.report()
            );
            assert!(r.iterations <= 25, "{scene:?} {method:?}: {}", r.report());
            // The reported counts are the gather counts at the final h.
            let c = cpu::counts(Method::Cells, &b, &r.h, Criterion::Gather).unwrap();
            assert_eq!(c, r.counts);
            assert!(c.iter().all(|&k| (k as f32 - 32.0).abs() <= 1.0));
        }
    }
    // A pile of 100 coincident particles among 1000: their count jumps from 100 upwards, so the
    // target 32 ± 1 is out of reach. They are named, and so are the particles whose count jumps
    // over the target when their sphere reaches the pile (their last h is the pile's distance).
    let mut b = scene::generate(Scene::Uniform, 1000, 5);
    for i in 0..100 {
        b[10 * i] = Body {
            x: 0.1,
            y: 0.1,
            z: 0.1,
            m: b[10 * i].m,
        };
    }
    let r = cpu::iterate_h(Method::Group, &b, None, &hp).unwrap();
    let pile: Vec<u32> = (0..100).map(|i| 10 * i).collect();
    assert!(
        pile.iter().all(|i| r.unconverged.contains(i)),
        "{}",
        r.report()
    );
    for &i in r.unconverged.iter().filter(|i| !pile.contains(i)) {
        let d = cpu_dist(&b[i as usize], &b[0]);
        let hi = r.h[i as usize] as f64;
        assert!(
            (d - hi).abs() < 1e-3 * hi,
            "particle {i}: pile at {d}, h {hi}"
        );
    }
    assert!(r.report().contains(" of 1000 did not converge in "));
    assert!(r.unconverged.len() < 200, "{}", r.report());
}

/// The one-call search with lists: after the h iteration, the lists are the brute force's at
/// the final h and the counts their row lengths; a limit below the total is refused.
#[test]
fn search_with_lists_equals_brute_force_at_the_iterated_h() {
    let b = scene::generate(Scene::Plummer, 1200, 9);
    let backend = crate::backend::Backend::Cpu;
    let mut o = SearchOptions {
        method: Method::Group,
        criterion: Criterion::Symmetric,
        iterate: Some(HParams {
            target: 24.0,
            ..HParams::default()
        }),
        guess: true,
        density: Some(SmoothingKernel::CubicSpline),
        lists: Some(DEFAULT_MAX_PAIRS),
    };
    let s = search(&backend, &b, vec![0.1; b.len()], &o).unwrap();
    let nb = s.neighbours.unwrap();
    assert_eq!(nb, brute_lists(&b, &s.h, Criterion::Symmetric));
    assert_eq!(s.counts, nb.counts());
    assert!(s.density.is_some());
    o.lists = Some(nb.list.len() as u64 - 1);
    let e = search(&backend, &b, vec![0.1; b.len()], &o).err().unwrap();
    assert!(e.to_string().contains("over the limit"), "{e}");
}

fn cpu_dist(a: &Body, b: &Body) -> f64 {
    (dev::dist2(a.pos(), b.pos()) as f64).sqrt()
}

#[test]
fn bad_input_gives_clear_errors() {
    let b = scene::generate(Scene::Uniform, 100, 1);
    let h = vec![0.1f32; 100];
    let m = Method::Group;
    let g = Criterion::Gather;
    assert_eq!(cpu::counts(m, &[], &[], g), Err(SphError::Empty));
    for bad in [-0.1f32, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut hb = h.clone();
        hb[42] = bad;
        let e = cpu::counts(m, &b, &hb, g).unwrap_err();
        assert!(matches!(e, SphError::BadH { index: 42, .. }), "{e}");
        assert!(e.to_string().contains("h[42]"));
    }
    assert_eq!(
        cpu::counts(m, &b, &h[..99], g),
        Err(SphError::Length { bodies: 100, h: 99 })
    );
    let mut hz = h.clone();
    hz[7] = 0.0;
    assert!(cpu::counts(m, &b, &hz, g).is_ok());
    assert_eq!(
        cpu::density(m, &b, &hz, SmoothingKernel::CubicSpline),
        Err(SphError::ZeroH { index: 7 })
    );
    let mut bn = b.clone();
    bn[3].y = f32::NAN;
    assert!(matches!(
        cpu::counts(m, &bn, &h, g),
        Err(SphError::NonFinite { index: 3, .. })
    ));
    // An h so large that every particle neighbours every other: counted (bounded memory), and
    // the lists refused before allocation with the size they need.
    let huge = vec![1e30f32; 100];
    for method in Method::ALL {
        assert!(
            cpu::counts(method, &b, &huge, g)
                .unwrap()
                .iter()
                .all(|&c| c == 100)
        );
        let e = cpu::neighbours(method, &b, &huge, g, 5000).unwrap_err();
        assert_eq!(
            e,
            SphError::TooManyPairs {
                pairs: 10_000,
                mib: 0,
                limit: 5000
            }
        );
        assert!(e.to_string().contains("10000 entries"));
        assert_eq!(
            cpu::neighbours(method, &b, &huge, g, 10_000)
                .unwrap()
                .list
                .len(),
            10_000
        );
    }
    let hp = HParams {
        target: 200.0,
        ..HParams::default()
    };
    assert!(matches!(
        cpu::iterate_h(m, &b, None, &hp),
        Err(SphError::Option(_))
    ));
}

#[test]
fn split_walks_serve_each_active_member_once_within_the_width_bound() {
    // The Plummer halo: groups there span more than their h (the case the split is for).
    let n = 8192;
    let b = scene::generate(Scene::Plummer, n, 41);
    let t = bh::cpu::build_tree(&b);
    let h = cpu::guess_h(&b, &t, 64.0);
    let active = |i: u32| !i.is_multiple_of(3);
    let (mut walks, mut split) = (0, 0);
    for &[first, size] in &t.groups {
        let lanes = &t.sort[first as usize..(first + size) as usize];
        let ws = cpu::group_walks(&b, &h, lanes, &active);
        let mut served: Vec<u32> = ws.iter().flatten().copied().collect();
        served.sort_unstable();
        let mut want: Vec<u32> = lanes.iter().copied().filter(|&i| active(i)).collect();
        want.sort_unstable();
        assert_eq!(served, want);
        for w in &ws {
            let (lo, hi) = bounds(&w.iter().map(|&i| b[i as usize]).collect::<Vec<_>>());
            let hw = w.iter().map(|&i| h[i as usize]);
            let hmin = hw.clone().fold(f32::INFINITY, f32::min);
            let hmax = hw.fold(0.0, f32::max);
            assert!(
                w.len() == 1 || !dev::group_too_wide(lo, hi, hmin, hmax),
                "{w:?}"
            );
        }
        walks += ws.len();
        split += (ws.len() > 1) as usize;
    }
    assert!(split > 0 && walks < 2 * t.groups.len(), "{split} {walks}");
    // Split walks and active subsets keep the sets exact.
    let hr = random_h(n, 42, 0.0, 0.5, true);
    let all = cpu::counts(Method::Cells, &b, &hr, Criterion::Gather).unwrap();
    let act: Vec<bool> = (0..n as u32).map(active).collect();
    for method in Method::ALL {
        let (got, tested) =
            cpu::search_some(method, &b, &hr, None, Criterion::Gather, Some(&act), |_| {
                Count(0)
            });
        for (i, c) in got.iter().enumerate() {
            assert_eq!(c.map(|c| c.0), act[i].then_some(all[i]), "{method:?} {i}");
        }
        assert!(tested > 0);
    }
}

#[test]
fn local_density_guess_is_near_the_converged_h() {
    let hp = HParams {
        target: 64.0,
        tol: 2.0,
        max_iter: 40,
    };
    for scene in [Scene::Uniform, Scene::Plummer] {
        let b = scene::generate(scene, 1 << 14, 8);
        let t = bh::cpu::build_tree(&b);
        let g = cpu::guess_h(&b, &t, hp.target);
        let r = cpu::iterate_h(Method::Group, &b, None, &hp).unwrap();
        assert!(r.unconverged.is_empty(), "{scene:?}: {}", r.report());
        // Median ratio near 1, and 98% of the particles within a factor 3 (the mean-density
        // start was off by 20x in the Plummer centre; the halo's last cells of 64 bodies are
        // large).
        let mut ratio: Vec<f32> = g.iter().zip(&r.h).map(|(a, b)| a / b).collect();
        ratio.sort_by(f32::total_cmp);
        let med = ratio[ratio.len() / 2];
        assert!((0.8..1.25).contains(&med), "{scene:?}: median {med}");
        let q = |f: f64| ratio[((ratio.len() - 1) as f64 * f) as usize];
        assert!(
            q(0.01) > 0.33 && q(0.99) < 3.0,
            "{scene:?}: {} {}",
            q(0.01),
            q(0.99)
        );
        // Each pass searches only the particles still iterating (never more than the last; a
        // pass may only narrow brackets); the first tests fewer than 20 pairs per neighbour
        // found, and the ladder converges in at most 8 passes (one count a pass took 12).
        assert_eq!(r.passes[0].active, 1 << 14);
        assert!(r.passes.windows(2).all(|w| w[1].active <= w[0].active));
        assert!(r.passes[0].tested_per_found() < 20.0, "{}", r.pass_table());
        assert!(r.iterations <= 8, "{scene:?}: {}", r.pass_table());
        assert!(r.pass_table().lines().count() == r.passes.len() + 2);
    }
}

/// The h iteration's group search hands out only the walks of the warp groups with a
/// particle still iterating, each as a group of its own (`sph_active_groups`, twin
/// `cpu::active_groups`); walking those must make exactly the walks that handing out every group
/// makes, so the pairs tested (compared between the backends) stay the same.
#[test]
fn active_groups_walk_exactly_what_all_groups_walk() {
    let n = 8192;
    let b = scene::generate(Scene::Plummer, n, 43);
    let t = bh::cpu::build_tree(&b);
    let h = cpu::guess_h(&b, &t, 64.0);
    // A sparse, clustered active set (a run of the tree order) plus a few scattered particles:
    // most groups have no active member.
    let rank: Vec<u32> = {
        let mut r = vec![0u32; n];
        for (k, &i) in t.sort.iter().enumerate() {
            r[i as usize] = k as u32;
        }
        r
    };
    let active = |i: u32| (1000..1300).contains(&rank[i as usize]) || i.is_multiple_of(997);
    let g = cpu::active_groups(&b, &h, &t.sort, &t.groups, &active);
    // Each item lies inside one warp group and is one walk of its own; few groups are touched.
    let touched: std::collections::BTreeSet<usize> = g
        .iter()
        .map(|&[f, s]| {
            let k = t
                .groups
                .iter()
                .position(|&[gf, gs]| gf <= f && f + s <= gf + gs);
            k.expect("inside a group")
        })
        .collect();
    assert!(
        !g.is_empty() && touched.len() * 4 < t.groups.len(),
        "{} of {}",
        touched.len(),
        t.groups.len()
    );
    for &[f, s] in &g {
        let lanes = &t.sort[f as usize..(f + s) as usize];
        assert_eq!(cpu::group_walks(&b, &h, lanes, &active).len(), 1, "{f} {s}");
    }
    // Walks over all groups and over the items: the same walks, member for member, in order.
    let walks = |groups: &[[u32; 2]]| -> Vec<Vec<u32>> {
        groups
            .iter()
            .flat_map(|&[f, s]| {
                cpu::group_walks(&b, &h, &t.sort[f as usize..(f + s) as usize], &active)
            })
            .collect()
    };
    assert_eq!(walks(&t.groups), walks(&g));
    // The search over a subset serves exactly the active particles, with exact counts.
    let act: Vec<bool> = (0..n as u32).map(active).collect();
    let all = cpu::counts(Method::Cells, &b, &h, Criterion::Gather).unwrap();
    let (got, tested) = cpu::search_some(
        Method::Group,
        &b,
        &h,
        None,
        Criterion::Gather,
        Some(&act),
        |_| Count(0),
    );
    for (i, c) in got.iter().enumerate() {
        assert_eq!(c.map(|c| c.0), act[i].then_some(all[i]), "{i}");
    }
    assert!(tested > 0);
    // The iteration reports the walks each pass handed out: at least one per group first, at
    // most one per particle still iterating (the splits follow h, so not monotonically fewer),
    // few at the end.
    let r = cpu::iterate_h(Method::Group, &b, None, &HParams::default()).unwrap();
    assert!(r.passes[0].groups as usize >= t.groups.len());
    assert!(
        r.passes.last().unwrap().groups < r.passes[0].groups,
        "{}",
        r.pass_table()
    );
    assert!(
        r.passes.iter().all(|p| p.groups <= p.active),
        "{}",
        r.pass_table()
    );
    let v = cpu::iterate_h(Method::Vote, &b, None, &HParams::default()).unwrap();
    assert!(v.passes.iter().all(|p| p.groups == 0));
}
