//! GPU assembly: uploads a mesh with its colouring and CSR positions, and launches one of the
//! strategies of `warpkit_device::fem::kernels` (one launch per colour, or one atomic launch).

use super::colour::Colouring;
use super::csr::Pattern;
use super::{ElementMaterials, FemError, Formulation, Material, Mesh};
use crate::device::fem::kernels as k;
use crate::device::fem::{
    ENTRIES, GEOMETRY_VALUES, NODES, ROWS_BLOCK, Real, THREAD_BLOCK, WARP_BLOCK,
};
mod materials;
mod pcg;
mod tables;
pub use materials::DeviceMaterials;
pub use pcg::pcg;
pub use tables::{BLOCK_TABLE, block_table, node_adjacency};

use crate::runtime::{
    CudaSlice, DeviceRepr, Gpu, GpuError, LaunchConfig, ValidAsZeroBits, grid_for,
};

/// The host side of `warpkit_device::fem_strategies!`: the [`Strategy`] enum, its names and
/// flags, and the typed launch of each row's f32 or f64 kernel. The two-kernel strategy, whose
/// kernels take other parameters, is added by hand.
macro_rules! strategy_table {
    ($($(#[$doc:meta])* $variant:ident, $cli:literal, $k32:ident, $k64:ident,
       $body:ident::<$($g:tt),*>, $colour:ident, $pos:ident, $shape:ident;)*) => {
        /// An assembly strategy (see the kernels' module docs).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Strategy {
            $($(#[$doc])* $variant,)*
            /// Two kernels: every element's geometry to global memory, then per colour one block
            /// of 576 threads per element, one entry each.
            TwoKernel,
            /// A warp per node gathers the node's three CSR rows from its elements and writes
            /// them once: no colouring, no global atomics, no zeroing (`fem_rows_*`); the
            /// elements' blocks meet in shared memory through `red.shared.add`.
            Rows,
            /// `Rows` with the elements taking turns at the shared rows (plain read-modify-writes,
            /// no shared atomics: `fem_rows_rounds_*`).
            RowsRounds,
        }

        impl Strategy {
            pub const ALL: [Strategy; [$(stringify!($variant)),*].len() + 3] =
                [$(Strategy::$variant,)* Strategy::TwoKernel, Strategy::Rows, Strategy::RowsRounds];

            /// The command-line name (kebab case).
            pub fn name(self) -> &'static str {
                match self {
                    $(Strategy::$variant => $cli,)*
                    Strategy::TwoKernel => "two-kernel",
                    Strategy::Rows => "rows",
                    Strategy::RowsRounds => "rows-rounds",
                }
            }

            /// Whether launches go colour by colour (else: every element at once, with atomics).
            pub fn coloured(self) -> bool {
                match self {
                    $(Strategy::$variant => strategy_table!(@coloured $colour),)*
                    Strategy::TwoKernel => true,
                    Strategy::Rows | Strategy::RowsRounds => false,
                }
            }

            /// Whether the kernel reads the 72-entry block table rather than 576 positions per
            /// element.
            pub fn block_positions(self) -> bool {
                match self {
                    $(Strategy::$variant => strategy_table!(@blocks $pos),)*
                    Strategy::TwoKernel => false,
                    Strategy::Rows | Strategy::RowsRounds => true,
                }
            }

            fn warp_per_element(self) -> bool {
                match self {
                    $(Strategy::$variant => strategy_table!(@warp $shape),)*
                    Strategy::TwoKernel | Strategy::Rows | Strategy::RowsRounds => false,
                }
            }
        }

        strategy_table!(@launch f32, $($variant $k32),*);
        strategy_table!(@launch f64, $($variant $k64),*);
    };
    (@coloured coloured) => { true };
    (@coloured atomic) => { false };
    (@blocks blocks) => { true };
    (@blocks full) => { false };
    (@warp warp) => { true };
    (@warp thread) => { false };
    (@launch $t:ty, $($variant:ident $k:ident),*) => {
        impl ElementKernels for $t {
            unsafe fn launch_strategy(
                strategy: Strategy,
                gpu: &Gpu,
                cfg: LaunchConfig,
                args: ElementArgs<'_, Self>,
            ) -> Result<(), GpuError> {
                let ElementArgs { coords, elements, positions, list, n, materials, values } = args;
                let m = materials;
                let args =
                    (coords, elements, positions, list, n, &m.lames, &m.index, m.count, values);
                // SAFETY: forwarded to the caller.
                unsafe {
                    match strategy {
                        $(Strategy::$variant => gpu.launch(k::$k, cfg, args),)*
                        Strategy::TwoKernel | Strategy::Rows | Strategy::RowsRounds => {
                            Err(GpuError::InvalidLaunch {
                                kernel: strategy.name(),
                                reason: "this strategy launches its own kernels".into(),
                            })
                        }
                    }
                }
            }
        }
    };
}

crate::device::fem_strategies!(strategy_table);

/// The host side of `warpkit_device::fem_bbar_strategies!`: which strategies have a B-bar
/// kernel, and its typed launch.
macro_rules! bbar_table {
    ($($variant:ident, $k32:ident, $k64:ident, $body:ident::<$($g:tt),*>;)*) => {
        impl Strategy {
            /// Whether the strategy assembles the B-bar formulation too.
            pub fn has_bbar(self) -> bool {
                matches!(self, $(Strategy::$variant)|*)
            }

            /// The strategies that assemble the B-bar formulation.
            pub const BBAR: [Strategy; [$(stringify!($variant)),*].len()] =
                [$(Strategy::$variant),*];
        }

        bbar_table!(@launch f32, $($variant $k32),*);
        bbar_table!(@launch f64, $($variant $k64),*);
    };
    (@launch $t:ty, $($variant:ident $k:ident),*) => {
        impl BbarKernels for $t {
            unsafe fn launch_bbar(
                strategy: Strategy,
                gpu: &Gpu,
                cfg: LaunchConfig,
                args: ElementArgs<'_, Self>,
            ) -> Result<(), FemError> {
                let ElementArgs { coords, elements, positions, list, n, materials, values } = args;
                let m = materials;
                let args =
                    (coords, elements, positions, list, n, &m.lames, &m.index, m.count, values);
                // SAFETY: forwarded to the caller.
                unsafe {
                    match strategy {
                        $(Strategy::$variant => Ok(gpu.launch(k::$k, cfg, args)?),)*
                        #[allow(unreachable_patterns)]
                        _ => Err(FemError::NoBbarKernel(strategy.name())),
                    }
                }
            }
        }
    };
}

crate::device::fem_bbar_strategies!(bbar_table);

/// Launches a strategy's B-bar kernel for `Self` (f32 or f64).
pub trait BbarKernels: Sized {
    /// # Safety
    /// As [`ElementKernels::launch_strategy`].
    unsafe fn launch_bbar(
        strategy: Strategy,
        gpu: &Gpu,
        cfg: LaunchConfig,
        args: ElementArgs<'_, Self>,
    ) -> Result<(), FemError>;
}

/// `e` with the launch it came from added to a kernel failure's names (launch `c` of `of`, `n`
/// elements): with `WARPKIT_SYNC_LAUNCHES=1` a failure surfaces at its own launch, which then
/// names the colour at fault.
fn at_launch(e: FemError, c: usize, of: usize, n: u32) -> FemError {
    match e {
        FemError::Gpu(GpuError::Kernel { kernels, source }) => FemError::Gpu(GpuError::Kernel {
            kernels: format!("{kernels}, launch {} of {of} ({n} elements)", c + 1),
            source,
        }),
        e => e,
    }
}

/// Appends to `diffs` a line for buffer `name` if `found` differs from `expected` (bytewise):
/// how many entries differ and the first.
fn compare<T: bytemuck::Pod + std::fmt::Debug>(
    name: &str,
    expected: &[T],
    found: &[T],
    diffs: &mut Vec<String>,
) {
    let bytes = |v: &T| bytemuck::bytes_of(v).to_vec();
    if expected.len() != found.len() {
        diffs.push(format!(
            "{name}: {} entries on the GPU, {} expected",
            found.len(),
            expected.len()
        ));
        return;
    }
    let differ: Vec<usize> = (0..expected.len())
        .filter(|&i| bytes(&expected[i]) != bytes(&found[i]))
        .collect();
    if let Some(&i) = differ.first() {
        diffs.push(format!(
            "{name}: {} of {} entries overwritten, the first [{i}] = {:?} (expected {:?})",
            differ.len(),
            expected.len(),
            found[i],
            expected[i]
        ));
    }
}

/// The arguments every single-kernel strategy takes (the kernels' module docs).
pub struct ElementArgs<'a, T> {
    pub coords: &'a CudaSlice<T>,
    pub elements: &'a CudaSlice<u32>,
    pub positions: &'a CudaSlice<u32>,
    pub list: &'a CudaSlice<u32>,
    pub n: u32,
    pub materials: &'a DeviceMaterials<T>,
    pub values: &'a mut CudaSlice<T>,
}

