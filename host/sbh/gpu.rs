//! GPU launchers: the tree (built on the CPU, see [`super::SbhTree::build`]) is uploaded once with
//! [`DeviceTree::upload`], or the octree and its wide layout are built on the GPU
//! ([`DeviceTree::build_on_gpu`]); each evaluation uploads its queries, launches one kernel timed
//! with CUDA events, and downloads the sums.

use super::wide::WideTree;
use super::{
    Moments, SbhError, SbhTree, Sources, Warps, bh_positions, validate, validate_beta,
    validate_order, validate_samples,
};
use crate::device::bh::{Body, Quad, TreeHeader};
use crate::device::sbh::{self as dev, KernelSpec, SbhParams, SliceTree, WideMeta};
use crate::device::sbh::{kernels as k, wide_kernels as wk};
use crate::runtime::{CudaSlice, Gpu, GpuError, grid_for};

/// Failures of a GPU evaluation.
#[derive(Debug, thiserror::Error)]
pub enum SbhGpuError {
    #[error(transparent)]
    Input(#[from] SbhError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// The GPU tree build cannot serve these sources.
    #[error("GPU tree build: {0}")]
    GpuBuild(String),
    /// The device tree was uploaded from other sources than the ones validated.
    #[error(
        "the device tree holds {tree} sources (dipoles: {tree_dipoles}) but {given} were given (dipoles: {given_dipoles})"
    )]
    TreeMismatch {
        tree: u32,
        tree_dipoles: bool,
        given: usize,
        given_dipoles: bool,
    },
}

/// Launches a query kernel defined with `tree_kernel!` (`warpkit_device::sbh::kernels`): the
/// tree's parameters in `RawTree::new`'s order (bodies, body dipoles, child, next, cell summaries,
/// cell dipoles, the wide layout's three arrays, n, cells, root half-width; absent ones as null),
/// then the kernel's own arguments. The contract checks both halves' types.
macro_rules! launch_tree {
    ($gpu:expr, $k:expr, $cfg:expr, $dt:expr, $($rest:expr),* $(,)?) => {{
        let dt: &DeviceTree = $dt;
        let wide = dt.wide.as_ref();
        let args = (
            &dt.bodies,
            dt.body_dipole.as_ref(),
            &dt.child,
            &dt.next,
            &dt.cell_pm,
            dt.cell_dipole.as_ref(),
            wide.map(|w| &w.pm),
            wide.map(|w| &w.meta),
            wide.and_then(|w| w.dipole.as_ref()),
            dt.n,
            dt.cells,
            dt.root_half,
            $($rest),*
        );
        $gpu.launch($k, $cfg, args)
    }};
}

impl DeviceTree {
    /// Refuses a launch on a tree that does not belong to `src` (the kernels would read past its
    /// buffers or through a null dipole pointer).
    fn check(&self, src: &Sources) -> Result<(), SbhGpuError> {
        let (tree_dipoles, given_dipoles) = (self.body_dipole.is_some(), !src.dipoles.is_empty());
        if self.n as usize != src.bodies.len() || tree_dipoles != given_dipoles {
            return Err(SbhGpuError::TreeMismatch {
                tree: self.n,
                tree_dipoles,
                given: src.bodies.len(),
                given_dipoles,
            });
        }
        Ok(())
    }
}

/// The sources and their tree in device memory.
pub struct DeviceTree {
    bodies: CudaSlice<Body>,
    /// Absent (a null pointer to the kernels) unless the sources carry dipoles.
    body_dipole: Option<CudaSlice<[f32; 3]>>,
    child: CudaSlice<i32>,
    next: CudaSlice<i32>,
    cell_pm: CudaSlice<Body>,
    cell_dipole: Option<CudaSlice<[f32; 3]>>,
    /// Per cell, for [`Moments::Quadrupole`] (absent when the tree was built without them).
    cell_quad: Option<CudaSlice<Quad>>,
    /// The wide-node layout read by `levels = 2` (absent: the kernel walks the octree's slots).
    wide: Option<DeviceWide>,
    n: u32,
    cells: u32,
    root_half: f32,
    /// The octree's header (bounding box, cells in use).
    header: TreeHeader,
    /// Where the wide layout was built, and its time in ms: GPU (CUDA events over its stages) or
    /// host (with the tree's download and the layout's upload, for a GPU-built tree).
    wide_build: WideBuild,
    wide_ms: f64,
}

