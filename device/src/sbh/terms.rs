//! The summed kernels `f(p, q)`: kinds, their float32 and float64 terms, quadrupole terms.

use super::*;

/// `-w / (r + δ)`: the softened potential of the paper's experiments (δ = 0.1 in their table).
pub const KIND_SHIFTED: u32 = 0;
/// `-w / sqrt(r² + ε²)`: the Plummer-softened potential.
pub const KIND_PLUMMER: u32 = 1;
/// `A · (p − q) / (4π |p − q|³)` with `A` the area-weighted normal: the winding number (solid
/// angle of oriented surface samples).
pub const KIND_WINDING: u32 = 2;
/// `w exp(−α r)`: the smooth-distance sum; the distance is [`smooth_distance`] of the sum.
pub const KIND_SMOOTH: u32 = 3;

/// A kernel function: one of the `KIND_*` and its parameter (δ, ε, unused, α).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KernelSpec {
    pub kind: u32,
    pub param: f32,
}

crate::shared_type!(KernelSpec);

/// 1 / (4π).
pub(super) const INV_4PI: f32 = 0.25 * core::f32::consts::FRAC_1_PI;

/// `w f(p, q)` for a source (or cell summary) `s` at `p = s.pos()` with weight `w = s.m` and
/// dipole `a` (read only by the winding number). On the device every square root, reciprocal and
/// exponential is one approximate instruction ([`math::sqrt_approx`], [`math::rcp`],
/// [`math::rsqrt`], [`math::exp`]: relative errors of a few 2^-23), the host twin computes them
/// correctly rounded; each kind costs at most two `MUFU` operations per term.
#[inline(always)]
pub fn term(k: KernelSpec, q: [f32; 3], s: &Body, a: [f32; 3]) -> f32 {
    // fma(x, y, 0) rounds x·y once: exactly the product.
    term_add(k, q, s, a, 0.0)
}

/// `acc + w f(p, q)`: [`term`] with its last product fused into the accumulation (one `FFMA`
/// where a sum of terms would take `FMUL` + `FADD`); `term` is this with `acc = 0`.
#[inline(always)]
pub fn term_add(k: KernelSpec, q: [f32; 3], s: &Body, a: [f32; 3], acc: f32) -> f32 {
    let d = [s.x - q[0], s.y - q[1], s.z - q[2]];
    let r2 = math::fma(d[0], d[0], math::fma(d[1], d[1], d[2] * d[2]));
    match k.kind {
        KIND_SHIFTED => math::fnma(s.m, math::rcp(math::sqrt_approx(r2) + k.param), acc),
        KIND_PLUMMER => math::fnma(s.m, math::rsqrt(math::fma(k.param, k.param, r2)), acc),
        KIND_WINDING => {
            let inv = math::rsqrt(r2);
            let ad = math::fma(a[0], d[0], math::fma(a[1], d[1], a[2] * d[2]));
            math::fma(ad * inv * inv * inv, INV_4PI, acc)
        }
        _ => math::fma(s.m, math::exp(-k.param * math::sqrt_approx(r2)), acc),
    }
}

/// Whether kernel `k` is radial (a function of `|p − q|` times the weight), so that a cell's
/// quadrupole moment refines its far-field term ([`term_quad_add`]): every kind but the winding
/// number.
#[inline(always)]
pub fn has_quadrupole(k: KernelSpec) -> bool {
    k.kind != KIND_WINDING
}

/// A cell's second moment as [`term_quad_add`] reads it, scaled once when the cell is listed (a
/// warp lists a cell once and its 32 lanes read it): with [`Quad`]'s traceless `Q` and trace,
/// `d6 = Q/6` on the diagonal, `o3 = Q/3` off it (the two symmetric halves), `t3 = tr/3`, so that
/// `dᵀQd/6 = dx (d6x dx + o3xy dy + o3xz dz) + dy (d6y dy + o3yz dz) + dz d6z dz`. 32 bytes: two
/// vector loads.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct QuadTerm {
    pub d6: [f32; 3],
    pub o3xy: f32,
    pub o3xz: f32,
    pub o3yz: f32,
    pub t3: f32,
    pub _pad: f32,
}

crate::shared_type!(QuadTerm);

impl QuadTerm {
    #[inline(always)]
    pub fn of(q: &Quad) -> QuadTerm {
        const SIXTH: f32 = 1.0 / 6.0;
        const THIRD: f32 = 1.0 / 3.0;
        QuadTerm {
            d6: [q.xx * SIXTH, q.yy * SIXTH, q.zz * SIXTH],
            o3xy: q.xy * THIRD,
            o3xz: q.xz * THIRD,
            o3yz: q.yz * THIRD,
            t3: q.tr * THIRD,
            _pad: 0.0,
        }
    }
}

