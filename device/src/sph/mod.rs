//! SPH neighbour search through the Barnes–Hut octree (and a linked-cell baseline), SPH density
//! and smoothing lengths iterated to a target neighbour number.
//!
//! Conventions (one copy, used by every kernel and CPU twin):
//! - `h` is the **support radius** of the smoothing kernel (Gadget-2's convention): `W(r, h) = 0`
//!   for `r ≥ h`, and particle `j` is a neighbour of `i` when `|r_ij| < R` with `R = h_i`
//!   (gather), `h_j` (scatter) or `max(h_i, h_j)` (symmetric): [`radius`], [`within`].
//! - The boundary is **strict**: a particle at exactly `R` is not a neighbour (it would add
//!   `W(h, h) = 0` to the density anyway). `h = 0` therefore gathers nothing, not even the particle
//!   itself; for `h > 0` every particle is its own neighbour (`r = 0`), coincident ones too.
//! - Distances are float32 `r² = dx² + dy² + dz²` ([`dist2`]); a cell is pruned only when the
//!   float32 gap between boxes, summed in the same order ([`gap2`]), already fails [`within`].
//!   Rounding is monotone, so the gap never exceeds any pair's `r²`: the tree, the cell list and
//!   the brute force find exactly the same sets.
//!
//! Stages on the existing octree (`crate::bh`: built, summarized, sorted into warp groups):
//! [`kernels::sph_cell_boxes`] adds each cell's box of its particles and largest `h`
//! ([`CellBox`], [`summarize_box`]); then one of three searches answers count, CSR fill or
//! density ([`MODE_COUNT`], …): the seed-style warp vote (`sph_vote`), the warp-group walk
//! (`sph_group`), or the linked cells (`sph_cell_*`).

pub mod hydro;
pub mod kernels;

use crate::bh::Body;
use crate::fem::Real;
use crate::math;

/// Gather criterion: `|r_ij| < h_i`.
pub const GATHER: u32 = 0;
/// Scatter criterion: `|r_ij| < h_j`.
pub const SCATTER: u32 = 1;
/// Symmetric criterion: `|r_ij| < max(h_i, h_j)`.
pub const SYMMETRIC: u32 = 2;

/// The search radius of a pair under criterion `crit` ([`GATHER`], [`SCATTER`], [`SYMMETRIC`]).
/// Monotone in both smoothing lengths, so a cell's largest `h` bounds all its particles' radii.
#[inline(always)]
pub fn radius(crit: u32, hi: f32, hj: f32) -> f32 {
    match crit {
        GATHER => hi,
        SCATTER => hj,
        _ => hi.max(hj),
    }
}

/// The one neighbour test: squared distance `r2` strictly inside `radius`. A radius whose
/// float32 square underflows to zero (below about 1e-22) reaches nothing, as `h = 0`.
#[inline(always)]
pub fn within(r2: f32, radius: f32) -> bool {
    r2 < radius * radius
}

/// Whether `j` (smoothing length `hj`) at squared distance `r2` is a neighbour of `i` (`hi`).
#[inline(always)]
pub fn is_neighbour(crit: u32, r2: f32, hi: f32, hj: f32) -> bool {
    within(r2, radius(crit, hi, hj))
}

/// `d0² + d1² + d2²`, fused from the last term up: [`dist2`] and [`gap2`] must round alike.
#[inline(always)]
fn sum_sq(d: [f32; 3]) -> f32 {
    // Monotone in each |d_k|, as the plain sum is: the gap bound needs only that.
    math::fma(d[0], d[0], math::fma(d[1], d[1], d[2] * d[2]))
}

/// Squared float32 distance between two points (`q − p`).
#[inline(always)]
pub fn dist2(p: [f32; 3], q: [f32; 3]) -> f32 {
    sum_sq([q[0] - p[0], q[1] - p[1], q[2] - p[2]])
}

/// Squared gap between boxes `[alo, ahi]` and `[blo, bhi]` (zero where they overlap): never more
/// than [`dist2`] of a point of one and a point of the other, in float32 too.
#[inline(always)]
pub fn gap2(alo: [f32; 3], ahi: [f32; 3], blo: [f32; 3], bhi: [f32; 3]) -> f32 {
    let g = |k: usize| (blo[k] - ahi[k]).max(alo[k] - bhi[k]).max(0.0);
    sum_sq([g(0), g(1), g(2)])
}

/// `d` as the separation to the nearest periodic image along an axis of length `l`, for `|d| < l`
/// (two positions inside the box): exact, no rounding beyond the one subtraction.
#[inline(always)]
pub fn min_image(d: f32, l: f32) -> f32 {
    if d > 0.5 * l {
        d - l
    } else if d < -0.5 * l {
        d + l
    } else {
        d
    }
}

