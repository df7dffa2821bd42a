//! Initial conditions, G = 1, each a pure function of its parameters and seed (draws from
//! `warpkit_device::rng`, one stream per particle, so rayon's scheduling cannot change them).
//!
//! - [`Plummer`]: positions from the cumulative mass, isotropic velocities from the distribution
//!   function by the rejection method of Aarseth, Hénon & Wielen (1974, A&A 37, 183); under
//!   softening ε > 0, from the distribution function of the same density in the softened
//!   potential (Eddington's formula, computed numerically), so a softened run starts in
//!   equilibrium.
//! - [`Hernquist`]: positions from the cumulative mass, isotropic velocities by rejection from the
//!   exact distribution function (Hernquist 1990, ApJ 356, 359, eq. 17) — an equilibrium, unlike
//!   Gaussian Jeans velocities.
//! - [`DiskGalaxy`], after DICE (Perret et al. 2014) and Hernquist (1993, ApJS 86, 389): NFW or
//!   Hernquist halo, exponential disk with a sech² vertical profile, optional Hernquist bulge.
//!   Spheroid velocities are Gaussian with the isotropic Jeans dispersion in the spherically
//!   averaged total mass (the disk's cylindrical enclosed mass), capped at 0.95 of the escape
//!   speed; disk velocities come from the Jeans equations in the epicyclic approximation:
//!   `σ_z² = πGΣz₀` (isothermal sheet), `σ_R = 3.36 Q GΣ/κ` (constant Toomre Q),
//!   `σ_φ² = σ_R² κ²/4Ω²` and the asymmetric-drift mean rotation
//!   `v̄_φ² = v_c² + σ_R² (1 − κ²/4Ω² + d ln(Σσ_R²)/d ln R)`, with `v_c` of the thin exponential
//!   disk (Freeman 1970) plus the spheroids.
//! - [`Encounter`]: two such galaxies on a Kepler orbit (parabolic by default).
//!
//! Types as in Gadget: halo 1, disk 2, bulge 3; a Plummer or Hernquist sphere is type 1.

use super::{BULGE, DISK, HALO, Particles};
use crate::device::rng;
use rayon::prelude::*;
use std::f64::consts::PI;

/// Invalid generator parameters.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum IcError {
    #[error("{0}")]
    Invalid(String),
}

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), IcError> {
    if ok {
        Ok(())
    } else {
        Err(IcError::Invalid(what()))
    }
}

fn positive(name: &str, x: f64) -> Result<(), IcError> {
    check(x.is_finite() && x > 0.0, || {
        format!("{name} = {x} must be finite and > 0")
    })
}

/// The random draws of one particle: draw `k` is a pure function of (seed, particle, k).
struct Stream {
    key: u64,
    next: u64,
}

impl Stream {
    fn new(seed: u64, particle: u64) -> Self {
        Stream {
            key: rng::draw_u64(seed, particle),
            next: 0,
        }
    }

    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64 {
        self.next += 1;
        rng::uniform_f64(self.key, self.next - 1)
    }

    /// Uniform in (0, 1).
    fn open(&mut self) -> f64 {
        loop {
            let u = self.uniform();
            if u > 0.0 {
                return u;
            }
        }
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.open(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * PI * v).cos()
    }

    /// Uniform on the unit sphere.
    fn direction(&mut self) -> [f64; 3] {
        let z = 2.0 * self.uniform() - 1.0;
        let phi = 2.0 * PI * self.uniform();
        let s = (1.0 - z * z).max(0.0).sqrt();
        [s * phi.cos(), s * phi.sin(), z]
    }
}

/// A per-component seed, so that components of one galaxy draw independent streams.
fn sub_seed(seed: u64, component: u64) -> u64 {
    rng::mix64(seed ^ rng::mix64(component.wrapping_add(0x6e62_6f64)))
}

fn scale3(d: [f64; 3], s: f64) -> [f64; 3] {
    d.map(|c| c * s)
}

/// `n` particles of one type, generated in parallel by `f(stream) -> (pos, vel)`, mass
/// `mass / n` each, ids from 1.
fn sample(
    n: usize,
    mass: f64,
    ptype: u8,
    seed: u64,
    f: impl Fn(&mut Stream) -> ([f64; 3], [f64; 3]) + Sync,
) -> Particles {
    let pv: Vec<([f64; 3], [f64; 3])> = (0..n as u64)
        .into_par_iter()
        .map(|i| f(&mut Stream::new(seed, i)))
        .collect();
    let m = mass / n as f64;
    let mut p = Particles::with_capacity(n);
    for (i, (x, v)) in pv.into_iter().enumerate() {
        p.push(x, v, m, i as u64 + 1, ptype);
    }
    p
}

/// A Plummer sphere in equilibrium: `ρ ∝ (1 + r²/a²)^{-5/2}`, in its own potential softened
/// with Plummer's kernel of length [`Plummer::eps`] (the potential the integrator feels).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plummer {
    pub n: usize,
    pub mass: f64,
    /// Scale length a.
    pub scale: f64,
    /// Radii are drawn from this fraction of the mass (1 would allow unbounded radii).
    pub max_mass_fraction: f64,
    /// The run's Plummer softening ε. 0: velocities from the Plummer distribution function
    /// `f ∝ ℰ^{7/2}` (AHW's rejection); > 0: from the distribution function of the same density
    /// in the softened potential, [`SoftenedPlummer`] (the unsoftened one starts a softened run
    /// out of equilibrium: 2K/|W| = 1.009 at ε = 0.05 in Hénon units, and the inner Lagrangian
    /// radii grow by 3–4% in the first time unit).
    pub eps: f64,
    pub seed: u64,
}

impl Plummer {
    /// Hénon's standard units: M = 1, a = 3π/16, so E = −1/4 and the virial radius is 1;
    /// unsoftened ([`Plummer::softened`] for a softened run).
    pub fn henon(n: usize, seed: u64) -> Self {
        Plummer {
            n,
            mass: 1.0,
            scale: 3.0 * PI / 16.0,
            max_mass_fraction: 0.999,
            eps: 0.0,
            seed,
        }
    }

    /// The same sphere in equilibrium under Plummer softening `eps`.
    pub fn softened(self, eps: f64) -> Self {
        Plummer { eps, ..self }
    }

    /// The radius enclosing fraction `f` of the (untruncated) mass: `a / sqrt(f^{-2/3} − 1)`.
    pub fn radius_of_mass_fraction(&self, f: f64) -> f64 {
        self.scale / (f.powf(-2.0 / 3.0) - 1.0).sqrt()
    }

    pub fn generate(&self) -> Particles {
        self.try_generate().expect("valid Plummer parameters")
    }

    pub fn try_generate(&self) -> Result<Particles, IcError> {
        positive("Plummer mass", self.mass)?;
        positive("Plummer scale", self.scale)?;
        check(self.n > 0, || "Plummer: n must be > 0".into())?;
        check(
            self.max_mass_fraction > 0.0 && self.max_mass_fraction < 1.0,
            || "Plummer: max_mass_fraction must lie in (0, 1)".into(),
        )?;
        check(self.eps.is_finite() && self.eps >= 0.0, || {
            format!("Plummer: eps = {} must be finite and ≥ 0", self.eps)
        })?;
        let (a, gm, cap) = (self.scale, self.mass, self.max_mass_fraction);
        let df = (self.eps > 0.0).then(|| SoftenedPlummer::new(gm, a, self.eps));
        let mut p = sample(self.n, self.mass, HALO, self.seed, |s| {
            let r = a / ((s.open() * cap).powf(-2.0 / 3.0) - 1.0).sqrt();
            let v = match &df {
                Some(df) => df.speed(s, r),
                None => {
                    // q = v/v_esc has density ∝ q²(1 − q²)^{7/2}, below 0.1 on [0, 1] (its
                    // maximum is 0.092 at q² = 2/9): AHW's rejection.
                    let q = loop {
                        let (x, y) = (s.uniform(), s.uniform());
                        if 0.1 * y < x * x * (1.0 - x * x).powf(3.5) {
                            break x;
                        }
                    };
                    let v_esc = (2.0 * gm).sqrt() * (r * r + a * a).powf(-0.25);
                    q * v_esc
                }
            };
            (scale3(s.direction(), r), scale3(s.direction(), v))
        });
        p.to_centre_of_mass_frame();
        Ok(p)
    }
}

