//! warpkit's device layer: what `cuda_std` would have been, on rustc's NVPTX backend.
//!
//! CUDA's model in brief: a launch runs a *grid* of *blocks* (CTAs); a block's threads share fast
//! on-chip memory and can meet at [`thread::sync_threads`]; the block runs as *warps* of
//! [`crate::WARP_SIZE`] lanes that vote and exchange registers without memory ([`warp`]). Threads of
//! different blocks meet only through global memory, [`atomic`]s and [`fence`]s.
//!
//! Every wrapper is `#[inline(always)]` and documents the PTX it emits, so a reader of the PTX
//! finds each instruction's origin, and each `unsafe` one states its contract under `# Safety`.
//! Every `asm!` of warpkit lives in this crate.
//!
//! The layer compiles for the host too, so a device crate's kernels (kept on the host by
//! [`macro@kernel`] for type checking) and its formulas build there: the intrinsics are
//! [`macro@gpu_only`] — on the host they panic with their name — while [`math`] computes the same
//! functions with `std`.
//!
//! A kernel is written once with [`macro@kernel`]; on the host that emits its [`Kernel`] contract
//! (see [`contract`]), which warpkit's runtime launches with type-checked arguments.
//!
//! | CUDA C++ | here |
//! | --- | --- |
//! | `threadIdx.x`, `blockIdx.x`, `blockDim.x`, `gridDim.x` | [`thread::thread_idx_x`], [`thread::block_idx_x`], ... |
//! | `__syncthreads()` | [`thread::sync_threads`] |
//! | `__all_sync`, `__any_sync`, `__ballot_sync` | [`warp::vote_all`], [`warp::vote_any`], [`warp::ballot`] |
//! | `__shfl_sync` and its `_up`, `_down`, `_xor` | [`warp::shfl_idx`], [`warp::shfl_up`], [`warp::shfl_down`], [`warp::shfl_xor`] |
//! | `atomicCAS`, `atomicExch`, `atomicAdd`, `atomicMin`, `atomicMax` | [`atomic`] |
//! | `__threadfence_block()`, `__threadfence()`, `__threadfence_system()` | [`fence`] |
//! | `__shared__ T x[N]` at file scope | [`crate::static_shared!`] |

#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch, stdarch_nvptx))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod atomic;
pub mod contract;
pub mod fence;
pub mod global;
pub mod math;
pub mod shared;
pub mod thread;
pub mod warp;

pub use contract::{
    DevMut, DevPtr, DeviceView, DeviceViewMut, Kernel, KernelInfo, LaunchBounds, Param,
};
#[cfg(not(target_arch = "nvptx64"))]
pub use contract::{KERNELS, PtxParam, ptx_entries, ptx_launch_bounds};
pub use warpkit_macros::{gpu_only, kernel};

/// For `#[kernel]`'s expansion (its registry entry); not part of the API.
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
pub use linkme as __linkme;

/// Threads per warp on every NVIDIA GPU warpkit targets; kernels and hosts agree through this.
pub const WARP_SIZE: u32 = 32;
