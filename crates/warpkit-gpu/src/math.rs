//! Fast math that is one PTX instruction on the device and `std` on the host.
//!
//! rustc's NVPTX backend has no libm: `f32::sqrt` and friends lower to calls it cannot select.
//! Device formulas call these instead. On the host they are the correctly rounded `std` functions,
//! so CPU and GPU agree exactly for [`sqrt`] and [`fma`] and within the bounds documented on
//! [`rsqrt`] and [`exp2`] (asserted by the GPU tests).

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

macro_rules! unary {
    ($(#[$doc:meta])* $name:ident, $ty:ty, $reg:ident, $ptx:literal, |$x:ident| $host:expr) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name($x: $ty) -> $ty {
            #[cfg(target_arch = "nvptx64")]
            {
                let r: $ty;
                // SAFETY: a pure arithmetic instruction.
                unsafe {
                    asm!(concat!($ptx, " {r}, {x};"), x = in($reg) $x, r = out($reg) r,
                        options(pure, nomem, nostack))
                };
                r
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                $host
            }
        }
    };
}

unary!(/// Correctly rounded square root: `sqrt.rn.f32`.
    sqrt, f32, reg32, "sqrt.rn.f32", |x| x.sqrt());
unary!(/// Correctly rounded square root: `sqrt.rn.f64`.
    sqrt_f64, f64, reg64, "sqrt.rn.f64", |x| x.sqrt());
unary!(
    /// Reciprocal square root, `rsqrt.approx.ftz.f32`: relative error below 2^-22.9 (PTX ISA) for
    /// normal inputs; subnormals flush to zero, so `rsqrt(0) = +inf`. The host computes
    /// `1 / sqrt(x)` correctly rounded.
    rsqrt, f32, reg32, "rsqrt.approx.ftz.f32", |x| 1.0 / x.sqrt()
);
unary!(
    /// `2^x`, `ex2.approx.ftz.f32`: at most 2 ulp from the correctly rounded result (PTX ISA), a
    /// relative error below 2^-21 (about 4.8e-7); results in the subnormal range flush to zero.
    /// Host: `f32::exp2`.
    exp2, f32, reg32, "ex2.approx.ftz.f32", |x| x.exp2()
);

unary!(
    /// `log2(x)`, `lg2.approx.ftz.f32`: absolute error below 2^-22 for x in [0.5, 2], relative
    /// error below 2^-22 elsewhere (PTX ISA); `lg2(0) = -inf`, negative inputs give NaN.
    /// Host: `f32::log2`.
    log2, f32, reg32, "lg2.approx.ftz.f32", |x| x.log2()
);

