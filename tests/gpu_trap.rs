//! A device-side panic (bounds check → trap) must come back as an error naming the kernel, not as
//! a hang or a silent wrong result. Its own test binary: a trap poisons the process's CUDA context.

mod common;

use warpkit::device::selftest::kernels::probe_trap;
use warpkit::runtime::{GpuError, grid_for};

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_panic_is_reported_with_the_kernel_name() {
    let gpu = common::gpu();
    // Index 7 is past the 4-entry table: Rust's bounds check panics on the device.
    let index = gpu.upload(&[0u32, 1, 2, 7]).unwrap();
    let mut out = gpu.alloc_zeros::<u32>(4).unwrap();
    let n = 4u32;
    unsafe {
        gpu.launch(probe_trap, grid_for(n, 32), (&index, &mut out, n))
            .unwrap()
    };
    match gpu.download(&out) {
        Err(GpuError::Kernel { kernels, source }) => {
            assert_eq!(kernels, "probe_trap", "{source}");
        }
        other => panic!("expected a kernel error naming probe_trap, got {other:?}"),
    }
}
