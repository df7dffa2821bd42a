//! Barnes–Hut self-gravity on an octree, after Burtscher & Pingali, "An Efficient CUDA
//! Implementation of the Tree-Based Barnes Hut n-Body Algorithm", GPU Computing Gems Emerald
//! Edition, 2011 (ECL-BH), as used by GASPHiA (seeds 000 and 001).
//!
//! Pipeline, one kernel per stage, each with a CPU twin in `warpkit::bh::cpu`:
//! 1. bounding box — block min/max reduction, then float atomics on the [`TreeHeader`];
//! 2. build — top-down parallel insertion with a CAS lock per child slot; internal cells are
//!    allocated downward from the end of the cell array by an atomic counter (dense storage) or
//!    addressed implicitly as in a complete octree (sparse storage, [`Layout`]);
//! 3. summarize — bottom-up centre of mass and subtree counts, each cell waiting for its children;
//! 4. sort — top-down placement by subtree counts into a gather index (`sort[k]` = body of lane k);
//! 5. gravity — one traversal per warp with a shared stack; a cell is accepted only when the whole
//!    warp votes it far enough (`vote.sync.all`), so lanes never diverge in the tree.
//!
//! Coincident bodies cannot be separated by subdivision: past [`MAX_DEPTH`] a leaf becomes a
//! bucket, a chain through `next` of bodies that are treated one by one.

pub mod kernels;
pub mod morton;
mod view;

pub use view::{TreeView, TreeViewMut};

use crate::math;
use crate::walk::{CellData, Interaction, ListExtra, Octree};

/// A body or a cell summary: position (or centre of mass) and mass, float4 layout (16-byte
/// aligned, so the device loads it with one vector instruction).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Body {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub m: f32,
}

/// `x = …, y = …, z = …, m = …`: how error messages name a body's values (not a Rust dump).
impl core::fmt::Display for Body {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (k, (name, v)) in [("x", self.x), ("y", self.y), ("z", self.z), ("m", self.m)]
            .into_iter()
            .enumerate()
        {
            let sep = if k > 0 { ", " } else { "" };
            // Plain decimals in the usual range, exponents outside it (never 39 digits).
            if v != 0.0 && v.is_finite() && !(1e-4..1e6).contains(&v.abs()) {
                write!(f, "{sep}{name} = {v:e}")?;
            } else {
                write!(f, "{sep}{name} = {v}")?;
            }
        }
        Ok(())
    }
}

/// An acceleration, float3 layout (the `acc.npy` N×3 rows).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Accel {
    pub x: f32,
    pub y: f32,
    pub z: f32,
}

/// Tree-wide state shared by the kernels: bounding box, allocation counter, error flags.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TreeHeader {
    pub min: [f32; 3],
    pub max: [f32; 3],
    /// Dense: lowest cell index in use (cells `bottom..cells` are allocated). Sparse: `cells - 1`
    /// minus the cells created, so `cells - bottom` counts cells in use in both storages.
    pub bottom: i32,
    /// Non-zero when the build failed (see [`ERR_OVERFLOW`]).
    pub error: u32,
    /// Deepest cell level created.
    pub depth: u32,
    /// Bodies that ended in a bucket (coincident within [`MAX_DEPTH`] subdivisions).
    pub bucketed: u32,
    /// Warp groups emitted by the sort (see [`GroupPacker`]).
    pub groups: u32,
    /// The next warp group a group-kernel warp takes (work handed out dynamically: groups in the
    /// dense centre of a cluster cost many times the outskirts').
    pub next_group: u32,
    /// Body–cell and body–body interactions evaluated by the last gravity launch.
    pub interactions: u64,
    /// Cells opened (children examined) by the last gravity launch, per warp.
    pub opened: u64,
}

