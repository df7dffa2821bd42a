//! The combined gravity + density kernels: one walk per warp group of `bh_sort` (groups of at
//! most 32 bodies, one per lane), groups handed out by a counter. Launch `GROUP_BLOCK`-thread
//! blocks (`crate::bh::GROUP_BLOCK`), any grid.

use super::*;
use crate::bh::{
    Accel, GROUP_BLOCK, GROUP_LIST, GROUP_STACK, GroupLanes, MAX_DEPTH, Monopole, Quad, Quadrupole,
    Targets, TreeView, add_pair_accel, box_of, is_far, is_far_from_box, root_cell, softened,
    width_at, width2_at,
};
use crate::gpu::atomic::atomic_add_u32;
use crate::gpu::atomic::atomic_add_u64;
use crate::gpu::thread::*;
use crate::gpu::warp::*;
use crate::walk::near::walk_warp_near;
use crate::walk::{DevArray, Shares};

const WARPS: usize = (GROUP_BLOCK / crate::WARP_SIZE) as usize;
const STACK: usize = MAX_DEPTH + 1;
crate::static_shared!(combined_stack: [i32; WARPS * GROUP_STACK]);
crate::static_shared!(combined_list: [Body; WARPS * GROUP_LIST]);
crate::static_shared!(combined_quads: [Quad; WARPS * GROUP_LIST]);
crate::static_shared!(combined_near: [Body; WARPS * GROUP_LIST]);
crate::static_shared!(combined_w2: [f32; STACK]);

/// Accelerations (`acc[i]`, as `bh_gravity_group`: monopoles, G included), gather neighbour
/// counts (`counts[i]`) and SPH densities (`rho[i]`, kernel `params.kernel`, support `h[i]`) of
/// every body, in one walk per warp group ([`crate::walk::near`]); `params.parts` may ask for one
/// part alone (the other's outputs may then be null).
///
/// The tree: built, summarized and sorted by `crate::bh` (groups of at most 32 bodies, the
/// header after `bh_sort`: its box and group count), with each cell's box and largest `h`
/// (`boxes`, `sph_cell_boxes`). `next_group` is zero before the launch. `stats` (null to skip)
/// receives three sums: gravity interactions (listed sources × group size), near pairs tested
/// (candidates × group size), cells opened.
#[allow(clippy::too_many_arguments)]
#[crate::kernel]
pub unsafe fn combined_group(
    tree: TreeView,
    h: *const f32,
    boxes: *const CellBox,
    next_group: *mut u32,
    params: WalkParams,
    acc: *mut Accel,
    counts: *mut u32,
    rho: *mut f32,
    stats: *mut u64,
) {
    // SAFETY: forwarded contract.
    unsafe {
        if softened(params.eps2) {
            group::<true, false>(tree, h, boxes, next_group, params, acc, counts, rho, stats)
        } else {
            group::<false, false>(tree, h, boxes, next_group, params, acc, counts, rho, stats)
        }
    }
}

/// [`combined_group`] with the cells' quadrupole moments (the tree's `cell_quad`), as
/// `bh_gravity_group_quad`. Separate so that the monopole kernel reserves no shared memory for
/// listed moments.
#[allow(clippy::too_many_arguments)]
#[crate::kernel]
pub unsafe fn combined_group_quad(
    tree: TreeView,
    h: *const f32,
    boxes: *const CellBox,
    next_group: *mut u32,
    params: WalkParams,
    acc: *mut Accel,
    counts: *mut u32,
    rho: *mut f32,
    stats: *mut u64,
) {
    // SAFETY: forwarded contract.
    unsafe {
        if softened(params.eps2) {
            group::<true, true>(tree, h, boxes, next_group, params, acc, counts, rho, stats)
        } else {
            group::<false, true>(tree, h, boxes, next_group, params, acc, counts, rho, stats)
        }
    }
}

