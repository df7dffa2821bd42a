//! Stochastic Barnes–Hut fast summation, after Madan, Sharp, Williams, Museth, Levin, "Stochastic
//! Barnes-Hut Approximation for Fast Summation on the GPU", SIGGRAPH 2025 (seed 004), and the
//! deterministic Barnes–Hut evaluation at arbitrary query points that it is compared with.
//!
//! Both sum `F(q) = Σ_i w_i f(p_i, q)` over sources `p_i` for query points `q`, on the octree of
//! `crate::bh` (sources are its bodies; a cell's summary `cell_pm` is its weight and weighted
//! centre, plus, for the winding number, its summed area-weighted normal, the "dipole").
//!
//! The estimator ([`sbh_estimate`]), one query at a time:
//! 1. *Telescoping paths.* Every cell `T` has a correction `Δ_T = Σ_{c ∈ children(T)} w_c f(p_c,
//!    q) − w_T f(p_T, q)` (the paper's *contribution exchange*: the parent's Barnes–Hut term is
//!    the control variate of its children's). Summed over all cells below a cell `C`,
//!    `w_C f(p_C, q) + Σ_T Δ_T` is exactly the sum over `C`'s sources.
//! 2. *Stratification over the root's children.* The root's children (in the 64-ary form, its
//!    grandchildren: see [`SbhParams::levels`]) are the strata: their terms are summed exactly, and
//!    each child cell starts `S` independent paths — or, with [`SbhParams::allocate`] (ours, not
//!    the paper's), `2S` where the stratum is near the query and `S` kept with probability 1/2
//!    where it is far ([`stratum_paths`]).
//! 3. *Path sampling.* A path descends to one child chosen with probability proportional to its
//!    weight (for equal weights, the paper's uniform source index), so cell `T` is reached with
//!    probability `π_T = w_T / w_stratum`.
//! 4. *Russian roulette.* The correction of a cell `c` on the path is evaluated with probability
//!    `min(1, max(1, β̂) / β̃_c)` where `β̃ = |q − p| / |B|` is the far-field ratio ([`far_ratio`]:
//!    distance to the cell's centre of mass over its box diagonal) and `β̂` the running maximum of
//!    `β̃` along the path, started at the stratum's own ratio, so the stratum's correction is always
//!    evaluated (far away, the ratio of successive ratios is about 1/d for a tree that splits each
//!    axis d times); else the path ends. `P_T` is the product of these probabilities. These are the
//!    authors' definitions (their code, `multiLevelPrefixControlVariateSampleGPUQuery` and
//!    `Tree3DNode::farFieldRatio`), which the seed summarises as `β̃_i(q,k) = ‖q − p̃_{i,k}‖ /
//!    |B_{i,k}|` and `p_{i,k}(q) = min(1, max(1, β̃_i(q,k)) / β̃_i(q,k+1))`.
//! 5. Each reached cell adds `Δ_T / (π_T P_T)`; its expectation is `Σ_T Δ_T`, so the estimate is
//!    unbiased (the paper's Theorem 3.1; `host/sbh` tests it statistically).
//!
//! Random numbers come from [`crate::rng`]: a stream per (seed, query stream) and, within it, a
//! counter per (stratum, sample, depth, purpose), so path and roulette draws are independent and
//! the CPU twin draws exactly what the kernel draws. With `coherent` streams the 32 queries of a
//! warp share one stream: they choose the same children (the choice depends on weights only) and
//! die in nested order, which keeps the warp on one path (the paper's "same seed across a warp").
//!
//! Tree access goes through [`TreeView`]: [`SliceTree`] on the host, [`RawTree`] in the kernels, so
//! the traversal code below is the single copy both backends run.

pub mod kernels;
mod wide;
pub mod wide_kernels;

pub use wide::{
    WIDE_BUILD_BLOCK, WIDE_CHAINS, WIDE_EVEN, WIDE_HEAD, WIDE_ODD, WIDE_PAD, WIDE_SCAN_BLOCK,
    WIDE_TILE, WideMeta, wide_block, wide_entries, wide_mark, wide_padded, wide_rows,
};

use crate::bh::{Body, MAX_DEPTH, Quad};
use crate::walk::{CellData, Interaction, ListExtra, Octree};
use crate::{math, rng};

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
const INV_4PI: f32 = 0.25 * core::f32::consts::FRAC_1_PI;

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

/// Read access to an octree in `crate::bh`'s layout: child slots (`n + cell` for a cell, a body
/// index heading a bucket chain through `next`, or negative for empty), cell summaries, bodies.
/// The octree part (bodies, slots, summaries; the root is the last cell) is [`Octree`], which
/// the generic walk reads.
pub trait TreeView: Octree {
    /// Half the root cell's width.
    fn root_half(&self) -> f32;
    /// Area-weighted normal of body `i` (winding number only).
    fn body_dipole(&self, i: i32) -> [f32; 3];
    /// Summed area-weighted normal of cell `c` (winding number only).
    fn cell_dipole(&self, c: i32) -> [f32; 3];
    /// Whether the wide-node layout (module `wide`) is present: `levels = 2` then reads it.
    fn has_wide(&self) -> bool;
    /// Row `r` of the wide layout's summaries (and header pick weights).
    fn wide_pm(&self, r: u32) -> Body;
    /// Rows `r..r + 4` of the wide layout's summaries (one address for the four loads).
    #[inline(always)]
    fn wide_pm4(&self, r: u32) -> [Body; 4] {
        core::array::from_fn(|i| self.wide_pm(r + i as u32))
    }
    /// Dipoles of the wide entries at rows `r..r + 4`.
    #[inline(always)]
    fn wide_dipole4(&self, r: u32) -> [[f32; 3]; 4] {
        core::array::from_fn(|i| self.wide_dipole(r + i as u32))
    }
    /// Row `r` of the wide layout's links, weights and headers.
    fn wide_meta(&self, r: u32) -> WideMeta;
    /// Dipole of the wide entry at row `r` (winding number only).
    fn wide_dipole(&self, r: u32) -> [f32; 3];
}

