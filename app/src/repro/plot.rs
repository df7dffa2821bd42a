//! Figures with plotters, each written as `stem.png` and `stem.svg`: line charts (linear, log10 or
//! log2 axes; markers, dashed guide lines, legend), grouped bar charts and heat maps (a log10
//! colour scale with its colour bar).
//!
//! Log axes are drawn as linear axes over log values with labels at whole powers, which keeps one
//! code path for every axis kind. PNG text uses DejaVu Sans embedded in the executable (the
//! `ab_glyph` feature), so no system font or fontconfig is needed; SVG text names `sans-serif`.

use plotters::coord::Shift;
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters_backend::{BackendCoord, DrawingErrorKind};
use std::path::{Path, PathBuf};
use std::sync::Once;

mod heat;
pub use heat::{HeatMap, heat_map, viridis};

/// Size of every figure, in pixels.
pub const SIZE: (u32, u32) = (960, 640);

#[derive(Debug, thiserror::Error)]
#[error("cannot draw {path}: {message}")]
pub struct PlotError {
    pub path: PathBuf,
    pub message: String,
}

/// How an axis maps values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    Linear,
    /// log10, labels 10^k.
    Log10,
    /// log2, labels 2^k.
    Log2,
}

impl Scale {
    fn map(self, v: f64) -> Option<f64> {
        let m = match self {
            Scale::Linear => v,
            Scale::Log10 if v > 0.0 => v.log10(),
            Scale::Log2 if v > 0.0 => v.log2(),
            _ => return None,
        };
        m.is_finite().then_some(m)
    }

    /// The tick label at mapped value `v`. Exponents are superscripts (10⁻⁴, 2¹⁵, 1.5×10⁻⁴),
    /// never `1e-4` or `2^15`; log axes label whole powers only (ticks between them would read
    /// 2195, 2353 … or 1.58×10¹), and [`Scale::extent`] makes sure an axis holds two of them.
    fn label(self, v: f64) -> String {
        let whole = (v - v.round()).abs() < 1e-6;
        match self {
            Scale::Linear => {
                if v == 0.0 || (v.abs() >= 1e-2 && v.abs() < 1e5) {
                    let s = format!("{v:.3}");
                    s.trim_end_matches('0').trim_end_matches('.').to_string()
                } else {
                    scientific(v, 1)
                }
            }
            Scale::Log10 if whole => power(10, v.round() as i64),
            Scale::Log2 if whole => power(2, v.round() as i64),
            _ => String::new(),
        }
    }

    /// The mapped range `[lo, hi]` an axis shows: a log axis that would hold fewer than two whole
    /// powers is widened out to the powers around its data.
    fn extent(self, lo: f64, hi: f64) -> (f64, f64) {
        if self == Scale::Linear || hi.floor() - lo.ceil() >= 1.0 {
            return (lo, hi);
        }
        let (a, b) = (lo.floor(), hi.ceil());
        (a, b.max(a + 1.0))
    }
}

/// `k` in superscript digits (⁻¹²).
fn superscript(k: i64) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let digits = k.unsigned_abs().to_string();
    let sign = if k < 0 { "⁻" } else { "" };
    sign.chars()
        .chain(digits.bytes().map(|b| DIGITS[(b - b'0') as usize]))
        .collect()
}

/// `base` to the power `k` as a label: 10⁻⁴, 2¹⁵.
pub fn power(base: u32, k: i64) -> String {
    format!("{base}{}", superscript(k))
}

/// A count as a figure label: `2ᵏ` for a power of two (2¹⁸), else the number.
pub fn n_label(n: usize) -> String {
    if n.is_power_of_two() {
        power(2, n.trailing_zeros() as i64)
    } else {
        n.to_string()
    }
}

/// `v` as `m×10ᵏ` with `decimals` decimals in `m` (1.5×10⁻⁴), or `10ᵏ` where `m` rounds to 1.
pub fn scientific(v: f64, decimals: usize) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    // Rust's `{:e}` rounds the mantissa and carries into the exponent (9.96e-5 → 1.0e-4).
    let text = format!("{v:.decimals$e}");
    let (m, k) = text.split_once('e').expect("`{:e}` writes an exponent");
    let k: i64 = k.parse().expect("`{:e}` writes an integer exponent");
    match m
        .trim_start_matches('-')
        .trim_end_matches('0')
        .trim_end_matches('.')
    {
        "1" => format!("{}{}", if v < 0.0 { "−" } else { "" }, power(10, k)),
        _ => format!("{}×{}", m.replace('-', "−"), power(10, k)),
    }
}

