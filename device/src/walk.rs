//! One warp-group tree walk, generic over the tree and over the interaction.
//!
//! A *group* of nearby targets (a warp's bodies or queries) walks the octree once against the
//! bounding box of the group: a cell that the caller's opening test `far(summary, depth)` accepts
//! is listed whole, otherwise opened; bodies are listed one by one. The listed sources are summed
//! by an [`Interaction`] into each target's [`Interaction::Target`]. Barnes–Hut gravity
//! (monopoles, quadrupoles: `crate::bh`), the query kernels of stochastic Barnes–Hut
//! (`crate::sbh`) and a user's own force (see `examples/`) are interactions of this one walk.
//!
//! Two forms share every decision: [`classify`] says what one child slot is (nothing, a listed
//! source, a cell to open, a bucket chain), and
//! - [`walk_warp`] (GPU) runs it with a warp: each step pops up to `GROUP_POP` cells whose
//!   children lanes `8s..8s+8` classify in parallel; listed sources go to a list in shared
//!   memory that all lanes sum (lanes may split it: [`Shares`]) when it fills, after Bonsai;
//! - [`walk_list`] (CPU twin, host only) makes the same list sequentially, so the two backends
//!   differ only in summation order.
//!
//! [`near`] is the same walk with a second, near-field list (gravity and SPH neighbours in one
//! traversal).

use crate::bh::Body;

pub mod near;

/// A tree as the walk reads it: `crate::bh`'s slot conventions (a child slot holds `EMPTY`, a
/// body `0..n`, or a cell as `n + cell`; buckets chain through `next`).
pub trait Octree {
    /// Number of bodies: slot values `>= n` are cells.
    fn n(&self) -> i32;
    /// The root cell.
    fn root(&self) -> i32;
    /// Child slot `octant` of `cell`.
    fn child(&self, cell: i32, octant: u32) -> i32;
    /// The next body of `body`'s bucket chain, or a negative value.
    fn next(&self, body: i32) -> i32;
    /// Body `i`: position and mass (or weight).
    fn body(&self, i: i32) -> Body;
    /// Cell `c`'s summary: centre of mass and mass.
    fn cell(&self, c: i32) -> Body;
}

/// What a list entry carries beside the source's position and mass (a quadrupole moment, a
/// dipole, or nothing), and how the GPU walk loads it back from shared memory: exactly `V4`
/// 16-byte vectors (`walk_warp` refuses to compile otherwise).
pub trait ListExtra: Copy + Default {
    /// 16-byte vectors per entry (0 for nothing: no shared memory is touched).
    const V4: u32;
    /// The entry at shared-window address `addr`.
    ///
    /// # Safety
    /// `addr` holds an entry written before a barrier (`V4 > 0`), 16-byte aligned.
    unsafe fn load(addr: u32) -> Self;
}

impl ListExtra for () {
    const V4: u32 = 0;
    #[inline(always)]
    unsafe fn load(_: u32) -> Self {}
}

impl ListExtra for [f32; 4] {
    const V4: u32 = 1;
    #[inline(always)]
    unsafe fn load(addr: u32) -> Self {
        // SAFETY: per the contract.
        unsafe { crate::gpu::shared::ld_shared_v4(addr) }
    }
}

/// Per-cell data an interaction reads when it lists a cell (moments, dipoles): host slices on the
/// CPU, device arrays in kernels.
pub trait CellData<T> {
    fn get(&self, i: i32) -> T;
}

impl<T: Copy> CellData<T> for &[T] {
    #[inline(always)]
    fn get(&self, i: i32) -> T {
        self[i as usize]
    }
}

/// A device array read by index (the kernels' [`CellData`]).
#[derive(Clone, Copy, Debug)]
pub struct DevArray<T>(*const T);

impl<T> DevArray<T> {
    /// # Safety
    /// Every index the walk asks for is in bounds, and the data stays unchanged while in use.
    #[inline(always)]
    pub unsafe fn new(p: *const T) -> Self {
        DevArray(p)
    }
}

impl<T: Copy> CellData<T> for DevArray<T> {
    #[inline(always)]
    fn get(&self, i: i32) -> T {
        // SAFETY: per `new`'s contract.
        unsafe { *self.0.add(i as usize) }
    }
}

/// An interaction summed over a walk's list.
pub trait Interaction {
    /// Carried by each list entry beside the source.
    type Extra: ListExtra;
    /// One lane's (or one CPU target's) position(s) and running sums.
    type Target;
    /// The extra of listed cell `c`.
    fn cell_extra(&self, c: i32) -> Self::Extra;
    /// The extra of listed body `b`.
    fn body_extra(&self, b: i32) -> Self::Extra;
    /// Adds source `s` (with its extra) to `t`.
    fn add(&self, t: &mut Self::Target, s: &Body, e: &Self::Extra);
}