/// [`min_image`] of each component of `q − p` in the box of sides `l`.
#[inline(always)]
pub fn offset_periodic(p: [f32; 3], q: [f32; 3], l: [f32; 3]) -> [f32; 3] {
    [
        min_image(q[0] - p[0], l[0]),
        min_image(q[1] - p[1], l[1]),
        min_image(q[2] - p[2], l[2]),
    ]
}

/// [`dist2`] to the nearest periodic image.
#[inline(always)]
pub fn dist2_periodic(p: [f32; 3], q: [f32; 3], l: [f32; 3]) -> f32 {
    sum_sq(offset_periodic(p, q, l))
}

/// [`cell_reachable`] for one target at `p` in the periodic box of sides `l` (the target and the
/// cell's particles inside it): the gap to the box or to one of its two images along each axis,
/// whichever is nearer.
#[inline(always)]
pub fn cell_reachable_periodic(crit: u32, p: [f32; 3], th: f32, b: &CellBox, l: [f32; 3]) -> bool {
    let g = |k: usize| {
        let direct = (b.lo[k] - p[k]).max(p[k] - b.hi[k]).max(0.0);
        direct.min(p[k] + l[k] - b.hi[k]).min(b.lo[k] - p[k] + l[k])
    };
    within(sum_sq([g(0), g(1), g(2)]), radius(crit, th, b.hmax))
}

/// Whether a cell (`b`) may hold a neighbour of some target in the box `[tlo, thi]` whose
/// largest smoothing length is `th` (a single target: `tlo = thi = p`, `th = h_i`): the opening
/// test of every tree walk. Exact: false only when no pair can pass [`is_neighbour`].
#[inline(always)]
pub fn cell_reachable(crit: u32, tlo: [f32; 3], thi: [f32; 3], th: f32, b: &CellBox) -> bool {
    within(gap2(tlo, thi, b.lo, b.hi), radius(crit, th, b.hmax))
}

/// [`cell_reachable`] for one source particle at `q` with smoothing length `hj`.
#[inline(always)]
pub fn body_reachable(
    crit: u32,
    tlo: [f32; 3],
    thi: [f32; 3],
    th: f32,
    q: [f32; 3],
    hj: f32,
) -> bool {
    within(gap2(tlo, thi, q, q), radius(crit, th, hj))
}

/// A cell's bounding box of its particles and their largest `h`, padded to 32 bytes (two vector
/// loads on the device). An empty box has `lo = +inf`, `hi = -inf`.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CellBox {
    pub lo: [f32; 3],
    pub hmax: f32,
    pub hi: [f32; 3],
    pub _pad: f32,
}

impl Default for CellBox {
    fn default() -> Self {
        CellBox::EMPTY
    }
}

impl CellBox {
    pub const EMPTY: CellBox = CellBox {
        lo: [f32::INFINITY; 3],
        hmax: 0.0,
        hi: [f32::NEG_INFINITY; 3],
        _pad: 0.0,
    };

    /// The box grown by a particle at `p` with smoothing length `h`.
    #[inline(always)]
    pub fn with_point(mut self, p: [f32; 3], h: f32) -> Self {
        for (k, pk) in p.iter().enumerate() {
            self.lo[k] = self.lo[k].min(*pk);
            self.hi[k] = self.hi[k].max(*pk);
        }
        self.hmax = self.hmax.max(h);
        self
    }

    /// The union of two boxes.
    #[inline(always)]
    pub fn with_box(mut self, o: &CellBox) -> Self {
        for k in 0..3 {
            self.lo[k] = self.lo[k].min(o.lo[k]);
            self.hi[k] = self.hi[k].max(o.hi[k]);
        }
        self.hmax = self.hmax.max(o.hmax);
        self
    }
}

crate::shared_type!(CellBox, Grid, HState);

/// One cell's children as the box summary reads them (device pointers in the kernel, slices in
/// the CPU twin); slot values as in `crate::bh` (`EMPTY`, a body `0..n`, `n + cell`).
pub trait BoxChildren {
    fn slot(&self, octant: u32) -> i32;
    /// A child cell's finished box.
    fn cell(&self, cell: usize) -> CellBox;
    /// Body `b`'s position and smoothing length.
    fn body(&self, b: i32) -> ([f32; 3], f32);
    /// The next body of a bucket chain, or -1.
    fn next(&self, b: i32) -> i32;
}

/// A cell's [`CellBox`] from its children: the one copy of the summary.
#[inline(always)]
pub fn summarize_box(c: &impl BoxChildren, n: i32) -> CellBox {
    let mut b = CellBox::EMPTY;
    for o in 0..8 {
        let ch = c.slot(o);
        if ch >= n {
            b = b.with_box(&c.cell((ch - n) as usize));
        } else {
            let mut j = ch;
            while j >= 0 {
                let (p, h) = c.body(j);
                b = b.with_point(p, h);
                j = c.next(j);
            }
        }
    }
    b
}

