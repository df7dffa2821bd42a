//! Barnes–Hut kernels. Launch shapes: the constants in the parent module. This file holds the
//! tree stages (reset, bounding box, build, summary, sort); [`gravity`] the force kernels.
//! `bh_summarize` and `bh_sort` wait on other threads' results, so their whole grid must be
//! resident at once (the host launches at most the occupancy limit), as in ECL-BH.

use super::*;
use crate::gpu::atomic::*;
use crate::gpu::fence::{fence_acq_rel_device, fence_device};
use crate::gpu::thread::*;
use crate::gpu::warp::*;
use core::ptr::{read_volatile, write_volatile};

// ---------------------------------------------------------------------------------------------
// reset: header and root
// ---------------------------------------------------------------------------------------------

/// Resets the tree's header for its layout and empties the root's eight child slots.
/// Launch one block of at least 8 threads.
#[crate::kernel]
pub unsafe fn bh_reset(tree: TreeViewMut) {
    let TreeViewMut {
        header,
        child,
        layout,
        ..
    } = tree;
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
pub unsafe fn bh_bounding_box(tree: TreeViewMut) {
    let TreeViewMut {
        bodies, n, header, ..
    } = tree;
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
/// cell as `n + cell`. `next[i]` must be -1 for every body (bucket chains). On overflow (dense: no
/// cell left; sparse: a node index beyond `cells`) sets `header.error` and stops.
///
/// A thread locks the slot where its body belongs (CAS EMPTY/body → LOCKED); a thread that finds
/// a locked slot retries its body from the root. Under Volta+ independent thread scheduling a
/// lane waiting on a lane of its own warp still lets it progress, so there is no deadlock.
#[crate::kernel]
pub unsafe fn bh_build(tree: TreeViewMut) {
    let TreeViewMut {
        bodies,
        n,
        header,
        child,
        next,
        count,
        start,
        layout,
        ..
    } = tree;
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
/// (`count`) of every cell. A cell waits until each child cell's count is non-zero (published
/// last). All blocks must be resident.
#[crate::kernel]
pub unsafe fn bh_summarize(tree: TreeViewMut) {
    let TreeViewMut {
        bodies,
        n,
        header,
        child,
        next,
        count,
        cell_pm,
        cell_quad,
        layout,
        ..
    } = tree;
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
/// per warp, L2-bound on its atomics and fences (1.18 ms at uniform 2^22;
/// this kernel 0.78 ms). Grouping each level's cells into a list first (a counting sort,
/// so that a launch covers only its level) was slower: 1.01 ms. Any grid.
#[crate::kernel]
pub unsafe fn bh_summarize_level(tree: TreeViewMut, level: *const u32, depth: u32) {
    let TreeViewMut {
        bodies,
        n,
        header,
        child,
        next,
        count,
        cell_pm,
        cell_quad,
        layout,
        ..
    } = tree;
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

/// Fills the tree's `sort[0..n]` with the bodies in depth-first octant order (children in octant
/// order, buckets in chain order) and packs them into warp groups of up to `group_size`, counted
/// in `header.groups`: with `marks` null, group `[first, size]` goes to `groups[g]` in the order
/// the threads reach it; else `marks[first] = size` (n entries, zero before the launch), which
/// [`bh_group_tiles`] and [`bh_group_scatter`] turn into `groups` in tree order. A cell waits
/// until its parent published its `start`. All blocks must be resident.
#[crate::kernel]
pub unsafe fn bh_sort(tree: TreeViewMut, group_size: u32, marks: *mut u32) {
    let TreeViewMut {
        n,
        header,
        child,
        next,
        count,
        start,
        sort,
        groups,
        layout,
        ..
    } = tree;
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
            if marks.is_null() {
                *groups.add(g as usize) = [gs, gc];
            } else {
                *marks.add(gs as usize) = gc;
            }
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
                // Published by the parent's thread (or already by the sorted build's link). The
                // value is all a cell takes from its parent (counts and slots come from earlier
                // launches), so relaxed accesses suffice: an acquire load per cell invalidated
                // the SM's L1 and a release store per child waited on the thread's stores.
                loop {
                    let v = load_relaxed_u32(start.add(k as usize).cast()) as i32;
                    if v >= 0 {
                        break v;
                    }
                }
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
                    store_relaxed_u32(start.add(cc).cast(), s as u32);
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

/// Threads per block (and positions per tile) of [`bh_group_tiles`] and [`bh_group_scatter`].
pub const GROUP_TILE: u32 = 256;

/// `tile_count[b]` = groups starting at positions `b·GROUP_TILE ..` of the tree order (`marks`
/// as [`bh_sort`] left them, n entries). Exactly `⌈n / GROUP_TILE⌉` blocks of `GROUP_TILE`.
#[crate::kernel]
pub unsafe fn bh_group_tiles(marks: *const u32, n: u32, tile_count: *mut u32) {
    let k = index_1d();
    // SAFETY: k < n for the read; the whole block reaches block_scan.
    unsafe {
        let first = k < n && *marks.add(k as usize) > 0;
        let (_, total) = crate::sort::block_scan(first as u32);
        if thread_idx_x() == 0 {
            *tile_count.add(block_idx_x() as usize) = total;
        }
    }
}

/// The groups in tree order: the m-th position with a mark (`tile_off`: the tiles' counts
/// scanned, e.g. by `sph_scan`) becomes `groups[m] = [k, marks[k]]`. The walks hand groups out
/// in array order, so neighbouring warps walk neighbouring groups and share the tree's cells in
/// cache: against `bh_sort`'s own order (the threads' atomics), the group2 gravity walk took
/// 3.30 instead of 3.40 ms at uniform 2^22 (H200). Grid as [`bh_group_tiles`].
#[crate::kernel]
pub unsafe fn bh_group_scatter(
    marks: *const u32,
    n: u32,
    tile_off: *const u32,
    groups: *mut [u32; 2],
) {
    let k = index_1d();
    // SAFETY: k < n for the reads; m below the groups' count (the marks of bh_sort).
    unsafe {
        let size = if k < n { *marks.add(k as usize) } else { 0 };
        let (incl, _) = crate::sort::block_scan((size > 0) as u32);
        if size > 0 {
            let m = *tile_off.add(block_idx_x() as usize) + incl - 1;
            *groups.add(m as usize) = [k, size];
        }
    }
}

mod gravity;
pub use gravity::*;
