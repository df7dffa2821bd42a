//! The smoothing-length iteration's kernels: the local-density guess, the walk radii, the
//! active groups and the ladder's update.

use super::*;

// ---------------------------------------------------------------------------------------------
// smoothing-length iteration
// ---------------------------------------------------------------------------------------------

/// Each particle's first smoothing length from the local density ([`guess_h`]) into `h`, and its
/// iteration state (`HState::start`) into `state`. The tree is built and summarized (`count`).
/// Any grid of `CELL_BLOCK`-thread blocks.
#[crate::kernel]
pub unsafe fn sph_h_guess(tree: TreeView, target: f32, h: *mut f32, state: *mut HState) {
    let TreeView {
        bodies,
        n,
        header,
        child,
        count,
        layout,
        ..
    } = tree;
    let t = DeviceCountTree {
        layout,
        child,
        count,
    };
    let mut i = index_1d();
    // SAFETY: i < n; the tree's arrays per bh_build and bh_summarize.
    unsafe {
        let (centre, half) = crate::bh::root_cell(&*header);
        while i < n {
            let p = (*bodies.add(i as usize)).pos();
            let g = guess_h(&t, layout.root(), n as i32, centre, half, p, target);
            *h.add(i as usize) = g;
            *state.add(i as usize) = HState::start(g);
            i += grid_size_1d();
        }
    }
}

/// Each particle's search radius for the next count pass of the h iteration:
/// `h[i] = walk_radius(state[i])`. Any grid of `CELL_BLOCK`-thread blocks.
#[crate::kernel]
pub unsafe fn sph_h_walk(state: *const HState, n: u32, h: *mut f32) {
    let mut i = index_1d();
    // SAFETY: i < n; both arrays hold n.
    unsafe {
        while i < n {
            *h.add(i as usize) = walk_radius(&*state.add(i as usize));
            i += grid_size_1d();
        }
    }
}

struct DeviceCountTree {
    layout: Layout,
    child: *const i32,
    count: *const u32,
}

// SAFETY (both reads): cells and slots of the built tree, per `sph_h_guess`' contract.
impl CountTree for DeviceCountTree {
    #[inline(always)]
    fn slot(&self, cell: i32, octant: u32) -> i32 {
        unsafe { *self.child.add(self.layout.slot(cell, octant)) }
    }
    #[inline(always)]
    fn count(&self, cell: i32) -> u32 {
        unsafe { *self.count.add(cell as usize) }
    }
}

/// The work of the h iteration's next group search: for each warp group `groups[w] = [first,
/// size]` (`w < ngroups`, members `sort[first..first + size]`, size ≤ 32), each walk `sph_group`
/// would make for its members still iterating (`state`; [`lane_walks`]: the group, or the lane
/// ranges `[a, a + w)` of its split) becomes a group of its own, `[first + a, min(w, size - a)]`,
/// written to `active_groups[*count]`, `*count` counted up (zero before the launch; the order is
/// the atomic's). `sph_group` given these walks each of them once, with the same served lanes,
/// box and largest h (a range's box is not too wide, or it is one lane), so it tests the same
/// pairs as given every group — without handing out the converged groups, and with a split
/// group's walks spread over warps instead of run one after another by one warp. `bodies`, `h`
/// hold the particles; `active_groups` holds n entries (walks serve disjoint, non-empty sets of
/// particles). One warp per group; any grid of `CELL_BLOCK`-thread blocks.
#[crate::kernel]
pub unsafe fn sph_active_groups(
    bodies: *const Body,
    h: *const f32,
    sort: *const u32,
    groups: *const [u32; 2],
    ngroups: u32,
    state: *const HState,
    active_groups: *mut [u32; 2],
    count: *mut u32,
) {
    let lane = lane_id();
    let warps = grid_size_1d() / crate::WARP_SIZE;
    let mut w = index_1d() / crate::WARP_SIZE;
    // SAFETY: w < ngroups; members index sort, sorted particles index bodies, h and state; `w`
    // is warp-uniform, so lane_walks has the whole warp.
    unsafe {
        while w < ngroups {
            let [first, size] = *groups.add(w as usize);
            let member = lane < size;
            let i = *sort.add((first + if member { lane } else { 0 }) as usize) as usize;
            let live = member && (*state.add(i)).iterating();
            if ballot(FULL_MASK, live) != 0 {
                let p = (*bodies.add(i)).pos();
                let hi = *h.add(i);
                lane_walks(p, hi, live, |_, a, wl, _, _, _| {
                    if lane == 0 {
                        let k = atomic_add_u32(count, 1);
                        *active_groups.add(k as usize) = [first + a, wl.min(size - a)];
                    }
                });
            }
            w += warps;
        }
    }
}

/// One step of [`update_h`] per particle still iterating, from `ladder` (its gather counts at
/// the rungs of its [`ladder`], `LADDER` per particle): updates `state`, sets `h` to the new
/// [`walk_radius`] and `counts` to the count at the new h when it converged (else at the
/// largest rung); adds the particles still iterating afterwards to `stats[0]` and their counts
/// at the largest rung to `stats[1]` (both zero before the launch). Any grid of
/// `CELL_BLOCK`-thread blocks.
#[crate::kernel]
pub unsafe fn sph_h_update(
    ladder: *const u32,
    n: u32,
    target: f32,
    tol: f32,
    state: *mut HState,
    h: *mut f32,
    counts: *mut u32,
    stats: *mut u64,
) {
    let lane = lane_id();
    // Whole warps step together (the reductions), so the loop runs over warp-aligned bases.
    let mut base = index_1d() - lane;
    let (mut still, mut found) = (0u64, 0u64);
    // SAFETY: i < n for every access; whole warps at the reductions.
    unsafe {
        while base < n {
            let i = (base + lane) as usize;
            if i < n as usize {
                let s0 = *state.add(i);
                if s0.iterating() {
                    let c: [u32; LADDER] = core::array::from_fn(|k| *ladder.add(i * LADDER + k));
                    let (s, at) = update_h(s0, &c, target, tol);
                    *state.add(i) = s;
                    *h.add(i) = walk_radius(&s);
                    *counts.add(i) = at;
                    still += s.iterating() as u64;
                    found += c[LADDER - 1] as u64;
                }
            }
            base += grid_size_1d();
        }
        let still = all_reduce(still, |a, b| a + b);
        let found = all_reduce(found, |a, b| a + b);
        if lane == 0 {
            if still > 0 {
                atomic_add_u64(stats, still);
            }
            if found > 0 {
                atomic_add_u64(stats.add(1), found);
            }
        }
    }
}