/// An axis: label (with units) and scale.
#[derive(Clone, Debug)]
pub struct Axis {
    pub label: String,
    pub scale: Scale,
}

impl Axis {
    pub fn new(label: &str, scale: Scale) -> Self {
        Axis {
            label: label.to_string(),
            scale,
        }
    }
}

/// One line of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// A guide line (dashed, grey, no markers) rather than data.
    pub guide: bool,
    /// Reference data from elsewhere (the seed): dashed, hollow markers.
    pub reference: bool,
}

impl Series {
    pub fn data(label: &str, points: Vec<(f64, f64)>) -> Self {
        Series {
            label: label.to_string(),
            points,
            guide: false,
            reference: false,
        }
    }
    pub fn guide(label: &str, points: Vec<(f64, f64)>) -> Self {
        Series {
            guide: true,
            ..Series::data(label, points)
        }
    }
    pub fn reference(label: &str, points: Vec<(f64, f64)>) -> Self {
        Series {
            reference: true,
            ..Series::data(label, points)
        }
    }
}

/// A line chart.
#[derive(Clone, Debug)]
pub struct LineChart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
}

/// Grouped bars: one group per category, one bar per series in each group.
#[derive(Clone, Debug)]
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    pub categories: Vec<String>,
    /// (legend label, one value per category; NaN: no bar).
    pub series: Vec<(String, Vec<f64>)>,
}

/// Stacked bars: one bar per category, the parts stacked from the bottom in order (a linear axis
/// from 0; each part drawn in its colour with its marker, and the bar's total above it).
#[derive(Clone, Debug)]
pub struct StackedBars {
    pub title: String,
    pub y_label: String,
    pub categories: Vec<String>,
    /// (legend label, one value per category; NaN or negative: nothing of that part).
    pub parts: Vec<(String, Vec<f64>)>,
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(100, 100, 100),
    // `repro gravity` draws seven kernels and the seed's curve in one figure.
    RGBColor(23, 190, 207),
    RGBColor(227, 119, 194),
];

/// Guide lines: dark grey, brown, then dark green.
const GUIDES: [RGBColor; 3] = [
    RGBColor(90, 90, 90),
    RGBColor(140, 86, 75),
    RGBColor(40, 110, 60),
];

pub(crate) fn fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType file shipped by the dejavu crate; a failure would only
        // mean text is not drawn in PNGs.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
    });
}

/// Writes `stem.png` and `stem.svg` of `chart` into `dir`; returns both paths.
pub fn line_chart(dir: &Path, stem: &str, chart: &LineChart) -> Result<[PathBuf; 2], PlotError> {
    render(dir, stem, chart)
}

/// Writes `stem.png` and `stem.svg` of `chart` into `dir`; returns both paths.
pub fn bar_chart(dir: &Path, stem: &str, chart: &BarChart) -> Result<[PathBuf; 2], PlotError> {
    render(dir, stem, chart)
}

/// Writes `stem.png` and `stem.svg` of `chart` into `dir`; returns both paths.
pub fn stacked_bar_chart(
    dir: &Path,
    stem: &str,
    chart: &StackedBars,
) -> Result<[PathBuf; 2], PlotError> {
    render(dir, stem, chart)
}

type DrawResult = Result<(), String>;

/// A chart that draws itself on any plotters backend.
trait Figure {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult;
}

impl Figure for LineChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult {
        draw_lines(root, self)
    }
}

impl Figure for StackedBars {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult {
        draw_stacked(root, self)
    }
}

impl Figure for BarChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult {
        draw_bars(root, self)
    }
}

