//! Hex8 stiffness assembly kernels. Every kernel adds element matrices into the CSR values of the
//! global matrix at the element's precomputed positions, using the parent module's formulas.
//!
//! Common parameters (`T` is `f32` or `f64`, per the kernel name's suffix):
//! - `coords: *const T` — 3 per node (x, y, z);
//! - `elements: *const u32` — 8 node indices per element, VTK order;
//! - `positions: *const u32` — 576 per element: entry (r, c) of Ke goes to
//!   `values[positions[576 e + 24 r + c]]`;
//! - `list: *const u32`, `n: u32` — the elements this launch assembles: one colour (plain
//!   kernels: no two share a node, so their writes are disjoint and need no atomics) or every
//!   element (`_atomic` kernels: writes may collide and use `atom.add`);
//! - `lames: *const T`, `material_of: *const u32`, `materials: u32` — the material table, (λ, μ)
//!   per material, and each element's index in it, read only when `materials > 1` (so one
//!   material costs no per-element load: the table's two values are the same for every thread);
//! - `values: *mut T` — the CSR values, zeroed before the first launch and accumulated across
//!   colours.
//!
//! An element with det J ≤ 0 traps (the host validates meshes first, so this only fires on a
//! host bug); the launch then fails naming the kernel.
//!
//! Strategies (Kiran et al. 2019):
//! - `fem_thread_*`: one thread per element, Ke (576 values) in local memory: the paper's
//!   colouring baseline. Launch [`super::THREAD_BLOCK`] threads per block, ⌈n / block⌉ blocks.
//! - `fem_warp4_*`: one warp per element, 4 lanes per row of 3×3 blocks: lane l owns rows of node
//!   l / 4 and columns of nodes 2(l % 4) and 2(l % 4) + 1, 18 entries (3 rows × 6 columns).
//! - `fem_warp8_*`: one warp per element, 8 lanes per row: lane l owns rows of nodes 2(l / 8) and
//!   2(l / 8) + 1 and columns of node l % 8, 18 entries (6 rows × 3 columns); a warp's stores touch
//!   4 global rows at a time instead of 8.
//!
//!   Both warp layouts compute the Jacobian at each Gauss point by warp shuffles (the paper's
//!   fastest option, its Table 1): lane l multiplies ∂N_a/∂ξ_i x_a[j] for node a = l % 8 and
//!   column j = l / 8 (lanes 24–31 contribute 0), a butterfly over the 8 lanes of a group sums over
//!   the nodes, and an indexed shuffle broadcasts J[i][j] to every lane; each lane then inverts J
//!   itself (cheaper than a shared-memory round trip) and forms the gradients it needs.
//!   Launch [`super::WARP_BLOCK`] threads per block, ⌈n / (block / 32)⌉ blocks.
//! - `fem_warp{4,8}_jshared_*`, `fem_warp{4,8}_jatomic_*`: the same warp kernels with the
//!   Jacobian summed over the nodes through shared memory (products stored, 9 lanes sum 8 each,
//!   everyone reads J back) or by `red.shared.add` into a zeroed J: the paper's Table 1
//!   alternatives to the shuffle butterfly.
//! - `*_atomic` variants: the same computation over all elements in one launch with atomic adds,
//!   to test whether colouring still pays on a modern GPU.
//! - `fem_ppni{4,8}_*` (PPNI, the paper's parallel numerical integration): lanes 0–23 load the 24
//!   node coordinates once (one load each) into shared memory; lane (g = l % 8, q = l / 8) computes
//!   J, det J and J⁻¹ at Gauss point g (no shuffles) and ∇N of nodes 2q, 2q + 1 there, and stores
//!   (∇N, det J) for all 64 (Gauss point, node) pairs in shared memory; after one `bar.warp.sync`
//!   each lane accumulates its two 3×3 blocks (layout 4 or 8 as above) from 16-byte shared loads
//!   with [`super::add_block_split`] (2 FMAs per entry and Gauss point). All 18 old values are
//!   loaded before any is stored (one memory round trip, not 18; the older kernels keep their
//!   interleaved scatter as baselines). `_blocks` variants read [`BLOCK_TABLE`] values per element
//!   (the CSR position of each 3×3 block and each node's row length: entry (3a + i, 3b + j) is at
//!   `base[8a + b] + i stride[a] + j`, true for any mesh since a node's three rows share their
//!   columns) instead of 576, 8× less position traffic, loaded before the geometry so the loads
//!   overlap it; `_blocks_atomic` assemble every element in one launch with `red.add`.
//!   Shared memory: [`WARP_SMEM`] values per warp.
//! - `fem_bbar_ppni*`: the ppni kernels for the B-bar formulation ([`super::element_stiffness_bbar`]):
//!   the blocks accumulate the deviatoric part ([`super::Lame::bbar_split`]) and, from the same
//!   shared loads, ∫∇N dV of both nodes and the volume, then add the volumetric part
//!   ([`super::add_volumetric`]) once; same parameters and launch shape ([`fem_bbar_strategies!`]).
//! - `fem_geometry_*` + `fem_entries_*` (two kernels): kernel 1, a thread per (element, Gauss
//!   point), writes (∇N, det J) of the 8 nodes to global memory; kernel 2, per colour, a block of
//!   576 threads per element copies that element's geometry to shared memory and each thread
//!   computes one entry of Ke.
//! - `fem_rows_*` (node rows, a gather): a warp per node computes that node's three CSR rows
//!   from the elements around it and writes them once, coalesced: no colouring, no atomics in
//!   global memory, no zeroing, and no read-modify-write of the values (the element-centric
//!   kernels above move each 32-byte sector of the values once per colour, since a colour's
//!   updates are scattered over the whole matrix). See [`node_rows`] for its parameters. The
//!   price is recomputing each element's geometry for each of its 8 nodes.
//! - `fem_spmv_f64`, `fem_dot_f64`, `fem_pcg_*_f64`: Jacobi-preconditioned CG (see that section).

