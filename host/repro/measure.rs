//! The reproductions' view of Barnes–Hut: evaluations by order and storage through
//! [`crate::bh::evaluate`] (which picks the backend), bodies per order, timing helpers.

use crate::backend::Backend;
use crate::bh::gpu::{self, BhError, StageTimes};
use crate::bh::{Mode, Params, scene};
use crate::device::bh::Body;
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

/// What one evaluation produced (on either backend).
pub use crate::bh::Evaluation as Eval;
pub use crate::bh::{BruteTime, brute_force_ms, reference, sample_indices};

/// Bytes of the octree and bodies for `n` bodies and a capacity of `cells` in `storage` (the GPU's
/// allocation; the CPU twin keeps the same arrays).
pub fn tree_bytes(n: usize, storage: Storage, cells: usize) -> usize {
    gpu::device_bytes(n, storage.layout(cells))
}

/// One evaluation of `bodies` in `mode` (`Sorted` traverses in tree order; the others in the given
/// order) with `storage`, by the seed's vote kernel (or its twin).
pub fn evaluate(
    backend: &Backend,
    bodies: &[Body],
    p: &Params,
    mode: Mode,
    storage: Storage,
) -> Result<Eval, BhError> {
    crate::bh::evaluate(backend, bodies, p, &options(mode, storage))
}

fn options(mode: Mode, storage: Storage) -> gpu::Options {
    gpu::Options {
        sorted: mode == Mode::Sorted,
        storage,
        ..Default::default()
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
    let t = crate::bh::evaluate_median(backend, bodies, p, &options(mode, storage), repeats)?;
    Ok((t.median, t.last))
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
