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
//! - `lambda, mu: T` — the Lamé constants;
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
//! - `*_atomic` variants: the same computation over all elements in one launch with atomic adds,
//!   to test whether colouring still pays on a modern GPU.

use super::{
    DOFS, ENTRIES, Lame, NODES, Real, add_block, det3, gauss_geometry, inverse3, physical_gradient,
    shape_gradient_natural,
};
use crate::gpu::atomic::{atomic_add_f32, atomic_add_f64};
use crate::gpu::thread::{index_1d, lane_id};
use crate::gpu::warp::{FULL_MASK, shfl_idx, shfl_xor};

/// The device-only operations the kernels need beyond [`Real`].
trait DeviceReal: Real {
    /// `shfl.sync.bfly` over the full warp.
    ///
    /// # Safety
    /// All 32 lanes must call it together.
    unsafe fn shfl_xor(self, lane_mask: u32) -> Self;
    /// `shfl.sync.idx` over the full warp.
    ///
    /// # Safety
    /// All 32 lanes must call it together.
    unsafe fn shfl_idx(self, src: u32) -> Self;
    /// `atom.relaxed.gpu.add`.
    ///
    /// # Safety
    /// `ptr` must be valid global memory.
    unsafe fn atomic_add(ptr: *mut Self, v: Self);
}

impl DeviceReal for f32 {
    #[inline(always)]
    unsafe fn shfl_xor(self, lane_mask: u32) -> Self {
        // SAFETY: forwarded.
        f32::from_bits(unsafe { shfl_xor(FULL_MASK, self.to_bits(), lane_mask) }.0)
    }
    #[inline(always)]
    unsafe fn shfl_idx(self, src: u32) -> Self {
        // SAFETY: forwarded.
        f32::from_bits(unsafe { shfl_idx(FULL_MASK, self.to_bits(), src) }.0)
    }
    #[inline(always)]
    unsafe fn atomic_add(ptr: *mut Self, v: Self) {
        // SAFETY: forwarded.
        unsafe { atomic_add_f32(ptr, v) };
    }
}

impl DeviceReal for f64 {
    // Shuffles move 32 bits: an f64 travels as two halves.
    #[inline(always)]
    unsafe fn shfl_xor(self, lane_mask: u32) -> Self {
        let b = self.to_bits();
        // SAFETY: forwarded.
        let (lo, hi) = unsafe {
            (
                shfl_xor(FULL_MASK, b as u32, lane_mask).0,
                shfl_xor(FULL_MASK, (b >> 32) as u32, lane_mask).0,
            )
        };
        f64::from_bits((hi as u64) << 32 | lo as u64)
    }
    #[inline(always)]
    unsafe fn shfl_idx(self, src: u32) -> Self {
        let b = self.to_bits();
        // SAFETY: forwarded.
        let (lo, hi) = unsafe {
            (
                shfl_idx(FULL_MASK, b as u32, src).0,
                shfl_idx(FULL_MASK, (b >> 32) as u32, src).0,
            )
        };
        f64::from_bits((hi as u64) << 32 | lo as u64)
    }
    #[inline(always)]
    unsafe fn atomic_add(ptr: *mut Self, v: Self) {
        // SAFETY: forwarded.
        unsafe { atomic_add_f64(ptr, v) };
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
    // SAFETY: `trap` has no preconditions.
    unsafe { core::arch::nvptx::trap() }
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
    lame: Lame<T>,
    values: *mut T,
) {
    let t = index_1d();
    if t >= n {
        return;
    }
    // SAFETY: t < n indexes `list`; the element's 8 nodes and 576 positions exist (module docs).
    unsafe {
        let e = *list.add(t as usize) as usize;
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
unsafe fn warp_per_element<T: DeviceReal, const LANES_PER_ROW: u32, const ATOMIC: bool>(
    coords: *const T,
    elements: *const u32,
    positions: *const u32,
    list: *const u32,
    n: u32,
    lame: Lame<T>,
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
        let xa = node_coords(coords, *elements.add(NODES * e + node));
        let mut acc = [[[T::ZERO; 3]; 3]; 2];
        for g in 0..super::GAUSS {
            let dn = shape_gradient_natural::<T>(g, node);
            let mut jac = [[T::ZERO; 3]; 3];
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

macro_rules! kernel {
    ($name:ident, $t:ty, $body:ident::<$($g:tt),*>) => {
        /// See the module docs for parameters and launch shape.
        ///
        /// # Safety
        /// The buffers must satisfy the module docs' contract.
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "ptx-kernel" fn $name(
            coords: *const $t,
            elements: *const u32,
            positions: *const u32,
            list: *const u32,
            n: u32,
            lambda: $t,
            mu: $t,
            values: *mut $t,
        ) {
            // SAFETY: forwarded contract.
            unsafe {
                $body::<$t, $($g),*>(
                    coords, elements, positions, list, n, Lame { lambda, mu }, values,
                )
            }
        }
    };
}

kernel!(fem_thread_f32, f32, thread_per_element::<false>);
kernel!(fem_thread_f64, f64, thread_per_element::<false>);
kernel!(fem_thread_atomic_f32, f32, thread_per_element::<true>);
kernel!(fem_thread_atomic_f64, f64, thread_per_element::<true>);
kernel!(fem_warp4_f32, f32, warp_per_element::<4, false>);
kernel!(fem_warp4_f64, f64, warp_per_element::<4, false>);
kernel!(fem_warp8_f32, f32, warp_per_element::<8, false>);
kernel!(fem_warp8_f64, f64, warp_per_element::<8, false>);
kernel!(fem_warp4_atomic_f32, f32, warp_per_element::<4, true>);
kernel!(fem_warp4_atomic_f64, f64, warp_per_element::<4, true>);
