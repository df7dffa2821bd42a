//! Drawing a map: colour scale, labels, scale bar, PNG; tiled panels.

use super::*;

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
pub(super) fn nice_below(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    [5.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&v| v <= x * (1.0 + 1e-12))
        .unwrap_or(p)
}

/// `10ᵏ` with a superscript exponent (DejaVu Sans has the glyphs).
pub(super) fn decade(k: i32) -> String {
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
pub(super) fn short(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

pub(super) fn with_unit(v: String, unit: &str) -> String {
    if unit.is_empty() {
        v
    } else {
        format!("{v} {unit}")
    }
}

/// Scale bar, time stamp, title and colour bar, drawn on the RGB buffer with plotters (the
/// repository's embedded font; text has a dark shadow so it reads on bright regions too).
pub(super) fn overlay(
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
pub(super) const GAP_COLOUR: [u8; 3] = [255, 255, 255];

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
