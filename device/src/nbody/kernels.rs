//! N-body kernels: the leapfrog's kick and drift, the gather that keeps the particle state in
//! tree order between steps, and the block-step loop's drift, kick and active-set gather. One
//! thread per particle, any grid of `NBODY_BLOCK`-thread blocks (the kernels stride). Forces come
//! from the Barnes–Hut kernels (`crate::bh`).

use super::{
    Timestep, block_kick, counter, drift, is_active, kick, next_tick, tick_span, timestep_level,
};
use crate::bh::{Accel, Body, TreeHeader};
use crate::gpu::atomic::{atomic_add_u32, atomic_max_u32, atomic_min_u32, load_relaxed_u32};
use crate::gpu::thread::{
    grid_size_1d, index_1d, lane_id, lanemask_lt, sync_threads, thread_idx_x,
};
use crate::gpu::warp::{FULL_MASK, ballot, shfl_idx};

/// `vel[i] += acc[i]·dt_kick`, then `x[i] += vel[i]·dt_drift` (either may be 0: a kick or a drift
/// alone), for `i < n`. A particle whose new position or velocity is not finite lowers
/// `*bad` to its index (start it at `u32::MAX`): the host stops the run there, naming it.
#[crate::kernel]
pub unsafe fn nbody_kick_drift(
    bodies: *mut Body,
    vel: *mut [f32; 3],
    acc: *const Accel,
    n: u32,
    dt_kick: f32,
    dt_drift: f32,
    bad: *mut u32,
) {
    let mut i = index_1d();
    while i < n {
        let k = i as usize;
        // SAFETY: i < n; the three arrays hold n entries.
        unsafe {
            let a = *acc.add(k);
            let mut v = *vel.add(k);
            kick(&mut v, [a.x, a.y, a.z], dt_kick);
            let b = &mut *bodies.add(k);
            let mut x = b.pos();
            drift(&mut x, v, dt_drift);
            [b.x, b.y, b.z] = x;
            *vel.add(k) = v;
            if !(x.iter().chain(&v).all(|c| c.is_finite())) {
                atomic_min_u32(bad, i);
            }
        }
        i += grid_size_1d();
    }
}

/// The state gathered into tree order: `*_out[j] = *_in[order[j]]` for `j < n` (`order` a
/// permutation of `0..n`, the tree sort's), so that the next step's traversal reads neighbours
/// from neighbouring memory. Particle ids travel along, and the block steps' levels when
/// `level_in` and `level_out` are not null. When `bad` is not null the gathered velocities are
/// kicked on the way, `v += a·dt_kick` (the leapfrog's closing kick, as [`nbody_kick_drift`]
/// with no drift, in the same gather instead of one more pass over the state), and a particle
/// whose position or new velocity is not finite lowers `*bad` to its new index `j`.
#[allow(clippy::too_many_arguments)]
#[crate::kernel]
pub unsafe fn nbody_permute(
    order: *const u32,
    n: u32,
    bodies_in: *const Body,
    bodies_out: *mut Body,
    vel_in: *const [f32; 3],
    vel_out: *mut [f32; 3],
    acc_in: *const Accel,
    acc_out: *mut Accel,
    ids_in: *const u64,
    ids_out: *mut u64,
    level_in: *const u32,
    level_out: *mut u32,
    dt_kick: f32,
    bad: *mut u32,
) {
    let levels = !level_in.is_null() && !level_out.is_null();
    let mut j = index_1d();
    while j < n {
        // SAFETY: j < n and order[j] < n (a permutation); every array holds n entries.
        unsafe {
            let i = *order.add(j as usize) as usize;
            let jj = j as usize;
            let b = *bodies_in.add(i);
            let a = *acc_in.add(i);
            let mut v = *vel_in.add(i);
            if !bad.is_null() {
                kick(&mut v, [a.x, a.y, a.z], dt_kick);
                if !(b.pos().iter().chain(&v).all(|c| c.is_finite())) {
                    atomic_min_u32(bad, j);
                }
            }
            *bodies_out.add(jj) = b;
            *vel_out.add(jj) = v;
            *acc_out.add(jj) = a;
            *ids_out.add(jj) = *ids_in.add(i);
            if levels {
                *level_out.add(jj) = *level_in.add(i);
            }
        }
        j += grid_size_1d();
    }
}

