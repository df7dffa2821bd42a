//! `warpkit impact`'s case: a TOML file (`[target]`, `[impactor]`, `[particles]`, `[settle]`,
//! `[impact]`, `[run]`, `[output]`) and the options that override it, checked whole before any
//! work ([`validate`]: the bodies, their profiles and particles, the orbit, the output
//! directory), then the bodies settled and set on their orbit ([`build`]); the run itself is
//! [`super::run`].
//!
//! A body is a settled planet of `warpkit planet` (`snapshot = "…/planet.gadget"`, with the
//! `planet.toml` beside it naming its materials and radius) or built here from a `[planet]`-like
//! description (mass, layers), profiled, placed and settled as `warpkit planet` does. The
//! default case is the demo: 0.887 and 0.133 Earth masses, 30% iron under 70% granite each, at
//! 45° and the mutual escape speed, starting an hour before contact (SWIFT's DemoImpact set-up).

use super::orbit::{self, Contact, State};
use crate::device::sph::hydro::Material;
use crate::nbody::snapshot;
use crate::planet::cli::{LayerSpec, PlanetSection, parse_layers, planet_of};
use crate::planet::particles::{self, MIN_PARTICLES, Placement, PlacementError};
use crate::planet::settle::{self, SettleOptions};
use crate::planet::{G_SI, Planet, Profile};
use crate::sph::hydro::{Boundary, Gas, GravitySolver, HydroParams, snapio};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One body: a snapshot of `warpkit planet` (`snapshot`, with `materials` and `radius_m` where
/// no `planet.toml` lies beside it), or a planet to build (`mass_earth` or `mass_kg`, `layers`,
/// `steps`), never both. Units: SI.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct BodySection {
    /// A settled planet (Gadget, SI, material ids in MATI), e.g. `warpkit planet`'s
    /// `planet.gadget`; its `planet.toml` beside it names the materials by id and the radius.
    pub snapshot: Option<PathBuf>,
    /// A snapshot's materials by id, where no `planet.toml` lies beside it.
    pub materials: Option<Vec<String>>,
    /// A snapshot's radius in m, where no `planet.toml` lies beside it (default: the farthest
    /// particle from its centre of mass).
    pub radius_m: Option<f64>,
    /// A planet to build: its mass in Earth masses.
    pub mass_earth: Option<f64>,
    /// A planet to build: its mass in kg (instead of `mass_earth`).
    pub mass_kg: Option<f64>,
    /// A planet to build: its layers from the centre out (absent: 30% iron under 70% granite).
    pub layers: Option<Vec<LayerSpec>>,
    /// A planet to build: radial steps of its profile (absent: 4000).
    pub steps: Option<usize>,
}

impl BodySection {
    /// A planet of `mass_earth` Earth masses, 30% iron under 70% granite.
    pub fn demo(mass_earth: f64) -> Self {
        BodySection {
            mass_earth: Some(mass_earth),
            layers: Some(parse_layers("iron:0.3,granite:0.7").expect("valid")),
            ..BodySection::default()
        }
    }
}

/// The particles of the bodies built here: `[particles]`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct ParticlesSection {
    /// Particles of the two built bodies together, shared in proportion to their masses (equal
    /// particle masses; absent: 2000). With one body from a snapshot, the built one takes the
    /// snapshot's particle mass instead.
    pub n: Option<usize>,
    /// Seed of the shells' random rotations (the impactor's are another stream).
    pub seed: u64,
    /// Target neighbour number of the cubic spline (≥ 8).
    pub n_ngb: f64,
}

impl Default for ParticlesSection {
    fn default() -> Self {
        ParticlesSection {
            n: None,
            seed: 1,
            n_ngb: 58.0,
        }
    }
}

/// The settling of the bodies built here (as `warpkit planet`'s, without its coast).
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct SettleSection {
    /// Damped settling time, in each body's dynamical times `√(R³/GM)` (≥ 0).
    pub time: f64,
    /// Damping time τ, in dynamical times (> 0).
    pub tau: f64,
    /// Plummer softening while settling, in mean particle spacings of the body (> 0).
    pub softening: f64,
    /// How self-gravity is summed while settling.
    pub gravity_solver: GravitySolver,
}

impl Default for SettleSection {
    fn default() -> Self {
        let o = SettleOptions::default();
        SettleSection {
            time: o.t_settle,
            tau: o.tau,
            softening: o.softening,
            gravity_solver: o.solver,
        }
    }
}

