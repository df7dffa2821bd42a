//! The GPU runtime: one device, one stream, the embedded PTX module, typed launches that name their
//! kernel on failure, and CUDA-event timing.
//!
//! ```no_run
//! use warpkit::device::selftest::kernels::probe_math;
//! use warpkit::runtime::{Gpu, LaunchConfig};
//! let gpu = Gpu::new(0)?;                                   // probe, context, stream, module
//! let x = gpu.upload(&[1.0f32, 2.0])?;
//! let mut out = gpu.alloc_poisoned::<f32>(8)?;               // NaN until the kernel writes
//! let n = 2u32;
//! // The tuple must match probe_math's parameters (x: *const f32, out: *mut f32, n: u32) in
//! // number, order, type and mutability, or this does not compile.
//! // SAFETY: probe_math reads x[0..n] and writes out[0..4n].
//! unsafe { gpu.launch(probe_math, LaunchConfig::for_num_elems(n), (&x, &mut out, n))? };
//! let host = gpu.download(&out)?;                           // synchronises, names a failed kernel
//! # Ok::<(), warpkit::runtime::GpuError>(())
//! ```
//!
//! Kernels of another crate's PTX (built with `warpkit-build`) load with [`Gpu::load_module`] and
//! launch the same way through [`Module::launch`].
//!
//! On thread safety: a [`Gpu`] is `Send + Sync`; launches from several threads go to its one stream
//! in call order.

mod args;
mod error;
pub mod probe;

pub use args::{KernelArg, KernelArgs, Null, View, ViewMut};
pub use cudarc::driver::{
    CudaSlice, CudaView, CudaViewMut, DeviceRepr, LaunchConfig, ValidAsZeroBits,
};
pub use error::GpuError;
pub use warpkit_gpu::Kernel;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, DevicePtrMut};
use error::op;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The oldest driver warpkit runs on: the cudarc bindings are built for the CUDA 12.0 API.
const MIN_DRIVER: i32 = 12000;

/// What `warpkit info` prints about a device.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    /// (major, minor), e.g. (9, 0) for Hopper.
    pub compute_capability: (u32, u32),
    pub multiprocessors: u32,
    pub total_memory: usize,
    pub l2_bytes: u32,
    pub clock_mhz: u32,
    /// `cuDriverGetVersion`, e.g. 13000.
    pub driver_version: i32,
    /// The embedded module's target.
    pub ptx_arch: &'static str,
}

/// Registers and memory that ptxas/JIT assigned to a kernel (`cuFuncGetAttribute`).
#[derive(Clone, Copy, Debug)]
pub struct KernelAttributes {
    pub registers: i32,
    pub local_bytes: i32,
    pub static_shared_bytes: i32,
    pub max_threads_per_block: i32,
}

/// A loaded PTX module and the functions looked up in it so far (by entry name, once each).
pub struct Module {
    module: Arc<CudaModule>,
    functions: Mutex<HashMap<&'static str, CudaFunction>>,
}

impl Module {
    fn new(module: Arc<CudaModule>) -> Self {
        Module {
            module,
            functions: Mutex::new(HashMap::new()),
        }
    }

    /// The function behind entry `name`, looked up once.
    fn function(&self, name: &'static str) -> Result<CudaFunction, GpuError> {
        let mut f = self.functions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(func) = f.get(name) {
            return Ok(func.clone());
        }
        let func = self
            .module
            .load_function(name)
            .map_err(|source| GpuError::MissingKernel {
                kernel: name.into(),
                source,
            })?;
        f.insert(name, func.clone());
        Ok(func)
    }