// ---------------------------------------------------------------------------------------------
// block time steps: drift to the next tick, kick the active particles, gather the active groups
// ---------------------------------------------------------------------------------------------

/// Drifts every particle from `tick` to the next tick of the block timeline of `step`:
/// `x += v·dt`, `dt` the span to [`next_tick`] of the deepest occupied level, which this kernel
/// reads from `counters[DEEPEST]` (the last `nbody_block_kick` wrote it) so the host need not read
/// it first. A non-finite position lowers `counters[BAD_DRIFT]` to its index. `counters` holds
/// [`counter::COUNTERS`] entries; the others, `n`.
#[crate::kernel]
pub unsafe fn nbody_block_drift(
    bodies: *mut Body,
    vel: *const [f32; 3],
    n: u32,
    tick: u64,
    step: Timestep,
    counters: *mut u32,
) {
    // SAFETY: counters holds COUNTERS entries; i < n below.
    unsafe {
        let deepest = *counters.add(counter::DEEPEST);
        let next = next_tick(tick, deepest, step.max_level);
        let dt = tick_span(next - tick, step.dt_max, step.max_level);
        let mut i = index_1d();
        while i < n {
            let b = &mut *bodies.add(i as usize);
            let mut x = b.pos();
            drift(&mut x, *vel.add(i as usize), dt);
            [b.x, b.y, b.z] = x;
            if !x.iter().all(|c| c.is_finite()) {
                atomic_min_u32(counters.add(counter::BAD_DRIFT), i);
            }
            i += grid_size_1d();
        }
    }
}

crate::static_shared!(level_tile: [u32; super::LEVEL_BINS]);

/// The block kick at `tick` ([`block_kick`]): each particle active there (`start != 0`: every
/// particle, opening its first step, its level unread) closes its step, takes its new level from
/// its acceleration ([`timestep_level`]) and opens the next step; the others keep velocity and
/// level. A non-finite velocity lowers `counters[BAD_KICK]` to its index. Every particle's
/// (new) level is counted into `counters[LEVELS + l]`, and the deepest occupied level into
/// `counters[DEEPEST]` (both zeroed before the launch): the next drift's span and the host's
/// statistics. Launch `NBODY_BLOCK`-thread blocks (at least `LEVEL_BINS` threads, whole warps).
#[allow(clippy::too_many_arguments)]
#[crate::kernel]
pub unsafe fn nbody_block_kick(
    vel: *mut [f32; 3],
    acc: *const Accel,
    level: *mut u32,
    n: u32,
    tick: u64,
    step: Timestep,
    start: u32,
    counters: *mut u32,
) {
    let tile = level_tile();
    let t = thread_idx_x() as usize;
    let lane = lane_id();
    // SAFETY: the tile holds LEVEL_BINS ≤ blockDim entries; i < n; counters holds COUNTERS. Every
    // thread reaches both barriers (the loop below is warp-uniform: it steps by whole warps).
    unsafe {
        if t < super::LEVEL_BINS {
            *tile.add(t) = 0;
        }
        sync_threads();
        let mut base = index_1d() - lane;
        while base < n {
            let i = base + lane;
            let valid = i < n;
            let mut l = 0;
            if valid {
                let k = i as usize;
                l = if start != 0 { 0 } else { *level.add(k) };
                if start != 0 || is_active(tick, l, step.max_level) {
                    let a = *acc.add(k);
                    let a = [a.x, a.y, a.z];
                    let mut v = *vel.add(k);
                    let wanted = timestep_level(&step, a);
                    let old = (start == 0).then_some(l);
                    l = block_kick(&mut v, a, old, wanted, tick, step.dt_max, step.max_level);
                    *vel.add(k) = v;
                    *level.add(k) = l;
                    if !v.iter().all(|c| c.is_finite()) {
                        atomic_min_u32(counters.add(counter::BAD_KICK), i);
                    }
                }
            }
            // The warp's levels counted one distinct level at a time (few per warp): one shared
            // atomic per level, not per lane.
            let mut todo = ballot(FULL_MASK, valid);
            while todo != 0 {
                let leader = todo.trailing_zeros();
                let lead = shfl_idx(FULL_MASK, l, leader).0;
                let peers = ballot(FULL_MASK, valid && l == lead);
                if lane == leader {
                    atomic_add_u32(tile.add(lead as usize), peers.count_ones());
                }
                todo &= !peers;
            }
            base += grid_size_1d();
        }
        sync_threads();
        if t < super::LEVEL_BINS {
            let c = *tile.add(t);
            if c > 0 {
                atomic_add_u32(counters.add(counter::LEVELS + t), c);
                // Read first: after the first blocks the deepest level is known and the atomic
                // (one address for the whole grid) is skipped.
                if load_relaxed_u32(counters.add(counter::DEEPEST)) < t as u32 {
                    atomic_max_u32(counters.add(counter::DEEPEST), t as u32);
                }
            }
        }
    }
}

