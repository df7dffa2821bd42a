//! The CPU twin of the GPU pipeline: the same layout, the same formulas, and a gravity traversal
//! that emulates the warp vote over groups of 32 consecutive bodies, so that GPU and CPU results
//! differ only by float32 rounding. Also the float64 direct-summation reference.

use super::gpu::MAX_CELLS;
use super::{Params, Tree, initial_cells};
use crate::device::WARP_SIZE;
use crate::device::bh::{
    self as dev, Accel, Body, EMPTY, Layout, MAX_DEPTH, Quad, TreeHeader, morton,
};
use crate::device::walk::{Interaction, walk_list};
use rayon::prelude::*;

/// Builds, summarizes and sorts the octree of `bodies` (valid per [`super::validate`]).
pub fn build_tree(bodies: &[Body]) -> Tree {
    build_tree_with_cells(bodies, initial_cells(bodies.len()))
}

/// [`build_tree`] in dense storage starting from `cells` cells, doubled until the tree fits.
pub fn build_tree_with_cells(bodies: &[Body], cells: usize) -> Tree {
    build_tree_with(bodies, Layout::dense(cells.max(1) as u32))
        .expect("dense storage holds any tree of fewer than 2^25 bodies")
}

/// [`build_tree`] in `layout`, grown until the tree fits as the GPU grows it (dense ×2 cells,
/// sparse ×8 node indices, one more level), up to [`MAX_CELLS`] cells.
pub fn build_tree_with(bodies: &[Body], layout: Layout) -> Result<Tree, String> {
    build_tree_by(bodies, layout, false)
}

/// [`build_tree_with`], stage 2 by the sorted build ([`insert_sorted`]) when `sorted` and the
/// layout is dense.
pub fn build_tree_by(bodies: &[Body], layout: Layout, sorted: bool) -> Result<Tree, String> {
    let mut layout = layout;
    let sorted = sorted && !layout.is_sparse();
    loop {
        if let Some(t) = try_build(bodies, layout, sorted) {
            return Ok(t);
        }
        let grow = if layout.is_sparse() { 8 } else { 2 };
        if layout.cells as usize * grow > MAX_CELLS {
            return Err(format!(
                "the tree needs more than {MAX_CELLS} cells in {} storage",
                if layout.is_sparse() {
                    "sparse"
                } else {
                    "dense"
                }
            ));
        }
        layout.cells *= grow as u32;
    }
}

/// The four tree stages in turn, as the GPU runs them; `None` when `layout` is too small.
fn try_build(bodies: &[Body], layout: Layout, sorted: bool) -> Option<Tree> {
    let header = bounding_box(bodies, layout);
    let mut tree = if sorted {
        insert_sorted(bodies, layout, header)?
    } else {
        insert(bodies, layout, header)?
    };
    summarize(bodies, &mut tree);
    sort(&mut tree);
    Some(tree)
}

/// Stage 1: a fresh header for `layout` holding the bodies' bounding box.
pub fn bounding_box(bodies: &[Body], layout: Layout) -> TreeHeader {
    let mut h = TreeHeader::new(layout.cells);
    let (lo, hi) = bodies
        .par_iter()
        .fold(
            || ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]),
            |(mut lo, mut hi), b| {
                for (k, v) in b.pos().iter().enumerate() {
                    lo[k] = lo[k].min(*v);
                    hi[k] = hi[k].max(*v);
                }
                (lo, hi)
            },
        )
        .reduce(
            || ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]),
            |a, b| {
                (
                    std::array::from_fn(|k| a.0[k].min(b.0[k])),
                    std::array::from_fn(|k| a.1[k].max(b.1[k])),
                )
            },
        );
    h.min = lo;
    h.max = hi;
    h
}

