//! The CPU twins: the combined walk (`walk_lists_near`, the same decisions as the kernel's
//! `walk_warp_near`, with the kernel's interactions) and the two separate walks it replaces
//! (`bh::cpu::gravity_group`, the SPH group search with a count and density sink). On the CPU
//! both give the same lists in the same order, so their results are equal bit for bit.

use super::{CountDensity, Options, Results};
use crate::bh;
use crate::device::WARP_SIZE;
use crate::device::bh::{self as dev, Accel, Body, MAX_DEPTH, Quad, SliceOctree, Targets};
use crate::device::combined::{
    Fields, Gather, GatherDensity, GroupReach, PART_BOTH, fields, may_reach, reach_slack,
};
use crate::device::sph::{Count, Density, GATHER, cell_reachable, dist2, within};
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
                        (a, g.count, g.rho())
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
    gather_density(Method::Group, bodies, h, t, o)
}

/// [`separate_density`] by the SPH vote search (the twin of `sph_vote`).
pub fn vote_density(bodies: &[Body], h: &[f32], t: &SphTree, o: &Options) -> Results {
    gather_density(Method::Vote, bodies, h, t, o)
}

fn gather_density(method: Method, bodies: &[Body], h: &[f32], t: &SphTree, o: &Options) -> Results {
    let k = o.kernel.code();
    let sph = crate::sph::cpu::search(method, bodies, h, Some(t), Criterion::Gather, |i| {
        CountDensity {
            count: Count(0),
            density: Density::new(k, h[i as usize]),
        }
    });
    Results {
        acc: Vec::new(),
        counts: sph.iter().map(|s| s.count.0).collect(),
        rho: sph.iter().map(|s| s.density.rho()).collect(),
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

/// The twin of `combined_vote`: warps of 32 consecutive bodies of the tree order walk together
/// (as `bh::cpu::gravity`'s), a cell far for every lane adds its monopole and, when some lane can
/// reach its box, is walked on for the density alone; the same decisions in the same order as the
/// kernel's, so the accelerations equal `bh::cpu::gravity`'s on the same order bit for bit.
pub fn combined_vote(bodies: &[Body], h: &[f32], t: &SphTree, o: &Options) -> Results {
    let tree = &t.tree;
    let n = tree.n as i32;
    let (root_centre, root_half) = dev::root_cell(&tree.header);
    let slack = reach_slack(root_centre, root_half);
    let w2: Vec<f32> = (0..=MAX_DEPTH)
        .map(|d| dev::width2_at(root_half, d))
        .collect();
    let wd: Vec<f32> = (0..=MAX_DEPTH)
        .map(|d| dev::width_at(root_half, d))
        .collect();
    let p = &o.gravity;
    let (theta2, eps2, kernel) = (p.theta * p.theta, p.eps * p.eps, o.kernel.code());
    let per_warp: Vec<Vec<(Accel, u32, f32)>> = tree
        .sort
        .par_chunks(WARP_SIZE as usize)
        .map(|lanes| {
            let pos: Vec<[f32; 3]> = lanes.iter().map(|&i| bodies[i as usize].pos()).collect();
            let mut a = vec![[0.0f32; 3]; lanes.len()];
            let mut g: Vec<Gather> = lanes
                .iter()
                .zip(&pos)
                .map(|(&i, &q)| Gather::at(q, h[i as usize], kernel))
                .collect();
            // With the squared distances to the cell's centre of mass (far cells), the kernel's
            // pre-test first.
            let reach = |g: &[Gather], c: i32, r2: Option<(&[f32], f32)>| {
                let b = &t.boxes[c as usize];
                g.iter().enumerate().any(|(k, s)| {
                    r2.is_none_or(|(r2, w)| may_reach(r2[k], s.h, w, slack))
                        && cell_reachable(GATHER, s.p, s.p, s.h, b)
                })
            };
            // (parent, next octant, whether the parent is near-only)
            let mut stack: Vec<(i32, u32, bool)> = Vec::with_capacity(MAX_DEPTH + 1);
            let (mut cell, mut oct, mut depth, mut near_only) = (tree.root(), 0u32, 0usize, false);
            loop {
                if oct == 8 {
                    match stack.pop() {
                        Some((c, o, no)) => {
                            (cell, oct, near_only) = (c, o, no);
                            depth -= 1;
                            continue;
                        }
                        None => break,
                    }
                }
                let ch = tree.child[tree.layout.slot(cell, oct)];
                oct += 1;
                if ch >= n {
                    let c = ch - n;
                    let (open, child_near_only) = if near_only {
                        (reach(&g, c, None), true)
                    } else {
                        let pm = tree.cell_pm[c as usize];
                        let r2: Vec<f32> = pos.iter().map(|&q| dev::dist2(q, pm.pos())).collect();
                        let all_far = r2.iter().all(|&r2| dev::is_far(r2, w2[depth + 1], theta2));
                        if all_far {
                            for (ai, &q) in a.iter_mut().zip(&pos) {
                                dev::add_pair_accel::<false>(ai, q, pm.pos(), pm.m, eps2);
                            }
                            (reach(&g, c, Some((&r2, wd[depth + 1]))), true)
                        } else {
                            (true, false)
                        }
                    };
                    if open {
                        stack.push((cell, oct, near_only));
                        depth += 1;
                        (cell, oct, near_only) = (c, 0, child_near_only);
                    }
                } else {
                    let mut b = ch;
                    while b >= 0 {
                        let qb = bodies[b as usize];
                        for (((ai, &q), &i), gi) in a.iter_mut().zip(&pos).zip(lanes).zip(&mut g) {
                            if !near_only && b as u32 != i {
                                dev::add_pair_accel::<false>(ai, q, qb.pos(), qb.m, eps2);
                            }
                            // As the kernel: a body outside h adds nothing, so it is skipped.
                            if within(dist2(q, qb.pos()), gi.h) {
                                GatherDensity.add(gi, &qb, &());
                            }
                        }
                        b = tree.next[b as usize];
                    }
                }
            }
            a.iter()
                .zip(&g)
                .map(|(v, gi)| {
                    let acc = Accel {
                        x: p.g * v[0],
                        y: p.g * v[1],
                        z: p.g * v[2],
                    };
                    (acc, gi.count, gi.rho())
                })
                .collect()
        })
        .collect();
    let mut r = Results {
        acc: vec![Accel::default(); tree.n],
        counts: vec![0; tree.n],
        rho: vec![0.0; tree.n],
    };
    for (lanes, out) in tree.sort.chunks(WARP_SIZE as usize).zip(per_warp) {
        for (&i, (a, c, rho)) in lanes.iter().zip(out) {
            let i = i as usize;
            (r.acc[i], r.counts[i], r.rho[i]) = (a, c, rho);
        }
    }
    r
}