/// What a child slot asks of the walk: one of the [`step`] codes. A plain `u32`, not an enum:
/// the warp walk compares it in 32-bit registers for its three ballots (an enum was widened to 64
/// bits by the backend, two instructions per compare, measured 4% slower on the lattice).
pub type Step = u32;

/// The [`Step`] codes.
pub mod step {
    /// An empty slot.
    pub const NOTHING: u32 = 0;
    /// A source to list whole: a far cell, or a body alone in its slot.
    pub const LIST: u32 = 1;
    /// A cell to open, one level deeper.
    pub const OPEN: u32 = 2;
    /// A bucket: the chain of bodies starting here, each listed.
    pub const CHAIN: u32 = 3;
}

/// The decision for child slot value `ch` at `depth` (the child's level): the [`Step`] and the
/// source's summary (a cell's or a body's; zero for an empty slot).
#[inline(always)]
pub fn classify<T: Octree>(
    tree: &T,
    ch: i32,
    depth: usize,
    far: impl Fn(&Body, usize) -> bool,
) -> (Step, Body) {
    let n = tree.n();
    if ch >= n {
        let s = tree.cell(ch - n);
        let what = if far(&s, depth) {
            step::LIST
        } else {
            step::OPEN
        };
        (what, s)
    } else if ch >= 0 {
        let s = tree.body(ch);
        let what = if tree.next(ch) >= 0 {
            step::CHAIN
        } else {
            step::LIST
        };
        (what, s)
    } else {
        (step::NOTHING, Body::default())
    }
}

/// The extra of a listed slot value `ch` (a cell `>= n` or a body).
#[inline(always)]
fn extra_of<T: Octree, I: Interaction>(tree: &T, inter: &I, ch: i32) -> I::Extra {
    let n = tree.n();
    if ch >= n {
        inter.cell_extra(ch - n)
    } else {
        inter.body_extra(ch)
    }
}

/// The list of sources a group's walk accepts, in the CPU twin's order: the same decisions as
/// [`walk_warp`] (a depth-first stack of opened cells, children in octant order).
#[cfg(not(target_arch = "nvptx64"))]
pub fn walk_list<T: Octree, I: Interaction>(
    tree: &T,
    inter: &I,
    far: impl Fn(&Body, usize) -> bool,
) -> std::vec::Vec<(Body, I::Extra)> {
    use std::vec::Vec;
    let mut list = Vec::new();
    let mut stack = Vec::from([(tree.root(), 0usize)]);
    while let Some((cell, depth)) = stack.pop() {
        for o in 0..8 {
            let ch = tree.child(cell, o);
            match classify(tree, ch, depth + 1, &far) {
                (step::LIST, s) => list.push((s, extra_of(tree, inter, ch))),
                (step::OPEN, _) => stack.push((ch - tree.n(), depth + 1)),
                (step::CHAIN, _) => {
                    let mut b = ch;
                    while b >= 0 {
                        list.push((tree.body(b), inter.body_extra(b)));
                        b = tree.next(b);
                    }
                }
                _ => {}
            }
        }
    }
    list
}

/// How a lane shares the list with the other lanes of its target: `2^shift` lanes per target,
/// this lane summing consecutive range `part` of `2^shift` (`(0, 0)`: the whole list).
#[derive(Clone, Copy, Debug, Default)]
pub struct Shares {
    pub part: u32,
    pub shift: u32,
}

/// What a walk did, for the kernels' statistics.
#[derive(Clone, Copy, Debug, Default)]
pub struct WalkStats {
    /// Sources listed (each summed by every target).
    pub listed: u64,
    /// Cells popped (opened).
    pub popped: u64,
}

/// Entries of a warp's interaction list; flushed when fewer than a warp's worth are left.
pub const GROUP_LIST: usize = crate::bh::GROUP_LIST;

