//! The CPU integrator: kick-drift-kick leapfrog with a shared time step, forces and potentials
//! from a float64 direct sum over all pairs (rayon over particles; O(N²): the reference at small
//! N that the GPU runs are checked against) or from the Barnes–Hut tree's CPU twin (the GPU's
//! opening decisions, θ or the relative criterion, quadrupoles; float32 like the GPU), and the
//! run's diagnostics.

use super::Particles;
use crate::device::nbody as dev;
use rayon::prelude::*;
use std::io::Write;

/// What stops a run from starting or continuing.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SimError {
    #[error("no particles")]
    Empty,
    #[error("particle {index} (id {id}) has a non-finite position, velocity or mass")]
    NonFinite { index: usize, id: u64 },
    #[error("particle {index} (id {id}) has mass {mass}; masses must be positive")]
    NonPositiveMass { index: usize, id: u64, mass: f64 },
    #[error("softening ε = {0} must be finite and ≥ 0")]
    Eps(f64),
    #[error("time step {0} must be finite and non-zero")]
    Dt(f64),
    #[error("blow-up at step {step} (t = {time}): particle {index} (id {id}) is no longer finite")]
    BlowUp {
        step: u64,
        time: f64,
        index: usize,
        id: u64,
    },
}

/// How the CPU integrator evaluates forces.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Forces {
    /// float64 direct summation over all pairs.
    Direct,
    /// The tree walk of the GPU's group kernel on the CPU (`bh::cpu::gravity_group`): θ, the
    /// relative criterion after the first evaluation (as the GPU loop), quadrupoles. Potentials
    /// (for the diagnostics) by the monopole walk.
    Tree {
        theta: f64,
        quadrupole: bool,
        relative: Option<crate::bh::Relative>,
    },
}

/// Tree accelerations and potentials (G = 1) of `pos`/`mass` in float32, as the GPU computes
/// them; `previous` (the last step's accelerations) switches on the relative criterion.
fn tree_forces(
    pos: &[[f64; 3]],
    mass: &[f64],
    eps: f64,
    (theta, quadrupole, relative): (f64, bool, Option<crate::bh::Relative>),
    previous: &[[f64; 3]],
    acc: &mut [[f64; 3]],
    pot: &mut [f64],
) {
    use crate::bh::{Params, cpu};
    use crate::device::bh::{Accel, Body};
    let bodies: Vec<Body> = pos
        .iter()
        .zip(mass)
        .map(|(x, &m)| Body {
            x: x[0] as f32,
            y: x[1] as f32,
            z: x[2] as f32,
            m: m as f32,
        })
        .collect();
    let p = Params {
        theta: theta as f32,
        eps: eps as f32,
        ..Params::default()
    };
    let mut tree = cpu::build_tree(&bodies);
    cpu::sort_with_groups(&mut tree, crate::device::bh::GROUP_SIZE_2);
    let old: Vec<Accel>;
    let rel = match relative {
        Some(r) if previous.iter().any(|a| a.iter().any(|&c| c != 0.0)) => {
            old = previous
                .iter()
                .map(|a| Accel {
                    x: a[0] as f32,
                    y: a[1] as f32,
                    z: a[2] as f32,
                })
                .collect();
            Some((r, old.as_slice()))
        }
        _ => None,
    };
    let a = cpu::gravity_group(&bodies, &tree, &p, quadrupole, rel);
    let (_, phi) = cpu::potential_group(&bodies, &tree, &p);
    for i in 0..pos.len() {
        acc[i] = [a[i].x as f64, a[i].y as f64, a[i].z as f64];
        pot[i] = phi[i] as f64;
    }
}

