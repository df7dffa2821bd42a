//! `repro theta`: θ = 0.1 … 0.8 on the seed's cube — time, max and mean relative error against
//! float64 direct summation, and speedup over brute force, beside the seed's θ table.

use super::measure::{
    Storage, bodies_for, brute_force_ms, evaluate_median, reference, sample_indices,
};
use super::output::{Csv, OutDir, Report, Table, progress};
use super::plot::{self, Axis, LineChart, Scale, Series};
use super::{ReproError, Settings, Summary, finish, fmt_ms, fmt_n, meta, seed};
use serde_json::json;
use warpkit::bh::{Mode, Params, relative_errors, scene};

pub const THETAS: [f32; 8] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8];
/// CPU backend: bodies whose error is measured against float64 direct summation.
pub const CPU_ERROR_SAMPLE: usize = 1024;
/// CPU backend: bodies whose direct summation is timed (then scaled to N).
pub const CPU_BRUTE_SAMPLE: usize = 256;

const TITLE: &str = "Opening angle θ: time, accuracy and speedup (the seed's θ table)";

/// One θ's results.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub theta: f32,
    pub tree_ms: f64,
    pub gravity_ms: f64,
    pub max_err: f64,
    pub mean_err: f64,
    pub brute_ms: f64,
}

impl Row {
    pub fn total_ms(&self) -> f64 {
        self.tree_ms + self.gravity_ms
    }
}

pub fn run(s: &Settings) -> Result<Summary, ReproError> {
    let n = s.n.unwrap_or(s.pick(1 << 20, 1 << 14));
    let repeats = s.repeats_or(3, 1);
    let base = Params::default();
    let dir = s.dir("theta")?;
    let targets = if s.is_gpu() {
        (0..n).collect()
    } else {
        sample_indices(n, CPU_ERROR_SAMPLE)
    };
    let params = json!({
        "n": n, "thetas": THETAS, "eps": base.eps, "G": base.g, "scene": "lattice, shuffled",
        "mode": "sorted", "repeats": repeats, "seed": s.seed,
        "error_reference": "float64 direct summation",
        "error_bodies": targets.len(),
        "brute_force": if s.is_gpu() { "bh_brute_force (float32, all bodies, CUDA events)".to_string() }
            else { format!("float64 direct summation on {CPU_BRUTE_SAMPLE} bodies, scaled to N") },
    });
    let meta = meta::write(&dir, "theta", &s.backend, params)?;
    let mut report = Report::new(TITLE);
    report.para(&format!(
        "{}; lattice cube shuffled and tree-sorted, N = {} ({n}), ε = {}, median of {repeats} \
         run(s). Errors |a − a_ref| / |a_ref| against float64 direct summation on {}. Brute force: {}.",
        meta::machine_line(&s.backend),
        fmt_n(n),
        base.eps,
        if s.is_gpu() { "every body".to_string() } else { format!("{} evenly spaced bodies", targets.len()) },
        if s.is_gpu() {
            "the float32 direct-summation kernel over all bodies".to_string()
        } else {
            format!("float64 direct summation timed on {CPU_BRUTE_SAMPLE} bodies and scaled by N / {CPU_BRUTE_SAMPLE} (the CPU has no float32 kernel)")
        }
    ));
    let mut rows = Vec::new();
    let res = measure(s, n, &base, repeats, &targets, &dir, &mut rows);
    table(&mut report, &rows);
    let note = meta::figure_note(&s.backend, Some(n));
    let figs = figures(&dir, &rows, &note, &mut report);
    let err = res.and(figs).err();
    finish(s, &dir, &mut report, meta, err.as_ref())?;
    if let Some(e) = err {
        return Err(e);
    }
    let half = rows.iter().find(|r| (r.theta - 0.5).abs() < 1e-6);
    Ok(Summary {
        name: "theta",
        title: TITLE.into(),
        headline: half.map_or_else(String::new, |r| {
            format!(
                "N = {}, θ = 0.5: gravity {} ms, max error {:.3e}, mean {:.3e}, speedup {:.0}× \
                 (seed: 7.1e-2, 5.3e-4, 230×)",
                fmt_n(n),
                fmt_ms(r.gravity_ms),
                r.max_err,
                r.mean_err,
                r.brute_ms / r.gravity_ms
            )
        }),
        figures: vec![
            ("error".into(), "relative error against θ".into()),
            ("time".into(), "time against θ".into()),
            ("pareto".into(), "error against time".into()),
        ],
    })
}

