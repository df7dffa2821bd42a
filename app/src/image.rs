//! Projected surface-density images of a particle set: maps deposited with
//! cloud-in-cell weights, rendered on a log scale through a perceptual colour map with a scale
//! bar, a time stamp and an optional title and colour bar; PNG files, multi-panel figures and GIF
//! animations.
//!
//! Conventions:
//! - A [`View`] is a square of side `2·half_width` about `centre`, seen along an [`Axis`]; the
//!   whole line of sight is projected (no depth cut). The image's horizontal and vertical
//!   coordinates are (y, z) along x, (x, z) along y and (x, y) along z, so z is always up when it
//!   is in the image; this is the view from +x, from −y and from +z.
//! - A [`Map`] holds surface density (mass per unit area, model units) per pixel, row-major with
//!   row 0 at the *top* (largest vertical coordinate), so pixel (column, row) of the map is pixel
//!   (column, row) of the image.
//! - Cloud-in-cell: a particle's mass is spread over the four pixels nearest to it, bilinearly in
//!   its offset from their centres; a particle within half a pixel of the edge deposits part of
//!   its mass outside the map, one farther out none.

mod animation;
mod colormap;
pub mod gas;
pub mod materials;
mod render;

pub use animation::*;
pub use render::*;

use crate::repro::{output, plot};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use rayon::prelude::*;
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use warpkit::nbody::{BULGE, DISK, HALO, Particles, TYPES};

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("bad view: {0}")]
    View(String),
    #[error("particle {index} has a non-finite position {pos:?}")]
    Position { index: usize, pos: [f64; 3] },
    #[error("particle {index} has mass {mass}: masses must be finite and not negative")]
    Mass { index: usize, mass: f64 },
    #[error("{positions} positions but {other} {what}")]
    Length {
        positions: usize,
        other: usize,
        what: &'static str,
    },
    #[error("no particle of type(s) {types} among the {n} given")]
    Empty { types: Types, n: usize },
    #[error("bad colour range: {0}")]
    Range(String),
    #[error("bad figure: {0}")]
    Figure(String),
    #[error("cannot draw: {0}")]
    Draw(String),
    #[error("cannot write {path}: {message}")]
    Write { path: PathBuf, message: String },
}

/// The line of sight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    X,
    Y,
    Z,
}

impl Axis {
    /// The coordinates shown (horizontal, vertical); see the module docs.
    pub fn plane(self) -> (usize, usize) {
        match self {
            Axis::X => (1, 2),
            Axis::Y => (0, 2),
            Axis::Z => (0, 1),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Axis::X => "x",
            Axis::Y => "y",
            Axis::Z => "z",
        }
    }
}

/// A set of Gadget particle types (a bit per type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Types(u8);

impl Types {
    pub const ALL: Types = Types((1 << TYPES) - 1);
    pub const HALO: Types = Types(1 << HALO);
    pub const DISK: Types = Types(1 << DISK);
    pub const BULGE: Types = Types(1 << BULGE);
    /// Disk and bulge.
    pub const STARS: Types = Types(1 << DISK | 1 << BULGE);

    /// Type `t` alone (types above 5 select nothing).
    pub fn only(t: u8) -> Types {
        Types(if (t as usize) < TYPES { 1 << t } else { 0 })
    }

    pub fn contains(self, t: u8) -> bool {
        (t as usize) < TYPES && self.0 >> t & 1 == 1
    }

    pub fn union(self, other: Types) -> Types {
        Types(self.0 | other.0)
    }
}

impl std::fmt::Display for Types {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = (0..TYPES as u8)
            .filter(|&t| self.contains(t))
            .map(|t| t.to_string())
            .collect();
        write!(f, "{{{}}}", names.join(", "))
    }
}

/// Which particles a map counts: all, or those whose type (`ptype[i]`) is in `types`.
#[derive(Clone, Copy, Debug)]
pub enum Select<'a> {
    All,
    Types { ptype: &'a [u8], types: Types },
}

impl<'a> Select<'a> {
    pub fn types(p: &'a Particles, types: Types) -> Self {
        Select::Types {
            ptype: &p.ptype,
            types,
        }
    }

    fn contains(&self, i: usize) -> bool {
        match self {
            Select::All => true,
            Select::Types { ptype, types } => types.contains(ptype[i]),
        }
    }

    fn check(&self, n: usize) -> Result<(), ImageError> {
        match self {
            Select::Types { ptype, .. } if ptype.len() != n => Err(ImageError::Length {
                positions: n,
                other: ptype.len(),
                what: "particle types",
            }),
            _ => Ok(()),
        }
    }

    fn types_or_all(&self) -> Types {
        match self {
            Select::All => Types::ALL,
            Select::Types { types, .. } => *types,
        }
    }
}

