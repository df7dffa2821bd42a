//! The warp-group search: a warp walks the octree once for a group of tree-sorted particles
//! against their box (or, where that box is too wide for their `h`, once per lane range of a
//! depth-first split: [`lane_walks`]). The entries ([`sph_group`] and its variants), their
//! dispatch and the lane ranges are here; one walk is in the `walk` submodule.

use super::*;
use crate::bh::{GROUP_LIST, GROUP_POP, GROUP_STACK};

mod walk;
use walk::walk;

/// The particles in tree order, `sorted[k] = bodies[sort[k]]` for `k < n` (`sort` a
/// permutation of `0..n`), for the group walk's ranges. `CELL_BLOCK`-thread blocks, any grid.
#[crate::kernel]
pub unsafe fn sph_tree_order(bodies: *const Body, sort: *const u32, n: u32, sorted: *mut Body) {
    let mut k = index_1d();
    while k < n {
        // SAFETY: k < n, sort[k] < n; both arrays hold n entries.
        unsafe { *sorted.add(k as usize) = *bodies.add(*sort.add(k as usize) as usize) };
        k += grid_size_1d();
    }
}

const GROUP_WARPS: usize = (GROUP_BLOCK / crate::WARP_SIZE) as usize;
crate::static_shared!(sph_group_stack: [i32; GROUP_WARPS * GROUP_STACK]);
crate::static_shared!(sph_group_list: [Body; GROUP_WARPS * GROUP_LIST]);
crate::static_shared!(sph_group_lh: [f32; GROUP_WARPS * GROUP_LIST]);
crate::static_shared!(sph_group_li: [u32; GROUP_WARPS * GROUP_LIST]);
crate::static_shared!(sph_group_served: [[f32; 4]; GROUP_WARPS * crate::WARP_SIZE as usize]);

