//! `warpkit nbody`.

use super::*;

#[derive(clap::Args)]
pub(crate) struct NbodyArgs {
    /// A TOML file with [ic], [run] and [output] tables (see `warpkit::nbody::run::RunConfig`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Initial conditions.
    #[arg(long, value_enum)]
    ic: Option<warpkit::nbody::run::IcKind>,
    /// Total particles.
    #[arg(long)]
    n: Option<usize>,
    /// Restart from (or start with) this snapshot: Gadget format 1/2, or HDF5 (`hdf5` feature).
    #[arg(long)]
    restart: Option<PathBuf>,
    /// End time.
    #[arg(long, allow_negative_numbers = true)]
    t_end: Option<f64>,
    /// Shared time step.
    #[arg(long, allow_negative_numbers = true)]
    dt: Option<f64>,
    /// Plummer softening.
    #[arg(long, allow_negative_numbers = true)]
    eps: Option<f64>,
    /// Opening angle of the GPU tree.
    #[arg(long, allow_negative_numbers = true)]
    theta: Option<f64>,
    /// Gadget's relative opening criterion with this α after the first force evaluation (GPU
    /// tree; θ for the first, guard θ_max = 1; default 0.006, 0: θ throughout).
    #[arg(long, allow_negative_numbers = true)]
    alpha: Option<f64>,
    /// Monopoles only in the tree forces.
    #[arg(long)]
    no_quadrupole: bool,
    /// Individual block time steps (GPU: forces for the active particles only; CPU: the float64
    /// reference): `--dt` is the largest step, levels down to `dt / 2^20`.
    #[arg(long)]
    block_steps: bool,
    /// Tree build (GPU): sorted keys or the locked insertion.
    #[arg(long, value_enum)]
    build: Option<warpkit::bh::gpu::Build>,
    /// Accuracy η of the block-step criterion η·sqrt(ε/|a|).
    #[arg(long, allow_negative_numbers = true)]
    eta: Option<f64>,
    /// Output directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Diagnostics every K steps.
    #[arg(long)]
    diag_every: Option<u64>,
    /// A snapshot every K steps (0: only the final one).
    #[arg(long)]
    snapshot_every: Option<u64>,
    /// Snapshot format.
    #[arg(long, value_enum)]
    format: Option<warpkit::nbody::run::SnapshotFormat>,
    /// Also write the initial conditions as ic.gadget (ic.hdf5 with --format hdf5).
    #[arg(long)]
    write_ic: bool,
    /// Seed of the initial conditions.
    #[arg(long)]
    seed: Option<u64>,
}

pub(crate) fn nbody(choice: BackendChoice, a: NbodyArgs) -> Result<()> {
    use warpkit::nbody::run::{IcKind, RunConfig};
    let backend = select(choice)?;
    let mut c = match &a.config {
        Some(path) => RunConfig::from_toml_file(path)?,
        None if backend.is_gpu() => RunConfig::default(),
        None => RunConfig::cpu_default(),
    };
    if let Some(k) = a.ic {
        c.ic.kind = k;
    }
    if let Some(path) = a.restart {
        c.ic.kind = IcKind::Snapshot;
        c.ic.file = Some(path);
    }
    macro_rules! set {
        ($($opt:ident => $field:expr),*) => {$(if let Some(v) = a.$opt { $field = v; })*};
    }
    set!(n => c.ic.n, seed => c.ic.seed, t_end => c.run.t_end, dt => c.run.dt, eps => c.run.eps,
        theta => c.run.theta, out => c.output.dir, diag_every => c.output.diag_every,
        snapshot_every => c.output.snapshot_every, format => c.output.format,
        build => c.run.build);
    if a.no_quadrupole {
        c.run.quadrupole = false;
    }
    if let Some(alpha) = a.alpha {
        c.run.alpha = alpha;
    }
    if a.block_steps {
        c.run.block_steps = true;
    }
    if let Some(eta) = a.eta {
        c.run.eta = eta;
    }
    if a.write_ic {
        c.output.write_ic = true;
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    // The first Ctrl-C ends the run after its step (final snapshot, logs); a second exits now.
    ctrlc::set_handler(move || {
        if flag.swap(true, std::sync::atomic::Ordering::Relaxed) {
            std::process::exit(130);
        }
    })
    .context("installing the Ctrl-C handler")?;
    let s = warpkit::nbody::run::run(&backend, &c, stop)?;
    print!("{}", warpkit::nbody::run::timing_table(&s));
    println!("outputs in {}", s.dir.display());
    Ok(())
}
