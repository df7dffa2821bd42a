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
pub fn write_gas_images(sim: &Sim, pixels: u32, snapshot: &Path) -> Result<[PathBuf; 2], ImageError> {
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
