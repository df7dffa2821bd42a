//! SPH neighbour search through the Barnes–Hut octree (and a linked-cell baseline), SPH density
//! and smoothing lengths iterated to a target neighbour number.
//!
//! Conventions (one copy, used by every kernel and CPU twin):
//! - `h` is the **support radius** of the smoothing kernel (Gadget-2's convention): `W(r, h) = 0`
//!   for `r ≥ h`, and particle `j` is a neighbour of `i` when `|r_ij| < R` with `R = h_i`
//!   (gather), `h_j` (scatter) or `max(h_i, h_j)` (symmetric): [`radius`], [`within`].
//! - The boundary is **strict**: a particle at exactly `R` is not a neighbour (it would add
//!   `W(h, h) = 0` to the density anyway). `h = 0` therefore gathers nothing, not even the particle
//!   itself; for `h > 0` every particle is its own neighbour (`r = 0`), coincident ones too.
//! - Distances are float32 `r² = dx² + dy² + dz²` ([`dist2`]); a cell is pruned only when the
//!   float32 gap between boxes, summed in the same order ([`gap2`]), already fails [`within`].
//!   Rounding is monotone, so the gap never exceeds any pair's `r²`: the tree, the cell list and
//!   the brute force find exactly the same sets.
//!
//! Stages on the existing octree (`crate::bh`: built, summarized, sorted into warp groups):
//! [`kernels::sph_cell_boxes`] adds each cell's box of its particles and largest `h`
//! ([`CellBox`], [`summarize_box`]); then one of three searches answers count, CSR fill or
//! density ([`MODE_COUNT`], …): the seed-style warp vote (`sph_vote`), the warp-group walk
//! (`sph_group`), or the linked cells (`sph_cell_*`).
//!
//! This file holds the conventions' functions (criteria, distances, the opening tests) and the
//! cell boxes; the smoothing kernels, the searches' sinks, the linked-cell grid, the h iteration
//! and the warp groups' splitting each have a module, re-exported here.

pub mod hydro;
pub mod kernels;

mod grid;
mod groups;
mod iteration;
mod sink;
mod smoothing;
pub use grid::*;
pub use groups::*;
pub use iteration::*;
pub use sink::*;
pub use smoothing::*;

use crate::bh::Body;
use crate::fem::Real;
use crate::math;

/// Gather criterion: `|r_ij| < h_i`.
pub const GATHER: u32 = 0;
/// Scatter criterion: `|r_ij| < h_j`.
pub const SCATTER: u32 = 1;
/// Symmetric criterion: `|r_ij| < max(h_i, h_j)`.
pub const SYMMETRIC: u32 = 2;

/// The search radius of a pair under criterion `crit` ([`GATHER`], [`SCATTER`], [`SYMMETRIC`]).
/// Monotone in both smoothing lengths, so a cell's largest `h` bounds all its particles' radii.
#[inline(always)]
pub fn radius(crit: u32, hi: f32, hj: f32) -> f32 {
    match crit {
        GATHER => hi,
        SCATTER => hj,
        _ => hi.max(hj),
    }
}

/// The one neighbour test: squared distance `r2` strictly inside `radius`. A radius whose
/// float32 square underflows to zero (below about 1e-22) reaches nothing, as `h = 0`.
#[inline(always)]
pub fn within(r2: f32, radius: f32) -> bool {
    r2 < radius * radius
}

/// Whether `j` (smoothing length `hj`) at squared distance `r2` is a neighbour of `i` (`hi`).
#[inline(always)]
pub fn is_neighbour(crit: u32, r2: f32, hi: f32, hj: f32) -> bool {
    within(r2, radius(crit, hi, hj))
}

/// `d0² + d1² + d2²`, fused from the last term up: [`dist2`] and [`gap2`] must round alike.
#[inline(always)]
fn sum_sq(d: [f32; 3]) -> f32 {
    // Monotone in each |d_k|, as the plain sum is: the gap bound needs only that.
    math::fma(d[0], d[0], math::fma(d[1], d[1], d[2] * d[2]))
}

/// Squared float32 distance between two points (`q − p`).
#[inline(always)]
pub fn dist2(p: [f32; 3], q: [f32; 3]) -> f32 {
    sum_sq([q[0] - p[0], q[1] - p[1], q[2] - p[2]])
}

