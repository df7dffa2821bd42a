//! Stochastic and deterministic Barnes–Hut at query points over either backend: the one place
//! that chooses between the GPU launchers ([`super::gpu`]) and the CPU twin ([`super::cpu`]).
//! Every evaluation returns its sums and a time in ms: the kernel's CUDA events on the GPU, the
//! call's wall time on the CPU.

use super::gpu::{self, DeviceTree, SbhGpuError, WideBuild};
use super::{Moments, SbhTree, Sources, Warps, cpu};
use crate::backend::Backend;
use crate::device::sbh::{KernelSpec, SbhParams};
use crate::stats::median;
use std::time::Instant;

/// Sources and their tree on a backend (on the GPU, also the device copy).
pub struct Summation {
    backend: Backend,
    src: Sources,
    tree: SbhTree,
    device: Option<DeviceTree>,
    /// Whether `levels = 2` estimates read the wide-node layout (else the octree's child slots).
    wide: bool,
}

/// Where the GPU's tree came from.
pub enum TreeOrigin {
    /// The CPU backend: the host tree.
    Host,
    /// Built on the GPU; `ms` (CUDA events) of the second build, after the first warmed up.
    Gpu { ms: f64 },
    /// The host tree uploaded, because the GPU build refused (`why`: dipoles, negative weights).
    Uploaded { why: String },
}

impl Summation {
    /// `tree` (built on the host from `src`), uploaded on the GPU as the paper's authors do.
    pub fn upload(backend: &Backend, src: Sources, tree: SbhTree) -> Result<Self, SbhGpuError> {
        let device = match backend {
            Backend::Gpu(g) => Some(DeviceTree::upload(g, &src, &tree)?),
            Backend::Cpu => None,
        };
        Ok(Self::new(backend, src, tree, device))
    }

    /// On the GPU the tree built there, wide layout included (with `quad`, the cells' second
    /// moments too), or `tree` uploaded where the GPU build refuses; on the CPU `tree` itself.
    pub fn build(
        backend: &Backend,
        src: Sources,
        tree: SbhTree,
        quad: bool,
    ) -> Result<(Self, TreeOrigin), SbhGpuError> {
        let Backend::Gpu(g) = backend else {
            return Ok((Self::new(backend, src, tree, None), TreeOrigin::Host));
        };
        let build = || DeviceTree::build_on_gpu_with(g, &src, WideBuild::Gpu, quad);
        let (device, origin) = match build() {
            Ok((dt, ms)) => {
                // A second build, timed after the first (module load, allocations) warmed up.
                let (dt, ms) = build().unwrap_or((dt, ms));
                (dt, TreeOrigin::Gpu { ms })
            }
            Err(e) => (
                DeviceTree::upload(g, &src, &tree)?,
                TreeOrigin::Uploaded { why: e.to_string() },
            ),
        };
        Ok((Self::new(backend, src, tree, Some(device)), origin))
    }

    fn new(backend: &Backend, src: Sources, tree: SbhTree, device: Option<DeviceTree>) -> Self {
        Summation {
            backend: backend.clone(),
            src,
            tree,
            device,
            wide: true,
        }
    }

    /// Estimates walk the octree's child slots instead of the wide-node layout (same draws).
    pub fn without_wide(mut self) -> Self {
        self.device = self.device.map(DeviceTree::without_wide);
        self.wide = false;
        self
    }

    pub fn src(&self) -> &Sources {
        &self.src
    }

    pub fn tree(&self) -> &SbhTree {
        &self.tree
    }

    /// The device tree (GPU backend only), e.g. to report how its wide layout was built.
    pub fn device(&self) -> Option<&DeviceTree> {
        self.device.as_ref()
    }

    fn on_gpu(&self) -> Option<(&crate::runtime::Gpu, &DeviceTree)> {
        Some((self.backend.gpu()?, self.device.as_ref()?))
    }

