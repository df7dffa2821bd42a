//! A rank's walks over its essential tree: the interaction with the pseudo-bodies' moments, the
//! CPU walker, and the per-rank gravity with its statistics.

use super::*;

/// `dev::Quadrupole` over an [`Essential`]: pseudo-bodies carry their cell's moments.
#[derive(Clone, Copy, Debug)]
pub struct EssentialQuad<'a> {
    pub eps2: f32,
    pub tree: &'a Essential,
}

impl Interaction for EssentialQuad<'_> {
    type Extra = Quad;
    type Target = dev::Targets<1>;
    fn cell_extra(&self, c: i32) -> Quad {
        self.tree.cell_quad[c as usize]
    }
    fn body_extra(&self, b: i32) -> Quad {
        self.tree.body_quad[b as usize]
    }
    fn add(&self, t: &mut dev::Targets<1>, s: &Body, q: &Quad) {
        dev::add_pair_accel_quad::<false>(&mut t.a[0], t.p[0], s.pos(), s.m, q, self.eps2);
    }
}

/// Accelerations of each group (positions) by one walk per group over `tree` with `inter`, as
/// `cpu::gravity_group` does (the group's box, the same test and sums), and the sources listed.
pub fn walk_groups<T, I>(
    tree: &T,
    inter: &I,
    w2: &[f32],
    groups: &[Vec<[f32; 3]>],
    p: &Params,
) -> Vec<(Vec<Accel>, usize)>
where
    T: Octree + Sync,
    I: Interaction<Target = dev::Targets<1>> + Sync,
{
    let theta2 = p.theta * p.theta;
    groups
        .par_iter()
        .map(|pos| {
            let lo =
                std::array::from_fn(|k| pos.iter().map(|q| q[k]).fold(f32::INFINITY, f32::min));
            let hi =
                std::array::from_fn(|k| pos.iter().map(|q| q[k]).fold(f32::NEG_INFINITY, f32::max));
            let (bc, bh) = dev::box_of(lo, hi);
            let far =
                |s: &Body, depth: usize| dev::is_far_from_box(s.pos(), w2[depth], bc, bh, theta2);
            let list = walk_list(tree, inter, far);
            let acc = pos
                .iter()
                .map(|&q| {
                    let mut t = dev::Targets::at([q]);
                    list.iter().for_each(|(s, e)| inter.add(&mut t, s, e));
                    let a = t.a[0];
                    Accel {
                        x: p.g * a[0],
                        y: p.g * a[1],
                        z: p.g * a[2],
                    }
                })
                .collect();
            (acc, list.len())
        })
        .collect()
}

/// What one rank's gravity exchanged and built.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GravityStats {
    /// This rank's items, and all ranks' top cells.
    pub items: usize,
    pub top_cells: usize,
    /// LET nodes received from other ranks.
    pub imported: usize,
    /// Bodies and cells of this rank's own tree (what a LET without pruning would hold).
    pub nodes: usize,
    /// Bytes this rank sent: top tree and domain boxes (all-gathers), LETs (all-to-all-v).
    pub top_bytes: u64,
    pub let_bytes: u64,
    /// Sources summed over this rank's bodies (list length per body).
    pub interactions: u64,
    /// Milliseconds in the top-tree, domain and LET collectives.
    pub ms_exchange: f64,
    /// Milliseconds of the walk on a device (GPU walks: upload, kernel, download), else 0.
    pub ms_device: f64,
}

/// Who walks a rank's essential tree: the CPU ([`CpuWalk`]: [`walk_groups`], rayon) or a GPU
/// (`super::gpu::GpuWalk`: the group kernels over the essential tree in device memory).
pub trait Walker {
    /// Each group's accelerations (`pos`: the group's positions; `groups`: the same groups as
    /// indices into the rank's own bodies, which `ess.local` maps to) and sources listed.
    fn walk(
        &self,
        ess: &Essential,
        header: &TreeHeader,
        groups: &[Vec<u32>],
        pos: &[Vec<[f32; 3]>],
        p: &Params,
        quadrupole: bool,
    ) -> Result<Walked, crate::bh::gpu::BhError>;
}

/// A [`Walker`]'s result: per group, the accelerations and the sources listed; and the
/// milliseconds the walk took on a device (0 on the CPU, whose time is the caller's).
#[derive(Clone, Debug, Default)]
pub struct Walked {
    pub groups: Vec<(Vec<Accel>, usize)>,
    pub device_ms: f64,
}

/// The CPU's walk: [`walk_groups`] over the essential tree.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuWalk;

