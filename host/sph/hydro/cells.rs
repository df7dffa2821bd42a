//! The CPU neighbour search of the hydro solver: a cell list over the particles (a counting
//! sort by cell), queried with any radius, with minimum-image wrap in a periodic box.

use super::Boundary;
use rayon::prelude::*;

/// Particles sorted into a grid of cells.
pub struct CellList {
    lo: [f64; 3],
    /// Cell widths.
    width: [f64; 3],
    dims: [usize; 3],
    boundary: Boundary,
    /// `start[c]..start[c + 1]` indexes `idx` with the particles of cell `c`.
    start: Vec<u32>,
    idx: Vec<u32>,
    /// Each cell's largest smoothing length (empty cells: 0), outliers left out.
    hmax: Vec<f64>,
    /// The largest of all, outliers left out.
    hmax_all: f64,
    /// The outliers: particles whose `h` spans more than [`OUTLIER_CELLS`] cell widths (a lone
    /// particle far from the rest, ejecta, whose `h` reaches back to the others). The symmetric
    /// search checks them one by one; in the cells they would widen every query to their `h`.
    outliers: Vec<u32>,
    is_outlier: Vec<bool>,
}

/// An `h` above this many cell widths makes a particle an outlier of the symmetric search.
const OUTLIER_CELLS: f64 = 4.0;

/// A query over more cells than this visits the `n` particles directly instead (mostly empty
/// cells cost more than the particles themselves).
fn brute_force_above(n: usize) -> usize {
    2 * n.max(4096)
}

/// Cells in all at most (the grid is coarsened to fit).
const MAX_CELLS: usize = 1 << 21;

impl CellList {
    /// The grid for particles at `pos` with smoothing lengths `h`: cells about as wide as the
    /// median `h` (a few large ones, as in a blast's evacuated centre, do not coarsen it; their
    /// queries visit more cells).
    pub fn with_h(pos: &[[f64; 3]], h: &[f64], boundary: &Boundary) -> Self {
        let mut s = h.to_vec();
        let mid = s.len() / 2;
        let median = if s.is_empty() {
            1.0
        } else {
            *s.select_nth_unstable_by(mid, f64::total_cmp).1
        };
        let mut list = Self::new(pos, boundary, median.min(boundary.half_width()));
        let limit = OUTLIER_CELLS * list.width.iter().cloned().fold(0.0, f64::max);
        list.is_outlier = h.iter().map(|&hj| hj > limit).collect();
        list.outliers = (0..h.len() as u32)
            .filter(|&j| list.is_outlier[j as usize])
            .collect();
        let mut hmax = vec![0.0f64; list.start.len() - 1];
        for (c, hc) in hmax.iter_mut().enumerate() {
            let (a, b) = (list.start[c] as usize, list.start[c + 1] as usize);
            for &j in &list.idx[a..b] {
                if !list.is_outlier[j as usize] {
                    *hc = hc.max(h[j as usize]);
                }
            }
        }
        list.hmax_all = hmax.iter().cloned().fold(0.0, f64::max);
        list.hmax = hmax;
        list
    }

    /// A grid of cells about `cell` wide (at least) over `pos`: the box itself when periodic,
    /// the particles' bounding box when open.
    pub fn new(pos: &[[f64; 3]], boundary: &Boundary, cell: f64) -> Self {
        let (lo, ext) = match boundary {
            Boundary::Periodic(l) => ([0.0; 3], *l),
            Boundary::Open => {
                let mut lo = [f64::INFINITY; 3];
                let mut hi = [f64::NEG_INFINITY; 3];
                for p in pos {
                    for k in 0..3 {
                        lo[k] = lo[k].min(p[k]);
                        hi[k] = hi[k].max(p[k]);
                    }
                }
                (lo, core::array::from_fn(|k| (hi[k] - lo[k]).max(1e-300)))
            }
        };
        let mut cell = cell.max(1e-300);
        let dims = loop {
            let d: [usize; 3] = core::array::from_fn(|k| ((ext[k] / cell) as usize).clamp(1, 1024));
            if d[0] * d[1] * d[2] <= MAX_CELLS {
                break d;
            }
            cell *= 1.25;
        };
        let width = core::array::from_fn(|k| ext[k] / dims[k] as f64);
        let mut list = CellList {
            lo,
            width,
            dims,
            boundary: *boundary,
            start: Vec::new(),
            idx: Vec::new(),
            hmax: Vec::new(),
            hmax_all: 0.0,
            outliers: Vec::new(),
            is_outlier: Vec::new(),
        };
        let ncell = dims[0] * dims[1] * dims[2];
        let cells: Vec<usize> = pos
            .par_iter()
            .map(|p| list.index(list.coords(*p)))
            .collect();
        let mut start = vec![0u32; ncell + 1];
        for &c in &cells {
            start[c + 1] += 1;
        }
        for c in 0..ncell {
            start[c + 1] += start[c];
        }
        let mut fill = start.clone();
        let mut idx = vec![0u32; pos.len()];
        for (i, &c) in cells.iter().enumerate() {
            idx[fill[c] as usize] = i as u32;
            fill[c] += 1;
        }
        list.start = start;
        list.idx = idx;
        list
    }

    fn coords(&self, p: [f64; 3]) -> [usize; 3] {
        core::array::from_fn(|k| {
            let u = ((p[k] - self.lo[k]) / self.width[k]).floor();
            // Open: clamped to the grid; periodic: positions are wrapped, the clamp only catches
            // rounding at the upper face.
            (u.max(0.0) as usize).min(self.dims[k] - 1)
        })
    }

