//! GPU assembly: uploads a mesh with its colouring and CSR positions, and launches one of the
//! strategies of `warpkit_device::fem::kernels` (one launch per colour, or one atomic launch).

use super::colour::Colouring;
use super::csr::Pattern;
use super::{FemError, Material, Mesh};
use crate::device::fem::{Real, THREAD_BLOCK, WARP_BLOCK};
use crate::runtime::{CudaSlice, DeviceRepr, Gpu, GpuError, ValidAsZeroBits, grid_for};

/// An assembly strategy (see the kernels' module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Thread per element, one launch per colour: the paper's baseline.
    Thread,
    /// Warp per element, 4 lanes per row (3 rows × 6 columns per lane), per colour.
    Warp4,
    /// Warp per element, 8 lanes per row (6 rows × 3 columns per lane), per colour.
    Warp8,
    /// Thread per element, all elements in one launch, atomic adds, no colouring.
    ThreadAtomic,
    /// Warp per element (4 lanes per row), all elements in one launch, atomic adds.
    Warp4Atomic,
}

impl Strategy {
    pub const ALL: [Strategy; 5] = [
        Strategy::Thread,
        Strategy::Warp4,
        Strategy::Warp8,
        Strategy::ThreadAtomic,
        Strategy::Warp4Atomic,
    ];

    /// The kernel's PTX entry name for `T` (`f64` when `double`).
    pub fn kernel_name(self, double: bool) -> &'static str {
        use Strategy::*;
        match (self, double) {
            (Thread, false) => "fem_thread_f32",
            (Thread, true) => "fem_thread_f64",
            (Warp4, false) => "fem_warp4_f32",
            (Warp4, true) => "fem_warp4_f64",
            (Warp8, false) => "fem_warp8_f32",
            (Warp8, true) => "fem_warp8_f64",
            (ThreadAtomic, false) => "fem_thread_atomic_f32",
            (ThreadAtomic, true) => "fem_thread_atomic_f64",
            (Warp4Atomic, false) => "fem_warp4_atomic_f32",
            (Warp4Atomic, true) => "fem_warp4_atomic_f64",
        }
    }

    /// Whether launches go colour by colour (else: every element at once, with atomics).
    pub fn coloured(self) -> bool {
        matches!(self, Strategy::Thread | Strategy::Warp4 | Strategy::Warp8)
    }

    fn warp_per_element(self) -> bool {
        matches!(
            self,
            Strategy::Warp4 | Strategy::Warp8 | Strategy::Warp4Atomic
        )
    }

    /// Grid for `n` elements: a thread each, or a warp each.
    pub fn launch_config(self, n: u32) -> crate::runtime::LaunchConfig {
        if self.warp_per_element() {
            grid_for(n.saturating_mul(crate::device::WARP_SIZE), WARP_BLOCK)
        } else {
            grid_for(n, THREAD_BLOCK)
        }
    }
}

/// The element precisions the GPU kernels exist for.
pub trait GpuReal: Real + DeviceRepr + ValidAsZeroBits + Default + Clone + Send + Sync {
    const DOUBLE: bool;
}
impl GpuReal for f32 {
    const DOUBLE: bool = false;
}
impl GpuReal for f64 {
    const DOUBLE: bool = true;
}

/// A mesh on the GPU with its colouring and CSR positions.
pub struct GpuMesh<T> {
    coords: CudaSlice<T>,
    elements: CudaSlice<u32>,
    positions: CudaSlice<u32>,
    /// Per colour, its element list; `all` lists every element (atomic strategies).
    colours: Vec<(CudaSlice<u32>, u32)>,
    all: (CudaSlice<u32>, u32),
    nnz: usize,
}

impl<T: GpuReal> GpuMesh<T> {
    /// Uploads everything assembly needs. The mesh must have passed [`super::validate`] and the
    /// colouring [`super::colour::verify`]: the kernels trust both.
    pub fn upload(
        gpu: &Gpu,
        mesh: &Mesh,
        colouring: &Colouring,
        pattern: &Pattern,
    ) -> Result<Self, FemError> {
        let n = u32::try_from(mesh.elements.len())
            .map_err(|_| FemError::MeshSize("more than 2^32 elements".into()))?;
        // Warp kernels index threads as 32 × element in u32.
        if n > u32::MAX / crate::device::WARP_SIZE {
            return Err(FemError::MeshSize(format!(
                "{n} elements: the warp kernels handle at most {}",
                u32::MAX / crate::device::WARP_SIZE
            )));
        }
        let coords: Vec<T> = mesh
            .nodes
            .iter()
            .flatten()
            .map(|&v| T::from_f64(v))
            .collect();
        let colours = colouring
            .groups
            .iter()
            .map(|g| Ok((gpu.upload(g)?, g.len() as u32)))
            .collect::<Result<Vec<_>, GpuError>>()?;
        let all: Vec<u32> = (0..n).collect();
        Ok(GpuMesh {
            coords: gpu.upload(&coords)?,
            elements: gpu.upload(bytemuck::cast_slice::<[u32; 8], u32>(&mesh.elements))?,
            positions: gpu.upload(&pattern.positions)?,
            colours,
            all: (gpu.upload(&all)?, n),
            nnz: pattern.nnz(),
        })
    }

    pub fn nnz(&self) -> usize {
        self.nnz
    }

    /// Zeroes `values[..nnz]` and assembles into it with `strategy` (queued on the GPU's stream;
    /// synchronise or download to wait). Entries past `nnz` are left alone, so a poisoned tail
    /// reveals stray writes.
    pub fn assemble(
        &self,
        gpu: &Gpu,
        strategy: Strategy,
        material: &Material,
        values: &mut CudaSlice<T>,
    ) -> Result<(), FemError> {
        if values.len() < self.nnz {
            return Err(FemError::MeshSize(format!(
                "values buffer has {} entries, the pattern {}",
                values.len(),
                self.nnz
            )));
        }
        let kernel = gpu.kernel(strategy.kernel_name(T::DOUBLE))?;
        let lame = material.lame::<T>();
        gpu.stream()
            .memset_zeros(&mut values.slice_mut(..self.nnz))
            .map_err(|source| GpuError::Driver {
                op: "zeroing the CSR values",
                source,
            })?;
        let launches: &[(CudaSlice<u32>, u32)] = if strategy.coloured() {
            &self.colours
        } else {
            std::slice::from_ref(&self.all)
        };
        for (list, n) in launches {
            if *n == 0 {
                continue;
            }
            // SAFETY: the kernels' contract (device fem::kernels module docs): coords hold 3
            // values per node, elements 8 valid node indices per element, positions 576 entries
            // < nnz per element, list n element indices; values has ≥ nnz entries (checked
            // above); coloured strategies only get colour lists, whose elements share no node.
            unsafe {
                gpu.launch(&kernel)
                    .arg(&self.coords)
                    .arg(&self.elements)
                    .arg(&self.positions)
                    .arg(list)
                    .arg(n)
                    .arg(&lame.lambda)
                    .arg(&lame.mu)
                    .arg(&mut *values)
                    .run(strategy.launch_config(*n))?;
            }
        }
        Ok(())
    }

    /// [`Self::assemble`] between CUDA events: milliseconds of GPU time (zeroing included).
    pub fn assemble_timed(
        &self,
        gpu: &Gpu,
        strategy: Strategy,
        material: &Material,
        values: &mut CudaSlice<T>,
    ) -> Result<f64, FemError> {
        let mut inner = Ok(());
        let ((), ms) = gpu.time(|| {
            inner = self.assemble(gpu, strategy, material, values);
            Ok(())
        })?;
        inner.map(|()| ms)
    }
}