/// Traceless quadrupole moment of a cell about its centre of mass,
/// `Q_ij = Σ m (3 d_i d_j − |d|² δ_ij)` over its bodies at offsets `d`, and the trace the
/// traceless form drops, `tr = Σ m |d|²`: the softened kernel is not harmonic, so its expansion
/// keeps a trace term (see [`pair_accel_quad`]). Padded to 32 bytes so the device loads it with
/// two vector instructions.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Quad {
    pub xx: f32,
    pub yy: f32,
    pub zz: f32,
    pub xy: f32,
    pub xz: f32,
    pub yz: f32,
    pub tr: f32,
    pub _pad: f32,
}

impl Quad {
    /// The moment of mass `m` at offset `d` from the centre (the parallel-axis term).
    #[inline(always)]
    pub fn point(m: f32, d: [f32; 3]) -> Quad {
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        let m3 = 3.0 * m;
        Quad {
            xx: m3 * d[0] * d[0] - m * r2,
            yy: m3 * d[1] * d[1] - m * r2,
            zz: m3 * d[2] * d[2] - m * r2,
            xy: m3 * d[0] * d[1],
            xz: m3 * d[0] * d[2],
            yz: m3 * d[1] * d[2],
            tr: m * r2,
            _pad: 0.0,
        }
    }

    #[inline(always)]
    pub fn minus(&self, o: &Quad) -> Quad {
        Quad {
            xx: self.xx - o.xx,
            yy: self.yy - o.yy,
            zz: self.zz - o.zz,
            xy: self.xy - o.xy,
            xz: self.xz - o.xz,
            yz: self.yz - o.yz,
            tr: self.tr - o.tr,
            _pad: 0.0,
        }
    }

    #[inline(always)]
    pub fn plus(&self, o: &Quad) -> Quad {
        Quad {
            xx: self.xx + o.xx,
            yy: self.yy + o.yy,
            zz: self.zz + o.zz,
            xy: self.xy + o.xy,
            xz: self.xz + o.xz,
            yz: self.yz + o.yz,
            tr: self.tr + o.tr,
            _pad: 0.0,
        }
    }
}

/// One cell's children as the summary reads them: the kernel implements it over device pointers
/// (waiting until a child cell is summarized), the CPU twin over slices.
pub trait CellChildren {
    /// The value in child slot `octant`: `EMPTY`, a body `0..n`, or `n + cell`.
    fn slot(&self, octant: u32) -> i32;
    /// A summarized child cell: centre of mass and mass, quadrupole, body count.
    fn cell(&self, cell: usize) -> (Body, Quad, u32);
    fn body(&self, b: i32) -> Body;
    /// The next body of a bucket chain, or -1.
    fn next(&self, b: i32) -> i32;
}

/// Mass, centre of mass, quadrupole (about that centre; zero unless `QUAD`) and body count of a
/// cell from its children, in octant order and chain order: the one copy of the summary formulas.
///
/// One pass over the children, each read once: mass, first moment and quadrupole are summed about
/// the first child's position `r0`, then moved to the centre of mass, `c = r0 + s` with
/// `s = Σ m (x − r0) / M` and `Q_c = Q_r0 − point(M, s)` (the parallel-axis theorem; exact for
/// this `Quad`, trace term included). Offsets from `r0` are of the cell's size, so the centre is
/// no longer rounded at the scale of the coordinates (`Σ m x / M`), and the quadrupole's offsets
/// come from it. (Two passes, monopole then quadrupole about the centre, read every child twice:
/// the populous levels were most of the summary's time.)
#[inline(always)]
pub fn summarize_cell<const QUAD: bool>(c: &impl CellChildren, n: i32) -> (Body, Quad, u32) {
    let (mut m, mut sx, mut sy, mut sz, mut cnt) = (0.0f32, 0.0f32, 0.0f32, 0.0f32, 0u32);
    let mut r0: Option<[f32; 3]> = None;
    let mut quad = Quad::default();
    let mut add = |q: Body, cq: &Quad, k: u32| {
        let o = *r0.get_or_insert([q.x, q.y, q.z]);
        let d = [q.x - o[0], q.y - o[1], q.z - o[2]];
        m += q.m;
        sx = math::fma(q.m, d[0], sx);
        sy = math::fma(q.m, d[1], sy);
        sz = math::fma(q.m, d[2], sz);
        cnt += k;
        if QUAD {
            quad = quad.plus(cq).plus(&Quad::point(q.m, d));
        }
    };
    for o in 0..8 {
        let ch = c.slot(o);
        if ch >= n {
            let (pm, cq, k) = c.cell((ch - n) as usize);
            add(pm, &cq, k);
        } else {
            let mut b = ch;
            while b >= 0 {
                add(c.body(b), &Quad::default(), 1);
                b = c.next(b);
            }
        }
    }
    let o = r0.unwrap_or_default();
    let inv = 1.0 / m;
    let s = [sx * inv, sy * inv, sz * inv];
    if QUAD {
        quad = quad.minus(&Quad::point(m, s));
    }
    (
        Body {
            x: o[0] + s[0],
            y: o[1] + s[1],
            z: o[2] + s[2],
            m,
        },
        quad,
        cnt,
    )
}

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