    /// Queues kernel `k` from this module on `gpu`'s stream with arguments `args`, one per
    /// parameter of `k`'s contract (see [`Gpu::launch`]).
    ///
    /// # Safety
    /// As [`Gpu::launch`].
    pub unsafe fn launch<K: Kernel, A: KernelArgs<K::Params>>(
        &self,
        gpu: &Gpu,
        _k: K,
        cfg: LaunchConfig,
        mut args: A,
    ) -> Result<(), GpuError> {
        let name = K::NAME;
        if cfg.grid_dim.0 == 0 || cfg.block_dim.0 == 0 {
            return Err(GpuError::InvalidLaunch {
                kernel: name,
                reason: "empty grid or block".into(),
            });
        }
        if let Some(b) = K::LAUNCH_BOUNDS {
            let threads = cfg.block_dim.0 * cfg.block_dim.1 * cfg.block_dim.2;
            if threads > b.max_threads {
                return Err(GpuError::InvalidLaunch {
                    kernel: name,
                    reason: format!(
                        "{threads} threads per block; its launch bounds allow {}",
                        b.max_threads
                    ),
                });
            }
        }
        let func = self.function(name)?;
        let mut builder = gpu.stream.launch_builder(&func);
        args.push_all(&mut builder);
        // SAFETY: forwarded to the caller; the arguments match the contract's types.
        unsafe { builder.launch(cfg) }.map_err(|source| GpuError::Launch {
            kernel: name,
            source,
        })?;
        gpu.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(name);
        if gpu.sync_each {
            gpu.sync()?;
        }
        Ok(())
    }

    /// The largest grid of `block`-thread blocks of `k` that is resident at once (every SM filled
    /// to its occupancy limit), for kernels whose threads wait on each other.
    pub fn resident_grid<K: Kernel>(
        &self,
        gpu: &Gpu,
        _k: K,
        block: u32,
    ) -> Result<LaunchConfig, GpuError> {
        let per_sm = self
            .function(K::NAME)?
            .occupancy_max_active_blocks_per_multiprocessor(block, 0, None)
            .map_err(op("querying occupancy"))?;
        if per_sm == 0 {
            return Err(GpuError::InvalidLaunch {
                kernel: K::NAME,
                reason: format!("a {block}-thread block does not fit on one SM"),
            });
        }
        Ok(LaunchConfig {
            grid_dim: (per_sm * gpu.info.multiprocessors, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        })
    }

    /// Registers and memory of entry `name` (e.g. from [`crate::kernel_names`]).
    pub fn attributes(&self, name: &'static str) -> Result<KernelAttributes, GpuError> {
        let f = self.function(name)?;
        let get = |r: Result<i32, _>| r.map_err(op("reading kernel attributes"));
        Ok(KernelAttributes {
            registers: get(f.num_regs())?,
            local_bytes: get(f.local_size_bytes())?,
            static_shared_bytes: get(f.shared_size_bytes())?,
            max_threads_per_block: get(f.max_threads_per_block())?,
        })
    }
}

/// One CUDA device with warpkit's module loaded.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    module: Module,
    info: DeviceInfo,
    /// Kernels launched since the last successful synchronisation, for naming a failure.
    pending: Mutex<Vec<&'static str>>,
    /// `WARPKIT_SYNC_LAUNCHES=1`: synchronise after every launch (exact blame, slower).
    sync_each: bool,
}

impl Gpu {
    /// Probes the driver, checks versions and architecture, creates the context and loads the
    /// embedded PTX. Never panics: a machine without CUDA gets [`GpuError::NoDriver`].
    pub fn new(ordinal: usize) -> Result<Self, GpuError> {
        let driver = probe::driver()?;
        if ordinal >= driver.device_count {
            return Err(GpuError::NoDevice {
                ordinal,
                count: driver.device_count,
            });
        }
        let (isa_major, isa_minor) = probe::ptx_isa(crate::PTX).unwrap_or((7, 8));
        let needed = probe::cuda_for_ptx_isa(isa_major, isa_minor).max(MIN_DRIVER);
        if driver.version < needed {
            return Err(GpuError::DriverTooOld {
                found: probe::version_string(driver.version),
                needed: probe::version_string(needed),
                ptx_isa: format!("{isa_major}.{isa_minor}"),
            });
        }
        probe::guarded(|| Self::open(ordinal, driver.version))
    }

