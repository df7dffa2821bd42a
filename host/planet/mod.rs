//! Planets in hydrostatic equilibrium, the first step of a giant-impact setup: the radial
//! profile of a layered planet (an iron core under a rock mantle, say) of given total mass and
//! layer mass fractions, in SI units.
//!
//! Each layer's material sits on its **cold adiabat**: the curve `du/dρ = P(ρ, u)/ρ²` through
//! the reference state (ρ₀, u = 0), where a Tillotson material has zero pressure. So the surface
//! is at ρ₀ of the outer material and P = 0, every layer is isentropic, and at a layer boundary
//! the pressure is continuous while the density jumps to the inner material's adiabat at that
//! pressure. (WoMa builds profiles the same way with a temperature model on top; the cold
//! adiabat needs none, which the Tillotson form lacks.) The profile solves
//! `dm/dr = 4π r² ρ`, `dP/dr = −G m ρ / r²` inward from the surface by fourth-order Runge–Kutta
//! and shoots on the radius until the mass is used up exactly at the centre.

use crate::device::sph::hydro::Tillotson;
use std::f64::consts::PI;

/// Newton's constant, SI (CODATA 2018).
pub const G_SI: f64 = 6.674_30e-11;

/// One layer, outermost last in [`Planet::layers`]: its material and its share of the mass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Layer {
    pub material: Tillotson<f64>,
    pub mass_fraction: f64,
}

/// A planet to build: total mass [kg] and layers from the centre out.
#[derive(Clone, Debug, PartialEq)]
pub struct Planet {
    pub mass: f64,
    pub layers: Vec<Layer>,
}

/// Why a planet cannot be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanetError {
    #[error("the planet's mass must be positive and finite, got {0} kg")]
    Mass(f64),
    #[error("a planet needs at least one layer")]
    NoLayers,
    #[error("layer {layer}'s mass fraction must be positive and finite, got {fraction}")]
    Fraction { layer: usize, fraction: f64 },
    #[error("the layers' mass fractions sum to {0}, not 1")]
    FractionSum(f64),
    #[error(
        "layer {layer}'s adiabat does not reach the pressure {pressure:e} Pa below {rho_max:e} \
         kg/m³ (a planet too massive for this material)"
    )]
    Pressure {
        layer: usize,
        pressure: f64,
        rho_max: f64,
    },
}

/// A material's cold adiabat, tabulated from ρ₀ to `STRETCH` ρ₀: density, specific energy and
/// pressure, the pressure increasing.
#[derive(Clone, Debug)]
pub struct Adiabat {
    rho: Vec<f64>,
    u: Vec<f64>,
    p: Vec<f64>,
}

/// How far the adiabat table reaches above ρ₀ (the Earth's iron core reaches about 1.7 ρ₀).
const STRETCH: f64 = 6.0;
/// Table points (uniform in ln ρ).
const TABLE: usize = 4096;

impl Adiabat {
    /// `du/dρ = P/ρ²` from (ρ₀, 0), fourth-order Runge–Kutta in ln ρ.
    pub fn cold(m: &Tillotson<f64>) -> Adiabat {
        let dl = STRETCH.ln() / (TABLE - 1) as f64;
        // du/d ln ρ = P / ρ.
        let f = |lr: f64, u: f64| {
            let rho = lr.exp();
            m.pressure(rho, u) / rho
        };
        let (mut rho, mut u, mut p) = (Vec::new(), Vec::new(), Vec::new());
        let mut lr = m.rho_0.ln();
        let mut uk = 0.0;
        for k in 0..TABLE {
            // ρ₀ itself first (exp(ln ρ₀) is off in the last bit, and P(ρ₀, 0) = 0 exactly).
            let r = if k == 0 { m.rho_0 } else { lr.exp() };
            rho.push(r);
            u.push(uk);
            p.push(m.pressure(r, uk));
            let k1 = f(lr, uk);
            let k2 = f(lr + 0.5 * dl, uk + 0.5 * dl * k1);
            let k3 = f(lr + 0.5 * dl, uk + 0.5 * dl * k2);
            let k4 = f(lr + dl, uk + dl * k3);
            uk += dl / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
            lr += dl;
        }
        Adiabat { rho, u, p }
    }

