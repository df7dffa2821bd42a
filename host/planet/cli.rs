//! `warpkit planet`: a layered planet from a TOML file (`[planet]`, `[particles]`, `[settle]`,
//! `[output]`) or the options: its profile, equal-mass particles on it, the damped settling, and
//! the files `planet.gadget` (Gadget format 2, float64, SI units, material ids in MATI),
//! `profile.csv` and `planet.toml` (units, materials by id, profile summary and criteria).

use super::particles::{self, MIN_PARTICLES};
use super::settle::{self, Criteria, SettleOptions};
use super::{G_SI, Layer, Planet, Profile};
use crate::device::sph::hydro::Tillotson;
use crate::nbody::snapshot::{self, Format, Precision};
use crate::sph::hydro::{GravitySolver, Sim, snapio};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The Earth's mass [kg] (IAU 2015 nominal G M⊕ over CODATA 2018 G).
pub const EARTH_MASS: f64 = 5.972_17e24;

/// The Tillotson materials by name.
pub const MATERIALS: [(&str, Tillotson<f64>); 5] = [
    ("iron", Tillotson::IRON),
    ("granite", Tillotson::GRANITE),
    ("basalt", Tillotson::BASALT),
    ("water", Tillotson::WATER),
    ("ice", Tillotson::ICE),
];

/// The material called `name`.
pub fn material(name: &str) -> Result<Tillotson<f64>> {
    match MATERIALS.iter().find(|(n, _)| *n == name) {
        Some((_, m)) => Ok(*m),
        None => bail!(
            "unknown material {name:?}: the Tillotson materials are {}",
            MATERIALS.map(|(n, _)| n).join(", ")
        ),
    }
}

/// One layer as the configuration names it.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct LayerSpec {
    /// Its Tillotson material: `iron`, `granite`, `basalt`, `water` or `ice`.
    pub material: String,
    /// Its share of the planet's mass (> 0; the layers' fractions sum to 1).
    pub fraction: f64,
}

/// The planet: `[planet]`. Units: SI.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct PlanetSection {
    /// Mass in Earth masses (absent: 1, unless `mass_kg` is given).
    pub mass_earth: Option<f64>,
    /// Mass in kg (instead of `mass_earth`).
    pub mass_kg: Option<f64>,
    /// Layers from the centre out (`--layers iron:0.3,granite:0.7`).
    pub layers: Vec<LayerSpec>,
    /// Radial steps of the hydrostatic profile (100 ..= 100000).
    pub steps: usize,
}

impl Default for PlanetSection {
    fn default() -> Self {
        PlanetSection {
            mass_earth: None,
            mass_kg: None,
            layers: parse_layers("iron:0.3,granite:0.7").expect("valid"),
            steps: 4000,
        }
    }
}

/// The SPH particles: `[particles]`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct ParticlesSection {
    /// Equal-mass particles on spherical shells (100 ..= 5·10^7).
    pub n: usize,
    /// Seed of the shells' random rotations.
    pub seed: u64,
    /// Target neighbour number of the cubic spline (≥ 8).
    pub n_ngb: f64,
}

impl Default for ParticlesSection {
    fn default() -> Self {
        ParticlesSection {
            n: 10_000,
            seed: 1,
            n_ngb: 58.0,
        }
    }
}

/// The damped settling of the particles into equilibrium: `[settle]`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct SettleSection {
    /// Damped settling time, in dynamical times `√(R³/GM)` (≥ 0).
    pub time: f64,
    /// Damping time τ, in dynamical times (> 0).
    pub tau: f64,
    /// Undamped coast after the settling, in dynamical times: a check that the settled planet
    /// stays still (0: none; the snapshot is the settled state either way).
    pub coast: f64,
    /// Plummer softening, in mean particle spacings `(m/ρ̄)^{1/3}` (> 0).
    pub softening: f64,
    /// How self-gravity is summed.
    pub gravity_solver: GravitySolver,
}

