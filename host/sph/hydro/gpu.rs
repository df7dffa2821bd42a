//! The force pass on the GPU (`sph_hydro_force`): the gas's octree built and sorted on the
//! device (`bh::gpu`), its cells boxed for the smoothing lengths, and one vote walk per warp
//! summing the float32 pair terms that [`super::force::forces`] sums in float64.

use super::{Boundary, Gas, HydroParams};
use crate::bh::gpu::{BhError, build_device_tree, sort_tree};
use crate::bh::initial_cells;
use crate::device::bh::{self as bdev, Body};
use crate::device::sph::kernels::{self as k, GasView};
use crate::runtime::{Gpu, GpuError, ViewMut};

/// Failures of the GPU force pass.
#[derive(Debug, thiserror::Error)]
pub enum HydroGpuError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Tree(#[from] BhError),
    #[error(
        "the GPU force pass walks an open domain: a periodic box runs on the CPU solver \
         (--backend cpu)"
    )]
    Periodic,
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
/// with velocities `vel` and energies `u`, as [`super::force::forces`] computes it on the CPU.
pub fn forces(
    gpu: &Gpu,
    gas: &Gas,
    vel: &[[f64; 3]],
    u: &[f64],
    params: &HydroParams,
    boundary: &Boundary,
) -> Result<GpuForces, HydroGpuError> {
    if *boundary != Boundary::Open {
        return Err(HydroGpuError::Periodic);
    }
    let n = gas.len();
    let bodies: Vec<Body> = (0..n)
        .map(|i| {
            let p = gas.pos[i];
            Body {
                x: p[0] as f32,
                y: p[1] as f32,
                z: p[2] as f32,
                m: gas.mass[i] as f32,
            }
        })
        .collect();
    let h: Vec<f32> = gas.h.iter().map(|&h| h as f32).collect();
    let vel_u: Vec<[f32; 4]> = (0..n)
        .map(|i| {
            let v = vel[i];
            [v[0] as f32, v[1] as f32, v[2] as f32, u[i] as f32]
        })
        .collect();
    let side: Vec<[f32; 8]> = (0..n)
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

    let mut octree = build_device_tree(
        gpu,
        &bodies,
        crate::bh::gpu::Storage::Dense,
        initial_cells(n),
    )?;
    sort_tree(gpu, &mut octree, bdev::GROUP_SIZE)?;
    let d_h = gpu.upload(&h)?;
    let mut boxes = gpu.alloc_poisoned(octree.layout.cells as usize)?;
    let mut ready = gpu.alloc_zeros::<u32>(octree.layout.cells as usize)?;
    let cfg = gpu.resident_grid(k::sph_cell_boxes, k::CELL_BLOCK)?;
    // SAFETY: boxes and ready hold layout.cells entries; the tree is complete.
    unsafe {
        gpu.launch(
            k::sph_cell_boxes,
            cfg,
            (octree.view(gpu), &d_h, &mut boxes, &mut ready),
        )?
    };
    let d_vel_u = gpu.upload(&vel_u)?;
    let d_side = gpu.upload(&side)?;
    let mut acc_du = gpu.alloc_poisoned::<[f32; 4]>(n)?;
    let mut vsig = gpu.alloc_poisoned::<f32>(n)?;
    let view = GasView {
        vel_u: gpu.addr(&d_vel_u),
        side: gpu.addr(&d_side),
        acc_du: gpu.addr_mut(&mut acc_du),
        vsig: gpu.addr_mut(&mut vsig),
        kernel: params.kernel.code(),
    };
    // SAFETY: the view's buffers live to the end of this function, n entries each.
    let view = unsafe { ViewMut::new(view) };
    let cfg = gpu.resident_grid(k::sph_hydro_force, k::VOTE_BLOCK)?;
    let args = (octree.view(gpu), &d_h, &boxes, view);
    // SAFETY: a sorted tree of n bodies boxed for `h`; the gas view's arrays hold n entries.
    let ((), ms) = gpu.time(|| unsafe { gpu.launch(k::sph_hydro_force, cfg, args) })?;
    let acc_du = gpu.download(&acc_du)?;
    let vsig = gpu.download(&vsig)?;
    Ok(GpuForces {
        acc: acc_du
            .iter()
            .map(|a| [a[0] as f64, a[1] as f64, a[2] as f64])
            .collect(),
        du: acc_du.iter().map(|a| a[3] as f64).collect(),
        vsig: vsig.iter().map(|&v| v as f64).collect(),
        ms,
    })
}