// ---------------------------------------------------------------------------------------------
// smoothing kernels
// ---------------------------------------------------------------------------------------------

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

/// What a search does with each neighbour `j` of one target: count it, write it, or add its
/// density. `r2` is the pair's squared distance, `mj` its mass.
pub trait Sink {
    fn take(&mut self, j: u32, r2: f32, mj: f32);
    /// A candidate `j` and whether it is a neighbour (`inside`): [`Self::take`] for neighbours.
    /// The group search offers every candidate of its list, so that a sink may take it without
    /// a branch (a warp's lanes disagree on `inside`).
    #[inline(always)]
    fn offer(&mut self, j: u32, r2: f32, mj: f32, inside: bool) {
        if inside {
            self.take(j, r2, mj);
        }
    }
}

/// Counts neighbours.
#[derive(Clone, Copy, Debug, Default)]
pub struct Count(pub u32);

impl Sink for Count {
    #[inline(always)]
    fn take(&mut self, _: u32, _: f32, _: f32) {
        self.0 += 1;
    }
    #[inline(always)]
    fn offer(&mut self, _: u32, _: f32, _: f32, inside: bool) {
        self.0 += inside as u32;
    }
}

/// SPH density by summation, `ρ_i = Σ_j m_j W(r_ij, h_i)` (the target's own term included):
/// the sum of `m_j h³W` over the neighbours, scaled by `1/h³` once ([`Self::rho`]), with the
/// approximate square root per neighbour on the device (a `sqrt.rn` and a division per pair
/// made the density pass half as slow again as the count; on the host it is the correctly
/// rounded one).
#[derive(Clone, Copy, Debug)]
pub struct Density {
    pub kernel: u32,
    pub inv_h: f32,
    /// `Σ m_j h³W(r_ij, h)` so far.
    pub sum: f32,
}

impl Density {
    /// A target with smoothing length `h` (support) and no density yet.
    #[inline(always)]
    pub fn new(kernel: u32, h: f32) -> Self {
        Density {
            kernel,
            inv_h: 1.0 / h,
            sum: 0.0,
        }
    }

    /// `sum` plus neighbour `mj` at squared distance `r2` (nothing when not `inside`), the one
    /// copy of the summation that the combined walk shares.
    #[inline(always)]
    pub fn add(kernel: u32, inv_h: f32, sum: f32, r2: f32, mj: f32, inside: bool) -> f32 {
        // `inside` (r² < h²) makes the support test: q may round to just over 1 (w = 0).
        let w = shape_in_support(kernel, math::sqrt_approx(r2) * inv_h);
        math::fma(mj, if inside { w } else { 0.0 }, sum)
    }

    /// The density of a finished sum.
    #[inline(always)]
    pub fn scale(sum: f32, inv_h: f32) -> f32 {
        sum * (inv_h * inv_h * inv_h)
    }

    /// The density summed so far.
    #[inline(always)]
    pub fn rho(&self) -> f32 {
        Self::scale(self.sum, self.inv_h)
    }
}

impl Sink for Density {
    #[inline(always)]
    fn take(&mut self, j: u32, r2: f32, mj: f32) {
        self.offer(j, r2, mj, true);
    }
    #[inline(always)]
    fn offer(&mut self, _: u32, r2: f32, mj: f32, inside: bool) {
        self.sum = Self::add(self.kernel, self.inv_h, self.sum, r2, mj, inside);
    }
}

/// What a search kernel computes (its `mode` parameter).
pub const MODE_COUNT: u32 = 0;
/// Writes each target's neighbours into its CSR row.
pub const MODE_FILL: u32 = 1;
/// Sums the density (gather: every kernel's support is `h_i`).
pub const MODE_DENSITY: u32 = 2;
/// Counts each target's gather neighbours at the rungs of its [`ladder`] (state given; the
/// targets' `h` are their [`walk_radius`]) into `counts[LADDER i..LADDER (i + 1)]`.
pub const MODE_LADDER: u32 = 3;

// ---------------------------------------------------------------------------------------------
// linked cells
// ---------------------------------------------------------------------------------------------

/// The linked-cell grid: origin, inverse cell size, cells per axis. Cells are at least the largest
/// `h` wide (with slack for float32 rounding of the cell coordinates), so a neighbour is always in
/// the 27 cells around its target's.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Grid {
    pub lo: [f32; 3],
    pub inv: f32,
    pub dims: [u32; 3],
    pub _pad: u32,
}

