//! SPH hydrodynamics on the CPU in float64: the reference solver that the GPU kernels will
//! twin. Every formula (kernels, grad-h terms, equation of state, pair forces, viscosity and its
//! switches, time step) is `warpkit_device::sph::hydro`'s; this module holds the particles, the
//! neighbour search (a cell list, periodic or open), the smoothing-length iteration, the force
//! pass and the KDK leapfrog, self-gravity ([`gravity`]), initial conditions ([`ic`],
//! [`ic_gravity`]) and analytic solutions ([`riemann`], [`sedov`]).
//!
//! Smoothing lengths: `h` is the kernel's support radius, iterated per particle to constant
//! mass in the kernel, `(4π/3) h³ ρ = N_ngb m` (Springel & Hernquist 2002), so that the mean
//! neighbour number is `N_ngb`. Forces take the symmetric pairs `r < max(h_i, h_j)`.

pub mod block;
#[cfg(test)]
mod block_tests;
pub mod cells;
pub mod cli;
#[cfg(test)]
mod collisionless_tests;
pub mod density;
pub mod force;
pub mod gpu;
pub mod gravity;
#[cfg(test)]
mod gravity_tests;
pub mod grid;
pub mod ic;
pub mod ic_gravity;
pub mod riemann;
pub mod run;
pub mod sedov;
pub mod snapio;
mod step;
#[cfg(test)]
mod tests;

pub use gravity::{Gravity, GravitySolver};
pub use step::{Diagnostics, Sim, StageTimes};

use super::SmoothingKernel;
use crate::device::sph::hydro::{IdealGas, Material, Viscosity};

/// The domain: unbounded, or the periodic box `[0, L_x) × [0, L_y) × [0, L_z)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Boundary {
    Open,
    Periodic([f64; 3]),
}

impl Boundary {
    /// The minimum image of a separation.
    #[inline]
    pub fn image(&self, mut d: [f64; 3]) -> [f64; 3] {
        if let Boundary::Periodic(l) = self {
            for k in 0..3 {
                d[k] -= l[k] * (d[k] / l[k]).round();
            }
        }
        d
    }

    /// A position mapped into the box.
    #[inline]
    pub fn wrap(&self, mut p: [f64; 3]) -> [f64; 3] {
        if let Boundary::Periodic(l) = self {
            for k in 0..3 {
                p[k] = p[k].rem_euclid(l[k]);
                // rem_euclid may round up to L itself for a tiny negative input.
                if p[k] >= l[k] {
                    p[k] = 0.0;
                }
            }
        }
        p
    }

    /// Half the smallest side: smoothing lengths must stay below it, or a particle would meet a
    /// neighbour's images more than once.
    pub fn half_width(&self) -> f64 {
        match self {
            Boundary::Open => f64::INFINITY,
            Boundary::Periodic(l) => 0.5 * l[0].min(l[1]).min(l[2]),
        }
    }
}

/// Solver parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct HydroParams {
    pub kernel: SmoothingKernel,
    /// Target neighbour number `N_ngb` of the constant-mass-in-kernel condition (≈ 58 for the
    /// cubic spline, ≈ 100 for Wendland C2).
    pub n_ngb: f64,
    /// Relative tolerance of the kernel mass, `|(4π/3) h³ ρ / (N_ngb m) − 1|`.
    pub h_tol: f64,
    /// Equations of state by material id (`Gas::mat`).
    pub materials: Vec<Material<f64>>,
    pub viscosity: Viscosity<f64>,
    /// Artificial conduction coefficient α_u (Price 2008; 0: none).
    pub conduction: f64,
    /// CFL factor `C` of `dt = C h / v_sig` (`h` the support radius).
    pub courant: f64,
    /// Self-gravity of the gas (not in a periodic box), with the parameters `gravity`.
    pub self_gravity: bool,
    pub gravity: Gravity,
    /// Levels of individual time steps (steps `Δ / 2^k`, `k ≤ block_levels`); 0: one step
    /// shared by every particle.
    pub block_levels: u32,
    /// A floor for the specific energy, applied after every kick (`None`: an energy that turns
    /// negative stops the run with the particle named). The planetary runs use 0, as SWIFT's
    /// minimal internal energy does: the cold surface of a Tillotson body sits at u ≈ 0, where
    /// the float32 forces' rounding alone can kick it below.
    pub u_floor: Option<f64>,
}

