//! The multi-rank pipeline on GPUs: K virtual ranks on one GPU, and NCCL.
//!
//! NCCL must be loadable (cudarc looks for `libnccl.so`/`libnccl.so.12`: gpu-multi.sh links the
//! Python wheel's `libnccl.so.2` and puts the link on `LD_LIBRARY_PATH`); the NCCL tests fail
//! with what to do when it is not. Run with `--test-threads 1` (one GPU, and NCCL's environment).

mod common;

use common::gpu;
use warpkit::bh::gpu::{self as bhgpu, Options, Traversal};
use warpkit::bh::scene::{self, Scene};
use warpkit::bh::{Params, cpu, relative_errors};
use warpkit::device::bh::{Accel, Body};
use warpkit::multi::comm::{Comm, all_gather_pod};
use warpkit::multi::nccl::{self, run_nccl};
use warpkit::multi::{Place, VirtualRanks};
use warpkit::runtime::Gpu;

fn rel(a: &Accel, b: &Accel) -> f64 {
    let d = [(a.x - b.x) as f64, (a.y - b.y) as f64, (a.z - b.z) as f64];
    let nb = ((b.x as f64).powi(2) + (b.y as f64).powi(2) + (b.z as f64).powi(2)).sqrt();
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() / nb.max(1e-30)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q) as usize]
}

fn nccl_or_fail() {
    if let Err(e) = nccl::ensure_loadable() {
        panic!("this test needs NCCL: {e}");
    }
}

