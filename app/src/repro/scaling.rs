//! `repro scaling`: time against N for brute force, the three traversal orders and the tree build
//! (the seed's two figures, linear and log-log), with N log N and N² guide lines.

use super::measure::{Storage, bodies_for, brute_force_ms, evaluate_median};
use super::output::{Csv, OutDir, Report, Table, progress};
use super::plot::{self, Axis, LineChart, Scale, Series};
use super::sort::MODES;
use super::{ReproError, Settings, Summary, finish, fmt_ms, fmt_n, meta, ncu, seed, sizes};
use serde_json::json;
use warpkit::bh::{Mode, Params, scene};

/// Brute force is skipped once its predicted time (the last measured one scaled by N²) exceeds
/// this, in ms.
pub const BRUTE_LIMIT_MS: f64 = 10_000.0;
/// CPU backend: bodies whose direct summation is timed (then scaled to N).
pub const CPU_BRUTE_SAMPLE: usize = 256;

const TITLE: &str = "Scaling with N: brute force, three traversal orders, tree build";

/// One N's results (ms; NaN where not measured).
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub n: usize,
    pub brute_ms: f64,
    /// random, regular, sorted gravity.
    pub gravity_ms: [f64; 3],
    /// Every tree stage of the sorted run (box, build, centre of mass, sort).
    pub tree_ms: f64,
}

pub fn run(s: &Settings) -> Result<Summary, ReproError> {
    let max = s.n.unwrap_or(s.pick(1 << 24, 1 << 16));
    let ns = sizes(s.pick(14, 10), max);
    let repeats = s.repeats_or(3, 1);
    let p = Params::default();
    let dir = s.dir("scaling")?;
    let params = json!({
        "n": ns, "theta": p.theta, "eps": p.eps, "G": p.g, "scene": "lattice",
        "modes": ["random", "regular", "sorted"], "repeats": repeats, "seed": s.seed,
        "brute_force": if s.is_gpu() { "bh_brute_force (float32, CUDA events)".to_string() }
            else { format!("float64 direct summation on {CPU_BRUTE_SAMPLE} bodies, scaled to N") },
        "brute_force_limit_ms": BRUTE_LIMIT_MS,
    });
    let meta = meta::write(&dir, "scaling", &s.backend, params)?;
    let mut report = Report::new(TITLE);
    report.para(&format!(
        "{}; lattice cube, θ = {}, ε = {}, median of {repeats} run(s) per point. Tree build = \
         bounding box + build + centre of mass + sort (sorted run). Brute force: {}; skipped where \
         its predicted time exceeds {} s.",
        meta::machine_line(&s.backend),
        p.theta,
        p.eps,
        if s.is_gpu() {
            "the float32 direct-summation kernel".to_string()
        } else {
            format!("float64 direct summation timed on {CPU_BRUTE_SAMPLE} bodies and scaled by N / {CPU_BRUTE_SAMPLE}")
        },
        BRUTE_LIMIT_MS / 1e3
    ));
    let mut rows = Vec::new();
    let res = measure(s, &ns, &p, repeats, &dir, &mut rows);
    table(&mut report, &rows);
    let note = meta::figure_note(&s.backend, None);
    let figs = figures(&dir, &rows, &note, &mut report);
    let err = res.and(figs).err();
    finish(s, &dir, &mut report, meta, err.as_ref())?;
    if let Some(e) = err {
        return Err(e);
    }
    let last = rows.last();
    Ok(Summary {
        name: "scaling",
        title: TITLE.into(),
        headline: last.map_or_else(String::new, |r| {
            format!(
                "N = {}: sorted gravity {} ms, random {} ms, tree build {} ms",
                fmt_n(r.n),
                fmt_ms(r.gravity_ms[2]),
                fmt_ms(r.gravity_ms[0]),
                fmt_ms(r.tree_ms)
            )
        }),
        figures: vec![
            ("time-linear".into(), "time against N, linear axes".into()),
            ("time-loglog".into(), "time against N, log-log axes".into()),
        ],
    })
}