fn render<C: Figure>(dir: &Path, stem: &str, chart: &C) -> Result<[PathBuf; 2], PlotError> {
    fonts();
    let svg_path = dir.join(format!("{stem}.svg"));
    let png_path = dir.join(format!("{stem}.png"));
    let fail = |path: &Path, message: String| PlotError {
        path: path.to_path_buf(),
        message,
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        chart.draw(&root).map_err(|m| fail(&svg_path, m))?;
        root.present().map_err(|e| fail(&svg_path, e.to_string()))?;
    }
    super::output::write_atomic(&svg_path, svg.as_bytes())
        .map_err(|e| fail(&svg_path, e.to_string()))?;

    let mut rgb = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        chart.draw(&root).map_err(|m| fail(&png_path, m))?;
        root.present().map_err(|e| fail(&png_path, e.to_string()))?;
    }
    let png = encode_png(&rgb, SIZE).map_err(|m| fail(&png_path, m))?;
    super::output::write_atomic(&png_path, &png).map_err(|e| fail(&png_path, e.to_string()))?;
    Ok([png_path, svg_path])
}

pub(crate) fn encode_png(rgb: &[u8], (w, h): (u32, u32)) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(rgb).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(out)
}

/// The padded range of `values`, never empty.
fn range(values: impl Iterator<Item = f64>, pad: f64) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let span = (hi - lo).max(hi.abs() * 1e-3).max(1e-9);
    (lo - pad * span, hi + pad * span)
}

fn draw_lines<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &LineChart) -> DrawResult {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let mapped: Vec<Vec<(f64, f64)>> = c
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter_map(|&(x, y)| Some((c.x.scale.map(x)?, c.y.scale.map(y)?)))
                .collect()
        })
        .collect();
    let pad = |s: Scale| if s == Scale::Linear { 0.05 } else { 0.03 };
    let (x0, x1) = range(mapped.iter().flatten().map(|p| p.0), pad(c.x.scale));
    let (x0, x1) = c.x.scale.extent(x0, x1);
    let (mut y0, mut y1) = range(mapped.iter().flatten().map(|p| p.1), pad(c.y.scale));
    // Head room for the legend in the upper left.
    y1 += 0.06 * (c.series.len() as f64).min(6.0) * (y1 - y0);
    if c.y.scale == Scale::Linear && y0 > 0.0 && y0 < 0.5 * y1 {
        y0 = 0.0; // linear times start at zero
    }
    let (y0, y1) = c.y.scale.extent(y0, y1);
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, ("sans-serif", 26))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(84)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(e)?;
    let (sx, sy) = (c.x.scale, c.y.scale);
    chart
        .configure_mesh()
        .x_desc(&c.x.label)
        .y_desc(&c.y.label)
        .x_labels(if sx == Scale::Linear { 10 } else { 24 })
        .y_labels(if sy == Scale::Linear { 10 } else { 24 })
        .x_label_formatter(&|v| sx.label(*v))
        .y_label_formatter(&|v| sy.label(*v))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(e)?;
    let (mut colour, mut guides) = (0, 0);
    for (s, pts) in c.series.iter().zip(&mapped) {
        if s.guide {
            let col = GUIDES[guides % GUIDES.len()];
            guides += 1;
            let style = ShapeStyle::from(&col).stroke_width(2);
            chart
                .draw_series(DashedLineSeries::new(pts.iter().copied(), 10, 6, style))
                .map_err(e)?
                .label(&s.label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2))
                });
            continue;
        }
        let col = PALETTE[colour % PALETTE.len()];
        colour += 1;
        if s.reference {
            let style = ShapeStyle::from(&col).stroke_width(2);
            chart
                .draw_series(DashedLineSeries::new(pts.iter().copied(), 8, 5, style))
                .map_err(e)?
                .label(&s.label)
                .legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + PathElement::new(vec![(0, 0), (20, 0)], col.stroke_width(2))
                        + Circle::new((10, 0), 4, col.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 4, col.stroke_width(2))))
                .map_err(e)?;
            continue;
        }
        // Data series differ in marker and dash too, not in colour alone (the figure
        // rules: grey-scale prints, colour-blind readers): 4 markers × 3 dashes, cycled apart.
        let k = colour - 1;
        let (marker, dash) = (MARKERS[k % MARKERS.len()], DASHES[k % DASHES.len()]);
        let line = ShapeStyle::from(&col).stroke_width(2);
        let drawn = match dash {
            None => chart.draw_series(LineSeries::new(pts.iter().copied(), line)),
            Some((on, off)) => {
                chart.draw_series(DashedLineSeries::new(pts.iter().copied(), on, off, line))
            }
        };
        drawn.map_err(e)?.label(&s.label).legend(move |(x, y)| {
            // Three pieces of the series' dash (touching when solid) and its marker.
            let [a, b, c] = match dash {
                None => [(0, 8), (8, 16), (16, 24)],
                Some((12, _)) => [(0, 6), (9, 15), (18, 24)],
                Some(_) => [(0, 2), (11, 13), (22, 24)],
            };
            let piece = |(l, r): (i32, i32)| PathElement::new(vec![(l, 0), (r, 0)], line);
            EmptyElement::at((x, y))
                + piece(a)
                + piece(b)
                + piece(c)
                + marker_at((12, 0), marker, col)
        });
        chart
            .draw_series(pts.iter().map(|&p| marker_at(p, marker, col)))
            .map_err(e)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 16))
        .draw()
        .map_err(e)?;
    Ok(())
}

