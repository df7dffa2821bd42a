//! `warpkit nbody`.

use super::*;

#[derive(clap::Args)]
pub(crate) struct NbodyArgs {
    /// A TOML file with [ic], [run] and [output] tables (every key: docs/keys.md or `warpkit info
    /// --keys nbody`); each run writes the config.toml it used, every key with its value.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Initial conditions.
    #[arg(long, value_parser = choice::<warpkit::nbody::run::IcKind>())]
    ic: Option<warpkit::nbody::run::IcKind>,
    /// Total particles.
    #[arg(long)]
    n: Option<usize>,
    /// Restart from (or start with) this snapshot: Gadget format 1/2, or HDF5 (`hdf5` feature).
    /// The run continues from the snapshot's time with the parameters of the run that wrote it
    /// (read from SNAPSHOT.run.toml beside it); options given here override them, each said.
    #[arg(long)]
    restart: Option<PathBuf>,
    /// End time (absolute: a restart runs from its snapshot's time to this).
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
    /// tree; θ for the first; default 0.006, 0: θ throughout).
    #[arg(long, allow_negative_numbers = true)]
    alpha: Option<f64>,
    /// The relative criterion's geometric guard θ_max (default 1.6).
    #[arg(long, allow_negative_numbers = true)]
    theta_max: Option<f64>,
    /// Monopoles only in the tree forces.
    #[arg(long)]
    no_quadrupole: bool,
    /// Individual block time steps (GPU: forces for the active particles only; CPU: the float64
    /// reference): `--dt` is the largest step, levels down to `dt / 2^20`.
    #[arg(long)]
    block_steps: bool,
    /// Tree build (GPU): sorted keys or the locked insertion.
    #[arg(long, value_parser = choice::<warpkit::bh::gpu::Build>())]
    build: Option<warpkit::bh::gpu::Build>,
    /// Forces on the CPU backend: float64 direct summation (the reference), the GPU's tree walk
    /// on the CPU (θ, α, quadrupoles as on the GPU), or auto: the tree above 4096 particles.
    #[arg(long, value_parser = choice::<warpkit::nbody::run::CpuForces>())]
    forces: Option<warpkit::nbody::run::CpuForces>,
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
    #[arg(long, value_parser = choice::<warpkit::nbody::run::SnapshotFormat>())]
    format: Option<warpkit::nbody::run::SnapshotFormat>,
    /// Snapshot floats: single (float32) or double (float64: restarts from the CPU backend's
    /// float64 state continue exactly) [default: single on the GPU, double on the CPU].
    #[arg(long, value_parser = choice::<warpkit::nbody::snapshot::Precision>())]
    precision: Option<warpkit::nbody::snapshot::Precision>,
    /// Also write the initial conditions as ic.gadget (ic.hdf5 with --format hdf5).
    #[arg(long)]
    write_ic: bool,
    /// Write into an output directory that holds a previous run's diagnostics or snapshots,
    /// replacing the files this run writes; the previous run's others (e.g. snapshots past this
    /// run's end) stay. Without it such a directory is refused before anything is written.
    #[arg(long)]
    overwrite: bool,
    /// Seed of the initial conditions.
    #[arg(long)]
    seed: Option<u64>,
    /// Shared steps over K virtual ranks in this process (Morton decomposition balanced
    /// by work, migration every step, global top tree, locally essential trees), exchanging
    /// through memory; walks on the selected backend (the CPU, or GPU 0 shared by the ranks).
    /// Kick-drift-kick with --dt to --t-end at θ (the relative criterion and block steps are not
    /// available there); prints communication and compute per step and, up to 20000 particles,
    /// the energy drift by float64 direct summation. No snapshots, images or diagnostics files.
    #[arg(long, default_value_t = 1, conflicts_with = "gpus")]
    ranks: usize,
    /// The same over one rank per GPU on GPUs 0..K−1 with NCCL (`--gpus` alone: every visible
    /// GPU; needs libnccl: README, Several ranks and GPUs).
    #[arg(long, num_args = 0..=1, default_missing_value = "0")]
    gpus: Option<usize>,
}