impl Grid {
    /// Cell coordinates of `p`, clamped to the grid.
    #[inline(always)]
    pub fn coords(&self, p: [f32; 3]) -> [u32; 3] {
        core::array::from_fn(|k| {
            let u = (p[k] - self.lo[k]) * self.inv;
            // `as` saturates: negative and NaN go to 0.
            (u as u32).min(self.dims[k] - 1)
        })
    }
    /// The linear index of cell `c`.
    #[inline(always)]
    pub fn index(&self, c: [u32; 3]) -> u32 {
        (c[2] * self.dims[1] + c[1]) * self.dims[0] + c[0]
    }
    pub fn cells(&self) -> u32 {
        self.dims[0] * self.dims[1] * self.dims[2]
    }
    /// The 27-cell stencil around `c`, clamped: lower and upper corners (inclusive).
    #[inline(always)]
    pub fn stencil(&self, c: [u32; 3]) -> ([u32; 3], [u32; 3]) {
        (
            core::array::from_fn(|k| c[k].saturating_sub(1)),
            core::array::from_fn(|k| (c[k] + 1).min(self.dims[k] - 1)),
        )
    }
}

/// Calls `f` with each cell of the 27-cell stencil around `p`'s cell (clamped to the grid), in
/// z, y, x order.
#[inline(always)]
pub fn cell_stencil(grid: &Grid, p: [f32; 3], mut f: impl FnMut(u32)) {
    let (lo, hi) = grid.stencil(grid.coords(p));
    for z in lo[2]..=hi[2] {
        for y in lo[1]..=hi[1] {
            for x in lo[0]..=hi[0] {
                f(grid.index([x, y, z]));
            }
        }
    }
}

/// Cells per axis at most: bounds the float32 error of a cell coordinate (≤ 2 ulp of 1024) well
/// below the grid's slack.
pub const GRID_MAX_DIM: u32 = 1024;
/// Relative slack of the cell size over the largest `h`.
pub const GRID_SLACK: f32 = 1e-3;

/// The grid for points in `[lo, hi]` with largest smoothing length `hmax`, of at most `max_cells`
/// cells (grown coarser until it fits; coarser cells stay correct).
pub fn grid_for(lo: [f32; 3], hi: [f32; 3], hmax: f32, max_cells: u32) -> Grid {
    let ext = (0..3).fold(0.0f32, |e, k| e.max(hi[k] - lo[k]));
    let mut cell = (hmax * (1.0 + GRID_SLACK))
        .max(ext / GRID_MAX_DIM as f32 * (1.0 + GRID_SLACK))
        .max(1e-30);
    loop {
        let dims: [u32; 3] =
            core::array::from_fn(|k| (((hi[k] - lo[k]) / cell) as u32 + 1).min(GRID_MAX_DIM));
        let total = dims[0] as u64 * dims[1] as u64 * dims[2] as u64;
        if total <= max_cells.max(1) as u64 {
            return Grid {
                lo,
                inv: 1.0 / cell,
                dims,
                _pad: 0,
            };
        }
        cell *= 1.25;
    }
}

// ---------------------------------------------------------------------------------------------
// smoothing-length iteration
// ---------------------------------------------------------------------------------------------

/// Still iterating.
pub const H_ITERATING: u32 = 0;
/// The neighbour count is within the tolerance of the target.
pub const H_CONVERGED: u32 = 1;
/// The bracket shrank to nothing without reaching the target: the count jumps over it
/// (coincident particles) at this `h`.
pub const H_STUCK: u32 = 2;

/// One particle's smoothing-length iteration: the current `h`, the bracket `[lo, hi]` known so
/// far (`lo = 0`, `hi = +inf` while unknown) with the gather counts measured at its ends
/// (`nlo < target < nhi`), the window `[wlo, whi]` of the bracket that the next [`ladder`]
/// fills (set by [`update_h`] once bracketed) and its state. 32 bytes (two vector loads on the
/// device).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct HState {
    pub h: f32,
    pub lo: f32,
    pub hi: f32,
    pub state: u32,
    pub nlo: f32,
    pub nhi: f32,
    pub wlo: f32,
    pub whi: f32,
}

impl HState {
    pub fn start(h: f32) -> Self {
        HState {
            h,
            lo: 0.0,
            hi: f32::INFINITY,
            state: H_ITERATING,
            nlo: 0.0,
            nhi: 0.0,
            wlo: 0.0,
            whi: 0.0,
        }
    }
    /// Whether the particle still needs a count pass.
    #[inline(always)]
    pub fn iterating(&self) -> bool {
        self.state == H_ITERATING
    }
}

/// Radii a count pass of the h iteration counts at, at once ([`ladder`]).
pub const LADDER: usize = 8;

/// The rungs around `h` while the target is not bracketed: `h · 1.1^((2k − 7)/7)`, from
/// `h / 1.1` to `1.1 h` (the count from about 0.75× to 1.33× its value at `h`; the local-density
/// guess is mostly that close), one multiply each (the same float32 on every backend). On the
/// CPU twin (2^16 particles, 64 ± 2) spreads of 1.08 and 1.12 tested 21–35% fewer pairs in all
/// than one count per pass, in 4–6 passes instead of 8–12; 1.25, as many pairs as before.
const LADDER_SPREAD: [f32; LADDER] = [
    0.90909094, 0.93418694, 0.9599758, 0.98647654, 1.0137088, 1.041693, 1.0704496, 1.1,
];

