//! Warp vote and register shuffles (the `*.sync` forms, correct under Volta+ independent thread
//! scheduling).
//!
//! # Safety (all functions here)
//! `mask` names the lanes that take part. Every lane named in `mask` must execute the same call
//! (same instruction, same `mask`) before any of them proceeds, and the calling lane must be in
//! `mask`; otherwise the result is undefined. With [`FULL_MASK`] that means: no lane of the warp
//! may have exited or branched away, so launch whole warps and keep out-of-range threads alive
//! (inactive) instead of returning early.
use core::arch::asm;

/// All 32 lanes.
pub const FULL_MASK: u32 = 0xffff_ffff;

/// `__all_sync`: true when `pred` holds on every lane of `mask`. Emits `vote.sync.all.pred`.
///
/// # Safety
/// See the module docs.
#[inline(always)]
pub unsafe fn vote_all(mask: u32, pred: bool) -> bool {
    let r: u32;
    // SAFETY: caller upholds convergence of `mask`.
    unsafe {
        asm!(
            "{{ .reg .pred wk_p, wk_q;",
            "setp.ne.u32 wk_p, {pred}, 0;",
            "vote.sync.all.pred wk_q, wk_p, {mask};",
            "selp.u32 {r}, 1, 0, wk_q; }}",
            pred = in(reg32) pred as u32, mask = in(reg32) mask, r = out(reg32) r,
            options(nomem, nostack)
        )
    };
    r != 0
}

/// `__any_sync`: true when `pred` holds on at least one lane of `mask`. Emits
/// `vote.sync.any.pred`.
///
/// # Safety
/// See the module docs.
#[inline(always)]
pub unsafe fn vote_any(mask: u32, pred: bool) -> bool {
    let r: u32;
    // SAFETY: caller upholds convergence of `mask`.
    unsafe {
        asm!(
            "{{ .reg .pred wk_p, wk_q;",
            "setp.ne.u32 wk_p, {pred}, 0;",
            "vote.sync.any.pred wk_q, wk_p, {mask};",
            "selp.u32 {r}, 1, 0, wk_q; }}",
            pred = in(reg32) pred as u32, mask = in(reg32) mask, r = out(reg32) r,
            options(nomem, nostack)
        )
    };
    r != 0
}

/// `__ballot_sync`: bit `k` set when `pred` holds on lane `k` (lanes outside `mask` give 0).
/// Emits `vote.sync.ballot.b32`.
///
/// # Safety
/// See the module docs.
#[inline(always)]
pub unsafe fn ballot(mask: u32, pred: bool) -> u32 {
    let r: u32;
    // SAFETY: caller upholds convergence of `mask`.
    unsafe {
        asm!(
            "{{ .reg .pred wk_p;",
            "setp.ne.u32 wk_p, {pred}, 0;",
            "vote.sync.ballot.b32 {r}, wk_p, {mask}; }}",
            pred = in(reg32) pred as u32, mask = in(reg32) mask, r = out(reg32) r,
            options(nomem, nostack)
        )
    };
    r
}

/// `__syncwarp(mask)`: `bar.warp.sync`. Reconverges the lanes of `mask` and orders their memory
/// accesses (shared-memory hand-offs within a warp need it since Volta).
///
/// # Safety
/// See the module docs.
#[inline(always)]
pub unsafe fn sync_warp(mask: u32) {
    // SAFETY: caller upholds convergence of `mask`.
    unsafe { asm!("bar.warp.sync {mask};", mask = in(reg32) mask, options(nostack)) }
}

/// `__activemask()`: the lanes executing this instruction now (`activemask.b32`). Only a hint:
/// it is no convergence guarantee.
#[inline(always)]
pub fn active_mask() -> u32 {
    let r: u32;
    // SAFETY: no preconditions.
    unsafe { asm!("activemask.b32 {r};", r = out(reg32) r, options(nomem, nostack)) };
    r
}

macro_rules! shuffle {
    ($(#[$doc:meta])* $name:ident, $name_f32:ident, $mode:literal, $clamp:literal) => {
        $(#[$doc])*
        ///
        /// Returns the value and whether the source lane was valid; for an invalid source the
        /// value is the caller's own `value`.
        ///
        /// # Safety
        /// See the module docs.
        #[inline(always)]
        pub unsafe fn $name(mask: u32, value: u32, b: u32) -> (u32, bool) {
            let (r, ok): (u32, u32);
            // SAFETY: caller upholds convergence of `mask`.
            unsafe {
                asm!(
                    "{{ .reg .pred wk_p;",
                    concat!("shfl.sync.", $mode, ".b32 {r}|wk_p, {v}, {b}, ", $clamp, ", {mask};"),
                    "selp.u32 {ok}, 1, 0, wk_p; }}",
                    v = in(reg32) value, b = in(reg32) b, mask = in(reg32) mask,
                    r = out(reg32) r, ok = out(reg32) ok,
                    options(nomem, nostack)
                )
            };
            (r, ok != 0)
        }

        /// The `f32` form of
        #[doc = concat!("[`", stringify!($name), "`].")]
        ///
        /// # Safety
        /// See the module docs.
        #[inline(always)]
        pub unsafe fn $name_f32(mask: u32, value: f32, b: u32) -> (f32, bool) {
            // SAFETY: forwarded contract.
            let (r, ok) = unsafe { $name(mask, value.to_bits(), b) };
            (f32::from_bits(r), ok)
        }
    };
}

shuffle!(
    /// `__shfl_sync`: the value of lane `b` (`shfl.sync.idx.b32`, clamp 0x1f: the whole warp).
    shfl_idx, shfl_idx_f32, "idx", "0x1f"
);
shuffle!(
    /// `__shfl_up_sync`: the value of lane `lane - b` (`shfl.sync.up.b32`, clamp 0); lanes below
    /// `b` have no source.
    shfl_up, shfl_up_f32, "up", "0"
);
shuffle!(
    /// `__shfl_down_sync`: the value of lane `lane + b` (`shfl.sync.down.b32`, clamp 0x1f); lanes
    /// from `32 - b` on have no source.
    shfl_down, shfl_down_f32, "down", "0x1f"
);
shuffle!(
    /// `__shfl_xor_sync`: the value of lane `lane ^ b` (`shfl.sync.bfly.b32`, clamp 0x1f), the
    /// butterfly of all-reduce.
    shfl_xor, shfl_xor_f32, "bfly", "0x1f"
);

/// Sum of `value` over the whole warp, left in every lane (butterfly with [`shfl_xor_f32`]).
///
/// # Safety
/// All 32 lanes must call it together (see the module docs).
#[inline(always)]
pub unsafe fn reduce_sum_f32(value: f32) -> f32 {
    let mut v = value;
    let mut offset = crate::WARP_SIZE / 2;
    while offset > 0 {
        // SAFETY: full warp, per the caller.
        v += unsafe { shfl_xor_f32(FULL_MASK, v, offset) }.0;
        offset /= 2;
    }
    v
}