/// Accelerations and potentials of every particle from all others, Plummer-softened with `eps`
/// (G = 1), into `acc` and `pot`. Each pair term is the one formula of
/// [`dev::pair_accel_pot`], evaluated from both sides with exactly negated offsets.
pub fn direct_sum(pos: &[[f64; 3]], mass: &[f64], eps: f64, acc: &mut [[f64; 3]], pot: &mut [f64]) {
    let eps2 = eps * eps;
    acc.par_iter_mut()
        .zip(pot.par_iter_mut())
        .enumerate()
        .for_each(|(i, (a, phi))| {
            let xi = pos[i];
            let mut sa = [0.0f64; 3];
            let mut sp = 0.0f64;
            for (j, (xj, &mj)) in pos.iter().zip(mass).enumerate() {
                if j == i {
                    continue;
                }
                let d = [xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]];
                let (aj, pj) = dev::pair_accel_pot(d, mj, eps2);
                for k in 0..3 {
                    sa[k] += aj[k];
                }
                sp += pj;
            }
            *a = sa;
            *phi = sp;
        });
}

/// Checks that a particle set can be integrated.
pub fn validate(p: &Particles) -> Result<(), SimError> {
    if p.is_empty() {
        return Err(SimError::Empty);
    }
    for i in 0..p.len() {
        let finite = p.pos[i].iter().chain(&p.vel[i]).all(|c| c.is_finite());
        if !finite || !p.mass[i].is_finite() {
            return Err(SimError::NonFinite {
                index: i,
                id: p.id[i],
            });
        }
        if p.mass[i] <= 0.0 {
            return Err(SimError::NonPositiveMass {
                index: i,
                id: p.id[i],
                mass: p.mass[i],
            });
        }
    }
    Ok(())
}

/// A run: the particles, their current accelerations and potentials, and the shared step.
#[derive(Clone, Debug)]
pub struct Simulation {
    pub particles: Particles,
    pub acc: Vec<[f64; 3]>,
    pub pot: Vec<f64>,
    pub time: f64,
    pub steps: u64,
    /// Plummer softening length ε.
    pub eps: f64,
    /// The shared step (negative runs backwards).
    pub dt: f64,
    pub forces: Forces,
}

impl Simulation {
    /// Validates the set and computes the first forces by float64 direct summation.
    pub fn new(particles: Particles, eps: f64, dt: f64) -> Result<Self, SimError> {
        Self::with_forces(particles, eps, dt, Forces::Direct)
    }

    /// [`Simulation::new`] with the forces of `forces`.
    pub fn with_forces(
        particles: Particles,
        eps: f64,
        dt: f64,
        forces: Forces,
    ) -> Result<Self, SimError> {
        validate(&particles)?;
        if !(eps.is_finite() && eps >= 0.0) {
            return Err(SimError::Eps(eps));
        }
        if !(dt.is_finite() && dt != 0.0) {
            return Err(SimError::Dt(dt));
        }
        let n = particles.len();
        let mut sim = Simulation {
            particles,
            acc: vec![[0.0; 3]; n],
            pot: vec![0.0; n],
            time: 0.0,
            steps: 0,
            eps,
            dt,
            forces,
        };
        sim.forces();
        Ok(sim)
    }

    fn forces(&mut self) {
        let p = &self.particles;
        match self.forces {
            Forces::Direct => direct_sum(&p.pos, &p.mass, self.eps, &mut self.acc, &mut self.pot),
            Forces::Tree {
                theta,
                quadrupole,
                relative,
            } => {
                let previous = self.acc.clone();
                let how = (theta, quadrupole, relative);
                tree_forces(
                    &p.pos,
                    &p.mass,
                    self.eps,
                    how,
                    &previous,
                    &mut self.acc,
                    &mut self.pot,
                );
            }
        }
    }

