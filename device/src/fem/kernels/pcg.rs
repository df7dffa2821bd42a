//! Jacobi-preconditioned conjugate gradients (f64) on the GPU.
//!
//! The scalars live on the GPU (`s`, indices `PCG_*` of `fem`), so an iteration is five launches
//! and no host round trip; the host reads `s` every few iterations to see whether the run has
//! stopped. Per iteration: `fem_spmv_f64` (Kp), `fem_dot_f64` (pᵀKp into `s[PCG_PKP]`),
//! `fem_pcg_update_f64` (u, r, z, rᵀz and rᵀr), `fem_pcg_direction_f64` (p),
//! `fem_pcg_scalars_f64` (convergence, breakdown, rotation). The vector kernels are grid-stride
//! loops over whole warps: launch any grid of whole warps.

use super::super::{
    PCG_DONE, PCG_ITER, PCG_LAST_PKP, PCG_LAST_RR, PCG_PKP, PCG_RR, PCG_RZ, PCG_RZ_NEW, PCG_TOL2,
};
use super::DeviceReal;
// `mul_add` in the kernels' bodies, which exist only in the GPU build.
#[cfg_attr(not(target_arch = "nvptx64"), allow(unused_imports))]
use super::super::Real;
use crate::gpu::atomic::atomic_add_f64;
use crate::gpu::thread::{grid_size_1d, index_1d, lane_id};

/// Sum over the warp (all lanes must call it).
#[inline(always)]
unsafe fn warp_sum(mut v: f64) -> f64 {
    // SAFETY: the caller's warp is converged.
    unsafe {
        for m in [16, 8, 4, 2, 1] {
            v += v.shfl_xor(m);
        }
    }
    v
}

/// y = K x for the CSR matrix (`row_ptr`, `col`, `values`), one warp per row: launch
/// 32 `rows` threads (whole blocks of whole warps).
///
/// # Safety
/// The CSR arrays are consistent, `x` and `y` hold `rows` values.
#[crate::kernel]
pub unsafe fn fem_spmv_f64(
    row_ptr: *const u32,
    col: *const u32,
    values: *const f64,
    x: *const f64,
    y: *mut f64,
    rows: u32,
) {
    let r = index_1d() / crate::WARP_SIZE;
    if r >= rows {
        return; // whole warps leave together
    }
    let lane = lane_id();
    // SAFETY: per the contract.
    unsafe {
        let (s, e) = (*row_ptr.add(r as usize), *row_ptr.add(r as usize + 1));
        let mut acc = 0.0;
        let mut k = s + lane;
        while k < e {
            acc = (*values.add(k as usize)).mul_add(*x.add(*col.add(k as usize) as usize), acc);
            k += crate::WARP_SIZE;
        }
        let acc = warp_sum(acc);
        if lane == 0 {
            *y.add(r as usize) = acc;
        }
    }
}

/// `*out += a · b` over `n` values.
///
/// # Safety
/// `a`, `b` hold `n` values; `out` is valid.
#[crate::kernel]
pub unsafe fn fem_dot_f64(a: *const f64, b: *const f64, n: u32, out: *mut f64) {
    let mut acc = 0.0;
    let mut i = index_1d();
    // SAFETY: per the contract.
    unsafe {
        while i < n {
            acc = (*a.add(i as usize)).mul_add(*b.add(i as usize), acc);
            i += grid_size_1d();
        }
        let acc = warp_sum(acc);
        if lane_id() == 0 {
            atomic_add_f64(out, acc);
        }
    }
}

/// α = rᵀz / pᵀKp; u += α p; r −= α Kp; z = r / diag K; accumulates the new rᵀz and rᵀr.
/// Does nothing once the run has stopped or when pᵀKp ≤ 0 (the scalars kernel reports it).
///
/// # Safety
/// Every vector holds `n` values; `s` holds the PCG scalars.
#[allow(clippy::too_many_arguments)]
#[crate::kernel]
pub unsafe fn fem_pcg_update_f64(
    u: *mut f64,
    r: *mut f64,
    p: *const f64,
    kp: *const f64,
    z: *mut f64,
    inv_diag: *const f64,
    n: u32,
    s: *mut f64,
) {
    // SAFETY: per the contract.
    unsafe {
        let pkp = *s.add(PCG_PKP);
        if *s.add(PCG_DONE) != 0.0 || pkp.partial_cmp(&0.0) != Some(core::cmp::Ordering::Greater) {
            return; // uniform over the grid: no warp is left half-attended
        }
        let alpha = *s.add(PCG_RZ) / pkp;
        let (mut rz, mut rr) = (0.0, 0.0);
        let mut i = index_1d();
        while i < n {
            let k = i as usize;
            *u.add(k) = alpha.mul_add(*p.add(k), *u.add(k));
            let ri = (-alpha).mul_add(*kp.add(k), *r.add(k));
            *r.add(k) = ri;
            let zi = ri * *inv_diag.add(k);
            *z.add(k) = zi;
            rz = ri.mul_add(zi, rz);
            rr = ri.mul_add(ri, rr);
            i += grid_size_1d();
        }
        let (rz, rr) = (warp_sum(rz), warp_sum(rr));
        if lane_id() == 0 {
            atomic_add_f64(s.add(PCG_RZ_NEW), rz);
            atomic_add_f64(s.add(PCG_RR), rr);
        }
    }
}

/// β = rᵀz (new) / rᵀz (old); p = z + β p. Does nothing once the run has stopped.
///
/// # Safety
/// `p`, `z` hold `n` values; `s` holds the PCG scalars.
#[crate::kernel]
pub unsafe fn fem_pcg_direction_f64(p: *mut f64, z: *const f64, n: u32, s: *const f64) {
    // SAFETY: per the contract.
    unsafe {
        if *s.add(PCG_DONE) != 0.0 {
            return;
        }
        let beta = *s.add(PCG_RZ_NEW) / *s.add(PCG_RZ);
        let mut i = index_1d();
        while i < n {
            let k = i as usize;
            *p.add(k) = beta.mul_add(*p.add(k), *z.add(k));
            i += grid_size_1d();
        }
    }
}

/// One thread, after iteration `it` (1-based): records rᵀr and pᵀKp, stops the run on
/// convergence (rᵀr ≤ `s[PCG_TOL2]`: done = 1) or breakdown (pᵀKp ≤ 0 or NaN: done = 2), else
/// rotates the scalars for the next iteration.
///
/// # Safety
/// `s` holds the PCG scalars.
#[crate::kernel]
pub unsafe fn fem_pcg_scalars_f64(s: *mut f64, it: u32) {
    if index_1d() != 0 {
        return;
    }
    // SAFETY: per the contract.
    unsafe {
        if *s.add(PCG_DONE) != 0.0 {
            return;
        }
        let (pkp, rr) = (*s.add(PCG_PKP), *s.add(PCG_RR));
        *s.add(PCG_LAST_PKP) = pkp;
        *s.add(PCG_ITER) = it as f64;
        if pkp.partial_cmp(&0.0) != Some(core::cmp::Ordering::Greater) {
            *s.add(PCG_DONE) = 2.0;
            return;
        }
        *s.add(PCG_LAST_RR) = rr;
        if rr <= *s.add(PCG_TOL2) {
            *s.add(PCG_DONE) = 1.0;
            return;
        }
        *s.add(PCG_RZ) = *s.add(PCG_RZ_NEW);
        *s.add(PCG_PKP) = 0.0;
        *s.add(PCG_RZ_NEW) = 0.0;
        *s.add(PCG_RR) = 0.0;
    }
}