crate::shared_type!(Body, Accel, TreeHeader, Quad, Layout);

impl TreeHeader {
    /// The header before the bounding-box stage: an empty box, no cell but the root.
    pub fn new(cells: u32) -> Self {
        TreeHeader {
            min: [f32::INFINITY; 3],
            max: [f32::NEG_INFINITY; 3],
            bottom: cells as i32 - 1,
            error: 0,
            depth: 0,
            bucketed: 0,
            groups: 0,
            next_group: 0,
            interactions: 0,
            opened: 0,
        }
    }
}

/// The build ran out of cells: the host retries with a larger array.
pub const ERR_OVERFLOW: u32 = 1;

/// A child slot nobody has written.
pub const EMPTY: i32 = -1;
/// A child slot a thread is rewriting; others wait and retry.
pub const LOCKED: i32 = -2;

/// Deepest cell level. Two distinct float32 positions in the box separate by about level 24
/// (2^-24 of the box); deeper than this they are coincident for float32 and are bucketed.
pub const MAX_DEPTH: usize = 30;

/// Threads per block of the gravity kernel (8 warps, one shared stack each).
pub const GRAVITY_BLOCK: u32 = 256;
/// Threads per block of the warp-group gravity kernel.
pub const GROUP_BLOCK: u32 = 128;
/// Cells the group kernel pops per step (eight lanes test one cell's children).
pub const GROUP_POP: usize = 4;
/// Stack height up to which the group kernel pops [`GROUP_POP`] cells a step; above it, one (a
/// depth-first descent), which bounds the stack: see [`GROUP_STACK`].
pub const GROUP_STACK_SOFT: usize = 128;
/// Capacity of a warp's cell stack in the group kernel. A step of [`GROUP_POP`] pops starts at most
/// `GROUP_STACK_SOFT - 8 GROUP_POP + GROUP_POP` high and ends at most `GROUP_STACK_SOFT` high;
/// a run of single pops from there is a depth-first descent that leaves at most 7 unopened
/// siblings per level and one cell's 8 children on top.
pub const GROUP_STACK: usize = GROUP_STACK_SOFT + 7 * (MAX_DEPTH + 1) + 1;
/// Capacity of a warp's interaction list; flushed once fewer than 32 free entries remain (one
/// step adds at most 32).
pub const GROUP_LIST: usize = 96;

/// Threads per block of the other tree kernels.
pub const TREE_BLOCK: u32 = 256;
/// Threads per block of the brute-force kernel, and bodies per shared-memory tile.
pub const BRUTE_BLOCK: u32 = 256;
const _: () = assert!(GRAVITY_BLOCK.is_multiple_of(crate::WARP_SIZE));
const _: () = assert!(core::mem::size_of::<Quad>() == 32); // two 16-byte shared loads

