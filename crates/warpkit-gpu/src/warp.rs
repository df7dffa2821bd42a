//! Warp vote and register shuffles (the `*.sync` forms, correct under Volta+ independent thread
//! scheduling).
//!
//! # Safety (all functions here)
//! `mask` names the lanes that take part. Every lane named in `mask` must execute the same call
//! (same instruction, same `mask`) before any of them proceeds, and the calling lane must be in
//! `mask`; otherwise the result is undefined. With [`FULL_MASK`] that means: no lane of the warp
//! may have exited or branched away, so launch whole warps and keep out-of-range threads alive
//! (inactive) instead of returning early.
#[cfg(target_arch = "nvptx64")]
use core::arch::asm;
use warpkit_macros::gpu_only;

/// All 32 lanes.
pub const FULL_MASK: u32 = 0xffff_ffff;

/// `__all_sync`: true when `pred` holds on every lane of `mask`. Emits `vote.sync.all.pred`.
///
/// # Safety
/// See the module docs.
#[gpu_only]
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
#[gpu_only]
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
#[gpu_only]
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
#[gpu_only]
#[inline(always)]
pub unsafe fn sync_warp(mask: u32) {
    // SAFETY: caller upholds convergence of `mask`.
    unsafe { asm!("bar.warp.sync {mask};", mask = in(reg32) mask, options(nostack)) }
}

/// `__activemask()`: the lanes executing this instruction now (`activemask.b32`). Only a hint:
/// it is no convergence guarantee.
#[gpu_only]
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
        #[gpu_only]
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

/// A value that warp shuffles move: 32-bit types in one `shfl.sync`, 64-bit types as two halves.
pub trait Shuffle: Copy {
    /// The 32-bit words of the value, low first (one or two).
    fn words(self) -> [u32; 2];
    /// The value back from its words.
    fn from_words(w: [u32; 2]) -> Self;
    /// 1 or 2: how many shuffles move it.
    const WORDS: usize;
}

macro_rules! shuffle_32 {
    ($($t:ty),*) => {$(
        impl Shuffle for $t {
            #[inline(always)]
            fn words(self) -> [u32; 2] {
                [self.to_bits(), 0]
            }
            #[inline(always)]
            fn from_words(w: [u32; 2]) -> Self {
                <$t>::from_bits(w[0])
            }
            const WORDS: usize = 1;
        }
    )*};
}
macro_rules! shuffle_64 {
    ($($t:ty),*) => {$(
        impl Shuffle for $t {
            #[inline(always)]
            fn words(self) -> [u32; 2] {
                let b = self.to_bits();
                [b as u32, (b >> 32) as u32]
            }
            #[inline(always)]
            fn from_words(w: [u32; 2]) -> Self {
                <$t>::from_bits((w[1] as u64) << 32 | w[0] as u64)
            }
            const WORDS: usize = 2;
        }
    )*};
}

trait Bits32 {
    fn to_bits(self) -> u32;
    fn from_bits(b: u32) -> Self;
}
trait Bits64 {
    fn to_bits(self) -> u64;
    fn from_bits(b: u64) -> Self;
}
macro_rules! int_bits {
    ($tr:ident, $u:ty: $($t:ty),*) => {$(
        impl $tr for $t {
            #[inline(always)]
            fn to_bits(self) -> $u {
                self as $u
            }
            #[inline(always)]
            fn from_bits(b: $u) -> Self {
                b as $t
            }
        }
    )*};
}
int_bits!(Bits32, u32: u32, i32);
int_bits!(Bits64, u64: u64, i64);
shuffle_32!(u32, i32, f32);
shuffle_64!(u64, i64, f64);

