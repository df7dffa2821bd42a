//! The GPU pipeline: reset → bounding box → build (retried with twice the cells on overflow) →
//! summarize → sort → gravity, each stage timed with CUDA events.

use super::{InputError, Params, Tree, initial_cells, validate};
use crate::device::bh::kernels as k;
use crate::device::bh::{self as dev, Accel, Body, Quad, TreeHeader};
use crate::runtime::{CudaSlice, Gpu, GpuError, LaunchConfig, View, ViewMut, grid_for};

mod build;
mod sorted;
pub use build::*;
pub use sorted::{SortedScratch, radix_sort, sorted_build_bytes};

/// Failures of a GPU gravity evaluation.
#[derive(Debug, thiserror::Error)]
pub enum BhError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error("{0}")]
    Option(String),
    /// The tree outgrew the addressable cells (sparse storage: too deep).
    #[error("{0}")]
    Capacity(String),
    #[error("{n} bodies need about {need} MiB of device memory but {free} MiB are free")]
    TooLarge { n: usize, need: usize, free: usize },
}

/// Milliseconds per stage (CUDA events), as the seed's profile prints them.
#[derive(Clone, Copy, Debug, Default)]
pub struct StageTimes {
    pub reset: f64,
    pub bounding_box: f64,
    pub build: f64,
    pub summarize: f64,
    pub sort: f64,
    pub gravity: f64,
    /// The relative criterion's first pass (geometric, for the previous accelerations that a
    /// simulation has from its last step): reported, not part of [`Self::total`].
    pub prepass: f64,
}

impl StageTimes {
    /// Everything but gravity: the tree's cost.
    pub fn tree(&self) -> f64 {
        self.reset + self.bounding_box + self.build + self.summarize + self.sort
    }
    pub fn total(&self) -> f64 {
        self.tree() + self.gravity
    }
}

/// One evaluation's outputs.
pub struct GpuRun {
    pub acc: Vec<Accel>,
    pub times: StageTimes,
    pub header: TreeHeader,
    /// Cells allocated (capacity) on the successful attempt.
    pub cells: usize,
    /// Builds repeated after an overflow.
    pub retries: u32,
    /// The tree, when asked for (for invariant checks).
    pub tree: Option<Tree>,
}

/// Node storage (seed 001): see [`dev::Layout`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, crate::choice::Choice)]
pub enum Storage {
    /// Cells allocated downward by an atomic counter; memory grows with the cells in use.
    #[default]
    Dense,
    /// The seed's implicit complete octree (children of slot s at 8s+1…8s+8): no allocation, but
    /// 8× the address space per level, so at most 2^26 nodes (about 8 levels).
    Sparse,
}

impl Storage {
    /// The layout for a first capacity of `cells`.
    pub fn layout(self, cells: usize) -> dev::Layout {
        let cells = cells.clamp(1, MAX_CELLS) as u32;
        match self {
            Storage::Dense => dev::Layout::dense(cells),
            Storage::Sparse => dev::Layout::sparse(cells),
        }
    }
}

/// How the build stage makes the tree.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    crate::choice::Choice,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Build {
    /// Octant paths as integer keys, radix-sorted; cells numbered and linked from the sorted keys
    /// without locks (`dev::morton`). Dense storage only (sparse storage always inserts). The
    /// default: on the H200 it builds 1.8× (uniform 2^22) to 2.7× (Plummer 2^20) faster than the
    /// locked insertion.
    #[default]
    Sorted,
    /// The seed's top-down insertion, a CAS lock per child slot (`bh_build`).
    Locked,
}

impl Build {
    /// The build that `storage` allows.
    pub fn for_storage(self, storage: Storage) -> Build {
        if storage == Storage::Sparse {
            Build::Locked
        } else {
            self
        }
    }
}

/// Cell indices must fit the gravity kernels' stack entries (`cell * 32 + depth` in an i32).
pub const MAX_CELLS: usize = 1 << 26;

/// Bytes of device memory for `n` bodies in `layout`.
pub fn device_bytes(n: usize, layout: dev::Layout) -> usize {
    // bodies, accelerations, next, sort, groups; per cell count, start, summary, quadrupole;
    // the child slots.
    n * (16 + 12 + 4 + 4 + 8) + layout.cells as usize * (4 + 4 + 16 + 32) + layout.slots() * 4 + 64
}

