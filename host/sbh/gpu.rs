//! GPU launchers: the tree (built on the CPU, see [`super::SbhTree::build`]) is uploaded once with
//! [`DeviceTree::upload`]; each evaluation uploads its queries, launches one kernel timed with CUDA
//! events, and downloads the sums.

use super::wide::WideTree;
use super::{
    SbhError, SbhTree, Sources, validate, validate_beta, validate_order, validate_samples,
};
use crate::device::bh::Body;
use crate::device::sbh::{self as dev, KernelSpec, SbhParams, SliceTree, WideMeta};
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

impl DeviceTree {
    /// Pushes the tree's kernel arguments in `RawTree::new`'s order (bodies, body dipoles, child,
    /// next, cell summaries, cell dipoles, n, cells, root half-width); absent dipoles as `null`.
    fn tree_args<'a>(&'a self, l: &mut crate::runtime::Launch<'a>, null: &'a u64) {
        l.arg(&self.bodies);
        match &self.body_dipole {
            Some(d) => l.arg(d),
            None => l.arg(null),
        };
        l.arg(&self.child).arg(&self.next).arg(&self.cell_pm);
        match &self.cell_dipole {
            Some(d) => l.arg(d),
            None => l.arg(null),
        };
        match &self.wide {
            Some(w) => {
                l.arg(&w.pm).arg(&w.meta);
                match &w.dipole {
                    Some(d) => l.arg(d),
                    None => l.arg(null),
                }
            }
            None => l.arg(null).arg(null).arg(null),
        };
        l.arg(&self.n).arg(&self.cells).arg(&self.root_half);
    }

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
    /// The wide-node layout read by `levels = 2` (absent: the kernel walks the octree's slots).
    wide: Option<DeviceWide>,
    n: u32,
    cells: u32,
    root_half: f32,
    /// Host time of the wide layout's build (with its download and upload, for a GPU-built tree).
    wide_ms: f64,
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
    /// Uploads `src` and its tree.
    /// Builds the sources' octree on the GPU with warpkit's Barnes–Hut tree stages (dense
    /// storage) and keeps it there: no host tree, no upload. For kernels without dipoles (the
    /// winding number needs per-cell dipole sums, which only [`SbhTree::build`] computes) and
    /// positive weights (centres of mass divide by the cell's weight). Returns the tree and the
    /// build's GPU time in ms (reset, bounding box, build, summarize).
    pub fn build_on_gpu(gpu: &Gpu, src: &Sources) -> Result<(Self, f64), SbhGpuError> {
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
        let o = crate::bh::gpu::build_device_tree(
            gpu,
            &src.bodies,
            crate::bh::gpu::Storage::Dense,
            cells,
        )
        .map_err(|e| SbhGpuError::GpuBuild(e.to_string()))?;
        let header = gpu.download(&o.tree.header)?[0];
        let ms = o.times.tree();
        let root_half = crate::device::bh::root_cell(&header).1;
        // The wide layout, built on the host from the downloaded tree and uploaded.
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
        let wide = DeviceWide::upload(gpu, &WideTree::build(&view, false))?;
        let wide_ms = t0.elapsed().as_secs_f64() * 1e3;
        Ok((
            DeviceTree {
                bodies: o.bodies,
                body_dipole: None,
                child: o.tree.child,
                next: o.tree.next,
                cell_pm: o.tree.cell_pm,
                cell_dipole: None,
                wide: Some(wide),
                n: src.bodies.len() as u32,
                cells: o.layout.cells,
                root_half,
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

    /// Host milliseconds spent on the wide layout (for [`Self::build_on_gpu`]: download of the
    /// tree, build, upload; 0 for [`Self::upload`], whose layout [`SbhTree::build`] made).
    pub fn wide_ms(&self) -> f64 {
        self.wide_ms
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
            wide: Some(DeviceWide::upload(gpu, &t.wide)?),
            n: src.bodies.len() as u32,
            cells: t.tree.cells() as u32,
            root_half: t.root_half,
            wide_ms: 0.0,
        })
    }
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
    let k = gpu.kernel("sbh_estimate_kernel")?;
    let nq = queries.len() as u32;
    let d_q = gpu.upload(queries)?;
    let d_order = order.map(|o| gpu.upload(o)).transpose()?;
    let mut d_out = gpu.alloc_poisoned::<f32>(queries.len())?;
    let null = 0u64;
    let coherent = coherent as u32;
    // SAFETY: the tree buffers form a complete tree of n bodies and `cells` cells (uploaded from
    // one `SbhTree`); nq queries in, nq sums out; dipoles present whenever the sources have them,
    // and validate() requires them for the winding number.
    let ((), ms) = gpu.time(|| unsafe {
        let mut l = gpu.launch(&k);
        dt.tree_args(&mut l, &null);
        l.arg(&d_q)
            .arg(&nq)
            .arg(&p.kernel.kind)
            .arg(&p.kernel.param)
            .arg(&p.samples)
            .arg(&p.seed)
            .arg(&p.levels)
            .arg(&coherent);
        match &d_order {
            Some(o) => l.arg(o),
            None => l.arg(&null),
        };
        l.arg(&mut d_out).run(grid_for(nq, dev::QUERY_BLOCK))
    })?;
    Ok((gpu.download(&d_out)?, ms))
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
    bh_launch(gpu, src, dt, queries, kspec, beta, order, false)
}

/// Deterministic Barnes–Hut with one traversal per warp of 32 consecutive positions of `order`
/// (`sbh_bh_group_kernel`; pass [`super::query_order`] so that each warp holds nearby queries): a
/// cell is used whole only when it is far from the warp's whole bounding box, like the authors'
/// warp vote, so the sums are at least as accurate as [`barnes_hut`]'s and do depend on the order.
/// The twin is [`super::cpu::barnes_hut_grouped`].
pub fn barnes_hut_grouped(
    gpu: &Gpu,
    src: &Sources,
    dt: &DeviceTree,
    queries: &[[f32; 3]],
    kspec: KernelSpec,
    beta: f32,
    order: Option<&[u32]>,
) -> Result<(Vec<f32>, f64), SbhGpuError> {
    bh_launch(gpu, src, dt, queries, kspec, beta, order, true)
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
    grouped: bool,
) -> Result<(Vec<f32>, f64), SbhGpuError> {
    validate(src, queries, kspec)?;
    dt.check(src)?;
    validate_beta(beta)?;
    validate_order(order, queries.len())?;
    let (name, block) = if grouped {
        ("sbh_bh_group_kernel", crate::device::bh::GROUP_BLOCK)
    } else {
        ("sbh_bh_kernel", dev::QUERY_BLOCK)
    };
    let k = gpu.kernel(name)?;
    let nq = queries.len() as u32;
    let d_q = gpu.upload(queries)?;
    let d_order = order.map(|o| gpu.upload(o)).transpose()?;
    let mut d_out = gpu.alloc_poisoned::<f32>(queries.len())?;
    let null = 0u64;
    // SAFETY: as in `estimate`.
    let ((), ms) = gpu.time(|| unsafe {
        let mut l = gpu.launch(&k);
        dt.tree_args(&mut l, &null);
        l.arg(&d_q)
            .arg(&nq)
            .arg(&kspec.kind)
            .arg(&kspec.param)
            .arg(&beta);
        match &d_order {
            Some(o) => l.arg(o),
            None => l.arg(&null),
        };
        l.arg(&mut d_out).run(grid_for(nq, block))
    })?;
    Ok((gpu.download(&d_out)?, ms))
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
    let k = gpu.kernel("sbh_brute_force")?;
    let nq = queries.len() as u32;
    let d_q = gpu.upload(queries)?;
    // Work units (query groups × source chunks) that fill whole waves of resident blocks.
    let slots = k.resident_grid(gpu, dev::QUERY_BLOCK)?.grid_dim.0;
    let groups = dev::brute_force_groups(nq);
    let splits = dev::brute_force_splits(groups, slots, dt.n);
    // Several chunks add their sums atomically: they start from zeros.
    let mut d_out = if splits > 1 {
        gpu.alloc_zeros::<f64>(queries.len())?
    } else {
        gpu.alloc_poisoned::<f64>(queries.len())?
    };
    let null = 0u64;
    // SAFETY: n bodies (and dipoles when present), nq queries in, nq sums out.
    let ((), ms) = gpu.time(|| unsafe {
        let mut l = gpu.launch(&k);
        l.arg(&dt.bodies);
        match &dt.body_dipole {
            Some(d) => l.arg(d),
            None => l.arg(&null),
        };
        l.arg(&dt.n)
            .arg(&d_q)
            .arg(&nq)
            .arg(&kspec.kind)
            .arg(&kspec.param)
            .arg(&splits)
            .arg(&mut d_out)
            .run(crate::runtime::LaunchConfig {
                grid_dim: (groups * splits, 1, 1),
                ..grid_for(nq, dev::QUERY_BLOCK)
            })
    })?;
    Ok((gpu.download(&d_out)?, ms))
}
