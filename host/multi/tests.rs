use super::comm::{all_gather_pod, run_ranks};
use super::sfc::{self, Decomposition};
use super::tree::{self, walk_groups};
use super::*;
use crate::bh::{Params, cpu, scene};
use crate::device::bh::{self as dev, Body};
use crate::nbody::ic;

fn plummer(n: usize, seed: u64) -> Vec<Body> {
    scene::generate(scene::Scene::Plummer, n, seed)
}

fn rel(a: &Accel, b: &Accel) -> f64 {
    let d = [(a.x - b.x) as f64, (a.y - b.y) as f64, (a.z - b.z) as f64];
    let n = ((b.x as f64).powi(2) + (b.y as f64).powi(2) + (b.z as f64).powi(2)).sqrt();
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() / n.max(f64::MIN_POSITIVE)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn memory_collectives_deliver_by_rank_and_count_bytes() {
    let out = run_ranks(3, |c| {
        let g = all_gather_pod(c, &[c.rank() as u32 * 10; 2]);
        let send: Vec<Vec<u8>> = (0..3).map(|d| vec![c.rank() as u8; d + 1]).collect();
        let got = c.all_to_all_v(send);
        (g, got, c.bytes_sent())
    });
    for (r, (g, got, bytes)) in out.iter().enumerate() {
        assert_eq!(g, &vec![vec![0, 0], vec![10, 10], vec![20, 20]]);
        assert_eq!(
            got,
            &(0..3).map(|s| vec![s as u8; r + 1]).collect::<Vec<_>>()
        );
        // 8 bytes to each of two others, then d + 1 bytes to each other rank d.
        let a2a: u64 = (0..3).filter(|&d| d != r).map(|d| d as u64 + 1).sum();
        assert_eq!(*bytes, 16 + a2a);
    }
    // A failing rank fails the others' next collective instead of hanging them.
    let failed = std::panic::catch_unwind(|| {
        run_ranks(2, |c| {
            assert!(c.rank() != 1, "rank 1 fails");
            c.all_gather(&[1]);
        })
    });
    assert!(failed.is_err());
}

#[test]
fn keys_follow_the_trees_depth_first_order() {
    let bodies = plummer(20000, 3);
    let t = cpu::build_tree(&bodies);
    let root = dev::root_cell(&t.header);
    let keys: Vec<u64> = bodies.iter().map(|b| sfc::key(b.pos(), root)).collect();
    // The tree's sort is depth-first in octant order: keys never decrease along it.
    assert!(
        t.sort
            .windows(2)
            .all(|w| keys[w[0] as usize] <= keys[w[1] as usize])
    );
}

#[test]
fn splitters_balance_counts_then_work() {
    let bodies = plummer(30000, 4);
    let h = cpu::bounding_box(&bodies, dev::Layout::dense(1));
    let root = dev::root_cell(&h);
    for k in [2usize, 3, 4] {
        // Work grows with the body index (a cost that no key range favours).
        for weighted in [false, true] {
            let loads = run_ranks(k, |c| {
                let r = c.rank();
                let (a, b) = (bodies.len() * r / k, bodies.len() * (r + 1) / k);
                let mut kw: Vec<(u64, f64)> = (a..b)
                    .map(|i| {
                        let w = if weighted { 1.0 + (i % 97) as f64 } else { 1.0 };
                        (sfc::key(bodies[i].pos(), root), w)
                    })
                    .collect();
                kw.sort_by_key(|x| x.0);
                let keys: Vec<u64> = kw.iter().map(|x| x.0).collect();
                let work: Vec<f64> = kw.iter().map(|x| x.1).collect();
                let d = Decomposition::balanced(c, &keys, &work);
                let mut load = vec![0.0; k];
                for (key, w) in kw {
                    load[d.rank_of(key)] += w;
                }
                (d, load)
            });
            assert!(out_equal(&loads.iter().map(|l| &l.0).collect::<Vec<_>>()));
            let load: Vec<f64> = (0..k).map(|r| loads.iter().map(|l| l.1[r]).sum()).collect();
            let mean = load.iter().sum::<f64>() / k as f64;
            let worst = load.iter().fold(0f64, |m, l| m.max(*l)) / mean;
            // Pieces of 1/SAMPLES of a rank's work: about K/SAMPLES of the mean at most.
            assert!(
                worst < 1.0 + 2.0 * k as f64 / sfc::SAMPLES as f64,
                "K {k}: {load:?}"
            );
        }
    }
}

fn out_equal<T: PartialEq>(v: &[T]) -> bool {
    v.windows(2).all(|w| w[0] == w[1])
}

/// The single tree's forces for the groups the K ranks walked: the same walk and sums over the
/// single tree of all bodies.
fn single_tree_for_groups(
    bodies: &[Body],
    groups: &[Vec<usize>],
    p: &Params,
    quad: bool,
) -> Vec<Accel> {
    let t = cpu::build_tree(bodies);
    let view = dev::SliceOctree {
        bodies,
        child: &t.child,
        next: &t.next,
        cell_pm: &t.cell_pm,
        layout: t.layout,
    };
    let w2 = tree::widths2(&t.header);
    let pos: Vec<Vec<[f32; 3]>> = groups
        .iter()
        .map(|g| g.iter().map(|&i| bodies[i].pos()).collect())
        .collect();
    let eps2 = p.eps * p.eps;
    let walked = if quad {
        let quads: &[dev::Quad] = &t.cell_quad;
        walk_groups(
            &view,
            &dev::Quadrupole::<_, 1, false> { eps2, quads },
            &w2,
            &pos,
            p,
        )
    } else {
        walk_groups(&view, &dev::Monopole::<1, false> { eps2 }, &w2, &pos, p)
    };
    let mut acc = vec![Accel::default(); bodies.len()];
    for (g, (a, _)) in groups.iter().zip(walked) {
        for (&i, a) in g.iter().zip(a) {
            acc[i] = a;
        }
    }
    acc
}

#[test]
fn k_rank_forces_equal_the_single_tree_bit_for_bit_for_the_same_groups() {
    // Plummer (one cluster) and the collision (two, far apart): every body, every K.
    let enc = ic::Encounter {
        primary: ic::DiskGalaxy {
            n_halo: 1300,
            n_disk: 700,
            ..ic::DiskGalaxy::default()
        },
        ..ic::Encounter::default()
    }
    .generate();
    let collision: Vec<Body> = (0..enc.len())
        .map(|i| Body {
            x: enc.pos[i][0] as f32,
            y: enc.pos[i][1] as f32,
            z: enc.pos[i][2] as f32,
            m: enc.mass[i] as f32,
        })
        .collect();
    for (name, bodies) in [("plummer", plummer(6000, 7)), ("collision", collision)] {
        for (theta, quad) in [(0.5, true), (0.7, false), (0.0, false)] {
            let p = Params {
                theta,
                eps: 0.05,
                g: 1.0,
            };
            for k in [2usize, 3, 4] {
                let vr = VirtualRanks {
                    k,
                    params: p,
                    quadrupole: quad,
                };
                let g = vr.gravity(&bodies);
                assert_eq!(g.groups.iter().map(Vec::len).sum::<usize>(), bodies.len());
                let want = single_tree_for_groups(&bodies, &g.groups, &p, quad);
                let differ = (0..bodies.len()).filter(|&i| g.acc[i] != want[i]).count();
                assert_eq!(differ, 0, "{name} θ {theta} K {k}: {differ} bodies differ");
                assert_eq!(g.stats.misplaced, 0);
                if theta > 0.0 {
                    // Pruned: each rank imports less than the other ranks' whole trees.
                    let nodes: usize = g.per_rank.iter().map(|s| s.nodes).sum();
                    for (r, s) in g.per_rank.iter().enumerate() {
                        let others = nodes - s.nodes;
                        assert!(s.imported < others, "{name} K {k} rank {r}: {s:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn one_rank_is_the_single_trees_own_walk() {
    let bodies = plummer(8000, 8);
    let p = Params::default();
    for quad in [false, true] {
        let g = VirtualRanks {
            k: 1,
            params: p,
            quadrupole: quad,
        }
        .gravity(&bodies);
        let t = cpu::build_tree(&bodies);
        assert_eq!(g.acc, cpu::gravity_group(&bodies, &t, &p, quad, None));
        assert_eq!(g.stats.bytes(), 0);
    }
}

#[test]
fn k_rank_forces_are_as_accurate_as_the_single_tree() {
    // Groups differ at the ranks' borders, so decisions differ there: K-rank and single-tree
    // forces differ by about the Barnes–Hut error itself, and both err alike against float64
    // direct summation.
    let bodies = plummer(16384, 9);
    let p = Params {
        theta: 0.5,
        eps: 0.01,
        g: 1.0,
    };
    let sample: Vec<usize> = (0..bodies.len()).step_by(16).collect();
    let exact = cpu::brute_force_f64(&bodies, &sample, &p);
    let err = |acc: &[Accel]| {
        let a: Vec<Accel> = sample.iter().map(|&i| acc[i]).collect();
        median(crate::bh::relative_errors(&a, &exact))
    };
    for quad in [false, true] {
        let t = cpu::build_tree(&bodies);
        let single = cpu::gravity_group(&bodies, &t, &p, quad, None);
        let e1 = err(&single);
        for k in [2usize, 3, 4] {
            let g = VirtualRanks {
                k,
                params: p,
                quadrupole: quad,
            }
            .gravity(&bodies);
            let diff = median(
                (0..bodies.len())
                    .map(|i| rel(&g.acc[i], &single[i]))
                    .collect(),
            );
            let ek = err(&g.acc);
            eprintln!(
                "quad {quad} K {k}: median |a_K - a_1|/|a_1| {diff:.2e}, error vs f64 {ek:.2e} \
                 (single {e1:.2e}), LET {} B, top {} B",
                g.stats.bytes_let, g.stats.bytes_top
            );
            // Most bodies' groups are the single tree's: the median difference is rounding.
            assert!(diff < 1e-6, "quad {quad} K {k}: {diff:.2e}");
            assert!(
                ek < 1.1 * e1 + 1e-7,
                "quad {quad} K {k}: {ek:.2e} vs {e1:.2e}"
            );
        }
    }
}

fn collision(n_halo: usize, n_disk: usize) -> Particles {
    ic::Encounter {
        primary: ic::DiskGalaxy {
            n_halo,
            n_disk,
            ..ic::DiskGalaxy::default()
        },
        ..ic::Encounter::default()
    }
    .generate()
}

#[test]
fn collision_over_200_steps_loses_no_body_and_conserves_like_one_rank() {
    let p0 = collision(1300, 700);
    let n = p0.len();
    assert_eq!(n, 4000);
    let (dt, steps, eps) = (0.05, 200, 0.05);
    // Monopoles at θ = 0.7: a fifth of the quadrupole θ = 0.5 walk's cost (1000 force
    // evaluations on two cores), the GPU collision's own setting.
    let params = Params {
        theta: 0.7,
        eps: eps as f32,
        g: 1.0,
    };
    let run = |k| {
        VirtualRanks {
            k,
            params,
            quadrupole: false,
        }
        .run(&p0, dt, steps)
    };
    let diag = |p: &Particles| {
        let (kin, pot) = crate::nbody::cpu::energies(p, eps);
        let mom = (0..p.len()).fold([0.0f64; 3], |m, i| {
            std::array::from_fn(|c| m[c] + p.mass[i] * p.vel[i][c])
        });
        (kin + pot, mom)
    };
    // Scale of momentum errors: Σ m |v|.
    let pscale: f64 = (0..n)
        .map(|i| p0.mass[i] * p0.vel[i].iter().map(|v| v * v).sum::<f64>().sqrt())
        .sum();
    let (e0, _) = diag(&p0);
    let one = run(1);
    let (e1, m1) = diag(&one.particles);
    let ids: Vec<u64> = p0.id.to_vec();
    let want_sums = ids
        .iter()
        .fold((0u64, 0u128), |(a, b), &i| (a + i, b + (i as u128).pow(2)));
    for k in [2usize, 3, 4] {
        let r = run(k);
        let mut got: Vec<u64> = r.particles.id.clone();
        got.dedup();
        let mut want = ids.clone();
        want.sort_unstable();
        assert_eq!(got, want, "K {k}: the final ids");
        let migrated: u64 = r.steps.iter().skip(1).map(|s| s.migrated).sum();
        for (s, st) in r.steps.iter().enumerate() {
            assert_eq!(st.counts.iter().sum::<usize>(), n, "K {k} step {s}");
            assert_eq!(st.id_sums, want_sums, "K {k} step {s}");
            assert_eq!(st.misplaced, 0, "K {k} step {s}");
        }
        let (ek, mk) = diag(&r.particles);
        let dp = (0..3).map(|c| (mk[c] - m1[c]).powi(2)).sum::<f64>().sqrt() / pscale;
        let de = ((ek - e1) / e1).abs();
        let bytes: Vec<u64> = r.steps.iter().map(|s| s.bytes()).collect();
        let imb = r
            .steps
            .iter()
            .skip(1)
            .map(|s| s.imbalance)
            .fold(0.0, f64::max);
        let last = r.steps.last().unwrap();
        eprintln!(
            "K {k}: migrated {migrated} in {steps} steps; |ΔE/E| vs 1 rank {de:.2e} (1 rank drift \
             {:.2e}, K drift {:.2e}); |ΔP|/Σm|v| vs 1 rank {dp:.2e}; bytes/step mean {} max {}; \
             last step: decomposition {} migration {} top {} LET {} B, exchange {:.2} ms, compute \
             {:.2} ms; worst imbalance {imb:.3}",
            ((e1 - e0) / e0).abs(),
            ((ek - e0) / e0).abs(),
            bytes.iter().sum::<u64>() / bytes.len() as u64,
            bytes.iter().max().unwrap(),
            last.bytes_decomposition,
            last.bytes_migration,
            last.bytes_top,
            last.bytes_let,
            last.ms_exchange,
            last.ms_compute,
        );
        assert!(migrated > 0, "K {k}: the bodies crossed ranks");
        assert!(de < 5e-4, "K {k}: energy {ek} vs {e1}");
        assert!(dp < 1e-4, "K {k}: momentum {mk:?} vs {m1:?}");
        assert!(imb < 1.3, "K {k}: imbalance {imb}");
    }
}

/// The GPU form of each rank's essential tree ([`super::gpu::EssentialArrays`]: pseudo-bodies as
/// childless cells, the dense layout, the rank's groups as the sort's) walked on the CPU by the
/// kernels' own walk and interactions (`walk_list` over a `SliceOctree`, `dev::Quadrupole`).
struct ArraysOnCpu;

impl tree::Walker for ArraysOnCpu {
    fn walk(
        &self,
        ess: &tree::Essential,
        header: &dev::TreeHeader,
        groups: &[Vec<u32>],
        _pos: &[Vec<[f32; 3]>],
        p: &Params,
        quadrupole: bool,
    ) -> Result<tree::Walked, crate::bh::gpu::BhError> {
        let a = super::gpu::EssentialArrays::of(ess, header, groups);
        assert_eq!(a.groups.len(), groups.len());
        assert_eq!(a.header.groups as usize, groups.len());
        let w2 = tree::widths2(&a.header);
        let pos: Vec<Vec<[f32; 3]>> = a
            .groups
            .iter()
            .map(|&[f, s]| {
                a.sort[f as usize..(f + s) as usize]
                    .iter()
                    .map(|&i| a.bodies[i as usize].pos())
                    .collect()
            })
            .collect();
        let eps2 = p.eps * p.eps;
        let view = a.view();
        let groups = if quadrupole {
            let quads: &[dev::Quad] = &a.cell_quad;
            walk_groups(
                &view,
                &dev::Quadrupole::<_, 1, false> { eps2, quads },
                &w2,
                &pos,
                p,
            )
        } else {
            walk_groups(&view, &dev::Monopole::<1, false> { eps2 }, &w2, &pos, p)
        };
        Ok(tree::Walked {
            groups,
            device_ms: 0.0,
        })
    }
}

#[test]
fn the_gpu_layout_walks_like_the_essential_tree() {
    // Every pseudo-body, now a childless cell, is found far and listed with its moments where
    // the essential tree's walk lists the pseudo-body: the same forces, bit for bit.
    for (name, bodies) in [
        ("plummer", plummer(6000, 11)),
        ("uniform", scene::generate(scene::Scene::Uniform, 5000, 12)),
    ] {
        for (theta, quad) in [(0.5, true), (0.7, false), (0.3, true)] {
            let p = Params {
                theta,
                eps: 0.05,
                g: 1.0,
            };
            for k in [1usize, 2, 3, 4] {
                let vr = VirtualRanks {
                    k,
                    params: p,
                    quadrupole: quad,
                };
                let want = vr.gravity(&bodies);
                let got = vr.gravity_on(Place::Walker(&ArraysOnCpu), &bodies).unwrap();
                assert_eq!(got.groups, want.groups, "{name} θ {theta} K {k}");
                let differ = (0..bodies.len())
                    .filter(|&i| got.acc[i] != want.acc[i])
                    .count();
                assert_eq!(
                    differ, 0,
                    "{name} θ {theta} quad {quad} K {k}: {differ} differ"
                );
            }
        }
    }
}

#[test]
fn missing_nccl_is_an_error_that_says_what_to_do() {
    use super::nccl;
    if nccl::loadable() {
        eprintln!("NCCL is loadable here: the missing-library error was not exercised");
        return;
    }
    let msg = nccl::ensure_loadable().unwrap_err().to_string();
    assert!(
        msg.contains("libnccl.so.2") && msg.contains("LD_LIBRARY_PATH"),
        "{msg}"
    );
    // The runner refuses before touching a device.
    let e = nccl::run_nccl(&[], |_, _| ()).unwrap_err();
    assert!(e.to_string().contains("NCCL cannot be loaded"), "{e}");
    // The link directory that the message and gpu-multi.sh describe.
    let dir = std::env::temp_dir().join(format!("warpkit-nccl-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join("libnccl.so.2");
    std::fs::write(&lib, b"not a library").unwrap();
    let links = nccl::link_dir(&lib).unwrap();
    assert_eq!(std::fs::read_link(links.join("libnccl.so")).unwrap(), lib);
    std::fs::remove_dir_all(&dir).unwrap();
}