/// The active particles' warp groups at `tick`: for each group `groups[w] = [first, size]` of the
/// tree sort (`w < header.groups`; members `sort[first..first + size]`, bodies in the current
/// order), its members active at `tick` (by `level`) are copied, in order, to consecutive entries
/// of `active_sort`, and a group of them (when there is any) to `active_groups`; the counts
/// accumulate in `counters[ACTIVE_BODIES]` and `counters[ACTIVE_GROUPS]` (zeroed before). A
/// subset of a group stays within the group's parent cell, so the group kernels walk it as they
/// walk the tree's groups (with `nbody_active_header` for the count). One warp per group; any
/// grid of whole warps. `sort` and `level` hold `n` entries, the outputs as many.
#[allow(clippy::too_many_arguments)]
#[crate::kernel]
pub unsafe fn nbody_active_groups(
    sort: *const u32,
    groups: *const [u32; 2],
    header: *const TreeHeader,
    level: *const u32,
    tick: u64,
    max_level: u32,
    active_sort: *mut u32,
    active_groups: *mut [u32; 2],
    counters: *mut u32,
) {
    let lane = lane_id();
    let below = lanemask_lt();
    let warps = grid_size_1d() / crate::WARP_SIZE;
    // SAFETY: header complete (after bh_sort); group members index sort, bodies index level; the
    // loops are warp-uniform (w, size and the ballots are the same on every lane).
    unsafe {
        let ngroups = (*header).groups;
        let mut w = index_1d() / crate::WARP_SIZE;
        while w < ngroups {
            let [first, size] = *groups.add(w as usize);
            let member_active = |m: u32| {
                m < size && {
                    let b = *sort.add((first + m) as usize);
                    is_active(tick, *level.add(b as usize), max_level)
                }
            };
            // Count, reserve room once, then write (the flags are read twice: cheaper than a
            // group-sized array of ballots in registers).
            let mut total = 0;
            let mut m = 0;
            while m < size {
                total += ballot(FULL_MASK, member_active(m + lane)).count_ones();
                m += crate::WARP_SIZE;
            }
            if total > 0 {
                let base = if lane == 0 {
                    atomic_add_u32(counters.add(counter::ACTIVE_BODIES), total)
                } else {
                    0
                };
                let base = shfl_idx(FULL_MASK, base, 0).0;
                let mut done = 0;
                let mut m = 0;
                while m < size {
                    let on = member_active(m + lane);
                    let bits = ballot(FULL_MASK, on);
                    if on {
                        let slot = base + done + (bits & below).count_ones();
                        *active_sort.add(slot as usize) = *sort.add((first + m + lane) as usize);
                    }
                    done += bits.count_ones();
                    m += crate::WARP_SIZE;
                }
                if lane == 0 {
                    let g = atomic_add_u32(counters.add(counter::ACTIVE_GROUPS), 1);
                    *active_groups.add(g as usize) = [base, total];
                }
            }
            w += warps;
        }
    }
}

/// The header the group kernels read for the active groups: the tree's `header` (root cell) with
/// `groups = counters[ACTIVE_GROUPS]` and the work counter and statistics at zero. One thread.
#[crate::kernel]
pub unsafe fn nbody_active_header(
    header: *const TreeHeader,
    counters: *const u32,
    active: *mut TreeHeader,
) {
    if index_1d() == 0 {
        // SAFETY: one header each; counters holds COUNTERS entries.
        unsafe {
            let mut h = *header;
            h.groups = *counters.add(counter::ACTIVE_GROUPS);
            h.next_group = 0;
            h.interactions = 0;
            h.opened = 0;
            *active = h;
        }
    }
}
