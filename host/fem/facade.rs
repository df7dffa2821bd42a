//! FEM assembly and the PCG solve over either backend: the one place that chooses between the GPU
//! strategies ([`super::gpu`]) and the host paths ([`super::assemble`], [`super::solve::pcg`]).

use super::colour::Colouring;
use super::csr::Pattern;
use super::gpu::{DeviceMaterials, GpuMesh, GpuReal, Strategy};
use super::solve::{self, Solver};
use super::{ElementMaterials, FemError, Formulation, Material, Mesh, assemble};
use crate::backend::Backend;
use crate::runtime::Gpu;
use std::cell::OnceCell;
use std::time::Instant;

/// An assembly method: a GPU strategy or a host path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Gpu(Strategy),
    /// [`assemble::cpu`]: rayon over each colour in turn (the baseline on the CPU backend).
    CpuColoured,
    /// [`assemble::atomic`]: rayon over all elements, atomic adds, no colouring.
    CpuAtomic,
    /// [`assemble::serial`]: one thread, element by element (float64 only).
    CpuSerial,
}

impl Method {
    /// The methods native to a backend: every GPU strategy, or the three host paths.
    pub fn native(backend: &Backend) -> Vec<Method> {
        match backend {
            Backend::Gpu(_) => Strategy::ALL.into_iter().map(Method::Gpu).collect(),
            Backend::Cpu => vec![Method::CpuColoured, Method::CpuAtomic, Method::CpuSerial],
        }
    }

    /// `strategy` on the GPU; on the CPU backend its analogue, the coloured host assembly.
    pub fn or_host(backend: &Backend, strategy: Strategy) -> Method {
        match backend {
            Backend::Gpu(_) => Method::Gpu(strategy),
            Backend::Cpu => Method::CpuColoured,
        }
    }
}

/// The precisions both backends assemble in.
pub trait Precision: GpuReal + assemble::AtomicReal {}
impl<T: GpuReal + assemble::AtomicReal> Precision for T {}

/// Assembles one mesh by any [`Method`] its backend runs. The device copy of the mesh is
/// uploaded on the first GPU strategy (or by [`Self::upload`]) and shared by the later ones.
pub struct Assembler<'a, T: GpuReal> {
    backend: &'a Backend,
    mesh: &'a Mesh,
    colouring: &'a Colouring,
    pattern: &'a Pattern,
    formulation: Formulation,
    device: OnceCell<GpuMesh<T>>,
}

impl<'a, T: Precision> Assembler<'a, T> {
    pub fn new(
        backend: &'a Backend,
        mesh: &'a Mesh,
        colouring: &'a Colouring,
        pattern: &'a Pattern,
    ) -> Self {
        Assembler {
            backend,
            mesh,
            colouring,
            pattern,
            formulation: Formulation::Standard,
            device: OnceCell::new(),
        }
    }

    /// Assemble with `formulation` (default [`Formulation::Standard`]).
    pub fn with_formulation(mut self, formulation: Formulation) -> Self {
        self.formulation = formulation;
        self
    }

    /// Uploads the mesh now on the GPU (nothing on the CPU backend), so that its cost and errors
    /// come before any timing.
    pub fn upload(&self) -> Result<(), FemError> {
        if let Backend::Gpu(gpu) = self.backend {
            self.device(gpu)?;
        }
        Ok(())
    }

    fn device(&self, gpu: &Gpu) -> Result<&GpuMesh<T>, FemError> {
        if let Some(dm) = self.device.get() {
            return Ok(dm);
        }
        let dm = GpuMesh::<T>::upload(gpu, self.mesh, self.colouring, self.pattern)?;
        Ok(self.device.get_or_init(|| dm))
    }

