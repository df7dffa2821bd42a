//! `repro sbh`: stochastic against deterministic Barnes–Hut (Madan et al., SIGGRAPH 2025,
//! `shared/seeds/004_97d74e2d5314c5c1.txt`) on this machine.
//!
//! * The table: for each M (2^15, 2^17, 2^20, 2^22 on the GPU), the authors' kernel −m/(r + 0.1),
//!   M points uniform in the cube with mass 1/M, queries at the centres of a 100³ grid in grid and
//!   in shuffled order: time and mean / median / max absolute error against brute force, for BH
//!   (β = 2) and SBH (S = 1), beside the paper's numbers and the authors' code measured on the H200.
//! * The convergence figure: error against time for S = 1 … 64 and a β sweep, at one M (2^20 on the
//!   GPU), for the grid and for as many random queries.
//! * The slice images: |error| of BH and of SBH on the middle z slice of the grid (the paper's
//!   z = 0.5 of its unit cube), on one shared log colour scale.
//! * The honest answer: at equal median error, which is faster here — computed from the
//!   convergence points (the cheapest measured configuration of each method that reaches a given
//!   median error), never written in.
//!
//! Trees are built on the CPU (as the authors do) and not timed. GPU times are CUDA events around
//! the one kernel (median of the repeats, after a warm-up); CPU times are wall clock. The CPU
//! backend runs smaller M and grids so that it ends in seconds on two cores.

use super::output::{Csv, OutDir, Report, Table, progress};
use super::plot::{self, Axis, HeatMap, LineChart, Scale, Series};
use super::{ReproError, Settings, Summary, finish, fmt_ms, fmt_n, meta};
use serde_json::json;
use warpkit::backend::Backend;
use warpkit::device::sbh::{KernelSpec, SbhParams, WIDE_LEVELS};
use warpkit::sbh::{self as sb, ErrorStats, Kernel, Moments, SbhTree, Summation, Warps};

const TITLE: &str = "Stochastic Barnes–Hut against Barnes–Hut (the SBH paper's table)";