/// The warp-group walk of both fields (one body per lane; a group of at most 16 or 8 bodies
/// repeats its bodies over 2 or 4 lane sets that split both lists, as in `bh_gravity_group`).
///
/// # Safety
/// As [`combined_group`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn group<const SOFT: bool, const QUAD: bool>(
    tree: TreeView,
    h: *const f32,
    boxes: *const CellBox,
    next_group: *mut u32,
    params: WalkParams,
    acc: *mut Accel,
    counts: *mut u32,
    rho: *mut f32,
    stats: *mut u64,
) {
    let TreeView {
        bodies,
        sort,
        groups,
        header,
        cell_quad,
        ..
    } = tree;
    let lane = lane_id();
    let wib = warp_idx() as usize;
    let fields = fields(params.parts);
    let (theta2, eps2) = (params.theta2, params.eps2);
    // SAFETY: header complete; shared arrays sized above, one share per warp; whole warps
    // throughout (lanes without a body stand on the group's first); barriers reached by all.
    unsafe {
        let stack = combined_stack().add(wib * GROUP_STACK);
        let list = combined_list().add(wib * GROUP_LIST);
        let near_list = combined_near().add(wib * GROUP_LIST);
        // Monopoles: no list of moments (and no shared memory reserved for one).
        let lq: *mut Quad = if QUAD {
            combined_quads().add(wib * GROUP_LIST)
        } else {
            core::ptr::null_mut()
        };
        let w2 = combined_w2();
        let (_, root_half) = root_cell(&*header);
        let t = thread_idx_x() as usize;
        if t < STACK {
            *w2.add(t) = width2_at(root_half, t);
        }
        sync_threads();
        let ngroups = (*header).groups;
        let take_group = || {
            let w = if lane == 0 {
                atomic_add_u32(next_group, 1)
            } else {
                0
            };
            shfl_idx(FULL_MASK, w, 0).0
        };
        let mut w = take_group();
        while w < ngroups {
            let [first, size] = *groups.add(w as usize);
            let GroupLanes { shift, seat, part } = GroupLanes::of(size, 1, lane);
            let seats = crate::WARP_SIZE >> shift;
            let active = seat < size;
            let i = *sort.add((first + if active { seat } else { 0 }) as usize) as usize;
            let p = (*bodies.add(i)).pos();
            let hi = *h.add(i);
            let lo: [f32; 3] = core::array::from_fn(|k| all_reduce(p[k], f32::min));
            let up: [f32; 3] = core::array::from_fn(|k| all_reduce(p[k], f32::max));
            let reach = GroupReach {
                lo,
                hi: up,
                h: all_reduce(hi, f32::max),
            };
            // The gravity box (centre, half-extents) is recomputed from the group's box at each
            // test rather than held: six fewer registers live through the walk.
            let far = |s: &Body, depth: usize| {
                let (bc, bh) = box_of(reach.lo, reach.hi);
                is_far_from_box(s.pos(), *w2.add(depth), bc, bh, theta2)
            };
            let reach_cell = |c: i32| reach.cell(&*boxes.add(c as usize));
            let reach_body = |q: &Body| reach.body(q);
            let shares = Shares { part, shift };
            let mut t = Targets::at([p]);
            let mut nt = Gather::at(p, hi, params.kernel);
            let near = GatherDensity;
            let st = if QUAD {
                let quads = DevArray::new(cell_quad);
                let inter = Quadrupole::<_, 1, SOFT> { eps2, quads };
                walk_warp_near(
                    &tree, &inter, &near, fields, far, reach_cell, reach_body, stack, list, lq,
                    near_list, shares, &mut t, &mut nt,
                )
            } else {
                let inter = Monopole::<1, SOFT> { eps2 };
                let none = core::ptr::NonNull::<()>::dangling().as_ptr();
                walk_warp_near(
                    &tree, &inter, &near, fields, far, reach_cell, reach_body, stack, list, none,
                    near_list, shares, &mut t, &mut nt,
                )
            };
            // The shares of a body's lanes (lanes `seat + seats j`) summed into each of them.
            let (mut a, mut count, mut rh) = (t.a[0], nt.count, nt.sum);
            let mut off = seats;
            while off < crate::WARP_SIZE {
                for c in a.iter_mut() {
                    *c += shfl_xor_f32(FULL_MASK, *c, off).0;
                }
                count += shfl_xor(FULL_MASK, count, off).0;
                rh += shfl_xor_f32(FULL_MASK, rh, off).0;
                off <<= 1;
            }
            if lane == 0 && !stats.is_null() {
                atomic_add_u64(stats, st.listed * size as u64);
                atomic_add_u64(stats.add(1), st.near * size as u64);
                atomic_add_u64(stats.add(2), st.popped);
            }
            if active && part == 0 {
                if fields != Fields::Near {
                    let g = params.g;
                    *acc.add(i) = Accel {
                        x: g * a[0],
                        y: g * a[1],
                        z: g * a[2],
                    };
                }
                if fields != Fields::Far {
                    *counts.add(i) = count;
                    *rho.add(i) = Density::scale(rh, nt.inv_h);
                }
            }
            w = take_group();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// the seed's form: one walk per warp, one merged vote per cell
// ---------------------------------------------------------------------------------------------

const VOTE_WARPS: usize = (crate::bh::GRAVITY_BLOCK / crate::WARP_SIZE) as usize;
crate::static_shared!(combined_vote_stack: [i32; VOTE_WARPS * STACK]);
crate::static_shared!(combined_vote_w2: [f32; STACK]);
crate::static_shared!(combined_vote_w: [f32; STACK]);

/// GASPHiA's merged traversal in the seed's form: `bh_gravity`'s walk (lane k of the grid on body
/// `sort[k]`, one walk per warp) that also answers each lane's gather count (`counts[i]`) and SPH
/// density (`rho[i]`, kernel `params.kernel`, support `h[i]`), as `sph_vote` would. One vote per
/// cell decides both fields:
/// - a cell that some lane finds near (`crate::bh::is_far` fails) is opened, as in `bh_gravity`;
/// - a cell that every lane finds far adds its monopole; if some lane's sphere can also reach its
///   box (`crate::sph::cell_reachable`, gather) it is walked on for the density alone
///   (near-only: below it, a cell is opened when some lane can reach it, as in `sph_vote`);
/// - a body adds its gravity (outside near-only subtrees, not on itself) and, within `h[i]`, its
///   count and density term ([`GatherDensity`], the target itself included).
///
/// So the accelerations are `bh_gravity`'s, summed in its order, and the densities and counts
/// those of `sph_vote` over a superset of its candidates (a candidate outside `h[i]` adds
/// nothing). `params.parts` is ignored: both fields, always. Launch
/// `crate::bh::GRAVITY_BLOCK`-thread blocks, any grid; the tree as for `combined_group`
/// (`sort` of every body, cell boxes).
#[crate::kernel]
pub unsafe fn combined_vote(
    tree: TreeView,
    h: *const f32,
    boxes: *const CellBox,
    params: WalkParams,
    acc: *mut Accel,
    counts: *mut u32,
    rho: *mut f32,
) {
    let TreeView {
        bodies,
        n,
        sort,
        header,
        child,
        next,
        cell_pm,
        layout,
        ..
    } = tree;
    let ni = n as i32;
    let lane = lane_id();
    let base = warp_idx() as usize * STACK;
    let stack = combined_vote_stack();
    let w2 = combined_vote_w2();
    let wd = combined_vote_w();
    let (theta2, eps2) = (params.theta2, params.eps2);
    // SAFETY: header complete, cells boxed; shared arrays sized above; barriers reached by all
    // threads; lanes past n stand on the warp's first body and vote far and unreachable.
    unsafe {
        let (root_centre, root_half) = root_cell(&*header);
        let slack = reach_slack(root_centre, root_half);
        let t = thread_idx_x() as usize;
        if t < STACK {
            *w2.add(t) = width2_at(root_half, t);
            *wd.add(t) = width_at(root_half, t);
        }
        sync_threads();
        let warps_total = grid_size_1d() / crate::WARP_SIZE;
        let mut w = index_1d() / crate::WARP_SIZE;
        while w * crate::WARP_SIZE < n {
            let k = w * crate::WARP_SIZE + lane;
            let active = k < n;
            let i = *sort.add(if active { k } else { w * crate::WARP_SIZE } as usize) as i32;
            let p = (*bodies.add(i as usize)).pos();
            let hi = *h.add(i as usize);
            let mut a = [0.0f32; 3];
            let mut g = Gather::at(p, hi, params.kernel);
            let reach = |c: usize| active && cell_reachable(GATHER, p, p, hi, &*boxes.add(c));
            // Warp-uniform state as `bh_gravity`'s, and the depth of the first near-only cell
            // on the path (STACK: none).
            let (mut cell, mut oct, mut depth) = (layout.root(), 0u32, 0usize);
            let mut near_from = STACK;
            loop {
                if oct == 8 {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                    if depth < near_from {
                        near_from = STACK;
                    }
                    sync_warp(FULL_MASK); // lane 0's push is visible to all lanes
                    let e = *stack.add(base + depth);
                    cell = e >> 4;
                    oct = (e & 15) as u32;
                    continue;
                }
                let ch = *child.add(layout.slot(cell, oct));
                oct += 1;
                let near_only = depth >= near_from;
                if ch >= ni {
                    let c = (ch - ni) as usize;
                    let open = if near_only {
                        vote_any(FULL_MASK, reach(c))
                    } else {
                        let pm = *cell_pm.add(c);
                        let r2 = crate::bh::dist2(p, pm.pos());
                        let far = !active || is_far(r2, *w2.add(depth + 1), theta2);
                        // All lanes must agree a cell is far before any uses its summary.
                        if vote_all(FULL_MASK, far) {
                            if active {
                                add_pair_accel::<false>(&mut a, p, pm.pos(), pm.m, eps2);
                            }
                            // The box is read only where the centre of mass leaves it possible.
                            let near = vote_any(
                                FULL_MASK,
                                may_reach(r2, hi, *wd.add(depth + 1), slack) && reach(c),
                            );
                            if near {
                                near_from = depth + 1;
                            }
                            near
                        } else {
                            true
                        }
                    };
                    if open {
                        sync_warp(FULL_MASK); // every lane has read the slot lane 0 overwrites
                        if lane == 0 {
                            *stack.add(base + depth) = cell * 16 + oct as i32;
                        }
                        depth += 1;
                        cell = ch - ni;
                        oct = 0;
                    }
                } else {
                    let mut b = ch;
                    while b >= 0 {
                        if active {
                            let q = *bodies.add(b as usize);
                            if !near_only && b != i {
                                add_pair_accel::<false>(&mut a, p, q.pos(), q.m, eps2);
                            }
                            // Most bodies the gravity reaches are outside every lane's h: the
                            // warp skips their kernel evaluation (adding them adds nothing).
                            if within(dist2(p, q.pos()), hi) {
                                GatherDensity.add(&mut g, &q, &());
                            }
                        }
                        b = *next.add(b as usize);
                    }
                }
            }
            if active {
                let gc = params.g;
                *acc.add(i as usize) = Accel {
                    x: gc * a[0],
                    y: gc * a[1],
                    z: gc * a[2],
                };
                *counts.add(i as usize) = g.count;
                *rho.add(i as usize) = g.rho();
            }
            w += warps_total;
        }
    }
}
