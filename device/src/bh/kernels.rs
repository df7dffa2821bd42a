//! Barnes–Hut kernels. Launch shapes: the constants in the parent module. `bh_summarize` and
//! `bh_sort` wait on other threads' results, so their whole grid must be resident at once
//! (the host launches at most the occupancy limit), as in ECL-BH.

use super::*;
use crate::gpu::atomic::*;
use crate::gpu::fence::{fence_acq_rel_device, fence_device};
use crate::gpu::shared::{ld_shared_v4, shared_addr};
use crate::gpu::thread::*;
use crate::gpu::warp::*;
use crate::walk::{DevArray, Shares, walk_warp};
use core::ptr::{read_volatile, write_volatile};

// ---------------------------------------------------------------------------------------------
// reset: header and root
// ---------------------------------------------------------------------------------------------

/// Resets `*header` for a tree in `layout` and empties the root's eight child slots.
/// Launch one block of at least 8 threads.
#[crate::kernel]
pub unsafe fn bh_reset(header: *mut TreeHeader, child: *mut i32, layout: Layout) {
    let t = thread_idx_x();
    // SAFETY: child has layout.slots() slots.
    unsafe {
        if t < 8 {
            *child.add(layout.slot(layout.root(), t)) = EMPTY;
        }
        if t == 0 {
            *header = TreeHeader::new(layout.cells);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// bounding box
// ---------------------------------------------------------------------------------------------

crate::static_shared!(bbox_tile: [f32; 6 * (TREE_BLOCK / crate::WARP_SIZE) as usize]);

/// Min and max of the bodies' coordinates into `header.min/max` (which start at ±inf). Any grid
/// of `TREE_BLOCK`-thread blocks.
#[crate::kernel]
pub unsafe fn bh_bounding_box(bodies: *const Body, n: u32, header: *mut TreeHeader) {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    let mut i = index_1d();
    while i < n {
        // SAFETY: i < n.
        let p = unsafe { (*bodies.add(i as usize)).pos() };
        for k in 0..3 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
        i += grid_size_1d();
    }
    // Warp butterflies, then one value per warp in shared memory, then warp 0 finishes.
    for k in 0..3 {
        let mut off = 16;
        while off > 0 {
            // SAFETY: every lane of every warp runs this loop (no early exit above).
            unsafe {
                lo[k] = lo[k].min(shfl_xor_f32(FULL_MASK, lo[k], off).0);
                hi[k] = hi[k].max(shfl_xor_f32(FULL_MASK, hi[k], off).0);
            }
            off /= 2;
        }
    }
    let warps = (block_dim_x() / crate::WARP_SIZE) as usize;
    let tile = bbox_tile();
    let w = warp_idx() as usize;
    // SAFETY: 6 values per warp fit the tile; barriers are reached by the whole block.
    unsafe {
        if lane_id() == 0 {
            for k in 0..3 {
                *tile.add(6 * w + k) = lo[k];
                *tile.add(6 * w + 3 + k) = hi[k];
            }
        }
        sync_threads();
        if thread_idx_x() == 0 {
            for v in 1..warps {
                for k in 0..3 {
                    lo[k] = lo[k].min(*tile.add(6 * v + k));
                    hi[k] = hi[k].max(*tile.add(6 * v + 3 + k));
                }
            }
            for k in 0..3 {
                atomic_min_f32(&raw mut (*header).min[k], lo[k]);
                atomic_max_f32(&raw mut (*header).max[k], hi[k]);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// build tree (dense: cells allocated downward from the root; sparse: a cell is the slot it fills)
// ---------------------------------------------------------------------------------------------

/// Initialises a freshly allocated cell: no children, not yet summarized, not yet placed.
///
/// # Safety
/// `cell` < cells, arrays sized per [`bh_build`].
#[inline(always)]
pub(crate) unsafe fn init_cell(
    layout: Layout,
    cell: i32,
    child: *mut i32,
    count: *mut u32,
    start: *mut i32,
) {
    // SAFETY: per the contract.
    unsafe {
        for o in 0..8 {
            *child.add(layout.slot(cell, o)) = EMPTY;
        }
        *count.add(cell as usize) = 0;
        *start.add(cell as usize) = -1;
    }
}

/// Inserts bodies `0..n` into the octree. Child slots hold `EMPTY`, `LOCKED`, a body `0..n`, or a
/// cell as `n + cell`. `next[i]` must be -1 for every body (bucket chains). `child` has
/// `layout.slots()` slots; `count`, `start` have `layout.cells` entries. On overflow (dense: no
/// cell left; sparse: a node index beyond `cells`) sets `header.error` and stops.
///
/// A thread locks the slot where its body belongs (CAS EMPTY/body → LOCKED); a thread that finds
/// a locked slot retries its body from the root. Under Volta+ independent thread scheduling a
/// lane waiting on a lane of its own warp still lets it progress, so there is no deadlock.
#[crate::kernel]
pub unsafe fn bh_build(
    bodies: *const Body,
    n: u32,
    header: *mut TreeHeader,
    child: *mut i32,
    next: *mut i32,
    count: *mut u32,
    start: *mut i32,
    layout: Layout,
) {
    // SAFETY: the header was completed by the bounding-box launch before this one.
    let (root_c, root_half) = root_cell(unsafe { &*header });
    let root = layout.root();
    let ni = n as i32;
    let stride = grid_size_1d() as i32;
    let mut i = index_1d() as i32;
    // The deepest level this thread created, published once at the end: an atomic max per new
    // cell would serialise half a million updates on one address.
    let mut deepest = 0u32;
    // SAFETY: all indices below stay within the documented array sizes.
    unsafe {
        while i < ni {
            if read_volatile(&raw const (*header).error) != 0 {
                return;
            }
            let p = (*bodies.add(i as usize)).pos();
            // Descend to the slot where body i belongs.
            let (mut c, mut half, mut depth) = (root_c, root_half, 0u32);
            let mut o = octant(p, c);
            let mut s = layout.slot(root, o);
            // Relaxed strong loads (L2, no L1 invalidation per level as an acquire costs): a
            // slot only ever moves forward — EMPTY, then LOCKED and a body in turn, then a cell
            // for good — and every slot starts EMPTY (the buffer is filled before the launch), so
            // whatever a read returns, however stale, is a value the slot held during this build.
            // A cell is final, so descending through one is right; an EMPTY, body or LOCKED that
            // is out of date makes the CAS below fail, and the body is retried.
            let mut ch = load_relaxed_u32(child.add(s).cast()) as i32;
            while ch >= ni {
                half *= 0.5;
                c = child_center(c, half, o);
                depth += 1;
                o = octant(p, c);
                s = layout.slot(ch - ni, o);
                ch = load_relaxed_u32(child.add(s).cast()) as i32;
            }
            if ch == LOCKED || atomic_cas_i32(child.add(s), ch, LOCKED) != ch {
                continue; // another thread is rewriting this slot: retry from the root
            }
            if ch == EMPTY {
                write_volatile(child.add(s), i);
                i += stride;
                continue;
            }
            // The relaxed CAS took the lock; the fence orders what the previous holder of this
            // slot wrote (bucket chains) before our reads of it (acquire; no SC needed).
            fence_acq_rel_device();
            // The slot holds body b: subdivide until b and i fall in different octants. New cells
            // stay private (behind the lock) until the lock is released with the top one.
            let b = ch;
            let q = (*bodies.add(b as usize)).pos();
            let mut top = b; // what the locked slot will hold on release
            let mut cur = s;
            loop {
                if depth as usize >= MAX_DEPTH {
                    // Coincident for float32: bucket i behind b. Volatile: another thread may have
                    // chained behind b a moment ago, and L1 is not coherent across SMs.
                    write_volatile(next.add(i as usize), read_volatile(next.add(b as usize)));
                    write_volatile(next.add(b as usize), i);
                    atomic_add_u32(&raw mut (*header).bucketed, 1);
                    if cur != s {
                        *child.add(cur) = b;
                    }
                    break;
                }
                // Dense: the next free cell. Sparse: the cell is the slot it fills; the counter
                // then only counts cells in use.
                let counted = atomic_add_i32(&raw mut (*header).bottom, -1) - 1;
                let cell = if layout.is_sparse() {
                    if cur < layout.cells as usize {
                        cur as i32
                    } else {
                        -1
                    }
                } else {
                    counted
                };
                if cell < 0 {
                    // Out of cells: put b back where it was and stop every thread.
                    if cur != s {
                        *child.add(cur) = b;
                    }
                    write_volatile(&raw mut (*header).error, ERR_OVERFLOW);
                    fence_device();
                    write_volatile(child.add(s), top);
                    return;
                }
                init_cell(layout, cell, child, count, start);
                half *= 0.5;
                c = child_center(c, half, o);
                depth += 1;
                deepest = deepest.max(depth);
                if top == b {
                    top = ni + cell;
                } else {
                    *child.add(cur) = ni + cell;
                }
                let ob = octant(q, c);
                o = octant(p, c);
                if ob != o {
                    *child.add(layout.slot(cell, ob)) = b;
                    *child.add(layout.slot(cell, o)) = i;
                    break;
                }
                cur = layout.slot(cell, o);
            }
            // Publish the new subtree: its contents must be visible before the slot says so.
            store_release_u32(child.add(s).cast(), top as u32);
            i += stride;
        }
        if deepest > 0 {
            atomic_max_u32(&raw mut (*header).depth, deepest);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// summarize: centre of mass and counts, bottom-up
// ---------------------------------------------------------------------------------------------

/// Mass, centre of mass (`cell_pm`), quadrupole (`cell_quad`, skipped when null) and body count
/// (`count`) of every cell. A cell
/// waits until each child cell's count is non-zero (published last). All blocks must be resident.
#[crate::kernel]
pub unsafe fn bh_summarize(
    bodies: *const Body,
    n: u32,
    header: *const TreeHeader,
    child: *const i32,
    next: *const i32,
    count: *mut u32,
    cell_pm: *mut Body,
    cell_quad: *mut Quad,
    layout: Layout,
) {
    let ni = n as i32;
    let cells = layout.cells as i32;
    let stride = grid_size_1d() as i32;
    // SAFETY: arrays sized per bh_build; every cell the loop visits was initialised.
    unsafe {
        let bottom = (*header).bottom;
        // Children before parents: dense cells were allocated downward, so upward from `bottom`;
        // sparse children sit at higher indices, so downward over every index, skipping slots
        // that hold no cell (a cell's own slot holds `n + index`).
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
            let children = DeviceChildren::<true> {
                layout,
                cell: k,
                bodies,
                child,
                next,
                count,
                cell_pm,
                cell_quad,
            };
            children.summarize(ni);
        }
    }
}

/// [`bh_summarize`] for the sorted build, one level per launch: the cells `k` in
/// `bottom..cells` with `level[k] == depth` (the sorted build writes every cell's depth), launched
/// from the deepest level up to the root (0), so every child cell was summarized by an earlier
/// launch: no thread waits, no atomics, no fences. It replaced a bottom-up walk in which the last
/// child to arrive summarized its parent (Karras 2012): on the H200 that ran at 4 active threads
/// per warp, L2-bound on its atomics and fences (1.18 ms at uniform 2^22, `results/s11/call2`;
/// this kernel 0.78 ms, call 3). Grouping each level's cells into a list first (a counting sort,
/// so that a launch covers only its level) was slower: 1.01 ms (call 4). Any grid.
#[crate::kernel]
#[allow(clippy::too_many_arguments)]
pub unsafe fn bh_summarize_level(
    bodies: *const Body,
    n: u32,
    header: *const TreeHeader,
    child: *const i32,
    next: *const i32,
    count: *mut u32,
    cell_pm: *mut Body,
    cell_quad: *mut Quad,
    level: *const u32,
    depth: u32,
    layout: Layout,
) {
    let ni = n as i32;
    let cells = layout.cells as i32;
    // SAFETY: arrays sized per the sorted build; every cell in bottom..cells initialised with its
    // level; the cells of one level are disjoint, each summarized by one thread.
    unsafe {
        let mut k = (*header).bottom + index_1d() as i32;
        while k < cells {
            if *level.add(k as usize) == depth {
                let children = DeviceChildren::<false> {
                    layout,
                    cell: k,
                    bodies,
                    child,
                    next,
                    count,
                    cell_pm,
                    cell_quad,
                };
                children.summarize(ni);
            }
            k += grid_size_1d() as i32;
        }
    }
}

/// A cell's children in device memory, for [`summarize_cell`]. `WAIT`: child cells are
/// summarized concurrently (poll their counts, publish with release); else by earlier launches
/// (plain loads and stores, nothing that could spin).
struct DeviceChildren<const WAIT: bool> {
    layout: Layout,
    cell: i32,
    bodies: *const Body,
    child: *const i32,
    next: *const i32,
    count: *mut u32,
    cell_pm: *mut Body,
    cell_quad: *mut Quad,
}

impl<const WAIT: bool> DeviceChildren<WAIT> {
    /// Summarizes `self.cell` ([`summarize_cell`], the quadrupole when `cell_quad` is not null)
    /// and publishes it: summary first, then its count with release.
    ///
    /// # Safety
    /// As [`bh_summarize`]'s contract; every child cell already published.
    #[inline(always)]
    unsafe fn summarize(&self, n: i32) {
        let k = self.cell as usize;
        // SAFETY: per the contract.
        unsafe {
            let (pm, cnt) = if self.cell_quad.is_null() {
                let (pm, _, cnt) = summarize_cell::<false>(self, n);
                (pm, cnt)
            } else {
                let (pm, q, cnt) = summarize_cell::<true>(self, n);
                *self.cell_quad.add(k) = q;
                (pm, cnt)
            };
            *self.cell_pm.add(k) = pm;
            if WAIT {
                store_release_u32(self.count.add(k), cnt);
            } else {
                *self.count.add(k) = cnt;
            }
        }
    }
}

// SAFETY (every read below): pointers and indices as in `bh_summarize`'s contract.
impl<const WAIT: bool> CellChildren for DeviceChildren<WAIT> {
    #[inline(always)]
    fn slot(&self, octant: u32) -> i32 {
        unsafe { *self.child.add(self.layout.slot(self.cell, octant)) }
    }
    #[inline(always)]
    fn cell(&self, cc: usize) -> (Body, Quad, u32) {
        unsafe {
            if !WAIT {
                let q = if self.cell_quad.is_null() {
                    Quad::default()
                } else {
                    *self.cell_quad.add(cc)
                };
                return (*self.cell_pm.add(cc), q, *self.count.add(cc));
            }
            // A non-zero count (published last, with release) makes the child's summary
            // visible: poll relaxed (other threads summarize it meanwhile), then one acquire.
            while load_relaxed_u32(self.count.add(cc)) == 0 {}
            let k = load_acquire_u32(self.count.add(cc));
            let q = if self.cell_quad.is_null() {
                Quad::default()
            } else {
                read_volatile(self.cell_quad.add(cc))
            };
            (read_volatile(self.cell_pm.add(cc)), q, k)
        }
    }
    #[inline(always)]
    fn body(&self, b: i32) -> Body {
        unsafe { *self.bodies.add(b as usize) }
    }
    #[inline(always)]
    fn next(&self, b: i32) -> i32 {
        unsafe { *self.next.add(b as usize) }
    }
}

// ---------------------------------------------------------------------------------------------
// sort: top-down placement by counts into the gather index
// ---------------------------------------------------------------------------------------------

/// `atomic_add_u32(ptr, 1)` for the lanes that call it together: one atomic per warp (by the
/// lowest of them), each lane a distinct value. One counter hit by every group of the sort
/// serialised its atomics (tens of thousands per launch at 2^22).
///
/// # Safety
/// As `atomic_add_u32`.
#[inline(always)]
unsafe fn inc_coalesced(ptr: *mut u32) -> u32 {
    let active = active_mask();
    let lead = active.trailing_zeros();
    // SAFETY: per the contract; the shuffle's mask is exactly the lanes here.
    unsafe {
        let base = if lane_id() == lead {
            atomic_add_u32(ptr, active.count_ones())
        } else {
            0
        };
        shfl_idx(active, base, lead).0 + (active & lanemask_lt()).count_ones()
    }
}

/// Fills `sort[0..n]` with the bodies in depth-first octant order (children in octant order,
/// buckets in chain order). A cell waits until its parent published its `start`. All blocks must
/// be resident.
#[crate::kernel]
pub unsafe fn bh_sort(
    n: u32,
    header: *mut TreeHeader,
    child: *const i32,
    next: *const i32,
    count: *const u32,
    start: *mut i32,
    sort: *mut u32,
    groups: *mut [u32; 2],
    group_size: u32,
    layout: Layout,
) {
    let ni = n as i32;
    let root = layout.root();
    let cells = layout.cells as i32;
    let stride = grid_size_1d() as i32;
    // SAFETY: arrays sized per bh_build, counts complete after bh_summarize; `groups` holds n.
    unsafe {
        let bottom = (*header).bottom;
        let ngroups = &raw mut (*header).groups;
        let mut emit = |gs: u32, gc: u32| {
            let g = inc_coalesced(ngroups);
            *groups.add(g as usize) = [gs, gc];
        };
        // Parents before children: dense, downward from the root; sparse, upward from node 0,
        // skipping slots that hold no cell.
        let mut j = index_1d() as i32;
        loop {
            let k = if layout.is_sparse() { j } else { root - j };
            if k < 0 || k >= cells || (!layout.is_sparse() && k < bottom) {
                break;
            }
            j += stride;
            if layout.is_sparse() && k != 0 && *child.add(k as usize) != ni + k {
                continue;
            }
            let mut s = if k == root {
                0
            } else {
                // Published with release by the parent's thread: poll relaxed, then one acquire.
                while (load_relaxed_u32(start.add(k as usize).cast()) as i32) < 0 {}
                load_acquire_u32(start.add(k as usize).cast()) as i32
            };
            let big = *count.add(k as usize) > group_size;
            if k == root && !big {
                emit(0, *count.add(k as usize));
            }
            let mut packer = GroupPacker::new(group_size);
            for o in 0..8 {
                let ch = *child.add(layout.slot(k, o));
                let s0 = s;
                if ch >= ni {
                    let cc = (ch - ni) as usize;
                    store_release_u32(start.add(cc).cast(), s as u32);
                    s += *count.add(cc) as i32;
                } else {
                    let mut b = ch;
                    while b >= 0 {
                        *sort.add(s as usize) = b as u32;
                        s += 1;
                        b = *next.add(b as usize);
                    }
                }
                if big {
                    packer.add(s0 as u32, (s - s0) as u32, ch >= ni, &mut emit);
                }
            }
            packer.finish(&mut emit);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// gravity: one traversal per warp, warp vote on the opening test
// ---------------------------------------------------------------------------------------------

const STACK: usize = MAX_DEPTH + 1;
const WARPS: usize = (GRAVITY_BLOCK / crate::WARP_SIZE) as usize;
crate::static_shared!(gravity_stack: [i32; WARPS * STACK]);
crate::static_shared!(gravity_w2: [f32; STACK]);

/// Accelerations `acc[i] = G Σ m_j d / (|d|² + ε²)^{3/2}` over the tree. Lane k of the grid
/// handles body `sort[k]` (or `k` when `sort` is null). A warp opens a cell unless all its lanes
/// find it far (`is_far`); bodies in leaves and buckets interact one by one, skipping the body
/// itself. Launch `GRAVITY_BLOCK`-thread blocks; any grid size.
#[crate::kernel]
pub unsafe fn bh_gravity(
    bodies: *const Body,
    n: u32,
    sort: *const u32,
    header: *const TreeHeader,
    child: *const i32,
    next: *const i32,
    cell_pm: *const Body,
    layout: Layout,
    theta2: f32,
    eps2: f32,
    g: f32,
    acc: *mut Accel,
) {
    let ni = n as i32;
    let lane = lane_id();
    let base = warp_idx() as usize * STACK;
    let stack = gravity_stack();
    let w2 = gravity_w2();
    // SAFETY: header complete; shared arrays sized above; barriers reached by all threads.
    unsafe {
        let (_, root_half) = root_cell(&*header);
        let t = thread_idx_x() as usize;
        if t < STACK {
            *w2.add(t) = width2_at(root_half, t);
        }
        sync_threads();
        let root = layout.root();
        let warps_total = grid_size_1d() / crate::WARP_SIZE;
        let mut w = index_1d() / crate::WARP_SIZE;
        while w * crate::WARP_SIZE < n {
            let k = w * crate::WARP_SIZE + lane;
            let active = k < n;
            let i = if !active {
                0
            } else if sort.is_null() {
                k as i32
            } else {
                *sort.add(k as usize) as i32
            };
            let p = (*bodies.add(i as usize)).pos();
            let mut a = [0.0f32; 3];
            // Warp-uniform traversal state: current cell, next octant, depth; the parents sit in
            // this warp's shared stack as cell * 16 + octant (octant may be 8: exhausted).
            let (mut cell, mut oct, mut depth) = (root, 0u32, 0usize);
            loop {
                if oct == 8 {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                    sync_warp(FULL_MASK); // lane 0's push is visible to all lanes
                    let e = *stack.add(base + depth);
                    cell = e >> 4;
                    oct = (e & 15) as u32;
                    continue;
                }
                let ch = *child.add(layout.slot(cell, oct));
                oct += 1;
                if ch >= ni {
                    let pm = *cell_pm.add((ch - ni) as usize);
                    let far = !active || is_far(dist2(p, pm.pos()), *w2.add(depth + 1), theta2);
                    // All lanes must agree a cell is far before any uses its summary.
                    if vote_all(FULL_MASK, far) {
                        if active {
                            add_pair_accel::<false>(&mut a, p, pm.pos(), pm.m, eps2);
                        }
                    } else {
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
                        if active && b != i {
                            let q = *bodies.add(b as usize);
                            add_pair_accel::<false>(&mut a, p, q.pos(), q.m, eps2);
                        }
                        b = *next.add(b as usize);
                    }
                }
            }
            if active {
                *acc.add(i as usize) = Accel {
                    x: g * a[0],
                    y: g * a[1],
                    z: g * a[2],
                };
            }
            w += warps_total;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// brute force: O(N²) with shared-memory tiles
// ---------------------------------------------------------------------------------------------

crate::static_shared!(brute_tile: [Body; BRUTE_BLOCK as usize]);

/// Direct summation in float32: every body against every other, tiles of `BRUTE_BLOCK` bodies in
/// shared memory. Launch `BRUTE_BLOCK`-thread blocks covering n.
#[crate::kernel]
pub unsafe fn bh_brute_force(bodies: *const Body, n: u32, eps2: f32, g: f32, acc: *mut Accel) {
    let i = index_1d();
    let t = thread_idx_x() as usize;
    let tile = brute_tile();
    // SAFETY: i < n guards body reads; the tile holds BRUTE_BLOCK bodies; whole-block barriers.
    unsafe {
        let tile_at = shared_addr(tile);
        let p = if i < n {
            (*bodies.add(i as usize)).pos()
        } else {
            [0.0; 3]
        };
        let mut a = [0.0f32; 3];
        let mut base = 0;
        while base < n {
            let j = base + t as u32;
            // Padding bodies have zero mass: they add exactly zero.
            *tile.add(t) = if j < n {
                *bodies.add(j as usize)
            } else {
                Body::default()
            };
            sync_threads();
            if softened(eps2) {
                brute_tile_sum::<true>(tile_at, p, eps2, &mut a);
            } else {
                brute_tile_sum::<false>(tile_at, p, eps2, &mut a);
            }
            sync_threads();
            base += BRUTE_BLOCK;
        }
        if i < n {
            *acc.add(i as usize) = Accel {
                x: g * a[0],
                y: g * a[1],
                z: g * a[2],
            };
        }
    }
}

/// Adds one shared-memory tile of `BRUTE_BLOCK` bodies (at shared address `tile`) to `a`.
///
/// # Safety
/// The tile is written and behind a barrier.
#[inline(always)]
unsafe fn brute_tile_sum<const SOFT: bool>(tile: u32, p: [f32; 3], eps2: f32, a: &mut [f32; 3]) {
    const UNROLL: u32 = 8;
    const _: () = assert!(BRUTE_BLOCK.is_multiple_of(UNROLL));
    // A counted `while` over constant-offset chunks: `for` over a range compiles to index
    // selects in the unrolled body (four integer instructions per interaction).
    let end = tile + 16 * BRUTE_BLOCK;
    let mut at = tile;
    while at < end {
        for u in 0..UNROLL {
            // SAFETY: per the contract.
            let [x, y, z, m] = unsafe { ld_shared_v4(at + 16 * u) };
            add_pair_accel::<SOFT>(a, p, [x, y, z], m, eps2);
        }
        at += 16 * UNROLL;
    }
}

/// Direct summation accumulated in float64 (positions converted exactly), the GPU reference.
#[crate::kernel]
pub unsafe fn bh_brute_force_f64(
    bodies: *const Body,
    n: u32,
    eps2: f64,
    g: f64,
    acc: *mut [f64; 3],
) {
    let i = index_1d();
    let t = thread_idx_x() as usize;
    let tile = brute_tile();
    // SAFETY: as in bh_brute_force.
    unsafe {
        let p = if i < n {
            (*bodies.add(i as usize)).pos()
        } else {
            [0.0; 3]
        };
        let p = [p[0] as f64, p[1] as f64, p[2] as f64];
        let mut a = [0.0f64; 3];
        let mut base = 0;
        while base < n {
            let j = base + t as u32;
            *tile.add(t) = if j < n {
                *bodies.add(j as usize)
            } else {
                Body::default()
            };
            sync_threads();
            for jj in 0..BRUTE_BLOCK as usize {
                let q = *tile.add(jj);
                let d = pair_accel_f64(p, [q.x as f64, q.y as f64, q.z as f64], q.m as f64, eps2);
                a = [a[0] + d[0], a[1] + d[1], a[2] + d[2]];
            }
            sync_threads();
            base += BRUTE_BLOCK;
        }
        if i < n {
            *acc.add(i as usize) = [g * a[0], g * a[1], g * a[2]];
        }
    }
}

// ---------------------------------------------------------------------------------------------
// gravity, warp-group traversal: one opening test per cell for the warp's bounding box, tested
// up to 32 children (four cells) at a time, with an interaction list evaluated by all 32 lanes (after Bonsai)
// ---------------------------------------------------------------------------------------------

const GROUP_WARPS: usize = (GROUP_BLOCK / crate::WARP_SIZE) as usize;
crate::static_shared!(group_stack: [i32; GROUP_WARPS * GROUP_STACK]);
crate::static_shared!(group_list: [Body; GROUP_WARPS * GROUP_LIST]);
crate::static_shared!(group_quads: [Quad; GROUP_WARPS * GROUP_LIST]);
crate::static_shared!(group_w2: [f32; STACK]);

/// The bounding box (centre, half-extents) of the points whose per-lane bounds are `lo..hi`,
/// reduced over the warp (every lane takes part).
///
/// # Safety
/// Whole warp, convergent.
#[inline(always)]
pub(crate) unsafe fn warp_box(mut lo: [f32; 3], mut hi: [f32; 3]) -> ([f32; 3], [f32; 3]) {
    for c in 0..3 {
        let mut off = 16;
        while off > 0 {
            // SAFETY: the whole warp is here, per the contract.
            unsafe {
                lo[c] = lo[c].min(shfl_xor_f32(FULL_MASK, lo[c], off).0);
                hi[c] = hi[c].max(shfl_xor_f32(FULL_MASK, hi[c], off).0);
            }
            off /= 2;
        }
    }
    box_of(lo, hi)
}

/// Pops one traversal step's cells from a warp's group stack of `*sp` entries: up to
/// [`GROUP_POP`] while the stack stays under [`GROUP_STACK_SOFT`], else one (the bound behind
/// [`GROUP_STACK`]). Returns how many were popped and the entry of cell `slot` (0 past them).
///
/// # Safety
/// Whole warp, convergent; `stack` is the warp's shared stack holding `*sp > 0` entries.
#[inline(always)]
pub(crate) unsafe fn pop_cells(stack: *const i32, sp: &mut usize, slot: usize) -> (usize, i32) {
    let np = if *sp + 8 * GROUP_POP <= GROUP_STACK_SOFT + GROUP_POP {
        (*sp).min(GROUP_POP)
    } else {
        1
    };
    *sp -= np;
    // SAFETY: per the contract: the whole warp is here, entries sp..sp + np are on the stack.
    unsafe {
        sync_warp(FULL_MASK); // pushes by other lanes are visible
        let e = if slot < np { *stack.add(*sp + slot) } else { 0 };
        sync_warp(FULL_MASK); // all have read slots sp.. before they are reused
        (np, e)
    }
}

/// Defines a group-gravity kernel: `gravity_group::<K, SOFT, QUAD>` behind one entry point;
/// `relative` adds the parameter `alpha` and selects the relative criterion (`acc` then holds
/// the previous accelerations on entry).
macro_rules! group_kernel {
    ($(#[$doc:meta])* $name:ident, $k:literal, $quad:literal) => {
        group_kernel!(@ $(#[$doc])* $name, $k, $quad, false, [], 0.0);
    };
    ($(#[$doc:meta])* $name:ident, $k:literal, $quad:literal, relative) => {
        group_kernel!(@ $(#[$doc])* $name, $k, $quad, true, [alpha: f32,], alpha);
    };
    (@ $(#[$doc:meta])* $name:ident, $k:literal, $quad:literal, $rel:literal,
        [$($extra:tt)*], $alpha:expr) => {
        $(#[$doc])*
        #[crate::kernel]
        pub unsafe fn $name(
            bodies: *const Body,
            n: u32,
            sort: *const u32,
            groups: *const [u32; 2],
            header: *mut TreeHeader,
            child: *const i32,
            next: *const i32,
            cell_pm: *const Body,
            cell_quad: *const Quad,
            layout: Layout,
            theta2: f32,
            eps2: f32,
            g: f32,
            $($extra)*
            acc: *mut Accel,
        ) {
            // SAFETY: forwarded contract.
            unsafe {
                let pot = core::ptr::null_mut();
                if softened(eps2) {
                    gravity_group::<$k, true, $quad, false, $rel>(
                        bodies, n, sort, groups, header, child, next, cell_pm, cell_quad, layout,
                        theta2, eps2, g, acc, pot, $alpha,
                    )
                } else {
                    gravity_group::<$k, false, $quad, false, $rel>(
                        bodies, n, sort, groups, header, child, next, cell_pm, cell_quad, layout,
                        theta2, eps2, g, acc, pot, $alpha,
                    )
                }
            }
        }
    };
}

group_kernel!(
    /// Accelerations like [`bh_gravity`], but each warp traverses the tree once for the bounding
    /// box of one warp group (`groups[g]` = (first, size) in `sort`, packed by `bh_sort` so that a
    /// group never spans more than one parent cell; groups are handed out by
    /// `header.next_group`): a cell is used whole when it is far from the whole box
    /// ([`is_far_from_box`]), which implies far for every body. Each step pops up to
    /// [`GROUP_POP`] cells and lanes `8s..8s+8` test the children of cell `s` in parallel;
    /// accepted cells and bodies go to a shared interaction list that all lanes evaluate
    /// together. Monopoles (`cell_quad` unused). Groups of up to 32 bodies (one per lane;
    /// `bh_sort` with `group_size` 32); a group of at most 16 (8) bodies gives each body 2 (4)
    /// lanes that sum shares of the list. Launch `GROUP_BLOCK`-thread blocks.
    bh_gravity_group, 1, false
);
group_kernel!(
    /// [`bh_gravity_group`] with the cells' quadrupole moments (`cell_quad`, summarized).
    /// Separate so that the monopole kernels reserve no shared memory for listed moments.
    bh_gravity_group_quad, 1, true
);
group_kernel!(
    /// [`bh_gravity_group`] with two bodies per lane: groups of up to 64 bodies (`bh_sort` with
    /// `group_size` 64), so a traversal serves twice the bodies and every list entry loaded from
    /// shared memory is used twice.
    bh_gravity_group2, 2, false
);
group_kernel!(
    /// [`bh_gravity_group2`] with quadrupole moments (see [`bh_gravity_group_quad`]).
    bh_gravity_group2_quad, 2, true
);
group_kernel!(
    /// [`bh_gravity_group2`] with Gadget's relative opening criterion ([`is_far_relative`]):
    /// `acc` holds each body's previous acceleration (with G) on entry and the new one on exit
    /// (a group reads its own bodies' before it writes them); `alpha` is the tolerated fraction
    /// of the group's smallest previous acceleration, `theta2` the geometric guard θ_max².
    bh_gravity_group2_rel, 2, false, relative
);
group_kernel!(
    /// [`bh_gravity_group2_rel`] with quadrupole moments: the criterion's order is one higher.
    bh_gravity_group2_quad_rel, 2, true, relative
);

/// [`bh_gravity_group2`] that also writes each body's potential `pot[i] = G Σ_j −m_j /
/// √(r_ij² + ε²)` over the other bodies (monopoles, the same list as the accelerations): the
/// N-body diagnostics' potential energy. Same launch as [`bh_gravity_group2`].
#[allow(clippy::too_many_arguments)]
#[crate::kernel]
pub unsafe fn bh_gravity_group2_pot(
    bodies: *const Body,
    n: u32,
    sort: *const u32,
    groups: *const [u32; 2],
    header: *mut TreeHeader,
    child: *const i32,
    next: *const i32,
    cell_pm: *const Body,
    layout: Layout,
    theta2: f32,
    eps2: f32,
    g: f32,
    acc: *mut Accel,
    pot: *mut f32,
) {
    let q = core::ptr::null();
    // SAFETY: forwarded contract.
    unsafe {
        if softened(eps2) {
            gravity_group::<2, true, false, true, false>(
                bodies, n, sort, groups, header, child, next, cell_pm, q, layout, theta2, eps2, g,
                acc, pot, 0.0,
            )
        } else {
            gravity_group::<2, false, false, true, false>(
                bodies, n, sort, groups, header, child, next, cell_pm, q, layout, theta2, eps2, g,
                acc, pot, 0.0,
            )
        }
    }
}

/// The warp-group traversal with `K` bodies per lane (lane `l` holds group members `l + 32 k`;
/// in a group of at most a half or a quarter of `32 K` bodies, lanes `l` and `l ± 16` (and `± 8`)
/// hold the same members and split the list between them).
///
/// # Safety
/// As [`bh_gravity_group`]; groups hold at most `32 K` bodies.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn gravity_group<
    const K: usize,
    const SOFT: bool,
    const QUAD: bool,
    const POT: bool,
    const REL: bool,
>(
    bodies: *const Body,
    n: u32,
    sort: *const u32,
    groups: *const [u32; 2],
    header: *mut TreeHeader,
    child: *const i32,
    next: *const i32,
    cell_pm: *const Body,
    cell_quad: *const Quad,
    layout: Layout,
    theta2: f32,
    eps2: f32,
    g: f32,
    acc: *mut Accel,
    pot: *mut f32,
    alpha: f32,
) {
    let lane = lane_id();
    let wib = warp_idx() as usize;
    let stack = unsafe { group_stack().add(wib * GROUP_STACK) };
    let list = unsafe { group_list().add(wib * GROUP_LIST) };
    // Monopoles: no list of moments (and no shared memory reserved for one).
    let lq: *mut Quad = if QUAD {
        unsafe { group_quads().add(wib * GROUP_LIST) }
    } else {
        core::ptr::null_mut()
    };
    let w2 = group_w2();
    // SAFETY: header complete; shared arrays sized above; whole warps throughout (inactive lanes
    // stay in the loop); barriers reached by all threads.
    unsafe {
        let (_, root_half) = root_cell(&*header);
        let t = thread_idx_x() as usize;
        if t < STACK {
            *w2.add(t) = width2_at(root_half, t);
        }
        sync_threads();
        let ngroups = (*header).groups;
        let next_group = &raw mut (*header).next_group;
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
            let GroupLanes { shift, seat, part } = GroupLanes::of(size, K as u32, lane);
            let seats = crate::WARP_SIZE >> shift;
            // Member `seat + seats k`; absent members stand on the group's first body so they do
            // not widen the box.
            let member = |k: usize| seat + seats * k as u32;
            let active: [bool; K] = core::array::from_fn(|k| member(k) < size);
            let i: [i32; K] = core::array::from_fn(|k| {
                *sort.add((first + if active[k] { member(k) } else { 0 }) as usize) as i32
            });
            let p: [[f32; 3]; K] = core::array::from_fn(|k| (*bodies.add(i[k] as usize)).pos());
            let (mut lo, mut hi) = (p[0], p[0]);
            for pk in &p[1..] {
                for c in 0..3 {
                    lo[c] = lo[c].min(pk[c]);
                    hi[c] = hi[c].max(pk[c]);
                }
            }
            let (bc, bh) = warp_box(lo, hi);
            // The relative criterion's bound from the group's smallest previous acceleration.
            let lim = if REL {
                let mut a2 = f32::INFINITY;
                for ik in i {
                    let a = *acc.add(ik as usize);
                    a2 = a2.min(a.x * a.x + a.y * a.y + a.z * a.z);
                }
                relative_limit(alpha, all_reduce(a2, f32::min), g)
            } else {
                0.0
            };

            // One walk of the group's box; the interaction sums each lane's share of the list.
            let tree = RawOctree::new(bodies, child, next, cell_pm, n, layout);
            let far = |s: &Body, depth: usize| {
                if REL {
                    is_far_relative::<QUAD>(s, *w2.add(depth), bc, bh, theta2, lim)
                } else {
                    is_far_from_box(s.pos(), *w2.add(depth), bc, bh, theta2)
                }
            };
            let shares = Shares { part, shift };
            let mut t = Targets::at(p);
            let stats = if POT {
                let inter = MonopolePot::<K, SOFT> { eps2 };
                let none = core::ptr::NonNull::<()>::dangling().as_ptr();
                walk_warp(&tree, &inter, far, stack, list, none, shares, &mut t)
            } else if QUAD {
                let quads = DevArray::new(cell_quad);
                let inter = Quadrupole::<_, K, SOFT> { eps2, quads };
                walk_warp(&tree, &inter, far, stack, list, lq, shares, &mut t)
            } else {
                let inter = Monopole::<K, SOFT> { eps2 };
                let none = core::ptr::NonNull::<()>::dangling().as_ptr();
                walk_warp(&tree, &inter, far, stack, list, none, shares, &mut t)
            };
            let (mut a, mut phi, listed, popped) = (t.a, t.phi, stats.listed, stats.popped);
            // The shares of a body's lanes (lanes `seat + seats j`) summed into each of them.
            let mut off = seats;
            while off < crate::WARP_SIZE {
                for ak in a.iter_mut() {
                    for c in ak.iter_mut() {
                        *c += shfl_xor_f32(FULL_MASK, *c, off).0;
                    }
                }
                if POT {
                    for pk in phi.iter_mut() {
                        *pk += shfl_xor_f32(FULL_MASK, *pk, off).0;
                    }
                }
                off <<= 1;
            }
            if lane == 0 {
                atomic_add_u64(&raw mut (*header).interactions, listed * size as u64);
                atomic_add_u64(&raw mut (*header).opened, popped);
            }
            for k in 0..K {
                if active[k] && part == 0 {
                    *acc.add(i[k] as usize) = Accel {
                        x: g * a[k][0],
                        y: g * a[k][1],
                        z: g * a[k][2],
                    };
                    if POT {
                        // The potential of the others: the body's own term taken out.
                        let m = (*bodies.add(i[k] as usize)).m;
                        *pot.add(i[k] as usize) = g * (phi[k] - self_potential::<SOFT>(m, eps2));
                    }
                }
            }
            w = take_group();
        }
    }
}