/// Stage 2: the GPU kernel's insertion, one body at a time, into a tree whose summaries and sort
/// are still empty. `None` when the cells run out (the caller grows `layout`).
pub fn insert(bodies: &[Body], layout: Layout, header: TreeHeader) -> Option<Tree> {
    let mut tree = empty_tree(bodies.len(), layout, header);
    let mut bottom = layout.root();
    insert_list(bodies, &mut tree, &mut bottom, 0..bodies.len() as i32)?;
    tree.header.bottom = bottom;
    Some(tree)
}

/// Stage 2 as the GPU's sorted build makes it (`dev::morton`, dense storage): the same tree as
/// [`insert`] up to cell numbering and the order within buckets.
pub fn insert_sorted(bodies: &[Body], layout: Layout, header: TreeHeader) -> Option<Tree> {
    assert!(!layout.is_sparse(), "the sorted build makes dense trees");
    let n = bodies.len();
    let (c, half) = dev::root_cell(&header);
    let mut pairs: Vec<(u64, u32)> = bodies
        .iter()
        .enumerate()
        .map(|(i, b)| (morton::body_key(b.pos(), c, half), i as u32))
        .collect();
    pairs.sort_by_key(|p| p.0); // stable, as the radix sort
    let key = |j: usize| pairs[j].0;
    let mut base = Vec::with_capacity(n);
    let mut total = 0u32;
    for i in 0..n {
        base.push(total);
        total += morton::new_cells(&key, n, i);
    }
    if total as usize + 1 > layout.cells as usize {
        return None;
    }
    let mut tree = empty_tree(n, layout, header);
    let mut bottom = layout.cells as i32 - 1 - total as i32;
    tree.header.depth = (0..n)
        .map(|i| morton::pair_levels(&key, n, i as isize))
        .max()
        .unwrap_or(0);
    let base_of = |j: usize| base[j];
    let mut list = Vec::new();
    for (i, &(_, body)) in pairs.iter().enumerate() {
        let child = &mut tree.child;
        let slot = morton::link_pair(&key, &base_of, n, i, layout, |p, o, cell| {
            child[layout.slot(p, o)] = n as i32 + cell;
        });
        match slot {
            Some((p, o)) => child[layout.slot(p, o)] = body as i32,
            None => list.push(body as i32),
        }
    }
    insert_list(bodies, &mut tree, &mut bottom, list)?;
    tree.header.bottom = bottom;
    Some(tree)
}

/// A tree of `n` bodies with every slot empty.
fn empty_tree(n: usize, layout: Layout, header: TreeHeader) -> Tree {
    Tree {
        n,
        header,
        child: vec![EMPTY; layout.slots()],
        next: vec![-1i32; n],
        count: Vec::new(),
        cell_pm: Vec::new(),
        cell_quad: Vec::new(),
        sort: Vec::new(),
        groups: Vec::new(),
        group_size: dev::GROUP_SIZE,
        layout,
    }
}

/// Inserts `list` one body at a time as the GPU kernel does ([`morton::insert_owned`]), below
/// whatever cells the tree holds, new cells taken below `bottom`. `None` when the cells run out.
fn insert_list(
    bodies: &[Body],
    tree: &mut Tree,
    bottom: &mut i32,
    list: impl IntoIterator<Item = i32>,
) -> Option<()> {
    struct Owned<'a> {
        bodies: &'a [Body],
        child: &'a mut [i32],
        next: &'a mut [i32],
        bottom: &'a mut i32,
        bucketed: &'a mut u32,
        layout: Layout,
    }
    impl morton::OwnedTree for Owned<'_> {
        fn slot(&self, s: usize) -> i32 {
            self.child[s]
        }
        fn set_slot(&mut self, s: usize, v: i32) {
            self.child[s] = v;
        }
        fn next(&self, b: i32) -> i32 {
            self.next[b as usize]
        }
        fn set_next(&mut self, b: i32, v: i32) {
            self.next[b as usize] = v;
        }
        fn pos(&self, b: i32) -> [f32; 3] {
            self.bodies[b as usize].pos()
        }
        fn new_cell(&mut self, cur: usize) -> Option<i32> {
            // As the kernel: the counter moves in either storage; sparse cells are their slot.
            *self.bottom -= 1;
            if self.layout.is_sparse() {
                (cur < self.layout.cells as usize).then_some(cur as i32)
            } else {
                (*self.bottom >= 0).then_some(*self.bottom)
            }
        }
        fn bucketed(&mut self) {
            *self.bucketed += 1;
        }
    }
    let root = dev::root_cell(&tree.header);
    let mut depth = tree.header.depth;
    let mut t = Owned {
        bodies,
        child: &mut tree.child,
        next: &mut tree.next,
        bottom,
        bucketed: &mut tree.header.bucketed,
        layout: tree.layout,
    };
    for i in list {
        let d = morton::insert_owned(&mut t, tree.layout, bodies.len() as i32, root, i)?;
        depth = depth.max(d);
    }
    tree.header.depth = depth;
    Some(())
}

