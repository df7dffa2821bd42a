//! `repro gravity`: the accuracy–time frontier of every gravity kernel and option —
//! the seed's vote kernel, the warp-group kernels `group` and `group2`, each ± quadrupoles, and
//! `group2` with Gadget's relative opening criterion — on the lattice, uniform-cube and Plummer
//! scenes, against float64 direct summation. Writes `data.csv` (one row per configuration), an
//! equal-error table (the fastest configuration meeting each median error level) and one pareto
//! figure per scene and N (gravity time against median error, one series per kernel/option).

use super::measure::{bodies_for, reference, sample_indices};
use super::output::{Csv, OutDir, Report, Table, progress};
use super::plot::{self, Axis, LineChart, Scale, Series};
use super::{ReproError, Settings, Summary, finish, fmt_ms, fmt_n, meta, seed};
use serde_json::json;
use warpkit::backend::Backend;
use warpkit::bh::gpu::{BhError, Traversal};
use warpkit::bh::scene::{self, Scene};
use warpkit::bh::{Mode, Options, Params, Relative, rate, relative_errors};
use warpkit::device::bh::Body;

/// Opening angles of the geometric criterion: steps of 0.025 where the error levels of the
/// equal-error table fall (a coarser grid reports the next slower point as the level's time).
pub const THETAS: [f32; 12] = [
    0.3, 0.325, 0.35, 0.375, 0.4, 0.425, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8,
];
/// α of the relative criterion (`group2` only); its first pass runs at [`PREPASS_THETA`].
pub const ALPHAS: [f32; 8] = [0.0005, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.006, 0.008];
/// θ of the relative criterion's first pass (timed apart, not in the step).
pub const PREPASS_THETA: f32 = 0.5;
/// Median error levels of the equal-error table.
pub const LEVELS: [f64; 4] = [1e-3, 5e-4, 2e-4, 1e-4];
/// Sizes: every kernel at the first, `group2` variants only at the others.
pub const GPU_SIZES: [usize; 2] = [1 << 20, 1 << 22];
pub const CPU_SIZES: [usize; 2] = [1 << 12, 1 << 13];
/// Above this N on the GPU the float64 reference is summed on the host for a sample of bodies
/// (every body below it, by the GPU's float64 kernel).
pub const GPU_FULL_REFERENCE_MAX: usize = 1 << 20;
/// Bodies in the reference sample: GPU above [`GPU_FULL_REFERENCE_MAX`], and always on the CPU.
pub const GPU_REFERENCE_SAMPLE: usize = 2048;
pub const CPU_REFERENCE_SAMPLE: usize = 512;

const TITLE: &str = "Gravity: the accuracy–time frontier of every kernel and option";

/// The scenes: name, generator, softening. The uniform cube's ε is the ε = 0.01 of a
/// cube of side 6 (the benchmark's setting), scaled to our side 1.
pub const SCENES: [(&str, Scene, f32); 3] = [
    ("lattice", Scene::Lattice, 0.05),
    ("uniform", Scene::Uniform, 0.01 / 6.0),
    ("plummer", Scene::Plummer, 0.05),
];

/// A kernel and its options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Variant {
    pub kernel: Traversal,
    pub quadrupole: bool,
    /// Gadget's relative criterion (swept over α) instead of θ.
    pub relative: bool,
}

impl Variant {
    pub fn label(&self) -> String {
        let k = match self.kernel {
            Traversal::Vote => "vote",
            Traversal::Group => "group",
            Traversal::Group2 => "group2",
        };
        format!(
            "{k}{}{}",
            if self.relative { "-rel" } else { "" },
            if self.quadrupole { "+quad" } else { "" }
        )
    }
}

/// Every variant, in the figures' order.
pub const VARIANTS: [Variant; 7] = [
    v(Traversal::Vote, false, false),
    v(Traversal::Group, false, false),
    v(Traversal::Group, true, false),
    v(Traversal::Group2, false, false),
    v(Traversal::Group2, true, false),
    v(Traversal::Group2, false, true),
    v(Traversal::Group2, true, true),
];