/// The GPU walk of one warp group from the root (see the module docs). `stack` holds the warp's
/// `GROUP_STACK` entries, `list` and `extras` its [`GROUP_LIST`] entries in shared memory
/// (`extras` is unused, and may be dangling, when `I::Extra` has no vectors). Every lane sums its
/// share of each flushed list into `target`.
///
/// # Safety
/// The whole warp calls it together and stays convergent (lanes without a target stand on one
/// and discard the result); the shared arrays are the warp's own; the tree is complete.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn walk_warp<T: Octree, I: Interaction>(
    tree: &T,
    inter: &I,
    far: impl Fn(&Body, usize) -> bool,
    stack: *mut i32,
    list: *mut Body,
    extras: *mut I::Extra,
    shares: Shares,
    target: &mut I::Target,
) -> WalkStats {
    use crate::bh::kernels::pop_cells;
    use crate::gpu::thread::{lane_id, lanemask_lt};
    use crate::gpu::warp::{FULL_MASK, ballot, shfl_idx};
    // The list of extras is read back as `V4` 16-byte vectors per entry.
    const {
        assert!(core::mem::size_of::<I::Extra>() == 16 * I::Extra::V4 as usize);
        assert!(I::Extra::V4 == 0 || core::mem::align_of::<I::Extra>() >= 4);
    }
    let n = tree.n();
    let lane = lane_id();
    let below = lanemask_lt();
    let mut stats = WalkStats::default();
    // SAFETY: per the contract.
    unsafe {
        let mut len = 0usize;
        // The window addresses are taken at each flush, not held across the walk: two fewer
        // registers live in the classify loop (ptxas: sbh grouped quadrupoles 60 → 58).
        macro_rules! flush {
            () => {
                flush_list(inter, list, extras, &mut len, shares, target, &mut stats)
            };
        }
        // Stack entries: cell * 32 + depth (depth ≤ MAX_DEPTH < 32).
        if lane == 0 {
            *stack = tree.root() * 32;
        }
        let mut sp = 1usize;
        // Lanes 8s..8s+8 test the children of popped cell s.
        let (slot, octant) = ((lane / 8) as usize, lane % 8);
        while sp > 0 {
            let (np, e) = pop_cells(stack, &mut sp, slot);
            stats.popped += np as u64;
            let (cell, depth) = (e >> 5, (e & 31) as usize);
            // `classify`, spelled out: returning its tuple made the backend keep the step in a
            // register and compare it three times, 4% slower on the lattice than these branches
            // (which it folds into the ballots' predicates).
            let (mut what, mut ch, mut s) = (step::NOTHING, crate::bh::EMPTY, Body::default());
            if slot < np {
                ch = tree.child(cell, octant);
                if ch >= n {
                    s = tree.cell(ch - n);
                    what = if far(&s, depth + 1) {
                        step::LIST
                    } else {
                        step::OPEN
                    };
                } else if ch >= 0 {
                    s = tree.body(ch);
                    what = if tree.next(ch) >= 0 {
                        step::CHAIN
                    } else {
                        step::LIST
                    };
                }
            }
            let take = ballot(FULL_MASK, what == step::LIST);
            if what == step::LIST {
                let at = len + (take & below).count_ones() as usize;
                *list.add(at) = s;
                if I::Extra::V4 > 0 {
                    *extras.add(at) = extra_of(tree, inter, ch);
                }
            }
            len += take.count_ones() as usize;
            let open = ballot(FULL_MASK, what == step::OPEN);
            if what == step::OPEN {
                *stack.add(sp + (open & below).count_ones() as usize) =
                    (ch - n) * 32 + depth as i32 + 1;
            }
            sp += open.count_ones() as usize;
            let mut chains = ballot(FULL_MASK, what == step::CHAIN);
            while chains != 0 {
                let src = chains.trailing_zeros();
                chains &= chains - 1;
                let mut b = shfl_idx(FULL_MASK, ch as u32, src).0 as i32;
                while b >= 0 {
                    if len == GROUP_LIST {
                        flush!();
                    }
                    if lane == 0 {
                        *list.add(len) = tree.body(b);
                        if I::Extra::V4 > 0 {
                            *extras.add(len) = inter.body_extra(b);
                        }
                    }
                    len += 1;
                    b = tree.next(b);
                }
            }
            if len > GROUP_LIST - crate::WARP_SIZE as usize {
                flush!();
            }
        }
        flush!();
    }
    stats
}

/// Adds this lane's share of the warp's list to `target` and empties the list.
///
/// # Safety
/// Whole warp, convergent; the list's `*len` entries (and extras) are written before the call.
#[inline(always)]
unsafe fn flush_list<I: Interaction>(
    inter: &I,
    list: *mut Body,
    extras: *mut I::Extra,
    len: &mut usize,
    Shares { part, shift }: Shares,
    target: &mut I::Target,
    stats: &mut WalkStats,
) {
    use crate::gpu::shared::{ld_shared_v4, shared_addr};
    use crate::gpu::warp::{FULL_MASK, sync_warp};
    let share = (*len as u32 + (1 << shift) - 1) >> shift;
    let begin = (part * share).min(*len as u32);
    let count = share.min(*len as u32 - begin);
    let stride = 16 * I::Extra::V4;
    // SAFETY: per the contract.
    unsafe {
        sync_warp(FULL_MASK); // entries written by other lanes are visible
        let mut at = shared_addr(list) + 16 * begin;
        let mut eat = if I::Extra::V4 > 0 {
            shared_addr(extras) + stride * begin
        } else {
            0
        };
        let end = at + 16 * count;
        // A `while` on the address, not a `for` over a range: fewer registers in the hot loop.
        while at < end {
            let [x, y, z, m] = ld_shared_v4(at);
            let e = I::Extra::load(eat);
            inter.add(target, &Body { x, y, z, m }, &e);
            at += 16;
            eat += stride;
        }
        sync_warp(FULL_MASK); // everyone has read before the list is refilled
    }
    stats.listed += *len as u64;
    *len = 0;
}