/// A position in float64 or float32 (as the GPU keeps them).
pub trait Position: Copy + Sync {
    fn xyz(self) -> [f64; 3];
}

impl Position for [f64; 3] {
    fn xyz(self) -> [f64; 3] {
        self
    }
}

impl Position for [f32; 3] {
    fn xyz(self) -> [f64; 3] {
        self.map(f64::from)
    }
}

/// A square map: `pixels` × `pixels` over a side of `2·half_width` about `centre`, projected along
/// `axis` (see the module docs for orientation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    pub axis: Axis,
    pub centre: [f64; 3],
    pub half_width: f64,
    pub pixels: u32,
}

/// Largest map side: 8192² float64 is 512 MiB already.
pub const MAX_PIXELS: u32 = 8192;

impl View {
    pub fn new(
        axis: Axis,
        centre: [f64; 3],
        half_width: f64,
        pixels: u32,
    ) -> Result<View, ImageError> {
        let v = View {
            axis,
            centre,
            half_width,
            pixels,
        };
        v.check()?;
        Ok(v)
    }

    fn check(&self) -> Result<(), ImageError> {
        if self.pixels == 0 || self.pixels > MAX_PIXELS {
            return Err(ImageError::View(format!(
                "{} pixels per side (1 ..= {MAX_PIXELS})",
                self.pixels
            )));
        }
        if !(self.half_width.is_finite() && self.half_width > 0.0) {
            return Err(ImageError::View(format!(
                "half width {} (must be finite and positive)",
                self.half_width
            )));
        }
        if !self.centre.iter().all(|c| c.is_finite()) {
            return Err(ImageError::View(format!("centre {:?}", self.centre)));
        }
        Ok(())
    }

    /// Frames the selected particles: centred on their centre of mass, wide enough (with a 20%
    /// margin) to hold `fraction` of their mass in the projected square. The halo's sparse outskirts
    /// would make a map of everything mostly empty; frame the stars and draw what you like.
    pub fn frame<P: Position, M: Copy + Into<f64> + Sync>(
        pos: &[P],
        mass: &[M],
        select: Select<'_>,
        axis: Axis,
        pixels: u32,
        fraction: f64,
    ) -> Result<View, ImageError> {
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(ImageError::View(format!(
                "mass fraction {fraction} (0 < f ≤ 1)"
            )));
        }
        check_lengths(pos.len(), mass.len(), &select)?;
        let (a, b) = axis.plane();
        // Centre of mass (and the checks) in one pass.
        let (m, x, count) = (0..pos.len())
            .into_par_iter()
            .filter(|&i| select.contains(i))
            .map(|i| {
                let p = pos[i].xyz();
                let w: f64 = mass[i].into();
                (w, p.map(|c| c * w), 1usize)
            })
            .reduce(
                || (0.0, [0.0; 3], 0),
                |u, v| {
                    (
                        u.0 + v.0,
                        [u.1[0] + v.1[0], u.1[1] + v.1[1], u.1[2] + v.1[2]],
                        u.2 + v.2,
                    )
                },
            );
        if count == 0 {
            return Err(ImageError::Empty {
                types: select.types_or_all(),
                n: pos.len(),
            });
        }
        first_bad(pos, mass, &select)?;
        let centre = if m > 0.0 { x.map(|c| c / m) } else { [0.0; 3] };
        // The fraction-quantile of the mass-weighted distance max(|du|, |dv|), from a histogram:
        // one parallel pass instead of a sort of millions.
        let dist = |i: usize| {
            let p = pos[i].xyz();
            (p[a] - centre[a]).abs().max((p[b] - centre[b]).abs())
        };
        let far = (0..pos.len())
            .into_par_iter()
            .filter(|&i| select.contains(i))
            .map(dist)
            .reduce(|| 0.0, f64::max);
        const BINS: usize = 1 << 16;
        let scale = BINS as f64 / far.max(f64::MIN_POSITIVE);
        let hist = (0..pos.len())
            .into_par_iter()
            .filter(|&i| select.contains(i))
            .fold(
                || vec![0.0f64; BINS],
                |mut h, i| {
                    h[((dist(i) * scale) as usize).min(BINS - 1)] += mass[i].into();
                    h
                },
            )
            .reduce(
                || vec![0.0; BINS],
                |mut u, v| {
                    u.iter_mut().zip(v).for_each(|(a, b)| *a += b);
                    u
                },
            );
        let target = fraction * m;
        let mut sum = 0.0;
        let mut edge = far;
        for (k, h) in hist.iter().enumerate() {
            sum += h;
            if sum >= target {
                edge = (k + 1) as f64 / scale;
                break;
            }
        }
        // A single particle (or all at one point) still needs a finite square.
        let half_width = if edge > 0.0 { 1.2 * edge } else { 1.0 };
        View::new(axis, centre, half_width, pixels)
    }

    /// [`View::frame`] of the particles of `types` in `p`.
    pub fn frame_particles(
        p: &Particles,
        types: Types,
        axis: Axis,
        pixels: u32,
        fraction: f64,
    ) -> Result<View, ImageError> {
        View::frame(
            &p.pos,
            &p.mass,
            Select::types(p, types),
            axis,
            pixels,
            fraction,
        )
    }

    /// Side of a pixel.
    pub fn pixel_size(&self) -> f64 {
        2.0 * self.half_width / self.pixels as f64
    }

    pub fn pixel_area(&self) -> f64 {
        self.pixel_size() * self.pixel_size()
    }

    /// The pixel (column, row) that holds `pos`, row 0 at the top; `None` outside the map.
    pub fn pixel_of(&self, pos: [f64; 3]) -> Option<(u32, u32)> {
        let (x, y) = self.continuous(pos);
        let n = self.pixels as f64;
        let (c, r) = (x + 0.5, y + 0.5);
        (c >= 0.0 && c < n && r >= 0.0 && r < n).then_some((c as u32, r as u32))
    }

    /// Position in pixel units relative to pixel (0, 0)'s centre: column, row.
    fn continuous(&self, pos: [f64; 3]) -> (f64, f64) {
        let (a, b) = self.axis.plane();
        let inv = 1.0 / self.pixel_size();
        let left = self.centre[a] - self.half_width;
        let top = self.centre[b] + self.half_width;
        ((pos[a] - left) * inv - 0.5, (top - pos[b]) * inv - 0.5)
    }
}

