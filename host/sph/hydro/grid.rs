//! Gas on a square grid by SPH kernel interpolation, for images: the density in a plane,
//! `ρ(x) = Σ_j m_j W(|x − x_j|, h_j)`, and the column density along the third axis,
//! `Σ(x) = Σ_j m_j F(R_j, h_j)` with the projected kernel `F(R, h) = ∫ W(√(R² + z²), h) dz`.
//!
//! Each particle's kernel is sampled at the pixel centres, with its support widened to one pixel
//! where `h` is smaller, so that no particle falls between pixels. In a periodic box every image
//! of a particle counts in the plane (a view of the whole box shows particles near one edge on
//! the other as well, a wider one the box tiled), and the slice's depth is a minimum image.

use super::{Boundary, Gas};
use crate::device::sph::hydro::w;
use crate::sph::SmoothingKernel;
use rayon::prelude::*;

/// A square of `pixels²` cells of side `2·half_width` about `centre` in the plane of axes
/// `axes = [horizontal, vertical]` (0, 1, 2 for x, y, z); the remaining axis is the line of
/// sight. Values are row-major with row 0 at the top (the largest vertical coordinate).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    pub axes: [usize; 2],
    pub centre: [f64; 3],
    pub half_width: f64,
    pub pixels: usize,
}

impl Grid {
    /// The axis along the line of sight.
    pub fn depth(&self) -> usize {
        3 - self.axes[0] - self.axes[1]
    }

    pub fn pixel_size(&self) -> f64 {
        2.0 * self.half_width / self.pixels as f64
    }

    /// The plane coordinates of pixel (column, row)'s centre.
    pub fn at(&self, col: usize, row: usize) -> [f64; 2] {
        let d = self.pixel_size();
        let [a, b] = self.axes;
        [
            self.centre[a] - self.half_width + (col as f64 + 0.5) * d,
            self.centre[b] + self.half_width - (row as f64 + 0.5) * d,
        ]
    }

    fn valid(&self) -> bool {
        let [a, b] = self.axes;
        a < 3 && b < 3 && a != b && self.pixels > 0 && self.half_width > 0.0
    }
}

/// The density in the plane through `grid.centre` (see the module docs).
pub fn slice_density(
    gas: &Gas,
    kernel: SmoothingKernel,
    boundary: &Boundary,
    grid: &Grid,
) -> Vec<f64> {
    deposit(
        gas,
        &gas.mass,
        boundary,
        grid,
        in_plane(gas, kernel, boundary, grid),
    )
}

/// The mass-weighted mean of `value` (one per particle) in the plane through `grid.centre`,
/// `Σ_j m_j v_j W / Σ_j m_j W`, e.g. the specific internal energy of a cross-section; NaN
/// where no particle's kernel reaches.
pub fn slice_mean(
    gas: &Gas,
    kernel: SmoothingKernel,
    boundary: &Boundary,
    grid: &Grid,
    value: &[f64],
) -> Vec<f64> {
    let weighted: Vec<f64> = gas.mass.iter().zip(value).map(|(m, v)| m * v).collect();
    let kernel = in_plane(gas, kernel, boundary, grid);
    let sum = deposit(gas, &weighted, boundary, grid, &kernel);
    let mass = deposit(gas, &gas.mass, boundary, grid, &kernel);
    sum.iter()
        .zip(&mass)
        .map(|(&s, &m)| if m > 0.0 { s / m } else { f64::NAN })
        .collect()
}

/// The kernel of particle `i` at in-plane distance² `r2` from a pixel of the plane through
/// `grid.centre`, its depth a minimum image.
fn in_plane<'a>(
    gas: &'a Gas,
    kernel: SmoothingKernel,
    boundary: &'a Boundary,
    grid: &'a Grid,
) -> impl Fn(usize, f64, f64) -> f64 + Sync + 'a {
    let code = kernel.code();
    let z0 = grid.centre[grid.depth()];
    move |i, r2, h| {
        let mut d = [0.0; 3];
        d[grid.depth()] = gas.pos[i][grid.depth()] - z0;
        let dz = boundary.image(d)[grid.depth()];
        let r = (r2 + dz * dz).sqrt();
        if r < h { w(code, r, h) } else { 0.0 }
    }
}

