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

crate::static_shared!(sbh_brute_tile: [Body; QUERY_BLOCK as usize]);
crate::static_shared!(sbh_brute_tile_dipole: [[f32; 3]; QUERY_BLOCK as usize]);

/// `out[i] = Σ_j term(queries[i], bodies[j])`, each term in float32, accumulated in float64.
/// `body_dipole` may be null unless `kind` is [`KIND_WINDING`]. Launch `QUERY_BLOCK`-thread
/// blocks (the shared-memory tile holds one source per thread); any grid.
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
    let t = thread_idx_x() as usize;
    let (tile, tile_dipole) = (sbh_brute_tile(), sbh_brute_tile_dipole());
    // Block-uniform rounds (every thread of a block runs the same number, so the barriers below
    // are reached by all), sources staged through shared memory one tile at a time.
    let mut base = block_idx_x() * block_dim_x();
    while base < nq {
        let i = base + t as u32;
        let active = i < nq;
        // SAFETY: i < nq guards the query; tiles hold QUERY_BLOCK entries; j < n guards sources.
        unsafe {
            let q = if active {
                *queries.add(i as usize)
            } else {
                [0.0; 3]
            };
            let mut sum = 0.0f64;
            let mut first = 0u32;
            while first < n {
                let j = first + t as u32;
                if j < n {
                    *tile.add(t) = *bodies.add(j as usize);
                    *tile_dipole.add(t) = if winding {
                        *body_dipole.add(j as usize)
                    } else {
                        [0.0; 3]
                    };
                }
                sync_threads();
                let count = (n - first).min(QUERY_BLOCK) as usize;
                for jj in 0..count {
                    sum += term(k, q, &*tile.add(jj), *tile_dipole.add(jj)) as f64;
                }
                sync_threads();
                first += QUERY_BLOCK;
            }
            if active {
                *out.add(i as usize) = sum;
            }
        }
        base += grid_dim_x() * block_dim_x();
    }
}
