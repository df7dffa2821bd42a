//! Particles coloured by material: each material's surface density deposited on the view, the
//! pixel's hue the materials' colours mixed by their surface densities and its brightness the
//! total's on a log scale (`decades` below the brightest pixel); the time and a scale bar over
//! it as on the density maps. The observer that writes it beside each snapshot of
//! `warpkit impact`.

use super::*;
use warpkit::planet::impact::cli::ImpactConfig;
use warpkit::planet::impact::run::ImpactObserver;
use warpkit::sph::hydro::Sim;

/// Colours by material name (iron rust-grey, rock tan, water and ice blue), else the palette by
/// id.
pub fn material_colour(name: &str, id: usize) -> [u8; 3] {
    match name {
        "iron" => [170, 110, 90],
        "granite" => [230, 190, 120],
        "basalt" => [150, 160, 110],
        "water" => [80, 150, 230],
        "ice" => [170, 220, 250],
        _ => [
            [230, 80, 80],
            [80, 200, 120],
            [120, 120, 240],
            [220, 200, 60],
        ][id % 4],
    }
}

/// The image of `pos`, `mass` and material ids `mat` on `view`, with `names` by id, each
/// material's map smoothed by a Gaussian of `sigma` pixels (a few thousand particles are dots
/// otherwise).
pub fn render_materials(
    (pos, mass, mat): (&[[f64; 3]], &[f64], &[u32]),
    names: &[String],
    view: &View,
    sigma: f64,
    style: &Style,
) -> Result<Image, ImageError> {
    if mat.len() != pos.len() {
        return Err(ImageError::Length {
            positions: pos.len(),
            other: mat.len(),
            what: "material ids",
        });
    }
    let maps: Vec<Map> = (0..names.len())
        .map(|id| {
            // The material's particles only: the others weigh nothing.
            let m: Vec<f64> = mass
                .iter()
                .zip(mat)
                .map(|(&m, &k)| if k as usize == id { m } else { 0.0 })
                .collect();
            surface_density(pos, &m, Select::All, view).map(|map| map.smoothed(sigma))
        })
        .collect::<Result<_, _>>()?;
    let side = view.pixels as usize;
    let total = Map {
        view: *view,
        density: (0..side * side)
            .map(|p| maps.iter().map(|m| m.density[p]).sum())
            .collect(),
    };
    let range = match style.range {
        Some(r) => Range::new(r.lo, r.hi)?,
        None => Range::dynamic([&total], style.decades).unwrap_or(Range { lo: 1.0, hi: 10.0 }),
    };
    let (lo, hi) = (range.lo.log10(), range.hi.log10());
    let colours: Vec<[u8; 3]> = names
        .iter()
        .enumerate()
        .map(|(k, n)| material_colour(n, k))
        .collect();
    let mut rgb = vec![0u8; 3 * side * side];
    for (p, px) in rgb.chunks_exact_mut(3).enumerate() {
        let t = total.density[p];
        if t <= 0.0 {
            continue;
        }
        let b = ((t.log10() - lo) / (hi - lo)).clamp(0.0, 1.0);
        for (c, out) in px.iter_mut().enumerate() {
            let mixed: f64 = maps
                .iter()
                .zip(&colours)
                .map(|(m, col)| m.density[p] / t * col[c] as f64)
                .sum();
            *out = (b * mixed).round().clamp(0.0, 255.0) as u8;
        }
    }
    super::render::overlay(&mut rgb, view.pixels, &total, style, range)?;
    Ok(Image {
        width: view.pixels,
        height: view.pixels,
        rgb,
    })
}

