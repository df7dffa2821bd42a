//! `warpkit sph`'s case: a TOML file (`[ic]`, `[run]`, `[output]`) and the options that override
//! it, the run state beside each snapshot and the restart that reads it, and the particles of
//! the case ([`prepare`]); the run itself is [`super::run`].

use super::ic::{self, SOD_GAMMA};
use super::ic_gravity::{self, EVRARD_GAMMA, POLYTROPE_GAMMA, Polytrope};
use super::{Boundary, Gravity, GravitySolver, HydroParams, Sim, sedov, snapio};
use crate::backend::{Backend, BackendChoice};
use crate::device::sph::hydro::Viscosity;
use crate::nbody::run::{SnapshotFormat, state_path};
use crate::nbody::snapshot::{self, Precision};
use crate::sph::SmoothingKernel;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Initial conditions.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Deserialize,
    Serialize,
    crate::choice::Choice,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum IcKind {
    /// The Sod shock tube in a periodic 3D box (γ = 1.4), compared at its interface x = 1.
    #[default]
    Sod,
    /// The Sedov–Taylor blast, E into the centre of a uniform periodic unit box (γ = 5/3).
    Sedov,
    /// The Evrard collapse: a cold self-gravitating sphere, ρ ∝ 1/r, M = R = 1, u = 0.05,
    /// γ = 5/3, open boundary.
    Evrard,
    /// A self-gravitating n = 1 polytrope in equilibrium (M = R = 1, γ = 2), open boundary.
    Polytrope,
    /// Gas (type 0) from a Gadget 1/2 snapshot (`[ic] file`, or `--restart FILE`), with its
    /// collisionless particles (types 1–5: gravity alone; self-gravity on by default): with
    /// the `.run.toml` beside it, the run it came from continues.
    Snapshot,
}

/// The kernel as the TOML names it.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum KernelName {
    /// The M4 cubic spline (default 58 neighbours).
    #[default]
    CubicSpline,
    /// Wendland C2 (default 100 neighbours): no pairing instability.
    WendlandC2,
}

impl From<KernelName> for SmoothingKernel {
    fn from(k: KernelName) -> Self {
        match k {
            KernelName::CubicSpline => SmoothingKernel::CubicSpline,
            KernelName::WendlandC2 => SmoothingKernel::WendlandC2,
        }
    }
}

/// Initial conditions: `[ic]`. Units: code units (the self-gravitating cases have
/// G = M = R = 1).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct IcConfig {
    /// Which initial conditions.
    pub kind: IcKind,
    /// Sod: dense particles per unit length along the tube (even); Sedov: particles per box
    /// side (2 ..= 1024). 0: the default (32).
    pub resolution: usize,
    /// Sedov: the blast energy (absent: 1; a restart: its run's).
    pub energy: Option<f64>,
    /// Evrard, polytrope: about this many particles (100 ..= 5·10^7). 0: the default (4000).
    pub particles: usize,
    /// Polytrope: the damped settling time before the run, which then starts at t = 0
    /// (absent: 3; 0 for none).
    pub settle: Option<f64>,
    /// Snapshot: the file, Gadget 1/2 or HDF5: its gas (type 0) and collisionless particles.
    pub file: Option<PathBuf>,
    /// Snapshot: the sides of the periodic box `[0, L_x) × [0, L_y) × [0, L_z)` (absent: an
    /// open boundary; a restart takes its run's box).
    pub periodic_box: Option<[f64; 3]>,
}