/// Stage 3: mass, centre of mass, quadrupole and count of every cell, bottom-up in the GPU's
/// order: dense children have lower indices than their parents, sparse ones higher (and sparse
/// indices that hold no cell are skipped).
pub fn summarize(bodies: &[Body], tree: &mut Tree) {
    let (n, layout, bottom) = (tree.n as i32, tree.layout, tree.header.bottom);
    let cells = layout.cells as usize;
    let (child, next) = (&tree.child, &tree.next);
    let bottom_up: Vec<i32> = if layout.is_sparse() {
        (0..cells as i32)
            .rev()
            .filter(|&k| k == 0 || child[k as usize] == n + k)
            .collect()
    } else {
        (bottom..cells as i32).collect()
    };
    let mut count = vec![0u32; cells];
    let mut cell_pm = vec![Body::default(); cells];
    let mut cell_quad = vec![Quad::default(); cells];
    for &k in &bottom_up {
        let children = SliceChildren {
            layout,
            cell: k,
            bodies,
            child,
            next,
            count: &count,
            cell_pm: &cell_pm,
            cell_quad: &cell_quad,
        };
        let (pm, q, cnt) = dev::summarize_cell::<true>(&children, n);
        cell_quad[k as usize] = q;
        cell_pm[k as usize] = pm;
        count[k as usize] = cnt;
    }
    (tree.count, tree.cell_pm, tree.cell_quad) = (count, cell_pm, cell_quad);
}

/// A cell's children in host slices, for [`dev::summarize_cell`] (children are summarized first).
struct SliceChildren<'a> {
    layout: Layout,
    cell: i32,
    bodies: &'a [Body],
    child: &'a [i32],
    next: &'a [i32],
    count: &'a [u32],
    cell_pm: &'a [Body],
    cell_quad: &'a [Quad],
}

impl dev::CellChildren for SliceChildren<'_> {
    fn slot(&self, octant: u32) -> i32 {
        self.child[self.layout.slot(self.cell, octant)]
    }
    fn cell(&self, c: usize) -> (Body, Quad, u32) {
        (self.cell_pm[c], self.cell_quad[c], self.count[c])
    }
    fn body(&self, b: i32) -> Body {
        self.bodies[b as usize]
    }
    fn next(&self, b: i32) -> i32 {
        self.next[b as usize]
    }
}

/// Stage 4: the gather index in depth-first octant order, bodies and child cells interleaved as
/// the GPU places them, and the warp groups packed as the GPU's sort kernel packs them.
pub fn sort(tree: &mut Tree) {
    sort_with_groups(tree, dev::GROUP_SIZE);
}

