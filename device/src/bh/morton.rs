//! The sorted build: the same octree as [`super::kernels::bh_build`]'s locked insertion, made
//! from the bodies' octant paths sorted as integers (Karras 2012's idea for octrees; no locks, no
//! retries, no counter that every new cell hits).
//!
//! 1. [`bh_keys`]: each body's octant path from the root, [`KEY_LEVELS`] levels of 3 bits, found by
//!    the insertion's own float descent ([`body_key`]), so both builds draw the same octants;
//! 2. a stable radix sort of the keys with the body indices (`crate::sort`);
//! 3. with `δ_i` the levels that sorted keys `i` and `i+1` share ([`shared_levels`]), the cell of
//!    depth `d` holding bodies `i` and `i+1` first appears at pair `i` when `δ_{i-1} < d ≤ δ_i`, so
//!    pair `i` creates `max(0, δ_i − δ_{i−1})` cells ([`new_cells`]); [`bh_morton_tiles`] and
//!    [`bh_morton_base`] number them by an exclusive scan (pre-order: parents before children),
//!    cell `id` at index `root − 1 − id` (dense storage: children below their parents);
//! 4. [`bh_morton_cells`] empties the new cells; [`bh_morton_link`] writes each cell into its
//!    parent's slot and each body into its deepest cell's slot, finding a cell made at an earlier
//!    pair by a galloping search over the keys ([`cell_at`]);
//! 5. bodies that share all [`KEY_LEVELS`] levels with a neighbour (closer than 2^-21 of the box)
//!    form runs of equal keys below one deepest sorted cell; [`bh_build_list`] gives each run to
//!    one thread, which inserts its bodies one by one ([`insert_owned`], the CPU twin's
//!    insertion too): the subtree is that thread's alone, so there are no locks.
//!
//! Dense storage only; the sparse layout's implicit indices keep the locked insertion.

use super::*;
use crate::gpu::atomic::*;
use crate::gpu::thread::*;
use crate::gpu::warp::*;
use crate::sort::block_scan;

/// Octant levels in a key: 3 bits each in a `u64`.
pub const KEY_LEVELS: u32 = 21;
/// Threads per block of the sorted build's kernels (and pairs per tile of its scan).
pub const MORTON_BLOCK: u32 = 256;

/// The octant path of `p` from the root cell (`c`, `half`): the octant at depth 1 in the top
/// bits, [`KEY_LEVELS`] levels, by the same float steps as the insertion's descent.
#[inline(always)]
pub fn body_key(p: [f32; 3], root_c: [f32; 3], root_half: f32) -> u64 {
    let (mut c, mut half) = (root_c, root_half);
    let mut key = 0u64;
    for _ in 0..KEY_LEVELS {
        let o = octant(p, c);
        key = key << 3 | o as u64;
        half *= 0.5;
        c = child_center(c, half, o);
    }
    key
}

/// The octant at depth `d` (1..=[`KEY_LEVELS`]) in `key`.
#[inline(always)]
pub fn key_octant(key: u64, d: u32) -> u32 {
    ((key >> (3 * (KEY_LEVELS - d))) & 7) as u32
}

/// Leading levels that two keys share (0..=[`KEY_LEVELS`]).
#[inline(always)]
pub fn shared_levels(a: u64, b: u64) -> u32 {
    // Bit 63 is never set: the first level starts at bit 62.
    ((a ^ b).leading_zeros() - 1).min(3 * KEY_LEVELS) / 3
}

/// `δ_i` for sorted keys `key(0..n)`: levels shared by keys `i` and `i+1`, 0 outside `0..n-1`.
#[inline(always)]
pub fn pair_levels(key: &impl Fn(usize) -> u64, n: usize, i: isize) -> u32 {
    if i < 0 || i as usize + 1 >= n {
        0
    } else {
        shared_levels(key(i as usize), key(i as usize + 1))
    }
}

/// Cells that pair `i` creates: depths `δ_{i−1}+1 ..= δ_i`.
#[inline(always)]
pub fn new_cells(key: &impl Fn(usize) -> u64, n: usize, i: usize) -> u32 {
    pair_levels(key, n, i as isize).saturating_sub(pair_levels(key, n, i as isize - 1))
}