/// `a * b + c` with one rounding: `fma.rn.f32`.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: a pure arithmetic instruction.
        unsafe {
            asm!("fma.rn.f32 {r}, {a}, {b}, {c};", a = in(reg32) a, b = in(reg32) b,
                c = in(reg32) c, r = out(reg32) r, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// `c - a * b` with one rounding: [`fma`]`(-a, b, c)`, but negated by `neg.f32`, which ptxas folds
/// into the `FFMA`'s operand; a Rust `-a` before the `asm!` reaches PTX as an integer `xor` on the
/// sign bit (the asm operands are `.b32`), one `LOP3` per call.
#[inline(always)]
pub fn fnma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: pure arithmetic instructions.
        unsafe {
            asm!("{{ .reg .f32 t; neg.f32 t, {a}; fma.rn.f32 {r}, t, {b}, {c}; }}",
                a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, r = out(reg32) r,
                options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        (-a).mul_add(b, c)
    }
}

/// `a * b + c` with one rounding: `fma.rn.f64`.
#[inline(always)]
pub fn fma_f64(a: f64, b: f64, c: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f64;
        // SAFETY: a pure arithmetic instruction.
        unsafe {
            asm!("fma.rn.f64 {r}, {a}, {b}, {c};", a = in(reg64) a, b = in(reg64) b,
                c = in(reg64) c, r = out(reg64) r, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// Natural exponential through [`exp2`]: `exp(x) = 2^(x log2 e)`. The product's rounding adds a
/// relative error of about |x|·6e-8 to exp2's own.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    exp2(x * core::f32::consts::LOG2_E)
}

/// Natural exponential in float64: `f64::exp` on the host; on the device, where PTX has no
/// float64 exponential, [`exp_f64_soft`]. For formulas generic over the precision whose float64
/// form runs on the CPU (the float32 kernels use [`exp`]).
#[inline(always)]
pub fn exp_f64(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        exp_f64_soft(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.exp()
    }
}

/// `e^x` without libm: x = k ln 2 + r with |r| ≤ ln 2 / 2 (Cody–Waite, ln 2 split in two so that
/// k ln 2 is exact), e^r by its Taylor series to r¹³ (truncation below 1e-17), then 2^k built
/// from the exponent bits. Within 2 ulp of the correctly rounded result on normal outputs.
pub fn exp_f64_soft(x: f64) -> f64 {
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    if x.is_nan() {
        return x;
    }
    if x > 709.782_712_893_384 {
        return f64::INFINITY;
    }
    if x < -745.133_219_101_941_1 {
        return 0.0;
    }
    let t = x * core::f64::consts::LOG2_E;
    let k = if t >= 0.0 {
        (t + 0.5) as i64
    } else {
        (t - 0.5) as i64
    };
    let kf = k as f64;
    let r = fma_f64(-kf, LN2_LO, fma_f64(-kf, LN2_HI, x));
    // Horner from 1/13! down to 1.
    let mut p = 1.0 / 6_227_020_800.0;
    let mut fact = 6_227_020_800.0;
    for n in (1..13).rev() {
        fact /= (n + 1) as f64;
        p = fma_f64(p, r, 1.0 / fact);
    }
    let p = fma_f64(p, r, 1.0);
    // 2^k in two factors keeps each a normal number down to the subnormal results.
    let pow2 = |k: i64| f64::from_bits(((k + 1023) as u64) << 52);
    let k1 = k / 2;
    p * pow2(k1) * pow2(k - k1)
}

/// Natural logarithm through [`log2`]: `ln(x) = log2(x) · ln 2`.
#[inline(always)]
pub fn ln(x: f32) -> f32 {
    log2(x) * core::f32::consts::LN_2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_cases() {
        assert_eq!(sqrt(16.0), 4.0);
        assert_eq!(sqrt_f64(2.25), 1.5);
        assert_eq!(rsqrt(4.0), 0.5);
        assert_eq!(exp2(10.0), 1024.0);
        assert_eq!(fma(2.0, 3.0, 1.0), 7.0);
        assert_eq!(fma_f64(-2.0, 3.0, 1.0), -5.0);
    }

    #[test]
    fn fma_rounds_once() {
        // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: a separate multiply rounds the 2^-24 away (ties to
        // even), the fused form keeps it when 1 + 2^-11 is subtracted.
        let a = 1.0 + f32::EPSILON * 2048.0;
        let c = -(1.0 + f32::EPSILON * 4096.0);
        assert_eq!(fma(a, a, c), 2f32.powi(-24));
        assert_eq!(a * a + c, 0.0);
    }

    #[test]
    fn soft_float64_exp_matches_std() {
        let mut worst = 0.0f64;
        for i in -2000..=2000 {
            let x = i as f64 * 0.354_321;
            let (want, got) = (x.exp(), exp_f64_soft(x));
            if want > f64::MIN_POSITIVE {
                worst = worst.max((got / want - 1.0).abs());
            }
        }
        assert!(worst < 5e-16, "relative error {worst}");
        assert_eq!(exp_f64_soft(0.0), 1.0);
        assert_eq!(exp_f64_soft(800.0), f64::INFINITY);
        assert_eq!(exp_f64_soft(-800.0), 0.0);
        assert!(exp_f64_soft(f64::NAN).is_nan());
    }

    #[test]
    fn exp_matches_std() {
        for i in -40..=40 {
            let x = i as f32 * 0.37;
            let rel = (exp(x) as f64 / (x as f64).exp() - 1.0).abs();
            assert!(rel < 4e-6, "exp({x}) rel err {rel}");
        }
    }

    #[test]
    fn ln_matches_std() {
        assert_eq!(log2(8.0), 3.0);
        for i in 1..=60 {
            let x = i as f32 * 0.173;
            let err = (ln(x) as f64 - (x as f64).ln()).abs();
            assert!(
                err < 1e-6 * (x as f64).ln().abs().max(1.0),
                "ln({x}) err {err}"
            );
        }
    }
}

// Fast approximations added for the SBH kernels (the brute force's inner loop, the traversals).

unary!(
    /// Reciprocal, `rcp.approx.ftz.f32`: at most 1 ulp from the correctly rounded `1/x` (PTX ISA),
    /// a relative error below 2^-23; subnormal inputs flush to zero (`rcp(0) = +inf`), results in
    /// the subnormal range flush to zero. One `MUFU.RCP`, where a division is a ~10-instruction
    /// sequence with a slow-path subroutine. Host: `1 / x`, correctly rounded.
    rcp, f32, reg32, "rcp.approx.ftz.f32", |x| 1.0 / x
);
unary!(
    /// Square root, `sqrt.approx.ftz.f32`: relative error below 2^-23 (PTX ISA) for normal inputs;
    /// `sqrt_approx(0) = 0`, subnormal inputs flush to zero. One `MUFU.SQRT`, where `sqrt.rn` is a
    /// ~8-instruction sequence with a slow-path subroutine. Host: `f32::sqrt`, correctly rounded.
    sqrt_approx, f32, reg32, "sqrt.approx.ftz.f32", |x| x.sqrt()
);

#[cfg(test)]
mod fast_tests {
    use super::*;

    #[test]
    fn rcp_and_sqrt_approx_within_their_bounds() {
        // On the host these are the correctly rounded functions: within half an ulp, inside the
        // device bounds (the GPU tests check the device side against these).
        for i in 1..2000 {
            let x = i as f32 * 0.0137 + 1e-3;
            let r = rcp(x) as f64;
            assert!((r * x as f64 - 1.0).abs() < 2f64.powi(-23), "rcp({x})");
            let s = sqrt_approx(x) as f64;
            assert!(
                (s / (x as f64).sqrt() - 1.0).abs() < 2f64.powi(-23),
                "sqrt({x})"
            );
        }
        assert_eq!(sqrt_approx(0.0), 0.0);
        assert_eq!(rcp(4.0), 0.25);
        assert_eq!(rcp(0.0), f32::INFINITY);
    }
}