/// Surface density per pixel (see the module docs for the layout).
#[derive(Clone, Debug, PartialEq)]
pub struct Map {
    pub view: View,
    /// `pixels²` values, mass per unit area, row 0 at the top.
    pub density: Vec<f64>,
}

impl Map {
    /// The density at (column, row).
    pub fn at(&self, col: u32, row: u32) -> f64 {
        self.density[row as usize * self.view.pixels as usize + col as usize]
    }

    pub fn max(&self) -> f64 {
        self.density.par_iter().copied().reduce(|| 0.0, f64::max)
    }

    /// The mass the map holds: Σ density × pixel area.
    pub fn mass(&self) -> f64 {
        self.density.par_iter().sum::<f64>() * self.view.pixel_area()
    }

    /// The map convolved with a Gaussian of `sigma` pixels (cut at 3σ, normalised), which turns
    /// the dots of a few thousand particles into a readable density; mass near the edge spreads
    /// partly outside. `sigma` ≤ 0 returns a copy.
    pub fn smoothed(&self, sigma: f64) -> Map {
        // NaN too.
        if sigma.is_nan() || sigma <= 0.0 {
            return self.clone();
        }
        let n = self.view.pixels as usize;
        let r = (3.0 * sigma).ceil() as usize;
        let w: Vec<f64> = (0..=2 * r)
            .map(|k| (-((k as f64 - r as f64) / sigma).powi(2) / 2.0).exp())
            .collect();
        let total: f64 = w.iter().sum();
        let w: Vec<f64> = w.iter().map(|x| x / total).collect();
        // Rows, then columns (each output row reads 2r+1 input rows: cache friendly).
        let mut rows = vec![0.0; n * n];
        rows.par_chunks_mut(n)
            .zip(self.density.par_chunks(n))
            .for_each(|(out, row)| {
                for (i, &v) in row.iter().enumerate().filter(|(_, v)| **v != 0.0) {
                    let lo = i.saturating_sub(r);
                    let hi = (i + r).min(n - 1);
                    for (o, &wk) in out[lo..=hi].iter_mut().zip(&w[lo + r - i..]) {
                        *o += v * wk;
                    }
                }
            });
        let mut density = vec![0.0; n * n];
        density.par_chunks_mut(n).enumerate().for_each(|(j, out)| {
            let lo = j.saturating_sub(r);
            let hi = (j + r).min(n - 1);
            for (k, src) in (lo..=hi).zip(rows.chunks(n).skip(lo)) {
                let wk = w[k + r - j];
                out.iter_mut().zip(src).for_each(|(o, &v)| *o += v * wk);
            }
        });
        Map {
            view: self.view,
            density,
        }
    }

    /// [`surface_density`] of the particles of `types` in `p`.
    pub fn of(p: &Particles, types: Types, view: &View) -> Result<Map, ImageError> {
        surface_density(&p.pos, &p.mass, Select::types(p, types), view)
    }
}

