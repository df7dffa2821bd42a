//! Block-wide prefix sums and a stable least-significant-digit radix sort of `u64` keys with `u32`
//! values, for the sorted tree build (`crate::bh::morton`).
//!
//! One pass per 8-bit digit, three launches each, as in Merrill & Grimshaw's "upsweep, scan,
//! downsweep" (without their decoupled look-back):
//! 1. [`radix_histogram`]: each tile of [`RADIX_TILE`] keys counts its digits into
//!    `hist[digit * tiles + tile]` (digit-major: a digit's tiles are one row);
//! 2. [`radix_scan_rows`]: one block per digit turns its row into exclusive offsets and writes
//!    the digit's total (a single block scanning every row took 0.7 ms at 2^22 keys);
//! 3. [`radix_scatter`]: each tile ranks its keys stably (rounds of one key per thread; a key's
//!    rank among its warp's equal digits from eight ballots, then across the block's warps in
//!    shared memory), gathers them in digit order in shared memory, and writes each digit's run
//!    out contiguously (writing key by key, scattered over 256 digits, cost 0.23 ms a pass).
//!
//! Both tile kernels load all of a thread's keys (and values) before the first is used, the
//! rounds written out by a macro so that they stay in registers. Ranking each warp's own run of
//! consecutive keys instead (8 block barriers a tile instead of 40, 128 registers) measured no
//! faster (uniform 2^22 build 1.08 ms against 1.06).

use crate::gpu::atomic::*;
use crate::gpu::thread::*;
use crate::gpu::warp::*;

/// Threads per radix block.
pub const RADIX_BLOCK: u32 = 256;
/// Keys per thread per tile.
/// (12: the tile's keys and values, staged in shared memory, stay under the 48 KiB of static
/// shared memory a block may have.)
pub const RADIX_ITEMS: u32 = 12;
/// Keys per tile.
pub const RADIX_TILE: u32 = RADIX_BLOCK * RADIX_ITEMS;
/// Bits per pass.
pub const RADIX_BITS: u32 = 8;
/// Digit values per pass.
pub const RADIX_DIGITS: u32 = 1 << RADIX_BITS;
const RADIX_WARPS: usize = (RADIX_BLOCK / crate::WARP_SIZE) as usize;

/// Tiles for `n` keys (the histogram holds `RADIX_DIGITS * tiles` counts).
pub const fn radix_tiles(n: u32) -> u32 {
    n.div_ceil(RADIX_TILE)
}

/// The digit of `key` at bit `shift`.
#[inline(always)]
pub fn radix_digit(key: u64, shift: u32) -> u32 {
    ((key >> shift) as u32) & (RADIX_DIGITS - 1)
}

crate::static_shared!(scan_warps: [u32; 32]);

/// Inclusive prefix sum of `x` over the block's threads (in thread order) and the block's total.
/// The block size is a multiple of 32, at most 1024.
///
/// # Safety
/// Every thread of the block calls it together (it holds three barriers).
#[inline(always)]
pub unsafe fn block_scan(x: u32) -> (u32, u32) {
    let lane = lane_id();
    let warp = thread_idx_x() / crate::WARP_SIZE;
    let warps = block_dim_x() / crate::WARP_SIZE;
    let sh = scan_warps();
    // SAFETY: full warps and block-uniform barriers, per the contract; `sh` holds 32 entries.
    unsafe {
        let v = inclusive_scan_u32(x);
        if lane == crate::WARP_SIZE - 1 {
            *sh.add(warp as usize) = v;
        }
        sync_threads();
        if warp == 0 {
            let s = inclusive_scan_u32(if lane < warps {
                *sh.add(lane as usize)
            } else {
                0
            });
            *sh.add(lane as usize) = s;
        }
        sync_threads();
        let before = if warp > 0 {
            *sh.add(warp as usize - 1)
        } else {
            0
        };
        let total = *sh.add(warps as usize - 1);
        // The next call's writes must wait for every read above.
        sync_threads();
        (before + v, total)
    }
}

/// The lanes of this warp whose `digit` equals this lane's, among those with `valid` set: eight
/// ballots, one per bit. Every lane of the warp calls it together.
///
/// # Safety
/// All 32 lanes converged.
#[inline(always)]
unsafe fn warp_peers(digit: u32, valid: bool) -> u32 {
    // SAFETY: per the contract.
    unsafe {
        let mut peers = ballot(FULL_MASK, valid);
        for b in 0..RADIX_BITS {
            let set = (digit >> b) & 1 != 0;
            let votes = ballot(FULL_MASK, set);
            peers &= if set { votes } else { !votes };
        }
        peers
    }
}

