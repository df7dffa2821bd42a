//! Block (power-of-two) individual time steps on the GPU, the scheme of the CPU reference
//! ([`crate::nbody::block`], Gadget-2's): particle `i` steps by `dt_max / 2^level_i`, its level
//! from `η·sqrt(ε/|a|)`, on an integer timeline of `2^max_level` ticks per `dt_max`; the
//! formulas are `warpkit_device::nbody`'s, the ones the CPU reference calls. One substep, from
//! tick `t` to the next tick `t'` on which some particle ends its step:
//! 1. `nbody_block_drift`: every particle drifts to `t'` (the span from the deepest occupied
//!    level, which the last kick counted on the device);
//! 2. the host's one read of the counters (blow-up flags, particles per level, the deepest
//!    level): it learns `t'` and how many particles are active there;
//! 3. the tree is rebuilt on the drifted positions (every particle is a source) and sorted; when
//!    not every particle is active, `nbody_active_groups` gathers the active members of each of
//!    the sort's warp groups into groups of their own and the group kernel walks those only:
//!    forces for the active particles, the others keep theirs;
//! 4. the state is gathered into tree order (levels too);
//! 5. `nbody_block_kick`: the active particles close their step, take a new level and open the
//!    next step; the levels are counted for the next drift and the host.
//!
//! At every multiple of `dt_max` (a block's end) every particle is active: forces for all, and
//! the potential there when diagnostics follow.

use super::{GpuSim, NbodyGpuError};
use crate::bh::gpu::{DeviceOctree, GroupSubset};
use crate::device::nbody::{
    LEVEL_BINS, NBODY_BLOCK, Timestep, block_step, counter, half_kick, is_active, kernels as k,
    next_tick, tick_span,
};
use crate::nbody::Particles;
use crate::runtime::{CudaSlice, Gpu, GpuError, grid_for};

/// The device buffers of block steps, held by the [`GpuSim`] they extend (its gathers move the
/// levels along with the state).
pub(super) struct BlockBuffers {
    /// Each particle's level, in the state's current order.
    pub(super) level: CudaSlice<u32>,
    pub(super) spare_level: CudaSlice<u32>,
    /// The active particles' warp groups.
    pub(super) subset: GroupSubset,
    /// [`counter::COUNTERS`] counters (`warpkit_device::nbody::counter`).
    counters: CudaSlice<u32>,
    step: Timestep,
}

impl BlockBuffers {
    /// Gathers the warp groups of the particles active at `tick` from the sorted `octree`'s
    /// groups into `subset`; returns the time in ms.
    pub(super) fn gather_active(
        &mut self,
        gpu: &Gpu,
        octree: &DeviceOctree,
        tick: u64,
    ) -> Result<f64, GpuError> {
        let cfg = gpu.resident_grid(k::nbody_active_groups, NBODY_BLOCK)?;
        let one = grid_for(1, 32);
        let ((), ms) = gpu.time(|| {
            zero(
                gpu,
                &mut self.counters,
                counter::ACTIVE_BODIES..counter::ACTIVE_GROUPS + 1,
            )?;
            let args = (
                &octree.tree.sort,
                &octree.tree.groups,
                &octree.tree.header,
                &self.level,
                tick,
                self.step.max_level,
                &mut self.subset.sort,
                &mut self.subset.groups,
                &mut self.counters,
            );
            // SAFETY: a sorted tree of n bodies: `sort`, `level` and the outputs hold n entries,
            // the groups `header.groups`; the counters COUNTERS.
            unsafe { gpu.launch(k::nbody_active_groups, cfg, args)? };
            let args = (&octree.tree.header, &self.counters, &mut self.subset.header);
            // SAFETY: one header each; the counters hold COUNTERS entries.
            unsafe { gpu.launch(k::nbody_active_header, one, args) }
        })?;
        Ok(ms)
    }
}