/// Squared gap between boxes `[alo, ahi]` and `[blo, bhi]` (zero where they overlap): never more
/// than [`dist2`] of a point of one and a point of the other, in float32 too.
#[inline(always)]
pub fn gap2(alo: [f32; 3], ahi: [f32; 3], blo: [f32; 3], bhi: [f32; 3]) -> f32 {
    let g = |k: usize| (blo[k] - ahi[k]).max(alo[k] - bhi[k]).max(0.0);
    sum_sq([g(0), g(1), g(2)])
}

/// `d` as the separation to the nearest periodic image along an axis of length `l`, for `|d| < l`
/// (two positions inside the box): exact, no rounding beyond the one subtraction.
#[inline(always)]
pub fn min_image(d: f32, l: f32) -> f32 {
    if d > 0.5 * l {
        d - l
    } else if d < -0.5 * l {
        d + l
    } else {
        d
    }
}

/// [`min_image`] of each component of `q − p` in the box of sides `l`.
#[inline(always)]
pub fn offset_periodic(p: [f32; 3], q: [f32; 3], l: [f32; 3]) -> [f32; 3] {
    [
        min_image(q[0] - p[0], l[0]),
        min_image(q[1] - p[1], l[1]),
        min_image(q[2] - p[2], l[2]),
    ]
}

/// [`dist2`] to the nearest periodic image.
#[inline(always)]
pub fn dist2_periodic(p: [f32; 3], q: [f32; 3], l: [f32; 3]) -> f32 {
    sum_sq(offset_periodic(p, q, l))
}

/// [`cell_reachable`] for one target at `p` in the periodic box of sides `l` (the target and the
/// cell's particles inside it): the gap to the box or to one of its two images along each axis,
/// whichever is nearer.
#[inline(always)]
pub fn cell_reachable_periodic(crit: u32, p: [f32; 3], th: f32, b: &CellBox, l: [f32; 3]) -> bool {
    let g = |k: usize| {
        let direct = (b.lo[k] - p[k]).max(p[k] - b.hi[k]).max(0.0);
        direct.min(p[k] + l[k] - b.hi[k]).min(b.lo[k] - p[k] + l[k])
    };
    within(sum_sq([g(0), g(1), g(2)]), radius(crit, th, b.hmax))
}

/// Whether a cell (`b`) may hold a neighbour of some target in the box `[tlo, thi]` whose
/// largest smoothing length is `th` (a single target: `tlo = thi = p`, `th = h_i`): the opening
/// test of every tree walk. Exact: false only when no pair can pass [`is_neighbour`].
#[inline(always)]
pub fn cell_reachable(crit: u32, tlo: [f32; 3], thi: [f32; 3], th: f32, b: &CellBox) -> bool {
    within(gap2(tlo, thi, b.lo, b.hi), radius(crit, th, b.hmax))
}

/// [`cell_reachable`] for one source particle at `q` with smoothing length `hj`.
#[inline(always)]
pub fn body_reachable(
    crit: u32,
    tlo: [f32; 3],
    thi: [f32; 3],
    th: f32,
    q: [f32; 3],
    hj: f32,
) -> bool {
    within(gap2(tlo, thi, q, q), radius(crit, th, hj))
}

/// A cell's bounding box of its particles and their largest `h`, padded to 32 bytes (two vector
/// loads on the device). An empty box has `lo = +inf`, `hi = -inf`.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CellBox {
    pub lo: [f32; 3],
    pub hmax: f32,
    pub hi: [f32; 3],
    pub _pad: f32,
}

impl Default for CellBox {
    fn default() -> Self {
        CellBox::EMPTY
    }
}

impl CellBox {
    pub const EMPTY: CellBox = CellBox {
        lo: [f32::INFINITY; 3],
        hmax: 0.0,
        hi: [f32::NEG_INFINITY; 3],
        _pad: 0.0,
    };

    /// The box grown by a particle at `p` with smoothing length `h`.
    #[inline(always)]
    pub fn with_point(mut self, p: [f32; 3], h: f32) -> Self {
        for (k, pk) in p.iter().enumerate() {
            self.lo[k] = self.lo[k].min(*pk);
            self.hi[k] = self.hi[k].max(*pk);
        }
        self.hmax = self.hmax.max(h);
        self
    }