/// Source counts of the table on the GPU (the paper's, and 2^22).
pub const GPU_MS: [usize; 4] = [1 << 15, 1 << 17, 1 << 20, 1 << 22];
/// Source counts on the CPU backend.
pub const CPU_MS: [usize; 3] = [1 << 11, 1 << 13, 1 << 15];
/// Grid resolution (queries: its cube) on the GPU and the CPU backend.
pub const GPU_GRID: usize = 100;
pub const CPU_GRID: usize = 20;
/// The CPU backend's convergence sweep uses this grid (and as many random queries).
pub const CPU_CONV_GRID: usize = 12;
/// The convergence sweep's M on the GPU (the CPU backend: its largest M).
pub const GPU_CONV_M: usize = 1 << 20;
/// Samples per stratum of the convergence sweep.
pub const SAMPLES: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Far-field ratios of the convergence sweep.
pub const BETAS: [f32; 8] = [0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
/// The table's Barnes–Hut far-field ratio and SBH samples.
pub const BETA: f32 = 2.0;
pub const S: u32 = 1;
/// The largest grid accepted (2^30 queries).
pub const MAX_GRID: usize = 1024;

/// How β, the far-field ratio and the roulette are defined here: the authors' own (their code),
/// so that our β = 2 is their table's β = 2.
pub const DEFINITIONS: &str = "Definitions (the authors' code, so that β means the same here and \
in their table): the far-field ratio of a cell is β̃ = |q − p| / |B|, the distance from the query \
to the cell's centre of mass over the length of the cell's box diagonal (√3 × its width); \
Barnes–Hut uses a cell whole when β̃ ≥ β (the root included; single sources are always exact). \
Both methods evaluate the queries in Morton order (sorted on the host, not timed, like the trees), \
so grid and shuffled orders run the same warps. SBH continues a path into a cell with \
probability min(1, max(1, β̂) / β̃), β̂ the running maximum \
of the ratios along the path, started at the stratum's own ratio (so the stratum's correction is \
always evaluated). Our SBH allocates each stratum's paths by its ratio at the query (beyond the \
paper; `stratum_paths`): 3S paths where β̃ < 0.5 and 2S where β̃ < 0.7 (the strata at the query, \
where the variance is), S elsewhere, and where β̃ ≥ 1.2 each path is kept with probability 0.35 \
and weighted by its inverse — unbiased, \
less error for less work; the column \"paper's allocation\" runs S paths in every stratum, as the \
authors do. Their GPU Barnes–Hut votes across the warp (a cell is used whole only when it is \
far for all 32 queries of the warp), which lowers its error below a per-query Barnes–Hut at the \
same β, by an amount that depends on the query order: on the CPU at M = 2^15 and their 100³ grid, \
per-query BH β = 2 gives mean / median / max errors 6.9e-4 / 6.8e-4 / 1.1e-3, voted warps of 32 \
consecutive grid queries 5.2e-4 / 5.1e-4 / 9.3e-4, their table 5.4e-4 / 5.2e-4 / 1.1e-3. Our BH \
here is the warp-group form of that vote (`sbh_bh_group_kernel`): each warp of 32 Morton-ordered \
queries traverses the tree once and uses a cell whole only when it is far from the warp's whole \
bounding box (so far for each of its queries), the listed sources summed lane-parallel.";

/// A row of [`AUTHORS_H200`].
pub type AuthorsRow = (usize, f64, [f64; 2], [f64; 3], [f64; 2], [f64; 3]);
/// A row of [`PAPER`].
pub type PaperRow = (usize, f64, [f64; 3], f64, [f64; 3]);

/// The authors' CUDA code measured on the lent H200: M, brute-force ms, BH β = 2 grid /
/// shuffled ms, BH mean / median / max error (grid), SBH S = 1 grid / shuffled ms, SBH errors.
pub const AUTHORS_H200: [AuthorsRow; 3] = [
    (
        1 << 15,
        25.7,
        [30.0, 184.5],
        [5.4e-4, 5.2e-4, 1.1e-3],
        [12.4, 12.7],
        [7.3e-4, 5.0e-4, 3.8e-2],
    ),
    (
        1 << 20,
        813.0,
        [98.2, 818.0],
        [6.1e-4, 6.0e-4, 1.2e-3],
        [16.7, 21.6],
        [6.8e-4, 4.5e-4, 3.3e-2],
    ),
    (
        1 << 22,
        3248.0,
        [170.0, 1171.0],
        [6.1e-4, 6.0e-4, 1.2e-3],
        [17.9, 23.6],
        [6.8e-4, 4.5e-4, 3.3e-2],
    ),
];

/// The paper's own table (its GPU): M, BH ms, BH mean / median / max, SBH ms, SBH errors.
pub const PAPER: [PaperRow; 3] = [
    (
        1 << 15,
        3.48,
        [5.59e-4, 4.50e-4, 3.72e-3],
        3.63,
        [9.91e-5, 2.51e-5, 5.61e-2],
    ),
    (
        1 << 17,
        5.00,
        [5.60e-4, 4.50e-4, 3.73e-3],
        3.92,
        [9.81e-5, 2.43e-5, 5.62e-2],
    ),
    (
        1 << 20,
        8.61,
        [5.60e-4, 4.50e-4, 3.74e-3],
        4.04,
        [9.77e-5, 2.40e-5, 5.60e-2],
    ),
];

/// Said under the table.
pub const CAVEAT: &str = "Paper: Madan, Sharp, Williams, Museth, Levin (SIGGRAPH 2025), its own \
GPU and code. \"Authors on H200\": their CUDA code measured on the lent H200 (trees built \
on the CPU, not timed). Our trees are also built on the CPU and not timed. Errors are absolute, \
against brute force (float64 sums); the paper's error columns may come from a different \
normalisation than the authors' code run (their two sets disagree by 5–20×).";

/// A method and its parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    Brute,
    Bh(f32),
    /// Barnes–Hut with the authors' warps: 32 consecutive queries in row-major order.
    BhRows(f32),
    /// Barnes–Hut (Morton warps) with the cells' quadrupole moments (ours).
    BhQuad(f32),
    Sbh(u32),
    /// SBH with the paper's allocation: S paths in every stratum.
    SbhPaper(u32),
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Brute => "brute",
            Method::Bh(_) => "bh",
            Method::BhRows(_) => "bh-rows",
            Method::BhQuad(_) => "bh-quad",
            Method::Sbh(_) => "sbh",
            Method::SbhPaper(_) => "sbh-paper",
        }
    }
    fn label(self) -> String {
        match self {
            Method::Brute => "brute force".into(),
            Method::Bh(b) => format!("BH β = {b}"),
            Method::BhRows(b) => format!("BH β = {b}, row warps"),
            Method::BhQuad(b) => format!("BH β = {b} + quadrupoles"),
            Method::Sbh(s) => format!("SBH S = {s}"),
            Method::SbhPaper(s) => format!("SBH S = {s}, paper's allocation"),
        }
    }
}