use super::{
    BLOCK_TABLE, DOFS, ENTRIES, GEOMETRY_VALUES, Lame, NODES, Real, add_block, add_block_split,
    add_volumetric, block_position, det3, finish_block, gauss_geometry, inverse3, jacobian_signs,
    node_signs, physical_gradient, shape_gradient_natural, shape_gradient_signs,
    stiffness_integrand_dyn,
};
use crate::gpu::atomic::AtomicAdd;
use crate::gpu::shared::SharedScalar;
use crate::gpu::thread::{block_idx_x, index_1d, lane_id, sync_threads, thread_idx_x};
use crate::gpu::warp::{FULL_MASK, Shuffle, shuffle_idx, shuffle_xor, sync_warp};

mod pcg;
mod rows;
pub use pcg::*;
pub use rows::*;

/// The device-only operations the kernels need beyond [`Real`], all from the device layer:
/// shuffles of 32- and 64-bit values, `atom.add`, and shared memory by window address.
trait DeviceReal: Real + Shuffle + AtomicAdd + SharedScalar {
    /// Shared-window address of this precision's per-block scratch ([`SMEM_VALUES`] values).
    fn smem() -> u32;
    /// Shared-window address of the node-row kernels' per-block scratch ([`ROWS_SMEM`] values).
    fn rows_smem() -> u32;
    /// `shfl.sync.bfly` over the full warp.
    ///
    /// # Safety
    /// All 32 lanes must call it together.
    #[inline(always)]
    unsafe fn shfl_xor(self, lane_mask: u32) -> Self {
        // SAFETY: forwarded.
        unsafe { shuffle_xor(FULL_MASK, self, lane_mask) }
    }
    /// `shfl.sync.idx` over the full warp.
    ///
    /// # Safety
    /// All 32 lanes must call it together.
    #[inline(always)]
    unsafe fn shfl_idx(self, src: u32) -> Self {
        // SAFETY: forwarded.
        unsafe { shuffle_idx(FULL_MASK, self, src) }
    }
    /// `ld.shared` at shared-window byte address `addr`.
    ///
    /// # Safety
    /// As [`SharedScalar::load`].
    #[inline(always)]
    unsafe fn lds(addr: u32) -> Self {
        // SAFETY: forwarded.
        unsafe { Self::load(addr) }
    }
    /// `st.shared`.
    ///
    /// # Safety
    /// As [`SharedScalar::store`].
    #[inline(always)]
    unsafe fn sts(addr: u32, v: Self) {
        // SAFETY: forwarded.
        unsafe { Self::store(addr, v) }
    }
    /// Four consecutive values (16-byte aligned for f32, 32 for f64): vector loads.
    ///
    /// # Safety
    /// As [`SharedScalar::load4`].
    #[inline(always)]
    unsafe fn lds4(addr: u32) -> [Self; 4] {
        // SAFETY: forwarded.
        unsafe { Self::load4(addr) }
    }
    /// Four consecutive values, stored with vector stores.
    ///
    /// # Safety
    /// As [`SharedScalar::store4`].
    #[inline(always)]
    unsafe fn sts4(addr: u32, v: [Self; 4]) {
        // SAFETY: forwarded.
        unsafe { Self::store4(addr, v) }
    }
    /// `red.shared.add`.
    ///
    /// # Safety
    /// As [`SharedScalar::red_add`].
    #[inline(always)]
    unsafe fn red_shared(addr: u32, v: Self) {
        // SAFETY: forwarded.
        unsafe { Self::red_add(addr, v) }
    }
}

/// Values of per-block shared scratch: 8 warps × [`WARP_SMEM`].
const SMEM_VALUES: usize = 8 * WARP_SMEM as usize;
/// Values of shared scratch per warp: PPNI's 8 Gauss points × 8 nodes × (∇N, det J), then the
/// element's 8 node coordinates padded to 4.
const WARP_SMEM: u32 = 256 + 32;
const _: () = assert!(super::WARP_BLOCK / crate::WARP_SIZE == 8);
const _: () = assert!(SMEM_VALUES >= 256); // the two-kernel entry kernel's element geometry

crate::static_shared_window!(fem_smem32: [f32; SMEM_VALUES]);
crate::static_shared_window!(fem_smem64: [f64; SMEM_VALUES]);