/// Half-width factor of the window a bracketed particle's next ladder fills, around the false
/// position estimate (see [`update_h`]).
const LADDER_WINDOW: f32 = 1.15;

/// The radii, ascending, that a count pass of the h iteration counts each particle's gather
/// neighbours at: spread around `s.h` until the target is bracketed, then spaced evenly in
/// volume strictly inside the window `(wlo, whi)` of the bracket (each pass narrows it about
/// ninefold, so a ±2 tolerance at 64 neighbours is met in two or three passes where one count
/// per pass took five to twelve). The pass walks with the largest ([`walk_radius`]).
#[inline(always)]
pub fn ladder(s: &HState) -> [f32; LADDER] {
    if s.lo > 0.0 && s.hi.is_finite() {
        let (v0, v1) = (s.wlo * s.wlo * s.wlo, s.whi * s.whi * s.whi);
        core::array::from_fn(|k| cbrt(v0 + (k + 1) as f32 / (LADDER + 1) as f32 * (v1 - v0)))
    } else {
        core::array::from_fn(|k| s.h * LADDER_SPREAD[k])
    }
}

/// The gather radius a particle is searched with: its ladder's largest rung while it iterates,
/// else its `h`.
#[inline(always)]
pub fn walk_radius(s: &HState) -> f32 {
    if s.iterating() {
        ladder(s)[LADDER - 1]
    } else {
        s.h
    }
}

/// Counts a target's gather neighbours at every rung of its [`ladder`] (squared radii `r2`):
/// the sink of an h-iteration pass ([`MODE_LADDER`]).
#[derive(Clone, Copy, Debug)]
pub struct Ladder {
    pub r2: [f32; LADDER],
    pub c: [u32; LADDER],
}

impl Ladder {
    #[inline(always)]
    pub fn new(s: &HState) -> Self {
        let r = ladder(s);
        Ladder {
            r2: core::array::from_fn(|k| r[k] * r[k]),
            c: [0; LADDER],
        }
    }
}

impl Sink for Ladder {
    /// Strictly inside each rung, as [`within`] (the same test a count at that h makes).
    #[inline(always)]
    fn take(&mut self, _: u32, r2: f32, _: f32) {
        for k in 0..LADDER {
            self.c[k] += (r2 < self.r2[k]) as u32;
        }
    }
    /// The rungs lie within the walk radius (the largest is [`walk_radius`]), so a candidate
    /// outside it adds nothing: counted without the test.
    #[inline(always)]
    fn offer(&mut self, j: u32, r2: f32, mj: f32, _: bool) {
        self.take(j, r2, mj);
    }
}

/// One step of the smoothing-length iteration from the gather counts `c` at the rungs of
/// `s`'s [`ladder`] (target's own term included; non-decreasing). Returns the new state and the
/// count at its `h` when it converged (else at the largest rung).
/// - A rung within `tol` of the target converges, at the rung closest to it (the smallest of
///   equals).
/// - Otherwise the rungs below and above the target narrow the bracket `[lo, hi]`; once both
///   ends are known the next ladder fills a window of it around the false-position estimate
///   (in volume, from the ends' counts). Until then `h` moves by the Newton step on `N ∝ h³`
///   from the end rung nearest the target, at most a factor 2 (Gadget-2's update).
/// - A bracket of relative width 1e-5 holds no float32 h worth trying further (a count that
///   jumps over the target: coincident particles): stuck.
#[inline(always)]
pub fn update_h(s: HState, c: &[u32; LADDER], target: f32, tol: f32) -> (HState, u32) {
    if s.state != H_ITERATING {
        return (s, 0);
    }
    let r = ladder(&s);
    let mut best = 0;
    for k in 1..LADDER {
        if (c[k] as f32 - target).abs() < (c[best] as f32 - target).abs() {
            best = k;
        }
    }
    if (c[best] as f32 - target).abs() <= tol {
        let n = HState {
            h: r[best],
            state: H_CONVERGED,
            ..s
        };
        return (n, c[best]);
    }
    let mut n = s;
    for k in 0..LADDER {
        let ck = c[k] as f32;
        if ck < target && r[k] > n.lo {
            n.lo = r[k];
            n.nlo = ck;
        } else if ck > target && r[k] < n.hi {
            n.hi = r[k];
            n.nhi = ck;
        }
    }
    let bracketed = n.hi.is_finite() && n.lo > 0.0;
    n.h = if bracketed {
        // False position in volume between the ends and their counts; the next ladder fills
        // ±15% in h around it, inside the bracket: a wide bracket (its top engulfing a dense
        // core) is not walked out to its top.
        let (v0, v1) = (n.lo * n.lo * n.lo, n.hi * n.hi * n.hi);
        let f = ((target - n.nlo) / (n.nhi - n.nlo)).clamp(0.0, 1.0);
        let est = cbrt(v0 + f * (v1 - v0));
        n.wlo = (est / LADDER_WINDOW).max(n.lo);
        n.whi = (est * LADDER_WINDOW).min(n.hi);
        est
    } else if (c[LADDER - 1] as f32) < target {
        let ct = c[LADDER - 1] as f32;
        r[LADDER - 1] * cbrt((target / ct.max(1.0)).clamp(1.0, 8.0))
    } else {
        r[0] * cbrt((target / (c[0] as f32).max(1.0)).clamp(0.125, 1.0))
    };
    if bracketed && n.hi - n.lo <= 1e-5 * n.hi {
        n.state = H_STUCK;
    }
    (n, c[LADDER - 1])
}