/// Launches a strategy's kernel for `Self` (f32 or f64): the table's typed dispatch.
pub trait ElementKernels: Sized {
    /// # Safety
    /// The kernels' contract (device `fem::kernels` module docs) for `args` under `cfg`.
    unsafe fn launch_strategy(
        strategy: Strategy,
        gpu: &Gpu,
        cfg: LaunchConfig,
        args: ElementArgs<'_, Self>,
    ) -> Result<(), GpuError>;
}

impl Strategy {
    /// Whether this is a node-row strategy (a warp per node, one launch, no zeroing).
    pub fn node_rows(self) -> bool {
        matches!(self, Strategy::Rows | Strategy::RowsRounds)
    }

    /// The strategy named `name` ([`Self::name`]).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Grid for `n` elements: a thread each, a warp each, or (two kernels) a block each.
    pub fn launch_config(self, n: u32) -> crate::runtime::LaunchConfig {
        if self == Strategy::TwoKernel {
            crate::runtime::LaunchConfig {
                grid_dim: (n, 1, 1),
                block_dim: (ENTRIES as u32, 1, 1),
                shared_mem_bytes: 0,
            }
        } else if self.node_rows() {
            // n counts nodes here: a warp each.
            grid_for(n.saturating_mul(crate::device::WARP_SIZE), ROWS_BLOCK)
        } else if self.warp_per_element() {
            grid_for(n.saturating_mul(crate::device::WARP_SIZE), WARP_BLOCK)
        } else {
            grid_for(n, THREAD_BLOCK)
        }
    }
}

