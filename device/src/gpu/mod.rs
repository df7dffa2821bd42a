//! The device module that `cuda_std` would have been, on rustc's NVPTX backend.
//!
//! CUDA's model in brief: a launch runs a *grid* of *blocks* (CTAs); a block's threads share fast
//! on-chip memory and can meet at [`thread::sync_threads`]; the block runs as *warps* of
//! [`crate::WARP_SIZE`] lanes that vote and exchange registers without memory ([`warp`]). Threads of
//! different blocks meet only through global memory, [`atomic`]s and [`fence`]s.
//!
//! Every wrapper is `#[inline(always)]` and documents the PTX it emits, so a reader of the PTX
//! finds each instruction's origin. All of this exists only when compiling for `nvptx64`.
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

pub mod atomic;
pub mod fence;
pub mod shared;
pub mod thread;
pub mod warp;
