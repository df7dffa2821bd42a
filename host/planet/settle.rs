//! Settling placed particles into the discrete equilibrium of the SPH solver, and the measures
//! of how close they are to the profile (the criteria of Kegerreis et al. 2019: densities within
//! 1% of the profile's at the particles' radii, RMS speed below 1% of the escape speed).
//!
//! The run is the float64 CPU solver with self-gravity, velocities damped by `exp(−dt/τ)` after
//! each step and every particle's `u` held on its material's cold adiabat at its SPH density
//! ([`crate::sph::hydro::ic_gravity::settle_with`], as for the polytrope): the particles relax
//! without heating, so the state stays on the profile's adiabats. A short undamped coast then
//! shows whether the state is an equilibrium of the solver itself: a damped run's speeds are
//! small by construction.

use super::particles::Placement;
use super::{Adiabat, G_SI, Planet, Profile};
use crate::device::sph::hydro::Material;
use crate::sph::SmoothingKernel;
use crate::sph::hydro::{Gravity, GravitySolver, HydroError, HydroParams, Sim, ic_gravity};

/// How to settle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SettleOptions {
    pub kernel: SmoothingKernel,
    pub n_ngb: f64,
    /// Plummer softening in units of the mean particle spacing `(m/ρ̄)^{1/3}`. It trades two
    /// errors: a small ε lets neighbours attract each other below the kernel's scale, where
    /// pressure cannot hold them, and the undamped planet does not stay still (RMS speed 2% of
    /// the escape speed after one dynamical time at ε = 0.3, 2000 particles); a large one
    /// weakens gravity against the profile's and the planet expands (densities 3% low at
    /// ε = 1). 0.5 keeps both near 1% at 2000 particles, and the bias falls as ε/R, `N^{−1/3}`.
    pub softening: f64,
    pub solver: GravitySolver,
    /// Damped settling time, in dynamical times `√(R³/GM)`.
    pub t_settle: f64,
    /// Damping time τ, in dynamical times.
    pub tau: f64,
    /// Undamped coast after the settling, in dynamical times (0: none).
    pub t_coast: f64,
}

impl Default for SettleOptions {
    fn default() -> Self {
        SettleOptions {
            kernel: SmoothingKernel::CubicSpline,
            n_ngb: HydroParams::default_n_ngb(SmoothingKernel::CubicSpline),
            softening: 0.5,
            solver: GravitySolver::Tree,
            t_settle: 8.0,
            tau: 0.3,
            t_coast: 1.0,
        }
    }
}

/// The dynamical time `√(R³/(G M))` of a profile.
pub fn dynamical_time(profile: &Profile) -> f64 {
    (profile.radius().powi(3) / (G_SI * profile.mass())).sqrt()
}

/// The escape speed `√(2 G M / R)` at the surface.
pub fn escape_speed(profile: &Profile) -> f64 {
    (2.0 * G_SI * profile.mass() / profile.radius()).sqrt()
}

/// The mean particle spacing `(m/ρ̄)^{1/3}` of a body of mass `mass` and radius `radius` made of
/// particles of mass `particle_mass`: the length the softening is given in.
pub fn mean_spacing(mass: f64, radius: f64, particle_mass: f64) -> f64 {
    let volume = 4.0 / 3.0 * std::f64::consts::PI * radius.powi(3);
    (particle_mass * volume / mass).cbrt()
}

/// The solver's parameters for planetary bodies: `materials` by id, SI units (G = [`G_SI`]),
/// self-gravity softened by `eps` (metres) and summed as `opts` says, viscosity α = 1 with the
/// Balsara switch, C = 0.3.
pub fn planetary_params(
    materials: Vec<Material<f64>>,
    eps: f64,
    opts: &SettleOptions,
) -> HydroParams {
    HydroParams {
        kernel: opts.kernel,
        n_ngb: opts.n_ngb,
        materials,
        self_gravity: true,
        gravity: Gravity {
            g: G_SI,
            eps,
            solver: opts.solver,
            ..Gravity::default()
        },
        u_floor: Some(0.0),
        ..HydroParams::ideal_gas(5.0 / 3.0)
    }
}

/// The solver's parameters for a planet ([`planetary_params`]): material id k is layer k's
/// Tillotson material, the softening `opts.softening` mean spacings.
pub fn hydro_params(
    planet: &Planet,
    profile: &Profile,
    particle_mass: f64,
    opts: &SettleOptions,
) -> HydroParams {
    let materials = planet
        .layers
        .iter()
        .map(|l| Material::Tillotson(l.material))
        .collect();
    let spacing = mean_spacing(profile.mass(), profile.radius(), particle_mass);
    planetary_params(materials, opts.softening * spacing, opts)
}

/// The placed particles as a run at t = 0 (densities and forces computed), its passes on
/// `backend`.
pub fn sim_of(
    planet: &Planet,
    profile: &Profile,
    placed: &Placement,
    opts: &SettleOptions,
    backend: crate::backend::Backend,
) -> Result<Sim, HydroError> {
    let params = hydro_params(planet, profile, placed.particle_mass, opts);
    Sim::with_backend(
        placed.gas.clone(),
        params,
        crate::sph::hydro::Boundary::Open,
        backend,
    )
}