/// The solver: `[run]`. A restart takes these from the snapshot's `.run.toml` except the keys
/// given here or as options.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct RunSection {
    /// End time (absent: Sod 0.2; Sedov when the shock reaches r = 0.35; Evrard 0.8; the
    /// polytrope 3; a restart: its run's).
    pub t_end: Option<f64>,
    /// Adiabatic index γ of the ideal gas (absent: the case's, Sod 1.4, Sedov and Evrard 5/3,
    /// the polytrope 2; 5/3 for a snapshot from elsewhere).
    pub gamma: Option<f64>,
    /// The smoothing kernel.
    pub kernel: KernelName,
    /// Target neighbour number N_ngb (absent: 58 for the cubic spline, 100 for Wendland C2).
    pub n_ngb: Option<f64>,
    /// CFL factor C of the time step.
    pub courant: f64,
    /// Artificial viscosity's floor α_min; below `alpha_max`, α follows Morris–Monaghan's
    /// switch, else it is constant.
    pub alpha_min: f64,
    /// Artificial viscosity's α_max (the constant α when equal to `alpha_min`).
    pub alpha_max: f64,
    /// Morris–Monaghan decay parameter ℓ: α relaxes to `alpha_min` at the rate 2ℓ c/h.
    pub decay: f64,
    /// The Balsara (1995) switch on the viscosity (less of it in shear flows).
    pub balsara: bool,
    /// Artificial conduction α_u (Price 2008; 0: none).
    pub conduction: f64,
    /// A row of `diagnostics.csv` every this many steps (≥ 1).
    pub diag_every: u64,
    /// Self-gravity (absent: on for Evrard, the polytrope and a snapshot with collisionless
    /// particles, off otherwise; a periodic box refuses it).
    pub self_gravity: Option<bool>,
    /// Gravitational constant G (the self-gravitating cases are set up for G = 1).
    pub g: f64,
    /// Fixed Plummer softening length ε of self-gravity.
    pub softening: f64,
    /// Opening angle θ of the self-gravity tree.
    pub theta: f64,
    /// How self-gravity is summed.
    pub gravity_solver: GravitySolver,
    /// Accuracy η of the gravity time step `η √(ε/|a|)`.
    pub gravity_eta: f64,
    /// Individual time steps on this many levels (steps `Δ / 2^k`, neighbours within a factor
    /// 4 of each other); 0: one step shared by every particle.
    pub block_levels: u32,
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection {
            t_end: None,
            gamma: None,
            kernel: KernelName::CubicSpline,
            n_ngb: None,
            courant: 0.3,
            alpha_min: 1.0,
            alpha_max: 1.0,
            decay: 0.1,
            balsara: true,
            conduction: 0.0,
            diag_every: 1,
            self_gravity: None,
            g: Gravity::default().g,
            softening: Gravity::default().eps,
            theta: Gravity::default().theta,
            gravity_solver: GravitySolver::default(),
            gravity_eta: Gravity::default().eta,
            block_levels: 0,
        }
    }
}

/// Outputs: `[output]`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct OutputSection {
    /// The output directory: `diagnostics.csv`, `profile.csv`, snapshots, images.
    pub dir: PathBuf,
    /// A snapshot every this many steps (counted from the first run's start; 0: the final one
    /// only).
    pub snapshot_every: u64,
    /// `gadget2` (the default), `gadget1` (U, RHO and HSML only: a restart from it does not
    /// continue exactly) or `hdf5` (feature `hdf5`; PartType0 with SWIFT's names).
    pub format: SnapshotFormat,
    /// `double` (the default: the solver's float64 state) or `single`.
    pub precision: Precision,
    /// Replace a previous run's diagnostics and snapshots in `dir` (else refused).
    pub overwrite: bool,
    /// A plain progress line on standard error every so many seconds when it is not a
    /// terminal (0: none).
    pub progress_every: f64,
    /// Beside each snapshot, `.slice.png` (the density in the plane z through the gas's centre)
    /// and `.column.png` (the column density along z), interpolated with the kernel (drawn by
    /// the `warpkit` command line).
    pub images: bool,
    /// Pixels per side of those images (16 ..= 8192).
    pub image_pixels: u32,
}

impl Default for OutputSection {
    fn default() -> Self {
        OutputSection {
            dir: PathBuf::from("sph_out"),
            snapshot_every: 0,
            format: SnapshotFormat::Gadget2,
            precision: Precision::Double,
            overwrite: false,
            progress_every: crate::output::PROGRESS_EVERY_S,
            images: true,
            image_pixels: 512,
        }
    }
}

