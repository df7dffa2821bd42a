//! The pair interactions of gravity: a body's softened acceleration (and potential) from a
//! body or a cell's monopole, from a cell's quadrupole, and the float64 form for the reference.

use super::*;

/// Acceleration (without G) on a body at `p` from a cell of mass `m`, centre of mass `c` and
/// quadrupole `q`, to second order in the Plummer-softened kernel itself:
/// `m d/r³ − Q d/r⁵ + (5/2)(dᵀQd − ε² tr) d/r⁷` with `d = c − p` and `r² = |d|² + ε²`. The
/// `ε² tr` term is what the Newtonian traceless form (softening merely substituted into `r`)
/// drops: the softened potential is not harmonic, so the trace of the second moment does not
/// vanish from its expansion. With a zero `q` it is [`pair_accel`].
#[inline(always)]
pub fn pair_accel_quad(p: [f32; 3], c: [f32; 3], m: f32, q: &Quad, eps2: f32) -> [f32; 3] {
    let mut a = [0.0; 3];
    add_pair_accel_quad::<false>(&mut a, p, c, m, q, eps2);
    a
}

/// Adds [`pair_accel_quad`] to `a` with fused multiply-adds; `SOFT` as in [`add_pair_accel`].
#[inline(always)]
pub fn add_pair_accel_quad<const SOFT: bool>(
    a: &mut [f32; 3],
    p: [f32; 3],
    c: [f32; 3],
    m: f32,
    q: &Quad,
    eps2: f32,
) {
    let (d, inv) = offset_inv_r::<SOFT>(p, c, eps2);
    let inv2 = inv * inv;
    let inv3 = inv * inv2;
    // A body on itself (d = 0, no moments) multiplies these by exact zeros: they must stay finite
    // for small ε (1/ε⁷ overflows float32 below ε ≈ 3·10⁻⁶), so 1/r⁷ is never formed and 1/r⁵
    // saturates instead of overflowing, which changes no finite result.
    let inv5 = (inv3 * inv2).min(f32::MAX);
    let qd = [
        math::fma(q.xx, d[0], math::fma(q.xy, d[1], q.xz * d[2])),
        math::fma(q.xy, d[0], math::fma(q.yy, d[1], q.yz * d[2])),
        math::fma(q.xz, d[0], math::fma(q.yz, d[1], q.zz * d[2])),
    ];
    // The trace term of the softened expansion: −(5/2) ε² tr d/r⁷ (zero without softening).
    let dqd = math::fma(
        d[0],
        qd[0],
        math::fma(d[1], qd[1], math::fma(d[2], qd[2], -eps2 * q.tr)),
    );
    let radial = math::fma(2.5 * dqd * inv2, inv5, m * inv3);
    for k in 0..3 {
        a[k] = math::fnma(inv5, qd[k], math::fma(radial, d[k], a[k]));
    }
}

/// Acceleration (without G) on a body at `p` from mass `m` at `q`, Plummer-softened: `m d /
/// (|d|² + ε²)^{3/2}`. Zero when the softened distance is zero (a body on itself with ε = 0).
#[inline(always)]
pub fn pair_accel(p: [f32; 3], q: [f32; 3], m: f32, eps2: f32) -> [f32; 3] {
    let mut a = [0.0; 3];
    add_pair_accel::<false>(&mut a, p, q, m, eps2);
    a
}

/// Adds [`pair_accel`] to `a`, each component by one fused multiply-add (rustc contracts nothing
/// on its own). `SOFT` promises `eps2 ≥ f32::MIN_POSITIVE`: then `r2 ≥ eps2` and the zero-distance
/// select is dropped from the hot loops (two instructions of about fifteen); the result is the
/// same either way.
#[inline(always)]
pub fn add_pair_accel<const SOFT: bool>(
    a: &mut [f32; 3],
    p: [f32; 3],
    q: [f32; 3],
    m: f32,
    eps2: f32,
) {
    let (d, inv) = offset_inv_r::<SOFT>(p, q, eps2);
    let f = m * inv * (inv * inv);
    for c in 0..3 {
        a[c] = math::fma(d[c], f, a[c]);
    }
}

/// [`add_pair_accel`] and the potential: also `phi -= m / √(|d|² + ε²)` (per unit G). A body on
/// itself adds `−m/ε` (nothing when ε = 0); callers that need the potential of the others remove
/// it with [`self_potential`].
#[inline(always)]
pub fn add_pair_accel_pot<const SOFT: bool>(
    a: &mut [f32; 3],
    phi: &mut f32,
    p: [f32; 3],
    q: [f32; 3],
    m: f32,
    eps2: f32,
) {
    let (d, inv) = offset_inv_r::<SOFT>(p, q, eps2);
    let m_inv = m * inv;
    let f = m_inv * (inv * inv);
    for c in 0..3 {
        a[c] = math::fma(d[c], f, a[c]);
    }
    *phi -= m_inv;
}

/// The term a body of mass `m` adds to its own potential in [`add_pair_accel_pot`]: `−m/ε` with
/// the same rounding (0 when not softened).
#[inline(always)]
pub fn self_potential<const SOFT: bool>(m: f32, eps2: f32) -> f32 {
    -m * offset_inv_r::<SOFT>([0.0; 3], [0.0; 3], eps2).1
}

/// The offset `d = q − p` and the softened inverse distance `1/√(|d|² + ε²)` of the interaction
/// formulas, or 0 for a zero softened distance (a body on itself with ε = 0); `SOFT` as in
/// [`add_pair_accel`].
#[inline(always)]
fn offset_inv_r<const SOFT: bool>(p: [f32; 3], q: [f32; 3], eps2: f32) -> ([f32; 3], f32) {
    let d = [q[0] - p[0], q[1] - p[1], q[2] - p[2]];
    let r2 = math::fma(
        d[0],
        d[0],
        math::fma(d[1], d[1], math::fma(d[2], d[2], eps2)),
    );
    let inv = math::rsqrt(r2);
    // Subnormal r2 counts as zero: the device's rsqrt flushes it to +inf (discarded here).
    let inv = if SOFT || r2 >= f32::MIN_POSITIVE {
        inv
    } else {
        0.0
    };
    (d, inv)
}

/// Whether `eps2` allows [`add_pair_accel`]`::<true>`.
#[inline(always)]
pub fn softened(eps2: f32) -> bool {
    eps2 >= f32::MIN_POSITIVE
}

/// The float64 form of [`pair_accel`], for the reference.
#[inline(always)]
pub fn pair_accel_f64(p: [f64; 3], q: [f64; 3], m: f64, eps2: f64) -> [f64; 3] {
    let d = [q[0] - p[0], q[1] - p[1], q[2] - p[2]];
    let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2;
    if r2 <= 0.0 {
        return [0.0; 3];
    }
    let r = math::sqrt_f64(r2);
    let f = m / (r2 * r);
    [d[0] * f, d[1] * f, d[2] * f]
}

/// Squared distance between two points.
#[inline(always)]
pub fn dist2(p: [f32; 3], q: [f32; 3]) -> f32 {
    let d = [q[0] - p[0], q[1] - p[1], q[2] - p[2]];
    d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
}