impl HydroParams {
    /// An ideal gas of adiabatic index `gamma` with the cubic spline, 58 neighbours, constant
    /// α = 1 with the Balsara switch, `C = 0.3`.
    pub fn ideal_gas(gamma: f64) -> Self {
        HydroParams {
            kernel: SmoothingKernel::CubicSpline,
            n_ngb: 58.0,
            h_tol: 1e-6,
            materials: vec![Material::IdealGas(IdealGas { gamma })],
            viscosity: Viscosity {
                alpha_min: 1.0,
                alpha_max: 1.0,
                decay: 0.1,
                balsara: true,
            },
            conduction: 0.0,
            courant: 0.3,
            self_gravity: false,
            gravity: Gravity::default(),
            block_levels: 0,
            u_floor: None,
        }
    }

    /// The recommended neighbour number of a kernel.
    pub fn default_n_ngb(kernel: SmoothingKernel) -> f64 {
        match kernel {
            SmoothingKernel::CubicSpline => 58.0,
            SmoothingKernel::WendlandC2 => 100.0,
        }
    }
}

/// Gas particles, structure of arrays. Inputs: `pos`, `vel`, `mass`, `u`, `h` (a first guess),
/// `mat`, `alpha`; the rest is computed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gas {
    pub pos: Vec<[f64; 3]>,
    pub vel: Vec<[f64; 3]>,
    pub mass: Vec<f64>,
    /// Specific internal energy.
    pub u: Vec<f64>,
    /// Smoothing length (support radius).
    pub h: Vec<f64>,
    /// Material id, an index into `HydroParams::materials`.
    pub mat: Vec<u32>,
    /// Viscosity α.
    pub alpha: Vec<f64>,
    pub rho: Vec<f64>,
    pub p: Vec<f64>,
    pub cs: Vec<f64>,
    /// Grad-h factor `f`.
    pub f: Vec<f64>,
    pub div_v: Vec<f64>,
    pub curl_v: Vec<f64>,
    pub balsara: Vec<f64>,
    pub acc: Vec<[f64; 3]>,
    pub du: Vec<f64>,
    /// Largest signal velocity over the neighbours.
    pub vsig: Vec<f64>,
}

impl Gas {
    /// Particles with the given inputs (material 0, α = `alpha`), the derived arrays zeroed.
    pub fn new(
        pos: Vec<[f64; 3]>,
        vel: Vec<[f64; 3]>,
        mass: Vec<f64>,
        u: Vec<f64>,
        h: Vec<f64>,
        alpha: f64,
    ) -> Self {
        let n = pos.len();
        Gas {
            pos,
            vel,
            mass,
            u,
            h,
            mat: vec![0; n],
            alpha: vec![alpha; n],
            rho: vec![0.0; n],
            p: vec![0.0; n],
            cs: vec![0.0; n],
            f: vec![1.0; n],
            div_v: vec![0.0; n],
            curl_v: vec![0.0; n],
            balsara: vec![1.0; n],
            acc: vec![[0.0; 3]; n],
            du: vec![0.0; n],
            vsig: vec![0.0; n],
        }
    }

    pub fn len(&self) -> usize {
        self.pos.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }
}

/// Collisionless particles (Gadget types 1–5: dark matter, stars) in a hydro run: they source
/// and feel the self-gravity of everything, and no pressure. Inputs `pos`, `vel`, `mass`,
/// `ptype`; `acc` is computed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Collisionless {
    pub pos: Vec<[f64; 3]>,
    pub vel: Vec<[f64; 3]>,
    pub mass: Vec<f64>,
    /// Gadget particle type, 1–5 (kept for the snapshots).
    pub ptype: Vec<u32>,
    /// Gravitational acceleration `G ∇φ` at the last force evaluation.
    pub acc: Vec<[f64; 3]>,
}

impl Collisionless {
    /// Particles of type `ptype` with the given positions, velocities and masses.
    pub fn new(pos: Vec<[f64; 3]>, vel: Vec<[f64; 3]>, mass: Vec<f64>, ptype: u32) -> Self {
        let n = pos.len();
        Collisionless {
            pos,
            vel,
            mass,
            ptype: vec![ptype; n],
            acc: vec![[0.0; 3]; n],
        }
    }