const fn v(kernel: Traversal, quadrupole: bool, relative: bool) -> Variant {
    Variant {
        kernel,
        quadrupole,
        relative,
    }
}

/// `x` as the decimal it was written as (`0.3`, not `0.30000001192092896`) for `meta.json`.
fn dec(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

/// One measured configuration.
#[derive(Clone, Debug)]
pub struct Row {
    pub scene: &'static str,
    pub n: usize,
    pub variant: Variant,
    pub theta: f32,
    pub alpha: Option<f32>,
    pub step_ms: f64,
    pub gravity_ms: f64,
    pub prepass_ms: f64,
    pub median_err: f64,
    pub p99_err: f64,
    pub max_err: f64,
    pub mean_err: f64,
    /// `None` for the vote kernel (no counter).
    pub rate: Option<rate::Rate>,
}

impl Row {
    fn setting(&self) -> String {
        match self.alpha {
            Some(a) => format!("α {a}"),
            None => format!("θ {}", self.theta),
        }
    }
    fn tflops(&self) -> Option<f64> {
        self.rate.map(|r| r.tflops(self.gravity_ms))
    }
    fn per_body(&self) -> Option<f64> {
        self.rate.map(|r| r.interactions as f64 / self.n as f64)
    }
}

pub fn run(s: &Settings) -> Result<Summary, ReproError> {
    let sizes: Vec<usize> = match s.n {
        Some(n) => vec![n],
        None => s.pick(GPU_SIZES, CPU_SIZES).to_vec(),
    };
    let repeats = s.repeats_or(3, 1);
    let dir = s.dir("gravity")?;
    let params = json!({
        "sizes": sizes, "thetas": THETAS.map(dec), "alphas": ALPHAS.map(dec),
        "prepass_theta": PREPASS_THETA,
        "theta_max": Relative::THETA_MAX,
        "scenes": SCENES.iter().map(|(name, _, eps)| json!({"name": name, "eps": dec(*eps)})).collect::<Vec<_>>(),
        "variants": VARIANTS.iter().map(Variant::label).collect::<Vec<_>>(),
        "all_kernels_at": sizes[0], "group2_only_above": sizes[0],
        "mode": "shuffled, tree-sorted", "repeats": repeats, "seed": s.seed, "G": 1.0,
        "error_reference": "float64 direct summation",
        "error_bodies": if s.is_gpu() {
            format!("every body up to N = {GPU_FULL_REFERENCE_MAX}, {GPU_REFERENCE_SAMPLE} evenly spaced above")
        } else { format!("{CPU_REFERENCE_SAMPLE} evenly spaced") },
        "flops": format!("{} per body–body or body–monopole, {} per body–quadrupole", rate::FLOPS_MONOPOLE, rate::FLOPS_QUADRUPOLE),
        "quadrupole_share": format!("GPU: from {} groups replayed on the host; CPU: every group", rate::SAMPLE_GROUPS),
    });
    let meta = meta::write(&dir, "gravity", &s.backend, params)?;
    let mut report = Report::new(TITLE);
    report.para(&format!(
        "{}; N = {}; every kernel at N = {}, `group2` variants only at larger N. Scenes shuffled \
         and tree-sorted; ε per scene (lattice 0.05, uniform cube of side 1 {:.5} — \
         0.01 at side 6 —, Plummer 0.05); median of {repeats} run(s). θ ∈ {THETAS:?}; the \
         relative criterion (`-rel`, `group2` only) at α ∈ {ALPHAS:?} with θ_max {} and its first \
         pass at θ {PREPASS_THETA} (timed apart, not in the step: a simulation has the \
         accelerations from its last step). Errors |a − a_ref| / |a_ref| against float64 direct \
         summation on {}. Counted TFLOP/s: {} flops per body–body or body–monopole interaction, \
         {} per body–quadrupole, over the gravity stage; interactions as the group kernels count \
         them (list entries × group size{}); the vote kernel counts none (–).",
        meta::machine_line(&s.backend),
        sizes
            .iter()
            .map(|&n| fmt_n(n))
            .collect::<Vec<_>>()
            .join(", "),
        fmt_n(sizes[0]),
        SCENES[1].2,
        Relative::THETA_MAX,
        if s.is_gpu() {
            format!(
                "every body up to N = {} and {GPU_REFERENCE_SAMPLE} evenly spaced bodies above",
                fmt_n(GPU_FULL_REFERENCE_MAX)
            )
        } else {
            format!("{CPU_REFERENCE_SAMPLE} evenly spaced bodies")
        },
        rate::FLOPS_MONOPOLE,
        rate::FLOPS_QUADRUPOLE,
        if s.is_gpu() {
            format!(
                "; the quadrupole share from {} groups' walks replayed on the host",
                rate::SAMPLE_GROUPS
            )
        } else {
            "; on the CPU twin every group's walk is replayed".into()
        },
    ));
    if !s.is_gpu() {
        report.para(
            "CPU backend: the twins' times (rayon), not the kernels'; the twin of the relative \
             criterion runs its first pass inside the gravity time.",
        );
    }
    let mut rows = Vec::new();
    let res = measure(s, &sizes, repeats, &dir, &mut rows);
    equal_error(&mut report, &rows);
    all_rows(&mut report, &rows);
    let (figs, fig_err) = match figures(
        &dir,
        &rows,
        &meta::figure_note(&s.backend, None),
        &mut report,
    ) {
        Ok(f) => (f, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    let err = res.err().or(fig_err);
    finish(s, &dir, &mut report, meta, err.as_ref())?;
    if let Some(e) = err {
        return Err(e);
    }
    Ok(Summary {
        name: "gravity",
        title: TITLE.into(),
        headline: headline(&rows),
        figures: figs,
    })
}

/// The configurations measured at `n` (the first size: all; others: `group2` variants).
fn configs(first: bool) -> Vec<(Variant, f32, Option<f32>)> {
    let mut c = Vec::new();
    for var in VARIANTS {
        if !first && var.kernel != Traversal::Group2 {
            continue;
        }
        if var.relative {
            c.extend(ALPHAS.iter().map(|&a| (var, PREPASS_THETA, Some(a))));
        } else {
            c.extend(THETAS.iter().map(|&t| (var, t, None)));
        }
    }
    c
}

fn measure(
    s: &Settings,
    sizes: &[usize],
    repeats: usize,
    dir: &OutDir,
    rows: &mut Vec<Row>,
) -> Result<(), ReproError> {
    let mut csv = Csv::create(
        dir.file("data.csv"),
        &[
            "scene",
            "n",
            "kernel",
            "theta",
            "alpha",
            "step_ms",
            "gravity_ms",
            "prepass_ms",
            "median_err",
            "p99_err",
            "max_err",
            "mean_err",
            "error_bodies",
            "interactions_per_body",
            "quadrupole_share",
            "interactions_per_s",
            "tflops",
            "repeats",
            "backend",
        ],
    )?;
    let total: usize = sizes
        .iter()
        .enumerate()
        .map(|(k, _)| configs(k == 0).len() * SCENES.len())
        .sum();
    let bar = progress(total as u64, "gravity");
    for (k, &n) in sizes.iter().enumerate() {
        for (name, sc, eps) in SCENES {
            bar.set_message(format!("{name} {}: reference", fmt_n(n)));
            let bodies = bodies_for(&scene::generate(sc, n, s.seed), Mode::Sorted, s.seed);
            let base = Params {
                eps,
                ..Params::default()
            };
            let (targets, refs) = reference_for(&s.backend, &bodies, &base)?;
            for (var, theta, alpha) in configs(k == 0) {
                bar.set_message(format!(
                    "{name} {}: {} θ {theta} α {alpha:?}",
                    fmt_n(n),
                    var.label()
                ));
                let p = Params { theta, ..base };
                let mut o = Options {
                    sorted: true,
                    traversal: var.kernel,
                    quadrupole: var.quadrupole,
                    relative: alpha.map(|alpha| Relative {
                        alpha,
                        theta_max: Relative::THETA_MAX,
                    }),
                    ..Default::default()
                };
                o.keep_tree = rate::needs_tree(&o, s.is_gpu());
                let timed = warpkit::bh::evaluate_median(&s.backend, &bodies, &p, &o, repeats)?;
                let picked: Vec<_> = targets.iter().map(|&i| timed.last.acc[i]).collect();
                let mut e = relative_errors(&picked, &refs);
                e.sort_by(f64::total_cmp);
                let q = |f: f64| e[((e.len() as f64 * f) as usize).min(e.len() - 1)];
                let row = Row {
                    scene: name,
                    n,
                    variant: var,
                    theta,
                    alpha,
                    step_ms: timed.median_total,
                    gravity_ms: timed.median.gravity,
                    prepass_ms: timed.median.prepass,
                    median_err: q(0.5),
                    p99_err: q(0.99),
                    max_err: e[e.len() - 1],
                    mean_err: e.iter().sum::<f64>() / e.len() as f64,
                    rate: rate::counted(&timed.last, &bodies, &p, &o),
                };
                let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
                csv.row(&[
                    name.to_string(),
                    n.to_string(),
                    var.label(),
                    theta.to_string(),
                    alpha.map_or(String::new(), |a| a.to_string()),
                    row.step_ms.to_string(),
                    row.gravity_ms.to_string(),
                    row.prepass_ms.to_string(),
                    row.median_err.to_string(),
                    row.p99_err.to_string(),
                    row.max_err.to_string(),
                    row.mean_err.to_string(),
                    e.len().to_string(),
                    opt(row.per_body()),
                    opt(row.rate.map(|r| r.quadrupole_share)),
                    opt(row.rate.map(|r| r.per_second(row.gravity_ms))),
                    opt(row.tflops()),
                    repeats.to_string(),
                    s.backend.name().to_string(),
                ])?;
                rows.push(row);
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// The bodies whose errors are measured and their float64 accelerations: every body by the GPU's
/// float64 kernel up to [`GPU_FULL_REFERENCE_MAX`], else an evenly spaced sample summed on the
/// host (as `warpkit gravity --check` does).
fn reference_for(
    backend: &Backend,
    bodies: &[Body],
    p: &Params,
) -> Result<(Vec<usize>, Vec<[f64; 3]>), BhError> {
    let n = bodies.len();
    if backend.is_gpu() && n <= GPU_FULL_REFERENCE_MAX {
        let all: Vec<usize> = (0..n).collect();
        let r = reference(backend, bodies, &all, p)?;
        return Ok((all, r));
    }
    let k = if backend.is_gpu() {
        GPU_REFERENCE_SAMPLE
    } else {
        CPU_REFERENCE_SAMPLE
    };
    let idx = sample_indices(n, k);
    let r = warpkit::bh::cpu::brute_force_f64(bodies, &idx, p);
    Ok((idx, r))
}

/// The fastest configuration (gravity time) per scene, N and level with median ≤ level.
fn equal_error(report: &mut Report, rows: &[Row]) {
    report.heading("At equal error: the fastest configuration");
    report.para(
        "For each scene, N and median error level: the configuration with the least gravity time \
         among those with median error ≤ the level (– when none reaches it). The step adds the \
         tree stages (bounding box, build, moments, sort).",
    );
    let mut t = Table::new(&[
        "scene",
        "N",
        "median ≤",
        "fastest",
        "gravity ms",
        "step ms",
        "median",
        "p99",
        "TFLOP/s",
    ]);
    for (name, _, _) in SCENES {
        let mut ns: Vec<usize> = rows
            .iter()
            .filter(|r| r.scene == name)
            .map(|r| r.n)
            .collect();
        ns.dedup();
        for n in ns {
            for level in LEVELS {
                let best = rows
                    .iter()
                    .filter(|r| r.scene == name && r.n == n && r.median_err <= level)
                    .min_by(|a, b| a.gravity_ms.total_cmp(&b.gravity_ms));
                t.push(match best {
                    Some(r) => vec![
                        name.into(),
                        fmt_n(n),
                        format!("{level:.0e}"),
                        format!("{} {}", r.variant.label(), r.setting()),
                        fmt_ms(r.gravity_ms),
                        fmt_ms(r.step_ms),
                        format!("{:.2e}", r.median_err),
                        format!("{:.2e}", r.p99_err),
                        r.tflops().map_or("–".into(), rate::fmt_tflops),
                    ],
                    None => vec![
                        name.into(),
                        fmt_n(n),
                        format!("{level:.0e}"),
                        "–".into(),
                        "–".into(),
                        "–".into(),
                        "–".into(),
                        "–".into(),
                        "–".into(),
                    ],
                });
            }
        }
    }
    report.table(&t);
}

fn all_rows(report: &mut Report, rows: &[Row]) {
    report.heading("Every configuration");
    let mut t = Table::new(&[
        "scene",
        "N",
        "kernel",
        "θ / α",
        "gravity ms",
        "step ms",
        "median",
        "p99",
        "max",
        "interactions/body",
        "TFLOP/s",
    ]);
    for r in rows {
        t.push(vec![
            r.scene.into(),
            fmt_n(r.n),
            r.variant.label(),
            r.setting(),
            fmt_ms(r.gravity_ms),
            fmt_ms(r.step_ms),
            format!("{:.2e}", r.median_err),
            format!("{:.2e}", r.p99_err),
            format!("{:.2e}", r.max_err),
            r.per_body().map_or("–".into(), |v| format!("{v:.0}")),
            r.tflops().map_or("–".into(), rate::fmt_tflops),
        ]);
    }
    report.table(&t);
}

fn figures(
    dir: &OutDir,
    rows: &[Row],
    device: &str,
    report: &mut Report,
) -> Result<Vec<(String, String)>, ReproError> {
    let mut out = Vec::new();
    if rows.is_empty() {
        return Ok(out);
    }
    report.heading("Figures");
    for (name, _, _) in SCENES {
        let mut ns: Vec<usize> = rows
            .iter()
            .filter(|r| r.scene == name)
            .map(|r| r.n)
            .collect();
        ns.dedup();
        for n in ns {
            let mut series: Vec<Series> = VARIANTS
                .iter()
                .filter_map(|var| {
                    let pts: Vec<(f64, f64)> = rows
                        .iter()
                        .filter(|r| r.scene == name && r.n == n && r.variant == *var)
                        .map(|r| (r.gravity_ms, r.median_err))
                        .collect();
                    (!pts.is_empty()).then(|| Series::data(&var.label(), pts))
                })
                .collect();
            // The document's θ curve is the lattice at 10^6 bodies (its mean error).
            if name == "lattice" && n == 1 << 20 {
                series.push(Series::reference(
                    "seed vote kernel (its GPU), mean error",
                    seed::THETA.iter().map(|s| (s.1, s.3)).collect(),
                ));
            }
            let stem = format!("pareto-{name}-{}", fmt_n(n).replace('^', "p"));
            let caption = format!(
                "{name}, N = {}: median error against gravity time",
                fmt_n(n)
            );
            plot::line_chart(
                dir.path(),
                &stem,
                &LineChart {
                    title: format!(
                        "Accuracy against cost: {name}, {}",
                        meta::figure_note_n(n, device)
                    ),
                    x: Axis::new("gravity time (ms)", Scale::Log10),
                    y: Axis::new("median relative error", Scale::Log10),
                    series,
                },
            )?;
            report.figure(&stem, &caption);
            out.push((stem, caption));
        }
    }
    Ok(out)
}

fn headline(rows: &[Row]) -> String {
    let best = |scene: &str, level: f64| {
        rows.iter()
            .filter(|r| r.scene == scene && r.median_err <= level && r.n == rows[0].n)
            .min_by(|a, b| a.gravity_ms.total_cmp(&b.gravity_ms))
    };
    match (rows.first(), best("plummer", 2e-4)) {
        (Some(first), Some(r)) => format!(
            "Plummer N = {}, median ≤ 2e-4: fastest {} {} — gravity {} ms, step {} ms, median {:.2e}{}",
            fmt_n(first.n),
            r.variant.label(),
            r.setting(),
            fmt_ms(r.gravity_ms),
            fmt_ms(r.step_ms),
            r.median_err,
            r.tflops().map_or(String::new(), |f| format!(
                ", {} TFLOP/s counted",
                rate::fmt_tflops(f)
            )),
        ),
        _ => String::new(),
    }
}