/// Zeroes `range` of the counters (queued on the stream).
fn zero(
    gpu: &Gpu,
    counters: &mut CudaSlice<u32>,
    range: std::ops::Range<usize>,
) -> Result<(), GpuError> {
    gpu.stream()
        .memset_zeros(&mut counters.slice_mut(range))
        .map_err(|source| GpuError::Driver {
            op: "zeroing the block-step counters",
            source,
        })
}

/// The counters as the host reads them once per substep.
#[derive(Clone, Debug)]
struct Counters {
    bad_drift: u32,
    bad_kick: u32,
    active_bodies: u32,
    deepest: u32,
    levels: [u32; LEVEL_BINS],
}

impl Counters {
    fn of(c: &[u32]) -> Self {
        Counters {
            bad_drift: c[counter::BAD_DRIFT],
            bad_kick: c[counter::BAD_KICK],
            active_bodies: c[counter::ACTIVE_BODIES],
            deepest: c[counter::DEEPEST],
            levels: std::array::from_fn(|l| c[counter::LEVELS + l]),
        }
    }
}

/// What the block steps did, per level (rung).
#[derive(Clone, Debug, PartialEq)]
pub struct BlockStats {
    /// Substeps: ticks at which some particle was active.
    pub substeps: u64,
    /// Particle force evaluations (every particle's first, then one per active particle per
    /// substep; a shared step at the deepest level would do N per tick of that level).
    pub force_evaluations: u64,
    /// Force evaluations per level (counted at the level the particle was active on).
    pub evaluations_by_level: [u64; LEVEL_BINS],
    /// Particles per level after the last kick.
    pub particles_by_level: [u64; LEVEL_BINS],
    /// Substeps at which forces were computed for every particle.
    pub full_substeps: u64,
}

impl Default for BlockStats {
    fn default() -> Self {
        BlockStats {
            substeps: 0,
            force_evaluations: 0,
            evaluations_by_level: [0; LEVEL_BINS],
            particles_by_level: [0; LEVEL_BINS],
            full_substeps: 0,
        }
    }
}

/// A system evolving on the GPU with block time steps.
pub struct GpuBlockSim<'g> {
    sim: GpuSim<'g>,
    pub eta: f64,
    pub dt_max: f64,
    pub max_level: u32,
    /// The current tick (`2^max_level` ticks per `dt_max`).
    pub tick: u64,
    pub time: f64,
    /// The time at tick 0 (a restart's snapshot time).
    pub start: f64,
    pub stats: BlockStats,
    /// Active particles the last gather should have found (checked against its count).
    expected_active: Option<u64>,
}

impl<'g> GpuBlockSim<'g> {
    /// Uploads `p`, computes every force and the potential, assigns levels and opens every
    /// particle's first step, as [`crate::nbody::block::BlockSimulation::new`] does. `max_level`
    /// is capped at 30 as there.
    pub fn new(
        gpu: &'g Gpu,
        p: &Particles,
        forces: super::ForceOptions,
        eta: f64,
        dt_max: f64,
        max_level: u32,
    ) -> Result<Self, NbodyGpuError> {
        let eps = forces.params.eps;
        if !(eps.is_finite() && eps > 0.0) {
            return Err(NbodyGpuError::Input(format!(
                "block steps need a softening ε > 0 (got {eps})"
            )));
        }
        if !(dt_max.is_finite() && dt_max > 0.0 && eta.is_finite() && eta > 0.0) {
            return Err(NbodyGpuError::Input(format!(
                "block steps need dt_max > 0 (got {dt_max}) and η > 0 (got {eta})"
            )));
        }
        if !forces.traversal.grouped() {
            return Err(NbodyGpuError::Input(
                "block steps walk active warp groups: they need a group traversal".into(),
            ));
        }
        let max_level = max_level.min(30);
        let mut sim = GpuSim::new(gpu, p, forces)?;
        let n = sim.n;
        let mut counters = [0u32; counter::COUNTERS];
        counters[counter::BAD_DRIFT] = u32::MAX;
        counters[counter::BAD_KICK] = u32::MAX;
        sim.block = Some(BlockBuffers {
            level: gpu.alloc_poisoned(n)?,
            spare_level: gpu.alloc_poisoned(n)?,
            subset: GroupSubset::new(gpu, n)?,
            counters: gpu.upload(&counters)?,
            step: Timestep {
                eta: eta as f32,
                eps,
                dt_max: dt_max as f32,
                max_level,
            },
        });
        let mut s = GpuBlockSim {
            sim,
            eta,
            dt_max,
            max_level,
            tick: 0,
            time: 0.0,
            start: 0.0,
            stats: BlockStats::default(),
            expected_active: None,
        };
        s.kick(0, true)?;
        let c = s.read_counters()?;
        s.stats.force_evaluations = n as u64;
        for (l, &k) in c.levels.iter().enumerate() {
            s.stats.evaluations_by_level[l] += k as u64;
        }
        s.stats.full_substeps = 1;
        Ok(s)
    }

