//! `warpkit sph`: a hydrodynamics case from a TOML file (`[ic]`, `[run]`, `[output]`) or the
//! options, on the CPU float64 solver; writes `diagnostics.csv` and a final `profile.csv`
//! (with the exact solution beside the particles where one exists).

use super::ic::{self, SOD_GAMMA};
use super::ic_gravity::{self, EVRARD_GAMMA, POLYTROPE_GAMMA, Polytrope};
use super::{Gravity, GravitySolver, HydroParams, Sim, sedov};
use crate::backend::BackendChoice;
use crate::device::sph::hydro::Viscosity;
use crate::sph::SmoothingKernel;
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Initial conditions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
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
}

/// The kernel as the TOML names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KernelName {
    #[default]
    CubicSpline,
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

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IcConfig {
    pub kind: IcKind,
    /// Sod: dense particles per unit length along the tube (even); Sedov: particles per box
    /// side. 0: the case's default (32).
    pub resolution: usize,
    /// Sedov: the blast energy.
    pub energy: Option<f64>,
    /// Evrard, polytrope: about this many particles. 0: the default (4000).
    pub particles: usize,
    /// Polytrope: the damped settling time before the run, which then starts at t = 0
    /// (default 3; 0 for none).
    pub settle: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunSection {
    /// End time (default: Sod 0.2; Sedov when the shock reaches r = 0.35).
    pub t_end: Option<f64>,
    pub kernel: KernelName,
    /// Target neighbour number (default 58 cubic spline, 100 Wendland C2).
    pub n_ngb: Option<f64>,
    pub courant: f64,
    pub alpha_min: f64,
    pub alpha_max: f64,
    /// Morris–Monaghan decay length ℓ.
    pub decay: f64,
    pub balsara: bool,
    /// Artificial conduction α_u (Price 2008; 0: none).
    pub conduction: f64,
    /// A diagnostics row every K steps.
    pub diag_every: u64,
    /// Self-gravity (default: on for Evrard and the polytrope; a periodic box refuses it).
    pub self_gravity: Option<bool>,
    /// Gravitational constant (the self-gravitating cases are set up for G = 1).
    pub g: f64,
    /// Fixed Plummer softening length ε.
    pub softening: f64,
    /// Opening angle θ of the tree.
    pub theta: f64,
    /// `tree` (Barnes–Hut, float32) or `direct` (float64 O(N²) sum).
    pub gravity_solver: GravitySolver,
    /// Accuracy η of the gravity time step `η √(ε/|a|)`.
    pub gravity_eta: f64,
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection {
            t_end: None,
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
        }
    }
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutputSection {
    pub dir: PathBuf,
}

impl Default for OutputSection {
    fn default() -> Self {
        OutputSection {
            dir: PathBuf::from("sph_out"),
        }
    }
}

/// The TOML case.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SphConfig {
    pub ic: IcConfig,
    pub run: RunSection,
    pub output: OutputSection,
}

/// Arguments of `warpkit sph`.
#[derive(clap::Args, Debug)]
pub struct SphArgs {
    /// A TOML file with [ic], [run] and [output] tables (see docs/sph.md).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Initial conditions.
    #[arg(long, value_enum)]
    pub ic: Option<IcKind>,
    /// Sod: dense particles per unit length along the tube; Sedov: particles per box side.
    #[arg(long)]
    pub resolution: Option<usize>,
    /// Evrard, polytrope: about this many particles.
    #[arg(long)]
    pub particles: Option<usize>,
    /// End time.
    #[arg(long, allow_negative_numbers = true)]
    pub t_end: Option<f64>,
    /// Self-gravity's softening length ε.
    #[arg(long, allow_negative_numbers = true)]
    pub softening: Option<f64>,
    /// Self-gravity's tree opening angle θ.
    #[arg(long, allow_negative_numbers = true)]
    pub theta: Option<f64>,
    /// How self-gravity is summed.
    #[arg(long, value_enum)]
    pub gravity_solver: Option<GravitySolver>,
    /// Output directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Reads and overrides the configuration.
pub fn config(a: &SphArgs) -> Result<SphConfig> {
    let mut c = match &a.config {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            toml::from_str(&text).with_context(|| format!("parsing {}", p.display()))?
        }
        None => SphConfig::default(),
    };
    if let Some(k) = a.ic {
        c.ic.kind = k;
    }
    if let Some(r) = a.resolution {
        c.ic.resolution = r;
    }
    if let Some(p) = a.particles {
        c.ic.particles = p;
    }
    if let Some(t) = a.t_end {
        c.run.t_end = Some(t);
    }
    if let Some(e) = a.softening {
        c.run.softening = e;
    }
    if let Some(t) = a.theta {
        c.run.theta = t;
    }
    if let Some(s) = a.gravity_solver {
        c.run.gravity_solver = s;
    }
    if let Some(o) = &a.out {
        c.output.dir = o.clone();
    }
    Ok(c)
}

/// The case's particles, parameters and end time.
pub fn build(c: &SphConfig) -> Result<(Sim, f64)> {
    let kernel: SmoothingKernel = c.run.kernel.into();
    let gamma = match c.ic.kind {
        IcKind::Sod => SOD_GAMMA,
        IcKind::Sedov => 5.0 / 3.0,
        IcKind::Evrard => EVRARD_GAMMA,
        IcKind::Polytrope => POLYTROPE_GAMMA,
    };
    let gravitating = matches!(c.ic.kind, IcKind::Evrard | IcKind::Polytrope);
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
        ..HydroParams::ideal_gas(gamma)
    };
    if c.run.diag_every == 0 {
        bail!("diag_every must be at least 1");
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
            (g, super::Boundary::Open, t)
        }
    };
    let t_end = c.run.t_end.unwrap_or(t_default);
    if !(t_end > 0.0 && t_end.is_finite()) {
        bail!("t_end = {t_end} must be positive and finite");
    }
    let mut sim = Sim::new(gas, params, boundary)?;
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
    Ok((sim, t_end))
}

