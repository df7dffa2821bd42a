//! Memory fences. A fence orders this thread's earlier memory accesses before its later ones as
//! seen by the named scope; it waits for nothing else (no barrier).

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;
use warpkit_macros::gpu_only;

/// `__threadfence_block()`: `membar.cta` (on sm_70+ the same as `fence.sc.cta`).
#[gpu_only]
#[inline(always)]
pub fn fence_block() {
    // SAFETY: a fence has no preconditions.
    unsafe { asm!("membar.cta;", options(nostack)) }
}

/// `__threadfence()`: `membar.gl` (on sm_70+ the same as `fence.sc.gpu`). Needed between writing a result and
/// publishing it through an atomic that another block will read.
#[gpu_only]
#[inline(always)]
pub fn fence_device() {
    // SAFETY: a fence has no preconditions.
    unsafe { asm!("membar.gl;", options(nostack)) }
}

/// `fence.acq_rel.gpu`: orders like [`fence_device`] for release/acquire patterns (a lock taken
/// by an atomic, data published by a store) without the sequentially consistent fence's cost.
#[gpu_only]
#[inline(always)]
pub fn fence_acq_rel_device() {
    // SAFETY: a fence has no preconditions.
    unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) }
}

/// `__threadfence_system()`: `membar.sys`, also ordering against the host and peer devices.
#[gpu_only]
#[inline(always)]
pub fn fence_system() {
    // SAFETY: a fence has no preconditions.
    unsafe { asm!("membar.sys;", options(nostack)) }
}