    fn open(ordinal: usize, driver_version: i32) -> Result<Self, GpuError> {
        use cudarc::driver::sys::CUdevice_attribute as A;
        let ctx = CudaContext::new(ordinal).map_err(GpuError::Init)?;
        let attr = |a| {
            ctx.attribute(a)
                .map(|v| v.max(0) as u32)
                .map_err(op("reading device attributes"))
        };
        let (major, minor) = ctx
            .compute_capability()
            .map_err(op("reading compute capability"))?;
        let info = DeviceInfo {
            ordinal,
            name: ctx.name().map_err(op("reading the device name"))?,
            compute_capability: (major as u32, minor as u32),
            multiprocessors: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            total_memory: ctx.total_mem().map_err(op("reading device memory"))?,
            l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            clock_mhz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? / 1000,
            driver_version,
            ptx_arch: crate::PTX_ARCH,
        };
        let cc = info.compute_capability.0 * 10 + info.compute_capability.1;
        if probe::arch_number(crate::PTX_ARCH).is_some_and(|a| a > cc) {
            return Err(GpuError::ArchTooNew {
                ptx_arch: crate::PTX_ARCH.into(),
                device: info.name.clone(),
                cc,
            });
        }
        let ptx = crate::module_ptx().map_err(GpuError::Config)?;
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
            .map_err(|source| GpuError::LoadModule {
                arch: crate::PTX_ARCH,
                source,
            })?;
        let stream = ctx.default_stream();
        let sync_each = std::env::var("WARPKIT_SYNC_LAUNCHES").is_ok_and(|v| v == "1");
        Ok(Gpu {
            ctx,
            stream,
            module: Module::new(module),
            info,
            pending: Mutex::new(Vec::new()),
            sync_each,
        })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The device address of `buf` as a pointer for a kernel view ([`View`]): never dereferenced
    /// on the host.
    pub fn addr<T>(&self, buf: &CudaSlice<T>) -> *const T {
        use cudarc::driver::DevicePtr;
        // One stream: nothing to record for other streams.
        let (ptr, _record) = buf.device_ptr(&self.stream);
        ptr as usize as *const T
    }

    /// [`Self::addr`] of a buffer the kernel writes.
    pub fn addr_mut<T>(&self, buf: &mut CudaSlice<T>) -> *mut T {
        let (ptr, _record) = buf.device_ptr_mut(&self.stream);
        ptr as usize as *mut T
    }

    /// warpkit's own module (the embedded PTX).
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// Loads another PTX module (another crate's kernels, built with `warpkit-build`) into this
    /// GPU's context; launch its kernels with [`Module::launch`].
    pub fn load_module(&self, ptx: &str) -> Result<Module, GpuError> {
        let module = probe::guarded(|| {
            self.ctx
                .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
                .map_err(|source| GpuError::LoadModule {
                    arch: crate::PTX_ARCH,
                    source,
                })
        })?;
        Ok(Module::new(module))
    }

    /// Queues kernel `k` of warpkit's module on this GPU's stream with `args`, a tuple with one
    /// argument per parameter of `k`'s contract, in order: `&CudaSlice<T>` for a `*const T`,
    /// `&mut CudaSlice<T>` for a `*mut T`, the value for a by-value parameter ([`KernelArg`]).
    /// Anything else does not compile. Launch refusals are returned at once; failures while
    /// running surface at the next [`Gpu::sync`] (or here, with `WARPKIT_SYNC_LAUNCHES=1`),
    /// naming this kernel.
    ///
    /// # Safety
    /// Every buffer must be large enough for what the kernel reads and writes under `cfg`, as the
    /// kernel's doc states; the types are checked, the lengths cannot be.
    pub unsafe fn launch<K: Kernel, A: KernelArgs<K::Params>>(
        &self,
        k: K,
        cfg: LaunchConfig,
        args: A,
    ) -> Result<(), GpuError> {
        // SAFETY: forwarded to the caller.
        unsafe { self.module.launch(self, k, cfg, args) }
    }

    /// [`Module::resident_grid`] for a kernel of warpkit's module.
    pub fn resident_grid<K: Kernel>(&self, k: K, block: u32) -> Result<LaunchConfig, GpuError> {
        self.module.resident_grid(self, k, block)
    }

    /// Waits for all queued work. A kernel that failed is reported with the names of the kernels
    /// launched since the last good synchronisation.
    pub fn sync(&self) -> Result<(), GpuError> {
        let r = self.stream.synchronize();
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let kernels = pending.join("`, `");
        pending.clear();
        r.map_err(|source| {
            if kernels.is_empty() {
                GpuError::Driver {
                    op: "synchronising the stream",
                    source,
                }
            } else {
                GpuError::Kernel { kernels, source }
            }
        })
    }

    /// Copies host data to a new device buffer.
    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<CudaSlice<T>, GpuError> {
        self.stream
            .clone_htod(data)
            .map_err(op("copying to the device"))
    }

    /// Copies host data into the start of an existing device buffer (no allocation).
    pub fn upload_into<T: DeviceRepr>(
        &self,
        data: &[T],
        dst: &mut CudaSlice<T>,
    ) -> Result<(), GpuError> {
        if dst.len() < data.len() {
            return Err(GpuError::Config(format!(
                "upload of {} values into a buffer of {}",
                data.len(),
                dst.len()
            )));
        }
        self.stream
            .memcpy_htod(data, dst)
            .map_err(op("copying to the device"))
    }

    /// A zeroed device buffer.
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<CudaSlice<T>, GpuError> {
        self.stream
            .alloc_zeros(len)
            .map_err(op("allocating device memory"))
    }

    /// Sets every element of `buf` to zero (queued on the stream).
    pub fn zero<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        buf: &mut CudaSlice<T>,
    ) -> Result<(), GpuError> {
        self.stream
            .memset_zeros(buf)
            .map_err(op("zeroing device memory"))
    }