/// Damped settling from `sim.t` to `t_end` (seconds) with damping time `tau` (seconds), `u`
/// held on each material's cold adiabat (`adiabats[id]`).
pub fn settle(sim: &mut Sim, adiabats: &[Adiabat], t_end: f64, tau: f64) -> Result<(), HydroError> {
    ic_gravity::settle_with(sim, t_end, tau, |id, _, rho| {
        Some(adiabats[id].u_at_density(rho))
    })
}

/// The cold adiabats of a planet's layers, by material id.
pub fn adiabats(planet: &Planet) -> Vec<Adiabat> {
    planet
        .layers
        .iter()
        .map(|l| Adiabat::cold(&l.material))
        .collect()
}

/// How close particles are to the profile.
///
/// `δ_i = ρ_i / ρ_profile(r_i) − 1`, with `ρ_i` the SPH density, `r_i` the distance from the
/// centre of mass and the profile's density that of the particle's own layer (clamped to the
/// layer's radii, so that a particle that crossed a boundary is compared with its material).
/// The outermost shells are left out of the interior statistics: a particle within about a
/// kernel radius of the surface has neighbours on one side only, and its SPH density is low
/// by up to tens of per cent however well it sits (Kegerreis et al. 2019 show the same).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Criteria {
    pub n: usize,
    /// Particles in the statistics below (all but those of the outermost shells).
    pub n_interior: usize,
    /// Median of `|δ|` over the interior particles.
    pub median_dev: f64,
    /// Fraction of the interior particles with `|δ| < 1%`.
    pub within_1pc: f64,
    /// Median of `|δ|` over all particles.
    pub median_dev_all: f64,
    /// Fraction of all particles with `|δ| < 1%`.
    pub within_1pc_all: f64,
    /// RMS speed about the centre-of-mass velocity.
    pub v_rms: f64,
    pub v_esc: f64,
}

impl Criteria {
    /// The interior median within 1% and the RMS speed below 1% of the escape speed.
    pub fn hold(&self) -> bool {
        self.median_dev < 0.01 && self.v_rms < 0.01 * self.v_esc
    }
}

/// How many outermost shells count as the surface: those whose particles lie within half a
/// kernel radius (the support radius guessed for the outermost shell) of the planet's radius,
/// where the kernel's missing outer side costs several per cent of the density.
pub fn surface_shells(placed: &Placement, radius: f64) -> usize {
    let h_out = placed
        .gas
        .h
        .iter()
        .zip(&placed.shell_of)
        .filter(|&(_, &s)| s + 1 == placed.shells.len())
        .map(|(&h, _)| h)
        .fold(0.0, f64::max);
    placed
        .shells
        .iter()
        .filter(|s| s.r > radius - 0.5 * h_out)
        .count()
}

/// The criteria of `sim`'s particles against `profile`; `shell_of` and `outer` (the number of
/// outermost shells left out, [`surface_shells`]) say which particles are the surface's.
pub fn criteria(sim: &Sim, profile: &Profile, shell_of: &[usize], outer: usize) -> Criteria {
    let g = &sim.gas;
    let n = g.len();
    let mtot: f64 = g.mass.iter().sum();
    let com: [f64; 3] =
        core::array::from_fn(|k| (0..n).map(|i| g.mass[i] * g.pos[i][k]).sum::<f64>() / mtot);
    let vcom: [f64; 3] =
        core::array::from_fn(|k| (0..n).map(|i| g.mass[i] * g.vel[i][k]).sum::<f64>() / mtot);
    let n_shells = shell_of.iter().max().map_or(0, |&s| s + 1);
    let mut all = Vec::with_capacity(n);
    let mut interior = Vec::with_capacity(n);
    let mut v2 = 0.0;
    for (i, &shell) in shell_of.iter().enumerate() {
        let d: [f64; 3] = core::array::from_fn(|k| g.pos[i][k] - com[k]);
        let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let rho = profile.in_layer(r, g.mat[i] as usize).0;
        let dev = (g.rho[i] / rho - 1.0).abs();
        all.push(dev);
        if shell + outer < n_shells {
            interior.push(dev);
        }
        v2 += g.mass[i] * (0..3).map(|k| (g.vel[i][k] - vcom[k]).powi(2)).sum::<f64>();
    }
    let within = |v: &[f64]| v.iter().filter(|&&d| d < 0.01).count() as f64 / v.len() as f64;
    Criteria {
        n,
        n_interior: interior.len(),
        median_dev: median(&mut interior),
        within_1pc: within(&interior),
        median_dev_all: median(&mut all),
        within_1pc_all: within(&all),
        v_rms: (v2 / mtot).sqrt(),
        v_esc: escape_speed(profile),
    }
}

/// The median (NaN for none).
fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let k = v.len() / 2;
    if v.len() % 2 == 1 {
        v[k]
    } else {
        0.5 * (v[k - 1] + v[k])
    }
}
