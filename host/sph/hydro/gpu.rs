//! The density and force passes on the GPU. One octree of the gas per step, built and sorted on
//! the device (`bh::gpu`), serves both: the density pass's gather walks (`sph_hydro_density`)
//! alternate with the h iteration's update (`sph_hydro_h_update`, the CPU's [`HSearch`]) until
//! every particle has its h; the cells are then boxed for those h and the force pass
//! (`sph_hydro_force`) sums the pair terms. Both sum in float32 what the CPU solver sums in
//! float64, with the same formulas; the per-particle state between them (pressure, sound speed,
//! grad-h factor, Balsara switch) is computed on the host by the CPU's own code.
//!
//! Positions go to the device relative to the centre of the gas's bounding box, so float32
//! keeps their resolution wherever the gas sits. In a periodic box the walks measure every
//! separation to the nearest image (the box's centre at the origin); self-gravity there is
//! refused before a step is taken.

use super::density::{Converged, limits, set_states};
use super::{Boundary, Gas, HydroError, HydroParams};
use crate::bh::gpu::{BhError, DeviceOctree, Traversal, build_device_tree, sort_tree};
use crate::bh::initial_cells;
use crate::device::bh::{Accel, Body};
use crate::device::sph::CellBox;
use crate::device::sph::hydro::hsearch::{H_CONVERGED, H_STALLED, H_TOO_LARGE};
use crate::device::sph::hydro::{DensitySum, HLimits, HSearch};
use crate::device::sph::kernels::{self as k, DensityView, GasView, LevelView};
use crate::runtime::{CudaSlice, Gpu, GpuError, ViewMut};
use rayon::prelude::*;

/// Failures of the GPU passes.
#[derive(Debug, thiserror::Error)]
pub enum HydroGpuError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Tree(#[from] BhError),
}

impl From<HydroGpuError> for HydroError {
    fn from(e: HydroGpuError) -> Self {
        HydroError::Gpu(e.to_string())
    }
}

/// `active`'s indices as a mask of `n` flags, as the kernels read it.
fn mask_of(active: &[usize], n: usize) -> Vec<u32> {
    let mut m = vec![0u32; n];
    active.iter().for_each(|&i| m[i] = 1);
    m
}

/// The float32 iteration's limits: the CPU's, with the tolerance no tighter than float32 sums
/// resolve and the bracket closed at float32's resolution of h (accepted there: h is then
/// known to rounding).
fn limits_f32(params: &HydroParams, boundary: &Boundary) -> HLimits<f32> {
    let l = limits(params, boundary);
    HLimits {
        n_ngb: l.n_ngb as f32,
        tol: l.tol.max(1e-5) as f32,
        h_max: l.h_max.min(f32::MAX as f64) as f32,
        collapse: 4.0 * f32::EPSILON,
        max_steps: l.max_steps,
    }
}

/// The gas's octree on the device for one step's passes, with the smoothing lengths and the
/// cells' boxes of the pass at hand.
pub struct StepTree {
    octree: DeviceOctree,
    h: CudaSlice<f32>,
    boxes: CudaSlice<CellBox>,
    /// The periodic box's sides (infinite: open), as the walks take them.
    period: [f32; 3],
    /// Milliseconds of the device work so far: tree, density pass (all its walks and updates),
    /// force pass, gravity.
    pub tree_ms: f64,
    pub density_ms: f64,
    pub force_ms: f64,
    pub gravity_ms: f64,
    /// Gather walks of the last density pass.
    pub density_walks: u32,
    /// Particles whose h iteration ended with the bracket closed at float32 resolution.
    pub stalled: usize,
}

