//! GPU assembly: uploads a mesh with its colouring and CSR positions, and launches one of the
//! strategies of `warpkit_device::fem::kernels` (one launch per colour, or one atomic launch).

use super::colour::Colouring;
use super::csr::Pattern;
use super::{FemError, Material, Mesh};
use crate::device::fem::{ENTRIES, NODES, Real, THREAD_BLOCK, WARP_BLOCK};
use crate::runtime::{CudaSlice, DeviceRepr, Gpu, GpuError, ValidAsZeroBits, grid_for};

/// An assembly strategy (see the kernels' module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Thread per element, one launch per colour: the paper's baseline.
    Thread,
    /// Warp per element, 4 lanes per row (3 rows × 6 columns per lane), per colour; Jacobian by
    /// warp shuffles.
    Warp4,
    /// Warp per element, 8 lanes per row (6 rows × 3 columns per lane), per colour; Jacobian by
    /// warp shuffles.
    Warp8,
    /// Thread per element, all elements in one launch, atomic adds, no colouring.
    ThreadAtomic,
    /// Warp per element (4 lanes per row), all elements in one launch, atomic adds.
    Warp4Atomic,
    /// [`Strategy::Warp4`] with the Jacobian summed through shared memory (Table 1).
    Warp4JacShared,
    /// [`Strategy::Warp8`] with the Jacobian summed through shared memory (Table 1).
    Warp8JacShared,
    /// [`Strategy::Warp4`] with the Jacobian summed by shared-memory atomics (Table 1).
    Warp4JacAtomic,
    /// [`Strategy::Warp8`] with the Jacobian summed by shared-memory atomics (Table 1).
    Warp8JacAtomic,
    /// PPNI, 4 lanes per row: lanes compute the 8 Gauss points' Jacobians, determinants,
    /// inverses and gradients in parallel and share them through shared memory; per colour.
    Ppni4,
    /// PPNI, 8 lanes per row; per colour.
    Ppni8,
    /// [`Strategy::Ppni4`] reading 72 block positions per element instead of 576.
    Ppni4Blocks,
    /// [`Strategy::Ppni8`] reading 72 block positions per element instead of 576.
    Ppni8Blocks,
    /// [`Strategy::Ppni4Blocks`] over all elements at once with atomic adds.
    Ppni4BlocksAtomic,
    /// [`Strategy::Ppni8Blocks`] over all elements at once with atomic adds.
    Ppni8BlocksAtomic,
    /// Two kernels: every element's geometry to global memory, then per colour one block of
    /// 576 threads per element, one entry each.
    TwoKernel,
}

impl Strategy {
    pub const ALL: [Strategy; 16] = [
        Strategy::Thread,
        Strategy::Warp4,
        Strategy::Warp8,
        Strategy::ThreadAtomic,
        Strategy::Warp4Atomic,
        Strategy::Warp4JacShared,
        Strategy::Warp8JacShared,
        Strategy::Warp4JacAtomic,
        Strategy::Warp8JacAtomic,
        Strategy::Ppni4,
        Strategy::Ppni8,
        Strategy::Ppni4Blocks,
        Strategy::Ppni8Blocks,
        Strategy::Ppni4BlocksAtomic,
        Strategy::Ppni8BlocksAtomic,
        Strategy::TwoKernel,
    ];