impl Default for SettleSection {
    fn default() -> Self {
        let o = SettleOptions::default();
        SettleSection {
            time: o.t_settle,
            tau: o.tau,
            coast: o.t_coast,
            softening: o.softening,
            gravity_solver: o.solver,
        }
    }
}

/// Outputs: `[output]`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct OutputSection {
    /// The output directory: `planet.gadget`, `profile.csv`, `planet.toml`.
    pub dir: PathBuf,
    /// Replace the files of a previous planet in `dir` (else refused).
    pub overwrite: bool,
}

impl Default for OutputSection {
    fn default() -> Self {
        OutputSection {
            dir: PathBuf::from("planet_out"),
            overwrite: false,
        }
    }
}

/// The case of `warpkit planet`: every key optional (the default is an Earth mass, 30% iron
/// under 70% granite, 10^4 particles); the options override the file.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct PlanetConfig {
    pub planet: PlanetSection,
    pub particles: ParticlesSection,
    pub settle: SettleSection,
    pub output: OutputSection,
}

/// The options of `warpkit planet` (the command line's parser fills them in).
#[derive(Debug, Default)]
pub struct PlanetArgs {
    pub config: Option<PathBuf>,
    /// The configuration as TOML text (instead of `config`).
    pub text: Option<String>,
    /// Mass in Earth masses.
    pub mass: Option<f64>,
    /// Mass in kg.
    pub mass_kg: Option<f64>,
    /// Layers from the centre out, `material:fraction,…`.
    pub layers: Option<String>,
    pub particles: Option<usize>,
    pub seed: Option<u64>,
    /// Settling time in dynamical times.
    pub settle: Option<f64>,
    pub overwrite: bool,
    pub out: Option<PathBuf>,
}

/// `iron:0.3,granite:0.7` as layers.
pub fn parse_layers(s: &str) -> Result<Vec<LayerSpec>> {
    s.split(',')
        .map(|part| {
            let (m, f) = part.split_once(':').with_context(|| {
                format!("layer {part:?} is not material:fraction (e.g. iron:0.3,granite:0.7)")
            })?;
            let fraction = f
                .trim()
                .parse::<f64>()
                .with_context(|| format!("layer {part:?}: {f:?} is not a number"))?;
            Ok(LayerSpec {
                material: m.trim().to_string(),
                fraction,
            })
        })
        .collect()
}

/// Reads and overrides the configuration.
pub fn config(a: &PlanetArgs) -> Result<PlanetConfig> {
    let mut c: PlanetConfig = match (&a.config, &a.text) {
        (Some(p), _) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            toml::from_str(&text).with_context(|| format!("parsing {}", p.display()))?
        }
        (None, Some(text)) => toml::from_str(text).context("parsing the configuration")?,
        (None, None) => PlanetConfig::default(),
    };
    if a.mass.is_some() || a.mass_kg.is_some() {
        (c.planet.mass_earth, c.planet.mass_kg) = (a.mass, a.mass_kg);
    }
    if let Some(l) = &a.layers {
        c.planet.layers = parse_layers(l)?;
    }
    if let Some(n) = a.particles {
        c.particles.n = n;
    }
    if let Some(s) = a.seed {
        c.particles.seed = s;
    }
    if let Some(t) = a.settle {
        c.settle.time = t;
    }
    if a.overwrite {
        c.output.overwrite = true;
    }
    if let Some(o) = &a.out {
        c.output.dir = o.clone();
    }
    Ok(c)
}

/// The files a run writes into its directory.
pub const OUTPUTS: [&str; 3] = ["planet.gadget", "profile.csv", "planet.toml"];

