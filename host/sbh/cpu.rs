//! The CPU twin: the device crate's traversals over host slices, one rayon task per query. With the
//! same seed and streams it draws exactly the random numbers the GPU kernel draws, so the two differ
//! only by float32 rounding (`rsqrt`, `exp`, `log2` are approximate on the device).

use super::{
    Moments, NO_QUERY, SbhError, SbhTree, Sources, Warps, bh_positions, validate, validate_beta,
    validate_order, validate_samples,
};
use crate::device::bh::Body;
use crate::device::sbh::{self as dev, KernelSpec, SbhParams};
use crate::device::walk::{Interaction, walk_list};
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
    estimate_layout(src, tree, queries, p, coherent, order, true)
}

/// [`estimate_ordered`] with (`wide`) or without the tree's wide-node layout: without it,
/// `levels = 2` walks the octree's child slots (the form the wide layout must reproduce: the same
/// draws, sums equal to float32 rounding).
pub fn estimate_layout(
    src: &Sources,
    tree: &SbhTree,
    queries: &[[f32; 3]],
    p: &SbhParams,
    coherent: bool,
    order: Option<&[u32]>,
    wide: bool,
) -> Result<Vec<f32>, SbhError> {
    validate(src, queries, p.kernel)?;
    validate_samples(p.samples)?;
    validate_order(order, queries.len())?;
    let v = if wide {
        tree.view(src)
    } else {
        tree.view_octree(src)
    };
    let at = |i: usize| order.map_or(i, |o| o[i] as usize);
    let by_position: Vec<f32> = (0..queries.len())
        .into_par_iter()
        .map(|i| dev::sbh_estimate(&v, p, queries[at(i)], dev::stream_of(i as u32, coherent)))
        .collect();
    Ok(to_query_order(by_position, order))
}