impl DeviceReal for f32 {
    #[inline(always)]
    fn smem() -> u32 {
        fem_smem32()
    }
    #[inline(always)]
    fn rows_smem() -> u32 {
        rows::fem_rows32()
    }
}

impl DeviceReal for f64 {
    #[inline(always)]
    fn smem() -> u32 {
        fem_smem64()
    }
    #[inline(always)]
    fn rows_smem() -> u32 {
        rows::fem_rows64()
    }
}

/// Adds `v` at `values[p]`: a plain read-modify-write within a colour, an atomic otherwise.
///
/// # Safety
/// `values[p]` must be valid; without `ATOMIC`, no other thread of the launch may touch it.
#[inline(always)]
unsafe fn scatter<T: DeviceReal, const ATOMIC: bool>(values: *mut T, p: u32, v: T) {
    // SAFETY: per the caller.
    unsafe {
        let slot = values.add(p as usize);
        if ATOMIC {
            T::atomic_add(slot, v);
        } else {
            *slot += v;
        }
    }
}

/// Node `node`'s coordinates.
///
/// # Safety
/// `coords` must hold 3 values per node for every index in `elements`.
#[inline(always)]
unsafe fn node_coords<T: Real>(coords: *const T, node: u32) -> [T; 3] {
    let c = node as usize * 3;
    // SAFETY: per the caller.
    unsafe { [*coords.add(c), *coords.add(c + 1), *coords.add(c + 2)] }
}

/// Ends the grid with an error: an element reached a kernel with det J ≤ 0.
#[inline(always)]
fn inverted() -> ! {
    crate::gpu::thread::trap()
}

/// The elements' materials as the kernels take them (module docs: `lames`, `material_of`,
/// `materials`).
#[derive(Clone, Copy)]
struct Materials<T> {
    lames: *const T,
    index: *const u32,
    count: u32,
}