/// The planet of a `[planet]` section: its mass (one of `mass_earth`, `mass_kg`; 1 Earth mass
/// by default) and its layers (known materials, positive fractions summing to 1).
pub fn planet_of(p: &PlanetSection) -> Result<Planet> {
    let mass = match (p.mass_earth, p.mass_kg) {
        (Some(_), Some(_)) => bail!("give the mass in Earth masses or in kg, not both"),
        (Some(m), None) => m * EARTH_MASS,
        (None, Some(m)) => m,
        (None, None) => EARTH_MASS,
    };
    if !(mass.is_finite() && mass > 0.0) {
        bail!("the planet's mass must be positive and finite");
    }
    if p.layers.is_empty() {
        bail!("a planet needs at least one layer");
    }
    let mut layers = Vec::new();
    for l in &p.layers {
        if !(l.fraction.is_finite() && l.fraction > 0.0) {
            bail!(
                "layer {}'s mass fraction {} must be positive",
                l.material,
                l.fraction
            );
        }
        layers.push(Layer {
            material: material(&l.material)?,
            mass_fraction: l.fraction,
        });
    }
    let sum: f64 = layers.iter().map(|l| l.mass_fraction).sum();
    if (sum - 1.0).abs() > 1e-6 {
        bail!("the layers' mass fractions sum to {sum:.6}, not 1");
    }
    // Normalised exactly, so that the profile's own check (1e-9) passes.
    layers.iter_mut().for_each(|l| l.mass_fraction /= sum);
    if !(100..=100_000).contains(&p.steps) {
        bail!("steps = {} must be in 100..=100000", p.steps);
    }
    Ok(Planet { mass, layers })
}

