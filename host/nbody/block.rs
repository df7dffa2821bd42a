//! Block (power-of-two) individual time steps on the CPU reference (float64 direct summation),
//! as Gadget-2 does (Springel 2005, §5): particle `i` steps by `dt_max / 2^level_i` with the level
//! from `η·sqrt(ε/|a|)`; time runs on an integer timeline of `2^max_level` ticks per `dt_max`.
//! Between two ticks every particle drifts; on a tick the particles that begin a step there are
//! *active*: only their forces are computed (from all particles), they close their old step with
//! a half kick, take a new level (shorter at once, longer only where the timeline aligns) and
//! open the new step with a half kick. The formulas are `warpkit_device::nbody`'s, the ones the
//! GPU kernels use. What it buys is counted in [`BlockSimulation::force_evaluations`].

use super::Particles;
use super::cpu::{Diagnostics, SimError, validate};
use crate::device::nbody as dev;
use rayon::prelude::*;

/// A run with individual block time steps.
#[derive(Clone, Debug)]
pub struct BlockSimulation {
    pub particles: Particles,
    pub acc: Vec<[f64; 3]>,
    pub pot: Vec<f64>,
    /// Each particle's level: step `dt_max / 2^level`.
    pub level: Vec<u32>,
    /// The current tick (within the run; `2^max_level` ticks per `dt_max`).
    pub tick: u64,
    pub time: f64,
    /// The time at tick 0 (a restart's snapshot time).
    pub start: f64,
    pub eps: f64,
    pub eta: f64,
    pub dt_max: f64,
    pub max_level: u32,
    /// Particle force evaluations so far (one per active particle per tick; the shared step at
    /// the smallest level would do N per tick).
    pub force_evaluations: u64,
    /// Ticks at which some particle was active.
    pub substeps: u64,
    /// Force evaluations per level (counted at the level the particle was active on; the first
    /// evaluation at the level it then took).
    pub evaluations_by_level: [u64; dev::LEVEL_BINS],
}

impl BlockSimulation {
    /// Validates, computes every force, assigns levels and opens every particle's first step.
    pub fn new(
        particles: Particles,
        eps: f64,
        eta: f64,
        dt_max: f64,
        max_level: u32,
    ) -> Result<Self, SimError> {
        validate(&particles)?;
        if !(eps.is_finite() && eps > 0.0) {
            return Err(SimError::Eps(eps));
        }
        if !(dt_max.is_finite() && dt_max > 0.0 && eta.is_finite() && eta > 0.0) {
            return Err(SimError::Dt(dt_max));
        }
        let n = particles.len();
        let mut s = BlockSimulation {
            particles,
            acc: vec![[0.0; 3]; n],
            pot: vec![0.0; n],
            level: vec![0; n],
            tick: 0,
            time: 0.0,
            start: 0.0,
            eps,
            eta,
            dt_max,
            max_level: max_level.min(30),
            force_evaluations: 0,
            substeps: 0,
            evaluations_by_level: [0; dev::LEVEL_BINS],
        };
        let all: Vec<usize> = (0..n).collect();
        s.forces(&all);
        for i in 0..n {
            let wanted = s.wanted_level(i);
            let (v, a) = (&mut s.particles.vel[i], s.acc[i]);
            s.level[i] = dev::block_kick(v, a, None, wanted, 0, s.dt_max, s.max_level);
            s.evaluations_by_level[s.level[i] as usize] += 1;
        }
        Ok(s)
    }

    fn step_of(&self, level: u32) -> f64 {
        dev::block_step(self.dt_max, level)
    }

    fn wanted_level(&self, i: usize) -> u32 {
        dev::level_for(
            dev::criterion(self.eta, self.eps, self.acc[i]),
            self.dt_max,
            self.max_level,
        )
    }

