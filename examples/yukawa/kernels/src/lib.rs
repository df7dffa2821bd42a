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

use warpkit_device::bh::{Body, Quad, Targets};
use warpkit_device::math;
use warpkit_device::walk::{CellData, Interaction};

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

/// The Yukawa force as an interaction of warpkit's warp-group tree walk
/// (`warpkit_device::walk`): every listed source — a far cell at its centre of mass, or a body —
/// adds [`add_yukawa_accel`] to each of `K` targets, a cell with its mass corrected for its
/// spread.
///
/// Why the correction: a cell of total mass `M` whose bodies lie at offsets `d` from its centre of
/// mass acts, to second order, as `M φ + ½ Σ m dᵢdⱼ ∂ᵢ∂ⱼφ`. The trace part of that sum,
/// `(1/6) tr ∇²φ` with `tr = Σ m |d|²`, vanishes for gravity (∇²φ = 0 away from the source) but
/// not for Yukawa, where `∇²φ = φ/λ²`: it is a monopole of mass `M + tr/(6λ²)`, always larger
/// than `M`, so left out it biases every cell the same way and does not average out (at θ = 0.5,
/// λ = 0.25 on a Plummer sphere: median error 1.3e-2 without it, 1.3e-3 with it, for the same
/// lists). The traceless rest is the usual quadrupole error. With softening the identity holds
/// up to terms of order ε²/r² of the correction itself. warpkit's summary already computes `tr`
/// (`Quad::tr`), so the lists carry it as their extra: `[tr, 0, 0, 0]` for a cell, zeros for a
/// body.
#[derive(Clone, Copy, Debug)]
pub struct Yukawa<Q, const K: usize, const SOFT: bool> {
    eps2: f32,
    inv_lambda: f32,
    /// 1/(6λ²): the weight of `tr` in a cell's effective mass.
    trace_weight: f32,
    quads: Q,
}

impl<Q, const K: usize, const SOFT: bool> Yukawa<Q, K, SOFT> {
    /// `quads`: the cells' second moments from warpkit's summary (only `tr` is read).
    #[inline(always)]
    pub fn new(eps2: f32, inv_lambda: f32, quads: Q) -> Self {
        Yukawa {
            eps2,
            inv_lambda,
            trace_weight: inv_lambda * inv_lambda * (1.0 / 6.0),
            quads,
        }
    }
}

impl<Q: CellData<Quad>, const K: usize, const SOFT: bool> Interaction for Yukawa<Q, K, SOFT> {
    /// `[tr, 0, 0, 0]`: one 16-byte vector per list entry in shared memory.
    type Extra = [f32; 4];
    type Target = Targets<K>;
    #[inline(always)]
    fn cell_extra(&self, c: i32) -> [f32; 4] {
        [self.quads.get(c).tr, 0.0, 0.0, 0.0]
    }
    #[inline(always)]
    fn body_extra(&self, _: i32) -> [f32; 4] {
        [0.0; 4]
    }
    #[inline(always)]
    fn add(&self, t: &mut Targets<K>, s: &Body, e: &[f32; 4]) {
        // λ = ∞: exactly `s.m`, so the walk is warpkit's monopole gravity bit for bit.
        let m = math::fma(e[0], self.trace_weight, s.m);
        for k in 0..K {
            add_yukawa_accel::<SOFT>(&mut t.a[k], t.p[k], s.pos(), m, self.eps2, self.inv_lambda);
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

    #[test]
    fn the_trace_correction_makes_an_octahedron_a_point_to_fourth_order() {
        // Six unit masses at ±a on the axes: no dipole and no traceless quadrupole, so the
        // monopole with mass M + tr/(6λ²) errs only at fourth order in a/r; without the trace,
        // at second order.
        let a = 0.03f32;
        let pts: std::vec::Vec<[f32; 3]> = (0..6)
            .map(|k| {
                let mut p = [0.0; 3];
                p[k / 2] = if k % 2 == 0 { a } else { -a };
                p
            })
            .collect();
        let tr = 6.0 * a * a;
        let quads = [Quad {
            tr,
            ..Quad::default()
        }];
        let (eps2, lambda) = (0.0f32, 0.2f32);
        let inter = Yukawa::<_, 1, false>::new(eps2, 1.0 / lambda, &quads[..]);
        let t = [0.3f32, -0.35, 0.2];
        let exact = pts.iter().fold([0.0f64; 3], |s, q| {
            let d = yukawa_accel_f64(t.map(f64::from), q.map(f64::from), 1.0, 0.0, 1.0 / 0.2);
            [s[0] + d[0], s[1] + d[1], s[2] + d[2]]
        });
        let err = |v: [f32; 3]| {
            let e: f64 = (0..3).map(|k| (v[k] as f64 - exact[k]).powi(2)).sum();
            let n: f64 = exact.iter().map(|x| x * x).sum();
            (e / n).sqrt()
        };
        let cell = Body {
            x: 0.0,
            y: 0.0,
            z: 0.0,
            m: 6.0,
        };
        let mut with = Targets::at([t]);
        inter.add(&mut with, &cell, &inter.cell_extra(0));
        let mut without = Targets::at([t]);
        inter.add(&mut without, &cell, &inter.body_extra(0));
        let (e1, e0) = (err(with.a[0]), err(without.a[0]));
        assert!(
            e0 > 1e-3 && e1 < e0 / 20.0,
            "with {e1:.2e} without {e0:.2e}"
        );
    }
}
