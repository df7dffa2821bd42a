//! `warpkit impact`: the options of the giant-impact run (`warpkit::planet::impact`).

use std::path::PathBuf;

/// Arguments of `warpkit impact`.
#[derive(clap::Args, Debug)]
pub struct ImpactArgs {
    /// A TOML file with [target], [impactor], [particles], [settle], [impact], [run] and
    /// [output] tables (every key: docs/keys.md or `warpkit info --keys impact`); without it,
    /// the demo (0.887 and 0.133 Earth masses, 30% iron and 70% granite each, 45°, the mutual
    /// escape speed).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Particles of the two bodies built here together, shared by mass [default: 2000].
    #[arg(long)]
    pub particles: Option<usize>,
    /// End time in seconds from the start [default: 36000].
    #[arg(long, allow_negative_numbers = true)]
    pub t_end: Option<f64>,
    /// Replace a previous run's files in the output directory.
    #[arg(long)]
    pub overwrite: bool,
    /// Output directory [default: impact_out].
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Runs the impact with a material image beside each snapshot. The first Ctrl-C ends the run
/// after its step (final snapshot, outcome row, summary) and exits with 130; a second exits at
/// once.
pub(crate) fn run(
    choice: warpkit::backend::BackendChoice,
    a: ImpactArgs,
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
    let ImpactArgs {
        config,
        particles,
        t_end,
        overwrite,
        out,
    } = a;
    let s = warpkit::planet::impact::run::run_with(
        choice,
        warpkit::planet::impact::cli::ImpactArgs {
            config,
            text: None,
            particles,
            t_end,
            overwrite,
            progress_every,
            out,
        },
        stop,
        &mut warpkit_app::image::materials::ImpactImages::default(),
    )?;
    if s.interrupted {
        eprintln!(
            "impact: interrupted at t = {:.0} s ({} steps): final snapshot, outcome and summary \
             written",
            s.t, s.steps
        );
        return Err(crate::Interrupted.into());
    }
    Ok(())
}
