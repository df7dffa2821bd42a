//! Compiles the kernels crate (`kernels/`) to PTX with `warpkit-build`, for the architecture
//! warpkit's own module targets (`WARPKIT_CUDA_ARCH`, default sm_90), so both modules load on the
//! same GPUs. The host embeds it as `warpkit_example_yukawa::PTX`.

fn main() {
    let ptx = warpkit_build::PtxBuilder::new("kernels")
        .arch_env("WARPKIT_CUDA_ARCH")
        .file_name("yukawa.ptx")
        // The kernels inline warpkit's device code: its changes change this PTX too.
        .watch("../../device")
        .watch("../../crates/warpkit-gpu")
        .watch("../../crates/warpkit-macros")
        .build()
        .unwrap_or_else(|e| e.exit());
    println!("cargo:rustc-env=YUKAWA_PTX_PATH={}", ptx.path.display());
    println!("cargo:rustc-env=YUKAWA_PTX_ARCH={}", ptx.arch);
}