impl Walker for CpuWalk {
    fn walk(
        &self,
        ess: &Essential,
        header: &TreeHeader,
        _groups: &[Vec<u32>],
        pos: &[Vec<[f32; 3]>],
        p: &Params,
        quadrupole: bool,
    ) -> Result<Walked, crate::bh::gpu::BhError> {
        let w2 = widths2(header);
        let eps2 = p.eps * p.eps;
        let groups = if quadrupole {
            walk_groups(ess, &EssentialQuad { eps2, tree: ess }, &w2, pos, p)
        } else {
            walk_groups(ess, &dev::Monopole::<1, false> { eps2 }, &w2, pos, p)
        };
        Ok(Walked {
            groups,
            device_ms: 0.0,
        })
    }
}

/// One rank's forces: `bodies` are its own (keys in `range`, sorted by key), `header` the global
/// box, `p` the gravity parameters. Returns the accelerations and the sources summed per body
/// (the work estimate of the next decomposition), the groups walked (own body indices), and the
/// statistics.
pub struct RankForces {
    pub acc: Vec<Accel>,
    pub work: Vec<u32>,
    pub groups: Vec<Vec<u32>>,
    pub stats: GravityStats,
}

#[allow(clippy::too_many_arguments)]
pub fn rank_gravity(
    comm: &dyn Comm,
    bodies: &[Body],
    keys: &[u64],
    range: (u64, u64),
    header: &TreeHeader,
    p: &Params,
    quadrupole: bool,
    walker: &dyn Walker,
) -> Result<RankForces, crate::bh::gpu::BhError> {
    let me = comm.rank() as u32;
    let w2 = widths2(header);
    let theta2 = p.theta * p.theta;
    let tree = build_local(bodies, header);
    let mine = items(&tree, bodies, keys, range, me);
    // Groups in sort order, so that consecutive groups are neighbours (Domain::of).
    let mut spans = tree.groups.clone();
    spans.sort_unstable_by_key(|g| g[0]);
    let groups: Vec<Vec<u32>> = spans
        .iter()
        .map(|&[s, c]| tree.sort[s as usize..(s + c) as usize].to_vec())
        .collect();
    let pos: Vec<Vec<[f32; 3]>> = groups
        .iter()
        .map(|g| g.iter().map(|&i| bodies[i as usize].pos()).collect())
        .collect();
    let dom = Domain::of(&pos);
    let sent0 = comm.bytes_sent();
    let t0 = std::time::Instant::now();
    let top = TopTree::new(all_gather_pod(comm, &mine).concat());
    let domains: Vec<Domain> = all_gather_pod(comm, &dom.boxes)
        .into_iter()
        .map(|boxes| Domain { boxes })
        .collect();
    let sent1 = comm.bytes_sent();
    let send: Vec<Vec<LetNode>> = domains
        .iter()
        .enumerate()
        .map(|(r, d)| {
            if r as u32 == me || tree.n == 0 {
                Vec::new()
            } else {
                let_for(&tree, bodies, &mine, d, &w2, theta2)
            }
        })
        .collect();
    let t1 = std::time::Instant::now();
    let imported = all_to_all_pod(comm, &send);
    let sent2 = comm.bytes_sent();
    // The top tree's rebuild counts as exchange: small, and every rank repeats it.
    let ms_exchange = (t1 - t0 + t1.elapsed()).as_secs_f64() * 1e3;
    let mut own = Vec::new();
    for it in mine.iter().filter(|i| !i.is_body()) {
        let cell = it.node - tree.n as i32;
        encode(
            &tree,
            bodies,
            cell,
            it.depth as usize,
            &|_, _| false,
            true,
            &mut own,
        );
    }
    let ess = Essential::assemble(&top, me, &own, &imported, &dom, &w2, theta2);
    let walked = if bodies.is_empty() {
        Walked::default()
    } else {
        walker.walk(&ess, header, &groups, &pos, p, quadrupole)?
    };
    let mut acc = vec![Accel::default(); bodies.len()];
    let mut work = vec![0u32; bodies.len()];
    for (g, (a, listed)) in groups.iter().zip(walked.groups) {
        for (&i, a) in g.iter().zip(a) {
            acc[i as usize] = a;
            work[i as usize] = listed as u32;
        }
    }
    let stats = GravityStats {
        items: mine.len(),
        top_cells: top.cells.len(),
        imported: ess.imported,
        nodes: tree.n + if tree.n > 0 { tree.used_cells() } else { 0 },
        top_bytes: sent1 - sent0,
        let_bytes: sent2 - sent1,
        interactions: work.iter().map(|&w| w as u64).sum(),
        ms_exchange,
        ms_device: walked.device_ms,
    };
    Ok(RankForces {
        acc,
        work,
        groups,
        stats,
    })
}