/// What [`guess_h`] reads of the octree: child slots and cells' body counts (`crate::bh`'s
/// arrays, device pointers in the kernel, slices in the CPU twin).
pub trait CountTree {
    fn slot(&self, cell: i32, octant: u32) -> i32;
    fn count(&self, cell: i32) -> u32;
}

/// A first smoothing length from the local density: `p` descends the octree (root `root`, cube
/// of centre `centre` and half-size `half`, as `crate::bh::root_cell`) through the octants that
/// hold it while the child cell keeps at least `target` bodies; the smallest such cell, of `k`
/// bodies in a cube of side `a`, gives the density `k / a³`, and the sphere holding `target`
/// bodies at that density has radius `a ∛(3 target / (4π k))`. On a Plummer sphere this is
/// within tens of percent of the converged h where the global mean density is off by orders
/// of magnitude (the first passes from it tested thousands of candidates per neighbour).
#[inline(always)]
pub fn guess_h(
    t: &impl CountTree,
    root: i32,
    n: i32,
    centre: [f32; 3],
    half: f32,
    p: [f32; 3],
    target: f32,
) -> f32 {
    let (mut cell, mut c, mut half) = (root, centre, half);
    let mut k = t.count(root);
    for _ in 0..crate::bh::MAX_DEPTH {
        let o = crate::bh::octant(p, c);
        let ch = t.slot(cell, o);
        if ch < n {
            break;
        }
        let kc = t.count(ch - n);
        if (kc as f32) < target {
            break;
        }
        half *= 0.5;
        c = crate::bh::child_center(c, half, o);
        cell = ch - n;
        k = kc;
    }
    let k = (k as f32).max(1.0);
    2.0 * half * cbrt(3.0 * target / (4.0 * core::f32::consts::PI * k))
}

// ---------------------------------------------------------------------------------------------
// splitting wide warp groups
// ---------------------------------------------------------------------------------------------

/// A warp group walks as one only while its box's longest side is at most this many times its
/// smallest positive `h`; wider ones walk as halves (aligned lane ranges, [`next_lanes`]). Where
/// the density falls steeply (a Plummer sphere's halo) a group of 32 spans more than its
/// particles' h, and its box grown by its largest h reaches the dense centre that none of its
/// spheres reaches: a few such groups tested every particle of the set.
pub const GROUP_SPLIT: f32 = 2.0;

/// A warp group also splits while its largest `h` exceeds its smallest positive one by more than
/// this factor: its walk reaches as far as the largest h around every member, so a member of
/// small h tests candidates that only a wide sphere needs. In a Plummer halo (h varying fast
/// across a group) this cuts the costliest walk 1.6× to 2× on the CPU twin's count of
/// candidates and cells; on uniform and centrally condensed sets (h varies little within a
/// group) it changes the total by under 1%.
pub const GROUP_H_SPREAD: f32 = 1.5;

/// A group walk lists a reachable cell of at most this many particles as the particles' range
/// in the tree order (`start`, `count`; `bh_sort`) instead of descending into it: the bottom
/// levels of the tree are where a walk pops most of its cells. The candidates stay the same
/// (each particle still passes [`body_reachable`]); on the CPU twin's count (2^18 particles, 64
/// neighbours) cells popped fall 8.6× (uniform) and 7.4× (Plummer), and the ranges' particles
/// are loaded 32 at a time. On the H200 (64 neighbours) 32 against 16: the
/// density of uniform 2^22 4.18 → 3.50 ms, 2^20 0.82 → 0.77, Plummer 2^20 1.24 → 1.20; 8 was
/// slower everywhere.
pub const SPH_BUCKET: u32 = 32;

