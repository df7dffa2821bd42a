//! Helpers shared by the integration tests that run the `warpkit` executable.
#![allow(dead_code)]

use std::path::PathBuf;

pub mod cli;

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
