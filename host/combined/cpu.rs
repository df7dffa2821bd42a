//! The CPU twins: the combined walk (`walk_lists_near`, the same decisions as the kernel's
//! `walk_warp_near`, with the kernel's interactions) and the two separate walks it replaces
//! (`bh::cpu::gravity_group`, the SPH group search with a count and density sink). On the CPU
//! both give the same lists in the same order, so their results are equal bit for bit.

use super::{CountDensity, Options, Results};
use crate::bh;
use crate::device::bh::{self as dev, Accel, Body, MAX_DEPTH, Quad, SliceOctree, Targets};
use crate::device::combined::{Fields, Gather, GatherDensity, GroupReach, PART_BOTH, fields};
use crate::device::sph::{Count, Density};
use crate::device::walk::Interaction;
use crate::device::walk::near::walk_lists_near;
use crate::sph::cpu::SphTree;
use crate::sph::{Criterion, Method};
use rayon::prelude::*;

/// Accelerations, gather counts and densities of `parts` (`warpkit_device::combined::PART_*`;
/// the other part's vectors stay empty) by the combined walk over `t` (built from `bodies` and
/// `h`, valid per [`super::validate`]).
pub fn combined(bodies: &[Body], h: &[f32], t: &SphTree, o: &Options, parts: u32) -> Results {
    let tree = &t.tree;
    let fields = fields(parts);
    let (_, root_half) = dev::root_cell(&tree.header);
    let w2: Vec<f32> = (0..=MAX_DEPTH)
        .map(|d| dev::width2_at(root_half, d))
        .collect();
    let p = &o.gravity;
    let (theta2, eps2, kernel) = (p.theta * p.theta, p.eps * p.eps, o.kernel.code());
    let view = SliceOctree {
        bodies,
        child: &tree.child,
        next: &tree.next,
        cell_pm: &tree.cell_pm,
        layout: tree.layout,
    };
    let per_group: Vec<Vec<(Accel, u32, f32)>> = tree
        .groups
        .par_iter()
        .map(|&[first, size]| {
            let lanes = &tree.sort[first as usize..(first + size) as usize];
            let pos: Vec<[f32; 3]> = lanes.iter().map(|&i| bodies[i as usize].pos()).collect();
            let lo =
                std::array::from_fn(|k| pos.iter().map(|q| q[k]).fold(f32::INFINITY, f32::min));
            let hi =
                std::array::from_fn(|k| pos.iter().map(|q| q[k]).fold(f32::NEG_INFINITY, f32::max));
            let th = lanes.iter().map(|&i| h[i as usize]).fold(0.0f32, f32::max);
            let reach = GroupReach { lo, hi, h: th };
            let (bc, bh) = dev::box_of(lo, hi);
            let far =
                |s: &Body, depth: usize| dev::is_far_from_box(s.pos(), w2[depth], bc, bh, theta2);
            let reach_cell = |c: i32| reach.cell(&t.boxes[c as usize]);
            let reach_body = |q: &Body| reach.body(q);
            // The kernel's lists; one target per body here, each summing them in list order.
            let sums = |inter: &dyn Fn(&mut Targets<1>), near: &[Body]| {
                lanes
                    .iter()
                    .zip(&pos)
                    .map(|(&i, &q)| {
                        let mut t = Targets::at([q]);
                        inter(&mut t);
                        let mut g = Gather::at(q, h[i as usize], kernel);
                        near.iter().for_each(|s| GatherDensity.add(&mut g, s, &()));
                        let a = Accel {
                            x: p.g * t.a[0][0],
                            y: p.g * t.a[0][1],
                            z: p.g * t.a[0][2],
                        };
                        (a, g.count, g.rho)
                    })
                    .collect::<Vec<_>>()
            };
            if o.quadrupole {
                let quads: &[Quad] = &tree.cell_quad;
                let inter = dev::Quadrupole::<_, 1, false> { eps2, quads };
                let (list, near) =
                    walk_lists_near(&view, &inter, fields, far, reach_cell, reach_body);
                sums(
                    &|t| list.iter().for_each(|(s, e)| inter.add(t, s, e)),
                    &near,
                )
            } else {
                let inter = dev::Monopole::<1, false> { eps2 };
                let (list, near) =
                    walk_lists_near(&view, &inter, fields, far, reach_cell, reach_body);
                sums(
                    &|t| list.iter().for_each(|(s, e)| inter.add(t, s, e)),
                    &near,
                )
            }
        })
        .collect();
    let mut r = Results::default();
    if fields != Fields::Near {
        r.acc = vec![Accel::default(); tree.n];
    }
    if fields != Fields::Far {
        r.counts = vec![0; tree.n];
        r.rho = vec![0.0; tree.n];
    }
    for (&[first, _], out) in tree.groups.iter().zip(per_group) {
        for (k, (a, c, rho)) in out.into_iter().enumerate() {
            let i = tree.sort[first as usize + k] as usize;
            if fields != Fields::Near {
                r.acc[i] = a;
            }
            if fields != Fields::Far {
                (r.counts[i], r.rho[i]) = (c, rho);
            }
        }
    }
    r
}

/// The two separate walks on `t`: gravity by `bh::cpu::gravity_group` (the twin of
/// `bh_gravity_group`), gather counts and densities by [`separate_density`].
pub fn separate(bodies: &[Body], h: &[f32], t: &SphTree, o: &Options) -> Results {
    let acc = bh::cpu::gravity_group(bodies, &t.tree, &o.gravity, o.quadrupole, None);
    Results {
        acc,
        ..separate_density(bodies, h, t, o)
    }
}

/// Gather counts and densities by the SPH group search on `t` (the twin of `sph_group`), with a
/// sink that counts and sums; `acc` stays empty.
pub fn separate_density(bodies: &[Body], h: &[f32], t: &SphTree, o: &Options) -> Results {
    let k = o.kernel.code();
    let sph = crate::sph::cpu::search(Method::Group, bodies, h, Some(t), Criterion::Gather, |i| {
        CountDensity {
            count: Count(0),
            density: Density::new(k, h[i as usize]),
        }
    });
    Results {
        acc: Vec::new(),
        counts: sph.iter().map(|s| s.count.0).collect(),
        rho: sph.iter().map(|s| s.density.rho).collect(),
    }
}

/// [`combined`] of both parts, building the tree (valid input per [`super::validate`]).
pub fn evaluate(bodies: &[Body], h: &[f32], o: &Options) -> Results {
    combined(
        bodies,
        h,
        &SphTree::new(bodies, h).without_ranges(),
        o,
        PART_BOTH,
    )
}
