//! Stochastic Barnes–Hut fast summation, after Madan, Sharp, Williams, Museth, Levin, "Stochastic
//! Barnes-Hut Approximation for Fast Summation on the GPU", SIGGRAPH 2025 (seed 004), and the
//! deterministic Barnes–Hut evaluation at arbitrary query points that it is compared with.
//!
//! Both sum `F(q) = Σ_i w_i f(p_i, q)` over sources `p_i` for query points `q`, on the octree of
//! `crate::bh` (sources are its bodies; a cell's summary `cell_pm` is its weight and weighted
//! centre, plus, for the winding number, its summed area-weighted normal, the "dipole").
//!
//! The estimator ([`sbh_estimate`]), one query at a time:
//! 1. *Telescoping paths.* Every cell `T` has a correction `Δ_T = Σ_{c ∈ children(T)} w_c f(p_c,
//!    q) − w_T f(p_T, q)` (the paper's *contribution exchange*: the parent's Barnes–Hut term is
//!    the control variate of its children's). Summed over all cells below a cell `C`,
//!    `w_C f(p_C, q) + Σ_T Δ_T` is exactly the sum over `C`'s sources.
//! 2. *Stratification over the root's children.* The root's children (in the 64-ary form, its
//!    grandchildren: see [`SbhParams::levels`]) are the strata: their terms are summed exactly, and
//!    each child cell starts `S` independent paths — or, with [`SbhParams::allocate`] (ours, not
//!    the paper's), `2S` where the stratum is near the query and `S` kept with probability 1/2
//!    where it is far ([`stratum_paths`]).
//! 3. *Path sampling.* A path descends to one child chosen with probability proportional to its
//!    weight (for equal weights, the paper's uniform source index), so cell `T` is reached with
//!    probability `π_T = w_T / w_stratum`.
//! 4. *Russian roulette.* The correction of a cell `c` on the path is evaluated with probability
//!    `min(1, max(1, β̂) / β̃_c)` where `β̃ = |q − p| / |B|` is the far-field ratio ([`far_ratio`]:
//!    distance to the cell's centre of mass over its box diagonal) and `β̂` the running maximum of
//!    `β̃` along the path, started at the stratum's own ratio, so the stratum's correction is always
//!    evaluated (far away, the ratio of successive ratios is about 1/d for a tree that splits each
//!    axis d times); else the path ends. `P_T` is the product of these probabilities. These are the
//!    authors' definitions (their code, `multiLevelPrefixControlVariateSampleGPUQuery` and
//!    `Tree3DNode::farFieldRatio`), which the seed summarises as `β̃_i(q,k) = ‖q − p̃_{i,k}‖ /
//!    |B_{i,k}|` and `p_{i,k}(q) = min(1, max(1, β̃_i(q,k)) / β̃_i(q,k+1))`.
//! 5. Each reached cell adds `Δ_T / (π_T P_T)`; its expectation is `Σ_T Δ_T`, so the estimate is
//!    unbiased (the paper's Theorem 3.1; `host/sbh` tests it statistically).
//!
//! Random numbers come from [`crate::rng`]: a stream per (seed, query stream) and, within it, a
//! counter per (stratum, sample, depth, purpose), so path and roulette draws are independent and
//! the CPU twin draws exactly what the kernel draws. With `coherent` streams the 32 queries of a
//! warp share one stream: they choose the same children (the choice depends on weights only) and
//! die in nested order, which keeps the warp on one path (the paper's "same seed across a warp").
//!
//! Tree access goes through [`TreeView`]: [`SliceTree`] on the host, [`RawTree`] in the kernels, so
//! the traversal code below is the single copy both backends run.

pub mod kernels;
mod wide;
pub mod wide_kernels;

mod estimator;
mod terms;
#[cfg(test)]
mod tests;
mod tree;
mod walk_terms;

pub use estimator::*;
pub use terms::*;
pub use tree::*;
pub use walk_terms::*;

pub use wide::{
    WIDE_BUILD_BLOCK, WIDE_CHAINS, WIDE_EVEN, WIDE_HEAD, WIDE_ODD, WIDE_PAD, WIDE_SCAN_BLOCK,
    WIDE_TILE, WideMeta, wide_block, wide_entries, wide_mark, wide_padded, wide_rows,
};

use crate::bh::{Body, MAX_DEPTH, Quad};
use crate::walk::{CellData, Interaction, ListExtra, Octree};
use crate::{math, rng};
