//! Projected surface-density images of a particle set (issue 14): maps deposited with
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

mod colormap;

use super::{BULGE, DISK, HALO, Particles, TYPES};
use crate::repro::{output, plot};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use rayon::prelude::*;
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

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

/// A perceptually uniform colour map (tables in `image/colormap.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colormap {
    /// Black through purple and orange to pale yellow: stars, or everything.
    Magma,
    /// Dark blue through green to yellow: dark matter beside magma stars.
    Viridis,
}

/// The surface densities at the bottom and top of the log colour scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub lo: f64,
    pub hi: f64,
}

impl Range {
    pub fn new(lo: f64, hi: f64) -> Result<Range, ImageError> {
        if lo > 0.0 && hi > lo && hi.is_finite() {
            Ok(Range { lo, hi })
        } else {
            Err(ImageError::Range(format!(
                "[{lo}, {hi}] (need 0 < lo < hi < ∞)"
            )))
        }
    }

    /// `decades` below the brightest pixel of any of `maps` up to it; shared by the frames of an
    /// animation or the panels of a figure so equal brightness means equal density.
    pub fn dynamic<'a>(
        maps: impl IntoIterator<Item = &'a Map>,
        decades: f64,
    ) -> Result<Range, ImageError> {
        let hi = maps.into_iter().map(Map::max).fold(0.0, f64::max);
        if hi <= 0.0 {
            return Err(ImageError::Range(
                "every map is empty: no density to scale to".into(),
            ));
        }
        Range::new(hi / 10f64.powf(decades), hi)
    }
}

/// Conversions from model units for the labels: a model length is `length` `length_name` (e.g.
/// 3.5 kpc for `ic::DiskGalaxy::default`), a model time `time` `time_name` (14 Myr there), a model
/// mass `mass` `mass_name` (5·10^10 M☉ there); the colour bar shows Σ in
/// `mass_name`/`length_name`².
#[derive(Clone, Debug, PartialEq)]
pub struct Units {
    pub length: f64,
    pub length_name: String,
    pub time: f64,
    pub time_name: String,
    pub mass: f64,
    pub mass_name: String,
}

impl Default for Units {
    /// Model units, labelled without a unit.
    fn default() -> Self {
        Units::new(1.0, "", 1.0, "")
    }
}

impl Units {
    /// Lengths and times; masses stay in model units.
    pub fn new(length: f64, length_name: &str, time: f64, time_name: &str) -> Self {
        Units {
            length,
            length_name: length_name.into(),
            time,
            time_name: time_name.into(),
            mass: 1.0,
            mass_name: String::new(),
        }
    }

    pub fn with_mass(self, mass: f64, mass_name: &str) -> Self {
        Units {
            mass,
            mass_name: mass_name.into(),
            ..self
        }
    }

    /// Factor from model surface density to the labels' unit.
    fn density(&self) -> f64 {
        self.mass / (self.length * self.length)
    }

    fn density_name(&self) -> String {
        match (self.mass_name.is_empty(), self.length_name.is_empty()) {
            (true, true) => "Σ".into(),
            (false, false) => format!("Σ [{}/{}²]", self.mass_name, self.length_name),
            (false, true) => format!("Σ [{}]", self.mass_name),
            (true, false) => format!("Σ [1/{}²]", self.length_name),
        }
    }
}

/// How a map is drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Style {
    pub colormap: Colormap,
    /// The colour scale; `None`: `decades` below the map's brightest pixel.
    pub range: Option<Range>,
    pub decades: f64,
    /// Time stamp (model units), top left.
    pub time: Option<f64>,
    /// Top right.
    pub title: Option<String>,
    pub units: Units,
    pub scale_bar: bool,
    /// A small log colour bar at the right edge (surface density in model units).
    pub colorbar: bool,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            colormap: Colormap::Magma,
            range: None,
            decades: 4.0,
            time: None,
            title: None,
            units: Units::default(),
            scale_bar: true,
            colorbar: false,
        }
    }
}

/// An RGB image, 8 bits per channel, rows from the top.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