/// What a snapshot's `.run.toml` holds: where the run stands and how it runs.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SphRunState {
    /// Steps since the first run's start.
    pub step: u64,
    /// The snapshot's time (also in its header).
    pub time: f64,
    pub precision: Precision,
    /// The case the first run started from (its profile is compared with the same solution).
    pub case: IcKind,
    /// Sedov: the blast energy.
    pub energy: Option<f64>,
    /// The periodic box's sides (absent: open).
    pub periodic_box: Option<[f64; 3]>,
    /// The total energy at the first run's start, from which `energy_error` in the
    /// diagnostics is measured.
    pub energy_0: Option<f64>,
    /// The run's `[run]` table, every default resolved.
    pub run: RunSection,
}

impl SphRunState {
    /// The state beside `snapshot`, if any (a snapshot from elsewhere has none, and one of
    /// `warpkit nbody` has its own, without `case`).
    pub fn read(snapshot: &Path) -> Result<Option<SphRunState>> {
        let path = state_path(snapshot);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        if toml::from_str::<toml::Table>(&text).is_ok_and(|t| !t.contains_key("case")) {
            return Ok(None);
        }
        let state = toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        Ok(Some(state))
    }

    pub(crate) fn write(&self, snapshot: &Path) -> Result<()> {
        let path = state_path(snapshot);
        let text = toml::to_string_pretty(self).context("serialising the run state")?;
        crate::files::write_atomically(&path, |w| w.write_all(text.as_bytes()))
            .with_context(|| format!("writing {}", path.display()))
    }
}

/// The case of `warpkit sph`: every key optional (the defaults are the Sod shock tube); the
/// options of the same names override the file.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct SphConfig {
    pub ic: IcConfig,
    pub run: RunSection,
    pub output: OutputSection,
    /// Set by [`restart`]: the run a snapshot continues.
    #[serde(skip)]
    pub restart_of: Option<RestartOf>,
}

impl SphConfig {
    /// A case from its TOML text, and the `[run]` keys that the text sets (which a restart
    /// keeps rather than take its run's).
    pub fn from_toml_str(text: &str) -> Result<(SphConfig, Vec<String>)> {
        let value: toml::Table = toml::from_str(text)?;
        let set = match value.get("run") {
            Some(toml::Value::Table(run)) => run.keys().cloned().collect(),
            _ => Vec::new(),
        };
        Ok((toml::from_str(text)?, set))
    }
}

/// What a restart takes over from its run besides the `[run]` table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RestartOf {
    pub case: IcKind,
    /// Steps before the snapshot.
    pub step: u64,
    /// The total energy at the first run's start.
    pub energy_0: Option<f64>,
}

/// The options of `warpkit sph` (the command line's parser fills them in).
#[derive(Debug, Default)]
pub struct SphArgs {
    /// A TOML file with [ic], [run] and [output] tables (see docs/sph.md).
    pub config: Option<PathBuf>,
    /// Initial conditions.
    pub ic: Option<IcKind>,
    /// Sod: dense particles per unit length along the tube; Sedov: particles per box side.
    pub resolution: Option<usize>,
    /// Evrard, polytrope: about this many particles.
    pub particles: Option<usize>,
    /// End time.
    pub t_end: Option<f64>,
    /// Self-gravity's softening length ε.
    pub softening: Option<f64>,
    /// Self-gravity's tree opening angle θ.
    pub theta: Option<f64>,
    /// How self-gravity is summed.
    pub gravity_solver: Option<GravitySolver>,
    /// Levels of individual time steps (0: one shared step).
    pub block_levels: Option<u32>,
    /// Continue the run of this snapshot (its time, and the parameters of the `.run.toml`
    /// beside it; options given here override them, and say so).
    pub restart: Option<PathBuf>,
    /// A snapshot every K steps (0: the final one only).
    pub snapshot_every: Option<u64>,
    /// Replace a previous run's diagnostics and snapshots in the output directory.
    pub overwrite: bool,
    /// Seconds between plain progress lines in a log.
    pub progress_every: Option<f64>,
    /// Output directory.
    pub out: Option<PathBuf>,
}