crate::static_shared!(radix_counts: [u32; RADIX_DIGITS as usize]);

/// Step 1 of a pass: `hist[d * tiles + t]` = keys of tile `t` whose digit at `shift` is `d`.
/// Blocks of [`RADIX_BLOCK`] threads, any grid.
#[crate::kernel]
pub unsafe fn radix_histogram(keys: *const u64, n: u32, shift: u32, hist: *mut u32) {
    let t = thread_idx_x();
    let tiles = radix_tiles(n);
    let counts = radix_counts();
    let lt = lanemask_lt();
    let mut tile = block_idx_x();
    // SAFETY: indices below n and RADIX_DIGITS * tiles; the tile loop is block-uniform.
    unsafe {
        while tile < tiles {
            *counts.add(t as usize) = 0;
            let at = |r: u32| tile * RADIX_TILE + r * RADIX_BLOCK + t;
            // The tile's keys are all loaded before the first is counted: one round's load at a
            // time, each waited for, left the memory system mostly idle (with the scatter's
            // loads likewise, the sorted build at 2^22 took 1.06 ms instead of 1.23).
            macro_rules! count {
                ($($r:literal $k:ident),*) => {
                    $(let $k = load_key(keys, n, at($r));)*
                    sync_threads();
                    $({
                        let valid = at($r) < n;
                        let d = radix_digit($k, shift);
                        // One shared atomic per distinct digit in the warp: the tree's keys
                        // arrive nearly sorted, so most of a warp shares a digit.
                        let peers = warp_peers(d, valid);
                        if valid && peers & lt == 0 {
                            atomic_add_u32(counts.add(d as usize), peers.count_ones());
                        }
                    })*
                };
            }
            count!(0 k0, 1 k1, 2 k2, 3 k3, 4 k4, 5 k5, 6 k6, 7 k7, 8 k8, 9 k9, 10 k10, 11 k11);
            sync_threads();
            *hist.add((t * tiles + tile) as usize) = *counts.add(t as usize);
            sync_threads();
            tile += grid_dim_x();
        }
    }
}

/// Key `i` (0 past the end).
///
/// # Safety
/// `keys` holds `n` keys.
#[inline(always)]
unsafe fn load_key(keys: *const u64, n: u32, i: u32) -> u64 {
    // SAFETY: i < n where read.
    if i < n {
        unsafe { *keys.add(i as usize) }
    } else {
        0
    }
}

/// Step 2 of a pass: row `d` of `hist` (`tiles` counts; block `d`) becomes its exclusive prefix
/// sum and `digit_total[d]` its sum. [`RADIX_DIGITS`] blocks of [`RADIX_BLOCK`] threads.
#[crate::kernel]
pub unsafe fn radix_scan_rows(hist: *mut u32, tiles: u32, digit_total: *mut u32) {
    let t = thread_idx_x();
    let row = block_idx_x() * tiles;
    let mut carry = 0u32;
    let mut base = 0u32;
    // SAFETY: indices below RADIX_DIGITS * tiles; the loop is block-uniform.
    unsafe {
        while base < tiles {
            let i = base + t;
            let x = if i < tiles {
                *hist.add((row + i) as usize)
            } else {
                0
            };
            let (incl, sum) = block_scan(x);
            if i < tiles {
                *hist.add((row + i) as usize) = carry + incl - x;
            }
            carry += sum;
            base += block_dim_x();
        }
        if t == 0 {
            *digit_total.add(block_idx_x() as usize) = carry;
        }
    }
}

crate::static_shared!(radix_run: [u32; RADIX_DIGITS as usize]);
crate::static_shared!(radix_local: [u32; RADIX_DIGITS as usize]);
crate::static_shared!(radix_global: [u32; RADIX_DIGITS as usize]);
crate::static_shared!(radix_warp: [u32; RADIX_WARPS * RADIX_DIGITS as usize]);
crate::static_shared!(radix_keys: [u64; RADIX_TILE as usize]);
crate::static_shared!(radix_vals: [u32; RADIX_TILE as usize]);