/// The column density along the line of sight through the whole gas (see the module docs).
pub fn column_density(
    gas: &Gas,
    kernel: SmoothingKernel,
    boundary: &Boundary,
    grid: &Grid,
) -> Vec<f64> {
    let table = projected_kernel(kernel);
    let last = (table.len() - 1) as f64;
    deposit(gas, &gas.mass, boundary, grid, |_, r2, h| {
        let q = r2.sqrt() / h;
        if q >= 1.0 {
            return 0.0;
        }
        // Linear in the table of F(q) for h = 1, scaled by 1/h².
        let x = q * last;
        let k = (x as usize).min(table.len() - 2);
        let f = table[k] + (table[k + 1] - table[k]) * (x - k as f64);
        f / (h * h)
    })
}

/// `F(q) = ∫ W(√(q² + s²), 1) ds` at `q = k/256`, `k = 0 … 256`, by Simpson's rule.
fn projected_kernel(kernel: SmoothingKernel) -> Vec<f64> {
    let code = kernel.code();
    const STEPS: usize = 256;
    const SIMPSON: usize = 200;
    (0..=STEPS)
        .map(|k| {
            let q = k as f64 / STEPS as f64;
            let zmax = (1.0 - q * q).max(0.0).sqrt();
            let dz = zmax / SIMPSON as f64;
            let f = |j: usize| {
                let z = j as f64 * dz;
                w(code, (q * q + z * z).sqrt(), 1.0)
            };
            let inner: f64 = (1..SIMPSON)
                .map(|j| if j % 2 == 1 { 4.0 } else { 2.0 } * f(j))
                .sum();
            // Both halves of the line of sight.
            2.0 * dz / 3.0 * (f(0) + inner + f(SIMPSON))
        })
        .collect()
}