/// The isotropic distribution function of a Plummer density (mass M, scale a) in the potential
/// Φ_ε it makes under Plummer softening ε, by Eddington's formula, tabulated.
///
/// Φ_ε is the Newtonian potential of the density convolved with a Plummer sphere of scale ε.
/// It is *not* the Plummer potential of scale `sqrt(a² + ε²)`: at ε = 0.05, a = 3π/16 the centre
/// is 2.2% shallower than `−GM/a` (the kernel's `ε²/r³` tail), that Plummer potential only 0.4%.
/// So Φ_ε and dΦ_ε/dr come from the shell average of the kernel,
/// `⟨(|r − r'|² + ε²)^{-1/2}⟩ = (S₊ − S₋) / 2rr'` with `S± = sqrt((r ± r')² + ε²)`, integrated
/// over the mass `M(r') = M sin³t` at `r' = a tan t` (midpoint rule), on a grid in ln r.
/// With the relative potential Ψ = −Φ_ε and energy ℰ = Ψ − v²/2,
/// `f(ℰ) ∝ d/dℰ ∫₀^ℰ (dρ/dΨ) dΨ / sqrt(ℰ − Ψ)` (dρ/dΨ ∝ Ψ⁴ → 0 at Ψ → 0, so no boundary term),
/// with `dρ/dΨ = ρ'(r)/Ψ'(r)`; the integral is taken in `s = sqrt(ℰ − Ψ)` on a uniform grid in
/// ℰ and differentiated by central differences. Its normalisation is dropped: speeds are drawn
/// by rejection from `q² f(Ψ(1 − q²))`, q = v/v_esc, under the bound `max_{ℰ ≤ Ψ} f`.
/// At ε → 0 it is the Plummer `f ∝ ℰ^{7/2}` (tested).
struct SoftenedPlummer {
    /// Ψ on the grid `ln r = ln(R_MIN a) + i·dln`.
    psi: Vec<f64>,
    ln_r0: f64,
    dln: f64,
    /// f on the grid `ℰ = j·de`, and its running maximum.
    f: Vec<f64>,
    fmax: Vec<f64>,
    de: f64,
}

impl SoftenedPlummer {
    /// The radial grid, in units of a: inside R_MIN lies a mass fraction ~1e-9, outside R_MAX the
    /// potential is Keplerian to 1e-7.
    const R_MIN: f64 = 1e-3;
    const R_MAX: f64 = 1e3;
    const RADII: usize = 481;
    /// Midpoints of the mass integral: the kink of the kernel at r' = r has width ε, and
    /// `dr' = a sec²t dt` is 5e-4 a at r' = a.
    const SHELLS: usize = 4096;
    const ENERGIES: usize = 1024;
    /// Points of the Abel integral in s.
    const ABEL: usize = 512;

    fn new(gm: f64, a: f64, eps: f64) -> Self {
        let e2 = eps * eps;
        let ln_r0 = (Self::R_MIN * a).ln();
        let dln = (Self::R_MAX / Self::R_MIN).ln() / (Self::RADII - 1) as f64;
        let ht = 0.5 * PI / Self::SHELLS as f64;
        // (Ψ, dρ/dΨ) at each grid radius.
        let table: Vec<(f64, f64)> = (0..Self::RADII)
            .into_par_iter()
            .map(|i| {
                let r = (ln_r0 + i as f64 * dln).exp();
                let (mut psi, mut dpsi) = (0.0, 0.0);
                for k in 0..Self::SHELLS {
                    let t = (k as f64 + 0.5) * ht;
                    let (sin, cos) = t.sin_cos();
                    let rp = a * sin / cos;
                    let dm = 3.0 * gm * sin * sin * cos * ht;
                    let sp = ((r + rp).powi(2) + e2).sqrt();
                    let sm = ((r - rp).powi(2) + e2).sqrt();
                    let kernel = (sp - sm) / (2.0 * r * rp);
                    let dm_ratio = if sm > 0.0 { (r - rp) / sm } else { 0.0 };
                    let dkernel = ((r + rp) / sp - dm_ratio) / (2.0 * r * rp) - kernel / r;
                    psi += dm * kernel;
                    dpsi -= dm * dkernel;
                }
                // ρ ∝ (1 + r²/a²)^{-5/2}, ρ' = −5rρ/(a² + r²); Ψ' = −dpsi < 0.
                let rho = (1.0 + r * r / (a * a)).powf(-2.5);
                let drho = -5.0 * r * rho / (a * a + r * r);
                (psi, drho / -dpsi)
            })
            .collect();
        let (psi, drho): (Vec<f64>, Vec<f64>) = table.into_iter().unzip();
        // dρ/dΨ at any Ψ: between grid radii (Ψ falls with r), ∝ Ψ⁴ beyond R_MAX.
        let last = Self::RADII - 1;
        let drho_at = |p: f64| -> f64 {
            if p <= psi[last] {
                return drho[last] * (p / psi[last]).powi(4);
            }
            let i = psi.partition_point(|&x| x > p);
            if i == 0 {
                return drho[0];
            }
            // Linear in ln–ln: exact for the power laws at both ends.
            let w = (psi[i - 1] / p).ln() / (psi[i - 1] / psi[i]).ln();
            (drho[i - 1].ln() + w * (drho[i] / drho[i - 1]).ln()).exp()
        };
        let de = psi[0] / (Self::ENERGIES - 1) as f64;
        // G(ℰ) = ∫₀^ℰ (dρ/dΨ) dΨ / sqrt(ℰ − Ψ) = ∫₀^√ℰ 2 dρ/dΨ(ℰ − s²) ds.
        let g: Vec<f64> = (0..Self::ENERGIES)
            .into_par_iter()
            .map(|j| {
                let e = j as f64 * de;
                let hs = e.sqrt() / Self::ABEL as f64;
                (0..Self::ABEL)
                    .map(|k| {
                        let s = (k as f64 + 0.5) * hs;
                        2.0 * drho_at(e - s * s) * hs
                    })
                    .sum()
            })
            .collect();
        let m = Self::ENERGIES - 1;
        let f: Vec<f64> = (0..=m)
            .map(|j| {
                let d = match j {
                    0 => 0.0,
                    j if j == m => (g[m] - g[m - 1]) / de,
                    j => (g[j + 1] - g[j - 1]) / (2.0 * de),
                };
                d.max(0.0)
            })
            .collect();
        let fmax = f
            .iter()
            .scan(0.0f64, |mx, &x| {
                *mx = mx.max(x);
                Some(*mx)
            })
            .collect();
        SoftenedPlummer {
            psi,
            ln_r0,
            dln,
            f,
            fmax,
            de,
        }
    }

    /// Ψ(r) from the grid in ln r, Ψ(R_MIN a) inside, Keplerian outside.
    fn psi(&self, r: f64) -> f64 {
        let x = (r.ln() - self.ln_r0) / self.dln;
        let last = self.psi.len() - 1;
        if x <= 0.0 {
            return self.psi[0];
        }
        if x >= last as f64 {
            let r_last = (self.ln_r0 + last as f64 * self.dln).exp();
            return self.psi[last] * r_last / r;
        }
        // Linear in ln Ψ: exact for the Keplerian tail.
        let i = x as usize;
        let w = x - i as f64;
        self.psi[i] * (self.psi[i + 1] / self.psi[i]).powf(w)
    }

    /// f(ℰ), linear on the grid.
    fn f(&self, e: f64) -> f64 {
        let x = (e / self.de).max(0.0);
        let i = (x as usize).min(self.f.len() - 2);
        let w = (x - i as f64).min(1.0);
        self.f[i] + w * (self.f[i + 1] - self.f[i])
    }

    /// A speed at radius r, by rejection from `q² f(Ψ(1 − q²))`.
    fn speed(&self, s: &mut Stream, r: f64) -> f64 {
        let psi = self.psi(r);
        let j = ((psi / self.de).ceil() as usize).min(self.fmax.len() - 1);
        let bound = self.fmax[j];
        if bound <= 0.0 {
            // Ψ below the first energy bin (r ≳ 10³ a): f is 0 to the table's accuracy.
            return 0.0;
        }
        let q = loop {
            let (x, y) = (s.uniform(), s.uniform());
            if y * bound < x * x * self.f(psi * (1.0 - x * x)) {
                break x;
            }
        };
        q * (2.0 * psi).sqrt()
    }
}

/// The Hernquist profile, `ρ = M a / (2π r (r + a)³)`, `M(r) = M r²/(r + a)²`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hernquist {
    pub n: usize,
    pub mass: f64,
    pub scale: f64,
    pub max_mass_fraction: f64,
    pub seed: u64,
}

