//! The `warpkit` command line.

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use warpkit::backend::{self, Backend, BackendChoice};
use warpkit::bh::gpu::{Storage, Traversal};
use warpkit::bh::scene::{self, Scene};
use warpkit::bh::{Mode, Params};
use warpkit::runtime::probe;

mod commands;
use commands::fem::{FemArgs, MeshArgs, fem, fem_mesh};
use commands::gravity::{GravityArgs, gravity};
use commands::nbody::{NbodyArgs, nbody};
use commands::sbh::{SbhArgs, sbh};

#[derive(Parser)]
#[command(
    name = "warpkit",
    version,
    about = "GPU kernels in Rust: Barnes–Hut, FEM assembly, stochastic summation"
)]
struct Cli {
    /// Where to run: the GPU if usable (auto), the GPU or fail (gpu), or the CPU backend (cpu).
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto, global = true)]
    backend: BackendChoice,
    /// Seconds between plain progress lines of long runs when standard error is not a terminal
    /// (a batch job's log) [default: 10; 0: none]; on a terminal a progress bar shows instead.
    #[arg(long, global = true, value_parser = seconds, allow_negative_numbers = true)]
    progress_every: Option<f64>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the device (name, SMs, memory, driver, PTX arch), or why the CPU backend is used.
    Info {
        /// Also list every kernel with its registers and memory (GPU), or its name (CPU).
        #[arg(long)]
        kernels: bool,
    },
    /// Run the warp-reduction self test on the GPU and the CPU and compare.
    Selftest {
        /// Number of elements.
        #[arg(long, default_value_t = 1 << 20)]
        n: usize,
        /// Seed of the input.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Barnes–Hut self-gravity: per-stage timings (GPU) and the error against direct summation.
    Gravity(GravityArgs),
    /// Stochastic Barnes–Hut against Barnes–Hut and direct summation at query points: time and
    /// mean/median/max absolute error of each.
    Sbh(SbhArgs),
    /// SPH neighbour search (tree walks or linked cells): counts, time, optionally density.
    Neighbours(warpkit::sph::cli::NeighboursArgs),
    /// Gravity and SPH density in one tree walk against the two separate walks: times and
    /// speed-up.
    Combined(warpkit::combined::cli::CombinedArgs),
    /// Hex8 cantilever: assemble (CPU or GPU), clamp x = 0, load the free end, solve by PCG, and
    /// compare the tip deflection with Timoshenko beam theory.
    Fem {
        /// Beam length, width and height (x, y, z).
        #[arg(long, num_args = 3, default_values_t = [10.0, 1.0, 1.0], allow_negative_numbers = true)]
        size: Vec<f64>,
        /// Elements along x, y, z.
        #[arg(long, num_args = 3, default_values_t = [80, 4, 8])]
        cells: Vec<usize>,
        /// Young's modulus [default: 210e9]; with --case, the default material's.
        #[arg(long, allow_negative_numbers = true)]
        young: Option<f64>,
        /// Poisson's ratio [default: 0.3]; with --case, the default material's.
        #[arg(long, allow_negative_numbers = true)]
        poisson: Option<f64>,
        /// Total end load (in −z).
        #[arg(long, default_value_t = 1e6, allow_negative_numbers = true)]
        load: f64,
        /// GPU assembly strategy: thread, warp4, warp8, thread-atomic, warp4-atomic, warp4-jshared,
        /// warp8-jshared, warp4-jatomic, warp8-jatomic, ppni4, ppni8, ppni4-blocks, ppni8-blocks,
        /// ppni4-blocks-atomic, ppni8-blocks-atomic, two-kernel, rows, rows-rounds. Default
        /// rows-rounds (ppni8-blocks with --bbar); the CPU backend assembles on the host and has
        /// no strategies.
        #[arg(long)]
        strategy: Option<String>,
        /// Write the unconstrained stiffness in Matrix Market format.
        #[arg(long)]
        mtx: Option<PathBuf>,
        /// Write the displacement (per node) and the strain, stress and von Mises stress at each
        /// element's centre as VTK (.vtu, binary appended, as ParaView writes it).
        #[arg(long)]
        vtu: Option<PathBuf>,
        /// A Gmsh mesh (.msh 2.2 or 4.1, ASCII or binary; its hexahedra) instead of the
        /// cantilever: its physical groups name the clamped nodes (--fix) and loaded faces
        /// (--traction).
        #[arg(long, conflicts_with_all = ["size", "cells", "load"])]
        mesh: Option<PathBuf>,
        /// A TOML load case (materials per physical volume, fixed sets and components,
        /// tractions, body force; README "FEM case files"). The options below compose with it:
        /// --mesh, --young/--poisson (the default material) and --body-force replace the file's,
        /// --fix and --traction add sets to the file's.
        #[arg(long, conflicts_with_all = ["size", "cells", "load"])]
        case: Option<PathBuf>,
        /// With --mesh or --case: a physical group whose nodes are clamped in x, y and z
        /// (repeatable; with neither --fix nor [[fixed]], the group "fixed").
        #[arg(long)]
        fix: Vec<String>,
        /// With --mesh or --case: a physical group of quadrangles or triangles and the traction
        /// on it (force per area), e.g. `--traction load 0 0 -1e6` (repeatable).
        #[arg(long, num_args = 4, value_names = ["GROUP", "TX", "TY", "TZ"], allow_negative_numbers = true)]
        traction: Vec<String>,
        /// With --mesh or --case: a body force per unit volume (e.g. ρ g), on every element.
        #[arg(long, num_args = 3, value_names = ["BX", "BY", "BZ"], allow_negative_numbers = true)]
        body_force: Option<Vec<f64>>,
        /// B-bar elements (Hughes 1980: the dilatation averaged per element), for
        /// near-incompressible materials (ν > 0.45 locks the standard hex8). On the GPU the ppni
        /// strategies have B-bar kernels (default ppni8-blocks); case file: formulation = "bbar".
        #[arg(long)]
        bbar: bool,
    },
    /// Reproduce the seed document's tables and figures into DIR/<name>/ (table.md, data.csv,
    /// meta.json, PNG and SVG figures): sort, theta, scaling, storage, fem, sbh, or all of them.
    Repro {
        /// Which reproduction: sort, theta, scaling, storage, fem, sbh, all.
        #[arg(value_enum)]
        name: warpkit::repro::Name,
        /// Output directory (each reproduction writes DIR/<name>/; `all` also DIR/README.md).
        /// Default: results/gpu on the GPU, results/cpu (git-ignored) on the CPU backend.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Bodies (sort, theta), the largest N (scaling, storage), the largest number of sources
        /// M (sbh: the table's M below it, then it) or the strong-scaling N (multigpu: its weak
        /// scaling takes N/2 per rank); defaults: the seed's sizes on the GPU,
        /// smaller ones on the CPU backend.
        #[arg(long)]
        n: Option<usize>,
        /// Timed repeats per point (default: per reproduction and backend).
        #[arg(long)]
        repeats: Option<usize>,
        /// fem (and fem within all): cube edges of the cantilever meshes, elements per side,
        /// comma-separated; default 16,32,64,96,128 on the GPU, 6,8,12,16 on the CPU backend.
        // repro::fem::{GPU,CPU}_SIZES; tests/bad_input.rs checks this help against them.
        #[arg(long, value_delimiter = ',')]
        sizes: Option<Vec<usize>>,
        /// sbh (and sbh within all): query grid cells per side; default 100 on the GPU, 20 on the
        /// CPU backend (whose convergence sweep uses at most 12).
        #[arg(long)]
        grid: Option<usize>,
        /// Seed of scenes and shuffles.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Also pack DIR into this single uncompressed tar file when done (even after a failure).
        #[arg(long)]
        tar: Option<PathBuf>,
    },
    /// One gravity evaluation of the `repro sort` scene, run twice (for ncu to profile).
    #[command(hide = true)]
    ReproTarget {
        #[arg(long, value_enum)]
        mode: Mode,
        #[arg(long)]
        n: usize,
        #[arg(long, default_value_t = 0.5)]
        theta: f32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// N-body simulation (kick-drift-kick leapfrog; tree forces on the GPU, float64 direct
    /// summation on the CPU backend): diagnostics CSV, Gadget snapshots, energy plot, timing.
    /// Defaults reproduce the self-gravity document's collision of 5·10^6 particles (2000 on the
    /// CPU backend); a TOML file (`--config`) sets anything, the options below override it.
    Nbody(NbodyArgs),
    /// SPH hydrodynamics (CPU, float64): the Sod shock tube, the Sedov–Taylor blast, the
    /// Evrard collapse, a polytrope, or gas from a snapshot; grad-h SPH with Monaghan viscosity
    /// and KDK leapfrog; writes diagnostics.csv, gas snapshots that `--restart` continues, and
    /// profile.csv (with the exact solution) into the output directory.
    Sph(warpkit::sph::hydro::cli::SphArgs),
    /// Write the embedded PTX module (for ptxas, cuobjdump or reading).
    Ptx {
        /// Output file; standard output when absent.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// A run stopped by Ctrl-C after writing what it had: exit code 130, as a shell reports SIGINT.
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub(crate) struct Interrupted;

fn main() {
    // Output into a closed pipe (`warpkit info --kernels | head`) ends the process quietly, as
    // for other Unix tools, instead of a panic in `println!`.
    #[cfg(unix)]
    // SAFETY: before any thread; restores the default disposition that Rust's runtime replaced.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        if e.downcast_ref::<Interrupted>().is_some() {
            std::process::exit(130);
        }
        // Not `{e:#}`: it repeats a source that a message already quotes.
        eprintln!("error: {}", warpkit::files::error_report(e.as_ref()));
        std::process::exit(1);
    }
}

/// `warpkit sph`: the first Ctrl-C ends the run after its step (final snapshot, diagnostics,
/// profile) and exits with 130; a second exits at once.
fn sph(choice: BackendChoice, args: warpkit::sph::hydro::cli::SphArgs) -> Result<()> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || {
        if flag.swap(true, std::sync::atomic::Ordering::Relaxed) {
            std::process::exit(130);
        }
    })
    .context("installing the Ctrl-C handler")?;
    let s = warpkit::sph::hydro::cli::run(choice, args, stop)?;
    if s.interrupted {
        eprintln!(
            "sph: interrupted at t = {} ({} steps of this run): final snapshot, diagnostics and \
             profile written",
            s.t, s.steps
        );
        return Err(Interrupted.into());
    }
    Ok(())
}