/// An octree in device memory, in the layout of `warpkit_device::bh`: the arrays of
/// [`dev::TreeView`] but the bodies.
pub struct TreeBuffers {
    pub header: CudaSlice<TreeHeader>,
    pub child: CudaSlice<i32>,
    pub next: CudaSlice<i32>,
    pub count: CudaSlice<u32>,
    pub start: CudaSlice<i32>,
    pub cell_pm: CudaSlice<Body>,
    pub cell_quad: CudaSlice<Quad>,
    /// The tree order (`sort[k]`: the body at position k) and its warp groups, once sorted.
    pub sort: CudaSlice<u32>,
    pub groups: CudaSlice<[u32; 2]>,
}

/// Bodies and their octree on the device. Built and summarized by [`build_device_tree`] and its
/// variants, sorted by [`sort_tree`]; a kernel takes the whole tree as one parameter,
/// [`DeviceOctree::view`] (the walks) or [`DeviceOctree::view_mut`] (the stages that make it).
pub struct DeviceOctree {
    pub bodies: CudaSlice<Body>,
    pub tree: TreeBuffers,
    pub layout: dev::Layout,
    /// Whether the summary makes (made) quadrupole moments: else `cell_quad` is unwritten and
    /// the views pass it as null.
    pub moments: bool,
    /// Builds repeated after an overflow.
    pub retries: u32,
    /// Reset, bounding box, build and summarize times of the successful attempt.
    pub times: StageTimes,
}

impl TreeBuffers {
    /// Poisoned buffers for `n` bodies in `layout` (`next` all -1: every chain starts empty).
    pub fn new(gpu: &Gpu, n: usize, layout: dev::Layout) -> Result<Self, GpuError> {
        let cells = layout.cells as usize;
        Ok(TreeBuffers {
            header: gpu.upload(&[TreeHeader::new(layout.cells)])?,
            child: gpu.alloc_poisoned(layout.slots())?,
            // 0xFF bytes: every chain starts empty (-1).
            next: gpu.alloc_poisoned(n)?,
            count: gpu.alloc_poisoned(cells)?,
            start: gpu.alloc_poisoned(cells)?,
            cell_pm: gpu.alloc_poisoned(cells)?,
            cell_quad: gpu.alloc_poisoned(cells)?,
            sort: gpu.alloc_poisoned(n.max(1))?,
            groups: gpu.alloc_poisoned(n.max(1))?,
        })
    }
}

impl DeviceOctree {
    /// Number of bodies.
    pub fn n(&self) -> usize {
        self.bodies.len()
    }

