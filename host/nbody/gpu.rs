//! The N-body loop on the GPU: positions, velocities, accelerations and particle ids stay in device
//! memory for the whole run; each step rebuilds the octree with the Barnes–Hut stages
//! (`crate::bh::gpu`), and the host is woken only for diagnostics and output.
//!
//! One shared step of length `dt` (kick-drift-kick):
//! 1. `nbody_kick_drift`: `v += a·dt/2`, `x += v·dt` (and a flag for any non-finite particle);
//! 2. tree stages on the new positions (bounding box, build, summary, sort) and forces;
//! 3. `nbody_permute`: the state gathered into the tree's order, so the next step's traversal
//!    reads neighbouring particles from neighbouring memory, with the closing kick `v += a·dt/2`
//!    on the way (one pass over the state fewer: on the H200, collision 5·10^6, kick/drift +
//!    reorder 0.348 → 0.223 ms per step);
//! 4. on diagnostic steps instead (their potential is in the tree's input order, so the state
//!    is not gathered): `nbody_kick_drift` with no drift, `v += a·dt/2`.
//!
//! The blow-up flags are read once per step, after the drift and before the tree: the tree never
//! sees a non-finite position, and the closing kick's flag (a separate slot) is read with the
//! next step's or by [`GpuSim::state`]. Individual block time steps: [`block`].

pub mod block;

use super::Particles;
use crate::bh::gpu::{
    self as bhgpu, BhError, Build, DeviceOctree, Options, StageTimes, Storage, Traversal,
};
use crate::bh::{Params, Relative, initial_cells};
use crate::device::bh::{Accel, Body};
use crate::device::nbody::{NBODY_BLOCK, kernels as k};
use crate::runtime::{CudaSlice, Gpu, GpuError, grid_for};
use std::collections::HashMap;

/// Slots of [`GpuSim`]'s blow-up flags: the drift (with the opening kick) and the closing kick.
const BAD_DRIFT: usize = 0;
const BAD_KICK: usize = 1;

/// How forces are evaluated in the loop.
#[derive(Clone, Copy, Debug)]
pub struct ForceOptions {
    pub params: Params,
    pub traversal: Traversal,
    /// Quadrupole moments in the cell interactions (group kernels).
    pub quadrupole: bool,
    /// The relative opening criterion once previous accelerations exist (θ before).
    pub relative: Option<Relative>,
    /// How the tree is built each step.
    pub build: Build,
}

impl Default for ForceOptions {
    /// The fastest accurate setting: two bodies per lane, quadrupoles, θ = 0.5.
    fn default() -> Self {
        ForceOptions {
            params: Params::default(),
            traversal: Traversal::Group2,
            quadrupole: true,
            relative: None,
            build: Build::default(),
        }
    }
}

/// Milliseconds spent per stage, summed over the steps run so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoopTimes {
    /// Tree stages and forces, as [`StageTimes`].
    pub tree: StageTimes,
    pub kick_drift: f64,
    pub permute: f64,
    /// The potential on diagnostic steps.
    pub potential: f64,
    /// Block steps: gathering the active particles' warp groups.
    pub active_set: f64,
}

impl LoopTimes {
    pub fn total(&self) -> f64 {
        self.tree.total() + self.kick_drift + self.permute + self.potential + self.active_set
    }
}

/// Failures of the GPU loop.
#[derive(Debug, thiserror::Error)]
pub enum NbodyGpuError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Tree(#[from] BhError),
    #[error(
        "step {step} (t = {time}): particle {id} has a non-finite position or velocity; the last good state is kept"
    )]
    BlowUp { step: u64, time: f64, id: u64 },
    #[error("{0}")]
    Input(String),
}