    /// Density and specific energy at pressure `p` (≥ 0), linear between table points; `None`
    /// past the table.
    pub fn at_pressure(&self, p: f64) -> Option<(f64, f64)> {
        if p <= self.p[0] {
            return Some((self.rho[0], self.u[0]));
        }
        let k = self.p.partition_point(|&q| q < p);
        if k >= self.p.len() {
            return None;
        }
        let w = (p - self.p[k - 1]) / (self.p[k] - self.p[k - 1]);
        Some((
            self.rho[k - 1] + w * (self.rho[k] - self.rho[k - 1]),
            self.u[k - 1] + w * (self.u[k] - self.u[k - 1]),
        ))
    }

    /// The largest density tabulated.
    pub fn rho_max(&self) -> f64 {
        *self.rho.last().expect("a table of TABLE points")
    }

    /// Specific energy on the adiabat at density `rho`: 0 at and below ρ₀ (the expanded cold
    /// state, where the pressure is floored), the table's last value past it.
    pub fn u_at_density(&self, rho: f64) -> f64 {
        let k = self.rho.partition_point(|&r| r < rho);
        if k == 0 {
            return self.u[0];
        }
        if k >= self.rho.len() {
            return *self.u.last().expect("a table of TABLE points");
        }
        let w = (rho - self.rho[k - 1]) / (self.rho[k] - self.rho[k - 1]);
        self.u[k - 1] + w * (self.u[k] - self.u[k - 1])
    }
}

/// The radial profile, centre first: radius, enclosed mass, pressure, density, specific energy
/// and layer index per point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    pub r: Vec<f64>,
    pub m: Vec<f64>,
    pub p: Vec<f64>,
    pub rho: Vec<f64>,
    pub u: Vec<f64>,
    pub layer: Vec<usize>,
}

impl Profile {
    /// The planet's radius.
    pub fn radius(&self) -> f64 {
        *self.r.last().unwrap_or(&0.0)
    }

    /// The planet's mass.
    pub fn mass(&self) -> f64 {
        *self.m.last().unwrap_or(&0.0)
    }

    /// The points of layer `k` (contiguous, centre first).
    pub fn layer_points(&self, k: usize) -> std::ops::Range<usize> {
        let a = self.layer.partition_point(|&l| l < k);
        a..self.layer.partition_point(|&l| l <= k)
    }

    /// The outer radius of layer `k`: half-way between its last point and the next layer's
    /// first (the boundary lies between them, within one radial step).
    pub fn layer_top(&self, k: usize) -> f64 {
        let pts = self.layer_points(k);
        match (pts.end.checked_sub(1), self.r.get(pts.end)) {
            (Some(last), Some(&next)) => 0.5 * (self.r[last] + next),
            (Some(last), None) => self.r[last],
            _ => 0.0,
        }
    }

    /// Density, specific energy and pressure of layer `k` at radius `r`, linear between its own
    /// points (never across the jump to another layer) and clamped to its range.
    pub fn in_layer(&self, r: f64, k: usize) -> (f64, f64, f64) {
        let pts = self.layer_points(k);
        let (rs, first) = (&self.r[pts.clone()], pts.start);
        let j = rs.partition_point(|&x| x < r);
        let (a, b, w) = if j == 0 {
            (first, first, 0.0)
        } else if j >= rs.len() {
            (pts.end - 1, pts.end - 1, 0.0)
        } else {
            let (a, b) = (first + j - 1, first + j);
            (a, b, (r - self.r[a]) / (self.r[b] - self.r[a]))
        };
        let lerp = |v: &[f64]| v[a] + w * (v[b] - v[a]);
        (lerp(&self.rho), lerp(&self.u), lerp(&self.p))
    }

