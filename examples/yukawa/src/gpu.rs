//! The GPU side: warpkit builds its octree with its own kernels (warpkit's module), this crate's
//! kernels (its own module, [`crate::PTX`]) walk it. Every launch is a typed tuple checked against
//! the kernel's `#[kernel]` contract at compile time.

use crate::kernels::kernels::{DIRECT_BLOCK, GROUP_BLOCK, yukawa_direct, yukawa_group};
use crate::{ParamError, Params, check};
use warpkit::bh::gpu::{self as bhgpu, Storage};
use warpkit::bh::initial_cells;
use warpkit::device::bh::{self as dev, Accel, Body};
use warpkit::runtime::{Gpu, GpuError, Module, grid_for};

/// What can go wrong on the GPU.
#[derive(Debug)]
pub enum Error {
    Params(ParamError),
    Gpu(GpuError),
    /// warpkit's tree build (capacity, memory).
    Tree(bhgpu::BhError),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Params(e) => e.fmt(f),
            Error::Gpu(e) => e.fmt(f),
            Error::Tree(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

impl From<GpuError> for Error {
    fn from(e: GpuError) -> Self {
        Error::Gpu(e)
    }
}

/// One tree evaluation: accelerations and GPU times (CUDA events) in milliseconds.
#[derive(Clone, Debug)]
pub struct TreeRun {
    pub acc: Vec<Accel>,
    /// warpkit's build: reset, bounding box, insertion, summary, sort into warp groups.
    pub tree_ms: f64,
    /// `yukawa_group`.
    pub force_ms: f64,
}

/// This crate's module, loaded into a [`Gpu`] beside warpkit's own.
pub struct Yukawa {
    module: Module,
}

impl Yukawa {
    /// Loads [`crate::PTX`] into `gpu`'s context.
    pub fn new(gpu: &Gpu) -> Result<Self, GpuError> {
        Ok(Yukawa {
            module: gpu.load_module(crate::PTX)?,
        })
    }

    /// The loaded module (for kernel attributes, or launching its kernels directly).
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// Yukawa accelerations through warpkit's octree (`yukawa_group`).
    pub fn tree_walk(&self, gpu: &Gpu, bodies: &[Body], p: &Params) -> Result<TreeRun, Error> {
        check(bodies, p).map_err(Error::Params)?;
        let n = bodies.len();
        // warpkit's first four stages, on warpkit's module; the summary with moments (`tr`).
        let mut octree =
            bhgpu::build_device_tree_with(gpu, bodies, Storage::Dense, initial_cells(n), true)
                .map_err(Error::Tree)?;
        // The sort into warp groups of ≤ 32 (in tree order), warpkit's kernels too.
        let sort_ms = bhgpu::sort_tree(gpu, &mut octree, dev::GROUP_SIZE)?;

        // This crate's kernel, on this crate's module. Warps stride over the groups, so a
        // resident grid covers any tree.
        let cfg = self.module.resident_grid(gpu, yukawa_group, GROUP_BLOCK)?;
        let mut d_acc = gpu.alloc_poisoned::<Accel>(n)?;
        let args = (
            octree.view(gpu),
            p.theta * p.theta,
            p.eps2(),
            p.inv_lambda(),
            p.g,
            &mut d_acc,
        );
        // SAFETY: n bodies, sort and accelerations; the sorted tree of those bodies.
        let ((), force_ms) =
            gpu.time(|| unsafe { self.module.launch(gpu, yukawa_group, cfg, args) })?;
        Ok(TreeRun {
            acc: gpu.download(&d_acc)?,
            tree_ms: octree.times.tree() + sort_ms,
            force_ms,
        })
    }

    /// Yukawa accelerations by direct summation (`yukawa_direct`), and its GPU time in ms.
    pub fn direct(
        &self,
        gpu: &Gpu,
        bodies: &[Body],
        p: &Params,
    ) -> Result<(Vec<Accel>, f64), Error> {
        check(bodies, p).map_err(Error::Params)?;
        let n32 = bodies.len() as u32;
        let d_bodies = gpu.upload(bodies)?;
        let mut d_acc = gpu.alloc_poisoned::<Accel>(bodies.len())?;
        let cfg = grid_for(n32, DIRECT_BLOCK);
        let args = (&d_bodies, n32, p.eps2(), p.inv_lambda(), p.g, &mut d_acc);
        // SAFETY: n bodies in, n accelerations out, blocks of DIRECT_BLOCK covering n.
        let ((), ms) = gpu.time(|| unsafe { self.module.launch(gpu, yukawa_direct, cfg, args) })?;
        Ok((gpu.download(&d_acc)?, ms))
    }
}
