//! Stochastic and deterministic Barnes–Hut query kernels and the direct-summation reference. One
//! thread per query; launch `QUERY_BLOCK`-thread blocks covering the queries (any grid: the
//! kernels stride). Tree arguments: [`RawTree::new`]'s contract; the dipole pointers may be null
//! unless `kind` is [`KIND_WINDING`].

use super::*;
use crate::gpu::thread::*;

// ---------------------------------------------------------------------------------------------
// stochastic Barnes–Hut
// ---------------------------------------------------------------------------------------------

/// The query evaluated at position `i` of the launch: `order[i]`, or `i` when `order` is null.
///
/// # Safety
/// A non-null `order` holds an entry for `i`.
#[inline(always)]
unsafe fn query_at(order: *const u32, i: u32) -> u32 {
    if order.is_null() {
        i
    } else {
        // SAFETY: per the contract.
        unsafe { *order.add(i as usize) }
    }
}

/// For each position `i < nq` of the launch, query `j = order[i]` (`i` when `order` is null: a
/// permutation of `0..nq`, e.g. [Morton order](morton_key), puts nearby queries in one warp):
/// `out[j]` = [`sbh_estimate`] at `queries[j]`, with stream [`stream_of`]`(i, coherent != 0)`.
/// The CPU twin with the same seed and order draws the same numbers.
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
    order: *const u32,
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
        // SAFETY: i < nq, and order (when given) is a permutation of 0..nq.
        unsafe {
            let j = query_at(order, i);
            let q = *queries.add(j as usize);
            *out.add(j as usize) = sbh_estimate(&v, &p, q, stream_of(i, coherent != 0));
        }
        i += grid_size_1d();
    }
}

// ---------------------------------------------------------------------------------------------
// deterministic Barnes–Hut at query points
// ---------------------------------------------------------------------------------------------

/// `out[j]` = [`bh_estimate`] at `queries[j]` with far-field ratio `beta`, for `j = order[i]`
/// (`i` when `order` is null) at position `i` of the launch.
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
    order: *const u32,
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
        // SAFETY: i < nq, and order (when given) is a permutation of 0..nq.
        unsafe {
            let j = query_at(order, i);
            let q = *queries.add(j as usize);
            *out.add(j as usize) = bh_estimate(&v, k, beta, q);
        }
        i += grid_size_1d();
    }
}

// ---------------------------------------------------------------------------------------------
// direct summation
// ---------------------------------------------------------------------------------------------

crate::static_shared!(sbh_brute_tile: [[f32; 4]; QUERY_BLOCK as usize]);
crate::static_shared!(sbh_brute_tile_dipole: [[f32; 4]; QUERY_BLOCK as usize]);

/// `out[i] = Σ_j term(queries[i], bodies[j])`, each term in float32 ([`term`], the CPU twin's
/// formula), summed in float32 over each tile of [`QUERY_BLOCK`] sources and the tiles' sums in
/// float64 (the twin sums every term in float64: the float32 partial sums add a relative error of
/// about √128 · 2^-24 of a tile's |terms|). `body_dipole` may be null unless `kind` is
/// [`KIND_WINDING`].
///
/// Work units: a group of `QUERY_BLOCK ·` [`BRUTE_QUERIES`] queries (4 per thread) against one of
/// `splits` consecutive chunks of the sources ([`brute_force_splits`] chooses `splits` so that the
/// units fill whole waves of resident blocks). With `splits = 1` each sum is stored; with more, the
/// chunks' sums are added atomically to `out`, which must hold zeros. Launch `QUERY_BLOCK`-thread
/// blocks; any grid (the blocks stride over the units).
#[allow(clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn sbh_brute_force(
    bodies: *const Body,
    body_dipole: *const [f32; 3],
    n: u32,
    queries: *const [f32; 3],
    nq: u32,
    kind: u32,
    param: f32,
    splits: u32,
    out: *mut f64,
) {
    let a = BruteArgs {
        bodies,
        body_dipole,
        n,
        queries,
        nq,
        param,
        splits: splits.max(1),
        out,
    };
    // SAFETY (each arm): the kernel's contract. One copy of the loop per kind, so the kind's
    // `match` in `term` folds away and the inner loop is straight-line code.
    unsafe {
        match kind {
            KIND_SHIFTED => brute::<KIND_SHIFTED>(&a),
            KIND_PLUMMER => brute::<KIND_PLUMMER>(&a),
            KIND_WINDING => brute::<KIND_WINDING>(&a),
            _ => brute::<KIND_SMOOTH>(&a),
        }
    }
}

