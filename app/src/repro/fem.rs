//! `repro fem`: the FEM seed's tables on this machine (Kiran, Sharma, Gautam 2019,
//! `shared/seeds/002_15294ab03a4d3f13.txt`) — hex8 stiffness assembly time per strategy and mesh
//! size, speedup over the thread-per-element colouring baseline measured in the same run, each
//! strategy's achieved bandwidth (its compulsory bytes, [`min_bytes`], over its median time)
//! against a device-to-device copy timed in the same run and the CSR traffic floors,
//! the Jacobian-method table (the paper's Table 1: warp shuffle, shared memory, atomics; 4 and 8
//! threads per row), colouring against atomics, and each strategy's error against the float64
//! CPU assembly.
//!
//! Meshes are unit-cube cantilevers of n³ elements (3 (n + 1)³ DOF; 128³ is 6,440,067 DOF, the
//! paper's "6.5 million DOF" problem size). The GPU times every `fem::gpu::Strategy` in float32
//! with CUDA events (zeroing of the values included); the CPU backend, which has no GPU kernels,
//! times the host assembly paths (coloured, atomic, serial) with the wall clock, at smaller sizes.

use super::output::{Csv, OutDir, Report, Table, progress};
use super::plot::{self, Axis, BarChart, LineChart, Scale, Series};
use super::{ReproError, Settings, Summary, finish, fmt_ms, meta};
use serde_json::json;
use warpkit::backend::Backend;
use warpkit::device::fem::{BLOCK_TABLE, ENTRIES, GEOMETRY_VALUES, NODES};
use warpkit::device::rng;
use warpkit::fem::gpu::Strategy;
use warpkit::fem::{Assembler, FemError, Material, Mesh, Precision, assemble, colour, csr, mesh};
use warpkit::runtime::Gpu;
use warpkit::stats::median;

mod bandwidth;
mod report;
pub use bandwidth::{
    CopyBandwidth, TRAFFIC_MODEL, fmt_bytes, min_bytes, rmw_bytes, write_once_bytes,
};
use bandwidth::{bandwidth_tables, copy_bandwidth};
use report::{figure_list, figures, opt, tables};

const TITLE: &str =
    "FEM hex8 stiffness assembly: strategies against the thread-per-element baseline";

/// The material of every run (steel).
pub const STEEL: Material = Material {
    young: 210e9,
    poisson: 0.3,
};

/// Default cube edges (elements per side) on the GPU: up to 128³ ≈ 6.4M DOF.
pub const GPU_SIZES: [usize; 5] = [16, 32, 64, 96, 128];
/// Default cube edges on the CPU backend.
pub const CPU_SIZES: [usize; 4] = [6, 8, 12, 16];
/// Edge of the jittered, shuffled mesh of the correctness table (smaller when every timed mesh
/// is: then the largest timed edge, at least 2).
pub const CHECK_EDGE: usize = 10;
/// Bounds on the relative Frobenius error against the float64 CPU assembly.
pub const TOL_F32: f64 = 1e-5;
pub const TOL_F64: f64 = 1e-12;

/// The paper's Table 1: warp assembly, 4 threads per row, 6.5M DOF, NVIDIA Tesla K40, "overall
/// run time" in seconds per Jacobian method: (method, seconds).
pub const PAPER_TABLE1_S: [(&str, f64); 3] = [
    ("warp shuffle", 1.03),
    ("shared memory", 1.09),
    ("atomics", 1.39),
];
/// The paper's speedup range over its thread-per-element colouring baseline (Tesla K40): 8.2× is
/// its abstract's maximum; 5.17× the lower end of its reported range (our copy of the seed is cut off
/// before its results section, so which strategy reached which value is not known here).
pub const PAPER_SPEEDUP: (f64, f64) = (5.17, 8.2);

