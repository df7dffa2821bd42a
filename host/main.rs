//! The `warpkit` command line.

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use warpkit::backend::{self, Backend, BackendChoice};
use warpkit::bh::gpu::{Storage, Traversal};
use warpkit::bh::scene::{self, Scene};
use warpkit::bh::{Mode, Params};
use warpkit::runtime::probe;

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
        /// ppni4-blocks-atomic, ppni8-blocks-atomic, two-kernel. Default warp4; the CPU backend
        /// assembles on the host and has no strategies.
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
        /// With --mesh or --case: a physical group of quadrangles and the traction on it (force
        /// per area), e.g. `--traction load 0 0 -1e6` (repeatable).
        #[arg(long, num_args = 4, value_names = ["GROUP", "TX", "TY", "TZ"], allow_negative_numbers = true)]
        traction: Vec<String>,
        /// With --mesh or --case: a body force per unit volume (e.g. ρ g), on every element.
        #[arg(long, num_args = 3, value_names = ["BX", "BY", "BZ"], allow_negative_numbers = true)]
        body_force: Option<Vec<f64>>,
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
        /// Bodies (sort, theta), the largest N (scaling, storage) or the largest number of sources
        /// M (sbh: the table's M below it, then it); defaults: the seed's sizes on the GPU,
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
    /// Write the embedded PTX module (for ptxas, cuobjdump or reading).
    Ptx {
        /// Output file; standard output when absent.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        // Not `{e:#}`: it repeats a source that a message already quotes (issue 17).
        eprintln!("error: {}", warpkit::files::error_report(e.as_ref()));
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
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
        Command::Nbody(args) => nbody(cli.backend, args),
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

#[derive(clap::Args)]
struct GravityArgs {
    /// Number of bodies (ignored with --input).
    #[arg(long, default_value_t = 1 << 20)]
    n: usize,
    /// Opening angle θ.
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    theta: f32,
    /// Plummer softening ε.
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    eps: f32,
    /// Gravitational constant.
    #[arg(long = "G", default_value_t = 1.0, allow_negative_numbers = true)]
    g: f32,
    #[arg(long, value_enum, default_value_t = Scene::Lattice)]
    scene: Scene,
    /// Bodies from a .npy file (N×4 float32 or float64, any byte order, C or Fortran order: x, y,
    /// z, m) or an HDF5 snapshot (.hdf5/.h5, Gadget-4/SWIFT layout: every type's Coordinates and
    /// Masses; needs the `hdf5` cargo feature) instead of a scene.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Write the accelerations as .npy (N×3 float32), in the input's order.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Traversal order: random (shuffled, unsorted), regular (given order), sorted.
    #[arg(long, value_enum, default_value_t = Mode::Sorted)]
    mode: Mode,
    /// GPU gravity kernel: the seed's per-warp vote, or the warp-group traversal.
    #[arg(long, value_enum, default_value_t = Traversal::Vote)]
    traversal: Traversal,
    /// Node storage: dense (cells allocated by a counter) or sparse (the seed's implicit octree).
    #[arg(long, value_enum, default_value_t = Storage::Dense)]
    storage: Storage,
    /// Tree build: sorted (octant-path keys radix-sorted, cells linked without locks; dense
    /// storage) or locked (the seed's insertion with a lock per child slot).
    #[arg(long, value_enum, default_value_t = warpkit::bh::gpu::Build::Locked)]
    build: warpkit::bh::gpu::Build,
    /// Quadrupole moments in cell interactions (group kernel only).
    #[arg(long)]
    quadrupole: bool,
    /// Gadget's relative opening criterion with this α (group2 only): a cell is used whole when
    /// its truncation error is below α times the group's smallest acceleration. A first pass at
    /// θ gives those accelerations (timed apart: a simulation has them from its last step).
    #[arg(long, allow_negative_numbers = true)]
    alpha: Option<f32>,
    /// The relative criterion's geometric guard: never a cell with width / distance ≥ θ_max.
    #[arg(long, default_value_t = warpkit::bh::Relative::THETA_MAX, allow_negative_numbers = true)]
    theta_max: f32,
    /// Timed repeats after one warm-up (GPU); medians are printed.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Bodies sampled for the error against float64 direct summation (0: skip).
    #[arg(long, default_value_t = 1000)]
    check: usize,
    /// Seed of the scene and of the shuffle.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn gravity(choice: BackendChoice, a: GravityArgs) -> Result<()> {
    use warpkit::bh::Options;
    let p = Params {
        theta: a.theta,
        eps: a.eps,
        g: a.g,
    };
    if let Some(path) = &a.output {
        warpkit::files::check_output(path)?;
    }
    let o = Options {
        sorted: a.mode == Mode::Sorted,
        traversal: a.traversal,
        quadrupole: a.quadrupole,
        storage: a.storage,
        build: a.build,
        relative: a.alpha.map(|alpha| warpkit::bh::Relative {
            alpha,
            theta_max: a.theta_max,
        }),
        ..Default::default()
    };
    warpkit::bh::validate_options(&o)?;
    if a.repeats == 0 {
        return Err(warpkit::bh::InputError::NoRepeats.into());
    }
    let backend = select(choice)?;
    // The count is checked before a scene of that size is generated (issue 17: `--n` near
    // usize::MAX hung, 2·10^9 aborted in the allocator).
    let mut bodies = match &a.input {
        Some(path) if warpkit::nbody::snapshot::is_hdf5(path) => {
            let p = warpkit::nbody::snapshot::read_snapshot(path)?.particles;
            p.pos
                .iter()
                .zip(&p.mass)
                .map(|(x, &m)| warpkit::device::bh::Body {
                    x: x[0] as f32,
                    y: x[1] as f32,
                    z: x[2] as f32,
                    m: m as f32,
                })
                .collect()
        }
        Some(path) => warpkit::bh::npy::read_bodies(path)?,
        None => {
            warpkit::bh::check_count(&backend, a.n)?;
            scene::generate(a.scene, a.n, a.seed)
        }
    };
    warpkit::bh::validate(&bodies, &p)?;
    warpkit::bh::check_count(&backend, bodies.len())?;
    let n = bodies.len();
    // Shuffling must not change what --output means: remember where each body came from.
    let mut origin: Vec<u32> = (0..n as u32).collect();
    if a.mode != Mode::Regular {
        scene::shuffle(&mut bodies, a.seed);
        scene::shuffle(&mut origin, a.seed);
    }
    let what = match &a.input {
        Some(path) => path.display().to_string(),
        None => format!("{:?}", a.scene),
    };
    // `--repeats` is the GPU's (milliseconds per run); the CPU twin runs once.
    let repeats = if backend.is_gpu() { a.repeats } else { 1 };
    // The quadrupole share of the counted flops is replayed from the tree (issue 16).
    let o = Options {
        keep_tree: warpkit::bh::rate::needs_tree(&o, backend.is_gpu()),
        ..o
    };
    let timed = warpkit::bh::evaluate_median(&backend, &bodies, &p, &o, repeats)?;
    let gravity_ms = timed.median.gravity;
    let run = timed.last;
    let rate = warpkit::bh::rate::counted(&run, &bodies, &p, &o);
    match (backend.gpu(), run.header) {
        (Some(gpu), Some(header)) => {
            let t = &timed.median;
            println!(
                "Barnes–Hut on {} ({what}, N = {n}, θ = {}, ε = {}, mode {:?}, {:?} kernel; median of {})",
                gpu.info().name,
                p.theta,
                p.eps,
                a.mode,
                a.traversal,
                timed.runs
            );
            println!("| stage | ms |\n| --- | --- |");
            for (name, ms) in [
                ("reset", t.reset),
                ("bounding box", t.bounding_box),
                ("build", t.build),
                ("centre of mass", t.summarize),
                ("sort", t.sort),
                ("gravity", t.gravity),
                ("total", timed.median_total),
            ] {
                println!("| {name} | {ms:.3} |");
            }
            if let Some(r) = o.relative {
                println!(
                    "relative criterion α = {}, θ_max = {}; its first pass at θ = {} (not in the total): {:.3} ms",
                    r.alpha, r.theta_max, p.theta, t.prepass
                );
            }
            println!(
                "cells used {} of {} (depth {}, bucketed {}, retries {}); interactions/body {:.0} (group kernel only)",
                run.cells as i32 - header.bottom,
                run.cells,
                header.depth,
                header.bucketed,
                run.retries,
                header.interactions as f64 / n as f64
            );
        }
        _ => println!(
            "Barnes–Hut on the CPU ({} threads; {what}, N = {n}, θ = {}, mode {:?}, {:?}): tree {:.1} ms, gravity {:.1} ms",
            rayon::current_num_threads(),
            p.theta,
            a.mode,
            a.traversal,
            run.times.build,
            run.times.gravity
        ),
    }
    print_rate(rate.as_ref(), n, gravity_ms, backend.is_gpu());
    let acc = run.acc;
    if let Some(step) = n.checked_div(a.check) {
        let idx: Vec<usize> = (0..n).step_by(step.max(1)).collect();
        let reference = warpkit::bh::cpu::brute_force_f64(&bodies, &idx, &p);
        let picked: Vec<_> = idx.iter().map(|&i| acc[i]).collect();
        let mut e = warpkit::bh::relative_errors(&picked, &reference);
        e.sort_by(f64::total_cmp);
        let mean = e.iter().sum::<f64>() / e.len() as f64;
        println!(
            "relative error vs float64 direct summation on {} bodies: mean {mean:.3e}, median {:.3e}, p99 {:.3e}, max {:.3e}",
            e.len(),
            e[e.len() / 2],
            e[e.len() * 99 / 100],
            e[e.len() - 1]
        );
    }
    if let Some(path) = &a.output {
        let mut out = vec![Default::default(); n];
        for (k, &o) in origin.iter().enumerate() {
            out[o as usize] = acc[k];
        }
        warpkit::bh::npy::write_accels(path, &out)?;
        println!("accelerations written to {}", path.display());
    }
    Ok(())
}

/// The gravity stage's counted rate, or what is known of it for the vote kernel.
fn print_rate(rate: Option<&warpkit::bh::rate::Rate>, n: usize, gravity_ms: f64, gpu: bool) {
    use warpkit::bh::rate::{FLOPS_MONOPOLE, FLOPS_QUADRUPOLE};
    let Some(r) = rate else {
        println!(
            "gravity rate: {:.3e} bodies/s; the vote kernel counts no interactions, so its \
             interactions/s and TFLOP/s are not known (the group kernels count them)",
            n as f64 / (gravity_ms * 1e-3)
        );
        return;
    };
    let how = match (r.quadrupole_share > 0.0, r.sampled_groups) {
        (false, _) => String::new(),
        (true, 0) => format!("; {:.1}% with quadrupoles", 100.0 * r.quadrupole_share),
        (true, k) => format!(
            "; {:.1}% with quadrupoles, from the walks of {k} groups replayed on the host",
            100.0 * r.quadrupole_share
        ),
    };
    println!(
        "gravity rate: {:.3e} interactions/s (counted {}{how}), {} TFLOP/s counted \
         ({FLOPS_MONOPOLE} flops per body–body or body–monopole, {FLOPS_QUADRUPOLE} per \
         body–quadrupole){}",
        r.per_second(gravity_ms),
        if gpu {
            "by the kernel"
        } else {
            "by the CPU twin's walks"
        },
        warpkit::bh::rate::fmt_tflops(r.tflops(gravity_ms)),
        if gpu { "" } else { " — the CPU twin's rate" },
    );
}

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
    let backend = select(choice)?;
    let out = out.unwrap_or_else(|| PathBuf::from("results").join(backend.name()));
    if let Some(tar) = &tar {
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
    let done = result?;
    eprintln!(
        "repro {}: {} reproduction(s) written to {} in {:.1} s",
        name.as_str(),
        done.len(),
        out.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

struct FemArgs {
    size: [f64; 3],
    cells: [usize; 3],
    material: warpkit::fem::Material,
    load: f64,
    strategy: Option<String>,
    mtx: Option<PathBuf>,
    vtu: Option<PathBuf>,
}

fn fem(choice: BackendChoice, a: FemArgs) -> Result<()> {
    use warpkit::fem::{colour, csr, export, gpu::Strategy, mesh, solve, validate};
    let name = a.strategy.as_deref().unwrap_or("warp4");
    let strategy = Strategy::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
        anyhow::anyhow!("unknown --strategy {name:?} ({})", names.join(", "))
    })?;
    warpkit::fem::validate_load(a.load)?;
    for path in [&a.mtx, &a.vtu].into_iter().flatten() {
        warpkit::files::check_output(path)?;
    }
    let backend = select(choice)?;
    if a.strategy.is_some() && !backend.is_gpu() {
        // Said, not silently ignored (issue 17).
        eprintln!(
            "warning: --strategy {name} selects a GPU kernel; the CPU backend assembles on the host (coloured, rayon)"
        );
    }
    // Sizes and memory before the mesh is built (issue 17: 1000³ aborted in the allocator).
    let (elements, nodes) = mesh::cantilever_counts(a.cells)?;
    warpkit::fem::check_memory(elements, nodes, backend.is_gpu())?;
    let m = mesh::cantilever(a.size, a.cells)?;
    validate(&m, &a.material)?;
    let c = colour::greedy(&m);
    colour::verify(&m, &c)?;
    let p = csr::Pattern::new(&m)?;
    println!(
        "cantilever {:?} m, {:?} elements: {} nodes, {} DOF, {} nonzeros, {} colours",
        a.size,
        a.cells,
        m.nodes.len(),
        m.dofs(),
        p.nnz(),
        c.colours()
    );
    // f64 on the GPU too: the solve needs the reference precision.
    let assembler = warpkit::fem::Assembler::<f64>::new(&backend, &m, &c, &p);
    let method = warpkit::fem::Method::or_host(&backend, strategy);
    let (ms, k) = assembler.time(method, &a.material, 1)?;
    drop(assembler);
    match backend.gpu() {
        Some(gpu) => println!(
            "assembly: GPU {} ({strategy:?}, f64), {:.3} ms",
            gpu.info().name,
            ms[0]
        ),
        None => println!(
            "assembly: CPU ({} threads, f64), {:.3} ms",
            rayon::current_num_threads(),
            ms[0]
        ),
    }
    if let Some(path) = &a.mtx {
        export::matrix_market(path, &p, &k)?;
        println!("wrote {}", path.display());
    }
    let t = std::time::Instant::now();
    let solver = warpkit::fem::pcg_solver(&backend);
    let r = solve::cantilever_tip_with(&m, &p, k, &a.material, a.size, a.load, 1e-9, solver)?;
    let on = backend.name().to_uppercase();
    println!(
        "solve: Jacobi-PCG on the {on}, {} iterations (relative residual {:.2e}), {:.3} s",
        r.cg.iterations,
        r.cg.relative_residual,
        t.elapsed().as_secs_f64()
    );
    println!(
        "tip deflection {:.6e} m, Timoshenko {:.6e} m, difference {:+.3}%",
        r.tip_deflection,
        r.theory,
        100.0 * (r.tip_deflection - r.theory) / r.theory
    );
    if let Some(path) = &a.vtu {
        let stresses = warpkit::fem::stress::element_centre(&m, &a.material, &r.displacement)?;
        export::vtu(path, &m, &r.displacement, Some(&stresses))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

struct MeshArgs {
    path: Option<PathBuf>,
    case: Option<PathBuf>,
    fix: Vec<String>,
    traction: Vec<String>,
    body_force: Option<[f64; 3]>,
    young: Option<f64>,
    poisson: Option<f64>,
    strategy: Option<String>,
    mtx: Option<PathBuf>,
    vtu: Option<PathBuf>,
}

/// The case file (or an empty case) with the command line's options composed into it: --mesh,
/// --young/--poisson (the default material) and --body-force replace, --fix and --traction add;
/// with no fixed set at all, the group "fixed". Every number is checked, naming its key.
fn compose_case(a: &MeshArgs) -> Result<warpkit::fem::case::CaseFile> {
    use warpkit::fem::case::{self, CaseFile, Component, Components, FixedSpec, TractionSpec};
    let mut c = match &a.case {
        Some(path) => CaseFile::read(path)?,
        None => CaseFile::default(),
    };
    if let Some(path) = &a.path {
        c.mesh = Some(path.clone());
    }
    if a.young.is_some() || a.poisson.is_some() {
        let base = c.default_material.unwrap_or(case::MaterialSpec {
            young: case::DEFAULT_MATERIAL.young,
            poisson: case::DEFAULT_MATERIAL.poisson,
        });
        let m = warpkit::fem::Material {
            young: a.young.unwrap_or(base.young),
            poisson: a.poisson.unwrap_or(base.poisson),
        };
        m.validate()
            .map_err(|e| anyhow::anyhow!("--young/--poisson: {e}"))?;
        c.default_material = Some(case::MaterialSpec {
            young: m.young,
            poisson: m.poisson,
        });
    }
    for group in &a.fix {
        c.fixed.push(FixedSpec {
            group: group.clone(),
            components: Components::One(Component::All),
            origin: Some(format!("--fix {group}")),
        });
    }
    if c.fixed.is_empty() {
        c.fixed.push(FixedSpec {
            group: "fixed".into(),
            components: Components::One(Component::All),
            origin: Some("--fix (default \"fixed\")".into()),
        });
    }
    for chunk in a.traction.chunks(4) {
        let [group, t @ ..] = chunk else {
            unreachable!("clap takes 4 values per --traction")
        };
        let t: Vec<f64> = t
            .iter()
            .map(|v| v.parse::<f64>().ok().filter(|v| v.is_finite()))
            .collect::<Option<_>>()
            .ok_or_else(|| anyhow::anyhow!("--traction {group}: {t:?} are not 3 finite numbers"))?;
        c.tractions.push(TractionSpec {
            group: group.clone(),
            vector: [t[0], t[1], t[2]],
            origin: Some(format!("--traction {group}")),
        });
    }
    if let Some(b) = a.body_force {
        case::check_vector("--body-force", b)?;
        c.body_force = Some(b);
    }
    c.check_numbers()?;
    Ok(c)
}

/// `fem --mesh` / `fem --case`: the user's mesh and load case (materials per physical volume,
/// fixed sets, tractions, body force), all checked before the assembly.
fn fem_mesh(choice: BackendChoice, a: MeshArgs) -> Result<()> {
    use warpkit::fem::case::{CaseError, Problem};
    use warpkit::fem::{colour, csr, export, gpu::Strategy, mesh, solve, stress, validate};
    let name = a.strategy.as_deref().unwrap_or("warp4");
    let strategy =
        Strategy::parse(name).ok_or_else(|| anyhow::anyhow!("unknown --strategy {name:?}"))?;
    let case = compose_case(&a)?;
    for path in [&a.mtx, &a.vtu].into_iter().flatten() {
        warpkit::files::check_output(path)?;
    }
    let path = case.mesh.clone().ok_or(CaseError::NoMesh)?;
    let g = mesh::read_gmsh(&path)?;
    let problem = Problem::resolve(&case, &g).map_err(|e| match e {
        // Group errors name the mesh they were looked up in.
        e @ (CaseError::UnknownGroup { .. } | CaseError::WrongKind { .. }) => {
            anyhow::anyhow!("{}: {e}", path.display())
        }
        e => e.into(),
    })?;
    let backend = select(choice)?;
    let m = &g.mesh;
    warpkit::fem::check_memory(m.elements.len(), m.nodes.len(), backend.is_gpu())?;
    validate(m, &problem.materials.table[0])?;
    let c = colour::greedy(m);
    colour::verify(m, &c)?;
    let p = csr::Pattern::new(m)?;
    let fixed = problem.fixed_dofs(m);
    let clamped = fixed.chunks(3).filter(|d| d.contains(&true)).count();
    let faces: usize = problem.tractions.iter().map(|t| t.faces.len()).sum();
    println!(
        "{}: {} hexahedra, {} nodes, {} DOF, {} nonzeros; {clamped} clamped nodes, {faces} loaded faces",
        path.display(),
        m.elements.len(),
        m.nodes.len(),
        m.dofs(),
        p.nnz(),
    );
    let materials = &problem.materials;
    if materials.single().is_none() {
        println!(
            "materials: {} per physical volume, the default on the rest",
            materials.table.len() - 1
        );
    }
    let assembler = warpkit::fem::Assembler::<f64>::new(&backend, m, &c, &p);
    let method = warpkit::fem::Method::or_host(&backend, strategy);
    let k = assembler.assemble_materials(method, materials)?;
    drop(assembler);
    if let Some(path) = &a.mtx {
        export::matrix_market(path, &p, &k)?;
        println!("wrote {}", path.display());
    }
    let solver = warpkit::fem::pcg_solver(&backend);
    let r = solve::solve_dofs(&p, k, &fixed, problem.load(m), 1e-9, solver)?;
    let u = &r.displacement;
    let umax = u
        .chunks(3)
        .map(|d| (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt())
        .fold(0.0, f64::max);
    println!(
        "solve: Jacobi-PCG, {} iterations (relative residual {:.2e}); largest displacement {umax:.6e}",
        r.cg.iterations, r.cg.relative_residual
    );
    let v = |x: [f64; 3]| format!("({:.6e}, {:.6e}, {:.6e})", x[0], x[1], x[2]);
    let sets: Vec<&str> = problem.fixed.iter().map(|f| f.group.as_str()).collect();
    println!(
        "applied force {}, reaction at {} {}",
        v(r.applied),
        sets.join("+"),
        v(r.reaction)
    );
    if let Some(path) = &a.vtu {
        let s = stress::element_centre_materials(m, materials, u)?;
        export::vtu(path, m, u, Some(&s))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

#[derive(clap::Args)]
struct SbhArgs {
    /// Sources: uniform in [-0.5, 0.5]³ with mass 1/M (a sphere's oriented samples for the
    /// winding number). Default 2^20 on the GPU, 2^15 on the CPU backend.
    #[arg(long)]
    m: Option<usize>,
    /// Query grid resolution (centres of res³ cells); default 100 on the GPU, 32 on the CPU.
    #[arg(long)]
    grid: Option<usize>,
    /// Random queries instead of the grid: this many, uniform in the cube.
    #[arg(long)]
    random: Option<usize>,
    /// Shuffle the query order (the paper's "shuffled" column).
    #[arg(long)]
    shuffle: bool,
    /// Paths per stratum S.
    #[arg(long, default_value_t = 1)]
    samples: u32,
    /// Far-field ratio β of the Barnes–Hut baseline.
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true)]
    beta: f32,
    #[arg(long, value_enum, default_value_t = warpkit::sbh::Kernel::Shifted)]
    kernel: warpkit::sbh::Kernel,
    /// The kernel's parameter: δ (shifted), ε (plummer), α (smooth); default 0.1, 0.1, 50.
    #[arg(long, allow_negative_numbers = true)]
    param: Option<f32>,
    /// Octree levels per estimator level: 2 (64-ary, the paper's d = 4) or 1 (octree).
    #[arg(long, default_value_t = warpkit::device::sbh::WIDE_LEVELS)]
    levels: u32,
    /// Independent random streams per query instead of one per warp of 32 queries.
    #[arg(long)]
    incoherent: bool,
    /// levels = 2 walks the octree's child slots instead of reading the wide-node layout (the
    /// form before the layout; same draws, for timing comparisons).
    #[arg(long)]
    no_wide: bool,
    /// S paths in every stratum (the paper's estimator) instead of 2S–3S in near strata and far
    /// strata thinned (ours: lower error for less work).
    #[arg(long)]
    paper_allocation: bool,
    /// Warps of the grouped Barnes–Hut: Morton blocks (compact, fastest) or 32 consecutive
    /// queries in row-major order (the authors' warps: a stricter vote, lower errors).
    #[arg(long, value_enum, default_value_t = warpkit::sbh::Warps::Morton)]
    warps: warpkit::sbh::Warps,
    /// Far-field terms of the grouped Barnes–Hut: monopoles (the paper's) or with the cells'
    /// quadrupole moments (ours; radial kernels only).
    #[arg(long, value_enum, default_value_t = warpkit::sbh::Moments::Monopole)]
    moments: warpkit::sbh::Moments,
    /// Timed repeats after one warm-up (GPU); medians are printed.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn sbh(choice: BackendChoice, a: SbhArgs) -> Result<()> {
    use std::time::Instant;
    use warpkit::device::sbh::SbhParams;
    use warpkit::sbh::{
        self as s, Kernel, SbhTree, Summation, TreeOrigin, error_stats, gpu as sgpu,
    };
    // Options first: nothing is generated for a run that would be refused.
    if a.repeats == 0 {
        return Err(warpkit::bh::InputError::NoRepeats.into());
    }
    s::validate_samples(a.samples)?;
    s::validate_levels(a.levels)?;
    s::validate_beta(a.beta)?;
    let backend = select(choice)?;
    let on_gpu = backend.is_gpu();
    let m = a.m.unwrap_or(if on_gpu { 1 << 20 } else { 1 << 15 });
    let k = a.kernel.spec(a.param.unwrap_or(a.kernel.default_param()));
    let src = if a.kernel == Kernel::Winding {
        s::sphere_sources(m, 0.3, a.seed)
    } else {
        s::uniform_sources(m, a.seed)
    };
    let mut q = match a.random {
        Some(n) => s::random_queries(n, a.seed),
        None => s::grid_queries(a.grid.unwrap_or(if on_gpu { 100 } else { 32 })),
    };
    if a.shuffle {
        warpkit::bh::scene::shuffle(&mut q, a.seed);
    }
    s::validate(&src, &q, k)?;
    let p = SbhParams {
        kernel: k,
        samples: a.samples,
        seed: a.seed,
        levels: a.levels,
        allocate: !a.paper_allocation,
    };
    let coherent = !a.incoherent;
    // Every method evaluates the queries in Morton order (warps of nearby queries); sums come
    // back in the queries' own order.
    let order = s::query_order(&q);
    let t0 = Instant::now();
    let tree = SbhTree::build(&src);
    let build_ms = t0.elapsed().as_secs_f64() * 1e3;
    let (blocks, entries) = tree.wide.counts();
    println!(
        "wide-node layout{}: {blocks} blocks, {entries} entries, {} rows, {:.1} bytes per source, built on the host in {:.1} ms",
        if a.no_wide {
            " (not used: --no-wide)"
        } else {
            ""
        },
        tree.wide.meta.len(),
        tree.wide.bytes() as f64 / m as f64,
        tree.wide_ms
    );
    println!(
        "sbh: M = {m} sources, {} queries{}, kernel {:?} (param {}), S = {}{}, β = {}, levels {}, {} streams; tree built on the CPU in {build_ms:.1} ms ({} cells)",
        q.len(),
        if a.shuffle { " (shuffled)" } else { "" },
        a.kernel,
        k.param,
        a.samples,
        if a.paper_allocation {
            " in every stratum"
        } else {
            " (2S–3S in near strata, far ones thinned)"
        },
        a.beta,
        a.levels,
        if coherent {
            "warp-coherent"
        } else {
            "independent"
        },
        tree.tree.used_cells()
    );
    // The GPU builds the tree itself where it can (no dipoles, positive weights); else the host
    // tree is uploaded.
    let quad = a.moments == warpkit::sbh::Moments::Quadrupole;
    let (sum, origin) = Summation::build(&backend, src, tree, quad)?;
    match origin {
        TreeOrigin::Gpu { ms } => println!(
            "trees built on the GPU in {ms:.3} ms (CUDA events: reset, bounding box, build, summarize, wide layout)"
        ),
        TreeOrigin::Uploaded { why } => println!("tree uploaded from the host ({why})"),
        TreeOrigin::Host => {}
    }
    if let Some(dt) = sum.device() {
        match dt.wide_build() {
            sgpu::WideBuild::Gpu => println!(
                "wide-node layout built on the GPU in {:.3} ms (CUDA events; included above)",
                dt.wide_ms()
            ),
            sgpu::WideBuild::Host if dt.wide_ms() > 0.0 => println!(
                "wide-node layout built on the host from the GPU tree in {:.1} ms (download, build, upload)",
                dt.wide_ms()
            ),
            sgpu::WideBuild::Host => {}
        }
    }
    let sum = if a.no_wide { sum.without_wide() } else { sum };
    // `--repeats` is the GPU's (a warm-up, then medians of CUDA event times); the CPU runs once.
    let repeats = if backend.is_gpu() { a.repeats } else { 1 };
    let o = Some(order.as_slice());
    let (sb, sb_ms) = sum.timed(repeats, || sum.estimate(&q, &p, coherent, o))?;
    let (bh, bh_ms) = sum.timed(repeats, || {
        sum.barnes_hut_grouped(&q, k, a.beta, o, a.warps, a.moments)
    })?;
    let (bq, bq_ms) = sum.timed(repeats, || sum.barnes_hut(&q, k, a.beta, o))?;
    let (exact, brute_ms) = sum.brute_force(&q, k)?;
    let rows = [("SBH", sb_ms, sb), ("BH", bh_ms, bh), ("BHq", bq_ms, bq)];
    println!("| method | time (ms) | mean abs error | median abs error | max abs error |");
    println!("| --- | --- | --- | --- | --- |");
    println!("| brute force (f64 sums) | {brute_ms:.2} | 0 | 0 | 0 |");
    for (name, ms, vals) in &rows {
        let e = error_stats(k, vals, &exact);
        let label = match *name {
            "SBH" => format!("SBH S = {}", a.samples),
            "BH" => format!(
                "BH β = {}, {}{}",
                a.beta,
                match a.warps {
                    warpkit::sbh::Warps::Morton => "warp groups",
                    warpkit::sbh::Warps::Rows => "row warps",
                },
                match a.moments {
                    warpkit::sbh::Moments::Monopole => "",
                    warpkit::sbh::Moments::Quadrupole => " + quadrupoles",
                }
            ),
            _ => format!("BH β = {}, per query", a.beta),
        };
        println!(
            "| {label} | {ms:.2} | {:.3e} | {:.3e} | {:.3e} |",
            e.mean, e.median, e.max
        );
    }
    Ok(())
}

#[derive(clap::Args)]
struct NbodyArgs {
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

fn nbody(choice: BackendChoice, a: NbodyArgs) -> Result<()> {
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
