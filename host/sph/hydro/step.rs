//! Time integration: kick–drift–kick leapfrog with one global CFL time step, or individual
//! steps on a power-of-two hierarchy ([`super::block`]). Within a step the forces see the velocities and energies predicted to its end, as in
//! Gadget-2; α follows the Morris–Monaghan equation in the closing kick. Self-gravity, when on,
//! is added to the hydro accelerations after each force pass ([`super::gravity`]). The density
//! and force passes and the tree gravity run on the backend's device ([`super::gpu`] on a GPU);
//! the integration is float64 on the host either way.

use super::density::density_of;
use super::force::forces_of;
use super::gravity;
use super::{Boundary, Collisionless, Gas, HydroError, HydroParams, validate};
use crate::backend::Backend;
use crate::device::sph::hydro::alpha_rate;
use rayon::prelude::*;
use std::time::Instant;

/// Wall-clock seconds per stage, summed over the passes so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// Smoothing lengths and densities (on a GPU: with the step's tree build).
    pub density: f64,
    pub forces: f64,
    pub gravity: f64,
    /// Kicks, drifts, α and the time step, on the host.
    pub integration: f64,
    /// Of the stages above, the GPU's kernels (tree, walks, updates): the rest on a GPU run is
    /// the host's share and the transfers. Not in [`Self::total`].
    pub kernels: f64,
}

impl StageTimes {
    pub fn total(&self) -> f64 {
        self.density + self.forces + self.gravity + self.integration
    }
}

/// Conserved totals at one time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Diagnostics {
    pub t: f64,
    pub step: u64,
    pub kinetic: f64,
    pub thermal: f64,
    /// Gravitational potential energy `Σ m φ / 2` (0 without self-gravity).
    pub potential: f64,
    /// Kinetic + thermal + potential.
    pub total: f64,
    pub momentum: [f64; 3],
    /// `Σ m |v|`: the scale against which momentum's rounding is measured.
    pub momentum_scale: f64,
    /// Angular momentum `Σ m x × v` about the origin.
    pub angular_momentum: [f64; 3],
}

/// A hydro run on the CPU.
#[derive(Clone)]
pub struct Sim {
    pub gas: Gas,
    /// Collisionless particles stepped with the gas, under gravity alone (empty: gas only).
    /// Where a method takes a particle index, these follow the gas: `gas.len() + j`.
    pub collisionless: Collisionless,
    pub params: HydroParams,
    pub boundary: Boundary,
    pub t: f64,
    pub step: u64,
    /// A time step below this stops the run (`HydroError::DtCollapse`).
    pub dt_floor: f64,
    /// Gravitational potentials `G φ`, each at its particle's last force pass, the gas's then
    /// the collisionless particles' (empty without self-gravity).
    pub phi: Vec<f64>,
    /// Where the passes run.
    pub backend: Backend,
    pub times: StageTimes,
    /// Particle updates (force evaluations) so far, the first pass's included.
    pub updates: u64,
}

impl Sim {
    /// Validates the input, wraps the positions into a periodic box, and computes densities and
    /// forces at `t = 0` (on the CPU).
    pub fn new(gas: Gas, params: HydroParams, boundary: Boundary) -> Result<Self, HydroError> {
        Self::with_backend(gas, params, boundary, Backend::Cpu)
    }

    /// [`Sim::new`] with the passes on `backend`.
    pub fn with_backend(
        gas: Gas,
        params: HydroParams,
        boundary: Boundary,
        backend: Backend,
    ) -> Result<Self, HydroError> {
        Self::with_collisionless(gas, Collisionless::default(), params, boundary, backend)
    }

    /// [`Sim::with_backend`] with collisionless particles beside the gas (they need
    /// self-gravity).
    pub fn with_collisionless(
        mut gas: Gas,
        mut collisionless: Collisionless,
        params: HydroParams,
        boundary: Boundary,
        backend: Backend,
    ) -> Result<Self, HydroError> {
        validate(&gas, &params, &boundary)?;
        super::validate_collisionless(&collisionless, &params)?;
        for p in gas.pos.iter_mut() {
            *p = boundary.wrap(*p);
        }
        collisionless.acc = vec![[0.0; 3]; collisionless.len()];
        let mut sim = Sim {
            gas,
            collisionless,
            params,
            boundary,
            t: 0.0,
            step: 0,
            dt_floor: 1e-12,
            phi: Vec::new(),
            backend,
            times: StageTimes::default(),
            updates: 0,
        };
        let vel = sim.gas.vel.clone();
        let u = sim.gas.u.clone();
        sim.passes(&vel, &u, None)?;
        Ok(sim)
    }