/// Said under every table with the paper's numbers.
pub const CAVEAT: &str = "Paper: Kiran, Sharma, Gautam (2019), NVIDIA Tesla K40 (Kepler, 2013), \
its own code and precision. Our GPU (or CPU) differs entirely: compare speedups and ratios \
measured in the same run, not absolute times. Our copy of the paper stops before its results \
section: only its abstract's \"up to 8.2×\" and its Table 1 survive; 5.17× (the low end of its \
range) is the low end the paper reports elsewhere, and which strategy reached which speedup is not in our copy.";

/// What is timed: a GPU strategy or a host assembly path.
pub use warpkit::fem::Method;

/// A method in a precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub method: Method,
    pub double: bool,
}

impl Run {
    pub fn name(self) -> &'static str {
        match self.method {
            Method::Gpu(s) => s.name(),
            Method::CpuColoured => "cpu-coloured",
            Method::CpuAtomic => "cpu-atomic",
            Method::CpuSerial => "cpu-serial",
        }
    }
    pub fn precision(self) -> &'static str {
        if self.double { "f64" } else { "f32" }
    }
    /// The label of tables and figures: the name, with the precision where a backend times both.
    pub fn label(self) -> String {
        match self.method {
            Method::Gpu(s) => s.name().to_string(),
            _ => format!("{} {}", self.name(), self.precision()),
        }
    }
    fn short(self) -> &'static str {
        use Strategy::*;
        match self.method {
            Method::Gpu(s) => match s {
                Thread => "T",
                Warp4 => "W4",
                Warp8 => "W8",
                ThreadAtomic => "T-A",
                Warp4Atomic => "W4-A",
                Warp4JacShared => "W4-JS",
                Warp8JacShared => "W8-JS",
                Warp4JacAtomic => "W4-JA",
                Warp8JacAtomic => "W8-JA",
                Ppni4 => "P4",
                Ppni8 => "P8",
                Ppni4Blocks => "P4B",
                Ppni8Blocks => "P8B",
                Ppni4BlocksAtomic => "P4B-A",
                Ppni8BlocksAtomic => "P8B-A",
                TwoKernel => "2K",
                Rows => "R",
                RowsRounds => "R-R",
            },
            Method::CpuColoured if self.double => "col-64",
            Method::CpuColoured => "col-32",
            Method::CpuAtomic => "atom-32",
            Method::CpuSerial => "serial-64",
        }
    }
    /// The paper's figure for this strategy (speedup over its thread baseline, or its Table 1
    /// time relative to warp shuffle).
    pub fn paper(self) -> String {
        use Strategy::*;
        let (lo, hi) = PAPER_SPEEDUP;
        match self.method {
            Method::Gpu(Thread) => "1 (baseline)".into(),
            Method::Gpu(Warp4 | Warp8 | Ppni4 | Ppni8 | TwoKernel) => {
                format!("{lo}–{hi}× (its range †)")
            }
            Method::Gpu(Warp4JacShared) => format!(
                "Table 1: {:.3}× the shuffle time",
                PAPER_TABLE1_S[1].1 / PAPER_TABLE1_S[0].1
            ),
            Method::Gpu(Warp4JacAtomic) => format!(
                "Table 1: {:.3}× the shuffle time",
                PAPER_TABLE1_S[2].1 / PAPER_TABLE1_S[0].1
            ),
            Method::Gpu(Warp8JacShared | Warp8JacAtomic) => {
                "– (Table 1 covers 4 threads/row)".into()
            }
            Method::Gpu(_) => "– (beyond the paper)".into(),
            Method::CpuColoured if !self.double => "1 (baseline, CPU analogue)".into(),
            _ => "– (CPU path)".into(),
        }
    }
}

/// The methods a backend times, the baseline first: the GPU's strategies in float32; the host
/// paths in float32 and float64 (the serial one only there).
pub fn runs(backend: &Backend) -> Vec<Run> {
    let native = Method::native(backend);
    let single = native
        .iter()
        .filter(|&&m| m != Method::CpuSerial)
        .map(|&method| Run {
            method,
            double: false,
        });
    let double = native
        .iter()
        .filter(|&&m| matches!(m, Method::CpuColoured | Method::CpuSerial))
        .map(|&method| Run {
            method,
            double: true,
        });
    single.chain(double).collect()
}

