//! The thread-per-element strategy (`fem_thread_*`): one thread assembles an element's Ke in
//! local memory and scatters it, the paper's colouring baseline.
//!
//! "The module docs" below are [`super`]'s: the buffers' contract and launch shapes.

use super::super::{DOFS, ENTRIES, GAUSS, NODES, add_block, gauss_geometry};
use super::{DeviceReal, Materials, inverted, node_coords, scatter};
use crate::gpu::thread::index_1d;

/// # Safety
/// See the module docs for the buffers' contract.
#[inline(always)]
// The node and direction indices address Ke and the positions alike.
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
pub(super) unsafe fn thread_per_element<T: DeviceReal, const ATOMIC: bool>(
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
        for g in 0..GAUSS {
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
