//! The linked-cell grid of the cell-list search: cells at least the largest `h` wide, so that a
//! target's neighbours lie in the 27 cells around its own.

/// The linked-cell grid: origin, inverse cell size, cells per axis. Cells are at least the largest
/// `h` wide (with slack for float32 rounding of the cell coordinates), so a neighbour is always in
/// the 27 cells around its target's.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Grid {
    pub lo: [f32; 3],
    pub inv: f32,
    pub dims: [u32; 3],
    pub _pad: u32,
}

impl Grid {
    /// Cell coordinates of `p`, clamped to the grid.
    #[inline(always)]
    pub fn coords(&self, p: [f32; 3]) -> [u32; 3] {
        core::array::from_fn(|k| {
            let u = (p[k] - self.lo[k]) * self.inv;
            // `as` saturates: negative and NaN go to 0.
            (u as u32).min(self.dims[k] - 1)
        })
    }
    /// The linear index of cell `c`.
    #[inline(always)]
    pub fn index(&self, c: [u32; 3]) -> u32 {
        (c[2] * self.dims[1] + c[1]) * self.dims[0] + c[0]
    }
    pub fn cells(&self) -> u32 {
        self.dims[0] * self.dims[1] * self.dims[2]
    }
    /// The 27-cell stencil around `c`, clamped: lower and upper corners (inclusive).
    #[inline(always)]
    pub fn stencil(&self, c: [u32; 3]) -> ([u32; 3], [u32; 3]) {
        (
            core::array::from_fn(|k| c[k].saturating_sub(1)),
            core::array::from_fn(|k| (c[k] + 1).min(self.dims[k] - 1)),
        )
    }
}

/// Calls `f` with each cell of the 27-cell stencil around `p`'s cell (clamped to the grid), in
/// z, y, x order.
#[inline(always)]
pub fn cell_stencil(grid: &Grid, p: [f32; 3], mut f: impl FnMut(u32)) {
    let (lo, hi) = grid.stencil(grid.coords(p));
    for z in lo[2]..=hi[2] {
        for y in lo[1]..=hi[1] {
            for x in lo[0]..=hi[0] {
                f(grid.index([x, y, z]));
            }
        }
    }
}

/// Cells per axis at most: bounds the float32 error of a cell coordinate (≤ 2 ulp of 1024) well
/// below the grid's slack.
pub const GRID_MAX_DIM: u32 = 1024;
/// Relative slack of the cell size over the largest `h`.
pub const GRID_SLACK: f32 = 1e-3;

/// The grid for points in `[lo, hi]` with largest smoothing length `hmax`, of at most `max_cells`
/// cells (grown coarser until it fits; coarser cells stay correct).
pub fn grid_for(lo: [f32; 3], hi: [f32; 3], hmax: f32, max_cells: u32) -> Grid {
    let ext = (0..3).fold(0.0f32, |e, k| e.max(hi[k] - lo[k]));
    let mut cell = (hmax * (1.0 + GRID_SLACK))
        .max(ext / GRID_MAX_DIM as f32 * (1.0 + GRID_SLACK))
        .max(1e-30);
    loop {
        let dims: [u32; 3] =
            core::array::from_fn(|k| (((hi[k] - lo[k]) / cell) as u32 + 1).min(GRID_MAX_DIM));
        let total = dims[0] as u64 * dims[1] as u64 * dims[2] as u64;
        if total <= max_cells.max(1) as u64 {
            return Grid {
                lo,
                inv: 1.0 / cell,
                dims,
                _pad: 0,
            };
        }
        cell *= 1.25;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_cells_cover_the_largest_h() {
        let g = grid_for([0.0; 3], [1.0, 2.0, 0.5], 0.1, 1 << 20);
        assert!(1.0 / g.inv >= 0.1);
        assert_eq!(
            g.coords([1.0, 2.0, 0.5]),
            [g.dims[0] - 1, g.dims[1] - 1, g.dims[2] - 1]
        );
        // A tiny h on a large box: capped cells, still at least h wide.
        let g = grid_for([0.0; 3], [1.0; 3], 1e-6, 4096);
        assert!(g.cells() <= 4096 && 1.0 / g.inv >= 1e-6);
        // h = 0 and a single point.
        let g = grid_for([3.0; 3], [3.0; 3], 0.0, 8);
        assert_eq!(g.cells(), 1);
        assert_eq!(g.coords([3.0; 3]), [0, 0, 0]);
    }
}