/// The element precisions the GPU kernels exist for.
pub trait GpuReal:
    Real
    + DeviceRepr
    + ValidAsZeroBits
    + bytemuck::Pod
    + Default
    + Send
    + Sync
    + ElementKernels
    + BbarKernels
{
    const DOUBLE: bool;
    /// The two-kernel strategy's first kernel: geometry of every element.
    ///
    /// # Safety
    /// `coords`, `elements` as in [`ElementArgs`]; `geometry` holds GEOMETRY_VALUES per element.
    unsafe fn launch_geometry(
        gpu: &Gpu,
        cfg: LaunchConfig,
        args: (&CudaSlice<Self>, &CudaSlice<u32>, u32, &mut CudaSlice<Self>),
    ) -> Result<(), GpuError>;
    /// Its second kernel, per colour: one entry per thread.
    ///
    /// # Safety
    /// `geometry` written by [`Self::launch_geometry`]; the rest as in [`ElementArgs`].
    #[allow(clippy::type_complexity)]
    unsafe fn launch_entries(
        gpu: &Gpu,
        cfg: LaunchConfig,
        args: (
            &CudaSlice<Self>,
            &CudaSlice<u32>,
            &CudaSlice<u32>,
            u32,
            &CudaSlice<Self>,
            &CudaSlice<u32>,
            u32,
            &mut CudaSlice<Self>,
        ),
    ) -> Result<(), GpuError>;
    /// The node-row kernel (`fem_rows_*`).
    ///
    /// # Safety
    /// The kernel's contract (device `fem::kernels::node_rows`) for `args` under `cfg`.
    unsafe fn launch_rows(
        gpu: &Gpu,
        strategy: Strategy,
        cfg: LaunchConfig,
        args: RowArgs<'_, Self>,
    ) -> Result<(), GpuError>;
}

