//! warpkit: Barnes–Hut self-gravity, warp-level FEM assembly and stochastic fast summation, with
//! GPU kernels written in Rust (the `warpkit-device` crate, compiled to PTX by `build.rs`) and a
//! CPU backend that runs the same formulas.
//!
//! | CUDA concept | warpkit |
//! | --- | --- |
//! | the embedded PTX module | [`PTX`], built for [`PTX_ARCH`] |
//! | a context, stream and loaded module | [`runtime::Gpu`] |
//! | `cudaEvent` timing | [`runtime::Gpu::time`] |
//! | a `__global__` launch | [`runtime::Gpu::launch`] → [`runtime::Launch::run`] |
//! | "no GPU here" | [`backend::Backend::Cpu`], chosen by [`backend::select`] |

pub mod backend;
pub mod bh;
pub mod fem;
pub mod repro;
pub mod runtime;
pub mod sbh;
pub mod selftest;
pub mod stats;

pub use warpkit_device as device;

/// The device crate compiled to PTX for [`PTX_ARCH`] (by `build.rs`).
pub const PTX: &str = include_str!(env!("WARPKIT_PTX_PATH"));

/// The architecture the embedded PTX targets (`WARPKIT_CUDA_ARCH` at build time), e.g. `sm_90`.
pub const PTX_ARCH: &str = env!("WARPKIT_PTX_ARCH");

/// The kernel entry points of [`PTX`], in order of appearance.
pub fn kernel_names() -> Vec<&'static str> {
    PTX.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .map(|rest| rest.split('(').next().unwrap_or(rest).trim())
        .collect()
}