    /// The mass enclosed by radius `r` (linear between points; the planet's mass outside).
    pub fn mass_at(&self, r: f64) -> f64 {
        interp(&self.r, &self.m, r)
    }

    /// The radius enclosing mass `m` (the inverse of [`Profile::mass_at`]).
    pub fn radius_of_mass(&self, m: f64) -> f64 {
        interp(&self.m, &self.r, m)
    }
}

/// `y(x)` linear between the points of increasing `xs`, clamped at the ends.
fn interp(xs: &[f64], ys: &[f64], x: f64) -> f64 {
    let j = xs.partition_point(|&v| v < x);
    if j == 0 {
        return ys[0];
    }
    if j >= xs.len() {
        return ys[xs.len() - 1];
    }
    let w = (x - xs[j - 1]) / (xs[j] - xs[j - 1]);
    ys[j - 1] + w * (ys[j] - ys[j - 1])
}

/// Where an inward integration from radius `R` ended.
enum Shot {
    /// The mass ran out before the centre: `R` was too large.
    Empty,
    /// The centre was reached with mass left (or none): `R` was too small (or right).
    Centre,
}

impl Planet {
    fn validate(&self) -> Result<(), PlanetError> {
        if !(self.mass.is_finite() && self.mass > 0.0) {
            return Err(PlanetError::Mass(self.mass));
        }
        if self.layers.is_empty() {
            return Err(PlanetError::NoLayers);
        }
        for (k, l) in self.layers.iter().enumerate() {
            if !(l.mass_fraction.is_finite() && l.mass_fraction > 0.0) {
                return Err(PlanetError::Fraction {
                    layer: k,
                    fraction: l.mass_fraction,
                });
            }
        }
        let sum: f64 = self.layers.iter().map(|l| l.mass_fraction).sum();
        if (sum - 1.0).abs() > 1e-9 {
            return Err(PlanetError::FractionSum(sum));
        }
        Ok(())
    }

    /// The layer holding enclosed mass `m`: layer k spans the enclosed masses
    /// `M Σ_{j<k} f_j .. M Σ_{j≤k} f_j`.
    fn layer_of(&self, m: f64) -> usize {
        let mut top = 0.0;
        for (k, l) in self.layers.iter().enumerate() {
            top += l.mass_fraction * self.mass;
            if m <= top * (1.0 + 1e-12) {
                return k;
            }
        }
        self.layers.len() - 1
    }