/// A group search of at most this many walks (`sph_group_few`, `sph_group_ladder_few`: the
/// h iteration's late passes, the searches of sets up to about 2^19 particles) also tests each
/// cell and candidate against every served target's own sphere (a point box grown by its h),
/// not only against the targets' box. Such a search (five walks per H200 warp slot of the
/// ladder's search at most) lasts about as long as its longest walk, and its longest walks are
/// a Plummer halo's: particles far apart whose box grown by their largest h reaches the dense
/// centre that none of their spheres reaches (one walk of 8 targets listed 42 000 candidates;
/// with the test, Plummer 2^18's h iteration took 2.6 ms instead of 69). A fuller search is
/// paced by throughput, where the plain walk's fewer registers and tests win (uniform 2^20's
/// second pass, 44 669 walks: 1.11 ms plain, 1.25 with the test). A constant, not the device's
/// count, so that the CPU twin tests the same pairs.
pub const FEW_PASS_WALKS: u32 = 16384;

/// Whether the members' box `[tlo, thi]` is too wide for one walk at smallest positive
/// smoothing length `hmin` (`+inf` when no member has h > 0: a walk that reaches nothing), or
/// their h too spread (largest `hmax`).
#[inline(always)]
pub fn group_too_wide(tlo: [f32; 3], thi: [f32; 3], hmin: f32, hmax: f32) -> bool {
    let ext = (thi[0] - tlo[0]).max(thi[1] - tlo[1]).max(thi[2] - tlo[2]);
    ext > GROUP_SPLIT * hmin || hmax > GROUP_H_SPREAD * hmin
}

/// The lane range after `[a, a + w)` in a depth-first split of the warp's 32 lanes into aligned
/// power-of-two ranges: every range still pending is the right half of a split one, so the next
/// starts at `a + w` and is as wide as that start's alignment. `None` after the last lane.
#[inline(always)]
pub fn next_lanes(a: u32, w: u32) -> Option<(u32, u32)> {
    let a = a + w;
    if a >= crate::WARP_SIZE {
        None
    } else {
        Some((a, a & a.wrapping_neg()))
    }
}