/// The node-row kernel's arguments (device `fem::kernels::node_rows`).
pub struct RowArgs<'a, T> {
    pub coords: &'a CudaSlice<T>,
    pub elements: &'a CudaSlice<u32>,
    pub blocks: &'a CudaSlice<u32>,
    pub node_ptr: &'a CudaSlice<u32>,
    pub node_elements: &'a CudaSlice<u32>,
    pub row_ptr: &'a CudaSlice<u32>,
    pub nodes: u32,
    pub materials: &'a DeviceMaterials<T>,
    pub values: &'a mut CudaSlice<T>,
}

macro_rules! gpu_real {
    ($t:ty, $double:literal, $geo:ident, $ent:ident, $rows:ident, $rounds:ident) => {
        impl GpuReal for $t {
            const DOUBLE: bool = $double;
            unsafe fn launch_geometry(
                gpu: &Gpu,
                cfg: LaunchConfig,
                args: (&CudaSlice<Self>, &CudaSlice<u32>, u32, &mut CudaSlice<Self>),
            ) -> Result<(), GpuError> {
                // SAFETY: forwarded to the caller.
                unsafe { gpu.launch(k::$geo, cfg, args) }
            }
            unsafe fn launch_entries(
                gpu: &Gpu,
                cfg: LaunchConfig,
                args: (
                    &CudaSlice<Self>,
                    &CudaSlice<u32>,
                    &CudaSlice<u32>,
                    u32,
                    &CudaSlice<Self>,
                    &CudaSlice<u32>,
                    u32,
                    &mut CudaSlice<Self>,
                ),
            ) -> Result<(), GpuError> {
                // SAFETY: forwarded to the caller.
                unsafe { gpu.launch(k::$ent, cfg, args) }
            }
            unsafe fn launch_rows(
                gpu: &Gpu,
                strategy: Strategy,
                cfg: LaunchConfig,
                args: RowArgs<'_, Self>,
            ) -> Result<(), GpuError> {
                let RowArgs {
                    coords,
                    elements,
                    blocks,
                    node_ptr,
                    node_elements,
                    row_ptr,
                    nodes,
                    materials: m,
                    values,
                } = args;
                let args = (
                    coords,
                    elements,
                    blocks,
                    node_ptr,
                    node_elements,
                    row_ptr,
                    nodes,
                    &m.lames,
                    &m.index,
                    m.count,
                    values,
                );
                // SAFETY: forwarded to the caller.
                unsafe {
                    if strategy == Strategy::RowsRounds {
                        gpu.launch(k::$rounds, cfg, args)
                    } else {
                        gpu.launch(k::$rows, cfg, args)
                    }
                }
            }
        }
    };
}
gpu_real!(
    f32,
    false,
    fem_geometry_f32,
    fem_entries_f32,
    fem_rows_f32,
    fem_rows_rounds_f32
);
gpu_real!(
    f64,
    true,
    fem_geometry_f64,
    fem_entries_f64,
    fem_rows_f64,
    fem_rows_rounds_f64
);