/// Pre-order id of the depth-`d` cell (`d` ≥ 1) that holds body `i`, which must exist (`d` at
/// most `max(δ_{i−1}, δ_i)`): the cell was made at the first pair `s` whose key shares `d` levels
/// with key `i`, found by galloping back from `i` (cells are small, so this is usually a few
/// steps), as id `base(s) + d − δ_{s−1} − 1`.
#[inline(always)]
pub fn cell_at(
    key: &impl Fn(usize) -> u64,
    base: &impl Fn(usize) -> u32,
    n: usize,
    i: usize,
    d: u32,
) -> u32 {
    let ki = key(i);
    let shares = |s: usize| shared_levels(key(s), ki) >= d;
    // Invariant: `ok` shares, `bad` (when Some) does not, bad < ok.
    let mut ok = i;
    let mut step = 1usize;
    let mut bad = loop {
        if step > ok {
            if shares(0) {
                ok = 0;
                break None;
            }
            break Some(0);
        }
        let probe = ok - step;
        if shares(probe) {
            ok = probe;
            step *= 2;
        } else {
            break Some(probe);
        }
    };
    while let Some(b) = bad {
        if ok - b <= 1 {
            break;
        }
        let mid = b + (ok - b) / 2;
        if shares(mid) {
            ok = mid;
        } else {
            bad = Some(mid);
        }
    }
    base(ok) + d - pair_levels(key, n, ok as isize - 1) - 1
}

/// Dense index of the cell with pre-order id `id` (the root is `layout.root()`, id "−1").
#[inline(always)]
pub fn cell_index(layout: Layout, id: u32) -> i32 {
    layout.root() - 1 - id as i32
}

/// What pair `i` links: for each cell it creates, (parent cell, octant, cell); then body `i`'s
/// slot as (cell, octant), or `None` when the body shares every key level with a neighbour (it
/// goes to the insertion list). Calls `cell(parent, octant, child)` and returns the body's slot.
#[inline(always)]
pub fn link_pair(
    key: &impl Fn(usize) -> u64,
    base: &impl Fn(usize) -> u32,
    n: usize,
    i: usize,
    layout: Layout,
    mut cell: impl FnMut(i32, u32, i32),
) -> Option<(i32, u32)> {
    let dm = pair_levels(key, n, i as isize - 1);
    let dp = pair_levels(key, n, i as isize);
    let ki = key(i);
    let bi = base(i);
    for d in dm + 1..=dp {
        let id = bi + (d - dm - 1);
        let parent = if d == 1 {
            layout.root()
        } else if d - 1 > dm {
            cell_index(layout, id - 1)
        } else {
            cell_index(layout, cell_at(key, base, n, i, d - 1))
        };
        cell(parent, key_octant(ki, d), cell_index(layout, id));
    }
    let deepest = dm.max(dp);
    if deepest == KEY_LEVELS {
        return None;
    }
    let parent = if deepest == 0 {
        layout.root()
    } else if dp > dm {
        cell_index(layout, bi + (dp - dm - 1))
    } else {
        cell_index(layout, cell_at(key, base, n, i, deepest))
    };
    Some((parent, key_octant(ki, deepest + 1)))
}

/// A tree that one owner inserts into without locks: the CPU twin's vectors, or on the GPU a
/// subtree that one thread owns.
pub trait OwnedTree {
    fn slot(&self, s: usize) -> i32;
    fn set_slot(&mut self, s: usize, v: i32);
    fn next(&self, b: i32) -> i32;
    fn set_next(&mut self, b: i32, v: i32);
    fn pos(&self, b: i32) -> [f32; 3];
    /// A fresh cell (eight empty slots, count 0, start −1) for the slot `cur`, or `None` when
    /// none is left.
    fn new_cell(&mut self, cur: usize) -> Option<i32>;
    /// One more body in a bucket.
    fn bucketed(&mut self);
}

