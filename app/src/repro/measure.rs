//! The reproductions' view of Barnes–Hut: evaluations by order and storage through
//! [`warpkit::bh::evaluate`] (which picks the backend), bodies per order, timing helpers.

use std::time::Instant;
use warpkit::backend::Backend;
use warpkit::bh::gpu::{self, BhError, StageTimes};
use warpkit::bh::{Mode, Params, scene};
use warpkit::device::bh::Body;

pub use warpkit::bh::gpu::Storage;

/// What one evaluation produced (on either backend).
pub use warpkit::bh::Evaluation as Eval;
pub use warpkit::bh::{BruteTime, brute_force_ms, reference, sample_indices};

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
    warpkit::bh::evaluate(backend, bodies, p, &options(mode, storage))
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
    let t = warpkit::bh::evaluate_median(backend, bodies, p, &options(mode, storage), repeats)?;
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