    fn index(&self, c: [usize; 3]) -> usize {
        (c[2] * self.dims[1] + c[1]) * self.dims[0] + c[0]
    }

    /// The cell coordinates along axis `k` that a query of radius `radius` around cell
    /// coordinate `c` must visit, each once.
    fn range(&self, k: usize, c: usize, radius: f64) -> impl Iterator<Item = usize> + use<> {
        let d = self.dims[k];
        let n = (radius / self.width[k]).ceil() as usize;
        let periodic = matches!(self.boundary, Boundary::Periodic(_));
        let (lo, hi) = if periodic {
            if 2 * n + 1 >= d {
                (0, d as isize - 1)
            } else {
                (c as isize - n as isize, (c + n) as isize)
            }
        } else {
            (c.saturating_sub(n) as isize, (c + n).min(d - 1) as isize)
        };
        (lo..=hi).map(move |x| x.rem_euclid(d as isize) as usize)
    }

    /// Calls `f(j, dx, r)` for every particle `j` with `r = |dx| < radius`, `dx = p − pos[j]`
    /// (minimum image when periodic; `p` itself included if it is one of `pos`).
    pub fn for_each_within(
        &self,
        pos: &[[f64; 3]],
        p: [f64; 3],
        radius: f64,
        mut f: impl FnMut(usize, [f64; 3], f64),
    ) {
        let c = self.coords(p);
        let r2max = radius * radius;
        // A query over far more cells than there are particles (an outlier's `h`): every
        // particle once.
        if self.cells_within(radius) > brute_force_above(pos.len()) {
            for (j, q) in pos.iter().enumerate() {
                let dx = self.boundary.image([p[0] - q[0], p[1] - q[1], p[2] - q[2]]);
                let r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
                if r2 < r2max {
                    f(j, dx, r2.sqrt());
                }
            }
            return;
        }
        for z in self.range(2, c[2], radius) {
            for y in self.range(1, c[1], radius) {
                for x in self.range(0, c[0], radius) {
                    let cell = self.index([x, y, z]);
                    let (a, b) = (self.start[cell] as usize, self.start[cell + 1] as usize);
                    for &j in &self.idx[a..b] {
                        let j = j as usize;
                        let q = pos[j];
                        let dx = self.boundary.image([p[0] - q[0], p[1] - q[1], p[2] - q[2]]);
                        let r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
                        if r2 < r2max {
                            f(j, dx, r2.sqrt());
                        }
                    }
                }
            }
        }
    }

    /// The number of cells a query of radius `radius` visits.
    fn cells_within(&self, radius: f64) -> usize {
        (0..3)
            .map(|k| {
                let n = (radius / self.width[k]).ceil();
                if n >= self.dims[k] as f64 {
                    self.dims[k]
                } else {
                    (2 * n as usize + 1).min(self.dims[k])
                }
            })
            .product()
    }

    /// The distance along axis `k` from coordinate `x` to cell coordinate `c`'s slab (minimum
    /// image when periodic).
    fn gap(&self, k: usize, x: f64, c: usize) -> f64 {
        let centre = self.lo[k] + (c as f64 + 0.5) * self.width[k];
        let mut d = x - centre;
        if let Boundary::Periodic(l) = self.boundary {
            d -= l[k] * (d / l[k]).round();
        }
        (d.abs() - 0.5 * self.width[k]).max(0.0)
    }

    /// Calls `f(j, dx, r)` for every particle `j` with `r < max(hi, h[j])` (the symmetric
    /// criterion of the force pass), skipping cells whose largest `h` and distance rule them out
    /// (a grid made by [`Self::with_h`] with the same `h`).
    pub fn for_each_symmetric(
        &self,
        pos: &[[f64; 3]],
        h: &[f64],
        p: [f64; 3],
        hi: f64,
        mut f: impl FnMut(usize, [f64; 3], f64),
    ) {
        let c = self.coords(p);
        let reach = hi.max(self.hmax_all);
        let pair = |j: usize, f: &mut dyn FnMut(usize, [f64; 3], f64)| {
            let q = pos[j];
            let dx = self.boundary.image([p[0] - q[0], p[1] - q[1], p[2] - q[2]]);
            let r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
            let rj = hi.max(h[j]);
            if r2 < rj * rj {
                f(j, dx, r2.sqrt());
            }
        };
        // An outlier's own query: every particle once.
        if self.cells_within(reach) > brute_force_above(pos.len()) {
            for j in 0..pos.len() {
                pair(j, &mut f);
            }
            return;
        }
        for &j in &self.outliers {
            pair(j as usize, &mut f);
        }
        for z in self.range(2, c[2], reach) {
            let gz = self.gap(2, p[2], z);
            for y in self.range(1, c[1], reach) {
                let gy = self.gap(1, p[1], y);
                for x in self.range(0, c[0], reach) {
                    let cell = self.index([x, y, z]);
                    let rc = hi.max(self.hmax[cell]);
                    let gx = self.gap(0, p[0], x);
                    if gx * gx + gy * gy + gz * gz >= rc * rc {
                        continue;
                    }
                    let (a, b) = (self.start[cell] as usize, self.start[cell + 1] as usize);
                    for &j in &self.idx[a..b] {
                        if !self.is_outlier[j as usize] {
                            pair(j as usize, &mut f);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "cells_tests.rs"]
mod tests;