/// One timed (method, size).
#[derive(Clone, Debug)]
pub struct Row {
    pub run: Run,
    pub edge: usize,
    pub elements: usize,
    pub nodes: usize,
    pub dofs: usize,
    pub nnz: usize,
    pub colours: usize,
    pub ms: f64,
    pub min_ms: f64,
    /// The baseline's time over this one's, at the same size in the same run.
    pub speedup: f64,
    /// Relative Frobenius difference from the baseline's matrix at this size.
    pub rel_diff: f64,
}

/// One correctness check.
#[derive(Clone, Debug)]
pub struct Check {
    pub run: Run,
    pub edge: usize,
    pub error: f64,
    pub bound: f64,
}

/// Host and GPU bytes a run at edge `n` needs ([`warpkit::fem::estimate_bytes`] of the n³ cube).
pub fn estimate_bytes(n: usize, gpu: bool) -> (usize, usize) {
    warpkit::fem::estimate_bytes(n.pow(3), (n + 1).pow(3), gpu)
}

/// Checks the edges: each ≥ 1, within the kernels' 32-bit indexing and the memory at hand.
pub fn check_sizes(backend: &Backend, sizes: &[usize]) -> Result<(), ReproError> {
    let bad = |n: usize, why: String| {
        Err(ReproError::InvalidSizes {
            sizes: n.to_string(),
            why,
        })
    };
    if sizes.is_empty() {
        return Err(ReproError::InvalidSizes {
            sizes: String::new(),
            why: "give at least one cube edge (elements per side), e.g. --sizes 8,16".into(),
        });
    }
    for &n in sizes {
        if n == 0 {
            return bad(n, "a mesh needs at least one element per side".into());
        }
        let e = n.checked_pow(3).unwrap_or(usize::MAX);
        if e > (u32::MAX / warpkit::device::WARP_SIZE) as usize
            || 243 * (n + 1).pow(3) > u32::MAX as usize
        {
            return bad(
                n,
                format!(
                    "{n}³ elements exceed the kernels' 32-bit CSR positions (at most 258 per side)"
                ),
            );
        }
        let (host, _) = estimate_bytes(n, backend.is_gpu());
        if let Some(s) = warpkit::backend::memory_shortfall(host) {
            return bad(n, format!("{n}³ elements need {s}"));
        }
    }
    Ok(())
}

