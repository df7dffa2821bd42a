//! SPH kernels. Searches take `mode` ([`MODE_COUNT`]: `counts[i]`; [`MODE_FILL`]: row `i` of a
//! CSR list, `list[offsets[i]..offsets[i+1]]`, never written past its end; [`MODE_DENSITY`]:
//! `rho[i]` with smoothing kernel `kernel`; [`MODE_LADDER`]: the counts at the rungs of each
//! target's [`ladder`], `counts[LADDER i..LADDER (i + 1)]`, `state` given); pointers a mode does
//! not use may be null. A search
//! given `state` (non-null) serves only the particles still iterating ([`HState::iterating`]),
//! writing nothing for the others; given `tested` (non-null) it adds the pairs its active
//! targets tested (distance evaluations) to `*tested`.
//! `sph_cell_boxes` waits on other threads' results, so its whole grid must be resident.

use super::*;
use crate::bh::kernels::pop_cells;
use crate::bh::{EMPTY, GROUP_LIST, GROUP_POP, GROUP_STACK, Layout, MAX_DEPTH, TreeView};
use crate::gpu::atomic::*;
use crate::gpu::global::load;
use crate::gpu::shared::{SharedScalar, ld_shared_v4, shared_addr};
use crate::gpu::thread::*;
use crate::gpu::warp::*;
use core::ptr::read_volatile;

/// Threads per block of the vote search.
pub const VOTE_BLOCK: u32 = 256;
/// Threads per block of the warp-group search.
pub const GROUP_BLOCK: u32 = 128;
/// Threads per block of the per-particle and per-cell kernels.
pub const CELL_BLOCK: u32 = 256;
/// Threads of the one block of `sph_scan`.
pub const SCAN_BLOCK: u32 = 1024;

/// Where a search writes (see the module docs), one kernel parameter: `n` entries each but
/// `offsets` (n + 1) and `list` (`offsets[n]`); the pointers that a mode does not use may be
/// null, `tested` too (no count of the pairs tested). `kernel` is the density's smoothing
/// kernel.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Outputs {
    pub counts: *mut u32,
    pub offsets: *const u32,
    pub list: *mut u32,
    pub rho: *mut f32,
    pub state: *const HState,
    pub tested: *mut u64,
    pub kernel: u32,
}

// SAFETY: #[repr(C)]; raw pointers and a u32 only.
unsafe impl crate::gpu::DeviceViewMut for Outputs {}

/// A [`Sink`] that a lane starts for its target `i` and finishes into the [`Outputs`].
trait LaneSink: Sink + Sized {
    /// # Safety
    /// `i` is a particle; the outputs of this mode are sized per the module docs.
    unsafe fn start(o: &Outputs, i: u32, hi: f32) -> Self;
    /// # Safety
    /// As `start`, for the same `i`.
    unsafe fn finish(self, o: &Outputs, i: u32);
}

impl LaneSink for Count {
    #[inline(always)]
    unsafe fn start(_: &Outputs, _: u32, _: f32) -> Self {
        Count(0)
    }
    #[inline(always)]
    unsafe fn finish(self, o: &Outputs, i: u32) {
        // SAFETY: per the contract.
        unsafe { *o.counts.add(i as usize) = self.0 }
    }
}

impl LaneSink for Density {
    #[inline(always)]
    unsafe fn start(o: &Outputs, _: u32, hi: f32) -> Self {
        Density::new(o.kernel, hi)
    }
    #[inline(always)]
    unsafe fn finish(self, o: &Outputs, i: u32) {
        // SAFETY: per the contract.
        unsafe { *o.rho.add(i as usize) = self.rho() }
    }
}

impl LaneSink for Ladder {
    #[inline(always)]
    unsafe fn start(o: &Outputs, i: u32, _: f32) -> Self {
        // SAFETY: per the contract (this mode gives the state).
        Ladder::new(unsafe { &*o.state.add(i as usize) })
    }
    #[inline(always)]
    unsafe fn finish(self, o: &Outputs, i: u32) {
        // SAFETY: per the contract (`counts` holds LADDER entries per particle in this mode).
        unsafe {
            let at = o.counts.add(i as usize * LADDER);
            for k in 0..LADDER {
                *at.add(k) = self.c[k];
            }
        }
    }
}

