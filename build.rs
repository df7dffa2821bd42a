//! Compiles the device crate (`device/`) to PTX with rustc's NVPTX backend and hands it to the host
//! crate, which embeds it with `include_str!`.
//!
//! The recipe (DESIGN.md): a nested `cargo rustc` for `nvptx64-nvidia-cuda` that builds `core` from
//! rust-src (`-Zbuild-std=core`), fat LTO into one codegen unit, panic=abort, and `--emit=asm`: with
//! no linker available, the assembly of the LTO'd staticlib *is* the whole PTX module.
//!
//! `WARPKIT_CUDA_ARCH` (default `sm_90`) selects the target architecture.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Architectures that rustc's NVPTX backend targets and that have the `*.sync` warp intrinsics
/// with independent thread scheduling that warpkit's kernels are written for (Volta and later).
const ARCHS: &[&str] = &[
    "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_120",
];
const DEFAULT_ARCH: &str = "sm_90";

fn main() {
    println!("cargo:rerun-if-changed=device");
    println!("cargo:rerun-if-env-changed=WARPKIT_CUDA_ARCH");

    let arch = env::var("WARPKIT_CUDA_ARCH").unwrap_or_else(|_| DEFAULT_ARCH.to_string());
    if !ARCHS.contains(&arch.as_str()) {
        eprintln!(
            "error: WARPKIT_CUDA_ARCH={arch:?} is not a supported CUDA architecture; use one of {}",
            ARCHS.join(", ")
        );
        std::process::exit(1);
    }

    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let ptx = out_dir.join("warpkit.ptx");
    // One nested target dir per arch beside the outer one: `core` is built once per arch and
    // shared by every outer profile (debug, release, test), not rebuilt into each OUT_DIR.
    let target_dir = outer_target_dir(&out_dir).join(format!("nvptx-{arch}"));

    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&manifest_dir)
        .args([
            "rustc",
            "--release",
            "--locked",
            "--target",
            "nvptx64-nvidia-cuda",
        ])
        .args(["-Zbuild-std=core", "--crate-type", "staticlib"])
        .arg("--manifest-path")
        .arg(manifest_dir.join("device/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .arg("--")
        .arg(format!("--emit=asm={}", ptx.display()))
        .args(["-C", &format!("target-cpu={arch}")])
        .env("CARGO_PROFILE_RELEASE_LTO", "fat")
        .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "3");
    // The outer build's flags and wrappers are for the host (or for clippy), never for nvptx.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_RUSTFLAGS",
    ] {
        cmd.env_remove(var);
    }

    // rustc's diagnostics for device code go straight to the terminal as the user's own errors.
    let status = cmd
        .status()
        .expect("failed to start the nested cargo for the device crate");
    if !status.success() {
        eprintln!("error: compiling device/ for nvptx64-nvidia-cuda ({arch}) failed; see above");
        std::process::exit(1);
    }
    let text = std::fs::read_to_string(&ptx).expect("the nested cargo wrote no PTX");
    if !text.contains(".entry") {
        eprintln!("error: {} holds no kernel entry point", ptx.display());
        std::process::exit(1);
    }
    println!("cargo:rustc-env=WARPKIT_PTX_PATH={}", ptx.display());
    println!("cargo:rustc-env=WARPKIT_PTX_ARCH={arch}");
}

/// `.../target/<profile>/build/warpkit-<hash>/out` → `.../target`.
fn outer_target_dir(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .nth(4)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| out_dir.join("nvptx"))
}