pub fn run(s: &Settings) -> Result<Summary, ReproError> {
    let mut sizes = s
        .fem_sizes
        .clone()
        .unwrap_or_else(|| s.pick(GPU_SIZES.to_vec(), CPU_SIZES.to_vec()));
    check_sizes(&s.backend, &sizes)?;
    sizes.sort_unstable();
    sizes.dedup();
    let repeats = s.repeats_or(7, 3);
    let check_edge = CHECK_EDGE
        .min(sizes.last().copied().unwrap_or(CHECK_EDGE))
        .max(2);
    let runs = runs(&s.backend);
    let dir = s.dir("fem")?;
    let params = json!({
        "sizes": sizes, "mesh": "cantilever, unit cube, n³ hex8 elements, 3 DOF per node",
        "material": { "young": STEEL.young, "poisson": STEEL.poisson },
        "strategies": runs.iter().map(|r| format!("{} {}", r.name(), r.precision())).collect::<Vec<_>>(),
        "repeats": repeats, "statistic": "median",
        "timing": if s.is_gpu() { "CUDA events around zeroing + all launches, after one warm-up" }
            else { "wall clock around the host assembly (allocation included)" },
        "baseline": runs[0].label(),
        "correctness_mesh": format!("{check_edge}³, interior nodes jittered ±20% of a cell, elements shuffled"),
        "tolerance": { "f32": TOL_F32, "f64": TOL_F64 },
        "paper": { "gpu": "NVIDIA Tesla K40", "speedup_range": [PAPER_SPEEDUP.0, PAPER_SPEEDUP.1],
            "table1_seconds_4_threads_per_row": PAPER_TABLE1_S.iter().map(|(m, t)| json!({"method": m, "s": t})).collect::<Vec<_>>() },
    });
    let meta = meta::write(&dir, "fem", &s.backend, params)?;
    let mut report = Report::new(TITLE);
    report.para(&format!(
        "{}; cantilever meshes of n³ hex8 elements (unit cube, 3 DOF per node, E = 210 GPa, \
         ν = 0.3), {}; median of {repeats} assemblies per point{}. Speedups are over `{}` at the \
         same size in the same run.",
        meta::machine_line(&s.backend),
        if s.is_gpu() {
            "float32"
        } else {
            "float32 and float64 as labelled"
        },
        if s.is_gpu() {
            " after a warm-up, CUDA events around the zeroing of the values and every launch"
        } else {
            ", wall time. The CPU backend has no GPU kernels: it times the host assembly paths \
             (coloured by rayon per colour — the baseline —, atomic without colouring, serial), \
             so only the colouring-against-atomics comparison carries over; run with \
             `--backend gpu` for the paper's strategies"
        },
        runs[0].label()
    ));
    let mut rows = Vec::new();
    let mut checks = Vec::new();
    let mut copy_bw = None;
    let res = correctness(s, &runs, check_edge, &mut checks)
        .and_then(|()| measure(s, &sizes, &runs, repeats, &dir, &mut rows, &mut copy_bw));
    tables(s, &mut report, &runs, &sizes, &rows, &checks, copy_bw);
    let figs = figures(
        &dir,
        &runs,
        &rows,
        &meta::figure_note(&s.backend, None),
        &mut report,
    );
    let err = res.and(figs).err();
    let mut meta = meta;
    meta["correctness"] = checks
        .iter()
        .map(|c| json!({"strategy": c.run.name(), "precision": c.run.precision(), "rel_frobenius": c.error, "bound": c.bound}))
        .collect::<Vec<_>>()
        .into();
    if let Some(c) = copy_bw {
        meta["copy_bandwidth"] = json!({
            "buffer_bytes": c.buffer, "repeats": c.repeats, "median_ms": c.ms,
            "gb_s_read_plus_write": c.gb_s(),
            "timing": "cudaMemcpyDtoD of a float32 buffer between CUDA events, after a warm-up",
        });
    }
    finish(s, &dir, &mut report, meta, err.as_ref())?;
    if let Some(e) = err {
        return Err(e);
    }
    Ok(Summary {
        name: "fem",
        title: TITLE.into(),
        headline: headline(&rows),
        figures: figure_list(&runs, &rows),
    })
}

fn headline(rows: &[Row]) -> String {
    let Some(edge) = rows.iter().map(|r| r.edge).max() else {
        return String::new();
    };
    let at: Vec<&Row> = rows.iter().filter(|r| r.edge == edge).collect();
    let best = at.iter().min_by(|a, b| a.ms.total_cmp(&b.ms));
    let base = at.first();
    match (best, base) {
        (Some(b), Some(t)) => format!(
            "{edge}³ elements ({} DOF): best `{}` {} ms, {:.2}× the `{}` baseline ({} ms); the \
             paper reports {}–{}× on a Tesla K40",
            group_digits(b.dofs),
            b.run.label(),
            fmt_ms(b.ms),
            b.speedup,
            t.run.label(),
            fmt_ms(t.ms),
            PAPER_SPEEDUP.0,
            PAPER_SPEEDUP.1
        ),
        _ => String::new(),
    }
}

