//! `warpkit nbody`: a whole run — initial conditions, the loop on either backend, diagnostics as
//! CSV, snapshots, an energy plot and a timing table — configured by one [`RunConfig`] (a TOML
//! file and command-line overrides). The GPU backend runs [`super::gpu::GpuSim`] (tree forces);
//! the CPU backend runs [`super::cpu::Simulation`] (float64 direct summation), the reference at
//! small N.

use super::Particles;
use super::block::{BlockSimulation, rung_table};
use super::cpu::{Diagnostics, Forces, Simulation};
use super::gpu::block::GpuBlockSim;
use super::gpu::{ForceOptions, GpuSim, LoopTimes, NbodyGpuError};
use super::ic::{DiskGalaxy, Encounter, Hernquist, Plummer};
use super::image;
use super::snapshot::{self, Format, Precision, Snapshot};
use crate::backend::Backend;
use crate::bh::gpu::{Build, Traversal};
use crate::bh::{Params, Relative};
use crate::device::nbody::LEVEL_BINS;
use crate::repro::output::{Csv, OutDir, progress_every};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Which initial conditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum IcKind {
    /// Plummer sphere in equilibrium, Hénon units (M = 1, E = −1/4), in the potential
    /// softened with `run.eps`.
    Plummer,
    /// Hernquist sphere, M = 1, a = 1, from its isotropic distribution function.
    Hernquist,
    /// One disk galaxy: Hernquist halo + exponential disk (DICE-like).
    Disk,
    /// Two disk galaxies on a parabolic orbit: the self-gravity document's collision.
    Collision,
    /// A snapshot (`ic.file`): Gadget format 1/2, or HDF5 (feature `hdf5`).
    Snapshot,
}

/// Initial conditions: `[ic]` in the TOML file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IcConfig {
    pub kind: IcKind,
    /// Total particles (split between galaxies and components in their default proportions).
    pub n: usize,
    pub seed: u64,
    /// The snapshot to start from (`kind = "snapshot"`), e.g. a restart.
    pub file: Option<PathBuf>,
    /// Collision: secondary / primary mass.
    pub mass_ratio: f64,
    /// Collision: pericentre distance (disk scale lengths).
    pub pericentre: f64,
    /// Collision: initial separation.
    pub separation: f64,
    /// Collision: eccentricity of the orbit (1: parabolic).
    pub eccentricity: f64,
    /// Collision: the two disks' inclinations to the orbital plane, degrees.
    pub inclination_deg: [f64; 2],
    /// Disk galaxies: Toomre Q.
    pub toomre_q: f64,
}

impl Default for IcConfig {
    /// The document's run: 5·10^6 particles in two halo + disk galaxies on a parabolic orbit.
    fn default() -> Self {
        let e = Encounter::default();
        IcConfig {
            kind: IcKind::Collision,
            n: 5_000_000,
            seed: 1,
            file: None,
            mass_ratio: e.mass_ratio,
            pericentre: e.pericentre,
            separation: e.separation,
            eccentricity: e.eccentricity,
            inclination_deg: e.inclination_deg,
            toomre_q: e.primary.toomre_q,
        }
    }
}

/// The integration: `[run]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StepConfig {
    /// Length of the run in time units (G = 1).
    pub t_end: f64,
    /// The shared time step.
    pub dt: f64,
    /// Plummer softening ε.
    pub eps: f64,
    /// Opening angle θ (GPU tree).
    pub theta: f64,
    /// Gadget's relative opening criterion with this α instead of θ after the first force
    /// evaluation (GPU tree; θ then only for the first one); 0: θ throughout.
    pub alpha: f64,
    /// The relative criterion's geometric guard: never a cell seen under more than θ_max
    /// (w / r from the group's box).
    pub theta_max: f64,
    /// Quadrupole moments in the tree forces.
    pub quadrupole: bool,
    /// Particles sampled at the start for the force error against float64 direct summation
    /// (GPU backend; 0: none).
    pub check: usize,
    /// Individual block time steps (`dt` is then the largest step, `eta` the accuracy of
    /// `η·sqrt(ε/|a|)`), with levels down to `dt / 2^BLOCK_MAX_LEVEL`: on the GPU, forces for
    /// the active particles only; on the CPU, the float64 reference.
    pub block_steps: bool,
    pub eta: f64,
    /// How the tree is built each step (GPU): `sorted` or `locked`.
    pub build: Build,
    /// Forces on the CPU backend: `direct` (float64 direct summation, the reference), `tree`
    /// (the GPU's tree walk on the CPU: θ, α, θ_max and quadrupoles as on the GPU) or `auto`
    /// (the tree above [`CPU_DIRECT_MAX`] particles). Block steps always sum directly.
    pub forces: CpuForces,
}

/// `run.forces`: how the CPU backend evaluates forces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CpuForces {
    #[default]
    Auto,
    Direct,
    Tree,
}

/// Particles up to which `run.forces = "auto"` sums directly on the CPU (about 0.1 s a step on
/// two cores; the O(N²) sum takes a second at 16k).
pub const CPU_DIRECT_MAX: usize = 4096;

impl Default for StepConfig {
    /// The collision: 80 time units (first pericentre near t ≈ 25, tails well formed by the
    /// end) in steps of 0.02, ε = 0.05 disk scale lengths; forces by the relative criterion at
    /// α = 0.006 (H200: median force error 3.7e-4, 20.0 ms per step, |ΔE/E| 1.5e-4 over the run,
    /// where θ = 0.7 gave 7.8e-4, 23.1 ms and 8.8e-4) with the guard θ_max = 1.6 (forces on the
    /// initial conditions 12.04 ms at median 4.3e-4 against 12.81 ms at 3.8e-4 with θ_max = 1;
    /// α = 0.008 with θ_max = 1.3 is faster but over 5e-4, 5.3e-4).
    fn default() -> Self {
        StepConfig {
            t_end: 80.0,
            dt: 0.02,
            eps: 0.05,
            theta: 0.7,
            alpha: 0.006,
            theta_max: 1.6,
            quadrupole: true,
            check: 1000,
            block_steps: false,
            eta: 0.025,
            build: Build::Sorted,
            forces: CpuForces::Auto,
        }
    }
}

