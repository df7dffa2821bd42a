//! Barnes–Hut force kernels: the seed's warp-vote traversal, the O(N²) references and the
//! warp-group traversals (monopoles, quadrupoles, the relative criterion, the potential).

use super::super::*;
use crate::gpu::atomic::*;
use crate::gpu::shared::{ld_shared_v4, shared_addr};
use crate::gpu::thread::*;
use crate::gpu::warp::*;
use crate::walk::{DevArray, Shares, walk_warp};

// ---------------------------------------------------------------------------------------------
// gravity: one traversal per warp, warp vote on the opening test
// ---------------------------------------------------------------------------------------------

const STACK: usize = MAX_DEPTH + 1;
const WARPS: usize = (GRAVITY_BLOCK / crate::WARP_SIZE) as usize;
crate::static_shared!(gravity_stack: [i32; WARPS * STACK]);
crate::static_shared!(gravity_w2: [f32; STACK]);

/// Accelerations `acc[i] = G Σ m_j d / (|d|² + ε²)^{3/2}` over the tree. Lane k of the grid
/// handles body `sort[k]` (or `k` when the tree's `sort` is null). A warp opens a cell unless all its lanes
/// find it far (`is_far`); bodies in leaves and buckets interact one by one, skipping the body
/// itself. Launch `GRAVITY_BLOCK`-thread blocks; any grid size.
#[crate::kernel]
pub unsafe fn bh_gravity(tree: TreeView, theta2: f32, eps2: f32, g: f32, acc: *mut Accel) {
    let TreeView {
        bodies,
        n,
        sort,
        header,
        child,
        next,
        cell_pm,
        layout,
        ..
    } = tree;
    let ni = n as i32;
    let lane = lane_id();
    let base = warp_idx() as usize * STACK;
    let stack = gravity_stack();
    let w2 = gravity_w2();
    // SAFETY: header complete; shared arrays sized above; barriers reached by all threads.
    unsafe {
        let (_, root_half) = root_cell(&*header);
        let t = thread_idx_x() as usize;
        if t < STACK {
            *w2.add(t) = width2_at(root_half, t);
        }
        sync_threads();
        let root = layout.root();
        let warps_total = grid_size_1d() / crate::WARP_SIZE;
        let mut w = index_1d() / crate::WARP_SIZE;
        while w * crate::WARP_SIZE < n {
            let k = w * crate::WARP_SIZE + lane;
            let active = k < n;
            let i = if !active {
                0
            } else if sort.is_null() {
                k as i32
            } else {
                *sort.add(k as usize) as i32
            };
            let p = (*bodies.add(i as usize)).pos();
            let mut a = [0.0f32; 3];
            // Warp-uniform traversal state: current cell, next octant, depth; the parents sit in
            // this warp's shared stack as cell * 16 + octant (octant may be 8: exhausted).
            let (mut cell, mut oct, mut depth) = (root, 0u32, 0usize);
            loop {
                if oct == 8 {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                    sync_warp(FULL_MASK); // lane 0's push is visible to all lanes
                    let e = *stack.add(base + depth);
                    cell = e >> 4;
                    oct = (e & 15) as u32;
                    continue;
                }
                let ch = *child.add(layout.slot(cell, oct));
                oct += 1;
                if ch >= ni {
                    let pm = *cell_pm.add((ch - ni) as usize);
                    let far = !active || is_far(dist2(p, pm.pos()), *w2.add(depth + 1), theta2);
                    // All lanes must agree a cell is far before any uses its summary.
                    if vote_all(FULL_MASK, far) {
                        if active {
                            add_pair_accel::<false>(&mut a, p, pm.pos(), pm.m, eps2);
                        }
                    } else {
                        sync_warp(FULL_MASK); // every lane has read the slot lane 0 overwrites
                        if lane == 0 {
                            *stack.add(base + depth) = cell * 16 + oct as i32;
                        }
                        depth += 1;
                        cell = ch - ni;
                        oct = 0;
                    }
                } else {
                    let mut b = ch;
                    while b >= 0 {
                        if active && b != i {
                            let q = *bodies.add(b as usize);
                            add_pair_accel::<false>(&mut a, p, q.pos(), q.m, eps2);
                        }
                        b = *next.add(b as usize);
                    }
                }
            }
            if active {
                *acc.add(i as usize) = Accel {
                    x: g * a[0],
                    y: g * a[1],
                    z: g * a[2],
                };
            }
            w += warps_total;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// brute force: O(N²) with shared-memory tiles
// ---------------------------------------------------------------------------------------------

crate::static_shared!(brute_tile: [Body; BRUTE_BLOCK as usize]);

/// Direct summation in float32: every body against every other, tiles of `BRUTE_BLOCK` bodies in
/// shared memory. Launch `BRUTE_BLOCK`-thread blocks covering n.
#[crate::kernel]
pub unsafe fn bh_brute_force(bodies: *const Body, n: u32, eps2: f32, g: f32, acc: *mut Accel) {
    let i = index_1d();
    let t = thread_idx_x() as usize;
    let tile = brute_tile();
    // SAFETY: i < n guards body reads; the tile holds BRUTE_BLOCK bodies; whole-block barriers.
    unsafe {
        let tile_at = shared_addr(tile);
        let p = if i < n {
            (*bodies.add(i as usize)).pos()
        } else {
            [0.0; 3]
        };
        let mut a = [0.0f32; 3];
        let mut base = 0;
        while base < n {
            let j = base + t as u32;
            // Padding bodies have zero mass: they add exactly zero.
            *tile.add(t) = if j < n {
                *bodies.add(j as usize)
            } else {
                Body::default()
            };
            sync_threads();
            if softened(eps2) {
                brute_tile_sum::<true>(tile_at, p, eps2, &mut a);
            } else {
                brute_tile_sum::<false>(tile_at, p, eps2, &mut a);
            }
            sync_threads();
            base += BRUTE_BLOCK;
        }
        if i < n {
            *acc.add(i as usize) = Accel {
                x: g * a[0],
                y: g * a[1],
                z: g * a[2],
            };
        }
    }
}

/// Adds one shared-memory tile of `BRUTE_BLOCK` bodies (at shared address `tile`) to `a`.
///
/// # Safety
/// The tile is written and behind a barrier.
#[inline(always)]
unsafe fn brute_tile_sum<const SOFT: bool>(tile: u32, p: [f32; 3], eps2: f32, a: &mut [f32; 3]) {
    const UNROLL: u32 = 8;
    const _: () = assert!(BRUTE_BLOCK.is_multiple_of(UNROLL));
    // A counted `while` over constant-offset chunks: `for` over a range compiles to index
    // selects in the unrolled body (four integer instructions per interaction).
    let end = tile + 16 * BRUTE_BLOCK;
    let mut at = tile;
    while at < end {
        for u in 0..UNROLL {
            // SAFETY: per the contract.
            let [x, y, z, m] = unsafe { ld_shared_v4(at + 16 * u) };
            add_pair_accel::<SOFT>(a, p, [x, y, z], m, eps2);
        }
        at += 16 * UNROLL;
    }
}

/// Direct summation accumulated in float64 (positions converted exactly), the GPU reference.
#[crate::kernel]
pub unsafe fn bh_brute_force_f64(
    bodies: *const Body,
    n: u32,
    eps2: f64,
    g: f64,
    acc: *mut [f64; 3],
) {
    let i = index_1d();
    let t = thread_idx_x() as usize;
    let tile = brute_tile();
    // SAFETY: as in bh_brute_force.
    unsafe {
        let p = if i < n {
            (*bodies.add(i as usize)).pos()
        } else {
            [0.0; 3]
        };
        let p = [p[0] as f64, p[1] as f64, p[2] as f64];
        let mut a = [0.0f64; 3];
        let mut base = 0;
        while base < n {
            let j = base + t as u32;
            *tile.add(t) = if j < n {
                *bodies.add(j as usize)
            } else {
                Body::default()
            };
            sync_threads();
            for jj in 0..BRUTE_BLOCK as usize {
                let q = *tile.add(jj);
                let d = pair_accel_f64(p, [q.x as f64, q.y as f64, q.z as f64], q.m as f64, eps2);
                a = [a[0] + d[0], a[1] + d[1], a[2] + d[2]];
            }
            sync_threads();
            base += BRUTE_BLOCK;
        }
        if i < n {
            *acc.add(i as usize) = [g * a[0], g * a[1], g * a[2]];
        }
    }
}

// ---------------------------------------------------------------------------------------------
// gravity, warp-group traversal: one opening test per cell for the warp's bounding box, tested
// up to 32 children (four cells) at a time, with an interaction list evaluated by all 32 lanes (after Bonsai)
// ---------------------------------------------------------------------------------------------

const GROUP_WARPS: usize = (GROUP_BLOCK / crate::WARP_SIZE) as usize;
crate::static_shared!(group_stack: [i32; GROUP_WARPS * GROUP_STACK]);
crate::static_shared!(group_list: [Body; GROUP_WARPS * GROUP_LIST]);
crate::static_shared!(group_quads: [Quad; GROUP_WARPS * GROUP_LIST]);
crate::static_shared!(group_w2: [f32; STACK]);

/// The bounding box (centre, half-extents) of the points whose per-lane bounds are `lo..hi`,
/// reduced over the warp (every lane takes part).
///
/// # Safety
/// Whole warp, convergent.
#[inline(always)]
pub(crate) unsafe fn warp_box(mut lo: [f32; 3], mut hi: [f32; 3]) -> ([f32; 3], [f32; 3]) {
    for c in 0..3 {
        let mut off = 16;
        while off > 0 {
            // SAFETY: the whole warp is here, per the contract.
            unsafe {
                lo[c] = lo[c].min(shfl_xor_f32(FULL_MASK, lo[c], off).0);
                hi[c] = hi[c].max(shfl_xor_f32(FULL_MASK, hi[c], off).0);
            }
            off /= 2;
        }
    }
    box_of(lo, hi)
}

/// Pops one traversal step's cells from a warp's group stack of `*sp` entries: up to
/// [`GROUP_POP`] while the stack stays under [`GROUP_STACK_SOFT`], else one (the bound behind
/// [`GROUP_STACK`]). Returns how many were popped and the entry of cell `slot` (0 past them).
///
/// # Safety
/// Whole warp, convergent; `stack` is the warp's shared stack holding `*sp > 0` entries.
#[inline(always)]
pub(crate) unsafe fn pop_cells(stack: *const i32, sp: &mut usize, slot: usize) -> (usize, i32) {
    let np = if *sp + 8 * GROUP_POP <= GROUP_STACK_SOFT + GROUP_POP {
        (*sp).min(GROUP_POP)
    } else {
        1
    };
    *sp -= np;
    // SAFETY: per the contract: the whole warp is here, entries sp..sp + np are on the stack.
    unsafe {
        sync_warp(FULL_MASK); // pushes by other lanes are visible
        let e = if slot < np { *stack.add(*sp + slot) } else { 0 };
        sync_warp(FULL_MASK); // all have read slots sp.. before they are reused
        (np, e)
    }
}

/// Defines a group-gravity kernel: `gravity_group::<K, SOFT, QUAD>` behind one entry point;
/// `relative` adds the parameter `alpha` and selects the relative criterion (`acc` then holds
/// the previous accelerations on entry).
macro_rules! group_kernel {
    ($(#[$doc:meta])* $name:ident, $k:literal, $quad:literal) => {
        group_kernel!(@ $(#[$doc])* $name, $k, $quad, false, [], 0.0);
    };
    ($(#[$doc:meta])* $name:ident, $k:literal, $quad:literal, relative) => {
        group_kernel!(@ $(#[$doc])* $name, $k, $quad, true, [alpha: f32,], alpha);
    };
    (@ $(#[$doc:meta])* $name:ident, $k:literal, $quad:literal, $rel:literal,
        [$($extra:tt)*], $alpha:expr) => {
        $(#[$doc])*
        #[crate::kernel]
        pub unsafe fn $name(
            tree: TreeView,
            theta2: f32,
            eps2: f32,
            g: f32,
            $($extra)*
            acc: *mut Accel,
        ) {
            // SAFETY: forwarded contract.
            unsafe {
                let pot = core::ptr::null_mut();
                if softened(eps2) {
                    gravity_group::<$k, true, $quad, false, $rel>(
                        tree, theta2, eps2, g, acc, pot, $alpha,
                    )
                } else {
                    gravity_group::<$k, false, $quad, false, $rel>(
                        tree, theta2, eps2, g, acc, pot, $alpha,
                    )
                }
            }
        }
    };
}

group_kernel!(
    /// Accelerations like [`bh_gravity`], but each warp traverses the tree once for the bounding
    /// box of one warp group (`groups[g]` = (first, size) in `sort`, packed by `bh_sort` so that a
    /// group never spans more than one parent cell; groups are handed out by
    /// `header.next_group`): a cell is used whole when it is far from the whole box
    /// ([`is_far_from_box`]), which implies far for every body. Each step pops up to
    /// [`GROUP_POP`] cells and lanes `8s..8s+8` test the children of cell `s` in parallel;
    /// accepted cells and bodies go to a shared interaction list that all lanes evaluate
    /// together. Monopoles (`cell_quad` unused). Groups of up to 32 bodies (one per lane;
    /// `bh_sort` with `group_size` 32); a group of at most 16 (8) bodies gives each body 2 (4)
    /// lanes that sum shares of the list. Launch `GROUP_BLOCK`-thread blocks.
    bh_gravity_group, 1, false
);
group_kernel!(
    /// [`bh_gravity_group`] with the cells' quadrupole moments (`cell_quad`, summarized).
    /// Separate so that the monopole kernels reserve no shared memory for listed moments.
    bh_gravity_group_quad, 1, true
);
group_kernel!(
    /// [`bh_gravity_group`] with two bodies per lane: groups of up to 64 bodies (`bh_sort` with
    /// `group_size` 64), so a traversal serves twice the bodies and every list entry loaded from
    /// shared memory is used twice.
    bh_gravity_group2, 2, false
);
group_kernel!(
    /// [`bh_gravity_group2`] with quadrupole moments (see [`bh_gravity_group_quad`]).
    bh_gravity_group2_quad, 2, true
);
group_kernel!(
    /// [`bh_gravity_group2`] with Gadget's relative opening criterion ([`is_far_relative`]):
    /// `acc` holds each body's previous acceleration (with G) on entry and the new one on exit
    /// (a group reads its own bodies' before it writes them); `alpha` is the tolerated fraction
    /// of the group's smallest previous acceleration, `theta2` the geometric guard θ_max².
    bh_gravity_group2_rel, 2, false, relative
);
group_kernel!(
    /// [`bh_gravity_group2_rel`] with quadrupole moments: the criterion's order is one higher.
    bh_gravity_group2_quad_rel, 2, true, relative
);

/// [`bh_gravity_group2`] that also writes each body's potential `pot[i] = G Σ_j −m_j /
/// √(r_ij² + ε²)` over the other bodies (monopoles, the same list as the accelerations): the
/// N-body diagnostics' potential energy. Same launch as [`bh_gravity_group2`].
#[crate::kernel]
pub unsafe fn bh_gravity_group2_pot(
    tree: TreeView,
    theta2: f32,
    eps2: f32,
    g: f32,
    acc: *mut Accel,
    pot: *mut f32,
) {
    // SAFETY: forwarded contract.
    unsafe {
        if softened(eps2) {
            gravity_group::<2, true, false, true, false>(tree, theta2, eps2, g, acc, pot, 0.0)
        } else {
            gravity_group::<2, false, false, true, false>(tree, theta2, eps2, g, acc, pot, 0.0)
        }
    }
}

/// The warp-group traversal with `K` bodies per lane (lane `l` holds group members `l + 32 k`;
/// in a group of at most a half or a quarter of `32 K` bodies, lanes `l` and `l ± 16` (and `± 8`)
/// hold the same members and split the list between them).
///
/// # Safety
/// As [`bh_gravity_group`]; groups hold at most `32 K` bodies.
#[inline(always)]
unsafe fn gravity_group<
    const K: usize,
    const SOFT: bool,
    const QUAD: bool,
    const POT: bool,
    const REL: bool,
>(
    tree: TreeView,
    theta2: f32,
    eps2: f32,
    g: f32,
    acc: *mut Accel,
    pot: *mut f32,
    alpha: f32,
) {
    let TreeView {
        header, cell_quad, ..
    } = tree;
    let lane = lane_id();
    let wib = warp_idx() as usize;
    let stack = unsafe { group_stack().add(wib * GROUP_STACK) };
    let list = unsafe { group_list().add(wib * GROUP_LIST) };
    // Monopoles: no list of moments (and no shared memory reserved for one).
    let lq: *mut Quad = if QUAD {
        unsafe { group_quads().add(wib * GROUP_LIST) }
    } else {
        core::ptr::null_mut()
    };
    let w2 = group_w2();
    // SAFETY: header complete; shared arrays sized above; whole warps throughout (inactive lanes
    // stay in the loop); barriers reached by all threads.
    unsafe {
        let (_, root_half) = root_cell(&*header);
        let t = thread_idx_x() as usize;
        if t < STACK {
            *w2.add(t) = width2_at(root_half, t);
        }
        sync_threads();
        let ngroups = (*header).groups;
        let next_group = &raw mut (*header).next_group;
        let take_group = || {
            let w = if lane == 0 {
                atomic_add_u32(next_group, 1)
            } else {
                0
            };
            shfl_idx(FULL_MASK, w, 0).0
        };
        let mut w = take_group();
        while w < ngroups {
            let [first, size] = tree.group(w);
            let GroupLanes { shift, seat, part } = GroupLanes::of(size, K as u32, lane);
            let seats = crate::WARP_SIZE >> shift;
            // Member `seat + seats k`; absent members stand on the group's first body so they do
            // not widen the box.
            let member = |k: usize| seat + seats * k as u32;
            let active: [bool; K] = core::array::from_fn(|k| member(k) < size);
            let i: [i32; K] = core::array::from_fn(|k| {
                tree.order(first + if active[k] { member(k) } else { 0 }) as i32
            });
            let p: [[f32; 3]; K] = core::array::from_fn(|k| tree.body(i[k]).pos());
            let (mut lo, mut hi) = (p[0], p[0]);
            for pk in &p[1..] {
                for c in 0..3 {
                    lo[c] = lo[c].min(pk[c]);
                    hi[c] = hi[c].max(pk[c]);
                }
            }
            let (bc, bh) = warp_box(lo, hi);
            // The relative criterion's bound from the group's smallest previous acceleration.
            let lim = if REL {
                let mut a2 = f32::INFINITY;
                for ik in i {
                    let a = *acc.add(ik as usize);
                    a2 = a2.min(a.x * a.x + a.y * a.y + a.z * a.z);
                }
                relative_limit(alpha, all_reduce(a2, f32::min), g)
            } else {
                0.0
            };

            // One walk of the group's box; the interaction sums each lane's share of the list.
            let far = |s: &Body, depth: usize| {
                if REL {
                    is_far_relative::<QUAD>(s, *w2.add(depth), bc, bh, theta2, lim)
                } else {
                    is_far_from_box(s.pos(), *w2.add(depth), bc, bh, theta2)
                }
            };
            let shares = Shares { part, shift };
            let mut t = Targets::at(p);
            let stats = if POT {
                let inter = MonopolePot::<K, SOFT> { eps2 };
                let none = core::ptr::NonNull::<()>::dangling().as_ptr();
                walk_warp(&tree, &inter, far, stack, list, none, shares, &mut t)
            } else if QUAD {
                let quads = DevArray::new(cell_quad);
                let inter = Quadrupole::<_, K, SOFT> { eps2, quads };
                walk_warp(&tree, &inter, far, stack, list, lq, shares, &mut t)
            } else {
                let inter = Monopole::<K, SOFT> { eps2 };
                let none = core::ptr::NonNull::<()>::dangling().as_ptr();
                walk_warp(&tree, &inter, far, stack, list, none, shares, &mut t)
            };
            let (mut a, mut phi, listed, popped) = (t.a, t.phi, stats.listed, stats.popped);
            // The shares of a body's lanes (lanes `seat + seats j`) summed into each of them.
            let mut off = seats;
            while off < crate::WARP_SIZE {
                for ak in a.iter_mut() {
                    for c in ak.iter_mut() {
                        *c += shfl_xor_f32(FULL_MASK, *c, off).0;
                    }
                }
                if POT {
                    for pk in phi.iter_mut() {
                        *pk += shfl_xor_f32(FULL_MASK, *pk, off).0;
                    }
                }
                off <<= 1;
            }
            if lane == 0 {
                atomic_add_u64(&raw mut (*header).interactions, listed * size as u64);
                atomic_add_u64(&raw mut (*header).opened, popped);
            }
            for k in 0..K {
                if active[k] && part == 0 {
                    *acc.add(i[k] as usize) = Accel {
                        x: g * a[k][0],
                        y: g * a[k][1],
                        z: g * a[k][2],
                    };
                    if POT {
                        // The potential of the others: the body's own term taken out.
                        let m = tree.body(i[k]).m;
                        *pot.add(i[k] as usize) = g * (phi[k] - self_potential::<SOFT>(m, eps2));
                    }
                }
            }
            w = take_group();
        }
    }
}
