//! Individual time steps on a power-of-two hierarchy (block steps). One call of
//! [`Sim::step`] with `block_levels = L > 0` is a cycle: from a time when every particle is
//! synchronised, the cycle of length `Δ` is cut into `2^L` ticks and each particle steps by
//! `Δ / 2^k` (level `k ≤ L`), the largest such step within its own CFL and gravity steps. At a
//! tick, the particles whose step ends there are active: everyone drifts to the tick, the active
//! particles get densities and forces (at velocities and energies predicted to the tick for
//! every particle, as Gadget-2 does), their closing half kick, a new level and their opening
//! half kick. A particle moves to a longer step only where the new step's grid meets the tick,
//! one level at a time; the cycle ends with everyone synchronised again, so diagnostics,
//! snapshots and restarts see one time.
//!
//! Neighbours' steps differ by at most a factor 4 (Saitoh & Makino 2009, ApJ 697, L99): an
//! active particle's level is raised to its neighbours' less 2, and an inactive neighbour
//! whose step is more than 4× an active particle's is woken: its step is cut to end at the next
//! tick of the shorter grid, and the part of its opening kick beyond that is taken back
//! (Durier & Dalla Vecchia 2012, MNRAS 419, 465). Without waking, a shock walks into particles
//! that still take the long steps of the quiet gas ahead of it.
//!
//! Collisionless particles take levels from their gravity step alone (no neighbours limit
//! them) and are active, drifted and kicked on the same ticks.

use super::cells::CellList;
use super::step::{Sim, check_collisionless, check_energy};
use super::{Gas, HydroError};
use crate::backend::Backend;
use crate::device::sph::hydro::{alpha_rate, limited_level, wake_level};
use crate::runtime::Gpu;
use rayon::prelude::*;
use std::time::Instant;

/// What the limiter gives for the particles being assigned a step: each one's limited level
/// (in their order), and the inactive particles to wake with a level each (possibly several
/// for one particle).
type Limits = (Vec<u32>, Vec<(usize, u32)>);

/// The deepest hierarchy: 2^30 ticks per cycle.
pub const MAX_LEVELS: u32 = 30;

/// The level `k ≤ levels` of the longest step `big / 2^k` within `dt`.
fn level_of(dt: f64, big: f64, levels: u32) -> u32 {
    if dt >= big {
        return 0;
    }
    let k = (big / dt).log2().ceil();
    if k.is_nan() {
        levels
    } else {
        (k as u32).min(levels)
    }
}

/// Ticks of a step at level `k` in a cycle of `2^levels` ticks.
fn ticks_of(k: u32, levels: u32) -> u64 {
    1u64 << (levels - k)
}

/// The per-particle step state of a cycle.
struct Clock {
    levels: u32,
    /// Level, tick where the current step began, its length in ticks (a power of two but for a
    /// woken particle's shortened step).
    level: Vec<u32>,
    start: Vec<u64>,
    len: Vec<u64>,
    /// Density and smoothing length at the step's start, for the predictions of an inactive
    /// particle's (Gadget-2's drift: `ρ e^{−∇·v t}`, `h e^{∇·v t / 3}`).
    rho0: Vec<f64>,
    h0: Vec<f64>,
}

impl Clock {
    fn end(&self, i: usize) -> u64 {
        self.start[i] + self.len[i]
    }
}

/// Particle `i`'s velocity and energy kicked by `dt` with its current accelerations.
fn kick(g: &mut Gas, i: usize, dt: f64) {
    for k in 0..3 {
        g.vel[i][k] += dt * g.acc[i][k];
    }
    g.u[i] += dt * g.du[i];
}

impl Sim {
    /// [`kick`] for any particle: gas, or collisionless (`i ≥ gas.len()`, velocity only).
    fn kick_any(&mut self, i: usize, dt: f64) {
        let n_gas = self.gas.len();
        if i < n_gas {
            kick(&mut self.gas, i, dt);
        } else {
            let c = &mut self.collisionless;
            for k in 0..3 {
                c.vel[i - n_gas][k] += dt * c.acc[i - n_gas][k];
            }
        }
    }
}

