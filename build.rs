//! Compiles the device crate (`device/`) to PTX with rustc's NVPTX backend (through
//! `warpkit-build`, whose docs give the recipe) and hands it to the host crate, which embeds it
//! with `include_str!`. `WARPKIT_CUDA_ARCH` (default `sm_90`) selects the target architecture.

fn main() {
    let ptx = warpkit_build::PtxBuilder::new("device")
        .arch_env("WARPKIT_CUDA_ARCH")
        .file_name("warpkit.ptx")
        // The device layer and the macros are path dependencies of device/: their changes change
        // the PTX.
        .watch("crates/warpkit-gpu")
        .watch("crates/warpkit-macros")
        .build()
        .unwrap_or_else(|e| e.exit());
    println!("cargo:rustc-env=WARPKIT_PTX_PATH={}", ptx.path.display());
    println!("cargo:rustc-env=WARPKIT_PTX_ARCH={}", ptx.arch);
}
