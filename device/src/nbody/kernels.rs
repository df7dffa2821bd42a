//! N-body kernels: the leapfrog's kick and drift, and the gather that keeps the particle state in
//! tree order between steps. One thread per particle, any grid of `NBODY_BLOCK`-thread blocks
//! (the kernels stride). Forces come from the Barnes–Hut kernels (`crate::bh`).

use super::{drift, kick};
use crate::bh::{Accel, Body};
use crate::gpu::atomic::atomic_min_u32;
use crate::gpu::thread::{grid_size_1d, index_1d};

/// `vel[i] += acc[i]·dt_kick`, then `x[i] += vel[i]·dt_drift` (either may be 0: a kick or a drift
/// alone), for `i < n`. A particle whose new position or velocity is not finite lowers
/// `*bad` to its index (start it at `u32::MAX`): the host stops the run there, naming it.
#[crate::kernel]
pub unsafe fn nbody_kick_drift(
    bodies: *mut Body,
    vel: *mut [f32; 3],
    acc: *const Accel,
    n: u32,
    dt_kick: f32,
    dt_drift: f32,
    bad: *mut u32,
) {
    let mut i = index_1d();
    while i < n {
        let k = i as usize;
        // SAFETY: i < n; the three arrays hold n entries.
        unsafe {
            let a = *acc.add(k);
            let mut v = *vel.add(k);
            kick(&mut v, [a.x, a.y, a.z], dt_kick);
            let b = &mut *bodies.add(k);
            let mut x = b.pos();
            drift(&mut x, v, dt_drift);
            [b.x, b.y, b.z] = x;
            *vel.add(k) = v;
            if !(x.iter().chain(&v).all(|c| c.is_finite())) {
                atomic_min_u32(bad, i);
            }
        }
        i += grid_size_1d();
    }
}

/// The state gathered into tree order: `*_out[j] = *_in[order[j]]` for `j < n` (`order` a
/// permutation of `0..n`, the tree sort's), so that the next step's traversal reads neighbours
/// from neighbouring memory. Particle ids travel along.
#[allow(clippy::too_many_arguments)]
#[crate::kernel]
pub unsafe fn nbody_permute(
    order: *const u32,
    n: u32,
    bodies_in: *const Body,
    bodies_out: *mut Body,
    vel_in: *const [f32; 3],
    vel_out: *mut [f32; 3],
    acc_in: *const Accel,
    acc_out: *mut Accel,
    ids_in: *const u64,
    ids_out: *mut u64,
) {
    let mut j = index_1d();
    while j < n {
        // SAFETY: j < n and order[j] < n (a permutation); every array holds n entries.
        unsafe {
            let i = *order.add(j as usize) as usize;
            let j = j as usize;
            *bodies_out.add(j) = *bodies_in.add(i);
            *vel_out.add(j) = *vel_in.add(i);
            *acc_out.add(j) = *acc_in.add(i);
            *ids_out.add(j) = *ids_in.add(i);
        }
        j += grid_size_1d();
    }
}