impl StepTree {
    /// Builds and sorts the tree of `gas`'s positions (in a periodic box, wrapped into it).
    pub fn new(gpu: &Gpu, gas: &Gas, boundary: &Boundary) -> Result<Self, HydroGpuError> {
        let n = gas.len();
        let (c, period) = match boundary {
            Boundary::Open => {
                let (lo, hi) = gas
                    .pos
                    .par_iter()
                    .fold(
                        || ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]),
                        |(lo, hi), p| {
                            (
                                core::array::from_fn(|k| lo[k].min(p[k])),
                                core::array::from_fn(|k| hi[k].max(p[k])),
                            )
                        },
                    )
                    .reduce(
                        || ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]),
                        |(a, b), (c, d)| {
                            (
                                core::array::from_fn(|k| a[k].min(c[k])),
                                core::array::from_fn(|k| b[k].max(d[k])),
                            )
                        },
                    );
                let c: [f64; 3] = core::array::from_fn(|k| 0.5 * (lo[k] + hi[k]));
                (c, [f32::INFINITY; 3])
            }
            Boundary::Periodic(l) => (l.map(|l| 0.5 * l), l.map(|l| l as f32)),
        };
        let bodies: Vec<Body> = (0..n)
            .into_par_iter()
            .map(|i| {
                let p = gas.pos[i];
                Body {
                    x: (p[0] - c[0]) as f32,
                    y: (p[1] - c[1]) as f32,
                    z: (p[2] - c[2]) as f32,
                    m: gas.mass[i] as f32,
                }
            })
            .collect();
        let cells = initial_cells(n);
        let mut octree = build_device_tree(gpu, &bodies, crate::bh::gpu::Storage::Dense, cells)?;
        // Groups of up to 64, as the gravity kernel wants them; the vote walks read only the
        // tree order.
        let sort_ms = sort_tree(gpu, &mut octree, Traversal::Group2.group_size())?;
        let h: Vec<f32> = gas.h.par_iter().map(|&h| h as f32).collect();
        let mut t = StepTree {
            tree_ms: octree.times.tree() + sort_ms,
            boxes: gpu.alloc_poisoned(octree.layout.cells as usize)?,
            h: gpu.upload(&h)?,
            period,
            octree,
            density_ms: 0.0,
            force_ms: 0.0,
            gravity_ms: 0.0,
            density_walks: 0,
            stalled: 0,
        };
        t.compute_boxes(gpu)?;
        Ok(t)
    }

    /// The cells' boxes for the current `h`.
    fn compute_boxes(&mut self, gpu: &Gpu) -> Result<(), HydroGpuError> {
        let mut ready = gpu.alloc_zeros::<u32>(self.octree.layout.cells as usize)?;
        let cfg = gpu.resident_grid(k::sph_cell_boxes, k::CELL_BLOCK)?;
        // SAFETY: boxes and ready hold layout.cells entries; the tree is complete.
        let ((), ms) = gpu.time(|| unsafe {
            let args = (self.octree.view(gpu), &self.h, &mut self.boxes, &mut ready);
            gpu.launch(k::sph_cell_boxes, cfg, args)
        })?;
        self.tree_ms += ms;
        Ok(())
    }

    /// The density pass of `gas` from its current `h` with velocities `vel` and energies `u`:
    /// sets `h`, `ρ`, `f`, `∇·v`, `|∇×v|`, the Balsara factor, `P` and `c_s` as
    /// [`super::density::density`] does.
    pub fn density(
        &mut self,
        gpu: &Gpu,
        gas: &mut Gas,
        vel: &[[f64; 3]],
        u: &[f64],
        params: &HydroParams,
        boundary: &Boundary,
    ) -> Result<(), HydroError> {
        self.density_of(gpu, gas, vel, u, params, boundary, None)
    }

    /// [`Self::density`] for the particles `active` (all when `None`), as
    /// [`super::density::density_of`]: the others are not walked and take only `P` and `c_s`
    /// at their energies.
    #[allow(clippy::too_many_arguments)]
    pub fn density_of(
        &mut self,
        gpu: &Gpu,
        gas: &mut Gas,
        vel: &[[f64; 3]],
        u: &[f64],
        params: &HydroParams,
        boundary: &Boundary,
        active: Option<&[usize]>,
    ) -> Result<(), HydroError> {
        let n = gas.len();
        let lim = limits_f32(params, boundary);
        let mask = active.map(|a| mask_of(a, n));
        let mut start: Vec<HSearch<f32>> = gas
            .h
            .par_iter()
            .map(|&h| HSearch::start(h as f32, &lim))
            .collect();
        if let Some(m) = &mask {
            // The inactive particles' searches start finished: no walk serves them.
            for (s, &on) in start.iter_mut().zip(m) {
                if on == 0 {
                    s.status = H_CONVERGED;
                }
            }
        }
        let h: Vec<f32> = start.par_iter().map(|s| s.h).collect();
        let vel_u: Vec<[f32; 4]> = vel
            .par_iter()
            .map(|v| [v[0] as f32, v[1] as f32, v[2] as f32, 0.0])
            .collect();
        let run = |t: &mut Self| -> Result<_, HydroGpuError> {
            gpu.upload_into(&h, &mut t.h)?;
            let mut search = gpu.upload(&start)?;
            let d_vel = gpu.upload(&vel_u)?;
            let mut sums = gpu.alloc_poisoned::<DensitySum<f32>>(n)?;
            let walk_cfg = gpu.resident_grid(k::sph_hydro_density, k::VOTE_BLOCK)?;
            let update_cfg = gpu.resident_grid(k::sph_hydro_h_update, k::CELL_BLOCK)?;
            let bodies = &t.octree.bodies;
            let mut walks = 0;
            loop {
                let view = DensityView {
                    vel_u: gpu.addr(&d_vel),
                    search: gpu.addr(&search),
                    sums: gpu.addr_mut(&mut sums),
                    kernel: params.kernel.code(),
                    period: t.period,
                };
                // SAFETY: the view's buffers outlive the launch, n entries each.
                let view = unsafe { ViewMut::new(view) };
                let args = (t.octree.view(gpu), &t.h, &t.boxes, view);
                // SAFETY: a sorted, boxed tree of n bodies; h holds n entries.
                let ((), ms) =
                    gpu.time(|| unsafe { gpu.launch(k::sph_hydro_density, walk_cfg, args) })?;
                t.density_ms += ms;
                walks += 1;
                let mut active = gpu.alloc_zeros::<u32>(1)?;
                let args = (
                    bodies,
                    n as u32,
                    &sums,
                    lim,
                    &mut search,
                    &mut t.h,
                    &mut active,
                );
                // SAFETY: every array holds n entries, `active` one.
                let ((), ms) =
                    gpu.time(|| unsafe { gpu.launch(k::sph_hydro_h_update, update_cfg, args) })?;
                t.density_ms += ms;
                if gpu.download(&active)?[0] == 0 {
                    break;
                }
            }
            t.density_walks = walks;
            Ok((gpu.download(&search)?, gpu.download(&sums)?))
        };
        let (search, sums) = run(self)?;
        let on = |i: usize| mask.as_ref().is_none_or(|m| m[i] != 0);
        let mut stalled = 0;
        for (i, s) in search.iter().enumerate().filter(|(i, _)| on(*i)) {
            match s.status {
                H_CONVERGED => {}
                H_STALLED => stalled += 1,
                H_TOO_LARGE => {
                    return Err(HydroError::HTooLarge {
                        index: i,
                        h: s.h as f64,
                        half: boundary.half_width(),
                        n_ngb: params.n_ngb,
                    });
                }
                _ => {
                    return Err(HydroError::HNoConvergence {
                        index: i,
                        h: s.h as f64,
                    });
                }
            }
        }
        self.stalled = stalled;
        let new: Vec<Option<Converged>> = search
            .par_iter()
            .zip(&sums)
            .enumerate()
            .map(|(i, (st, s))| {
                on(i).then(|| Converged {
                    h: st.h as f64,
                    sum: DensitySum {
                        rho: s.rho as f64,
                        drho_dh: s.drho_dh as f64,
                        div: s.div as f64,
                        curl: s.curl.map(f64::from),
                    },
                })
            })
            .collect();
        set_states(gas, &new, u, params);
        Ok(())
    }

    /// The block steps' limiter for the particles `mine` (non-zero) at the levels `level` (theirs
    /// the wanted ones), over the tree's pairs `r < max(h_i, h_j)` at the tree's `h`: each one's
    /// limited level ([`crate::device::sph::hydro::limited_level`], meaningful for `mine`), and
    /// for the others the deepest level a neighbour wakes them to (0: not woken).
    pub fn level_limits(
        &mut self,
        gpu: &Gpu,
        level: &[u32],
        mine: &[u32],
    ) -> Result<(Vec<u32>, Vec<u32>), HydroGpuError> {
        let n = level.len();
        let d_level = gpu.upload(level)?;
        let d_mine = gpu.upload(mine)?;
        let mut limit = gpu.alloc_poisoned::<u32>(n)?;
        let mut wake = gpu.alloc_zeros::<u32>(n)?;
        let cfg = gpu.resident_grid(k::sph_level_limit, k::VOTE_BLOCK)?;
        for pass in 0..2 {
            let view = LevelView {
                level: gpu.addr(&d_level),
                mine: gpu.addr(&d_mine),
                limit: gpu.addr_mut(&mut limit),
                wake: gpu.addr_mut(&mut wake),
                pass,
                period: self.period,
            };
            // SAFETY: the view's buffers outlive the launch, n entries each.
            let view = unsafe { ViewMut::new(view) };
            let args = (self.octree.view(gpu), &self.h, &self.boxes, view);
            // SAFETY: a sorted tree of n bodies boxed for `h`; the view's arrays hold n.
            unsafe { gpu.launch(k::sph_level_limit, cfg, args)? };
        }
        Ok((gpu.download(&limit)?, gpu.download(&wake)?))
    }

    /// Self-gravity accelerations `G ∇φ` and potentials `G φ` of the tree's bodies (monopoles,
    /// `bh_gravity_group2_pot`, as the CPU solver's tree), in the gas's order.
    pub fn gravity(
        &mut self,
        gpu: &Gpu,
        grav: &super::Gravity,
    ) -> Result<(Vec<[f64; 3]>, Vec<f64>), HydroError> {
        self.gravity_of(gpu, grav, None)
    }

    /// [`Self::gravity`] for the particles `active` (all when `None`): the walk serves only the
    /// warp groups' active members (`GroupSubset::of_mask`); the others' entries are not
    /// computed (NaN).
    pub fn gravity_of(
        &mut self,
        gpu: &Gpu,
        grav: &super::Gravity,
        active: Option<&[usize]>,
    ) -> Result<(Vec<[f64; 3]>, Vec<f64>), HydroError> {
        let n = self.octree.n();
        let p = crate::bh::Params {
            theta: grav.theta as f32,
            eps: grav.eps as f32,
            g: grav.g as f32,
        };
        let mut run = || -> Result<_, HydroGpuError> {
            let mut acc = gpu.alloc_poisoned::<Accel>(n)?;
            let mut pot = gpu.alloc_poisoned::<f32>(n)?;
            let subset = match active {
                Some(a) => {
                    let mut mask = vec![false; n];
                    a.iter().for_each(|&i| mask[i] = true);
                    Some(crate::bh::gpu::GroupSubset::of_mask(
                        gpu,
                        &self.octree,
                        &mask,
                    )?)
                }
                None => None,
            };
            self.gravity_ms += crate::bh::gpu::potential_on(
                gpu,
                &mut self.octree,
                &p,
                &mut acc,
                &mut pot,
                subset.as_ref(),
            )?;
            Ok((gpu.download(&acc)?, gpu.download(&pot)?))
        };
        let (acc, pot) = run()?;
        Ok((
            acc.iter()
                .map(|a| [a.x as f64, a.y as f64, a.z as f64])
                .collect(),
            pot.iter().map(|&p| p as f64).collect(),
        ))
    }

    /// The force pass of `gas` (after its density pass) with velocities `vel` and energies `u`:
    /// sets `acc`, `du` and `vsig` as [`super::force::forces`] does.
    pub fn forces(
        &mut self,
        gpu: &Gpu,
        gas: &mut Gas,
        vel: &[[f64; 3]],
        u: &[f64],
        params: &HydroParams,
    ) -> Result<(), HydroError> {
        self.forces_of(gpu, gas, vel, u, params, None)
    }

    /// [`Self::forces`] of the particles `active` (all when `None`); the others keep theirs.
    pub fn forces_of(
        &mut self,
        gpu: &Gpu,
        gas: &mut Gas,
        vel: &[[f64; 3]],
        u: &[f64],
        params: &HydroParams,
        active: Option<&[usize]>,
    ) -> Result<(), HydroError> {
        let n = gas.len();
        let mask = active.map(|a| mask_of(a, n));
        let h: Vec<f32> = gas.h.par_iter().map(|&h| h as f32).collect();
        let vel_u: Vec<[f32; 4]> = (0..n)
            .into_par_iter()
            .map(|i| {
                let v = vel[i];
                [v[0] as f32, v[1] as f32, v[2] as f32, u[i] as f32]
            })
            .collect();
        let side: Vec<[f32; 8]> = (0..n)
            .into_par_iter()
            .map(|i| {
                let rho = gas.rho[i];
                [
                    gas.h[i],
                    rho,
                    gas.f[i] * gas.p[i] / (rho * rho),
                    gas.cs[i],
                    gas.alpha[i],
                    gas.balsara[i],
                    gas.p[i],
                    params.conduction,
                ]
                .map(|x| x as f32)
            })
            .collect();
        let mut run = || -> Result<_, HydroGpuError> {
            gpu.upload_into(&h, &mut self.h)?;
            self.compute_boxes(gpu)?;
            let d_vel_u = gpu.upload(&vel_u)?;
            let d_side = gpu.upload(&side)?;
            let mut acc_du = gpu.alloc_poisoned::<[f32; 4]>(n)?;
            let mut vsig = gpu.alloc_poisoned::<f32>(n)?;
            let d_mask = mask.as_ref().map(|m| gpu.upload(m)).transpose()?;
            let view = GasView {
                active: d_mask.as_ref().map_or(core::ptr::null(), |m| gpu.addr(m)),
                vel_u: gpu.addr(&d_vel_u),
                side: gpu.addr(&d_side),
                acc_du: gpu.addr_mut(&mut acc_du),
                vsig: gpu.addr_mut(&mut vsig),
                kernel: params.kernel.code(),
                period: self.period,
            };
            // SAFETY: the view's buffers outlive the launch, n entries each.
            let view = unsafe { ViewMut::new(view) };
            let cfg = gpu.resident_grid(k::sph_hydro_force, k::VOTE_BLOCK)?;
            let args = (self.octree.view(gpu), &self.h, &self.boxes, view);
            // SAFETY: a sorted tree of n bodies boxed for `h`; the gas view's arrays hold n.
            let ((), ms) = gpu.time(|| unsafe { gpu.launch(k::sph_hydro_force, cfg, args) })?;
            self.force_ms += ms;
            Ok((gpu.download(&acc_du)?, gpu.download(&vsig)?))
        };
        let (acc_du, vsig) = run()?;
        let on = |i: usize| mask.as_ref().is_none_or(|m| m[i] != 0);
        (&mut gas.acc, &mut gas.du, &mut gas.vsig)
            .into_par_iter()
            .enumerate()
            .filter(|(i, _)| on(*i))
            .for_each(|(i, (acc, du, vs))| {
                let a = acc_du[i];
                *acc = [a[0] as f64, a[1] as f64, a[2] as f64];
                *du = a[3] as f64;
                *vs = vsig[i] as f64;
            });
        Ok(())
    }
}

