//! `repro neighbours`: SPH neighbour search through the octree (the warp-group and
//! the seed's per-warp vote searches) against the linked-cell list, on a uniform cube, a Plummer
//! sphere and a centrally condensed ρ ∝ 1/r sphere, at 32, 64 and 128 neighbours, against N.
//! Per point: the smoothing-length iteration from the local-density guess (tolerance
//! target/32), then a gather count pass and a density summation (cubic spline) at the final h,
//! all through [`warpkit::sph::profile`] (one code path for both backends).

use super::output::{Csv, OutDir, Report, Table, progress};
use super::plot::{self, Axis, LineChart, Scale, Series};
use super::{ReproError, Settings, Summary, finish, fmt_ms, fmt_n, meta, sizes};
use serde_json::json;
use std::collections::HashMap;
use warpkit::bh::scene::{self, Scene};
use warpkit::sph::{HParams, Method, Profile, profile};

const TITLE: &str = "SPH neighbour search: tree against linked cells";

/// The particle sets, as named in the tables and figure stems.
pub const DISTRIBUTIONS: [(Scene, &str); 3] = [
    (Scene::Uniform, "uniform"),
    (Scene::Plummer, "plummer"),
    (Scene::Condensed, "condensed"),
];
/// Target gather counts; each iterates to ± target/32.
pub const TARGETS: [f32; 3] = [32.0, 64.0, 128.0];
/// The searches, the tree's first.
pub const METHODS: [Method; 3] = [Method::Group, Method::Vote, Method::Cells];
/// A search is skipped at larger N once its time at the last N (iteration + count + density),
/// scaled by N², would exceed this (ms): the linked cells degrade towards O(N²) on clustered
/// sets, whose largest h sets the cell size.
pub const LIMIT_MS: [f64; 2] = [2_000.0, 10_000.0];

/// One point: `None` where skipped (predicted over the limit, or a target above N/2).
#[derive(Clone, Debug)]
pub struct Row {
    pub dist: &'static str,
    pub n: usize,
    pub target: f32,
    pub method: Method,
    pub p: Option<Profile>,
}

impl Row {
    fn total_ms(p: &Profile) -> f64 {
        p.iterate_ms + p.count_ms + p.density_ms
    }
}

fn method_name(m: Method) -> &'static str {
    match m {
        Method::Group => "group",
        Method::Vote => "vote",
        Method::Cells => "cells",
    }
}

fn tolerance(target: f32) -> f32 {
    target / 32.0
}

pub fn run(s: &Settings) -> Result<Summary, ReproError> {
    let max = s.n.unwrap_or(s.pick(1 << 22, 1 << 13));
    let ns = sizes(s.pick(16, 11), max);
    let repeats = s.repeats_or(3, 1);
    let limit = s.pick(LIMIT_MS[0], LIMIT_MS[1]);
    let dir = s.dir("neighbours")?;
    let params = json!({
        "n": ns, "distributions": DISTRIBUTIONS.map(|d| d.1), "targets": TARGETS,
        "tolerance": "target / 32", "methods": METHODS.map(method_name), "criterion": "gather",
        "kernel": "cubic spline (M4)", "start": "local-density guess", "repeats": repeats,
        "seed": s.seed, "skip_limit_ms": limit,
    });
    let meta = meta::write(&dir, "neighbours", &s.backend, params)?;
    let mut report = Report::new(TITLE);
    report.para(&format!(
        "{}; float32, gather criterion, h iterated from each particle's local-density guess to \
         target ± target/32 neighbours, then a count pass and a cubic-spline density at the final \
         h (medians of {repeats}). Times in ms ({}); the h iteration includes the guess and its \
         count passes; pairs tested = distance evaluations of one count pass. Device MiB: the \
         search's buffers (model, `sph::device_bytes`). A search is skipped once its predicted \
         time (last N's, scaled by N²) exceeds {} s.",
        meta::machine_line(&s.backend),
        s.pick("CUDA events", "wall time"),
        limit / 1e3
    ));
    let mut rows = Vec::new();
    let res = measure(s, &ns, repeats, limit, &dir, &mut rows);
    tables(&mut report, &rows);
    let figs = figures(
        &dir,
        &rows,
        &meta::figure_note(&s.backend, None),
        &mut report,
    );
    let err = res.and(figs).err();
    finish(s, &dir, &mut report, meta, err.as_ref())?;
    if let Some(e) = err {
        return Err(e);
    }
    let pick = |dist: &str, m: Method| {
        rows.iter()
            .rev()
            .find(|r| r.dist == dist && r.method == m && r.target == 64.0 && r.p.is_some())
    };
    let headline = match (
        pick("plummer", Method::Group),
        pick("plummer", Method::Cells),
    ) {
        (Some(g), c) => {
            let p = g.p.as_ref().expect("measured");
            format!(
                "Plummer N = {}, 64 neighbours: group h iteration {} ms in {} passes, density {} \
                 ms; cell list {}",
                fmt_n(g.n),
                fmt_ms(p.iterate_ms),
                p.passes,
                fmt_ms(p.density_ms),
                c.map_or("not measured".into(), |c| {
                    let q = c.p.as_ref().expect("measured");
                    format!(
                        "{} + {} ms at N = {}",
                        fmt_ms(q.iterate_ms),
                        fmt_ms(q.density_ms),
                        fmt_n(c.n)
                    )
                })
            )
        }
        _ => String::new(),
    };
    Ok(Summary {
        name: "neighbours",
        title: TITLE.into(),
        headline,
        figures: DISTRIBUTIONS
            .iter()
            .map(|d| {
                (
                    format!("time-{}", d.1),
                    format!(
                        "{}: h iteration + density against N, tree and cell list",
                        d.1
                    ),
                )
            })
            .collect(),
    })
}