/// `1234567` as `1,234,567`.
pub fn group_digits(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (k, c) in s.chars().enumerate() {
        if k > 0 && (s.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A unit-cube cantilever of n³ elements, validated, coloured and with its pattern.
struct Problem {
    mesh: Mesh,
    colouring: colour::Colouring,
    pattern: csr::Pattern,
}

impl Problem {
    fn new(mesh: Mesh) -> Result<Self, FemError> {
        warpkit::fem::validate(&mesh, &STEEL)?;
        let colouring = colour::greedy(&mesh);
        colour::verify(&mesh, &colouring)?;
        let pattern = csr::Pattern::new(&mesh)?;
        Ok(Problem {
            mesh,
            colouring,
            pattern,
        })
    }
}

/// The correctness mesh: interior nodes moved by up to ±20% of a cell, elements shuffled, so no
/// strategy can profit from regular geometry or element order.
fn jittered(n: usize, seed: u64) -> Result<Mesh, FemError> {
    let mut m = mesh::cantilever([1.0; 3], [n; 3])?;
    let h = 1.0 / n as f64;
    for (k, p) in m.nodes.iter_mut().enumerate() {
        for (d, x) in p.iter_mut().enumerate() {
            if *x > 1e-12 && *x < 1.0 - 1e-12 {
                *x += 0.4 * h * (rng::uniform_f32(seed, (3 * k + d) as u64) as f64 - 0.5);
            }
        }
    }
    for i in (1..m.elements.len()).rev() {
        let j = (rng::draw_u64(seed + 1, i as u64) % (i as u64 + 1)) as usize;
        m.elements.swap(i, j);
    }
    Ok(m)
}

/// Every run (GPU: every strategy in f32 and f64) against the float64 CPU assembly.
fn correctness(
    s: &Settings,
    runs: &[Run],
    edge: usize,
    checks: &mut Vec<Check>,
) -> Result<(), ReproError> {
    let p = Problem::new(jittered(edge, s.seed)?)?;
    let reference = assemble::cpu::<f64>(&p.mesh, &STEEL, &p.colouring, &p.pattern)?;
    let mut all: Vec<Run> = Vec::new();
    for &r in runs {
        for double in [false, true] {
            let r = Run { double, ..r };
            if !all.contains(&r) {
                all.push(r);
            }
        }
    }
    // The serial path exists in f64 only.
    all.retain(|r| !(r.method == Method::CpuSerial && !r.double));
    for r in all {
        let error = if r.double {
            let v = assemble_once::<f64>(s, r, &p)?;
            assemble::relative_frobenius(&v, &reference)
        } else {
            let v = assemble_once::<f32>(s, r, &p)?;
            assemble::relative_frobenius(&v, &reference)
        };
        let bound = if r.double { TOL_F64 } else { TOL_F32 };
        checks.push(Check {
            run: r,
            edge,
            error,
            bound,
        });
    }
    Ok(())
}

/// One untimed assembly of `p` by `r` (`T` must match `r.double`) on a fresh device mesh.
fn assemble_once<T: Precision>(s: &Settings, r: Run, p: &Problem) -> Result<Vec<T>, ReproError> {
    let a = Assembler::<T>::new(&s.backend, &p.mesh, &p.colouring, &p.pattern);
    Ok(a.assemble(r.method, &STEEL)?)
}

const CSV_HEADER: [&str; 21] = [
    "backend",
    "strategy",
    "precision",
    "nx",
    "ny",
    "nz",
    "elements",
    "dofs",
    "nnz",
    "colours",
    "repeats",
    "median_ms",
    "min_ms",
    "speedup_vs_baseline",
    "baseline",
    "rel_diff_vs_baseline",
    "nodes",
    "model_bytes",
    "achieved_gb_s",
    "copy_gb_s",
    "percent_of_copy",
];

fn measure(
    s: &Settings,
    sizes: &[usize],
    runs: &[Run],
    repeats: usize,
    dir: &OutDir,
    rows: &mut Vec<Row>,
    copy_bw: &mut Option<CopyBandwidth>,
) -> Result<(), ReproError> {
    let mut csv = Csv::create(dir.file("data.csv"), &CSV_HEADER)?;
    let bar = progress((sizes.len() * runs.len()) as u64, "fem");
    if let Some(gpu) = s.backend.gpu() {
        bar.set_message("device-to-device copy bandwidth");
        // At least the largest mesh's float32 values (243 per node bounds nnz), at least 256 MiB
        // (beyond L2), each of the two buffers within a quarter of the free memory.
        let largest = sizes
            .iter()
            .map(|&n| 243 * (n + 1).pow(3))
            .max()
            .unwrap_or(0);
        let free = gpu.memory().map_err(FemError::from)?.0;
        let values = largest.max(1 << 26).min(free / 16).max(1);
        *copy_bw = Some(copy_bandwidth(gpu, values, repeats.max(5))?);
    }
    let copy = *copy_bw;
    for &n in sizes {
        bar.set_message(format!("{n}³ mesh"));
        if let Some((free, total)) = s.backend.device_memory().map_err(FemError::from)? {
            let (_, need) = estimate_bytes(n, true);
            if need > free {
                return Err(ReproError::InvalidSizes {
                    sizes: n.to_string(),
                    why: format!(
                        "{n}³ elements need about {} MiB of GPU memory; {} MiB of {} MiB are free",
                        need >> 20,
                        free >> 20,
                        total >> 20
                    ),
                });
            }
        }
        let p = Problem::new(mesh::cantilever([1.0; 3], [n; 3])?)?;
        // One device mesh per size for every float32 strategy, uploaded before any timing.
        let single = Assembler::<f32>::new(&s.backend, &p.mesh, &p.colouring, &p.pattern);
        single.upload()?;
        let mut baseline: Option<(f64, Vec<f64>)> = None;
        for &r in runs {
            bar.set_message(format!("{n}³ {}", r.label()));
            let (times, values) = time_run(s, r, &p, &single, repeats)?;
            let ms = median(&times).unwrap_or(f64::NAN);
            let min_ms = times.iter().copied().fold(f64::INFINITY, f64::min);
            let (speedup, rel_diff) = match &baseline {
                None => {
                    baseline = Some((ms, values));
                    (1.0, 0.0)
                }
                Some((t0, b)) => (t0 / ms, assemble::relative_frobenius(&values, b)),
            };
            let row = Row {
                run: r,
                edge: n,
                elements: p.mesh.elements.len(),
                nodes: p.mesh.nodes.len(),
                dofs: p.mesh.dofs(),
                nnz: p.pattern.nnz(),
                colours: p.colouring.colours(),
                ms,
                min_ms,
                speedup,
                rel_diff,
            };
            csv.row(&[
                s.backend.name().to_string(),
                r.name().to_string(),
                r.precision().to_string(),
                n.to_string(),
                n.to_string(),
                n.to_string(),
                row.elements.to_string(),
                row.dofs.to_string(),
                row.nnz.to_string(),
                row.colours.to_string(),
                repeats.to_string(),
                ms.to_string(),
                min_ms.to_string(),
                speedup.to_string(),
                runs[0].label(),
                rel_diff.to_string(),
                row.nodes.to_string(),
                opt(row.model_bytes().map(|b| b as f64)),
                opt(row.achieved_gb_s()),
                opt(copy
                    .map(|c| c.gb_s())
                    .filter(|_| row.model_bytes().is_some())),
                opt(row.percent_of(copy)),
            ])?;
            rows.push(row);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// `repeats` timed assemblies (ms) and the last one's values in f64.
fn time_run(
    s: &Settings,
    r: Run,
    p: &Problem,
    single: &Assembler<f32>,
    repeats: usize,
) -> Result<(Vec<f64>, Vec<f64>), ReproError> {
    if r.double {
        let a = Assembler::<f64>::new(&s.backend, &p.mesh, &p.colouring, &p.pattern);
        return Ok(a.time(r.method, &STEEL, repeats)?);
    }
    let (times, v) = single.time(r.method, &STEEL, repeats)?;
    Ok((times, v.into_iter().map(f64::from).collect()))
}

fn size_label(n: usize) -> String {
    format!("{n}³ ({} DOF)", group_digits(3 * (n + 1).pow(3)))
}

fn find(rows: &[Row], r: Run, edge: usize) -> Option<&Row> {
    rows.iter().find(|x| x.run == r && x.edge == edge)
}