fn check_lengths(n: usize, masses: usize, select: &Select<'_>) -> Result<(), ImageError> {
    if masses != n {
        return Err(ImageError::Length {
            positions: n,
            other: masses,
            what: "masses",
        });
    }
    select.check(n)
}

/// The first selected particle with a non-finite position or a bad mass, as an error.
fn first_bad<P: Position, M: Copy + Into<f64> + Sync>(
    pos: &[P],
    mass: &[M],
    select: &Select<'_>,
) -> Result<(), ImageError> {
    let bad = (0..pos.len()).into_par_iter().find_first(|&i| {
        let m: f64 = mass[i].into();
        select.contains(i)
            && !(pos[i].xyz().iter().all(|c| c.is_finite()) && m.is_finite() && m >= 0.0)
    });
    match bad {
        None => Ok(()),
        Some(index) => {
            let p = pos[index].xyz();
            let m: f64 = mass[index].into();
            if p.iter().all(|c| c.is_finite()) {
                Err(ImageError::Mass { index, mass: m })
            } else {
                Err(ImageError::Position { index, pos: p })
            }
        }
    }
}

/// Projected surface density (mass per unit area) of the selected particles on `view`, deposited
/// cloud-in-cell. Threads deposit chunks of particles into private grids that are then summed, so
/// the result does not depend on scheduling beyond the summation order. Errors: mismatched
/// lengths, no particle selected, a selected particle with a non-finite position or a negative or
/// non-finite mass.
pub fn surface_density<P: Position, M: Copy + Into<f64> + Sync>(
    pos: &[P],
    mass: &[M],
    select: Select<'_>,
    view: &View,
) -> Result<Map, ImageError> {
    view.check()?;
    check_lengths(pos.len(), mass.len(), &select)?;
    let n = pos.len();
    let side = view.pixels as usize;
    let cells = side * side;
    // One private grid per chunk: enough chunks for every thread, few enough that the grids stay
    // within 256 MiB and each has work worth its zeroing and summing.
    let by_memory = ((256usize << 20) / (cells * 8)).max(1);
    let chunks = rayon::current_num_threads()
        .min(by_memory)
        .min(n / (1 << 15) + 1)
        .max(1);
    let per = n.div_ceil(chunks);
    struct Part {
        grid: Vec<f64>,
        selected: usize,
        bad: Option<usize>,
    }
    let nf = side as f64;
    let part = (0..chunks)
        .into_par_iter()
        .map(|c| {
            let mut grid = vec![0.0f64; cells];
            let (mut selected, mut bad) = (0, None);
            for i in c * per..((c + 1) * per).min(n) {
                if !select.contains(i) {
                    continue;
                }
                selected += 1;
                let p = pos[i].xyz();
                let m: f64 = mass[i].into();
                if !(p.iter().all(|c| c.is_finite()) && m.is_finite() && m >= 0.0) {
                    bad = bad.or(Some(i));
                    continue;
                }
                let (x, y) = view.continuous(p);
                // Nothing of it lands on the map (also keeps the casts below in range).
                if !(x > -1.0 && x < nf && y > -1.0 && y < nf) {
                    continue;
                }
                let (fx, fy) = (x.floor(), y.floor());
                let (wx, wy) = (x - fx, y - fy);
                let (i0, j0) = (fx as isize, fy as isize);
                for (dj, w_row) in [(0, 1.0 - wy), (1, wy)] {
                    let j = j0 + dj;
                    if j < 0 || j >= side as isize {
                        continue;
                    }
                    let row = &mut grid[j as usize * side..(j as usize + 1) * side];
                    for (di, w) in [(0, 1.0 - wx), (1, wx)] {
                        let i = i0 + di;
                        if i >= 0 && i < side as isize {
                            row[i as usize] += m * w_row * w;
                        }
                    }
                }
            }
            Part {
                grid,
                selected,
                bad,
            }
        })
        .reduce_with(|mut a, b| {
            a.grid
                .par_iter_mut()
                .with_min_len(1 << 14)
                .zip(&b.grid)
                .for_each(|(x, y)| *x += y);
            a.selected += b.selected;
            a.bad = match (a.bad, b.bad) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            };
            a
        });
    let Some(mut part) = part else {
        return Err(ImageError::Empty {
            types: select.types_or_all(),
            n,
        });
    };
    if part.bad.is_some() {
        first_bad(pos, mass, &select)?;
    }
    if part.selected == 0 {
        return Err(ImageError::Empty {
            types: select.types_or_all(),
            n,
        });
    }
    let inv_area = 1.0 / view.pixel_area();
    part.grid
        .par_iter_mut()
        .with_min_len(1 << 14)
        .for_each(|v| *v *= inv_area);
    Ok(Map {
        view: *view,
        density: part.grid,
    })
}

#[cfg(test)]
mod tests;