/// One measurement.
#[derive(Clone, Debug)]
pub struct Point {
    /// "table" or "convergence".
    pub section: &'static str,
    pub m: usize,
    /// "grid" or "random".
    pub set: &'static str,
    /// "grid" or "shuffled".
    pub order: &'static str,
    pub queries: usize,
    pub method: Method,
    pub ms: f64,
    pub err: ErrorStats,
}

/// The sizes of a run.
#[derive(Clone, Debug)]
pub struct Plan {
    pub ms: Vec<usize>,
    pub grid: usize,
    pub conv_m: usize,
    pub conv_grid: usize,
    pub repeats: usize,
}

/// The sizes for `s`: the backend's defaults, `--n` as the largest M, `--grid` for both grids.
pub fn plan(s: &Settings) -> Plan {
    let defaults: &[usize] = if s.is_gpu() { &GPU_MS } else { &CPU_MS };
    let ms = match s.n {
        Some(n) => super::capped(defaults, n),
        None => defaults.to_vec(),
    };
    let grid = s.grid.unwrap_or(s.pick(GPU_GRID, CPU_GRID));
    let largest = ms.last().copied().unwrap_or(2);
    let conv_m = if s.is_gpu() {
        ms.iter()
            .copied()
            .filter(|&m| m <= GPU_CONV_M)
            .max()
            .unwrap_or(largest)
    } else {
        largest
    };
    let conv_grid = if s.is_gpu() {
        grid
    } else {
        grid.min(CPU_CONV_GRID)
    };
    Plan {
        ms,
        grid,
        conv_m,
        conv_grid,
        repeats: s.repeats_or(5, 1),
    }
}

/// Checks `--grid`: at least 2 cells per side, at most [`MAX_GRID`], and room for the queries
/// with their reference and results.
pub fn check_grid(backend: &Backend, grid: usize) -> Result<(), ReproError> {
    let bad = |why: String| Err(ReproError::InvalidGrid { grid, why });
    if grid < 2 {
        return bad("the query grid needs at least 2 cells per side".into());
    }
    if grid > MAX_GRID {
        return bad(format!(
            "at most {MAX_GRID} cells per side ({MAX_GRID}³ queries)"
        ));
    }
    // Queries in two orders, a float64 reference per order, results, errors.
    let need = grid.pow(3) * (2 * 12 + 2 * 8 + 4 + 8) * 2;
    if let Some(s) = warpkit::backend::memory_shortfall(need) {
        return bad(format!("needs {s}"));
    }
    sb::check_device_memory(backend, grid.pow(3)).or_else(bad)
}

struct Runner<'a> {
    s: &'a Settings,
    k: KernelSpec,
    repeats: usize,
}

