//! `warpkit repro collision`: the self-gravity document's showcase — a pure N-body run of
//! 5·10^6 particles, two galaxies (dark-matter halo + stellar disk, built in the spirit of DICE)
//! colliding until the disks throw out tidal tails — run by `warpkit nbody` ([`warpkit::nbody::run`])
//! into `DIR/collision/`: its table (time per step by stage, steps per second, energy
//! conservation, the force error at the start), the energy and virial plots, the diagnostics
//! CSV and the snapshots. The document gives no numbers for this run, only the picture; the CPU
//! backend runs a small version (2000 particles, float64 direct summation) in about a minute.
//! Not part of `repro all` (the GPU run takes minutes of its own).

use super::{ReproError, Settings, Summary, meta};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use warpkit::nbody::run::{self as nb, RunConfig};

const TITLE: &str = "The 5·10^6-particle galaxy collision (self-gravity document)";

pub fn run(s: &Settings) -> Result<Summary, ReproError> {
    let mut c = if s.is_gpu() {
        RunConfig::default()
    } else {
        RunConfig::cpu_default()
    };
    if let Some(n) = s.n {
        c.ic.n = n;
    }
    c.ic.seed = s.seed;
    let dir = s.dir("collision")?;
    c.output.dir = dir.path().to_path_buf();
    // The reproduction's folder is its own: a second run regenerates it.
    c.output.overwrite = true;
    meta::write(
        &dir,
        "collision",
        &s.backend,
        json!({
            "particles": c.ic.n, "t_end": c.run.t_end, "dt": c.run.dt, "eps": c.run.eps,
            "theta": c.run.theta, "alpha": c.run.alpha, "theta_max": c.run.theta_max,
            "quadrupole": c.run.quadrupole, "seed": c.ic.seed,
            "initial_conditions": "two DICE-like galaxies (Hernquist halo 20, exponential disk 1, \
                Q 1.5) on a parabolic orbit, pericentre 8, separation 40, inclinations 0 and 60 deg",
        }),
    )?;
    let mut figures = crate::movie::RunFigures::new(&c);
    let summary = nb::run_with(
        &s.backend,
        &c,
        Arc::new(AtomicBool::new(false)),
        &mut figures,
    )
    .map_err(|e| ReproError::Nbody(e.to_string()))?;
    let mut table = format!("# {TITLE}\n\n");
    table.push_str(&nb::timing_table(&summary));
    table.push_str(
        "\nThe document shows this run as pictures only (no times or errors to compare). \
         Files: `diagnostics.csv` (energies, momenta, virial ratio, Lagrangian radii), \
         `snapshot_*.gadget` (Gadget format 2), `energy.png`, `virial.png`, `config.toml`.\n",
    );
    dir.write("table.md", table.as_bytes())?;
    if s.print {
        print!("{table}");
    }
    let per_step = summary.gpu_times.total() / summary.steps.max(1) as f64;
    Ok(Summary {
        name: "collision",
        title: TITLE.into(),
        headline: format!(
            "{} particles, {} steps, {:.2} steps/s{}, |ΔE/E| = {:.2e} at the end, {:.2e} at most",
            summary.n,
            summary.steps,
            summary.steps as f64 / summary.wall_s.max(1e-9),
            if s.is_gpu() {
                format!(", {per_step:.2} ms GPU per step")
            } else {
                String::new()
            },
            summary.energy_drift(),
            summary.energy_max_dev
        ),
        figures: vec![
            ("energy".into(), "energy conservation".into()),
            ("virial".into(), "virial ratio".into()),
        ],
    })
}
