//! The outcome of an impact at one time: the largest remnant, the disk orbiting it and the
//! escaping material, with the mass of each per material.
//!
//! **Bound mass** (Marcus et al. 2009, 2010; Carter et al. 2018): start from the particles
//! nearest the potential minimum (the densest particle when no potentials are given); treat
//! the set as a point mass `M` at its centre of mass `x_c` moving with its mass-weighted
//! velocity `v_c`; a particle is bound when its specific orbital energy about it is negative,
//! `½|v − v_c|² − G M / |x − x_c| < 0`; recompute `M`, `x_c`, `v_c` from the bound particles
//! and repeat until the bound set no longer changes. Unbound particles are **escaping**.
//!
//! **Remnant or disk** (Canup 2004): a bound particle belongs to the remnant when its Kepler
//! orbit about the bound mass reaches inside the remnant's radius (periapsis `q < R`), else it
//! orbits as **disk** material. `R` is the radius of a sphere of the remnant's condensed volume
//! `Σ m / max(ρ, ρ₀)`: SPH densities, with expanded material (hot, vaporised, or a lone
//! particle's underestimated density) counted at its material's reference density ρ₀, so that a
//! puffy outer layer or a few fluffy particles do not inflate the surface the disk must clear.
//! It is found from the inside out: from the seed's volume, the remnant is the seed and the
//! bound particles with `q < R`, and `R` grows with it until the set is the same twice. Inside a
//! body every particle's periapsis lies below its own radius (its speed is below the circular
//! speed of the point mass), so the set fills the body before it can stop, and disk material
//! whose periapsis lies outside is never reached.

use crate::sph::hydro::Gas;
use glam::DVec3;
use std::f64::consts::PI;

/// Where a particle ends up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Remnant,
    Disk,
    Escaping,
}

/// One class of the outcome: its mass and its mass per material id.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Share {
    pub mass: f64,
    pub by_material: Vec<f64>,
}

/// The outcome at one time.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub remnant: Share,
    pub disk: Share,
    pub escaping: Share,
    /// The bound set's centre of mass and velocity.
    pub centre: [f64; 3],
    pub velocity: [f64; 3],
    /// The remnant's radius (of its SPH volume).
    pub radius: f64,
    /// Iterations of the bound-mass loop, and whether it converged (the set repeated).
    pub iterations: usize,
    pub converged: bool,
    /// Each particle's class.
    pub fate: Vec<Fate>,
}

/// Why the analysis cannot run.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum OutcomeError {
    #[error("no particles to analyse")]
    Empty,
    #[error("G = {0} must be positive and finite")]
    Gravity(f64),
    #[error("particle {0} has no positive density (the remnant's radius comes from m/ρ)")]
    Density(usize),
    #[error("material {0}'s reference density must be ≥ 0 and finite")]
    Reference(usize),
    #[error("{potentials} potentials for {n} particles")]
    Potentials { potentials: usize, n: usize },
    #[error("particle {index} has material id {id}, but only {count} materials are named")]
    Material { index: usize, id: u32, count: usize },
}

/// How the analysis starts and stops.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutcomeOptions {
    /// The seed: this fraction of the particles nearest the potential minimum (at least
    /// `seed_min` of them).
    pub seed_fraction: f64,
    pub seed_min: usize,
    /// Iterations of either loop before giving up (reported as not converged).
    pub max_iterations: usize,
}

impl Default for OutcomeOptions {
    fn default() -> Self {
        OutcomeOptions {
            seed_fraction: 0.01,
            seed_min: 32,
            max_iterations: 1000,
        }
    }
}

/// The point mass of a set: mass, centre of mass, velocity.
fn point_mass(gas: &Gas, set: &[bool]) -> (f64, DVec3, DVec3) {
    let (mut m, mut x, mut v) = (0.0, DVec3::ZERO, DVec3::ZERO);
    for i in (0..gas.len()).filter(|&i| set[i]) {
        m += gas.mass[i];
        x += gas.mass[i] * DVec3::from(gas.pos[i]);
        v += gas.mass[i] * DVec3::from(gas.vel[i]);
    }
    if m > 0.0 {
        (m, x / m, v / m)
    } else {
        (0.0, x, v)
    }
}

/// The radius of a sphere of the set's condensed volume `Σ m / max(ρ, ρ₀)`.
fn volume_radius(gas: &Gas, set: &[bool], rho_0: &[f64]) -> f64 {
    let v: f64 = (0..gas.len())
        .filter(|&i| set[i])
        .map(|i| gas.mass[i] / gas.rho[i].max(rho_0[gas.mat[i] as usize]))
        .sum();
    (3.0 * v / (4.0 * PI)).cbrt()
}