impl Runner<'_> {
    /// Sources of `m`, their tree built on the host and (on the GPU) uploaded.
    fn prepare(&self, m: usize) -> Result<Summation, ReproError> {
        let src = sb::uniform_sources(m, self.s.seed);
        let tree = SbhTree::build(&src);
        Ok(Summation::upload(&self.s.backend, src, tree)?)
    }

    /// `method` at queries `q`, evaluated in `order` ([`sb::query_order`] of `q`: Morton order,
    /// sorted on the host once per query set, not timed, as the trees are built); the values come
    /// back in `q`'s order.
    fn run(
        &self,
        p: &Summation,
        q: &[[f32; 3]],
        order: &[u32],
        method: Method,
    ) -> Result<(Vec<f32>, f64), ReproError> {
        let k = self.k;
        let params = |samples, allocate| SbhParams {
            allocate,
            ..SbhParams::new(k, samples, self.s.seed)
        };
        let o = Some(order);
        // The paper's allocation is one more form of the estimator.
        let (method, allocate) = match method {
            Method::SbhPaper(n) => (Method::Sbh(n), false),
            m => (m, true),
        };
        let (warps, moments) = match method {
            Method::BhRows(_) => (Warps::Rows, Moments::Monopole),
            Method::BhQuad(_) => (Warps::Morton, Moments::Quadrupole),
            _ => (Warps::Morton, Moments::Monopole),
        };
        let out = match method {
            Method::Sbh(n) => p.timed(self.repeats, || {
                p.estimate(q, &params(n, allocate), true, o)
            })?,
            // The three Barnes–Hut forms: warps and far-field expansion.
            Method::Bh(b) | Method::BhRows(b) | Method::BhQuad(b) => p
                .timed(self.repeats, || {
                    p.barnes_hut_grouped(q, k, b, o, warps, moments)
                })?,
            Method::Brute => unreachable!("brute force goes through reference()"),
            Method::SbhPaper(_) => unreachable!("mapped to Sbh above"),
        };
        Ok(out)
    }

    /// The brute-force sums (float64) at `q` and their time (GPU: the second of two launches).
    fn reference(&self, p: &Summation, q: &[[f32; 3]]) -> Result<(Vec<f64>, f64), ReproError> {
        Ok(p.timed(1, || p.brute_force(q, self.k))?)
    }
}