/// A tree in host slices. `body_dipole`, `cell_dipole` and `wide_dipole` may be empty unless the
/// kernel is the winding number; the wide layout (`wide_pm`, `wide_meta`) may be empty (then
/// `levels = 2` walks the octree itself).
#[derive(Clone, Copy, Debug)]
pub struct SliceTree<'a> {
    pub bodies: &'a [Body],
    pub body_dipole: &'a [[f32; 3]],
    pub child: &'a [i32],
    pub next: &'a [i32],
    pub cell_pm: &'a [Body],
    pub cell_dipole: &'a [[f32; 3]],
    pub root_half: f32,
    pub wide_pm: &'a [Body],
    pub wide_meta: &'a [WideMeta],
    pub wide_dipole: &'a [Body],
}

/// The stochastic estimator reads trees in dense storage (`crate::bh::Layout`); its slot formula
/// does not depend on the capacity.
const DENSE: crate::bh::Layout = crate::bh::Layout::dense(0);

impl TreeView for SliceTree<'_> {
    #[inline(always)]
    fn root_half(&self) -> f32 {
        self.root_half
    }
    #[inline(always)]
    fn body_dipole(&self, i: i32) -> [f32; 3] {
        self.body_dipole[i as usize]
    }
    #[inline(always)]
    fn cell_dipole(&self, c: i32) -> [f32; 3] {
        self.cell_dipole[c as usize]
    }
    #[inline(always)]
    fn has_wide(&self) -> bool {
        !self.wide_pm.is_empty()
    }
    #[inline(always)]
    fn wide_pm(&self, r: u32) -> Body {
        self.wide_pm[r as usize]
    }
    #[inline(always)]
    fn wide_meta(&self, r: u32) -> WideMeta {
        self.wide_meta[r as usize]
    }
    #[inline(always)]
    fn wide_dipole(&self, r: u32) -> [f32; 3] {
        let d = self.wide_dipole[r as usize];
        [d.x, d.y, d.z]
    }
}

impl Octree for SliceTree<'_> {
    #[inline(always)]
    fn n(&self) -> i32 {
        self.bodies.len() as i32
    }
    #[inline(always)]
    fn root(&self) -> i32 {
        self.cell_pm.len() as i32 - 1
    }
    #[inline(always)]
    fn child(&self, cell: i32, octant: u32) -> i32 {
        self.child[DENSE.slot(cell, octant)]
    }
    #[inline(always)]
    fn next(&self, body: i32) -> i32 {
        self.next[body as usize]
    }
    #[inline(always)]
    fn body(&self, i: i32) -> Body {
        self.bodies[i as usize]
    }
    #[inline(always)]
    fn cell(&self, c: i32) -> Body {
        self.cell_pm[c as usize]
    }
}

/// A tree in device memory, read through raw pointers (the kernels' view).
#[derive(Clone, Copy, Debug)]
pub struct RawTree {
    bodies: *const Body,
    body_dipole: *const [f32; 3],
    child: *const i32,
    next: *const i32,
    cell_pm: *const Body,
    cell_dipole: *const [f32; 3],
    wide_pm: *const Body,
    wide_meta: *const WideMeta,
    wide_dipole: *const Body,
    n: i32,
    cells: i32,
    root_half: f32,
}

impl RawTree {
    /// # Safety
    /// `bodies` and `next` hold `n` entries, `cell_pm` `cells`, `child` `8 * cells`, forming a
    /// complete tree of `crate::bh`'s layout whose root has half-width `root_half`; the dipole
    /// arrays hold as many entries as bodies and cells, or are null when the winding number is
    /// not evaluated. `wide_pm` is null (no wide layout) or, with `wide_meta`, the wide layout
    /// of this tree (module `wide`), `wide_dipole` too when the winding number is evaluated.
    /// Everything stays valid and unchanged while the view is used.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub unsafe fn new(
        bodies: *const Body,
        body_dipole: *const [f32; 3],
        child: *const i32,
        next: *const i32,
        cell_pm: *const Body,
        cell_dipole: *const [f32; 3],
        wide_pm: *const Body,
        wide_meta: *const WideMeta,
        wide_dipole: *const Body,
        n: u32,
        cells: u32,
        root_half: f32,
    ) -> Self {
        RawTree {
            bodies,
            body_dipole,
            child,
            next,
            cell_pm,
            cell_dipole,
            wide_pm,
            wide_meta,
            wide_dipole,
            n: n as i32,
            cells: cells as i32,
            root_half,
        }
    }
}

// SAFETY (every read below): indices come from the tree itself, which the contract of
// `RawTree::new` makes complete and in bounds.
impl TreeView for RawTree {
    #[inline(always)]
    fn root_half(&self) -> f32 {
        self.root_half
    }
    #[inline(always)]
    fn body_dipole(&self, i: i32) -> [f32; 3] {
        unsafe { *self.body_dipole.add(i as usize) }
    }
    #[inline(always)]
    fn cell_dipole(&self, c: i32) -> [f32; 3] {
        unsafe { *self.cell_dipole.add(c as usize) }
    }
    #[inline(always)]
    fn has_wide(&self) -> bool {
        !self.wide_pm.is_null()
    }
    #[inline(always)]
    fn wide_pm(&self, r: u32) -> Body {
        unsafe { *self.wide_pm.add(r as usize) }
    }
    #[inline(always)]
    fn wide_pm4(&self, r: u32) -> [Body; 4] {
        let p = unsafe { self.wide_pm.add(r as usize) };
        core::array::from_fn(|i| unsafe { *p.add(i) })
    }
    #[inline(always)]
    fn wide_dipole4(&self, r: u32) -> [[f32; 3]; 4] {
        let p = unsafe { self.wide_dipole.add(r as usize) };
        core::array::from_fn(|i| {
            let d = unsafe { *p.add(i) };
            [d.x, d.y, d.z]
        })
    }
    #[inline(always)]
    fn wide_meta(&self, r: u32) -> WideMeta {
        unsafe { *self.wide_meta.add(r as usize) }
    }
    #[inline(always)]
    fn wide_dipole(&self, r: u32) -> [f32; 3] {
        let d = unsafe { *self.wide_dipole.add(r as usize) };
        [d.x, d.y, d.z]
    }
}

// SAFETY (every read below): as above.
impl Octree for RawTree {
    #[inline(always)]
    fn n(&self) -> i32 {
        self.n
    }
    #[inline(always)]
    fn root(&self) -> i32 {
        self.cells - 1
    }
    #[inline(always)]
    fn child(&self, cell: i32, octant: u32) -> i32 {
        unsafe { *self.child.add(DENSE.slot(cell, octant)) }
    }
    #[inline(always)]
    fn next(&self, body: i32) -> i32 {
        unsafe { *self.next.add(body as usize) }
    }
    #[inline(always)]
    fn body(&self, i: i32) -> Body {
        unsafe { *self.bodies.add(i as usize) }
    }
    #[inline(always)]
    fn cell(&self, c: i32) -> Body {
        unsafe { *self.cell_pm.add(c as usize) }
    }
}