    /// The union of two boxes.
    #[inline(always)]
    pub fn with_box(mut self, o: &CellBox) -> Self {
        for k in 0..3 {
            self.lo[k] = self.lo[k].min(o.lo[k]);
            self.hi[k] = self.hi[k].max(o.hi[k]);
        }
        self.hmax = self.hmax.max(o.hmax);
        self
    }
}

crate::shared_type!(CellBox, Grid, HState);

/// One cell's children as the box summary reads them (device pointers in the kernel, slices in
/// the CPU twin); slot values as in `crate::bh` (`EMPTY`, a body `0..n`, `n + cell`).
pub trait BoxChildren {
    fn slot(&self, octant: u32) -> i32;
    /// A child cell's finished box.
    fn cell(&self, cell: usize) -> CellBox;
    /// Body `b`'s position and smoothing length.
    fn body(&self, b: i32) -> ([f32; 3], f32);
    /// The next body of a bucket chain, or -1.
    fn next(&self, b: i32) -> i32;
}

/// A cell's [`CellBox`] from its children: the one copy of the summary.
#[inline(always)]
pub fn summarize_box(c: &impl BoxChildren, n: i32) -> CellBox {
    let mut b = CellBox::EMPTY;
    for o in 0..8 {
        let ch = c.slot(o);
        if ch >= n {
            b = b.with_box(&c.cell((ch - n) as usize));
        } else {
            let mut j = ch;
            while j >= 0 {
                let (p, h) = c.body(j);
                b = b.with_point(p, h);
                j = c.next(j);
            }
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundary_is_strict_and_h_zero_gathers_nothing() {
        // (1, 0, 0) from the origin: r² = 1 exactly.
        let r2 = dist2([0.0; 3], [1.0, 0.0, 0.0]);
        assert_eq!(r2, 1.0);
        assert!(!is_neighbour(GATHER, r2, 1.0, 0.0));
        assert!(is_neighbour(GATHER, r2, 1.0f32.next_up(), 0.0));
        assert!(!is_neighbour(SCATTER, r2, 5.0, 1.0));
        assert!(is_neighbour(SCATTER, r2, 0.0, 1.5));
        assert!(is_neighbour(SYMMETRIC, r2, 0.0, 1.5) && is_neighbour(SYMMETRIC, r2, 1.5, 0.0));
        // h = 0: not even the particle itself; h > 0: itself and coincident particles.
        assert!(!is_neighbour(GATHER, 0.0, 0.0, 0.0));
        assert!(is_neighbour(GATHER, 0.0, 1e-10, 0.0));
        // An h whose square underflows to zero behaves as h = 0.
        assert!(!is_neighbour(GATHER, 0.0, 1e-30, 0.0));
    }

    #[test]
    fn gap_never_exceeds_a_pairs_distance() {
        // Random boxes and points inside them, with awkward (non-representable) coordinates.
        for s in 0..2000u64 {
            let u = |k: u64| crate::rng::uniform_f32(s, k) * 3.0 - 1.5;
            let (a, b): ([f32; 3], [f32; 3]) = (
                core::array::from_fn(|k| u(k as u64)),
                core::array::from_fn(|k| u(3 + k as u64)),
            );
            let (alo, ahi) = (a, core::array::from_fn(|k| a[k] + u(6 + k as u64).abs()));
            let (blo, bhi) = (
                b,
                core::array::from_fn(|k| b[k] + u(9 + k as u64).abs() * 0.1),
            );
            let g = gap2(alo, ahi, blo, bhi);
            for t in 0..8u64 {
                let f = |k: u64| crate::rng::uniform_f32(s + 7777, 16 * t + k);
                let p: [f32; 3] =
                    core::array::from_fn(|k| alo[k] + (ahi[k] - alo[k]) * f(k as u64));
                let q: [f32; 3] =
                    core::array::from_fn(|k| blo[k] + (bhi[k] - blo[k]) * f(3 + k as u64));
                let p = core::array::from_fn(|k| p[k].clamp(alo[k], ahi[k]));
                let q = core::array::from_fn(|k| q[k].clamp(blo[k], bhi[k]));
                assert!(g <= dist2(p, q), "seed {s}: gap² {g} > r² {}", dist2(p, q));
                assert!(gap2(p, p, blo, bhi) <= dist2(p, q));
            }
        }
    }
}
