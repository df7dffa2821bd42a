//! Node-row assembly (`fem_rows_*`, `fem_rows_rounds_*`): a warp per node gathers its three CSR
//! rows from the elements around it (see [`node_rows`]).

use super::super::{
    BLOCK_TABLE, NODES, add_block_split_scaled, block_position, det3, finish_block, inverse3,
    jacobian_signs, node_signs, physical_gradient, scaled_gradient, shape_gradient_signs,
};
use super::{DeviceReal, Materials, inverted, node_coords};
use crate::gpu::thread::{index_1d, lane_id, thread_idx_x};
use crate::gpu::warp::{FULL_MASK, sync_warp};

/// Elements a node-row warp takes at a time: lane (el, s) works on element el of the chunk.
const ROW_ELEMENTS: u32 = crate::WARP_SIZE / NODES as u32;
/// Node-row scratch per warp, in four-value slots: per element of the chunk and Gauss point, J⁻¹
/// (3 slots) and the row node's ∇N scaled by w det J λ and by w det J μ (2 slots), 8 × 5 slots
/// padded to 41 so that the elements' broadcasts and the Gauss points' stores spread over the
/// banks; the chunk's node coordinates (8 slots per element, padded to 9); then the node's rows,
/// node-major: slot (i ROW_NODES + k) holds the row-i values of column node k (3 used).
const ROW_SLOTS: u32 = 41;
const ROW_INVERSES: u32 = ROW_ELEMENTS * ROW_SLOTS;
const ROW_COORDS: u32 = ROW_ELEMENTS * 9;
/// Column nodes a node's rows may have to stay in shared memory.
const ROW_NODES: u32 = super::super::ROW_CAPACITY / 9;
const ROW_WARP_SMEM: u32 = 4 * (ROW_INVERSES + ROW_COORDS + 3 * ROW_NODES);
const ROWS_SMEM: usize = (super::super::ROWS_BLOCK / crate::WARP_SIZE * ROW_WARP_SMEM) as usize;
const _: () = assert!(ROWS_SMEM * 8 <= 48 * 1024);

crate::static_shared_window!(pub(super) fem_rows32: [f32; ROWS_SMEM]);
crate::static_shared_window!(pub(super) fem_rows64: [f64; ROWS_SMEM]);

// ---------------------------------------------------------------------------------------------
// node rows: a warp per node gathers its three CSR rows
// ---------------------------------------------------------------------------------------------

