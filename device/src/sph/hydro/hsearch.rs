//! The smoothing-length iteration of one particle: Newton's method on the residual of the
//! constant-mass-in-kernel condition ([`super::h_residual`]), limited to a factor 2 per step as
//! in Gadget-2 and kept inside the bracket of the steps so far (bisection when Newton leaves
//! it). One state machine, stepped by the CPU solver's loop and by the GPU's update kernel.

use super::{Float, h_residual};

/// Still iterating: the density sums at `h` are wanted.
pub const H_ITERATING: u32 = 0;
/// Converged: `|g(h)| ≤ tol · N_ngb m`.
pub const H_CONVERGED: u32 = 1;
/// `h` would exceed the limit (just under half a periodic box).
pub const H_TOO_LARGE: u32 = 2;
/// The bracket closed to the precision's resolution without meeting the tolerance.
pub const H_STALLED: u32 = 3;
/// The step budget ran out.
pub const H_EXHAUSTED: u32 = 4;

/// One particle's iteration: the current `h`, the bracket `[lo, hi]` of the root (`hi` infinite
/// until a step overshoots), the status and the steps taken.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HSearch<R> {
    pub h: R,
    pub lo: R,
    pub hi: R,
    pub status: u32,
    pub steps: u32,
}

/// What the iteration is held to.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HLimits<R> {
    /// Target neighbour number `N_ngb`.
    pub n_ngb: R,
    /// Relative tolerance on the kernel mass.
    pub tol: R,
    /// The largest allowed `h` (infinite in an open domain).
    pub h_max: R,
    /// The bracket counts as closed when `hi − lo ≤ collapse · hi`.
    pub collapse: R,
    pub max_steps: u32,
}

impl<R: Float> HSearch<R> {
    /// The iteration from the guess `h` (capped at the limit).
    #[inline(always)]
    pub fn start(h: R, lim: &HLimits<R>) -> Self {
        HSearch {
            h: h.fmin(lim.h_max),
            lo: R::ZERO,
            hi: R::from_f64(f64::INFINITY),
            status: H_ITERATING,
            steps: 0,
        }
    }

    #[inline(always)]
    pub fn iterating(&self) -> bool {
        self.status == H_ITERATING
    }

    /// Takes the density sums `rho`, `drho_dh` at `self.h` of a particle of mass `m`: either
    /// the iteration ends (status set, `h` kept) or `h` moves to the next trial.
    #[inline(always)]
    pub fn update(&mut self, rho: R, drho_dh: R, m: R, lim: &HLimits<R>) {
        let h = self.h;
        let (g, dg) = h_residual(h, rho, drho_dh, m, lim.n_ngb);
        if g.fabs() <= lim.tol * lim.n_ngb * m {
            self.status = H_CONVERGED;
            return;
        }
        if g < R::ZERO {
            self.lo = h;
        } else {
            self.hi = h;
        }
        if self.lo >= lim.h_max {
            self.status = H_TOO_LARGE;
            return;
        }
        let two = R::from_f64(2.0);
        let half = R::from_f64(0.5);
        let bracketed = self.hi < R::from_f64(f64::INFINITY);
        let newton = h - g / dg;
        let mut next = if dg > R::ZERO && newton.finite() {
            newton.fmax(half * h).fmin(two * h)
        } else if g < R::ZERO {
            two * h
        } else {
            half * h
        };
        if next <= self.lo || next >= self.hi {
            next = if bracketed {
                half * (self.lo + self.hi)
            } else {
                two * h
            };
        }
        // Ending here keeps `h` at the last trial, the one whose sums the caller holds.
        self.steps += 1;
        if bracketed && self.hi - self.lo <= lim.collapse * self.hi {
            self.status = H_STALLED;
        } else if self.steps >= lim.max_steps {
            self.status = H_EXHAUSTED;
        } else {
            self.h = next.fmin(lim.h_max);
        }
    }
}

crate::shared_type!(HSearch<f32>, HLimits<f32>, super::DensitySum<f32>);

// SAFETY: #[repr(C)], four f32 and a u32: no padding, any bit pattern valid (a by-value kernel
// argument).
unsafe impl bytemuck::Zeroable for HLimits<f32> {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for HLimits<f32> {}