pub fn run(s: &Settings) -> Result<Summary, ReproError> {
    let plan = plan(s);
    check_grid(&s.backend, plan.grid)?;
    for &m in &plan.ms {
        super::check_n(&s.backend, m)?;
    }
    let dir = s.dir("sbh")?;
    let k = Kernel::Shifted.spec(Kernel::Shifted.default_param());
    let params = json!({
        "m": plan.ms, "grid": plan.grid, "queries": plan.grid.pow(3),
        "convergence_m": plan.conv_m, "convergence_grid": plan.conv_grid,
        "convergence_random_queries": plan.conv_grid.pow(3),
        "samples": SAMPLES, "betas": BETAS, "table_beta": BETA, "table_samples": S,
        "kernel": "shifted: -m / (r + 0.1)", "sources": "uniform in [-0.5, 0.5]^3, mass 1/M",
        "levels": WIDE_LEVELS, "streams": "warp-coherent",
        "bh": "warp groups: one traversal per 32 consecutive Morton-ordered queries, a cell used whole when far from the group's bounding box (sbh_bh_group_kernel / cpu::barnes_hut_grouped)",
        "bh_rows": "the same kernel with the authors' warps: 32 consecutive queries in row-major (z, y, x) order, shuffled queries sorted back into it (Warps::Rows)",
        "query_order": "BH and SBH evaluate the queries in Morton order (30-bit codes in the queries' bounding box, sorted on the host with rayon, not timed); sums returned in the caller's order",
        "repeats": plan.repeats, "statistic": "median", "seed": s.seed,
        "timing": if s.is_gpu() { "CUDA events around the kernel, after a warm-up; trees built on the CPU, not timed" }
            else { "wall clock around the rayon evaluation; trees built on the CPU, not timed" },
        "reference": if s.is_gpu() { "sbh_brute_force: float32 terms, float64 sums" } else { "float64 direct summation" },
        "slice": format!("z index {} of {}", plan.grid / 2, plan.grid),
    });
    let meta = meta::meta("sbh", &s.backend, params);
    dir.write(
        "meta.json",
        serde_json::to_string_pretty(&meta)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    let mut report = Report::new(TITLE);
    report.para(&format!(
        "{}; kernel −m/(r + 0.1), M sources uniform in the unit cube with mass 1/M, queries at the \
         centres of a {g}³ grid ({} queries), in grid and in shuffled order; BH β = {BETA}, SBH S = {S} \
         (64-ary tree: two octree levels per step, warp-coherent random streams); median of {} run(s). \
         Errors: absolute, against brute force.",
        meta::machine_line(&s.backend),
        plan.grid.pow(3),
        plan.repeats,
        g = plan.grid,
    ));
    report.para(DEFINITIONS);
    let mut points = Vec::new();
    let mut slices = None;
    let res = measure(s, &plan, k, &dir, &mut points, &mut slices);
    table(&mut report, &points);
    let answers = answer(&mut report, &points);
    let figs = figures(
        &dir,
        &plan,
        &points,
        slices.as_ref(),
        &meta::figure_note(&s.backend, None),
        &mut report,
    );
    let err = res.and(figs).err();
    finish(s, &dir, &mut report, meta, err.as_ref())?;
    if let Some(e) = err {
        return Err(e);
    }
    let headline = table_points(&points, "grid")
        .last()
        .map(|(m, bh, sbh)| {
            format!(
                "M = {}: BH β = 2 {} ms (median error {:.2e}), SBH S = 1 {} ms ({:.2e}). {}",
                fmt_n(*m),
                fmt_ms(bh.ms),
                bh.err.median,
                fmt_ms(sbh.ms),
                sbh.err.median,
                answers.first().cloned().unwrap_or_default()
            )
        })
        .unwrap_or_default();
    Ok(Summary {
        name: "sbh",
        title: TITLE.into(),
        headline,
        figures: vec![
            (
                "convergence-grid".into(),
                "error against time, grid queries".into(),
            ),
            (
                "convergence-random".into(),
                "error against time, random queries".into(),
            ),
            (
                "slice-bh".into(),
                "|error| of BH on the middle z slice".into(),
            ),
            (
                "slice-sbh".into(),
                "|error| of SBH on the middle z slice".into(),
            ),
        ],
    })
}

/// |error| of BH and SBH on the middle z slice (x fastest), and the grid's resolution.
struct Slices {
    res: usize,
    bh: Vec<f64>,
    sbh: Vec<f64>,
}

/// What the row-warp columns are.
const ROWS: &str = "Row warps: the same Barnes–Hut kernel and β with the authors' warps — 32 \
consecutive queries of the grid's row-major order (z, y, x) share one traversal — instead of \
Morton blocks. A warp then spans a third of a grid row, so a cell must be far from a long thin \
box: a stricter vote, lower errors and more time at the same β. The shuffled queries are sorted \
back into row-major order (not timed, as the Morton sort), so both orders run the same warps.";

/// What the quadrupole columns are.
const QUAD: &str = "Quadrupoles (ours, not the paper's): the same Barnes–Hut kernel, warps and β, \
with each far cell's second moment about its weighted centre added to its term (the Taylor term \
of the radial kernel, `term_quad_add`; 8 more floats per cell, written by the tree's summary). \
The paper's kernel −m/(r + δ) is not harmonic, so the trace of a cell's second moment does not \
drop out of its expansion: the monopole's error is mostly a bias of one sign, which this term \
removes. The errors then fall by orders of magnitude at the same β, for about twice the time, \
down to the floor of float32 summation (which grows with the list length: larger β is no better).";

/// Why the table has a column on the grid's nodes.
const NODES: &str = "Grid nodes: the same sources and methods with the queries on the nodes of \
the grid (spacing 1/(g − 1), the cube's faces, edges and corners included) instead of the centres \
of its cells. The issue describes the authors' queries as cell centres; their errors fit the \
nodes better: on the CPU at M = 2^15 (20000 of the 10^6 queries, 4 seeds) SBH with the paper's \
allocation gives mean / median 7.33e-4 / 5.07e-4 on the centres and 7.25e-4 / 5.00e-4 on the \
nodes, against their 7.3e-4 / 5.0e-4. Errors are per query, so the shuffled order (the same queries) has the same \
errors up to the draws.";

const HEADER: [&str; 15] = [
    "backend",
    "section",
    "m",
    "query_set",
    "order",
    "queries",
    "method",
    "beta",
    "samples",
    "repeats",
    "ms",
    "mean_abs_err",
    "median_abs_err",
    "max_abs_err",
    "reference",
];

fn measure(
    s: &Settings,
    plan: &Plan,
    k: KernelSpec,
    dir: &OutDir,
    points: &mut Vec<Point>,
    slices: &mut Option<Slices>,
) -> Result<(), ReproError> {
    let mut csv = Csv::create(dir.file("data.csv"), &HEADER)?;
    let runner = Runner {
        s,
        k,
        repeats: plan.repeats,
    };
    let mut record = |p: Point| -> Result<(), ReproError> {
        let (beta, samples) = match p.method {
            Method::Bh(b) | Method::BhRows(b) | Method::BhQuad(b) => (b.to_string(), String::new()),
            Method::Sbh(n) | Method::SbhPaper(n) => (String::new(), n.to_string()),
            Method::Brute => (String::new(), String::new()),
        };
        csv.row(&[
            s.backend.name().to_string(),
            p.section.into(),
            p.m.to_string(),
            p.set.into(),
            p.order.into(),
            p.queries.to_string(),
            p.method.name().into(),
            beta,
            samples,
            plan.repeats.to_string(),
            p.ms.to_string(),
            p.err.mean.to_string(),
            p.err.median.to_string(),
            p.err.max.to_string(),
            if s.is_gpu() {
                "gpu-f64-sums"
            } else {
                "cpu-f64"
            }
            .to_string(),
        ])?;
        points.push(p);
        Ok(())
    };
    let steps = plan.ms.len() * 14 + 2 * (SAMPLES.len() + 2 * BETAS.len() + 1);
    let bar = progress(steps as u64, "sbh");
    let grid = sb::grid_queries(plan.grid);
    let mut perm: Vec<usize> = (0..grid.len()).collect();
    warpkit::bh::scene::shuffle(&mut perm, s.seed);
    let shuffled: Vec<[f32; 3]> = perm.iter().map(|&i| grid[i]).collect();
    let (grid_order, shuffled_order) = (sb::query_order(&grid), sb::query_order(&shuffled));
    let nodes = sb::node_queries(plan.grid);
    let nodes_order = sb::query_order(&nodes);
    let mut conv_prep = None;
    for &m in &plan.ms {
        bar.set_message(format!("M = {}", fmt_n(m)));
        let prep = runner.prepare(m)?;
        let (reference, ms) = runner.reference(&prep, &grid)?;
        bar.inc(1);
        let pt = |order, method, ms, err| Point {
            section: "table",
            m,
            set: "grid",
            order,
            queries: grid.len(),
            method,
            ms,
            err,
        };
        record(pt("grid", Method::Brute, ms, ErrorStats::default()))?;
        let ref_shuffled: Vec<f64> = perm.iter().map(|&i| reference[i]).collect();
        for (order, q, qo, r) in [
            ("grid", &grid, &grid_order, &reference),
            ("shuffled", &shuffled, &shuffled_order, &ref_shuffled),
        ] {
            let methods = [
                Method::Bh(BETA),
                Method::BhRows(BETA),
                Method::BhQuad(BETA),
                Method::Sbh(S),
                Method::SbhPaper(S),
            ];
            for method in methods {
                let (v, ms) = runner.run(&prep, q, qo, method)?;
                record(pt(order, method, ms, sb::error_stats(k, &v, r)))?;
                bar.inc(1);
            }
        }
        // The same table on the grid's nodes (faces included): the other reading of "a 100³
        // grid", which moves the errors by a few percent.
        let (ref_nodes, _) = runner.reference(&prep, &nodes)?;
        bar.inc(1);
        for method in [Method::Bh(BETA), Method::Sbh(S)] {
            let (v, ms) = runner.run(&prep, &nodes, &nodes_order, method)?;
            record(Point {
                set: "nodes",
                queries: nodes.len(),
                ..pt("nodes", method, ms, sb::error_stats(k, &v, &ref_nodes))
            })?;
            bar.inc(1);
        }
        if m == plan.conv_m {
            conv_prep = Some(prep);
        }
    }
    let Some(prep) = conv_prep else {
        return Ok(());
    };
    let m = plan.conv_m;
    let nq = plan.conv_grid.pow(3);
    for (set, q) in [
        ("grid", sb::grid_queries(plan.conv_grid)),
        ("random", sb::random_queries(nq, s.seed)),
    ] {
        bar.set_message(format!("convergence, {set}"));
        let (reference, _) = runner.reference(&prep, &q)?;
        let q_order = sb::query_order(&q);
        bar.inc(1);
        let methods = SAMPLES
            .iter()
            .map(|&n| Method::Sbh(n))
            .chain(BETAS.iter().map(|&b| Method::Bh(b)))
            .chain(BETAS.iter().map(|&b| Method::BhQuad(b)));
        for method in methods {
            let (v, ms) = runner.run(&prep, &q, &q_order, method)?;
            let err = sb::error_stats(k, &v, &reference);
            record(Point {
                section: "convergence",
                m,
                set,
                order: "grid",
                queries: q.len(),
                method,
                ms,
                err,
            })?;
            // The slice images come from the table's configurations on the table's grid.
            if set == "grid" && plan.conv_grid == plan.grid {
                let abs = |i: usize| (sb::field(k, v[i] as f64) - sb::field(k, reference[i])).abs();
                let res = plan.grid;
                let z = res / 2;
                let slice: Vec<f64> = (0..res * res).map(|i| abs(z * res * res + i)).collect();
                let sl = slices.get_or_insert_with(|| Slices {
                    res,
                    bh: Vec::new(),
                    sbh: Vec::new(),
                });
                match method {
                    Method::Bh(b) if b == BETA => sl.bh = slice,
                    Method::Sbh(n) if n == S => sl.sbh = slice,
                    _ => {}
                }
            }
            bar.inc(1);
        }
    }
    // On the CPU backend the sweep's grid is smaller than the table's: take the slices from the
    // table's grid at the convergence M.
    if slices.is_none() {
        let (reference, _) = runner.reference(&prep, &grid)?;
        let res = plan.grid;
        let z = res / 2;
        let one = |method| -> Result<Vec<f64>, ReproError> {
            let (v, _) = runner.run(&prep, &grid, &grid_order, method)?;
            Ok((0..res * res)
                .map(|i| {
                    let j = z * res * res + i;
                    (sb::field(k, v[j] as f64) - sb::field(k, reference[j])).abs()
                })
                .collect())
        };
        let bh = one(Method::Bh(BETA))?;
        let sbh = one(Method::Sbh(S))?;
        *slices = Some(Slices { res, bh, sbh });
    }
    bar.finish_and_clear();
    Ok(())
}

mod report;
pub use report::verdict;
use report::{answer, figures, table, table_points};

#[cfg(test)]
mod tests;