    /// The GPU and `strategy`, or an error on the CPU backend.
    fn gpu(&self, strategy: Strategy) -> Result<&'a Gpu, FemError> {
        self.backend
            .gpu()
            .map(|g| &**g)
            .ok_or(FemError::NeedsGpu(strategy.name()))
    }

    /// One untimed assembly by `method`, values on the host.
    pub fn assemble(&self, method: Method, material: &Material) -> Result<Vec<T>, FemError> {
        let (m, p) = (self.mesh, self.pattern);
        if self.formulation != Formulation::Standard || matches!(method, Method::Gpu(_)) {
            let uniform = ElementMaterials::uniform(*material, m.elements.len());
            return self.assemble_materials(method, &uniform);
        }
        Ok(match method {
            Method::Gpu(_) => unreachable!("assembled through assemble_materials above"),
            Method::CpuColoured => assemble::cpu::<T>(m, material, self.colouring, p)?,
            Method::CpuAtomic => assemble::atomic::<T>(m, material, p)?,
            Method::CpuSerial => assemble::serial(m, material, p)?
                .into_iter()
                .map(T::from_f64)
                .collect(),
        })
    }

    /// One untimed assembly with a material per element (on the GPU: a table and an index
    /// per element, [`DeviceMaterials`]; one material reads no index).
    pub fn assemble_materials(
        &self,
        method: Method,
        materials: &ElementMaterials,
    ) -> Result<Vec<T>, FemError> {
        let (m, p, f) = (self.mesh, self.pattern, self.formulation);
        if f == Formulation::Standard
            && !matches!(method, Method::Gpu(_))
            && let Some(material) = materials.single()
        {
            return self.assemble(method, &material);
        }
        Ok(match method {
            Method::Gpu(strategy) => {
                let gpu = self.gpu(strategy)?;
                let dm = self.device(gpu)?;
                let dmat = DeviceMaterials::upload(gpu, materials)?;
                let mut values = gpu.alloc_poisoned::<T>(p.nnz())?;
                dm.assemble_with(gpu, strategy, f, &dmat, &mut values)?;
                gpu.download(&values)?
            }
            Method::CpuColoured => {
                assemble::cpu_materials::<T>(m, materials, f, self.colouring, p)?
            }
            Method::CpuAtomic => assemble::atomic_materials::<T>(m, materials, f, p)?,
            Method::CpuSerial => assemble::serial_materials(m, materials, f, p)?
                .into_iter()
                .map(T::from_f64)
                .collect(),
        })
    }

    /// `repeats` timed assemblies (ms) and the last one's values: a GPU strategy after one
    /// untimed warm-up, by CUDA events around zeroing and all launches; a host path by wall time.
    pub fn time(
        &self,
        method: Method,
        material: &Material,
        repeats: usize,
    ) -> Result<(Vec<f64>, Vec<T>), FemError> {
        let mut times = Vec::with_capacity(repeats);
        if let Method::Gpu(strategy) = method {
            let gpu = self.gpu(strategy)?;
            let dm = self.device(gpu)?;
            let mut values = gpu.alloc_zeros::<T>(self.pattern.nnz())?;
            let (f, dmat) = (self.formulation, DeviceMaterials::uniform(gpu, material)?);
            dm.assemble_with(gpu, strategy, f, &dmat, &mut values)?;
            for _ in 0..repeats {
                times.push(dm.assemble_timed_with(gpu, strategy, f, &dmat, &mut values)?);
            }
            return Ok((times, gpu.download(&values)?));
        }
        let mut last = Vec::new();
        for _ in 0..repeats {
            let t = Instant::now();
            last = self.assemble(method, material)?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        Ok((times, last))
    }
}

/// Jacobi-preconditioned CG on `backend`, for [`solve::cantilever_tip_with`]: the GPU's
/// [`super::gpu::pcg`] or the host's [`solve::pcg`].
pub fn pcg_solver(backend: &Backend) -> Box<Solver<'_>> {
    match backend {
        Backend::Gpu(gpu) => {
            Box::new(|p: &_, v: &_, b: &_, rtol, max| super::gpu::pcg(gpu, p, v, b, rtol, max))
        }
        Backend::Cpu => Box::new(solve::pcg),
    }
}