/// Writes a target's neighbours into its CSR row, never past the row's end.
struct Fill {
    list: *mut u32,
    at: u32,
    end: u32,
}

impl Sink for Fill {
    #[inline(always)]
    fn take(&mut self, j: u32, _: f32, _: f32) {
        if self.at < self.end {
            // SAFETY: `at` is inside the target's row (`start`'s contract sizes the list).
            unsafe { *self.list.add(self.at as usize) = j };
            self.at += 1;
        }
    }
}

impl LaneSink for Fill {
    #[inline(always)]
    unsafe fn start(o: &Outputs, i: u32, _: f32) -> Self {
        // SAFETY: per the contract (`offsets` has n + 1 entries).
        unsafe {
            Fill {
                list: o.list,
                at: *o.offsets.add(i as usize),
                end: *o.offsets.add(i as usize + 1),
            }
        }
    }
    #[inline(always)]
    unsafe fn finish(self, _: &Outputs, _: u32) {}
}

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

/// Whether particle `i` is served: all when `state` is null, else those still iterating.
///
/// # Safety
/// `state` is null or holds particle `i`.
#[inline(always)]
unsafe fn serves(state: *const HState, i: u32) -> bool {
    // SAFETY: per the contract.
    state.is_null() || unsafe { (*state.add(i as usize)).iterating() }
}

/// Adds the warp's `tested` to `*out` (one atomic per warp), unless `out` is null.
///
/// # Safety
/// All 32 lanes call it together; `out` is null or valid.
#[inline(always)]
unsafe fn add_tested(out: *mut u64, tested: u64) {
    if !out.is_null() {
        // SAFETY: whole warp, per the contract.
        unsafe {
            let t = all_reduce(tested, |a, b| a + b);
            if lane_id() == 0 && t > 0 {
                atomic_add_u64(out, t);
            }
        }
    }
}

/// Runs `$f::<S>($args)` with the sink of `$mode`.
macro_rules! by_mode {
    ($mode:expr, $f:ident($($a:expr),* $(,)?)) => {
        match $mode {
            MODE_COUNT => $f::<Count>($($a),*),
            MODE_FILL => $f::<Fill>($($a),*),
            MODE_LADDER => $f::<Ladder>($($a),*),
            _ => $f::<Density>($($a),*),
        }
    };
}

/// [`by_mode!`] without [`MODE_LADDER`] (density in its place), for a kernel whose ladder runs
/// as an entry of its own: the ladder's sixteen live values raised every mode's registers. The
/// density's smoothing kernel `$kernel` is a constant of its sink ([`DensityOf`]).
macro_rules! by_mode_but_ladder {
    ($mode:expr, $kernel:expr, $f:ident($($a:expr),* $(,)?)) => {
        match $mode {
            MODE_COUNT => $f::<Count>($($a),*),
            MODE_FILL => $f::<Fill>($($a),*),
            _ if $kernel == WENDLAND_C2 => $f::<DensityOf<WENDLAND_C2>>($($a),*),
            _ => $f::<DensityOf<CUBIC_SPLINE>>($($a),*),
        }
    };
}

/// [`Density`] with smoothing kernel `K` a constant, so that the group search's flush evaluates
/// one kernel's formula for every candidate without a branch on the kernel.
struct DensityOf<const K: u32>(Density);

impl<const K: u32> Sink for DensityOf<K> {
    #[inline(always)]
    fn take(&mut self, j: u32, r2: f32, mj: f32) {
        self.offer(j, r2, mj, true);
    }
    #[inline(always)]
    fn offer(&mut self, _: u32, r2: f32, mj: f32, inside: bool) {
        let d = &mut self.0;
        d.sum = Density::add(K, d.inv_h, d.sum, r2, mj, inside);
    }
}

impl<const K: u32> LaneSink for DensityOf<K> {
    #[inline(always)]
    unsafe fn start(_: &Outputs, _: u32, hi: f32) -> Self {
        DensityOf(Density::new(K, hi))
    }
    #[inline(always)]
    unsafe fn finish(self, o: &Outputs, i: u32) {
        // SAFETY: per the contract.
        unsafe { self.0.finish(o, i) }
    }
}

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

// ---------------------------------------------------------------------------------------------
// cell boxes: bottom-up over the existing octree
// ---------------------------------------------------------------------------------------------