/// [`sort`] with warp groups of at most `group_size` bodies.
pub fn sort_with_groups(tree: &mut Tree, group_size: u32) {
    let (n, layout, root) = (tree.n as i32, tree.layout, tree.root());
    struct Out<'a> {
        layout: Layout,
        group_size: u32,
        child: &'a [i32],
        next: &'a [i32],
        count: &'a [u32],
        n: i32,
        sort: Vec<u32>,
        groups: Vec<[u32; 2]>,
    }
    fn visit(k: i32, o: &mut Out) {
        let big = o.count[k as usize] > o.group_size;
        let mut packer = dev::GroupPacker::new(o.group_size);
        for oct in 0..8 {
            let ch = o.child[o.layout.slot(k, oct)];
            let s0 = o.sort.len() as u32;
            if ch >= o.n {
                visit(ch - o.n, o);
            } else {
                let mut b = ch;
                while b >= 0 {
                    o.sort.push(b as u32);
                    b = o.next[b as usize];
                }
            }
            if big {
                let c = o.sort.len() as u32 - s0;
                let groups = &mut o.groups;
                packer.add(s0, c, ch >= o.n, &mut |s, c| groups.push([s, c]));
            }
        }
        let groups = &mut o.groups;
        packer.finish(&mut |s, c| groups.push([s, c]));
    }
    let mut out = Out {
        layout,
        group_size,
        child: &tree.child,
        next: &tree.next,
        count: &tree.count,
        n,
        sort: Vec::with_capacity(tree.n),
        groups: Vec::new(),
    };
    let root_count = tree.count[root as usize];
    if root_count <= group_size {
        out.groups.push([0, root_count]);
    }
    visit(root, &mut out);
    (tree.sort, tree.groups) = (out.sort, out.groups);
    tree.header.groups = tree.groups.len() as u32;
    tree.group_size = group_size;
}

/// Accelerations over `tree`, lanes of 32 consecutive entries of `order` voting together as on
/// the GPU (`order[k]` is the body of lane k: the identity or `tree.sort`).
pub fn gravity(bodies: &[Body], tree: &Tree, order: &[u32], p: &Params) -> Vec<Accel> {
    let n = tree.n as i32;
    let (_, root_half) = dev::root_cell(&tree.header);
    let w2: Vec<f32> = (0..=MAX_DEPTH)
        .map(|d| dev::width2_at(root_half, d))
        .collect();
    let theta2 = p.theta * p.theta;
    let eps2 = p.eps * p.eps;
    let mut acc = vec![Accel::default(); tree.n];
    let groups: Vec<(usize, Vec<Accel>)> = order
        .par_chunks(WARP_SIZE as usize)
        .enumerate()
        .map(|(g, lanes)| {
            let pos: Vec<[f32; 3]> = lanes.iter().map(|&i| bodies[i as usize].pos()).collect();
            let mut a = vec![[0.0f32; 3]; lanes.len()];
            let mut stack: Vec<(i32, u32)> = Vec::with_capacity(MAX_DEPTH + 1);
            let (mut cell, mut oct, mut depth) = (tree.root(), 0u32, 0usize);
            loop {
                if oct == 8 {
                    match stack.pop() {
                        Some((c, o)) => {
                            (cell, oct) = (c, o);
                            depth -= 1;
                            continue;
                        }
                        None => break,
                    }
                }
                let ch = tree.child[tree.layout.slot(cell, oct)];
                oct += 1;
                if ch >= n {
                    let pm = tree.cell_pm[(ch - n) as usize];
                    let all_far = pos
                        .iter()
                        .all(|&q| dev::is_far(dev::dist2(q, pm.pos()), w2[depth + 1], theta2));
                    if all_far {
                        for (ai, &q) in a.iter_mut().zip(&pos) {
                            dev::add_pair_accel::<false>(ai, q, pm.pos(), pm.m, eps2);
                        }
                    } else {
                        stack.push((cell, oct));
                        depth += 1;
                        (cell, oct) = (ch - n, 0);
                    }
                } else {
                    let mut b = ch;
                    while b >= 0 {
                        let qb = bodies[b as usize];
                        for ((ai, &q), &i) in a.iter_mut().zip(&pos).zip(lanes) {
                            if b as u32 != i {
                                dev::add_pair_accel::<false>(ai, q, qb.pos(), qb.m, eps2);
                            }
                        }
                        b = tree.next[b as usize];
                    }
                }
            }
            let out = a
                .iter()
                .map(|v| Accel {
                    x: p.g * v[0],
                    y: p.g * v[1],
                    z: p.g * v[2],
                })
                .collect();
            (g, out)
        })
        .collect();
    for (g, out) in groups {
        for (k, a) in out.into_iter().enumerate() {
            acc[order[g * WARP_SIZE as usize + k] as usize] = a;
        }
    }
    acc
}