/// What source `i` (cell `i` when `cell`, else body `i`) brings to [`term`] besides its summary:
/// its area-weighted normal for the winding number, zero for every other kernel.
#[inline(always)]
pub fn dipole_of<V: TreeView>(v: &V, k: KernelSpec, cell: bool, i: i32) -> [f32; 3] {
    if k.kind != KIND_WINDING {
        [0.0; 3]
    } else if cell {
        v.cell_dipole(i)
    } else {
        v.body_dipole(i)
    }
}

/// The term of body `i` and its weight.
#[inline(always)]
fn body_term<V: TreeView>(v: &V, k: KernelSpec, q: [f32; 3], i: i32) -> (f32, f32) {
    let b = v.body(i);
    (term(k, q, &b, dipole_of(v, k, false, i)), b.m)
}

/// The Barnes–Hut term of cell `c` (its summary as one source) and its summary.
#[inline(always)]
fn cell_term<V: TreeView>(v: &V, k: KernelSpec, q: [f32; 3], c: i32) -> (f32, Body) {
    let s = v.cell(c);
    (term(k, q, &s, dipole_of(v, k, true, c)), s)
}

/// The summed terms and weights of the bodies in the bucket chain that starts at `b`.
#[inline(always)]
fn chain_terms<V: TreeView>(v: &V, k: KernelSpec, q: [f32; 3], mut b: i32) -> (f32, f32) {
    let (mut f, mut w) = (0.0, 0.0);
    while b >= 0 {
        let (fb, wb) = body_term(v, k, q, b);
        f += fb;
        w += wb;
        b = v.next(b);
    }
    (f, w)
}

/// Width of a cell at `depth` (≤ 126) below a root of half-width `root_half`: `root_half ·
/// 2^(1 − depth)`, an exact power-of-two scaling (no integer-to-float conversion, no division).
#[inline(always)]
pub fn width_at(root_half: f32, depth: u32) -> f32 {
    root_half * f32::from_bits((128 - depth.min(126)) << 23)
}

/// √3: a cube's diagonal over its width.
const SQRT_3: f32 = 1.732_050_8;

/// The "size" `|B|` of a cell at `depth` in the far-field ratio: the length of its box's diagonal,
/// `√3 · width`, as in the authors' code (`Tree3DNode::diameter_ = bounds.diagonal().norm()`).
#[inline(always)]
pub fn diameter_at(root_half: f32, depth: u32) -> f32 {
    SQRT_3 * width_at(root_half, depth)
}

/// The far-field ratio `β̃ = |q − p| / |B|` of a cell whose weighted centre (centre of mass) is `p`
/// and whose box diagonal is `diameter` ([`diameter_at`]): the paper's `‖q − p̃_{i,k}‖ / |B_{i,k}|`
/// with the authors' definitions (distance to the centre of mass, size = box diagonal). A cell is
/// far (used whole by Barnes–Hut) when `β̃ ≥ β`; with this definition our `β` is the authors' `β`
/// (an older form divided by the width, so its `β` was theirs times √3). On the device the square
/// root and the reciprocal are single approximate instructions (relative error ≲ 2^-22).
#[inline(always)]
pub fn far_ratio(q: [f32; 3], p: [f32; 3], diameter: f32) -> f32 {
    math::sqrt_approx(crate::bh::dist2(q, p)) * math::rcp(diameter)
}

/// Whether a cell of centre `p` and box diagonal `diameter` is far from `q` for ratio `beta`:
/// `β̃ ≥ β`, tested squared (no square root, no division).
#[inline(always)]
pub fn is_far(q: [f32; 3], p: [f32; 3], diameter: f32, beta: f32) -> bool {
    let r = beta * diameter;
    crate::bh::dist2(q, p) >= r * r
}

/// Whether a cell of centre `p` and box diagonal `diameter` is far, for ratio `beta`, from every
/// point of the box with centre `bc` and half-extents `bh`: far from the box's nearest point
/// ([`crate::bh::box_dist2`]), which implies [`is_far`] for every query in the box. The group
/// traversal's test (`sbh_bh_group_kernel`); like the authors' warp vote it uses a cell whole only
/// when it is far for the whole warp, so it is at least as accurate as [`bh_estimate`].
#[inline(always)]
pub fn is_far_from_box(bc: [f32; 3], bh: [f32; 3], p: [f32; 3], diameter: f32, beta: f32) -> bool {
    let r = beta * diameter;
    crate::bh::box_dist2(p, bc, bh) >= r * r
}

/// The roulette's continuation probability into a child whose far-field ratio is `beta_child`,
/// after a path whose largest ratio so far is `beta_max`: `min(1, max(1, β̂) / β̃_c)`. Near field
/// (ratios below 1) always continues; far field continues with about the ratio of successive
/// widths (1/2 for an octree). The quotient is a product with [`math::rcp`] (one `MUFU.RCP` on the
/// device, no division subroutine); the path weights divide by the same `pc` through `rcp` too.
#[inline(always)]
pub fn continue_probability(beta_max: f32, beta_child: f32) -> f32 {
    let p = beta_max.max(1.0) * math::rcp(beta_child);
    // β̃_c = 0 (query on the centre) gives +inf: continue. NaN cannot arise from valid input.
    if p >= 1.0 { 1.0 } else { p }
}

/// The 30-bit Morton code (10 bits per axis, x lowest) of `q` in the box of corner `lo` and
/// `scale = 1024 / extent`: the key by which queries are ordered so that a warp's 32 queries are
/// close together (their traversals then share cells and paths).
#[inline(always)]
pub fn morton_key(q: [f32; 3], lo: [f32; 3], scale: f32) -> u32 {
    let spread = |c: f32, l: f32| {
        // Clamped cell index in 0..1024, its bits spread to every third position.
        let v = ((c - l) * scale).clamp(0.0, 1023.0) as u32;
        let mut x = v & 0x3ff;
        x = (x | (x << 16)) & 0x0300_00ff;
        x = (x | (x << 8)) & 0x0300_f00f;
        x = (x | (x << 4)) & 0x030c_30c3;
        (x | (x << 2)) & 0x0924_9249
    };
    spread(q[0], lo[0]) | spread(q[1], lo[1]) << 1 | spread(q[2], lo[2]) << 2
}