fn measure(
    s: &Settings,
    ns: &[usize],
    repeats: usize,
    limit: f64,
    dir: &OutDir,
    rows: &mut Vec<Row>,
) -> Result<(), ReproError> {
    let mut csv = Csv::create(
        dir.file("data.csv"),
        &[
            "backend",
            "distribution",
            "n",
            "target",
            "method",
            "iterate_ms",
            "passes",
            "unconverged",
            "count_ms",
            "density_ms",
            "neighbours",
            "pairs_tested",
            "tested_per_neighbour",
            "neighbours_per_s",
            "device_bytes",
            "tree_ms",
        ],
    )?;
    let points = DISTRIBUTIONS.len() * ns.len() * TARGETS.len() * METHODS.len();
    let bar = progress(points as u64, "neighbours");
    let mut last: HashMap<(&str, u32, &str), (usize, f64)> = HashMap::new();
    for (scene, dist) in DISTRIBUTIONS {
        for &n in ns {
            let mut bodies = scene::generate(scene, n, s.seed);
            scene::shuffle(&mut bodies, s.seed);
            for target in TARGETS {
                let hp = HParams {
                    target,
                    tol: tolerance(target),
                    ..HParams::default()
                };
                for method in METHODS {
                    bar.set_message(format!(
                        "{dist} {} {target} {}",
                        fmt_n(n),
                        method_name(method)
                    ));
                    let key = (dist, target as u32, method_name(method));
                    let predicted = last
                        .get(&key)
                        .map_or(0.0, |&(m, t)| t * (n as f64 / m as f64).powi(2));
                    // A target above half the particles is skipped too (tiny test runs).
                    let p = if predicted <= limit && 2 * target as usize <= n {
                        let p = profile(&s.backend, &bodies, method, &hp, repeats)?;
                        last.insert(key, (n, Row::total_ms(&p)));
                        Some(p)
                    } else {
                        None
                    };
                    let f = |v: Option<String>| v.unwrap_or_default();
                    let q = p.as_ref();
                    csv.row(&[
                        s.backend.name().to_string(),
                        dist.to_string(),
                        n.to_string(),
                        target.to_string(),
                        method_name(method).to_string(),
                        f(q.map(|p| p.iterate_ms.to_string())),
                        f(q.map(|p| p.passes.to_string())),
                        f(q.map(|p| p.unconverged.to_string())),
                        f(q.map(|p| p.count_ms.to_string())),
                        f(q.map(|p| p.density_ms.to_string())),
                        f(q.map(|p| p.neighbours.to_string())),
                        f(q.map(|p| p.tested.to_string())),
                        f(q.map(|p| tested_per_neighbour(p).to_string())),
                        f(q.map(|p| neighbours_per_s(p).to_string())),
                        f(q.map(|p| p.bytes.to_string())),
                        f(q.and_then(|p| p.tree_ms).map(|t| t.to_string())),
                    ])?;
                    rows.push(Row {
                        dist,
                        n,
                        target,
                        method,
                        p,
                    });
                    bar.inc(1);
                }
            }
        }
    }
    bar.finish_and_clear();
    let json: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let p = r.p.as_ref();
            json!({
                "distribution": r.dist, "n": r.n, "target": r.target,
                "method": method_name(r.method), "skipped": p.is_none(),
                "iterate_ms": p.map(|p| p.iterate_ms), "passes": p.map(|p| p.passes),
                "unconverged": p.map(|p| p.unconverged), "count_ms": p.map(|p| p.count_ms),
                "density_ms": p.map(|p| p.density_ms), "neighbours": p.map(|p| p.neighbours),
                "pairs_tested": p.map(|p| p.tested),
                "neighbours_per_s": p.map(neighbours_per_s), "device_bytes": p.map(|p| p.bytes),
                "tree_ms": p.and_then(|p| p.tree_ms),
            })
        })
        .collect();
    let text = serde_json::to_string_pretty(&json).unwrap_or_else(|_| "[]".into());
    dir.write("data.json", text.as_bytes())?;
    Ok(())
}

