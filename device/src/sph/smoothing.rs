//! The smoothing kernels `W(r, h)` of the density and the forces, generic over the float type so
//! that the float32 kernels and the float64 reference share one formula.

use super::*;

/// Cubic spline (M4, Monaghan & Lattanzio 1985) with support `h`, normalised in 3D:
/// `W = 8/(π h³) · {1 − 6q² + 6q³ (q ≤ ½); 2(1 − q)³ (q ≤ 1)}`, `q = r/h`.
pub const CUBIC_SPLINE: u32 = 0;
/// Wendland C2 (Wendland 1995; Dehnen & Aly 2012) with support `h`, normalised in 3D:
/// `W = 21/(2π h³) (1 − q)⁴ (1 + 4q)`.
pub const WENDLAND_C2: u32 = 1;

/// `h³ W(q h, h)`: the dimensionless kernel of [`CUBIC_SPLINE`] or [`WENDLAND_C2`], zero for
/// `q ≥ 1` (and for a NaN `q`, from h = 0); generic so that the float32 kernels and the float64
/// reference share it.
#[inline(always)]
pub fn kernel_shape<R: Real>(kernel: u32, q: R) -> R {
    if q < R::ONE {
        shape_in_support(kernel, q)
    } else {
        R::ZERO
    }
}

/// [`kernel_shape`] without the support test, for a caller that has made it: zero for `q ≥ 1`
/// too where `q` is finite. Written without branches on `q` — the M4 spline as
/// `(8/π)(2u³ − 8v³)` with `u = max(1 − q, 0)`, `v = max(½ − q, 0)` —, so that a warp whose
/// lanes hold different `q` takes one path (the group search evaluates it for every candidate).
#[inline(always)]
pub fn shape_in_support<R: Real>(kernel: u32, q: R) -> R {
    let zero = R::ZERO;
    let pos = |x: R| if x > zero { x } else { zero };
    let u = pos(R::ONE - q);
    let u2 = u * u;
    if kernel == WENDLAND_C2 {
        let c = R::from_f64(21.0 / (2.0 * core::f64::consts::PI));
        c * (u2 * u2) * R::from_f64(4.0).mul_add(q, R::ONE)
    } else {
        let v = pos(R::from_f64(0.5) - q);
        let c = R::from_f64(8.0 / core::f64::consts::PI);
        (u2 * u).mul_add(c + c, -(R::from_f64(8.0) * c) * (v * v * v))
    }
}

/// `h³ ∂W/∂q` at `q = r/h` ∈ [0, 1): the derivative of [`shape_in_support`] (zero at `q ≥ 1`
/// where `q` is finite), written as it is without branches on `q` — the M4 spline
/// `(8/π)(−6u² + 24v²)`, Wendland C2 `−(21/2π) 20 q u³` — for the force and grad-h terms.
#[inline(always)]
pub fn dshape_in_support<R: Real>(kernel: u32, q: R) -> R {
    let zero = R::ZERO;
    let pos = |x: R| if x > zero { x } else { zero };
    let u = pos(R::ONE - q);
    if kernel == WENDLAND_C2 {
        let c = R::from_f64(-20.0 * 21.0 / (2.0 * core::f64::consts::PI));
        c * q * (u * u * u)
    } else {
        let v = pos(R::from_f64(0.5) - q);
        let c = R::from_f64(8.0 / core::f64::consts::PI);
        c * R::from_f64(24.0).mul_add(v * v, -(R::from_f64(6.0) * (u * u)))
    }
}

/// `W(r, h)` from the squared distance, float32, with `r = √r²` correctly rounded (the
/// searches' [`Density`], which sums many neighbours of one target, takes `math::sqrt_approx`
/// and scales by `1/h³` once; in the combined walk a `sqrt.rn` with its slow-path subroutine
/// cost 16 registers of 96).
#[inline(always)]
pub fn kernel_w(kernel: u32, r2: f32, h: f32) -> f32 {
    let inv = 1.0 / h;
    kernel_shape(kernel, math::sqrt(r2) * inv) * (inv * inv * inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_are_normalised_and_vanish_at_the_support() {
        for kernel in [CUBIC_SPLINE, WENDLAND_C2] {
            // ∫ 4π q² w(q) dq over [0, 1], midpoint rule in float64.
            let m = 100_000;
            let integral: f64 = (0..m)
                .map(|i| {
                    let q = (i as f64 + 0.5) / m as f64;
                    4.0 * core::f64::consts::PI * q * q * kernel_shape::<f64>(kernel, q)
                })
                .sum::<f64>()
                / m as f64;
            assert!((integral - 1.0).abs() < 1e-8, "kernel {kernel}: {integral}");
            assert_eq!(kernel_shape::<f64>(kernel, 1.0), 0.0);
            assert!(kernel_shape::<f64>(kernel, 1.0 - 1e-6) < 1e-12);
            // Continuous at q = 1/2 (the spline's join).
            let (a, b) = (
                kernel_shape::<f64>(kernel, 0.5),
                kernel_shape::<f64>(kernel, 0.5 + 1e-9),
            );
            assert!((a - b).abs() < 1e-7);
            // Float32 form against float64: W(r, h) scales as h⁻³.
            let w = kernel_w(kernel, 0.09, 2.0) as f64;
            let want = kernel_shape::<f64>(kernel, 0.15) / 8.0;
            assert!((w - want).abs() < 1e-6 * want, "{w} {want}");
        }
    }
}
