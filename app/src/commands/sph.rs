//! `warpkit sph`: the options of the hydrodynamics solver's case (`warpkit::sph::hydro::cli`).

use crate::choice::choice;
use std::path::PathBuf;
use warpkit::sph::hydro::GravitySolver;
use warpkit::sph::hydro::cli::IcKind;

/// Arguments of `warpkit sph`.
#[derive(clap::Args, Debug)]
pub struct SphArgs {
    /// A TOML file with [ic], [run] and [output] tables (every key: docs/keys.md or `warpkit
    /// info --keys sph`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Initial conditions.
    #[arg(long, value_parser = choice::<IcKind>())]
    pub ic: Option<IcKind>,
    /// Sod: dense particles per unit length along the tube; Sedov: particles per box side.
    #[arg(long)]
    pub resolution: Option<usize>,
    /// Evrard, polytrope: about this many particles.
    #[arg(long)]
    pub particles: Option<usize>,
    /// End time.
    #[arg(long, allow_negative_numbers = true)]
    pub t_end: Option<f64>,
    /// Self-gravity's softening length ε.
    #[arg(long, allow_negative_numbers = true)]
    pub softening: Option<f64>,
    /// Self-gravity's tree opening angle θ.
    #[arg(long, allow_negative_numbers = true)]
    pub theta: Option<f64>,
    /// How self-gravity is summed.
    #[arg(long, value_parser = choice::<GravitySolver>())]
    pub gravity_solver: Option<GravitySolver>,
    /// Individual time steps on this many levels (steps Δ/2^k, neighbours within a factor 4);
    /// 0: one step shared by every particle.
    #[arg(long)]
    pub block_levels: Option<u32>,
    /// Continue the run of this snapshot (its time, and the parameters of the `.run.toml`
    /// beside it; options given here override them, and say so).
    #[arg(long, conflicts_with = "ic")]
    pub restart: Option<PathBuf>,
    /// A snapshot every K steps (0: the final one only).
    #[arg(long)]
    pub snapshot_every: Option<u64>,
    /// Replace a previous run's diagnostics and snapshots in the output directory.
    #[arg(long)]
    pub overwrite: bool,
    /// Output directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl From<SphArgs> for warpkit::sph::hydro::cli::SphArgs {
    fn from(a: SphArgs) -> Self {
        let SphArgs {
            config,
            ic,
            resolution,
            particles,
            t_end,
            softening,
            theta,
            gravity_solver,
            block_levels,
            restart,
            snapshot_every,
            overwrite,
            out,
        } = a;
        Self {
            config,
            ic,
            resolution,
            particles,
            t_end,
            softening,
            theta,
            gravity_solver,
            block_levels,
            restart,
            snapshot_every,
            overwrite,
            progress_every: None,
            out,
        }
    }
}

/// Runs the case (the library's solver and its files) with the images beside each snapshot. The first Ctrl-C ends the run after its
/// step (final snapshot, diagnostics, profile) and exits with 130; a second exits at once.
pub(crate) fn run(
    choice: warpkit::backend::BackendChoice,
    a: SphArgs,
    progress_every: Option<f64>,
) -> anyhow::Result<()> {
    use anyhow::Context;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || {
        if flag.swap(true, std::sync::atomic::Ordering::Relaxed) {
            std::process::exit(130);
        }
    })
    .context("installing the Ctrl-C handler")?;
    let mut args: warpkit::sph::hydro::cli::SphArgs = a.into();
    args.progress_every = progress_every;
    let s = warpkit::sph::hydro::cli::run_with(
        choice,
        args,
        stop,
        &mut warpkit_app::image::gas::SnapshotImages,
    )?;
    if s.interrupted {
        eprintln!(
            "sph: interrupted at t = {} ({} steps of this run): final snapshot, diagnostics and \
             profile written",
            s.t, s.steps
        );
        return Err(crate::Interrupted.into());
    }
    Ok(())
}
