//! `warpkit selftest`: the warp reduction (vote + shuffle + atomics) and the block reduction
//! (shared memory + barriers + fence) on the GPU, beside the same computation on the CPU in f64.

use crate::device::selftest::kernels as k;
use crate::device::selftest::{self as dev, BLOCK, WarpReduction};
use crate::runtime::{Gpu, GpuError, grid_for};
use rayon::prelude::*;

/// The CPU twin of both self-test kernels, accumulated in f64.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuReduction {
    pub sum: f64,
    pub max: f32,
    pub passing: u32,
    pub all_passing_warps: u32,
}

/// What the GPU kernels returned, and how long the warp reduction took.
#[derive(Clone, Copy, Debug)]
pub struct GpuReduction {
    pub warp: WarpReduction,
    pub block_total: f32,
    pub warp_kernel_ms: f64,
}

/// Relative tolerance for the f32 sums: the GPU adds n/32 warp sums atomically in f32, whose
/// rounding errors grow like sqrt(n/32)·2^-24 (1e-5 at n = 2^20) for random rounding; 1e-4 leaves
/// a margin of 10 while a lost warp (a relative error of 32/n or more) still fails up to n ≈ 3e5,
/// and a wrong formula fails at any n.
pub const SUM_RTOL: f64 = 1e-4;

/// The self test's input.
pub fn input(n: usize, seed: u64) -> Vec<f32> {
    (0..n as u64)
        .into_par_iter()
        .map(|i| dev::input(seed, i))
        .collect()
}

/// The CPU twin: the same per-element formula, warps as consecutive runs of 32 elements.
pub fn cpu(x: &[f32]) -> CpuReduction {
    let sum = x.par_iter().map(|&v| dev::value(v) as f64).sum();
    let max = x
        .par_iter()
        .map(|&v| dev::value(v))
        .reduce(|| f32::NEG_INFINITY, f32::max);
    let passing = x.par_iter().filter(|&&v| dev::passes(v)).count() as u32;
    let all_passing_warps = x
        .par_chunks(crate::device::WARP_SIZE as usize)
        .filter(|w| w.iter().all(|&v| dev::passes(v)))
        .count() as u32;
    CpuReduction {
        sum,
        max,
        passing,
        all_passing_warps,
    }
}

/// Both self-test kernels on the GPU.
pub fn gpu(gpu: &Gpu, x: &[f32]) -> Result<GpuReduction, GpuError> {
    let n = u32::try_from(x.len())
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| GpuError::InvalidLaunch {
            kernel: "selftest_warp_reduce",
            reason: format!("n = {} must be in 1..=u32::MAX", x.len()),
        })?;
    let cfg = grid_for(n, BLOCK);
    let xs = gpu.upload(x)?;

    let init = WarpReduction {
        max: f32::NEG_INFINITY,
        ..Default::default()
    };
    let mut out = gpu.upload(&[init])?;
    let ((), warp_kernel_ms) = gpu.time(|| {
        // SAFETY: x has n elements, out one WarpReduction initialised as the kernel requires.
        unsafe { gpu.launch(k::selftest_warp_reduce, cfg, (&xs, n, &mut out)) }
    })?;
    let warp = gpu.download(&out)?[0];

    let mut partials = gpu.alloc_poisoned::<f32>(cfg.grid_dim.0 as usize)?;
    let mut done = gpu.alloc_zeros::<u32>(1)?;
    let mut total = gpu.alloc_poisoned::<f32>(1)?;
    // SAFETY: one partial per block, `done` zeroed, BLOCK threads per block as required.
    unsafe {
        let args = (&xs, n, &mut partials, &mut done, &mut total);
        gpu.launch(k::selftest_block_sum, cfg, args)?
    };
    let block_total = gpu.download(&total)?[0];
    Ok(GpuReduction {
        warp,
        block_total,
        warp_kernel_ms,
    })
}

/// One row of the comparison: name, GPU value, CPU value, |difference|, and whether it passes.
pub struct Row {
    pub quantity: &'static str,
    pub gpu: f64,
    pub cpu: f64,
    pub diff: f64,
    pub ok: bool,
}

/// Compares GPU and CPU results: sums within [`SUM_RTOL`], everything else exactly.
pub fn compare(g: &GpuReduction, c: &CpuReduction) -> Vec<Row> {
    let rel = |a: f64, b: f64| (a - b).abs() / b.abs().max(f64::MIN_POSITIVE);
    let row = |quantity, gpu: f64, cpu: f64, ok: bool| Row {
        quantity,
        gpu,
        cpu,
        diff: (gpu - cpu).abs(),
        ok,
    };
    vec![
        row(
            "sum (warp shuffle + atomicAdd)",
            g.warp.sum as f64,
            c.sum,
            rel(g.warp.sum as f64, c.sum) <= SUM_RTOL,
        ),
        row(
            "sum (shared-memory blocks + fence)",
            g.block_total as f64,
            c.sum,
            rel(g.block_total as f64, c.sum) <= SUM_RTOL,
        ),
        row(
            "max (CAS loop)",
            g.warp.max as f64,
            c.max as f64,
            g.warp.max == c.max,
        ),
        row(
            "passing elements (ballot + popc)",
            g.warp.passing as f64,
            c.passing as f64,
            g.warp.passing == c.passing,
        ),
        row(
            "all-passing warps (vote.all)",
            g.warp.all_passing_warps as f64,
            c.all_passing_warps as f64,
            g.warp.all_passing_warps == c.all_passing_warps,
        ),
    ]
}

/// The self test on a backend: the CPU twin always; on the GPU also the kernels and the
/// comparison.
pub struct Report {
    pub cpu: CpuReduction,
    /// The kernels' results and the rows comparing them with the twin (GPU backend only).
    pub gpu: Option<(GpuReduction, Vec<Row>)>,
}

/// Runs the self test on `x` where `backend` says (the façade over [`cpu`] and [`gpu`]).
pub fn run(backend: &crate::backend::Backend, x: &[f32]) -> Result<Report, GpuError> {
    let c = cpu(x);
    let g = match backend {
        crate::backend::Backend::Gpu(g) => {
            let r = gpu(g, x)?;
            let rows = compare(&r, &c);
            Some((r, rows))
        }
        crate::backend::Backend::Cpu => None,
    };
    Ok(Report { cpu: c, gpu: g })
}