/// Values computed at the positions of `order` (identity when `None`), put back in query order.
fn to_query_order(by_position: Vec<f32>, order: Option<&[u32]>) -> Vec<f32> {
    let Some(order) = order else {
        return by_position;
    };
    let mut out = vec![0.0f32; by_position.len()];
    for (&j, e) in order.iter().zip(by_position) {
        out[j as usize] = e;
    }
    out
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

/// The twin of `sbh_bh_group_kernel` ([`super::gpu::barnes_hut_grouped`]): the warps of
/// [`bh_positions`]`(queries, order, warps)` (32 consecutive queries when that is `None`) each traverse the tree once against
/// their queries' bounding box, listing the cells far from the whole box ([`dev::is_far_from_box`])
/// and the bodies of the others; each query then sums the list with [`dev::term_add`] (with
/// [`Moments::Quadrupole`], [`dev::term_quad_add`] and the cells' moments).
#[allow(clippy::too_many_arguments)]
pub fn barnes_hut_grouped(
    src: &Sources,
    tree: &SbhTree,
    queries: &[[f32; 3]],
    k: KernelSpec,
    beta: f32,
    order: Option<&[u32]>,
    warps: Warps,
    moments: Moments,
) -> Result<Vec<f32>, SbhError> {
    validate(src, queries, k)?;
    validate_beta(beta)?;
    moments.validate(k)?;
    let quad = moments == Moments::Quadrupole;
    if quad && tree.tree.cell_quad.len() != tree.tree.cells() {
        return Err(SbhError::NoQuadrupoles);
    }
    validate_order(order, queries.len())?;
    let v = tree.view(src);
    // The kernel's warps: Morton order cut at block edges (idle lanes marked), or rows.
    let positions: Vec<u32> =
        bh_positions(queries, order, warps).unwrap_or_else(|| (0..queries.len() as u32).collect());
    let quads: &[crate::device::bh::Quad] = &tree.tree.cell_quad;
    let sums: Vec<(u32, f32)> = positions
        .par_chunks(crate::device::WARP_SIZE as usize)
        .flat_map_iter(|w| {
            let w: Vec<u32> = w.iter().copied().filter(|&j| j != NO_QUERY).collect();
            let qs: Vec<[f32; 3]> = w.iter().map(|&j| queries[j as usize]).collect();
            let lo = std::array::from_fn(|c| qs.iter().map(|q| q[c]).fold(f32::INFINITY, f32::min));
            let hi =
                std::array::from_fn(|c| qs.iter().map(|q| q[c]).fold(f32::NEG_INFINITY, f32::max));
            let (bc, bh) = crate::device::bh::box_of(lo, hi);
            // The kernels' interaction for this kind and moment form (one instance per kind).
            macro_rules! sums {
                ($inter:expr) => {
                    warp_sums(&v, &$inter, &qs, bc, bh, beta)
                };
            }
            let param = k.param;
            let sums = match (quad, k.kind) {
                (true, dev::KIND_SHIFTED) => {
                    sums!(dev::QuadTerms::<_, { dev::KIND_SHIFTED }> { param, quads })
                }
                (true, dev::KIND_PLUMMER) => {
                    sums!(dev::QuadTerms::<_, { dev::KIND_PLUMMER }> { param, quads })
                }
                (true, _) => sums!(dev::QuadTerms::<_, { dev::KIND_SMOOTH }> { param, quads }),
                (false, dev::KIND_SHIFTED) => sums!(dev::Terms::<{ dev::KIND_SHIFTED }> { param }),
                (false, dev::KIND_PLUMMER) => sums!(dev::Terms::<{ dev::KIND_PLUMMER }> { param }),
                (false, dev::KIND_WINDING) => sums!(dev::WindingTerms { tree: &v }),
                (false, _) => sums!(dev::Terms::<{ dev::KIND_SMOOTH }> { param }),
            };
            w.into_iter().zip(sums).collect::<Vec<_>>()
        })
        .collect();
    let mut out = vec![0.0f32; queries.len()];
    for (j, sum) in sums {
        out[j as usize] = sum;
    }
    Ok(out)
}

/// One warp's list (the root alone when it is far from the warp's box `bc ± bh`, else
/// [`walk_list`]'s sources) summed at each of its queries: the twin of the group kernels' walk
/// and flushes.
fn warp_sums<V, I>(
    v: &V,
    inter: &I,
    qs: &[[f32; 3]],
    bc: [f32; 3],
    bh: [f32; 3],
    beta: f32,
) -> Vec<f32>
where
    V: crate::device::sbh::TreeView,
    I: Interaction<Target = dev::Query>,
{
    let (root, root_half) = (v.root(), v.root_half());
    let s_root = v.cell(root);
    let list = if dev::is_far_from_box(bc, bh, s_root.pos(), dev::diameter_at(root_half, 0), beta) {
        vec![(s_root, inter.cell_extra(root))]
    } else {
        walk_list(v, inter, |s: &Body, depth: usize| {
            let dia = dev::diameter_at(root_half, depth as u32);
            dev::is_far_from_box(bc, bh, s.pos(), dia, beta)
        })
    };
    qs.iter()
        .map(|&q| {
            let mut t = dev::Query { q, total: 0.0 };
            for (s, e) in &list {
                inter.add(&mut t, s, e);
            }
            t.total
        })
        .collect()
}

/// Direct summation, the twin of `sbh_brute_force`: each term in float32 through the device
/// formula ([`dev::term`]), summed in float64. Both backends' errors are measured against it.
pub fn brute_force(
    src: &Sources,
    queries: &[[f32; 3]],
    k: KernelSpec,
) -> Result<Vec<f64>, SbhError> {
    direct_sum(src, queries, k, |q, b, a| dev::term(k, q, b, a) as f64)
}

/// Direct summation with every term in float64 ([`dev::term_f64`]): checks [`brute_force`]'s
/// float32 terms.
pub fn brute_force_f64(
    src: &Sources,
    queries: &[[f32; 3]],
    k: KernelSpec,
) -> Result<Vec<f64>, SbhError> {
    let wide = |v: [f32; 3]| v.map(|c| c as f64);
    direct_sum(src, queries, k, |q, b, a| {
        dev::term_f64(k, wide(q), wide(b.pos()), b.m as f64, wide(a))
    })
}

/// `Σ_j term(q, body j, dipole j)` in float64 at every query (dipoles zero unless the kernel is
/// the winding number).
fn direct_sum(
    src: &Sources,
    queries: &[[f32; 3]],
    k: KernelSpec,
    term: impl Fn([f32; 3], &Body, [f32; 3]) -> f64 + Sync,
) -> Result<Vec<f64>, SbhError> {
    validate(src, queries, k)?;
    let winding = k.kind == dev::KIND_WINDING;
    Ok(queries
        .par_iter()
        .map(|&q| {
            src.bodies
                .iter()
                .enumerate()
                .map(|(j, b)| term(q, b, if winding { src.dipoles[j] } else { [0.0; 3] }))
                .sum()
        })
        .collect())
}
