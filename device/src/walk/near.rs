//! The walk with a near field: one traversal that answers a far-field interaction (gravity) and a
//! near-field one (SPH neighbours) together, GASPHiA's merged vote in the group form.
//!
//! Beside the far test `far(summary, depth)` of [`super::walk_warp`], a cell carries a near test
//! `reach(cell)` (can it hold a neighbour of some target of the group?) and a body
//! `reach_body(body)`. A child slot is decided once for both fields:
//! - a cell that is not far is opened (as in the far-only walk);
//! - a far cell is listed whole for the far field, and, when it is reachable, opened too, for the
//!   near field only: its subtree is walked *near-only* (its cells opened when reachable, its
//!   bodies listed for the near field only), since the far field has it already;
//! - a body is listed for the far field (outside near-only subtrees) and, when reachable, for
//!   the near field; a bucket chain's bodies likewise, one by one.
//!
//! So the far list is exactly the far-only walk's, and the near list holds exactly the
//! reachable bodies of the near-only (neighbour) walk; in the CPU twin ([`walk_lists_near`]) both
//! come in the same order as the separate walks' (cells a walk does not need are pushed beside
//! the others and add no entry to its list), so the combined sums equal the separate ones bit for
//! bit there. The GPU form ([`walk_warp_near`]) keeps two lists in shared memory, each summed by
//! all lanes (its own interaction) when it fills.

use super::{GROUP_LIST, Interaction, ListExtra, Octree, Shares, extra_of};
use crate::bh::Body;

/// The depth field of a stack entry that marks a near-only subtree (cell depths are at most
/// `MAX_DEPTH` < 31; a near-only walk needs no depth).
pub const NEAR_ONLY: u32 = 31;
const _: () = assert!(crate::bh::MAX_DEPTH < NEAR_ONLY as usize);

/// What a walk with a near field did, for the kernels' statistics.
#[derive(Clone, Copy, Debug, Default)]
pub struct NearStats {
    /// Far-field sources listed (each summed by every target).
    pub listed: u64,
    /// Near-field candidates listed.
    pub near: u64,
    /// Cells popped (opened).
    pub popped: u64,
}

/// Where a walk starts: both fields, or one of them alone (the same code as the separate walks,
/// for comparisons).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fields {
    Both,
    /// The far field alone: nothing is reachable.
    Far,
    /// The near field alone: the root is walked near-only.
    Near,
}

/// The two lists of a group's walk in the CPU twin's order (see the module docs): far sources
/// with their extras, and near candidates.
#[cfg(not(target_arch = "nvptx64"))]
#[allow(clippy::type_complexity)]
pub fn walk_lists_near<T: Octree, I: Interaction>(
    tree: &T,
    inter: &I,
    fields: Fields,
    far: impl Fn(&Body, usize) -> bool,
    reach: impl Fn(i32) -> bool,
    reach_body: impl Fn(&Body) -> bool,
) -> (std::vec::Vec<(Body, I::Extra)>, std::vec::Vec<Body>) {
    use std::vec::Vec;
    let n = tree.n();
    let near_on = fields != Fields::Far;
    let reach = |c: i32| near_on && reach(c);
    let reach_body = |b: &Body| near_on && reach_body(b);
    let (mut list, mut near) = (Vec::new(), Vec::new());
    let root_code = if fields == Fields::Near { NEAR_ONLY } else { 0 };
    let mut stack = Vec::from([(tree.root(), root_code)]);
    while let Some((cell, code)) = stack.pop() {
        let near_only = code == NEAR_ONLY;
        for o in 0..8 {
            let ch = tree.child(cell, o);
            if ch >= n {
                let c = ch - n;
                if near_only {
                    if reach(c) {
                        stack.push((c, NEAR_ONLY));
                    }
                } else if far(&tree.cell(c), code as usize + 1) {
                    list.push((tree.cell(c), inter.cell_extra(c)));
                    if reach(c) {
                        stack.push((c, NEAR_ONLY));
                    }
                } else {
                    stack.push((c, code + 1));
                }
            } else {
                let mut b = ch;
                while b >= 0 {
                    let s = tree.body(b);
                    if !near_only {
                        list.push((s, inter.body_extra(b)));
                    }
                    if reach_body(&s) {
                        near.push(s);
                    }
                    b = tree.next(b);
                }
            }
        }
    }
    (list, near)
}

