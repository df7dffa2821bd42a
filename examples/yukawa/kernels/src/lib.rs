//! Device side of the Yukawa example: a force warpkit does not have, added from outside its
//! source tree.
//!
//! The softened Yukawa (screened Coulomb) potential of a source of mass `m` at distance `r` is
//! `φ(r) = −G m e^{−s/λ} / s` with `s = √(r² + ε²)` (Plummer softening inside the exponential too,
//! so the force below is the exact gradient of one potential). Its acceleration on a target at `p`
//! from a source at `q`, with `d = q − p`, is
//!
//! ```text
//!     a = G m e^{−s/λ} (1 + s/λ) d / s³
//! ```
//!
//! λ is the screening length: λ → ∞ (`inv_lambda = 0`) gives Plummer-softened Newtonian gravity
//! exactly, λ → 0 switches the force off.
//!
//! This crate compiles twice, as warpkit's own device crate does: to PTX by the host crate's
//! `build.rs` (through `warpkit-build`), and for the host, where [`add_yukawa_accel`] and the
//! [`Yukawa`] interaction are the CPU twin's formulas and `#[kernel]` leaves typed launch
//! contracts ([`kernels::yukawa_group`], [`kernels::yukawa_direct`]).
#![no_std]
// abi_ptx: `#[kernel]` emits `extern "ptx-kernel"` here; asm_experimental_arch: the device
// layer's `static_shared!` expands its `asm!` at the call site, in this crate.
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod kernels;

use warpkit_device::bh::{Body, Targets, is_far};
use warpkit_device::math;
use warpkit_device::walk::Interaction;

/// Adds the softened Yukawa acceleration (without G) of mass `m` at `q` on a target at `p` to `a`:
/// `m e^{−s/λ} (1 + s/λ) d / s³` (see the crate docs), `inv_lambda` = 1/λ (0 for λ = ∞).
///
/// One `rsqrt` and one `exp2` per pair on the GPU (`rsqrt.approx`, `ex2.approx`: relative errors
/// below 2^-22 and 2^-21); the host computes both correctly rounded. `SOFT` promises `eps2 ≥
/// f32::MIN_POSITIVE` and drops the zero-distance select, as warpkit's `add_pair_accel`; without
/// it a zero softened distance (a body on itself with ε = 0) adds nothing. With `inv_lambda = 0`
/// the result is bit for bit warpkit's `add_pair_accel` (the screening factor is exactly 1).
#[inline(always)]
pub fn add_yukawa_accel<const SOFT: bool>(
    a: &mut [f32; 3],
    p: [f32; 3],
    q: [f32; 3],
    m: f32,
    eps2: f32,
    inv_lambda: f32,
) {
    let d = [q[0] - p[0], q[1] - p[1], q[2] - p[2]];
    let s2 = math::fma(
        d[0],
        d[0],
        math::fma(d[1], d[1], math::fma(d[2], d[2], eps2)),
    );
    let inv = math::rsqrt(s2);
    // Subnormal s² counts as zero: the device's rsqrt flushes it to +inf.
    let inv = if SOFT || s2 >= f32::MIN_POSITIVE {
        inv
    } else {
        0.0
    };
    // x = s/λ; e^{−x}(1 + x) = e + e·x with e = 2^(−x log2 e).
    let x = s2 * inv * inv_lambda;
    let e = math::exp2(x * -core::f32::consts::LOG2_E);
    let screen = math::fma(e, x, e);
    let f = m * inv * (inv * inv) * screen;
    for c in 0..3 {
        a[c] = math::fma(d[c], f, a[c]);
    }
}

/// The float64 form of [`add_yukawa_accel`]'s formula, for the reference direct sum (host only:
/// `f64::exp` needs `std`).
#[cfg(not(target_arch = "nvptx64"))]
pub fn yukawa_accel_f64(p: [f64; 3], q: [f64; 3], m: f64, eps2: f64, inv_lambda: f64) -> [f64; 3] {
    let d = [q[0] - p[0], q[1] - p[1], q[2] - p[2]];
    let s2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2;
    if s2 <= 0.0 {
        return [0.0; 3];
    }
    let s = s2.sqrt();
    let x = s * inv_lambda;
    let f = m * (-x).exp() * (1.0 + x) / (s2 * s);
    [d[0] * f, d[1] * f, d[2] * f]
}

/// `1/λ` for a screening length `lambda` (∞ gives 0: Newtonian gravity).
#[inline(always)]
pub fn inv_lambda(lambda: f32) -> f32 {
    1.0 / lambda
}

/// Distance, in screening lengths, beyond which a cell is listed whole whatever its width: its
/// force is at most e^{−x}(1 + x) ≈ 4e-8 of the Newtonian one there, below float32 resolution.
pub const FAR_SCREENING_LENGTHS: f32 = 20.0;

/// The opening test of the Yukawa tree walk: a cell of squared width `w2` whose centre of mass
/// lies at squared distance `r2` from the nearest point of a group's box is listed whole when
///
/// - `w / r < θ` (warpkit's test), and
/// - `w / λ < θ`, or the cell is beyond [`FAR_SCREENING_LENGTHS`] λ.
///
/// Why the second condition: the monopole's error is second order in the cell's width over the
/// scale on which the force varies, which for a screened force is min(r, λ), not r. With
/// warpkit's test alone the median error at θ = 0.5 grows from 6e-4 (λ = ∞) to 1e-2 (λ = 0.25
/// on a Plummer sphere of scale 0.59). Multiplications only (`inv_lambda` = 1/λ); with
/// `inv_lambda = 0` it is warpkit's test exactly.
#[inline(always)]
pub fn is_far_screened(r2: f32, w2: f32, theta2: f32, inv_lambda: f32) -> bool {
    const CUT2: f32 = FAR_SCREENING_LENGTHS * FAR_SCREENING_LENGTHS;
    let il2 = inv_lambda * inv_lambda;
    is_far(r2, w2, theta2) && (w2 * il2 < theta2 || r2 * il2 > CUT2)
}

