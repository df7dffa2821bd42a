//! The run's configuration: `[ic]`, `[run]` and `[output]` of the TOML file, the state kept
//! beside each snapshot for restarts, and their checks.

use super::*;

/// Which initial conditions.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    crate::choice::Choice,
    schemars::JsonSchema,
)]
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

/// Initial conditions: `[ic]` in the TOML file. Units: G = 1; the disk galaxies' scale length
/// and mass are 1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct IcConfig {
    /// Which initial conditions.
    pub kind: IcKind,
    /// Total particles, split between galaxies and components in their default proportions
    /// (2 ..= 2^30; a snapshot has its own).
    pub n: usize,
    /// Seed of the random initial conditions: the same seed, the same particles.
    pub seed: u64,
    /// The snapshot to start from (`kind = "snapshot"`), e.g. a restart.
    pub file: Option<PathBuf>,
    /// Collision: secondary / primary mass.
    pub mass_ratio: f64,
    /// Collision: pericentre distance, in disk scale lengths.
    pub pericentre: f64,
    /// Collision: initial centre-to-centre distance, in disk scale lengths (≥ the pericentre).
    pub separation: f64,
    /// Collision: eccentricity of the orbit (1: parabolic; < 1 bound; > 1 hyperbolic).
    pub eccentricity: f64,
    /// Collision: the two disks' inclinations to the orbital plane, degrees (0: prograde in the
    /// plane).
    pub inclination_deg: [f64; 2],
    /// Disk and collision: the disks' Toomre Q (stability against local collapse; > 0).
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

/// The integration: `[run]`. A restart takes these from the snapshot's `.run.toml`, except
/// `t_end`, `check` and the keys given here or as options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct StepConfig {
    /// End time in time units (G = 1), absolute: a restart runs from the snapshot's time to it.
    pub t_end: f64,
    /// The shared time step, the largest one with block steps (> 0).
    pub dt: f64,
    /// Plummer softening length ε (≥ 0).
    pub eps: f64,
    /// Opening angle θ of the tree walk.
    pub theta: f64,
    /// Gadget's relative opening criterion with this α instead of θ after the first force
    /// evaluation (θ then only for the first one); 0: θ throughout.
    pub alpha: f64,
    /// The relative criterion's geometric guard: never a cell seen under more than θ_max
    /// (w / r from the group's box; > 0).
    pub theta_max: f64,
    /// Quadrupole moments in the tree forces.
    pub quadrupole: bool,
    /// Particles sampled at the start for the force error against float64 direct summation
    /// (GPU backend; 0: none).
    pub check: usize,
    /// Individual block time steps: `dt` is then the largest step, with levels down to
    /// `dt / 2^20` ([`BLOCK_MAX_LEVEL`]); on the GPU, forces for the active particles only; on
    /// the CPU, the float64 reference. Needs `eps` > 0.
    pub block_steps: bool,
    /// Block steps' accuracy η: a particle's step is `η·sqrt(ε/|a|)` rounded down to a level
    /// (> 0).
    pub eta: f64,
    /// How the tree is built each step on the GPU.
    pub build: Build,
    /// How the CPU backend evaluates forces; block steps always sum directly.
    pub forces: CpuForces,
}

/// `run.forces`: how the CPU backend evaluates forces.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    crate::choice::Choice,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum CpuForces {
    /// Direct summation up to 4096 particles ([`CPU_DIRECT_MAX`]), the tree above.
    #[default]
    Auto,
    /// Float64 direct summation: O(N²), the reference.
    Direct,
    /// The GPU's tree walk on the CPU: θ, α, θ_max and quadrupoles as on the GPU.
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct OutputConfig {
    /// The output directory: `diagnostics.csv`, snapshots, `config.toml`, plots.
    pub dir: PathBuf,
    /// A row of `diagnostics.csv` every this many steps, and at the start and end (≥ 1).
    pub diag_every: u64,
    /// A snapshot every this many steps (0: only the last).
    pub snapshot_every: u64,
    /// Snapshot file format.
    pub format: SnapshotFormat,
    /// The snapshots' floats: `single` (float32, Gadget's default; the GPU's state) or `double`
    /// (float64: a restart from them continues the run to round-off; the CPU backend's default
    /// without `--config`).
    pub precision: Precision,
    /// Seconds between plain progress lines on standard error when it is not a terminal (a
    /// batch job's log); 0: none (the library's `run` prints them always).
    pub progress_every: f64,
    /// Also save the initial conditions as `ic.gadget`.
    pub write_ic: bool,
    /// A surface-density image every this many steps (rounded up to a diagnostics step; 0:
    /// none): `images/*.png`, `movie.gif` and at the end the panel `collision.png` (the
    /// collision) or `panel.png`, drawn by the `warpkit` command line, not the library's `run`.
    pub image_every: u64,
    /// Image side in pixels (16 ..= 8192).
    pub image_pixels: u32,
    /// Write into a directory that holds a previous run's outputs (`diagnostics.csv` or
    /// snapshots), replacing the files this run writes (the previous run's others stay); without
    /// it such a directory is refused before anything is written, so a run (or a restart from
    /// one of its snapshots) does not erase another's history.
    pub overwrite: bool,
}

/// Snapshot file format.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    crate::choice::Choice,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SnapshotFormat {
    /// Gadget format 1: bare records (`.gadget`).
    Gadget1,
    /// Gadget format 2: a name record before each block (`.gadget`).
    Gadget2,
    /// HDF5 in the Gadget-4/SWIFT layout (`.hdf5`): needs the `hdf5` cargo feature. Parsed
    /// always, so that a build without it refuses it by name ([`RunConfig::validate`]), not as
    /// an unknown value.
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
            progress_every: crate::output::PROGRESS_EVERY_S,
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

    pub(super) fn write(&self, snapshot: &Path) -> Result<(), RunError> {
        let path = state_path(snapshot);
        let text = toml::to_string_pretty(self)
            .map_err(|e| RunError::Config(format!("serialising: {e}")))?;
        crate::files::write_atomically(&path, |w| std::io::Write::write_all(w, text.as_bytes()))
            .map_err(|source| RunError::Io { path, source })
    }
}

/// `[run]` keys that describe this run only, not the physics a restart continues.
const NOT_INHERITED: [&str; 2] = ["t_end", "check"];

/// An N-body run: initial conditions, integration, outputs. Every key is optional: the defaults
/// are the collision of 5·10^6 particles (without `--config`, the CPU backend runs it with
/// 2000). Options of the same names override the file; each run writes the `config.toml` it used
/// into its output directory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
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