/// Outputs: `[output]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutputConfig {
    pub dir: PathBuf,
    /// Diagnostics every this many steps (and at the start and end).
    pub diag_every: u64,
    /// A snapshot every this many steps (0: only the last).
    pub snapshot_every: u64,
    /// Gadget format 1 or 2, or HDF5 (feature `hdf5`).
    pub format: SnapshotFormat,
    /// The snapshots' floats: `single` (float32, Gadget's default; the GPU's state) or `double`
    /// (float64, the CPU backend's default: a restart from them continues the run to round-off).
    pub precision: Precision,
    /// Seconds between the plain progress lines written when standard error is not a terminal
    /// (a batch job's log); 0: none.
    pub progress_every: f64,
    /// Also save the initial conditions as `ic.gadget`.
    pub write_ic: bool,
    /// A surface-density image every this many steps (rounded up to a diagnostic step; 0: none):
    /// `images/*.png`, `movie.gif` and at the end the panel `collision.png` (the collision) or
    /// `panel.png`.
    pub image_every: u64,
    /// Image side in pixels.
    pub image_pixels: u32,
    /// Write into a directory that holds a previous run's outputs (`diagnostics.csv` or
    /// snapshots), replacing the files this run writes (the previous run's others stay); without
    /// it such a directory is refused before anything is written, so a run (or a restart from
    /// one of its snapshots) does not erase another's history.
    pub overwrite: bool,
}

/// Snapshot file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SnapshotFormat {
    Gadget1,
    Gadget2,
    /// HDF5 in the Gadget-4/SWIFT layout (`.hdf5`). Parsed always, so that a build without the
    /// `hdf5` cargo feature refuses it by name ([`RunConfig::validate`]) instead of as an
    /// unknown value.
    Hdf5,
}

impl SnapshotFormat {
    /// The snapshot files' extension.
    pub fn extension(self) -> &'static str {
        match self {
            SnapshotFormat::Gadget1 | SnapshotFormat::Gadget2 => "gadget",
            SnapshotFormat::Hdf5 => "hdf5",
        }
    }
}

impl Default for OutputConfig {
    fn default() -> Self {
        OutputConfig {
            dir: PathBuf::from("nbody-out"),
            diag_every: 50,
            snapshot_every: 1000,
            format: SnapshotFormat::Gadget2,
            precision: Precision::Single,
            progress_every: crate::repro::output::PROGRESS_EVERY_S,
            write_ic: false,
            image_every: 100,
            image_pixels: 512,
            overwrite: false,
        }
    }
}

/// The outputs of a previous run in `dir` (`diagnostics.csv`, snapshots), by name, sorted: what a
/// run without [`OutputConfig::overwrite`] refuses to replace.
pub fn previous_outputs(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| {
            name == "diagnostics.csv"
                || (name.starts_with("snapshot_")
                    && (name.ends_with(".gadget") || name.ends_with(".hdf5")))
        })
        .collect();
    found.sort();
    found
}

/// What a snapshot's header does not say about the run that wrote it, kept in a file beside it
/// ([`state_path`]): the steps taken and the integration parameters. A restart from the snapshot
/// takes them unless the user sets them ([`RunConfig::restart`]); its time is the header's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunState {
    /// Steps since the start of the first run (largest steps with block steps).
    pub step: u64,
    /// The snapshot's time (also in its header).
    pub time: f64,
    /// The snapshot's floats.
    pub precision: Precision,
    /// The run's `[run]` table.
    pub run: StepConfig,
}

/// The run state of `snapshot`: the snapshot's path with `.run.toml` appended.
pub fn state_path(snapshot: &Path) -> PathBuf {
    let mut p = snapshot.as_os_str().to_owned();
    p.push(".run.toml");
    PathBuf::from(p)
}

impl RunState {
    /// The state beside `snapshot`, if any (a snapshot from elsewhere has none).
    pub fn read(snapshot: &Path) -> Result<Option<RunState>, RunError> {
        let path = state_path(snapshot);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(RunError::Io { path, source }),
        };
        toml::from_str(&text)
            .map(Some)
            .map_err(|e| RunError::Config(format!("{}: {e}", path.display())))
    }

    fn write(&self, snapshot: &Path) -> Result<(), RunError> {
        let path = state_path(snapshot);
        let text = toml::to_string_pretty(self)
            .map_err(|e| RunError::Config(format!("serialising: {e}")))?;
        crate::files::write_atomically(&path, |w| std::io::Write::write_all(w, text.as_bytes()))
            .map_err(|source| RunError::Io { path, source })
    }
}

/// `[run]` keys that describe this run only, not the physics a restart continues.
const NOT_INHERITED: [&str; 2] = ["t_end", "check"];

/// Everything a run needs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunConfig {
    pub ic: IcConfig,
    pub run: StepConfig,
    pub output: OutputConfig,
}

