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
use choice::{Choice, choice};
use warpkit_app::{choice, movie, repro};

#[derive(Parser)]
#[command(
    name = "warpkit",
    version,
    about = "GPU kernels in Rust: Barnes–Hut, FEM assembly, stochastic summation"
)]
struct Cli {
    /// Where to run: the GPU if usable (auto), the GPU or fail (gpu), or the CPU backend (cpu).
    #[arg(long, value_parser = choice::<BackendChoice>(), default_value = BackendChoice::Auto.name(), global = true)]
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
    /// Print the device (name, SMs, memory, driver, PTX arch), or why the CPU backend is used;
    /// `--keys`: every key of the case files.
    Info(commands::info::InfoArgs),
    /// Run the warp-reduction self test on the GPU and the CPU and compare.
    Selftest(commands::selftest::SelftestArgs),
    /// Barnes–Hut self-gravity: per-stage timings (GPU) and the error against direct summation.
    Gravity(commands::gravity::GravityArgs),
    /// Stochastic Barnes–Hut against Barnes–Hut and direct summation at query points: time and
    /// mean/median/max absolute error of each.
    Sbh(commands::sbh::SbhArgs),
    /// SPH neighbour search (tree walks or linked cells): counts, time, optionally density.
    Neighbours(commands::neighbours::NeighboursArgs),
    /// Gravity and SPH density in one tree walk against the two separate walks: times and
    /// speed-up.
    Combined(commands::combined::CombinedArgs),
    /// Hex8 cantilever: assemble (CPU or GPU), clamp x = 0, load the free end, solve by PCG, and
    /// compare the tip deflection with Timoshenko beam theory.
    Fem(commands::fem::FemCommand),
    /// Reproduce the seed document's tables and figures into DIR/<name>/ (table.md, data.csv,
    /// meta.json, PNG and SVG figures): sort, theta, scaling, storage, fem, sbh, hydro, or all of them.
    Repro(commands::repro::ReproArgs),
    /// One gravity evaluation of the `repro sort` scene, run twice (for ncu to profile).
    #[command(hide = true)]
    ReproTarget(commands::repro::ReproTargetArgs),
    /// N-body simulation (kick-drift-kick leapfrog; tree forces on the GPU, float64 direct
    /// summation on the CPU backend): diagnostics CSV, Gadget snapshots, energy plot, timing.
    /// Defaults reproduce the self-gravity document's collision of 5·10^6 particles (2000 on the
    /// CPU backend); a TOML file (`--config`) sets anything, the options below override it.
    Nbody(commands::nbody::NbodyArgs),
    /// SPH hydrodynamics (CPU, float64): the Sod shock tube or the Sedov–Taylor blast in a
    /// periodic box, grad-h SPH with Monaghan viscosity and KDK leapfrog; writes
    /// diagnostics.csv and profile.csv (with the exact solution) into the output directory.
    Sph(commands::sph::SphArgs),
    /// A layered planet (Tillotson iron, granite, basalt, water, ice) in hydrostatic
    /// equilibrium: its profile, equal-mass SPH particles on spherical shells, settled with
    /// damping on the CPU solver; writes planet.gadget (SI), profile.csv and planet.toml.
    Planet(commands::planet::PlanetArgs),
    /// A planetary giant impact: two settled planets (built here or `warpkit planet`'s
    /// snapshots) on their two-body orbit to contact at a given impact parameter and speed, SPH
    /// with self-gravity in SI units; writes diagnostics.csv (energy, angular momentum),
    /// outcome.csv (remnant, disk and escaping mass per material), snapshots and impact.toml.
    Impact(commands::impact::ImpactArgs),
    /// Write the embedded PTX module (for ptxas, cuobjdump or reading).
    Ptx(commands::ptx::PtxArgs),
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

/// A finite number of seconds ≥ 0.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{s} is not a number of seconds ≥ 0")),
    }
}

fn run(cli: Cli) -> Result<()> {
    if let Some(s) = cli.progress_every {
        crate::repro::output::set_progress_every(s);
    }
    match cli.command {
        Command::Info(args) => commands::info::run(cli.backend, args),
        Command::Selftest(args) => commands::selftest::run(cli.backend, args),
        Command::Gravity(args) => commands::gravity::run(cli.backend, args),
        Command::Sbh(args) => commands::sbh::run(cli.backend, args),
        Command::Neighbours(args) => commands::neighbours::run(cli.backend, args),
        Command::Combined(args) => commands::combined::run(cli.backend, args),
        Command::Fem(args) => commands::fem::run(cli.backend, args),
        Command::Repro(args) => commands::repro::run(cli.backend, args),
        Command::ReproTarget(args) => commands::repro::run_target(cli.backend, args),
        Command::Nbody(args) => commands::nbody::run(cli.backend, args, cli.progress_every),
        Command::Sph(args) => commands::sph::run(cli.backend, args, cli.progress_every),
        Command::Planet(args) => commands::planet::run(cli.backend, args),
        Command::Impact(args) => commands::impact::run(cli.backend, args, cli.progress_every),
        Command::Ptx(args) => commands::ptx::run(args),
    }
}

fn select(choice: BackendChoice) -> Result<Backend> {
    let (backend, notice) = backend::select(choice)?;
    if let Some(n) = notice {
        eprintln!("note: {n}");
    }
    Ok(backend)
}
