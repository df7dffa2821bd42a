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
//!
//! This file holds the tree's types (bodies, header, storage [`Layout`]), its constants and the
//! cell geometry; the cell summary, the pair interactions, the opening tests, the warp groups and
//! the walk's interactions each have a module, re-exported here.

pub mod kernels;
pub mod morton;
mod view;

mod groups;
mod interactions;
mod opening;
mod pair;
mod summary;
pub use groups::*;
pub use interactions::*;
pub use opening::*;
pub use pair::*;
pub use summary::*;
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

impl Body {
    #[inline(always)]
    pub fn pos(&self) -> [f32; 3] {
        [self.x, self.y, self.z]
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

crate::shared_type!(Body, Accel, TreeHeader, Quad, Layout);

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

#[cfg(test)]
mod tests;
