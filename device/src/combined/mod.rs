//! Gravity and SPH density in one tree walk: GASPHiA's design, where an SPH
//! code folds the neighbour test into the gravity traversal (seed 001: "one merged vote"), in the
//! warp-group form of `crate::bh`'s group kernels.
//!
//! One warp group walks the octree once against its bounding box ([`crate::walk::near`]): a cell
//! is opened when the gravity opening test fails (`crate::bh::is_far_from_box`), listed as a
//! gravity source when it passes, and, if it may also hold a neighbour of the group
//! ([`GroupReach`]: the box of the group grown by its largest `h`, `crate::sph::cell_reachable`),
//! walked on for the neighbours alone. Bodies serve both lists. The lanes sum the gravity list
//! with `crate::bh`'s interactions (monopoles, or quadrupoles) and the near list with
//! [`GatherDensity`]: the gather count (`|r_ij| < h_i`) and the SPH density by summation.
//!
//! The gravity list is exactly the one of `bh_gravity_group` and the near list holds exactly
//! the reachable candidates of `sph_group`, so the combined results equal the two separate walks'
//! up to summation order (in the CPU twins, bit for bit).

pub mod kernels;

use crate::bh::Body;
use crate::sph::{CellBox, Density, GATHER, body_reachable, cell_reachable, dist2, within};
use crate::walk::Interaction;
pub use crate::walk::near::Fields;

/// [`WalkParams::parts`]: accelerations.
pub const PART_GRAVITY: u32 = 1;
/// [`WalkParams::parts`]: density and gather counts.
pub const PART_DENSITY: u32 = 2;
/// Both in one walk.
pub const PART_BOTH: u32 = PART_GRAVITY | PART_DENSITY;

/// The walk's fields for a [`WalkParams::parts`] value (anything but one part alone is both).
#[inline(always)]
pub fn fields(parts: u32) -> Fields {
    match parts {
        PART_GRAVITY => Fields::Far,
        PART_DENSITY => Fields::Near,
        _ => Fields::Both,
    }
}

/// The scalar parameters of the combined kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct WalkParams {
    /// Opening angle squared (`crate::bh::is_far`).
    pub theta2: f32,
    /// Plummer softening squared.
    pub eps2: f32,
    /// Gravitational constant.
    pub g: f32,
    /// Smoothing kernel (`crate::sph::CUBIC_SPLINE` or `WENDLAND_C2`).
    pub kernel: u32,
    /// What to compute: [`PART_GRAVITY`], [`PART_DENSITY`] or [`PART_BOTH`] (the single parts
    /// walk the tree as the separate walks do, with this kernel's code).
    pub parts: u32,
}

crate::shared_type!(WalkParams);

/// The near-field tests of one warp group: its bounding box `[lo, hi]` and largest `h` (gather:
/// the radius is the target's `h`).
#[derive(Clone, Copy, Debug)]
pub struct GroupReach {
    pub lo: [f32; 3],
    pub hi: [f32; 3],
    pub h: f32,
}

impl GroupReach {
    /// Whether a cell with box `b` may hold a gather neighbour of the group.
    #[inline(always)]
    pub fn cell(&self, b: &CellBox) -> bool {
        cell_reachable(GATHER, self.lo, self.hi, self.h, b)
    }
    /// Whether body `q` may be a gather neighbour of the group (its own `h` plays no part).
    #[inline(always)]
    pub fn body(&self, q: &Body) -> bool {
        body_reachable(GATHER, self.lo, self.hi, self.h, q.pos(), 0.0)
    }
}

/// Relative rounding allowance of [`may_reach`] for cells' centres of mass and centres: times
/// the root's largest coordinate (`max |centre| + half width`), far above the few hundred
/// roundings by `f32::EPSILON` that a centre of mass summed level by level can carry.
pub const COM_SLACK: f32 = 1e-4;

/// The allowance of [`may_reach`] for a tree whose root cell is `(centre, half)`.
#[inline(always)]
pub fn reach_slack(centre: [f32; 3], half: f32) -> f32 {
    COM_SLACK * (centre[0].abs().max(centre[1].abs()).max(centre[2].abs()) + half)
}