/// A finite number of seconds ≥ 0.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{s} is not a number of seconds ≥ 0")),
    }
}

fn run(cli: Cli) -> Result<()> {
    if let Some(s) = cli.progress_every {
        warpkit::repro::output::set_progress_every(s);
    }
    match cli.command {
        Command::Info { kernels } => info(cli.backend, kernels),
        Command::Selftest { n, seed } => selftest(cli.backend, n, seed),
        Command::Gravity(args) => gravity(cli.backend, args),
        Command::Sbh(args) => sbh(cli.backend, args),
        Command::Neighbours(args) => warpkit::sph::cli::run(cli.backend, args),
        Command::Combined(args) => warpkit::combined::cli::run(cli.backend, args),
        Command::Fem {
            size,
            cells,
            young,
            poisson,
            load,
            strategy,
            mtx,
            vtu,
            mesh,
            case,
            fix,
            traction,
            body_force,
            bbar,
        } => {
            if mesh.is_some() || case.is_some() {
                fem_mesh(
                    cli.backend,
                    MeshArgs {
                        path: mesh,
                        case,
                        fix,
                        traction,
                        body_force: body_force.map(|b| [b[0], b[1], b[2]]),
                        young,
                        poisson,
                        strategy,
                        mtx,
                        vtu,
                        bbar,
                    },
                )
            } else if !fix.is_empty() || !traction.is_empty() || body_force.is_some() {
                anyhow::bail!("--fix, --traction and --body-force need --mesh or --case")
            } else {
                let default = warpkit::fem::case::DEFAULT_MATERIAL;
                fem(
                    cli.backend,
                    FemArgs {
                        size: [size[0], size[1], size[2]],
                        cells: [cells[0], cells[1], cells[2]],
                        material: warpkit::fem::Material {
                            young: young.unwrap_or(default.young),
                            poisson: poisson.unwrap_or(default.poisson),
                        },
                        load,
                        strategy,
                        mtx,
                        vtu,
                        formulation: commands::fem::formulation(bbar),
                    },
                )
            }
        }
        Command::Repro {
            name,
            out,
            n,
            repeats,
            sizes,
            grid,
            seed,
            tar,
        } => repro(
            cli.backend,
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
        ),
        Command::ReproTarget {
            mode,
            n,
            theta,
            seed,
        } => {
            let backend = select(cli.backend)?;
            warpkit::repro::check_n(&backend, n)?;
            Ok(warpkit::repro::ncu::target(&backend, mode, n, theta, seed)?)
        }
        Command::Nbody(args) => nbody(cli.backend, args, cli.progress_every),
        Command::Sph(args) => sph(cli.backend, args),
        Command::Ptx { out } => {
            let ptx = warpkit::module_ptx().map_err(anyhow::Error::msg)?;
            match out {
                Some(path) => std::fs::write(&path, ptx)
                    .with_context(|| format!("writing {}", path.display())),
                None => {
                    print!("{ptx}");
                    Ok(())
                }
            }
        }
    }
}