/// The view of an impact along z (its orbital plane): centred on the potential minimum (the
/// largest body's core; the centre of mass without potentials), wide enough for 95% of the
/// mass, so that the remnant and its near debris fill it rather than the farthest ejecta.
pub fn impact_view(sim: &Sim, pixels: u32) -> Result<View, ImageError> {
    let g = &sim.gas;
    let centre = match (0..sim.phi.len().min(g.len()))
        .min_by(|&a, &b| sim.phi[a].total_cmp(&sim.phi[b]))
    {
        Some(i) => g.pos[i],
        None => {
            let m: f64 = g.mass.iter().sum();
            core::array::from_fn(|k| (0..g.len()).map(|i| g.pos[i][k] * g.mass[i]).sum::<f64>() / m)
        }
    };
    let mut d: Vec<(f64, f64)> = (0..g.len())
        .map(|i| {
            let p = g.pos[i];
            (
                (p[0] - centre[0]).abs().max((p[1] - centre[1]).abs()),
                g.mass[i],
            )
        })
        .collect();
    d.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = g.mass.iter().sum();
    let mut sum = 0.0;
    let edge = d
        .iter()
        .find(|(_, m)| {
            sum += m;
            sum >= 0.95 * total
        })
        .map_or(1.0, |x| x.0);
    View::new(Axis::Z, centre, 1.2 * edge.max(f64::MIN_POSITIVE), pixels)
}

/// `STEM.materials.png` of a run's state (`STEM` the snapshot's path without its extension).
pub fn write_material_image(
    sim: &Sim,
    names: &[String],
    pixels: u32,
    snapshot: &Path,
) -> Result<PathBuf, ImageError> {
    let view = impact_view(sim, pixels)?;
    let image = material_image(sim, names, &view)?;
    let path = snapshot.with_extension("materials.png");
    image.write_png(&path)?;
    Ok(path)
}

/// `STEM.energy.png`: the specific internal energy `u` in the cross-section through the view's
/// centre (the orbital plane z through the deepest potential), the kernel-interpolated mean
/// `Σ m u W / Σ m W`, on a log scale of 3 decades below its largest value.
pub fn write_energy_image(sim: &Sim, pixels: u32, snapshot: &Path) -> Result<PathBuf, ImageError> {
    use warpkit::sph::hydro::grid::{Grid, slice_mean};
    let view = impact_view(sim, pixels)?;
    let (a, b) = view.axis.plane();
    let grid = Grid {
        axes: [a, b],
        centre: view.centre,
        half_width: view.half_width,
        pixels: pixels as usize,
    };
    let g = &sim.gas;
    let u = slice_mean(g, sim.params.kernel, &sim.boundary, &grid, &g.u);
    let map = Map {
        view,
        density: u.iter().map(|&x| if x > 0.0 { x } else { 0.0 }).collect(),
    };
    // The colour bar speaks of surface densities: the range goes in the title instead.
    let hi = map.density.iter().copied().fold(0.0, f64::max);
    let style = Style {
        colormap: Colormap::Magma,
        decades: 3.0,
        time: Some(sim.t / 3600.0),
        title: Some(format!(
            "u in cross-section, {:.0e}–{:.0e} J/kg",
            hi * 1e-3,
            hi
        )),
        units: Units::new(1e-3, "km", 1.0, "h"),
        ..Style::default()
    };
    let path = snapshot.with_extension("energy.png");
    write_png(&path, &map, &style)?;
    Ok(path)
}

/// The image of a run's state on `view`, each material's map smoothed to about the particles'
/// spacing, with the time in hours and the legend.
fn material_image(sim: &Sim, names: &[String], view: &View) -> Result<Image, ImageError> {
    // A sixth of the median smoothing length (the kernel's support radius): about the
    // particles' spacing.
    let mut h = sim.gas.h.clone();
    let mid = h.len() / 2;
    let median = *h.select_nth_unstable_by(mid, f64::total_cmp).1;
    let sigma = (median / 6.0 / view.pixel_size()).clamp(0.5, view.pixels as f64 / 16.0);
    let style = Style {
        time: Some(sim.t / 3600.0),
        title: Some(names.join(" · ")),
        units: Units::new(1e-3, "km", 1.0, "h"),
        decades: 2.5,
        ..Style::default()
    };
    let g = &sim.gas;
    render_materials((&g.pos, &g.mass, &g.mat), names, view, sigma, &style)
}

