//! The opening tests (multipole acceptance) of the tree walks, per body and per group's box, with
//! the geometry they read: box distances and cell widths.

use super::*;

/// Opening test (multipole acceptance): a cell of width `w` whose centre of mass lies at squared
/// distance `r2` is far enough when `w / r < θ`, i.e. `w² < r² θ²`. θ = 0 opens every cell.
#[inline(always)]
pub fn is_far(r2: f32, w2: f32, theta2: f32) -> bool {
    w2 < r2 * theta2
}

/// Squared distance from point `c` to the axis-aligned box with centre `bc` and half-extents
/// `bh` (zero inside): the nearest any point of the box can be to `c`.
#[inline(always)]
pub fn box_dist2(c: [f32; 3], bc: [f32; 3], bh: [f32; 3]) -> f32 {
    let mut d2 = 0.0;
    for k in 0..3 {
        let d = (c[k] - bc[k]).abs() - bh[k];
        if d > 0.0 {
            d2 += d * d;
        }
    }
    d2
}

/// The group opening test of the warp-group traversal: a cell is far for every body in the box
/// when it is far for the box's nearest point.
#[inline(always)]
pub fn is_far_from_box(com: [f32; 3], w2: f32, bc: [f32; 3], bh: [f32; 3], theta2: f32) -> bool {
    is_far(box_dist2(com, bc, bh), w2, theta2)
}

/// The relative opening criterion (Gadget-2's, per group): a cell of mass `m`, squared width
/// `w2`, centre of mass `s` is far for every body of the box `bc ± bh` when it passes the
/// geometric guard `w / r < θ_max` (`theta2` = θ_max²; r from the box's nearest point) and its
/// truncation error is below a fraction α of the smallest acceleration of the group,
/// `G m / r² · (w / r)^p ≤ α |a|_min`, with p = 2 for monopoles and 3 with quadrupoles (the
/// first neglected order). `lim` = α |a|_min / G; without a usable one (zero, negative, NaN:
/// no previous acceleration) the geometric test decides alone.
#[inline(always)]
pub fn is_far_relative<const QUAD: bool>(
    s: &Body,
    w2: f32,
    bc: [f32; 3],
    bh: [f32; 3],
    theta2: f32,
    lim: f32,
) -> bool {
    let r2 = box_dist2(s.pos(), bc, bh);
    if !is_far(r2, w2, theta2) {
        return false;
    }
    if !(lim > 0.0 && lim.is_finite()) {
        return true;
    }
    // Dimensionless and sqrt-free: x = m / (r² lim), q = (w / r)²; x q ≤ 1, or x² q³ ≤ 1.
    let x = s.m / (r2 * lim);
    let q = w2 / r2;
    if QUAD {
        x * x * q * q * q <= 1.0
    } else {
        x * q <= 1.0
    }
}

/// α |a|_min / G for [`is_far_relative`] from the previous accelerations (with G) of a group.
#[inline(always)]
pub fn relative_limit(alpha: f32, a2_min: f32, g: f32) -> f32 {
    alpha * crate::gpu::math::sqrt(a2_min) / g
}

/// Axis-aligned box of points as (centre, half-extents).
#[inline(always)]
pub fn box_of(lo: [f32; 3], hi: [f32; 3]) -> ([f32; 3], [f32; 3]) {
    (
        [
            0.5 * (lo[0] + hi[0]),
            0.5 * (lo[1] + hi[1]),
            0.5 * (lo[2] + hi[2]),
        ],
        [
            0.5 * (hi[0] - lo[0]),
            0.5 * (hi[1] - lo[1]),
            0.5 * (hi[2] - lo[2]),
        ],
    )
}

/// Squared width of a cell at `depth` below a root of half-size `root_half`.
#[inline(always)]
pub fn width2_at(root_half: f32, depth: usize) -> f32 {
    let w = width_at(root_half, depth);
    w * w
}

/// The width of a cell at `depth` (the root's is `2 root_half`).
#[inline(always)]
pub fn width_at(root_half: f32, depth: usize) -> f32 {
    2.0 * root_half / (1u64 << depth) as f32
}