/// [`sbh_brute_force`]'s arguments.
struct BruteArgs {
    bodies: *const Body,
    body_dipole: *const [f32; 3],
    n: u32,
    queries: *const [f32; 3],
    nq: u32,
    param: f32,
    splits: u32,
    out: *mut f64,
}

/// [`sbh_brute_force`] for one kernel kind.
#[inline(always)]
unsafe fn brute<const KIND: u32>(a: &BruteArgs) {
    use crate::gpu::atomic::atomic_add_f64;
    use crate::gpu::shared::ld_shared_v4_ptr as ld_shared_v4;
    const Q: usize = BRUTE_QUERIES as usize;
    let k = KernelSpec {
        kind: KIND,
        param: a.param,
    };
    let winding = KIND == KIND_WINDING;
    let t = thread_idx_x() as usize;
    let (tile, tile_dipole) = (sbh_brute_tile(), sbh_brute_tile_dipole());
    let per_block = QUERY_BLOCK * BRUTE_QUERIES;
    let units = a.nq.div_ceil(per_block) * a.splits;
    // Sources per chunk, whole tiles.
    let chunk = a.n.div_ceil(a.splits).div_ceil(QUERY_BLOCK) * QUERY_BLOCK;
    // Block-uniform units (every thread of a block runs the same number, so the barriers below
    // are reached by all), sources staged through shared memory one tile at a time; thread `t`
    // owns queries `base + t + j · QUERY_BLOCK` (coalesced), and each source read from shared
    // memory serves all `Q` of them.
    let mut unit = block_idx_x();
    while unit < units {
        let base = unit / a.splits * per_block;
        let lo = (unit % a.splits).saturating_mul(chunk).min(a.n);
        let hi = lo.saturating_add(chunk).min(a.n);
        // SAFETY: i < nq guards the queries; tiles hold QUERY_BLOCK entries; j < hi ≤ n guards
        // sources; `out` holds nq sums (zeros when splits > 1).
        unsafe {
            let mut q = [[0.0f32; 3]; Q];
            for (jq, qj) in q.iter_mut().enumerate() {
                let i = base + t as u32 + jq as u32 * QUERY_BLOCK;
                if i < a.nq {
                    *qj = *a.queries.add(i as usize);
                }
            }
            let mut sum = [0.0f64; Q];
            let mut first = lo;
            while first < hi {
                let j = first + t as u32;
                if j < hi {
                    let b = *a.bodies.add(j as usize);
                    *tile.add(t) = [b.x, b.y, b.z, b.m];
                    if winding {
                        let d = *a.body_dipole.add(j as usize);
                        *tile_dipole.add(t) = [d[0], d[1], d[2], 0.0];
                    }
                }
                sync_threads();
                let count = (hi - first).min(QUERY_BLOCK);
                let mut part = [0.0f32; Q];
                let source = |jj: u32, part: &mut [f32; Q]| {
                    let [x, y, z, m] = ld_shared_v4(tile.add(jj as usize));
                    let s = Body { x, y, z, m };
                    let a = if winding {
                        let d = ld_shared_v4(tile_dipole.add(jj as usize));
                        [d[0], d[1], d[2]]
                    } else {
                        [0.0; 3]
                    };
                    for jq in 0..Q {
                        part[jq] = term_add(k, q[jq], &s, a, part[jq]);
                    }
                };
                // Four sources per iteration (the loop's bookkeeping over 16 terms), then the rest.
                let mut jj = 0u32;
                while jj + 4 <= count {
                    for u in 0..4 {
                        source(jj + u, &mut part);
                    }
                    jj += 4;
                }
                while jj < count {
                    source(jj, &mut part);
                    jj += 1;
                }
                for jq in 0..Q {
                    sum[jq] += part[jq] as f64;
                }
                sync_threads();
                first += QUERY_BLOCK;
            }
            for (jq, sj) in sum.iter().enumerate() {
                let i = base + t as u32 + jq as u32 * QUERY_BLOCK;
                if i < a.nq {
                    if a.splits == 1 {
                        *a.out.add(i as usize) = *sj;
                    } else {
                        atomic_add_f64(a.out.add(i as usize), *sj);
                    }
                }
            }
        }
        unit += grid_dim_x();
    }
}