    /// The tree as the walks read it (one kernel parameter).
    pub fn view(&self, gpu: &Gpu) -> View<'_, dev::TreeView> {
        let t = &self.tree;
        let v = dev::TreeView {
            bodies: gpu.addr(&self.bodies),
            child: gpu.addr(&t.child),
            next: gpu.addr(&t.next),
            count: gpu.addr(&t.count),
            start: gpu.addr(&t.start),
            cell_pm: gpu.addr(&t.cell_pm),
            cell_quad: if self.moments {
                gpu.addr(&t.cell_quad)
            } else {
                core::ptr::null()
            },
            sort: gpu.addr(&t.sort),
            groups: gpu.addr(&t.groups),
            // The group counter and walk statistics: atomics of the group kernels.
            header: gpu.addr(&t.header).cast_mut(),
            n: self.n() as u32,
            layout: self.layout,
        };
        // SAFETY: every pointer is one of this octree's buffers, borrowed with `self`, sized
        // for n bodies in `layout` (TreeBuffers::new).
        unsafe { View::new(v) }
    }

    /// [`Self::view`] walking the bodies in the caller's order (`sort` null): the vote kernel
    /// unsorted.
    pub fn view_unsorted(&self, gpu: &Gpu) -> View<'_, dev::TreeView> {
        let mut v = self.view(gpu).get();
        v.sort = core::ptr::null();
        // SAFETY: as `view`; a null `sort` is part of the view's contract.
        unsafe { View::new(v) }
    }

    /// [`Self::view`] whose warp groups are `subset`'s (its header, order and groups): the
    /// group kernels then walk those bodies only.
    pub fn view_subset<'a>(
        &'a self,
        gpu: &Gpu,
        subset: &'a GroupSubset,
    ) -> View<'a, dev::TreeView> {
        let mut v = self.view(gpu).get();
        v.header = gpu.addr(&subset.header).cast_mut();
        v.sort = gpu.addr(&subset.sort);
        v.groups = gpu.addr(&subset.groups);
        // SAFETY: as `view`, the subset's buffers borrowed with it.
        unsafe { View::new(v) }
    }

    /// [`Self::view`] whose warp groups are `groups` (a subset of the sort's, e.g. the groups
    /// with particles still iterating); the kernel takes their count.
    pub fn view_groups<'a>(
        &'a self,
        gpu: &Gpu,
        groups: &'a CudaSlice<[u32; 2]>,
    ) -> View<'a, dev::TreeView> {
        let mut v = self.view(gpu).get();
        v.groups = gpu.addr(groups);
        // SAFETY: as `view`, `groups` borrowed with it.
        unsafe { View::new(v) }
    }

    /// The tree as the stages that make it write it.
    pub fn view_mut(&mut self, gpu: &Gpu) -> ViewMut<'_, dev::TreeViewMut> {
        let n = self.n() as u32;
        let t = &mut self.tree;
        let v = dev::TreeViewMut {
            bodies: gpu.addr(&self.bodies),
            child: gpu.addr_mut(&mut t.child),
            next: gpu.addr_mut(&mut t.next),
            count: gpu.addr_mut(&mut t.count),
            start: gpu.addr_mut(&mut t.start),
            cell_pm: gpu.addr_mut(&mut t.cell_pm),
            cell_quad: if self.moments {
                gpu.addr_mut(&mut t.cell_quad)
            } else {
                core::ptr::null_mut()
            },
            sort: gpu.addr_mut(&mut t.sort),
            groups: gpu.addr_mut(&mut t.groups),
            header: gpu.addr_mut(&mut t.header),
            n,
            layout: self.layout,
        };
        // SAFETY: as `view`, the buffers borrowed mutably with `self`.
        unsafe { ViewMut::new(v) }
    }
}

/// The gravity kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, crate::choice::Choice)]
pub enum Traversal {
    /// The seed's kernel: one traversal per warp, a warp vote per cell (`bh_gravity`).
    #[default]
    Vote,
    /// One traversal per warp for the bounding box of its bodies, eight children tested at once,
    /// interaction lists evaluated by all lanes (`bh_gravity_group`).
    Group,
    /// The group traversal with two bodies per lane: groups of up to 64 bodies
    /// (`bh_gravity_group2`).
    Group2,
}

impl Traversal {
    /// Whether the kernel walks warp groups (and so needs the sort's groups).
    pub fn grouped(self) -> bool {
        self != Traversal::Vote
    }

    /// Largest warp group the sort packs for this kernel.
    pub fn group_size(self) -> u32 {
        match self {
            Traversal::Group2 => dev::GROUP_SIZE_2,
            _ => dev::GROUP_SIZE,
        }
    }
}

/// How to evaluate: traversal order and kernel, and what to keep.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Lanes follow the tree's gather index (else lane k handles body k).
    pub sorted: bool,
    pub traversal: Traversal,
    /// Download the tree for checks.
    pub keep_tree: bool,
    /// Quadrupole moments in the group kernel's cell interactions (ignored by the vote kernel).
    pub quadrupole: bool,
    /// Dense or sparse node storage.
    pub storage: Storage,
    /// How the tree is built (sorted keys or locked insertion).
    pub build: Build,
    /// Cells to allocate first (default [`initial_cells`]); doubled on overflow.
    pub cells: Option<usize>,
    /// Gadget's relative opening criterion instead of θ (two bodies per lane only).
    pub relative: Option<Relative>,
}

/// The relative opening criterion (`bh_gravity_group2_rel`, `…_quad_rel`): a cell is used whole
/// when `G M / r² (w / r)^p ≤ α |a_old|` for the group's smallest previous acceleration (p = 2,
/// or 3 with quadrupoles) and `w / r < θ_max`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Relative {
    pub alpha: f32,
    pub theta_max: f32,
}

impl Relative {
    /// The geometric guard when none is given: never a cell closer than its width.
    pub const THETA_MAX: f32 = 1.0;
}