/// Warp `w` (of `n`, one per node) computes node w's three CSR rows, `values[row_ptr[3w] ..
/// row_ptr[3w + 3]]`, and writes each value once.
///
/// - `blocks`: the block table ([`BLOCK_TABLE`] per element, as the `_blocks` kernels read);
/// - `node_ptr` (n + 1 values) and `node_elements`: node w's elements are
///   `node_elements[node_ptr[w] .. node_ptr[w + 1]]`, each `8 e + a` where node w is node a of
///   element e (no element names a node twice: the host's validation refuses that);
/// - `row_ptr`: the CSR row pointers (3 n + 1 values); node w's three rows are consecutive and
///   have the same length (3 per neighbour node, in node order), so they are one range.
///
/// The warp takes its elements four at a time; lane (el, s), el = lane / 8, s = lane % 8:
/// 1. loads node s of element el into shared memory;
/// 2. computes J, det J and J⁻¹ at Gauss point s, and there the row node's ∇N_a scaled by
///    det J λ and det J μ (what [`add_block_split`] multiplies it by), and shares them;
/// 3. forms ∇N_s at each Gauss point from the shared J⁻¹ (cheaper than moving 8 gradients per
///    Gauss point through shared memory, which bounded an earlier version) and accumulates the
///    3×3 block (a, s) with [`add_block_split_scaled`];
/// 4. adds the block into the rows held in shared memory (node-major, a 16-byte slot per row
///    and column node, so three vector read-modify-writes). Lanes of different elements may
///    share a column node: `ROUNDS = false` adds with `red.shared.add`, `ROUNDS = true` lets the
///    four elements take turns with plain read-modify-writes (the lanes of one element never
///    collide). A node with more than [`ROW_NODES`] neighbours accumulates into its rows in
///    global memory with atomic adds after the warp zeroes them (no other warp touches them).
///
/// # Safety
/// The buffers as above and in the module docs (every element index, local index and block
/// position valid for this mesh and pattern); launch whole warps,
/// [`crate::fem::ROWS_BLOCK`] threads per block.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn node_rows<T: DeviceReal, const ROUNDS: bool>(
    coords: *const T,
    elements: *const u32,
    blocks: *const u32,
    node_ptr: *const u32,
    node_elements: *const u32,
    row_ptr: *const u32,
    n: u32,
    mats: Materials<T>,
    values: *mut T,
) {
    let w = index_1d() / crate::WARP_SIZE;
    if w >= n {
        return; // the whole warp leaves together
    }
    let lane = lane_id();
    let scratch = T::rows_smem() + (thread_idx_x() / crate::WARP_SIZE) * ROW_WARP_SMEM * T::SIZE;
    let slot = |k: u32| scratch + 4 * k * T::SIZE;
    let gp_at = |el: u32, g: u32, q: u32| slot(ROW_SLOTS * el + 5 * g + q);
    let x_at = |el: u32, b: u32| slot(ROW_INVERSES + 9 * el + b);
    let row_slot = |i: u32, k: u32| slot(ROW_INVERSES + ROW_COORDS + ROW_NODES * i + k);
    // SAFETY: w < n indexes node_ptr and row_ptr; adjacency entries, node indices and block
    // positions are valid (the contract); shared addresses lie in this warp's scratch.
    unsafe {
        let start = *row_ptr.add(3 * w as usize);
        let stride = *row_ptr.add(3 * w as usize + 1) - start;
        let in_shared = stride <= 3 * ROW_NODES;
        if in_shared {
            let mut k = lane;
            while k < 3 * ROW_NODES {
                T::sts4(slot(ROW_INVERSES + ROW_COORDS + k), [T::ZERO; 4]);
                k += crate::WARP_SIZE;
            }
        } else {
            let mut k = lane;
            while k < 3 * stride {
                *values.add((start + k) as usize) = T::ZERO;
                k += crate::WARP_SIZE;
            }
        }
        let (first, last) = (*node_ptr.add(w as usize), *node_ptr.add(w as usize + 1));
        let (el, s) = (lane / NODES as u32, lane % NODES as u32);
        let mut chunk = first;
        // The zeroing above and each chunk's shared stores reach the other lanes through the
        // `bar.warp.sync`s below (they also order this warp's global stores).
        while chunk < last {
            let here = chunk + el;
            let active = here < last;
            let (e, a) = if active {
                let v = *node_elements.add(here as usize);
                ((v / NODES as u32) as usize, v % NODES as u32)
            } else {
                (0, 0)
            };
            if active {
                let x = node_coords(coords, *elements.add(NODES * e + s as usize));
                T::sts4(x_at(el, s), [x[0], x[1], x[2], T::ZERO]);
            }
            sync_warp(FULL_MASK);
            if active {
                let x: [[T; 3]; NODES] = core::array::from_fn(|b| {
                    let v = T::lds4(x_at(el, b as u32));
                    [v[0], v[1], v[2]]
                });
                let p = node_signs::<T>(s);
                let jac = jacobian_signs(&x, p);
                let det = det3(&jac);
                if det.partial_cmp(&T::ZERO) != Some(core::cmp::Ordering::Greater) {
                    inverted();
                }
                let inv = inverse3(&jac, det);
                let ga = physical_gradient(&inv, shape_gradient_signs(node_signs(a), p));
                let (la, ma) = scaled_gradient(ga, det, mats.of(e));
                for (q, r) in inv.iter().enumerate() {
                    T::sts4(gp_at(el, s, q as u32), [r[0], r[1], r[2], T::ZERO]);
                }
                T::sts4(gp_at(el, s, 3), [la[0], la[1], la[2], T::ZERO]);
                T::sts4(gp_at(el, s, 4), [ma[0], ma[1], ma[2], T::ZERO]);
            }
            sync_warp(FULL_MASK);
            let mut acc = [[T::ZERO; 3]; 3];
            let mut k = 0;
            if active {
                let mut diag = T::ZERO;
                let sb = node_signs::<T>(s);
                // Left rolled. Measured at 128³ (H200): this version 4.49 ms; with
                // the loop unrolled, a lane-per-node write-out and a Jacobian factored over
                // node pairs 4.93; with only the factored Jacobian 4.85 — all reverted.
                for g in 0..super::super::GAUSS as u32 {
                    let r: [[T; 4]; 5] = core::array::from_fn(|q| T::lds4(gp_at(el, g, q as u32)));
                    let inv = [0, 1, 2].map(|q| [r[q][0], r[q][1], r[q][2]]);
                    let gb = physical_gradient(&inv, shape_gradient_signs(sb, node_signs(g)));
                    let (la, ma) = ([r[3][0], r[3][1], r[3][2]], [r[4][0], r[4][1], r[4][2]]);
                    add_block_split_scaled(&mut acc, &mut diag, la, ma, gb);
                }
                finish_block(&mut acc, diag);
                // The block's first column sits 3 k values into the row: column node k.
                k = (*blocks.add(BLOCK_TABLE * e + NODES * a as usize + s as usize) - start) / 3;
            }
            let add = |acc: &[[T; 3]; 3]| {
                for (i, row) in acc.iter().enumerate() {
                    if !in_shared {
                        for (j, &v) in row.iter().enumerate() {
                            let at = block_position(3 * k, stride, i, j);
                            T::atomic_add(values.add((start + at) as usize), v);
                        }
                    } else if ROUNDS {
                        let old = T::lds4(row_slot(i as u32, k));
                        let new = [old[0] + row[0], old[1] + row[1], old[2] + row[2], old[3]];
                        T::sts4(row_slot(i as u32, k), new);
                    } else {
                        for (j, &v) in row.iter().enumerate() {
                            T::red_shared(row_slot(i as u32, k) + j as u32 * T::SIZE, v);
                        }
                    }
                }
            };
            if ROUNDS && in_shared {
                for turn in 0..ROW_ELEMENTS {
                    if active && el == turn {
                        add(&acc);
                    }
                    sync_warp(FULL_MASK);
                }
            } else if active {
                add(&acc);
            }
            // The next chunk's coordinates go to their own area, and its Gauss point data is
            // stored only after the next barrier, which every lane reaches after this block.
            chunk += ROW_ELEMENTS;
        }
        sync_warp(FULL_MASK);
        if in_shared {
            // Row i's value 3 k + j comes from slot (i, k), component j: coalesced stores.
            for i in 0..3 {
                let mut c = lane;
                while c < stride {
                    let (k, j) = (c / 3, c % 3);
                    let v = T::lds(row_slot(i, k) + j * T::SIZE);
                    *values.add((start + i * stride + c) as usize) = v;
                    c += crate::WARP_SIZE;
                }
            }
        }
    }
}

macro_rules! rows_kernel {
    ($name:ident, $t:ty, $rounds:literal) => {
        /// Node-row assembly (see `node_rows`): a warp per node, one launch.
        ///
        /// # Safety
        /// See `node_rows`.
        #[allow(clippy::too_many_arguments)]
        #[crate::kernel]
        pub unsafe fn $name(
            coords: *const $t,
            elements: *const u32,
            blocks: *const u32,
            node_ptr: *const u32,
            node_elements: *const u32,
            row_ptr: *const u32,
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
            unsafe {
                node_rows::<$t, $rounds>(
                    coords,
                    elements,
                    blocks,
                    node_ptr,
                    node_elements,
                    row_ptr,
                    n,
                    mats,
                    values,
                )
            }
        }
    };
}

rows_kernel!(fem_rows_f32, f32, false);
rows_kernel!(fem_rows_f64, f64, false);
rows_kernel!(fem_rows_rounds_f32, f32, true);
rows_kernel!(fem_rows_rounds_f64, f64, true);