fn tested_per_neighbour(p: &Profile) -> f64 {
    p.tested as f64 / p.neighbours.max(1) as f64
}

/// Neighbours found per second by the count pass.
fn neighbours_per_s(p: &Profile) -> f64 {
    p.neighbours as f64 / (p.count_ms * 1e-3)
}

fn tables(report: &mut Report, rows: &[Row]) {
    let mut t = Table::new(&[
        "distribution",
        "N",
        "neighbours",
        "search",
        "h iteration ms",
        "passes",
        "count ms",
        "density ms",
        "tested / neighbour",
        "neighbours/s",
        "device MiB",
    ]);
    for r in rows {
        let mut row = vec![
            r.dist.to_string(),
            fmt_n(r.n),
            r.target.to_string(),
            method_name(r.method).to_string(),
        ];
        match &r.p {
            Some(p) => row.extend([
                fmt_ms(p.iterate_ms),
                if p.unconverged == 0 {
                    p.passes.to_string()
                } else {
                    format!("{} ({} unconverged)", p.passes, p.unconverged)
                },
                fmt_ms(p.count_ms),
                fmt_ms(p.density_ms),
                format!("{:.2}", tested_per_neighbour(p)),
                format!("{:.3e}", neighbours_per_s(p)),
                format!("{:.1}", p.bytes as f64 / (1 << 20) as f64),
            ]),
            None => row.extend(
                ["skipped".to_string()]
                    .into_iter()
                    .chain(std::iter::repeat_n(String::new(), 6)),
            ),
        }
        t.push(row);
    }
    report.table(&t);
    // The crossover: the cell list's time over the faster tree search's (h iteration + density).
    report.heading("Cell list against the tree (64 neighbours)");
    let mut c = Table::new(&[
        "distribution",
        "N",
        "tree (best) ms",
        "cells ms",
        "cells / tree",
    ]);
    for (_, dist) in DISTRIBUTIONS {
        let mut ns: Vec<usize> = rows
            .iter()
            .filter(|r| r.dist == dist)
            .map(|r| r.n)
            .collect();
        ns.dedup();
        for n in ns {
            let time = |m: Method| {
                rows.iter()
                    .find(|r| r.dist == dist && r.n == n && r.target == 64.0 && r.method == m)
                    .and_then(|r| r.p.as_ref())
                    .map(|p| p.iterate_ms + p.density_ms)
            };
            let tree = [time(Method::Group), time(Method::Vote)]
                .into_iter()
                .flatten()
                .fold(f64::INFINITY, f64::min);
            let cells = time(Method::Cells);
            c.push(vec![
                dist.to_string(),
                fmt_n(n),
                fmt_ms(tree),
                cells.map_or("skipped".into(), fmt_ms),
                cells.map_or("–".into(), |x| format!("{:.2}×", x / tree)),
            ]);
        }
    }
    report.table(&c);
}

fn figures(
    dir: &OutDir,
    rows: &[Row],
    device: &str,
    report: &mut Report,
) -> Result<(), ReproError> {
    if rows.is_empty() {
        return Ok(());
    }
    report.heading("Figures");
    for (_, dist) in DISTRIBUTIONS {
        let series: Vec<Series> = METHODS
            .iter()
            .map(|&m| {
                let pts: Vec<(f64, f64)> = rows
                    .iter()
                    .filter(|r| r.dist == dist && r.method == m && r.target == 64.0)
                    .filter_map(|r| {
                        r.p.as_ref()
                            .map(|p| (r.n as f64, p.iterate_ms + p.density_ms))
                    })
                    .filter(|p| p.1 > 0.0)
                    .collect();
                let label = match m {
                    Method::Cells => "linked cells".to_string(),
                    _ => format!("tree, {} search", method_name(m)),
                };
                Series::data(&label, pts)
            })
            .collect();
        let stem = format!("time-{dist}");
        plot::line_chart(
            dir.path(),
            &stem,
            &LineChart {
                title: format!("{dist}: h iteration + density, 64 neighbours ({device})"),
                x: Axis::new("particles N", Scale::Log2),
                y: Axis::new("time (ms)", Scale::Log10),
                series,
            },
        )?;
        report.figure(
            &stem,
            &format!("{dist}: time against N, tree and cell list"),
        );
    }
    Ok(())
}
