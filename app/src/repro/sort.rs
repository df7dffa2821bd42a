//! `repro sort`: the seed's three traversal orders on its lattice cube at θ = 0.5 — per-stage
//! times (medians of repeats), gravity-kernel ratios between orders, and, where ncu exists, the
//! gravity kernel's profile beside the seed's.

use super::measure::{Storage, bodies_for, evaluate_median};
use super::output::{Csv, Report, Table, progress};
use super::plot::{self, BarChart};
use super::{ReproError, Settings, Summary, finish, fmt_ms, fmt_n, meta, ncu, seed};
use serde_json::json;
use warpkit::bh::gpu::StageTimes;
use warpkit::bh::{Mode, Params, scene};

/// The seed's order of the three modes.
pub const MODES: [Mode; 3] = [Mode::Random, Mode::Regular, Mode::Sorted];

const TITLE: &str = "Traversal order: random, regular, tree-sorted (the seed's profile)";

pub fn run(s: &Settings) -> Result<Summary, ReproError> {
    let n = s.n.unwrap_or(s.pick(1 << 20, 1 << 15));
    let repeats = s.repeats_or(5, 3);
    let p = Params::default();
    let dir = s.dir("sort")?;
    let params = json!({
        "n": n, "theta": p.theta, "eps": p.eps, "G": p.g, "scene": "lattice",
        "modes": ["random (shuffled, unsorted)", "regular (lattice order, unsorted)", "sorted (shuffled, tree-sorted)"],
        "repeats": repeats, "gpu_warmup": 1, "seed": s.seed, "statistic": "median per stage",
    });
    let meta = meta::write(&dir, "sort", &s.backend, params)?;
    let mut report = Report::new(TITLE);
    report.para(&format!(
        "{}; lattice cube, N = {} ({n}), θ = {}, ε = {}, median of {repeats} runs{}.",
        meta::machine_line(&s.backend),
        fmt_n(n),
        p.theta,
        p.eps,
        if s.is_gpu() {
            " after a warm-up, CUDA events per stage"
        } else {
            " (wall time; the CPU twin times the whole tree build as one stage)"
        }
    ));
    let mut rows: Vec<(Mode, StageTimes)> = Vec::new();
    let res = measure(s, n, &p, repeats, &dir, &mut rows);
    tables(s, &mut report, &rows);
    let profile = match &res {
        Ok(()) => profile_section(s, n, &p, &dir, &mut report),
        Err(_) => Ok(()),
    };
    let note = meta::figure_note(&s.backend, Some(n));
    let figures = figures(&dir, &rows, &note, &mut report);
    let err = res.and(profile).and(figures).err();
    finish(s, &dir, &mut report, meta, err.as_ref())?;
    if let Some(e) = err {
        return Err(e);
    }
    let g = |m: Mode| {
        rows.iter()
            .find(|r| r.0 == m)
            .map_or(f64::NAN, |r| r.1.gravity)
    };
    Ok(Summary {
        name: "sort",
        title: TITLE.into(),
        headline: format!(
            "N = {}: gravity {} / {} / {} ms (random / regular / sorted); random/sorted {:.2}× \
             (seed {:.2}×)",
            fmt_n(n),
            fmt_ms(g(Mode::Random)),
            fmt_ms(g(Mode::Regular)),
            fmt_ms(g(Mode::Sorted)),
            g(Mode::Random) / g(Mode::Sorted),
            seed::GRAVITY_MS[0] / seed::GRAVITY_MS[2]
        ),
        figures: vec![
            ("stages".into(), "per-stage time by mode".into()),
            ("ratios".into(), "gravity time relative to sorted".into()),
        ],
    })
}

