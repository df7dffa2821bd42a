//! Self-gravity of the gas (open boundary only): accelerations and potentials from warpkit's
//! Barnes–Hut tree (the CPU twin of the GPU pipeline, float32, monopoles, one tree per
//! evaluation) or from the float64 direct sum of the N-body reference, Plummer-softened with a
//! fixed length ε. The pair formulas are the device crate's (`bh` and `nbody`); this module
//! only converts, scales by G and checks.
//!
//! Softening is fixed, not tied to h: with a fixed ε the force is the gradient of one pair
//! potential, so `E = K + U + W` is conserved exactly by the continuous equations and the
//! diagnostics measure the integrator alone. The gravity time step is the N-body criterion
//! `η √(ε/|a|)` on the total acceleration (Gadget-2's form; η = 0.2 is its default accuracy
//! 0.025 in `√(2 η' ε/|a|)`).

use super::{Gas, HydroError, HydroParams};
use crate::backend::Backend;
use crate::device::bh::Body;
use crate::device::nbody::{criterion, potential_energy};
use serde::{Deserialize, Serialize};

/// How the gravity of the gas is summed.
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
pub enum GravitySolver {
    /// Barnes–Hut (float32 tree, opening angle θ): O(N log N).
    #[default]
    Tree,
    /// Float64 direct summation: O(N²), exact up to rounding; the reference at small N.
    Direct,
}

/// Self-gravity parameters (used when `HydroParams::self_gravity` is on).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gravity {
    /// Gravitational constant.
    pub g: f64,
    /// Plummer softening length ε (fixed).
    pub eps: f64,
    /// Opening angle of the tree.
    pub theta: f64,
    pub solver: GravitySolver,
    /// Accuracy η of the time step `η √(ε/|a|)`.
    pub eta: f64,
}

impl Default for Gravity {
    fn default() -> Self {
        Gravity {
            g: 1.0,
            eps: 0.02,
            theta: 0.5,
            solver: GravitySolver::Tree,
            eta: 0.2,
        }
    }
}

impl Gravity {
    /// Finite positive G, ε and η, and 0 < θ ≤ 1.5 for the tree.
    pub fn validate(&self) -> Result<(), HydroError> {
        let bad = |s: String| Err(HydroError::Gravity(s));
        if !(self.g.is_finite() && self.g > 0.0) {
            return bad(format!("G = {} must be positive and finite", self.g));
        }
        if !(self.eps.is_finite() && self.eps > 0.0) {
            return bad(format!(
                "softening ε = {} must be positive and finite",
                self.eps
            ));
        }
        if !(self.eta.is_finite() && self.eta > 0.0) {
            return bad(format!("η = {} must be positive and finite", self.eta));
        }
        if self.solver == GravitySolver::Tree && !(self.theta > 0.0 && self.theta <= 1.5) {
            return bad(format!(
                "opening angle θ = {} must be in (0, 1.5]",
                self.theta
            ));
        }
        Ok(())
    }
}

/// Accelerations `G ∇φ` and potentials `G φ` (the particle's own term excluded) of every
/// particle at `pos`, by the solver of `grav` (the tree on `backend`).
pub fn accelerations(
    pos: &[[f64; 3]],
    mass: &[f64],
    grav: &Gravity,
    backend: &Backend,
) -> Result<(Vec<[f64; 3]>, Vec<f64>), HydroError> {
    accelerations_of(pos, mass, grav, backend, None)
}

/// [`accelerations`] where only the particles marked in `active` (all when `None`) need their
/// values: the CPU's tree walks only the groups holding one of them (others may get zeros).
pub fn accelerations_of(
    pos: &[[f64; 3]],
    mass: &[f64],
    grav: &Gravity,
    backend: &Backend,
    active: Option<&[bool]>,
) -> Result<(Vec<[f64; 3]>, Vec<f64>), HydroError> {
    let n = pos.len();
    match grav.solver {
        GravitySolver::Direct => {
            let mut acc = vec![[0.0; 3]; n];
            let mut pot = vec![0.0; n];
            crate::nbody::cpu::direct_sum(pos, mass, grav.eps, &mut acc, &mut pot);
            let g = grav.g;
            acc.iter_mut().flatten().for_each(|a| *a *= g);
            pot.iter_mut().for_each(|p| *p *= g);
            Ok((acc, pot))
        }
        GravitySolver::Tree => {
            // Float32 positions relative to the centre of mass keep their precision wherever
            // the gas sits.
            let mtot: f64 = mass.iter().sum();
            let com: [f64; 3] = core::array::from_fn(|k| {
                pos.iter().zip(mass).map(|(p, m)| p[k] * m).sum::<f64>() / mtot
            });
            let bodies: Vec<Body> = pos
                .iter()
                .zip(mass)
                .map(|(p, &m)| Body {
                    x: (p[0] - com[0]) as f32,
                    y: (p[1] - com[1]) as f32,
                    z: (p[2] - com[2]) as f32,
                    m: m as f32,
                })
                .collect();
            let p = crate::bh::Params {
                theta: grav.theta as f32,
                eps: grav.eps as f32,
                g: grav.g as f32,
            };
            let (acc, pot) = crate::bh::potential_of(backend, &bodies, &p, active)
                .map_err(|e| HydroError::Gravity(format!("tree: {e}")))?;
            Ok((
                acc.iter()
                    .map(|a| [a.x as f64, a.y as f64, a.z as f64])
                    .collect(),
                pot.iter().map(|&p| p as f64).collect(),
            ))
        }
    }
}

/// Adds the self-gravity accelerations to `gas.acc` (after the hydro force pass) and returns the
/// potentials `G φ`; empty when self-gravity is off.
pub fn apply(
    gas: &mut Gas,
    params: &HydroParams,
    backend: &Backend,
) -> Result<Vec<f64>, HydroError> {
    if !params.self_gravity {
        return Ok(Vec::new());
    }
    let (acc, pot) = accelerations(&gas.pos, &gas.mass, &params.gravity, backend)?;
    add(gas, &acc);
    Ok(pot)
}

/// Adds gravity's accelerations to the hydro ones.
pub fn add(gas: &mut Gas, acc: &[[f64; 3]]) {
    for (a, g) in gas.acc.iter_mut().zip(acc) {
        for k in 0..3 {
            a[k] += g[k];
        }
    }
}

/// The gravity time step of a particle with acceleration `acc`: infinite without self-gravity.
pub fn dt(params: &HydroParams, acc: [f64; 3]) -> f64 {
    if params.self_gravity {
        criterion(params.gravity.eta, params.gravity.eps, acc)
    } else {
        f64::INFINITY
    }
}

/// The potential energy `W = Σ m φ / 2` of potentials `pot` (0 when empty).
pub fn potential_energy_of(mass: &[f64], pot: &[f64]) -> f64 {
    pot.iter()
        .zip(mass)
        .map(|(&p, &m)| potential_energy(m, p))
        .sum()
}