/// `Σ_j weight_j kernel(j, R², h)` per pixel, R the in-plane distance to the pixel centre and
/// h the particle's support widened to one pixel. Rows are filled in parallel, each from the
/// particles whose support reaches it.
fn deposit(
    gas: &Gas,
    weight: &[f64],
    boundary: &Boundary,
    grid: &Grid,
    kernel: impl Fn(usize, f64, f64) -> f64 + Sync,
) -> Vec<f64> {
    let n = grid.pixels;
    let mut out = vec![0.0; n * n];
    if !grid.valid() || gas.is_empty() {
        return out;
    }
    let d = grid.pixel_size();
    let [a, b] = grid.axes;
    // Each particle's in-plane position and support; in a periodic box every image that
    // reaches the grid (a view wider than the box shows it tiled).
    let period = match boundary {
        Boundary::Periodic(l) => [l[a], l[b]],
        Boundary::Open => [f64::INFINITY; 2],
    };
    let images = |x: f64, h: f64, k: usize| -> std::ops::RangeInclusive<i64> {
        let (c, l) = (grid.centre[grid.axes[k]], period[k]);
        if l.is_infinite() {
            // Off the grid, the rows and columns below skip it.
            return 0..=0;
        }
        let lo = ((c - grid.half_width - h - x) / l).ceil() as i64;
        let hi = ((c + grid.half_width + h - x) / l).floor() as i64;
        lo..=hi
    };
    let mut parts: Vec<(usize, [f64; 2], f64)> = Vec::new();
    for i in 0..gas.len() {
        let (x, y) = (gas.pos[i][a], gas.pos[i][b]);
        let h = gas.h[i].max(d);
        for sa in images(x, h, 0) {
            for sb in images(y, h, 1) {
                // (No shift in an open box: 0 × ∞ would be NaN.)
                let shift = |k: i64, l: f64| if k == 0 { 0.0 } else { k as f64 * l };
                let p = [x + shift(sa, period[0]), y + shift(sb, period[1])];
                parts.push((i, p, h));
            }
        }
    }
    let left = grid.centre[a] - grid.half_width;
    out.par_chunks_mut(n).enumerate().for_each(|(row, values)| {
        let y = grid.at(0, row)[1];
        for &(i, p, h) in &parts {
            let dy = p[1] - y;
            if dy.abs() >= h {
                continue;
            }
            let lo = (((p[0] - h - left) / d).floor().max(0.0)) as usize;
            let hi = (((p[0] + h - left) / d).ceil().min(n as f64)) as usize;
            for (col, v) in values.iter_mut().enumerate().take(hi).skip(lo) {
                let dx = p[0] - (left + (col as f64 + 0.5) * d);
                let r2 = dx * dx + dy * dy;
                if r2 < h * h {
                    *v += weight[i] * kernel(i, r2, h);
                }
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projected_kernel_holds_unit_mass() {
        for kernel in [SmoothingKernel::CubicSpline, SmoothingKernel::WendlandC2] {
            let f = projected_kernel(kernel);
            // ∫ F(q) 2πq dq over the unit disc.
            let dq = 1.0 / (f.len() - 1) as f64;
            let mass: f64 = (1..f.len() - 1)
                .map(|k| f[k] * 2.0 * std::f64::consts::PI * k as f64 * dq * dq)
                .sum();
            assert!((mass - 1.0).abs() < 2e-3, "{kernel:?}: {mass}");
        }
    }

    #[test]
    fn one_particle_is_centred_and_conserves_mass() {
        let mut gas = Gas::new(
            vec![[0.3, 0.6, 0.5]],
            vec![[0.0; 3]],
            vec![2.0],
            vec![1.0],
            vec![0.2],
            1.0,
        );
        gas.rho = vec![1.0];
        let grid = Grid {
            axes: [0, 1],
            centre: [0.5; 3],
            half_width: 0.5,
            pixels: 100,
        };
        let k = SmoothingKernel::CubicSpline;
        let col = column_density(&gas, k, &Boundary::Open, &grid);
        let area = grid.pixel_size().powi(2);
        let mass: f64 = col.iter().sum::<f64>() * area;
        assert!((mass - 2.0).abs() < 0.01, "mass {mass}");
        let peak = (0..col.len()).fold(0, |m, i| if col[i] > col[m] { i } else { m });
        // x = 0.3 is column 29.5, y = 0.6 row 39.5 from the top.
        assert!([29, 30].contains(&(peak % 100)) && [39, 40].contains(&(peak / 100)));
        let slice = slice_density(&gas, k, &Boundary::Open, &grid);
        let centre = slice[peak];
        assert!((centre - 2.0 * w(k.code(), 0.0, 0.2)).abs() < 0.1 * centre);
        // Periodic: a particle at the left edge shows on the right as well.
        gas.pos[0] = [0.02, 0.5, 0.5];
        let wrapped = column_density(&gas, k, &Boundary::Periodic([1.0; 3]), &grid);
        assert!(wrapped[50 * 100 + 99] > 0.0);
        let open = column_density(&gas, k, &Boundary::Open, &grid);
        assert_eq!(open[50 * 100 + 99], 0.0);
    }

    /// Two overlapping blobs of u = 1 (left) and u = 10 (right): the mean is each blob's value
    /// away from the overlap, between them inside it, and NaN where no particle reaches.
    #[test]
    fn the_slice_mean_follows_each_blob() {
        let mut pos = Vec::new();
        let mut u = Vec::new();
        for k in 0..200 {
            let t = k as f64 * 0.61;
            let r = 0.05 * (k as f64 / 200.0).sqrt();
            for (x, v) in [(0.35, 1.0), (0.65, 10.0)] {
                pos.push([x + r * t.cos(), 0.5 + r * t.sin(), 0.5]);
                u.push(v);
            }
        }
        let n = pos.len();
        let gas = Gas::new(
            pos,
            vec![[0.0; 3]; n],
            vec![1.0; n],
            u.clone(),
            vec![0.2; n],
            1.0,
        );
        let grid = Grid {
            axes: [0, 1],
            centre: [0.5; 3],
            half_width: 0.5,
            pixels: 100,
        };
        let k = SmoothingKernel::CubicSpline;
        let m = slice_mean(&gas, k, &Boundary::Open, &grid, &u);
        let at = |x: f64| m[50 * 100 + (x * 100.0) as usize];
        assert!((at(0.3) - 1.0).abs() < 1e-9, "{}", at(0.3));
        assert!((at(0.7) - 10.0).abs() < 1e-9, "{}", at(0.7));
        assert!(at(0.5) > 1.5 && at(0.5) < 9.5, "{}", at(0.5));
        assert!(at(0.05).is_nan());
    }
}
