//! `warpkit sbh`.

use super::*;

#[derive(clap::Args)]
pub(crate) struct SbhArgs {
    /// Sources: uniform in [-0.5, 0.5]³ with mass 1/M (a sphere's oriented samples for the
    /// winding number). Default 2^20 on the GPU, 2^15 on the CPU backend.
    #[arg(long)]
    m: Option<usize>,
    /// Query grid resolution (centres of res³ cells); default 100 on the GPU, 32 on the CPU.
    #[arg(long)]
    grid: Option<usize>,
    /// Random queries instead of the grid: this many, uniform in the cube.
    #[arg(long)]
    random: Option<usize>,
    /// Shuffle the query order (the paper's "shuffled" column).
    #[arg(long)]
    shuffle: bool,
    /// Paths per stratum S.
    #[arg(long, default_value_t = 1)]
    samples: u32,
    /// Far-field ratio β of the Barnes–Hut baseline.
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true)]
    beta: f32,
    #[arg(long, value_parser = choice::<warpkit::sbh::Kernel>(), default_value = warpkit::sbh::Kernel::Shifted.name())]
    kernel: warpkit::sbh::Kernel,
    /// The kernel's parameter: δ (shifted), ε (plummer), α (smooth); default 0.1, 0.1, 50.
    #[arg(long, allow_negative_numbers = true)]
    param: Option<f32>,
    /// Octree levels per estimator level: 2 (64-ary, the paper's d = 4) or 1 (octree).
    #[arg(long, default_value_t = warpkit::device::sbh::WIDE_LEVELS)]
    levels: u32,
    /// Independent random streams per query instead of one per warp of 32 queries.
    #[arg(long)]
    incoherent: bool,
    /// levels = 2 walks the octree's child slots instead of reading the wide-node layout (the
    /// form before the layout; same draws, for timing comparisons).
    #[arg(long)]
    no_wide: bool,
    /// S paths in every stratum (the paper's estimator) instead of 2S–3S in near strata and far
    /// strata thinned (ours: lower error for less work).
    #[arg(long)]
    paper_allocation: bool,
    /// Warps of the grouped Barnes–Hut: Morton blocks (compact, fastest) or 32 consecutive
    /// queries in row-major order (the authors' warps: a stricter vote, lower errors).
    #[arg(long, value_parser = choice::<warpkit::sbh::Warps>(), default_value = warpkit::sbh::Warps::Morton.name())]
    warps: warpkit::sbh::Warps,
    /// Far-field terms of the grouped Barnes–Hut: monopoles (the paper's) or with the cells'
    /// quadrupole moments (ours; radial kernels only).
    #[arg(long, value_parser = choice::<warpkit::sbh::Moments>(), default_value = warpkit::sbh::Moments::Monopole.name())]
    moments: warpkit::sbh::Moments,
    /// Timed repeats after one warm-up (GPU); medians are printed.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub(crate) fn run(choice: BackendChoice, a: SbhArgs) -> Result<()> {
    use std::time::Instant;
    use warpkit::device::sbh::SbhParams;
    use warpkit::sbh::{
        self as s, Kernel, SbhTree, Summation, TreeOrigin, error_stats, gpu as sgpu,
    };
    // Options first: nothing is generated for a run that would be refused.
    if a.repeats == 0 {
        return Err(warpkit::bh::InputError::NoRepeats.into());
    }
    s::validate_samples(a.samples)?;
    s::validate_levels(a.levels)?;
    s::validate_beta(a.beta)?;
    let backend = select(choice)?;
    let on_gpu = backend.is_gpu();
    let m = a.m.unwrap_or(if on_gpu { 1 << 20 } else { 1 << 15 });
    let grid = a.grid.unwrap_or(if on_gpu { 100 } else { 32 });
    // Counts before anything of that size is generated (a huge --m, --grid or --random
    // panicked or aborted in the allocator). Sources are a tree's bodies; queries are checked
    // against the index limit and (12 bytes each, about 48 with the results) memory.
    warpkit::bh::check_count(&backend, m)?;
    let queries = match a.random {
        Some(n) => Some(n),
        None => grid.checked_pow(3),
    };
    let nq = match queries {
        Some(n) if n <= s::MAX_QUERIES => n,
        _ => {
            let what = match a.random {
                Some(n) => format!("--random {n}:"),
                None => format!("--grid {grid}: {grid}³"),
            };
            return Err(s::SbhError::TooManyQueries(what).into());
        }
    };
    if let Some(s) = warpkit::backend::memory_shortfall(nq.saturating_mul(48)) {
        bail!("{nq} queries need {s}");
    }
    let k = a.kernel.spec(a.param.unwrap_or(a.kernel.default_param()));
    let src = if a.kernel == Kernel::Winding {
        s::sphere_sources(m, 0.3, a.seed)
    } else {
        s::uniform_sources(m, a.seed)
    };
    let mut q = match a.random {
        Some(n) => s::random_queries(n, a.seed),
        None => s::grid_queries(grid),
    };
    if a.shuffle {
        warpkit::bh::scene::shuffle(&mut q, a.seed);
    }
    s::validate(&src, &q, k)?;
    let p = SbhParams {
        kernel: k,
        samples: a.samples,
        seed: a.seed,
        levels: a.levels,
        allocate: !a.paper_allocation,
    };
    let coherent = !a.incoherent;
    // Every method evaluates the queries in Morton order (warps of nearby queries); sums come
    // back in the queries' own order.
    let order = s::query_order(&q);
    let t0 = Instant::now();
    let tree = SbhTree::build(&src);
    let build_ms = t0.elapsed().as_secs_f64() * 1e3;
    let (blocks, entries) = tree.wide.counts();
    println!(
        "wide-node layout{}: {blocks} blocks, {entries} entries, {} rows, {:.1} bytes per source, built on the host in {:.1} ms",
        if a.no_wide {
            " (not used: --no-wide)"
        } else {
            ""
        },
        tree.wide.meta.len(),
        tree.wide.bytes() as f64 / m as f64,
        tree.wide_ms
    );
    println!(
        "sbh: M = {m} sources, {} queries{}, kernel {:?} (param {}), S = {}{}, β = {}, levels {}, {} streams; tree built on the CPU in {build_ms:.1} ms ({} cells)",
        q.len(),
        if a.shuffle { " (shuffled)" } else { "" },
        a.kernel,
        k.param,
        a.samples,
        if a.paper_allocation {
            " in every stratum"
        } else {
            " (2S–3S in near strata, far ones thinned)"
        },
        a.beta,
        a.levels,
        if coherent {
            "warp-coherent"
        } else {
            "independent"
        },
        tree.tree.used_cells()
    );
    // The GPU builds the tree itself where it can (no dipoles, positive weights); else the host
    // tree is uploaded.
    let quad = a.moments == warpkit::sbh::Moments::Quadrupole;
    let (sum, origin) = Summation::build(&backend, src, tree, quad)?;
    match origin {
        TreeOrigin::Gpu { ms } => println!(
            "trees built on the GPU in {ms:.3} ms (CUDA events: reset, bounding box, build, summarize, wide layout)"
        ),
        TreeOrigin::Uploaded { why } => println!("tree uploaded from the host ({why})"),
        TreeOrigin::Host => {}
    }
    if let Some(dt) = sum.device() {
        match dt.wide_build() {
            sgpu::WideBuild::Gpu => println!(
                "wide-node layout built on the GPU in {:.3} ms (CUDA events; included above)",
                dt.wide_ms()
            ),
            sgpu::WideBuild::Host if dt.wide_ms() > 0.0 => println!(
                "wide-node layout built on the host from the GPU tree in {:.1} ms (download, build, upload)",
                dt.wide_ms()
            ),
            sgpu::WideBuild::Host => {}
        }
    }
    let sum = if a.no_wide { sum.without_wide() } else { sum };
    // `--repeats` is the GPU's (a warm-up, then medians of CUDA event times); the CPU runs once.
    let repeats = if backend.is_gpu() { a.repeats } else { 1 };
    let o = Some(order.as_slice());
    let (sb, sb_ms) = sum.timed(repeats, || sum.estimate(&q, &p, coherent, o))?;
    let (bh, bh_ms) = sum.timed(repeats, || {
        sum.barnes_hut_grouped(&q, k, a.beta, o, a.warps, a.moments)
    })?;
    let (bq, bq_ms) = sum.timed(repeats, || sum.barnes_hut(&q, k, a.beta, o))?;
    let (exact, brute_ms) = sum.brute_force(&q, k)?;
    let rows = [("SBH", sb_ms, sb), ("BH", bh_ms, bh), ("BHq", bq_ms, bq)];
    println!("| method | time (ms) | mean abs error | median abs error | max abs error |");
    println!("| --- | --- | --- | --- | --- |");
    println!("| brute force (f64 sums) | {brute_ms:.2} | 0 | 0 | 0 |");
    for (name, ms, vals) in &rows {
        let e = error_stats(k, vals, &exact);
        let label = match *name {
            "SBH" => format!("SBH S = {}", a.samples),
            "BH" => format!(
                "BH β = {}, {}{}",
                a.beta,
                match a.warps {
                    warpkit::sbh::Warps::Morton => "warp groups",
                    warpkit::sbh::Warps::Rows => "row warps",
                },
                match a.moments {
                    warpkit::sbh::Moments::Monopole => "",
                    warpkit::sbh::Moments::Quadrupole => " + quadrupoles",
                }
            ),
            _ => format!("BH β = {}, per query", a.beta),
        };
        println!(
            "| {label} | {ms:.2} | {:.3e} | {:.3e} | {:.3e} |",
            e.mean, e.median, e.max
        );
    }
    Ok(())
}
