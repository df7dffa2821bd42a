//! `warpkit.planet`: planets (`warpkit planet`) and giant impacts (`warpkit impact`).

use crate::{backend_choice, interruptible, report};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Builds a planet as `warpkit planet` does (TOML text and/or the keyword overrides); returns a
/// summary dict.
#[pyfunction]
#[pyo3(signature = (config = None, mass = None, mass_kg = None, layers = None, particles = None,
    settle = None, seed = None, out = None, backend_choice = "auto", overwrite = false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn planet_build<'py>(
    py: Python<'py>,
    config: Option<String>,
    mass: Option<f64>,
    mass_kg: Option<f64>,
    layers: Option<String>,
    particles: Option<usize>,
    settle: Option<f64>,
    seed: Option<u64>,
    out: Option<String>,
    backend_choice: &str,
    overwrite: bool,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    use warpkit::planet::cli::{PlanetArgs, run};
    let choice = self::backend_choice(backend_choice)?;
    let a = PlanetArgs {
        text: config,
        mass,
        mass_kg,
        layers,
        particles,
        seed,
        settle,
        overwrite,
        out: out.map(Into::into),
        ..Default::default()
    };
    let s = py
        .detach(|| run(a, choice))
        .map_err(|e| PyValueError::new_err(report(&e)))?;
    let d = pyo3::types::PyDict::new(py);
    let c = &s.criteria;
    d.set_item("dir", s.dir.display().to_string())?;
    d.set_item(
        "snapshot",
        s.dir.join("planet.gadget").display().to_string(),
    )?;
    d.set_item("profile", s.dir.join("profile.csv").display().to_string())?;
    d.set_item("radius_m", s.radius)?;
    d.set_item("particles", c.n)?;
    d.set_item("median_density_deviation", c.median_dev)?;
    d.set_item("within_1pc", c.within_1pc)?;
    d.set_item("v_rms_over_v_esc", c.v_rms / c.v_esc)?;
    d.set_item("settled", c.hold())?;
    Ok(d)
}

/// Runs `warpkit impact` with a TOML case (`None`: the demo) and the keyword overrides; returns
/// a summary dict. The images are the command line's.
#[pyfunction]
#[pyo3(signature = (config = None, particles = None, t_end = None, out = None,
    backend_choice = "auto", overwrite = false))]
pub(crate) fn impact_run<'py>(
    py: Python<'py>,
    config: Option<String>,
    particles: Option<usize>,
    t_end: Option<f64>,
    out: Option<String>,
    backend_choice: &str,
    overwrite: bool,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    use warpkit::planet::impact::cli::ImpactArgs;
    use warpkit::planet::impact::run::{NoImages, run_with};
    let choice = self::backend_choice(backend_choice)?;
    let a = ImpactArgs {
        text: config,
        particles,
        t_end,
        overwrite,
        out: out.map(Into::into),
        ..Default::default()
    };
    let s = interruptible(py, |stop| {
        run_with(choice, a, stop, &mut NoImages).map_err(|e| PyValueError::new_err(report(&e)))
    })?;
    let d = pyo3::types::PyDict::new(py);
    let path = |name: &str| s.dir.join(name).display().to_string();
    d.set_item("dir", s.dir.display().to_string())?;
    d.set_item("diagnostics", path("diagnostics.csv"))?;
    d.set_item("outcome_csv", path("outcome.csv"))?;
    d.set_item("snapshot", s.snapshot.display().to_string())?;
    d.set_item("particles", s.particles)?;
    d.set_item("target_particles", s.target_particles)?;
    d.set_item("materials", s.materials.clone())?;
    d.set_item("time", s.t)?;
    d.set_item("t_contact", s.t_contact)?;
    d.set_item("steps", s.steps)?;
    d.set_item("wall_s", s.wall_s)?;
    d.set_item("setup_s", s.setup_s)?;
    d.set_item("energy_error", s.energy_error)?;
    d.set_item("energy_error_max", s.energy_error_max)?;
    d.set_item("angular_momentum_error", s.angular_momentum_error)?;
    d.set_item("angular_momentum_error_max", s.angular_momentum_error_max)?;
    d.set_item("interrupted", s.interrupted)?;
    if let Some(last) = s.outcomes.last() {
        let o = &last.outcome;
        d.set_item("remnant_kg", o.remnant.mass)?;
        d.set_item("disk_kg", o.disk.mass)?;
        d.set_item("escaping_kg", o.escaping.mass)?;
    }
    Ok(d)
}