/// A system evolving on the GPU.
pub struct GpuSim<'g> {
    gpu: &'g Gpu,
    n: usize,
    /// `None` only while the tree stages own the bodies.
    bodies: Option<CudaSlice<Body>>,
    vel: CudaSlice<[f32; 3]>,
    ids: CudaSlice<u64>,
    /// Permutation targets, swapped with the state after each gather.
    spare_bodies: CudaSlice<Body>,
    spare_vel: CudaSlice<[f32; 3]>,
    spare_acc: CudaSlice<Accel>,
    spare_ids: CudaSlice<u64>,
    /// The accelerations (the relative criterion's input from the last step).
    acc: CudaSlice<Accel>,
    /// The sorted build's scratch, kept across steps.
    build_scratch: bhgpu::BuildScratch,
    pot: CudaSlice<f32>,
    /// Blow-up flags, [`BAD_DRIFT`] and [`BAD_KICK`]: the first non-finite particle's index.
    bad: CudaSlice<u32>,
    /// The block-step loop's buffers ([`block::GpuBlockSim`]); `None` for the shared step.
    block: Option<block::BlockBuffers>,
    /// Particle type by id (ids are not reordered on the host).
    types: Types,
    pub forces: ForceOptions,
    /// Cells of the last successful build: the next starts there (no retries in a steady run).
    cells: usize,
    /// Whether `pot` holds the current state's potential (a diagnostic step just ran).
    pot_fresh: bool,
    /// Whether `acc` holds accelerations of the bodies (the relative criterion's input).
    has_acc: bool,
    pub time: f64,
    pub steps: u64,
    pub times: LoopTimes,
}