/// Bodies per warp group of the warp-group traversal: one per lane ([`GROUP_SIZE`]), or two per
/// lane ([`GROUP_SIZE_2`]), which halves the traversals per body and loads each interaction-list
/// entry once for two bodies.
pub const GROUP_SIZE: u32 = crate::WARP_SIZE;
/// Bodies per warp group with two bodies per lane.
pub const GROUP_SIZE_2: u32 = 2 * crate::WARP_SIZE;

/// How a group kernel's lane serves a warp group of `size` bodies with `k` bodies per lane: a
/// small group spreads its bodies over `2^-shift` of the lanes (`k` each, members `seat + (32 >>
/// shift) j`) and repeats them `2^shift` times; copy `part` sums one consecutive share of the
/// interaction list, so the list costs the warp `2^-shift` of its length. A group's traversal and
/// list hardly depend on its size, and small groups are common: on the lattice a quarter of the
/// groups hold at most 8 bodies (cells of 36 bodies split 32 + 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupLanes {
    /// 0, 1 or 2: `2^shift` copies of the group.
    pub shift: u32,
    /// The lane's place within its copy, `0..32 >> shift`.
    pub seat: u32,
    /// Which copy (share of the list) the lane sums, `0..2^shift`.
    pub part: u32,
}

impl GroupLanes {
    #[inline(always)]
    pub fn of(size: u32, k: u32, lane: u32) -> GroupLanes {
        let cap = crate::WARP_SIZE * k;
        let shift = if size > cap / 2 {
            0
        } else if size > cap / 4 {
            1
        } else {
            2
        };
        let seats = crate::WARP_SIZE >> shift;
        GroupLanes {
            shift,
            seat: lane & (seats - 1),
            part: lane >> (5 - shift),
        }
    }
}

/// Packs the children of a cell with more than `size` bodies into warp groups: runs of
/// consecutive small children (bodies, buckets, cells of at most `size` bodies), which are
/// contiguous in the sort order, of at most `size` bodies. A group therefore never spans more than
/// its parent cell, so its bounding box stays compact — 32 consecutive bodies of the sort order
/// can straddle the whole domain. Big child cells pack their own children; buckets longer than a
/// group are cut into whole groups.
#[derive(Clone, Copy, Debug)]
pub struct GroupPacker {
    size: u32,
    start: u32,
    count: u32,
}

impl GroupPacker {
    #[inline(always)]
    pub fn new(size: u32) -> Self {
        GroupPacker {
            size,
            start: 0,
            count: 0,
        }
    }

    /// The next child in octant order: `c` bodies from sort position `s`; `cell` when it is a cell.
    /// Calls `emit(start, count)` for each completed group.
    #[inline(always)]
    pub fn add(&mut self, s: u32, c: u32, cell: bool, emit: &mut impl FnMut(u32, u32)) {
        if c == 0 {
            return;
        }
        if c > self.size {
            self.finish(emit);
            if !cell {
                let mut off = 0;
                while off < c {
                    emit(s + off, (c - off).min(self.size));
                    off += self.size;
                }
            }
            return;
        }
        if self.count + c > self.size {
            self.finish(emit);
        }
        if self.count == 0 {
            self.start = s;
        }
        self.count += c;
    }

    /// Emits the group in progress, if any.
    #[inline(always)]
    pub fn finish(&mut self, emit: &mut impl FnMut(u32, u32)) {
        if self.count > 0 {
            emit(self.start, self.count);
            self.count = 0;
        }
    }
}

/// Where cells and their child slots live (seed 001's two storages). Passed to every tree kernel.
///
/// - Dense: cell `c` (0..cells) has its children at slots `8c..8c+8`; cells are allocated downward
///   from the root `cells - 1` by an atomic counter, so memory grows with the cells in use.
/// - Sparse: the seed's implicit complete octree: the node in slot `s` has its children at
///   `8s+1..8s+9`, the root is node 0, and a new cell simply *is* the slot it fills, so nothing is
///   allocated but the address space grows 8× per level: `cells` bounds the deepest slot index.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Layout {
    /// Capacity: dense, cells allocated; sparse, one more than the largest node index allowed.
    pub cells: u32,
    /// 1 for sparse storage, 0 for dense.
    pub sparse: u32,
}