/// Float64 direct summation for the bodies `targets` (indices), against all bodies.
pub fn brute_force_f64(bodies: &[Body], targets: &[usize], p: &Params) -> Vec<[f64; 3]> {
    let eps2 = (p.eps as f64) * (p.eps as f64);
    let src: Vec<([f64; 3], f64)> = bodies
        .iter()
        .map(|b| ([b.x as f64, b.y as f64, b.z as f64], b.m as f64))
        .collect();
    targets
        .par_iter()
        .map(|&i| {
            let pi = src[i].0;
            let mut a = [0.0f64; 3];
            for (j, (q, m)) in src.iter().enumerate() {
                if j != i {
                    let d = dev::pair_accel_f64(pi, *q, *m, eps2);
                    a = [a[0] + d[0], a[1] + d[1], a[2] + d[2]];
                }
            }
            [p.g as f64 * a[0], p.g as f64 * a[1], p.g as f64 * a[2]]
        })
        .collect()
}

/// The CPU twin of `bh_gravity_group`: each of the tree's warp groups traverses the tree once for
/// its bounding box; the same cells and bodies are accepted as on the GPU.
/// With `quadrupole`, cells interact through their quadrupole moments too. With `relative`, the
/// twin of `bh_gravity_group2_rel` (`…_quad_rel`): the relative criterion against the previous
/// accelerations given (per body), `θ_max` as the geometric guard.
pub fn gravity_group(
    bodies: &[Body],
    tree: &Tree,
    p: &Params,
    quadrupole: bool,
    relative: Option<(super::Relative, &[Accel])>,
) -> Vec<Accel> {
    let mut acc = vec![Accel::default(); tree.n];
    let groups: Vec<Vec<Accel>> = tree
        .groups
        .par_iter()
        .map(|&g| {
            let lanes = &tree.sort[g[0] as usize..(g[0] + g[1]) as usize];
            let old: Option<Vec<Accel>> =
                relative.map(|(_, old)| lanes.iter().map(|&i| old[i as usize]).collect());
            let rel = relative.map(|(r, _)| r).zip(old.as_deref());
            group_accels(bodies, tree, p, quadrupole, rel, g)
        })
        .collect();
    for (&[first, _], out) in tree.groups.iter().zip(groups) {
        for (k, a) in out.into_iter().enumerate() {
            acc[tree.sort[first as usize + k] as usize] = a;
        }
    }
    acc
}

/// The accelerations of one warp group `[first, size]` (in its lanes' order), as
/// [`gravity_group`] computes them; `relative`'s previous accelerations in the lanes' order.
fn group_accels(
    bodies: &[Body],
    tree: &Tree,
    p: &Params,
    quadrupole: bool,
    relative: Option<(super::Relative, &[Accel])>,
    group: [u32; 2],
) -> Vec<Accel> {
    let eps2 = p.eps * p.eps;
    let view = view_of(bodies, tree);
    with_group_walk(bodies, tree, p, quadrupole, relative, group, |pos, far| {
        // The kernels' walk and interaction; one target per body here.
        let sums = |inter: &dyn Fn(&mut dev::Targets<1>)| {
            pos.iter()
                .map(|&q| {
                    let mut t = dev::Targets::at([q]);
                    inter(&mut t);
                    let a = t.a[0];
                    Accel {
                        x: p.g * a[0],
                        y: p.g * a[1],
                        z: p.g * a[2],
                    }
                })
                .collect::<Vec<_>>()
        };
        if quadrupole {
            let quads: &[Quad] = &tree.cell_quad;
            let inter = dev::Quadrupole::<_, 1, false> { eps2, quads };
            let list = walk_list(&view, &inter, far);
            sums(&|t| list.iter().for_each(|(s, e)| inter.add(t, s, e)))
        } else {
            let inter = dev::Monopole::<1, false> { eps2 };
            let list = walk_list(&view, &inter, far);
            sums(&|t| list.iter().for_each(|(s, e)| inter.add(t, s, e)))
        }
    })
}

