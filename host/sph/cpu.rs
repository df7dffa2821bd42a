//! The CPU twins of the SPH kernels (the same decisions, formulas and float32 tests, so the
//! neighbour sets are identical), the O(N²) brute force and the float64 density reference.

use super::{
    Criterion, HIteration, HParams, Method, Neighbours, SmoothingKernel, SphError, check_pairs,
    grid, offsets_of, validate,
};
use crate::bh::{self, Tree};
use crate::device::WARP_SIZE;
use crate::device::bh::{Body, Layout};
use crate::device::sph::{self as dev, BoxChildren, CellBox, Count, Density, Sink};
use rayon::prelude::*;

/// Collects a target's neighbours (the CSR fill's CPU sink).
#[derive(Clone, Debug, Default)]
pub struct Collect(pub Vec<u32>);

impl Sink for Collect {
    fn take(&mut self, j: u32, _: f32, _: f32) {
        self.0.push(j);
    }
}

/// The octree of `crate::bh` (built, summarized, sorted into warp groups of 32) with each cell's
/// box and largest h.
pub struct SphTree {
    pub tree: Tree,
    pub boxes: Vec<CellBox>,
    /// Each cell's first position in `tree.sort` (`bh_sort`'s `start`); empty: the group walk
    /// descends every cell ([`Self::without_ranges`]).
    pub start: Vec<u32>,
}

impl SphTree {
    /// Valid input per [`validate`].
    pub fn new(bodies: &[Body], h: &[f32]) -> Self {
        Self::with_tree(bh::cpu::build_tree(bodies), bodies, h)
    }

    /// The same tree whose group walks read no ranges (as `sph_group` given a null `start`):
    /// the combined walk's reference, which visits cells as it does.
    pub fn without_ranges(self) -> Self {
        SphTree {
            start: Vec::new(),
            ..self
        }
    }

    /// The boxes and starts of a built `tree`.
    pub fn with_tree(tree: Tree, bodies: &[Body], h: &[f32]) -> Self {
        let boxes = cell_boxes(bodies, h, &tree);
        let start = cell_starts(&tree);
        SphTree { tree, boxes, start }
    }
}

/// Each cell's first position in the depth-first order of `tree.sort` (children in octant
/// order, a bucket's chain in chain order), as `bh_sort` publishes it: a child cell starts after
/// its earlier siblings' particles.
pub fn cell_starts(tree: &Tree) -> Vec<u32> {
    let n = tree.n as i32;
    let mut start = vec![0u32; tree.cells()];
    let mut stack = vec![tree.root()];
    while let Some(k) = stack.pop() {
        let mut s = start[k as usize];
        for o in 0..8 {
            let ch = tree.child[tree.layout.slot(k, o)];
            if ch >= n {
                let cc = (ch - n) as usize;
                start[cc] = s;
                s += tree.count[cc];
                stack.push(ch - n);
            } else {
                let mut j = ch;
                while j >= 0 {
                    s += 1;
                    j = tree.next[j as usize];
                }
            }
        }
    }
    start
}

/// The twin of `sph_cell_boxes`: every cell's [`CellBox`], children before parents.
pub fn cell_boxes(bodies: &[Body], h: &[f32], tree: &Tree) -> Vec<CellBox> {
    let (n, layout, bottom) = (tree.n as i32, tree.layout, tree.header.bottom);
    let cells = layout.cells as usize;
    let bottom_up: Vec<i32> = if layout.is_sparse() {
        (0..cells as i32)
            .rev()
            .filter(|&k| k == 0 || tree.child[k as usize] == n + k)
            .collect()
    } else {
        (bottom..cells as i32).collect()
    };
    let mut boxes = vec![CellBox::EMPTY; cells];
    for k in bottom_up {
        let c = SliceBoxChildren {
            layout,
            cell: k,
            bodies,
            h,
            tree,
            boxes: &boxes,
        };
        boxes[k as usize] = dev::summarize_box(&c, n);
    }
    boxes
}

struct SliceBoxChildren<'a> {
    layout: Layout,
    cell: i32,
    bodies: &'a [Body],
    h: &'a [f32],
    tree: &'a Tree,
    boxes: &'a [CellBox],
}

