//! Where a search writes and the per-lane sinks that write there: [`Outputs`] (one kernel
//! parameter for every mode), [`LaneSink`] (a [`Sink`] started for a lane's target and finished
//! into the outputs, one per mode) and what every search kernel shares: which particles it
//! serves ([`serves`]) and its count of pairs tested ([`add_tested`]).

use super::*;

/// Where a search writes (see the module docs), one kernel parameter: `n` entries each but
/// `offsets` (n + 1) and `list` (`offsets[n]`); the pointers that a mode does not use may be
/// null, `tested` too (no count of the pairs tested). `kernel` is the density's smoothing
/// kernel.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Outputs {
    pub counts: *mut u32,
    pub offsets: *const u32,
    pub list: *mut u32,
    pub rho: *mut f32,
    pub state: *const HState,
    pub tested: *mut u64,
    pub kernel: u32,
}

// SAFETY: #[repr(C)]; raw pointers and a u32 only.
unsafe impl crate::gpu::DeviceViewMut for Outputs {}

/// A [`Sink`] that a lane starts for its target `i` and finishes into the [`Outputs`].
pub(super) trait LaneSink: Sink + Sized {
    /// # Safety
    /// `i` is a particle; the outputs of this mode are sized per the module docs.
    unsafe fn start(o: &Outputs, i: u32, hi: f32) -> Self;
    /// # Safety
    /// As `start`, for the same `i`.
    unsafe fn finish(self, o: &Outputs, i: u32);
}

impl LaneSink for Count {
    #[inline(always)]
    unsafe fn start(_: &Outputs, _: u32, _: f32) -> Self {
        Count(0)
    }
    #[inline(always)]
    unsafe fn finish(self, o: &Outputs, i: u32) {
        // SAFETY: per the contract.
        unsafe { *o.counts.add(i as usize) = self.0 }
    }
}

impl LaneSink for Density {
    #[inline(always)]
    unsafe fn start(o: &Outputs, _: u32, hi: f32) -> Self {
        Density::new(o.kernel, hi)
    }
    #[inline(always)]
    unsafe fn finish(self, o: &Outputs, i: u32) {
        // SAFETY: per the contract.
        unsafe { *o.rho.add(i as usize) = self.rho() }
    }
}

impl LaneSink for Ladder {
    #[inline(always)]
    unsafe fn start(o: &Outputs, i: u32, _: f32) -> Self {
        // SAFETY: per the contract (this mode gives the state).
        Ladder::new(unsafe { &*o.state.add(i as usize) })
    }
    #[inline(always)]
    unsafe fn finish(self, o: &Outputs, i: u32) {
        // SAFETY: per the contract (`counts` holds LADDER entries per particle in this mode).
        unsafe {
            let at = o.counts.add(i as usize * LADDER);
            for k in 0..LADDER {
                *at.add(k) = self.c[k];
            }
        }
    }
}

/// Writes a target's neighbours into its CSR row, never past the row's end.
pub(super) struct Fill {
    list: *mut u32,
    at: u32,
    end: u32,
}

impl Sink for Fill {
    #[inline(always)]
    fn take(&mut self, j: u32, _: f32, _: f32) {
        if self.at < self.end {
            // SAFETY: `at` is inside the target's row (`start`'s contract sizes the list).
            unsafe { *self.list.add(self.at as usize) = j };
            self.at += 1;
        }
    }
}

impl LaneSink for Fill {
    #[inline(always)]
    unsafe fn start(o: &Outputs, i: u32, _: f32) -> Self {
        // SAFETY: per the contract (`offsets` has n + 1 entries).
        unsafe {
            Fill {
                list: o.list,
                at: *o.offsets.add(i as usize),
                end: *o.offsets.add(i as usize + 1),
            }
        }
    }
    #[inline(always)]
    unsafe fn finish(self, _: &Outputs, _: u32) {}
}

/// [`Density`] with smoothing kernel `K` a constant, so that the group search's flush evaluates
/// one kernel's formula for every candidate without a branch on the kernel.
pub(super) struct DensityOf<const K: u32>(Density);

impl<const K: u32> Sink for DensityOf<K> {
    #[inline(always)]
    fn take(&mut self, j: u32, r2: f32, mj: f32) {
        self.offer(j, r2, mj, true);
    }
    #[inline(always)]
    fn offer(&mut self, _: u32, r2: f32, mj: f32, inside: bool) {
        let d = &mut self.0;
        d.sum = Density::add(K, d.inv_h, d.sum, r2, mj, inside);
    }
}

impl<const K: u32> LaneSink for DensityOf<K> {
    #[inline(always)]
    unsafe fn start(_: &Outputs, _: u32, hi: f32) -> Self {
        DensityOf(Density::new(K, hi))
    }
    #[inline(always)]
    unsafe fn finish(self, o: &Outputs, i: u32) {
        // SAFETY: per the contract.
        unsafe { self.0.finish(o, i) }
    }
}

/// Whether particle `i` is served: all when `state` is null, else those still iterating.
///
/// # Safety
/// `state` is null or holds particle `i`.
#[inline(always)]
pub(super) unsafe fn serves(state: *const HState, i: u32) -> bool {
    // SAFETY: per the contract.
    state.is_null() || unsafe { (*state.add(i as usize)).iterating() }
}

/// Adds the warp's `tested` to `*out` (one atomic per warp), unless `out` is null.
///
/// # Safety
/// All 32 lanes call it together; `out` is null or valid.
#[inline(always)]
pub(super) unsafe fn add_tested(out: *mut u64, tested: u64) {
    if !out.is_null() {
        // SAFETY: whole warp, per the contract.
        unsafe {
            let t = all_reduce(tested, |a, b| a + b);
            if lane_id() == 0 && t > 0 {
                atomic_add_u64(out, t);
            }
        }
    }
}