    /// One kick-drift-kick step; stops with [`SimError::BlowUp`] at the first particle that is
    /// no longer finite (the state is then that of the failed step).
    pub fn step(&mut self) -> Result<(), SimError> {
        let dt = self.dt;
        let p = &mut self.particles;
        p.vel
            .par_iter_mut()
            .zip(p.pos.par_iter_mut())
            .zip(&self.acc)
            .for_each(|((v, x), &a)| {
                dev::half_kick(v, a, dt);
                dev::drift(x, *v, dt);
            });
        self.forces();
        let p = &mut self.particles;
        p.vel
            .par_iter_mut()
            .zip(&self.acc)
            .for_each(|(v, &a)| dev::half_kick(v, a, dt));
        self.steps += 1;
        self.time += dt;
        let bad = (0..p.len()).find(|&i| {
            !(p.pos[i].iter().chain(&p.vel[i]).all(|c| c.is_finite()) && self.pot[i].is_finite())
        });
        match bad {
            Some(index) => Err(SimError::BlowUp {
                step: self.steps,
                time: self.time,
                index,
                id: p.id[index],
            }),
            None => Ok(()),
        }
    }

    /// `steps` steps.
    pub fn run(&mut self, steps: u64) -> Result<(), SimError> {
        (0..steps).try_for_each(|_| self.step())
    }

    /// The diagnostics of the current state.
    pub fn diagnostics(&self) -> Diagnostics {
        Diagnostics::compute(&self.particles, &self.pot, self.time)
    }
}

/// Mass fractions of the Lagrangian radii in [`Diagnostics`].
pub const LAGRANGIAN_FRACTIONS: [f64; 5] = [0.1, 0.25, 0.5, 0.75, 0.9];

/// Conserved quantities and structure of one state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Diagnostics {
    pub time: f64,
    pub kinetic: f64,
    /// `Σ m φ / 2` (each pair once).
    pub potential: f64,
    pub total: f64,
    pub momentum: [f64; 3],
    /// About the origin.
    pub angular_momentum: [f64; 3],
    /// `2K/|W|`: 1 in equilibrium.
    pub virial_ratio: f64,
    /// Radii about the centre of mass enclosing [`LAGRANGIAN_FRACTIONS`] of the mass.
    pub lagrangian_radii: [f64; 5],
}

impl Diagnostics {
    /// The diagnostics of `p` with potentials `pot` (per unit mass, as [`direct_sum`] gives).
    pub fn compute(p: &Particles, pot: &[f64], time: f64) -> Self {
        let mut d = Diagnostics {
            time,
            kinetic: 0.0,
            potential: 0.0,
            total: 0.0,
            momentum: [0.0; 3],
            angular_momentum: [0.0; 3],
            virial_ratio: 0.0,
            lagrangian_radii: [0.0; 5],
        };
        for (((&m, &x), &v), &phi) in p.mass.iter().zip(&p.pos).zip(&p.vel).zip(pot) {
            d.kinetic += dev::kinetic_energy(m, v);
            d.potential += dev::potential_energy(m, phi);
            for (pk, vk) in d.momentum.iter_mut().zip(v) {
                *pk += m * vk;
            }
            d.angular_momentum[0] += m * (x[1] * v[2] - x[2] * v[1]);
            d.angular_momentum[1] += m * (x[2] * v[0] - x[0] * v[2]);
            d.angular_momentum[2] += m * (x[0] * v[1] - x[1] * v[0]);
        }
        d.total = d.kinetic + d.potential;
        d.virial_ratio = 2.0 * d.kinetic / d.potential.abs();
        d.lagrangian_radii = lagrangian_radii(p, &LAGRANGIAN_FRACTIONS);
        d
    }

    /// The CSV header matching [`Diagnostics::csv_row`].
    pub const CSV_HEADER: &'static str = "time,kinetic,potential,total,px,py,pz,lx,ly,lz,\
        virial_ratio,r10,r25,r50,r75,r90";

