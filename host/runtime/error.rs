//! The runtime's one error type: each variant is one step that can fail, with its context.

use cudarc::driver::DriverError;

/// Everything that can go wrong between finding a GPU and reading a kernel's results back.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// libcuda could not be loaded, or lacks symbols warpkit needs.
    #[error("no usable CUDA driver: {0}")]
    NoDriver(String),
    /// `cuInit` failed (no device node, driver/kernel-module mismatch, ...).
    #[error("the CUDA driver failed to initialise: {0}")]
    Init(DriverError),
    /// The driver works but sees no device (or not the one asked for).
    #[error("no CUDA device {ordinal} (the driver sees {count})")]
    NoDevice { ordinal: usize, count: usize },
    /// The driver is older than the PTX ISA in the embedded module needs.
    #[error(
        "CUDA driver {found} is too old: the embedded PTX (ISA {ptx_isa}) needs a driver for CUDA {needed} or newer"
    )]
    DriverTooOld {
        found: String,
        needed: String,
        ptx_isa: String,
    },
    /// The embedded PTX targets a newer architecture than the device has.
    #[error(
        "the embedded PTX targets {ptx_arch} but {device} is sm_{cc}; rebuild with WARPKIT_CUDA_ARCH=sm_{cc}"
    )]
    ArchTooNew {
        ptx_arch: String,
        device: String,
        cc: u32,
    },
    /// The module's register limits (`WARPKIT_MAXNREG`) are malformed.
    #[error("{0}")]
    Config(String),
    /// The driver rejected the PTX module.
    #[error("loading the PTX module ({arch}) failed: {source}")]
    LoadModule {
        arch: &'static str,
        source: DriverError,
    },
    /// A kernel name is not in the module.
    #[error("kernel `{kernel}` is not in the PTX module: {source}")]
    MissingKernel { kernel: String, source: DriverError },
    /// The launch itself was refused (bad configuration, too many resources, ...).
    #[error("launching kernel `{kernel}` failed: {source}")]
    Launch {
        kernel: &'static str,
        source: DriverError,
    },
    /// A kernel failed while running (trap, illegal address, ...), found at the next
    /// synchronisation. Lists every kernel launched since the last good synchronisation, in order:
    /// the failing one is among them (set `WARPKIT_SYNC_LAUNCHES=1` to synchronise after each).
    #[error("kernel `{kernels}` failed on the device: {source}")]
    Kernel {
        kernels: String,
        source: DriverError,
    },
    /// A launch shape or buffer that does not fit the kernel's contract, caught before launching.
    #[error("invalid launch of `{kernel}`: {reason}")]
    InvalidLaunch {
        kernel: &'static str,
        reason: String,
    },
    /// Any other driver call (allocation, copy, event), named by what it was doing.
    #[error("CUDA {op} failed: {source}")]
    Driver {
        op: &'static str,
        source: DriverError,
    },
}

/// `result.map_err(op("allocating positions"))`.
pub(crate) fn op(op: &'static str) -> impl FnOnce(DriverError) -> GpuError {
    move |source| GpuError::Driver { op, source }
}