/// Inserts body `i` as the locked kernel would, its owner alone writing: descends through the
/// cells to the slot where `i` belongs, then subdivides while `i` and the body there share an
/// octant (past [`MAX_DEPTH`], a bucket). The deepest level of a cell it created (0 for none), or
/// `None` when the cells ran out.
#[inline(always)]
pub fn insert_owned<T: OwnedTree>(
    t: &mut T,
    layout: Layout,
    n: i32,
    root: ([f32; 3], f32),
    i: i32,
) -> Option<u32> {
    let p = t.pos(i);
    let (mut c, mut half, mut depth) = (root.0, root.1, 0u32);
    let mut o = octant(p, c);
    let mut s = layout.slot(layout.root(), o);
    while t.slot(s) >= n {
        let cell = t.slot(s) - n;
        half *= 0.5;
        c = child_center(c, half, o);
        depth += 1;
        o = octant(p, c);
        s = layout.slot(cell, o);
    }
    let b = t.slot(s);
    if b == EMPTY {
        t.set_slot(s, i);
        return Some(0);
    }
    let q = t.pos(b);
    let mut cur = s;
    let mut created = 0;
    loop {
        if depth as usize >= MAX_DEPTH {
            let nb = t.next(b);
            t.set_next(i, nb);
            t.set_next(b, i);
            t.bucketed();
            t.set_slot(cur, b);
            return Some(created);
        }
        let cell = t.new_cell(cur)?;
        half *= 0.5;
        c = child_center(c, half, o);
        depth += 1;
        created = depth;
        t.set_slot(cur, n + cell);
        let ob = octant(q, c);
        o = octant(p, c);
        if ob != o {
            t.set_slot(layout.slot(cell, ob), b);
            t.set_slot(layout.slot(cell, o), i);
            return Some(created);
        }
        cur = layout.slot(cell, o);
    }
}

// ---------------------------------------------------------------------------------------------
// kernels
// ---------------------------------------------------------------------------------------------

/// Step 1: `keys[i]` = [`body_key`] of body `i`, `vals[i] = i`. Any grid.
#[crate::kernel]
pub unsafe fn bh_keys(
    bodies: *const Body,
    n: u32,
    header: *const TreeHeader,
    keys: *mut u64,
    vals: *mut u32,
) {
    // SAFETY: the bounding box is complete (earlier launch); i < n.
    unsafe {
        let (c, half) = root_cell(&*header);
        let mut i = index_1d();
        while i < n {
            *keys.add(i as usize) = body_key((*bodies.add(i as usize)).pos(), c, half);
            *vals.add(i as usize) = i;
            i += grid_size_1d();
        }
    }
}

crate::static_shared!(morton_depth: [u32; (MORTON_BLOCK / crate::WARP_SIZE) as usize]);

/// Step 3a: `tile_sum[t]` = cells created by the pairs of tile `t` ([`MORTON_BLOCK`] pairs), and
/// the deepest shared level into `header.depth`. Blocks of [`MORTON_BLOCK`] threads, one per tile.
#[crate::kernel]
pub unsafe fn bh_morton_tiles(
    keys: *const u64,
    n: u32,
    header: *mut TreeHeader,
    tile_sum: *mut u32,
) {
    let i = index_1d() as usize;
    // SAFETY: keys has n entries; tile_sum one per block.
    unsafe {
        let key = |j: usize| *keys.add(j);
        let (c, d) = if i < n as usize {
            (
                new_cells(&key, n as usize, i),
                pair_levels(&key, n as usize, i as isize),
            )
        } else {
            (0, 0)
        };
        let (_, sum) = block_scan(c);
        // The block's deepest level, then one atomic per block and only when it raises the
        // depth: an atomic per warp on this one address took 107 µs at 2^22 (H200).
        let warps = morton_depth();
        let deepest = all_reduce(d, |a, b| a.max(b));
        if lane_id() == 0 {
            *warps.add(warp_idx() as usize) = deepest;
        }
        sync_threads();
        if thread_idx_x() == 0 {
            *tile_sum.add(block_idx_x() as usize) = sum;
            let mut deepest = 0;
            for w in 0..(MORTON_BLOCK / crate::WARP_SIZE) as usize {
                deepest = deepest.max(*warps.add(w));
            }
            let depth = &raw mut (*header).depth;
            if deepest > load_relaxed_u32(depth) {
                atomic_max_u32(depth, deepest);
            }
        }
    }
}