/// Accelerations, `du/dt`, largest signal velocities (float32 on the device, widened) and the
/// kernel's milliseconds.
pub struct GpuForces {
    pub acc: Vec<[f64; 3]>,
    pub du: Vec<f64>,
    pub vsig: Vec<f64>,
    pub ms: f64,
}

/// The force pass of `gas` (after its density pass: `ρ`, `P`, `c_s`, `f`, Balsara factors)
/// with velocities `vel` and energies `u`, as [`super::force::forces`] computes it on the CPU;
/// `gas` itself is left as it was.
pub fn forces(
    gpu: &Gpu,
    gas: &Gas,
    vel: &[[f64; 3]],
    u: &[f64],
    params: &HydroParams,
    boundary: &Boundary,
) -> Result<GpuForces, HydroError> {
    let mut t = StepTree::new(gpu, gas, boundary)?;
    let mut out = gas.clone();
    t.forces(gpu, &mut out, vel, u, params)?;
    Ok(GpuForces {
        acc: out.acc,
        du: out.du,
        vsig: out.vsig,
        ms: t.force_ms,
    })
}

/// The density and force passes of one step on the GPU (one tree for both), as the CPU's
/// [`super::density::density`] and [`super::force::forces`].
pub fn passes(
    gpu: &Gpu,
    gas: &mut Gas,
    vel: &[[f64; 3]],
    u: &[f64],
    params: &HydroParams,
    boundary: &Boundary,
) -> Result<StepTree, HydroError> {
    let mut t = StepTree::new(gpu, gas, boundary)?;
    t.density(gpu, gas, vel, u, params, boundary)?;
    t.forces(gpu, gas, vel, u, params)?;
    Ok(t)
}
