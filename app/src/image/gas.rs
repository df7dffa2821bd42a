//! Images of SPH gas: the density in the plane z through the gas's centre and the column
//! density along z, interpolated with the kernel by `warpkit::sph::hydro::grid` and drawn like
//! the N-body maps; and the observer that writes them beside each snapshot of `warpkit sph`.

use super::*;
use warpkit::sph::hydro::grid::{self, Grid};
use warpkit::sph::hydro::run::Observer;
use warpkit::sph::hydro::{Boundary, Sim};

/// Density decades shown below the brightest pixel.
const DECADES: f64 = 3.0;

/// The square seen along z: a periodic box's centre and its widest side in the plane; an open
/// gas's centre of mass and 1.1 times the radius (in the plane) holding 99% of the particles.
pub fn gas_view(sim: &Sim, pixels: u32) -> Result<View, ImageError> {
    let g = &sim.gas;
    let (centre, half_width) = match sim.boundary {
        Boundary::Periodic(l) => ([l[0] / 2.0, l[1] / 2.0, l[2] / 2.0], l[0].max(l[1]) / 2.0),
        Boundary::Open => {
            let m: f64 = g.mass.iter().sum();
            let com: [f64; 3] = core::array::from_fn(|k| {
                (0..g.len()).map(|i| g.pos[i][k] * g.mass[i]).sum::<f64>() / m
            });
            let mut r: Vec<f64> = g
                .pos
                .iter()
                .map(|p| (p[0] - com[0]).abs().max((p[1] - com[1]).abs()))
                .collect();
            r.sort_by(f64::total_cmp);
            let k = ((r.len() as f64 * 0.99) as usize).min(r.len().saturating_sub(1));
            (com, 1.1 * r.get(k).copied().unwrap_or(1.0))
        }
    };
    View::new(Axis::Z, centre, half_width, pixels)
}

/// The mid-plane density and the column density of the gas on `view` (along z).
pub fn gas_maps(sim: &Sim, view: &View) -> (Map, Map) {
    let (a, b) = view.axis.plane();
    let grid = Grid {
        axes: [a, b],
        centre: view.centre,
        half_width: view.half_width,
        pixels: view.pixels as usize,
    };
    let k = sim.params.kernel;
    let map = |density| Map {
        view: *view,
        density,
    };
    (
        map(grid::slice_density(&sim.gas, k, &sim.boundary, &grid)),
        map(grid::column_density(&sim.gas, k, &sim.boundary, &grid)),
    )
}

/// `STEM.slice.png` and `STEM.column.png` of the gas, `STEM` the snapshot's path without its
/// extension; returns both paths.
pub fn write_gas_images(
    sim: &Sim,
    pixels: u32,
    snapshot: &Path,
) -> Result<[PathBuf; 2], ImageError> {
    let view = gas_view(sim, pixels)?;
    let (slice, column) = gas_maps(sim, &view);
    let z = view.centre[2];
    let style = |title: String, colorbar| Style {
        colormap: Colormap::Magma,
        decades: DECADES,
        time: Some(sim.t),
        title: Some(title),
        colorbar,
        ..Style::default()
    };
    let slice_path = snapshot.with_extension("slice.png");
    let column_path = snapshot.with_extension("column.png");
    write_png(
        &slice_path,
        &slice,
        &style(format!("density ρ, z = {z:.3}"), false),
    )?;
    write_png(&column_path, &column, &style("column density".into(), true))?;
    Ok([slice_path, column_path])
}

/// The images beside every snapshot of a `warpkit sph` run whose `[output] images` is on.
pub struct SnapshotImages;

impl Observer for SnapshotImages {
    fn snapshot(
        &mut self,
        c: &warpkit::sph::hydro::cli::SphConfig,
        sim: &Sim,
        path: &Path,
    ) -> anyhow::Result<()> {
        if c.output.images {
            write_gas_images(sim, c.output.image_pixels, path)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpkit::sph::hydro::{HydroParams, ic, ic_gravity};

    fn argmax(m: &Map) -> (u32, u32) {
        let k =
            (0..m.density.len()).fold(0, |a, i| if m.density[i] > m.density[a] { i } else { a });
        let n = m.view.pixels as usize;
        ((k % n) as u32, (k / n) as u32)
    }

    #[test]
    fn a_polytrope_is_densest_at_its_centre_and_keeps_its_mass() {
        let mut params = HydroParams::ideal_gas(ic_gravity::POLYTROPE_GAMMA);
        params.self_gravity = true;
        let gas = ic_gravity::polytrope(800, 1.0, &params);
        let sim = Sim::new(gas, params, Boundary::Open).unwrap();
        let view = gas_view(&sim, 64).unwrap();
        assert!((0.9..1.3).contains(&view.half_width), "{}", view.half_width);
        let (slice, column) = gas_maps(&sim, &view);
        for m in [&slice, &column] {
            let (c, r) = argmax(m);
            assert!(
                c.abs_diff(32) <= 3 && r.abs_diff(32) <= 3,
                "densest at ({c}, {r})"
            );
        }
        // The whole sphere is in view: the column density holds its mass (1).
        assert!((column.mass() - 1.0).abs() < 0.02, "{}", column.mass());
        // The mid-plane density at the centre is about the central density π/4.
        let centre = slice.at(32, 32);
        assert!((0.6..0.9).contains(&centre), "{centre}");
    }

    #[test]
    fn the_sod_tube_is_dense_on_its_left() {
        let params = HydroParams::ideal_gas(ic::SOD_GAMMA);
        let (gas, boundary) = ic::sod(12, ic::sod_across(params.n_ngb), &params);
        let sim = Sim::new(gas, params, boundary).unwrap();
        let view = gas_view(&sim, 40).unwrap();
        let (slice, _) = gas_maps(&sim, &view);
        // x ∈ [0, 2) across the 40 columns; the dense half [0.1, 0.9] against [1.1, 1.9].
        let mean = |cols: std::ops::Range<u32>| {
            let k = cols.len() as f64 * 40.0;
            cols.flat_map(|c| (0..40).map(move |r| (c, r)))
                .map(|(c, r)| slice.at(c, r))
                .sum::<f64>()
                / k
        };
        let (dense, dilute) = (mean(2..18), mean(22..38));
        assert!((0.9..1.1).contains(&dense), "{dense}");
        assert!((0.11..0.14).contains(&dilute), "{dilute}");
    }
}