/// Whether a target with support `h` at squared distance `r2` from the centre of mass of a cell
/// of width `w` may reach one of its bodies: body and centre of mass lie in the cell's cube, so
/// within √3·w of each other (up to the rounding `slack`, [`reach_slack`]). Conservative: false
/// only when no body of the cell is within `h`, so the exact test on the cell's box
/// ([`GroupReach`]'s `cell_reachable`) is needed only when it is true.
#[inline(always)]
pub fn may_reach(r2: f32, h: f32, w: f32, slack: f32) -> bool {
    // 1.7321 > √3; the factor covers the roundings of r2 and of the sum.
    let r = (h + 1.7321 * w + slack) * 1.0001;
    r2 < r * r
}

/// One target's gather sums: its position, smoothing length (and its inverse, taken once),
/// neighbour count and density sum (`crate::sph::Density`'s, scaled by [`Gather::rho`]).
#[derive(Clone, Copy, Debug)]
pub struct Gather {
    pub p: [f32; 3],
    pub h: f32,
    pub inv_h: f32,
    pub kernel: u32,
    pub count: u32,
    pub sum: f32,
}

impl Gather {
    #[inline(always)]
    pub fn at(p: [f32; 3], h: f32, kernel: u32) -> Self {
        Gather {
            p,
            h,
            inv_h: 1.0 / h,
            kernel,
            count: 0,
            sum: 0.0,
        }
    }

    /// The density of the neighbours summed so far.
    #[inline(always)]
    pub fn rho(&self) -> f32 {
        Density::scale(self.sum, self.inv_h)
    }
}

/// The near-field interaction: a listed body within the target's `h` (strictly, as
/// `crate::sph::is_neighbour` under [`GATHER`]) is counted and adds `m_j W(r_ij, h_i)` to the
/// density (the target itself included), as `crate::sph::Density` adds it: one division per
/// target and the approximate square root (`Density::add`; on the host the correctly rounded
/// one, so the CPU twin sums exactly what the SPH search's does).
#[derive(Clone, Copy, Debug, Default)]
pub struct GatherDensity;

impl Interaction for GatherDensity {
    type Extra = ();
    type Target = Gather;
    #[inline(always)]
    fn cell_extra(&self, _: i32) {}
    #[inline(always)]
    fn body_extra(&self, _: i32) {}
    #[inline(always)]
    fn add(&self, t: &mut Gather, s: &Body, _: &()) {
        let r2 = dist2(t.p, s.pos());
        let inside = within(r2, t.h);
        t.count += inside as u32;
        t.sum = Density::add(t.kernel, t.inv_h, t.sum, r2, s.m, inside);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sph::{Density, Sink, is_neighbour};

    #[test]
    fn gather_density_takes_what_the_gather_test_takes() {
        let inter = GatherDensity;
        let h = 1.0f32;
        let mut t = Gather::at([0.0; 3], h, crate::sph::CUBIC_SPLINE);
        let mut want = Density::new(crate::sph::CUBIC_SPLINE, h);
        let mut count = 0;
        for (k, x) in [0.0f32, 0.5, 1.0, 1.0f32.next_down(), 2.0]
            .iter()
            .enumerate()
        {
            let s = Body {
                x: *x,
                y: 0.0,
                z: 0.0,
                m: 1.0 + k as f32,
            };
            inter.add(&mut t, &s, &());
            let r2 = dist2([0.0; 3], s.pos());
            if is_neighbour(GATHER, r2, h, 5.0) {
                count += 1;
                want.take(0, r2, s.m);
            }
        }
        assert_eq!((t.count, t.rho()), (count, want.rho()));
        assert_eq!(count, 3);
    }

    #[test]
    fn parts_choose_the_fields() {
        assert_eq!(fields(PART_GRAVITY), Fields::Far);
        assert_eq!(fields(PART_DENSITY), Fields::Near);
        assert_eq!(fields(PART_BOTH), Fields::Both);
    }
}