impl RunConfig {
    /// Reads a TOML file; unknown keys are errors (a typo must not be ignored).
    pub fn from_toml_file(path: &Path) -> Result<Self, RunError> {
        let text = std::fs::read_to_string(path).map_err(|source| RunError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        toml::from_str(&text).map_err(|e| RunError::Config(format!("{}: {e}", path.display())))
    }

    /// The `[run]` keys a TOML file sets (what a restart does not take from its run state).
    pub fn run_keys_in(path: &Path) -> Result<Vec<String>, RunError> {
        let text = std::fs::read_to_string(path).map_err(|source| RunError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::run_keys(&text).map_err(|e| RunError::Config(format!("{}: {e}", path.display())))
    }

    /// The `[run]` keys TOML text sets.
    pub fn run_keys(text: &str) -> Result<Vec<String>, RunError> {
        let table: toml::Table =
            toml::from_str(text).map_err(|e| RunError::Config(e.to_string()))?;
        Ok(match table.get("run") {
            Some(toml::Value::Table(run)) => run.keys().cloned().collect(),
            _ => Vec::new(),
        })
    }

    /// Parses TOML text (the format of [`Self::from_toml_file`]).
    pub fn from_toml_str(text: &str) -> Result<Self, RunError> {
        toml::from_str(text).map_err(|e| RunError::Config(e.to_string()))
    }

    /// The CPU backend's default: the same collision, small enough for float64 direct summation
    /// in about a minute on two cores.
    pub fn cpu_default() -> Self {
        let mut c = RunConfig::default();
        c.ic.n = 2000;
        c.run.dt = 0.05;
        c.output.snapshot_every = 400;
        c.output.diag_every = 20;
        c.output.image_every = 40;
        c.output.image_pixels = 256;
        // The CPU integrates in float64: its snapshots keep that, so restarts continue exactly.
        c.output.precision = Precision::Double;
        c
    }

    /// Checks every value before any work.
    pub fn validate(&self) -> Result<(), RunError> {
        let bad = |m: String| Err(RunError::Config(m));
        let r = &self.run;
        if !(r.dt.is_finite() && r.dt > 0.0) {
            return bad(format!("run.dt = {} must be finite and > 0", r.dt));
        }
        if !(r.t_end.is_finite() && r.t_end >= 0.0) {
            return bad(format!("run.t_end = {} must be finite and ≥ 0", r.t_end));
        }
        if r.t_end / r.dt > 1e9 {
            return bad(format!(
                "run.t_end / run.dt = {:.3e} steps is too many",
                r.t_end / r.dt
            ));
        }
        if !(r.eps.is_finite() && r.eps >= 0.0) {
            return bad(format!("run.eps = {} must be finite and ≥ 0", r.eps));
        }
        if !(r.theta.is_finite() && r.theta >= 0.0) {
            return bad(format!("run.theta = {} must be finite and ≥ 0", r.theta));
        }
        if !(r.alpha.is_finite() && r.alpha >= 0.0) {
            return bad(format!(
                "run.alpha = {} must be finite and ≥ 0 (0: the θ criterion)",
                r.alpha
            ));
        }
        if !(r.theta_max.is_finite() && r.theta_max > 0.0) {
            return bad(format!(
                "run.theta_max = {} must be finite and > 0",
                r.theta_max
            ));
        }
        if self.ic.kind != IcKind::Snapshot && self.ic.n < 2 {
            return bad(format!("ic.n = {} must be at least 2", self.ic.n));
        }
        if self.ic.kind != IcKind::Snapshot && self.ic.n > 1 << 30 {
            return bad(format!("ic.n = {} exceeds 2^30 particles", self.ic.n));
        }
        // Host memory before the particles are generated (`--n 1000000000` aborted
        // in the allocator).
        if self.ic.kind != IcKind::Snapshot
            && let Some(s) =
                crate::backend::memory_shortfall(self.ic.n.saturating_mul(BYTES_PER_PARTICLE))
        {
            return bad(format!("ic.n = {} needs {s}", self.ic.n));
        }
        if self.output.format == SnapshotFormat::Hdf5 && !cfg!(feature = "hdf5") {
            return bad(format!("output.format = \"hdf5\": {}", snapshot::NO_HDF5));
        }
        if self.ic.kind == IcKind::Snapshot && self.ic.file.is_none() {
            return bad("ic.kind = \"snapshot\" needs ic.file".into());
        }
        let every = self.output.progress_every;
        if !(every.is_finite() && every >= 0.0) {
            return bad(format!(
                "output.progress_every = {every} must be a number of seconds ≥ 0"
            ));
        }
        if self.output.diag_every == 0 {
            return bad("output.diag_every must be ≥ 1".into());
        }
        if r.block_steps && !(r.eta.is_finite() && r.eta > 0.0 && r.eps > 0.0) {
            return bad(format!(
                "block steps need run.eta > 0 (got {}) and run.eps > 0 (got {})",
                r.eta, r.eps
            ));
        }
        if self.output.image_every > 0 && !(16..=8192).contains(&self.output.image_pixels) {
            return bad(format!(
                "output.image_pixels = {} must be in 16 ..= 8192",
                self.output.image_pixels
            ));
        }
        Ok(())
    }

    /// The steps this run takes from t = 0.
    pub fn steps(&self) -> u64 {
        self.steps_from(0.0)
    }

    /// The steps this run takes from `t0` to `run.t_end`.
    pub fn steps_from(&self, t0: f64) -> u64 {
        ((self.run.t_end - t0) / self.run.dt).round().max(0.0) as u64
    }

    /// A restart from `ic.file`: the `[run]` parameters of its run state, except those in `set`
    /// (the keys the user gave, on the command line or in the TOML file) and `t_end`. Returns
    /// one line for each setting that replaces the run's and for a snapshot without a state.
    pub fn restart(&mut self, set: &[&str]) -> Result<Vec<String>, RunError> {
        let Some(file) = self.ic.file.clone() else {
            return Ok(Vec::new());
        };
        let Some(state) = RunState::read(&file)? else {
            return Ok(vec![format!(
                "restart: {} has no run state beside it ({}): the parameters are this run's",
                file.display(),
                state_path(&file).display()
            )]);
        };
        let table = |r: &StepConfig| match toml::Value::try_from(r) {
            Ok(toml::Value::Table(t)) => Ok(t),
            _ => Err(RunError::Config("serialising [run]".into())),
        };
        let (theirs, mut ours) = (table(&state.run)?, table(&self.run)?);
        let mut notes = Vec::new();
        for (key, value) in theirs {
            if NOT_INHERITED.contains(&key.as_str()) {
                continue;
            }
            if !set.contains(&key.as_str()) {
                ours.insert(key, value);
            } else if ours.get(&key) != Some(&value) {
                let now = ours.get(&key).map_or(String::new(), |v| v.to_string());
                notes.push(format!("restart: {key} {now} overrides the run's {value}"));
            }
        }
        self.run = toml::Value::Table(ours)
            .try_into()
            .map_err(|e| RunError::Config(format!("{}: {e}", state_path(&file).display())))?;
        if state.precision == Precision::Single {
            notes.push(format!(
                "restart: {} holds float32 positions and velocities: the run continues from \
                 them rounded (precision = \"double\" under [output], or --precision double, \
                 writes snapshots that continue exactly)",
                file.display()
            ));
        }
        Ok(notes)
    }
}

/// Host bytes a run needs per particle, roughly: 65 in `Particles`, as much again in a
/// snapshot's copy, and the integrator's state.
const BYTES_PER_PARTICLE: usize = 256;

/// The deepest block-step level: the shortest step is `dt / 2^20`.
pub const BLOCK_MAX_LEVEL: u32 = 20;

/// Failures of a run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("configuration: {0}")]
    Config(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Ic(#[from] super::ic::IcError),
    #[error(transparent)]
    Snapshot(#[from] snapshot::SnapshotError),
    #[error(transparent)]
    Gpu(#[from] NbodyGpuError),
    #[error(transparent)]
    Cpu(#[from] super::cpu::SimError),
    #[error(transparent)]
    Output(#[from] crate::repro::output::OutputError),
    #[error(transparent)]
    OverwritesInput(#[from] crate::files::OverwritesInput),
    #[error("plot: {0}")]
    Plot(String),
    /// The output directory holds a previous run's files (`shown`) and overwriting is off. The
    /// message names the command line's option; other front ends name their own
    /// ([`RunError::previous_outputs`]).
    #[error(
        "{}",
        RunError::previous_outputs(dir, shown, "--overwrite (`overwrite = true` under [output])")
    )]
    PreviousOutputs { dir: PathBuf, shown: String },
}

impl RunError {
    /// The message of [`RunError::PreviousOutputs`], naming `how` to overwrite.
    pub fn previous_outputs(dir: &Path, shown: &str, how: &str) -> String {
        format!(
            "{} holds a previous run's outputs ({shown}): choose another output directory, or \
             pass {how} to replace them",
            dir.display()
        )
    }
}

/// The initial conditions of `c`, for a run with Plummer softening `eps` (a Plummer sphere is
/// generated in equilibrium in the softened potential).
pub fn initial_conditions(c: &IcConfig, eps: f64) -> Result<Particles, RunError> {
    Ok(initial_state(c, eps)?.0)
}

/// The initial conditions and their time: a snapshot's header time, else 0.
pub fn initial_state(c: &IcConfig, eps: f64) -> Result<(Particles, f64), RunError> {
    if c.kind == IcKind::Snapshot {
        let path = c.file.as_ref().expect("validated");
        let s = snapshot::read_snapshot(path)?;
        return Ok((s.particles, s.header.time));
    }
    Ok((generate(c, eps)?, 0.0))
}

/// Generated initial conditions (not a snapshot).
fn generate(c: &IcConfig, eps: f64) -> Result<Particles, RunError> {
    Ok(match c.kind {
        IcKind::Plummer => Plummer::henon(c.n, c.seed).softened(eps).try_generate()?,
        IcKind::Hernquist => Hernquist::new(c.n, 1.0, 1.0, c.seed).try_generate()?,
        IcKind::Disk => galaxy(c, c.n).try_generate()?,
        IcKind::Collision => {
            let per = (c.n as f64 / (1.0 + c.mass_ratio)).round() as usize;
            let e = Encounter {
                primary: galaxy(c, per),
                mass_ratio: c.mass_ratio,
                pericentre: c.pericentre,
                eccentricity: c.eccentricity,
                separation: c.separation,
                inclination_deg: c.inclination_deg,
                seed: c.seed,
                ..Encounter::default()
            };
            e.try_generate()?
        }
        IcKind::Snapshot => unreachable!("read by initial_state"),
    })
}

/// A default galaxy with `n` particles in its default halo : disk proportion.
fn galaxy(c: &IcConfig, n: usize) -> DiskGalaxy {
    let d = DiskGalaxy::default();
    let total = (d.n_halo + d.n_disk) as f64;
    let n_disk = ((n as f64) * d.n_disk as f64 / total).round().max(1.0) as usize;
    DiskGalaxy {
        n_halo: n.saturating_sub(n_disk).max(1),
        n_disk,
        toomre_q: c.toomre_q,
        seed: c.seed,
        ..d
    }
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct RunSummary {
    pub backend: &'static str,
    pub n: usize,
    pub steps: u64,
    pub time: f64,
    pub wall_s: f64,
    /// GPU stage times summed over the run (ms); zero on the CPU.
    pub gpu_times: LoopTimes,
    /// Host time writing snapshots and diagnostics (s).
    pub io_s: f64,
    /// Snapshots written and their total time (s).
    pub snapshots: (u32, f64),
    /// Median and 99th-percentile relative force error at the start (GPU, sampled).
    pub force_error: Option<(f64, f64)>,
    /// Block steps: substeps taken and the per-level table ([`rung_table`]).
    pub block: Option<(u64, String)>,
    pub first: Diagnostics,
    pub last: Diagnostics,
    /// Largest |E − E₀|/|E₀| over the diagnostics (the end point alone can land near zero
    /// while the energy wanders in between).
    pub energy_max_dev: f64,
    pub interrupted: bool,
    pub dir: PathBuf,
}

impl RunSummary {
    /// |ΔE/E| between the first and last diagnostics.
    pub fn energy_drift(&self) -> f64 {
        ((self.last.total - self.first.total) / self.first.total).abs()
    }
}

/// The loop on either backend.
enum Sim<'g> {
    Gpu(Box<GpuSim<'g>>),
    /// Block steps on the GPU: one "step" of the loop is one largest step `dt`.
    GpuBlock(Box<GpuBlockSim<'g>>),
    Cpu(Box<Simulation>),
    /// Block steps: one "step" of the loop is one largest step `dt`.
    CpuBlock(Box<BlockSimulation>),
}

impl Sim<'_> {
    fn step(&mut self, dt: f64, potential: bool) -> Result<(), RunError> {
        match self {
            Sim::Gpu(s) => s.step(dt, potential)?,
            Sim::GpuBlock(s) => s.step_block(potential)?,
            Sim::Cpu(s) => s.step()?,
            Sim::CpuBlock(s) => {
                let t = s.time + s.dt_max;
                s.run_until(t)?
            }
        }
        Ok(())
    }

    /// Diagnostics, the particles and their potentials (particle order).
    fn diagnostics(&mut self) -> Result<(Diagnostics, Particles, Vec<f64>), RunError> {
        match self {
            Sim::Gpu(s) => {
                let time = s.time;
                let (p, pot) = s.state()?;
                Ok((Diagnostics::compute(&p, &pot, time), p, pot))
            }
            Sim::GpuBlock(s) => {
                let time = s.time;
                let (p, pot) = s.state()?;
                Ok((Diagnostics::compute(&p, &pot, time), p, pot))
            }
            Sim::Cpu(s) => Ok((s.diagnostics(), s.particles.clone(), s.pot.clone())),
            Sim::CpuBlock(s) => Ok((s.diagnostics(), s.synchronized(), s.pot.clone())),
        }
    }

    fn time(&self) -> f64 {
        match self {
            Sim::Gpu(s) => s.time,
            Sim::GpuBlock(s) => s.time,
            Sim::Cpu(s) => s.time,
            Sim::CpuBlock(s) => s.time,
        }
    }

    /// Block steps: substeps so far, particles and force evaluations per level.
    fn rungs(&self) -> Option<(u64, [u64; LEVEL_BINS], [u64; LEVEL_BINS])> {
        match self {
            Sim::GpuBlock(s) => Some((
                s.stats.substeps,
                s.stats.particles_by_level,
                s.stats.evaluations_by_level,
            )),
            Sim::CpuBlock(s) => Some((s.substeps, s.particles_by_level(), s.evaluations_by_level)),
            Sim::Gpu(_) | Sim::Cpu(_) => None,
        }
    }
}

/// `rungs.csv` of a block-step run: at each diagnostic, the substeps and force evaluations so
/// far and the particles on each level.
struct RungLog(Option<Csv>);

impl RungLog {
    fn create(dir: &OutDir, on: bool) -> Result<Self, RunError> {
        if !on {
            return Ok(RungLog(None));
        }
        let mut header = vec![
            "time".to_string(),
            "substeps".into(),
            "force_evaluations".into(),
        ];
        header.extend((0..=BLOCK_MAX_LEVEL).map(|l| format!("level_{l}")));
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        Ok(RungLog(Some(Csv::create(dir.file("rungs.csv"), &header)?)))
    }

    fn row(&mut self, sim: &Sim, time: f64) -> Result<(), RunError> {
        if let (Some(csv), Some((substeps, particles, evals))) = (self.0.as_mut(), sim.rungs()) {
            let mut row = vec![
                format!("{time}"),
                substeps.to_string(),
                evals.iter().sum::<u64>().to_string(),
            ];
            row.extend(
                particles[..=BLOCK_MAX_LEVEL as usize]
                    .iter()
                    .map(u64::to_string),
            );
            csv.row(&row)?;
        }
        Ok(())
    }
}

/// Runs `c` on `backend`, writing into `c.output.dir`: `diagnostics.csv` (a row every
/// `diag_every` steps, written as measured), `snapshot_NNNNNN.gadget`, `energy.png/svg`,
/// `timing.md`, `config.toml` (the configuration used). Ctrl-C (when `stop` is set) ends the run
/// after the current step with a final snapshot and the logs. A blow-up stops the run naming the
/// step and particle; the snapshots written before it are kept.
pub fn run(
    backend: &Backend,
    c: &RunConfig,
    stop: Arc<AtomicBool>,
) -> Result<RunSummary, RunError> {
    c.validate()?;
    // The output directory first: a run must not fail at its end for want of a place to write.
    // `--out .` or `/` (no file name) is that directory itself, not `nbody-out` in the current
    // one.
    let dir = match (c.output.dir.parent(), c.output.dir.file_name()) {
        (Some(parent), Some(name)) => OutDir::create(parent, &name.to_string_lossy())?,
        _ => OutDir::create(&c.output.dir, "")?,
    };
    let ext = c.output.format.extension();
    // A restart continues the numbering of its run's steps.
    let (restart, step0) = match (&c.ic.kind, &c.ic.file) {
        (IcKind::Snapshot, Some(file)) => (Some(file), RunState::read(file)?.map_or(0, |s| s.step)),
        _ => (None, 0),
    };
    if let Some(input) = restart {
        // Not even with --overwrite: the snapshot is the run's only copy of its state.
        let mut outputs: Vec<String> = ["snapshot_final", "ic"]
            .iter()
            .map(|n| format!("{n}.{ext}"))
            .collect();
        let numbered = input
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("snapshot_"))
            .and_then(|n| n.strip_suffix(&format!(".{ext}")))
            .and_then(|k| k.parse::<u64>().ok());
        if let Some(k) = numbered
            && k > step0
            && c.output.snapshot_every > 0
            && k % c.output.snapshot_every == 0
        {
            outputs.push(format!("snapshot_{k:06}.{ext}"));
        }
        for name in outputs {
            crate::files::check_not_input("--out", &dir.file(&name), &[("restart", Some(input))])?;
        }
    }
    let previous = previous_outputs(dir.path());
    if !c.output.overwrite && !previous.is_empty() {
        let shown = match previous.len() {
            1..=3 => previous.join(", "),
            k => format!("{}, … ({k} files)", previous[..3].join(", ")),
        };
        return Err(RunError::PreviousOutputs {
            dir: dir.path().to_path_buf(),
            shown,
        });
    }
    let config_text =
        toml::to_string_pretty(c).map_err(|e| RunError::Config(format!("serialising: {e}")))?;

    let t0 = Instant::now();
    let (particles, start) = initial_state(&c.ic, c.run.eps)?;
    if c.run.t_end < start - 0.5 * c.run.dt {
        return Err(RunError::Config(format!(
            "run.t_end = {} is before the snapshot's time {start}: give a later --t-end",
            c.run.t_end
        )));
    }
    eprintln!(
        "nbody: {} particles ({:?}), generated in {:.2} s",
        particles.len(),
        c.ic.kind,
        t0.elapsed().as_secs_f64()
    );
    // Particles that no snapshot can hold (gas from a restart file) are refused now, not by
    // the final snapshot after the whole run; and before config.toml replaces a previous run's.
    // (The types alone: a sorted copy for `check_writable` cost a second at 5·10^6.)
    if let Some(i) = particles
        .ptype
        .iter()
        .position(|&t| t == 0 || t as usize >= super::TYPES)
    {
        return Err(RunError::Config(format!(
            "the run's snapshots cannot hold these initial conditions: particle {i} has type {} \
             (gas particles (type 0) need SPH blocks warpkit does not write; types are 1..{})",
            particles.ptype[i],
            super::TYPES - 1
        )));
    }
    dir.write("config.toml", config_text.as_bytes())?;
    let format = c.output.format;
    let precision = c.output.precision;
    let mut io_s = 0.0;
    let mut snapshots = (0u32, 0.0f64);
    // `pot`: the particles' potentials where the run has them (HDF5 stores them; the Gadget
    // formats have no such block).
    let mut write_snapshot = |name: &str,
                              p: &Particles,
                              pot: Option<&[f64]>,
                              time: f64,
                              step: u64|
     -> Result<(), RunError> {
        let t = Instant::now();
        let mut s = Snapshot {
            particles: p.clone(),
            ..Default::default()
        };
        let order = s.particles.sort_by_type_and_id();
        s.potential = pot.map(|pot| order.iter().map(|&i| pot[i]).collect());
        s.header = snapshot::header_for(&s);
        s.header.time = time;
        let path = dir.file(name);
        match format {
            SnapshotFormat::Gadget1 => {
                snapshot::write_gadget(&path, &s, Format::Gadget1, precision)?
            }
            SnapshotFormat::Gadget2 => {
                snapshot::write_gadget(&path, &s, Format::Gadget2, precision)?
            }
            #[cfg(feature = "hdf5")]
            SnapshotFormat::Hdf5 => super::hdf5::write_hdf5(&path, &s, precision)?,
            #[cfg(not(feature = "hdf5"))]
            SnapshotFormat::Hdf5 => unreachable!("refused by RunConfig::validate"),
        }
        let state = RunState {
            step,
            time,
            precision,
            run: c.run.clone(),
        };
        state.write(&path)?;
        io_s += t.elapsed().as_secs_f64();
        snapshots.0 += 1;
        snapshots.1 += t.elapsed().as_secs_f64();
        Ok(())
    };
    if c.output.write_ic {
        write_snapshot(&format!("ic.{ext}"), &particles, None, start, step0)?;
    }

    let n = particles.len();
    let mut force_error = None;
    let mut sim = match backend {
        Backend::Cpu if c.run.block_steps => {
            let mut s =
                BlockSimulation::new(particles, c.run.eps, c.run.eta, c.run.dt, BLOCK_MAX_LEVEL)?;
            s.start_at(start);
            Sim::CpuBlock(Box::new(s))
        }
        Backend::Gpu(gpu) => {
            let forces = ForceOptions {
                params: Params {
                    theta: c.run.theta as f32,
                    eps: c.run.eps as f32,
                    g: 1.0,
                },
                traversal: Traversal::Group2,
                quadrupole: c.run.quadrupole,
                relative: (c.run.alpha > 0.0).then_some(Relative {
                    alpha: c.run.alpha as f32,
                    theta_max: c.run.theta_max as f32,
                }),
                build: c.run.build,
            };
            let gpu = gpu.as_ref();
            let sim = if c.run.block_steps {
                let (eta, dt) = (c.run.eta, c.run.dt);
                let mut s = GpuBlockSim::new(gpu, &particles, forces, eta, dt, BLOCK_MAX_LEVEL)?;
                s.start_at(start);
                Sim::GpuBlock(Box::new(s))
            } else {
                let mut s = GpuSim::new(gpu, &particles, forces)?;
                s.time = start;
                s.steps = step0;
                Sim::Gpu(Box::new(s))
            };
            let inner = match &sim {
                Sim::Gpu(s) => s.as_ref(),
                Sim::GpuBlock(s) => s.inner(),
                _ => unreachable!("a GPU loop"),
            };
            if c.run.check > 0 {
                force_error = Some(force_error_sample(
                    inner,
                    &particles,
                    c.run.eps,
                    c.run.check,
                )?);
                let (med, p99) = force_error.expect("set above");
                eprintln!("nbody: force error at t = 0: median {med:.3e}, p99 {p99:.3e}");
            }
            sim
        }
        Backend::Cpu => {
            let r = &c.run;
            let tree = match r.forces {
                CpuForces::Direct => false,
                CpuForces::Tree => true,
                CpuForces::Auto => particles.len() > CPU_DIRECT_MAX,
            };
            let forces = if tree {
                let relative = (r.alpha > 0.0).then_some(crate::bh::Relative {
                    alpha: r.alpha as f32,
                    theta_max: r.theta_max as f32,
                });
                eprintln!(
                    "nbody: CPU forces by the tree (θ {}{}{}) for {} particles; run.forces = \
                     \"direct\" sums them in float64",
                    r.theta,
                    relative.map_or(String::new(), |x| format!(", α {}", x.alpha)),
                    if r.quadrupole { ", quadrupoles" } else { "" },
                    particles.len()
                );
                Forces::Tree {
                    theta: r.theta,
                    quadrupole: r.quadrupole,
                    relative,
                }
            } else {
                Forces::Direct
            };
            let mut s = Simulation::with_forces(particles, c.run.eps, c.run.dt, forces)?;
            s.time = start;
            s.steps = step0;
            Sim::Cpu(Box::new(s))
        }
    };

    let header: Vec<&str> = Diagnostics::CSV_HEADER.split(',').collect();
    let mut csv = Csv::create(dir.file("diagnostics.csv"), &header)?;
    let (first, first_state, _) = sim.diagnostics()?;
    let mut history = vec![first];
    csv.row(
        &first
            .csv_row()
            .split(',')
            .map(str::to_string)
            .collect::<Vec<_>>(),
    )?;

    let mut rung_log = RungLog::create(&dir, c.run.block_steps)?;
    rung_log.row(&sim, first.time)?;
    let mut movie = Movie::new(&dir, c, &first_state, (start, step0))?;
    let steps = c.steps_from(start);
    let bar = progress_every(steps, "nbody", c.output.progress_every);
    let wall = Instant::now();
    let mut last = first;
    let mut interrupted = false;
    let mut diag_s = 0.0;
    let mut done = 0u64;
    for s in 1..=steps {
        // The cadences count the steps since the first run's start.
        let g = step0 + s;
        let image = c.output.image_every > 0 && g % c.output.image_every == 0;
        let diag = g % c.output.diag_every == 0 || s == steps || image;
        sim.step(c.run.dt, diag)?;
        done = s;
        if s == 1 && steps > 1 {
            // Said once the first step is timed, so that a long run is never a surprise.
            let per = wall.elapsed().as_secs_f64();
            let total = per * steps as f64;
            if total > 60.0 {
                eprintln!(
                    "nbody: {per:.2} s for the first step: about {} for the {steps} steps",
                    duration_words(total)
                );
            }
        }
        if diag {
            let t = Instant::now();
            let (d, p, pot) = sim.diagnostics()?;
            csv.row(
                &d.csv_row()
                    .split(',')
                    .map(str::to_string)
                    .collect::<Vec<_>>(),
            )?;
            rung_log.row(&sim, d.time)?;
            diag_s += t.elapsed().as_secs_f64();
            if c.output.snapshot_every > 0 && g % c.output.snapshot_every == 0 {
                write_snapshot(&format!("snapshot_{g:06}.{ext}"), &p, Some(&pot), d.time, g)?;
            }
            if image {
                let t = Instant::now();
                movie.frame(&dir, &p, d.time, g)?;
                diag_s += t.elapsed().as_secs_f64();
            }
            last = d;
            history.push(d);
        }
        let sub = match sim.rungs() {
            Some((k, ..)) => format!(", {:.1} substeps/step", k as f64 / s as f64),
            None => String::new(),
        };
        bar.set_message(format!("t = {:.3}{sub}", sim.time()));
        bar.set_position(s);
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
    }
    bar.finish_and_clear();
    // The final state: always a snapshot (interrupted runs too).
    let (d, p, pot) = sim.diagnostics()?;
    if d.time != last.time {
        csv.row(
            &d.csv_row()
                .split(',')
                .map(str::to_string)
                .collect::<Vec<_>>(),
        )?;
        history.push(d);
        rung_log.row(&sim, d.time)?;
    }
    write_snapshot(
        &format!("snapshot_final.{ext}"),
        &p,
        Some(&pot),
        d.time,
        step0 + done,
    )?;
    let wall_s = wall.elapsed().as_secs_f64();

    io_s += diag_s;
    let gpu_times = match &sim {
        Sim::Gpu(s) => s.times,
        Sim::GpuBlock(s) => s.inner().times,
        Sim::Cpu(_) | Sim::CpuBlock(_) => LoopTimes::default(),
    };
    let block = sim.rungs().map(|(substeps, particles, evals)| {
        let blocks = (d.time - start) / c.run.dt;
        let table = rung_table(n, blocks, c.run.dt, &particles, &evals);
        eprintln!("nbody: block steps: {substeps} substeps\n{table}");
        (substeps, table)
    });
    energy_plot(&dir, &history).map_err(|e| RunError::Plot(e.to_string()))?;
    movie.finish(&dir)?;
    let summary = RunSummary {
        backend: backend.name(),
        n,
        steps: done,
        time: d.time,
        wall_s,
        gpu_times,
        io_s,
        snapshots,
        force_error,
        block,
        first,
        last: d,
        energy_max_dev: history
            .iter()
            .map(|h| ((h.total - first.total) / first.total).abs())
            .fold(0.0, f64::max),
        interrupted,
        dir: dir.path().to_path_buf(),
    };
    dir.write("timing.md", timing_table(&summary).as_bytes())?;
    Ok(summary)
}

/// Surface-density pictures of a run: the stars (disk + bulge; every particle when there are none)
/// seen along z on a view and colour scale fixed by the first frame, as PNGs, one GIF, and a
/// panel of six moments at the end.
struct Movie {
    on: bool,
    types: image::Types,
    view: Option<image::View>,
    style: image::Style,
    smooth: f64,
    gif: Option<image::Gif>,
    frames: Vec<(f64, image::Map)>,
    /// The end panel's file: `collision.png` for the collision, else `panel.png`.
    panel: &'static str,
}

impl Movie {
    /// `at`: the first frame's time and step.
    fn new(dir: &OutDir, c: &RunConfig, p: &Particles, at: (f64, u64)) -> Result<Movie, RunError> {
        let err = |e: image::ImageError| RunError::Plot(e.to_string());
        let stars = p
            .ptype
            .iter()
            .any(|&t| t == super::DISK || t == super::BULGE);
        let types = if stars {
            image::Types::STARS
        } else {
            image::Types::ALL
        };
        let mut m = Movie {
            on: c.output.image_every > 0,
            types,
            view: None,
            style: image::Style::default(),
            // Few particles come out as dots: smooth them into a surface.
            smooth: if p.len() < 100_000 { 1.5 } else { 0.0 },
            gif: None,
            frames: Vec::new(),
            panel: if c.ic.kind == IcKind::Collision {
                "collision.png"
            } else {
                "panel.png"
            },
        };
        if !m.on {
            return Ok(m);
        }
        if matches!(c.ic.kind, IcKind::Disk | IcKind::Collision) {
            // The default galaxy's units (ic::DiskGalaxy::default).
            m.style.units = image::Units::new(3.5, "kpc", 14.0, "Myr").with_mass(5e10, "M☉");
            m.style.colorbar = true;
        }
        let px = c.output.image_pixels;
        let mut view =
            image::View::frame_particles(p, types, image::Axis::Z, px, 0.99).map_err(err)?;
        if c.ic.kind == IcKind::Collision {
            // After pericentre the galaxies fly apart past the frame of their starting places
            // (seen at t ≈ 900 Myr of the default run): a wider view keeps them in.
            view.half_width *= 1.6;
        }
        let first = m.map(p, &view)?;
        m.style.range = Some(image::Range::dynamic([&first], 4.0).map_err(err)?);
        std::fs::create_dir_all(dir.file("images")).map_err(|source| RunError::Io {
            path: dir.file("images"),
            source,
        })?;
        m.view = Some(view);
        m.gif = Some(
            image::Gif::create(&dir.file("movie.gif"), px, px, 8, &[m.style.colormap])
                .map_err(err)?,
        );
        m.frame(dir, p, at.0, at.1)?;
        Ok(m)
    }

    fn map(&self, p: &Particles, view: &image::View) -> Result<image::Map, RunError> {
        let map = image::Map::of(p, self.types, view).map_err(|e| RunError::Plot(e.to_string()))?;
        Ok(if self.smooth > 0.0 {
            map.smoothed(self.smooth)
        } else {
            map
        })
    }

    fn frame(&mut self, dir: &OutDir, p: &Particles, time: f64, step: u64) -> Result<(), RunError> {
        let Some(view) = self.view else {
            return Ok(());
        };
        let err = |e: image::ImageError| RunError::Plot(e.to_string());
        let map = self.map(p, &view)?;
        let style = image::Style {
            time: Some(time),
            ..self.style.clone()
        };
        let img = image::render(&map, &style).map_err(err)?;
        img.write_png(&dir.file(&format!("images/stars_z_{step:06}.png")))
            .map_err(err)?;
        if let Some(g) = self.gif.as_mut() {
            g.add(&img).map_err(err)?;
        }
        self.frames.push((time, map));
        Ok(())
    }

    /// The GIF closed and the panel of six evenly spaced frames written.
    fn finish(mut self, dir: &OutDir) -> Result<(), RunError> {
        let err = |e: image::ImageError| RunError::Plot(e.to_string());
        if let Some(g) = self.gif.take() {
            g.finish().map_err(err)?;
        }
        if self.frames.len() < 2 {
            return Ok(());
        }
        let k = self.frames.len().min(6);
        let picks: Vec<usize> = (0..k)
            .map(|i| i * (self.frames.len() - 1) / (k - 1))
            .collect();
        let styles: Vec<image::Style> = picks
            .iter()
            .map(|&i| image::Style {
                time: Some(self.frames[i].0),
                ..self.style.clone()
            })
            .collect();
        let maps: Vec<(&image::Map, &image::Style)> = picks
            .iter()
            .zip(&styles)
            .map(|(&i, s)| (&self.frames[i].1, s))
            .collect();
        let panel = image::panel(&maps, 3).map_err(err)?;
        panel.write_png(&dir.file(self.panel)).map_err(err)?;
        Ok(())
    }
}

/// Seconds as `1 h 05 min`, `12 min 30 s` or `45 s`.
fn duration_words(s: f64) -> String {
    let s = s.round() as u64;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, sec) => format!("{sec} s"),
        (0, m, sec) => format!("{m} min {sec:02} s"),
        (h, m, _) => format!("{h} h {m:02} min"),
    }
}

mod report;
pub use report::timing_table;
use report::{energy_plot, force_error_sample};

#[cfg(test)]
mod tests;