    /// The command-line name (kebab case).
    pub fn name(self) -> &'static str {
        use Strategy::*;
        match self {
            Thread => "thread",
            Warp4 => "warp4",
            Warp8 => "warp8",
            ThreadAtomic => "thread-atomic",
            Warp4Atomic => "warp4-atomic",
            Warp4JacShared => "warp4-jshared",
            Warp8JacShared => "warp8-jshared",
            Warp4JacAtomic => "warp4-jatomic",
            Warp8JacAtomic => "warp8-jatomic",
            Ppni4 => "ppni4",
            Ppni8 => "ppni8",
            Ppni4Blocks => "ppni4-blocks",
            Ppni8Blocks => "ppni8-blocks",
            Ppni4BlocksAtomic => "ppni4-blocks-atomic",
            Ppni8BlocksAtomic => "ppni8-blocks-atomic",
            TwoKernel => "two-kernel",
        }
    }

    /// The strategy named `name` ([`Self::name`]).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The kernel's PTX entry name for `T` (`f64` when `double`); for [`Strategy::TwoKernel`],
    /// the second (per-entry) kernel.
    pub fn kernel_name(self, double: bool) -> &'static str {
        use Strategy::*;
        macro_rules! pick {
            ($k:literal) => {
                if double {
                    concat!("fem_", $k, "_f64")
                } else {
                    concat!("fem_", $k, "_f32")
                }
            };
        }
        match self {
            Thread => pick!("thread"),
            Warp4 => pick!("warp4"),
            Warp8 => pick!("warp8"),
            ThreadAtomic => pick!("thread_atomic"),
            Warp4Atomic => pick!("warp4_atomic"),
            Warp4JacShared => pick!("warp4_jshared"),
            Warp8JacShared => pick!("warp8_jshared"),
            Warp4JacAtomic => pick!("warp4_jatomic"),
            Warp8JacAtomic => pick!("warp8_jatomic"),
            Ppni4 => pick!("ppni4"),
            Ppni8 => pick!("ppni8"),
            Ppni4Blocks => pick!("ppni4_blocks"),
            Ppni8Blocks => pick!("ppni8_blocks"),
            Ppni4BlocksAtomic => pick!("ppni4_blocks_atomic"),
            Ppni8BlocksAtomic => pick!("ppni8_blocks_atomic"),
            TwoKernel => pick!("entries"),
        }
    }

    /// Whether launches go colour by colour (else: every element at once, with atomics).
    pub fn coloured(self) -> bool {
        !matches!(
            self,
            Strategy::ThreadAtomic
                | Strategy::Warp4Atomic
                | Strategy::Ppni4BlocksAtomic
                | Strategy::Ppni8BlocksAtomic
        )
    }

    /// Whether the kernel reads the 72-entry block table rather than 576 positions per element.
    pub fn block_positions(self) -> bool {
        matches!(
            self,
            Strategy::Ppni4Blocks
                | Strategy::Ppni8Blocks
                | Strategy::Ppni4BlocksAtomic
                | Strategy::Ppni8BlocksAtomic
        )
    }

    fn warp_per_element(self) -> bool {
        !matches!(
            self,
            Strategy::Thread | Strategy::ThreadAtomic | Strategy::TwoKernel
        )
    }

    /// Grid for `n` elements: a thread each, a warp each, or (two kernels) a block each.
    pub fn launch_config(self, n: u32) -> crate::runtime::LaunchConfig {
        if self == Strategy::TwoKernel {
            crate::runtime::LaunchConfig {
                grid_dim: (n, 1, 1),
                block_dim: (ENTRIES as u32, 1, 1),
                shared_mem_bytes: 0,
            }
        } else if self.warp_per_element() {
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
    /// Per element, [`BLOCK_TABLE`] values: the CSR position of entry (3a, 3b) for each node
    /// pair (a, b) at 8a + b, then the row length of each node a's rows at 64 + a.
    blocks: CudaSlice<u32>,
    /// The two-kernel strategy's per-element geometry, allocated on first use.
    geometry: std::cell::OnceCell<CudaSlice<T>>,
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
            blocks: gpu.upload(&block_table(pattern, mesh.elements.len()))?,
            geometry: std::cell::OnceCell::new(),
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
        let positions = if strategy.block_positions() {
            &self.blocks
        } else {
            &self.positions
        };
        if strategy == Strategy::TwoKernel {
            return self.assemble_two_kernels(gpu, &kernel, lame, values);
        }
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
                    .arg(positions)
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

    /// The two-kernel strategy: geometry of every element, then entries colour by colour.
    fn assemble_two_kernels(
        &self,
        gpu: &Gpu,
        entries: &crate::runtime::Kernel,
        lame: crate::device::fem::Lame<T>,
        values: &mut CudaSlice<T>,
    ) -> Result<(), FemError> {
        let n = &self.all.1;
        let geometry = match self.geometry.get() {
            Some(g) => g,
            None => {
                let g = gpu.alloc_zeros::<T>(*n as usize * GEOMETRY_VALUES)?;
                self.geometry.get_or_init(|| g)
            }
        };
        let kernel = gpu.kernel(if T::DOUBLE {
            "fem_geometry_f64"
        } else {
            "fem_geometry_f32"
        })?;
        // SAFETY: coords and elements as in `assemble`; geometry holds GEOMETRY_VALUES per
        // element; one thread per (element, Gauss point), n ≤ u32::MAX / 32 (checked at upload).
        unsafe {
            gpu.launch(&kernel)
                .arg(&self.coords)
                .arg(&self.elements)
                .arg(n)
                .arg(geometry)
                .run(grid_for(n * 8, THREAD_BLOCK))?;
        }
        for (list, n) in &self.colours {
            if *n == 0 {
                continue;
            }
            // SAFETY: geometry was written above for every element; positions hold 576 entries
            // < nnz per element; a colour's elements share no node; values ≥ nnz entries.
            unsafe {
                gpu.launch(entries)
                    .arg(geometry)
                    .arg(&self.positions)
                    .arg(list)
                    .arg(n)
                    .arg(&lame.lambda)
                    .arg(&lame.mu)
                    .arg(&mut *values)
                    .run(Strategy::TwoKernel.launch_config(*n))?;
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

pub use crate::device::fem::BLOCK_TABLE;
use crate::device::fem::{GEOMETRY_VALUES, block_position};

/// The block position table from the full positions. In CSR with 3 DOF per node the three rows
/// of a node share their column set, so entry (3a + i, 3b + j) of element e sits at
/// `base[8a + b] + i · stride[a] + j`: 72 values per element instead of 576.
pub fn block_table(pattern: &Pattern, elements: usize) -> Vec<u32> {
    use rayon::prelude::*;
    let mut t = vec![0u32; elements * BLOCK_TABLE];
    t.par_chunks_exact_mut(BLOCK_TABLE)
        .enumerate()
        .for_each(|(e, tab)| {
            let pos = pattern.element_positions(e);
            for a in 0..NODES {
                for b in 0..NODES {
                    tab[NODES * a + b] = pos[3 * a * 24 + 3 * b];
                }
                tab[NODES * NODES + a] = pos[(3 * a + 1) * 24] - pos[3 * a * 24];
            }
            debug_assert!((0..ENTRIES).all(|k| {
                let (r, c) = (k / 24, k % 24);
                let (a, i, b, j) = (r / 3, r % 3, c / 3, c % 3);
                pos[k] == block_position(tab[NODES * a + b], tab[NODES * NODES + a], i, j)
            }));
        });
    t
}

/// Iterations queued between two looks at the GPU's PCG scalars.
const PCG_CHUNK: usize = 16;

/// [`super::solve::pcg`] on the GPU, in f64: the same Jacobi-preconditioned CG with a warp-per-row
/// CSR SpMV and warp-reduced dot products, the scalars kept on the GPU (kernels
/// `fem_spmv_f64`, `fem_dot_f64`, `fem_pcg_*_f64`). Same contract and errors as the CPU path;
/// the reported iteration count is exact (the kernels stop updating once converged).
pub fn pcg(
    gpu: &Gpu,
    pattern: &Pattern,
    values: &[f64],
    b: &[f64],
    rtol: f64,
    max_iterations: usize,
) -> Result<(Vec<f64>, super::solve::CgStats), FemError> {
    use super::solve::CgStats;
    use crate::device::fem::{
        PCG_DONE, PCG_ITER, PCG_LAST_PKP, PCG_LAST_RR, PCG_RZ, PCG_SCALARS, PCG_TOL2,
    };
    let rows = pattern.rows();
    let inv_diag = super::solve::inverse_diagonal(pattern, values)?;
    let n = u32::try_from(rows)
        .ok()
        .filter(|&n| n <= u32::MAX / crate::device::WARP_SIZE)
        .ok_or_else(|| FemError::MeshSize(format!("{rows} rows: too many for the GPU PCG")))?;
    let bnorm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    if bnorm == 0.0 {
        let stats = CgStats {
            iterations: 0,
            relative_residual: 0.0,
        };
        return Ok((vec![0.0; rows], stats));
    }
    let z0: Vec<f64> = b.iter().zip(&inv_diag).map(|(r, d)| r * d).collect();
    let mut s0 = [0.0; PCG_SCALARS];
    s0[PCG_RZ] = b.iter().zip(&z0).map(|(r, z)| r * z).sum();
    s0[PCG_TOL2] = (rtol * bnorm).powi(2);
    let row_ptr = gpu.upload(&pattern.row_ptr)?;
    let col = gpu.upload(&pattern.col)?;
    let k = gpu.upload(values)?;
    let inv = gpu.upload(&inv_diag)?;
    let mut u = gpu.alloc_zeros::<f64>(rows)?;
    let mut r = gpu.upload(b)?;
    let mut z = gpu.upload(&z0)?;
    let mut p = gpu.upload(&z0)?;
    let mut kp = gpu.alloc_zeros::<f64>(rows)?;
    let mut s = gpu.upload(&s0)?;
    let spmv = gpu.kernel("fem_spmv_f64")?;
    let dot = gpu.kernel("fem_dot_f64")?;
    let update = gpu.kernel("fem_pcg_update_f64")?;
    let direction = gpu.kernel("fem_pcg_direction_f64")?;
    let scalars = gpu.kernel("fem_pcg_scalars_f64")?;
    let rows_cfg = grid_for(n * crate::device::WARP_SIZE, 256);
    // Grid-stride vector kernels: a few blocks per multiprocessor.
    let blocks = (4 * gpu.info().multiprocessors).min(n.div_ceil(256)).max(1);
    let vec_cfg = crate::runtime::LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let one = grid_for(1, 32);
    let mut it = 0usize;
    loop {
        let chunk = PCG_CHUNK.min(max_iterations - it);
        for _ in 0..chunk {
            it += 1;
            let it32 = it as u32;
            // SAFETY: every vector holds `rows` values, the CSR arrays are the pattern's, `s`
            // holds PCG_SCALARS values; launches are whole warps (the kernels' contracts).
            unsafe {
                gpu.launch(&spmv)
                    .arg(&row_ptr)
                    .arg(&col)
                    .arg(&k)
                    .arg(&p)
                    .arg(&mut kp)
                    .arg(&n)
                    .run(rows_cfg)?;
                gpu.launch(&dot)
                    .arg(&p)
                    .arg(&kp)
                    .arg(&n)
                    .arg(&mut s.slice_mut(crate::device::fem::PCG_PKP..))
                    .run(vec_cfg)?;
                gpu.launch(&update)
                    .arg(&mut u)
                    .arg(&mut r)
                    .arg(&p)
                    .arg(&kp)
                    .arg(&mut z)
                    .arg(&inv)
                    .arg(&n)
                    .arg(&mut s)
                    .run(vec_cfg)?;
                gpu.launch(&direction)
                    .arg(&mut p)
                    .arg(&z)
                    .arg(&n)
                    .arg(&s)
                    .run(vec_cfg)?;
                gpu.launch(&scalars).arg(&mut s).arg(&it32).run(one)?;
            }
        }
        let st = gpu.download(&s)?;
        let iterations = st[PCG_ITER] as usize;
        let rel = st[PCG_LAST_RR].sqrt() / bnorm;
        if st[PCG_DONE] == 2.0 {
            return Err(FemError::Singular {
                iteration: iterations,
                curvature: st[PCG_LAST_PKP],
            });
        }
        if st[PCG_DONE] == 1.0 {
            let stats = CgStats {
                iterations,
                relative_residual: rel,
            };
            return Ok((gpu.download(&u)?, stats));
        }
        if it >= max_iterations {
            return Err(FemError::NotConverged {
                iterations: max_iterations,
                residual: rel,
            });
        }
    }
}
