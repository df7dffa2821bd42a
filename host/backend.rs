//! Choosing where work runs: the GPU when one is usable, else the CPU backend (rayon) with one
//! clear line saying why.

use crate::runtime::{Gpu, GpuError};
use std::sync::Arc;

/// `--backend`: what the user asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, crate::choice::Choice)]
pub enum BackendChoice {
    /// The GPU when one is usable, else the CPU with a notice.
    #[default]
    Auto,
    /// The GPU, or an error.
    Gpu,
    /// The CPU backend, without probing for a GPU.
    Cpu,
}

/// Where work runs.
#[derive(Clone)]
pub enum Backend {
    Gpu(Arc<Gpu>),
    Cpu,
}

impl Backend {
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Gpu(_) => "gpu",
            Backend::Cpu => "cpu",
        }
    }

    /// Whether work runs on the GPU (for per-backend defaults and labels; the capabilities'
    /// façades do the dispatch).
    pub fn is_gpu(&self) -> bool {
        matches!(self, Backend::Gpu(_))
    }

    /// Free and total device memory in bytes on the GPU; `None` on the CPU backend.
    pub fn device_memory(&self) -> Result<Option<(usize, usize)>, GpuError> {
        self.gpu().map(|g| g.memory()).transpose()
    }

    pub fn gpu(&self) -> Option<&Arc<Gpu>> {
        match self {
            Backend::Gpu(g) => Some(g),
            Backend::Cpu => None,
        }
    }
}

/// The backend for `choice`, with a notice when `Auto` fell back to the CPU. Only an explicit
/// `Gpu` request turns a missing GPU into an error.
pub fn select(choice: BackendChoice) -> Result<(Backend, Option<String>), GpuError> {
    match choice {
        BackendChoice::Cpu => Ok((Backend::Cpu, None)),
        BackendChoice::Gpu => Ok((Backend::Gpu(Arc::new(Gpu::new(0)?)), None)),
        BackendChoice::Auto => match Gpu::new(0) {
            Ok(gpu) => Ok((Backend::Gpu(Arc::new(gpu)), None)),
            Err(e) => Ok((
                Backend::Cpu,
                Some(format!("no usable CUDA GPU ({e}); using the CPU backend")),
            )),
        },
    }
}

/// When `need` bytes exceed the host's available memory: "about N MiB of memory; M MiB are
/// available", for a message that names what needs them.
pub fn memory_shortfall(need: usize) -> Option<String> {
    available_memory()
        .filter(|&avail| need > avail)
        .map(|avail| {
            format!(
                "about {} MiB of memory; {} MiB are available",
                need >> 20,
                avail >> 20
            )
        })
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
pub fn available_memory() -> Option<usize> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = s.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