/// Evaluates the accelerations of `bodies` on the GPU. With `sorted`, lanes follow the tree's
/// gather index; without, lane k handles body k (the caller's order). `keep_tree` downloads the
/// tree for checks.
pub fn gravity(
    gpu: &Gpu,
    bodies: &[Body],
    p: &Params,
    sorted: bool,
    keep_tree: bool,
) -> Result<GpuRun, BhError> {
    gravity_with(
        gpu,
        bodies,
        p,
        &Options {
            sorted,
            keep_tree,
            ..Default::default()
        },
    )
}

/// [`gravity`] with every option.
pub fn gravity_with(
    gpu: &Gpu,
    bodies: &[Body],
    p: &Params,
    o: &Options,
) -> Result<GpuRun, BhError> {
    let (sorted, keep_tree) = (o.sorted, o.keep_tree);
    let cells = o.cells.unwrap_or_else(|| initial_cells(bodies.len()));
    validate(bodies, p)?;
    if o.traversal.grouped() && !sorted {
        return Err(BhError::Option(
            "the warp-group traversal follows the tree order: it needs sorted mode".into(),
        ));
    }
    let n = bodies.len();
    let mut octree = build_device_tree_by(gpu, bodies, o.storage, o.build, cells, o.quadrupole)?;
    let mut acc = gpu.alloc_poisoned::<Accel>(n)?;
    let times = if o.relative.is_some() {
        // A geometric pass supplies the previous accelerations a simulation would have.
        let first = Options {
            relative: None,
            ..*o
        };
        let mut times = traverse(gpu, &mut octree, p, &first, &mut acc)?;
        rewind_groups(gpu, &mut octree)?;
        times.prepass = times.gravity;
        times.gravity = gravity_on(gpu, &octree, p, o, &mut acc, None)?;
        times
    } else {
        traverse(gpu, &mut octree, p, o, &mut acc)?
    };
    let DeviceOctree {
        tree: t,
        layout,
        retries,
        ..
    } = octree;
    let cells = layout.cells as usize;
    let group_size = o.traversal.group_size();
    let acc = gpu.download(&acc)?;
    // The final header: groups, interaction and opening counts of this evaluation.
    let header = gpu.download(&t.header)?[0];
    let tree = if keep_tree {
        Some(Tree {
            n,
            header,
            child: gpu.download(&t.child)?,
            next: gpu.download(&t.next)?,
            count: gpu.download(&t.count)?,
            cell_pm: gpu.download(&t.cell_pm)?,
            // Unwritten without quadrupoles: zero moments, as the monopole traversal uses.
            cell_quad: if o.quadrupole {
                gpu.download(&t.cell_quad)?
            } else {
                vec![Quad::default(); cells]
            },
            group_size,
            layout,
            sort: gpu.download(&t.sort)?,
            groups: {
                let mut g = gpu.download(&t.groups)?;
                g.truncate(header.groups as usize);
                g
            },
        })
    } else {
        None
    };
    Ok(GpuRun {
        acc,
        times,
        header,
        cells,
        retries,
        tree,
    })
}

/// Sorts a built octree (when the traversal or `o.sorted`/`o.keep_tree` needs it) and runs the
/// gravity kernel of `o` into `acc`; returns the octree's stage times with the sort's and
/// gravity's. The octree must have been built with moments when `o.quadrupole`.
pub fn traverse(
    gpu: &Gpu,
    octree: &mut DeviceOctree,
    p: &Params,
    o: &Options,
    acc: &mut CudaSlice<Accel>,
) -> Result<StageTimes, BhError> {
    let mut times = octree.times;
    if o.sorted || o.keep_tree || o.traversal.grouped() {
        times.sort = sort_tree(gpu, octree, o.traversal.group_size())?;
    }
    times.gravity = gravity_on(gpu, octree, p, o, acc, None)?;
    Ok(times)
}