impl Layout {
    pub const fn dense(cells: u32) -> Self {
        Layout { cells, sparse: 0 }
    }
    pub const fn sparse(cells: u32) -> Self {
        Layout { cells, sparse: 1 }
    }
    #[inline(always)]
    pub fn is_sparse(&self) -> bool {
        self.sparse != 0
    }
    /// The root cell's index.
    #[inline(always)]
    pub fn root(&self) -> i32 {
        if self.is_sparse() {
            0
        } else {
            self.cells as i32 - 1
        }
    }
    /// Child slot `octant` of cell `cell`.
    #[inline(always)]
    pub fn slot(&self, cell: i32, octant: u32) -> usize {
        let base = cell as usize * 8 + octant as usize;
        if self.is_sparse() { base + 1 } else { base }
    }
    /// Length of the child array.
    #[inline(always)]
    pub fn slots(&self) -> usize {
        self.cells as usize * 8 + self.is_sparse() as usize
    }
}

/// The root cell: centre of the box, and half the longest side (slightly enlarged so that rounding
/// never puts a body outside).
#[inline(always)]
pub fn root_cell(h: &TreeHeader) -> ([f32; 3], f32) {
    let c = [
        0.5 * (h.min[0] + h.max[0]),
        0.5 * (h.min[1] + h.max[1]),
        0.5 * (h.min[2] + h.max[2]),
    ];
    let ext = (h.max[0] - h.min[0])
        .max(h.max[1] - h.min[1])
        .max(h.max[2] - h.min[2]);
    // Degenerate (all bodies on one point) boxes still get a non-zero size.
    let half = 0.5 * ext * (1.0 + 1e-6) + f32::MIN_POSITIVE;
    (c, half)
}

/// Octant of point `p` in a cell centred at `c`: bit 0 for x > cx, bit 1 for y, bit 2 for z.
#[inline(always)]
pub fn octant(p: [f32; 3], c: [f32; 3]) -> u32 {
    (p[0] > c[0]) as u32 | ((p[1] > c[1]) as u32) << 1 | ((p[2] > c[2]) as u32) << 2
}

/// Centre of the child cell in `octant` of a cell centred at `c` whose child half-size is `half`.
#[inline(always)]
pub fn child_center(c: [f32; 3], half: f32, octant: u32) -> [f32; 3] {
    let off = |bit: u32| if octant & bit != 0 { half } else { -half };
    [c[0] + off(1), c[1] + off(2), c[2] + off(4)]
}

/// Opening test (multipole acceptance): a cell of width `w` whose centre of mass lies at squared
/// distance `r2` is far enough when `w / r < θ`, i.e. `w² < r² θ²`. θ = 0 opens every cell.
#[inline(always)]
pub fn is_far(r2: f32, w2: f32, theta2: f32) -> bool {
    w2 < r2 * theta2
}

/// Squared distance from point `c` to the axis-aligned box with centre `bc` and half-extents
/// `bh` (zero inside): the nearest any point of the box can be to `c`.
#[inline(always)]
pub fn box_dist2(c: [f32; 3], bc: [f32; 3], bh: [f32; 3]) -> f32 {
    let mut d2 = 0.0;
    for k in 0..3 {
        let d = (c[k] - bc[k]).abs() - bh[k];
        if d > 0.0 {
            d2 += d * d;
        }
    }
    d2
}

/// The group opening test of the warp-group traversal: a cell is far for every body in the box
/// when it is far for the box's nearest point.
#[inline(always)]
pub fn is_far_from_box(com: [f32; 3], w2: f32, bc: [f32; 3], bh: [f32; 3], theta2: f32) -> bool {
    is_far(box_dist2(com, bc, bh), w2, theta2)
}