/// The CPU twin of `bh_gravity_group2_pot`: accelerations and each body's potential `G·φ` of
/// the other bodies (monopoles; the body's own softened term taken out as the kernel does), from
/// a tree sorted into groups of at most 64 ([`sort_with_groups`] with `GROUP_SIZE_2`).
pub fn potential_group(bodies: &[Body], tree: &Tree, p: &Params) -> (Vec<Accel>, Vec<f32>) {
    potential_group_of(bodies, tree, p, None)
}

/// [`potential_group`] for the groups holding at least one body marked in `active` (all when
/// `None`); the bodies of the other groups get zeros.
pub fn potential_group_of(
    bodies: &[Body],
    tree: &Tree,
    p: &Params,
    active: Option<&[bool]>,
) -> (Vec<Accel>, Vec<f32>) {
    let eps2 = p.eps * p.eps;
    let view = view_of(bodies, tree);
    let inter = dev::MonopolePot::<1, false> { eps2 };
    let groups: Vec<Vec<(Accel, f32)>> = tree
        .groups
        .par_iter()
        .map(|&g| {
            let lanes = &tree.sort[g[0] as usize..(g[0] + g[1]) as usize];
            if let Some(a) = active
                && !lanes.iter().any(|&i| a[i as usize])
            {
                return Vec::new();
            }
            with_group_walk(bodies, tree, p, false, None, g, |pos, far| {
                let list = walk_list(&view, &inter, far);
                let lanes = &tree.sort[g[0] as usize..(g[0] + g[1]) as usize];
                pos.iter()
                    .zip(lanes)
                    .map(|(&q, &i)| {
                        let mut t = dev::Targets::at([q]);
                        list.iter().for_each(|(s, e)| inter.add(&mut t, s, e));
                        let [a] = t.a;
                        let own = dev::self_potential::<false>(bodies[i as usize].m, eps2);
                        let acc = Accel {
                            x: p.g * a[0],
                            y: p.g * a[1],
                            z: p.g * a[2],
                        };
                        (acc, p.g * (t.phi[0] - own))
                    })
                    .collect()
            })
        })
        .collect();
    let mut acc = vec![Accel::default(); tree.n];
    let mut pot = vec![0.0; tree.n];
    for (&[first, _], out) in tree.groups.iter().zip(groups) {
        for (k, (a, phi)) in out.into_iter().enumerate() {
            let i = tree.sort[first as usize + k] as usize;
            (acc[i], pot[i]) = (a, phi);
        }
    }
    (acc, pot)
}

fn view_of<'a>(bodies: &'a [Body], tree: &'a Tree) -> dev::SliceOctree<'a> {
    dev::SliceOctree {
        bodies,
        child: &tree.child,
        next: &tree.next,
        cell_pm: &tree.cell_pm,
        layout: tree.layout,
    }
}