impl<T: Real> Materials<T> {
    /// Element `e`'s Lamé constants.
    ///
    /// # Safety
    /// `lames` holds 2 `count` values; with `count > 1`, `index[e]` exists and is < `count`;
    /// with one material, `index[0]` exists and is 0.
    #[inline(always)]
    unsafe fn of(self, e: usize) -> Lame<T> {
        // SAFETY: per the caller (one material: `index[0]` exists and is 0).
        unsafe {
            // One unpredicated load from `index[e]`, or from `index[0]` (= 0) for one material.
            // The former form, a load under `count > 1` and 0 otherwise, faulted on the H200
            // in `fem_warp8_jshared_f64` with one material (garbage per-lane addresses) though
            // ptxas's SASS of it is correct: the driver's JIT is the suspect.
            let at = if self.count > 1 { e } else { 0 };
            let m = *self.index.add(at) as usize;
            Lame {
                lambda: *self.lames.add(2 * m),
                mu: *self.lames.add(2 * m + 1),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// thread per element (the baseline)
// ---------------------------------------------------------------------------------------------

/// # Safety
/// See the module docs for the buffers' contract.
#[inline(always)]
// The node and direction indices address Ke and the positions alike.
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
unsafe fn thread_per_element<T: DeviceReal, const ATOMIC: bool>(
    coords: *const T,
    elements: *const u32,
    positions: *const u32,
    list: *const u32,
    n: u32,
    mats: Materials<T>,
    values: *mut T,
) {
    let t = index_1d();
    if t >= n {
        return;
    }
    // SAFETY: t < n indexes `list`; the element's 8 nodes and 576 positions exist (module docs).
    unsafe {
        let e = *list.add(t as usize) as usize;
        let lame = mats.of(e);
        let conn = elements.add(NODES * e);
        let x: [[T; 3]; NODES] = core::array::from_fn(|a| node_coords(coords, *conn.add(a)));
        let mut ke = [[[[T::ZERO; 3]; 3]; NODES]; NODES];
        for g in 0..super::GAUSS {
            let Ok(geo) = gauss_geometry(&x, g) else {
                inverted()
            };
            for a in 0..NODES {
                for b in 0..NODES {
                    add_block(&mut ke[a][b], geo.grad[a], geo.grad[b], geo.weight, lame);
                }
            }
        }
        let pos = positions.add(ENTRIES * e);
        for a in 0..NODES {
            for i in 0..3 {
                for b in 0..NODES {
                    for j in 0..3 {
                        let p = *pos.add((3 * a + i) * DOFS + 3 * b + j);
                        scatter::<T, ATOMIC>(values, p, ke[a][b][i][j]);
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// warp per element, Jacobian by shuffle
// ---------------------------------------------------------------------------------------------

/// How the per-Gauss-point Jacobian is summed over the nodes (the paper's Table 1).
const JAC_SHUFFLE: u32 = 0;
const JAC_SHARED: u32 = 1;
const JAC_ATOMIC: u32 = 2;

/// The two (row node, column node) blocks that `lane` owns under layout `LANES_PER_ROW` (4 or 8).
#[inline(always)]
fn lane_blocks<const LANES_PER_ROW: u32>(lane: u32) -> [(usize, usize); 2] {
    let l = lane as usize;
    if LANES_PER_ROW == 4 {
        [(l / 4, 2 * (l % 4)), (l / 4, 2 * (l % 4) + 1)]
    } else {
        [(2 * (l / 8), l % 8), (2 * (l / 8) + 1, l % 8)]
    }
}

/// # Safety
/// See the module docs; launch whole warps (every lane of a warp reaches the shuffles).
#[inline(always)]
// The block's row and column indices address the accumulator and the positions alike.
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
unsafe fn warp_per_element<
    T: DeviceReal,
    const LANES_PER_ROW: u32,
    const ATOMIC: bool,
    const JAC: u32,
>(
    coords: *const T,
    elements: *const u32,
    positions: *const u32,
    list: *const u32,
    n: u32,
    mats: Materials<T>,
    values: *mut T,
) {
    let w = index_1d() / crate::WARP_SIZE;
    if w >= n {
        return; // the whole warp leaves together: no shuffle is left half-attended
    }
    let lane = lane_id();
    let node = (lane % 8) as usize;
    // Jacobian column this lane's products feed; 3 means "no column" (lanes 24–31).
    let col = (lane / 8) as usize;
    let blocks = lane_blocks::<LANES_PER_ROW>(lane);
    // SAFETY: w < n indexes `list`; node < 8; positions exist (module docs).
    unsafe {
        let e = *list.add(w as usize) as usize;
        let lame = mats.of(e);
        let xa = node_coords(coords, *elements.add(NODES * e + node));
        let mut acc = [[[T::ZERO; 3]; 3]; 2];
        // This warp's shared scratch (byte address), for the shared and atomic Jacobians.
        let scratch = T::smem() + (thread_idx_x() / crate::WARP_SIZE) * WARP_SMEM * T::SIZE;
        let at = |k: u32| scratch + k * T::SIZE;
        if JAC == JAC_ATOMIC {
            // J of every Gauss point at 9 g + 3 i + j, zeroed once.
            for k in [lane, lane + 32, lane + 64] {
                if k < 72 {
                    T::sts(at(k), T::ZERO);
                }
            }
            sync_warp(FULL_MASK);
        }
        for g in 0..super::GAUSS {
            let dn = shape_gradient_natural::<T>(g, node);
            let mut jac = [[T::ZERO; 3]; 3];
            if JAC == JAC_SHUFFLE {
                for (i, row) in jac.iter_mut().enumerate() {
                    let mut v = if col < 3 { dn[i] * xa[col] } else { T::ZERO };
                    // Butterfly within the 8-lane group: the sum over the element's nodes.
                    v += v.shfl_xor(1);
                    v += v.shfl_xor(2);
                    v += v.shfl_xor(4);
                    for (j, r) in row.iter_mut().enumerate() {
                        *r = v.shfl_idx(8 * j as u32);
                    }
                }
            } else if JAC == JAC_SHARED {
                // Products ∂N_a/∂ξ_i x_a[j] at 8 (3 i + j) + a; lane 3 i + j < 9 sums its
                // eight into 72 + 3 i + j; every lane reads J back.
                if col < 3 {
                    for i in 0..3 {
                        T::sts(
                            at(8 * (3 * i + col as u32) + node as u32),
                            dn[i as usize] * xa[col],
                        );
                    }
                }
                sync_warp(FULL_MASK);
                if lane < 9 {
                    let p = T::lds4(at(8 * lane));
                    let q = T::lds4(at(8 * lane + 4));
                    let s = ((p[0] + p[1]) + (p[2] + p[3])) + ((q[0] + q[1]) + (q[2] + q[3]));
                    T::sts(at(72 + lane), s);
                }
                sync_warp(FULL_MASK);
                for (i, row) in jac.iter_mut().enumerate() {
                    for (j, r) in row.iter_mut().enumerate() {
                        *r = T::lds(at(72 + 3 * i as u32 + j as u32));
                    }
                }
            } else {
                // Atomic adds of the products into J (zeroed above).
                let base = 9 * g as u32;
                if col < 3 {
                    for i in 0..3 {
                        T::red_shared(at(base + 3 * i + col as u32), dn[i as usize] * xa[col]);
                    }
                }
                sync_warp(FULL_MASK);
                for (i, row) in jac.iter_mut().enumerate() {
                    for (j, r) in row.iter_mut().enumerate() {
                        *r = T::lds(at(base + 3 * i as u32 + j as u32));
                    }
                }
            }
            let det = det3(&jac);
            if det.partial_cmp(&T::ZERO) != Some(core::cmp::Ordering::Greater) {
                inverted();
            }
            let inv = inverse3(&jac, det);
            for (k, &(a, b)) in blocks.iter().enumerate() {
                let ga = physical_gradient(&inv, shape_gradient_natural(g, a));
                let gb = physical_gradient(&inv, shape_gradient_natural(g, b));
                add_block(&mut acc[k], ga, gb, det, lame);
            }
        }
        let pos = positions.add(ENTRIES * e);
        for (k, &(a, b)) in blocks.iter().enumerate() {
            for i in 0..3 {
                for j in 0..3 {
                    let p = *pos.add((3 * a + i) * DOFS + 3 * b + j);
                    scatter::<T, ATOMIC>(values, p, acc[k][i][j]);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// PPNI: the eight Gauss points' geometry in parallel, shared with the warp through shared memory
// ---------------------------------------------------------------------------------------------

/// Where the lane's 18 entries go in `values`, from the full table (`BLOCKS = false`: 576
/// positions per element) or the block table (`BLOCKS = true`: per element, 64 bases then 8 row
/// strides; entry (3a + i, 3b + j) sits at `base[8a + b] + i stride[a] + j`, so the three `j`s of
/// a row are one pointer plus constant offsets, which saves registers). All loads are issued
/// before any is used.
///
/// # Safety
/// The element's positions exist and address `values`.
#[inline(always)]
unsafe fn lane_targets<T, const BLOCKS: bool>(
    positions: *const u32,
    e: usize,
    blocks: [(usize, usize); 2],
    values: *mut T,
) -> [[[*mut T; 3]; 3]; 2] {
    // SAFETY: per the caller.
    unsafe {
        if BLOCKS {
            let tab = positions.add(BLOCK_TABLE * e);
            let base = blocks.map(|(a, b)| *tab.add(NODES * a + b));
            let stride = blocks.map(|(a, _)| *tab.add(NODES * NODES + a));
            core::array::from_fn(|k| {
                core::array::from_fn(|i| {
                    let row = values.add(block_position(base[k], stride[k], i, 0) as usize);
                    [row, row.add(1), row.add(2)]
                })
            })
        } else {
            let pos = positions.add(ENTRIES * e);
            core::array::from_fn(|k| {
                let (a, b) = blocks[k];
                core::array::from_fn(|i| {
                    core::array::from_fn(|j| {
                        values.add(*pos.add((3 * a + i) * DOFS + 3 * b + j) as usize)
                    })
                })
            })
        }
    }
}

/// Adds the lane's two blocks at `targets` (from [`lane_targets`]). Without `ATOMIC`, all 18 old values are
/// loaded before the first store: one memory round trip instead of 18 (the compiler may not
/// reorder a load above a store that might alias it, and the writes of a colour never alias).
///
/// # Safety
/// The positions are valid; without `ATOMIC`, no other thread of the launch touches them.
#[inline(always)]
#[allow(clippy::needless_range_loop)]
unsafe fn scatter_batched<T: DeviceReal, const ATOMIC: bool>(
    targets: &[[[*mut T; 3]; 3]; 2],
    acc: &[[[T; 3]; 3]; 2],
) {
    // SAFETY: per the caller.
    unsafe {
        if ATOMIC {
            for k in 0..2 {
                for i in 0..3 {
                    for j in 0..3 {
                        T::atomic_add(targets[k][i][j], acc[k][i][j]);
                    }
                }
            }
        } else {
            let old: [[[T; 3]; 3]; 2] = targets.map(|blk| blk.map(|row| row.map(|p| *p)));
            for k in 0..2 {
                for i in 0..3 {
                    for j in 0..3 {
                        *targets[k][i][j] = old[k][i][j] + acc[k][i][j];
                    }
                }
            }
        }
    }
}

/// # Safety
/// See the module docs; launch whole warps, [`super::WARP_BLOCK`] threads per block.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn ppni<
    T: DeviceReal,
    const LANES_PER_ROW: u32,
    const BLOCKS: bool,
    const ATOMIC: bool,
    const BBAR: bool,
>(
    coords: *const T,
    elements: *const u32,
    positions: *const u32,
    list: *const u32,
    n: u32,
    mats: Materials<T>,
    values: *mut T,
) {
    let w = index_1d() / crate::WARP_SIZE;
    if w >= n {
        return; // the whole warp leaves together
    }
    let lane = lane_id();
    let scratch = T::smem() + (thread_idx_x() / crate::WARP_SIZE) * WARP_SMEM * T::SIZE;
    let at = |k: u32| scratch + k * T::SIZE;
    // SAFETY: w < n indexes `list`; node indices and positions exist (module docs); every shared
    // address lies in this warp's WARP_SMEM values.
    unsafe {
        let e = *list.add(w as usize) as usize;
        let lame = mats.of(e);
        let blocks = lane_blocks::<LANES_PER_ROW>(lane);
        // The block table's 4 values are loaded now, overlapping the geometry; the full table's 18
        // are loaded after it (held through it, they would cost 18 registers).
        let early = if BLOCKS {
            Some(lane_targets::<T, BLOCKS>(positions, e, blocks, values))
        } else {
            None
        };
        // 1. Lanes 0–23 load coordinate lane % 3 of node lane / 3 (24 values, one load each)
        //    into x[a] at 256 + 4a + d.
        if lane < 24 {
            let node = *elements.add(NODES * e + (lane / 3) as usize);
            let v = *coords.add(3 * node as usize + (lane % 3) as usize);
            T::sts(at(256 + 4 * (lane / 3) + lane % 3), v);
        }
        sync_warp(FULL_MASK);
        let x: [[T; 3]; NODES] = core::array::from_fn(|a| {
            let v = T::lds4(at(256 + 4 * a as u32));
            [v[0], v[1], v[2]]
        });
        // 2. Lane (g = lane % 8, q = lane / 8): J, det J and J⁻¹ at Gauss point g (the four
        //    lanes of a Gauss point agree), then ∇N of nodes 2q and 2q + 1 there, stored with
        //    det J as (∂x, ∂y, ∂z, det) at 4 (8 g + a).
        let g = lane % 8;
        let q = lane / 8;
        let p = node_signs::<T>(g);
        let jac = jacobian_signs(&x, p);
        let det = det3(&jac);
        if det.partial_cmp(&T::ZERO) != Some(core::cmp::Ordering::Greater) {
            inverted();
        }
        let inv = inverse3(&jac, det);
        for k in 0..2 {
            let a = 2 * q + k;
            let gr = physical_gradient(&inv, shape_gradient_signs(node_signs(a), p));
            T::sts4(at(4 * (8 * g + a)), [gr[0], gr[1], gr[2], det]);
        }
        sync_warp(FULL_MASK);
        // 3. Each lane accumulates its two 3×3 blocks over the Gauss points. B-bar: the
        //    deviatoric part here, and ∫∇N dV of both nodes and the volume on the way
        //    (from the same loads) for the volumetric part after the loop.
        let (lame, kappa) = if BBAR {
            lame.bbar_split()
        } else {
            (lame, T::ZERO)
        };
        let mut acc = [[[T::ZERO; 3]; 3]; 2];
        let mut diag = [T::ZERO; 2];
        let mut integral = [[[T::ZERO; 3]; 2]; 2];
        let mut vol = T::ZERO;
        for gp in 0..super::GAUSS as u32 {
            for (k, &(a, b)) in blocks.iter().enumerate() {
                let ga = T::lds4(at(4 * (8 * gp + a as u32)));
                let gb = T::lds4(at(4 * (8 * gp + b as u32)));
                let (va, vb) = ([ga[0], ga[1], ga[2]], [gb[0], gb[1], gb[2]]);
                add_block_split(&mut acc[k], &mut diag[k], va, vb, ga[3], lame);
                if BBAR {
                    for d in 0..3 {
                        integral[k][0][d] = ga[3].mul_add(va[d], integral[k][0][d]);
                        integral[k][1][d] = ga[3].mul_add(vb[d], integral[k][1][d]);
                    }
                    if k == 0 {
                        vol += ga[3];
                    }
                }
            }
        }
        for k in 0..2 {
            finish_block(&mut acc[k], diag[k]);
            if BBAR {
                add_volumetric(&mut acc[k], integral[k][0], integral[k][1], kappa / vol);
            }
        }
        let targets = match early {
            Some(t) => t,
            None => lane_targets::<T, BLOCKS>(positions, e, blocks, values),
        };
        scatter_batched::<T, ATOMIC>(&targets, &acc);
    }
}

// ---------------------------------------------------------------------------------------------
// two kernels: per-element geometry to global memory, then one thread per entry
// ---------------------------------------------------------------------------------------------

/// Kernel 1: thread `t` computes Gauss point `t % 8` of element `t / 8` (of all `n` elements,
/// in element order) and writes (∂x, ∂y, ∂z, det J) of each node at
/// `geometry[GEOMETRY_VALUES e + 4 (8 g + a)]`.
///
/// # Safety
/// `coords`, `elements` as in the module docs; `geometry` holds `GEOMETRY_VALUES n` values.
#[inline(always)]
unsafe fn geometry_kernel<T: DeviceReal>(
    coords: *const T,
    elements: *const u32,
    n: u32,
    geometry: *mut T,
) {
    let t = index_1d();
    if t / 8 >= n {
        return;
    }
    let (e, g) = ((t / 8) as usize, t % 8);
    // SAFETY: per the caller.
    unsafe {
        let conn = elements.add(NODES * e);
        let x: [[T; 3]; NODES] = core::array::from_fn(|a| node_coords(coords, *conn.add(a)));
        let p = node_signs::<T>(g);
        let jac = jacobian_signs(&x, p);
        let det = det3(&jac);
        if det.partial_cmp(&T::ZERO) != Some(core::cmp::Ordering::Greater) {
            inverted();
        }
        let inv = inverse3(&jac, det);
        let out = geometry.add(GEOMETRY_VALUES * e + 4 * NODES * g as usize);
        for a in 0..NODES {
            let gr = physical_gradient(&inv, shape_gradient_signs(node_signs(a as u32), p));
            *out.add(4 * a) = gr[0];
            *out.add(4 * a + 1) = gr[1];
            *out.add(4 * a + 2) = gr[2];
            *out.add(4 * a + 3) = det;
        }
    }
}

/// Kernel 2: block `k` (of [`ENTRIES`] threads) assembles element `list[k]`: its geometry goes to
/// shared memory, then thread `t` computes entry (t / 24, t % 24) of Ke over the Gauss points.
///
/// # Safety
/// As [`geometry_kernel`] (run first, over every element) and the module docs.
#[inline(always)]
unsafe fn entries_kernel<T: DeviceReal>(
    geometry: *const T,
    positions: *const u32,
    list: *const u32,
    n: u32,
    mats: Materials<T>,
    values: *mut T,
) {
    let k = block_idx_x();
    if k >= n {
        return; // whole blocks leave together: the barrier below sees all or none
    }
    let t = thread_idx_x();
    let at = |v: u32| T::smem() + v * T::SIZE;
    // SAFETY: per the caller; shared addresses below GEOMETRY_VALUES ≤ SMEM_VALUES.
    unsafe {
        let e = *list.add(k as usize) as usize;
        let lame = mats.of(e);
        if (t as usize) < GEOMETRY_VALUES {
            T::sts(at(t), *geometry.add(GEOMETRY_VALUES * e + t as usize));
        }
        sync_threads();
        let (r, c) = (t / 24, t % 24);
        let (a, i, b, j) = (r / 3, (r % 3) as usize, c / 3, (c % 3) as usize);
        let mut s = T::ZERO;
        for g in 0..super::GAUSS as u32 {
            let ga = T::lds4(at(4 * (8 * g + a)));
            let gb = T::lds4(at(4 * (8 * g + b)));
            let v =
                stiffness_integrand_dyn([ga[0], ga[1], ga[2]], [gb[0], gb[1], gb[2]], i, j, lame);
            s = ga[3].mul_add(v, s);
        }
        let p = *positions.add(ENTRIES * e + t as usize);
        scatter::<T, false>(values, p, s);
    }
}

macro_rules! two_kernels {
    ($geo:ident, $ent:ident, $t:ty) => {
        /// Two-kernel strategy, kernel 1 (see `geometry_kernel`): ⌈8 n / block⌉ blocks.
        ///
        /// # Safety
        /// See `geometry_kernel`.
        #[crate::kernel]
        pub unsafe fn $geo(coords: *const $t, elements: *const u32, n: u32, geometry: *mut $t) {
            // SAFETY: forwarded contract.
            unsafe { geometry_kernel::<$t>(coords, elements, n, geometry) }
        }

        /// Two-kernel strategy, kernel 2 (see `entries_kernel`): n blocks of 576 threads.
        ///
        /// # Safety
        /// See `entries_kernel`.
        #[allow(clippy::too_many_arguments)]
        #[crate::kernel]
        pub unsafe fn $ent(
            geometry: *const $t,
            positions: *const u32,
            list: *const u32,
            n: u32,
            lames: *const $t,
            material_of: *const u32,
            materials: u32,
            values: *mut $t,
        ) {
            let mats = Materials {
                lames,
                index: material_of,
                count: materials,
            };
            // SAFETY: forwarded contract.
            unsafe { entries_kernel::<$t>(geometry, positions, list, n, mats, values) }
        }
    };
}

two_kernels!(fem_geometry_f32, fem_entries_f32, f32);
two_kernels!(fem_geometry_f64, fem_entries_f64, f64);

macro_rules! kernel {
    ($name:ident, $t:ty, $body:ident::<$($g:tt),*>) => {
        /// See the module docs for parameters and launch shape.
        ///
        /// # Safety
        /// The buffers must satisfy the module docs' contract.
        #[allow(clippy::too_many_arguments)]
        #[crate::kernel]
        pub unsafe fn $name(
            coords: *const $t,
            elements: *const u32,
            positions: *const u32,
            list: *const u32,
            n: u32,
            lames: *const $t,
            material_of: *const u32,
            materials: u32,
            values: *mut $t,
        ) {
            let mats = Materials { lames, index: material_of, count: materials };
            // SAFETY: forwarded contract.
            unsafe {
                $body::<$t, $($g),*>(coords, elements, positions, list, n, mats, values)
            }
        }
    };
}

/// Every single-kernel assembly strategy, once: its variant (with doc), command-line name, f32
/// and f64 kernel names, the device function behind both, whether launches go colour by colour
/// (else every element at once, with atomic adds), whether the kernel reads the block table
/// instead of 576 positions per element, and its launch shape (a thread or a warp per element).
/// This crate expands it into the kernels; the host expands the same table into its `Strategy`
/// enum and launch dispatch (`warpkit::fem::gpu`), so a strategy is added in one row.
#[macro_export]
macro_rules! fem_strategies {
    ($then:path) => {
        $then! {
            /// Thread per element, per colour (the paper's baseline).
            Thread, "thread", fem_thread_f32, fem_thread_f64, thread_per_element::<false>, coloured, full, thread;
            /// Warp per element, 4 lanes per row, Jacobian by shuffles; per colour.
            Warp4, "warp4", fem_warp4_f32, fem_warp4_f64, warp_per_element::<4, false, JAC_SHUFFLE>, coloured, full, warp;
            /// Warp per element, 8 lanes per row, Jacobian by shuffles; per colour.
            Warp8, "warp8", fem_warp8_f32, fem_warp8_f64, warp_per_element::<8, false, JAC_SHUFFLE>, coloured, full, warp;
            /// Thread per element, all elements in one launch, atomic adds, no colouring.
            ThreadAtomic, "thread-atomic", fem_thread_atomic_f32, fem_thread_atomic_f64, thread_per_element::<true>, atomic, full, thread;
            /// Warp per element (4 lanes per row), all elements in one launch, atomic adds.
            Warp4Atomic, "warp4-atomic", fem_warp4_atomic_f32, fem_warp4_atomic_f64, warp_per_element::<4, true, JAC_SHUFFLE>, atomic, full, warp;
            /// `Warp4` with the Jacobian summed through shared memory (Table 1).
            Warp4JacShared, "warp4-jshared", fem_warp4_jshared_f32, fem_warp4_jshared_f64, warp_per_element::<4, false, JAC_SHARED>, coloured, full, warp;
            /// `Warp8` with the Jacobian summed through shared memory (Table 1).
            Warp8JacShared, "warp8-jshared", fem_warp8_jshared_f32, fem_warp8_jshared_f64, warp_per_element::<8, false, JAC_SHARED>, coloured, full, warp;
            /// `Warp4` with the Jacobian summed by shared-memory atomics (Table 1).
            Warp4JacAtomic, "warp4-jatomic", fem_warp4_jatomic_f32, fem_warp4_jatomic_f64, warp_per_element::<4, false, JAC_ATOMIC>, coloured, full, warp;
            /// `Warp8` with the Jacobian summed by shared-memory atomics (Table 1).
            Warp8JacAtomic, "warp8-jatomic", fem_warp8_jatomic_f32, fem_warp8_jatomic_f64, warp_per_element::<8, false, JAC_ATOMIC>, coloured, full, warp;
            /// PPNI, 4 lanes per row: lanes compute the 8 Gauss points' Jacobians, determinants,
            /// inverses and gradients in parallel and share them through shared memory; per colour.
            Ppni4, "ppni4", fem_ppni4_f32, fem_ppni4_f64, ppni::<4, false, false, false>, coloured, full, warp;
            /// PPNI, 8 lanes per row; per colour.
            Ppni8, "ppni8", fem_ppni8_f32, fem_ppni8_f64, ppni::<8, false, false, false>, coloured, full, warp;
            /// `Ppni4` reading 72 block positions per element instead of 576.
            Ppni4Blocks, "ppni4-blocks", fem_ppni4_blocks_f32, fem_ppni4_blocks_f64, ppni::<4, true, false, false>, coloured, blocks, warp;
            /// `Ppni8` reading 72 block positions per element instead of 576.
            Ppni8Blocks, "ppni8-blocks", fem_ppni8_blocks_f32, fem_ppni8_blocks_f64, ppni::<8, true, false, false>, coloured, blocks, warp;
            /// `Ppni4Blocks` over all elements at once with atomic adds.
            Ppni4BlocksAtomic, "ppni4-blocks-atomic", fem_ppni4_blocks_atomic_f32, fem_ppni4_blocks_atomic_f64, ppni::<4, true, true, false>, atomic, blocks, warp;
            /// `Ppni8Blocks` over all elements at once with atomic adds.
            Ppni8BlocksAtomic, "ppni8-blocks-atomic", fem_ppni8_blocks_atomic_f32, fem_ppni8_blocks_atomic_f64, ppni::<8, true, true, false>, atomic, blocks, warp;
        }
    };
}

/// The device side of [`fem_strategies!`]: an f32 and an f64 kernel per row.
macro_rules! strategy_kernels {
    ($($(#[$doc:meta])* $variant:ident, $cli:literal, $k32:ident, $k64:ident,
       $body:ident::<$($g:tt),*>, $colour:ident, $pos:ident, $shape:ident;)*) => {
        $(
            kernel!($k32, f32, $body::<$($g),*>);
            kernel!($k64, f64, $body::<$($g),*>);
        )*
    };
}

crate::fem_strategies!(strategy_kernels);

/// The strategies that also assemble the B-bar formulation (`Lame::bbar_split`,
/// `add_volumetric`), with the same parameters and launch shape as their standard kernel: the
/// variant of [`fem_strategies!`] and the f32 and f64 B-bar kernels. Expanded here into kernels
/// and on the host into `Strategy::launch_bbar`.
#[macro_export]
macro_rules! fem_bbar_strategies {
    ($then:path) => {
        $then! {
            Ppni4, fem_bbar_ppni4_f32, fem_bbar_ppni4_f64, ppni::<4, false, false, true>;
            Ppni8, fem_bbar_ppni8_f32, fem_bbar_ppni8_f64, ppni::<8, false, false, true>;
            Ppni4Blocks, fem_bbar_ppni4_blocks_f32, fem_bbar_ppni4_blocks_f64, ppni::<4, true, false, true>;
            Ppni8Blocks, fem_bbar_ppni8_blocks_f32, fem_bbar_ppni8_blocks_f64, ppni::<8, true, false, true>;
            Ppni4BlocksAtomic, fem_bbar_ppni4_blocks_atomic_f32, fem_bbar_ppni4_blocks_atomic_f64, ppni::<4, true, true, true>;
            Ppni8BlocksAtomic, fem_bbar_ppni8_blocks_atomic_f32, fem_bbar_ppni8_blocks_atomic_f64, ppni::<8, true, true, true>;
        }
    };
}

/// The device side of [`fem_bbar_strategies!`].
macro_rules! bbar_kernels {
    ($($variant:ident, $k32:ident, $k64:ident, $body:ident::<$($g:tt),*>;)*) => {
        $(
            kernel!($k32, f32, $body::<$($g),*>);
            kernel!($k64, f64, $body::<$($g),*>);
        )*
    };
}

crate::fem_bbar_strategies!(bbar_kernels);
