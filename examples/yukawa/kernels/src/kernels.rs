//! The example's kernels: the Yukawa force through warpkit's tree ([`yukawa_group`]) and by direct
//! summation ([`yukawa_direct`]). Both are `#[kernel]`s: PTX entries on nvptx64, typed launch
//! contracts on the host.

use crate::{Yukawa, add_yukawa_accel};
use warpkit_device::bh::{Accel, Body, GROUP_LIST, GROUP_STACK, MAX_DEPTH};
use warpkit_device::bh::{Targets, TreeView, box_of, is_far_from_box, root_cell};
use warpkit_device::bh::{softened, width2_at};
use warpkit_device::gpu::shared::{ld_shared_v4, shared_addr};
use warpkit_device::gpu::thread::{block_dim_x, block_idx_x, grid_dim_x, index_1d, lane_id};
use warpkit_device::gpu::thread::{sync_threads, thread_idx_x, warp_idx};
use warpkit_device::gpu::warp::all_reduce;
use warpkit_device::walk::{DevArray, Shares, walk_warp};
use warpkit_device::{WARP_SIZE, kernel, static_shared};

/// Threads per block of [`yukawa_group`] (4 warps, each with its own stack and list).
pub const GROUP_BLOCK: u32 = 128;
/// Threads per block of [`yukawa_direct`], and bodies per shared-memory tile.
pub const DIRECT_BLOCK: u32 = 256;

const GROUP_WARPS: usize = (GROUP_BLOCK / WARP_SIZE) as usize;
// Each warp's cell stack, interaction list and the list entries' extras (warpkit's sizes: the
// walk relies on them), and the squared cell width per depth, computed once per block.
static_shared!(yk_stack: [i32; GROUP_WARPS * GROUP_STACK]);
static_shared!(yk_list: [Body; GROUP_WARPS * GROUP_LIST]);
static_shared!(yk_extras: [[f32; 4]; GROUP_WARPS * GROUP_LIST]);
static_shared!(yk_w2: [f32; MAX_DEPTH + 1]);

/// Yukawa accelerations of every body through warpkit's octree, one warp per warp group: the
/// warp walks the tree once for its group's bounding box ([`walk_warp`] with warpkit's opening
/// test: a cell far from the whole box by `w / r < θ` is listed, nearer cells are opened) and each
/// lane sums the list for its body with [`Yukawa`] (point masses, a cell's corrected by its
/// second moment's trace from `cell_quad`).
///
/// `tree` is warpkit's octree (`warpkit::bh::gpu::DeviceOctree::view`) summarized with moments
/// and sorted into warp groups of at most 32 (any storage); `acc` holds its n accelerations (G
/// included). Warps take groups `w, w + warps, …` (no atomics: the header is only read, so the
/// kernel can be relaunched for timing). Launch `GROUP_BLOCK`-thread blocks, any number of them.
#[kernel]
pub unsafe fn yukawa_group(
    tree: TreeView,
    theta2: f32,
    eps2: f32,
    inv_lambda: f32,
    g: f32,
    acc: *mut Accel,
) {
    // One branch per launch, so the hot loop is compiled without the zero-distance select.
    // SAFETY: forwarded contract.
    unsafe {
        if softened(eps2) {
            group::<true>(tree, theta2, eps2, inv_lambda, g, acc)
        } else {
            group::<false>(tree, theta2, eps2, inv_lambda, g, acc)
        }
    }
}