/// A mesh on the GPU with its colouring and CSR positions.
pub struct GpuMesh<T> {
    coords: CudaSlice<T>,
    elements: CudaSlice<u32>,
    positions: CudaSlice<u32>,
    /// Per element, [`BLOCK_TABLE`] values: the CSR position of entry (3a, 3b) for each node
    /// pair (a, b) at 8a + b, then the row length of each node a's rows at 64 + a.
    blocks: CudaSlice<u32>,
    /// The two-kernel strategy's per-element geometry, allocated on first use.
    geometry: std::cell::RefCell<Option<CudaSlice<T>>>,
    /// Per colour, its element list; `all` lists every element (atomic strategies).
    colours: Vec<(CudaSlice<u32>, u32)>,
    all: (CudaSlice<u32>, u32),
    /// The node-row strategy's inputs ([`node_adjacency`], the CSR row pointers).
    node_ptr: CudaSlice<u32>,
    node_elements: CudaSlice<u32>,
    row_ptr: CudaSlice<u32>,
    nodes: u32,
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
        let nodes = u32::try_from(mesh.nodes.len())
            .ok()
            .filter(|&v| v <= u32::MAX / crate::device::WARP_SIZE)
            .ok_or_else(|| {
                FemError::MeshSize(format!(
                    "{} nodes: the node-row kernels handle at most {}",
                    mesh.nodes.len(),
                    u32::MAX / crate::device::WARP_SIZE
                ))
            })?;
        let (node_ptr, node_elements) = node_adjacency(mesh)?;
        Ok(GpuMesh {
            coords: gpu.upload(&coords)?,
            elements: gpu.upload(bytemuck::cast_slice::<[u32; 8], u32>(&mesh.elements))?,
            positions: gpu.upload(&pattern.positions)?,
            blocks: gpu.upload(&block_table(pattern, mesh.elements.len()))?,
            geometry: std::cell::RefCell::new(None),
            colours,
            all: (gpu.upload(&all)?, n),
            node_ptr: gpu.upload(&node_ptr)?,
            node_elements: gpu.upload(&node_elements)?,
            row_ptr: gpu.upload(&pattern.row_ptr)?,
            nodes,
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
        let materials = DeviceMaterials::uniform(gpu, material)?;
        self.assemble_with(gpu, strategy, Formulation::Standard, &materials, values)
    }

    /// [`Self::assemble`] with a material per element and either formulation (B-bar: the
    /// strategies of [`Strategy::BBAR`], else [`FemError::NoBbarKernel`]).
    pub fn assemble_with(
        &self,
        gpu: &Gpu,
        strategy: Strategy,
        formulation: Formulation,
        materials: &DeviceMaterials<T>,
        values: &mut CudaSlice<T>,
    ) -> Result<(), FemError> {
        if formulation == Formulation::Bbar && !strategy.has_bbar() {
            return Err(FemError::NoBbarKernel(strategy.name()));
        }
        if let Some(m) = materials.elements()
            && m != self.all.1 as usize
        {
            return Err(FemError::MeshSize(format!(
                "{m} element materials for {} elements",
                self.all.1
            )));
        }
        if values.len() < self.nnz {
            return Err(FemError::MeshSize(format!(
                "values buffer has {} entries, the pattern {}",
                values.len(),
                self.nnz
            )));
        }
        if strategy.node_rows() {
            // Writes every value of every row itself: no zeroing.
            let args = RowArgs {
                coords: &self.coords,
                elements: &self.elements,
                blocks: &self.blocks,
                node_ptr: &self.node_ptr,
                node_elements: &self.node_elements,
                row_ptr: &self.row_ptr,
                nodes: self.nodes,
                materials,
                values,
            };
            // SAFETY: `node_rows`'s contract: node_ptr/node_elements from `node_adjacency` of
            // this mesh (entries 8 e + a with elements[e][a] = the node), the block table and
            // row pointers of this mesh's pattern (positions < nnz ≤ values.len(), checked
            // above), the material table as for the other strategies; a warp per node.
            unsafe {
                T::launch_rows(gpu, strategy, strategy.launch_config(self.nodes), args)?;
            }
            return Ok(());
        }
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
            return self.assemble_two_kernels(gpu, materials, values);
        }
        for (c, (list, n)) in launches.iter().enumerate() {
            if *n == 0 {
                continue;
            }
            let args = ElementArgs {
                coords: &self.coords,
                elements: &self.elements,
                positions,
                list,
                n: *n,
                materials,
                values: &mut *values,
            };
            let cfg = strategy.launch_config(*n);
            // SAFETY: the kernels' contract (device fem::kernels module docs): coords hold 3
            // values per node, elements 8 valid node indices per element, positions 576 entries
            // < nnz per element, list n element indices; values has ≥ nnz entries (checked
            // above); coloured strategies only get colour lists, whose elements share no node;
            // the material table holds `count` entries and, with several, an index < count per
            // element (checked at upload and above).
            let launched = unsafe {
                match formulation {
                    Formulation::Standard => {
                        T::launch_strategy(strategy, gpu, cfg, args).map_err(FemError::from)
                    }
                    Formulation::Bbar => T::launch_bbar(strategy, gpu, cfg, args),
                }
            };
            launched.map_err(|e| at_launch(e, c, launches.len(), *n))?;
        }
        Ok(())
    }