    /// Densities, forces and gravity of the current positions with velocities `vel` and
    /// energies `u`, for the particles `active` (all when `None`; the others keep their
    /// accelerations, `du/dt` and signal velocities).
    pub(super) fn passes(
        &mut self,
        vel: &[[f64; 3]],
        u: &[f64],
        active: Option<&[usize]>,
    ) -> Result<(), HydroError> {
        let n_gas = self.gas.len();
        let n_all = n_gas + self.collisionless.len();
        self.updates += active.map_or(n_all, |a| a.len()) as u64;
        // The gas among the active particles (they come first, in order).
        let active_gas = active.map(|a| &a[..a.partition_point(|&i| i < n_gas)]);
        let (g, p, b) = (&mut self.gas, &self.params, &self.boundary);
        let grav_on = p.self_gravity;
        let mixed = !self.collisionless.is_empty();
        let mut grav = None;
        match &self.backend {
            Backend::Cpu => {
                let t0 = Instant::now();
                density_of(g, vel, u, p, b, active_gas)?;
                let t1 = Instant::now();
                forces_of(g, vel, u, p, b, active_gas);
                self.times.density += secs(t0, t1);
                self.times.forces += secs(t1, Instant::now());
            }
            Backend::Gpu(gpu) => {
                let t0 = Instant::now();
                let mut tree = super::gpu::StepTree::new(gpu, g, b)?;
                tree.density_of(gpu, g, vel, u, p, b, active_gas)?;
                let t1 = Instant::now();
                tree.forces_of(gpu, g, vel, u, p, active_gas)?;
                let t2 = Instant::now();
                self.times.density += secs(t0, t1);
                self.times.forces += secs(t1, t2);
                // The tree solver's gravity walks the step's tree (the gas's alone: with
                // collisionless particles it takes a tree of everything below); the direct
                // sum is the CPU's.
                if grav_on && !mixed && p.gravity.solver == super::GravitySolver::Tree {
                    grav = Some(tree.gravity_of(gpu, &p.gravity, active_gas)?);
                    self.times.gravity += secs(t2, Instant::now());
                }
                self.times.kernels +=
                    1e-3 * (tree.tree_ms + tree.density_ms + tree.force_ms + tree.gravity_ms);
            }
        }
        if grav_on && grav.is_none() {
            let t0 = Instant::now();
            let mask = active.map(|a| {
                let mut m = vec![false; n_all];
                a.iter().for_each(|&i| m[i] = true);
                m
            });
            let c = &self.collisionless;
            let (pos, mass) = if mixed {
                (
                    [g.pos.as_slice(), &c.pos].concat(),
                    [g.mass.as_slice(), &c.mass].concat(),
                )
            } else {
                (g.pos.clone(), g.mass.clone())
            };
            // A tree of gas and collisionless particles together runs on the backend's device.
            let on = if mixed { &self.backend } else { &Backend::Cpu };
            grav = Some(gravity::accelerations_of(
                &pos,
                &mass,
                &p.gravity,
                on,
                mask.as_deref(),
            )?);
            self.times.gravity += secs(t0, Instant::now());
        }
        if let Some((acc, phi)) = grav {
            let c = &mut self.collisionless;
            let apply = |i: usize| {
                if i < n_gas {
                    for (ak, gk) in g.acc[i].iter_mut().zip(acc[i]) {
                        *ak += gk;
                    }
                } else {
                    c.acc[i - n_gas] = acc[i];
                }
            };
            match active {
                None => {
                    g.acc.par_iter_mut().zip(&acc[..n_gas]).for_each(|(a, ga)| {
                        for (ak, gk) in a.iter_mut().zip(ga) {
                            *ak += gk;
                        }
                    });
                    c.acc.copy_from_slice(&acc[n_gas..]);
                }
                Some(a) => a.iter().copied().for_each(apply),
            }
            match active {
                Some(a) if self.phi.len() == phi.len() => {
                    a.iter().for_each(|&i| self.phi[i] = phi[i]);
                }
                _ => self.phi = phi,
            }
        }
        Ok(())
    }