/// The relative opening criterion (Gadget-2's, per group): a cell of mass `m`, squared width
/// `w2`, centre of mass `s` is far for every body of the box `bc ± bh` when it passes the
/// geometric guard `w / r < θ_max` (`theta2` = θ_max²; r from the box's nearest point) and its
/// truncation error is below a fraction α of the smallest acceleration of the group,
/// `G m / r² · (w / r)^p ≤ α |a|_min`, with p = 2 for monopoles and 3 with quadrupoles (the
/// first neglected order). `lim` = α |a|_min / G; without a usable one (zero, negative, NaN:
/// no previous acceleration) the geometric test decides alone.
#[inline(always)]
pub fn is_far_relative<const QUAD: bool>(
    s: &Body,
    w2: f32,
    bc: [f32; 3],
    bh: [f32; 3],
    theta2: f32,
    lim: f32,
) -> bool {
    let r2 = box_dist2(s.pos(), bc, bh);
    if !is_far(r2, w2, theta2) {
        return false;
    }
    if !(lim > 0.0 && lim.is_finite()) {
        return true;
    }
    // Dimensionless and sqrt-free: x = m / (r² lim), q = (w / r)²; x q ≤ 1, or x² q³ ≤ 1.
    let x = s.m / (r2 * lim);
    let q = w2 / r2;
    if QUAD {
        x * x * q * q * q <= 1.0
    } else {
        x * q <= 1.0
    }
}

/// α |a|_min / G for [`is_far_relative`] from the previous accelerations (with G) of a group.
#[inline(always)]
pub fn relative_limit(alpha: f32, a2_min: f32, g: f32) -> f32 {
    alpha * crate::gpu::math::sqrt(a2_min) / g
}

/// Axis-aligned box of points as (centre, half-extents).
#[inline(always)]
pub fn box_of(lo: [f32; 3], hi: [f32; 3]) -> ([f32; 3], [f32; 3]) {
    (
        [
            0.5 * (lo[0] + hi[0]),
            0.5 * (lo[1] + hi[1]),
            0.5 * (lo[2] + hi[2]),
        ],
        [
            0.5 * (hi[0] - lo[0]),
            0.5 * (hi[1] - lo[1]),
            0.5 * (hi[2] - lo[2]),
        ],
    )
}

/// Squared width of a cell at `depth` below a root of half-size `root_half`.
#[inline(always)]
pub fn width2_at(root_half: f32, depth: usize) -> f32 {
    let w = width_at(root_half, depth);
    w * w
}

/// The width of a cell at `depth` (the root's is `2 root_half`).
#[inline(always)]
pub fn width_at(root_half: f32, depth: usize) -> f32 {
    2.0 * root_half / (1u64 << depth) as f32
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

impl Body {
    #[inline(always)]
    pub fn pos(&self) -> [f32; 3] {
        [self.x, self.y, self.z]
    }
}

// ---------------------------------------------------------------------------------------------
// the tree as the generic walk reads it, and gravity as its interactions
// ---------------------------------------------------------------------------------------------

/// An octree of this module's layout in host slices (the CPU twins' view).
#[derive(Clone, Copy, Debug)]
pub struct SliceOctree<'a> {
    pub bodies: &'a [Body],
    pub child: &'a [i32],
    pub next: &'a [i32],
    pub cell_pm: &'a [Body],
    pub layout: Layout,
}

