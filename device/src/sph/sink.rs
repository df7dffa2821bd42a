//! What a search does with each neighbour of one target ([`Sink`]): count it ([`Count`]) or add
//! its density ([`Density`]); the search kernels' modes ([`MODE_COUNT`], …) pick the sink.

use super::*;

/// What a search does with each neighbour `j` of one target: count it, write it, or add its
/// density. `r2` is the pair's squared distance, `mj` its mass.
pub trait Sink {
    fn take(&mut self, j: u32, r2: f32, mj: f32);
    /// A candidate `j` and whether it is a neighbour (`inside`): [`Self::take`] for neighbours.
    /// The group search offers every candidate of its list, so that a sink may take it without
    /// a branch (a warp's lanes disagree on `inside`).
    #[inline(always)]
    fn offer(&mut self, j: u32, r2: f32, mj: f32, inside: bool) {
        if inside {
            self.take(j, r2, mj);
        }
    }
}

/// Counts neighbours.
#[derive(Clone, Copy, Debug, Default)]
pub struct Count(pub u32);

impl Sink for Count {
    #[inline(always)]
    fn take(&mut self, _: u32, _: f32, _: f32) {
        self.0 += 1;
    }
    #[inline(always)]
    fn offer(&mut self, _: u32, _: f32, _: f32, inside: bool) {
        self.0 += inside as u32;
    }
}

/// SPH density by summation, `ρ_i = Σ_j m_j W(r_ij, h_i)` (the target's own term included):
/// the sum of `m_j h³W` over the neighbours, scaled by `1/h³` once ([`Self::rho`]), with the
/// approximate square root per neighbour on the device (a `sqrt.rn` and a division per pair
/// made the density pass half as slow again as the count; on the host it is the correctly
/// rounded one).
#[derive(Clone, Copy, Debug)]
pub struct Density {
    pub kernel: u32,
    pub inv_h: f32,
    /// `Σ m_j h³W(r_ij, h)` so far.
    pub sum: f32,
}

impl Density {
    /// A target with smoothing length `h` (support) and no density yet.
    #[inline(always)]
    pub fn new(kernel: u32, h: f32) -> Self {
        Density {
            kernel,
            inv_h: 1.0 / h,
            sum: 0.0,
        }
    }

    /// `sum` plus neighbour `mj` at squared distance `r2` (nothing when not `inside`), the one
    /// copy of the summation that the combined walk shares.
    #[inline(always)]
    pub fn add(kernel: u32, inv_h: f32, sum: f32, r2: f32, mj: f32, inside: bool) -> f32 {
        // `inside` (r² < h²) makes the support test: q may round to just over 1 (w = 0).
        let w = shape_in_support(kernel, math::sqrt_approx(r2) * inv_h);
        math::fma(mj, if inside { w } else { 0.0 }, sum)
    }

    /// The density of a finished sum.
    #[inline(always)]
    pub fn scale(sum: f32, inv_h: f32) -> f32 {
        sum * (inv_h * inv_h * inv_h)
    }

    /// The density summed so far.
    #[inline(always)]
    pub fn rho(&self) -> f32 {
        Self::scale(self.sum, self.inv_h)
    }
}

impl Sink for Density {
    #[inline(always)]
    fn take(&mut self, j: u32, r2: f32, mj: f32) {
        self.offer(j, r2, mj, true);
    }
    #[inline(always)]
    fn offer(&mut self, _: u32, r2: f32, mj: f32, inside: bool) {
        self.sum = Self::add(self.kernel, self.inv_h, self.sum, r2, mj, inside);
    }
}

/// What a search kernel computes (its `mode` parameter).
pub const MODE_COUNT: u32 = 0;
/// Writes each target's neighbours into its CSR row.
pub const MODE_FILL: u32 = 1;
/// Sums the density (gather: every kernel's support is `h_i`).
pub const MODE_DENSITY: u32 = 2;
/// Counts each target's gather neighbours at the rungs of its [`ladder`] (state given; the
/// targets' `h` are their [`walk_radius`]) into `counts[LADDER i..LADDER (i + 1)]`.
pub const MODE_LADDER: u32 = 3;