    /// A device buffer with every byte 0xFF (NaN for floats, `u32::MAX` / -1 for integers), so an
    /// element a kernel forgot to write stands out.
    pub fn alloc_poisoned<T: DeviceRepr>(&self, len: usize) -> Result<CudaSlice<T>, GpuError> {
        // SAFETY: every byte is set below before the buffer is handed out.
        let mut buf =
            unsafe { self.stream.alloc::<T>(len) }.map_err(op("allocating device memory"))?;
        let num_bytes = buf.num_bytes();
        let (ptr, _record) = buf.device_ptr_mut(&self.stream);
        // SAFETY: sets exactly the buffer's bytes, on the stream that owns it.
        unsafe {
            cudarc::driver::result::memset_d8_async(ptr, 0xff, num_bytes, self.stream.cu_stream())
        }
        .map_err(op("poisoning device memory"))?;
        drop(_record);
        Ok(buf)
    }

    /// Copies all of `src` into the start of `dst`, device to device (queued on the stream): e.g.
    /// between [`Gpu::time`]'s events, to measure the copy bandwidth of this device.
    pub fn copy<T: DeviceRepr>(
        &self,
        src: &CudaSlice<T>,
        dst: &mut CudaSlice<T>,
    ) -> Result<(), GpuError> {
        if dst.len() < src.len() {
            return Err(GpuError::Config(format!(
                "device copy of {} values into a buffer of {}",
                src.len(),
                dst.len()
            )));
        }
        self.stream
            .memcpy_dtod(src, dst)
            .map_err(op("copying device memory"))
    }

    /// Free and total device memory in bytes.
    pub fn memory(&self) -> Result<(usize, usize), GpuError> {
        self.ctx.mem_get_info().map_err(op("reading free memory"))
    }

    /// Synchronises (reporting any failed kernel by name), then copies a device buffer back.
    pub fn download<T: DeviceRepr>(&self, buf: &CudaSlice<T>) -> Result<Vec<T>, GpuError> {
        self.sync()?;
        self.stream
            .clone_dtoh(buf)
            .map_err(op("copying from the device"))
    }

    /// Runs `f` (which queues work on this GPU's stream) between two CUDA events and returns its
    /// result with the elapsed GPU time in milliseconds. Synchronises at the end.
    pub fn time<T>(&self, f: impl FnOnce() -> Result<T, GpuError>) -> Result<(T, f64), GpuError> {
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self
            .stream
            .record_event(timing)
            .map_err(op("recording an event"))?;
        let out = f()?;
        let end = self
            .stream
            .record_event(timing)
            .map_err(op("recording an event"))?;
        self.sync()?;
        let ms = start.elapsed_ms(&end).map_err(op("reading event times"))?;
        Ok((out, ms as f64))
    }
}

/// `ceil(n / block)` blocks of `block` threads.
pub fn grid_for(n: u32, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(block).max(1), 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}