/// Where [`DeviceTree::build_on_gpu_with`] builds the wide layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WideBuild {
    /// On the GPU, right after the octree (`sbh_wide_mark`, `sbh_wide_scan`, `sbh_wide_start`,
    /// `sbh_wide_fill`).
    Gpu,
    /// On the host from the downloaded octree ([`WideTree::build`]), then uploaded.
    Host,
}

/// The wide layout in device memory.
struct DeviceWide {
    pm: CudaSlice<Body>,
    meta: CudaSlice<WideMeta>,
    dipole: Option<CudaSlice<Body>>,
}

impl DeviceWide {
    fn upload(gpu: &Gpu, w: &WideTree) -> Result<Self, GpuError> {
        Ok(DeviceWide {
            pm: gpu.upload(&w.pm)?,
            meta: gpu.upload(&w.meta)?,
            dipole: if w.dipole.is_empty() {
                None
            } else {
                Some(gpu.upload(&w.dipole)?)
            },
        })
    }
}

impl DeviceTree {
    /// Builds the sources' octree on the GPU with warpkit's Barnes–Hut tree stages (dense
    /// storage), then its wide-node layout on the GPU, and keeps both there: no host tree, no
    /// upload. For kernels without dipoles (the winding number needs per-cell dipole sums, which
    /// only [`SbhTree::build`] computes) and positive weights (centres of mass divide by the
    /// cell's weight). Returns the tree and the build's GPU time in ms (CUDA events: reset,
    /// bounding box, build, summarize, and the wide layout's stages, [`Self::wide_ms`]).
    pub fn build_on_gpu(gpu: &Gpu, src: &Sources) -> Result<(Self, f64), SbhGpuError> {
        Self::build_on_gpu_with(gpu, src, WideBuild::Gpu, false)
    }

    /// [`Self::build_on_gpu`] with the wide layout built where `wide` says, and the cells'
    /// quadrupole moments when `quadrupole` (for [`Moments::Quadrupole`]; the summary then makes
    /// a second pass over each cell's children). With [`WideBuild::Host`] the returned time is the
    /// octree's only (the layout's host time is [`Self::wide_ms`]).
    pub fn build_on_gpu_with(
        gpu: &Gpu,
        src: &Sources,
        wide: WideBuild,
        quadrupole: bool,
    ) -> Result<(Self, f64), SbhGpuError> {
        if !src.dipoles.is_empty() {
            return Err(SbhGpuError::GpuBuild(
                "sources with dipoles need SbhTree::build".into(),
            ));
        }
        if let Some(i) = src
            .bodies
            .iter()
            .position(|b| !(b.m.is_finite() && b.m > 0.0 && b.pos().iter().all(|c| c.is_finite())))
        {
            return Err(SbhGpuError::GpuBuild(format!(
                "source {i} ({:?}) needs a finite position and a positive weight for the GPU build",
                src.bodies[i]
            )));
        }
        let cells = crate::bh::initial_cells(src.bodies.len());
        let o = crate::bh::gpu::build_device_tree_with(
            gpu,
            &src.bodies,
            crate::bh::gpu::Storage::Dense,
            cells,
            quadrupole,
        )
        .map_err(|e| SbhGpuError::GpuBuild(e.to_string()))?;
        let header = gpu.download(&o.tree.header)?[0];
        let mut ms = o.times.tree();
        let root_half = crate::device::bh::root_cell(&header).1;
        let n = src.bodies.len() as u32;
        let (w, wide_ms) = match wide {
            WideBuild::Gpu => {
                let (w, wide_ms) = build_wide_on_gpu(gpu, &o, n)?;
                ms += wide_ms;
                (w, wide_ms)
            }
            WideBuild::Host => {
                // Built on the host from the downloaded tree, and uploaded.
                let t0 = std::time::Instant::now();
                let (bodies, child, next, cell_pm) = (
                    gpu.download(&o.bodies)?,
                    gpu.download(&o.tree.child)?,
                    gpu.download(&o.tree.next)?,
                    gpu.download(&o.tree.cell_pm)?,
                );
                let view = SliceTree {
                    bodies: &bodies,
                    body_dipole: &[],
                    child: &child,
                    next: &next,
                    cell_pm: &cell_pm,
                    cell_dipole: &[],
                    root_half,
                    wide_pm: &[],
                    wide_meta: &[],
                    wide_dipole: &[],
                };
                let w = DeviceWide::upload(gpu, &WideTree::build(&view, false))?;
                (w, t0.elapsed().as_secs_f64() * 1e3)
            }
        };
        Ok((
            DeviceTree {
                bodies: o.bodies,
                body_dipole: None,
                child: o.tree.child,
                next: o.tree.next,
                cell_pm: o.tree.cell_pm,
                cell_dipole: None,
                cell_quad: quadrupole.then_some(o.tree.cell_quad),
                wide: Some(w),
                n,
                cells: o.layout.cells,
                root_half,
                header,
                wide_build: wide,
                wide_ms,
            },
            ms,
        ))
    }

