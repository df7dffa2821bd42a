//! The warp-per-element strategies (`fem_warp4_*`, `fem_warp8_*` and their `_jshared`,
//! `_jatomic` and `_atomic` forms): a warp per element, each lane two 3×3 blocks, the Jacobian
//! summed over the nodes by shuffles, shared memory or shared atomics.
//!
//! "The module docs" below are [`super`]'s: the buffers' contract and launch shapes.

use super::super::{
    DOFS, ENTRIES, GAUSS, NODES, add_block, det3, inverse3, physical_gradient,
    shape_gradient_natural,
};
use super::{DeviceReal, Materials, WARP_SMEM, inverted, node_coords, scatter};
use crate::gpu::thread::{index_1d, lane_id, thread_idx_x};
use crate::gpu::warp::{FULL_MASK, sync_warp};

/// How the per-Gauss-point Jacobian is summed over the nodes (the paper's Table 1).
pub(super) const JAC_SHUFFLE: u32 = 0;
pub(super) const JAC_SHARED: u32 = 1;
pub(super) const JAC_ATOMIC: u32 = 2;

/// The two (row node, column node) blocks that `lane` owns under layout `LANES_PER_ROW` (4 or 8).
#[inline(always)]
pub(super) fn lane_blocks<const LANES_PER_ROW: u32>(lane: u32) -> [(usize, usize); 2] {
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
pub(super) unsafe fn warp_per_element<
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
        for g in 0..GAUSS {
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