/// An idle lane in a grouped kernel's position list (`order`): the lane stands on its warp's first
/// query and writes nothing.
pub const NO_QUERY: u32 = u32::MAX;

/// Threads per block of the query kernels.
pub const QUERY_BLOCK: u32 = 128;

/// Queries per thread of the brute-force kernel (each source loaded from shared memory serves
/// them all).
pub const BRUTE_QUERIES: u32 = 4;

/// Query groups of `sbh_brute_force` (`QUERY_BLOCK · BRUTE_QUERIES` queries each) for `nq`.
pub fn brute_force_groups(nq: u32) -> u32 {
    nq.div_ceil(QUERY_BLOCK * BRUTE_QUERIES).max(1)
}

/// Source chunks for `sbh_brute_force`: `groups` query groups times `splits` chunks are its work
/// units, one block each, and `slots` blocks are resident at once (SMs × blocks per SM). Units of
/// equal cost finish in `⌈units / slots⌉` waves, so 1954 units on 1320 slots (10⁶ queries, 48
/// registers, 132 SMs) would take two full waves for 1.48 waves of work; this picks the fewest
/// splits (at most 8, and no more than the source tiles, `ceil(n / QUERY_BLOCK)`) whose waves are
/// at least 95% full, else the fullest.
pub fn brute_force_splits(groups: u32, slots: u32, n: u32) -> u32 {
    let max = n.div_ceil(QUERY_BLOCK).clamp(1, 8);
    let slots = slots.max(1) as u64;
    // (work, capacity) of `s` splits: units and the blocks of their whole waves.
    let fill = |s: u32| {
        let units = groups.max(1) as u64 * s as u64;
        (units, units.div_ceil(slots) * slots)
    };
    let mut best = 1;
    for s in 1..=max {
        let (w, c) = fill(s);
        if 100 * w >= 95 * c {
            return s;
        }
        let (bw, bc) = fill(best);
        if w * bc > bw * c {
            best = s;
        }
    }
    best
}

/// Parameters of one stochastic estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SbhParams {
    pub kernel: KernelSpec,
    /// Paths per stratum, `S ≥ 1`.
    pub samples: u32,
    pub seed: u64,
    /// Octree levels per level of the estimator's tree, 1 or 2: with 2, a node's children are
    /// its grandchildren (and its body children), which makes the octree the paper's 64-ary tree
    /// (4 splits per axis). Any other value is treated as 2.
    pub levels: u32,
    /// Paths per stratum by the stratum's distance ([`stratum_paths`]): `2S` in near strata, `S`
    /// kept with probability [`FAR_KEEP`] in far ones (ours); `false`: `S` in every stratum (the
    /// paper's).
    pub allocate: bool,
}

/// Octree levels per estimator level of the paper's tree (64 children: d = 4 splits per axis).
pub const WIDE_LEVELS: u32 = 2;

impl SbhParams {
    /// `samples` paths per stratum on the paper's 64-ary tree ([`WIDE_LEVELS`]), paths
    /// allocated by stratum distance ([`stratum_paths`]): the defaults.
    pub fn new(kernel: KernelSpec, samples: u32, seed: u64) -> Self {
        SbhParams {
            kernel,
            samples,
            seed,
            levels: WIDE_LEVELS,
            allocate: true,
        }
    }
}

/// Index of a query's random stream: the query itself, or with `coherent` its warp (32
/// consecutive queries share every draw).
#[inline(always)]
pub fn stream_of(query: u32, coherent: bool) -> u64 {
    if coherent {
        (query / crate::WARP_SIZE) as u64
    } else {
        query as u64
    }
}

/// The path's uniform draw at octree depth `depth` for `purpose` (0: the child, 1: the roulette).
#[inline(always)]
fn path_draw(p: &SbhParams, key: u64, stratum: u32, sample: u32, depth: u32, purpose: u32) -> f32 {
    // A near stratum draws for up to 3S samples.
    rng::uniform_f32(
        key,
        draw_index(stratum, sample, 3 * p.samples, depth, purpose),
    )
}

/// The roulette at a path node of far-field ratio `beta` after the running maximum `beta_max`:
/// evaluate the node's correction with probability `pc = min(1, max(1, β̂) / β̃)`. `None` when the
/// path ends here, else the factor `1 / pc` (1 without a draw) for the inverse probability.
#[inline(always)]
fn roulette(
    p: &SbhParams,
    key: u64,
    stratum: u32,
    sample: u32,
    depth: u32,
    beta_max: f32,
    beta: f32,
) -> Option<f32> {
    let pc = continue_probability(beta_max, beta);
    if pc < 1.0 {
        if path_draw(p, key, stratum, sample, depth, 1) >= pc {
            None
        } else {
            Some(math::rcp(pc))
        }
    } else {
        Some(1.0)
    }
}

/// Counter of a draw within a query's stream: stratum, sample, octree depth and purpose (0: the
/// child of the path, 1: the roulette) never collide.
#[inline(always)]
fn draw_index(stratum: u32, sample: u32, samples: u32, depth: u32, purpose: u32) -> u64 {
    (((stratum as u64 * samples as u64 + sample as u64) * 64 + depth as u64) << 1) | purpose as u64
}

/// The terms and weights of the slots of `cell`: a child cell by its summary, a bucket chain by
/// its bodies. Returns (Σ terms, Σ weights).
#[inline(always)]
fn slot_terms<V: TreeView>(v: &V, k: KernelSpec, q: [f32; 3], cell: i32) -> (f32, f32) {
    let n = v.n();
    let (mut f, mut w) = (0.0, 0.0);
    for o in 0..8 {
        let ch = v.child(cell, o);
        let (fc, wc) = if ch >= n {
            let (fc, s) = cell_term(v, k, q, ch - n);
            (fc, s.m)
        } else {
            chain_terms(v, k, q, ch)
        };
        f += fc;
        w += wc;
    }
    (f, w)
}

