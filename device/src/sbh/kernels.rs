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

/// Defines a query kernel whose leading parameters are the tree's, in [`RawTree::new`]'s order
/// (bodies, body dipoles, child, next, cell summaries, cell dipoles, the wide layout's three
/// arrays, n, cells, root half-width), bound to `$v` before `$body` runs.
macro_rules! tree_kernel {
    ($(#[$m:meta])* launch_bounds($max:expr, $min:expr) fn $($rest:tt)*) => {
        tree_kernel!(@ [crate::kernel(launch_bounds($max, $min))] $(#[$m])* fn $($rest)*);
    };
    ($(#[$m:meta])* fn $($rest:tt)*) => {
        tree_kernel!(@ [crate::kernel] $(#[$m])* fn $($rest)*);
    };
    (@ [$($k:tt)*] $(#[$m:meta])* fn $name:ident($v:ident; $($p:ident: $t:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        #[allow(clippy::too_many_arguments)]
        #[$($k)*]
        pub unsafe fn $name(
            bodies: *const Body,
            body_dipole: *const [f32; 3],
            child: *const i32,
            next: *const i32,
            cell_pm: *const Body,
            cell_dipole: *const [f32; 3],
            wide_pm: *const Body,
            wide_meta: *const WideMeta,
            wide_dipole: *const Body,
            n: u32,
            cells: u32,
            root_half: f32,
            $($p: $t),*
        ) {
            // SAFETY: per the module's contract.
            let $v = unsafe {
                RawTree::new(
                    bodies,
                    body_dipole,
                    child,
                    next,
                    cell_pm,
                    cell_dipole,
                    wide_pm,
                    wide_meta,
                    wide_dipole,
                    n,
                    cells,
                    root_half,
                )
            };
            $body
        }
    };
}

/// The estimator's entry points: the general one and the one that reads only the wide layout
/// (fewer registers, so more warps resident). Same arguments.
macro_rules! estimate_kernel {
    ($(#[$doc:meta])* $name:ident, $wide:expr) => {
        tree_kernel!(
            $(#[$doc])*
            fn $name(
                v;
                queries: *const [f32; 3],
                nq: u32,
                kind: u32,
                param: f32,
                samples: u32,
                seed: u64,
                levels: u32,
                allocate: u32,
                coherent: u32,
                order: *const u32,
                out: *mut f32,
            ) {
                let a = EstimateArgs {
                    queries,
                    nq,
                    param,
                    samples,
                    seed,
                    levels,
                    allocate: allocate != 0,
                    coherent: coherent != 0,
                    order,
                    out,
                };
                // One instance per kernel kind: the term loops' `term_add` folds to one formula.
                // SAFETY (each arm): the kernel's contract.
                unsafe {
                    match kind {
                        KIND_SHIFTED => estimate_queries::<KIND_SHIFTED, $wide>(&v, &a),
                        KIND_PLUMMER => estimate_queries::<KIND_PLUMMER, $wide>(&v, &a),
                        KIND_WINDING => estimate_queries::<KIND_WINDING, $wide>(&v, &a),
                        _ => estimate_queries::<KIND_SMOOTH, $wide>(&v, &a),
                    }
                }
            }
        );
    };
}

estimate_kernel!(
    /// For each position `i < nq` of the launch, query `j = order[i]` (`i` when `order` is null:
    /// a permutation of `0..nq`, e.g. [Morton order](morton_key), puts nearby queries in one
    /// warp): `out[j]` = [`sbh_estimate`] at `queries[j]`, with stream
    /// [`stream_of`]`(i, coherent != 0)`. The CPU twin with the same seed and order draws the same
    /// numbers.
    sbh_estimate_kernel,
    false
);

estimate_kernel!(
    /// [`sbh_estimate_kernel`] for a tree with its wide layout and `levels = 2`
    /// ([`sbh_estimate_on_wide`]): the same numbers, with fewer registers.
    sbh_estimate_wide_kernel,
    true
);

/// The query-side arguments of [`sbh_estimate_kernel`].
struct EstimateArgs {
    queries: *const [f32; 3],
    nq: u32,
    param: f32,
    samples: u32,
    seed: u64,
    levels: u32,
    allocate: bool,
    coherent: bool,
    order: *const u32,
    out: *mut f32,
}

/// [`sbh_estimate_kernel`] for one kernel kind.
///
/// # Safety
/// As the kernel.
#[inline(always)]
unsafe fn estimate_queries<const KIND: u32, const WIDE: bool>(v: &RawTree, a: &EstimateArgs) {
    let p = SbhParams {
        kernel: KernelSpec {
            kind: KIND,
            param: a.param,
        },
        samples: a.samples,
        seed: a.seed,
        levels: a.levels,
        allocate: a.allocate,
    };
    let mut i = index_1d();
    while i < a.nq {
        // SAFETY: i < nq, and order (when given) is a permutation of 0..nq.
        unsafe {
            let j = query_at(a.order, i);
            let q = *a.queries.add(j as usize);
            let stream = stream_of(i, a.coherent);
            *a.out.add(j as usize) = if WIDE {
                sbh_estimate_on_wide(v, &p, q, stream)
            } else {
                sbh_estimate(v, &p, q, stream)
            };
        }
        i += grid_size_1d();
    }
}

// ---------------------------------------------------------------------------------------------
// deterministic Barnes–Hut at query points
// ---------------------------------------------------------------------------------------------

tree_kernel!(
    /// `out[j]` = [`bh_estimate`] at `queries[j]` with far-field ratio `beta`, for `j = order[i]`
    /// (`i` when `order` is null) at position `i` of the launch.
    fn sbh_bh_kernel(
        v;
        queries: *const [f32; 3],
        nq: u32,
        kind: u32,
        param: f32,
        beta: f32,
        order: *const u32,
        out: *mut f32,
    ) {
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
);

// ---------------------------------------------------------------------------------------------
// deterministic Barnes–Hut, one traversal per warp of nearby queries
// ---------------------------------------------------------------------------------------------

const BH_GROUP_WARPS: usize = (crate::bh::GROUP_BLOCK / crate::WARP_SIZE) as usize;
crate::static_shared!(sbh_group_stack: [i32; BH_GROUP_WARPS * crate::bh::GROUP_STACK]);
crate::static_shared!(sbh_group_list: [[f32; 4]; BH_GROUP_WARPS * crate::bh::GROUP_LIST]);
crate::static_shared!(sbh_group_dipole: [[f32; 4]; BH_GROUP_WARPS * crate::bh::GROUP_LIST]);
crate::static_shared!(sbh_group_quads: [QuadTerm; BH_GROUP_WARPS * crate::bh::GROUP_LIST]);

tree_kernel!(
    /// Deterministic Barnes–Hut for warps of nearby queries: the 32 positions `32w..32w + 32` of
    /// the launch (queries `order[i]`, or `i` when `order` is null; positions `i ≥ nq` and entries
    /// [`NO_QUERY`] are idle lanes, and each warp's first position holds a query: the host's
    /// `warp_groups` layout of Morton order keeps each warp's queries in one small block) share one
    /// traversal against their bounding box. A cell is used whole when it is far from the whole box
    /// ([`is_far_from_box`]), else opened; bodies are exact. As in `bh_gravity_group`, each step
    /// pops up to [`crate::bh::GROUP_POP`] cells whose children lanes `8s..8s+8` test, and the
    /// accepted sources go to a shared list that every lane sums for its own query with
    /// [`term_add`]. Same arguments as [`sbh_bh_kernel`], `nq` counting positions; launch
    /// `crate::bh::GROUP_BLOCK`-thread blocks, any grid.
    fn sbh_bh_group_kernel(
        v;
        queries: *const [f32; 3],
        nq: u32,
        kind: u32,
        param: f32,
        beta: f32,
        order: *const u32,
        out: *mut f32,
    ) {
        let a = GroupArgs {
            queries,
            nq,
            param,
            beta,
            order,
            out,
            cell_quad: core::ptr::null(),
        };
        // One instance per kernel kind: the hot loop's `term_add` folds to one formula.
        // SAFETY: forwarded contract.
        unsafe {
            match kind {
                KIND_SHIFTED => bh_group::<KIND_SHIFTED, false>(&v, &a),
                KIND_PLUMMER => bh_group::<KIND_PLUMMER, false>(&v, &a),
                KIND_WINDING => bh_group::<KIND_WINDING, false>(&v, &a),
                _ => bh_group::<KIND_SMOOTH, false>(&v, &a),
            }
        }
    }
);

tree_kernel!(
    /// [`sbh_bh_group_kernel`] with the cells' quadrupole moments (`cell_quad`, one per cell, as
    /// `crate::bh`'s summary computes them): listed cells add [`term_quad_add`]. Radial kinds only
    /// ([`has_quadrupole`]; the winding number is refused by the host). A separate entry point so
    /// the monopole kernel keeps its registers.
    ///
    /// Bounded to nine 128-thread blocks per SM (shared memory allows nine): that needs ≤ 56
    /// registers, where ptxas took 58-60 unbounded and only eight blocks fit (6% slower).
    launch_bounds(crate::bh::GROUP_BLOCK, 9)
    fn sbh_bh_group_quad_kernel(
        v;
        queries: *const [f32; 3],
        nq: u32,
        kind: u32,
        param: f32,
        beta: f32,
        order: *const u32,
        out: *mut f32,
        cell_quad: *const Quad,
    ) {
        let a = GroupArgs {
            queries,
            nq,
            param,
            beta,
            order,
            out,
            cell_quad,
        };
        // SAFETY: forwarded contract.
        unsafe {
            match kind {
                KIND_SHIFTED => bh_group::<KIND_SHIFTED, true>(&v, &a),
                KIND_PLUMMER => bh_group::<KIND_PLUMMER, true>(&v, &a),
                _ => bh_group::<KIND_SMOOTH, true>(&v, &a),
            }
        }
    }
);

/// The query-side arguments of [`sbh_bh_group_kernel`].
struct GroupArgs {
    queries: *const [f32; 3],
    nq: u32,
    param: f32,
    beta: f32,
    order: *const u32,
    out: *mut f32,
    /// Per cell, read when `QUAD`.
    cell_quad: *const Quad,
}

/// [`sbh_bh_group_kernel`] for one kernel kind: the warp's box walks the tree once
/// ([`walk_warp`]) and every lane sums the listed sources' terms at its query.
///
/// # Safety
/// As the kernel.
#[inline(always)]
unsafe fn bh_group<const KIND: u32, const QUAD: bool>(v: &RawTree, g: &GroupArgs) {
    use crate::bh::kernels::warp_box;
    use crate::bh::{GROUP_LIST, GROUP_STACK};
    use crate::walk::{DevArray, Shares, walk_warp};
    let k = KernelSpec {
        kind: KIND,
        param: g.param,
    };
    let (root_half, root) = (v.root_half(), v.root());
    let lane = lane_id();
    let wib = warp_idx() as usize;
    // SAFETY: shared arrays sized for GROUP_BLOCK-thread blocks; whole warps throughout (lanes past
    // `nq` stand on the warp's first query and stay in the loop); `order` is a permutation.
    unsafe {
        let stack = sbh_group_stack().add(wib * GROUP_STACK);
        let list = sbh_group_list().add(wib * GROUP_LIST);
        // Each entry point reserves shared memory only for the lists it reads: dipoles for the
        // winding number (monopole entry), moments for the quadrupole entry.
        let dip = sbh_group_dipole().add(wib * GROUP_LIST);
        let lq = sbh_group_quads().add(wib * GROUP_LIST);
        let warps_total = grid_size_1d() / crate::WARP_SIZE;
        let mut w = index_1d() / crate::WARP_SIZE;
        while w * crate::WARP_SIZE < g.nq {
            let first = w * crate::WARP_SIZE;
            let mut j = query_at(
                g.order,
                if first + lane < g.nq {
                    first + lane
                } else {
                    first
                },
            );
            let active = first + lane < g.nq && j != NO_QUERY;
            if !active {
                j = query_at(g.order, first);
            }
            let q = *g.queries.add(j as usize);
            let (bc, bh) = warp_box(q, q);
            let mut t = Query { q, total: 0.0 };
            let s_root = v.cell(root);
            if is_far_from_box(bc, bh, s_root.pos(), diameter_at(root_half, 0), g.beta) {
                t.total = if QUAD {
                    let m = QuadTerm::of(&*g.cell_quad.add(root as usize));
                    term_quad_add(k, q, &s_root, &m, 0.0)
                } else {
                    term(k, q, &s_root, dipole_of(v, k, true, root))
                };
            } else {
                let far = |s: &Body, depth: usize| {
                    is_far_from_box(
                        bc,
                        bh,
                        s.pos(),
                        diameter_at(root_half, depth as u32),
                        g.beta,
                    )
                };
                let whole = Shares::default();
                if QUAD {
                    let quads = DevArray::new(g.cell_quad);
                    let inter = QuadTerms::<_, KIND> {
                        param: g.param,
                        quads,
                    };
                    walk_warp(v, &inter, far, stack, list.cast(), lq, whole, &mut t);
                } else if KIND == KIND_WINDING {
                    let inter = WindingTerms { tree: v };
                    walk_warp(v, &inter, far, stack, list.cast(), dip, whole, &mut t);
                } else {
                    let inter = Terms::<KIND> { param: g.param };
                    let none = core::ptr::NonNull::<()>::dangling().as_ptr();
                    walk_warp(v, &inter, far, stack, list.cast(), none, whole, &mut t);
                }
            }
            if active {
                *g.out.add(j as usize) = t.total;
            }
            w += warps_total;
        }
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
#[crate::kernel]
pub unsafe fn sbh_brute_force(
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
    let flip = KIND == KIND_SHIFTED || KIND == KIND_PLUMMER;
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
                    // Potentials (−w f) sum the negated terms of the negated weight, negated back
                    // below: the same floats (negation commutes with rounding), and on sm_90 ptxas
                    // then schedules this MUFU-bound loop faster (574 vs 596 ms at M = 2^20, 100³
                    // queries, H200) than with the negation folded into every FFMA.
                    let m = if flip { -m } else { m };
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
                    sum[jq] += if flip { -part[jq] } else { part[jq] } as f64;
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
