//! Barnes–Hut over either backend: the one place that chooses between the GPU pipeline
//! ([`super::gpu`]) and the CPU twin ([`super::cpu`]), so callers (the CLI, the reproductions)
//! ask for an evaluation, a brute-force time or a reference and get one result type.

use super::gpu::{self, BhError, Options, StageTimes};
use super::{Params, Tree, cpu, initial_cells, validate};
use crate::backend::Backend;
use crate::device::bh::{Accel, Body, TreeHeader};
use crate::stats::median;
use std::time::Instant;

/// What one evaluation produced, on either backend.
pub struct Evaluation {
    pub acc: Vec<Accel>,
    /// GPU: CUDA events per stage. CPU: wall time; the twin builds, summarizes and sorts in one
    /// call, timed as `build` (the other tree stages are 0).
    pub times: StageTimes,
    /// Cells allocated.
    pub cells: usize,
    /// Cells used.
    pub used_cells: usize,
    /// The GPU's tree header (depth, bucketed bodies, interactions counted); the CPU twin keeps
    /// no header.
    pub header: Option<TreeHeader>,
    /// Builds repeated after an overflow (GPU; the CPU twin grows in place: 0).
    pub retries: u32,
    /// The tree, when `Options::keep_tree` asked for it.
    pub tree: Option<Tree>,
}

/// One gravity evaluation of `bodies` as `o` says (order, kernel, storage, first capacity): the
/// GPU pipeline, or the CPU twin with the same opening decisions.
pub fn evaluate(
    backend: &Backend,
    bodies: &[Body],
    p: &Params,
    o: &Options,
) -> Result<Evaluation, BhError> {
    match backend {
        Backend::Gpu(g) => {
            let run = gpu::gravity_with(g, bodies, p, o)?;
            Ok(Evaluation {
                acc: run.acc,
                times: run.times,
                cells: run.cells,
                used_cells: (run.cells as i64 - run.header.bottom as i64).max(0) as usize,
                header: Some(run.header),
                retries: run.retries,
                tree: run.tree,
            })
        }
        Backend::Cpu => evaluate_cpu(bodies, p, o),
    }
}

fn evaluate_cpu(bodies: &[Body], p: &Params, o: &Options) -> Result<Evaluation, BhError> {
    validate(bodies, p)?;
    let t = Instant::now();
    let layout = o
        .storage
        .layout(o.cells.unwrap_or_else(|| initial_cells(bodies.len())));
    let sorted = o.build == gpu::Build::Sorted;
    let mut tree = cpu::build_tree_by(bodies, layout, sorted).map_err(BhError::Capacity)?;
    // The group kernels' warp groups: the twin emulates the kernel it stands in for.
    if o.traversal.group_size() != tree.group_size {
        cpu::sort_with_groups(&mut tree, o.traversal.group_size());
    }
    let build = ms(t);
    let identity: Vec<u32>;
    let order = if o.sorted {
        &tree.sort
    } else {
        identity = (0..bodies.len() as u32).collect();
        &identity
    };
    let t = Instant::now();
    let acc = match o.traversal {
        gpu::Traversal::Vote => cpu::gravity(bodies, &tree, order, p),
        gpu::Traversal::Group | gpu::Traversal::Group2 => match o.relative {
            // As on the GPU: a geometric pass gives the previous accelerations.
            Some(r) => {
                let old = cpu::gravity_group(bodies, &tree, p, o.quadrupole, None);
                cpu::gravity_group(bodies, &tree, p, o.quadrupole, Some((r, &old)))
            }
            None => cpu::gravity_group(bodies, &tree, p, o.quadrupole, None),
        },
    };
    let gravity = ms(t);
    Ok(Evaluation {
        acc,
        times: StageTimes {
            build,
            gravity,
            ..StageTimes::default()
        },
        cells: tree.cells(),
        used_cells: tree.used_cells(),
        header: None,
        retries: 0,
        tree: o.keep_tree.then_some(tree),
    })
}

