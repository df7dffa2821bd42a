//! SPH linked cells: cell hash, counting sort, one-block scan and the 27-cell stencil search.

use super::*;

// ---------------------------------------------------------------------------------------------
// linked cells: hash, counting sort, 27-cell stencil
// ---------------------------------------------------------------------------------------------

/// Each particle's cell (`cell_of`), its rank among its cell's particles (`rank`) and the cells'
/// particle counts (`cell_count`, `grid.cells()` entries, zero before the launch). Any grid of
/// `CELL_BLOCK`-thread blocks.
#[crate::kernel]
pub unsafe fn sph_cell_hash(
    bodies: *const Body,
    n: u32,
    grid: Grid,
    cell_of: *mut u32,
    rank: *mut u32,
    cell_count: *mut u32,
) {
    let mut i = index_1d();
    // SAFETY: i < n; cell indices < grid.cells().
    unsafe {
        while i < n {
            let c = grid.index(grid.coords((*bodies.add(i as usize)).pos()));
            *cell_of.add(i as usize) = c;
            *rank.add(i as usize) = atomic_add_u32(cell_count.add(c as usize), 1);
            i += grid_size_1d();
        }
    }
}

crate::static_shared!(sph_scan_tile: [u64; SCAN_BLOCK as usize]);

/// Exclusive prefix sum of `counts[0..m]` into `offsets[0..=m]` (`offsets[m]` the total, both
/// modulo 2^32) and the exact total into `*total`. One block of `SCAN_BLOCK` threads: each sums a
/// consecutive chunk, the block scans the chunk sums, each writes its chunk.
#[crate::kernel]
pub unsafe fn sph_scan(counts: *const u32, m: u32, offsets: *mut u32, total: *mut u64) {
    let t = thread_idx_x() as usize;
    let b = SCAN_BLOCK as usize;
    let chunk = (m as usize).div_ceil(b);
    let start = (t * chunk).min(m as usize);
    let end = (start + chunk).min(m as usize);
    let tile = sph_scan_tile();
    // SAFETY: indices below m (and m for the total); whole-block barriers.
    unsafe {
        let mut sum = 0u64;
        for k in start..end {
            sum += *counts.add(k) as u64;
        }
        *tile.add(t) = sum;
        sync_threads();
        // Hillis–Steele inclusive scan of the chunk sums.
        let mut off = 1;
        while off < b {
            let v = if t >= off { *tile.add(t - off) } else { 0 };
            sync_threads();
            *tile.add(t) += v;
            sync_threads();
            off *= 2;
        }
        let mut run = *tile.add(t) - sum;
        for k in start..end {
            *offsets.add(k) = run as u32;
            run += *counts.add(k) as u64;
        }
        if t == b - 1 {
            *offsets.add(m as usize) = *tile.add(t) as u32;
            *total = *tile.add(t);
        }
    }
}

/// The counting sort's placement: `order[cell_start[cell_of[i]] + rank[i]] = i`.
#[crate::kernel]
pub unsafe fn sph_cell_scatter(
    n: u32,
    cell_of: *const u32,
    rank: *const u32,
    cell_start: *const u32,
    order: *mut u32,
) {
    let mut i = index_1d();
    // SAFETY: the scan of the cells' counts makes every target index < n and distinct.
    unsafe {
        while i < n {
            let c = *cell_of.add(i as usize);
            *order.add((*cell_start.add(c as usize) + *rank.add(i as usize)) as usize) = i;
            i += grid_size_1d();
        }
    }
}

/// Neighbours through the linked cells: thread k serves particle `order[k]` (cell order, so a
/// warp's particles share cells) and tests every particle of the 27 cells around its own
/// (`cell_start`: `grid.cells() + 1` offsets into `order`). Outputs per `mode` (module docs).
/// Any grid of `CELL_BLOCK`-thread blocks.
#[crate::kernel]
pub unsafe fn sph_cell_query(
    bodies: *const Body,
    h: *const f32,
    n: u32,
    grid: Grid,
    cell_start: *const u32,
    order: *const u32,
    crit: u32,
    mode: u32,
    o: Outputs,
) {
    // SAFETY: forwarded contract.
    unsafe {
        by_mode!(
            mode,
            cell_query(bodies, h, n, grid, cell_start, order, crit, &o)
        )
    }
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn cell_query<S: LaneSink>(
    bodies: *const Body,
    h: *const f32,
    n: u32,
    grid: Grid,
    cell_start: *const u32,
    order: *const u32,
    crit: u32,
    o: &Outputs,
) {
    let mut k = index_1d();
    let mut tested = 0u64;
    // SAFETY: k < n; cells of the clamped stencil; offsets from the scan; whole warps at the end
    // (blocks are whole warps and every lane leaves the loop).
    unsafe {
        while k < n {
            let i = *order.add(k as usize);
            k += grid_size_1d();
            if !serves(o.state, i) {
                continue;
            }
            let p = (*bodies.add(i as usize)).pos();
            let hi = *h.add(i as usize);
            let mut s = S::start(o, i, hi);
            cell_stencil(&grid, p, |c| {
                let (b, e) = (*cell_start.add(c as usize), *cell_start.add(c as usize + 1));
                tested += (e - b) as u64;
                for t in b..e {
                    let j = *order.add(t as usize);
                    let q = *bodies.add(j as usize);
                    let r2 = dist2(p, q.pos());
                    if is_neighbour(crit, r2, hi, *h.add(j as usize)) {
                        s.take(j, r2, q.m);
                    }
                }
            });
            s.finish(o, i);
        }
        add_tested(o.tested, tested);
    }
}