/// The orbit: impact parameter, speed at contact, and where the run starts (each given one
/// way at most).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct ImpactSection {
    /// Impact parameter `b = sin B` in [0, 1) (or `angle_deg`; default 45°).
    pub b: Option<f64>,
    /// Impact angle B in degrees, in [0, 90) (0: head-on).
    pub angle_deg: Option<f64>,
    /// Speed at contact in units of the mutual escape speed `√(2G(M_t+M_i)/(R_t+R_i))` (or
    /// `v_c_m_s`; default 1).
    pub v_c: Option<f64>,
    /// Speed at contact in m/s (instead of `v_c`).
    pub v_c_m_s: Option<f64>,
    /// Time from the start to contact in s (or `separation`; default 3600).
    pub t_contact: Option<f64>,
    /// Initial separation of the centres in units of `R_t + R_i` (≥ 1; instead of
    /// `t_contact`).
    pub separation: Option<f64>,
}

/// The impact's run: `[run]`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct RunSection {
    /// End time, s from the start (> 0).
    pub t_end: f64,
    /// Plummer softening, in mean particle spacings of the target (> 0).
    pub softening: f64,
    /// How self-gravity is summed.
    pub gravity_solver: GravitySolver,
    /// Opening angle θ of the tree (0 < θ ≤ 1.5).
    pub theta: f64,
    /// CFL factor C of the time step (0 < C ≤ 1).
    pub courant: f64,
    /// Individual time steps on this many levels (0: one shared step).
    pub block_levels: u32,
    /// A row of `diagnostics.csv` every this many steps (≥ 1).
    pub diag_every: u64,
    /// A row of `outcome.csv` (remnant, disk, escaping mass) every so many seconds (0: at the
    /// start and the end only).
    pub analysis_every: f64,
    /// A snapshot every so many seconds, the start's included (0: the final one only).
    pub snapshot_every: f64,
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection {
            t_end: 36_000.0,
            softening: SettleOptions::default().softening,
            gravity_solver: GravitySolver::Tree,
            theta: crate::sph::hydro::Gravity::default().theta,
            courant: 0.3,
            block_levels: 0,
            diag_every: 1,
            analysis_every: 1800.0,
            snapshot_every: 3600.0,
        }
    }
}

/// Outputs: `[output]`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct OutputSection {
    /// The output directory: `diagnostics.csv`, `outcome.csv`, `impact.toml`, snapshots.
    pub dir: PathBuf,
    /// Replace a previous run's files in `dir` (else refused).
    pub overwrite: bool,
    /// A plain progress line on standard error every so many seconds when it is not a
    /// terminal (0: none).
    pub progress_every: f64,
    /// Beside each snapshot, `.materials.png`: the particles seen along z, coloured by material
    /// (drawn by the `warpkit` command line).
    pub images: bool,
    /// Pixels per side of those images (16 ..= 8192).
    pub image_pixels: u32,
    /// With `images`: a frame of `impact.gif` every so many seconds of simulated time, the
    /// start's included, in the view of the start (0: no animation).
    pub frame_every: f64,
    /// The snapshots' format: `gadget2` (`.gadget`) or `hdf5` (`.hdf5`, SWIFT's names and
    /// planetary fields, SI units stated in `/Units`; needs the `hdf5` cargo feature).
    pub format: crate::nbody::run::SnapshotFormat,
}

impl Default for OutputSection {
    fn default() -> Self {
        OutputSection {
            dir: PathBuf::from("impact_out"),
            overwrite: false,
            progress_every: crate::output::PROGRESS_EVERY_S,
            images: true,
            image_pixels: 512,
            frame_every: 600.0,
            format: crate::nbody::run::SnapshotFormat::Gadget2,
        }
    }
}

/// The case of `warpkit impact`: every table optional; the default is the demo, 0.887 and 0.133
/// Earth masses, 30% iron under 70% granite each, at 45° and the mutual escape speed, an hour
/// before contact.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct ImpactConfig {
    /// The larger body.
    pub target: BodySection,
    /// The body that hits it.
    pub impactor: BodySection,
    pub particles: ParticlesSection,
    pub settle: SettleSection,
    pub impact: ImpactSection,
    pub run: RunSection,
    pub output: OutputSection,
}

impl Default for ImpactConfig {
    fn default() -> Self {
        ImpactConfig {
            target: BodySection::demo(0.887),
            impactor: BodySection::demo(0.133),
            particles: ParticlesSection::default(),
            settle: SettleSection::default(),
            impact: ImpactSection::default(),
            run: RunSection::default(),
            output: OutputSection::default(),
        }
    }
}

