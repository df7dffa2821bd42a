//! The CPU twin: the device crate's traversals over host slices, one rayon task per query. With the
//! same seed and streams it draws exactly the random numbers the GPU kernel draws, so the two differ
//! only by float32 rounding (`rsqrt`, `exp`, `log2` are approximate on the device).

use super::{
    SbhError, SbhTree, Sources, validate, validate_beta, validate_order, validate_samples,
};
use crate::device::sbh::{self as dev, KernelSpec, SbhParams};
use rayon::prelude::*;

/// Stochastic Barnes–Hut sums at `queries` (see `warpkit_device::sbh::sbh_estimate`); `coherent`
/// shares one random stream among each 32 consecutive queries, as a warp does on the GPU.
pub fn estimate(
    src: &Sources,
    tree: &SbhTree,
    queries: &[[f32; 3]],
    p: &SbhParams,
    coherent: bool,
) -> Result<Vec<f32>, SbhError> {
    estimate_ordered(src, tree, queries, p, coherent, None)
}

/// [`estimate`] with the queries evaluated in `order` (a permutation of the query indices): the
/// query at position `i` of `order` draws from stream `stream_of(i, coherent)`, as in the kernel.
/// The sums are returned in the queries' order.
pub fn estimate_ordered(
    src: &Sources,
    tree: &SbhTree,
    queries: &[[f32; 3]],
    p: &SbhParams,
    coherent: bool,
    order: Option<&[u32]>,
) -> Result<Vec<f32>, SbhError> {
    validate(src, queries, p.kernel)?;
    validate_samples(p.samples)?;
    validate_order(order, queries.len())?;
    let v = tree.view(src);
    let at = |i: usize| order.map_or(i, |o| o[i] as usize);
    let by_position: Vec<f32> = (0..queries.len())
        .into_par_iter()
        .map(|i| dev::sbh_estimate(&v, p, queries[at(i)], dev::stream_of(i as u32, coherent)))
        .collect();
    let mut out = vec![0.0f32; queries.len()];
    for (i, e) in by_position.into_iter().enumerate() {
        out[at(i)] = e;
    }
    Ok(out)
}

/// Deterministic Barnes–Hut sums at `queries` with far-field ratio `beta`.
pub fn barnes_hut(
    src: &Sources,
    tree: &SbhTree,
    queries: &[[f32; 3]],
    k: KernelSpec,
    beta: f32,
) -> Result<Vec<f32>, SbhError> {
    validate(src, queries, k)?;
    validate_beta(beta)?;
    let v = tree.view(src);
    Ok(queries
        .par_iter()
        .map(|&q| dev::bh_estimate(&v, k, beta, q))
        .collect())
}

/// Direct summation, the twin of `sbh_brute_force`: each term in float32 through the device
/// formula ([`dev::term`]), summed in float64. Both backends' errors are measured against it.
pub fn brute_force(
    src: &Sources,
    queries: &[[f32; 3]],
    k: KernelSpec,
) -> Result<Vec<f64>, SbhError> {
    validate(src, queries, k)?;
    let winding = k.kind == dev::KIND_WINDING;
    Ok(queries
        .par_iter()
        .map(|q| {
            src.bodies
                .iter()
                .enumerate()
                .map(|(j, b)| {
                    let a = if winding { src.dipoles[j] } else { [0.0; 3] };
                    dev::term(k, *q, b, a) as f64
                })
                .sum()
        })
        .collect())
}

/// Direct summation with every term in float64 ([`dev::term_f64`]): checks [`brute_force`]'s
/// float32 terms.
pub fn brute_force_f64(
    src: &Sources,
    queries: &[[f32; 3]],
    k: KernelSpec,
) -> Result<Vec<f64>, SbhError> {
    validate(src, queries, k)?;
    let winding = k.kind == dev::KIND_WINDING;
    Ok(queries
        .par_iter()
        .map(|q| {
            let q = q.map(|c| c as f64);
            src.bodies
                .iter()
                .enumerate()
                .map(|(j, b)| {
                    let a = if winding {
                        src.dipoles[j].map(|c| c as f64)
                    } else {
                        [0.0; 3]
                    };
                    dev::term_f64(k, q, b.pos().map(|c| c as f64), b.m as f64, a)
                })
                .sum()
        })
        .collect())
}
