//! Host-side behaviour that needs no GPU: backend selection, the embedded PTX and the CPU twin
//! (the command line's: `app/tests/cli.rs`). These run in CI.

use warpkit::backend::{Backend, BackendChoice, select};

fn driver_present() -> bool {
    // SAFETY: only tries to load the library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

#[test]
fn cpu_backend_is_chosen_without_probing() {
    let (b, notice) = select(BackendChoice::Cpu).unwrap();
    assert!(matches!(b, Backend::Cpu) && notice.is_none());
}

#[test]
fn no_driver_means_errors_not_panics() {
    if driver_present() {
        return; // the GPU machine: covered by the GPU tests
    }
    let err = warpkit::runtime::Gpu::new(0)
        .err()
        .expect("no driver, yet a GPU opened");
    assert!(
        matches!(err, warpkit::runtime::GpuError::NoDriver(_)),
        "{err}"
    );
    let (b, notice) = select(BackendChoice::Auto).unwrap();
    assert!(matches!(b, Backend::Cpu));
    assert!(notice.unwrap().contains("CPU backend"));
    assert!(select(BackendChoice::Gpu).is_err());
}

#[test]
fn embedded_ptx_holds_every_kernel_and_intrinsic() {
    let names = warpkit::kernel_names();
    for k in [
        "selftest_warp_reduce",
        "selftest_block_sum",
        "probe_indices",
        "probe_vote",
        "probe_shuffle",
        "probe_atomics",
        "probe_math",
        "probe_trap",
    ] {
        assert!(names.contains(&k), "{k} missing from {names:?}");
    }
    let ptx = warpkit::PTX;
    assert!(ptx.contains(&format!(".target {}", warpkit::PTX_ARCH)));
    // Each wrapper's instruction, as documented, made it into the module.
    for insn in [
        "vote.sync.all.pred",
        "vote.sync.any.pred",
        "vote.sync.ballot.b32",
        "shfl.sync.idx.b32",
        "shfl.sync.up.b32",
        "shfl.sync.down.b32",
        "shfl.sync.bfly.b32",
        "atom.relaxed.gpu.cas.b32",
        "atom.relaxed.gpu.exch.b32",
        "atom.relaxed.gpu.add.f32",
        "atom.relaxed.gpu.min.s32",
        "atom.relaxed.gpu.max.u32",
        "membar.gl",
        "bar.sync",
        "sqrt.rn.f32",
        "rsqrt.approx.ftz.f32",
        "fma.rn.f32",
        "ex2.approx.ftz.f32",
        ".shared .align 16 .b8 wk_smem_block_tile[1024]",
        "trap;",
    ] {
        assert!(ptx.contains(insn), "{insn} not in the PTX");
    }
    // No libm or other unresolved calls: every call target must be defined in the module.
    assert!(
        !ptx.contains(".extern .func"),
        "the PTX calls an external function"
    );
}

#[test]
fn cpu_twin_on_known_inputs() {
    let zeros = vec![0.0f32; 64];
    let r = warpkit::selftest::cpu(&zeros);
    assert_eq!(
        (r.sum, r.max, r.passing, r.all_passing_warps),
        (64.0, 1.0, 64, 2)
    );
    let mut x = vec![-1.0f32; 70];
    x[40] = 0.5;
    let r = warpkit::selftest::cpu(&x);
    assert_eq!((r.passing, r.all_passing_warps), (1, 0));
    assert!((r.sum - (69.0 * 2f64.sqrt() + 1.25f64.sqrt())).abs() < 1e-5);
}