    /// The CFL time step `min_i C h_i / v_sig,i` (and the gravity step `η √(ε/|a_i|)` with
    /// self-gravity) and the particle that sets it.
    pub fn cfl(&self) -> (f64, usize) {
        (0..self.gas.len() + self.collisionless.len())
            .into_par_iter()
            .map(|i| (self.dt_of(i), i))
            .reduce(
                || (f64::INFINITY, 0),
                |a, b| {
                    if b.0 < a.0 || (b.0 == a.0 && b.1 < a.1) {
                        b
                    } else {
                        a
                    }
                },
            )
    }

    /// A step `dt` that particle `index` needs, refused below the floor.
    pub(super) fn check_dt(&self, dt: f64, index: usize) -> Result<(), HydroError> {
        if dt.is_nan() || dt < self.dt_floor {
            return Err(HydroError::DtCollapse {
                dt,
                t: self.t,
                floor: self.dt_floor,
                index,
            });
        }
        Ok(())
    }

    /// One step of at most `dt_max`; returns the time advanced. With block steps
    /// (`block_levels > 0`) that is a cycle of individual steps ([`super::block`]), else one
    /// KDK step shared by every particle.
    pub fn step(&mut self, dt_max: f64) -> Result<f64, HydroError> {
        if self.params.block_levels > 0 {
            return self.cycle(dt_max);
        }
        let (cfl, index) = self.cfl();
        let dt = cfl.min(dt_max);
        self.check_dt(dt, index)?;
        let half = 0.5 * dt;
        let t0 = Instant::now();
        let g = &mut self.gas;
        let n = g.len();
        // Kick, drift.
        let boundary = self.boundary;
        g.vel
            .par_iter_mut()
            .zip(g.pos.par_iter_mut())
            .zip(g.u.par_iter_mut())
            .zip(g.acc.par_iter().zip(g.du.par_iter()))
            .for_each(|(((v, x), u), (a, du))| {
                for k in 0..3 {
                    v[k] += half * a[k];
                    x[k] += dt * v[k];
                }
                *u += half * du;
                *x = boundary.wrap(*x);
            });
        self.collisionless.kick_drift(half, dt);
        check_energy(g, self.t, self.params.u_floor)?;
        // Predicted to the end of the step, for the forces.
        let vel: Vec<[f64; 3]> = (0..n)
            .into_par_iter()
            .map(|i| core::array::from_fn(|k| g.vel[i][k] + half * g.acc[i][k]))
            .collect();
        let u: Vec<f64> = (0..n)
            .into_par_iter()
            .map(|i| (g.u[i] + half * g.du[i]).max(0.0))
            .collect();
        self.times.integration += secs(t0, Instant::now());
        self.passes(&vel, &u, None)?;
        // Kick, α.
        let t0 = Instant::now();
        self.collisionless.kick_drift(half, 0.0);
        let g = &mut self.gas;
        let visc = &self.params.viscosity;
        let rates = (&g.div_v, &g.cs, &g.h, &g.acc, &g.du);
        (&mut g.vel, &mut g.u, &mut g.alpha, rates)
            .into_par_iter()
            .for_each(|(v, u, alpha, (&div_v, &cs, &h, a, &du))| {
                for k in 0..3 {
                    v[k] += half * a[k];
                }
                *u += half * du;
                if visc.alpha_min < visc.alpha_max {
                    let rate = alpha_rate(*alpha, div_v, cs, h, visc);
                    *alpha = (*alpha + dt * rate).clamp(visc.alpha_min, visc.alpha_max);
                }
            });
        self.times.integration += secs(t0, Instant::now());
        self.t += dt;
        self.step += 1;
        check_energy(&mut self.gas, self.t, self.params.u_floor)?;
        check_collisionless(&self.collisionless)?;
        Ok(dt)
    }