/// Cube root (positive `x`): `2^{log2(x)/3}` (two PTX instructions on the device).
#[inline(always)]
pub fn cbrt(x: f32) -> f32 {
    math::exp2(math::log2(x) * (1.0 / 3.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundary_is_strict_and_h_zero_gathers_nothing() {
        // (1, 0, 0) from the origin: r² = 1 exactly.
        let r2 = dist2([0.0; 3], [1.0, 0.0, 0.0]);
        assert_eq!(r2, 1.0);
        assert!(!is_neighbour(GATHER, r2, 1.0, 0.0));
        assert!(is_neighbour(GATHER, r2, 1.0f32.next_up(), 0.0));
        assert!(!is_neighbour(SCATTER, r2, 5.0, 1.0));
        assert!(is_neighbour(SCATTER, r2, 0.0, 1.5));
        assert!(is_neighbour(SYMMETRIC, r2, 0.0, 1.5) && is_neighbour(SYMMETRIC, r2, 1.5, 0.0));
        // h = 0: not even the particle itself; h > 0: itself and coincident particles.
        assert!(!is_neighbour(GATHER, 0.0, 0.0, 0.0));
        assert!(is_neighbour(GATHER, 0.0, 1e-10, 0.0));
        // An h whose square underflows to zero behaves as h = 0.
        assert!(!is_neighbour(GATHER, 0.0, 1e-30, 0.0));
    }

    #[test]
    fn gap_never_exceeds_a_pairs_distance() {
        // Random boxes and points inside them, with awkward (non-representable) coordinates.
        for s in 0..2000u64 {
            let u = |k: u64| crate::rng::uniform_f32(s, k) * 3.0 - 1.5;
            let (a, b): ([f32; 3], [f32; 3]) = (
                core::array::from_fn(|k| u(k as u64)),
                core::array::from_fn(|k| u(3 + k as u64)),
            );
            let (alo, ahi) = (a, core::array::from_fn(|k| a[k] + u(6 + k as u64).abs()));
            let (blo, bhi) = (
                b,
                core::array::from_fn(|k| b[k] + u(9 + k as u64).abs() * 0.1),
            );
            let g = gap2(alo, ahi, blo, bhi);
            for t in 0..8u64 {
                let f = |k: u64| crate::rng::uniform_f32(s + 7777, 16 * t + k);
                let p: [f32; 3] =
                    core::array::from_fn(|k| alo[k] + (ahi[k] - alo[k]) * f(k as u64));
                let q: [f32; 3] =
                    core::array::from_fn(|k| blo[k] + (bhi[k] - blo[k]) * f(3 + k as u64));
                let p = core::array::from_fn(|k| p[k].clamp(alo[k], ahi[k]));
                let q = core::array::from_fn(|k| q[k].clamp(blo[k], bhi[k]));
                assert!(g <= dist2(p, q), "seed {s}: gap² {g} > r² {}", dist2(p, q));
                assert!(gap2(p, p, blo, bhi) <= dist2(p, q));
            }
        }
    }

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

    /// Steps `s` with the counts `count(r)` at its ladder's rungs until it stops; the passes.
    fn iterate(mut s: HState, count: impl Fn(f32) -> u32, tol: f32, max: u32) -> (HState, u32) {
        let mut it = 0;
        while s.iterating() && it < max {
            let c = ladder(&s).map(&count);
            s = update_h(s, &c, 64.0, tol).0;
            it += 1;
        }
        (s, it)
    }

    #[test]
    fn h_update_brackets_and_converges_on_a_power_law() {
        // N(h) = 1000 h³ (uniform density): the target 64 is at h = 0.4.
        let count = |h: f32| (1000.0 * h * h * h) as u32;
        // From a guess within 10%: two passes (the ladder brackets, the next lands); 25% off:
        // a Newton step first; 40× off: several.
        for (h0, most) in [(0.38f32, 2), (0.42, 2), (0.3, 3), (0.01, 9), (3.0, 9)] {
            let (s, it) = iterate(HState::start(h0), count, 1.0, 50);
            assert_eq!(s.state, H_CONVERGED, "h0 {h0}: {s:?}");
            assert!((count(s.h) as f32 - 64.0).abs() <= 1.0, "{s:?}");
            assert!(it <= most, "h0 {h0}: {it} passes");
        }
        // A count that jumps over the target (coincident particles) ends stuck, not in a loop.
        let step = |h: f32| if h < 0.5 { 1 } else { 200 };
        let (s, it) = iterate(HState::start(0.1), step, 2.0, 100);
        assert_eq!(s.state, H_STUCK);
        assert!(it < 20 && (s.lo - 0.5).abs() < 1e-4, "{it} {s:?}");
        // The ladder: ascending, around h until bracketed, then inside the bracket.
        let r = ladder(&HState::start(1.0));
        assert!(
            r.windows(2).all(|w| w[0] < w[1]) && r[0] == LADDER_SPREAD[0] && r[LADDER - 1] == 1.1
        );
        let b = HState {
            lo: 1.0,
            hi: 1.1,
            wlo: 1.0,
            whi: 1.1,
            ..HState::start(1.05)
        };
        let r = ladder(&b);
        assert!(r.windows(2).all(|w| w[0] < w[1]) && r[0] > 1.0 && r[LADDER - 1] < 1.1);
        assert_eq!(walk_radius(&b), r[LADDER - 1]);
    }

    #[test]
    fn the_ladder_follows_the_local_slope_and_lanes_split_depth_first() {
        // N(h) = 5000 h³ + 30 (a dense core at the centre of the sphere): the h³ Newton step
        // alone misjudges the slope; once bracketed, the ladder lands on the target.
        let count = |h: f32| (5000.0 * h * h * h + 30.0) as u32;
        let (s, it) = iterate(HState::start(0.05), count, 1.0, 40);
        assert_eq!(s.state, H_CONVERGED);
        assert!(it <= 6, "{it}");
        // Aligned ranges in depth-first order: after [0, 8) comes [8, 8), then [16, 16).
        assert_eq!(next_lanes(0, 8), Some((8, 8)));
        assert_eq!(next_lanes(8, 8), Some((16, 16)));
        assert_eq!(next_lanes(16, 16), None);
        assert_eq!(next_lanes(5, 1), Some((6, 2)));
        let w = GROUP_SPLIT;
        assert!(group_too_wide([0.0; 3], [w.next_up(), 0.0, 0.0], 1.0, 1.0));
        assert!(!group_too_wide([0.0; 3], [w, 0.0, 0.0], 1.0, 1.0));
        assert!(!group_too_wide([0.0; 3], [5.0; 3], f32::INFINITY, 0.0));
        let s = GROUP_H_SPREAD;
        assert!(!group_too_wide([0.0; 3], [w, 0.0, 0.0], 1.0, s));
        assert!(group_too_wide([0.0; 3], [0.0; 3], 1.0, s.next_up()));
    }

    #[test]
    fn grid_cells_cover_the_largest_h() {
        let g = grid_for([0.0; 3], [1.0, 2.0, 0.5], 0.1, 1 << 20);
        assert!(1.0 / g.inv >= 0.1);
        assert_eq!(
            g.coords([1.0, 2.0, 0.5]),
            [g.dims[0] - 1, g.dims[1] - 1, g.dims[2] - 1]
        );
        // A tiny h on a large box: capped cells, still at least h wide.
        let g = grid_for([0.0; 3], [1.0; 3], 1e-6, 4096);
        assert!(g.cells() <= 4096 && 1.0 / g.inv >= 1e-6);
        // h = 0 and a single point.
        let g = grid_for([3.0; 3], [3.0; 3], 0.0, 8);
        assert_eq!(g.cells(), 1);
        assert_eq!(g.coords([3.0; 3]), [0, 0, 0]);
    }
}