impl Image {
    pub fn new(width: u32, height: u32, fill: [u8; 3]) -> Image {
        Image {
            width,
            height,
            rgb: fill.repeat(width as usize * height as usize),
        }
    }

    pub fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let k = 3 * (y as usize * self.width as usize + x as usize);
        [self.rgb[k], self.rgb[k + 1], self.rgb[k + 2]]
    }

    /// The PNG file's bytes (through the figures' encoder).
    pub fn png(&self) -> Result<Vec<u8>, ImageError> {
        plot::encode_png(&self.rgb, (self.width, self.height)).map_err(ImageError::Draw)
    }

    /// Writes a PNG whole (temporary file, then rename).
    pub fn write_png(&self, path: &Path) -> Result<(), ImageError> {
        let bytes = self.png()?;
        output::write_atomic(path, &bytes).map_err(|e| ImageError::Write {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }

    /// Copies `other` with its top-left corner at (x, y), clipped to this image.
    fn blit(&mut self, other: &Image, x: u32, y: u32) {
        let w = other.width.min(self.width.saturating_sub(x)) as usize;
        for r in 0..other.height.min(self.height.saturating_sub(y)) as usize {
            let src = &other.rgb[3 * r * other.width as usize..][..3 * w];
            let start = 3 * ((y as usize + r) * self.width as usize + x as usize);
            self.rgb[start..start + 3 * w].copy_from_slice(src);
        }
    }
}

/// Draws `map` as `style` says: a `pixels`-square image.
pub fn render(map: &Map, style: &Style) -> Result<Image, ImageError> {
    map.view.check()?;
    let range = match style.range {
        Some(r) => Range::new(r.lo, r.hi)?,
        // An empty map (everything left the view) is drawn dark rather than refused.
        None => Range::dynamic([map], style.decades).unwrap_or(Range { lo: 1.0, hi: 10.0 }),
    };
    let side = map.view.pixels;
    let (lo, hi) = (range.lo.log10(), range.hi.log10());
    let table = style.colormap.table();
    let mut rgb = vec![0u8; 3 * side as usize * side as usize];
    rgb.par_chunks_mut(3 * side as usize)
        .zip(map.density.par_chunks(side as usize))
        .for_each(|(out, row)| {
            for (px, &v) in out.chunks_exact_mut(3).zip(row) {
                let t = if v > 0.0 {
                    (v.log10() - lo) / (hi - lo)
                } else {
                    0.0
                };
                px.copy_from_slice(&table[(t.clamp(0.0, 1.0) * 255.0).round() as usize]);
            }
        });
    overlay(&mut rgb, side, map, style, range)?;
    Ok(Image {
        width: side,
        height: side,
        rgb,
    })
}

/// Writes `map` drawn as `style` says to a PNG file.
pub fn write_png(path: &Path, map: &Map, style: &Style) -> Result<(), ImageError> {
    render(map, style)?.write_png(path)
}

/// The largest 1, 2 or 5 × 10^k not above `x` (> 0).
fn nice_below(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    [5.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&v| v <= x * (1.0 + 1e-12))
        .unwrap_or(p)
}

/// `10ᵏ` with a superscript exponent (DejaVu Sans has the glyphs).
fn decade(k: i32) -> String {
    const SUP: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let digits: String = k
        .unsigned_abs()
        .to_string()
        .chars()
        .map(|c| SUP[c as usize - '0' as usize])
        .collect();
    format!("10{}{digits}", if k < 0 { "⁻" } else { "" })
}

/// A number for a label: no trailing zeros, at most three decimals.
fn short(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

fn with_unit(v: String, unit: &str) -> String {
    if unit.is_empty() {
        v
    } else {
        format!("{v} {unit}")
    }
}

/// Scale bar, time stamp, title and colour bar, drawn on the RGB buffer with plotters (the
/// repository's embedded font; text has a dark shadow so it reads on bright regions too).
fn overlay(
    rgb: &mut [u8],
    side: u32,
    map: &Map,
    style: &Style,
    range: Range,
) -> Result<(), ImageError> {
    if !(style.scale_bar || style.time.is_some() || style.title.is_some() || style.colorbar) {
        return Ok(());
    }
    plot::fonts();
    let err = |e: DrawingAreaErrorKind<_>| ImageError::Draw(e.to_string());
    let root = BitMapBackend::with_buffer(rgb, (side, side)).into_drawing_area();
    let s = side as f64;
    let size = (s / 28.0).clamp(9.0, 48.0);
    let margin = (s * 0.03).round() as i32;
    let font = ("sans-serif", size).into_font();
    let text = |t: &str, x: i32, y: i32, anchor: (HPos, VPos)| -> Result<(), ImageError> {
        let shadow = font
            .color(&BLACK.mix(0.8))
            .pos(Pos::new(anchor.0, anchor.1));
        let fg = font.color(&WHITE).pos(Pos::new(anchor.0, anchor.1));
        let d = (size / 14.0).ceil() as i32;
        root.draw_text(t, &shadow, (x + d, y + d)).map_err(err)?;
        root.draw_text(t, &fg, (x, y)).map_err(err)
    };
    if let Some(t) = style.time {
        let v = t * style.units.time;
        let digits = if v == 0.0 || v.abs() >= 100.0 {
            0
        } else if v.abs() >= 1.0 {
            1
        } else {
            2
        };
        let label = with_unit(format!("t = {v:.digits$}"), &style.units.time_name);
        text(&label, margin, margin, (HPos::Left, VPos::Top))?;
    }
    if let Some(title) = &style.title {
        text(
            title,
            side as i32 - margin,
            margin,
            (HPos::Right, VPos::Top),
        )?;
    }
    if style.scale_bar {
        let v = &map.view;
        let width_units = 2.0 * v.half_width * style.units.length;
        let len = nice_below(0.25 * width_units);
        let px = (len / style.units.length / v.pixel_size()).round() as i32;
        let thick = ((s / 200.0).round() as i32).max(2);
        let (x0, y0) = (margin, side as i32 - margin - thick);
        let shadow = (thick / 2).max(1);
        root.draw(&Rectangle::new(
            [
                (x0 + shadow, y0 + shadow),
                (x0 + px + shadow, y0 + thick + shadow),
            ],
            BLACK.mix(0.8).filled(),
        ))
        .map_err(err)?;
        root.draw(&Rectangle::new(
            [(x0, y0), (x0 + px, y0 + thick)],
            WHITE.filled(),
        ))
        .map_err(err)?;
        let label = with_unit(short(len), &style.units.length_name);
        text(
            &label,
            x0 + px / 2,
            y0 - thick,
            (HPos::Center, VPos::Bottom),
        )?;
    }
    if style.colorbar {
        // Horizontal, bottom right (the scale bar has the bottom left): the galaxies are framed
        // in the middle, so the corners are the emptiest places.
        let conv = style.units.density();
        let (lo, hi) = ((range.lo * conv).log10(), (range.hi * conv).log10());
        let bw = (s * 0.3) as i32;
        let bh = ((s / 45.0).round() as i32).max(4);
        let (x1, y1) = (side as i32 - margin, side as i32 - margin);
        let (x0, y0) = (x1 - bw, y1 - bh);
        for x in x0..x1 {
            let [r, g, b] = style.colormap.rgb((x - x0) as f64 / (bw - 1).max(1) as f64);
            root.draw(&Rectangle::new(
                [(x, y0), (x + 1, y1)],
                RGBColor(r, g, b).filled(),
            ))
            .map_err(err)?;
        }
        root.draw(&Rectangle::new([(x0, y0), (x1, y1)], WHITE.stroke_width(1)))
            .map_err(err)?;
        // Whole decades, at most four labels, the top one always.
        let (first, last) = (lo.ceil() as i32, hi.floor() as i32);
        let step = ((last - first) / 3 + 1).max(1);
        let mut k = last;
        while k >= first {
            let x = x0 + ((k as f64 - lo) / (hi - lo) * (bw - 1) as f64).round() as i32;
            root.draw(&PathElement::new(
                vec![(x, y0 - bh / 2), (x, y0)],
                WHITE.stroke_width(1),
            ))
            .map_err(err)?;
            text(&decade(k), x, y0 - bh / 2, (HPos::Center, VPos::Bottom))?;
            k -= step;
        }
        let label = style.units.density_name();
        text(&label, x0 - bh, (y0 + y1) / 2, (HPos::Right, VPos::Center))?;
    }
    root.present().map_err(err)
}

/// Background between panels.
const GAP_COLOUR: [u8; 3] = [255, 255, 255];

/// A figure of `tiles` in rows of `columns`, separated by `gap` white pixels (each tile in a cell
/// of the largest tile's size), left to right then top to bottom.
pub fn tile(tiles: &[Image], columns: usize, gap: u32) -> Result<Image, ImageError> {
    if tiles.is_empty() || columns == 0 {
        return Err(ImageError::Figure(format!(
            "{} tiles in {columns} columns",
            tiles.len()
        )));
    }
    let cw = tiles.iter().map(|t| t.width).max().unwrap_or(0);
    let ch = tiles.iter().map(|t| t.height).max().unwrap_or(0);
    let cols = columns.min(tiles.len()) as u32;
    let rows = tiles.len().div_ceil(columns) as u32;
    let width = cols * cw + (cols - 1) * gap;
    let height = rows * ch + (rows - 1) * gap;
    if width as u64 * height as u64 > 1 << 28 {
        return Err(ImageError::Figure(format!(
            "{width} × {height} pixels is too large"
        )));
    }
    let mut out = Image::new(width, height, GAP_COLOUR);
    for (k, t) in tiles.iter().enumerate() {
        let (c, r) = ((k % columns) as u32, (k / columns) as u32);
        out.blit(t, c * (cw + gap), r * (ch + gap));
    }
    Ok(out)
}

/// A multi-panel figure: each map drawn with its style (its own time stamp, title, colour map),
/// in rows of `columns`. Give the styles one [`Range`] (e.g. [`Range::dynamic`] over all maps)
/// to make brightness comparable between panels.
pub fn panel(maps: &[(&Map, &Style)], columns: usize) -> Result<Image, ImageError> {
    let tiles = maps
        .iter()
        .map(|(m, s)| render(m, s))
        .collect::<Result<Vec<_>, _>>()?;
    let gap = tiles.iter().map(|t| t.width).max().unwrap_or(0) / 100 + 2;
    tile(&tiles, columns, gap)
}

/// A looping GIF written frame by frame into a temporary file beside `path`, renamed to `path`
/// by [`Gif::finish`]; dropped unfinished (or failing), it removes the temporary file, so `path`
/// is never half-written. Frames share one palette built from the colour maps they use (plus
/// greys for the labels), so a colour means the same density in every frame.
pub struct Gif {
    path: PathBuf,
    tmp: PathBuf,
    encoder: Option<gif::Encoder<BufWriter<File>>>,
    width: u32,
    height: u32,
    delay_cs: u16,
    palette: Vec<[u8; 3]>,
    nearest: HashMap<[u8; 3], u8>,
    frames: usize,
}

impl Gif {
    /// `delay_cs`: time per frame in hundredths of a second; `colormaps`: those the frames use.
    pub fn create(
        path: &Path,
        width: u32,
        height: u32,
        delay_cs: u16,
        colormaps: &[Colormap],
    ) -> Result<Gif, ImageError> {
        if width == 0 || height == 0 || width > u16::MAX as u32 || height > u16::MAX as u32 {
            return Err(ImageError::Figure(format!(
                "a GIF of {width} × {height} pixels (1 ..= 65535 each)"
            )));
        }
        if colormaps.is_empty() {
            return Err(ImageError::Figure(
                "a GIF needs at least one colour map".into(),
            ));
        }
        let palette = gif_palette(colormaps);
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".tmp{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let fail = |e: &dyn std::fmt::Display| ImageError::Write {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let file = File::create(&tmp).map_err(|e| fail(&e))?;
        let flat: Vec<u8> = palette.iter().flatten().copied().collect();
        let made = gif::Encoder::new(BufWriter::new(file), width as u16, height as u16, &flat)
            .and_then(|mut e| e.set_repeat(gif::Repeat::Infinite).map(|()| e));
        let encoder = match made {
            Ok(e) => e,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(fail(&e));
            }
        };
        let nearest = palette
            .iter()
            .enumerate()
            .map(|(k, &c)| (c, k as u8))
            .collect();
        Ok(Gif {
            path: path.to_path_buf(),
            tmp,
            encoder: Some(encoder),
            width,
            height,
            delay_cs,
            palette,
            nearest,
            frames: 0,
        })
    }

    /// Appends a frame of the GIF's size.
    pub fn add(&mut self, image: &Image) -> Result<(), ImageError> {
        if (image.width, image.height) != (self.width, self.height) {
            return Err(ImageError::Figure(format!(
                "a {} × {} frame in a {} × {} GIF",
                image.width, image.height, self.width, self.height
            )));
        }
        let mut indices = Vec::with_capacity(image.rgb.len() / 3);
        for px in image.rgb.chunks_exact(3) {
            let c = [px[0], px[1], px[2]];
            let k = match self.nearest.get(&c) {
                Some(&k) => k,
                None => {
                    let k = closest(&self.palette, c);
                    self.nearest.insert(c, k);
                    k
                }
            };
            indices.push(k);
        }
        let mut frame =
            gif::Frame::from_indexed_pixels(self.width as u16, self.height as u16, indices, None);
        frame.delay = self.delay_cs;
        let Some(encoder) = self.encoder.as_mut() else {
            return Err(ImageError::Figure("the GIF is finished".into()));
        };
        encoder.write_frame(&frame).map_err(|e| ImageError::Write {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        self.frames += 1;
        Ok(())
    }

    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Writes the trailer, syncs and renames onto the final path.
    pub fn finish(mut self) -> Result<PathBuf, ImageError> {
        let fail = |m: String| ImageError::Write {
            path: self.path.clone(),
            message: m,
        };
        if self.frames == 0 {
            return Err(fail("no frame was added".into()));
        }
        let encoder = self.encoder.take().expect("present until finish");
        let file = encoder
            .into_inner()
            .map_err(|e| fail(e.to_string()))?
            .into_inner()
            .map_err(|e| fail(e.error().to_string()))?;
        file.sync_all().map_err(|e| fail(e.to_string()))?;
        fs::rename(&self.tmp, &self.path).map_err(|e| fail(e.to_string()))?;
        Ok(self.path.clone())
    }
}

impl Drop for Gif {
    fn drop(&mut self) {
        // Unfinished or failed: leave no partial file. (After a successful rename the temporary
        // name no longer exists and this is a no-op.)
        if let Some(e) = self.encoder.take() {
            drop(e);
        }
        let _ = fs::remove_file(&self.tmp);
    }
}

/// Up to 256 colours: 16 greys for the labels, the rest split evenly among the colour maps,
/// sampled evenly along each (both ends kept).
fn gif_palette(maps: &[Colormap]) -> Vec<[u8; 3]> {
    let mut p: Vec<[u8; 3]> = (0..16u32).map(|k| [(k * 17) as u8; 3]).collect();
    let each = (256 - p.len()) / maps.len();
    for m in maps {
        let t = m.table();
        for k in 0..each {
            p.push(t[k * 255 / (each - 1).max(1)]);
        }
    }
    p
}

fn closest(palette: &[[u8; 3]], c: [u8; 3]) -> u8 {
    let d = |p: &[u8; 3]| {
        (0..3)
            .map(|k| (p[k] as i32 - c[k] as i32).pow(2))
            .sum::<i32>()
    };
    palette
        .iter()
        .enumerate()
        .min_by_key(|(_, p)| d(p))
        .map(|(k, _)| k as u8)
        .unwrap_or(0)
}

/// Writes `frames` (one size) as a looping GIF through [`Gif`].
pub fn write_gif(
    path: &Path,
    frames: &[Image],
    delay_cs: u16,
    colormaps: &[Colormap],
) -> Result<(), ImageError> {
    let first = frames
        .first()
        .ok_or_else(|| ImageError::Figure("a GIF needs at least one frame".into()))?;
    let mut gif = Gif::create(path, first.width, first.height, delay_cs, colormaps)?;
    for f in frames {
        gif.add(f)?;
    }
    gif.finish().map(|_| ())
}

#[cfg(test)]
mod tests;