/// `acc + w f(p, q)` plus the second-order term of cell `s`'s sources about their weighted centre
/// `p`: for a radial kernel `f(r)` the Hessian at `d = p − q` is `f'' u uᵀ + (f'/r)(I − u uᵀ)`,
/// so with the raw second moment `M = Σ w δ δᵀ = (Q + tr·I)/3` ([`Quad`]'s traceless `Q` and its
/// trace) the term is `½ tr(H M) = (g₂/r²) dᵀQd/6 + tr (g₂/6 + g₁/2)` where `g₁ = f'/r` and `g₂ =
/// f'' − f'/r`; here `h dᵀQd/6 + w tr/3` with `h = g₂/r²`, `w = g₂/2 + 3g₁/2` (`m`: the moment
/// prepared by [`QuadTerm::of`]). The first-order term vanishes about the weighted centre. For the
/// Newtonian `−1/r` it is the textbook `−dᵀQd / 2r⁵`; the softened kernels are not harmonic, so
/// the trace term stays (cf. [`crate::bh::pair_accel_quad`]) — for the paper's `−1/(r + δ)` it is
/// most of the correction: the monopole's error there is a bias of one sign. Radial kinds only
/// ([`has_quadrupole`]; the winding number gets [`term_add`]); a zero moment (a body) gives
/// [`term_add`]'s value up to rounding (`r` from `rsqrt`, not `sqrt`).
#[inline(always)]
pub fn term_quad_add(k: KernelSpec, q: [f32; 3], s: &Body, m: &QuadTerm, acc: f32) -> f32 {
    if k.kind == KIND_WINDING {
        return term_add(k, q, s, [0.0; 3], acc);
    }
    let d = [s.x - q[0], s.y - q[1], s.z - q[2]];
    let r2 = math::fma(d[0], d[0], math::fma(d[1], d[1], d[2] * d[2]));
    // (f, h, w) per kind, from two approximate instructions.
    let (f, h, w) = match k.kind {
        KIND_SHIFTED => {
            // f = −s with s = 1/(r+δ): f' = s², f'' = −2s³, g₁ = s²/r;
            // h = −(2s³ + g₁)/r², w = g₁ − s³.
            let ri = math::rsqrt(r2);
            let si = math::rcp(math::fma(r2, ri, k.param));
            let s2 = si * si;
            let g1 = s2 * ri;
            let s3 = s2 * si;
            (-si, -(math::fma(2.0, s3, g1) * (ri * ri)), g1 - s3)
        }
        KIND_PLUMMER => {
            // f = −p with p = 1/√(r² + ε²): g₁ = p³, g₂ = −3r²p⁵; h = −3p⁵, w = (3/2) ε² p⁵.
            let pi = math::rsqrt(math::fma(k.param, k.param, r2));
            let p2 = pi * pi;
            let p5 = p2 * p2 * pi;
            (-pi, -3.0 * p5, (1.5 * k.param * k.param) * p5)
        }
        _ => {
            // f = e^{−αr}: g₁ = −α e/r, g₂ = α² e − g₁; h = g₂/r², w = α² e/2 + g₁.
            let ri = math::rsqrt(r2);
            let e = math::exp(-k.param * r2 * ri);
            let g1 = -k.param * e * ri;
            let a2e = k.param * k.param * e;
            (e, (a2e - g1) * (ri * ri), math::fma(0.5, a2e, g1))
        }
    };
    let dqd6 = math::fma(
        d[0],
        math::fma(m.d6[0], d[0], math::fma(m.o3xy, d[1], m.o3xz * d[2])),
        math::fma(
            d[1],
            math::fma(m.d6[1], d[1], m.o3yz * d[2]),
            d[2] * (m.d6[2] * d[2]),
        ),
    );
    // The cell's whole term first, then one rounding at the running sum's scale (three fused
    // steps into `acc` would triple the float32 summation error, which is this expansion's floor).
    acc + math::fma(h, dqd6, math::fma(w, m.t3, s.m * f))
}

/// The float64 form of [`term`], for the direct-summation reference.
#[inline(always)]
pub fn term_f64(k: KernelSpec, q: [f64; 3], p: [f64; 3], w: f64, a: [f64; 3]) -> f64 {
    let d = [p[0] - q[0], p[1] - q[1], p[2] - q[2]];
    let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    let r = math::sqrt_f64(r2);
    let param = k.param as f64;
    match k.kind {
        KIND_SHIFTED => -w / (r + param),
        KIND_PLUMMER => -w / math::sqrt_f64(r2 + param * param),
        KIND_WINDING => {
            (a[0] * d[0] + a[1] * d[1] + a[2] * d[2]) / (4.0 * core::f64::consts::PI * r2 * r)
        }
        _ => {
            #[cfg(not(target_arch = "nvptx64"))]
            {
                w * (-param * r).exp()
            }
            #[cfg(target_arch = "nvptx64")]
            {
                w * math::exp((-param * r) as f32) as f64
            }
        }
    }
}

/// The smooth distance `−ln(Σ w e^{−α r}) / α` from its sum (a sum ≤ 0, possible for a noisy
/// estimate, is clamped to the smallest normal float: a large finite distance).
#[inline(always)]
pub fn smooth_distance(sum: f32, alpha: f32) -> f32 {
    -math::ln(sum.max(f32::MIN_POSITIVE)) / alpha
}

/// Whether the kernel is infinite at `r = 0` (then no query may sit on a source).
#[inline(always)]
pub fn is_singular(k: KernelSpec) -> bool {
    match k.kind {
        KIND_SHIFTED | KIND_PLUMMER => k.param == 0.0,
        KIND_WINDING => true,
        _ => false,
    }
}