/// Σ of the terms of the estimator-level children of `cell`: its slots when `wide` is false, else
/// the slots of its child cells and its own bucket chains.
#[inline(always)]
fn children_terms<V: TreeView>(v: &V, k: KernelSpec, q: [f32; 3], cell: i32, wide: bool) -> f32 {
    if !wide {
        return slot_terms(v, k, q, cell).0;
    }
    let n = v.n();
    let mut f = 0.0;
    for o in 0..8 {
        let ch = v.child(cell, o);
        f += if ch >= n {
            slot_terms(v, k, q, ch - n).0
        } else {
            chain_terms(v, k, q, ch).0
        };
    }
    f
}

/// The path-sampling weight of a child slot's value `ch`: a cell's weight, a bucket chain's summed
/// weight (in chain order), 0 for an empty slot. The wide layout stores exactly these floats.
#[inline(always)]
pub fn slot_weight<V: TreeView>(v: &V, ch: i32) -> f32 {
    if ch >= v.n() {
        v.cell(ch - v.n()).m
    } else {
        let mut b = ch;
        let mut w = 0.0;
        while b >= 0 {
            w += v.body(b).m;
            b = v.next(b);
        }
        w
    }
}

/// One child slot of `cell` drawn with probability proportional to its weight, from the uniform
/// `u`: (slot value, the probability's inverse). The last non-empty slot catches a draw that
/// rounding leaves past the running sum.
#[inline(always)]
fn pick_slot<V: TreeView>(v: &V, cell: i32, u: f32) -> (i32, f32) {
    let mut slots = [0i32; 8];
    let mut weights = [0.0f32; 8];
    for o in 0..8 {
        let ch = v.child(cell, o);
        slots[o as usize] = ch;
        weights[o as usize] = slot_weight(v, ch);
    }
    let (o, inv) = pick_weighted(&weights, u);
    (if o < 0 { -1 } else { slots[o as usize] }, inv)
}

/// The index of one of 8 weights drawn with probability proportional to its weight, from the
/// uniform `u`: (index, the probability's inverse), or (-1, total) when every weight is 0. The
/// last positive weight catches a draw that rounding leaves past the running sum. The one rule of
/// both tree layouts: zeros anywhere in `w` do not change the pick (the wide layout leaves empty
/// slots out).
#[inline(always)]
fn pick_weighted(w: &[f32; 8], u: f32) -> (i32, f32) {
    let mut total = 0.0f32;
    for &x in w {
        total += x;
    }
    let u = u * total;
    let (mut pick, mut pick_w, mut acc, mut found) = (-1i32, 1.0f32, 0.0f32, false);
    for (o, &x) in w.iter().enumerate() {
        if x > 0.0 && !found {
            acc += x;
            pick = o as i32;
            pick_w = x;
            found = u < acc;
        }
    }
    (pick, total * math::rcp(pick_w))
}

/// One telescoping path from the stratum cell `c` at octree depth `depth`, returning
/// `Σ Δ_T / (π_T P_T)` over the cells it reaches. The running maximum of the far-field ratios
/// starts at the stratum's own ratio, so the stratum's correction is always evaluated (the
/// authors' `cur_beta = fmax(1, subdomain->farFieldRatio(q))` before their loop).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn path<V: TreeView>(
    v: &V,
    p: &SbhParams,
    q: [f32; 3],
    key: u64,
    stratum: u32,
    sample: u32,
    c: i32,
    mut depth: u32,
) -> f32 {
    let n = v.n();
    let k = p.kernel;
    let wide = p.levels != 1;
    let step = if wide { 2 } else { 1 };
    let root_half = v.root_half();
    let mut est = 0.0f32;
    let mut node = c;
    // 1 / (π_T P_T): inverse probability of having reached and kept evaluating `node`.
    let mut inv_prob = 1.0f32;
    let (mut f_node, mut s_node) = cell_term(v, k, q, node);
    let mut beta = far_ratio(q, s_node.pos(), diameter_at(root_half, depth));
    let mut beta_max = beta;
    // A path is at most MAX_DEPTH cells deep; the bound keeps the loop finite on any input.
    while (depth as usize) < MAX_DEPTH {
        let Some(keep) = roulette(p, key, stratum, sample, depth, beta_max, beta) else {
            break;
        };
        inv_prob *= keep;
        beta_max = beta_max.max(beta);
        // Contribution exchange: the children's terms minus the node's own.
        let children = children_terms(v, k, q, node, wide);
        est = math::fma(children - f_node, inv_prob, est);
        // Path: a child (then, wide, a grandchild) with probability proportional to weight.
        let mut next = node;
        let mut leaf = false;
        for l in 0..step {
            let u = path_draw(p, key, stratum, sample, depth + l, 0);
            let (pick, inv) = pick_slot(v, next, u);
            inv_prob *= inv;
            if pick < n {
                leaf = true; // a body or bucket: its terms are exact, the path ends
                break;
            }
            next = pick - n;
        }
        if leaf {
            break;
        }
        node = next;
        (f_node, s_node) = cell_term(v, k, q, node);
        depth += step;
        beta = far_ratio(q, s_node.pos(), diameter_at(root_half, depth));
    }
    est
}

/// Strata whose far-field ratio at the query is below this get `3S` paths ([`stratum_paths`]).
pub const NEAREST_STRATUM: f32 = 0.5;
/// Strata whose far-field ratio at the query is below this get `2S` paths ([`stratum_paths`]).
pub const NEAR_STRATUM: f32 = 0.7;
/// Strata whose far-field ratio at the query is at least this keep each path with probability
/// [`FAR_KEEP`] ([`stratum_paths`]).
pub const FAR_STRATUM: f32 = 1.2;
/// The probability with which a far stratum keeps a path.
pub const FAR_KEEP: f32 = 0.35;

/// The paths from one stratum (far-field ratio `beta` at the query), averaged: `path(s)` for
/// samples `s = 0..S`, or with `p.allocate` — a Neyman-style allocation, beyond the paper — `3S`
/// paths when the stratum is nearest (`beta < NEAREST_STRATUM`), `2S` when near (`beta <
/// NEAR_STRATUM`: the query in or at the stratum, where the paths' variance is), and when it is
/// far (`beta ≥ FAR_STRATUM`) each of its `S` paths kept with probability [`FAR_KEEP`] (the draw
/// at depth 0, which no path uses) and weighted by its inverse. Unbiased either way. On the CPU at
/// M = 2^20 (100³-grid queries, S = 1) it lowered the median error 16% and the work 27% against
/// `S` everywhere.
#[inline(always)]
pub fn stratum_paths(
    p: &SbhParams,
    key: u64,
    stratum: u32,
    beta: f32,
    mut path: impl FnMut(u32) -> f32,
) -> f32 {
    let near = p.allocate && beta < NEAR_STRATUM;
    let keep = if p.allocate && beta >= FAR_STRATUM {
        FAR_KEEP
    } else {
        1.0
    };
    let n = if p.allocate && beta < NEAREST_STRATUM {
        3 * p.samples
    } else if near {
        2 * p.samples
    } else {
        p.samples
    };
    let mut sum = 0.0f32;
    for s in 0..n {
        if keep >= 1.0 || path_draw(p, key, stratum, s, 0, 1) < keep {
            sum += path(s);
        }
    }
    sum * math::rcp(keep * n as f32)
}