/// Data-series markers, in order of use.
#[derive(Clone, Copy, Debug)]
enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

const MARKERS: [Marker; 4] = [
    Marker::Circle,
    Marker::Triangle,
    Marker::Square,
    Marker::Cross,
];

/// Data-series line dashes (on, off pixels), in order of use: solid, dashed, dotted. References
/// (dashed) keep their hollow circles, guides have no markers.
const DASHES: [Option<(u32, u32)>; 3] = [None, Some((12, 5)), Some((3, 4))];

/// A filled marker of shape `m` at `at` (data or pixel coordinates), about 9 pixels across: an
/// element of its own, since plotters' marker types differ per shape.
struct Mark<C> {
    at: C,
    m: Marker,
    col: RGBColor,
}

fn marker_at<C>(at: C, m: Marker, col: RGBColor) -> Mark<C> {
    Mark { at, m, col }
}

impl<'a, C: 'a> PointCollection<'a, C> for &'a Mark<C> {
    type Point = &'a C;
    type IntoIter = std::iter::Once<&'a C>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<DB: DrawingBackend, C> Drawable<DB> for Mark<C> {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some((x, y)) = pos.next() else {
            return Ok(());
        };
        let fill = self.col.filled();
        match self.m {
            Marker::Circle => backend.draw_circle((x, y), 4, &fill, true),
            Marker::Triangle => {
                backend.fill_polygon([(x, y - 5), (x - 5, y + 4), (x + 5, y + 4)], &fill)
            }
            Marker::Square => backend.draw_rect((x - 4, y - 4), (x + 4, y + 4), &fill, true),
            Marker::Cross => {
                let pen = self.col.stroke_width(2);
                backend.draw_line((x - 4, y - 4), (x + 4, y + 4), &pen)?;
                backend.draw_line((x - 4, y + 4), (x + 4, y - 4), &pen)
            }
        }
    }
}

/// The value axis of a bar chart: log10 where the positive bars span two decades or more (a
/// linear axis would flatten the small ones to nothing), else linear from 0.
fn bar_scale(values: impl Iterator<Item = f64>) -> Scale {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo.is_finite() && hi / lo >= 100.0 {
        Scale::Log10
    } else {
        Scale::Linear
    }
}