    /// Downloads every buffer the kernels read and compares it with what [`Self::upload`] sent
    /// for `mesh`, `colouring` and `pattern`: one line per buffer that differs (its name, how
    /// many entries differ, the first with its expected and found value), none when all match.
    /// For tests chasing a stray write into a kernel's inputs, which the memory checker cannot
    /// see when it lands inside another live allocation.
    pub fn check_inputs(
        &self,
        gpu: &Gpu,
        mesh: &Mesh,
        colouring: &Colouring,
        pattern: &Pattern,
    ) -> Result<Vec<String>, GpuError>
    where
        T: std::fmt::Debug,
    {
        let coords: Vec<T> = mesh
            .nodes
            .iter()
            .flatten()
            .map(|&v| T::from_f64(v))
            .collect();
        let all: Vec<u32> = (0..self.all.1).collect();
        let mut diffs = Vec::new();
        compare("coords", &coords, &gpu.download(&self.coords)?, &mut diffs);
        compare(
            "elements",
            bytemuck::cast_slice::<[u32; 8], u32>(&mesh.elements),
            &gpu.download(&self.elements)?,
            &mut diffs,
        );
        compare(
            "positions",
            &pattern.positions,
            &gpu.download(&self.positions)?,
            &mut diffs,
        );
        compare(
            "block table",
            &block_table(pattern, mesh.elements.len()),
            &gpu.download(&self.blocks)?,
            &mut diffs,
        );
        for (c, (group, (list, n))) in colouring.groups.iter().zip(&self.colours).enumerate() {
            compare(
                &format!("colour {c} list"),
                group,
                &gpu.download(list)?,
                &mut diffs,
            );
            if *n as usize != group.len() {
                diffs.push(format!("colour {c}: n = {n}, the list {}", group.len()));
            }
        }
        compare(
            "all-elements list",
            &all,
            &gpu.download(&self.all.0)?,
            &mut diffs,
        );
        if let Ok((ptr, adj)) = node_adjacency(mesh) {
            compare(
                "node pointers",
                &ptr,
                &gpu.download(&self.node_ptr)?,
                &mut diffs,
            );
            compare(
                "node elements",
                &adj,
                &gpu.download(&self.node_elements)?,
                &mut diffs,
            );
        }
        compare(
            "row pointers",
            &pattern.row_ptr,
            &gpu.download(&self.row_ptr)?,
            &mut diffs,
        );
        Ok(diffs)
    }

    /// The two-kernel strategy: geometry of every element, then entries colour by colour.
    fn assemble_two_kernels(
        &self,
        gpu: &Gpu,
        materials: &DeviceMaterials<T>,
        values: &mut CudaSlice<T>,
    ) -> Result<(), FemError> {
        let n = self.all.1;
        let mut slot = self.geometry.borrow_mut();
        if slot.is_none() {
            *slot = Some(gpu.alloc_zeros::<T>(n as usize * GEOMETRY_VALUES)?);
        }
        let geometry = slot.as_mut().expect("allocated above");
        // SAFETY: coords and elements as in `assemble`; geometry holds GEOMETRY_VALUES per
        // element; one thread per (element, Gauss point), n ≤ u32::MAX / 32 (checked at upload).
        unsafe {
            let args = (&self.coords, &self.elements, n, &mut *geometry);
            T::launch_geometry(gpu, grid_for(n * 8, THREAD_BLOCK), args)?;
        }
        for (list, n) in &self.colours {
            if *n == 0 {
                continue;
            }
            // SAFETY: geometry was written above for every element; positions hold 576 entries
            // < nnz per element; a colour's elements share no node; values ≥ nnz entries.
            unsafe {
                let args = (
                    &*geometry,
                    &self.positions,
                    list,
                    *n,
                    &materials.lames,
                    &materials.index,
                    materials.count,
                    &mut *values,
                );
                T::launch_entries(gpu, Strategy::TwoKernel.launch_config(*n), args)?;
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
        let materials = DeviceMaterials::uniform(gpu, material)?;
        self.assemble_timed_with(gpu, strategy, Formulation::Standard, &materials, values)
    }

    /// [`Self::assemble_with`] between CUDA events (the materials uploaded before).
    pub fn assemble_timed_with(
        &self,
        gpu: &Gpu,
        strategy: Strategy,
        formulation: Formulation,
        materials: &DeviceMaterials<T>,
        values: &mut CudaSlice<T>,
    ) -> Result<f64, FemError> {
        let mut inner = Ok(());
        let ((), ms) = gpu.time(|| {
            inner = self.assemble_with(gpu, strategy, formulation, materials, values);
            Ok(())
        })?;
        inner.map(|()| ms)
    }
}