pub(crate) fn run(choice: BackendChoice, a: NbodyArgs, progress_every: Option<f64>) -> Result<()> {
    use warpkit::nbody::run::{IcKind, RunConfig};
    if a.gpus.is_some() {
        if choice == BackendChoice::Cpu {
            bail!("--gpus runs on GPUs: it cannot be combined with --backend cpu (use --ranks)");
        }
        warpkit::multi::nccl::reexec_with_nccl();
        warpkit::multi::nccl::ensure_loadable()?;
    }
    warpkit::multi::check_ranks(a.ranks).map_err(anyhow::Error::msg)?;
    let multi = a.ranks > 1 || a.gpus.is_some();
    if multi && (a.block_steps || a.alpha.is_some_and(|v| v != 0.0)) {
        bail!(
            "--block-steps and --alpha are not available with --ranks or --gpus (shared steps at θ)"
        );
    }
    let gpus = match a.gpus {
        Some(k) => Some(super::gravity::open_gpus(k)?),
        None => None,
    };
    let backend = match &gpus {
        Some(g) => Backend::Gpu(g[0].clone()),
        None => select(choice)?,
    };
    let mut c = match &a.config {
        Some(path) => RunConfig::from_toml_file(path)?,
        None if backend.is_gpu() => RunConfig::default(),
        None => RunConfig::cpu_default(),
    };
    // The [run] keys the user set, in the file or below: a restart keeps them.
    let mut set: Vec<String> = match &a.config {
        Some(path) => RunConfig::run_keys_in(path)?,
        None => Vec::new(),
    };
    let flags = [
        ("t_end", a.t_end.is_some()),
        ("dt", a.dt.is_some()),
        ("eps", a.eps.is_some()),
        ("theta", a.theta.is_some()),
        ("alpha", a.alpha.is_some()),
        ("theta_max", a.theta_max.is_some()),
        ("quadrupole", a.no_quadrupole),
        ("block_steps", a.block_steps),
        ("build", a.build.is_some()),
        ("forces", a.forces.is_some()),
        ("eta", a.eta.is_some()),
    ];
    set.extend(flags.iter().filter(|f| f.1).map(|f| f.0.to_string()));
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
        theta => c.run.theta, theta_max => c.run.theta_max, out => c.output.dir, diag_every => c.output.diag_every,
        snapshot_every => c.output.snapshot_every, format => c.output.format,
        precision => c.output.precision,
        build => c.run.build, forces => c.run.forces);
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
    if a.overwrite {
        c.output.overwrite = true;
    }
    if let Some(s) = progress_every {
        c.output.progress_every = s;
    }
    if c.ic.kind == IcKind::Snapshot {
        let set: Vec<&str> = set.iter().map(String::as_str).collect();
        for note in c.restart(&set)? {
            eprintln!("{note}");
        }
    }
    if multi {
        return multi_run(&c, a.ranks, gpus.as_deref(), &backend);
    }
    if let Some(config) = &a.config {
        // The run writes the configuration it used as OUT/config.toml.
        let written = c.output.dir.join("config.toml");
        warpkit::files::check_not_input("--out", &written, &[("--config", Some(config))])?;
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
    let mut figures = crate::movie::RunFigures::new(&c);
    let s = warpkit::nbody::run::run_with(&backend, &c, stop, &mut figures)?;
    print!("{}", warpkit::nbody::run::timing_table(&s));
    println!("outputs in {}", s.dir.display());
    if s.interrupted {
        eprintln!(
            "nbody: interrupted at t = {} (step {} of this run): final snapshot and diagnostics \
             written",
            s.time, s.steps
        );
        return Err(Interrupted.into());
    }
    Ok(())
}

