//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use warpkit::runtime::Gpu;

/// The GPU for `#[ignore = "needs a CUDA GPU"]` tests: failing to open it fails the test.
pub fn gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| panic!("GPU test without a usable GPU: {e}"))
}

/// The `warpkit` executable: cargo's path where it exists, else the staged copy in `.gpu/bin/`
/// (test executables run on the GPU machine from the repository root, away from the build tree).
pub fn warpkit_exe() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_warpkit"));
    if built.exists() {
        built
    } else {
        PathBuf::from(".gpu/bin/warpkit")
    }
}

/// Sizes that straddle warp and block boundaries, for launch-shape bugs.
pub const EDGE_SIZES: &[usize] = &[1, 31, 32, 33, 255, 256, 257, 1000, 4097];