    /// One CSV line (no newline); shortest round-trip decimal of each value.
    pub fn csv_row(&self) -> String {
        let mut f = vec![self.time, self.kinetic, self.potential, self.total];
        f.extend(self.momentum);
        f.extend(self.angular_momentum);
        f.push(self.virial_ratio);
        f.extend(self.lagrangian_radii);
        f.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Writes [`Diagnostics::csv_row`] and a newline.
    pub fn write_csv_row(&self, w: &mut impl Write) -> std::io::Result<()> {
        writeln!(w, "{}", self.csv_row())
    }
}

/// Radii about the centre of mass that enclose each of `fractions` of the total mass.
pub fn lagrangian_radii<const K: usize>(p: &Particles, fractions: &[f64; K]) -> [f64; K] {
    let (c, _) = p.centre_of_mass();
    let mut rm: Vec<(f64, f64)> = p
        .pos
        .iter()
        .zip(&p.mass)
        .map(|(x, &m)| {
            let d = [x[0] - c[0], x[1] - c[1], x[2] - c[2]];
            ((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt(), m)
        })
        .collect();
    // Parallel: the GPU loop's diagnostics sort millions of radii.
    rm.par_sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let total = p.total_mass();
    let mut out = [0.0; K];
    let mut cum = 0.0;
    let mut k = 0;
    for &(r, m) in &rm {
        cum += m;
        while k < K && cum >= fractions[k] * total {
            out[k] = r;
            k += 1;
        }
    }
    // Rounding in the running sum can leave the last fractions just short of the total.
    for o in out.iter_mut().skip(k) {
        *o = rm.last().map_or(0.0, |x| x.0);
    }
    out
}

/// Kinetic and potential energy of a particle set (direct sum with softening `eps`): for checking
/// initial conditions.
pub fn energies(p: &Particles, eps: f64) -> (f64, f64) {
    let mut acc = vec![[0.0; 3]; p.len()];
    let mut pot = vec![0.0; p.len()];
    direct_sum(&p.pos, &p.mass, eps, &mut acc, &mut pot);
    let d = Diagnostics::compute(p, &pot, 0.0);
    (d.kinetic, d.potential)
}

#[cfg(test)]
mod tests {
    use super::super::{HALO, ic};
    use super::*;

    /// Two bodies on a Kepler ellipse of semi-major axis 1 and eccentricity `e`, starting at
    /// pericentre on +x, centre of mass at rest at the origin.
    fn kepler(m1: f64, m2: f64, e: f64) -> Particles {
        let m = m1 + m2;
        let rp = 1.0 - e;
        let vp = (m * (1.0 + e) / rp).sqrt();
        let mut p = Particles::default();
        p.push(
            [-m2 / m * rp, 0.0, 0.0],
            [0.0, -m2 / m * vp, 0.0],
            m1,
            1,
            HALO,
        );
        p.push(
            [m1 / m * rp, 0.0, 0.0],
            [0.0, m1 / m * vp, 0.0],
            m2,
            2,
            HALO,
        );
        p
    }

    #[test]
    fn kepler_orbit_keeps_period_and_energy_over_100_orbits() {
        let (m1, m2, e) = (0.8, 0.2, 0.5);
        let period = 2.0 * std::f64::consts::PI; // a = 1, G·M = 1
        let per_orbit = 2000;
        let mut sim = Simulation::new(kepler(m1, m2, e), 0.0, period / per_orbit as f64).unwrap();
        let e0 = sim.diagnostics().total;
        let want_e = -m1 * m2 / 2.0; // −G m1 m2 / (2a)
        assert!((e0 / want_e - 1.0).abs() < 1e-12, "E0 {e0} vs {want_e}");
        let sep = |s: &Simulation| {
            let p = &s.particles.pos;
            ((p[1][0] - p[0][0]).powi(2) + (p[1][1] - p[0][1]).powi(2)).sqrt()
        };
        // Pericentre passages: local minima of the separation, timed by a parabola through the
        // three samples around each.
        let mut passes = Vec::new();
        let (mut r_prev2, mut r_prev) = (f64::NAN, sep(&sim));
        let mut max_de = 0.0f64;
        for _ in 0..100 * per_orbit + per_orbit / 2 {
            sim.step().unwrap();
            let r = sep(&sim);
            if r_prev < r_prev2 && r_prev < r {
                let denom = r_prev2 - 2.0 * r_prev + r;
                let shift = 0.5 * (r_prev2 - r) / denom;
                passes.push(sim.time - sim.dt * (1.0 - shift));
            }
            max_de = max_de.max((sim.diagnostics().total / e0 - 1.0).abs());
            (r_prev2, r_prev) = (r_prev, r);
        }
        assert_eq!(passes.len(), 100, "one pericentre per orbit");
        // Leapfrog shifts the radial frequency by O(dt²): 4e-5 at 2000 steps per orbit.
        let measured = passes[99] / 100.0;
        assert!(
            (measured / period - 1.0).abs() < 1e-4,
            "period {measured} vs {period}"
        );
        // Leapfrog: the energy error oscillates, bounded, with no secular drift.
        assert!(max_de < 1e-4, "max |ΔE/E| = {max_de}");
        let end = (sim.diagnostics().total / e0 - 1.0).abs();
        assert!(end < 1e-4, "final |ΔE/E| = {end}");
    }

    #[test]
    fn leapfrog_is_time_reversible() {
        let p = ic::Plummer::henon(64, 5).generate();
        let mut sim = Simulation::new(p.clone(), 0.05, 1e-3).unwrap();
        sim.run(300).unwrap();
        let moved = sim.particles.pos[0][0] - p.pos[0][0];
        assert!(moved.abs() > 1e-6, "the system moved");
        sim.particles
            .vel
            .iter_mut()
            .flatten()
            .for_each(|v| *v = -*v);
        sim.run(300).unwrap();
        let mut worst = 0.0f64;
        for i in 0..p.len() {
            for k in 0..3 {
                worst = worst.max((sim.particles.pos[i][k] - p.pos[i][k]).abs());
                worst = worst.max((sim.particles.vel[i][k] + p.vel[i][k]).abs());
            }
        }
        assert!(worst < 1e-11, "returned within {worst}");
    }

    #[test]
    fn direct_sum_conserves_momentum_to_rounding() {
        let mut p = ic::Plummer::henon(200, 9).generate();
        // Unequal masses, so the pair terms are not trivially mirror images.
        for (i, m) in p.mass.iter_mut().enumerate() {
            *m *= 0.5 + (i % 7) as f64 / 7.0;
        }
        p.to_centre_of_mass_frame();
        let scale: f64 = (0..p.len())
            .map(|i| p.mass[i] * p.vel[i].iter().map(|v| v * v).sum::<f64>().sqrt())
            .sum();
        let mut sim = Simulation::new(p, 0.01, 2e-3).unwrap();
        let p0 = sim.diagnostics().momentum;
        let l0 = sim.diagnostics().angular_momentum;
        sim.run(200).unwrap();
        let d = sim.diagnostics();
        for k in 0..3 {
            assert!(
                (d.momentum[k] - p0[k]).abs() < 1e-13 * scale,
                "momentum {:?} from {p0:?}",
                d.momentum
            );
            assert!((d.angular_momentum[k] - l0[k]).abs() < 1e-12 * scale);
        }
    }

    #[test]
    fn blow_up_names_the_step_and_particle() {
        let mut p = kepler(0.5, 0.5, 0.0);
        p.pos[1] = p.pos[0]; // coincident and unsoftened: infinite force
        let mut sim = Simulation::new(p, 0.0, 0.01).unwrap();
        match sim.step() {
            Err(SimError::BlowUp { step: 1, index, .. }) => assert!(index < 2),
            other => panic!("{other:?}"),
        }
        let mut q = kepler(0.5, 0.5, 0.0);
        q.mass[1] = 0.0;
        assert!(matches!(
            Simulation::new(q, 0.0, 0.1),
            Err(SimError::NonPositiveMass { index: 1, .. })
        ));
        assert_eq!(
            Simulation::new(kepler(0.5, 0.5, 0.0), -1.0, 0.1).unwrap_err(),
            SimError::Eps(-1.0)
        );
    }

    #[test]
    fn diagnostics_of_a_known_state() {
        // Four unit masses on a ring of radius 1 (and none elsewhere): every Lagrangian radius is
        // 1; K = 4·½·1² = 2; W = −(4·1/√2 + 2·1/2) = −(2√2 + 1).
        let mut p = Particles::default();
        for (i, (x, y)) in [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)]
            .into_iter()
            .enumerate()
        {
            p.push([x, y, 0.0], [-y, x, 0.0], 1.0, i as u64, HALO);
        }
        let sim = Simulation::new(p, 0.0, 0.1).unwrap();
        let d = sim.diagnostics();
        assert!((d.kinetic - 2.0).abs() < 1e-15);
        let w = -(2.0 * 2f64.sqrt() + 1.0);
        assert!((d.potential - w).abs() < 1e-14, "{}", d.potential);
        assert!((d.virial_ratio - 4.0 / -w).abs() < 1e-14);
        assert_eq!(d.momentum.map(|x| x.abs() < 1e-15), [true; 3]);
        assert!((d.angular_momentum[2] - 4.0).abs() < 1e-15);
        assert_eq!(d.lagrangian_radii, [1.0; 5]);
        let row = d.csv_row();
        assert_eq!(
            row.split(',').count(),
            Diagnostics::CSV_HEADER.split(',').count()
        );
        let mut out = Vec::new();
        d.write_csv_row(&mut out).unwrap();
        let back: Vec<f64> = String::from_utf8(out)
            .unwrap()
            .trim_end()
            .split(',')
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(back[3], d.total, "values round-trip through the CSV");
    }

    /// The tree forces on the CPU follow the float64 direct sum: accelerations and potentials
    /// within the tree's error at θ 0.5 with quadrupoles (measured: accelerations median 8.7e-5,
    /// max 3.8e-3; monopole potentials median 6.2e-5), and a short run conserves energy.
    #[test]
    fn tree_forces_follow_the_direct_sum() {
        let p = ic::Plummer::henon(3000, 21).generate();
        let tree = Forces::Tree {
            theta: 0.5,
            quadrupole: true,
            relative: None,
        };
        let (eps, dt) = (0.02, 0.005);
        let d = Simulation::new(p.clone(), eps, dt).unwrap();
        let mut t = Simulation::with_forces(p, eps, dt, tree).unwrap();
        let norm = |a: [f64; 3]| (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
        let mut ea: Vec<f64> = (0..d.acc.len())
            .map(|i| {
                let (x, y) = (t.acc[i], d.acc[i]);
                norm([x[0] - y[0], x[1] - y[1], x[2] - y[2]]) / norm(y)
            })
            .collect();
        let mut ep: Vec<f64> = (0..d.pot.len())
            .map(|i| ((t.pot[i] - d.pot[i]) / d.pot[i]).abs())
            .collect();
        ea.sort_by(f64::total_cmp);
        ep.sort_by(f64::total_cmp);
        let (ma, mp) = (ea[ea.len() / 2], ep[ep.len() / 2]);
        let max_a = ea[ea.len() - 1];
        eprintln!(
            "tree vs direct: acceleration median {ma:.2e} max {max_a:.2e}, potential {mp:.2e}"
        );
        assert!(ma < 3e-4, "acceleration median {ma}");
        assert!(max_a < 1.5e-2, "acceleration max {max_a}");
        assert!(mp < 2e-4, "potential median {mp}");
        let e0 = t.diagnostics().total;
        t.run(40).unwrap();
        let drift = ((t.diagnostics().total - e0) / e0).abs();
        assert!(drift < 1e-3, "energy drift {drift}");
    }
}