/// One round of the scatter's ranking: each thread's key `k` (and value) to its place in the
/// tile's shared copy: the key's rank among its warp's equal digits, the counts of the earlier
/// warps of this round, and the digit's run so far (`run`, moved past this round).
///
/// # Safety
/// The whole block calls it together (three barriers); shared arrays as the scatter declares.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn rank_round(
    k: u64,
    v: u32,
    valid: bool,
    shift: u32,
    w: usize,
    run: *mut u32,
    per_warp: *mut u32,
    skeys: *mut u64,
    svals: *mut u32,
) {
    let t = thread_idx_x() as usize;
    let lane = lane_id() as usize;
    let digits = RADIX_DIGITS as usize;
    let d = radix_digit(k, shift) as usize;
    // SAFETY: per the contract.
    unsafe {
        // This warp's row of counts: cleared by its own lanes, then one write per digit.
        for c in 0..digits / 32 {
            *per_warp.add(w * digits + c * 32 + lane) = 0;
        }
        sync_warp(FULL_MASK);
        let peers = warp_peers(d as u32, valid);
        let rank = (peers & lanemask_lt()).count_ones();
        if valid && rank == 0 {
            *per_warp.add(w * digits + d) = peers.count_ones();
        }
        sync_threads();
        // The warps' counts become their offsets, and the run moves past this round.
        let mut acc = *run.add(t);
        for ww in 0..RADIX_WARPS {
            let c = *per_warp.add(ww * digits + t);
            *per_warp.add(ww * digits + t) = acc;
            acc += c;
        }
        *run.add(t) = acc;
        sync_threads();
        if valid {
            let at = (*per_warp.add(w * digits + d) + rank) as usize;
            *skeys.add(at) = k;
            *svals.add(at) = v;
        }
        sync_threads();
    }
}

/// Step 3 of a pass: tile `t`'s keys (and values) to their digit's place: the digit's offset over
/// all digits, plus its row offset `hist[d * tiles + t]` (scanned), plus the count of the tile's
/// earlier keys of digit `d`, so equal digits keep their order (stable). Blocks of
/// [`RADIX_BLOCK`] threads, any grid.
#[crate::kernel(launch_bounds(RADIX_BLOCK, 3))]
#[allow(clippy::too_many_arguments)]
pub unsafe fn radix_scatter(
    keys: *const u64,
    vals: *const u32,
    n: u32,
    shift: u32,
    hist: *const u32,
    digit_total: *const u32,
    keys_out: *mut u64,
    vals_out: *mut u32,
) {
    let t = thread_idx_x() as usize;
    let w = warp_idx() as usize;
    let tiles = radix_tiles(n);
    let (run, local, global) = (radix_run(), radix_local(), radix_global());
    let per_warp = radix_warp();
    let (skeys, svals) = (radix_keys(), radix_vals());
    // SAFETY: indices below n and RADIX_DIGITS * tiles; shared arrays as declared; the loops are
    // block-uniform, so every barrier is reached by the whole block.
    unsafe {
        // Thread t owns digit t: where the digit starts among all keys.
        let total = *digit_total.add(t);
        let (incl, _) = block_scan(total);
        let digit_base = incl - total;
        let mut tile = block_idx_x();
        while tile < tiles {
            // The tile's count of digit t from the scanned row, and where its run starts in the
            // tile (local) and in the output (global).
            let at = t * tiles as usize + tile as usize;
            let off = *hist.add(at);
            let next = if tile + 1 < tiles {
                *hist.add(at + 1)
            } else {
                total
            };
            let (incl, _) = block_scan(next - off);
            let start = incl - (next - off);
            *local.add(t) = start;
            *run.add(t) = start;
            *global.add(t) = digit_base + off;
            let at = |r: u32| tile * RADIX_TILE + r * RADIX_BLOCK + t as u32;
            // The twelve rounds written out, their keys and values loaded before the first is
            // ranked (one round's load at a time kept too few in flight).
            macro_rules! rounds {
                ($($r:literal $k:ident $v:ident),*) => {
                    $(let ($k, $v) = if at($r) < n {
                        (*keys.add(at($r) as usize), *vals.add(at($r) as usize))
                    } else {
                        (0, 0)
                    };)*
                    $(rank_round($k, $v, at($r) < n, shift, w, run, per_warp, skeys, svals);)*
                };
            }
            rounds!(
                0 k0 v0, 1 k1 v1, 2 k2 v2, 3 k3 v3, 4 k4 v4, 5 k5 v5,
                6 k6 v6, 7 k7 v7, 8 k8 v8, 9 k9 v9, 10 k10 v10, 11 k11 v11
            );
            // The tile in digit order: consecutive threads write consecutive places of a run.
            let count = n.min((tile + 1) * RADIX_TILE) - tile * RADIX_TILE;
            let mut j = t as u32;
            while j < count {
                let k = *skeys.add(j as usize);
                let d = radix_digit(k, shift) as usize;
                let to = (*global.add(d) + j - *local.add(d)) as usize;
                *keys_out.add(to) = k;
                *vals_out.add(to) = *svals.add(j as usize);
                j += RADIX_BLOCK;
            }
            sync_threads();
            tile += grid_dim_x();
        }
    }
}

// The histogram's and the scatter's thread t owns digit t.
const _: () = assert!(RADIX_BLOCK == RADIX_DIGITS);