impl Sim {
    /// One cycle of block steps of at most `dt_max`; returns its length.
    pub(super) fn cycle(&mut self, dt_max: f64) -> Result<f64, HydroError> {
        let levels = self.params.block_levels.min(MAX_LEVELS);
        let n_gas = self.gas.len();
        let n = n_gas + self.collisionless.len();
        let t0 = Instant::now();
        let own: Vec<f64> = (0..n).into_par_iter().map(|i| self.dt_of(i)).collect();
        let (dt_min, index) =
            own.iter().enumerate().fold(
                (f64::INFINITY, 0),
                |a, (i, &d)| if d < a.0 { (d, i) } else { a },
            );
        let dt_long = own.iter().copied().fold(0.0, f64::max);
        self.check_dt(dt_min, index)?;
        let big = dt_max.min(dt_long).min(dt_min * (1u64 << levels) as f64);
        let tick = big / (1u64 << levels) as f64;
        let all: Vec<usize> = (0..n).collect();
        let mut clock = Clock {
            levels,
            level: vec![0; n],
            start: vec![0; n],
            len: vec![0; n],
            rho0: vec![0.0; n],
            h0: vec![0.0; n],
        };
        let wanted: Vec<u32> = own.iter().map(|&d| level_of(d, big, levels)).collect();
        self.assign(&mut clock, &all, &wanted, 0, tick)?;
        self.times.integration += t0.elapsed().as_secs_f64();

        let cycle_end = 1u64 << levels;
        let mut now = 0u64;
        while now < cycle_end {
            let t0 = Instant::now();
            let next = (0..n)
                .into_par_iter()
                .map(|i| clock.end(i))
                .min()
                .unwrap_or(cycle_end);
            let dt = (next - now) as f64 * tick;
            let boundary = self.boundary;
            let c = &mut self.collisionless;
            c.pos
                .par_iter_mut()
                .zip(c.vel.par_iter())
                .for_each(|(x, v)| {
                    for k in 0..3 {
                        x[k] += dt * v[k];
                    }
                });
            let g = &mut self.gas;
            g.pos
                .par_iter_mut()
                .zip(g.vel.par_iter())
                .for_each(|(x, v)| {
                    for k in 0..3 {
                        x[k] += dt * v[k];
                    }
                    *x = boundary.wrap(*x);
                });
            now = next;
            let active: Vec<usize> = (0..n)
                .into_par_iter()
                .filter(|&i| clock.end(i) == now)
                .collect();
            // Velocities and energies predicted to `now`: each particle's half-step values
            // kicked from its step's middle.
            let since_mid =
                |i: usize| (now as f64 - clock.start[i] as f64 - 0.5 * clock.len[i] as f64) * tick;
            let vel: Vec<[f64; 3]> = (0..n_gas)
                .into_par_iter()
                .map(|i| core::array::from_fn(|k| g.vel[i][k] + since_mid(i) * g.acc[i][k]))
                .collect();
            let u: Vec<f64> = (0..n_gas)
                .into_par_iter()
                .map(|i| (g.u[i] + since_mid(i) * g.du[i]).max(0.0))
                .collect();
            // The inactive particles' densities and smoothing lengths predicted to `now` from
            // their velocity divergence: their pressures in the force pass follow the
            // compression between their own updates.
            let h_max = 0.99 * self.boundary.half_width();
            let (rho, h, div) = (&mut g.rho, &mut g.h, &g.div_v);
            rho.par_iter_mut()
                .zip(h.par_iter_mut())
                .enumerate()
                .filter(|(i, _)| clock.end(*i) != now)
                .for_each(|(i, (rho, h))| {
                    let x = div[i] * (now - clock.start[i]) as f64 * tick;
                    *rho = clock.rho0[i] * (-x).exp();
                    *h = (clock.h0[i] * (x / 3.0).exp()).min(h_max);
                });
            self.times.integration += t0.elapsed().as_secs_f64();
            let subset = (active.len() < n).then_some(active.as_slice());
            self.passes(&vel, &u, subset)?;

            let t0 = Instant::now();
            let visc = self.params.viscosity;
            for &i in &active {
                let step = clock.len[i] as f64 * tick;
                self.kick_any(i, 0.5 * step);
                let g = &mut self.gas;
                if i < n_gas && visc.alpha_min < visc.alpha_max {
                    let rate = alpha_rate(g.alpha[i], g.div_v[i], g.cs[i], g.h[i], &visc);
                    g.alpha[i] = (g.alpha[i] + step * rate).clamp(visc.alpha_min, visc.alpha_max);
                }
            }
            self.step += 1;
            if now < cycle_end {
                let mut wanted = Vec::with_capacity(active.len());
                for &i in &active {
                    let d = self.dt_of(i);
                    self.check_dt(d, i)?;
                    let mut k = level_of(d, big, levels);
                    let old = clock.level[i];
                    if k < old {
                        // Longer: one level at a time, where the longer grid meets `now`.
                        k = old - 1;
                        if !now.is_multiple_of(ticks_of(k, levels)) {
                            k = old;
                        }
                    }
                    wanted.push(k);
                }
                self.assign(&mut clock, &active, &wanted, now, tick)?;
            }
            check_energy(&mut self.gas, self.t, self.params.u_floor)?;
            check_collisionless(&self.collisionless)?;
            self.times.integration += t0.elapsed().as_secs_f64();
        }
        self.t += big;
        Ok(big)
    }

