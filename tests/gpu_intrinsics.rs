//! Each intrinsic family's probe kernel on the GPU against an exact CPU model of its PTX semantics,
//! and the self-test reductions against the CPU twin. Outputs are poisoned (0xFF bytes) before each
//! launch so an unwritten element fails.

mod common;

use common::{EDGE_SIZES, gpu};
use warpkit::device::rng;
use warpkit::device::selftest::kernels::*;
use warpkit::device::selftest::{self as dev, ATOMIC_INIT, INDEX_FIELDS, slot};
use warpkit::runtime::{Kernel, LaunchConfig, grid_for};

/// A contract whose entry is not in the module: written by hand, as a crate could.
#[derive(Clone, Copy)]
struct NoSuchKernel;
impl Kernel for NoSuchKernel {
    const NAME: &'static str = "no_such_kernel";
    type Params = ();
    const PARAMS: &'static [warpkit_gpu::Param] = &[];
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn indices_match_the_launch_shape() {
    let gpu = gpu();
    for &block in &[32u32, 96, 256] {
        for &n in EDGE_SIZES {
            let n32 = n as u32;
            let cfg = grid_for(n32, block);
            let mut out = gpu.alloc_poisoned::<u32>(n * INDEX_FIELDS).unwrap();
            unsafe { gpu.launch(probe_indices, cfg, (&mut out, n32)).unwrap() };
            let got = gpu.download(&out).unwrap();
            for i in 0..n32 {
                let tid = i % block;
                let want = [
                    tid,
                    i / block,
                    block,
                    n32.div_ceil(block),
                    tid % 32,
                    tid / 32,
                ];
                let g = &got[i as usize * INDEX_FIELDS..][..INDEX_FIELDS];
                assert_eq!(g, want, "thread {i}, n {n}, block {block}");
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn votes_match_per_warp_model() {
    let gpu = gpu();
    let n = 32 * 64;
    // Warp w: all true (w % 4 == 0), all false (1), or random (2, 3) with density 1/2.
    let pred: Vec<u32> = (0..n)
        .map(|i| match (i / 32) % 4 {
            0 => 1,
            1 => 0,
            _ => (rng::draw_u64(11, i as u64) & 1) as u32,
        })
        .collect();
    let p = gpu.upload(&pred).unwrap();
    let mut out = gpu.alloc_poisoned::<u32>(3 * n).unwrap();
    let n32 = n as u32;
    unsafe {
        gpu.launch(probe_vote, grid_for(n32, 256), (&p, &mut out, n32))
            .unwrap()
    };
    let got = gpu.download(&out).unwrap();
    for (w, lanes) in pred.chunks(32).enumerate() {
        let ballot = lanes
            .iter()
            .enumerate()
            .fold(0u32, |b, (l, &v)| b | ((v != 0) as u32) << l);
        let want = [(ballot == u32::MAX) as u32, (ballot != 0) as u32, ballot];
        for l in 0..32 {
            let i = w * 32 + l;
            assert_eq!(got[3 * i..3 * i + 3], want, "warp {w} lane {l}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shuffles_match_ptx_semantics() {
    let gpu = gpu();
    let n = 32 * 40;
    let x: Vec<u32> = (0..n).map(|i| rng::draw_u64(12, i as u64) as u32).collect();
    let xs = gpu.upload(&x).unwrap();
    for delta in [0u32, 1, 5, 16, 31] {
        let mut out = gpu.alloc_poisoned::<u32>(8 * n).unwrap();
        let n32 = n as u32;
        unsafe {
            gpu.launch(
                probe_shuffle,
                grid_for(n32, 128),
                (&xs, delta, &mut out, n32),
            )
            .unwrap()
        };
        let got = gpu.download(&out).unwrap();
        for i in 0..n {
            let (base, lane) = (i / 32 * 32, (i % 32) as u32);
            let at = |src: u32| x[base + src as usize];
            // An out-of-range source returns the caller's own value with the flag cleared.
            let ranged =
                |src: Option<u32>| src.filter(|&s| s < 32).map_or((x[i], 0), |s| (at(s), 1));
            let want = [
                (at((lane * 7 + delta) % 32), 1),
                ranged(lane.checked_sub(delta)),
                ranged(Some(lane + delta)),
                (at(lane ^ delta), 1),
            ];
            for (m, (v, ok)) in want.iter().enumerate() {
                assert_eq!(
                    (got[8 * i + 2 * m], got[8 * i + 2 * m + 1]),
                    (*v, *ok),
                    "mode {m} delta {delta} thread {i}"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn atomics_are_exact_under_contention() {
    let gpu = gpu();
    for n in [1u32, 33, 100_000] {
        let mut counters = gpu.upload(&ATOMIC_INIT).unwrap();
        let mut fsum = gpu.alloc_zeros::<f32>(1).unwrap();
        let mut exch = gpu.alloc_poisoned::<u32>(n as usize).unwrap();
        let mut tickets = gpu.alloc_poisoned::<u32>(n as usize).unwrap();
        unsafe {
            gpu.launch(
                probe_atomics,
                grid_for(n, 256),
                (&mut counters, &mut fsum, &mut exch, &mut tickets, n),
            )
            .unwrap()
        };
        let c = gpu.download(&counters).unwrap();
        let keys: Vec<i32> = (0..n).map(dev::atomic_key).collect();
        assert_eq!(c[slot::ADD_U32], n);
        assert_eq!(
            c[slot::ADD_I32] as i32,
            (0..n).map(|i| (i % 7) as i32 - 3).sum::<i32>()
        );
        assert_eq!(c[slot::MIN_I32] as i32, *keys.iter().min().unwrap());
        assert_eq!(c[slot::MAX_I32] as i32, *keys.iter().max().unwrap());
        assert_eq!(
            c[slot::MIN_U32],
            keys.iter().map(|&k| k as u32).min().unwrap()
        );
        assert_eq!(
            c[slot::MAX_U32],
            keys.iter().map(|&k| k as u32).max().unwrap()
        );
        // 0.5 steps are exact in f32 below 2^24.
        assert_eq!(gpu.download(&fsum).unwrap()[0], 0.5 * n as f32);
        // Exchanges form one chain: the old values plus the final value are {initial} ∪ {0..n}.
        let mut chain = gpu.download(&exch).unwrap();
        chain.push(c[slot::EXCH]);
        chain.sort_unstable();
        let mut want: Vec<u32> = (0..n).collect();
        want.push(ATOMIC_INIT[slot::EXCH]);
        assert_eq!(chain, want);
        // CAS tickets: every value 0..n taken exactly once.
        let mut t = gpu.download(&tickets).unwrap();
        t.sort_unstable();
        assert_eq!(t, (0..n).collect::<Vec<_>>());
        assert_eq!(c[slot::CAS_TICKET], n);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fast_math_within_documented_bounds() {
    let gpu = gpu();
    let n = 100_000u32;
    let x: Vec<f32> = (0..n as u64).map(|i| dev::math_input(4, i)).collect();
    let xs = gpu.upload(&x).unwrap();
    let mut out = gpu.alloc_poisoned::<f32>(4 * n as usize).unwrap();
    unsafe {
        gpu.launch(probe_math, grid_for(n, 256), (&xs, &mut out, n))
            .unwrap()
    };
    let got = gpu.download(&out).unwrap();
    let rel = |g: f32, w: f64| ((g as f64 - w) / w).abs();
    for (i, &xi) in x.iter().enumerate() {
        let host = dev::math_probe(xi);
        let g = &got[4 * i..4 * i + 4];
        // sqrt.rn and fma.rn are correctly rounded, as the host's are: bitwise equal.
        assert_eq!(g[0].to_bits(), host[0].to_bits(), "sqrt({xi})");
        assert_eq!(g[2].to_bits(), host[2].to_bits(), "fma({xi})");
        let a = xi.abs() + 0.25;
        assert!(
            rel(g[1], 1.0 / (a as f64).sqrt()) < 2f64.powf(-22.0),
            "rsqrt({a}) = {}",
            g[1]
        );
        assert!(
            rel(g[3], (xi as f64).exp2()) < 2f64.powi(-21),
            "exp2({xi}) = {}",
            g[3]
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn selftest_reductions_match_cpu() {
    let gpu = gpu();
    for &n in EDGE_SIZES.iter().chain(&[100_003, 1 << 20]) {
        let x = warpkit::selftest::input(n, n as u64);
        let g = warpkit::selftest::gpu(&gpu, &x).unwrap();
        let c = warpkit::selftest::cpu(&x);
        for row in warpkit::selftest::compare(&g, &c) {
            assert!(
                row.ok,
                "n {n}: {} gpu {} cpu {}",
                row.quantity, row.gpu, row.cpu
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn launch_refusals_are_errors_naming_the_kernel() {
    let gpu = gpu();
    let mut out = gpu.alloc_zeros::<u32>(6).unwrap();
    let n = 1u32;
    // 4096 threads per block exceeds every GPU's limit of 1024.
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (4096, 1, 1),
        shared_mem_bytes: 0,
    };
    let err = unsafe { gpu.launch(probe_indices, cfg, (&mut out, n)) }.unwrap_err();
    assert!(err.to_string().contains("probe_indices"), "{err}");
    let missing = unsafe { gpu.launch(NoSuchKernel, grid_for(1, 32), ()) }.unwrap_err();
    assert!(missing.to_string().contains("no_such_kernel"), "{missing}");
    // The context is still usable after a refused launch.
    unsafe {
        gpu.launch(probe_indices, grid_for(1, 32), (&mut out, n))
            .unwrap()
    };
    assert_eq!(gpu.download(&out).unwrap()[2], 32);
}
