//! `warpkit repro`: the papers' tables and figures into DIR/<name>/ (`warpkit_app::repro`); and
//! the hidden `repro-target`, one gravity evaluation for ncu to profile.

use super::*;

#[derive(clap::Args)]
pub(crate) struct ReproArgs {
    /// Which reproduction: sort, theta, scaling, storage, fem, sbh, hydro, all.
    #[arg(value_parser = choice::<crate::repro::Name>())]
    pub(crate) name: crate::repro::Name,
    /// Output directory (each reproduction writes DIR/<name>/; `all` also DIR/README.md).
    /// Default: results/gpu on the GPU, results/cpu (git-ignored) on the CPU backend.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Bodies (sort, theta), the largest N (scaling, storage), the largest number of sources
    /// M (sbh: the table's M below it, then it) or the strong-scaling N (multigpu: its weak
    /// scaling takes N/2 per rank) or the particles of impact's two bodies; defaults: the
    /// seed's sizes on the GPU, smaller ones on the CPU backend.
    #[arg(long)]
    pub(crate) n: Option<usize>,
    /// Timed repeats per point (default: per reproduction and backend).
    #[arg(long)]
    pub(crate) repeats: Option<usize>,
    /// fem (and fem within all): cube edges of the cantilever meshes, elements per side,
    /// comma-separated; default 16,32,64,96,128 on the GPU, 6,8,12,16 on the CPU backend.
    // repro::fem::{GPU,CPU}_SIZES; tests/bad_input.rs checks this help against them.
    #[arg(long, value_delimiter = ',')]
    pub(crate) sizes: Option<Vec<usize>>,
    /// sbh (and sbh within all): query grid cells per side; default 100 on the GPU, 20 on the
    /// CPU backend (whose convergence sweep uses at most 12).
    #[arg(long)]
    pub(crate) grid: Option<usize>,
    /// Seed of scenes and shuffles.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Also pack DIR into this single uncompressed tar file when done (even after a failure).
    #[arg(long)]
    pub(crate) tar: Option<PathBuf>,
}

#[derive(clap::Args)]
pub(crate) struct ReproTargetArgs {
    #[arg(long, value_parser = choice::<Mode>())]
    pub(crate) mode: Mode,
    #[arg(long)]
    pub(crate) n: usize,
    #[arg(long, default_value_t = 0.5)]
    pub(crate) theta: f32,
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
}

pub(crate) fn run(choice: BackendChoice, a: ReproArgs) -> Result<()> {
    let ReproArgs {
        name,
        out,
        n,
        repeats,
        sizes,
        grid,
        seed,
        tar,
    } = a;
    repro(
        choice,
        name,
        ReproOpts {
            out,
            n,
            sizes,
            grid,
            repeats,
            seed,
            tar,
        },
    )
}

pub(crate) fn run_target(choice: BackendChoice, a: ReproTargetArgs) -> Result<()> {
    let ReproTargetArgs {
        mode,
        n,
        theta,
        seed,
    } = a;
    let backend = select(choice)?;
    crate::repro::check_n(&backend, n)?;
    Ok(crate::repro::ncu::target(&backend, mode, n, theta, seed)?)
}

/// The most timed repeats per point `repro` takes.
const MAX_REPEATS: usize = 1 << 20;

/// `warpkit repro`'s options after the name.
struct ReproOpts {
    out: Option<PathBuf>,
    n: Option<usize>,
    sizes: Option<Vec<usize>>,
    grid: Option<usize>,
    repeats: Option<usize>,
    seed: u64,
    tar: Option<PathBuf>,
}

fn repro(choice: BackendChoice, name: crate::repro::Name, o: ReproOpts) -> Result<()> {
    let ReproOpts {
        out,
        n,
        sizes,
        grid,
        repeats,
        seed,
        tar,
    } = o;
    if repeats == Some(0) {
        return Err(warpkit::bh::InputError::NoRepeats.into());
    }
    if let Some(r) = repeats.filter(|&r| r > MAX_REPEATS) {
        // A count near usize::MAX panicked reserving the timings.
        bail!("--repeats {r}: at most {MAX_REPEATS} timed runs per point");
    }
    if name == crate::repro::Name::Multigpu && choice != BackendChoice::Cpu {
        // Before any thread: a wheel's libnccl.so.2 needs a libnccl.so link on the library path
        // at process start (host/multi/nccl.rs); without NCCL the run uses one GPU.
        warpkit::multi::nccl::reexec_with_nccl();
    }
    let backend = select(choice)?;
    let out = out.unwrap_or_else(|| PathBuf::from("results").join(backend.name()));
    if let Some(tar) = &tar {
        // Not DIR itself, nor a file among a reproduction's outputs (DIR/<name>/...): packed
        // at the end, the archive replaced one of the files it was to hold.
        let names: Vec<&str> = match name {
            crate::repro::Name::All => crate::repro::Name::ALL.iter().map(|n| n.as_str()).collect(),
            n => vec![n.as_str()],
        };
        // `all` also writes DIR/README.md, the index.
        let index = name == crate::repro::Name::All && *tar == out.join("README.md");
        if *tar == out || index || names.iter().any(|n| tar.starts_with(out.join(n))) {
            bail!(
                "--tar {}: the archive must not be DIR ({}), its index README.md or inside a \
                 reproduction's directory",
                tar.display(),
                out.display()
            );
        }
        // An archive inside DIR may name a directory that the run creates: create it now.
        if tar.parent().is_some_and(|p| p.starts_with(&out)) {
            std::fs::create_dir_all(tar.parent().unwrap())
                .with_context(|| format!("creating {}", out.display()))?;
        }
        warpkit::files::check_output(tar)?;
    }
    let settings = crate::repro::Settings {
        backend,
        out: out.clone(),
        n,
        repeats,
        fem_sizes: sizes,
        grid,
        seed,
        print: true,
    };
    // Ctrl-C ends the sweep after its current row, which then writes its table, figures and
    // meta.json from what was measured; a second Ctrl-C exits at once.
    ctrlc::set_handler(|| {
        if crate::repro::output::interrupted() {
            std::process::exit(130);
        }
        crate::repro::output::interrupt();
    })
    .context("installing the Ctrl-C handler")?;
    let start = std::time::Instant::now();
    let result = crate::repro::run(name, &settings);
    if let Some(tar) = &tar {
        crate::repro::pack::tar_dir(&out, tar)
            .with_context(|| format!("packing {} into {}", out.display(), tar.display()))?;
        eprintln!("packed {} into {}", out.display(), tar.display());
    }
    if result.is_err() && crate::repro::output::interrupted() {
        eprintln!(
            "repro {}: interrupted; what was measured is written in {}",
            name.as_str(),
            out.display()
        );
        return Err(Interrupted.into());
    }
    let done = result?;
    eprintln!(
        "repro {}: {} reproduction(s) written to {} in {:.1} s",
        name.as_str(),
        done.len(),
        out.display(),
        start.elapsed().as_secs_f64()
    );
    if crate::repro::output::interrupted() {
        return Err(Interrupted.into());
    }
    Ok(())
}