    /// The time step a particle's own CFL and gravity criteria allow (a collisionless
    /// particle's, `i ≥ gas.len()`: its gravity criterion).
    pub(super) fn dt_of(&self, i: usize) -> f64 {
        let g = &self.gas;
        if i >= g.len() {
            return super::gravity::dt(&self.params, self.collisionless.acc[i - g.len()]);
        }
        let c = crate::device::sph::hydro::cfl_dt(self.params.courant, g.h[i], g.vsig[i]);
        c.min(super::gravity::dt(&self.params, g.acc[i]))
    }

    /// New steps from tick `now` for the particles `who` at the levels `wanted` (their own
    /// criteria's), limited against their neighbours' levels, with their opening half kicks;
    /// inactive neighbours whose steps are too long for them are woken.
    fn assign(
        &mut self,
        clock: &mut Clock,
        who: &[usize],
        wanted: &[u32],
        now: u64,
        tick: f64,
    ) -> Result<(), HydroError> {
        let levels = clock.levels;
        let mut level = clock.level.clone();
        for (&i, &k) in who.iter().zip(wanted) {
            level[i] = k;
        }
        let mut mine = vec![false; level.len()];
        who.iter().for_each(|&i| mine[i] = true);
        let (limited, mut woken) = match &self.backend {
            Backend::Cpu => self.limits_on_cpu(who, &level, &mine),
            Backend::Gpu(gpu) => self.limits_on_gpu(gpu, who, &level, &mine)?,
        };
        for (&i, k) in who.iter().zip(limited) {
            clock.level[i] = k;
            clock.start[i] = now;
            clock.len[i] = ticks_of(k, levels);
            if i < self.gas.len() {
                clock.rho0[i] = self.gas.rho[i];
                clock.h0[i] = self.gas.h[i];
            }
            self.kick_any(i, 0.5 * clock.len[i] as f64 * tick);
        }
        woken.sort_unstable();
        // One wake per particle, to the deepest level asked.
        let mut last = usize::MAX;
        for &(j, k) in woken.iter().rev() {
            if j == last {
                continue;
            }
            last = j;
            let grid = ticks_of(k, levels);
            let end = (now / grid + 1) * grid;
            if end < clock.end(j) {
                let len = end - clock.start[j];
                // Take back the opening kick beyond the shortened step.
                kick(
                    &mut self.gas,
                    j,
                    0.5 * (len as f64 - clock.len[j] as f64) * tick,
                );
                clock.len[j] = len;
                clock.level[j] = k;
            }
        }
        Ok(())
    }

    /// The limiter on the CPU: for each of `who` (gas) its level limited against its
    /// neighbours' in `level`, and the inactive neighbours to wake with the level each must
    /// reach (possibly several for one particle), from a cell list of the gas.
    fn limits_on_cpu(&self, who: &[usize], level: &[u32], mine: &[bool]) -> Limits {
        let g = &self.gas;
        let n_gas = g.len();
        let cells = CellList::with_h(&g.pos, &g.h, &self.boundary);
        let limited: Vec<(u32, Vec<(usize, u32)>)> = who
            .par_iter()
            .map(|&i| {
                let mut k = level[i];
                if i >= n_gas {
                    // Collisionless: no neighbours.
                    return (k, Vec::new());
                }
                // One walk: the limit, and the inactive neighbours that might need waking
                // (checked against the final k after).
                let mut others = Vec::new();
                cells.for_each_symmetric(&g.pos, &g.h, g.pos[i], g.h[i], |j, _, _| {
                    k = limited_level(k, level[j]);
                    if !mine[j] {
                        others.push((j, level[j]));
                    }
                });
                let wake = others
                    .into_iter()
                    .filter_map(|(j, kj)| wake_level(k, kj).map(|w| (j, w)))
                    .collect();
                (k, wake)
            })
            .collect();
        let mut woken = Vec::new();
        let ks = limited
            .into_iter()
            .map(|(k, wake)| {
                woken.extend(wake);
                k
            })
            .collect();
        (ks, woken)
    }

    /// [`Self::limits_on_cpu`] on the GPU: the walks of `sph_level_limit` over a tree of the
    /// gas at its current positions and `h` (one wake per particle, the deepest).
    fn limits_on_gpu(
        &self,
        gpu: &Gpu,
        who: &[usize],
        level: &[u32],
        mine: &[bool],
    ) -> Result<Limits, HydroError> {
        let g = &self.gas;
        let n_gas = g.len();
        let mut tree = super::gpu::StepTree::new(gpu, g, &self.boundary)?;
        let mine_gas: Vec<u32> = mine[..n_gas].iter().map(|&m| u32::from(m)).collect();
        let (limit, wake) = tree
            .level_limits(gpu, &level[..n_gas], &mine_gas)
            .map_err(HydroError::from)?;
        let ks = who
            .iter()
            .map(|&i| if i < n_gas { limit[i] } else { level[i] })
            .collect();
        let woken = (0..n_gas)
            .filter(|&j| wake[j] > 0)
            .map(|j| (j, wake[j]))
            .collect();
        Ok((ks, woken))
    }
}