/// Runs the command.
pub fn run(choice: BackendChoice, a: SphArgs) -> Result<()> {
    if choice == BackendChoice::Gpu {
        bail!("the SPH hydrodynamics solver runs on the CPU backend only so far");
    }
    let c = config(&a)?;
    let (mut sim, t_end) = build(&c)?;
    let dir = &c.output.dir;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    println!(
        "sph {:?}: {} particles, t_end {t_end}, kernel {:?}, N_ngb {}, CPU float64",
        c.ic.kind,
        sim.gas.len(),
        sim.params.kernel,
        sim.params.n_ngb
    );
    let diag_path = dir.join("diagnostics.csv");
    let mut diag = std::io::BufWriter::new(
        std::fs::File::create(&diag_path)
            .with_context(|| format!("creating {}", diag_path.display()))?,
    );
    writeln!(
        diag,
        "step,t,dt,kinetic,thermal,potential,total,px,py,pz,energy_error"
    )?;
    let d0 = sim.diagnostics();
    let row = |sim: &Sim, dt: f64, w: &mut dyn Write| -> std::io::Result<()> {
        let d = sim.diagnostics();
        writeln!(
            w,
            "{},{},{dt},{},{},{},{},{},{},{},{:e}",
            d.step,
            d.t,
            d.kinetic,
            d.thermal,
            d.potential,
            d.total,
            d.momentum[0],
            d.momentum[1],
            d.momentum[2],
            (d.total - d0.total) / d0.total.abs()
        )
    };
    row(&sim, 0.0, &mut diag)?;
    let start = std::time::Instant::now();
    while sim.t < t_end * (1.0 - 1e-12) {
        let dt = sim.step(t_end - sim.t)?;
        if sim.step % c.run.diag_every == 0 || sim.t >= t_end * (1.0 - 1e-12) {
            row(&sim, dt, &mut diag)?;
        }
    }
    diag.flush()?;
    let d = sim.diagnostics();
    println!(
        "t = {:.5} after {} steps in {:.1} s; energy error {:.2e}; momentum {:.2e}",
        d.t,
        d.step,
        start.elapsed().as_secs_f64(),
        (d.total - d0.total) / d0.total.abs(),
        d.momentum.iter().map(|p| p.abs()).fold(0.0, f64::max)
    );
    write_profile(&sim, &c.ic, &dir.join("profile.csv"))?;
    println!("wrote {}", dir.display());
    Ok(())
}

/// The final particles as a profile: Sod along x with the exact Riemann solution; Sedov
/// against radius with the similarity solution's shock radius.
fn write_profile(sim: &Sim, ic: &IcConfig, path: &Path) -> Result<()> {
    let g = &sim.gas;
    let mut w = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    match ic.kind {
        IcKind::Sod => {
            let exact = ic::sod_riemann();
            writeln!(w, "x,rho,vx,p,u,h,rho_exact,vx_exact,p_exact")?;
            for i in 0..g.len() {
                let x = g.pos[i][0];
                let e = ic::sod_exact(&exact, x, sim.t);
                writeln!(
                    w,
                    "{x},{},{},{},{},{},{},{},{}",
                    g.rho[i], g.vel[i][0], g.p[i], g.u[i], g.h[i], e.rho, e.u, e.p
                )?;
            }
        }
        IcKind::Sedov => {
            let gamma = 5.0 / 3.0;
            let e = ic.energy.unwrap_or(1.0);
            let rs = sedov::shock_radius(gamma, e, 1.0, sim.t).unwrap_or(f64::NAN);
            writeln!(w, "r,rho,vr,p,u,h,shock_radius_exact")?;
            for i in 0..g.len() {
                let d = [g.pos[i][0] - 0.5, g.pos[i][1] - 0.5, g.pos[i][2] - 0.5];
                let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                let vr = if r > 0.0 {
                    (0..3).map(|k| g.vel[i][k] * d[k]).sum::<f64>() / r
                } else {
                    0.0
                };
                writeln!(
                    w,
                    "{r},{},{vr},{},{},{},{rs}",
                    g.rho[i], g.p[i], g.u[i], g.h[i]
                )?;
            }
        }
        IcKind::Evrard | IcKind::Polytrope => {
            // About the centre of mass; the polytrope beside Lane–Emden (Evrard has no exact
            // profile once it moves).
            let poly = Polytrope::new(sim.params.gravity.g);
            let mtot: f64 = g.mass.iter().sum();
            let com: [f64; 3] = core::array::from_fn(|k| {
                (0..g.len()).map(|i| g.pos[i][k] * g.mass[i]).sum::<f64>() / mtot
            });
            writeln!(w, "r,rho,vr,p,u,h,rho_exact")?;
            for i in 0..g.len() {
                let d: [f64; 3] = core::array::from_fn(|k| g.pos[i][k] - com[k]);
                let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                let vr = if r > 0.0 {
                    (0..3).map(|k| g.vel[i][k] * d[k]).sum::<f64>() / r
                } else {
                    0.0
                };
                let exact = if ic.kind == IcKind::Polytrope {
                    poly.density(r)
                } else {
                    f64::NAN
                };
                writeln!(
                    w,
                    "{r},{},{vr},{},{},{},{exact}",
                    g.rho[i], g.p[i], g.u[i], g.h[i]
                )?;
            }
        }
    }
    w.flush()?;
    Ok(())
}
