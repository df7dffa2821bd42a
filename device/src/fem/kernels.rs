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
//!   interleaved scatter as baselines). `_blocks` variants read [`super::BLOCK_TABLE`] values
//!   per element (the CSR position of each 3×3 block and each node's row length: entry
//!   (3a + i, 3b + j) is at `base[8a + b] + i stride[a] + j`, true for any mesh since a node's
//!   three rows share their columns) instead of 576, 8× less position traffic, loaded before the
//!   geometry so the loads overlap it; `_blocks_atomic` assemble every element in one launch
//!   with `red.add`.
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
//!
//! One module per strategy (`thread`, `warp`, `ppni`, `two_kernels`, `rows`) and the solver's
//! kernels (`pcg`); this file holds what they share (device operations, scratch, scatter,
//! materials) and the strategy tables that expand into the single-kernel strategies' entries.

use super::{Lame, Real};
use crate::gpu::atomic::AtomicAdd;
use crate::gpu::shared::SharedScalar;
use crate::gpu::warp::{FULL_MASK, Shuffle, shuffle_idx, shuffle_xor};

mod pcg;
mod ppni;
mod rows;
mod thread;
mod two_kernels;
mod warp;
pub use pcg::*;
pub use rows::*;
pub use two_kernels::*;
// The device functions that the strategy tables below name.
use ppni::ppni;
use thread::thread_per_element;
use warp::{JAC_ATOMIC, JAC_SHARED, JAC_SHUFFLE, warp_per_element};

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