/// Hernquist's isotropic distribution function up to its constant factor, in
/// `q = sqrt(a·E/GM)` for binding energy E per unit mass (eq. 17 of Hernquist 1990).
fn hernquist_df(q: f64) -> f64 {
    let q2 = q * q;
    let c = 1.0 - q2;
    let bracket =
        3.0 * q.asin() + q * c.sqrt() * (1.0 - 2.0 * q2) * (8.0 * q2 * q2 - 8.0 * q2 - 3.0);
    (bracket / c.powf(2.5)).max(0.0)
}

impl Hernquist {
    pub fn new(n: usize, mass: f64, scale: f64, seed: u64) -> Self {
        Hernquist {
            n,
            mass,
            scale,
            max_mass_fraction: 0.99,
            seed,
        }
    }

    /// `a·sqrt(f) / (1 − sqrt(f))`; the half-mass radius is `(1 + √2) a`.
    pub fn radius_of_mass_fraction(&self, f: f64) -> f64 {
        self.scale * f.sqrt() / (1.0 - f.sqrt())
    }

    pub fn generate(&self) -> Particles {
        self.try_generate().expect("valid Hernquist parameters")
    }

    pub fn try_generate(&self) -> Result<Particles, IcError> {
        positive("Hernquist mass", self.mass)?;
        positive("Hernquist scale", self.scale)?;
        check(self.n > 0, || "Hernquist: n must be > 0".into())?;
        check(
            self.max_mass_fraction > 0.0 && self.max_mass_fraction < 1.0,
            || "Hernquist: max_mass_fraction must lie in (0, 1)".into(),
        )?;
        let (a, gm, cap) = (self.scale, self.mass, self.max_mass_fraction);
        let mut p = sample(self.n, self.mass, HALO, self.seed, |s| {
            let r = self.radius_of_mass_fraction(s.open() * cap);
            // Speed as s = v/v_esc: density ∝ s² f(E), E = ψ(1 − s²), ψ = GM/(r + a).
            let q2_max = a / (r + a);
            let density = |x: f64| x * x * hernquist_df((q2_max * (1.0 - x * x)).sqrt());
            // The density is smooth and single-peaked: a fine grid's maximum with a margin
            // bounds it.
            const GRID: usize = 128;
            let peak = (1..GRID)
                .map(|k| density(k as f64 / GRID as f64))
                .fold(0.0, f64::max);
            let bound = 1.1 * peak;
            let x = loop {
                let (x, y) = (s.uniform(), s.uniform());
                if y * bound < density(x) {
                    break x;
                }
            };
            let v_esc = (2.0 * gm / (r + a)).sqrt();
            (scale3(s.direction(), r), scale3(s.direction(), x * v_esc))
        });
        p.to_centre_of_mass_frame();
        Ok(p)
    }
}

/// The dark-matter halo of a [`DiskGalaxy`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Halo {
    /// Hernquist profile of total mass `mass`, sampled out to `max_mass_fraction` of it.
    Hernquist {
        mass: f64,
        scale: f64,
        max_mass_fraction: f64,
    },
    /// NFW profile truncated at r₂₀₀: mass `m200` inside `r200`, scale radius `r200 / c`.
    Nfw {
        m200: f64,
        r200: f64,
        concentration: f64,
    },
}

/// The bulge of a [`DiskGalaxy`]: a Hernquist sphere of profile mass `mass`, sampled inside 0.99
/// of it (as the halo's `max_mass_fraction`: the particles carry 0.99 `mass`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bulge {
    pub n: usize,
    pub mass: f64,
    pub scale: f64,
}

/// A disk galaxy in the spirit of DICE (see the module docs for the velocity model).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiskGalaxy {
    pub halo: Halo,
    pub n_halo: usize,
    pub disk_mass: f64,
    /// Exponential scale length h: `Σ ∝ e^{−R/h}`.
    pub disk_scale_length: f64,
    /// Vertical scale z₀: `ρ ∝ sech²(z/z₀)`.
    pub disk_scale_height: f64,
    /// The disk is sampled inside this many scale lengths.
    pub disk_cutoff: f64,
    pub n_disk: usize,
    pub bulge: Option<Bulge>,
    /// Toomre's Q, the same at every radius.
    pub toomre_q: f64,
    pub seed: u64,
}

impl Default for DiskGalaxy {
    /// A Milky-Way-like galaxy in units of the disk: M_disk = 1, h = 1 (≈ 5·10^10 M☉ and 3.5 kpc,
    /// so the unit of velocity is ≈ 250 km/s and of time ≈ 14 Myr), a Hernquist halo of 20 disk
    /// masses and scale 10 (the Hernquist match `a = r_s·sqrt(2[ln(1+c) − c/(1+c)])` of Springel,
    /// Di Matteo & Hernquist 2005 to an NFW halo of r_s ≈ 20 kpc, c = 10), no bulge, Q = 1.5.
    fn default() -> Self {
        DiskGalaxy {
            halo: Halo::Hernquist {
                mass: 20.0,
                scale: 10.0,
                max_mass_fraction: 0.98,
            },
            n_halo: 16384,
            disk_mass: 1.0,
            disk_scale_length: 1.0,
            disk_scale_height: 0.1,
            disk_cutoff: 10.0,
            n_disk: 8192,
            bulge: None,
            toomre_q: 1.5,
            seed: 1,
        }
    }
}

/// A spherical mass profile (the halo and bulge of [`DiskGalaxy`]).
#[derive(Clone, Copy, Debug)]
enum Sphere {
    Hernquist { mass: f64, a: f64 },
    Nfw { rho0: f64, rs: f64, rmax: f64 },
}

fn nfw_m(x: f64) -> f64 {
    (1.0 + x).ln() - x / (1.0 + x)
}

impl Sphere {
    fn enclosed(&self, r: f64) -> f64 {
        match *self {
            Sphere::Hernquist { mass, a } => mass * r * r / ((r + a) * (r + a)),
            Sphere::Nfw { rho0, rs, rmax } => {
                4.0 * PI * rho0 * rs.powi(3) * nfw_m(r.min(rmax) / rs)
            }
        }
    }

    fn density(&self, r: f64) -> f64 {
        match *self {
            Sphere::Hernquist { mass, a } => mass * a / (2.0 * PI * r * (r + a).powi(3)),
            Sphere::Nfw { rho0, rs, rmax } => {
                let x = r / rs;
                if r > rmax {
                    0.0
                } else {
                    rho0 / (x * (1.0 + x) * (1.0 + x))
                }
            }
        }
    }