/// [`yukawa_group`]'s body for one `SOFT`.
///
/// # Safety
/// As [`yukawa_group`].
#[inline(always)]
unsafe fn group<const SOFT: bool>(
    tree: TreeView,
    theta2: f32,
    eps2: f32,
    inv_lambda: f32,
    g: f32,
    acc: *mut Accel,
) {
    let TreeView {
        bodies,
        sort,
        groups,
        header,
        cell_quad,
        ..
    } = tree;
    let lane = lane_id();
    let wib = warp_idx() as usize;
    let warps = grid_dim_x() * (block_dim_x() / WARP_SIZE);
    let mut w = warp_idx() + block_idx_x() * (block_dim_x() / WARP_SIZE);
    // SAFETY: the tree is complete and sorted (per the contract); the shared arrays are sized
    // above, one stack, list and extras per warp; every thread reaches the barrier, and whole warps stay
    // in the loop (a lane without a body stands on the group's first), as `walk_warp` requires.
    unsafe {
        let (stack, list, extras) = (
            yk_stack().add(wib * GROUP_STACK),
            yk_list().add(wib * GROUP_LIST),
            yk_extras().add(wib * GROUP_LIST),
        );
        let w2 = yk_w2();
        let (_, root_half) = root_cell(&*header);
        let t = thread_idx_x() as usize;
        if t <= MAX_DEPTH {
            *w2.add(t) = width2_at(root_half, t);
        }
        sync_threads();
        let ngroups = (*header).groups;
        let inter = Yukawa::<_, 1, SOFT>::new(eps2, inv_lambda, DevArray::new(cell_quad));
        while w < ngroups {
            let [first, size] = *groups.add(w as usize);
            let active = lane < size;
            let i = *sort.add((first + if active { lane } else { 0 }) as usize);
            let p = (*bodies.add(i as usize)).pos();
            // The group's bounding box: min and max over the warp.
            let lo = [0, 1, 2].map(|c| all_reduce(p[c], f32::min));
            let hi = [0, 1, 2].map(|c| all_reduce(p[c], f32::max));
            let (bc, bh) = box_of(lo, hi);
            let far =
                |s: &Body, depth: usize| is_far_from_box(s.pos(), *w2.add(depth), bc, bh, theta2);
            let mut target = Targets::at([p]);
            let shares = Shares::default(); // every lane sums the whole list for its own body
            walk_warp(&tree, &inter, far, stack, list, extras, shares, &mut target);
            if active {
                let a = target.a[0];
                *acc.add(i as usize) = Accel {
                    x: g * a[0],
                    y: g * a[1],
                    z: g * a[2],
                };
            }
            w += warps;
        }
    }
}

static_shared!(yk_tile: [Body; DIRECT_BLOCK as usize]);

/// Direct summation of the Yukawa force, every body against every body (a body adds nothing to
/// itself), in float32: each block stages `DIRECT_BLOCK` bodies at a time in shared memory and
/// every thread sums the tile for its body. `n` bodies, `acc` n accelerations (G included).
/// Launch `DIRECT_BLOCK`-thread blocks covering n.
#[kernel]
pub unsafe fn yukawa_direct(
    bodies: *const Body,
    n: u32,
    eps2: f32,
    inv_lambda: f32,
    g: f32,
    acc: *mut Accel,
) {
    let i = index_1d();
    let t = thread_idx_x() as usize;
    let tile = yk_tile();
    // SAFETY: `i < n` guards the body reads and the store; the tile holds DIRECT_BLOCK bodies;
    // every thread of the block reaches both barriers of each round.
    unsafe {
        let at = shared_addr(tile);
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
                tile_sum::<true>(at, p, eps2, inv_lambda, &mut a);
            } else {
                tile_sum::<false>(at, p, eps2, inv_lambda, &mut a);
            }
            sync_threads();
            base += DIRECT_BLOCK;
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

/// Adds one tile (at shared address `tile`) to `a`, in tile order (the CPU twin's order).
///
/// # Safety
/// The tile is written and behind a barrier.
#[inline(always)]
unsafe fn tile_sum<const SOFT: bool>(tile: u32, p: [f32; 3], eps2: f32, il: f32, a: &mut [f32; 3]) {
    // A `while` over the address, not a `for` over a range: fewer integer instructions per pair.
    let (mut at, end) = (tile, tile + 16 * DIRECT_BLOCK);
    while at < end {
        // SAFETY: per the contract.
        let [x, y, z, m] = unsafe { ld_shared_v4(at) };
        add_yukawa_accel::<SOFT>(a, p, [x, y, z], m, eps2, il);
        at += 16;
    }
}