    pub fn len(&self) -> usize {
        self.pos.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }
}

/// Everything that stops a hydro run, caught before the step that would produce NaN.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum HydroError {
    #[error("no gas particles")]
    Empty,
    #[error("array {name} has {len} entries for {n} particles")]
    Length {
        name: &'static str,
        len: usize,
        n: usize,
    },
    #[error("particle {index}: {what} = {value} is invalid ({why})")]
    BadValue {
        index: usize,
        what: &'static str,
        value: f64,
        why: &'static str,
    },
    #[error("collisionless particle {index}: {what} = {value} is invalid ({why})")]
    BadCollisionless {
        index: usize,
        what: &'static str,
        value: f64,
        why: &'static str,
    },
    #[error(
        "{0} collisionless particles (types 1–5) need self-gravity: switch it on, or run them \
         with `warpkit nbody`"
    )]
    CollisionlessWithoutGravity(usize),
    #[error("particle {index} has material id {id}, but only {count} materials are defined")]
    BadMaterial { index: usize, id: u32, count: usize },
    #[error("{0}")]
    Params(String),
    #[error(
        "self-gravity in a periodic box is not supported (it needs Ewald summation): use an \
         open boundary or switch self-gravity off"
    )]
    PeriodicGravity,
    #[error("self-gravity: {0}")]
    Gravity(String),
    #[error(
        "particle {index}: smoothing length {h} reached half the periodic box ({half}): too few \
         particles for N_ngb = {n_ngb}"
    )]
    HTooLarge {
        index: usize,
        h: f64,
        half: f64,
        n_ngb: f64,
    },
    #[error("particle {index}: the smoothing-length iteration did not converge (h = {h})")]
    HNoConvergence { index: usize, h: f64 },
    #[error("GPU: {0}")]
    Gpu(String),
    #[error("time step {dt:e} at t = {t} fell below the floor {floor:e} (particle {index})")]
    DtCollapse {
        dt: f64,
        t: f64,
        floor: f64,
        index: usize,
    },
}

fn bad(index: usize, what: &'static str, value: f64, why: &'static str) -> HydroError {
    HydroError::BadValue {
        index,
        what,
        value,
        why,
    }
}