fn select(choice: BackendChoice) -> Result<Backend> {
    let (backend, notice) = backend::select(choice)?;
    if let Some(n) = notice {
        eprintln!("note: {n}");
    }
    Ok(backend)
}

fn info(choice: BackendChoice, kernels: bool) -> Result<()> {
    println!(
        "warpkit {} (PTX for {}, {} kernels)",
        env!("CARGO_PKG_VERSION"),
        warpkit::PTX_ARCH,
        warpkit::kernel_names().len()
    );
    let backend = select(choice)?;
    match backend.gpu() {
        Some(gpu) => {
            let i = gpu.info();
            println!("backend: gpu");
            println!("device {}: {}", i.ordinal, i.name);
            println!(
                "  compute capability {}.{}, {} SMs at {} MHz",
                i.compute_capability.0, i.compute_capability.1, i.multiprocessors, i.clock_mhz
            );
            println!(
                "  memory {:.1} GiB, L2 {:.1} MiB",
                i.total_memory as f64 / (1u64 << 30) as f64,
                i.l2_bytes as f64 / (1u64 << 20) as f64
            );
            println!(
                "  driver {} (CUDA {})",
                i.driver_version,
                probe::version_string(i.driver_version)
            );
            if kernels {
                println!(
                    "| kernel | registers | local bytes | static shared bytes | max threads/block |"
                );
                println!("| --- | --- | --- | --- | --- |");
                for name in warpkit::kernel_names() {
                    let a = gpu.module().attributes(name)?;
                    println!(
                        "| {name} | {} | {} | {} | {} |",
                        a.registers, a.local_bytes, a.static_shared_bytes, a.max_threads_per_block
                    );
                }
            }
        }
        None => {
            println!("backend: cpu ({} threads)", rayon::current_num_threads());
            if kernels {
                for name in warpkit::kernel_names() {
                    println!("  {name}");
                }
            }
        }
    }
    Ok(())
}