/// Accelerations and each body's potential `G·φ` of the other bodies, in the bodies' order:
/// `bh_gravity_group2_pot` on the GPU, its twin [`cpu::potential_group`] on the CPU (monopoles,
/// θ and ε of `p`, warp groups of up to 64 on both).
pub fn potential(
    backend: &Backend,
    bodies: &[Body],
    p: &Params,
) -> Result<(Vec<Accel>, Vec<f32>), BhError> {
    potential_of(backend, bodies, p, None)
}

/// [`potential`] where only the bodies marked in `active` (all when `None`) need their values:
/// the CPU walks only the groups holding one of them (the other groups' bodies get zeros); the
/// GPU walks every body.
pub fn potential_of(
    backend: &Backend,
    bodies: &[Body],
    p: &Params,
    active: Option<&[bool]>,
) -> Result<(Vec<Accel>, Vec<f32>), BhError> {
    match backend {
        Backend::Gpu(g) => gpu::gravity_potential(g, bodies, p),
        Backend::Cpu => {
            validate(bodies, p)?;
            let mut tree = cpu::build_tree(bodies);
            let size = gpu::Traversal::Group2.group_size();
            if tree.group_size != size {
                cpu::sort_with_groups(&mut tree, size);
            }
            Ok(cpu::potential_group_of(bodies, &tree, p, active))
        }
    }
}

/// Per-stage medians of timed evaluations and the last evaluation.
pub struct Timed {
    pub median: StageTimes,
    /// The median of the evaluations' totals (not the sum of the stage medians).
    pub median_total: f64,
    /// Timed evaluations behind the medians.
    pub runs: usize,
    pub last: Evaluation,
}

/// `repeats` (at least 1) timed evaluations, after one untimed warm-up on the GPU (module load,
/// first-touch allocations; the CPU twin has nothing to warm up).
pub fn evaluate_median(
    backend: &Backend,
    bodies: &[Body],
    p: &Params,
    o: &Options,
    repeats: usize,
) -> Result<Timed, BhError> {
    if backend.gpu().is_some() {
        evaluate(backend, bodies, p, o)?;
    }
    let mut runs = Vec::with_capacity(repeats.max(1));
    let mut last = None;
    for _ in 0..repeats.max(1) {
        let e = evaluate(backend, bodies, p, o)?;
        runs.push(e.times);
        last = Some(e);
    }
    let med = |f: fn(&StageTimes) -> f64| {
        median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
    };
    Ok(Timed {
        median: StageTimes {
            reset: med(|t| t.reset),
            bounding_box: med(|t| t.bounding_box),
            build: med(|t| t.build),
            summarize: med(|t| t.summarize),
            sort: med(|t| t.sort),
            gravity: med(|t| t.gravity),
            prepass: med(|t| t.prepass),
        },
        median_total: med(|t| t.total()),
        runs: runs.len(),
        last: last.expect("at least one run"),
    })
}

/// A brute-force time: measured on `targets` bodies (all of them on the GPU) and scaled to N.
#[derive(Clone, Copy, Debug)]
pub struct BruteTime {
    pub ms: f64,
    pub targets: usize,
}

/// Brute-force time in ms for all of `bodies`. GPU: the float32 kernel, timed by CUDA events
/// (median of `repeats` after a warm-up). CPU: float64 direct summation on `sample` evenly spaced
/// targets, scaled by N / sample (a full CPU sum at the reproductions' N takes minutes).
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
            validate(bodies, p)?;
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

/// Whether a tree of `n` bodies (dense storage, first capacity) fits the backend's memory: the
/// GPU's total memory, or the host's available memory for the twin (tree, two copies of the
/// bodies, the accelerations). The reason when it does not.
pub fn check_memory(backend: &Backend, n: usize) -> Result<(), String> {
    let need = gpu::device_bytes(n, gpu::Storage::Dense.layout(initial_cells(n)));
    match backend {
        Backend::Gpu(g) => {
            let total = g.info().total_memory;
            if need > total {
                return Err(format!(
                    "needs about {} MiB of device memory; the GPU has {} MiB",
                    need >> 20,
                    total >> 20
                ));
            }
        }
        Backend::Cpu => {
            if let Some(s) = crate::backend::memory_shortfall(need + n * 48) {
                return Err(format!("needs {s}"));
            }
        }
    }
    Ok(())
}

/// Milliseconds since `t`.
fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