    /// Drops the wide layout: `levels = 2` then walks the octree's slots (the form before the
    /// wide layout; for comparisons).
    pub fn without_wide(mut self) -> Self {
        self.wide = None;
        self
    }

    /// Milliseconds spent on the wide layout: for [`WideBuild::Gpu`], GPU time of its stages
    /// (CUDA events, part of [`Self::build_on_gpu`]'s time); for [`WideBuild::Host`], host time of
    /// the tree's download, the build and the upload; 0 for [`Self::upload`], whose layout
    /// [`SbhTree::build`] made.
    pub fn wide_ms(&self) -> f64 {
        self.wide_ms
    }

    /// Where the wide layout was built ([`WideBuild::Host`] for [`Self::upload`]).
    pub fn wide_build(&self) -> WideBuild {
        self.wide_build
    }

    /// A host copy of the tree and its wide layout (for tests and inspection): the octree's
    /// header, child slots, chains, summaries and moments when present (its `count`, `sort` and
    /// `groups` are left empty) and, when present, the wide layout; the sources stay the caller's.
    pub fn to_host(&self, gpu: &Gpu) -> Result<SbhTree, GpuError> {
        let opt = |d: &Option<CudaSlice<[f32; 3]>>| -> Result<Vec<[f32; 3]>, GpuError> {
            d.as_ref().map_or(Ok(Vec::new()), |d| gpu.download(d))
        };
        let wide = match &self.wide {
            Some(w) => WideTree {
                pm: gpu.download(&w.pm)?,
                meta: gpu.download(&w.meta)?,
                dipole: match &w.dipole {
                    Some(d) => gpu.download(d)?,
                    None => Vec::new(),
                },
            },
            None => WideTree::default(),
        };
        Ok(SbhTree {
            tree: crate::bh::Tree {
                n: self.n as usize,
                header: self.header,
                child: gpu.download(&self.child)?,
                next: gpu.download(&self.next)?,
                count: Vec::new(),
                cell_pm: gpu.download(&self.cell_pm)?,
                cell_quad: match &self.cell_quad {
                    Some(q) => gpu.download(q)?,
                    None => Vec::new(),
                },
                sort: Vec::new(),
                groups: Vec::new(),
                group_size: crate::device::WARP_SIZE,
                layout: crate::device::bh::Layout::dense(self.cells),
            },
            cell_dipole: opt(&self.cell_dipole)?,
            root_half: self.root_half,
            wide,
            wide_ms: self.wide_ms,
        })
    }

    pub fn upload(gpu: &Gpu, src: &Sources, t: &SbhTree) -> Result<Self, GpuError> {
        let opt = |v: &[[f32; 3]]| -> Result<Option<CudaSlice<[f32; 3]>>, GpuError> {
            if v.is_empty() {
                Ok(None)
            } else {
                gpu.upload(v).map(Some)
            }
        };
        Ok(DeviceTree {
            bodies: gpu.upload(&src.bodies)?,
            body_dipole: opt(&src.dipoles)?,
            child: gpu.upload(&t.tree.child)?,
            next: gpu.upload(&t.tree.next)?,
            cell_pm: gpu.upload(&t.tree.cell_pm)?,
            cell_dipole: opt(&t.cell_dipole)?,
            cell_quad: if t.tree.cell_quad.len() == t.tree.cells() {
                Some(gpu.upload(&t.tree.cell_quad)?)
            } else {
                None
            },
            wide: Some(DeviceWide::upload(gpu, &t.wide)?),
            n: src.bodies.len() as u32,
            cells: t.tree.cells() as u32,
            root_half: t.root_half,
            header: t.tree.header,
            wide_build: WideBuild::Host,
            wide_ms: 0.0,
        })
    }
}

