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

mod disk;
mod encounter;
#[cfg(test)]
mod tests;

pub use disk::{Bulge, DiskGalaxy, Halo};
pub use encounter::{Encounter, kepler_orbit, rotation};