    /// Forces on `targets` from every particle (float64 direct sum, the CPU reference's pair).
    fn forces(&mut self, targets: &[usize]) {
        let p = &self.particles;
        let eps2 = self.eps * self.eps;
        let out: Vec<([f64; 3], f64)> = targets
            .par_iter()
            .map(|&i| {
                let xi = p.pos[i];
                let (mut a, mut phi) = ([0.0f64; 3], 0.0f64);
                for (j, (xj, &mj)) in p.pos.iter().zip(&p.mass).enumerate() {
                    if j != i {
                        let d = [xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]];
                        let (aj, pj) = dev::pair_accel_pot(d, mj, eps2);
                        for k in 0..3 {
                            a[k] += aj[k];
                        }
                        phi += pj;
                    }
                }
                (a, phi)
            })
            .collect();
        for (&i, (a, phi)) in targets.iter().zip(out) {
            self.acc[i] = a;
            self.pot[i] = phi;
        }
        self.force_evaluations += targets.len() as u64;
    }

    /// Advances to the next tick at which some particle ends its step.
    pub fn substep(&mut self) -> Result<(), SimError> {
        let ml = self.max_level;
        // The next tick any particle is due: the shortest level's next boundary.
        let deepest = self.level.iter().copied().max().unwrap_or(0);
        let next = dev::next_tick(self.tick, deepest, ml);
        let dt = dev::tick_span(next - self.tick, self.dt_max, ml);
        let p = &mut self.particles;
        p.pos
            .par_iter_mut()
            .zip(&p.vel)
            .for_each(|(x, &v)| dev::drift(x, v, dt));
        self.tick = next;
        self.time = self.start + dev::tick_span(next, self.dt_max, ml);
        let active: Vec<usize> = (0..p.len())
            .filter(|&i| dev::is_active(next, self.level[i], ml))
            .collect();
        self.forces(&active);
        for &i in &active {
            let (old, wanted) = (self.level[i], self.wanted_level(i));
            self.evaluations_by_level[old as usize] += 1;
            let (v, a) = (&mut self.particles.vel[i], self.acc[i]);
            self.level[i] = dev::block_kick(v, a, Some(old), wanted, next, self.dt_max, ml);
        }
        self.substeps += 1;
        let p = &self.particles;
        if let Some(index) =
            (0..p.len()).find(|&i| !p.pos[i].iter().chain(&p.vel[i]).all(|c| c.is_finite()))
        {
            return Err(SimError::BlowUp {
                step: self.substeps,
                time: self.time,
                index,
                id: p.id[index],
            });
        }
        Ok(())
    }

    /// Runs until `t_end` (a tick boundary of the largest step: a multiple of `dt_max`).
    pub fn run_until(&mut self, t_end: f64) -> Result<(), SimError> {
        while self.time < t_end - 0.5 * self.dt_max / (1u64 << self.max_level) as f64 {
            self.substep()?;
        }
        Ok(())
    }

    /// Diagnostics at a synchronised time (every particle at the end of a step, e.g. a multiple
    /// of `dt_max`): velocities are taken back by half of each particle's step, to the time of
    /// the positions.
    pub fn diagnostics(&self) -> Diagnostics {
        Diagnostics::compute(&self.synchronized(), &self.pot, self.time)
    }

    /// The particles at a synchronised time with their velocities at the time of the positions
    /// (as [`Self::diagnostics`] sees them): what a snapshot holds, so that a restart opens the
    /// same steps again.
    pub fn synchronized(&self) -> Particles {
        let mut p = self.particles.clone();
        for (i, v) in p.vel.iter_mut().enumerate() {
            dev::half_kick(v, self.acc[i], -self.step_of(self.level[i]));
        }
        p
    }

    /// Starts the timeline at `time` (a restart at a multiple of `dt_max`).
    pub fn start_at(&mut self, time: f64) {
        self.start = time;
        self.time = time;
    }

    /// Particles per level now.
    pub fn particles_by_level(&self) -> [u64; dev::LEVEL_BINS] {
        let mut h = [0u64; dev::LEVEL_BINS];
        for &l in &self.level {
            h[l as usize] += 1;
        }
        h
    }
}

