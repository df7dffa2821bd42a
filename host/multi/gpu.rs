//! A rank's forces on a GPU: its essential tree ([`super::tree::Essential`]) laid out as the
//! single-GPU pipeline's dense octree ([`EssentialArrays`]) and walked by the existing group
//! kernels (`bh_gravity_group`, `bh_gravity_group_quad`) through `bh::gpu::gravity_on`, with the
//! rank's own warp groups as the kernel's groups.
//!
//! The essential tree's pseudo-bodies (far cells of other ranks, carrying their moments) become
//! *childless cells*: the kernels read a body's moment as zero but a cell's from `cell_quad`. A
//! pseudo-body is far from the receiving rank's domain boxes, and every group box lies inside one
//! of them, so the walk always finds such a cell far and lists it with its moments, at the place
//! where the CPU walk lists the pseudo-body (a far child is listed where a body child would be):
//! the same list, in the same order, as the CPU walk over [`super::tree::Essential`] — which is
//! the single tree's list for the same groups. A childless cell found *not* far would contribute
//! nothing; [`EssentialArrays::of`]'s test `the_gpu_layout_walks_like_the_essential_tree` checks
//! on the CPU (the kernels' own walk, `walk_list`, over these arrays) that this never happens.

use super::tree::{Essential, Walked, Walker};
use crate::bh::gpu::{self as bg, BhError, DeviceOctree, Options, StageTimes, Traversal};
use crate::bh::{Params, gpu::TreeBuffers};
use crate::device::bh::{self as dev, Accel, Body, Layout, Quad, TreeHeader};
use crate::runtime::Gpu;
use std::sync::Mutex;

/// An essential tree in the dense layout of `warpkit_device::bh` (bodies `0..n`, cells `n + c`,
/// the root the last cell), with the rank's groups as the tree sort's `sort` and `groups`.
#[derive(Clone, Debug)]
pub struct EssentialArrays {
    pub bodies: Vec<Body>,
    pub next: Vec<i32>,
    pub child: Vec<i32>,
    pub cell_pm: Vec<Body>,
    pub cell_quad: Vec<Quad>,
    pub layout: Layout,
    /// The global box (for the kernels' cell widths), the group count, the group counter at 0.
    pub header: TreeHeader,
    /// Array indices of the groups' bodies, group after group.
    pub sort: Vec<u32>,
    /// (first, size) in `sort` per group.
    pub groups: Vec<[u32; 2]>,
}

impl EssentialArrays {
    /// `ess` for the walks of `groups` (indices into the rank's own bodies), in the global box of
    /// `header`.
    pub fn of(ess: &Essential, header: &TreeHeader, groups: &[Vec<u32>]) -> EssentialArrays {
        // Bodies: the essential tree's real bodies, in order; pseudo-bodies become cells after
        // the essential tree's own cells.
        let mut body_at = vec![u32::MAX; ess.bodies.len()];
        let mut pseudo_cell = vec![u32::MAX; ess.bodies.len()];
        let mut bodies = Vec::with_capacity(ess.bodies.len());
        let mut own = Vec::new();
        let cells0 = ess.cell_pm.len() as u32;
        let mut pseudo = 0u32;
        for (i, b) in ess.bodies.iter().enumerate() {
            if ess.pseudo[i] {
                pseudo_cell[i] = cells0 + pseudo;
                pseudo += 1;
            } else {
                body_at[i] = bodies.len() as u32;
                bodies.push(*b);
                if ess.local[i] != u32::MAX {
                    let l = ess.local[i] as usize;
                    if own.len() <= l {
                        own.resize(l + 1, u32::MAX);
                    }
                    own[l] = body_at[i];
                }
            }
        }
        let cells = cells0 + pseudo;
        let n = bodies.len() as i32;
        // The root goes to the last cell (dense layout); it trades places with that cell.
        let root = ess.root as u32;
        let renumber = |c: u32| {
            if c == root {
                cells - 1
            } else if c == cells - 1 {
                root
            } else {
                c
            }
        };
        let enc = |s: i32| -> i32 {
            if s < 0 {
                s
            } else if (s as usize) < ess.bodies.len() {
                let i = s as usize;
                if ess.pseudo[i] {
                    n + renumber(pseudo_cell[i]) as i32
                } else {
                    body_at[i] as i32
                }
            } else {
                n + renumber((s as usize - ess.bodies.len()) as u32) as i32
            }
        };
        let mut child = vec![dev::EMPTY; cells as usize * 8];
        let mut cell_pm = vec![Body::default(); cells as usize];
        let mut cell_quad = vec![Quad::default(); cells as usize];
        for c in 0..cells0 {
            let to = renumber(c) as usize;
            for o in 0..8 {
                child[to * 8 + o] = enc(ess.child[c as usize * 8 + o]);
            }
            cell_pm[to] = ess.cell_pm[c as usize];
            cell_quad[to] = ess.cell_quad[c as usize];
        }
        for (i, &pc) in pseudo_cell.iter().enumerate() {
            if pc != u32::MAX {
                let to = renumber(pc) as usize;
                cell_pm[to] = ess.bodies[i];
                cell_quad[to] = ess.body_quad[i];
            }
        }
        let next = (0..ess.bodies.len())
            .filter(|&i| !ess.pseudo[i])
            .map(|i| enc(ess.next[i]))
            .collect();
        let mut sort = Vec::new();
        let mut spans = Vec::with_capacity(groups.len());
        for g in groups {
            spans.push([sort.len() as u32, g.len() as u32]);
            sort.extend(g.iter().map(|&l| own[l as usize]));
        }
        let mut h = TreeHeader::new(cells);
        (h.min, h.max) = (header.min, header.max);
        h.groups = spans.len() as u32;
        h.next_group = 0;
        EssentialArrays {
            bodies,
            next,
            child,
            cell_pm,
            cell_quad,
            layout: Layout::dense(cells),
            header: h,
            sort,
            groups: spans,
        }
    }

