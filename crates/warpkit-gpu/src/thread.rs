//! Thread, block and grid indices, and the block barrier.
//!
//! Indices are special registers (`%tid`, `%ctaid`, `%ntid`, `%nctaid`, `%laneid`) read with `mov`.
#[cfg(target_arch = "nvptx64")]
use core::arch::asm;
#[cfg(target_arch = "nvptx64")]
use core::arch::nvptx;
use warpkit_macros::gpu_only;

/// `threadIdx.x`: `mov.u32 %r, %tid.x`.
#[gpu_only]
#[inline(always)]
pub fn thread_idx_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_thread_idx_x() as u32 }
}
/// `threadIdx.y`: `mov.u32 %r, %tid.y`.
#[gpu_only]
#[inline(always)]
pub fn thread_idx_y() -> u32 {
    // SAFETY: as above.
    unsafe { nvptx::_thread_idx_y() as u32 }
}
/// `blockIdx.x`: `mov.u32 %r, %ctaid.x`.
#[gpu_only]
#[inline(always)]
pub fn block_idx_x() -> u32 {
    // SAFETY: as above.
    unsafe { nvptx::_block_idx_x() as u32 }
}
/// `blockDim.x`: `mov.u32 %r, %ntid.x`.
#[gpu_only]
#[inline(always)]
pub fn block_dim_x() -> u32 {
    // SAFETY: as above.
    unsafe { nvptx::_block_dim_x() as u32 }
}
/// `gridDim.x`: `mov.u32 %r, %nctaid.x`.
#[gpu_only]
#[inline(always)]
pub fn grid_dim_x() -> u32 {
    // SAFETY: as above.
    unsafe { nvptx::_grid_dim_x() as u32 }
}

/// This thread's index in a 1-D grid: `blockIdx.x * blockDim.x + threadIdx.x` (`mad.lo.s32`).
#[inline(always)]
pub fn index_1d() -> u32 {
    block_idx_x() * block_dim_x() + thread_idx_x()
}

/// Threads in the whole 1-D grid: the stride of a grid-stride loop.
#[inline(always)]
pub fn grid_size_1d() -> u32 {
    grid_dim_x() * block_dim_x()
}

/// This thread's lane within its warp, 0..32: `mov.u32 %r, %laneid`.
#[gpu_only]
#[inline(always)]
pub fn lane_id() -> u32 {
    let lane: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {l}, %laneid;", l = out(reg32) lane, options(pure, nomem, nostack)) };
    lane
}

/// Lanes below this one: `mov.u32 %r, %lanemask_lt` (bit k set for k < lane), for ballot-based
/// prefix sums.
///
/// Not `pure`: read where it is called. As a pure value the backend sank it into the tree walk's
/// loop, an `S2R` per step (the walk's group kernel measured 2.5% slower on the H200).
#[gpu_only]
#[inline(always)]
pub fn lanemask_lt() -> u32 {
    let m: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {m}, %lanemask_lt;", m = out(reg32) m, options(nomem, nostack)) };
    m
}

/// This warp's index within its block (1-D blocks): `threadIdx.x / 32`.
#[inline(always)]
pub fn warp_idx() -> u32 {
    thread_idx_x() / crate::WARP_SIZE
}

/// `__syncthreads()`: `bar.sync 0`. Every thread of the block waits here until all arrive, and
/// their shared- and global-memory writes before it are visible to the block after it.
///
/// # Safety
/// Every non-exited thread of the block must reach the same barrier (no divergent call), or the
/// block deadlocks or behaves undefined.
#[gpu_only]
#[inline(always)]
pub unsafe fn sync_threads() {
    // SAFETY: the caller upholds block-uniform control flow.
    unsafe { nvptx::_syncthreads() }
}

/// Ends the whole grid with an error (`trap`): the host's next synchronisation reports a launch
/// failure naming the kernel. For invariants the host should have made impossible.
#[gpu_only]
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` has no preconditions.
    unsafe { nvptx::trap() }
}
