//! Self-test kernels. Each is thin: compute an index, keep out-of-range lanes alive but inactive
//! for the warp-wide operations, call the formulas of the parent module.

use super::{BLOCK, INDEX_FIELDS, WarpReduction, math_probe, passes, slot, value};
use crate::gpu::atomic::*;
use crate::gpu::fence::fence_device;
use crate::gpu::thread::*;
use crate::gpu::warp::*;

// ---------------------------------------------------------------------------------------------
// warp reduction: vote + shuffle + atomics
// ---------------------------------------------------------------------------------------------

/// Reduces `x[0..n]` into `*out` (see [`WarpReduction`]); `*out` must start as
/// `{0, -inf, 0, 0}`. Launch whole warps (any grid size covering n).
#[crate::kernel]
pub unsafe fn selftest_warp_reduce(x: *const f32, n: u32, out: *mut WarpReduction) {
    let i = index_1d();
    let active = i < n;
    // SAFETY: i < n is in bounds; inactive lanes read nothing.
    let xi = if active {
        unsafe { *x.add(i as usize) }
    } else {
        0.0
    };
    let v = if active { value(xi) } else { 0.0 };

    // Whole-warp collectives: every lane runs them, inactive ones contribute neutral values.
    let mut sum = v;
    let mut max = if active { v } else { f32::NEG_INFINITY };
    let mut offset = 16;
    while offset > 0 {
        // SAFETY: all 32 lanes are here (no early return above).
        unsafe {
            sum += shfl_down_f32(FULL_MASK, sum, offset).0;
            max = max.max(shfl_xor_f32(FULL_MASK, max, offset).0);
        }
        offset /= 2;
    }
    // SAFETY: as above.
    let (passing, all_passing, any_active) = unsafe {
        (
            ballot(FULL_MASK, active && passes(xi)),
            vote_all(FULL_MASK, !active || passes(xi)),
            vote_any(FULL_MASK, active),
        )
    };

    // One atomic per warp and field: lane 0 holds the shuffle-down sum.
    if lane_id() == 0 && any_active {
        // SAFETY: `out` is one valid WarpReduction.
        unsafe {
            atomic_add_f32(&raw mut (*out).sum, sum);
            atomic_max_f32(&raw mut (*out).max, max);
            atomic_add_u32(&raw mut (*out).passing, passing.count_ones());
            if all_passing {
                atomic_add_u32(&raw mut (*out).all_passing_warps, 1);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// block reduction: static shared memory + barriers + fence + "last block" atomics
// ---------------------------------------------------------------------------------------------

crate::static_shared!(block_tile: [f32; BLOCK as usize]);
crate::static_shared!(block_is_last: [u32; 1]);

/// Sums `value(x[i])` per block into `partials[blockIdx]`, then the last block to finish adds the
/// partials in index order into `*total` (deterministic for a given grid). `*done` must start at 0.
/// Launch with `BLOCK` threads per block.
#[crate::kernel]
pub unsafe fn selftest_block_sum(
    x: *const f32,
    n: u32,
    partials: *mut f32,
    done: *mut u32,
    total: *mut f32,
) {
    let t = thread_idx_x() as usize;
    let i = index_1d();
    let tile = block_tile();
    // SAFETY: t < BLOCK indexes the tile; i < n indexes x.
    unsafe {
        *tile.add(t) = if i < n {
            value(*x.add(i as usize))
        } else {
            0.0
        };
        sync_threads();
        let mut width = BLOCK as usize / 2;
        while width > 0 {
            if t < width {
                *tile.add(t) += *tile.add(t + width);
            }
            sync_threads();
            width /= 2;
        }
        if t == 0 {
            *partials.add(block_idx_x() as usize) = *tile;
            // The partial must be visible GPU-wide before the counter says it is there.
            fence_device();
            let finished = atomic_add_u32(done, 1);
            *block_is_last() = (finished == grid_dim_x() - 1) as u32;
        }
        sync_threads();
        if *block_is_last() != 0 && t == 0 {
            let mut s = 0.0f32;
            for b in 0..grid_dim_x() as usize {
                // Volatile: the partials were written by other blocks during this launch.
                s += core::ptr::read_volatile(partials.add(b));
            }
            *total = s;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// probes: one kernel per intrinsic family, compared element by element with the host
// ---------------------------------------------------------------------------------------------

/// Writes the index registers of thread `i < n` to `out[6i..6i+6]`.
#[crate::kernel]
pub unsafe fn probe_indices(out: *mut u32, n: u32) {
    let i = index_1d();
    if i < n {
        let vals = [
            thread_idx_x(),
            block_idx_x(),
            block_dim_x(),
            grid_dim_x(),
            lane_id(),
            warp_idx(),
        ];
        for (k, v) in vals.iter().enumerate() {
            // SAFETY: out has 6n elements.
            unsafe { *out.add(i as usize * INDEX_FIELDS + k) = *v };
        }
    }
}

/// For thread `i`: `out[3i] = all(pred)`, `out[3i+1] = any(pred)`, `out[3i+2] = ballot(pred)`
/// over its warp, with `pred = pred_in[i] != 0`. n must be a multiple of 32.
#[crate::kernel]
pub unsafe fn probe_vote(pred_in: *const u32, out: *mut u32, n: u32) {
    let i = index_1d();
    if i >= n {
        return; // whole warps only: n % 32 == 0, so no warp is split here
    }
    // SAFETY: i < n; the whole warp is present.
    unsafe {
        let p = *pred_in.add(i as usize) != 0;
        let o = out.add(3 * i as usize);
        *o = vote_all(FULL_MASK, p) as u32;
        *o.add(1) = vote_any(FULL_MASK, p) as u32;
        *o.add(2) = ballot(FULL_MASK, p);
    }
}

/// For thread `i`, with `v = x[i]`: `out[8i..8i+8]` holds (value, valid) of `shfl_idx(v, (lane *
/// 7 + delta) % 32)`, `shfl_up(v, delta)`, `shfl_down(v, delta)`, `shfl_xor(v, delta)`. n must be a
/// multiple of 32.
#[crate::kernel]
pub unsafe fn probe_shuffle(x: *const u32, delta: u32, out: *mut u32, n: u32) {
    let i = index_1d();
    if i >= n {
        return;
    }
    // SAFETY: i < n; whole warps.
    unsafe {
        let v = *x.add(i as usize);
        let src = (lane_id() * 7 + delta) % 32;
        let r = [
            shfl_idx(FULL_MASK, v, src),
            shfl_up(FULL_MASK, v, delta),
            shfl_down(FULL_MASK, v, delta),
            shfl_xor(FULL_MASK, v, delta),
        ];
        let o = out.add(8 * i as usize);
        for (k, (val, ok)) in r.iter().enumerate() {
            *o.add(2 * k) = *val;
            *o.add(2 * k + 1) = *ok as u32;
        }
    }
}

/// Every thread `i < n` hits the counters of [`slot`] once, adds 0.5 to `*fsum`, and records the
/// old value of its exchange in `exch_old[i]` and its CAS ticket in `tickets[i]`.
#[crate::kernel]
pub unsafe fn probe_atomics(
    counters: *mut u32,
    fsum: *mut f32,
    exch_old: *mut u32,
    tickets: *mut u32,
    n: u32,
) {
    let i = index_1d();
    if i >= n {
        return;
    }
    let key = super::atomic_key(i);
    // SAFETY: counters has slot::COUNT elements, the others n.
    unsafe {
        atomic_add_u32(counters.add(slot::ADD_U32), 1);
        atomic_add_i32(counters.add(slot::ADD_I32).cast(), (i % 7) as i32 - 3);
        atomic_min_i32(counters.add(slot::MIN_I32).cast(), key);
        atomic_max_i32(counters.add(slot::MAX_I32).cast(), key);
        atomic_min_u32(counters.add(slot::MIN_U32), key as u32);
        atomic_max_u32(counters.add(slot::MAX_U32), key as u32);
        *exch_old.add(i as usize) = atomic_exch_u32(counters.add(slot::EXCH), i);
        atomic_add_f32(fsum, 0.5);
        // A CAS loop that never spins on another lane's progress: each retry re-reads the value
        // the failed CAS returned, so some lane always succeeds (no intra-warp deadlock).
        let ticket = counters.add(slot::CAS_TICKET);
        let mut seen = core::ptr::read_volatile(ticket);
        loop {
            let found = atomic_cas_u32(ticket, seen, seen + 1);
            if found == seen {
                break;
            }
            seen = found;
        }
        *tickets.add(i as usize) = seen;
    }
}

/// `out[4i..4i+4] = math_probe(x[i])`.
#[crate::kernel]
pub unsafe fn probe_math(x: *const f32, out: *mut f32, n: u32) {
    let i = index_1d() as usize;
    if i < n as usize {
        // SAFETY: i < n.
        unsafe {
            let r = math_probe(*x.add(i));
            for (k, v) in r.iter().enumerate() {
                *out.add(4 * i + k) = *v;
            }
        }
    }
}

/// `out[i] = TRAP_TABLE[index[i]]`: an index ≥ 4 fails Rust's bounds check, and the device panic
/// handler traps. Exists to prove that the host reports such a kernel by name.
#[crate::kernel]
pub unsafe fn probe_trap(index: *const u32, out: *mut u32, n: u32) {
    let i = index_1d() as usize;
    if i < n as usize {
        // SAFETY: i < n.
        unsafe { *out.add(i) = super::TRAP_TABLE[*index.add(i) as usize] };
    }
}
