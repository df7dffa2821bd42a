//! The CPU twin: warpkit's CPU octree and warp groups, the walk's CPU form
//! ([`walk_list`], the same decisions as the GPU's `walk_warp`) and the kernels crate's formula,
//! so the GPU and the CPU differ only in rounding and summation order. Plus the float64 direct
//! sum, the reference.

use crate::Params;
use crate::kernels::{Yukawa, add_yukawa_accel, yukawa_accel_f64};
use warpkit::bh::Tree;
use warpkit::device::bh::{self as dev, Accel, Body, MAX_DEPTH, Quad, SliceOctree, Targets};
use warpkit::device::walk::{Interaction, walk_list};

/// warpkit's octree of `bodies` on the CPU, summarized with second moments and sorted into warp
/// groups of at most 32 bodies (what `yukawa_group` walks). Bodies must pass [`crate::check`].
pub fn build_tree(bodies: &[Body]) -> Tree {
    warpkit::bh::cpu::build_tree(bodies)
}

/// The twin of the `yukawa_group` kernel: each warp group of `tree` walks it once for its
/// bounding box, and each of its bodies sums the resulting list.
pub fn tree_walk(bodies: &[Body], tree: &Tree, p: &Params) -> Vec<Accel> {
    let (_, root_half) = dev::root_cell(&tree.header);
    // The kernel's table of squared widths per depth, the same floats.
    let w2: Vec<f32> = (0..=MAX_DEPTH)
        .map(|d| dev::width2_at(root_half, d))
        .collect();
    let theta2 = p.theta * p.theta;
    let view = SliceOctree {
        bodies,
        child: &tree.child,
        next: &tree.next,
        cell_pm: &tree.cell_pm,
        layout: tree.layout,
    };
    let quads: &[Quad] = &tree.cell_quad;
    let inter = Yukawa::<_, 1, false>::new(p.eps2(), p.inv_lambda(), quads);
    let mut acc = vec![Accel::default(); tree.n];
    for &[first, size] in &tree.groups {
        let members = &tree.sort[first as usize..(first + size) as usize];
        let pos: Vec<[f32; 3]> = members.iter().map(|&i| bodies[i as usize].pos()).collect();
        let lo = std::array::from_fn(|c| pos.iter().map(|q| q[c]).fold(f32::INFINITY, f32::min));
        let hi =
            std::array::from_fn(|c| pos.iter().map(|q| q[c]).fold(f32::NEG_INFINITY, f32::max));
        let (bc, bh) = dev::box_of(lo, hi);
        let far = |s: &Body, depth: usize| dev::is_far_from_box(s.pos(), w2[depth], bc, bh, theta2);
        let list = walk_list(&view, &inter, far);
        for (&i, &q) in members.iter().zip(&pos) {
            let mut t = Targets::at([q]);
            for (s, e) in &list {
                inter.add(&mut t, s, e);
            }
            acc[i as usize] = scaled(p.g, t.a[0]);
        }
    }
    acc
}

/// The twin of the `yukawa_direct` kernel: every body against every body in index order, float32.
pub fn direct(bodies: &[Body], p: &Params) -> Vec<Accel> {
    let (eps2, il) = (p.eps2(), p.inv_lambda());
    bodies
        .iter()
        .map(|b| {
            let mut a = [0.0f32; 3];
            for s in bodies {
                add_yukawa_accel::<false>(&mut a, b.pos(), s.pos(), s.m, eps2, il);
            }
            scaled(p.g, a)
        })
        .collect()
}

/// Float64 direct summation on the bodies `targets` (indices) from all bodies: the reference.
/// O(N × targets): split over the machine's cores with scoped threads.
pub fn direct_f64(bodies: &[Body], targets: &[usize], p: &Params) -> Vec<[f64; 3]> {
    let eps2 = (p.eps as f64) * (p.eps as f64);
    let il = 1.0 / p.lambda as f64;
    let g = p.g as f64;
    let f64s = |b: &Body| [b.x as f64, b.y as f64, b.z as f64];
    let one = |i: usize| {
        let pi = f64s(&bodies[i]);
        let mut a = [0.0f64; 3];
        for (j, s) in bodies.iter().enumerate() {
            if j != i {
                let d = yukawa_accel_f64(pi, f64s(s), s.m as f64, eps2, il);
                a = [a[0] + d[0], a[1] + d[1], a[2] + d[2]];
            }
        }
        a.map(|v| g * v)
    };
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = targets.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let parts: Vec<_> = targets
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().map(|&i| one(i)).collect::<Vec<_>>()))
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().expect("a reference thread panicked"))
            .collect()
    })
}

fn scaled(g: f32, a: [f32; 3]) -> Accel {
    Accel {
        x: g * a[0],
        y: g * a[1],
        z: g * a[2],
    }
}