/// The wide layout of the GPU-built octree `o` (of `n` bodies), built on the GPU (the steps of
/// `warpkit_device::sbh::wide_kernels`; the same blocks as [`WideTree::build`]'s, in the order of
/// [`WideTree::build_top_down`]), and its GPU time in ms: CUDA events around every stage,
/// including the scratch buffers' clearing and the one read-back of the row count that sizes the
/// layout.
fn build_wide_on_gpu(
    gpu: &Gpu,
    o: &crate::bh::gpu::DeviceOctree,
    n: u32,
) -> Result<(DeviceWide, f64), SbhGpuError> {
    let cells = o.layout.cells;
    let tiles = cells.div_ceil(dev::WIDE_TILE);
    let mark_cfg = gpu.resident_grid(wk::sbh_wide_mark, dev::WIDE_BUILD_BLOCK)?;
    let start_cfg = gpu.resident_grid(wk::sbh_wide_start, dev::WIDE_TILE)?;
    let fill_cfg = gpu.resident_grid(wk::sbh_wide_fill, dev::WIDE_BUILD_BLOCK)?;
    let one_block = crate::runtime::LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (dev::WIDE_SCAN_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let (res, ms) = gpu.time(|| {
        let mut mark = gpu.alloc_zeros::<u32>(cells as usize)?;
        let mut tile_sum = gpu.alloc_zeros::<u32>(tiles as usize)?;
        let mut status = gpu.alloc_zeros::<u32>(2)?;
        let mut cnt = gpu.alloc_poisoned::<u32>(cells as usize)?;
        let mut start = gpu.alloc_poisoned::<u32>(cells as usize)?;
        // SAFETY: a summarized dense tree of n bodies and `cells` cells (header.bottom..cells in
        // use); every scratch buffer sized as the kernels' docs require; the mark launch is a
        // resident grid (its threads wait on each other).
        unsafe {
            let args = (
                &o.tree.child,
                &o.tree.header,
                n,
                cells,
                &mut mark,
                &mut cnt,
                &mut tile_sum,
                &mut status,
            );
            gpu.launch(wk::sbh_wide_mark, mark_cfg, args)?;
            let args = (&mut tile_sum, tiles, &mut status);
            gpu.launch(wk::sbh_wide_scan, one_block, args)?;
            let args = (&o.tree.header, cells, &cnt, &tile_sum, &mut start);
            gpu.launch(wk::sbh_wide_start, start_cfg, args)?;
        }
        let st = gpu.download(&status)?;
        let rows = st[0] as usize;
        if st[1] != 0 || rows == 0 {
            return Ok(Err(format!(
                "wide layout: {} (a cell in use that the root does not reach?)",
                if rows == 0 {
                    "no rows"
                } else {
                    "a depth wait gave up"
                }
            )));
        }
        let mut pm = gpu.alloc_poisoned::<Body>(rows)?;
        let mut meta = gpu.alloc_poisoned::<WideMeta>(rows)?;
        // SAFETY: as above; `rows` rows is the scan's total, which bounds every block's rows.
        unsafe {
            let args = (
                &o.bodies,
                &o.tree.child,
                &o.tree.next,
                &o.tree.cell_pm,
                &o.tree.header,
                n,
                cells,
                &cnt,
                &start,
                &mut pm,
                &mut meta,
            );
            gpu.launch(wk::sbh_wide_fill, fill_cfg, args)?;
        }
        Ok(Ok(DeviceWide {
            pm,
            meta,
            dipole: None,
        }))
    })?;
    Ok((res.map_err(SbhGpuError::GpuBuild)?, ms))
}

/// Stochastic Barnes–Hut sums at `queries` (`sbh_estimate_kernel`) and the kernel's time in ms.
/// Same seed and `coherent` as [`super::cpu::estimate`] → the same random numbers.
pub fn estimate(
    gpu: &Gpu,
    src: &Sources,
    dt: &DeviceTree,
    queries: &[[f32; 3]],
    p: &SbhParams,
    coherent: bool,
) -> Result<(Vec<f32>, f64), SbhGpuError> {
    estimate_ordered(gpu, src, dt, queries, p, coherent, None)
}

/// [`estimate`] with the queries evaluated in `order` (a permutation of the query indices, e.g.
/// [`super::query_order`]: warps of nearby queries), the sums still returned in the queries'
/// order. Same seed, `coherent` and order as [`super::cpu::estimate_ordered`] → the same random
/// numbers.
pub fn estimate_ordered(
    gpu: &Gpu,
    src: &Sources,
    dt: &DeviceTree,
    queries: &[[f32; 3]],
    p: &SbhParams,
    coherent: bool,
    order: Option<&[u32]>,
) -> Result<(Vec<f32>, f64), SbhGpuError> {
    validate(src, queries, p.kernel)?;
    dt.check(src)?;
    validate_samples(p.samples)?;
    validate_order(order, queries.len())?;
    let mut b = QueryBuffers::new(gpu, queries, order)?;
    let cfg = grid_for(b.nq, dev::QUERY_BLOCK);
    let kspec = p.kernel;
    // The wide-only entry reads the layout with fewer registers (more warps resident).
    let wide_only = p.levels != 1 && dt.wide.is_some();
    // SAFETY: the tree, the queries, these scalars, the order and the sums, as the kernel's doc
    // asks; `order` was validated as a permutation; dipoles are present whenever the sources
    // have them, and validate() requires them for the winding number.
    let ((), ms) = gpu.time(|| unsafe {
        macro_rules! go {
            ($k:expr) => {
                launch_tree!(
                    gpu,
                    $k,
                    cfg,
                    dt,
                    &b.d_q,
                    b.nq,
                    kspec.kind,
                    kspec.param,
                    p.samples,
                    p.seed,
                    p.levels,
                    p.allocate as u32,
                    coherent as u32,
                    b.d_order.as_ref(),
                    &mut b.d_out,
                )
            };
        }
        if wide_only {
            go!(k::sbh_estimate_wide_kernel)
        } else {
            go!(k::sbh_estimate_kernel)
        }
    })?;
    Ok((gpu.download(&b.d_out)?, ms))
}

/// A query launch's device buffers: the queries, the positions to evaluate (`order`, or every
/// query in turn: null), and the poisoned sums.
struct QueryBuffers {
    d_q: CudaSlice<[f32; 3]>,
    d_order: Option<CudaSlice<u32>>,
    d_out: CudaSlice<f32>,
    /// Positions in the launch.
    nq: u32,
}

impl QueryBuffers {
    fn new(gpu: &Gpu, queries: &[[f32; 3]], order: Option<&[u32]>) -> Result<Self, GpuError> {
        Ok(QueryBuffers {
            d_q: gpu.upload(queries)?,
            d_order: order.map(|o| gpu.upload(o)).transpose()?,
            d_out: gpu.alloc_poisoned::<f32>(queries.len())?,
            nq: order.map_or(queries.len(), <[u32]>::len) as u32,
        })
    }
}

/// Deterministic Barnes–Hut sums at `queries` (`sbh_bh_kernel`) and the kernel's time in ms.
pub fn barnes_hut(
    gpu: &Gpu,
    src: &Sources,
    dt: &DeviceTree,
    queries: &[[f32; 3]],
    kspec: KernelSpec,
    beta: f32,
) -> Result<(Vec<f32>, f64), SbhGpuError> {
    barnes_hut_ordered(gpu, src, dt, queries, kspec, beta, None)
}

/// [`barnes_hut`] with the queries evaluated in `order` (see [`estimate_ordered`]); the sums do
/// not depend on the order, only the time does.
pub fn barnes_hut_ordered(
    gpu: &Gpu,
    src: &Sources,
    dt: &DeviceTree,
    queries: &[[f32; 3]],
    kspec: KernelSpec,
    beta: f32,
    order: Option<&[u32]>,
) -> Result<(Vec<f32>, f64), SbhGpuError> {
    bh_launch(
        gpu,
        src,
        dt,
        queries,
        kspec,
        beta,
        order,
        None,
        Moments::Monopole,
    )
}

/// Deterministic Barnes–Hut with one traversal per warp of up to 32 consecutive positions of
/// [`super::bh_positions`]`(queries, order, warps)` (`sbh_bh_group_kernel`; for
/// [`Warps::Morton`] pass [`super::query_order`]: the warps are its [`super::warp_groups`],
/// nearby queries in one Morton block each; [`Warps::Rows`]: the authors' row-major warps): a
/// cell is used whole only when it is far from the warp's whole bounding box, like the authors'
/// warp vote, so the sums are at least as accurate as [`barnes_hut`]'s and do depend on the order.
/// With [`Moments::Quadrupole`] (`sbh_bh_group_quad_kernel`) far cells add their quadrupole term;
/// the tree must carry the moments. The twin is [`super::cpu::barnes_hut_grouped`].
#[allow(clippy::too_many_arguments)]
pub fn barnes_hut_grouped(
    gpu: &Gpu,
    src: &Sources,
    dt: &DeviceTree,
    queries: &[[f32; 3]],
    kspec: KernelSpec,
    beta: f32,
    order: Option<&[u32]>,
    warps: Warps,
    moments: Moments,
) -> Result<(Vec<f32>, f64), SbhGpuError> {
    bh_launch(
        gpu,
        src,
        dt,
        queries,
        kspec,
        beta,
        order,
        Some(warps),
        moments,
    )
}

#[allow(clippy::too_many_arguments)]
fn bh_launch(
    gpu: &Gpu,
    src: &Sources,
    dt: &DeviceTree,
    queries: &[[f32; 3]],
    kspec: KernelSpec,
    beta: f32,
    order: Option<&[u32]>,
    grouped: Option<Warps>,
    moments: Moments,
) -> Result<(Vec<f32>, f64), SbhGpuError> {
    validate(src, queries, kspec)?;
    dt.check(src)?;
    validate_beta(beta)?;
    validate_order(order, queries.len())?;
    moments.validate(kspec)?;
    let quad = match moments {
        Moments::Monopole => None,
        Moments::Quadrupole => Some(dt.cell_quad.as_ref().ok_or(SbhError::NoQuadrupoles)?),
    };
    // The grouped kernel's warps: Morton order cut at block edges (idle lanes padded), or rows.
    let groups = grouped.and_then(|w| bh_positions(queries, order, w));
    let order = groups.as_deref().or(order);
    let mut b = QueryBuffers::new(gpu, queries, order)?;
    let block = if grouped.is_some() {
        crate::device::bh::GROUP_BLOCK
    } else {
        dev::QUERY_BLOCK
    };
    let cfg = grid_for(b.nq, block);
    // SAFETY: as in `estimate_ordered`; `order` holds each query once (and idle lanes when
    // grouped); the quadrupole kernel takes the moments (one per cell) last.
    let ((), ms) = gpu.time(|| unsafe {
        macro_rules! go {
            ($k:expr $(, $quad:expr)?) => {
                launch_tree!(
                    gpu,
                    $k,
                    cfg,
                    dt,
                    &b.d_q,
                    b.nq,
                    kspec.kind,
                    kspec.param,
                    beta,
                    b.d_order.as_ref(),
                    &mut b.d_out,
                    $($quad)?
                )
            };
        }
        match (grouped, quad) {
            (Some(_), None) => go!(k::sbh_bh_group_kernel),
            (Some(_), Some(q)) => go!(k::sbh_bh_group_quad_kernel, q),
            (None, _) => go!(k::sbh_bh_kernel),
        }
    })?;
    Ok((gpu.download(&b.d_out)?, ms))
}

/// Direct summation (`sbh_brute_force`: float32 terms, float32 sums per tile of `QUERY_BLOCK`
/// sources, float64 sums of the tiles) and its time in ms.
pub fn brute_force(
    gpu: &Gpu,
    src: &Sources,
    dt: &DeviceTree,
    queries: &[[f32; 3]],
    kspec: KernelSpec,
) -> Result<(Vec<f64>, f64), SbhGpuError> {
    validate(src, queries, kspec)?;
    dt.check(src)?;
    let nq = queries.len() as u32;
    let d_q = gpu.upload(queries)?;
    // Work units (query groups × source chunks) that fill whole waves of resident blocks.
    let slots = gpu
        .resident_grid(k::sbh_brute_force, dev::QUERY_BLOCK)?
        .grid_dim
        .0;
    let groups = dev::brute_force_groups(nq);
    let splits = dev::brute_force_splits(groups, slots, dt.n);
    // Several chunks add their sums atomically: they start from zeros.
    let mut d_out = if splits > 1 {
        gpu.alloc_zeros::<f64>(queries.len())?
    } else {
        gpu.alloc_poisoned::<f64>(queries.len())?
    };
    let cfg = crate::runtime::LaunchConfig {
        grid_dim: (groups * splits, 1, 1),
        ..grid_for(nq, dev::QUERY_BLOCK)
    };
    // SAFETY: n bodies (and dipoles when present), nq queries in, nq sums out.
    let ((), ms) = gpu.time(|| unsafe {
        let args = (
            &dt.bodies,
            dt.body_dipole.as_ref(),
            dt.n,
            &d_q,
            nq,
            kspec.kind,
            kspec.param,
            splits,
            &mut d_out,
        );
        gpu.launch(k::sbh_brute_force, cfg, args)
    })?;
    Ok((gpu.download(&d_out)?, ms))
}