/// Defines a group-search entry: `search` runs the mode's sink ([`by_mode_but_ladder!`]),
/// `ladder` the [`Ladder`] (its `mode` and `kernel` are ignored); `$few` the per-target test.
macro_rules! group_entry {
    (@run search, $few:literal, $mode:ident, $kernel:ident, $($a:expr),*) => {
        by_mode_but_ladder!($mode, $kernel, group($($a,)* $few))
    };
    (@run ladder, $few:literal, $mode:ident, $kernel:ident, $($a:expr),*) => {{
        let _ = ($mode, $kernel);
        group::<Ladder>($($a,)* $few)
    }};
    ($(#[$doc:meta])* $name:ident, $kind:ident, $few:literal) => {
        $(#[$doc])*
        #[crate::kernel]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $name(
            tree: TreeView,
            h: *const f32,
            sorted: *const Body,
            boxes: *const CellBox,
            ngroups: u32,
            next_group: *mut u32,
            crit: u32,
            mode: u32,
            o: Outputs,
        ) {
            let TreeView {
                bodies,
                n,
                sort,
                groups,
                child,
                next,
                start,
                count,
                layout,
                ..
            } = tree;
            let kernel = o.kernel;
            // No ranges without the particles in tree order: every cell is descended.
            let start = if sorted.is_null() { core::ptr::null() } else { start };
            let t = Tree {
                child,
                next,
                start,
                count,
                sorted,
                boxes,
                layout,
            };
            // SAFETY: forwarded contract.
            unsafe {
                group_entry!(
                    @run $kind, $few, mode, kernel,
                    bodies, h, n, sort, groups, ngroups, next_group, t, crit, &o
                )
            }
        }
    };
}

group_entry!(
    /// Neighbours by warp groups (`groups[g]` = (first, size ≤ 32) in `sort`, as `bh_sort` packs
    /// them; `ngroups` of them, handed out by the counter `*next_group`, zero before the launch): a
    /// warp walks the tree once for the box and largest `h` of its group's served particles — or,
    /// while that box is too wide for their h ([`group_too_wide`]), once per aligned lane range of a
    /// depth-first split ([`next_lanes`]) — popping up to `GROUP_POP` cells
    /// a step whose children lanes `8s..8s+8` test ([`cell_reachable`], [`body_reachable`]); a
    /// reachable cell of at most [`SPH_BUCKET`] particles is not descended but read as its range
    /// `start[c]..start[c] + count[c]` of `sort` (as `bh_sort` left them; `start` null: descended);
    /// candidate particles go to a list in shared memory that every lane tests against its own
    /// particle.
    /// Outputs per `mode` (module docs; [`MODE_LADDER`] runs as [`sph_group_ladder`], whose
    /// sixteen live values would raise every mode's registers here). `GROUP_BLOCK`-thread blocks,
    /// any grid.
    sph_group,
    search,
    false
);
group_entry!(
    /// [`sph_group`] for a search of few groups ([`FEW_PASS_WALKS`]): each cell and candidate
    /// must also reach one served target's own sphere.
    sph_group_few,
    search,
    true
);
group_entry!(
    /// [`sph_group`] in [`MODE_LADDER`] (its `mode` and `kernel` are ignored; `state` given).
    sph_group_ladder,
    ladder,
    false
);
group_entry!(
    /// [`sph_group_ladder`] for a pass of few walks ([`FEW_PASS_WALKS`]): each cell and
    /// candidate must also reach one served target's own sphere. An entry of its own so that
    /// the per-target tests cost the fuller passes no registers.
    sph_group_ladder_few,
    ladder,
    true
);

/// The octree as a group walk reads it; `start` null: no ranges (every cell is descended);
/// else `sorted[k]` is the particle `sort[k]` (the ranges' particles read in one load, not
/// through `sort`: the walk's steps are chains of dependent loads).
#[derive(Clone, Copy)]
struct Tree {
    child: *const i32,
    next: *const i32,
    start: *const i32,
    count: *const u32,
    sorted: *const Body,
    boxes: *const CellBox,
    layout: Layout,
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn group<S: LaneSink>(
    bodies: *const Body,
    h: *const f32,
    n: u32,
    sort: *const u32,
    groups: *const [u32; 2],
    ngroups: u32,
    next_group: *mut u32,
    t: Tree,
    crit: u32,
    o: &Outputs,
    few_filter: bool,
) {
    let lane = lane_id();
    let wib = warp_idx() as usize;
    let mut tested = 0u64;
    // SAFETY: shared arrays sized above, one share per warp; tree complete and boxed; whole warps
    // throughout (lanes without a particle stand on the group's first and take nothing).
    unsafe {
        let stack = sph_group_stack().add(wib * GROUP_STACK);
        let lpos = sph_group_list().add(wib * GROUP_LIST);
        let lh = sph_group_lh().add(wib * GROUP_LIST);
        let li = sph_group_li().add(wib * GROUP_LIST);
        let few = sph_group_served().add(wib * crate::WARP_SIZE as usize);
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
            let [first, size] = load(groups.add(w as usize));
            let member = lane < size;
            let i = load(sort.add((first + if member { lane } else { 0 }) as usize));
            let live = member && serves(o.state, i);
            let p = load(bodies.add(i as usize)).pos();
            let hi = *h.add(i as usize);
            let mut s = S::start(o, i, hi);
            let mut walks = LaneWalks::new();
            while let Some(lw) = walks.next(p, hi, live) {
                walk(
                    bodies,
                    h,
                    n,
                    sort,
                    &t,
                    crit,
                    stack,
                    lpos,
                    lh,
                    li,
                    few_filter,
                    few,
                    p,
                    hi,
                    lw.active,
                    lw.lo,
                    lw.hi,
                    lw.h,
                    &mut s,
                    &mut tested,
                );
            }
            if live {
                s.finish(o, i);
            }
            w = take_group();
        }
        add_tested(o.tested, tested);
    }
}

/// The walks of a warp group whose lanes with `live` are served (lane `l`: position `p`, `h`
/// `hi`): the whole warp's range, halved depth-first ([`next_lanes`]) while the box of its served
/// lanes is too wide for their smallest h ([`group_too_wide`]); `f(active, a, w, tlo, thi, th)`
/// for each range `[a, a + w)` with a served lane, in order (`active`: this lane is served in it;
/// the box `[tlo, thi]` and largest h `th` of its served lanes).
///
/// # Safety
/// The whole warp calls it together (its reductions), `f` too.
#[inline(always)]
pub(super) unsafe fn lane_walks(
    p: [f32; 3],
    hi: f32,
    live: bool,
    mut f: impl FnMut(bool, u32, u32, [f32; 3], [f32; 3], f32),
) {
    let mut walks = LaneWalks::new();
    // SAFETY: per the contract.
    while let Some(w) = unsafe { walks.next(p, hi, live) } {
        f(w.active, w.a, w.w, w.lo, w.hi, w.h);
    }
}

/// One walk of [`lane_walks`].
struct LaneWalk {
    active: bool,
    a: u32,
    w: u32,
    lo: [f32; 3],
    hi: [f32; 3],
    h: f32,
}

/// [`lane_walks`]' loop, stepped by [`LaneWalks::next`] so that the group search runs each walk
/// in its own body: a closure holding the whole walk was left out of line in the ladder entry
/// (its sink then lived in local memory).
struct LaneWalks {
    a: u32,
    w: u32,
    done: bool,
}

impl LaneWalks {
    #[inline(always)]
    fn new() -> Self {
        LaneWalks {
            a: 0,
            w: crate::WARP_SIZE,
            done: false,
        }
    }

    /// The next walk, if any.
    ///
    /// # Safety
    /// As [`lane_walks`]: the whole warp, with the same `p`, `hi`, `live` each call.
    #[inline(always)]
    unsafe fn next(&mut self, p: [f32; 3], hi: f32, live: bool) -> Option<LaneWalk> {
        let lane = lane_id();
        // SAFETY: whole warp, per the contract; a and w are warp-uniform.
        unsafe {
            while !self.done {
                let (a, wl) = (self.a, self.w);
                let active = live && lane >= a && lane < a + wl;
                let mut found = None;
                if ballot(FULL_MASK, active) != 0 {
                    let (inf, ninf) = (f32::INFINITY, f32::NEG_INFINITY);
                    let lo: [f32; 3] = core::array::from_fn(|k| {
                        all_reduce(if active { p[k] } else { inf }, f32::min)
                    });
                    let hi3: [f32; 3] = core::array::from_fn(|k| {
                        all_reduce(if active { p[k] } else { ninf }, f32::max)
                    });
                    let h = all_reduce(if active { hi } else { 0.0 }, f32::max);
                    let hmin = all_reduce(if active && hi > 0.0 { hi } else { inf }, f32::min);
                    if wl > 1 && group_too_wide(lo, hi3, hmin, h) {
                        self.w /= 2;
                        continue;
                    }
                    found = Some(LaneWalk {
                        active,
                        a,
                        w: wl,
                        lo,
                        hi: hi3,
                        h,
                    });
                }
                match next_lanes(a, wl) {
                    Some((na, nw)) => (self.a, self.w) = (na, nw),
                    None => self.done = true,
                }
                if found.is_some() {
                    return found;
                }
            }
            None
        }
    }
}

const _: () = assert!(GROUP_POP * 8 == crate::WARP_SIZE as usize);