    pub fn len(&self) -> usize {
        self.sim.n
    }

    pub fn is_empty(&self) -> bool {
        self.sim.n == 0
    }

    /// The shared-step loop underneath (its stage times, forces and accelerations).
    pub fn inner(&self) -> &GpuSim<'g> {
        &self.sim
    }

    /// Starts the timeline at `time` (a restart at a multiple of `dt_max`).
    pub fn start_at(&mut self, time: f64) {
        self.start = time;
        self.time = time;
        self.sim.time = time;
    }

    fn buffers(&mut self) -> &mut BlockBuffers {
        self.sim
            .block
            .as_mut()
            .expect("a block-step run has its buffers")
    }

    /// `nbody_block_kick` at `tick` (`start`: every particle opens its first step).
    fn kick(&mut self, tick: u64, start: bool) -> Result<(), NbodyGpuError> {
        let gpu = self.sim.gpu;
        let n = self.sim.n as u32;
        let b = self
            .sim
            .block
            .as_mut()
            .expect("a block-step run has its buffers");
        let ((), ms) = gpu.time(|| {
            zero(gpu, &mut b.counters, counter::DEEPEST..counter::COUNTERS)?;
            let args = (
                &mut self.sim.vel,
                &self.sim.acc,
                &mut b.level,
                n,
                tick,
                b.step,
                start as u32,
                &mut b.counters,
            );
            // SAFETY: every array holds n entries, the counters COUNTERS; NBODY_BLOCK threads.
            unsafe { gpu.launch(k::nbody_block_kick, grid_for(n, NBODY_BLOCK), args) }
        })?;
        self.sim.times.kick_drift += ms;
        Ok(())
    }

    /// The one read of the counters: stops at a blow-up (naming the particle), checks the last
    /// gather's count, keeps the particles per level.
    fn read_counters(&mut self) -> Result<Counters, NbodyGpuError> {
        let gpu = self.sim.gpu;
        let c = Counters::of(&gpu.download(&self.buffers().counters)?);
        // The kick that ended the last substep, then the drift since.
        let bad = if c.bad_kick != u32::MAX {
            Some((c.bad_kick, self.stats.substeps))
        } else if c.bad_drift != u32::MAX {
            Some((c.bad_drift, self.stats.substeps + 1))
        } else {
            None
        };
        if let Some((index, step)) = bad {
            let mut e = self.sim.blow_up(index, step);
            if let NbodyGpuError::BlowUp { time, .. } = &mut e {
                *time = self.time;
            }
            return Err(e);
        }
        if let Some(want) = self.expected_active.take()
            && c.active_bodies as u64 != want
        {
            return Err(NbodyGpuError::Input(format!(
                "substep {}: the active-set gather found {} particles, the levels say {want}",
                self.stats.substeps, c.active_bodies
            )));
        }
        let counted: u64 = c.levels.iter().map(|&k| k as u64).sum();
        if counted != self.sim.n as u64 {
            return Err(NbodyGpuError::Input(format!(
                "substep {}: the level counts hold {counted} particles of {}",
                self.stats.substeps, self.sim.n
            )));
        }
        self.stats.particles_by_level = c.levels.map(u64::from);
        Ok(c)
    }

    /// Advances to the next tick at which some particle ends its step; the potential is
    /// computed there too when that tick is `potential_at` (a block's end: every particle
    /// active).
    pub fn substep(&mut self, potential_at: Option<u64>) -> Result<(), NbodyGpuError> {
        let gpu = self.sim.gpu;
        let n = self.sim.n as u32;
        let ml = self.max_level;
        let tick = self.tick;
        {
            let b = self
                .sim
                .block
                .as_mut()
                .expect("a block-step run has its buffers");
            let bodies = self
                .sim
                .bodies
                .as_mut()
                .expect("bodies are home between steps");
            let args = (bodies, &self.sim.vel, n, tick, b.step, &mut b.counters);
            // SAFETY: every array holds n entries, the counters COUNTERS.
            let ((), ms) = gpu.time(|| unsafe {
                gpu.launch(k::nbody_block_drift, grid_for(n, NBODY_BLOCK), args)
            })?;
            self.sim.times.kick_drift += ms;
        }
        // After the drift, before the tree (which must not see a non-finite position).
        let c = self.read_counters()?;
        let next = next_tick(tick, c.deepest, ml);
        let active: u64 = (0..=ml)
            .filter(|&l| is_active(next, l, ml))
            .map(|l| c.levels[l as usize] as u64)
            .sum();
        let all = active == n as u64;
        let potential = all && potential_at == Some(next);
        self.sim
            .evaluate_forces(potential, (!all).then_some(next), None)?;
        if !all {
            self.expected_active = Some(active);
        }
        self.kick(next, false)?;
        for l in (0..=ml).filter(|&l| is_active(next, l, ml)) {
            self.stats.evaluations_by_level[l as usize] += c.levels[l as usize] as u64;
        }
        self.stats.force_evaluations += active;
        self.stats.substeps += 1;
        self.stats.full_substeps += all as u64;
        self.tick = next;
        self.time = self.start + tick_span(next, self.dt_max, ml);
        self.sim.time = self.time;
        self.sim.steps = self.stats.substeps;
        Ok(())
    }

    /// Ticks per block (`dt_max`).
    fn block_ticks(&self) -> u64 {
        1u64 << self.max_level
    }

    /// Runs to the end of the current block (the next multiple of `dt_max`), with the
    /// potential there when `potential`.
    pub fn step_block(&mut self, potential: bool) -> Result<(), NbodyGpuError> {
        let end = (self.tick / self.block_ticks() + 1) * self.block_ticks();
        while self.tick < end {
            self.substep(potential.then_some(end))?;
        }
        Ok(())
    }

    /// Runs until `t_end` (a multiple of `dt_max`), as the CPU reference's `run_until`.
    pub fn run_until(&mut self, t_end: f64) -> Result<(), NbodyGpuError> {
        while self.time < t_end - 0.5 * self.dt_max / self.block_ticks() as f64 {
            self.substep(None)?;
        }
        Ok(())
    }

    /// Each particle's level, in the device's current order.
    pub fn levels(&mut self) -> Result<Vec<u32>, NbodyGpuError> {
        let gpu = self.sim.gpu;
        Ok(gpu.download(&self.buffers().level)?)
    }

    /// The state at a block's end on the host (float64), with the potential, in the device's
    /// current order: velocities taken back by half of each particle's step, to the time of the
    /// positions (as the CPU reference's `diagnostics`).
    pub fn state(&mut self) -> Result<(Particles, Vec<f64>), NbodyGpuError> {
        if !self.tick.is_multiple_of(self.block_ticks()) {
            return Err(NbodyGpuError::Input(format!(
                "tick {} is inside a block: velocities are synchronised only at multiples of dt_max",
                self.tick
            )));
        }
        self.read_counters()?;
        let (mut p, pot) = self.sim.state()?;
        let acc = self.sim.accelerations()?;
        let level = self.levels()?;
        for ((v, a), &l) in p.vel.iter_mut().zip(&acc).zip(&level) {
            let a = [a.x as f64, a.y as f64, a.z as f64];
            half_kick(v, a, -block_step(self.dt_max, l));
        }
        Ok((p, pot))
    }
}