fn measure(
    s: &Settings,
    n: usize,
    base: &Params,
    repeats: usize,
    targets: &[usize],
    dir: &OutDir,
    rows: &mut Vec<Row>,
) -> Result<(), ReproError> {
    let mut csv = Csv::create(
        dir.file("data.csv"),
        &[
            "backend",
            "n",
            "theta",
            "repeats",
            "tree_ms",
            "gravity_ms",
            "total_ms",
            "max_rel_err",
            "mean_rel_err",
            "error_bodies",
            "brute_ms",
            "brute_timed_bodies",
            "speedup_gravity",
            "speedup_total",
        ],
    )?;
    let bodies = bodies_for(&scene::lattice(n), Mode::Sorted, s.seed);
    let bar = progress(THETAS.len() as u64 + 2, "theta");
    bar.set_message("reference");
    let reference = reference(&s.backend, &bodies, targets, base)?;
    bar.inc(1);
    bar.set_message("brute force");
    let brute = brute_force_ms(&s.backend, &bodies, base, repeats, CPU_BRUTE_SAMPLE)?;
    bar.inc(1);
    for theta in THETAS {
        bar.set_message(format!("θ = {theta}"));
        let p = Params { theta, ..*base };
        let (t, last) = evaluate_median(
            &s.backend,
            &bodies,
            &p,
            Mode::Sorted,
            Storage::Dense,
            repeats,
        )?;
        let picked: Vec<_> = targets.iter().map(|&i| last.acc[i]).collect();
        let e = relative_errors(&picked, &reference);
        let row = Row {
            theta,
            tree_ms: t.tree(),
            gravity_ms: t.gravity,
            max_err: e.iter().copied().fold(0.0, f64::max),
            mean_err: e.iter().sum::<f64>() / e.len().max(1) as f64,
            brute_ms: brute.ms,
        };
        csv.row(&[
            s.backend.name().to_string(),
            n.to_string(),
            theta.to_string(),
            repeats.to_string(),
            row.tree_ms.to_string(),
            row.gravity_ms.to_string(),
            row.total_ms().to_string(),
            row.max_err.to_string(),
            row.mean_err.to_string(),
            targets.len().to_string(),
            brute.ms.to_string(),
            brute.targets.to_string(),
            (brute.ms / row.gravity_ms).to_string(),
            (brute.ms / row.total_ms()).to_string(),
        ])?;
        rows.push(row);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}

fn table(report: &mut Report, rows: &[Row]) {
    let mut t = Table::new(&[
        "θ",
        "gravity ms",
        "tree + gravity ms",
        "seed ms",
        "max rel. error",
        "seed max",
        "mean rel. error",
        "seed mean",
        "speedup (gravity)",
        "speedup (total)",
        "seed speedup",
    ]);
    for r in rows {
        let sd = seed::theta_row(f64::from(r.theta));
        let sv = |f: fn(&seed::ThetaRow) -> String| sd.as_ref().map_or("–".into(), f);
        t.push(vec![
            format!("{:.1}", r.theta),
            fmt_ms(r.gravity_ms),
            fmt_ms(r.total_ms()),
            sv(|s| fmt_ms(s.1)),
            format!("{:.3e}", r.max_err),
            sv(|s| format!("{:.3e}", s.2)),
            format!("{:.3e}", r.mean_err),
            sv(|s| format!("{:.3e}", s.3)),
            format!("{:.1}×", r.brute_ms / r.gravity_ms),
            format!("{:.1}×", r.brute_ms / r.total_ms()),
            sv(|s| format!("{:.1}×", s.4)),
        ]);
    }
    if let Some(r) = rows.first() {
        report.para(&format!("Brute force: {} ms.", fmt_ms(r.brute_ms)));
    }
    report.table(&t);
    report.para(seed::CAVEAT);
}

fn figures(dir: &OutDir, rows: &[Row], note: &str, report: &mut Report) -> Result<(), ReproError> {
    if rows.is_empty() {
        return Ok(());
    }
    let ours = |f: fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter().map(|r| (f64::from(r.theta), f(r))).collect()
    };
    let seeds = |f: fn(&seed::ThetaRow) -> (f64, f64)| -> Vec<(f64, f64)> {
        seed::THETA.iter().map(f).collect()
    };
    report.heading("Figures");
    plot::line_chart(
        dir.path(),
        "error",
        &LineChart {
            title: format!("Relative error against float64 direct summation ({note})"),
            x: Axis::new("opening angle θ", Scale::Linear),
            y: Axis::new("relative acceleration error", Scale::Log10),
            series: vec![
                Series::data("ours, max", ours(|r| r.max_err)),
                Series::data("ours, mean", ours(|r| r.mean_err)),
                Series::reference("seed, max", seeds(|s| (s.0, s.2))),
                Series::reference("seed, mean", seeds(|s| (s.0, s.3))),
            ],
        },
    )?;
    report.figure("error", "relative error against θ");
    plot::line_chart(
        dir.path(),
        "time",
        &LineChart {
            title: format!("Barnes–Hut time against θ ({note})"),
            x: Axis::new("opening angle θ", Scale::Linear),
            y: Axis::new("time (ms)", Scale::Log10),
            series: vec![
                Series::data("ours, gravity", ours(|r| r.gravity_ms)),
                Series::data("ours, tree + gravity", ours(|r| r.total_ms())),
                Series::reference("seed (its GPU)", seeds(|s| (s.0, s.1))),
            ],
        },
    )?;
    report.figure("time", "time against θ");
    let pareto = |f: fn(&Row) -> (f64, f64)| rows.iter().map(f).collect::<Vec<_>>();
    plot::line_chart(
        dir.path(),
        "pareto",
        &LineChart {
            title: format!("Accuracy against cost, θ = 0.1 … 0.8 ({note})"),
            x: Axis::new("gravity time (ms)", Scale::Log10),
            y: Axis::new("mean relative error", Scale::Log10),
            series: vec![
                Series::data("ours", pareto(|r| (r.gravity_ms, r.mean_err))),
                Series::reference("seed (its GPU)", seeds(|s| (s.1, s.3))),
            ],
        },
    )?;
    report.figure("pareto", "error against time");
    Ok(())
}
