//! The seed-style search: one walk of the octree per warp, a cell opened when any lane's target
//! can reach it (a warp vote). [`vote_walk`] is the walk, generic over its targets
//! ([`VoteTargets`]) so that the force pass ([`super::hydro`]) walks it too; [`sph_vote`] is the
//! neighbour search over it.

use super::*;
use crate::bh::MAX_DEPTH;

const STACK: usize = MAX_DEPTH + 1;
const VOTE_WARPS: usize = (VOTE_BLOCK / crate::WARP_SIZE) as usize;
crate::static_shared!(sph_vote_stack: [i32; VOTE_WARPS * STACK]);

/// What a vote walk ([`vote_walk`]) does for its lanes: which particles it serves, and a
/// [`Sink`] per served particle, started before its walk and finished after.
pub(crate) trait VoteTargets {
    type S: Sink;
    /// # Safety
    /// `i` is a particle.
    unsafe fn serves(&self, i: u32) -> bool;
    /// # Safety
    /// `i` is a served particle with smoothing length `hi`.
    unsafe fn start(&self, i: u32, hi: f32) -> Self::S;
    /// # Safety
    /// As `start`, for the same `i`.
    unsafe fn finish(&self, s: Self::S, i: u32);
    /// Where the warp's count of pairs tested goes (null: nowhere).
    fn tested(&self) -> *mut u64;
}

/// A search mode's [`LaneSink`] over the [`Outputs`].
struct ByMode<'a, S>(&'a Outputs, core::marker::PhantomData<S>);

impl<S: LaneSink> VoteTargets for ByMode<'_, S> {
    type S = S;
    #[inline(always)]
    unsafe fn serves(&self, i: u32) -> bool {
        // SAFETY: per the contract.
        unsafe { serves(self.0.state, i) }
    }
    #[inline(always)]
    unsafe fn start(&self, i: u32, hi: f32) -> S {
        // SAFETY: per the contract.
        unsafe { S::start(self.0, i, hi) }
    }
    #[inline(always)]
    unsafe fn finish(&self, s: S, i: u32) {
        // SAFETY: per the contract.
        unsafe { s.finish(self.0, i) }
    }
    #[inline(always)]
    fn tested(&self) -> *mut u64 {
        self.0.tested
    }
}

/// Neighbours by the seed's traversal: lane k of the grid serves particle `sort[k]` (tree order),
/// the warp walks the tree once and opens a cell when any lane can reach it
/// ([`cell_reachable`], `vote.any`); particles of leaves and buckets are tested by each lane
/// ([`is_neighbour`]). Outputs per `mode` (module docs). `VOTE_BLOCK`-thread blocks, any grid.
#[crate::kernel]
pub unsafe fn sph_vote(
    tree: TreeView,
    h: *const f32,
    boxes: *const CellBox,
    crit: u32,
    mode: u32,
    o: Outputs,
) {
    let TreeView {
        bodies,
        n,
        sort,
        child,
        next,
        layout,
        ..
    } = tree;
    // SAFETY: forwarded contract.
    unsafe {
        by_mode!(
            mode,
            vote(bodies, h, n, sort, child, next, boxes, layout, crit, &o)
        )
    }
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn vote<S: LaneSink>(
    bodies: *const Body,
    h: *const f32,
    n: u32,
    sort: *const u32,
    child: *const i32,
    next: *const i32,
    boxes: *const CellBox,
    layout: Layout,
    crit: u32,
    o: &Outputs,
) {
    let t = ByMode::<S>(o, core::marker::PhantomData);
    // SAFETY: forwarded contract.
    unsafe {
        vote_walk(
            bodies, h, n, sort, child, next, boxes, layout, crit, None, &t,
        )
    }
}

/// The seed's walk for the targets `t`: lane k of the grid serves particle `sort[k]`, one walk
/// per warp, a cell opened when any served lane can reach it under `crit`; every particle of a
/// reached leaf or bucket offered to the lane's sink ([`Sink::take`] for neighbours). With
/// `period`, distances are to the nearest image in the periodic box of those sides (every
/// particle inside it); callers pass a constant, so each form compiles to its own walk.
/// `VOTE_BLOCK`-thread blocks.
///
/// # Safety
/// The tree is complete and boxed (`boxes` per `h`), `sort` a permutation of `0..n`; `t` valid
/// for every particle.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn vote_walk<T: VoteTargets>(
    bodies: *const Body,
    h: *const f32,
    n: u32,
    sort: *const u32,
    child: *const i32,
    next: *const i32,
    boxes: *const CellBox,
    layout: Layout,
    crit: u32,
    period: Option<[f32; 3]>,
    t: &T,
) {
    let ni = n as i32;
    let lane = lane_id();
    let stack = sph_vote_stack();
    let base = warp_idx() as usize * STACK;
    let warps_total = grid_size_1d() / crate::WARP_SIZE;
    let mut w = index_1d() / crate::WARP_SIZE;
    // SAFETY: tree complete and boxed; the stack holds a walk of at most MAX_DEPTH levels; whole
    // warps throughout (lanes past n stand on the warp's first particle and vote false).
    unsafe {
        let mut tested = 0u64;
        while w * crate::WARP_SIZE < n {
            let k = w * crate::WARP_SIZE + lane;
            let i = *sort.add(if k < n { k } else { w * crate::WARP_SIZE } as usize);
            let active = k < n && t.serves(i);
            if ballot(FULL_MASK, active) == 0 {
                w += warps_total;
                continue;
            }
            let p = (*bodies.add(i as usize)).pos();
            let hi = *h.add(i as usize);
            let mut s = t.start(i, hi);
            let (mut cell, mut oct, mut depth) = (layout.root(), 0u32, 0usize);
            loop {
                if oct == 8 {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                    sync_warp(FULL_MASK); // lane 0's push is visible
                    let e = *stack.add(base + depth);
                    cell = e >> 4;
                    oct = (e & 15) as u32;
                    continue;
                }
                let ch = *child.add(layout.slot(cell, oct));
                oct += 1;
                if ch >= ni {
                    let b = *boxes.add((ch - ni) as usize);
                    let reach = active
                        && match period {
                            None => cell_reachable(crit, p, p, hi, &b),
                            Some(l) => cell_reachable_periodic(crit, p, hi, &b, l),
                        };
                    if vote_any(FULL_MASK, reach) {
                        sync_warp(FULL_MASK); // all lanes read the slot lane 0 overwrites
                        if lane == 0 {
                            *stack.add(base + depth) = cell * 16 + oct as i32;
                        }
                        depth += 1;
                        cell = ch - ni;
                        oct = 0;
                    }
                } else {
                    let mut j = ch;
                    while j >= 0 {
                        if active {
                            let q = *bodies.add(j as usize);
                            let r2 = match period {
                                None => dist2(p, q.pos()),
                                Some(l) => dist2_periodic(p, q.pos(), l),
                            };
                            if is_neighbour(crit, r2, hi, *h.add(j as usize)) {
                                s.take(j as u32, r2, q.m);
                            }
                            tested += 1;
                        }
                        j = *next.add(j as usize);
                    }
                }
            }
            if active {
                t.finish(s, i);
            }
            w += warps_total;
        }
        add_tested(t.tested(), tested);
    }
}
