//! warpkit's device crate: every GPU kernel and every formula a kernel uses.
//!
//! The crate compiles twice. `build.rs` compiles it for `nvptx64-nvidia-cuda` into the PTX module
//! that the host embeds; the host crate links it as an ordinary library, so the CPU backend and the
//! tests call the very functions the kernels call. One copy of every formula.
//!
//! | module | what it holds | on the host |
//! | --- | --- | --- |
//! | [`gpu`] | the device layer (`warpkit-gpu`): indices, barriers, fences, warp vote, shuffles and reductions, scoped atomics, shared memory | intrinsics panic; contracts |
//! | [`math`] | sqrt, rsqrt, fma, exp2, log2 as single PTX instructions (`warpkit_gpu::math`) | the same functions through `std` |
//! | [`rng`] | a counter-based generator for reproducible inputs on either side | yes |
//! | [`sbh`] | stochastic Barnes–Hut and Barnes–Hut at query points: kernel functions, estimators | formulas, CPU twin's traversal |
//! | [`sph`] | SPH neighbour search (tree walks, linked cells), density, smoothing lengths | formulas; the CPU twins' tests |
//! | [`combined`] | gravity and SPH density in one warp-group walk (GASPHiA's merged traversal) | formulas; the CPU twin's walk |
//! | [`selftest`] | the warp-reduction self test and one probe kernel per intrinsic | formulas and launch shapes |
#![no_std]
// asm_experimental_arch: the layer's shared-memory macros expand their `asm!` here.
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod bh;
pub mod combined;
pub mod fem;
pub mod nbody;
pub mod rng;
pub mod sbh;
pub mod selftest;
pub mod sort;
pub mod sph;
pub mod walk;

/// The device layer, under the name the kernels use.
pub use warpkit_gpu as gpu;
pub use warpkit_gpu::math;
pub use warpkit_gpu::{WARP_SIZE, kernel, static_shared, static_shared_window};

/// Marks `#[repr(C)]` `Pod` types shared with kernels as valid cudarc buffer elements on the host
/// (`DeviceRepr`, `ValidAsZeroBits`); expands to nothing on the device.
#[macro_export]
macro_rules! shared_type {
    ($($t:ty),* $(,)?) => {
        $(
            #[cfg(not(target_arch = "nvptx64"))]
            // SAFETY: $t is #[repr(C)] and Pod: any bit pattern, including zero, is valid, and it
            // has the same layout on the host and on the device.
            unsafe impl cudarc::driver::DeviceRepr for $t {}
            #[cfg(not(target_arch = "nvptx64"))]
            // SAFETY: as above.
            unsafe impl cudarc::driver::ValidAsZeroBits for $t {}
        )*
    };
}

/// A device-side panic (bounds check, `unwrap`, explicit `panic!`) executes `trap`: the kernel
/// aborts and the host's next synchronisation reports a launch error naming it.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    gpu::thread::trap()
}