fn draw_bars<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &BarChart) -> DrawResult {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let values = || c.series.iter().flat_map(|s| s.1.iter().copied());
    let scale = bar_scale(values());
    let finite = |v: &f64| v.is_finite() && (scale == Scale::Linear || *v > 0.0);
    let (base, top) = match scale {
        Scale::Log10 => {
            // From the decade below the smallest bar; head room for the labels above the largest.
            let (lo, hi) = range(values().filter(finite).map(f64::log10), 0.0);
            let (base, top) = (lo.floor(), hi + 0.12 * (hi - lo.floor()).max(1.0));
            Scale::Log10.extent(base, top)
        }
        _ => {
            let top = values().filter(finite).fold(0.0f64, f64::max);
            (0.0, if top > 0.0 { top * 1.15 } else { 1.0 })
        }
    };
    let height = |v: f64| if scale == Scale::Log10 { v.log10() } else { v };
    let n = c.categories.len().max(1);
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, ("sans-serif", 26))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(84)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, base..top)
        .map_err(e)?;
    let cats = c.categories.clone();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(&c.y_label)
        .x_labels(n)
        .x_label_formatter(&|v| {
            let k = v.round();
            if (v - k).abs() < 1e-6 && k >= 0.0 {
                cats.get(k as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_labels(if scale == Scale::Linear { 10 } else { 24 })
        .y_label_formatter(&|v| scale.label(*v))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(e)?;
    let k = c.series.len().max(1) as f64;
    let width = 0.8 / k;
    for (j, (label, values)) in c.series.iter().enumerate() {
        let col = PALETTE[j % PALETTE.len()];
        // A marker on each bar and in the legend: series told apart without colour.
        let marker = MARKERS[j % MARKERS.len()];
        let centre = |i: usize| i as f64 - 0.4 + (j as f64 + 0.46) * width;
        let bars = values
            .iter()
            .enumerate()
            .filter(|(_, v)| finite(v))
            .map(|(i, &v)| {
                let x0 = i as f64 - 0.4 + j as f64 * width;
                Rectangle::new([(x0, base), (x0 + width * 0.92, height(v))], col.filled())
            });
        chart
            .draw_series(bars)
            .map_err(e)?
            .label(label)
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + Rectangle::new([(0, -6), (14, 6)], col.filled())
                    + marker_at((24, 0), marker, col)
            });
        let marks = values.iter().enumerate().filter(|(_, v)| finite(v));
        chart
            .draw_series(marks.map(|(i, &v)| {
                EmptyElement::at((centre(i), height(v)))
                    + marker_at((0, -8), marker, col)
                    + Text::new(Scale::Linear.label(v), (-14, -34), ("sans-serif", 14))
            }))
            .map_err(e)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 16))
        .draw()
        .map_err(e)?;
    Ok(())
}

fn draw_stacked<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &StackedBars) -> DrawResult {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let n = c.categories.len().max(1);
    let part = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
    let totals: Vec<f64> = (0..n)
        .map(|i| {
            c.parts
                .iter()
                .map(|p| part(p.1.get(i).copied().unwrap_or(0.0)))
                .sum()
        })
        .collect();
    let top = totals.iter().copied().fold(0.0f64, f64::max);
    // Head room for the totals and the legend.
    let top = if top > 0.0 {
        top * (1.2 + 0.08 * c.parts.len() as f64)
    } else {
        1.0
    };
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(84)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0.0..top)
        .map_err(e)?;
    let cats = c.categories.clone();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(&c.y_label)
        .x_labels(n)
        .x_label_formatter(&|v| {
            let k = v.round();
            if (v - k).abs() < 1e-6 && k >= 0.0 {
                cats.get(k as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_labels(10)
        .y_label_formatter(&|v| Scale::Linear.label(*v))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(e)?;
    let mut base = vec![0.0f64; n];
    for (j, (label, values)) in c.parts.iter().enumerate() {
        let col = PALETTE[j % PALETTE.len()];
        let marker = MARKERS[j % MARKERS.len()];
        let spans: Vec<(usize, f64, f64)> = (0..n)
            .map(|i| {
                let v = part(values.get(i).copied().unwrap_or(0.0));
                let b = base[i];
                base[i] += v;
                (i, b, b + v)
            })
            .collect();
        chart
            .draw_series(spans.iter().filter(|s| s.2 > s.1).map(|&(i, a, b)| {
                Rectangle::new([(i as f64 - 0.3, a), (i as f64 + 0.3, b)], col.filled())
            }))
            .map_err(e)?
            .label(label)
            .legend(move |(x, y)| {
                // The part's marker in white on its colour, clear of the label.
                EmptyElement::at((x, y))
                    + Rectangle::new([(-2, -7), (16, 7)], col.filled())
                    + marker_at((7, 0), marker, WHITE)
            });
        // The part's marker beside its piece of the bar: parts told apart without colour.
        chart
            .draw_series(
                spans
                    .iter()
                    .filter(|s| s.2 > s.1)
                    .map(|&(i, a, b)| marker_at((i as f64 + 0.36, 0.5 * (a + b)), marker, col)),
            )
            .map_err(e)?;
    }
    chart
        .draw_series(totals.iter().enumerate().map(|(i, &t)| {
            EmptyElement::at((i as f64, t))
                + Text::new(Scale::Linear.label(t), (-14, -22), ("sans-serif", 14))
        }))
        .map_err(e)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 16))
        .draw()
        .map_err(e)?;
    Ok(())
}

#[cfg(test)]
mod tests;