/// Everything checkable before any work: the planet (materials, fractions, mass), the particle
/// count, the settling times and the output directory.
pub fn validate(c: &PlanetConfig) -> Result<Planet> {
    let planet = planet_of(&c.planet)?;
    let n = c.particles.n;
    if !(MIN_PARTICLES..=50_000_000).contains(&n) {
        bail!("{n} particles: give between {MIN_PARTICLES} and 50000000");
    }
    if !(c.particles.n_ngb.is_finite() && c.particles.n_ngb >= 8.0) {
        bail!("n_ngb = {} must be at least 8", c.particles.n_ngb);
    }
    let s = &c.settle;
    for (name, v, zero_ok) in [
        ("settle time", s.time, true),
        ("coast", s.coast, true),
        ("tau", s.tau, false),
        ("softening", s.softening, false),
    ] {
        if !(v.is_finite() && (v > 0.0 || (zero_ok && v == 0.0))) {
            bail!(
                "{name} = {v} must be {}",
                if zero_ok { "≥ 0" } else { "> 0" }
            );
        }
    }
    let dir = &c.output.dir;
    if dir.exists() && !dir.is_dir() {
        bail!("--out {} is a file, not a directory", dir.display());
    }
    let previous: Vec<&str> = OUTPUTS
        .iter()
        .copied()
        .filter(|f| dir.join(f).exists())
        .collect();
    if !c.output.overwrite && !previous.is_empty() {
        bail!(
            "{}",
            crate::nbody::run::RunError::previous_outputs(
                dir,
                &previous.join(", "),
                "--overwrite (`overwrite = true` under [output])"
            )
        );
    }
    Ok(planet)
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct PlanetSummary {
    pub radius: f64,
    pub criteria: Criteria,
    pub dir: PathBuf,
}

/// Runs the command: validate, profile, place, settle (the passes on the backend of `choice`),
/// write.
pub fn run(a: PlanetArgs, choice: crate::backend::BackendChoice) -> Result<PlanetSummary> {
    let c = config(&a)?;
    let planet = validate(&c)?;
    let profile = planet.profile(G_SI, c.planet.steps)?;
    print_profile(&c, &profile);
    let placed = particles::place(
        &profile,
        c.particles.n,
        c.particles.seed,
        c.particles.n_ngb,
        1.0,
    )?;
    let opts = SettleOptions {
        n_ngb: c.particles.n_ngb,
        softening: c.settle.softening,
        solver: c.settle.gravity_solver,
        t_settle: c.settle.time,
        tau: c.settle.tau,
        t_coast: c.settle.coast,
        ..SettleOptions::default()
    };
    let t_dyn = settle::dynamical_time(&profile);
    println!(
        "particles: {} of {:.4e} kg on {} shells; dynamical time {:.0} s",
        placed.gas.len(),
        placed.particle_mass,
        placed.shells.len(),
        t_dyn
    );
    let (backend, note) = crate::sph::hydro::cli::backend_for(choice)?;
    if let Some(n) = note {
        eprintln!("{n}");
    }
    let mut sim = settle::sim_of(&planet, &profile, &placed, &opts, backend)?;
    let outer = settle::surface_shells(&placed, profile.radius());
    let show = |what: &str, t: f64, c: &Criteria| {
        println!(
            "{what} t = {t:.0} s: median |ρ/ρ_profile − 1| {:.2}% ({:.1}% within 1%; all \
             particles {:.2}%, {:.1}%), v_rms/v_esc {:.2e}",
            100.0 * c.median_dev,
            100.0 * c.within_1pc,
            100.0 * c.median_dev_all,
            100.0 * c.within_1pc_all,
            c.v_rms / c.v_esc
        )
    };
    show(
        "placed:",
        0.0,
        &settle::criteria(&sim, &profile, &placed.shell_of, outer),
    );
    settle_in_chunks(&mut sim, &planet, &profile, &opts, "planet")?;
    let crit = settle::criteria(&sim, &profile, &placed.shell_of, outer);
    show("settled:", sim.t, &crit);
    // The coast checks, on a copy, that the settled state is an equilibrium of the solver (the
    // damped speeds are small by construction); the snapshot is the settled state.
    let coast = if opts.t_coast > 0.0 {
        let mut free = sim.clone();
        match free.run_to(sim.t + opts.t_coast * t_dyn) {
            Ok(()) => {
                let c = settle::criteria(&free, &profile, &placed.shell_of, outer);
                show("after an undamped coast:", free.t, &c);
                Some(c)
            }
            // Surface particles sit at u ≈ 0 on the cold adiabat, and a slight expansion can
            // take u below 0: the check is lost, not the settled planet.
            Err(e) => {
                eprintln!(
                    "planet: the undamped coast stopped at t = {:.0} s: {e}",
                    free.t
                );
                None
            }
        }
    } else {
        None
    };
    println!(
        "criteria (interior median within 1%, v_rms below 1% of v_esc = {:.0} m/s): {}; the \
         outermost {outer} shells ({} particles) are the surface's, outside the interior \
         statistic",
        crit.v_esc,
        if crit.hold() { "met" } else { "NOT met" },
        crit.n - crit.n_interior
    );
    let dir = &c.output.dir;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // The snapshot's time is 0: the settled planet is where a run starts.
    sim.t = 0.0;
    let s = snapio::snapshot_of(&sim);
    snapshot::write_gadget(
        &dir.join(OUTPUTS[0]),
        &s,
        Format::Gadget2,
        Precision::Double,
    )?;
    write_profile(&c, &profile, &dir.join(OUTPUTS[1]))?;
    write_info(
        &c,
        &planet,
        &profile,
        (&crit, coast.as_ref()),
        &sim,
        &dir.join(OUTPUTS[2]),
    )?;
    println!("wrote {}", dir.display());
    Ok(PlanetSummary {
        radius: profile.radius(),
        criteria: crit,
        dir: dir.clone(),
    })
}

/// The damped settling of `sim` (a planet's particles at t = 0) for `opts.t_settle` dynamical
/// times, a progress line (prefixed `what`) on standard error after each.
pub fn settle_in_chunks(
    sim: &mut Sim,
    planet: &Planet,
    profile: &Profile,
    opts: &SettleOptions,
    what: &str,
) -> Result<()> {
    let adiabats = settle::adiabats(planet);
    let t_dyn = settle::dynamical_time(profile);
    let start = std::time::Instant::now();
    let chunks = opts.t_settle.ceil() as usize;
    for k in 1..=chunks {
        let t_end = (k as f64).min(opts.t_settle) * t_dyn;
        settle::settle(sim, &adiabats, t_end, opts.tau * t_dyn)?;
        eprintln!(
            "{what}: settling, t = {:.0} s of {:.0} s, step {}, {:.1} s",
            sim.t,
            opts.t_settle * t_dyn,
            sim.step,
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn print_profile(c: &PlanetConfig, p: &Profile) {
    let names: Vec<String> = c
        .planet
        .layers
        .iter()
        .enumerate()
        .map(|(k, l)| format!("{} to {:.1} km", l.material, p.layer_top(k) / 1e3))
        .collect();
    println!(
        "planet: {:.4e} kg ({:.4} Earth masses), radius {:.1} km; core radius {:.1} km; central \
         density {:.0} kg/m³, pressure {:.4e} Pa; layers {}",
        p.mass(),
        p.mass() / EARTH_MASS,
        p.radius() / 1e3,
        p.layer_top(0) / 1e3,
        p.rho[0],
        p.p[0],
        names.join(", ")
    );
}

/// The profile as CSV, SI units, centre first.
fn write_profile(c: &PlanetConfig, p: &Profile, path: &Path) -> Result<()> {
    crate::files::write_atomically(path, |w| {
        writeln!(
            w,
            "r_m,mass_kg,pressure_pa,density_kg_m3,u_j_kg,layer,material"
        )?;
        for i in 0..p.r.len() {
            writeln!(
                w,
                "{},{},{},{},{},{},{}",
                p.r[i],
                p.m[i],
                p.p[i],
                p.rho[i],
                p.u[i],
                p.layer[i],
                c.planet.layers[p.layer[i]].material
            )?;
        }
        Ok(())
    })
    .with_context(|| format!("writing {}", path.display()))
}

/// The snapshot's metadata: units, materials by id, the profile's summary and the criteria.
fn write_info(
    c: &PlanetConfig,
    planet: &Planet,
    p: &Profile,
    (crit, coast): (&Criteria, Option<&Criteria>),
    sim: &Sim,
    path: &Path,
) -> Result<()> {
    let mut t = String::new();
    t += "# warpkit planet: the settled planet in planet.gadget (Gadget format 2, float64)\n";
    t += "[units]\nsystem = \"SI\"\nlength = \"m\"\nmass = \"kg\"\ntime = \"s\"\n";
    t += "velocity = \"m/s\"\ninternal_energy = \"J/kg\"\ndensity = \"kg/m^3\"\n";
    t += &format!("gravitational_constant = {G_SI:e}\n\n[materials]\n");
    t += "# material id (the MATI block) = layer, from the centre out: Tillotson\n";
    for (k, l) in c.planet.layers.iter().enumerate() {
        t += &format!(
            "{k} = {{ name = \"{}\", mass_fraction = {} }}\n",
            l.material, planet.layers[k].mass_fraction
        );
    }
    t += &format!(
        "\n[profile]\nmass = {:e}\nradius = {:e}\ncore_radius = {:e}\ncentral_density = {:e}\n\
         central_pressure = {:e}\n",
        p.mass(),
        p.radius(),
        p.layer_top(0),
        p.rho[0],
        p.p[0]
    );
    t += &format!(
        "\n[particles]\nn = {}\nseed = {}\nn_ngb = {}\nsoftening_m = {:e}\n",
        sim.gas.len(),
        c.particles.seed,
        sim.params.n_ngb,
        sim.params.gravity.eps
    );
    let table = |name: &str, c: &Criteria| {
        format!(
            "\n[{name}]\nmedian_density_deviation = {:e}\nfraction_within_1_percent = {}\n\
             median_density_deviation_all = {:e}\nfraction_within_1_percent_all = {}\n\
             interior_particles = {}\nv_rms = {:e}\nv_esc = {:e}\nmet = {}\n",
            c.median_dev,
            c.within_1pc,
            c.median_dev_all,
            c.within_1pc_all,
            c.n_interior,
            c.v_rms,
            c.v_esc,
            c.hold()
        )
    };
    t += "\n# The settled state (the snapshot's); [criteria_coast]: after the undamped coast.";
    t += &table("criteria", crit);
    if let Some(c) = coast {
        t += &table("criteria_coast", c);
    }
    crate::files::write_atomically(path, |w| w.write_all(t.as_bytes()))
        .with_context(|| format!("writing {}", path.display()))
}
