//! `warpkit selftest`: the warp-reduction self test on the GPU and the CPU, compared.

use super::*;

#[derive(clap::Args)]
pub(crate) struct SelftestArgs {
    /// Number of elements.
    #[arg(long, default_value_t = 1 << 20)]
    pub(crate) n: usize,
    /// Seed of the input.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
}

pub(crate) fn run(choice: BackendChoice, a: SelftestArgs) -> Result<()> {
    let SelftestArgs { n, seed } = a;
    if n == 0 || n > u32::MAX as usize {
        bail!("--n must be in 1..=4294967295 (got {n})");
    }
    let backend = select(choice)?;
    let x = warpkit::selftest::input(n, seed);
    let report = warpkit::selftest::run(&backend, &x)?;
    let cpu = report.cpu;
    let (Some((g, rows)), Some(gpu)) = (report.gpu, backend.gpu()) else {
        println!(
            "selftest on the CPU only (n = {n}): sum {:.6}, max {}, passing {}, all-passing warps {}",
            cpu.sum, cpu.max, cpu.passing, cpu.all_passing_warps
        );
        return Ok(());
    };
    println!(
        "selftest on {} (n = {n}, warp kernel {:.3} ms)",
        gpu.info().name,
        g.warp_kernel_ms
    );
    println!("| quantity | GPU (f32) | CPU (f64) | abs. difference | |");
    println!("| --- | --- | --- | --- | --- |");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.3e} | {} |",
            r.quantity,
            r.gpu,
            r.cpu,
            r.diff,
            if r.ok { "ok" } else { "MISMATCH" }
        );
    }
    let max_rel = rows
        .iter()
        .map(|r| r.diff / r.cpu.abs().max(1.0))
        .fold(0.0, f64::max);
    println!("max relative difference: {max_rel:.3e}");
    if rows.iter().any(|r| !r.ok) {
        bail!("selftest failed: GPU and CPU disagree");
    }
    Ok(())
}
