//! Heat maps: a scalar on a regular grid, coloured on a log10 scale, with its colour bar.

use super::*;

/// A heat map of a scalar on a regular `nx` × `ny` grid over `extent`, coloured on a log10 scale
/// between `range` (values outside are clamped; values ≤ 0 take the lowest colour).
#[derive(Clone, Debug)]
pub struct HeatMap {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// What the colour bar shows.
    pub value_label: String,
    pub nx: usize,
    pub ny: usize,
    /// `nx * ny` values, x fastest.
    pub values: Vec<f64>,
    /// (x0, x1, y0, y1) of the grid's outer edges.
    pub extent: (f64, f64, f64, f64),
    /// (lowest, highest) value of the colour scale, both > 0.
    pub range: (f64, f64),
}

/// Writes `stem.png` and `stem.svg` of `map` into `dir`; returns both paths.
pub fn heat_map(dir: &Path, stem: &str, map: &HeatMap) -> Result<[PathBuf; 2], PlotError> {
    if map.values.len() != map.nx * map.ny || map.nx == 0 || map.ny == 0 {
        return Err(PlotError {
            path: dir.join(format!("{stem}.png")),
            message: format!(
                "a {} × {} heat map needs {} values, got {}",
                map.nx,
                map.ny,
                map.nx * map.ny,
                map.values.len()
            ),
        });
    }
    render(dir, stem, map)
}

/// Viridis at `t` ∈ [0, 1] (piecewise linear through five of its colours).
pub fn viridis(t: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 5] = [
        (68, 1, 84),
        (59, 82, 139),
        (33, 145, 140),
        (94, 201, 98),
        (253, 231, 37),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    } * 4.0;
    let i = (t.floor() as usize).min(3);
    let f = t - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |x: u8, y: u8| (x as f64 + f * (y as f64 - x as f64)).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

impl Figure for HeatMap {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult {
        draw_heat(root, self)
    }
}

fn draw_heat<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, h: &HeatMap) -> DrawResult {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let (w, _) = root.dim_in_pixel();
    let (main, bar) = root.split_horizontally(w.saturating_sub(150));
    let lo = h.range.0.max(f64::MIN_POSITIVE).log10();
    let hi = h
        .range
        .1
        .max(h.range.0 * (1.0 + 1e-9))
        .log10()
        .max(lo + 1e-9);
    // The colour bar labels whole decades: the colours span the decades around the data.
    let (lo, hi) = Scale::Log10.extent(lo, hi);
    let norm = |v: f64| {
        if v > 0.0 {
            (v.log10() - lo) / (hi - lo)
        } else {
            0.0
        }
    };
    let (x0, x1, y0, y1) = h.extent;
    let mut chart = ChartBuilder::on(&main)
        .caption(&h.title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(72)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(e)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(&h.x_label)
        .y_desc(&h.y_label)
        .x_label_formatter(&|v| Scale::Linear.label(*v))
        .y_label_formatter(&|v| Scale::Linear.label(*v))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .draw()
        .map_err(e)?;
    let (dx, dy) = ((x1 - x0) / h.nx as f64, (y1 - y0) / h.ny as f64);
    chart
        .draw_series(h.values.iter().enumerate().map(|(k, &v)| {
            let (i, j) = ((k % h.nx) as f64, (k / h.nx) as f64);
            Rectangle::new(
                [
                    (x0 + i * dx, y0 + j * dy),
                    (x0 + (i + 1.0) * dx, y0 + (j + 1.0) * dy),
                ],
                viridis(norm(v)).filled(),
            )
        }))
        .map_err(e)?;
    let mut cb = ChartBuilder::on(&bar)
        .margin_top(56)
        .margin_bottom(72)
        .margin_right(8)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..1.0, lo..hi)
        .map_err(e)?;
    cb.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_desc(&h.value_label)
        .y_labels(12)
        .y_label_formatter(&|v| Scale::Log10.label(*v))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(e)?;
    let steps = 64;
    cb.draw_series((0..steps).map(|k| {
        let a = lo + (hi - lo) * k as f64 / steps as f64;
        let b = lo + (hi - lo) * (k + 1) as f64 / steps as f64;
        Rectangle::new(
            [(0.0, a), (1.0, b)],
            viridis((k as f64 + 0.5) / steps as f64).filled(),
        )
    }))
    .map_err(e)?;
    Ok(())
}