/// The options of `warpkit impact` (the command line's parser fills them in).
#[derive(Debug, Default)]
pub struct ImpactArgs {
    pub config: Option<PathBuf>,
    /// The case as TOML text (instead of `config`).
    pub text: Option<String>,
    /// Particles of the built bodies together.
    pub particles: Option<usize>,
    /// End time, s.
    pub t_end: Option<f64>,
    pub overwrite: bool,
    pub progress_every: Option<f64>,
    pub out: Option<PathBuf>,
}

/// Reads and overrides the configuration.
pub fn config(a: &ImpactArgs) -> Result<ImpactConfig> {
    let mut c: ImpactConfig = match (&a.config, &a.text) {
        (Some(p), _) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            toml::from_str(&text).with_context(|| format!("parsing {}", p.display()))?
        }
        (None, Some(text)) => toml::from_str(text).context("parsing the case")?,
        (None, None) => ImpactConfig::default(),
    };
    if let Some(n) = a.particles {
        c.particles.n = Some(n);
    }
    if let Some(t) = a.t_end {
        c.run.t_end = t;
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
    Ok(c)
}

/// The files a run writes besides its snapshots (`snapshot_NNNN.gadget`, `snapshot_final.gadget`,
/// or `.hdf5`).
pub const OUTPUTS: [&str; 3] = ["diagnostics.csv", "outcome.csv", "impact.toml"];

/// Where a body comes from, checked and ready to settle or place.
#[derive(Clone, Debug)]
pub enum Source {
    /// Built here: its planet, profile and placed particles (settled by [`build`]).
    Built {
        planet: Planet,
        profile: Profile,
        placed: Box<Placement>,
    },
    /// A settled snapshot's gas, moved to its centre of mass and at rest.
    Snapshot { path: PathBuf, gas: Box<Gas> },
}

/// One body of the impact.
#[derive(Clone, Debug)]
pub struct Body {
    /// `target` or `impactor`.
    pub name: &'static str,
    pub source: Source,
    pub mass: f64,
    pub radius: f64,
    pub particles: usize,
    /// The mean particle mass.
    pub particle_mass: f64,
    /// Its material names by its own ids.
    pub materials: Vec<String>,
}

/// A case checked whole: the bodies, the materials of the run, the orbit and the start.
#[derive(Clone, Debug)]
pub struct Setup {
    pub target: Body,
    pub impactor: Body,
    /// The run's materials by id: the target's, then those of the impactor not among them.
    pub materials: Vec<String>,
    pub contact: Contact,
    /// The mutual escape speed.
    pub v_esc: f64,
    /// Seconds from the start to contact.
    pub t_contact: f64,
    /// The relative state (impactor − target) at the start.
    pub start: State,
    /// The run's Plummer softening in m.
    pub eps: f64,
}

impl Setup {
    /// The impact angle in degrees.
    pub fn angle_deg(&self) -> f64 {
        self.contact.b.asin().to_degrees()
    }
}

/// The material named `name` as the solver takes it.
pub(super) fn material_of(name: &str) -> Result<Material<f64>> {
    Ok(Material::Tillotson(crate::planet::cli::material(name)?))
}

/// The settle options of the case.
pub fn settle_options(c: &ImpactConfig) -> SettleOptions {
    SettleOptions {
        n_ngb: c.particles.n_ngb,
        softening: c.settle.softening,
        solver: c.settle.gravity_solver,
        t_settle: c.settle.time,
        tau: c.settle.tau,
        t_coast: 0.0,
        ..SettleOptions::default()
    }
}

