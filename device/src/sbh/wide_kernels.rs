//! The wide-node layout (module `wide`) built on the GPU from a dense octree of `crate::bh`'s GPU
//! build (cells `bottom..cells`, the root last, every child cell below its parent). Positions
//! `j = root - cell`, `0 <= j < used = cells - bottom`, order the blocks (the root's first):
//! 1. [`sbh_wide_mark`]: top down, each cell waits for its depth parity (published by its parent)
//!    and publishes its children's ([`wide_mark`]); a wide node's entry count goes to `cnt[j]`
//!    (0 for the other cells) and its rows ([`wide_rows`]) are added to its tile's sum.
//! 2. [`sbh_wide_scan`]: one block turns the tiles' sums into exclusive prefix sums and writes the
//!    layout's total rows.
//! 3. [`sbh_wide_start`]: each tile scans its rows: `start[j]`, the first row of position `j`'s
//!    block.
//! 4. [`sbh_wide_fill`]: one thread per wide node writes its block ([`wide_block`], the host
//!    builder's function), linking grandchild cells through `start` and `cnt`.
//!
//! The blocks' order differs from the host builder's breadth-first order; their contents do not
//! (the estimator only follows links, and reads the root's block at row 0).

use super::*;
use crate::gpu::atomic::*;
use crate::gpu::thread::*;
use crate::sort::block_scan;
use core::ptr::{null, write_volatile};

/// A view of the octree's slots and summaries (no dipoles, no wide layout).
///
/// # Safety
/// As [`RawTree::new`].
#[inline(always)]
unsafe fn octree(
    bodies: *const Body,
    child: *const i32,
    next: *const i32,
    cell_pm: *const Body,
    n: u32,
    cells: u32,
) -> RawTree {
    // SAFETY: forwarded; the dipole and wide pointers are never read (no dipoles requested).
    unsafe {
        RawTree::new(
            bodies,
            null(),
            child,
            next,
            cell_pm,
            null(),
            null(),
            null(),
            null(),
            n,
            cells,
            0.0,
        )
    }
}

/// Spins of one wait in [`sbh_wide_mark`] before it gives up (seconds: a wait on a correct tree
/// lasts microseconds).
const MARK_SPINS: u32 = 1 << 22;

/// Step 1 (module docs). `mark` (`cells` entries) must be zero; `cnt` has `cells` entries;
/// `tile_sum` holds `ceil(cells / WIDE_TILE)` zeros; `status[1]` is zero and becomes 1 if a cell
/// in use is never reached from the root (a wait gives up after [`MARK_SPINS`]: the layout is
/// then wrong, and the host refuses it). Threads wait on each other: launch a resident grid.
#[allow(clippy::too_many_arguments)]
#[crate::kernel]
pub unsafe fn sbh_wide_mark(
    child: *const i32,
    header: *const crate::bh::TreeHeader,
    n: u32,
    cells: u32,
    mark: *mut u32,
    cnt: *mut u32,
    tile_sum: *mut u32,
    status: *mut u32,
) {
    // SAFETY: the build's arrays (module docs); positions below `used` are cells in use, each a
    // child of a cell at a smaller position, so every wait ends (the root's never starts).
    unsafe {
        let v = octree(null(), child, null(), null(), n, cells);
        let root = cells as i32 - 1;
        let used = (cells as i32 - (*header).bottom) as u32;
        let mut j = index_1d();
        while j < used {
            let k = root - j as i32;
            let m = if j == 0 {
                WIDE_EVEN
            } else {
                let mut m = load_acquire_u32(mark.add(k as usize));
                let mut spins = 0;
                while m == 0 && spins < MARK_SPINS {
                    m = load_acquire_u32(mark.add(k as usize));
                    spins += 1;
                }
                if m == 0 {
                    write_volatile(status.add(1), 1);
                }
                m
            };
            let c = wide_mark(&v, k, m == WIDE_EVEN, |ch, even| {
                store_release_u32(
                    mark.add(ch as usize),
                    if even { WIDE_EVEN } else { WIDE_ODD },
                )
            });
            *cnt.add(j as usize) = c;
            if c > 0 {
                atomic_add_u32(tile_sum.add((j / WIDE_TILE) as usize), wide_rows(c));
            }
            j += grid_size_1d();
        }
    }
}

/// Step 2: `tile_sum[0..tiles]` becomes its exclusive prefix sum, `status[0]` the sum (the
/// layout's rows). One block of [`WIDE_SCAN_BLOCK`] threads.
#[crate::kernel]
pub unsafe fn sbh_wide_scan(tile_sum: *mut u32, tiles: u32, status: *mut u32) {
    let t = thread_idx_x();
    let mut carry = 0u32;
    let mut base = 0u32;
    // SAFETY: indices below `tiles`; the loop is block-uniform.
    unsafe {
        while base < tiles {
            let i = base + t;
            let x = if i < tiles {
                *tile_sum.add(i as usize)
            } else {
                0
            };
            let (incl, sum) = block_scan(x);
            if i < tiles {
                *tile_sum.add(i as usize) = carry + incl - x;
            }
            carry += sum;
            base += block_dim_x();
        }
        if t == 0 {
            *status = carry;
        }
    }
}

/// Step 3: `start[j]` for every position `j < used`. Blocks of [`WIDE_TILE`] threads, any grid.
#[crate::kernel]
pub unsafe fn sbh_wide_start(
    header: *const crate::bh::TreeHeader,
    cells: u32,
    cnt: *const u32,
    tile_sum: *const u32,
    start: *mut u32,
) {
    // SAFETY: arrays as in the earlier steps; the tile loop is block-uniform.
    unsafe {
        let used = (cells as i32 - (*header).bottom) as u32;
        let tiles = used.div_ceil(WIDE_TILE);
        let mut t = block_idx_x();
        while t < tiles {
            let j = t * WIDE_TILE + thread_idx_x();
            let r = if j < used {
                wide_rows(*cnt.add(j as usize))
            } else {
                0
            };
            let (incl, _) = block_scan(r);
            if j < used {
                *start.add(j as usize) = *tile_sum.add(t as usize) + incl - r;
            }
            t += grid_dim_x();
        }
    }
}

/// Step 4: the blocks, into `wide_pm` and `wide_meta` (`status[0]` rows from step 2). Any grid.
#[allow(clippy::too_many_arguments)]
#[crate::kernel]
pub unsafe fn sbh_wide_fill(
    bodies: *const Body,
    child: *const i32,
    next: *const i32,
    cell_pm: *const Body,
    header: *const crate::bh::TreeHeader,
    n: u32,
    cells: u32,
    cnt: *const u32,
    start: *const u32,
    wide_pm: *mut Body,
    wide_meta: *mut WideMeta,
) {
    // SAFETY: a summarized tree and the arrays of the earlier steps; each block's rows lie below
    // the total, and no two blocks share a row.
    unsafe {
        let v = octree(bodies, child, next, cell_pm, n, cells);
        let root = cells as i32 - 1;
        let used = (cells as i32 - (*header).bottom) as u32;
        let mut j = index_1d();
        while j < used {
            let c = *cnt.add(j as usize);
            if c > 0 {
                let s = *start.add(j as usize) as usize;
                let link = |cell: i32| {
                    let at = (root - cell) as usize;
                    (*start.add(at), *cnt.add(at))
                };
                wide_block(&v, root - j as i32, false, link, |off, pm, meta, _| {
                    *wide_pm.add(s + off as usize) = pm;
                    *wide_meta.add(s + off as usize) = meta;
                });
            }
            j += grid_size_1d();
        }
    }
}