/// `bh_sort` of a built, summarized octree: the tree order into its `sort` and the warp groups
/// of up to `group_size` into its `groups` (their count in the header), the groups in tree
/// order (`bh_group_tiles`, `sph_scan`, `bh_group_scatter`). Milliseconds.
pub fn sort_tree(gpu: &Gpu, octree: &mut DeviceOctree, group_size: u32) -> Result<f64, GpuError> {
    let n = octree.n();
    let n32 = n as u32;
    let tiles = n32.div_ceil(k::GROUP_TILE).max(1);
    let mut marks = gpu.alloc_zeros::<u32>(n.max(1))?;
    let mut tile_count = gpu.alloc_poisoned::<u32>(tiles as usize)?;
    let mut tile_off = gpu.alloc_poisoned::<u32>(tiles as usize + 1)?;
    let mut total = gpu.alloc_zeros::<u64>(1)?;
    let sort_cfg = gpu.resident_grid(k::bh_sort, dev::TREE_BLOCK)?;
    let tile_cfg = LaunchConfig {
        grid_dim: (tiles, 1, 1),
        block_dim: (k::GROUP_TILE, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: a summarized octree of n bodies; the zeroed `marks` hold n entries; one block per
    // tile of GROUP_TILE positions, the offsets tiles + 1.
    let ((), ms) = gpu.time(|| unsafe {
        let args = (octree.view_mut(gpu), group_size, &mut marks);
        gpu.launch(k::bh_sort, sort_cfg, args)?;
        gpu.launch(k::bh_group_tiles, tile_cfg, (&marks, n32, &mut tile_count))?;
        gpu.launch(
            crate::device::sph::kernels::sph_scan,
            sorted::scan_config(),
            (&tile_count, tiles, &mut tile_off, &mut total),
        )?;
        gpu.launch(
            k::bh_group_scatter,
            tile_cfg,
            (&marks, n32, &tile_off, &mut octree.tree.groups),
        )
    })?;
    Ok(ms)
}

/// Warp groups of a subset of the bodies for the group kernels, in place of the tree sort's: the
/// bodies `sort[first..first + size]` of each group `groups[g] = [first, size]`, `g <
/// header.groups`, each group within one of the sort's groups (so within its parent cell), and a
/// header that is the tree's but for its group count (e.g. the N-body block steps' active
/// particles: `warpkit::nbody::gpu::block`). The walk writes the subset's accelerations only.
pub struct GroupSubset {
    pub header: CudaSlice<TreeHeader>,
    pub sort: CudaSlice<u32>,
    pub groups: CudaSlice<[u32; 2]>,
}

impl GroupSubset {
    /// Poisoned buffers for subsets of `n` bodies.
    pub fn new(gpu: &Gpu, n: usize) -> Result<Self, GpuError> {
        Ok(GroupSubset {
            header: gpu.alloc_poisoned(1)?,
            sort: gpu.alloc_poisoned(n)?,
            groups: gpu.alloc_poisoned(n)?,
        })
    }

    /// The subset of the bodies marked in `active` (by body index) of a sorted `octree`, built
    /// on the host ([`subset_groups`]) from the tree's sort and groups: for callers whose
    /// active set is a host mask (the SPH block steps), where the N-body block steps gather it
    /// on the device from their levels.
    pub fn of_mask(gpu: &Gpu, octree: &DeviceOctree, active: &[bool]) -> Result<Self, GpuError> {
        let t = &octree.tree;
        let mut header = gpu.download(&t.header)?[0];
        let groups = gpu.download(&t.groups)?;
        let groups = &groups[..(header.groups as usize).min(groups.len())];
        let (sort, groups) = subset_groups(&gpu.download(&t.sort)?, groups, active);
        header.groups = groups.len() as u32;
        header.next_group = 0;
        header.interactions = 0;
        header.opened = 0;
        // Never empty buffers: a subset without bodies walks no group.
        Ok(GroupSubset {
            header: gpu.upload(&[header])?,
            sort: gpu.upload(if sort.is_empty() { &[0] } else { &sort })?,
            groups: gpu.upload(if groups.is_empty() {
                &[[0, 0]]
            } else {
                &groups
            })?,
        })
    }
}

/// The warp groups of the bodies marked in `active`: each group `[first, size]` of the sort
/// (members `sort[first..first + size]`) keeps its active members, in order, as a group of its
/// own (so within its parent cell, as the group kernels need); groups without one are dropped.
/// Returns the subset's sort and groups.
pub fn subset_groups(
    sort: &[u32],
    groups: &[[u32; 2]],
    active: &[bool],
) -> (Vec<u32>, Vec<[u32; 2]>) {
    let mut out_sort = Vec::new();
    let mut out_groups = Vec::new();
    for &[first, size] in groups {
        let start = out_sort.len() as u32;
        out_sort.extend(
            sort[first as usize..(first + size) as usize]
                .iter()
                .copied()
                .filter(|&b| active[b as usize]),
        );
        let kept = out_sort.len() as u32 - start;
        if kept > 0 {
            out_groups.push([start, kept]);
        }
    }
    (out_sort, out_groups)
}

/// The gravity kernel of `o` on a sorted octree into `acc`: over every body (the tree order and
/// groups), or with `subset` over its groups only (group kernels). Returns the kernel's time in
/// ms. With [`Options::relative`], `acc` must hold the previous accelerations (they are
/// replaced), and the group counter must be at zero ([`rewind_groups`]).
pub fn gravity_on(
    gpu: &Gpu,
    octree: &DeviceOctree,
    p: &Params,
    o: &Options,
    acc: &mut CudaSlice<Accel>,
    subset: Option<&GroupSubset>,
) -> Result<f64, BhError> {
    if subset.is_some() && !o.traversal.grouped() {
        return Err(BhError::Option(
            "a subset of the bodies is walked by the group kernels only".into(),
        ));
    }
    if o.quadrupole && !octree.moments {
        return Err(BhError::Option(
            "quadrupoles need a tree summarized with moments".into(),
        ));
    }
    let tree = match subset {
        Some(s) => octree.view_subset(gpu, s),
        None if o.sorted => octree.view(gpu),
        None => octree.view_unsorted(gpu),
    };
    let (theta2, eps2) = (p.theta * p.theta, p.eps * p.eps);
    // The group kernels share one signature; the relative ones take α after G and read θ_max².
    macro_rules! group {
        ($k:expr, $theta2:expr $(, $alpha:expr)?) => {{
            let cfg = gpu.resident_grid($k, dev::GROUP_BLOCK)?;
            let args = (tree, $theta2, eps2, p.g, $($alpha,)? &mut *acc);
            gpu.time(|| unsafe { gpu.launch($k, cfg, args) })?.1
        }};
    }
    if let Some(r) = o.relative {
        if o.traversal != Traversal::Group2 {
            return Err(BhError::Option(
                "the relative opening criterion runs with the group2 traversal".into(),
            ));
        }
        let guard2 = r.theta_max * r.theta_max;
        // SAFETY: a summarized, sorted tree; `acc` holds n accelerations.
        return Ok(if o.quadrupole {
            group!(k::bh_gravity_group2_quad_rel, guard2, r.alpha)
        } else {
            group!(k::bh_gravity_group2_rel, guard2, r.alpha)
        });
    }
    // SAFETY (each launch): a summarized tree (sorted for the group kernels); n accelerations.
    let ms = match (o.traversal, o.quadrupole) {
        (Traversal::Vote, _) => {
            let cfg = gpu.resident_grid(k::bh_gravity, dev::GRAVITY_BLOCK)?;
            let args = (tree, theta2, eps2, p.g, &mut *acc);
            gpu.time(|| unsafe { gpu.launch(k::bh_gravity, cfg, args) })?
                .1
        }
        (Traversal::Group, false) => group!(k::bh_gravity_group, theta2),
        (Traversal::Group, true) => group!(k::bh_gravity_group_quad, theta2),
        (Traversal::Group2, false) => group!(k::bh_gravity_group2, theta2),
        (Traversal::Group2, true) => group!(k::bh_gravity_group2_quad, theta2),
    };
    Ok(ms)
}

/// Hands a sorted tree's groups out from the first again (and clears the interaction counts),
/// for a second gravity pass over the same tree.
pub fn rewind_groups(gpu: &Gpu, octree: &mut DeviceOctree) -> Result<(), BhError> {
    let t = &mut octree.tree;
    let mut header = gpu.download(&t.header)?[0];
    header.next_group = 0;
    header.interactions = 0;
    header.opened = 0;
    gpu.stream()
        .memcpy_htod(&[header], &mut t.header)
        .map_err(|source| GpuError::Driver {
            op: "resetting the group counter",
            source,
        })?;
    Ok(())
}

/// Each body's potential `pot[i]` (per the kernel `bh_gravity_group2_pot`: monopoles, the other
/// bodies only) from a built and sorted octree, with accelerations into the scratch `acc`; returns
/// the kernel's time in ms. Groups of up to 64 bodies (any grouped traversal's sort).
pub fn potential(
    gpu: &Gpu,
    octree: &mut DeviceOctree,
    p: &Params,
    acc: &mut CudaSlice<Accel>,
    pot: &mut CudaSlice<f32>,
) -> Result<f64, BhError> {
    potential_on(gpu, octree, p, acc, pot, None)
}

/// [`potential`], with `subset` for its groups' bodies only (the others' entries are left as
/// they were).
pub fn potential_on(
    gpu: &Gpu,
    octree: &mut DeviceOctree,
    p: &Params,
    acc: &mut CudaSlice<Accel>,
    pot: &mut CudaSlice<f32>,
    subset: Option<&GroupSubset>,
) -> Result<f64, BhError> {
    let n = octree.n();
    if acc.len() < n || pot.len() < n {
        return Err(BhError::Option(format!(
            "potential: {n} bodies but buffers of {} and {}",
            acc.len(),
            pot.len()
        )));
    }
    let cfg = gpu.resident_grid(k::bh_gravity_group2_pot, dev::GROUP_BLOCK)?;
    // The groups are handed out again from the start (the force kernel used the counter up); a
    // subset's header starts at zero.
    let tree = match subset {
        Some(s) => octree.view_subset(gpu, s),
        None => {
            rewind_groups(gpu, octree)?;
            octree.view(gpu)
        }
    };
    let args = (tree, p.theta * p.theta, p.eps * p.eps, p.g, acc, pot);
    // SAFETY: a summarized, sorted tree of n bodies; groups of at most 64 from the sort (a
    // subset's within them); both outputs hold n entries (checked above).
    Ok(gpu
        .time(|| unsafe { gpu.launch(k::bh_gravity_group2_pot, cfg, args) })?
        .1)
}

/// Accelerations and potentials of `bodies` (in their order) by `bh_gravity_group2_pot`: a tree
/// built, summarized and sorted into groups of up to 64 for this call, then the potential kernel
/// (monopoles).
pub fn gravity_potential(
    gpu: &Gpu,
    bodies: &[Body],
    p: &Params,
) -> Result<(Vec<Accel>, Vec<f32>), BhError> {
    validate(bodies, p)?;
    let n = bodies.len();
    let mut octree = build_device_tree_with(gpu, bodies, Storage::Dense, initial_cells(n), false)?;
    sort_tree(gpu, &mut octree, Traversal::Group2.group_size())?;
    let mut acc = gpu.alloc_poisoned::<Accel>(n)?;
    let mut pot = gpu.alloc_poisoned::<f32>(n)?;
    potential(gpu, &mut octree, p, &mut acc, &mut pot)?;
    Ok((gpu.download(&acc)?, gpu.download(&pot)?))
}

/// Direct summation on the GPU: float32 (`bh_brute_force`) and its time in ms.
pub fn brute_force(gpu: &Gpu, bodies: &[Body], p: &Params) -> Result<(Vec<Accel>, f64), BhError> {
    validate(bodies, p)?;
    let n32 = bodies.len() as u32;
    let d_bodies = gpu.upload(bodies)?;
    let mut d_acc = gpu.alloc_poisoned::<Accel>(bodies.len())?;
    let eps2 = p.eps * p.eps;
    let cfg = grid_for(n32, dev::BRUTE_BLOCK);
    // SAFETY: n bodies in, n accelerations out.
    let ((), ms) = gpu.time(|| unsafe {
        gpu.launch(
            k::bh_brute_force,
            cfg,
            (&d_bodies, n32, eps2, p.g, &mut d_acc),
        )
    })?;
    Ok((gpu.download(&d_acc)?, ms))
}

/// Direct summation on the GPU accumulated in float64 (`bh_brute_force_f64`), the reference.
pub fn brute_force_f64(gpu: &Gpu, bodies: &[Body], p: &Params) -> Result<Vec<[f64; 3]>, BhError> {
    validate(bodies, p)?;
    let n32 = bodies.len() as u32;
    let d_bodies = gpu.upload(bodies)?;
    let mut d_acc = gpu.alloc_poisoned::<[f64; 3]>(bodies.len())?;
    let eps2 = (p.eps as f64) * (p.eps as f64);
    let g = p.g as f64;
    // SAFETY: n bodies in, n triples out.
    unsafe {
        let cfg = grid_for(n32, dev::BRUTE_BLOCK);
        gpu.launch(
            k::bh_brute_force_f64,
            cfg,
            (&d_bodies, n32, eps2, g, &mut d_acc),
        )?
    };
    Ok(gpu.download(&d_acc)?)
}

#[cfg(test)]
mod tests;