/// Reads and overrides the configuration; also the `[run]` keys that the file or the options
/// set (which a restart keeps rather than take its run's).
pub fn config(a: &SphArgs) -> Result<(SphConfig, Vec<String>)> {
    let mut set = Vec::new();
    let mut c = match &a.config {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            let (c, keys) = SphConfig::from_toml_str(&text)
                .with_context(|| format!("parsing {}", p.display()))?;
            set = keys;
            c
        }
        None => SphConfig::default(),
    };
    if let Some(k) = a.ic {
        c.ic.kind = k;
    }
    if let Some(f) = &a.restart {
        // The case file of the run may come along: its particles are the snapshot's now.
        c.ic = IcConfig {
            kind: IcKind::Snapshot,
            file: Some(f.clone()),
            energy: c.ic.energy,
            periodic_box: c.ic.periodic_box,
            ..IcConfig::default()
        };
    }
    if let Some(r) = a.resolution {
        c.ic.resolution = r;
    }
    if let Some(p) = a.particles {
        c.ic.particles = p;
    }
    let mut note = |key: &str| set.push(key.to_string());
    if let Some(t) = a.t_end {
        c.run.t_end = Some(t);
        note("t_end");
    }
    if let Some(e) = a.softening {
        c.run.softening = e;
        note("softening");
    }
    if let Some(t) = a.theta {
        c.run.theta = t;
        note("theta");
    }
    if let Some(s) = a.gravity_solver {
        c.run.gravity_solver = s;
        note("gravity_solver");
    }
    if let Some(k) = a.block_levels {
        c.run.block_levels = k;
        note("block_levels");
    }
    if let Some(k) = a.snapshot_every {
        c.output.snapshot_every = k;
    }
    if a.overwrite {
        c.output.overwrite = true;
    }
    if let Some(s) = a.progress_every {
        c.output.progress_every = s;
    }
    if let Some(o) = &a.out {
        c.output.dir = o.clone();
    }
    Ok((c, set))
}

/// For a snapshot with a `.run.toml`: the run's `[run]` table where `set` (the keys given in
/// the file or as options) does not say otherwise, its box and its case; one line for each
/// override, and for what cannot continue exactly.
pub fn restart(c: &mut SphConfig, set: &[String]) -> Result<Vec<String>> {
    let file =
        c.ic.file
            .clone()
            .context("[ic] kind = \"snapshot\" needs `file`")?;
    let Some(state) = SphRunState::read(&file)? else {
        return Ok(vec![format!(
            "sph: {} is initial conditions (no {} beside it): the run starts at its header's \
             time with this case's parameters",
            file.display(),
            state_path(&file).display()
        )]);
    };
    let table = |r: &RunSection| match toml::Value::try_from(r) {
        Ok(toml::Value::Table(t)) => Ok(t),
        _ => Err(anyhow::anyhow!("serialising [run]")),
    };
    let (theirs, mut ours) = (table(&state.run)?, table(&c.run)?);
    let mut notes = Vec::new();
    for (key, value) in theirs {
        if !set.contains(&key) {
            ours.insert(key, value);
        } else if ours.get(&key) != Some(&value) {
            let now = ours.get(&key).map_or(String::new(), |v| v.to_string());
            notes.push(format!("restart: {key} {now} overrides the run's {value}"));
        }
    }
    c.run = toml::Value::Table(ours)
        .try_into()
        .with_context(|| format!("{}", state_path(&file).display()))?;
    if c.ic.periodic_box.is_none() {
        c.ic.periodic_box = state.periodic_box;
    }
    if c.ic.energy.is_none() {
        c.ic.energy = state.energy;
    }
    c.restart_of = Some(RestartOf {
        case: state.case,
        step: state.step,
        energy_0: state.energy_0,
    });
    if state.precision == Precision::Single {
        notes.push(format!(
            "restart: {} holds float32 values: the run continues from them rounded \
             (precision = \"double\" under [output] writes snapshots that continue exactly)",
            file.display()
        ));
    }
    Ok(notes)
}

