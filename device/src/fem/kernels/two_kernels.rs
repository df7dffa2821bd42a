//! The two-kernel strategy (`fem_geometry_*` then `fem_entries_*`): per-element geometry to
//! global memory, then a block per element and a thread per entry of Ke.
//!
//! "The module docs" below are [`super`]'s: the buffers' contract and launch shapes.

use super::super::{
    ENTRIES, GAUSS, GEOMETRY_VALUES, NODES, det3, inverse3, jacobian_signs, node_signs,
    physical_gradient, shape_gradient_signs, stiffness_integrand_dyn,
};
use super::{DeviceReal, Materials, inverted, node_coords, scatter};
use crate::gpu::thread::{block_idx_x, index_1d, sync_threads, thread_idx_x};

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
        for g in 0..GAUSS as u32 {
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