/// The per-level (rung) statistics of a block-step run as a Markdown table, for either backend:
/// particles on each occupied level now and the force evaluations each level took, beside what
/// a shared step at the deepest level used would have cost (`n` evaluations per tick of that
/// level over `blocks` blocks of `dt_max`).
pub fn rung_table(
    n: usize,
    blocks: f64,
    dt_max: f64,
    particles: &[u64],
    evaluations: &[u64],
) -> String {
    let used = |l: usize| particles[l] > 0 || evaluations[l] > 0;
    let Some(deepest) = (0..particles.len()).rev().find(|&l| used(l)) else {
        return String::new();
    };
    let total: u64 = evaluations.iter().sum();
    let mut out = String::from(
        "| level | step | particles now | force evaluations | share |\n| --- | --- | --- | --- | --- |\n",
    );
    for l in (0..=deepest).filter(|&l| used(l)) {
        out.push_str(&format!(
            "| {l} | {:.4e} | {} | {} | {:.1}% |\n",
            dev::block_step(dt_max, l as u32),
            particles[l],
            evaluations[l],
            100.0 * evaluations[l] as f64 / total.max(1) as f64
        ));
    }
    let shared = n as f64 * blocks * (1u64 << deepest) as f64;
    out.push_str(&format!(
        "\n{total} force evaluations ({:.2} per particle per dt_max); a shared step of the \
         deepest level's {:.4e} would take {shared:.3e}: {:.1}× fewer\n",
        total as f64 / (n as f64 * blocks.max(1.0)),
        dev::block_step(dt_max, deepest as u32),
        shared / total.max(1) as f64
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::super::cpu::Simulation;
    use super::super::ic::Encounter;
    use super::*;

    /// A small collision, run to the same time with block steps and with the shared step of the
    /// smallest level they used: block steps keep the energy as well and evaluate far fewer
    /// forces (the collision's outskirts step slowly).
    #[test]
    fn block_steps_keep_energy_and_save_force_evaluations() {
        let mut e = Encounter::default();
        e.primary.n_halo = 600;
        e.primary.n_disk = 300;
        e.separation = 20.0;
        let p = e.generate();
        let n = p.len() as u64;
        let (eps, eta, dt_max, t_end) = (0.05, 0.05, 0.4, 4.0);
        let mut b = BlockSimulation::new(p.clone(), eps, eta, dt_max, 12).unwrap();
        let d0 = b.diagnostics();
        b.run_until(t_end).unwrap();
        let d1 = b.diagnostics();
        let drift_block = ((d1.total - d0.total) / d0.total).abs();
        let deepest = *b.level.iter().max().unwrap();
        let dt_min = dt_max / (1u64 << deepest) as f64;
        let mut s = Simulation::new(p, eps, dt_min).unwrap();
        let steps = (t_end / dt_min).round() as u64;
        s.run(steps).unwrap();
        let drift_shared = ((s.diagnostics().total - d0.total) / d0.total).abs();
        let shared_evals = (steps + 1) * n;
        println!(
            "block: {} substeps, {} force evaluations, |ΔE/E| {drift_block:.2e}; shared dt {dt_min}: \
             {steps} steps, {shared_evals} evaluations, |ΔE/E| {drift_shared:.2e}; levels up to \
             {deepest}",
            b.substeps, b.force_evaluations
        );
        assert!(drift_block < 2e-3, "block-step energy drift {drift_block}");
        assert!(
            (b.force_evaluations as f64) < 0.6 * shared_evals as f64,
            "{} vs {shared_evals}",
            b.force_evaluations
        );
        assert!(deepest > 0, "the collision should need more than one level");
        assert_eq!(
            b.evaluations_by_level.iter().sum::<u64>(),
            b.force_evaluations
        );
        let table = rung_table(
            n as usize,
            t_end / dt_max,
            dt_max,
            &b.particles_by_level(),
            &b.evaluations_by_level,
        );
        println!("{table}");
        assert!(table.contains("fewer"));
    }

    /// The table's arithmetic: shares and the saving against the deepest level's shared step.
    #[test]
    fn rung_table_counts_and_compares() {
        let mut particles = [0u64; dev::LEVEL_BINS];
        let mut evals = [0u64; dev::LEVEL_BINS];
        (particles[0], particles[2]) = (90, 10);
        (evals[0], evals[2]) = (300, 100);
        let t = rung_table(100, 3.0, 0.5, &particles, &evals);
        assert!(t.contains("| 0 | 5.0000e-1 | 90 | 300 | 75.0% |"), "{t}");
        assert!(t.contains("| 2 | 1.2500e-1 | 10 | 100 | 25.0% |"), "{t}");
        assert!(!t.contains("| 1 |"), "unused levels are left out: {t}");
        // 400 evaluations; a shared step of 0.125 over 3 blocks: 100 · 3 · 4 = 1200.
        assert!(
            t.contains("400 force evaluations (1.33 per particle per dt_max)"),
            "{t}"
        );
        assert!(t.contains("1.200e3: 3.0× fewer"), "{t}");
        assert!(rung_table(100, 1.0, 1.0, &[0; 4], &[0; 4]).is_empty());
    }

    /// With one level for everyone (a huge η never asks for a shorter step than dt_max), block
    /// steps are the shared leapfrog: the same positions to rounding.
    #[test]
    fn one_level_is_the_shared_leapfrog() {
        let p = super::super::ic::Plummer::henon(200, 5).generate();
        let mut b = BlockSimulation::new(p.clone(), 0.05, 1e9, 0.01, 8).unwrap();
        b.run_until(0.5).unwrap();
        assert!(b.level.iter().all(|&l| l == 0));
        let mut s = Simulation::new(p, 0.05, 0.01).unwrap();
        s.run(50).unwrap();
        for (x, y) in b.particles.pos.iter().zip(&s.particles.pos) {
            for k in 0..3 {
                assert!((x[k] - y[k]).abs() < 1e-12, "{x:?} vs {y:?}");
            }
        }
    }
}