macro_rules! generic_shuffle {
    ($(#[$doc:meta])* $name:ident, $word:ident) => {
        $(#[$doc])*
        ///
        /// Generic over 32- and 64-bit values ([`Shuffle`]); returns the value only (an invalid
        /// source lane gives the caller's own value).
        ///
        /// # Safety
        /// See the module docs.
        #[inline(always)]
        pub unsafe fn $name<T: Shuffle>(mask: u32, value: T, b: u32) -> T {
            let w = value.words();
            // SAFETY: forwarded contract; both halves move with the same lanes.
            let lo = unsafe { $word(mask, w[0], b) }.0;
            let hi = if T::WORDS == 2 {
                // SAFETY: as above.
                unsafe { $word(mask, w[1], b) }.0
            } else {
                0
            };
            T::from_words([lo, hi])
        }
    };
}

generic_shuffle!(
    /// [`shfl_idx`] for any [`Shuffle`] value: lane `b`'s value.
    shuffle_idx, shfl_idx
);
generic_shuffle!(
    /// [`shfl_up`] for any [`Shuffle`] value: lane `lane - b`'s value.
    shuffle_up, shfl_up
);
generic_shuffle!(
    /// [`shfl_down`] for any [`Shuffle`] value: lane `lane + b`'s value.
    shuffle_down, shfl_down
);
generic_shuffle!(
    /// [`shfl_xor`] for any [`Shuffle`] value: lane `lane ^ b`'s value.
    shuffle_xor, shfl_xor
);

/// Inclusive prefix sum of `value` over the warp's lanes (lane `l` gets the sum of lanes
/// `0..=l`), five shuffles.
///
/// # Safety
/// The whole warp calls it together (see the module docs).
#[inline(always)]
pub unsafe fn inclusive_scan_u32(value: u32) -> u32 {
    let mut v = value;
    let mut d = 1;
    while d < 32 {
        // SAFETY: forwarded contract (all 32 lanes).
        let (y, ok) = unsafe { shfl_up(FULL_MASK, v, d) };
        if ok {
            v += y;
        }
        d *= 2;
    }
    v
}

/// `op` over the lanes of each aligned group of `width` lanes (a power of two ≤ 32), left in
/// every lane of the group: a butterfly of `log2(width)` [`shuffle_xor`]s. `op` must be
/// associative and commutative (sum, min, max, …); the result is the same in every lane.
///
/// # Safety
/// All 32 lanes must call it together with the same `width` (see the module docs).
#[inline(always)]
pub unsafe fn all_reduce_width<T: Shuffle>(value: T, width: u32, op: impl Fn(T, T) -> T) -> T {
    let mut v = value;
    let mut offset = width / 2;
    while offset > 0 {
        // SAFETY: full warp, per the caller.
        v = op(v, unsafe { shuffle_xor(FULL_MASK, v, offset) });
        offset /= 2;
    }
    v
}

/// `op` over the whole warp, left in every lane: [`all_reduce_width`] with width 32.
///
/// # Safety
/// All 32 lanes must call it together (see the module docs).
#[inline(always)]
pub unsafe fn all_reduce<T: Shuffle>(value: T, op: impl Fn(T, T) -> T) -> T {
    // SAFETY: forwarded.
    unsafe { all_reduce_width(value, crate::WARP_SIZE, op) }
}

/// Sum of `value` over the whole warp, left in every lane (butterfly with [`shfl_xor_f32`]).
///
/// # Safety
/// All 32 lanes must call it together (see the module docs).
#[inline(always)]
pub unsafe fn reduce_sum_f32(value: f32) -> f32 {
    // SAFETY: forwarded.
    unsafe { all_reduce(value, |a, b| a + b) }
}

/// `op` over a whole block, returned to thread 0 (other threads get their warp's partial):
/// each warp reduces with [`all_reduce`], lane 0 of each warp writes `scratch[warp]`, and warp 0
/// reduces those after a barrier.
///
/// # Safety
/// Every thread of the block calls it (it contains [`crate::thread::sync_threads`]); the block is
/// whole warps; `scratch` points to block-shared memory with one `T` per warp, not in use
/// elsewhere until the next barrier.
#[inline(always)]
pub unsafe fn block_reduce<T: Shuffle>(value: T, scratch: *mut T, op: impl Fn(T, T) -> T) -> T {
    use crate::thread::{block_dim_x, lane_id, sync_threads, warp_idx};
    // SAFETY: per the contract.
    unsafe {
        let v = all_reduce(value, &op);
        let warps = block_dim_x() / crate::WARP_SIZE;
        if lane_id() == 0 {
            *scratch.add(warp_idx() as usize) = v;
        }
        sync_threads();
        if warp_idx() == 0 {
            let mut acc = v;
            for w in 1..warps {
                acc = op(acc, *scratch.add(w as usize));
            }
            return acc;
        }
        v
    }
}