/// Each cell's box of its particles and largest `h` ([`summarize_box`]) into `boxes`, children
/// before parents as `bh_summarize` orders them; `ready` (`layout.cells` entries, zeroed before
/// the launch) is set to 1 once a cell's box is written, and a parent waits for it. The tree is
/// built (`header.bottom` final). All blocks must be resident; `CELL_BLOCK`-thread blocks.
#[crate::kernel]
pub unsafe fn sph_cell_boxes(tree: TreeView, h: *const f32, boxes: *mut CellBox, ready: *mut u32) {
    let TreeView {
        bodies,
        n,
        header,
        child,
        next,
        layout,
        ..
    } = tree;
    let ni = n as i32;
    let cells = layout.cells as i32;
    let stride = grid_size_1d() as i32;
    // SAFETY: arrays sized per bh_build; every visited cell is in use.
    unsafe {
        let bottom = (*header).bottom;
        let mut j = index_1d() as i32;
        loop {
            let k = if layout.is_sparse() {
                cells - 1 - j
            } else {
                bottom + j
            };
            if k < 0 || k >= cells {
                break;
            }
            j += stride;
            if layout.is_sparse() && k != 0 && *child.add(k as usize) != ni + k {
                continue;
            }
            let c = DeviceBoxChildren {
                layout,
                cell: k,
                bodies,
                h,
                child,
                next,
                boxes,
                ready,
            };
            *boxes.add(k as usize) = summarize_box(&c, ni);
            store_release_u32(ready.add(k as usize), 1);
        }
    }
}

struct DeviceBoxChildren {
    layout: Layout,
    cell: i32,
    bodies: *const Body,
    h: *const f32,
    child: *const i32,
    next: *const i32,
    boxes: *const CellBox,
    ready: *const u32,
}

// SAFETY (every read below): pointers and indices as in `sph_cell_boxes`' contract.
impl BoxChildren for DeviceBoxChildren {
    #[inline(always)]
    fn slot(&self, octant: u32) -> i32 {
        unsafe { *self.child.add(self.layout.slot(self.cell, octant)) }
    }
    #[inline(always)]
    fn cell(&self, cc: usize) -> CellBox {
        unsafe {
            // Published with release after the box: poll relaxed, then one acquire.
            while load_relaxed_u32(self.ready.add(cc)) == 0 {}
            load_acquire_u32(self.ready.add(cc));
            read_volatile(self.boxes.add(cc))
        }
    }
    #[inline(always)]
    fn body(&self, b: i32) -> ([f32; 3], f32) {
        unsafe {
            (
                (*self.bodies.add(b as usize)).pos(),
                *self.h.add(b as usize),
            )
        }
    }
    #[inline(always)]
    fn next(&self, b: i32) -> i32 {
        unsafe { *self.next.add(b as usize) }
    }
}

// ---------------------------------------------------------------------------------------------
// seed-style search: one walk per warp, a warp vote per cell
// ---------------------------------------------------------------------------------------------

const STACK: usize = MAX_DEPTH + 1;
const VOTE_WARPS: usize = (VOTE_BLOCK / crate::WARP_SIZE) as usize;
crate::static_shared!(sph_vote_stack: [i32; VOTE_WARPS * STACK]);

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

// ---------------------------------------------------------------------------------------------
// warp-group search: one walk per group of tree-sorted particles against their box
// ---------------------------------------------------------------------------------------------

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

/// What one child slot asks of the group walk.
const NOTHING: u32 = 0;
const LIST: u32 = 1;
const OPEN: u32 = 2;
const CHAIN: u32 = 3;
/// A reachable cell of at most [`SPH_BUCKET`] particles: its range in the tree order.
const RANGE: u32 = 4;

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
unsafe fn lane_walks(
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

/// One walk of a group kernel's warp for the targets of lanes with `active` (box `[tlo, thi]`,
/// largest h `th`), every active lane feeding its sink and counting its tests. With
/// `few_filter`, the walk also asks that some served target's own sphere reach each cell and
/// candidate (their positions and h in `few`, the warp's share).
///
/// # Safety
/// As `group`: whole warp, its shares of the shared arrays, tree complete and boxed.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn walk<S: Sink>(
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

const _: () = assert!(GROUP_POP * 8 == crate::WARP_SIZE as usize);

mod cells;
mod hydro;
mod iteration;
pub use cells::*;
pub use hydro::*;
pub use iteration::*;