/// The single-GPU pipeline's forces: the same group kernel over the whole tree.
fn single_gpu(gpu: &Gpu, bodies: &[Body], p: &Params, quad: bool) -> Vec<Accel> {
    let o = Options {
        sorted: true,
        traversal: Traversal::Group,
        quadrupole: quad,
        ..Default::default()
    };
    bhgpu::gravity_with(gpu, bodies, p, &o).unwrap().acc
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn virtual_ranks_on_one_gpu_give_the_single_gpu_forces() {
    let gpu = gpu();
    let cases = [
        ("plummer", scene::generate(Scene::Plummer, 40000, 21)),
        ("uniform", scene::generate(Scene::Uniform, 20000, 22)),
    ];
    // GPU_MULTI_QUICK=1 (the sanitizer's run): one scene, quadrupoles, K = 2 and 3.
    let quick = std::env::var_os("GPU_MULTI_QUICK").is_some();
    let (cases, settings, ks): (&[_], &[(f32, bool)], &[usize]) = if quick {
        (&cases[..1], &[(0.5, true)], &[2, 3])
    } else {
        (&cases[..], &[(0.5, true), (0.7, false)], &[1, 2, 3, 4])
    };
    for (name, bodies) in cases {
        let sample: Vec<usize> = (0..bodies.len()).step_by(40).collect();
        for &(theta, quad) in settings {
            let p = Params {
                theta,
                eps: 0.01,
                g: 1.0,
            };
            let exact = cpu::brute_force_f64(bodies, &sample, &p);
            let err = |acc: &[Accel]| {
                let a: Vec<Accel> = sample.iter().map(|&i| acc[i]).collect();
                median(relative_errors(&a, &exact))
            };
            let single = single_gpu(&gpu, bodies, &p, quad);
            let e1 = err(&single);
            for &k in ks {
                let vr = VirtualRanks {
                    k,
                    params: p,
                    quadrupole: quad,
                };
                let g = vr.gravity_on(Place::Gpu(&gpu), bodies).unwrap();
                assert_eq!(g.stats.misplaced, 0);
                assert_eq!(g.groups.iter().map(Vec::len).sum::<usize>(), bodies.len());
                // The same ranks walked on the CPU: the same groups and the same interaction
                // lists (the CPU's bit-for-bit parity with the single tree, host/multi/tests.rs),
                // so the forces differ by the float32 rounding of the pair terms only.
                let cpu_k = vr.gravity(bodies);
                assert_eq!(g.groups, cpu_k.groups, "{name} K {k}: groups");
                let d_cpu: Vec<f64> = (0..bodies.len())
                    .map(|i| rel(&g.acc[i], &cpu_k.acc[i]))
                    .collect();
                let (p99, max) = (quantile(d_cpu.clone(), 0.99), quantile(d_cpu, 1.0));
                // Against the single-GPU run: groups differ at the ranks' borders (decisions
                // too, there), so the median is rounding and the accuracy is the same.
                let diff = median(
                    (0..bodies.len())
                        .map(|i| rel(&g.acc[i], &single[i]))
                        .collect(),
                );
                let bitwise = (0..bodies.len()).filter(|&i| g.acc[i] != single[i]).count();
                let ek = err(&g.acc);
                println!(
                    "{name} θ {theta} quad {quad} K {k}: vs CPU K ranks p99 {p99:.2e} max \
                     {max:.2e}; vs single GPU median {diff:.2e} ({bitwise} of {} not bit-equal); \
                     error vs f64 {ek:.2e} (single GPU {e1:.2e}); LET {} B, GPU walk {:.2} ms",
                    bodies.len(),
                    g.stats.bytes_let,
                    g.stats.ms_device
                );
                assert!(
                    p99 < 1e-5 && max < 1e-3,
                    "{name} K {k}: vs CPU p99 {p99:.2e} max {max:.2e}"
                );
                assert!(diff < 1e-6, "{name} θ {theta} K {k}: median {diff:.2e}");
                assert!(ek < 1.1 * e1 + 1e-7, "{name} K {k}: {ek:.2e} vs {e1:.2e}");
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn virtual_ranks_on_one_gpu_step_a_collision_without_losing_bodies() {
    let gpu = gpu();
    let p0 = warpkit::nbody::ic::Encounter {
        primary: warpkit::nbody::ic::DiskGalaxy {
            n_halo: 6000,
            n_disk: 2000,
            ..Default::default()
        },
        ..Default::default()
    }
    .generate();
    let vr = VirtualRanks {
        k: 3,
        params: Params {
            theta: 0.7,
            eps: 0.05,
            g: 1.0,
        },
        quadrupole: false,
    };
    let steps = 50;
    let gpu_run = vr.run_on(Place::Gpu(&gpu), &p0, 0.05, steps).unwrap();
    let cpu_run = vr.run(&p0, 0.05, steps);
    let mut ids = gpu_run.particles.id.clone();
    ids.dedup();
    assert_eq!(ids.len(), p0.len(), "no body lost or duplicated");
    for (s, st) in gpu_run.steps.iter().enumerate() {
        assert_eq!(st.misplaced, 0, "step {s}");
        assert_eq!(st.counts.iter().sum::<usize>(), p0.len(), "step {s}");
    }
    let migrated: u64 = gpu_run.steps.iter().map(|s| s.migrated).sum();
    // Trajectories part by rounding over 50 steps; positions stay close.
    let worst = (0..p0.len())
        .map(|i| {
            (0..3)
                .map(|c| (gpu_run.particles.pos[i][c] - cpu_run.particles.pos[i][c]).powi(2))
                .sum::<f64>()
                .sqrt()
        })
        .fold(0.0, f64::max);
    let last = gpu_run.steps.last().unwrap();
    println!(
        "collision K 3 on one GPU, {steps} steps: migrated {migrated}; largest position \
         difference from the CPU ranks {worst:.2e}; last step {} B, exchange {:.2} ms, compute \
         {:.2} ms (GPU walk {:.2} ms)",
        last.bytes(),
        last.ms_exchange,
        last.ms_compute,
        last.ms_device
    );
    assert!(migrated > 0);
    assert!(worst < 1e-2, "GPU and CPU ranks drifted apart: {worst}");
}

/// The collectives' results on rank `r` of `k` (the same checks as MemComm's test).
fn check_collectives(c: &dyn Comm) {
    let (r, k) = (c.rank(), c.size());
    // Unequal lengths: rank r sends r + 1 values (padding inside the all-gather).
    let mine: Vec<u32> = (0..=r as u32).map(|v| 1000 * r as u32 + v).collect();
    let g = all_gather_pod(c, &mine);
    for (s, v) in g.iter().enumerate() {
        let want: Vec<u32> = (0..=s as u32).map(|x| 1000 * s as u32 + x).collect();
        assert_eq!(v, &want, "all_gather from {s} on {r}");
    }
    let empty = c.all_gather(&[]);
    assert!(empty.iter().all(Vec::is_empty));
    // d + 1 + r bytes to each rank d (to itself too: NCCL's send to self), nothing from rank 1
    // to rank 0 (a pair without a message).
    let send: Vec<Vec<u8>> = (0..k)
        .map(|d| {
            if d == 0 && r == 1 {
                Vec::new()
            } else {
                vec![(r * 16 + d) as u8; d + 1 + r]
            }
        })
        .collect();
    let got = c.all_to_all_v(send);
    for (s, b) in got.iter().enumerate() {
        let want = if r == 0 && s == 1 {
            Vec::new()
        } else {
            vec![(s * 16 + r) as u8; r + 1 + s]
        };
        assert_eq!(b, &want, "all_to_all_v from {s} on {r}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nccl_one_rank_collectives_round_trip_and_match_the_memory_exchange() {
    nccl_or_fail();
    let gpu = gpu();
    let out = run_nccl(&[&gpu], |c, _| {
        check_collectives(c);
        c.bytes_sent()
    })
    .unwrap();
    // One rank sends nothing to others.
    assert_eq!(out, vec![0]);
    // The whole pipeline over a one-rank NCCL communicator: the same walks as one virtual rank.
    let bodies = scene::generate(Scene::Plummer, 30000, 23);
    let p = Params::default();
    let vr = VirtualRanks {
        k: 1,
        params: p,
        quadrupole: true,
    };
    let over_nccl = vr.gravity_on(Place::Gpus(&[&gpu]), &bodies).unwrap();
    let in_memory = vr.gravity_on(Place::Gpu(&gpu), &bodies).unwrap();
    assert_eq!(over_nccl.groups, in_memory.groups);
    assert_eq!(over_nccl.acc, in_memory.acc);
    println!(
        "NCCL, one rank on {}: collectives round-trip; gravity over NCCL equals the in-memory \
         exchange bit for bit",
        gpu.info().name
    );
}

/// Fails (never passes vacuously) on a machine with fewer than two GPUs: run it only where two
/// or more are visible (`scripts/gpu-multi.sh` skips it on one GPU and says so).
#[test]
#[ignore = "needs two or more CUDA GPUs"]
fn nccl_ranks_on_all_gpus_when_two_gpus_present() {
    let visible = warpkit::runtime::probe::driver()
        .map(|d| d.device_count)
        .unwrap_or(0);
    assert!(
        visible >= 2,
        "nccl_ranks_on_all_gpus_when_two_gpus_present needs 2 or more GPUs; {visible} visible: \
         nothing was checked (skip it with --skip when_two_gpus_present on one GPU)"
    );
    nccl_or_fail();
    let gpus: Vec<Gpu> = (0..visible).map(|i| Gpu::new(i).unwrap()).collect();
    let refs: Vec<&Gpu> = gpus.iter().collect();
    let bytes = run_nccl(&refs, |c, _| {
        check_collectives(c);
        c.bytes_sent()
    })
    .unwrap();
    assert!(bytes.iter().all(|&b| b > 0));
    let bodies = scene::generate(Scene::Plummer, 200_000, 24);
    for quad in [false, true] {
        let vr = VirtualRanks {
            k: visible,
            params: Params::default(),
            quadrupole: quad,
        };
        let over_nccl = vr.gravity_on(Place::Gpus(&refs), &bodies).unwrap();
        // The same K ranks as threads on GPU 0: the same decomposition and walks.
        let virtual_ranks = vr.gravity_on(Place::Gpu(&gpus[0]), &bodies).unwrap();
        assert_eq!(over_nccl.groups, virtual_ranks.groups);
        let worst = (0..bodies.len())
            .map(|i| rel(&over_nccl.acc[i], &virtual_ranks.acc[i]))
            .fold(0.0, f64::max);
        let s = &over_nccl.stats;
        println!(
            "NCCL over {visible} GPUs, quad {quad}: largest difference from {visible} virtual \
             ranks on GPU 0 {worst:.2e}; bytes {} (LET {}), exchange {:.2} ms, compute {:.2} ms",
            s.bytes(),
            s.bytes_let,
            s.ms_exchange,
            s.ms_compute
        );
        assert!(worst < 1e-6, "quad {quad}: {worst:.2e}");
    }
}
