//! Gravity and SPH density in one tree walk, against the two separate walks:
//! the kernels and formulas are `warpkit_device::combined`'s (whose module docs describe the
//! walk); [`cpu`] holds the twins, [`gpu`] the launchers (the combined kernel and, for comparison,
//! `bh_gravity_group` and `sph_group` on the same tree), [`compare`] runs either backend.

pub mod cpu;
mod facade;
pub mod gpu;
#[cfg(test)]
mod tests;

pub use facade::{Comparison, Times, compare};

use crate::bh::{InputError, Params};
use crate::device::bh::Accel;
use crate::device::bh::Body;
use crate::device::combined::WalkParams;
use crate::device::sph::{Count, Density, Sink};
use crate::sph::{SmoothingKernel, SphError};

/// What one evaluation computes besides the walk's choice of parts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// θ, ε and G of the gravity.
    pub gravity: Params,
    /// The smoothing kernel of the density (support `h`).
    pub kernel: SmoothingKernel,
    /// Quadrupole moments in the cells' gravity (`combined_group_quad`, `bh_gravity_group_quad`).
    pub quadrupole: bool,
}

impl Options {
    /// The kernels' parameters for `parts` (`warpkit_device::combined::PART_*`).
    pub fn walk_params(&self, parts: u32) -> WalkParams {
        let p = &self.gravity;
        WalkParams {
            theta2: p.theta * p.theta,
            eps2: p.eps * p.eps,
            g: p.g,
            kernel: self.kernel.code(),
            parts,
        }
    }
}

/// Which form of the walks a comparison runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, crate::choice::Choice)]
pub enum Form {
    /// Warp groups walking against their bounding box, lists summed by all lanes:
    /// `combined_group` against `bh_gravity_group` and `sph_group`.
    #[default]
    Group,
    /// The seed's walks, one per warp with a vote per cell (GASPHiA's own setting):
    /// `combined_vote` against `bh_gravity` and `sph_vote`. Monopoles only.
    Vote,
}

/// Everything that makes a request invalid, caught before any work or launch.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CombinedError {
    #[error(transparent)]
    Gravity(#[from] InputError),
    #[error(transparent)]
    Sph(#[from] SphError),
    #[error(
        "the vote form (the seed's per-warp walk) sums monopoles only: drop --quadrupole or use \
         --form group"
    )]
    VoteQuadrupole,
}

/// Checks bodies, gravity parameters and smoothing lengths (h > 0: the density needs them).
pub fn validate(bodies: &[Body], h: &[f32], o: &Options) -> Result<(), CombinedError> {
    crate::bh::validate(bodies, &o.gravity)?;
    crate::sph::validate(bodies, h, true)?;
    Ok(())
}

/// Per body: acceleration, gather neighbour count and SPH density (the target itself included).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Results {
    pub acc: Vec<Accel>,
    pub counts: Vec<u32>,
    pub rho: Vec<f32>,
}

/// The separate SPH search's sink: the gather count and the density of one target.
#[derive(Clone, Copy, Debug)]
pub struct CountDensity {
    pub count: Count,
    pub density: Density,
}

impl Sink for CountDensity {
    fn take(&mut self, j: u32, r2: f32, mj: f32) {
        self.count.take(j, r2, mj);
        self.density.take(j, r2, mj);
    }
}

/// The largest of `values`, infinite when one is NaN (a poisoned output never compares equal).
fn worst(values: impl Iterator<Item = f32>) -> f64 {
    values
        .map(|v| if v.is_nan() { f64::INFINITY } else { v as f64 })
        .fold(0.0, f64::max)
}

/// The largest relative difference `|a − b| / max(|b|, floor)` over paired values (0 for none).
pub fn max_rel_diff(a: &[f32], b: &[f32], floor: f32) -> f64 {
    worst(
        a.iter()
            .zip(b)
            .map(|(&x, &y)| (x - y).abs() / y.abs().max(floor)),
    )
}

/// The largest relative difference of accelerations (by the norm of `b`'s vector, floored).
pub fn max_acc_diff(a: &[Accel], b: &[Accel], floor: f32) -> f64 {
    worst(a.iter().zip(b).map(|(x, y)| {
        let d = ((x.x - y.x).powi(2) + (x.y - y.y).powi(2) + (x.z - y.z).powi(2)).sqrt();
        d / (y.x * y.x + y.y * y.y + y.z * y.z).sqrt().max(floor)
    }))
}