fn measure(
    s: &Settings,
    ns: &[usize],
    p: &Params,
    repeats: usize,
    dir: &OutDir,
    rows: &mut Vec<Row>,
) -> Result<(), ReproError> {
    let mut csv = Csv::create(
        dir.file("data.csv"),
        &[
            "backend",
            "n",
            "brute_ms",
            "brute_timed_bodies",
            "random_ms",
            "regular_ms",
            "sorted_ms",
            "tree_ms",
        ],
    )?;
    let bar = progress(ns.len() as u64, "scaling");
    let mut last_brute: Option<(usize, f64)> = None;
    for &n in ns {
        bar.set_message(fmt_n(n));
        let lattice = scene::lattice(n);
        let predicted = last_brute.map_or(0.0, |(m, t)| t * (n as f64 / m as f64).powi(2));
        let brute = if !s.is_gpu() || predicted <= BRUTE_LIMIT_MS {
            // Long brute-force runs are stable: one repeat is enough past a second.
            let reps = if predicted > 1000.0 { 1 } else { repeats };
            let b = brute_force_ms(&s.backend, &lattice, p, reps, CPU_BRUTE_SAMPLE)?;
            last_brute = Some((n, b.ms));
            Some(b)
        } else {
            None
        };
        let mut row = Row {
            n,
            brute_ms: brute.map_or(f64::NAN, |b| b.ms),
            gravity_ms: [f64::NAN; 3],
            tree_ms: f64::NAN,
        };
        for (k, mode) in MODES.into_iter().enumerate() {
            bar.set_message(format!("{} {}", fmt_n(n), ncu::mode_name(mode)));
            let bodies = bodies_for(&lattice, mode, s.seed);
            let (t, _) = evaluate_median(&s.backend, &bodies, p, mode, Storage::Dense, repeats)?;
            row.gravity_ms[k] = t.gravity;
            if mode == Mode::Sorted {
                row.tree_ms = t.tree();
            }
        }
        let f = |v: f64| {
            if v.is_finite() {
                v.to_string()
            } else {
                String::new()
            }
        };
        csv.row(&[
            s.backend.name().to_string(),
            n.to_string(),
            f(row.brute_ms),
            brute.map_or(String::new(), |b| b.targets.to_string()),
            f(row.gravity_ms[0]),
            f(row.gravity_ms[1]),
            f(row.gravity_ms[2]),
            f(row.tree_ms),
        ])?;
        rows.push(row);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}

fn table(report: &mut Report, rows: &[Row]) {
    let mut t = Table::new(&[
        "N",
        "brute force ms",
        "random ms",
        "regular ms",
        "sorted ms",
        "tree build ms",
        "random / sorted",
    ]);
    for r in rows {
        let skipped = |v: f64| {
            if v.is_finite() {
                fmt_ms(v)
            } else {
                "skipped".into()
            }
        };
        t.push(vec![
            fmt_n(r.n),
            skipped(r.brute_ms),
            fmt_ms(r.gravity_ms[0]),
            fmt_ms(r.gravity_ms[1]),
            fmt_ms(r.gravity_ms[2]),
            fmt_ms(r.tree_ms),
            format!("{:.2}×", r.gravity_ms[0] / r.gravity_ms[2]),
        ]);
    }
    report.table(&t);
    report.para(&format!(
        "The seed gives these curves only as figures (no numbers): compare shapes. {}",
        seed::CAVEAT
    ));
}

fn figures(dir: &OutDir, rows: &[Row], note: &str, report: &mut Report) -> Result<(), ReproError> {
    let Some(last) = rows.last() else {
        return Ok(());
    };
    let col = |f: fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .map(|r| (r.n as f64, f(r)))
            .filter(|p| p.1.is_finite())
            .collect()
    };
    let data = vec![
        Series::data("brute force", col(|r| r.brute_ms)),
        Series::data("random (unsorted)", col(|r| r.gravity_ms[0])),
        Series::data("regular (unsorted)", col(|r| r.gravity_ms[1])),
        Series::data("tree-sorted", col(|r| r.gravity_ms[2])),
        Series::data("tree build", col(|r| r.tree_ms)),
    ];
    report.heading("Figures");
    plot::line_chart(
        dir.path(),
        "time-linear",
        &LineChart {
            title: format!("Time against N, linear axes ({note})"),
            x: Axis::new("bodies N", Scale::Linear),
            y: Axis::new("time (ms)", Scale::Linear),
            series: data.clone(),
        },
    )?;
    report.figure("time-linear", "time against N, linear axes");
    // Guides through the largest sorted point (N log N) and the largest brute-force one (N²).
    let nlogn = |n: f64| n * n.log2();
    let c = last.gravity_ms[2] / nlogn(last.n as f64);
    let mut series = data;
    series.push(Series::guide(
        "∝ N log N",
        rows.iter()
            .map(|r| (r.n as f64, c * nlogn(r.n as f64)))
            .collect(),
    ));
    if let Some(b) = rows.iter().rev().find(|r| r.brute_ms.is_finite()) {
        let c2 = b.brute_ms / (b.n as f64).powi(2);
        series.push(Series::guide(
            "∝ N²",
            rows.iter()
                .map(|r| (r.n as f64, c2 * (r.n as f64).powi(2)))
                .collect(),
        ));
    }
    plot::line_chart(
        dir.path(),
        "time-loglog",
        &LineChart {
            title: format!("Time against N, log-log axes ({note})"),
            x: Axis::new("bodies N", Scale::Log2),
            y: Axis::new("time (ms)", Scale::Log10),
            series,
        },
    )?;
    report.figure("time-loglog", "time against N, log-log axes");
    Ok(())
}