/// The palette of an animation of `names`: 16 greys for the labels, then each material's
/// colour at evenly spaced brightnesses (the pixels of one material are its colour dimmed by
/// the surface density's log; mixed pixels take the nearest).
pub fn material_palette(names: &[String]) -> Vec<[u8; 3]> {
    let mut p: Vec<[u8; 3]> = (0..16u32).map(|k| [(k * 17) as u8; 3]).collect();
    let each = (256 - p.len()) / names.len().max(1);
    for (id, name) in names.iter().enumerate() {
        let c = material_colour(name, id);
        for k in 0..each {
            let b = (k + 1) as f64 / each as f64;
            p.push(c.map(|x| (b * x as f64).round() as u8));
        }
    }
    p
}

/// What `warpkit impact` draws when `[output] images` is on: `STEM.materials.png` and
/// `STEM.energy.png` beside every snapshot, and `impact.gif`, a frame every `frame_every` seconds in the view of the start
/// (both bodies, centred on the deepest potential).
#[derive(Default)]
pub struct ImpactImages {
    movie: Option<(View, crate::image::animation::Gif)>,
}

impl ImpactObserver for ImpactImages {
    fn snapshot(
        &mut self,
        c: &ImpactConfig,
        sim: &Sim,
        materials: &[String],
        path: &Path,
    ) -> anyhow::Result<()> {
        if c.output.images {
            write_material_image(sim, materials, c.output.image_pixels, path)?;
            write_energy_image(sim, c.output.image_pixels, path)?;
        }
        Ok(())
    }

    fn frame(&mut self, c: &ImpactConfig, sim: &Sim, materials: &[String]) -> anyhow::Result<()> {
        if self.movie.is_none() {
            let view = impact_view(sim, c.output.image_pixels)?;
            let gif = crate::image::animation::Gif::with_palette(
                &c.output.dir.join("impact.gif"),
                view.pixels,
                view.pixels,
                10,
                material_palette(materials),
            )?;
            self.movie = Some((view, gif));
        }
        let (view, gif) = self.movie.as_mut().expect("made above");
        gif.add(&material_image(sim, materials, view)?)?;
        Ok(())
    }

    fn finish(&mut self, _c: &ImpactConfig) -> anyhow::Result<()> {
        if let Some((_, gif)) = self.movie.take() {
            gif.finish()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two blobs, iron on the left and granite on the right: each side takes its colour, and
    /// the empty space between stays black.
    #[test]
    fn each_material_takes_its_colour() {
        let mut pos = Vec::new();
        let mut mat = Vec::new();
        for k in 0..400 {
            let a = k as f64 * 0.1;
            let d = [
                0.3 * a.cos() * (k as f64 / 400.0),
                0.3 * a.sin() * (k as f64 / 400.0),
            ];
            pos.push([-1.0 + d[0], d[1], 0.0]);
            mat.push(0);
            pos.push([1.0 + d[0], d[1], 0.0]);
            mat.push(1);
        }
        let mass = vec![1.0; pos.len()];
        let names = vec!["iron".to_string(), "granite".to_string()];
        let view = View::new(Axis::Z, [0.0; 3], 2.0, 64).unwrap();
        let style = Style {
            scale_bar: false,
            ..Style::default()
        };
        let img = render_materials((&pos, &mass, &mat), &names, &view, 1.0, &style).unwrap();
        let (left, right) = (img.pixel(16, 32), img.pixel(48, 32));
        let ratio = |p: [u8; 3]| p[1] as f64 / p[0].max(1) as f64;
        // Iron's green-to-red ratio is 110/170, granite's 190/230.
        assert!((ratio(left) - 110.0 / 170.0).abs() < 0.05, "{left:?}");
        assert!((ratio(right) - 190.0 / 230.0).abs() < 0.05, "{right:?}");
        assert_eq!(img.pixel(32, 5), [0, 0, 0]);
        let e = render_materials((&pos, &mass, &mat[1..]), &names, &view, 1.0, &style).unwrap_err();
        assert!(e.to_string().contains("material ids"), "{e}");
    }
}