/// Hands `f` the positions of group `[first, size]` and the far test the group kernels apply to
/// its bounding box: θ, or with `relative` the relative criterion against the previous
/// accelerations (in the lanes' order) with `θ_max` as the geometric guard.
fn with_group_walk<R>(
    bodies: &[Body],
    tree: &Tree,
    p: &Params,
    quadrupole: bool,
    relative: Option<(super::Relative, &[Accel])>,
    [first, size]: [u32; 2],
    f: impl FnOnce(&[[f32; 3]], &dyn Fn(&Body, usize) -> bool) -> R,
) -> R {
    let (_, root_half) = dev::root_cell(&tree.header);
    let w2: Vec<f32> = (0..=MAX_DEPTH)
        .map(|d| dev::width2_at(root_half, d))
        .collect();
    let theta2 = p.theta * p.theta;
    let lanes = &tree.sort[first as usize..(first + size) as usize];
    let pos: Vec<[f32; 3]> = lanes.iter().map(|&i| bodies[i as usize].pos()).collect();
    let lo = std::array::from_fn(|k| pos.iter().map(|q| q[k]).fold(f32::INFINITY, f32::min));
    let hi = std::array::from_fn(|k| pos.iter().map(|q| q[k]).fold(f32::NEG_INFINITY, f32::max));
    let (bc, bh) = dev::box_of(lo, hi);
    // The kernels' bound: the group's smallest |a_old|², in float32 as there.
    let rel = relative.map(|(r, old)| {
        let a2 = old.iter().fold(f32::INFINITY, |m, a| {
            m.min(a.x * a.x + a.y * a.y + a.z * a.z)
        });
        (
            r.theta_max * r.theta_max,
            dev::relative_limit(r.alpha, a2, p.g),
        )
    });
    let far = |s: &Body, depth: usize| match rel {
        Some((guard2, lim)) if quadrupole => {
            dev::is_far_relative::<true>(s, w2[depth], bc, bh, guard2, lim)
        }
        Some((guard2, lim)) => dev::is_far_relative::<false>(s, w2[depth], bc, bh, guard2, lim),
        None => dev::is_far_from_box(s.pos(), w2[depth], bc, bh, theta2),
    };
    f(&pos, &far)
}

/// Sources a group walk lists, by kind: what the interaction counter of the group kernels adds up
/// (each entry × the group's size) split into bodies and cells.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ListedKinds {
    /// Body–body interactions (entries × targets).
    pub bodies: u64,
    /// Body–cell interactions (entries × targets).
    pub cells: u64,
}

/// Marks each list entry as a cell (`[1, …]`) or a body (`[0, …]`); sums nothing.
struct Kinds;

impl Interaction for Kinds {
    type Extra = [f32; 4];
    type Target = ();
    fn cell_extra(&self, _: i32) -> [f32; 4] {
        [1.0, 0.0, 0.0, 0.0]
    }
    fn body_extra(&self, _: i32) -> [f32; 4] {
        [0.0; 4]
    }
    fn add(&self, _: &mut (), _: &Body, _: &[f32; 4]) {}
}

/// The body and cell interactions of the tree's warp groups `groups` (indices into
/// `tree.groups`) under the group kernels' decisions, entries × group size as the kernels count
/// them. With `relative`, the previous accelerations are those of the kernels' first pass at θ,
/// recomputed here for the groups asked for (as [`crate::bh::evaluate`]'s twin does for all).
pub fn listed_kinds(
    bodies: &[Body],
    tree: &Tree,
    p: &Params,
    quadrupole: bool,
    relative: Option<super::Relative>,
    groups: &[usize],
) -> ListedKinds {
    let view = view_of(bodies, tree);
    let counts: Vec<ListedKinds> = groups
        .par_iter()
        .map(|&k| {
            let g = tree.groups[k];
            // The bound reads the group's own first-pass accelerations only.
            let old: Option<Vec<Accel>> =
                relative.map(|_| group_accels(bodies, tree, p, quadrupole, None, g));
            let rel = relative.zip(old.as_deref());
            with_group_walk(bodies, tree, p, quadrupole, rel, g, |_, far| {
                let list = walk_list(&view, &Kinds, far);
                let cells = list.iter().filter(|(_, e)| e[0] > 0.0).count() as u64;
                let size = u64::from(g[1]);
                ListedKinds {
                    bodies: (list.len() as u64 - cells) * size,
                    cells: cells * size,
                }
            })
        })
        .collect();
    counts
        .iter()
        .fold(ListedKinds::default(), |a, c| ListedKinds {
            bodies: a.bodies + c.bodies,
            cells: a.cells + c.cells,
        })
}
