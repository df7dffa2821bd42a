//! One Barnes–Hut evaluation on either backend, with the same outputs: per-stage times, the tree's
//! cells, the accelerations. Every reproduction measures through here, so the GPU and CPU paths are
//! the same code down to the backend's own pipeline.

use crate::backend::Backend;
use crate::bh::gpu::{self, BhError, StageTimes};
use crate::bh::{Mode, Params, cpu, scene};
use crate::device::bh::{Accel, Body};
use crate::stats::median;
use std::time::Instant;

pub use crate::bh::gpu::Storage;

impl Storage {
    pub fn name(self) -> &'static str {
        match self {
            Storage::Dense => "dense",
            Storage::Sparse => "sparse",
        }
    }
}

/// What one evaluation produced.
pub struct Eval {
    /// GPU: CUDA events per stage. CPU: wall time; the CPU twin builds, summarizes and sorts in
    /// one call, timed as `build` (the other tree stages are 0).
    pub times: StageTimes,
    /// Cells allocated.
    pub cells: usize,
    /// Cells used.
    pub used_cells: usize,
    pub acc: Vec<Accel>,
}

/// Bytes of the octree and bodies for `n` bodies and a capacity of `cells` in `storage` (the GPU's
/// allocation; the CPU twin keeps the same arrays).
pub fn tree_bytes(n: usize, storage: Storage, cells: usize) -> usize {
    gpu::device_bytes(n, storage.layout(cells))
}

/// One evaluation of `bodies` in `mode` (`Sorted` traverses in tree order; the others in the given
/// order) with `storage`.
pub fn evaluate(
    backend: &Backend,
    bodies: &[Body],
    p: &Params,
    mode: Mode,
    storage: Storage,
) -> Result<Eval, BhError> {
    let sorted = mode == Mode::Sorted;
    match backend {
        Backend::Gpu(g) => {
            let o = gpu::Options {
                sorted,
                storage,
                ..Default::default()
            };
            let run = gpu::gravity_with(g, bodies, p, &o)?;
            Ok(Eval {
                times: run.times,
                cells: run.cells,
                used_cells: (run.cells as i64 - run.header.bottom as i64).max(0) as usize,
                acc: run.acc,
            })
        }
        Backend::Cpu => {
            crate::bh::validate(bodies, p)?;
            let t = Instant::now();
            let layout = storage.layout(crate::bh::initial_cells(bodies.len()));
            let tree = cpu::build_tree_with(bodies, layout).map_err(BhError::Capacity)?;
            let build = ms(t);
            let identity: Vec<u32>;
            let order = if sorted {
                &tree.sort
            } else {
                identity = (0..bodies.len() as u32).collect();
                &identity
            };
            let t = Instant::now();
            let acc = cpu::gravity(bodies, &tree, order, p);
            let gravity = ms(t);
            Ok(Eval {
                times: StageTimes {
                    build,
                    gravity,
                    ..StageTimes::default()
                },
                cells: tree.cells(),
                used_cells: tree.used_cells(),
                acc,
            })
        }
    }
}

/// Medians per stage over `repeats` evaluations, after one untimed warm-up on the GPU (module
/// load, first-touch allocations). Returns the medians and the last evaluation.
pub fn evaluate_median(
    backend: &Backend,
    bodies: &[Body],
    p: &Params,
    mode: Mode,
    storage: Storage,
    repeats: usize,
) -> Result<(StageTimes, Eval), BhError> {
    if backend.gpu().is_some() {
        evaluate(backend, bodies, p, mode, storage)?;
    }
    let mut runs = Vec::with_capacity(repeats);
    let mut last = None;
    for _ in 0..repeats.max(1) {
        let e = evaluate(backend, bodies, p, mode, storage)?;
        runs.push(e.times);
        last = Some(e);
    }
    let med = |f: fn(&StageTimes) -> f64| {
        median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
    };
    let times = StageTimes {
        reset: med(|t| t.reset),
        bounding_box: med(|t| t.bounding_box),
        build: med(|t| t.build),
        summarize: med(|t| t.summarize),
        sort: med(|t| t.sort),
        gravity: med(|t| t.gravity),
    };
    Ok((times, last.expect("at least one run")))
}

/// The bodies of `mode` from a scene in generation order: shuffled for `Random` and `Sorted`.
pub fn bodies_for(generated: &[Body], mode: Mode, seed: u64) -> Vec<Body> {
    let mut b = generated.to_vec();
    if mode != Mode::Regular {
        scene::shuffle(&mut b, seed);
    }
    b
}

/// Milliseconds since `t`.
pub fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Brute-force time in ms for all of `bodies`. GPU: the float32 kernel, timed by CUDA events
/// (median of `repeats` after a warm-up). CPU: float64 direct summation on `sample` evenly spaced
/// targets, scaled by N / sample (`scaled` = true).
pub fn brute_force_ms(
    backend: &Backend,
    bodies: &[Body],
    p: &Params,
    repeats: usize,
    sample: usize,
) -> Result<BruteTime, BhError> {
    match backend {
        Backend::Gpu(g) => {
            gpu::brute_force(g, bodies, p)?;
            let mut t = Vec::new();
            for _ in 0..repeats.max(1) {
                t.push(gpu::brute_force(g, bodies, p)?.1);
            }
            Ok(BruteTime {
                ms: median(&t).unwrap_or(f64::NAN),
                targets: bodies.len(),
            })
        }
        Backend::Cpu => {
            crate::bh::validate(bodies, p)?;
            let idx = sample_indices(bodies.len(), sample);
            let t = Instant::now();
            cpu::brute_force_f64(bodies, &idx, p);
            let scale = bodies.len() as f64 / idx.len() as f64;
            Ok(BruteTime {
                ms: ms(t) * scale,
                targets: idx.len(),
            })
        }
    }
}

/// A brute-force time: measured on `targets` bodies (all of them on the GPU) and scaled to N.
#[derive(Clone, Copy, Debug)]
pub struct BruteTime {
    pub ms: f64,
    pub targets: usize,
}

/// `k` (at most `n`) evenly spaced indices in `0..n`.
pub fn sample_indices(n: usize, k: usize) -> Vec<usize> {
    let k = k.clamp(1, n.max(1));
    (0..k).map(|i| i * n / k).collect()
}

/// Float64 direct-summation reference for `targets`: the GPU kernel over all bodies (then picked),
/// or the CPU on the targets only.
pub fn reference(
    backend: &Backend,
    bodies: &[Body],
    targets: &[usize],
    p: &Params,
) -> Result<Vec<[f64; 3]>, BhError> {
    match backend {
        Backend::Gpu(g) => {
            let all = gpu::brute_force_f64(g, bodies, p)?;
            Ok(targets.iter().map(|&i| all[i]).collect())
        }
        Backend::Cpu => Ok(cpu::brute_force_f64(bodies, targets, p)),
    }
}
