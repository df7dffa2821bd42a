//! One walk of the warp-group search: cells popped a few a step, their children tested by
//! eight lanes each; candidates gathered into a list in shared memory that every lane tests
//! against its own target.

use super::*;
use crate::bh::EMPTY;
use crate::bh::kernels::pop_cells;
use crate::gpu::shared::{SharedScalar, ld_shared_v4, shared_addr};

/// What one child slot asks of the group walk.
const NOTHING: u32 = 0;
const LIST: u32 = 1;
const OPEN: u32 = 2;
const CHAIN: u32 = 3;
/// A reachable cell of at most [`SPH_BUCKET`] particles: its range in the tree order.
const RANGE: u32 = 4;

/// One walk of a group kernel's warp for the targets of lanes with `active` (box `[tlo, thi]`,
/// largest h `th`), every active lane feeding its sink and counting its tests. With
/// `few_filter`, the walk also asks that some served target's own sphere reach each cell and
/// candidate (their positions and h in `few`, the warp's share).
///
/// # Safety
/// As `group`: whole warp, its shares of the shared arrays, tree complete and boxed.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn walk<S: Sink>(
    bodies: *const Body,
    h: *const f32,
    n: u32,
    sort: *const u32,
    t: &Tree,
    crit: u32,
    stack: *mut i32,
    lpos: *mut Body,
    lh: *mut f32,
    li: *mut u32,
    few_filter: bool,
    few: *mut [f32; 4],
    p: [f32; 3],
    hi: f32,
    active: bool,
    tlo: [f32; 3],
    thi: [f32; 3],
    th: f32,
    s: &mut S,
    tested: &mut u64,
) {
    let ni = n as i32;
    let lane = lane_id();
    let below = lanemask_lt();
    // SAFETY: per the contract.
    unsafe {
        let mut kf = 0usize;
        if few_filter {
            let served = ballot(FULL_MASK, active);
            kf = served.count_ones() as usize;
            if active {
                *few.add((served & below).count_ones() as usize) = [p[0], p[1], p[2], hi];
            }
            sync_warp(FULL_MASK); // the served targets are visible to every lane
        }
        // Whether `reach(q, h)` holds for some one of the served targets (always, without
        // `few_filter`): each target's point box, so the test is exactly the pair's.
        let any_few = |reach: &dyn Fn([f32; 3], f32) -> bool| {
            if !few_filter {
                return true;
            }
            for l in 0..kf {
                let e = *few.add(l);
                if reach([e[0], e[1], e[2]], e[3]) {
                    return true;
                }
            }
            false
        };
        let mut len = 0usize;
        let flush = |len: &mut usize, s: &mut S, tested: &mut u64| {
            sync_warp(FULL_MASK); // entries written by other lanes are visible
            if active {
                // By shared-window address: a generic pointer carried through the loop compiles
                // to generic 64-bit loads.
                let (at, ah, ai) = (shared_addr(lpos), shared_addr(lh), shared_addr(li));
                let n = *len as u32;
                if crit == GATHER {
                    // Every entry offered (no branch on the lanes' tests); `lh` not read.
                    for e in 0..n {
                        let [x, y, z, m] = ld_shared_v4(at + 16 * e);
                        let r2 = dist2(p, [x, y, z]);
                        s.offer(f32::load(ai + 4 * e).to_bits(), r2, m, within(r2, hi));
                    }
                } else {
                    for e in 0..n {
                        let [x, y, z, m] = ld_shared_v4(at + 16 * e);
                        let r2 = dist2(p, [x, y, z]);
                        if is_neighbour(crit, r2, hi, f32::load(ah + 4 * e)) {
                            s.take(f32::load(ai + 4 * e).to_bits(), r2, m);
                        }
                    }
                }
                *tested += *len as u64;
            }
            sync_warp(FULL_MASK); // everyone has read before the list is refilled
            *len = 0;
        };
        if lane == 0 {
            *stack = t.layout.root();
        }
        let mut sp = 1usize;
        let (slot, octant) = ((lane / 8) as usize, lane % 8);
        while sp > 0 {
            let (np, cell) = pop_cells(stack, &mut sp, slot);
            let (mut what, mut ch, mut q, mut hj) = (NOTHING, EMPTY, Body::default(), 0.0);
            let (mut rs, mut rc) = (0u32, 0u32);
            if slot < np {
                ch = load(t.child.add(t.layout.slot(cell, octant)));
                if ch >= ni {
                    let cc = (ch - ni) as usize;
                    // Loaded before the box test decides, so the three loads overlap.
                    if !t.start.is_null() {
                        rc = load(t.count.add(cc));
                        rs = load(t.start.add(cc)) as u32;
                    }
                    let b = *t.boxes.add(cc);
                    if cell_reachable(crit, tlo, thi, th, &b)
                        && any_few(&|q, hq| cell_reachable(crit, q, q, hq, &b))
                    {
                        what = OPEN;
                        if !t.start.is_null() && rc <= SPH_BUCKET {
                            what = RANGE;
                        }
                    }
                    if what != RANGE {
                        rc = 0;
                    }
                } else if ch >= 0 {
                    if load(t.next.add(ch as usize)) >= 0 {
                        what = CHAIN;
                    } else {
                        q = load(bodies.add(ch as usize));
                        hj = *h.add(ch as usize);
                        if body_reachable(crit, tlo, thi, th, q.pos(), hj)
                            && any_few(&|x, hx| body_reachable(crit, x, x, hx, q.pos(), hj))
                        {
                            what = LIST;
                        }
                    }
                }
            }
            let take = ballot(FULL_MASK, what == LIST);
            if what == LIST {
                let at = len + (take & below).count_ones() as usize;
                *lpos.add(at) = q;
                *lh.add(at) = hj;
                *li.add(at) = ch as u32;
            }
            len += take.count_ones() as usize;
            let open = ballot(FULL_MASK, what == OPEN);
            if what == OPEN {
                *stack.add(sp + (open & below).count_ones() as usize) = ch - ni;
            }
            sp += open.count_ones() as usize;
            let mut chains = ballot(FULL_MASK, what == CHAIN);
            while chains != 0 {
                let src = chains.trailing_zeros();
                chains &= chains - 1;
                let mut j = shfl_idx(FULL_MASK, ch as u32, src).0 as i32;
                while j >= 0 {
                    if len == GROUP_LIST {
                        flush(&mut len, s, tested);
                    }
                    if lane == 0 {
                        *lpos.add(len) = load(bodies.add(j as usize));
                        *lh.add(len) = *h.add(j as usize);
                        *li.add(len) = j as u32;
                    }
                    len += 1;
                    j = load(t.next.add(j as usize));
                }
            }
            // The small cells' particles, 32 a round across the warp: lane `l` takes entry
            // `base + l` of the ranges laid end to end, found by a binary search over the lanes'
            // exclusive offsets (the last lane whose offset is at most the entry).
            let incl = inclusive_scan_u32(rc);
            let excl = incl - rc;
            let total = shfl_idx(FULL_MASK, incl, 31).0;
            let mut base = 0;
            while base < total {
                if len > GROUP_LIST - crate::WARP_SIZE as usize {
                    flush(&mut len, s, tested);
                }
                let e = base + lane;
                let mut at = 0u32;
                let mut step = crate::WARP_SIZE / 2;
                while step > 0 {
                    if shfl_idx(FULL_MASK, excl, at + step).0 <= e {
                        at += step;
                    }
                    step /= 2;
                }
                let k = shfl_idx(FULL_MASK, rs, at).0 + (e - shfl_idx(FULL_MASK, excl, at).0);
                let mut pick = false;
                let mut j = 0u32;
                if e < total {
                    j = load(sort.add(k as usize));
                    q = *t.sorted.add(k as usize);
                    // The gather test never reads the candidate's h.
                    hj = if crit == GATHER {
                        0.0
                    } else {
                        *h.add(j as usize)
                    };
                    pick = body_reachable(crit, tlo, thi, th, q.pos(), hj)
                        && any_few(&|x, hx| body_reachable(crit, x, x, hx, q.pos(), hj));
                }
                let take = ballot(FULL_MASK, pick);
                if pick {
                    let at = len + (take & below).count_ones() as usize;
                    *lpos.add(at) = q;
                    *lh.add(at) = hj;
                    *li.add(at) = j;
                }
                len += take.count_ones() as usize;
                base += crate::WARP_SIZE;
            }
            if len > GROUP_LIST - crate::WARP_SIZE as usize {
                flush(&mut len, s, tested);
            }
        }
        flush(&mut len, s, tested);
    }
}
