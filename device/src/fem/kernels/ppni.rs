//! The PPNI strategies (`fem_ppni*`, `fem_bbar_ppni*`): the eight Gauss points' geometry
//! computed in parallel and shared with the warp through shared memory, then each lane's two
//! blocks accumulated from it and stored in one batch.
//!
//! "The module docs" below are [`super`]'s: the buffers' contract and launch shapes.

use super::super::{
    BLOCK_TABLE, DOFS, ENTRIES, GAUSS, NODES, add_block_split, add_volumetric, block_position,
    det3, finish_block, inverse3, jacobian_signs, node_signs, physical_gradient,
    shape_gradient_signs,
};
use super::warp::lane_blocks;
use super::{DeviceReal, Materials, WARP_SMEM, inverted};
use crate::gpu::thread::{index_1d, lane_id, thread_idx_x};
use crate::gpu::warp::{FULL_MASK, sync_warp};

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
/// See the module docs; launch whole warps, [`crate::fem::WARP_BLOCK`] threads per block.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn ppni<
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
        for gp in 0..GAUSS as u32 {
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
