//! Stochastic and deterministic Barnes–Hut query kernels and the direct-summation reference. One
//! thread per query; launch `QUERY_BLOCK`-thread blocks covering the queries (any grid: the
//! kernels stride). Tree arguments: [`RawTree::new`]'s contract; the dipole pointers may be null
//! unless `kind` is [`KIND_WINDING`].

use super::*;
use crate::gpu::thread::*;

// ---------------------------------------------------------------------------------------------
// stochastic Barnes–Hut
// ---------------------------------------------------------------------------------------------

/// `out[i]` = [`sbh_estimate`] at `queries[i]`, with stream [`stream_of`]`(i, coherent != 0)`:
/// the CPU twin with the same seed draws the same numbers.
#[allow(clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn sbh_estimate_kernel(
    bodies: *const Body,
    body_dipole: *const [f32; 3],
    child: *const i32,
    next: *const i32,
    cell_pm: *const Body,
    cell_dipole: *const [f32; 3],
    n: u32,
    cells: u32,
    root_half: f32,
    queries: *const [f32; 3],
    nq: u32,
    kind: u32,
    param: f32,
    samples: u32,
    seed: u64,
    levels: u32,
    coherent: u32,
    out: *mut f32,
) {
    // SAFETY: per the module's contract.
    let v = unsafe {
        RawTree::new(
            bodies,
            body_dipole,
            child,
            next,
            cell_pm,
            cell_dipole,
            n,
            cells,
            root_half,
        )
    };
    let p = SbhParams {
        kernel: KernelSpec { kind, param },
        samples,
        seed,
        levels,
    };
    let mut i = index_1d();
    while i < nq {
        // SAFETY: i < nq.
        unsafe {
            let q = *queries.add(i as usize);
            *out.add(i as usize) = sbh_estimate(&v, &p, q, stream_of(i, coherent != 0));
        }
        i += grid_size_1d();
    }
}

// ---------------------------------------------------------------------------------------------
// deterministic Barnes–Hut at query points
// ---------------------------------------------------------------------------------------------

/// `out[i]` = [`bh_estimate`] at `queries[i]` with far-field ratio `beta`.
#[allow(clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn sbh_bh_kernel(
    bodies: *const Body,
    body_dipole: *const [f32; 3],
    child: *const i32,
    next: *const i32,
    cell_pm: *const Body,
    cell_dipole: *const [f32; 3],
    n: u32,
    cells: u32,
    root_half: f32,
    queries: *const [f32; 3],
    nq: u32,
    kind: u32,
    param: f32,
    beta: f32,
    out: *mut f32,
) {
    // SAFETY: per the module's contract.
    let v = unsafe {
        RawTree::new(
            bodies,
            body_dipole,
            child,
            next,
            cell_pm,
            cell_dipole,
            n,
            cells,
            root_half,
        )
    };
    let k = KernelSpec { kind, param };
    let mut i = index_1d();
    while i < nq {
        // SAFETY: i < nq.
        unsafe {
            let q = *queries.add(i as usize);
            *out.add(i as usize) = bh_estimate(&v, k, beta, q);
        }
        i += grid_size_1d();
    }
}

// ---------------------------------------------------------------------------------------------
// direct summation
// ---------------------------------------------------------------------------------------------

/// `out[i] = Σ_j term(queries[i], bodies[j])`, each term in float32, accumulated in float64.
/// `body_dipole` may be null unless `kind` is [`KIND_WINDING`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn sbh_brute_force(
    bodies: *const Body,
    body_dipole: *const [f32; 3],
    n: u32,
    queries: *const [f32; 3],
    nq: u32,
    kind: u32,
    param: f32,
    out: *mut f64,
) {
    let k = KernelSpec { kind, param };
    let winding = kind == KIND_WINDING;
    let mut i = index_1d();
    while i < nq {
        // SAFETY: i < nq, j < n.
        unsafe {
            let q = *queries.add(i as usize);
            let mut sum = 0.0f64;
            for j in 0..n as usize {
                let a = if winding {
                    *body_dipole.add(j)
                } else {
                    [0.0; 3]
                };
                sum += term(k, q, &*bodies.add(j), a) as f64;
            }
            *out.add(i as usize) = sum;
        }
        i += grid_size_1d();
    }
}
