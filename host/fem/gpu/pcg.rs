//! The Jacobi-PCG solve on the GPU (float64): the driver of the `fem_pcg_*` kernels.

use super::super::FemError;
use super::super::csr::Pattern;
use crate::device::fem::kernels as k;
use crate::runtime::{Gpu, grid_for};

/// Iterations queued between two looks at the GPU's PCG scalars.
const PCG_CHUNK: usize = 16;

/// [`crate::fem::solve::pcg`] on the GPU, in f64: the same Jacobi-preconditioned CG with a
/// warp-per-row CSR SpMV and warp-reduced dot products, the scalars kept on the GPU (kernels
/// `fem_spmv_f64`, `fem_dot_f64`, `fem_pcg_*_f64`). Same contract and errors as the CPU path;
/// the reported iteration count is exact (the kernels stop updating once converged).
pub fn pcg(
    gpu: &Gpu,
    pattern: &Pattern,
    values: &[f64],
    b: &[f64],
    rtol: f64,
    max_iterations: usize,
) -> Result<(Vec<f64>, super::super::solve::CgStats), FemError> {
    use super::super::solve::CgStats;
    use crate::device::fem::{
        PCG_DONE, PCG_ITER, PCG_LAST_PKP, PCG_LAST_RR, PCG_RZ, PCG_SCALARS, PCG_TOL2,
    };
    let rows = pattern.rows();
    let inv_diag = super::super::solve::inverse_diagonal(pattern, values)?;
    let n = u32::try_from(rows)
        .ok()
        .filter(|&n| n <= u32::MAX / crate::device::WARP_SIZE)
        .ok_or_else(|| FemError::MeshSize(format!("{rows} rows: too many for the GPU PCG")))?;
    let bnorm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    crate::fem::solve::check_load_norm(bnorm)?;
    if bnorm == 0.0 {
        let stats = CgStats {
            iterations: 0,
            relative_residual: 0.0,
        };
        return Ok((vec![0.0; rows], stats));
    }
    let z0: Vec<f64> = b.iter().zip(&inv_diag).map(|(r, d)| r * d).collect();
    let mut s0 = [0.0; PCG_SCALARS];
    s0[PCG_RZ] = b.iter().zip(&z0).map(|(r, z)| r * z).sum();
    s0[PCG_TOL2] = (rtol * bnorm).powi(2);
    let row_ptr = gpu.upload(&pattern.row_ptr)?;
    let col = gpu.upload(&pattern.col)?;
    let kv = gpu.upload(values)?;
    let inv = gpu.upload(&inv_diag)?;
    let mut u = gpu.alloc_zeros::<f64>(rows)?;
    let mut r = gpu.upload(b)?;
    let mut z = gpu.upload(&z0)?;
    let mut p = gpu.upload(&z0)?;
    let mut kp = gpu.alloc_zeros::<f64>(rows)?;
    let mut s = gpu.upload(&s0)?;
    let rows_cfg = grid_for(n * crate::device::WARP_SIZE, 256);
    // Grid-stride vector kernels: a few blocks per multiprocessor.
    let blocks = (4 * gpu.info().multiprocessors).min(n.div_ceil(256)).max(1);
    let vec_cfg = crate::runtime::LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let one = grid_for(1, 32);
    let mut it = 0usize;
    loop {
        let chunk = PCG_CHUNK.min(max_iterations - it);
        for _ in 0..chunk {
            it += 1;
            let it32 = it as u32;
            // SAFETY: every vector holds `rows` values, the CSR arrays are the pattern's, `s`
            // holds PCG_SCALARS values; launches are whole warps (the kernels' contracts).
            unsafe {
                gpu.launch(
                    k::fem_spmv_f64,
                    rows_cfg,
                    (&row_ptr, &col, &kv, &p, &mut kp, n),
                )?;
                let pkp = &mut s.slice_mut(crate::device::fem::PCG_PKP..);
                gpu.launch(k::fem_dot_f64, vec_cfg, (&p, &kp, n, pkp))?;
                let args = (&mut u, &mut r, &p, &kp, &mut z, &inv, n, &mut s);
                gpu.launch(k::fem_pcg_update_f64, vec_cfg, args)?;
                gpu.launch(k::fem_pcg_direction_f64, vec_cfg, (&mut p, &z, n, &s))?;
                gpu.launch(k::fem_pcg_scalars_f64, one, (&mut s, it32))?;
            }
        }
        let st = gpu.download(&s)?;
        let iterations = st[PCG_ITER] as usize;
        let rel = st[PCG_LAST_RR].sqrt() / bnorm;
        if st[PCG_DONE] == 2.0 {
            return Err(FemError::Singular {
                iteration: iterations,
                curvature: st[PCG_LAST_PKP],
            });
        }
        if st[PCG_DONE] == 1.0 {
            let stats = CgStats {
                iterations,
                relative_residual: rel,
            };
            return Ok((gpu.download(&u)?, stats));
        }
        if it >= max_iterations {
            return Err(FemError::NotConverged {
                iterations: max_iterations,
                residual: rel,
            });
        }
    }
}