/// `nbody --ranks K` / `--gpus K`: shared kick-drift-kick steps over the ranks
/// (`multi::VirtualRanks::run_on`), with the communication per step.
fn multi_run(
    c: &warpkit::nbody::run::RunConfig,
    ranks: usize,
    gpus: Option<&[std::sync::Arc<warpkit::runtime::Gpu>]>,
    backend: &Backend,
) -> Result<()> {
    use warpkit::multi::{Place, VirtualRanks};
    c.validate()?;
    let r = &c.run;
    let (p0, t0) = warpkit::nbody::run::initial_state(&c.ic, r.eps)?;
    let n = p0.len();
    if n < 2 {
        bail!("{n} particles: the ranks need at least 2");
    }
    let steps = c.steps_from(t0).max(1) as usize;
    let refs: Vec<&warpkit::runtime::Gpu> =
        gpus.map_or(Vec::new(), |gs| gs.iter().map(|g| &**g).collect());
    let (k, place, on) = match (gpus, backend.gpu()) {
        (Some(gs), _) => (
            gs.len(),
            Place::Gpus(&refs),
            format!("{} GPUs over NCCL", gs.len()),
        ),
        (None, Some(g)) => (
            ranks,
            Place::Gpu(g),
            format!("{ranks} virtual ranks on {}", g.info().name),
        ),
        (None, None) => (
            ranks,
            Place::Cpu,
            format!("{ranks} virtual ranks on the CPU"),
        ),
    };
    if c.run.alpha != 0.0 {
        println!(
            "note: the ranks use θ = {} throughout (no relative criterion)",
            r.theta
        );
    }
    let vr = VirtualRanks {
        k,
        params: Params {
            theta: r.theta as f32,
            eps: r.eps as f32,
            g: 1.0,
        },
        quadrupole: r.quadrupole,
    };
    println!(
        "N-body over {on}: {:?}, N = {n}, {steps} steps of {} to t = {}, θ = {}, ε = {}, {}",
        c.ic.kind,
        r.dt,
        t0 + steps as f64 * r.dt,
        r.theta,
        r.eps,
        if r.quadrupole {
            "quadrupoles"
        } else {
            "monopoles"
        }
    );
    let t0 = std::time::Instant::now();
    let run = vr.run_on(place, &p0, r.dt, steps)?;
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "| step | migrated | bytes | LET bytes | exchange ms | compute ms | GPU walk ms | imbalance |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let every = (steps / 10).max(1);
    for (i, s) in run.steps.iter().enumerate() {
        if i % every == 0 || i == steps {
            println!(
                "| {i} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.3} |",
                s.migrated,
                s.bytes(),
                s.bytes_let,
                s.ms_exchange,
                s.ms_compute,
                s.ms_device,
                s.imbalance
            );
        }
    }
    let mean = |f: fn(&warpkit::multi::StepStats) -> f64| {
        run.steps.iter().map(f).sum::<f64>() / run.steps.len() as f64
    };
    println!(
        "mean per step: {:.0} bytes, exchange {:.2} ms, compute {:.2} ms (GPU walk {:.2} ms); \
         wall {:.1} s ({:.1} ms per step)",
        mean(|s| s.bytes() as f64),
        mean(|s| s.ms_exchange),
        mean(|s| s.ms_compute),
        mean(|s| s.ms_device),
        wall,
        wall * 1e3 / (steps + 1) as f64
    );
    let lost = run
        .steps
        .iter()
        .any(|s| s.misplaced != 0 || s.counts.iter().sum::<usize>() != n);
    if lost {
        bail!("a body was lost, duplicated or misplaced across the ranks");
    }
    if n <= 20000 {
        let (k0, u0) = warpkit::nbody::cpu::energies(&p0, r.eps);
        let (k1, u1) = warpkit::nbody::cpu::energies(&run.particles, r.eps);
        let (e0, e1) = (k0 + u0, k1 + u1);
        println!(
            "energy (float64 direct summation): {e0:.6e} -> {e1:.6e}, |ΔE/E| = {:.2e}",
            ((e1 - e0) / e0).abs()
        );
    }
    Ok(())
}