    /// Steps until `t_end` (the last step shortened to land on it).
    pub fn run_to(&mut self, t_end: f64) -> Result<(), HydroError> {
        while self.t < t_end * (1.0 - 1e-12) {
            self.step(t_end - self.t)?;
        }
        Ok(())
    }

    pub fn diagnostics(&self) -> Diagnostics {
        let g = &self.gas;
        let mut d = Diagnostics {
            t: self.t,
            step: self.step,
            kinetic: 0.0,
            thermal: 0.0,
            potential: gravity::potential_energy_of(
                &[g.mass.as_slice(), &self.collisionless.mass].concat(),
                &self.phi,
            ),
            total: 0.0,
            momentum: [0.0; 3],
            momentum_scale: 0.0,
            angular_momentum: [0.0; 3],
        };
        for i in 0..g.len() {
            d.thermal += g.mass[i] * g.u[i];
        }
        let c = &self.collisionless;
        let moving =
            (g.mass.iter().zip(&g.vel).zip(&g.pos)).chain(c.mass.iter().zip(&c.vel).zip(&c.pos));
        for ((&m, &v), &x) in moving {
            let v2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
            d.kinetic += 0.5 * m * v2;
            for (p, vk) in d.momentum.iter_mut().zip(v) {
                *p += m * vk;
            }
            d.momentum_scale += m * v2.sqrt();
            let l = crate::device::sph::hydro::cross(x, v);
            for (lk, l) in d.angular_momentum.iter_mut().zip(l) {
                *lk += m * l;
            }
        }
        d.total = d.kinetic + d.thermal + d.potential;
        d
    }
}

fn secs(a: Instant, b: Instant) -> f64 {
    (b - a).as_secs_f64()
}

/// Raises the energies to `floor` where there is one; then a negative or non-finite energy (a
/// time step too long for the cooling by expansion) stops the run with the particle named.
pub(super) fn check_energy(g: &mut Gas, t: f64, floor: Option<f64>) -> Result<(), HydroError> {
    if let Some(f) = floor {
        // NaN stays NaN (and is refused below).
        g.u.par_iter_mut().filter(|u| **u < f).for_each(|u| *u = f);
    }
    let g: &Gas = g;
    let bad = |i: usize| {
        !(g.u[i] >= 0.0 && g.u[i].is_finite()) || !g.vel[i].iter().all(|v| v.is_finite())
    };
    if let Some(i) = (0..g.len()).into_par_iter().find_first(|&i| bad(i)) {
        if !(g.u[i] >= 0.0 && g.u[i].is_finite()) {
            return Err(HydroError::BadValue {
                index: i,
                what: "u",
                value: g.u[i],
                why: if t > 0.0 {
                    "became negative or non-finite during the run"
                } else {
                    "must be non-negative and finite"
                },
            });
        }
        if !g.vel[i].iter().all(|v| v.is_finite()) {
            return Err(HydroError::BadValue {
                index: i,
                what: "velocity",
                value: g.vel[i][0],
                why: "became non-finite during the run",
            });
        }
    }
    Ok(())
}

impl Collisionless {
    /// Kicks every particle by `kick` with its acceleration, then drifts it by `drift`.
    fn kick_drift(&mut self, kick: f64, drift: f64) {
        self.vel
            .par_iter_mut()
            .zip(self.pos.par_iter_mut())
            .zip(self.acc.par_iter())
            .for_each(|((v, x), a)| {
                for k in 0..3 {
                    v[k] += kick * a[k];
                    x[k] += drift * v[k];
                }
            });
    }
}

/// A non-finite collisionless velocity (a time step too long for a close encounter) stops the
/// run with the particle named.
pub(super) fn check_collisionless(c: &Collisionless) -> Result<(), HydroError> {
    match c.vel.iter().position(|v| !v.iter().all(|x| x.is_finite())) {
        None => Ok(()),
        Some(i) => Err(HydroError::BadCollisionless {
            index: i,
            what: "velocity",
            value: c.vel[i][0],
            why: "became non-finite during the run",
        }),
    }
}