    /// The radius enclosing mass fraction `f` of [`Sphere::enclosed`]`(rmax)`.
    fn radius(&self, f: f64, rmax: f64) -> f64 {
        match *self {
            Sphere::Hernquist { a, .. } => {
                let g = (f * rmax * rmax / ((rmax + a) * (rmax + a))).sqrt();
                a * g / (1.0 - g)
            }
            Sphere::Nfw { rs, .. } => {
                // Bisection on the monotone m(x): 60 halvings reach rounding.
                let target = f * nfw_m(rmax / rs);
                let (mut lo, mut hi) = (0.0, rmax / rs);
                for _ in 0..60 {
                    let mid = 0.5 * (lo + hi);
                    if nfw_m(mid) < target {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                rs * 0.5 * (lo + hi)
            }
        }
    }
}

/// Modified Bessel functions scaled to stay finite: `e^{−x} I₀`, `e^{−x} I₁`, `e^{x} K₀`,
/// `e^{x} K₁` (Abramowitz & Stegun 9.8.1–9.8.8, relative error ≲ 2·10⁻⁷).
fn bessel_scaled(x: f64) -> [f64; 4] {
    let poly = |t: f64, c: &[f64]| c.iter().rev().fold(0.0, |acc, &k| acc * t + k);
    let (i0, i1) = if x <= 3.75 {
        let t = (x / 3.75).powi(2);
        let i0 = poly(
            t,
            &[
                1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813,
            ],
        );
        let i1 = x * poly(
            t,
            &[
                0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411,
            ],
        );
        (i0 * (-x).exp(), i1 * (-x).exp())
    } else {
        let t = 3.75 / x;
        let s = x.sqrt();
        let i0 = poly(
            t,
            &[
                0.39894228,
                0.01328592,
                0.00225319,
                -0.00157565,
                0.00916281,
                -0.02057706,
                0.02635537,
                -0.01647633,
                0.00392377,
            ],
        );
        let i1 = poly(
            t,
            &[
                0.39894228,
                -0.03988024,
                -0.00362018,
                0.00163801,
                -0.01031555,
                0.02282967,
                -0.02895312,
                0.01787654,
                -0.00420059,
            ],
        );
        (i0 / s, i1 / s)
    };
    let (k0, k1) = if x <= 2.0 {
        let t = (x / 2.0).powi(2);
        let l = (x / 2.0).ln();
        let (ui0, ui1) = (i0 * x.exp(), i1 * x.exp());
        let k0 = -l * ui0
            + poly(
                t,
                &[
                    -0.57721566,
                    0.42278420,
                    0.23069756,
                    0.03488590,
                    0.00262698,
                    0.00010750,
                    0.0000074,
                ],
            );
        let k1 = l * ui1
            + poly(
                t,
                &[
                    1.0,
                    0.15443144,
                    -0.67278579,
                    -0.18156897,
                    -0.01919402,
                    -0.00110404,
                    -0.00004686,
                ],
            ) / x;
        (k0 * x.exp(), k1 * x.exp())
    } else {
        let t = 2.0 / x;
        let s = x.sqrt();
        let k0 = poly(
            t,
            &[
                1.25331414,
                -0.07832358,
                0.02189568,
                -0.01062446,
                0.00587872,
                -0.00251540,
                0.00053208,
            ],
        );
        let k1 = poly(
            t,
            &[
                1.25331414,
                0.23498619,
                -0.03655620,
                0.01504268,
                -0.00780353,
                0.00325614,
                -0.00068245,
            ],
        );
        (k0 / s, k1 / s)
    };
    [i0, i1, k0, k1]
}

/// Tabulated isotropic Jeans dispersion and potential of a spherical component, on a grid
/// uniform in ln r.
struct JeansTable {
    ln_r0: f64,
    d_ln_r: f64,
    sigma2: Vec<f64>,
    phi: Vec<f64>,
}

impl JeansTable {
    const POINTS: usize = 2048;

    /// `σ_r²(r) = (1/ρ) ∫_r^{r_top} ρ G M(r')/r'² dr'`, `Φ(r) = −∫_r^{r_top} G M/r'² dr' − G M(r_top)/r_top`.
    fn new(
        density: impl Fn(f64) -> f64,
        enclosed: impl Fn(f64) -> f64,
        r_lo: f64,
        r_top: f64,
    ) -> Self {
        let n = Self::POINTS;
        let (ln_r0, ln_top) = (r_lo.ln(), r_top.ln());
        let d = (ln_top - ln_r0) / (n - 1) as f64;
        let r: Vec<f64> = (0..n).map(|k| (ln_r0 + d * k as f64).exp()).collect();
        // Integrands in d ln r.
        let g_p: Vec<f64> = r.iter().map(|&x| density(x) * enclosed(x) / x).collect();
        let g_phi: Vec<f64> = r.iter().map(|&x| enclosed(x) / x).collect();
        let mut pressure = vec![0.0; n];
        let mut phi = vec![-enclosed(r_top) / r_top; n];
        for k in (0..n - 1).rev() {
            pressure[k] = pressure[k + 1] + 0.5 * d * (g_p[k] + g_p[k + 1]);
            phi[k] = phi[k + 1] - 0.5 * d * (g_phi[k] + g_phi[k + 1]);
        }
        let sigma2 = (0..n)
            .map(|k| {
                let rho = density(r[k]);
                if rho > 0.0 { pressure[k] / rho } else { 0.0 }
            })
            .collect();
        JeansTable {
            ln_r0,
            d_ln_r: d,
            sigma2,
            phi,
        }
    }

    fn at(&self, v: &[f64], r: f64) -> f64 {
        let t = ((r.ln() - self.ln_r0) / self.d_ln_r).clamp(0.0, (v.len() - 1) as f64);
        let k = (t as usize).min(v.len() - 2);
        let f = t - k as f64;
        v[k] * (1.0 - f) + v[k + 1] * f
    }

    fn sigma2(&self, r: f64) -> f64 {
        self.at(&self.sigma2, r)
    }

    fn phi(&self, r: f64) -> f64 {
        self.at(&self.phi, r)
    }
}

/// The galaxy's mass model: what its velocity fields are computed from.
struct Model {
    halo: Sphere,
    halo_rmax: f64,
    bulge: Option<(Sphere, f64)>,
    md: f64,
    h: f64,
}

impl Model {
    fn new(g: &DiskGalaxy) -> Self {
        let (halo, halo_rmax) = match g.halo {
            Halo::Hernquist {
                mass,
                scale,
                max_mass_fraction: f,
            } => (
                Sphere::Hernquist { mass, a: scale },
                scale * f.sqrt() / (1.0 - f.sqrt()),
            ),
            Halo::Nfw {
                m200,
                r200,
                concentration: c,
            } => {
                let rs = r200 / c;
                let rho0 = m200 / (4.0 * PI * rs.powi(3) * nfw_m(c));
                (
                    Sphere::Nfw {
                        rho0,
                        rs,
                        rmax: r200,
                    },
                    r200,
                )
            }
        };
        let bulge = g.bulge.map(|b| {
            let a = b.scale;
            // The bulge is sampled inside 0.99 of its mass.
            let f: f64 = 0.99;
            (
                Sphere::Hernquist { mass: b.mass, a },
                a * f.sqrt() / (1.0 - f.sqrt()),
            )
        });
        Model {
            halo,
            halo_rmax,
            bulge,
            md: g.disk_mass,
            h: g.disk_scale_length,
        }
    }

    fn spheroid_enclosed(&self, r: f64) -> f64 {
        self.halo.enclosed(r) + self.bulge.map_or(0.0, |(b, _)| b.enclosed(r))
    }

    /// The total mass within r, the disk's counted as its mass within cylindrical radius r.
    fn enclosed(&self, r: f64) -> f64 {
        let x = r / self.h;
        self.spheroid_enclosed(r) + self.md * (1.0 - (1.0 + x) * (-x).exp())
    }

    fn surface_density(&self, r: f64) -> f64 {
        self.md / (2.0 * PI * self.h * self.h) * (-r / self.h).exp()
    }

    /// Circular speed² in the midplane: spheroids plus the razor-thin exponential disk,
    /// `4πGΣ₀h y² [I₀K₀ − I₁K₁](y)`, y = R/2h.
    fn vc2(&self, r: f64) -> f64 {
        let y = r / (2.0 * self.h);
        let [i0, i1, k0, k1] = bessel_scaled(y);
        let disk = 4.0 * PI * self.surface_density(0.0) * self.h * y * y * (i0 * k0 - i1 * k1);
        self.spheroid_enclosed(r) / r + disk
    }

    /// Ω² and κ² = R dΩ²/dR + 4Ω² (central difference in ln R).
    fn omega2_kappa2(&self, r: f64) -> (f64, f64) {
        let e = 1e-4;
        let om2 = |x: f64| self.vc2(x) / (x * x);
        let (lo, hi) = (r * (1.0 - e), r * (1.0 + e));
        let dom2 = (om2(hi) - om2(lo)) / (hi - lo);
        let o = om2(r);
        (o, r * dom2 + 4.0 * o)
    }

    fn sigma_r(&self, r: f64, q: f64) -> f64 {
        let (_, k2) = self.omega2_kappa2(r);
        3.36 * q * self.surface_density(r) / k2.sqrt()
    }
}

impl DiskGalaxy {
    fn validate(&self) -> Result<(), IcError> {
        match self.halo {
            Halo::Hernquist {
                mass,
                scale,
                max_mass_fraction: f,
            } => {
                positive("halo mass", mass)?;
                positive("halo scale", scale)?;
                check(f > 0.0 && f < 1.0, || {
                    format!("halo max_mass_fraction = {f} must lie in (0, 1)")
                })?;
            }
            Halo::Nfw {
                m200,
                r200,
                concentration,
            } => {
                positive("halo m200", m200)?;
                positive("halo r200", r200)?;
                positive("halo concentration", concentration)?;
            }
        }
        positive("disk mass", self.disk_mass)?;
        positive("disk scale length", self.disk_scale_length)?;
        positive("disk scale height", self.disk_scale_height)?;
        positive("disk cutoff", self.disk_cutoff)?;
        positive("Toomre Q", self.toomre_q)?;
        check(self.n_disk > 0, || "the disk needs particles".into())?;
        if let Some(b) = self.bulge {
            positive("bulge mass", b.mass)?;
            positive("bulge scale", b.scale)?;
            check(b.n > 0, || "the bulge needs particles".into())?;
        }
        Ok(())
    }

    /// The mass of the particles: halo and bulge within their truncation, the whole disk.
    pub fn total_mass(&self) -> f64 {
        let m = Model::new(self);
        m.halo.enclosed(m.halo_rmax)
            + self.disk_mass
            + m.bulge.map_or(0.0, |(b, rmax)| b.enclosed(rmax))
    }

    /// Circular speed in the midplane at radius `r` of the model.
    pub fn circular_speed(&self, r: f64) -> f64 {
        Model::new(self).vc2(r).sqrt()
    }

    /// Epicyclic frequency κ at radius `r` of the model.
    pub fn kappa(&self, r: f64) -> f64 {
        Model::new(self).omega2_kappa2(r).1.sqrt()
    }

    pub fn generate(&self) -> Particles {
        self.try_generate().expect("valid disk galaxy parameters")
    }

    /// Halo, then disk, then bulge (Gadget's type order), ids from 1, in the centre-of-mass
    /// frame with the disk's spin along +z.
    pub fn try_generate(&self) -> Result<Particles, IcError> {
        self.validate()?;
        let model = Model::new(self);
        let r_lo = 1e-4 * self.disk_scale_length.min(self.disk_scale_height);
        let enclosed = |r: f64| model.enclosed(r);
        let mut out = Particles::default();

        // Spheroids: Jeans dispersion in the total spherical mass, capped below escape.
        let mut spheroids = vec![(model.halo, model.halo_rmax, self.n_halo, HALO)];
        if let (Some((b, rmax)), Some(bp)) = (model.bulge, self.bulge) {
            spheroids.push((b, rmax, bp.n, BULGE));
        }
        for (c, (sphere, rmax, n, ptype)) in spheroids.into_iter().enumerate() {
            if n == 0 {
                continue;
            }
            // An untruncated Hernquist tail still exerts pressure; the NFW ends at r₂₀₀.
            let top = match sphere {
                Sphere::Hernquist { a, .. } => 1e3 * a.max(rmax),
                Sphere::Nfw { rmax, .. } => rmax,
            };
            let table = JeansTable::new(|r| sphere.density(r), enclosed, r_lo, top);
            let mass = sphere.enclosed(rmax);
            let part = sample(n, mass, ptype, sub_seed(self.seed, c as u64), |s| {
                let r = sphere.radius(s.open(), rmax);
                let sigma = table.sigma2(r).sqrt();
                let v_max = 0.95 * (-2.0 * table.phi(r)).sqrt();
                let v = loop {
                    let v = [s.normal(), s.normal(), s.normal()].map(|x| x * sigma);
                    if v.iter().map(|x| x * x).sum::<f64>() < v_max * v_max {
                        break v;
                    }
                };
                (scale3(s.direction(), r), v)
            });
            // Each component centred on its own: the sampling noise of a wide halo's centre of
            // mass would otherwise displace the disk from the potential's centre.
            let mut part = part;
            part.to_centre_of_mass_frame();
            out.append(&part);
        }

        // The disk.
        let (h, z0, q) = (
            self.disk_scale_length,
            self.disk_scale_height,
            self.toomre_q,
        );
        let rcut = self.disk_cutoff * h;
        let mcut = 1.0 - (1.0 + self.disk_cutoff) * (-self.disk_cutoff).exp();
        let disk = sample(
            self.n_disk,
            self.disk_mass,
            DISK,
            sub_seed(self.seed, 7),
            |s| {
                // Invert M(<R)/M = 1 − (1 + x)e^{−x} by bisection.
                let target = s.open() * mcut;
                let (mut lo, mut hi) = (0.0, self.disk_cutoff);
                for _ in 0..60 {
                    let mid = 0.5 * (lo + hi);
                    if 1.0 - (1.0 + mid) * (-mid).exp() < target {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                let r = (0.5 * (lo + hi) * h).min(rcut);
                // sech²: the cumulative is (1 + tanh(z/z₀))/2.
                let z = z0 * (2.0 * s.open() - 1.0).atanh();
                let phi = 2.0 * PI * s.uniform();
                let sigma_z = (PI * model.surface_density(r) * z0).sqrt();
                let sigma_r = model.sigma_r(r, q);
                let (om2, k2) = model.omega2_kappa2(r);
                let sigma_phi = sigma_r * (k2 / (4.0 * om2)).sqrt();
                // d ln(Σσ_R²)/d ln R, numerically (σ_R depends on κ).
                let e = 1e-4;
                let ln_p = |x: f64| (model.surface_density(x) * model.sigma_r(x, q).powi(2)).ln();
                let dlnp = (ln_p(r * (1.0 + e)) - ln_p(r * (1.0 - e))) / (2.0 * e);
                let mean2 = model.vc2(r) + sigma_r * sigma_r * (1.0 - k2 / (4.0 * om2) + dlnp);
                let v_phi = mean2.max(0.0).sqrt() + sigma_phi * s.normal();
                let v_r = sigma_r * s.normal();
                let v_z = sigma_z * s.normal();
                let (c, sn) = (phi.cos(), phi.sin());
                (
                    [r * c, r * sn, z],
                    [v_r * c - v_phi * sn, v_r * sn + v_phi * c, v_z],
                )
            },
        );
        let mut disk = disk;
        disk.to_centre_of_mass_frame();
        out.append(&disk);
        out.sort_by_type();
        for (k, id) in out.id.iter_mut().enumerate() {
            *id = k as u64 + 1;
        }
        Ok(out)
    }

    /// The same galaxy scaled to `q` times the mass: masses and particle counts × q, lengths
    /// × q^{1/3} (equal mean density, as r₂₀₀ ∝ M^{1/3}), another seed.
    pub fn scaled(&self, q: f64, seed: u64) -> DiskGalaxy {
        let l = q.cbrt();
        let n = |k: usize| ((k as f64 * q).round() as usize).max(1);
        let halo = match self.halo {
            Halo::Hernquist {
                mass,
                scale,
                max_mass_fraction,
            } => Halo::Hernquist {
                mass: mass * q,
                scale: scale * l,
                max_mass_fraction,
            },
            Halo::Nfw {
                m200,
                r200,
                concentration,
            } => Halo::Nfw {
                m200: m200 * q,
                r200: r200 * l,
                concentration,
            },
        };
        DiskGalaxy {
            halo,
            n_halo: if self.n_halo == 0 { 0 } else { n(self.n_halo) },
            disk_mass: self.disk_mass * q,
            disk_scale_length: self.disk_scale_length * l,
            disk_scale_height: self.disk_scale_height * l,
            n_disk: n(self.n_disk),
            bulge: self.bulge.map(|b| Bulge {
                n: n(b.n),
                mass: b.mass * q,
                scale: b.scale * l,
            }),
            seed,
            ..*self
        }
    }
}

/// Relative position and velocity of two point masses of total mass `m` on a Kepler orbit of
/// pericentre `rp` and eccentricity `e`, at separation `r` before pericentre, in the xy plane
/// (pericentre on +x, motion anticlockwise about +z).
pub fn kepler_orbit(m: f64, rp: f64, e: f64, r: f64) -> Result<([f64; 3], [f64; 3]), IcError> {
    positive("total mass", m)?;
    positive("pericentre", rp)?;
    check(e.is_finite() && e >= 0.0, || {
        format!("eccentricity {e} must be ≥ 0")
    })?;
    let p = rp * (1.0 + e);
    let theta = if e == 0.0 {
        check((r - rp).abs() <= 1e-12 * rp, || {
            format!("a circular orbit has separation {rp}, not {r}")
        })?;
        0.0
    } else {
        let c = (p / r - 1.0) / e;
        check(r >= rp && c >= -1.0, || {
            format!("separation {r} is not on the orbit (pericentre {rp}, eccentricity {e})")
        })?;
        -c.clamp(-1.0, 1.0).acos()
    };
    let (c, s) = (theta.cos(), theta.sin());
    let k = (m / p).sqrt();
    let (vr, vt) = (k * e * s, k * (1.0 + e * c));
    Ok(([r * c, r * s, 0.0], [vr * c - vt * s, vr * s + vt * c, 0.0]))
}

/// Rotation about x by `i`, then about z by `w` (radians): a disk with spin +z ends with spin
/// inclined by i to the orbital plane's normal, its line of nodes turned by w.
pub fn rotation(i: f64, w: f64) -> [[f64; 3]; 3] {
    let (ci, si, cw, sw) = (i.cos(), i.sin(), w.cos(), w.sin());
    // Rz(w)·Rx(i).
    [
        [cw, -sw * ci, sw * si],
        [sw, cw * ci, -cw * si],
        [0.0, si, ci],
    ]
}

/// Two disk galaxies on a Kepler orbit in the xy plane (parabolic by default), the primary and
/// its copy scaled by `mass_ratio`, each disk turned by its inclination and argument. The pair's
/// centre of mass is at rest at the origin. Ids: the primary's first (1..=N₁), then the
/// secondary's (N₁+1..), the set ordered by type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Encounter {
    pub primary: DiskGalaxy,
    /// Secondary mass / primary mass.
    pub mass_ratio: f64,
    pub pericentre: f64,
    /// 1: parabolic; < 1 bound; > 1 hyperbolic.
    pub eccentricity: f64,
    /// Initial centre-to-centre distance (≥ the pericentre).
    pub separation: f64,
    /// Disk inclinations to the orbital plane, degrees (0: prograde in the plane).
    pub inclination_deg: [f64; 2],
    /// Arguments of the disks' lines of nodes, degrees.
    pub argument_deg: [f64; 2],
    pub seed: u64,
}

impl Default for Encounter {
    /// Two equal default galaxies on a parabolic orbit, pericentre 8 disk scale lengths, starting
    /// 40 apart, one disk prograde, the other inclined by 60°.
    fn default() -> Self {
        Encounter {
            primary: DiskGalaxy::default(),
            mass_ratio: 1.0,
            pericentre: 8.0,
            eccentricity: 1.0,
            separation: 40.0,
            inclination_deg: [0.0, 60.0],
            argument_deg: [0.0, 30.0],
            seed: 1,
        }
    }
}

impl Encounter {
    pub fn secondary(&self) -> DiskGalaxy {
        self.primary
            .scaled(self.mass_ratio, sub_seed(self.seed, 11))
    }

    pub fn generate(&self) -> Particles {
        self.try_generate().expect("valid encounter parameters")
    }

    pub fn try_generate(&self) -> Result<Particles, IcError> {
        positive("mass ratio", self.mass_ratio)?;
        let first = DiskGalaxy {
            seed: sub_seed(self.seed, 10),
            ..self.primary
        };
        let second = self.secondary();
        let mut g = [first.try_generate()?, second.try_generate()?];
        let m = [g[0].total_mass(), g[1].total_mass()];
        let (x, v) = kepler_orbit(
            m[0] + m[1],
            self.pericentre,
            self.eccentricity,
            self.separation,
        )?;
        let offset = g[0].len() as u64;
        for (k, gal) in g.iter_mut().enumerate() {
            let deg = PI / 180.0;
            gal.rotate(rotation(
                self.inclination_deg[k] * deg,
                self.argument_deg[k] * deg,
            ));
            // Galaxy 1 at −m₂/M of the relative vector, galaxy 2 at +m₁/M.
            let f = if k == 0 { -m[1] } else { m[0] } / (m[0] + m[1]);
            gal.shift(scale3(x, f), scale3(v, f));
            if k == 1 {
                gal.id.iter_mut().for_each(|id| *id += offset);
            }
        }
        let [mut a, b] = g;
        a.append(&b);
        a.sort_by_type();
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::super::cpu;
    use super::*;

    fn radii(p: &Particles, t: Option<u8>) -> Vec<f64> {
        let mut r: Vec<f64> = (0..p.len())
            .filter(|&i| t.is_none_or(|t| p.ptype[i] == t))
            .map(|i| p.pos[i].iter().map(|x| x * x).sum::<f64>().sqrt())
            .collect();
        r.sort_by(f64::total_cmp);
        r
    }

    #[test]
    fn plummer_is_in_virial_equilibrium_with_the_analytic_half_mass_radius() {
        let pl = Plummer::henon(8192, 11);
        let p = pl.generate();
        assert_eq!(p.len(), 8192);
        let (k, w) = cpu::energies(&p, 0.0);
        let q = 2.0 * k / w.abs();
        eprintln!("Plummer N = 8192: 2K/|W| = {q:.4}, E = {:.4}", k + w);
        assert!((q - 1.0).abs() < 0.03, "virial ratio {q}");
        // Hénon units: E = −1/4.
        assert!(((k + w) / -0.25 - 1.0).abs() < 0.03, "E = {}", k + w);
        let r = radii(&p, None);
        let half = r[r.len() / 2];
        let want = pl.radius_of_mass_fraction(0.5 * pl.max_mass_fraction);
        assert!((want / pl.scale - 1.305).abs() < 2e-3);
        assert!((half / want - 1.0).abs() < 0.03, "r_half {half} vs {want}");
        // Every particle is bound: below the local escape speed.
        for i in 0..p.len() {
            let r2: f64 = p.pos[i].iter().map(|x| x * x).sum();
            let v2: f64 = p.vel[i].iter().map(|x| x * x).sum();
            assert!(v2 < 2.0 / (r2 + pl.scale * pl.scale).sqrt() * 1.05);
        }
    }

    #[test]
    fn softened_plummer_distribution_function_tends_to_plummers_at_eps_0() {
        // ε → 0: Ψ = GM/sqrt(r² + a²) and f ∝ ℰ^{7/2}. (ε = 1e-3 rather than less: the
        // kernel's kink at r' = r, unresolved by the mass integral, adds noise to Ψ' near the
        // centre as ε → 0.)
        let a = 3.0 * PI / 16.0;
        let df = SoftenedPlummer::new(1.0, a, 1e-3);
        for r in [0.01, 0.3, 1.0, 5.0, 100.0] {
            let want = 1.0 / (r * r + a * a).sqrt();
            assert!((df.psi(r) / want - 1.0).abs() < 1e-4, "Ψ({r})");
        }
        let e0 = 0.5 * df.psi(0.0);
        let c = df.f(e0) / e0.powf(3.5);
        for x in [0.05, 0.2, 0.4, 0.6, 0.8, 0.95] {
            let e = x * df.psi(0.0);
            let ratio = df.f(e) / e.powf(3.5) / c;
            assert!((ratio - 1.0).abs() < 2e-3, "f({x} Ψ₀) / ℰ^3.5: {ratio}");
        }
        // ε = 0.05: the centre is 2.2% shallower than GM/a (not GM/sqrt(a² + ε²)).
        let soft = SoftenedPlummer::new(1.0, a, 0.05);
        let centre = soft.psi(1e-4) * a;
        assert!((centre - 0.978).abs() < 1e-3, "Ψ_ε(0) a / GM = {centre}");
        // Far out the potential is Keplerian.
        assert!((soft.psi(20.0) * 20.0 - 1.0).abs() < 1e-3);
    }

    /// 2K/|W| with the softened potential, and the largest relative change of the 25/50/75%
    /// Lagrangian radii over `t_end` (float64 direct summation, leapfrog at dt = 0.01).
    fn softened_run(pl: Plummer, eps: f64, t_end: f64) -> (f64, f64) {
        let p = pl.generate();
        let (k, w) = cpu::energies(&p, eps);
        let f = [0.25, 0.5, 0.75];
        let r0 = cpu::lagrangian_radii(&p, &f);
        let mut sim = cpu::Simulation::new(p, eps, 0.01).unwrap();
        let mut worst: f64 = 0.0;
        for _ in 0..(t_end / 0.25).round() as u64 {
            sim.run(25).unwrap();
            let r = cpu::lagrangian_radii(&sim.particles, &f);
            for (x, x0) in r.iter().zip(&r0) {
                worst = worst.max((x / x0 - 1.0).abs());
            }
        }
        (2.0 * k / w.abs(), worst)
    }

    /// 2K over the Clausius virial `−Σ m x·a` and over |W|, both with softening `eps`: in
    /// equilibrium under softening it is the first that is 1 (`|Σ m x·a| < |W|`).
    fn virial_ratios(p: &Particles, eps: f64) -> (f64, f64) {
        let mut acc = vec![[0.0; 3]; p.len()];
        let mut pot = vec![0.0; p.len()];
        cpu::direct_sum(&p.pos, &p.mass, eps, &mut acc, &mut pot);
        let (c, _) = p.centre_of_mass();
        let virial: f64 = (0..p.len())
            .map(|i| {
                p.mass[i]
                    * (0..3)
                        .map(|k| (p.pos[i][k] - c[k]) * acc[i][k])
                        .sum::<f64>()
            })
            .sum();
        let (k, w) = cpu::energies(p, eps);
        (2.0 * k / virial.abs(), 2.0 * k / w.abs())
    }

    #[test]
    fn softened_plummer_is_in_virial_equilibrium_in_the_softened_potential() {
        // Mean over 4 seeds of 8192 (one seed scatters by ~0.7%). The unsoftened distribution
        // function gives 2K/|Σ m x·a| = 1.025 at ε = 0.05 (8 seeds: 1.0249; 2K/|W| = 1.0099);
        // the softened one 0.997 (2K/|W| = 0.982, the equilibrium value under softening).
        let mean = |eps: f64| {
            (1..=4)
                .map(|seed| {
                    let p = Plummer::henon(8192, seed).softened(eps).generate();
                    virial_ratios(&p, 0.05)
                })
                .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / 4.0, b + y / 4.0))
        };
        let (soft, soft_w) = mean(0.05);
        let (hard, hard_w) = mean(0.0);
        eprintln!(
            "ε = 0.05: 2K/|Σ m x·a| = {soft:.4} (2K/|W| = {soft_w:.4}); unsoftened f: {hard:.4} \
             ({hard_w:.4})"
        );
        assert!((soft - 1.0).abs() < 0.01, "softened: 2K/|Σ m x·a| = {soft}");
        assert!(hard - 1.0 > 0.015, "unsoftened: 2K/|Σ m x·a| = {hard}");
    }

    #[test]
    #[ignore = "measurement (minutes): cargo test --release softened_plummer_radii -- --ignored"]
    fn softened_plummer_radii_measure() {
        for seed in 1..=4 {
            for eps in [0.0, 0.05] {
                let pl = Plummer::henon(4096, seed).softened(eps);
                let (q, dr) = softened_run(pl, 0.05, 3.0);
                eprintln!("seed {seed}, IC eps {eps}: 2K/|W|_eps = {q:.4}, max |Δr/r| = {dr:.4}");
            }
        }
    }

    #[test]
    fn hernquist_is_in_virial_equilibrium_with_the_analytic_half_mass_radius() {
        let h = Hernquist::new(8192, 1.0, 1.0, 4);
        let p = h.generate();
        let (k, w) = cpu::energies(&p, 0.0);
        let q = 2.0 * k / w.abs();
        eprintln!("Hernquist N = 8192: 2K/|W| = {q:.4}");
        assert!((q - 1.0).abs() < 0.04, "virial ratio {q}");
        let r = radii(&p, None);
        let half = r[r.len() / 2];
        let want = h.radius_of_mass_fraction(0.5 * h.max_mass_fraction);
        assert!((h.radius_of_mass_fraction(0.5) - (1.0 + 2f64.sqrt())).abs() < 1e-12);
        assert!((half / want - 1.0).abs() < 0.04, "r_half {half} vs {want}");
    }

    #[test]
    fn hernquist_velocity_dispersion_matches_its_analytic_jeans_solution() {
        // The DF's second moment must be the isotropic Jeans σ² (Hernquist 1990, eq. 10) in each
        // radial shell: a check of the DF and the rejection sampler that the virial ratio alone
        // (a global average) would not catch.
        let p = Hernquist::new(20_000, 1.0, 1.0, 8).generate();
        let jeans = |r: f64| {
            // σ_r² = GM/(12a) {12 r(r+a)³/a⁴ ln((r+a)/r) − r/(r+a) [25 + 52 r/a + 42 (r/a)² +
            // 12 (r/a)³]}, here GM = a = 1.
            let x = r;
            (12.0 * x * (1.0 + x).powi(3) * ((1.0 + x) / x).ln()
                - x / (1.0 + x) * (25.0 + 52.0 * x + 42.0 * x * x + 12.0 * x * x * x))
                / 12.0
        };
        for (lo, hi) in [(0.2, 0.4), (0.8, 1.2), (2.0, 3.0)] {
            let mut sum = 0.0;
            let mut n = 0;
            for i in 0..p.len() {
                let r = p.pos[i].iter().map(|x| x * x).sum::<f64>().sqrt();
                if r >= lo && r < hi {
                    sum += p.vel[i].iter().map(|v| v * v).sum::<f64>() / 3.0;
                    n += 1;
                }
            }
            let got = sum / n as f64;
            let mid = 0.5 * (lo + hi);
            let want = jeans(mid);
            assert!(
                (got / want - 1.0).abs() < 0.08,
                "shell [{lo}, {hi}): σ² {got} vs {want} (n = {n})"
            );
        }
    }

    #[test]
    fn generators_are_reproducible_and_seeded() {
        let a = Plummer::henon(500, 1).generate();
        assert_eq!(a, Plummer::henon(500, 1).generate());
        assert_eq!(a, Plummer::henon(500, 1).softened(0.0).generate());
        assert_ne!(a.pos, Plummer::henon(500, 2).generate().pos);
        let s = Plummer::henon(500, 1).softened(0.05);
        assert_eq!(s.generate(), s.generate());
        assert_ne!(s.generate().vel, a.vel);
        let t0 = std::time::Instant::now();
        let big = Plummer::henon(1 << 20, 1).softened(0.05).generate();
        eprintln!(
            "Plummer 2^20 at ε = 0.05: {:.2} s",
            t0.elapsed().as_secs_f64()
        );
        assert_eq!(big.len(), 1 << 20);
        let g = DiskGalaxy {
            n_halo: 300,
            n_disk: 200,
            ..DiskGalaxy::default()
        };
        assert_eq!(g.generate(), g.generate());
        let g2 = DiskGalaxy { seed: 2, ..g };
        assert_ne!(g.generate().pos, g2.generate().pos);
    }

    #[test]
    fn bessel_functions_match_tabulated_values() {
        // A&S table 9.8: I₀(1) = 1.266065878, I₁(1) = 0.565159104, K₀(1) = 0.421024438,
        // K₁(1) = 0.601907230; at x = 5: I₀ = 27.23987182, K₁ = 4.044613445e-3.
        let [i0, i1, k0, k1] = bessel_scaled(1.0);
        let e = 1f64.exp();
        for (got, want) in [
            (i0 * e, 1.266065878),
            (i1 * e, 0.565159104),
            (k0 / e, 0.421024438),
            (k1 / e, 0.601907230),
        ] {
            assert!((got / want - 1.0).abs() < 1e-6, "{got} vs {want}");
        }
        let [i0, _, _, k1] = bessel_scaled(5.0);
        assert!((i0 * 5f64.exp() / 27.23987182 - 1.0).abs() < 1e-6);
        assert!((k1 / 5f64.exp() / 4.044613445e-3 - 1.0).abs() < 1e-6);
    }

    #[test]
    fn exponential_disk_rotation_curve() {
        // Disk alone (a negligible halo): Freeman's curve peaks at R ≈ 2.15 h with
        // v_max ≈ 0.622 sqrt(GM/h), and is Keplerian far out.
        let g = DiskGalaxy {
            halo: Halo::Hernquist {
                mass: 1e-12,
                scale: 1.0,
                max_mass_fraction: 0.5,
            },
            ..DiskGalaxy::default()
        };
        let peak = (1..400)
            .map(|k| k as f64 * 0.01)
            .max_by(|a, b| g.circular_speed(*a).total_cmp(&g.circular_speed(*b)))
            .unwrap();
        assert!((peak - 2.15).abs() < 0.02, "peak at {peak}");
        let vmax = g.circular_speed(peak);
        assert!((vmax / 0.6222 - 1.0).abs() < 0.005, "v_max {vmax}");
        let far = 30.0;
        let v2 = g.circular_speed(far).powi(2);
        assert!(
            (v2 * far - 1.0).abs() < 0.01,
            "Keplerian far out: {}",
            v2 * far
        );
    }

    #[test]
    fn disk_galaxy_has_the_requested_mass_scale_length_and_toomre_q() {
        let g = DiskGalaxy {
            n_halo: 20_000,
            n_disk: 40_000,
            bulge: Some(Bulge {
                n: 2000,
                mass: 0.2,
                scale: 0.2,
            }),
            toomre_q: 1.2,
            ..DiskGalaxy::default()
        };
        let p = g.generate();
        assert_eq!(p.count_by_type(), [0, 20_000, 40_000, 2000, 0, 0]);
        assert!(p.ptype.windows(2).all(|w| w[0] <= w[1]), "ordered by type");
        let ids: std::collections::HashSet<u64> = p.id.iter().copied().collect();
        assert_eq!(ids.len(), p.len());
        let mass_of = |t: u8| p.of_type(t).map(|i| p.mass[i]).sum::<f64>();
        assert!((mass_of(DISK) - 1.0).abs() < 1e-9);
        assert!((mass_of(BULGE) - 0.99 * 0.2).abs() < 1e-9);
        assert!((p.total_mass() - g.total_mass()).abs() < 1e-9);
        // Cylindrical coordinates about the disk's centre (the set is in its centre-of-mass
        // frame; the disk's own centre differs only by noise).
        let disk: Vec<usize> = p.of_type(DISK).collect();
        let cyl = |i: usize| {
            let [x, y, z] = p.pos[i];
            let [vx, vy, vz] = p.vel[i];
            let r = x.hypot(y);
            (r, z, (x * vx + y * vy) / r, (x * vy - y * vx) / r, vz)
        };
        // Mean radius of an exponential disk (cut at 10 h) is 2h; median |z| is z₀·atanh(1/2).
        let mean_r = disk.iter().map(|&i| cyl(i).0).sum::<f64>() / disk.len() as f64;
        assert!((mean_r / 2.0 - 1.0).abs() < 0.02, "mean R {mean_r}");
        let mut z: Vec<f64> = disk.iter().map(|&i| cyl(i).1.abs()).collect();
        z.sort_by(f64::total_cmp);
        let want_z = 0.1 * 0.5f64.atanh();
        assert!((z[z.len() / 2] / want_z - 1.0).abs() < 0.04, "median |z|");
        // Toomre Q from the particles in rings, κ from the model.
        for (lo, hi) in [(1.0, 1.5), (2.0, 2.5), (3.0, 3.5)] {
            let ring: Vec<_> = disk
                .iter()
                .map(|&i| cyl(i))
                .filter(|c| c.0 >= lo && c.0 < hi)
                .collect();
            let n = ring.len() as f64;
            let sigma_density = n * p.mass[disk[0]] / (PI * (hi * hi - lo * lo));
            let mean_vr = ring.iter().map(|c| c.2).sum::<f64>() / n;
            let sigma_r = (ring.iter().map(|c| (c.2 - mean_vr).powi(2)).sum::<f64>() / n).sqrt();
            let q = sigma_r * g.kappa(0.5 * (lo + hi)) / (3.36 * sigma_density);
            eprintln!("disk ring [{lo}, {hi}): Q = {q:.3} (n = {n})");
            assert!((q / 1.2 - 1.0).abs() < 0.1, "ring [{lo}, {hi}): Q = {q}");
            // The disk rotates at close to (below) the circular speed.
            let vphi = ring.iter().map(|c| c.3).sum::<f64>() / n;
            let vc = g.circular_speed(0.5 * (lo + hi));
            assert!(vphi < vc && vphi > 0.8 * vc, "v_φ {vphi} vs v_c {vc}");
        }
        // Roughly in equilibrium as a whole (fewer particles: the direct sum is O(N²)).
        let small = DiskGalaxy {
            n_halo: 6000,
            n_disk: 3000,
            bulge: Some(Bulge {
                n: 500,
                ..g.bulge.unwrap()
            }),
            ..g
        };
        let (k, w) = cpu::energies(&small.generate(), 0.01);
        let q = 2.0 * k / w.abs();
        eprintln!("disk galaxy: 2K/|W| = {q:.3}");
        assert!((q - 1.0).abs() < 0.1, "virial ratio {q}");
    }

    #[test]
    fn nfw_halo_is_truncated_at_r200_with_its_mass() {
        let g = DiskGalaxy {
            halo: Halo::Nfw {
                m200: 20.0,
                r200: 60.0,
                concentration: 10.0,
            },
            n_halo: 20_000,
            n_disk: 1000,
            ..DiskGalaxy::default()
        };
        let p = g.generate();
        let r = radii(&p, Some(HALO));
        assert!(*r.last().unwrap() < 61.0);
        let halo_mass: f64 = p.of_type(HALO).map(|i| p.mass[i]).sum();
        assert!((halo_mass - 20.0).abs() < 1e-9);
        // Half of M₂₀₀ inside the radius solving m(x) = m(c)/2.
        let want = Sphere::Nfw {
            rho0: 1.0,
            rs: 6.0,
            rmax: 60.0,
        }
        .radius(0.5, 60.0);
        let half = r[r.len() / 2];
        assert!((half / want - 1.0).abs() < 0.04, "{half} vs {want}");
    }

    #[test]
    fn kepler_orbit_has_the_requested_pericentre_and_energy() {
        for e in [0.5, 1.0, 1.5] {
            let (x, v) = kepler_orbit(2.0, 1.0, e, 2.5).unwrap();
            let r = x.iter().map(|c| c * c).sum::<f64>().sqrt();
            let v2 = v.iter().map(|c| c * c).sum::<f64>();
            assert!((r - 2.5).abs() < 1e-12);
            // Specific energy v²/2 − M/r = M(e − 1)/(2 rp).
            let energy = 0.5 * v2 - 2.0 / r;
            assert!((energy - (e - 1.0)).abs() < 1e-12, "e = {e}: E {energy}");
            // Angular momentum sqrt(M rp (1 + e)); approaching (radial velocity < 0).
            let l = x[0] * v[1] - x[1] * v[0];
            assert!((l - (2.0 * (1.0 + e)).sqrt()).abs() < 1e-12);
            assert!(x[0] * v[0] + x[1] * v[1] < 0.0);
        }
        assert!(
            kepler_orbit(1.0, 2.0, 1.0, 1.0).is_err(),
            "inside pericentre"
        );
        assert!(
            kepler_orbit(1.0, 1.0, 0.5, 10.0).is_err(),
            "beyond apocentre"
        );
    }

    #[test]
    fn encounter_places_two_galaxies_on_a_parabolic_orbit() {
        let small = DiskGalaxy {
            n_halo: 2000,
            n_disk: 1000,
            ..DiskGalaxy::default()
        };
        let enc = Encounter {
            primary: small,
            mass_ratio: 0.5,
            ..Encounter::default()
        };
        let p = enc.generate();
        let n1 = 3000;
        assert_eq!(p.len(), 3000 + 1500);
        assert!(p.ptype.windows(2).all(|w| w[0] <= w[1]));
        let mut ids = p.id.clone();
        ids.sort_unstable();
        assert_eq!(ids, (1..=4500).collect::<Vec<u64>>());
        // Each galaxy's centre of mass, separated by `separation`, on a zero-energy orbit.
        let part = |first: bool| {
            let mut g = Particles::default();
            for i in 0..p.len() {
                if (p.id[i] <= n1) == first {
                    g.push(p.pos[i], p.vel[i], p.mass[i], p.id[i], p.ptype[i]);
                }
            }
            g
        };
        let (g1, g2) = (part(true), part(false));
        let (m1, m2) = (g1.total_mass(), g2.total_mass());
        assert!((m2 / m1 - 0.5).abs() < 1e-3);
        let (x1, v1) = g1.centre_of_mass();
        let (x2, v2) = g2.centre_of_mass();
        let d: f64 = (0..3).map(|k| (x2[k] - x1[k]).powi(2)).sum::<f64>().sqrt();
        assert!((d - 40.0).abs() < 1e-9, "separation {d}");
        let dv2: f64 = (0..3).map(|k| (v2[k] - v1[k]).powi(2)).sum();
        assert!((0.5 * dv2 - (m1 + m2) / d).abs() < 1e-9, "parabolic");
        let (xc, vc) = p.centre_of_mass();
        assert!(xc.iter().chain(&vc).all(|c| c.abs() < 1e-12));
        // The second disk's spin is inclined by 60° to the orbit's normal (+z).
        let spin = |g: &Particles| {
            let (c, u) = g.centre_of_mass();
            let mut l = [0.0; 3];
            for i in g.of_type(DISK) {
                let x: Vec<f64> = (0..3).map(|k| g.pos[i][k] - c[k]).collect();
                let v: Vec<f64> = (0..3).map(|k| g.vel[i][k] - u[k]).collect();
                l[0] += x[1] * v[2] - x[2] * v[1];
                l[1] += x[2] * v[0] - x[0] * v[2];
                l[2] += x[0] * v[1] - x[1] * v[0];
            }
            l[2] / l.iter().map(|c| c * c).sum::<f64>().sqrt()
        };
        assert!(spin(&g1) > 0.99);
        assert!((spin(&g2) - 0.5).abs() < 0.05, "cos i = {}", spin(&g2));
    }
}