fn selftest(choice: BackendChoice, n: usize, seed: u64) -> Result<()> {
    if n == 0 || n > u32::MAX as usize {
        bail!("--n must be in 1..=4294967295 (got {n})");
    }
    let backend = select(choice)?;
    let x = warpkit::selftest::input(n, seed);
    let report = warpkit::selftest::run(&backend, &x)?;
    let cpu = report.cpu;
    let (Some((g, rows)), Some(gpu)) = (report.gpu, backend.gpu()) else {
        println!(
            "selftest on the CPU only (n = {n}): sum {:.6}, max {}, passing {}, all-passing warps {}",
            cpu.sum, cpu.max, cpu.passing, cpu.all_passing_warps
        );
        return Ok(());
    };
    println!(
        "selftest on {} (n = {n}, warp kernel {:.3} ms)",
        gpu.info().name,
        g.warp_kernel_ms
    );
    println!("| quantity | GPU (f32) | CPU (f64) | abs. difference | |");
    println!("| --- | --- | --- | --- | --- |");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.3e} | {} |",
            r.quantity,
            r.gpu,
            r.cpu,
            r.diff,
            if r.ok { "ok" } else { "MISMATCH" }
        );
    }
    let max_rel = rows
        .iter()
        .map(|r| r.diff / r.cpu.abs().max(1.0))
        .fold(0.0, f64::max);
    println!("max relative difference: {max_rel:.3e}");
    if rows.iter().any(|r| !r.ok) {
        bail!("selftest failed: GPU and CPU disagree");
    }
    Ok(())
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

fn repro(choice: BackendChoice, name: warpkit::repro::Name, o: ReproOpts) -> Result<()> {
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
    if name == warpkit::repro::Name::Multigpu && choice != BackendChoice::Cpu {
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
            warpkit::repro::Name::All => {
                use clap::ValueEnum;
                warpkit::repro::Name::value_variants()
                    .iter()
                    .map(|n| n.as_str())
                    .collect()
            }
            n => vec![n.as_str()],
        };
        // `all` also writes DIR/README.md, the index.
        let index = name == warpkit::repro::Name::All && *tar == out.join("README.md");
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
    let settings = warpkit::repro::Settings {
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
        if warpkit::repro::output::interrupted() {
            std::process::exit(130);
        }
        warpkit::repro::output::interrupt();
    })
    .context("installing the Ctrl-C handler")?;
    let start = std::time::Instant::now();
    let result = warpkit::repro::run(name, &settings);
    if let Some(tar) = &tar {
        warpkit::repro::pack::tar_dir(&out, tar)
            .with_context(|| format!("packing {} into {}", out.display(), tar.display()))?;
        eprintln!("packed {} into {}", out.display(), tar.display());
    }
    if result.is_err() && warpkit::repro::output::interrupted() {
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
    if warpkit::repro::output::interrupted() {
        return Err(Interrupted.into());
    }
    Ok(())
}