/// A snapshot body's materials and radius from the `planet.toml` beside it (or the section's
/// `materials` and `radius_m`).
fn snapshot_body(name: &'static str, s: &BodySection, c: &ImpactConfig) -> Result<Body> {
    let path = s.snapshot.as_ref().expect("a snapshot body");
    if s.mass_earth.is_some() || s.mass_kg.is_some() || s.layers.is_some() || s.steps.is_some() {
        bail!(
            "[{name}] takes either `snapshot` or a planet to build (mass, layers, steps), not both"
        );
    }
    let snap = snapshot::read_snapshot(path)
        .with_context(|| format!("[{name}] reading {}", path.display()))?;
    let info_path = path.with_file_name("planet.toml");
    let info: Option<toml::Table> = match std::fs::read_to_string(&info_path) {
        Ok(t) => {
            Some(toml::from_str(&t).with_context(|| format!("parsing {}", info_path.display()))?)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", info_path.display())),
    };
    let materials: Vec<String> = match (&s.materials, &info) {
        (Some(m), _) => m.clone(),
        (None, Some(t)) => {
            let table = t
                .get("materials")
                .and_then(|m| m.as_table())
                .with_context(|| format!("{} has no [materials]", info_path.display()))?;
            let mut names = Vec::new();
            for k in 0..table.len() {
                let name = table
                    .get(&k.to_string())
                    .and_then(|v| v.get("name"))
                    .and_then(|v| v.as_str())
                    .with_context(|| {
                        format!(
                            "{}: [materials] lacks the name of id {k}",
                            info_path.display()
                        )
                    })?;
                names.push(name.to_string());
            }
            names
        }
        (None, None) => bail!(
            "[{name}] {} has no planet.toml beside it: name its materials by id \
             (`materials = [\"iron\", \"granite\"]`)",
            path.display()
        ),
    };
    let params = HydroParams {
        materials: materials
            .iter()
            .map(|m| material_of(m))
            .collect::<Result<_>>()
            .with_context(|| format!("[{name}] {}", path.display()))?,
        ..settle::planetary_params(vec![], 1.0, &settle_options(c))
    };
    let mut gas = snapio::gas_of(&snap, &params, &Boundary::Open)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("[{name}] {}", path.display()))?;
    if let Some(i) = gas.mat.iter().position(|&m| m as usize >= materials.len()) {
        bail!(
            "[{name}] {}: particle {i} has material id {}, but {} materials are named",
            path.display(),
            gas.mat[i],
            materials.len()
        );
    }
    // At rest at the origin.
    let n = gas.len();
    let mass: f64 = gas.mass.iter().sum();
    recentre(&mut gas);
    let from_info = info
        .as_ref()
        .and_then(|t| t.get("profile"))
        .and_then(|p| p.get("radius"))
        .and_then(|r| r.as_float());
    let radius = match (s.radius_m, from_info) {
        (Some(r), _) => r,
        (None, Some(r)) => r,
        (None, None) => gas
            .pos
            .iter()
            .map(|p| (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt())
            .fold(0.0, f64::max),
    };
    if !(radius.is_finite() && radius > 0.0) {
        bail!("[{name}] radius_m = {radius} must be positive and finite");
    }
    Ok(Body {
        name,
        source: Source::Snapshot {
            path: path.clone(),
            gas: Box::new(gas),
        },
        mass,
        radius,
        particles: n,
        particle_mass: mass / n as f64,
        materials,
    })
}

/// Moves `gas` to its centre of mass and removes its mean velocity.
pub(super) fn recentre(gas: &mut Gas) {
    let n = gas.len();
    let mass: f64 = gas.mass.iter().sum();
    let mean = |v: &[[f64; 3]]| -> [f64; 3] {
        core::array::from_fn(|k| (0..n).map(|i| gas.mass[i] * v[i][k]).sum::<f64>() / mass)
    };
    let (com, vcom) = (mean(&gas.pos), mean(&gas.vel));
    for i in 0..n {
        for k in 0..3 {
            gas.pos[i][k] -= com[k];
            gas.vel[i][k] -= vcom[k];
        }
    }
}

/// A body to build: its planet and profile (particles are placed once the counts are known).
fn planned_body(name: &'static str, s: &BodySection) -> Result<(Planet, Profile, Vec<String>)> {
    if s.materials.is_some() || s.radius_m.is_some() {
        bail!("[{name}] `materials` and `radius_m` belong to a snapshot body");
    }
    if s.mass_earth.is_none() && s.mass_kg.is_none() {
        bail!("[{name}] give the body's mass (`mass_earth` or `mass_kg`) or a `snapshot`");
    }
    let section = PlanetSection {
        mass_earth: s.mass_earth,
        mass_kg: s.mass_kg,
        layers: s
            .layers
            .clone()
            .unwrap_or_else(|| PlanetSection::default().layers),
        steps: s.steps.unwrap_or(PlanetSection::default().steps),
    };
    let planet = planet_of(&section).with_context(|| format!("[{name}]"))?;
    let profile = planet
        .profile(G_SI, section.steps)
        .with_context(|| format!("[{name}] its profile"))?;
    let names = section.layers.iter().map(|l| l.material.clone()).collect();
    Ok((planet, profile, names))
}

/// Checks a positive finite value (or ≥ 0 with `zero_ok`).
fn check(name: &str, v: f64, zero_ok: bool) -> Result<()> {
    if !(v.is_finite() && (v > 0.0 || (zero_ok && v == 0.0))) {
        bail!(
            "{name} = {v} must be {} and finite",
            if zero_ok { "≥ 0" } else { "> 0" }
        );
    }
    Ok(())
}

/// Everything checkable before any work: the bodies (materials, layers, masses, snapshots),
/// their profiles and particles, the settling, the orbit (impact parameter, speed, start, no
/// overlap), the run's times and the output directory.
pub fn validate(c: &ImpactConfig) -> Result<Setup> {
    let p = &c.particles;
    if !(p.n_ngb.is_finite() && p.n_ngb >= 8.0) {
        bail!("n_ngb = {} must be at least 8", p.n_ngb);
    }
    let s = &c.settle;
    check("[settle] time", s.time, true)?;
    check("[settle] tau", s.tau, false)?;
    check("[settle] softening", s.softening, false)?;
    let r = &c.run;
    check("t_end", r.t_end, false)?;
    check("[run] softening", r.softening, false)?;
    check("analysis_every", r.analysis_every, true)?;
    check("snapshot_every", r.snapshot_every, true)?;
    check("frame_every", c.output.frame_every, true)?;
    if !(r.courant > 0.0 && r.courant <= 1.0) {
        bail!("courant = {} must be in (0, 1]", r.courant);
    }
    if r.gravity_solver == GravitySolver::Tree && !(r.theta > 0.0 && r.theta <= 1.5) {
        bail!("theta = {} must be in (0, 1.5]", r.theta);
    }
    if r.diag_every == 0 {
        bail!("diag_every must be at least 1");
    }
    if c.output.images && !(16..=8192).contains(&c.output.image_pixels) {
        bail!(
            "image_pixels = {} must be in 16..=8192",
            c.output.image_pixels
        );
    }
    match c.output.format {
        crate::nbody::run::SnapshotFormat::Gadget1 => bail!(
            "format = \"gadget1\": format 1 has no block names to carry the material ids (MATI); \
             use \"gadget2\" or \"hdf5\""
        ),
        #[cfg(not(feature = "hdf5"))]
        crate::nbody::run::SnapshotFormat::Hdf5 => {
            bail!("{}", crate::nbody::snapshot::NO_HDF5)
        }
        _ => {}
    }

    // The orbit's own inputs, before the bodies are made.
    let im = &c.impact;
    let b = match (im.b, im.angle_deg) {
        (Some(_), Some(_)) => bail!("give the impact parameter `b` or `angle_deg`, not both"),
        (Some(b), None) => b,
        (None, Some(a)) => {
            if !(a.is_finite() && (0.0..90.0).contains(&a)) {
                bail!("angle_deg = {a} must be in [0, 90)");
            }
            a.to_radians().sin()
        }
        (None, None) => 45f64.to_radians().sin(),
    };
    if !(b.is_finite() && (0.0..1.0).contains(&b)) {
        bail!("the impact parameter b = {b} must be in [0, 1) (b = sin of the impact angle)");
    }
    if im.v_c.is_some() && im.v_c_m_s.is_some() {
        bail!("give the speed at contact as `v_c` (escape speeds) or `v_c_m_s`, not both");
    }
    for (key, v) in [("v_c", im.v_c), ("v_c_m_s", im.v_c_m_s)] {
        if let Some(v) = v
            && !(v.is_finite() && v > 0.0)
        {
            bail!("the speed at contact {key} = {v} must be positive and finite");
        }
    }
    if im.t_contact.is_some() && im.separation.is_some() {
        bail!("give the start as `t_contact` (s before contact) or `separation`, not both");
    }
    if let Some(t) = im.t_contact {
        check("t_contact", t, true)?;
    }
    if let Some(d) = im.separation
        && !(d.is_finite() && d >= 1.0)
    {
        bail!(
            "separation = {d} (in R_t + R_i) must be at least 1: the bodies would overlap at the \
             start"
        );
    }

    // The bodies: snapshots read, planets profiled; then the particle counts, and placement.
    let plan = |name: &'static str, s: &BodySection| -> Result<Result<Body, _>> {
        Ok(match &s.snapshot {
            Some(_) => Ok(snapshot_body(name, s, c)?),
            None => Err(planned_body(name, s)?),
        })
    };
    let (t, i) = (plan("target", &c.target)?, plan("impactor", &c.impactor)?);
    let counts: (usize, usize) = match (&t, &i) {
        (Err((_, pt, _)), Err((_, pi, _))) => {
            let n = p.n.unwrap_or(2000);
            if !(2 * MIN_PARTICLES..=50_000_000).contains(&n) {
                bail!(
                    "{n} particles: give between {} and 50000000",
                    2 * MIN_PARTICLES
                );
            }
            let nt = (n as f64 * pt.mass() / (pt.mass() + pi.mass())).round() as usize;
            (nt, n - nt)
        }
        (Ok(bt), Ok(bi)) => {
            if p.n.is_some() {
                bail!("[particles] n is for bodies built here: both bodies are snapshots");
            }
            (bt.particles, bi.particles)
        }
        (Ok(snap), Err((_, built, _))) | (Err((_, built, _)), Ok(snap)) => {
            if p.n.is_some() {
                bail!(
                    "[particles] n is for two bodies built here: the one built takes the \
                     snapshot's particle mass"
                );
            }
            let n = (built.mass() / snap.particle_mass).round() as usize;
            if t.is_ok() {
                (snap.particles, n)
            } else {
                (n, snap.particles)
            }
        }
    };
    let place =
        |name: &'static str, b: Result<Body, (Planet, Profile, Vec<String>)>, n, seed| match b {
            Ok(body) => Ok(body),
            Err((planet, profile, materials)) => {
                let placed =
                    particles::place(&profile, n, seed, p.n_ngb, 1.0).map_err(|e| match e {
                        PlacementError::TooFew { n, min } => anyhow::anyhow!(
                            "the {name} would have {n} particles, fewer than {min}: use more \
                             particles (its share of [particles] n follows its mass)"
                        ),
                        e => anyhow::anyhow!("[{name}] {e}"),
                    })?;
                Ok::<_, anyhow::Error>(Body {
                    name,
                    mass: profile.mass(),
                    radius: profile.radius(),
                    particles: n,
                    particle_mass: placed.particle_mass,
                    materials,
                    source: Source::Built {
                        planet,
                        profile,
                        placed: Box::new(placed),
                    },
                })
            }
        };
    let target = place("target", t, counts.0, p.seed)?;
    // Another stream for the impactor's rotations: its shells are not the target's.
    let impactor = place("impactor", i, counts.1, p.seed.wrapping_add(1 << 32))?;

    let mut materials = target.materials.clone();
    for m in &impactor.materials {
        if !materials.contains(m) {
            materials.push(m.clone());
        }
    }

    let (m, rad) = (
        (target.mass, impactor.mass),
        (target.radius, impactor.radius),
    );
    let v_esc = orbit::mutual_escape_speed(G_SI, m.0, m.1, rad.0, rad.1);
    let v_c = im.v_c_m_s.unwrap_or(im.v_c.unwrap_or(1.0) * v_esc);
    let contact = Contact::new(G_SI, m, rad, b, v_c)?;
    let (t_contact, start) = match im.separation {
        Some(d) => contact.at_separation(d * contact.r_c)?,
        None => {
            let t = im.t_contact.unwrap_or(3600.0);
            (t, contact.before(t)?)
        }
    };
    let eps = r.softening * settle::mean_spacing(target.mass, target.radius, target.particle_mass);

    let dir = &c.output.dir;
    if dir.exists() && !dir.is_dir() {
        bail!("--out {} is a file, not a directory", dir.display());
    }
    let mut previous = crate::nbody::run::previous_outputs(dir);
    previous.extend(
        OUTPUTS[1..]
            .iter()
            .filter(|f| dir.join(f).exists())
            .map(|f| f.to_string()),
    );
    if !c.output.overwrite && !previous.is_empty() {
        let shown = match previous.len() {
            1..=3 => previous.join(", "),
            k => format!("{}, … ({k} files)", previous[..3].join(", ")),
        };
        bail!(
            "{}",
            crate::nbody::run::RunError::previous_outputs(
                dir,
                &shown,
                "--overwrite (`overwrite = true` under [output])"
            )
        );
    }
    for body in [&target, &impactor] {
        if let Source::Snapshot { path, .. } = &body.source
            && dir.is_dir()
        {
            crate::files::check_not_input(
                "--out",
                &dir.join(format!("snapshot_final.{}", c.output.format.extension())),
                &[(body.name, Some(path))],
            )?;
        }
    }
    Ok(Setup {
        target,
        impactor,
        materials,
        contact,
        v_esc,
        t_contact,
        start,
        eps,
    })
}

pub use super::assemble::{assemble, build, run_params};