/// Step 3b: `base[i]`, the pre-order id of pair `i`'s first new cell, from the tiles' exclusive
/// offsets; `header.bottom` set for `total` cells besides the root, or `header.error` when they
/// do not fit. Blocks of [`MORTON_BLOCK`] threads, one per tile.
#[crate::kernel]
pub unsafe fn bh_morton_base(
    keys: *const u64,
    n: u32,
    tile_off: *const u32,
    total: *const u64,
    header: *mut TreeHeader,
    base: *mut u32,
    layout: Layout,
) {
    let i = index_1d() as usize;
    // SAFETY: keys and base have n entries, tile_off one per block.
    unsafe {
        let key = |j: usize| *keys.add(j);
        let c = if i < n as usize {
            new_cells(&key, n as usize, i)
        } else {
            0
        };
        let (incl, _) = block_scan(c);
        if i < n as usize {
            *base.add(i) = *tile_off.add(block_idx_x() as usize) + incl - c;
        }
        if i == 0 {
            let used = *total + 1;
            if used > layout.cells as u64 {
                (*header).error = ERR_OVERFLOW;
            } else {
                (*header).bottom = layout.cells as i32 - used as i32;
            }
        }
    }
}

/// Step 4a: every cell that pair `i` creates gets eight empty slots, count 0, start −1 and its
/// depth in `level` (for [`super::kernels::bh_summarize_level`]); the root's level is 0. Nothing
/// when the cells did not fit. Any grid.
#[crate::kernel]
pub unsafe fn bh_morton_cells(
    tree: TreeViewMut,
    keys: *const u64,
    base: *const u32,
    total: *const u64,
    level: *mut u32,
) {
    let TreeViewMut {
        n,
        child,
        count,
        start,
        layout,
        ..
    } = tree;
    // SAFETY: base has n entries; ids below total < cells (checked); level one per cell.
    unsafe {
        if *total + 1 > layout.cells as u64 {
            return;
        }
        let key = |j: usize| *keys.add(j);
        let mut i = index_1d();
        if i == 0 {
            *level.add(layout.root() as usize) = 0;
        }
        while i < n {
            let b = *base.add(i as usize);
            // Pair i's cells have depths δ_{i−1}+1 ..= δ_i, in id order.
            let first_depth = pair_levels(&key, n as usize, i as isize - 1) + 1;
            for id in b..b + new_cells(&key, n as usize, i as usize) {
                let c = cell_index(layout, id);
                super::kernels::init_cell(layout, c, child, count, start);
                *level.add(c as usize) = first_depth + (id - b);
            }
            i += grid_size_1d();
        }
    }
}

/// Step 4b: pair `i`'s cells into their parents' slots, with `start` = `i`: a
/// cell first holds body `i`, and the bodies before it in key order are the bodies before it in
/// the depth-first order `bh_sort` places (so it never waits for these); body `vals[i]` into its
/// cell's slot; when it shares every key level with a neighbour, nothing, or `i` onto `list`
/// (`*list_len` counting, starting at 0) if it starts such a run. Nothing when the cells did not
/// fit. Any grid.
#[crate::kernel]
pub unsafe fn bh_morton_link(
    tree: TreeViewMut,
    keys: *const u64,
    vals: *const u32,
    base: *const u32,
    total: *const u64,
    list: *mut u32,
    list_len: *mut u32,
) {
    let TreeViewMut {
        n,
        child,
        start,
        layout,
        ..
    } = tree;
    let ni = n as i32;
    // SAFETY: arrays of n entries; every slot written is distinct (one parent slot per cell, one
    // slot per body) and was emptied by the previous launch.
    unsafe {
        if *total + 1 > layout.cells as u64 {
            return;
        }
        let key = |j: usize| *keys.add(j);
        let base_of = |j: usize| *base.add(j);
        let mut i = index_1d();
        while i < n {
            let slot = link_pair(&key, &base_of, n as usize, i as usize, layout, |p, o, c| {
                *child.add(layout.slot(p, o)) = ni + c;
                *start.add(c as usize) = i as i32;
            });
            let b = *vals.add(i as usize);
            match slot {
                Some((p, o)) => *child.add(layout.slot(p, o)) = b as i32,
                // The first body of a run of equal keys stands for the run.
                None if pair_levels(&key, n as usize, i as isize - 1) < KEY_LEVELS => {
                    *list.add(atomic_add_u32(list_len, 1) as usize) = i;
                }
                None => {}
            }
            i += grid_size_1d();
        }
    }
}