impl<'g> GpuSim<'g> {
    /// Uploads `p` (float64 on the host, float32 on the device) and computes the first forces.
    pub fn new(gpu: &'g Gpu, p: &Particles, forces: ForceOptions) -> Result<Self, NbodyGpuError> {
        let n = p.len();
        if n == 0 {
            return Err(NbodyGpuError::Input("no particles".into()));
        }
        if n > (i32::MAX / 2) as usize {
            return Err(NbodyGpuError::Input(format!(
                "{n} particles: at most 2^30 fit the tree's indices"
            )));
        }
        let bodies: Vec<Body> = (0..n)
            .map(|i| Body {
                x: p.pos[i][0] as f32,
                y: p.pos[i][1] as f32,
                z: p.pos[i][2] as f32,
                m: p.mass[i] as f32,
            })
            .collect();
        crate::bh::validate(&bodies, &forces.params).map_err(BhError::from)?;
        let vel: Vec<[f32; 3]> = p.vel.iter().map(|v| v.map(|c| c as f32)).collect();
        if let Some(i) = vel.iter().position(|v| !v.iter().all(|c| c.is_finite())) {
            return Err(NbodyGpuError::Input(format!(
                "particle {} (id {}) has a non-finite velocity",
                i, p.id[i]
            )));
        }
        let types = Types::new(&p.id, &p.ptype);
        let mut sim = GpuSim {
            gpu,
            n,
            bodies: Some(gpu.upload(&bodies)?),
            vel: gpu.upload(&vel)?,
            ids: gpu.upload(&p.id)?,
            spare_bodies: gpu.alloc_poisoned(n)?,
            spare_vel: gpu.alloc_poisoned(n)?,
            spare_acc: gpu.alloc_poisoned(n)?,
            spare_ids: gpu.alloc_poisoned(n)?,
            acc: gpu.alloc_poisoned(n)?,
            build_scratch: bhgpu::BuildScratch::default(),
            pot: gpu.alloc_poisoned(n)?,
            bad: gpu.upload(&[u32::MAX; 2])?,
            block: None,
            types,
            forces,
            cells: initial_cells(n),
            pot_fresh: false,
            time: 0.0,
            steps: 0,
            times: LoopTimes::default(),
            has_acc: false,
        };
        sim.evaluate_forces(true, None, None)?;
        if sim.forces.relative.is_some() {
            // The first evaluation (θ) gave the accelerations the relative criterion starts from.
            sim.evaluate_forces(true, None, None)?;
        }
        Ok(sim)
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Tree and forces on the current positions (and the potential when `potential`); gathers
    /// the state into tree order unless the potential was asked for. With `active_at` (block
    /// steps), forces only for the particles active at that tick: the others keep theirs. With
    /// `closing_kick`, the gather also kicks the velocities by the new accelerations times it
    /// (flagging a non-finite particle in `BAD_KICK`); returns whether it did (not when the
    /// potential was asked for: then the caller kicks).
    fn evaluate_forces(
        &mut self,
        potential: bool,
        active_at: Option<u64>,
        closing_kick: Option<f32>,
    ) -> Result<bool, NbodyGpuError> {
        let gpu = self.gpu;
        let f = self.forces;
        let bodies = self.bodies.take().expect("bodies are home between steps");
        let mut octree: DeviceOctree = bhgpu::build_tree_reusing(
            gpu,
            bodies,
            Storage::Dense,
            f.build,
            self.cells,
            f.quadrupole,
            &mut self.build_scratch,
        )?;
        self.cells = octree.layout.cells as usize;
        let o = Options {
            sorted: true,
            traversal: f.traversal,
            quadrupole: f.quadrupole,
            // `acc` holds the last accelerations, in the bodies' order, after the first.
            relative: if self.has_acc { f.relative } else { None },
            ..Default::default()
        };
        let mut t = octree.times;
        t.sort = bhgpu::sort_tree(gpu, &mut octree, f.traversal.group_size())?;
        let subset = match active_at {
            Some(tick) => {
                assert!(!potential, "the potential needs every particle's forces");
                let b = self
                    .block
                    .as_mut()
                    .expect("active sets belong to block steps");
                self.times.active_set += b.gather_active(gpu, &octree, tick)?;
                Some(&b.subset)
            }
            None => None,
        };
        t.gravity = bhgpu::gravity_on(gpu, &octree, &f.params, &o, &mut self.acc, subset)?;
        self.has_acc = true;
        add_times(&mut self.times.tree, &t);
        if potential {
            // Accelerations again (monopoles) into the spare buffer, which is free now.
            self.times.potential += bhgpu::potential(
                gpu,
                &mut octree,
                &f.params,
                &mut self.spare_acc,
                &mut self.pot,
            )?;
            self.bodies = Some(octree.bodies);
            self.pot_fresh = true;
            return Ok(false);
        }
        self.pot_fresh = false;
        let n = self.n as u32;
        let cfg = grid_for(n, NBODY_BLOCK);
        let (level, spare_level) = match self.block.as_mut() {
            Some(b) => (Some(&b.level), Some(&mut b.spare_level)),
            None => (None, None),
        };
        let args = (
            &octree.tree.sort,
            n,
            &octree.bodies,
            &mut self.spare_bodies,
            &self.vel,
            &mut self.spare_vel,
            &self.acc,
            &mut self.spare_acc,
            &self.ids,
            &mut self.spare_ids,
            level,
            spare_level,
            closing_kick.unwrap_or(0.0),
            closing_kick.map(|_| self.bad.slice_mut(BAD_KICK..BAD_KICK + 1)),
        );
        // SAFETY: `sort` is the tree's permutation of 0..n; every array holds n entries, `bad`
        // one.
        let ((), ms) = gpu.time(|| unsafe { gpu.launch(k::nbody_permute, cfg, args) })?;
        self.times.permute += ms;
        self.bodies = Some(std::mem::replace(&mut self.spare_bodies, octree.bodies));
        std::mem::swap(&mut self.vel, &mut self.spare_vel);
        std::mem::swap(&mut self.acc, &mut self.spare_acc);
        std::mem::swap(&mut self.ids, &mut self.spare_ids);
        if let Some(b) = self.block.as_mut() {
            std::mem::swap(&mut b.level, &mut b.spare_level);
        }
        Ok(closing_kick.is_some())
    }

    /// `v += a·dt_kick`, `x += v·dt_drift` on every particle; a non-finite one is flagged in
    /// slot `flag` of the blow-up flags (read by [`Self::check_finite`]).
    fn kick_drift(
        &mut self,
        dt_kick: f32,
        dt_drift: f32,
        flag: usize,
    ) -> Result<(), NbodyGpuError> {
        let gpu = self.gpu;
        let n = self.n as u32;
        let bodies = self.bodies.as_mut().expect("bodies are home between steps");
        let mut bad = self.bad.slice_mut(flag..flag + 1);
        let args = (
            bodies,
            &mut self.vel,
            &self.acc,
            n,
            dt_kick,
            dt_drift,
            &mut bad,
        );
        // SAFETY: every array holds n entries; `bad` one.
        let ((), ms) = gpu
            .time(|| unsafe { gpu.launch(k::nbody_kick_drift, grid_for(n, NBODY_BLOCK), args) })?;
        self.times.kick_drift += ms;
        Ok(())
    }

    /// The one read of the blow-up flags: an error naming the particle when the last closing
    /// kick (step `self.steps`) or the drift since (step `self.steps + 1`) went non-finite.
    fn check_finite(&self) -> Result<(), NbodyGpuError> {
        let bad = self.gpu.download(&self.bad)?;
        let (index, step) = if bad[BAD_KICK] != u32::MAX {
            (bad[BAD_KICK], self.steps)
        } else if bad[BAD_DRIFT] != u32::MAX {
            (bad[BAD_DRIFT], self.steps + 1)
        } else {
            return Ok(());
        };
        Err(self.blow_up(index, step))
    }

    /// The blow-up error of the particle at `index` in the device's current order.
    fn blow_up(&self, index: u32, step: u64) -> NbodyGpuError {
        match self.gpu.download(&self.ids) {
            Ok(ids) => NbodyGpuError::BlowUp {
                step,
                time: self.time,
                id: ids[index as usize],
            },
            Err(e) => e.into(),
        }
    }

    /// One kick-drift-kick step of length `dt`; with `potential`, the potential of the new state
    /// is computed too (for [`Self::state`]).
    pub fn step(&mut self, dt: f64, potential: bool) -> Result<(), NbodyGpuError> {
        if !(dt.is_finite() && dt > 0.0) {
            return Err(NbodyGpuError::Input(format!(
                "dt = {dt} must be finite and > 0"
            )));
        }
        if self.block.is_some() {
            return Err(NbodyGpuError::Input(
                "a shared step on a block-step run (use GpuBlockSim)".into(),
            ));
        }
        let h = (0.5 * dt) as f32;
        self.kick_drift(h, dt as f32, BAD_DRIFT)?;
        // Before the tree: it must not see a non-finite position.
        self.check_finite()?;
        // The closing kick rides on the tree-order gather, except on potential steps.
        if !self.evaluate_forces(potential, None, Some(h))? {
            self.kick_drift(h, 0.0, BAD_KICK)?;
        }
        self.time += dt;
        self.steps += 1;
        Ok(())
    }

    /// Computes the current state's potential if the last step did not.
    pub fn ensure_potential(&mut self) -> Result<(), NbodyGpuError> {
        if !self.pot_fresh {
            self.evaluate_forces(true, None, None)?;
        }
        Ok(())
    }

    /// The current state on the host (float64), with each particle's potential (computing it if
    /// needed), in the device's current order. Stops at a blow-up in the last closing kick.
    pub fn state(&mut self) -> Result<(Particles, Vec<f64>), NbodyGpuError> {
        if self.block.is_none() {
            self.check_finite()?;
        }
        self.ensure_potential()?;
        let gpu = self.gpu;
        let bodies = gpu.download(self.bodies.as_ref().expect("bodies are home"))?;
        let vel = gpu.download(&self.vel)?;
        let ids = gpu.download(&self.ids)?;
        let pot = gpu.download(&self.pot)?;
        use rayon::prelude::*;
        let p = Particles {
            pos: bodies
                .par_iter()
                .map(|b| [b.x as f64, b.y as f64, b.z as f64])
                .collect(),
            vel: vel.par_iter().map(|v| v.map(f64::from)).collect(),
            mass: bodies.par_iter().map(|b| b.m as f64).collect(),
            ptype: ids.par_iter().map(|&id| self.types.of(id)).collect(),
            id: ids,
        };
        Ok((p, pot.into_iter().map(f64::from).collect()))
    }

    /// The particle ids in the device's current order.
    pub fn ids(&self) -> Result<Vec<u64>, NbodyGpuError> {
        Ok(self.gpu.download(&self.ids)?)
    }

    /// The accelerations of the current state, in the device's current order (for checks).
    pub fn accelerations(&self) -> Result<Vec<Accel>, NbodyGpuError> {
        Ok(self.gpu.download(&self.acc)?)
    }
}

/// Particle types by id: a table when the ids are dense (the generators' 1..=N), else a map.
enum Types {
    Dense(Vec<u8>),
    Map(HashMap<u64, u8>),
}

impl Types {
    fn new(ids: &[u64], types: &[u8]) -> Self {
        let max = ids.iter().copied().max().unwrap_or(0);
        if max <= 4 * ids.len() as u64 + 16 {
            let mut t = vec![0u8; max as usize + 1];
            for (&id, &ty) in ids.iter().zip(types) {
                t[id as usize] = ty;
            }
            Types::Dense(t)
        } else {
            Types::Map(ids.iter().copied().zip(types.iter().copied()).collect())
        }
    }

    fn of(&self, id: u64) -> u8 {
        match self {
            Types::Dense(t) => t.get(id as usize).copied().unwrap_or(0),
            Types::Map(m) => m.get(&id).copied().unwrap_or(0),
        }
    }
}

fn add_times(sum: &mut StageTimes, t: &StageTimes) {
    sum.reset += t.reset;
    sum.bounding_box += t.bounding_box;
    sum.build += t.build;
    sum.summarize += t.summarize;
    sum.sort += t.sort;
    sum.gravity += t.gravity;
}