/// Checks parameters and particles: finite positions and velocities, positive finite masses
/// and smoothing lengths, finite non-negative `u`, valid materials (ideal gas `γ > 1`), and
/// no periodic box with self-gravity.
pub fn validate(gas: &Gas, params: &HydroParams, boundary: &Boundary) -> Result<(), HydroError> {
    let n = gas.len();
    if n == 0 {
        return Err(HydroError::Empty);
    }
    let lens = [
        ("vel", gas.vel.len()),
        ("mass", gas.mass.len()),
        ("u", gas.u.len()),
        ("h", gas.h.len()),
        ("mat", gas.mat.len()),
        ("alpha", gas.alpha.len()),
    ];
    for (name, len) in lens {
        if len != n {
            return Err(HydroError::Length { name, len, n });
        }
    }
    let p = |s: String| Err(HydroError::Params(s));
    if params.self_gravity {
        if let Boundary::Periodic(_) = boundary {
            return Err(HydroError::PeriodicGravity);
        }
        params.gravity.validate()?;
    }
    if let Boundary::Periodic(l) = boundary
        && !l.iter().all(|x| x.is_finite() && *x > 0.0)
    {
        return p(format!(
            "periodic box sides {l:?} must be positive and finite"
        ));
    }
    if !(params.n_ngb.is_finite() && params.n_ngb >= 8.0) {
        return p(format!("n_ngb = {} must be at least 8", params.n_ngb));
    }
    if !(params.h_tol > 0.0 && params.h_tol < 0.1) {
        return p(format!("h_tol = {} must be in (0, 0.1)", params.h_tol));
    }
    if params.block_levels > block::MAX_LEVELS {
        return p(format!(
            "block_levels = {} must be at most {}",
            params.block_levels,
            block::MAX_LEVELS
        ));
    }
    if !(params.courant > 0.0 && params.courant <= 1.0) {
        return p(format!("courant = {} must be in (0, 1]", params.courant));
    }
    let v = &params.viscosity;
    if !(v.alpha_min >= 0.0 && v.alpha_min <= v.alpha_max && v.alpha_max.is_finite())
        || !(v.decay > 0.0 && v.decay.is_finite())
    {
        return p(format!(
            "viscosity needs 0 ≤ alpha_min ≤ alpha_max < ∞ and decay > 0 (got {v:?})"
        ));
    }
    if !(params.conduction >= 0.0 && params.conduction.is_finite()) {
        return p(format!(
            "conduction = {} must be ≥ 0 and finite",
            params.conduction
        ));
    }
    if params.materials.is_empty() {
        return p("no materials defined".into());
    }
    for (id, m) in params.materials.iter().enumerate() {
        match m {
            Material::IdealGas(g) => {
                if !(g.gamma > 1.0 && g.gamma.is_finite()) {
                    return p(format!(
                        "material {id}: ideal gas γ = {} must be > 1",
                        g.gamma
                    ));
                }
            }
            Material::Tillotson(t) => {
                let positive = [t.rho_0, t.u_0, t.u_iv, t.big_a, t.alpha, t.beta];
                if !positive.iter().all(|x| x.is_finite() && *x > 0.0)
                    || !(t.u_cv > t.u_iv && t.u_cv.is_finite())
                    || !(t.eta_zero <= t.eta_min && t.p_min.is_finite())
                {
                    return p(format!(
                        "material {id}: Tillotson parameters need ρ₀, u₀, u_iv, A, α, β > 0, u_cv > u_iv and η_zero ≤ η_min (got {t:?})"
                    ));
                }
            }
        }
    }
    for i in 0..n {
        if !gas.pos[i].iter().all(|x| x.is_finite()) {
            return Err(bad(i, "position", gas.pos[i][0], "non-finite"));
        }
        if !gas.vel[i].iter().all(|x| x.is_finite()) {
            return Err(bad(i, "velocity", gas.vel[i][0], "non-finite"));
        }
        let m = gas.mass[i];
        if !(m.is_finite() && m > 0.0) {
            return Err(bad(i, "mass", m, "must be positive and finite"));
        }
        let u = gas.u[i];
        if !(u.is_finite() && u >= 0.0) {
            return Err(bad(i, "u", u, "must be non-negative and finite"));
        }
        let h = gas.h[i];
        if !(h.is_finite() && h > 0.0) {
            return Err(bad(i, "h", h, "must be positive and finite"));
        }
        let a = gas.alpha[i];
        if !(a.is_finite() && a >= 0.0) {
            return Err(bad(i, "alpha", a, "must be non-negative and finite"));
        }
        if gas.mat[i] as usize >= params.materials.len() {
            return Err(HydroError::BadMaterial {
                index: i,
                id: gas.mat[i],
                count: params.materials.len(),
            });
        }
    }
    Ok(())
}

/// Checks the collisionless particles: consistent lengths, finite positions and velocities,
/// positive finite masses, types 1–5, and self-gravity on when there are any.
pub fn validate_collisionless(c: &Collisionless, params: &HydroParams) -> Result<(), HydroError> {
    let n = c.len();
    if n == 0 {
        return Ok(());
    }
    if !params.self_gravity {
        return Err(HydroError::CollisionlessWithoutGravity(n));
    }
    for (name, len) in [
        ("collisionless vel", c.vel.len()),
        ("collisionless mass", c.mass.len()),
        ("collisionless ptype", c.ptype.len()),
        ("collisionless acc", c.acc.len()),
    ] {
        if len != n {
            return Err(HydroError::Length { name, len, n });
        }
    }
    let bad = |index, what, value, why| HydroError::BadCollisionless {
        index,
        what,
        value,
        why,
    };
    for i in 0..n {
        if !c.pos[i].iter().all(|x| x.is_finite()) {
            return Err(bad(i, "position", c.pos[i][0], "non-finite"));
        }
        if !c.vel[i].iter().all(|x| x.is_finite()) {
            return Err(bad(i, "velocity", c.vel[i][0], "non-finite"));
        }
        if !(c.mass[i].is_finite() && c.mass[i] > 0.0) {
            return Err(bad(i, "mass", c.mass[i], "must be positive and finite"));
        }
        if !(1..=5).contains(&c.ptype[i]) {
            return Err(bad(i, "type", c.ptype[i] as f64, "must be 1 to 5"));
        }
    }
    Ok(())
}