/// The paths from stratum cell `c` at `depth` ([`stratum_paths`]), plus the cell's own term.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn stratum<V: TreeView>(
    v: &V,
    p: &SbhParams,
    q: [f32; 3],
    key: u64,
    id: u32,
    c: i32,
    depth: u32,
) -> f32 {
    let (own, s) = cell_term(v, p.kernel, q, c);
    let beta = far_ratio(q, s.pos(), diameter_at(v.root_half(), depth));
    stratum_paths(p, key, id, beta, |smp| {
        path(v, p, q, key, id, smp, c, depth)
    }) + own
}

/// The stochastic Barnes–Hut estimate of `Σ_i w_i f(p_i, q)`: the root's estimator-level
/// children (its 8 children, or with `levels = 2` its 64 grandchildren) are the strata, summed
/// exactly, and `S = p.samples` telescoping paths from each stratum cell are averaged (module
/// docs). `stream` selects the random stream ([`stream_of`]). Unbiased for `S ≥ 1`.
#[inline(always)]
pub fn sbh_estimate<V: TreeView>(v: &V, p: &SbhParams, q: [f32; 3], stream: u64) -> f32 {
    if p.levels != 1 && v.has_wide() {
        return sbh_estimate_on_wide(v, p, q, stream);
    }
    let key = rng::draw_u64(p.seed, stream);
    let n = v.n();
    let root = v.root();
    let mut total = 0.0f32;
    for o in 0..8 {
        let ch = v.child(root, o);
        if ch < n {
            total += chain_terms(v, p.kernel, q, ch).0;
        } else if p.levels == 1 {
            total += stratum(v, p, q, key, o, ch - n, 1);
        } else {
            for o2 in 0..8 {
                let gc = v.child(ch - n, o2);
                if gc < n {
                    total += chain_terms(v, p.kernel, q, gc).0;
                } else {
                    total += stratum(v, p, q, key, 8 * o + o2, gc - n, 2);
                }
            }
        }
    }
    total
}

/// [`sbh_estimate`] on the wide-node layout, which `v` must hold (`levels = 2`): what the
/// `sbh_estimate_wide_kernel` entry runs, without the octree walks' registers.
#[inline(always)]
pub fn sbh_estimate_on_wide<V: TreeView>(v: &V, p: &SbhParams, q: [f32; 3], stream: u64) -> f32 {
    wide::sbh_estimate_wide::<V, true>(v, p, q, rng::draw_u64(p.seed, stream))
}

/// [`sbh_estimate_on_wide`] without its early stop (`next_step_stops`): every path step picks its
/// child and grandchild even when the next roulette is certain to end the path. For tests: the
/// two must agree bit for bit.
#[doc(hidden)]
#[inline(always)]
pub fn sbh_estimate_on_wide_exhaustive<V: TreeView>(
    v: &V,
    p: &SbhParams,
    q: [f32; 3],
    stream: u64,
) -> f32 {
    wide::sbh_estimate_wide::<V, false>(v, p, q, rng::draw_u64(p.seed, stream))
}

/// Capacity of the deterministic traversal's stack: a popped cell pushes at most 8 children, so
/// the stack holds at most 7 per level plus one cell's 8.
pub const BH_STACK: usize = 7 * MAX_DEPTH + 8;

/// Deterministic Barnes–Hut at query `q`: a cell whose far-field ratio ([`far_ratio`]: distance
/// to its centre of mass over its box diagonal) is at least `beta` is used whole, others are
/// opened; bodies are summed exactly. The root is tested too. `beta = ∞` (or any value above every
/// ratio) gives the exact sum. This is the authors' `evaluateBarnesHut` (`useFarField(q, β)`:
/// `farFieldRatio(q) >= β`, leaves always exact), so `β = 2` here is their table's `β = 2`.
#[inline(always)]
pub fn bh_estimate<V: TreeView>(v: &V, k: KernelSpec, beta: f32, q: [f32; 3]) -> f32 {
    let n = v.n();
    let root_half = v.root_half();
    let (f_root, s_root) = cell_term(v, k, q, v.root());
    if is_far(q, s_root.pos(), diameter_at(root_half, 0), beta) {
        return f_root;
    }
    // Entries: cell * 32 + depth (cells < 2^26 and depth ≤ 30, so it fits an i32).
    let mut stack = [0i32; BH_STACK];
    stack[0] = v.root() * 32;
    let mut top = 1usize;
    let mut total = 0.0f32;
    while top > 0 {
        top -= 1;
        let e = stack[top];
        let (cell, depth) = (e >> 5, (e & 31) as u32);
        for o in 0..8 {
            let ch = v.child(cell, o);
            if ch >= n {
                let (f, s) = cell_term(v, k, q, ch - n);
                let far = is_far(q, s.pos(), diameter_at(root_half, depth + 1), beta);
                if far || top >= BH_STACK {
                    total += f;
                } else {
                    stack[top] = (ch - n) * 32 + depth as i32 + 1;
                    top += 1;
                }
            } else {
                total += chain_terms(v, k, q, ch).0;
            }
        }
    }
    total
}

// ---------------------------------------------------------------------------------------------
// Barnes–Hut at query points as interactions of the generic walk (`crate::walk`)
// ---------------------------------------------------------------------------------------------

/// One query and its running sum.
#[derive(Clone, Copy, Debug)]
pub struct Query {
    pub q: [f32; 3],
    pub total: f32,
}

/// The terms of a radial kernel `KIND` (not the winding number) of listed monopoles.
#[derive(Clone, Copy, Debug)]
pub struct Terms<const KIND: u32> {
    pub param: f32,
}