/// The outcome of `gas` (positions, velocities, masses, SPH densities, material ids) with
/// gravitational constant `g`; `phi` the potentials (empty: the densest particle seeds);
/// `rho_0` the materials' reference densities by id.
pub fn analyse(
    gas: &Gas,
    phi: &[f64],
    g: f64,
    rho_0: &[f64],
    opts: &OutcomeOptions,
) -> Result<Outcome, OutcomeError> {
    let materials = rho_0.len();
    let n = gas.len();
    if n == 0 {
        return Err(OutcomeError::Empty);
    }
    if !(g.is_finite() && g > 0.0) {
        return Err(OutcomeError::Gravity(g));
    }
    if !phi.is_empty() && phi.len() != n {
        return Err(OutcomeError::Potentials {
            potentials: phi.len(),
            n,
        });
    }
    if let Some(i) = (0..n).find(|&i| !(gas.rho[i] > 0.0 && gas.rho[i].is_finite())) {
        return Err(OutcomeError::Density(i));
    }
    if let Some(k) = (0..materials).find(|&k| !(rho_0[k] >= 0.0 && rho_0[k].is_finite())) {
        return Err(OutcomeError::Reference(k));
    }
    if let Some(i) = (0..n).find(|&i| gas.mat[i] as usize >= materials) {
        return Err(OutcomeError::Material {
            index: i,
            id: gas.mat[i],
            count: materials,
        });
    }
    let pos = |i: usize| DVec3::from(gas.pos[i]);
    let vel = |i: usize| DVec3::from(gas.vel[i]);
    let deepest = if phi.is_empty() {
        (0..n).max_by(|&a, &b| gas.rho[a].total_cmp(&gas.rho[b]))
    } else {
        (0..n).min_by(|&a, &b| phi[a].total_cmp(&phi[b]))
    }
    .expect("n > 0");
    let k = ((opts.seed_fraction * n as f64) as usize)
        .max(opts.seed_min)
        .clamp(1, n);
    let mut by_distance: Vec<(f64, usize)> = (0..n)
        .map(|i| (pos(i).distance_squared(pos(deepest)), i))
        .collect();
    by_distance.select_nth_unstable_by(k - 1, |a, b| a.0.total_cmp(&b.0));
    let mut seed = vec![false; n];
    by_distance[..k].iter().for_each(|&(_, i)| seed[i] = true);

    // The bound set, from the seed.
    let energy = |i: usize, (m, x, v): (f64, DVec3, DVec3)| {
        0.5 * (vel(i) - v).length_squared() - g * m / pos(i).distance(x)
    };
    let mut bound = seed.clone();
    let mut iterations = 0;
    let mut converged = false;
    while iterations < opts.max_iterations {
        iterations += 1;
        let pm = point_mass(gas, &bound);
        let next: Vec<bool> = (0..n).map(|i| pm.0 > 0.0 && energy(i, pm) < 0.0).collect();
        let same = next == bound;
        bound = next;
        if same {
            converged = true;
            break;
        }
    }
    let pm = point_mass(gas, &bound);
    let (m_b, x_c, v_c) = pm;

    // Periapses about the bound mass, then the remnant's radius from the inside out.
    let gm = g * m_b;
    let periapsis = |i: usize| {
        let (dx, dv) = (pos(i) - x_c, vel(i) - v_c);
        let h2 = dx.cross(dv).length_squared();
        let e = energy(i, pm);
        let ecc = (1.0 + 2.0 * e * h2 / (gm * gm)).max(0.0).sqrt();
        h2 / (gm * (1.0 + ecc))
    };
    let q: Vec<f64> = (0..n)
        .map(|i| {
            if bound[i] {
                periapsis(i)
            } else {
                f64::INFINITY
            }
        })
        .collect();
    let core: Vec<bool> = (0..n).map(|i| seed[i] && bound[i]).collect();
    let mut radius = volume_radius(gas, &core, rho_0);
    let mut remnant = core.clone();
    for _ in 0..opts.max_iterations {
        let next: Vec<bool> = (0..n).map(|i| core[i] || q[i] < radius).collect();
        let same = next == remnant;
        remnant = next;
        radius = volume_radius(gas, &remnant, rho_0);
        if same {
            break;
        }
    }

    let mut out = Outcome {
        remnant: Share {
            mass: 0.0,
            by_material: vec![0.0; materials],
        },
        disk: Share {
            mass: 0.0,
            by_material: vec![0.0; materials],
        },
        escaping: Share {
            mass: 0.0,
            by_material: vec![0.0; materials],
        },
        centre: x_c.to_array(),
        velocity: v_c.to_array(),
        radius,
        iterations,
        converged,
        fate: Vec::with_capacity(n),
    };
    for i in 0..n {
        let (fate, share) = if remnant[i] {
            (Fate::Remnant, &mut out.remnant)
        } else if bound[i] {
            (Fate::Disk, &mut out.disk)
        } else {
            (Fate::Escaping, &mut out.escaping)
        };
        share.mass += gas.mass[i];
        share.by_material[gas.mat[i] as usize] += gas.mass[i];
        out.fate.push(fate);
    }
    Ok(out)
}