/// The Yukawa force as an interaction of warpkit's warp-group tree walk
/// (`warpkit_device::walk`): every listed source — a far cell as a point mass at its centre of
/// mass, or a body — adds [`add_yukawa_accel`] to each of `K` targets.
///
/// A cell's monopole is exact to first order for any radial force (the dipole vanishes about the
/// centre of mass), so the tree's error is second order in (cell width / distance), as for
/// gravity; the lists carry no extra data (`Extra = ()`, no shared memory beyond the list).
#[derive(Clone, Copy, Debug)]
pub struct Yukawa<const K: usize, const SOFT: bool> {
    pub eps2: f32,
    /// 1/λ; 0 for λ = ∞.
    pub inv_lambda: f32,
}

impl<const K: usize, const SOFT: bool> Interaction for Yukawa<K, SOFT> {
    type Extra = ();
    type Target = Targets<K>;
    #[inline(always)]
    fn cell_extra(&self, _: i32) {}
    #[inline(always)]
    fn body_extra(&self, _: i32) {}
    #[inline(always)]
    fn add(&self, t: &mut Targets<K>, s: &Body, _: &()) {
        for k in 0..K {
            add_yukawa_accel::<SOFT>(
                &mut t.a[k],
                t.p[k],
                s.pos(),
                s.m,
                self.eps2,
                self.inv_lambda,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpkit_device::bh::{add_pair_accel, pair_accel_f64};

    fn accel(p: [f32; 3], q: [f32; 3], m: f32, eps2: f32, il: f32) -> [f32; 3] {
        let mut a = [0.0; 3];
        add_yukawa_accel::<false>(&mut a, p, q, m, eps2, il);
        a
    }

    #[test]
    fn infinite_lambda_is_newtonian_bit_for_bit() {
        for (p, q, m, eps2) in [
            ([0.0, 0.0, 0.0], [1.0, 2.0, -0.5], 0.7, 0.0),
            ([0.3, -0.1, 0.2], [0.25, 0.0, 0.4], 1e-3, 2.5e-3),
        ] {
            let mut newton = [0.0; 3];
            add_pair_accel::<false>(&mut newton, p, q, m, eps2);
            assert_eq!(accel(p, q, m, eps2, inv_lambda(f32::INFINITY)), newton);
            let n64 = pair_accel_f64(p.map(f64::from), q.map(f64::from), m as f64, eps2 as f64);
            let y64 = yukawa_accel_f64(
                p.map(f64::from),
                q.map(f64::from),
                m as f64,
                eps2 as f64,
                0.0,
            );
            assert_eq!(n64, y64);
        }
    }

    #[test]
    fn screening_matches_the_analytic_factor() {
        // On the x axis at distance r = 2 from a unit mass, ε = 0, λ = 1: e^{-2}(1 + 2)/4.
        let a = accel([0.0; 3], [2.0, 0.0, 0.0], 1.0, 0.0, 1.0);
        let want = (-2.0f64).exp() * 3.0 / 4.0;
        assert!((a[0] as f64 - want).abs() < 1e-6 * want, "{a:?} vs {want}");
        assert_eq!((a[1], a[2]), (0.0, 0.0));
        let a64 = yukawa_accel_f64([0.0; 3], [2.0, 0.0, 0.0], 1.0, 0.0, 1.0);
        assert!((a64[0] - want).abs() < 1e-15);
        // A body on itself adds nothing, softened or not.
        assert_eq!(accel([1.0; 3], [1.0; 3], 1.0, 0.0, 1.0), [0.0; 3]);
        assert_eq!(accel([1.0; 3], [1.0; 3], 1.0, 0.01, 1.0), [0.0; 3]);
    }

    #[test]
    fn force_is_minus_the_gradient_of_the_softened_potential() {
        // φ(p) = −m e^{−s/λ}/s with s = √(|q − p|² + ε²): central differences of φ against a.
        let (q, m, eps2, il) = ([0.4f64, -0.2, 0.1], 2.0, 0.05, 1.0 / 0.3);
        let phi = |p: [f64; 3]| {
            let s = ((q[0] - p[0]).powi(2) + (q[1] - p[1]).powi(2) + (q[2] - p[2]).powi(2) + eps2)
                .sqrt();
            -m * (-s * il).exp() / s
        };
        let p = [0.1, 0.05, -0.3];
        let a = yukawa_accel_f64(p, q, m, eps2, il);
        let h = 1e-6;
        for k in 0..3 {
            let (mut hi, mut lo) = (p, p);
            hi[k] += h;
            lo[k] -= h;
            let grad = (phi(hi) - phi(lo)) / (2.0 * h);
            assert!(
                (a[k] + grad).abs() < 1e-6 * a[k].abs().max(1.0),
                "k {k}: {} vs {}",
                a[k],
                -grad
            );
        }
        // The f32 form agrees with the f64 one.
        let a32 = accel([0.1, 0.05, -0.3], [0.4, -0.2, 0.1], 2.0, 0.05, il as f32);
        for k in 0..3 {
            assert!((a32[k] as f64 - a[k]).abs() < 1e-5 * a[k].abs().max(1e-3));
        }
    }
}