    /// Stochastic Barnes–Hut sums at `q`, evaluated in `order` (same draws on both backends).
    pub fn estimate(
        &self,
        q: &[[f32; 3]],
        p: &SbhParams,
        coherent: bool,
        order: Option<&[u32]>,
    ) -> Result<(Vec<f32>, f64), SbhGpuError> {
        match self.on_gpu() {
            Some((g, d)) => gpu::estimate_ordered(g, &self.src, d, q, p, coherent, order),
            None => wall(|| {
                cpu::estimate_layout(&self.src, &self.tree, q, p, coherent, order, self.wide)
            }),
        }
    }

    /// Barnes–Hut with one traversal per warp of queries (`warps`), monopoles or quadrupoles.
    #[allow(clippy::too_many_arguments)]
    pub fn barnes_hut_grouped(
        &self,
        q: &[[f32; 3]],
        k: KernelSpec,
        beta: f32,
        order: Option<&[u32]>,
        warps: Warps,
        moments: Moments,
    ) -> Result<(Vec<f32>, f64), SbhGpuError> {
        match self.on_gpu() {
            Some((g, d)) => {
                gpu::barnes_hut_grouped(g, &self.src, d, q, k, beta, order, warps, moments)
            }
            None => wall(|| {
                cpu::barnes_hut_grouped(&self.src, &self.tree, q, k, beta, order, warps, moments)
            }),
        }
    }

    /// Barnes–Hut per query; `order` sets the GPU's launch order (the sums do not depend on it,
    /// and the twin's rayon tasks ignore it).
    pub fn barnes_hut(
        &self,
        q: &[[f32; 3]],
        k: KernelSpec,
        beta: f32,
        order: Option<&[u32]>,
    ) -> Result<(Vec<f32>, f64), SbhGpuError> {
        match self.on_gpu() {
            Some((g, d)) => gpu::barnes_hut_ordered(g, &self.src, d, q, k, beta, order),
            None => wall(|| cpu::barnes_hut(&self.src, &self.tree, q, k, beta)),
        }
    }

    /// Direct summation: float32 terms, float64 sums (the reference of both backends).
    pub fn brute_force(
        &self,
        q: &[[f32; 3]],
        k: KernelSpec,
    ) -> Result<(Vec<f64>, f64), SbhGpuError> {
        match self.on_gpu() {
            Some((g, d)) => gpu::brute_force(g, &self.src, d, q, k),
            None => wall(|| cpu::brute_force(&self.src, q, k)),
        }
    }

    /// The last values of `repeats` (at least 1) calls of `f` and the median of their times,
    /// after one untimed warm-up on the GPU (the CPU twin has nothing to warm up).
    pub fn timed<T, E>(
        &self,
        repeats: usize,
        f: impl Fn() -> Result<(Vec<T>, f64), E>,
    ) -> Result<(Vec<T>, f64), E> {
        let mut last = if self.on_gpu().is_some() {
            Some(f()?.0)
        } else {
            None
        };
        let mut ms = Vec::new();
        for _ in 0..repeats.max(1) {
            let (v, t) = f()?;
            ms.push(t);
            last = Some(v);
        }
        Ok((last.unwrap_or_default(), median(&ms).unwrap_or(f64::NAN)))
    }
}

/// `f`'s result and its wall time in ms.
fn wall<T>(f: impl FnOnce() -> Result<T, super::SbhError>) -> Result<(T, f64), SbhGpuError> {
    let t = Instant::now();
    let v = f()?;
    Ok((v, t.elapsed().as_secs_f64() * 1e3))
}

/// The query grid's device memory (queries and results) against the GPU's total; the reason
/// when it does not fit. Nothing to check on the CPU backend.
pub fn check_device_memory(backend: &Backend, queries: usize) -> Result<(), String> {
    if let Backend::Gpu(g) = backend {
        let dev = queries * (12 + 8);
        if dev > g.info().total_memory {
            return Err(format!(
                "needs about {} MiB of device memory; the GPU has {} MiB",
                dev >> 20,
                g.info().total_memory >> 20
            ));
        }
    }
    Ok(())
}