impl BoxChildren for SliceBoxChildren<'_> {
    fn slot(&self, octant: u32) -> i32 {
        self.tree.child[self.layout.slot(self.cell, octant)]
    }
    fn cell(&self, c: usize) -> CellBox {
        self.boxes[c]
    }
    fn body(&self, b: i32) -> ([f32; 3], f32) {
        (self.bodies[b as usize].pos(), self.h[b as usize])
    }
    fn next(&self, b: i32) -> i32 {
        self.tree.next[b as usize]
    }
}

/// Runs a search: each particle `i`'s sink `make(i)` takes its neighbours. `tree` is needed by
/// the tree methods (built from the same particles and h).
pub fn search<S: Sink + Send>(
    method: Method,
    bodies: &[Body],
    h: &[f32],
    tree: Option<&SphTree>,
    crit: Criterion,
    make: impl Fn(u32) -> S + Sync,
) -> Vec<S> {
    search_some(method, bodies, h, tree, crit, None, make)
        .0
        .into_iter()
        .map(|s| s.expect("every particle is a target"))
        .collect()
}

/// [`search`] for the targets with `active[i]` (all when `None`): the others get no sink. Also
/// returns the pairs tested (distance evaluations of active targets, as the kernels count them:
/// `sph_group` tests each candidate of a group's walk against every active member).
#[allow(clippy::too_many_arguments)]
pub fn search_some<S: Sink + Send>(
    method: Method,
    bodies: &[Body],
    h: &[f32],
    tree: Option<&SphTree>,
    crit: Criterion,
    active: Option<&[bool]>,
    make: impl Fn(u32) -> S + Sync,
) -> (Vec<Option<S>>, u64) {
    let c = crit.code();
    let owned;
    let tree = match (method, tree) {
        (Method::Cells, _) => None,
        (_, Some(t)) => Some(t),
        (_, None) => {
            owned = SphTree::new(bodies, h);
            Some(&owned)
        }
    };
    let is = |i: u32| active.is_none_or(|a| a[i as usize]);
    let mut out: Vec<Option<S>> = (0..bodies.len()).map(|_| None).collect();
    let results: Vec<(u32, S, u64)> = match (method, tree) {
        (Method::Vote, Some(t)) => vote(bodies, h, t, c, &is, &make),
        (Method::Group, Some(t)) => group(bodies, h, t, c, &is, active.is_some(), &make),
        _ => cells(bodies, h, c, &is, &make),
    };
    let mut tested = 0;
    for (i, s, k) in results {
        out[i as usize] = Some(s);
        tested += k;
    }
    (out, tested)
}

/// Tests particle `j` against target `i` and feeds the sink.
#[inline]
fn test<S: Sink>(bodies: &[Body], h: &[f32], crit: u32, i: u32, j: u32, s: &mut S) {
    let (p, q) = (bodies[i as usize], bodies[j as usize]);
    let r2 = dev::dist2(p.pos(), q.pos());
    if dev::is_neighbour(crit, r2, h[i as usize], h[j as usize]) {
        s.take(j, r2, q.m);
    }
}