impl<const KIND: u32> Interaction for Terms<KIND> {
    type Extra = ();
    type Target = Query;
    #[inline(always)]
    fn cell_extra(&self, _: i32) {}
    #[inline(always)]
    fn body_extra(&self, _: i32) {}
    #[inline(always)]
    fn add(&self, t: &mut Query, s: &Body, _: &()) {
        let k = KernelSpec {
            kind: KIND,
            param: self.param,
        };
        t.total = term_add(k, t.q, s, [0.0; 3], t.total);
    }
}

/// The winding number's terms: each listed source with its area-weighted normal.
#[derive(Clone, Copy, Debug)]
pub struct WindingTerms<'v, V> {
    pub tree: &'v V,
}

impl<V: TreeView> Interaction for WindingTerms<'_, V> {
    type Extra = [f32; 4];
    type Target = Query;
    #[inline(always)]
    fn cell_extra(&self, c: i32) -> [f32; 4] {
        let d = self.tree.cell_dipole(c);
        [d[0], d[1], d[2], 0.0]
    }
    #[inline(always)]
    fn body_extra(&self, b: i32) -> [f32; 4] {
        let d = self.tree.body_dipole(b);
        [d[0], d[1], d[2], 0.0]
    }
    #[inline(always)]
    fn add(&self, t: &mut Query, s: &Body, d: &[f32; 4]) {
        let k = KernelSpec {
            kind: KIND_WINDING,
            param: 0.0,
        };
        t.total = term_add(k, t.q, s, [d[0], d[1], d[2]], t.total);
    }
}

/// A radial kernel's terms with listed cells' quadrupole moments ([`term_quad_add`]), each
/// prepared once per listed cell as a [`QuadTerm`]; bodies carry none.
#[derive(Clone, Copy, Debug)]
pub struct QuadTerms<Q, const KIND: u32> {
    pub param: f32,
    /// Per cell, as `crate::bh`'s summary computes them.
    pub quads: Q,
}

impl<Q: CellData<Quad>, const KIND: u32> Interaction for QuadTerms<Q, KIND> {
    type Extra = QuadTerm;
    type Target = Query;
    #[inline(always)]
    fn cell_extra(&self, c: i32) -> QuadTerm {
        QuadTerm::of(&self.quads.get(c))
    }
    #[inline(always)]
    fn body_extra(&self, _: i32) -> QuadTerm {
        QuadTerm::default()
    }
    #[inline(always)]
    fn add(&self, t: &mut Query, s: &Body, m: &QuadTerm) {
        let k = KernelSpec {
            kind: KIND,
            param: self.param,
        };
        t.total = term_quad_add(k, t.q, s, m, t.total);
    }
}