    /// The CPU view of the arrays (the kernels' walk on the host: `walk_list`).
    pub fn view(&self) -> dev::SliceOctree<'_> {
        dev::SliceOctree {
            bodies: &self.bodies,
            child: &self.child,
            next: &self.next,
            cell_pm: &self.cell_pm,
            layout: self.layout,
        }
    }
}

/// A rank's walks on a GPU. Virtual ranks sharing one device pass the same `lock`: their walks
/// take turns (one stream; CUDA-event timings stay each rank's own). The kernel counts the
/// sources listed per launch, not per group, so each body's work estimate (the next
/// decomposition's weight) is its rank's mean: GPU ranks balance by count × rank mean.
pub struct GpuWalk<'a> {
    pub gpu: &'a Gpu,
    pub lock: Option<&'a Mutex<()>>,
}

impl Walker for GpuWalk<'_> {
    fn walk(
        &self,
        ess: &Essential,
        header: &TreeHeader,
        groups: &[Vec<u32>],
        _pos: &[Vec<[f32; 3]>],
        p: &Params,
        quadrupole: bool,
    ) -> Result<Walked, BhError> {
        let a = EssentialArrays::of(ess, header, groups);
        let _turn = self
            .lock
            .map(|l| l.lock().unwrap_or_else(|e| e.into_inner()));
        let t0 = std::time::Instant::now();
        let (acc, listed) = walk_on_gpu(self.gpu, &a, p, quadrupole)?;
        let device_ms = t0.elapsed().as_secs_f64() * 1e3;
        drop(_turn);
        let mut at = 0usize;
        let out = a
            .groups
            .iter()
            .zip(listed)
            .map(|(&[first, size], listed)| {
                debug_assert_eq!(first as usize, at);
                at += size as usize;
                let accs = a.sort[first as usize..(first + size) as usize]
                    .iter()
                    .map(|&i| acc[i as usize])
                    .collect();
                (accs, listed)
            })
            .collect();
        Ok(Walked {
            groups: out,
            device_ms,
        })
    }
}

/// Uploads `a`, runs the group kernel (monopoles or quadrupoles) over its groups, and returns the
/// accelerations by array index and the sources listed per group (from the header's interaction
/// count: the kernel counts `listed × size` per group, so a per-group count needs the CPU; the
/// mean per body is spread over the groups by their size).
pub fn walk_on_gpu(
    gpu: &Gpu,
    a: &EssentialArrays,
    p: &Params,
    quadrupole: bool,
) -> Result<(Vec<Accel>, Vec<usize>), BhError> {
    let n = a.bodies.len();
    let octree = DeviceOctree {
        bodies: gpu.upload(&a.bodies)?,
        tree: TreeBuffers {
            header: gpu.upload(&[a.header])?,
            child: gpu.upload(&a.child)?,
            next: gpu.upload(&a.next)?,
            // Not read by the group kernels.
            count: gpu.alloc_poisoned(1)?,
            start: gpu.alloc_poisoned(1)?,
            cell_pm: gpu.upload(&a.cell_pm)?,
            cell_quad: gpu.upload(&a.cell_quad)?,
            // The rank's groups as the tree's order and groups.
            sort: gpu.upload(&a.sort)?,
            groups: gpu.upload(&a.groups)?,
        },
        layout: a.layout,
        moments: true,
        retries: 0,
        times: StageTimes::default(),
    };
    let mut acc = gpu.alloc_poisoned(n.max(1))?;
    let o = Options {
        sorted: true,
        traversal: Traversal::Group,
        quadrupole,
        ..Default::default()
    };
    bg::gravity_on(gpu, &octree, p, &o, &mut acc, None)?;
    let acc = gpu.download(&acc)?;
    let h = gpu.download(&octree.tree.header)?[0];
    let bodies: u64 = a.groups.iter().map(|g| g[1] as u64).sum();
    let mean = h.interactions as f64 / bodies.max(1) as f64;
    let listed = a.groups.iter().map(|_| mean.round() as usize).collect();
    Ok((acc, listed))
}