/// Step 5: each run of equal keys starting at sorted position `list[r]` (`r < *list_len`) is
/// inserted body by body by one thread ([`insert_owned`]): new cells are taken below
/// `header.bottom`; on overflow `header.error` is set. Any grid.
#[crate::kernel]
pub unsafe fn bh_build_list(
    tree: TreeViewMut,
    keys: *const u64,
    vals: *const u32,
    level: *mut u32,
    list: *const u32,
    list_len: *const u32,
) {
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
    // SAFETY: list holds *list_len sorted positions below n; each run's subtree is written by
    // its thread alone (module docs); the other arrays as in bh_build.
    unsafe {
        let root = root_cell(&*header);
        let mut t = OwnedSubtree {
            bodies,
            header,
            child,
            next,
            count,
            start,
            level,
            layout,
        };
        let len = *list_len;
        let mut r = index_1d();
        let mut deepest = 0;
        while r < len {
            let first = *list.add(r as usize) as usize;
            let mut j = first;
            while j < n as usize && *keys.add(j) == *keys.add(first) {
                match insert_owned(&mut t, layout, n as i32, root, *vals.add(j) as i32) {
                    Some(d) => deepest = deepest.max(d),
                    None => {
                        (*header).error = ERR_OVERFLOW;
                        return;
                    }
                }
                j += 1;
            }
            r += grid_size_1d();
        }
        if deepest > 0 {
            atomic_max_u32(&raw mut (*header).depth, deepest);
        }
    }
}

/// Device memory as one thread's [`OwnedTree`].
struct OwnedSubtree {
    bodies: *const Body,
    header: *mut TreeHeader,
    child: *mut i32,
    next: *mut i32,
    count: *mut u32,
    start: *mut i32,
    level: *mut u32,
    layout: Layout,
}

// SAFETY (every access): pointers and indices as in `bh_build_list`'s contract.
impl OwnedTree for OwnedSubtree {
    #[inline(always)]
    fn slot(&self, s: usize) -> i32 {
        unsafe { *self.child.add(s) }
    }
    #[inline(always)]
    fn set_slot(&mut self, s: usize, v: i32) {
        unsafe { *self.child.add(s) = v }
    }
    #[inline(always)]
    fn next(&self, b: i32) -> i32 {
        unsafe { *self.next.add(b as usize) }
    }
    #[inline(always)]
    fn set_next(&mut self, b: i32, v: i32) {
        unsafe { *self.next.add(b as usize) = v }
    }
    #[inline(always)]
    fn pos(&self, b: i32) -> [f32; 3] {
        unsafe { (*self.bodies.add(b as usize)).pos() }
    }
    #[inline(always)]
    fn new_cell(&mut self, cur: usize) -> Option<i32> {
        unsafe {
            let cell = atomic_add_i32(&raw mut (*self.header).bottom, -1) - 1;
            if cell < 0 {
                return None;
            }
            super::kernels::init_cell(self.layout, cell, self.child, self.count, self.start);
            // Dense storage: slot `cur` belongs to cell `cur / 8`, one level up.
            *self.level.add(cell as usize) = *self.level.add(cur / 8) + 1;
            Some(cell)
        }
    }
    #[inline(always)]
    fn bucketed(&mut self) {
        unsafe { atomic_add_u32(&raw mut (*self.header).bucketed, 1) };
    }
}