impl Octree for SliceOctree<'_> {
    #[inline(always)]
    fn n(&self) -> i32 {
        self.bodies.len() as i32
    }
    #[inline(always)]
    fn root(&self) -> i32 {
        self.layout.root()
    }
    #[inline(always)]
    fn child(&self, cell: i32, octant: u32) -> i32 {
        self.child[self.layout.slot(cell, octant)]
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

/// `K` bodies' positions, accelerations and potentials (one lane's in the group kernels; one
/// body's on the CPU). Interactions without the potential leave `phi` alone (and the kernels'
/// registers do not hold it).
#[derive(Clone, Copy, Debug)]
pub struct Targets<const K: usize> {
    pub p: [[f32; 3]; K],
    pub a: [[f32; 3]; K],
    pub phi: [f32; K],
}

impl<const K: usize> Targets<K> {
    #[inline(always)]
    pub fn at(p: [[f32; 3]; K]) -> Self {
        Targets {
            p,
            a: [[0.0; 3]; K],
            phi: [0.0; K],
        }
    }
}

/// [`Monopole`] with the potential ([`add_pair_accel_pot`]): for N-body diagnostics.
#[derive(Clone, Copy, Debug)]
pub struct MonopolePot<const K: usize, const SOFT: bool> {
    pub eps2: f32,
}

impl<const K: usize, const SOFT: bool> Interaction for MonopolePot<K, SOFT> {
    type Extra = ();
    type Target = Targets<K>;
    #[inline(always)]
    fn cell_extra(&self, _: i32) {}
    #[inline(always)]
    fn body_extra(&self, _: i32) {}
    #[inline(always)]
    fn add(&self, t: &mut Targets<K>, s: &Body, _: &()) {
        for k in 0..K {
            add_pair_accel_pot::<SOFT>(&mut t.a[k], &mut t.phi[k], t.p[k], s.pos(), s.m, self.eps2);
        }
    }
}

/// Softened gravity of listed monopoles ([`add_pair_accel`]; `SOFT` as [`softened`]).
#[derive(Clone, Copy, Debug)]
pub struct Monopole<const K: usize, const SOFT: bool> {
    pub eps2: f32,
}

impl<const K: usize, const SOFT: bool> Interaction for Monopole<K, SOFT> {
    type Extra = ();
    type Target = Targets<K>;
    #[inline(always)]
    fn cell_extra(&self, _: i32) {}
    #[inline(always)]
    fn body_extra(&self, _: i32) {}
    #[inline(always)]
    fn add(&self, t: &mut Targets<K>, s: &Body, _: &()) {
        for k in 0..K {
            add_pair_accel::<SOFT>(&mut t.a[k], t.p[k], s.pos(), s.m, self.eps2);
        }
    }
}

/// Listed cells with their quadrupole moments ([`add_pair_accel_quad`]); bodies carry none.
#[derive(Clone, Copy, Debug)]
pub struct Quadrupole<Q, const K: usize, const SOFT: bool> {
    pub eps2: f32,
    /// Per cell, from the summary.
    pub quads: Q,
}

impl<Q: CellData<Quad>, const K: usize, const SOFT: bool> Interaction for Quadrupole<Q, K, SOFT> {
    type Extra = Quad;
    type Target = Targets<K>;
    #[inline(always)]
    fn cell_extra(&self, c: i32) -> Quad {
        self.quads.get(c)
    }
    #[inline(always)]
    fn body_extra(&self, _: i32) -> Quad {
        Quad::default()
    }
    #[inline(always)]
    fn add(&self, t: &mut Targets<K>, s: &Body, q: &Quad) {
        for k in 0..K {
            add_pair_accel_quad::<SOFT>(&mut t.a[k], t.p[k], s.pos(), s.m, q, self.eps2);
        }
    }
}

impl ListExtra for Quad {
    const V4: u32 = 2;
    #[inline(always)]
    unsafe fn load(addr: u32) -> Self {
        use crate::gpu::shared::ld_shared_v4;
        // SAFETY: per the contract.
        let ([xx, yy, zz, xy], [xz, yz, tr, _]) =
            unsafe { (ld_shared_v4(addr), ld_shared_v4(addr + 16)) };
        Quad {
            xx,
            yy,
            zz,
            xy,
            xz,
            yz,
            tr,
            _pad: 0.0,
        }
    }
}

#[cfg(test)]
mod tests;