/// A case ready to run.
pub struct Prepared {
    pub sim: Sim,
    pub t_end: f64,
    /// The case whose solution the profile shows (a restart's: its first run's).
    pub case: IcKind,
    /// The `[run]` table with every default resolved, for the snapshots' run state.
    pub run: RunSection,
    /// False for a snapshot without the integrator's state (format 1, another code): the run
    /// starts from forces recomputed at its state.
    pub exact: bool,
}

/// The case's particles, parameters and end time.
pub fn build(c: &SphConfig) -> Result<(Sim, f64)> {
    let p = prepare(c, BackendChoice::Cpu)?;
    Ok((p.sim, p.t_end))
}

/// The backend of the passes; the notice to print, if any (`auto` without a usable GPU).
pub fn backend_for(choice: BackendChoice) -> Result<(Backend, Option<String>)> {
    Ok(crate::backend::select(choice)?)
}

/// The case's particles, parameters and end time, and what its snapshots record, with the
/// passes on the backend of `choice` ([`backend_for`]; its notice on standard error).
pub fn prepare(c: &SphConfig, choice: BackendChoice) -> Result<Prepared> {
    let on = || -> Result<Backend> {
        let (b, note) = backend_for(choice)?;
        if let Some(note) = note {
            eprintln!("{note}");
        }
        Ok(b)
    };
    let kernel: SmoothingKernel = c.run.kernel.into();
    let case = match (c.ic.kind, c.restart_of) {
        (IcKind::Snapshot, Some(r)) => r.case,
        (k, _) => k,
    };
    let gamma = c.run.gamma.unwrap_or(match case {
        IcKind::Sod => SOD_GAMMA,
        IcKind::Sedov | IcKind::Snapshot => 5.0 / 3.0,
        IcKind::Evrard => EVRARD_GAMMA,
        IcKind::Polytrope => POLYTROPE_GAMMA,
    });
    let gravitating = matches!(case, IcKind::Evrard | IcKind::Polytrope);
    let params = HydroParams {
        kernel,
        n_ngb: c
            .run
            .n_ngb
            .unwrap_or_else(|| HydroParams::default_n_ngb(kernel)),
        courant: c.run.courant,
        conduction: c.run.conduction,
        viscosity: Viscosity {
            alpha_min: c.run.alpha_min,
            alpha_max: c.run.alpha_max,
            decay: c.run.decay,
            balsara: c.run.balsara,
        },
        self_gravity: c.run.self_gravity.unwrap_or(gravitating),
        gravity: Gravity {
            g: c.run.g,
            eps: c.run.softening,
            theta: c.run.theta,
            solver: c.run.gravity_solver,
            eta: c.run.gravity_eta,
        },
        block_levels: c.run.block_levels,
        ..HydroParams::ideal_gas(gamma)
    };
    if c.run.diag_every == 0 {
        bail!("diag_every must be at least 1");
    }
    if c.ic.kind != IcKind::Snapshot && (c.ic.file.is_some() || c.ic.periodic_box.is_some()) {
        bail!("`file` and `periodic_box` belong to [ic] kind = \"snapshot\"");
    }
    let res = if c.ic.resolution == 0 {
        32
    } else {
        c.ic.resolution
    };
    if !(2..=1024).contains(&res) {
        bail!("resolution {res} must be in 2..=1024");
    }
    let (gas, boundary, t_default) = match c.ic.kind {
        IcKind::Sod => {
            if !res.is_multiple_of(2) {
                bail!("the Sod resolution must be even (the dilute lattice has half the spacing)");
            }
            let (g, b) = ic::sod(res, ic::sod_across(params.n_ngb), &params);
            (g, b, 0.2)
        }
        IcKind::Sedov => {
            let e = c.ic.energy.unwrap_or(1.0);
            if !(e > 0.0 && e.is_finite()) {
                bail!("the Sedov energy {e} must be positive and finite");
            }
            let (g, b) = ic::sedov(res, e, 1e-6, &params);
            let t = sedov::time_at_radius(gamma, e, 1.0, 0.35).unwrap_or(0.05);
            (g, b, t)
        }
        IcKind::Evrard | IcKind::Polytrope => {
            if c.ic.resolution != 0 {
                bail!("the Evrard and polytrope cases take `particles`, not `resolution`");
            }
            let n = if c.ic.particles == 0 {
                4000
            } else {
                c.ic.particles
            };
            if !(100..=50_000_000).contains(&n) {
                bail!("particles = {n} must be in 100..=50000000");
            }
            if !params.self_gravity {
                bail!("the {:?} case needs self-gravity", c.ic.kind);
            }
            let (g, t) = if c.ic.kind == IcKind::Evrard {
                (ic_gravity::evrard(n, &params), 0.8)
            } else {
                (ic_gravity::polytrope(n, params.gravity.g, &params), 3.0)
            };
            (g, Boundary::Open, t)
        }
        IcKind::Snapshot => {
            let file =
                c.ic.file
                    .as_ref()
                    .context("[ic] kind = \"snapshot\" needs `file`")?;
            if c.ic.resolution != 0 || c.ic.particles != 0 {
                bail!("a snapshot's particles are its own: no `resolution` or `particles`");
            }
            let s = snapshot::read_snapshot(file)?;
            let boundary = match c.ic.periodic_box {
                Some(l) => Boundary::Periodic(l),
                None => Boundary::Open,
            };
            let step0 = c.restart_of.map_or(0, |r| r.step);
            let mut params = params.clone();
            if c.run.self_gravity.is_none() && s.particles.ptype.iter().any(|&t| t != 0) {
                // Collisionless particles move under gravity alone: on unless switched off.
                params.self_gravity = true;
            }
            let (sim, exact) = snapio::sim_of(&s, params, boundary, step0, on()?)
                .with_context(|| format!("starting from {}", file.display()))?;
            let t_end = c
                .run
                .t_end
                .context("a snapshot without a run state needs the end time (`t_end`, --t-end)")?;
            if !(t_end > sim.t && t_end.is_finite()) {
                bail!(
                    "t_end = {t_end} is not after the snapshot's time {}: give a later --t-end",
                    sim.t
                );
            }
            let mut run = c.run.clone();
            run.gamma = Some(gamma);
            run.n_ngb = Some(sim.params.n_ngb);
            run.self_gravity = Some(sim.params.self_gravity);
            return Ok(Prepared {
                sim,
                t_end,
                case,
                run,
                exact,
            });
        }
    };
    let t_end = c.run.t_end.unwrap_or(t_default);
    if !(t_end > 0.0 && t_end.is_finite()) {
        bail!("t_end = {t_end} must be positive and finite");
    }
    let backend = on()?;
    let mut sim = Sim::with_backend(gas, params, boundary, backend)?;
    if c.ic.kind == IcKind::Polytrope {
        let settle = c.ic.settle.unwrap_or(3.0);
        if !(settle >= 0.0 && settle.is_finite()) {
            bail!("settle = {settle} must be non-negative and finite");
        }
        if settle > 0.0 {
            let k = Polytrope::new(sim.params.gravity.g).k;
            ic_gravity::settle(&mut sim, k, settle, 0.5)?;
        }
    }
    let mut run = c.run.clone();
    run.t_end = Some(t_end);
    run.gamma = Some(gamma);
    run.n_ngb = Some(sim.params.n_ngb);
    run.self_gravity = Some(sim.params.self_gravity);
    Ok(Prepared {
        sim,
        t_end,
        case,
        run,
        exact: true,
    })
}

pub use super::run::{
    NoImages, Observer, SphSummary, refuse_previous_outputs, run, run_case, run_case_with, run_with,
};