impl ListExtra for QuadTerm {
    const V4: u32 = 2;
    #[inline(always)]
    unsafe fn load(addr: u32) -> Self {
        use crate::gpu::shared::ld_shared_v4;
        // SAFETY: per the contract.
        let ([dx, dy, dz, o3xy], [o3xz, o3yz, t3, _]) =
            unsafe { (ld_shared_v4(addr), ld_shared_v4(addr + 16)) };
        #[rustfmt::skip]
        let m = QuadTerm { d6: [dx, dy, dz], o3xy, o3xz, o3yz, t3, _pad: 0.0 };
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(x: f32, y: f32, z: f32, m: f32) -> Body {
        Body { x, y, z, m }
    }

    #[test]
    fn quadrupole_term_cuts_the_far_field_error_by_the_size_ratio() {
        // Twenty sources within 0.1 of their weighted centre, seen from 0.8 to 3: the monopole
        // errs by about (0.1/r)², for every radial kernel.
        // Pairs mirrored about the origin: odd moments vanish, so the quadrupole's error is of
        // fourth order, (0.1/r)² of the monopole's: a sharp check of the second-order formula.
        let pts: std::vec::Vec<Body> = (0..20u64)
            .map(|i| {
                let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
                let u = |k| sign * (rng::uniform_f32(7, 3 * (i / 2) + k) * 0.2 - 0.1);
                src(u(0), u(1), u(2), 0.5 + rng::uniform_f32(8, i / 2))
            })
            .collect();
        let m: f32 = pts.iter().map(|p| p.m).sum();
        let c: [f32; 3] =
            core::array::from_fn(|k| pts.iter().map(|p| p.pos()[k] * p.m).sum::<f32>() / m);
        let quad = pts.iter().fold(Quad::default(), |q, p| {
            q.plus(&Quad::point(p.m, [p.x - c[0], p.y - c[1], p.z - c[2]]))
        });
        let cell = src(c[0], c[1], c[2], m);
        for (kind, param) in [
            (KIND_SHIFTED, 0.1),
            (KIND_PLUMMER, 0.05),
            (KIND_PLUMMER, 0.5),
            (KIND_SMOOTH, 2.0),
        ] {
            let k = KernelSpec { kind, param };
            assert!(has_quadrupole(k));
            for (i, r) in [0.8f32, 1.5, 3.0].into_iter().enumerate() {
                let dir = [[0.6, 0.0, 0.8], [0.0, -1.0, 0.0], [0.48, 0.6, -0.64]][i];
                let q = dir.map(|x| x * r);
                let exact: f64 = pts
                    .iter()
                    .map(|p| {
                        let to64 = |v: [f32; 3]| v.map(|x| x as f64);
                        term_f64(k, to64(q), to64(p.pos()), p.m as f64, [0.0; 3])
                    })
                    .sum();
                let mono = (term(k, q, &cell, [0.0; 3]) as f64 - exact).abs();
                let quadr =
                    (term_quad_add(k, q, &cell, &QuadTerm::of(&quad), 0.0) as f64 - exact).abs();
                let scale = exact.abs();
                assert!(
                    quadr < 0.15 * mono && quadr < 1e-4 * scale,
                    "kind {kind} ε/δ/α {param} r {r}: monopole {mono:.3e} quadrupole {quadr:.3e} of {scale:.3e}"
                );
                // A body (zero moment) is the monopole term, up to rounding.
                let (t0, t1) = (
                    term_quad_add(k, q, &cell, &QuadTerm::default(), 0.0),
                    term(k, q, &cell, [0.0; 3]),
                );
                assert!((t0 - t1).abs() <= 4e-7 * t1.abs(), "{t0} {t1}");
            }
        }
        assert!(!has_quadrupole(KernelSpec {
            kind: KIND_WINDING,
            param: 0.0
        }));
    }

    #[test]
    fn kernels_match_their_float64_forms() {
        let q = [0.1, -0.2, 0.3];
        let s = src(0.7, 0.4, -0.5, 2.0);
        let a = [0.3, -0.4, 0.5];
        for k in [
            KernelSpec {
                kind: KIND_SHIFTED,
                param: 0.1,
            },
            KernelSpec {
                kind: KIND_PLUMMER,
                param: 0.05,
            },
            KernelSpec {
                kind: KIND_WINDING,
                param: 0.0,
            },
            KernelSpec {
                kind: KIND_SMOOTH,
                param: 3.0,
            },
        ] {
            let f = term(k, q, &s, a) as f64;
            let g = term_f64(
                k,
                q.map(|x| x as f64),
                s.pos().map(|x| x as f64),
                s.m as f64,
                a.map(|x| x as f64),
            );
            assert!((f - g).abs() < 1e-6 * g.abs(), "kind {} {f} {g}", k.kind);
        }
        // The paper's form at r = 1, δ = 0.1: -1 / 1.1.
        let k = KernelSpec {
            kind: KIND_SHIFTED,
            param: 0.1,
        };
        assert!((term(k, [0.0; 3], &src(1.0, 0.0, 0.0, 1.0), [0.0; 3]) + 1.0 / 1.1).abs() < 1e-7);
    }

    #[test]
    fn winding_number_of_a_closed_sphere_is_one_inside() {
        // A small sphere sampled at its poles and equator: at the centre each sample's solid angle
        // is a_i / (4π R²) exactly, so the total is Σ a_i / 4πR² = 1.
        let r = 0.5f32;
        let area = 4.0 * core::f32::consts::PI * r * r / 6.0;
        let k = KernelSpec {
            kind: KIND_WINDING,
            param: 0.0,
        };
        let dirs = [
            [1.0, 0.0, 0.0],
            [-1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, -1.0, 0.0],
            [0.0, 0.0, 1.0],
            [0.0, 0.0, -1.0],
        ];
        let w: f32 = dirs
            .iter()
            .map(|d: &[f32; 3]| {
                let s = src(r * d[0], r * d[1], r * d[2], area);
                term(k, [0.0; 3], &s, d.map(|x| x * area))
            })
            .sum();
        assert!((w - 1.0).abs() < 1e-6, "{w}");
    }

    #[test]
    fn smooth_distance_of_one_source_is_its_distance() {
        let k = KernelSpec {
            kind: KIND_SMOOTH,
            param: 20.0,
        };
        let sum = term(k, [0.0; 3], &src(0.3, 0.4, 0.0, 1.0), [0.0; 3]);
        assert!((smooth_distance(sum, 20.0) - 0.5).abs() < 1e-5);
        assert!(smooth_distance(-1.0, 1.0).is_finite());
    }

    #[test]
    fn far_field_ratio_divides_by_the_box_diagonal() {
        // The authors' |B|: the diagonal of the cell's box, √3 × its width.
        let d = diameter_at(0.5, 1);
        assert!((d - 3f32.sqrt() * 0.5).abs() < 1e-7);
        let r = far_ratio([0.0; 3], [3.0, 4.0, 0.0], diameter_at(0.5, 0));
        assert!((r - 5.0 / 3f32.sqrt()).abs() < 1e-6, "{r}");
        // β̃ ≥ β, tested squared: on either side of β = 2 for a root of width 1.
        let at = 2.0 * 3f32.sqrt();
        assert!(is_far(
            [0.0; 3],
            [at * 1.001, 0.0, 0.0],
            diameter_at(0.5, 0),
            2.0
        ));
        assert!(!is_far(
            [0.0; 3],
            [at * 0.999, 0.0, 0.0],
            diameter_at(0.5, 0),
            2.0
        ));
        assert!(!is_far([0.0; 3], [1e15, 0.0, 0.0], 1.0, f32::INFINITY));
    }

    #[test]
    fn brute_force_splits_fill_the_waves() {
        // 10⁶ queries (1954 groups) on 1320 resident blocks: two splits fill 2.96 of 3 waves.
        assert_eq!(brute_force_groups(1_000_000), 1954);
        assert_eq!(brute_force_splits(1954, 1320, 1 << 20), 2);
        // One wave, nearly full: no split.
        assert_eq!(brute_force_splits(2000, 2112, 1 << 20), 1);
        // Few sources: no more chunks than tiles.
        assert_eq!(brute_force_splits(1954, 1320, 100), 1);
        // Many waves are full anyway.
        assert_eq!(brute_force_splits(100_000, 1320, 1 << 20), 1);
        assert!(brute_force_splits(1, 1320, 1 << 20) <= 8);
    }

    #[test]
    fn morton_key_interleaves_the_axes() {
        let s = 1024.0;
        assert_eq!(morton_key([0.0; 3], [0.0; 3], s), 0);
        assert_eq!(morton_key([1.5 / 1024.0, 0.0, 0.0], [0.0; 3], s), 1);
        assert_eq!(morton_key([0.0, 1.5 / 1024.0, 0.0], [0.0; 3], s), 2);
        assert_eq!(morton_key([0.0, 0.0, 1.5 / 1024.0], [0.0; 3], s), 4);
        assert_eq!(morton_key([2.5 / 1024.0, 0.0, 0.0], [0.0; 3], s), 8);
        assert_eq!(morton_key([1.0; 3], [0.0; 3], s), (1 << 30) - 1);
        assert_eq!(morton_key([-5.0; 3], [0.0; 3], s), 0); // clamped
    }

    #[test]
    fn roulette_probability() {
        assert_eq!(continue_probability(0.5, 0.8), 1.0); // near field
        assert_eq!(continue_probability(4.0, 8.0), 0.5); // far field, one level down
        assert_eq!(continue_probability(4.0, 0.0), 1.0);
        assert!(is_singular(KernelSpec {
            kind: KIND_SHIFTED,
            param: 0.0
        }));
        assert!(!is_singular(KernelSpec {
            kind: KIND_SHIFTED,
            param: 0.1
        }));
        assert!(is_singular(KernelSpec {
            kind: KIND_WINDING,
            param: 0.0
        }));
    }

    #[test]
    fn draw_indices_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        for st in 0..8 {
            for s in 0..3 {
                for d in 0..=MAX_DEPTH as u32 {
                    for p in 0..2 {
                        assert!(seen.insert(draw_index(st, s, 3, d, p)));
                    }
                }
            }
        }
    }
}