/// The GPU walk of one warp group with a near field (see the module docs): [`super::walk_warp`]'s
/// stack, steps and far list (`list`, `extras`: [`GROUP_LIST`] entries each, summed by `inter`
/// into `target`), and a near list (`near_list`, [`GROUP_LIST`] bodies, summed by `near` into
/// `near_target`). `reach(c)` is asked of far cells only, `reach_body` of bodies; both must be
/// the same on every lane (tests against the group). Both lists are shared per `shares`.
///
/// # Safety
/// As [`super::walk_warp`]; `near_list` is the warp's own too.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn walk_warp_near<T: Octree, I: Interaction, N: Interaction<Extra = ()>>(
    tree: &T,
    inter: &I,
    near: &N,
    fields: Fields,
    far: impl Fn(&Body, usize) -> bool,
    reach: impl Fn(i32) -> bool,
    reach_body: impl Fn(&Body) -> bool,
    stack: *mut i32,
    list: *mut Body,
    extras: *mut I::Extra,
    near_list: *mut Body,
    shares: Shares,
    target: &mut I::Target,
    near_target: &mut N::Target,
) -> NearStats {
    use super::{WalkStats, flush_list};
    use crate::bh::kernels::pop_cells;
    use crate::gpu::thread::{lane_id, lanemask_lt};
    use crate::gpu::warp::{FULL_MASK, ballot, shfl_idx};
    const {
        assert!(core::mem::size_of::<I::Extra>() == 16 * I::Extra::V4 as usize);
        assert!(I::Extra::V4 == 0 || core::mem::align_of::<I::Extra>() >= 4);
    }
    let n = tree.n();
    let lane = lane_id();
    let below = lanemask_lt();
    let near_on = fields != Fields::Far;
    let reach = |c: i32| near_on && reach(c);
    let reach_body = |b: &Body| near_on && reach_body(b);
    let (mut fs, mut ns) = (WalkStats::default(), WalkStats::default());
    let mut popped = 0u32;
    // SAFETY: per the contract.
    unsafe {
        let (mut len, mut nlen) = (0usize, 0usize);
        let none = core::ptr::NonNull::<()>::dangling().as_ptr();
        macro_rules! flush_far {
            () => {
                flush_list(inter, list, extras, &mut len, shares, target, &mut fs)
            };
        }
        macro_rules! flush_near {
            () => {
                flush_list(
                    near,
                    near_list,
                    none,
                    &mut nlen,
                    shares,
                    near_target,
                    &mut ns,
                )
            };
        }
        // Stack entries: cell * 32 + depth, or + NEAR_ONLY.
        if lane == 0 {
            let code = if fields == Fields::Near { NEAR_ONLY } else { 0 };
            *stack = tree.root() * 32 + code as i32;
        }
        let mut sp = 1usize;
        let (slot, octant) = ((lane / 8) as usize, lane % 8);
        while sp > 0 {
            let (np, e) = pop_cells(stack, &mut sp, slot);
            popped += np as u32;
            let (cell, code) = (e >> 5, (e & 31) as u32);
            let near_only = code == NEAR_ONLY;
            // The slot's decision, spelled out as in `walk_warp`: listed far, listed near,
            // pushed (with its code), or a bucket chain.
            let (mut to_far, mut to_near, mut push, mut chain) = (false, false, false, false);
            let (mut ch, mut s, mut push_code) = (crate::bh::EMPTY, Body::default(), NEAR_ONLY);
            if slot < np {
                ch = tree.child(cell, octant);
                if ch >= n {
                    if near_only {
                        push = reach(ch - n);
                    } else {
                        s = tree.cell(ch - n);
                        if far(&s, code as usize + 1) {
                            to_far = true;
                            push = reach(ch - n);
                        } else {
                            push = true;
                            push_code = code + 1;
                        }
                    }
                } else if ch >= 0 {
                    s = tree.body(ch);
                    if tree.next(ch) >= 0 {
                        chain = true;
                    } else {
                        to_far = !near_only;
                        to_near = reach_body(&s);
                    }
                }
            }
            let take = ballot(FULL_MASK, to_far);
            if to_far {
                let at = len + (take & below).count_ones() as usize;
                *list.add(at) = s;
                if I::Extra::V4 > 0 {
                    *extras.add(at) = extra_of(tree, inter, ch);
                }
            }
            len += take.count_ones() as usize;
            let take = ballot(FULL_MASK, to_near);
            if to_near {
                *near_list.add(nlen + (take & below).count_ones() as usize) = s;
            }
            nlen += take.count_ones() as usize;
            let open = ballot(FULL_MASK, push);
            if push {
                *stack.add(sp + (open & below).count_ones() as usize) =
                    (ch - n) * 32 + push_code as i32;
            }
            sp += open.count_ones() as usize;
            let mut chains = ballot(FULL_MASK, chain);
            while chains != 0 {
                let src = chains.trailing_zeros();
                chains &= chains - 1;
                let mut b = shfl_idx(FULL_MASK, ch as u32, src).0 as i32;
                let far_too = shfl_idx(FULL_MASK, !near_only as u32, src).0 != 0;
                while b >= 0 {
                    // Every lane reads the body: the near decision must be the warp's.
                    let q = tree.body(b);
                    if far_too {
                        if len == GROUP_LIST {
                            flush_far!();
                        }
                        if lane == 0 {
                            *list.add(len) = q;
                            if I::Extra::V4 > 0 {
                                *extras.add(len) = inter.body_extra(b);
                            }
                        }
                        len += 1;
                    }
                    if reach_body(&q) {
                        if nlen == GROUP_LIST {
                            flush_near!();
                        }
                        if lane == 0 {
                            *near_list.add(nlen) = q;
                        }
                        nlen += 1;
                    }
                    b = tree.next(b);
                }
            }
            if len > GROUP_LIST - crate::WARP_SIZE as usize {
                flush_far!();
            }
            if nlen > GROUP_LIST - crate::WARP_SIZE as usize {
                flush_near!();
            }
        }
        flush_far!();
        flush_near!();
    }
    NearStats {
        listed: fs.listed,
        near: ns.listed,
        popped: popped as u64,
    }
}