fn measure(
    s: &Settings,
    n: usize,
    p: &Params,
    repeats: usize,
    dir: &super::output::OutDir,
    rows: &mut Vec<(Mode, StageTimes)>,
) -> Result<(), ReproError> {
    let mut csv = Csv::create(
        dir.file("data.csv"),
        &[
            "backend",
            "mode",
            "n",
            "theta",
            "repeats",
            "reset_ms",
            "bounding_box_ms",
            "build_ms",
            "summarize_ms",
            "sort_ms",
            "gravity_ms",
            "total_ms",
            "cells",
            "used_cells",
        ],
    )?;
    let lattice = scene::lattice(n);
    let bar = progress(MODES.len() as u64, "sort");
    for mode in MODES {
        bar.set_message(ncu::mode_name(mode));
        let bodies = bodies_for(&lattice, mode, s.seed);
        let (t, last) = evaluate_median(&s.backend, &bodies, p, mode, Storage::Dense, repeats)?;
        csv.row(&[
            s.backend.name().to_string(),
            ncu::mode_name(mode).into(),
            n.to_string(),
            p.theta.to_string(),
            repeats.to_string(),
            t.reset.to_string(),
            t.bounding_box.to_string(),
            t.build.to_string(),
            t.summarize.to_string(),
            t.sort.to_string(),
            t.gravity.to_string(),
            t.total().to_string(),
            last.cells.to_string(),
            last.used_cells.to_string(),
        ])?;
        rows.push((mode, t));
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}

/// Reads one stage's time.
type StageFn = fn(&StageTimes) -> f64;

fn tables(s: &Settings, report: &mut Report, rows: &[(Mode, StageTimes)]) {
    let get = |m: Mode| rows.iter().find(|r| r.0 == m).map(|r| r.1);
    let mut header = vec!["stage (ms)".to_string()];
    header.extend(MODES.iter().map(|m| ncu::mode_name(*m).to_string()));
    let mut t = Table::new(&header);
    let stages: Vec<(&str, StageFn)> = if s.is_gpu() {
        vec![
            ("reset", |t| t.reset),
            ("bounding box", |t| t.bounding_box),
            ("build", |t| t.build),
            ("centre of mass", |t| t.summarize),
            ("sort", |t| t.sort),
            ("gravity", |t| t.gravity),
            ("total", |t| t.total()),
        ]
    } else {
        vec![
            ("tree (box, build, centre of mass, sort)", |t| t.build),
            ("gravity", |t| t.gravity),
            ("total", |t| t.total()),
        ]
    };
    for (name, f) in &stages {
        let mut r = vec![name.to_string()];
        r.extend(
            MODES
                .iter()
                .map(|m| get(*m).map_or("–".into(), |t| fmt_ms(f(&t)))),
        );
        t.push(r);
    }
    let mut seed_row = vec!["gravity, seed's three-mode profile (its GPU)".to_string()];
    seed_row.extend(seed::GRAVITY_MS.iter().map(|&v| fmt_ms(v)));
    t.push(seed_row);
    report.heading("Per-stage times");
    report.table(&t);

    let g = |m: Mode| get(m).map_or(f64::NAN, |t| t.gravity);
    let sg = seed::GRAVITY_MS;
    let first = seed::FIRST_TEST_MS[4];
    let mut r = Table::new(&[
        "gravity-kernel ratio",
        "ours",
        "seed (three-mode profile)",
        "seed (first test)",
    ]);
    let ratio = |a: f64, b: f64| {
        if (a / b).is_finite() {
            format!("{:.2}×", a / b)
        } else {
            "–".into()
        }
    };
    r.push(vec![
        "random / sorted".into(),
        ratio(g(Mode::Random), g(Mode::Sorted)),
        ratio(sg[0], sg[2]),
        "–".into(),
    ]);
    r.push(vec![
        "regular / sorted".into(),
        ratio(g(Mode::Regular), g(Mode::Sorted)),
        ratio(sg[1], sg[2]),
        "–".into(),
    ]);
    r.push(vec![
        "random / regular".into(),
        ratio(g(Mode::Random), g(Mode::Regular)),
        ratio(sg[0], sg[1]),
        ratio(first.2, first.1),
    ]);
    report.heading("Gravity-kernel ratios between modes");
    report.table(&r);

    let mut f = Table::new(&[
        "stage (ms)",
        "ours regular",
        "seed regular",
        "ours random",
        "seed shuffled",
    ]);
    for (name, reg, shuf) in seed::FIRST_TEST_MS {
        // The CPU twin times the whole tree as `build`: its other tree stages have no time.
        let gpu = s.is_gpu();
        let ours = |m: Mode| {
            get(m).map_or("–".into(), |t| match name {
                "reset" if gpu => fmt_ms(t.reset),
                "bounding box" if gpu => fmt_ms(t.bounding_box),
                "build" => fmt_ms(t.build),
                "centre of mass" if gpu => fmt_ms(t.summarize),
                "gravity" => fmt_ms(t.gravity),
                _ => "–".into(),
            })
        };
        f.push(vec![
            name.into(),
            ours(Mode::Regular),
            fmt_ms(reg),
            ours(Mode::Random),
            fmt_ms(shuf),
        ]);
    }
    report.heading("The seed's first test: regular against shuffled");
    report.table(&f);
    report.para(
        "The seed prints its two listings under swapped labels; its text and its ncu table (0.19 s \
         regular, 3.10 s shuffled) say the shuffled order is the slow one, as used here.",
    );
    report.para(seed::CAVEAT);
}

/// The ncu profile of `bh_gravity` per mode, or why it is missing. Rows are streamed into
/// `profile.csv`; a failure keeps them and is returned.
fn profile_section(
    s: &Settings,
    n: usize,
    p: &Params,
    dir: &super::output::OutDir,
    report: &mut Report,
) -> Result<(), ReproError> {
    report.heading("Gravity-kernel profile (Nsight Compute)");
    if !s.is_gpu() {
        report.para("Not collected: the CPU backend ran, and ncu profiles GPU kernels only.");
        return Ok(());
    }
    let Some(ncu_path) = ncu::find() else {
        report.para("Not collected: `ncu` (Nsight Compute) is not on the PATH.");
        return Ok(());
    };
    let mut csv = Csv::create(
        dir.file("profile.csv"),
        &["mode", "metric", "unit", "value"],
    )?;
    let mut got: Vec<(Mode, Vec<ncu::Metric>)> = Vec::new();
    let mut failure = None;
    let bar = progress(MODES.len() as u64, "ncu");
    for mode in MODES {
        bar.set_message(ncu::mode_name(mode));
        let log = dir.file(&format!("ncu-{}.csv", ncu::mode_name(mode)));
        match ncu::profile(&ncu_path, mode, n, p.theta, s.seed, &log) {
            Ok(m) => {
                for x in &m {
                    csv.row(&[ncu::mode_name(mode), &x.name, &x.unit, &x.value])?;
                }
                got.push((mode, m));
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let mut header = vec!["metric".to_string()];
    header.extend(MODES.iter().map(|m| format!("ours {}", ncu::mode_name(*m))));
    header.extend(MODES.iter().map(|m| format!("seed {}", ncu::mode_name(*m))));
    let mut t = Table::new(&header);
    for row in &seed::PROFILE {
        let mut r = vec![format!("{} (`{}`)", row.name, row.metric)];
        for mode in MODES {
            let v = got
                .iter()
                .find(|g| g.0 == mode)
                .and_then(|g| g.1.iter().find(|m| m.name == row.metric))
                .map_or("–".into(), |m| m.display());
            r.push(v);
        }
        r.extend(row.seed.iter().map(|v| v.to_string()));
        t.push(r);
    }
    report.para(&format!(
        "`ncu --clock-control none -k {} -s 1 -c 1 --metrics …` on `warpkit repro-target` (the same \
         scene, second launch); raw logs `ncu-<mode>.csv`, parsed rows `profile.csv`. † the seed's \
         first profile (regular vs shuffled), a slower run than its three-mode table.",
        ncu::KERNEL
    ));
    report.table(&t);
    match failure {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

fn figures(
    dir: &super::output::OutDir,
    rows: &[(Mode, StageTimes)],
    note: &str,
    report: &mut Report,
) -> Result<(), ReproError> {
    if rows.is_empty() {
        return Ok(());
    }
    let cats: Vec<String> = rows
        .iter()
        .map(|r| ncu::mode_name(r.0).to_string())
        .collect();
    let stage = |f: fn(&StageTimes) -> f64| rows.iter().map(|r| f(&r.1)).collect::<Vec<f64>>();
    plot::bar_chart(
        dir.path(),
        "stages",
        &BarChart {
            title: format!("Barnes–Hut stage times by traversal order ({note})"),
            y_label: "time (ms)".into(),
            categories: cats.clone(),
            series: vec![
                ("tree build (all tree stages)".into(), stage(|t| t.tree())),
                ("gravity".into(), stage(|t| t.gravity)),
            ],
        },
    )?;
    report.heading("Figures");
    report.figure("stages", "per-stage time by mode");
    let sorted = rows
        .iter()
        .find(|r| r.0 == Mode::Sorted)
        .map_or(f64::NAN, |r| r.1.gravity);
    let seed_rel: Vec<f64> = rows
        .iter()
        .map(|r| {
            let k = MODES.iter().position(|m| *m == r.0).unwrap_or(2);
            seed::GRAVITY_MS[k] / seed::GRAVITY_MS[2]
        })
        .collect();
    plot::bar_chart(
        dir.path(),
        "ratios",
        &BarChart {
            title: format!("Gravity-kernel time relative to tree-sorted ({note})"),
            y_label: "time / sorted time".into(),
            categories: cats,
            series: vec![
                (
                    "ours".into(),
                    stage(|t| t.gravity).iter().map(|g| g / sorted).collect(),
                ),
                ("seed (its GPU)".into(), seed_rel),
            ],
        },
    )?;
    report.figure("ratios", "gravity time relative to sorted");
    Ok(())
}