/// The twin of `sph_vote`: warps of 32 consecutive particles of the tree order walk together and
/// open a cell when any of them can reach it.
/// Lanes whose particle is not active vote false and take nothing; a warp without an active
/// lane does not walk. Each result carries the pairs its lane tested.
fn vote<S: Sink + Send>(
    bodies: &[Body],
    h: &[f32],
    t: &SphTree,
    crit: u32,
    is: &(impl Fn(u32) -> bool + Sync),
    make: &(impl Fn(u32) -> S + Sync),
) -> Vec<(u32, S, u64)> {
    let tree = &t.tree;
    let n = tree.n as i32;
    tree.sort
        .par_chunks(WARP_SIZE as usize)
        .flat_map_iter(|warp| {
            let lanes: Vec<u32> = warp.iter().copied().filter(|&i| is(i)).collect();
            let mut sinks: Vec<S> = lanes.iter().map(|&i| make(i)).collect();
            let mut tested = 0u64;
            if lanes.is_empty() {
                return Vec::new();
            }
            let mut stack = vec![tree.root()];
            while let Some(cell) = stack.pop() {
                // The same cells are opened as on the GPU; only the order of the leaves (and so
                // of a density's sum) differs.
                for o in 0..8 {
                    let ch = tree.child[tree.layout.slot(cell, o)];
                    if ch >= n {
                        let b = &t.boxes[(ch - n) as usize];
                        let reach = lanes.iter().any(|&i| {
                            let p = bodies[i as usize].pos();
                            dev::cell_reachable(crit, p, p, h[i as usize], b)
                        });
                        if reach {
                            stack.push(ch - n);
                        }
                    } else {
                        let mut j = ch;
                        while j >= 0 {
                            for (s, &i) in sinks.iter_mut().zip(&lanes) {
                                test(bodies, h, crit, i, j as u32, s);
                            }
                            tested += 1;
                            j = tree.next[j as usize];
                        }
                    }
                }
            }
            lanes
                .into_iter()
                .zip(sinks)
                .map(|(i, s)| (i, s, tested))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The candidates of one warp group's walk (`sph_group`'s decisions): particles of reachable
/// cells that the group's box can reach — a cell of at most `SPH_BUCKET` read as its range of
/// the tree order — and every particle of a reachable chain. With `per_target` (a search
/// of few walks, `sph_group_few`), the walk also asks that one served target's own sphere
/// reach each cell and particle.
pub fn group_candidates(
    bodies: &[Body],
    h: &[f32],
    t: &SphTree,
    crit: u32,
    lanes: &[u32],
    per_target: bool,
) -> Vec<u32> {
    let tree = &t.tree;
    let n = tree.n as i32;
    let mut tlo = [f32::INFINITY; 3];
    let mut thi = [f32::NEG_INFINITY; 3];
    let mut th = 0.0f32;
    for &i in lanes {
        let p = bodies[i as usize].pos();
        for k in 0..3 {
            tlo[k] = tlo[k].min(p[k]);
            thi[k] = thi[k].max(p[k]);
        }
        th = th.max(h[i as usize]);
    }
    let pts: Vec<([f32; 3], f32)> = lanes
        .iter()
        .map(|&i| (bodies[i as usize].pos(), h[i as usize]))
        .collect();
    let any = |reach: &dyn Fn([f32; 3], f32) -> bool| {
        !per_target || pts.iter().any(|&(q, hq)| reach(q, hq))
    };
    let mut list = Vec::new();
    let mut stack = vec![tree.root()];
    while let Some(cell) = stack.pop() {
        for o in 0..8 {
            let ch = tree.child[tree.layout.slot(cell, o)];
            if ch >= n {
                let cc = (ch - n) as usize;
                let b = &t.boxes[cc];
                if !(dev::cell_reachable(crit, tlo, thi, th, b)
                    && any(&|q, hq| dev::cell_reachable(crit, q, q, hq, b)))
                {
                    continue;
                }
                let c = tree.count[cc];
                if t.start.is_empty() || c > dev::SPH_BUCKET {
                    stack.push(ch - n);
                    continue;
                }
                for k in t.start[cc]..t.start[cc] + c {
                    let j = tree.sort[k as usize];
                    let (q, hj) = (bodies[j as usize].pos(), h[j as usize]);
                    if dev::body_reachable(crit, tlo, thi, th, q, hj)
                        && any(&|x, hx| dev::body_reachable(crit, x, x, hx, q, hj))
                    {
                        list.push(j);
                    }
                }
            } else if ch >= 0 {
                if tree.next[ch as usize] >= 0 {
                    let mut j = ch;
                    while j >= 0 {
                        list.push(j as u32);
                        j = tree.next[j as usize];
                    }
                } else {
                    let (q, hj) = (bodies[ch as usize].pos(), h[ch as usize]);
                    if dev::body_reachable(crit, tlo, thi, th, q, hj)
                        && any(&|x, hx| dev::body_reachable(crit, x, x, hx, q, hj))
                    {
                        list.push(ch as u32);
                    }
                }
            }
        }
    }
    list
}

/// The walks of one warp group (`lanes`: its particles in sort order, a lane each): the active
/// members of each lane range that `sph_group` walks for, the group split into aligned halves
/// while too wide ([`dev::group_too_wide`], [`dev::next_lanes`]).
pub fn group_walks(
    bodies: &[Body],
    h: &[f32],
    lanes: &[u32],
    is: &impl Fn(u32) -> bool,
) -> Vec<Vec<u32>> {
    group_walk_ranges(bodies, h, lanes, is)
        .into_iter()
        .map(|w| w.2)
        .collect()
}

/// [`group_walks`] with each walk's lane range `[a, a + w)` (the twin of the device's
/// `lane_walks`).
pub fn group_walk_ranges(
    bodies: &[Body],
    h: &[f32],
    lanes: &[u32],
    is: &impl Fn(u32) -> bool,
) -> Vec<(u32, u32, Vec<u32>)> {
    let mut walks = Vec::new();
    let (mut a, mut w) = (0u32, WARP_SIZE);
    loop {
        let members: Vec<u32> = lanes
            .iter()
            .enumerate()
            .filter(|&(l, &i)| (a..a + w).contains(&(l as u32)) && is(i))
            .map(|(_, &i)| i)
            .collect();
        if !members.is_empty() {
            let mut tlo = [f32::INFINITY; 3];
            let mut thi = [f32::NEG_INFINITY; 3];
            let (mut hmin, mut hmax) = (f32::INFINITY, 0.0f32);
            for &i in &members {
                let p = bodies[i as usize].pos();
                for k in 0..3 {
                    tlo[k] = tlo[k].min(p[k]);
                    thi[k] = thi[k].max(p[k]);
                }
                if h[i as usize] > 0.0 {
                    hmin = hmin.min(h[i as usize]);
                }
                hmax = hmax.max(h[i as usize]);
            }
            if w > 1 && dev::group_too_wide(tlo, thi, hmin, hmax) {
                w /= 2;
                continue;
            }
            walks.push((a, w, members));
        }
        match dev::next_lanes(a, w) {
            Some((na, nw)) => (a, w) = (na, nw),
            None => break,
        }
    }
    walks
}

/// The twin of `sph_active_groups`: each walk of [`group_walk_ranges`] of the warp groups
/// `groups` (`[first, size]` in `sort`, in order) for their members with `is` (the h iteration:
/// still iterating), as a group of its own, `[first + a, min(w, size - a)]`: the work the
/// iteration's group search hands out, in order.
pub fn active_groups(
    bodies: &[Body],
    h: &[f32],
    sort: &[u32],
    groups: &[[u32; 2]],
    is: &(impl Fn(u32) -> bool + Sync),
) -> Vec<[u32; 2]> {
    groups
        .par_iter()
        .flat_map_iter(|&[first, size]| {
            let lanes = &sort[first as usize..(first + size) as usize];
            group_walk_ranges(bodies, h, lanes, is)
                .into_iter()
                .map(move |(a, w, _)| [first + a, w.min(size - a)])
        })
        .collect()
}

/// The twin of `sph_group`: per warp group (with a subset of the targets, only the groups of
/// [`active_groups`], as the h iteration hands them out), one walk per lane range of
/// [`group_walks`] against the box and largest h of its active members, every one of them
/// testing every candidate.
fn group<S: Sink + Send>(
    bodies: &[Body],
    h: &[f32],
    t: &SphTree,
    crit: u32,
    is: &(impl Fn(u32) -> bool + Sync),
    subset: bool,
    make: &(impl Fn(u32) -> S + Sync),
) -> Vec<(u32, S, u64)> {
    let gathered;
    let groups = if subset {
        gathered = active_groups(bodies, h, &t.tree.sort, &t.tree.groups, is);
        &gathered
    } else {
        &t.tree.groups
    };
    // A search of few walks tests each served target's own sphere (`sph_group_few`).
    let per_target = groups.len() <= dev::FEW_PASS_WALKS as usize;
    groups
        .par_iter()
        .flat_map_iter(|&[first, size]| {
            let lanes = &t.tree.sort[first as usize..(first + size) as usize];
            group_walks(bodies, h, lanes, is)
                .into_iter()
                .flat_map(|members| {
                    let cand = group_candidates(bodies, h, t, crit, &members, per_target);
                    members
                        .iter()
                        .map(|&i| {
                            let mut s = make(i);
                            for &j in &cand {
                                test(bodies, h, crit, i, j, &mut s);
                            }
                            (i, s, cand.len() as u64)
                        })
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The linked cells on the host: cell of each particle, counting sort (stable), cell offsets.
pub struct CellList {
    pub grid: dev::Grid,
    /// `grid.cells() + 1` offsets into `order`.
    pub start: Vec<u32>,
    /// Particles in cell order.
    pub order: Vec<u32>,
}

impl CellList {
    pub fn new(bodies: &[Body], h: &[f32]) -> Self {
        let g = grid(bodies, h);
        let cell_of: Vec<u32> = bodies.iter().map(|b| g.index(g.coords(b.pos()))).collect();
        let mut count = vec![0u32; g.cells() as usize];
        for &c in &cell_of {
            count[c as usize] += 1;
        }
        let (start, _) = offsets_of(&count);
        let mut fill = start.clone();
        let mut order = vec![0u32; bodies.len()];
        for (i, &c) in cell_of.iter().enumerate() {
            order[fill[c as usize] as usize] = i as u32;
            fill[c as usize] += 1;
        }
        CellList {
            grid: g,
            start,
            order,
        }
    }
}

/// The twin of `sph_cell_query`.
fn cells<S: Sink + Send>(
    bodies: &[Body],
    h: &[f32],
    crit: u32,
    is: &(impl Fn(u32) -> bool + Sync),
    make: &(impl Fn(u32) -> S + Sync),
) -> Vec<(u32, S, u64)> {
    let cl = CellList::new(bodies, h);
    cl.order
        .par_iter()
        .filter(|&&i| is(i))
        .map(|&i| {
            let mut s = make(i);
            let mut tested = 0u64;
            dev::cell_stencil(&cl.grid, bodies[i as usize].pos(), |c| {
                let cell =
                    &cl.order[cl.start[c as usize] as usize..cl.start[c as usize + 1] as usize];
                for &j in cell {
                    test(bodies, h, crit, i, j, &mut s);
                }
                tested += cell.len() as u64;
            });
            (i, s, tested)
        })
        .collect()
}

/// O(N²): every particle against every other, with the same float32 test.
pub fn brute_force<S: Sink + Send>(
    bodies: &[Body],
    h: &[f32],
    crit: Criterion,
    make: impl Fn(u32) -> S + Sync,
) -> Vec<S> {
    let c = crit.code();
    (0..bodies.len() as u32)
        .into_par_iter()
        .map(|i| {
            let mut s = make(i);
            for j in 0..bodies.len() as u32 {
                test(bodies, h, c, i, j, &mut s);
            }
            s
        })
        .collect()
}

/// Neighbour counts.
pub fn counts(
    method: Method,
    bodies: &[Body],
    h: &[f32],
    crit: Criterion,
) -> Result<Vec<u32>, SphError> {
    validate(bodies, h, false)?;
    Ok(search(method, bodies, h, None, crit, |_| Count(0))
        .into_iter()
        .map(|c| c.0)
        .collect())
}

/// CSR neighbour lists by a count pass and a fill pass; refused before the fill when they would
/// hold more than `max_pairs` entries. Rows ascending.
pub fn neighbours(
    method: Method,
    bodies: &[Body],
    h: &[f32],
    crit: Criterion,
    max_pairs: u64,
) -> Result<Neighbours, SphError> {
    validate(bodies, h, false)?;
    let tree = (method != Method::Cells).then(|| SphTree::new(bodies, h));
    let counts: Vec<u32> = search(method, bodies, h, tree.as_ref(), crit, |_| Count(0))
        .into_iter()
        .map(|c| c.0)
        .collect();
    let (offsets, total) = offsets_of(&counts);
    check_pairs(total, max_pairs)?;
    let rows = search(method, bodies, h, tree.as_ref(), crit, |i| {
        Collect(Vec::with_capacity(counts[i as usize] as usize))
    });
    let mut list = Vec::with_capacity(total as usize);
    for r in rows {
        list.extend_from_slice(&r.0);
    }
    let mut nb = Neighbours { offsets, list };
    nb.sort_rows();
    Ok(nb)
}

/// SPH density by summation over the gather neighbours (h > 0).
pub fn density(
    method: Method,
    bodies: &[Body],
    h: &[f32],
    kernel: SmoothingKernel,
) -> Result<Vec<f32>, SphError> {
    validate(bodies, h, true)?;
    let k = kernel.code();
    Ok(search(method, bodies, h, None, Criterion::Gather, |i| {
        Density::new(k, h[i as usize])
    })
    .into_iter()
    .map(|d| d.rho())
    .collect())
}

/// Float64 density by direct summation over all particles for the targets `targets`.
pub fn density_f64(
    bodies: &[Body],
    h: &[f32],
    kernel: SmoothingKernel,
    targets: &[usize],
) -> Vec<f64> {
    let k = kernel.code();
    targets
        .par_iter()
        .map(|&i| {
            let p = bodies[i].pos().map(|v| v as f64);
            let hi = h[i] as f64;
            bodies
                .iter()
                .map(|b| {
                    let q = b.pos().map(|v| v as f64);
                    let r = ((q[0] - p[0]).powi(2) + (q[1] - p[1]).powi(2) + (q[2] - p[2]).powi(2))
                        .sqrt();
                    b.m as f64 * dev::kernel_shape::<f64>(k, r / hi) / (hi * hi * hi)
                })
                .sum()
        })
        .collect()
}

struct SliceCountTree<'a>(&'a Tree);

impl dev::CountTree for SliceCountTree<'_> {
    fn slot(&self, cell: i32, octant: u32) -> i32 {
        self.0.child[self.0.layout.slot(cell, octant)]
    }
    fn count(&self, cell: i32) -> u32 {
        self.0.count[cell as usize]
    }
}

/// The twin of `sph_h_guess`: each particle's first smoothing length from the local density of
/// the octree ([`dev::guess_h`]).
pub fn guess_h(bodies: &[Body], tree: &Tree, target: f32) -> Vec<f32> {
    let (centre, half) = crate::device::bh::root_cell(&tree.header);
    let t = SliceCountTree(tree);
    bodies
        .par_iter()
        .map(|b| {
            dev::guess_h(
                &t,
                tree.root(),
                tree.n as i32,
                centre,
                half,
                b.pos(),
                target,
            )
        })
        .collect()
}

/// Smoothing lengths iterated until each particle's gather count is `target ± tol`
/// (`warpkit_device::sph::update_h`), from `h0` (default: the local-density guess, [`guess_h`]).
/// Each pass searches only the particles still iterating, counting at the rungs of their
/// ladders (`warpkit_device::sph::ladder`).
pub fn iterate_h(
    method: Method,
    bodies: &[Body],
    h0: Option<&[f32]>,
    hp: &HParams,
) -> Result<HIteration, SphError> {
    let n = bodies.len();
    if n == 0 {
        return Err(SphError::Empty);
    }
    // The octree holds no h: built once, for the guess and the tree searches.
    let tree = bh::cpu::build_tree(bodies);
    let mut h: Vec<f32> = match h0 {
        Some(h) => h.to_vec(),
        None => guess_h(bodies, &tree, hp.target),
    };
    validate(bodies, &h, true)?;
    hp.check(n)?;
    // Gather counts ignore the cells' largest h: the boxes stay valid while h changes.
    let tree = (method != Method::Cells).then(|| SphTree::with_tree(tree, bodies, &h));
    let mut state: Vec<dev::HState> = h.iter().map(|&x| dev::HState::start(x)).collect();
    // Each pass searches out to the largest rung of each particle's ladder.
    for (x, s) in h.iter_mut().zip(&state) {
        *x = dev::walk_radius(s);
    }
    let mut counts = vec![0u32; n];
    let mut passes = Vec::new();
    while (passes.len() as u32) < hp.max_iter {
        let t = std::time::Instant::now();
        let active: Vec<bool> = state.iter().map(|s| s.iterating()).collect();
        let (found, tested) = search_some(
            method,
            bodies,
            &h,
            tree.as_ref(),
            Criterion::Gather,
            Some(&active),
            |i| dev::Ladder::new(&state[i as usize]),
        );
        let groups = match &tree {
            Some(t) if method == Method::Group => {
                active_groups(bodies, &h, &t.tree.sort, &t.tree.groups, &|i| {
                    active[i as usize]
                })
                .len() as u32
            }
            _ => 0,
        };
        let mut pass = super::HPass {
            active: 0,
            groups,
            found: 0,
            tested,
            ms: 0.0,
        };
        for (i, c) in found.into_iter().enumerate() {
            if let Some(c) = c {
                pass.active += 1;
                pass.found += c.c[dev::LADDER - 1] as u64;
                let (s, at) = dev::update_h(state[i], &c.c, hp.target, hp.tol);
                state[i] = s;
                counts[i] = at;
                h[i] = dev::walk_radius(&s);
            }
        }
        pass.ms = t.elapsed().as_secs_f64() * 1e3;
        passes.push(pass);
        if !state.iter().any(|s| s.iterating()) {
            break;
        }
    }
    let unconverged = (0..n as u32)
        .filter(|&i| state[i as usize].state != dev::H_CONVERGED)
        .collect();
    Ok(HIteration {
        h: state.iter().map(|s| s.h).collect(),
        counts,
        iterations: passes.len() as u32,
        unconverged,
        passes,
    })
}