    /// The equilibrium profile with `steps` radial steps (a few thousand resolve the layers to
    /// 10⁻⁵ in radius).
    pub fn profile(&self, g: f64, steps: usize) -> Result<Profile, PlanetError> {
        self.validate()?;
        let adiabats: Vec<Adiabat> = self
            .layers
            .iter()
            .map(|l| Adiabat::cold(&l.material))
            .collect();
        // Every layer at its reference density bounds the radius from above; at its table's
        // densest from below.
        let volume = |rho: &dyn Fn(usize) -> f64| -> f64 {
            self.layers
                .iter()
                .enumerate()
                .map(|(k, l)| l.mass_fraction * self.mass / rho(k))
                .sum::<f64>()
        };
        let r_of = |v: f64| (3.0 * v / (4.0 * PI)).cbrt();
        let mut hi = r_of(volume(&|k| adiabats[k].rho[0])) * 1.000_001;
        let mut lo = r_of(volume(&|k| adiabats[k].rho_max()));
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            match self.shoot(g, &adiabats, mid, steps, None)? {
                Shot::Empty => hi = mid,
                Shot::Centre => lo = mid,
            }
            if hi - lo <= 1e-13 * hi {
                break;
            }
        }
        // The upper end of the bracket: the mass runs out within about a step of the centre.
        // (Below it the mass left at the centre, however small, makes `G m ρ / r²` diverge as
        // r → 0: the pressure of the last few points spikes, several times the true central
        // pressure.) The centre then takes the innermost point's state, where dP/dr → 0.
        let mut out = Profile::default();
        if let Shot::Empty = self.shoot(g, &adiabats, hi, steps, Some(&mut out))? {
            let last = out.r.len() - 1;
            out.r.push(0.0);
            out.m.push(0.0);
            out.p.push(out.p[last]);
            out.rho.push(out.rho[last]);
            out.u.push(out.u[last]);
            out.layer.push(out.layer[last]);
        }
        for v in [&mut out.r, &mut out.m, &mut out.p, &mut out.rho, &mut out.u] {
            v.reverse();
        }
        out.layer.reverse();
        Ok(out)
    }

    /// Integrates `(m, P)` inward from the surface at radius `radius`, recording into `out`.
    fn shoot(
        &self,
        g: f64,
        adiabats: &[Adiabat],
        radius: f64,
        steps: usize,
        mut out: Option<&mut Profile>,
    ) -> Result<Shot, PlanetError> {
        let state = |m: f64, p: f64| -> Result<(usize, f64, f64), PlanetError> {
            let k = self.layer_of(m.max(0.0));
            let (rho, u) = adiabats[k]
                .at_pressure(p.max(0.0))
                .ok_or(PlanetError::Pressure {
                    layer: k,
                    pressure: p,
                    rho_max: adiabats[k].rho_max(),
                })?;
            Ok((k, rho, u))
        };
        // d(m, P)/dr at radius r.
        let deriv = |r: f64, m: f64, p: f64| -> Result<(f64, f64), PlanetError> {
            let (_, rho, _) = state(m, p)?;
            Ok((4.0 * PI * r * r * rho, -g * m * rho / (r * r)))
        };
        // While shooting, a state past the adiabat's table means a radius far too small (the
        // bisection moves up); only the profile that is kept reports it.
        let searching = out.is_none();
        macro_rules! or_small {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(_) if searching => return Ok(Shot::Centre),
                    Err(e) => return Err(e),
                }
            };
        }
        let dr = radius / steps as f64;
        let (mut m, mut p) = (self.mass, 0.0);
        for s in 0..steps {
            let r = radius - s as f64 * dr;
            if let Some(o) = out.as_deref_mut() {
                let (k, rho, u) = state(m, p)?;
                o.r.push(r);
                o.m.push(m);
                o.p.push(p);
                o.rho.push(rho);
                o.u.push(u);
                o.layer.push(k);
            }
            // Inward: r decreases by dr.
            let (a1, b1) = or_small!(deriv(r, m, p));
            let (a2, b2) = or_small!(deriv(r - 0.5 * dr, m - 0.5 * dr * a1, p - 0.5 * dr * b1));
            let (a3, b3) = or_small!(deriv(r - 0.5 * dr, m - 0.5 * dr * a2, p - 0.5 * dr * b2));
            let last = s + 1 == steps;
            // The last step ends at the centre, where dP/dr's G m / r² → 0 as m ∝ r³.
            let (a4, b4) = if last {
                (0.0, 0.0)
            } else {
                or_small!(deriv(r - dr, m - dr * a3, p - dr * b3))
            };
            let m_new = m - dr / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4);
            let p_new = p - dr / 6.0 * (b1 + 2.0 * b2 + 2.0 * b3 + b4);
            if m_new <= 0.0 && !last {
                return Ok(Shot::Empty);
            }
            m = m_new;
            p = p_new;
        }
        if let Some(o) = out {
            let (k, rho, u) = state(m.max(0.0), p)?;
            o.r.push(0.0);
            o.m.push(m.max(0.0));
            o.p.push(p);
            o.rho.push(rho);
            o.u.push(u);
            o.layer.push(k);
        }
        Ok(if m < 0.0 { Shot::Empty } else { Shot::Centre })
    }
}

pub mod cli;
pub mod impact;
pub mod particles;
pub mod settle;

#[cfg(test)]
mod cli_tests;
#[cfg(test)]
mod particles_tests;
#[cfg(test)]
mod tests;
