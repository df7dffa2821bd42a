//! `repro storage`: octree storage schemes against N — bytes per body (allocated and used), tree
//! build time and traversal time, up to the largest N that fits — on the seed's lattice, and the
//! bytes each storage needs for the trees of other scenes at one N.

use super::measure::{Storage, evaluate_median, tree_bytes};
use super::output::{Csv, OutDir, Report, Table, progress};
use super::plot::{self, Axis, LineChart, Scale, Series};
use super::{ReproError, Settings, Summary, finish, fmt_ms, fmt_n, meta, sizes};
use serde_json::json;
use warpkit::bh::gpu::BhError;
use warpkit::bh::{Mode, Params, scene};
use warpkit::choice::Choice;

/// The storages compared, one table column group and one line per figure each.
pub const STORAGES: &[Storage] = &[Storage::Dense, Storage::Sparse];

const TITLE: &str = "Octree storage: memory per body, build and traversal time";

/// One (storage, N) point.
#[derive(Clone, Debug)]
pub struct Row {
    pub storage: Storage,
    pub n: usize,
    pub cells: usize,
    pub used_cells: usize,
    pub build_ms: f64,
    pub gravity_ms: f64,
}

impl Row {
    pub fn bytes_per_body(&self) -> f64 {
        tree_bytes(self.n, self.storage, self.cells) as f64 / self.n as f64
    }
    pub fn used_bytes_per_body(&self) -> f64 {
        tree_bytes(self.n, self.storage, self.used_cells) as f64 / self.n as f64
    }
}

pub fn run(s: &Settings) -> Result<Summary, ReproError> {
    let max = s.n.unwrap_or(s.pick(1 << 28, 1 << 18));
    let ns = sizes(s.pick(14, 10), max);
    let repeats = s.repeats_or(3, 1);
    let p = Params::default();
    let dir = s.dir("storage")?;
    let names: Vec<&str> = STORAGES.iter().map(|st| st.name()).collect();
    let params = json!({
        "n": ns, "storages": names, "theta": p.theta, "eps": p.eps, "G": p.g,
        "scene": "lattice", "mode": "sorted", "repeats": repeats, "seed": s.seed,
        "bytes": "bodies, accelerations, bucket links, sort index, and per cell 8 children, count, start, centre of mass",
    });
    let meta = meta::write(&dir, "storage", &s.backend, params)?;
    let mut report = Report::new(TITLE);
    report.para(&format!(
        "{}; the seed's lattice cube (uniform, shuffled), tree-sorted traversal, θ = {}, median \
         of {repeats} run(s). Bytes per body count every array of the evaluation: allocated \
         (dense: cells, doubled on overflow; sparse: the whole implicit octree address space, \
         ×8 per extra level) and used (dense: cells the tree holds). Build = bounding box + build \
         + centre of mass + sort. The sweep stops for a storage at the first N that does not fit \
         (sparse: 2^26 node indices, about 8 levels; a clustered Plummer sphere exceeds that \
         already at small N).",
        meta::machine_line(&s.backend),
        p.theta
    ));
    let mut rows = Vec::new();
    let mut limits = Vec::new();
    let res = measure(s, &ns, &p, repeats, &dir, &mut rows, &mut limits);
    table(&mut report, &rows, &limits);
    let res = res.and_then(|()| scenes(s, &dir, &mut report));
    let note = meta::figure_note(&s.backend, None);
    let figs = figures(&dir, &rows, &note, &mut report);
    let err = res.and(figs).err();
    finish(s, &dir, &mut report, meta, err.as_ref())?;
    if let Some(e) = err {
        return Err(e);
    }
    let last = rows.iter().rev().find(|r| r.storage == Storage::Dense);
    Ok(Summary {
        name: "storage",
        title: TITLE.into(),
        headline: last.map_or_else(String::new, |r| {
            format!(
                "dense, largest N = {}: {:.0} B/body allocated ({:.0} used), build {} ms, traversal {} ms",
                fmt_n(r.n),
                r.bytes_per_body(),
                r.used_bytes_per_body(),
                fmt_ms(r.build_ms),
                fmt_ms(r.gravity_ms)
            )
        }),
        figures: vec![
            ("bytes".into(), "bytes per body against N".into()),
            ("time".into(), "build and traversal time against N".into()),
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
    limits: &mut Vec<(Storage, usize, String)>,
) -> Result<(), ReproError> {
    let mut csv = Csv::create(
        dir.file("data.csv"),
        &[
            "backend",
            "storage",
            "n",
            "cells",
            "used_cells",
            "bytes",
            "bytes_per_body",
            "used_bytes_per_body",
            "build_ms",
            "gravity_ms",
        ],
    )?;
    let bar = progress((ns.len() * STORAGES.len()) as u64, "storage");
    let mut stopped: Vec<Storage> = Vec::new();
    for &n in ns {
        let mut bodies = scene::lattice(n);
        scene::shuffle(&mut bodies, s.seed);
        for &st in STORAGES {
            bar.inc(1);
            if stopped.contains(&st) {
                continue;
            }
            bar.set_message(format!("{} {}", st.name(), fmt_n(n)));
            let (t, last) = match evaluate_median(&s.backend, &bodies, p, Mode::Sorted, st, repeats)
            {
                Ok(r) => r,
                Err(e @ (BhError::TooLarge { .. } | BhError::Capacity(_))) => {
                    limits.push((st, n, e.to_string()));
                    stopped.push(st);
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let row = Row {
                storage: st,
                n,
                cells: last.cells,
                used_cells: last.used_cells,
                build_ms: t.tree(),
                gravity_ms: t.gravity,
            };
            csv.row(&[
                s.backend.name().to_string(),
                st.name().into(),
                n.to_string(),
                row.cells.to_string(),
                row.used_cells.to_string(),
                tree_bytes(n, row.storage, row.cells).to_string(),
                row.bytes_per_body().to_string(),
                row.used_bytes_per_body().to_string(),
                row.build_ms.to_string(),
                row.gravity_ms.to_string(),
            ])?;
            rows.push(row);
        }
        if stopped.len() == STORAGES.len() {
            break;
        }
    }
    bar.finish_and_clear();
    Ok(())
}

fn table(report: &mut Report, rows: &[Row], limits: &[(Storage, usize, String)]) {
    let mut header = vec!["N".to_string()];
    for st in STORAGES {
        let s = st.name();
        header.extend([
            format!("{s} B/body allocated"),
            format!("{s} B/body used"),
            format!("{s} cells used"),
            format!("{s} build ms"),
            format!("{s} traversal ms"),
        ]);
    }
    let mut t = Table::new(&header);
    let mut ns: Vec<usize> = rows.iter().map(|r| r.n).collect();
    ns.dedup();
    for n in ns {
        let mut line = vec![fmt_n(n)];
        for st in STORAGES {
            match rows.iter().find(|r| r.n == n && r.storage == *st) {
                Some(r) => line.extend([
                    format!("{:.1}", r.bytes_per_body()),
                    format!("{:.1}", r.used_bytes_per_body()),
                    r.used_cells.to_string(),
                    fmt_ms(r.build_ms),
                    fmt_ms(r.gravity_ms),
                ]),
                None => line.extend(std::iter::repeat_n("–".to_string(), 5)),
            }
        }
        t.push(line);
    }
    report.table(&t);
    for (st, n, why) in limits {
        report.para(&format!(
            "{}: N = {} does not fit: {why}.",
            st.name(),
            fmt_n(*n)
        ));
    }
    report.para("The seed has no storage table: this one extends it.");
}

/// Bytes per body each storage needs for the tree of each scene at one N: dense, the cells the
/// tree holds; sparse, the implicit octree's index space down to the deepest cell
/// (`Σ_{l ≤ depth} 8^l` slots, whether or not the tree fills them). The tree's shape depends only
/// on the positions, so the CPU builder gives the GPU's depth and cell count.
fn scenes(s: &Settings, dir: &OutDir, report: &mut Report) -> Result<(), ReproError> {
    let n = s.pick(1 << 20, 1 << 18);
    let mut csv = Csv::create(
        dir.file("scenes.csv"),
        &[
            "scene",
            "n",
            "depth",
            "dense_cells",
            "dense_bytes_per_body",
            "sparse_slots",
            "sparse_bytes_per_body",
            "dense_over_sparse",
        ],
    )?;
    let mut t = Table::new(&[
        "scene",
        "deepest cell",
        "dense cells",
        "dense B/body",
        "sparse slots needed",
        "sparse B/body needed",
        "dense / sparse",
    ]);
    // Bytes as f64: the sparse index space of a deep tree exceeds any integer type's range.
    let bytes = |st: Storage, cells: f64| {
        let one = tree_bytes(n, st, 1) as f64;
        one + (cells - 1.0) * (tree_bytes(n, st, 2) as f64 - one)
    };
    for name in ["lattice", "uniform", "plummer"] {
        let mut bodies = match name {
            "lattice" => scene::lattice(n),
            "uniform" => scene::uniform(n, s.seed),
            _ => scene::plummer(n, s.seed),
        };
        scene::shuffle(&mut bodies, s.seed);
        let tree = warpkit::bh::cpu::build_tree(&bodies);
        let h = &tree.header;
        let depth = h.depth;
        let dense_cells = (tree.cells() as i64 - h.bottom as i64).max(1) as f64;
        let slots = (8f64.powi(depth as i32 + 1) - 1.0) / 7.0;
        let (d, sp) = (
            bytes(Storage::Dense, dense_cells),
            bytes(Storage::Sparse, slots),
        );
        let per = |b: f64| b / n as f64;
        csv.row(&[
            name.to_string(),
            n.to_string(),
            depth.to_string(),
            dense_cells.to_string(),
            per(d).to_string(),
            slots.to_string(),
            per(sp).to_string(),
            (d / sp).to_string(),
        ])?;
        t.push(vec![
            name.to_string(),
            depth.to_string(),
            format!("{dense_cells:.0}"),
            format!("{:.1}", per(d)),
            format!("{slots:.3e}"),
            format!("{:.3e}", per(sp)),
            format!("{:.2e}", d / sp),
        ]);
    }
    report.heading(&format!("What each storage needs, N = {}", fmt_n(n)));
    report.para(
        "Bytes per body of the tree each scene builds (CPU builder; the tree's shape depends only \
         on the positions): dense holds the cells in use; sparse addresses the complete octree \
         down to the deepest cell, 8^l slots at level l, filled or not. The lattice fills its \
         octree almost completely, so there the two are close; a uniform random or clustered set \
         has a few deep cells, and the sparse index space explodes (beyond the 2^26 indices the \
         sparse build accepts, so the sweep above runs on the lattice only).",
    );
    report.table(&t);
    Ok(())
}

fn figures(dir: &OutDir, rows: &[Row], note: &str, report: &mut Report) -> Result<(), ReproError> {
    if rows.is_empty() {
        return Ok(());
    }
    let col = |st: Storage, f: fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| r.storage == st)
            .map(|r| (r.n as f64, f(r)))
            .collect()
    };
    let mut bytes = Vec::new();
    let mut times = Vec::new();
    for &st in STORAGES {
        let s = st.name();
        bytes.push(Series::data(
            &format!("{s}, allocated"),
            col(st, Row::bytes_per_body),
        ));
        bytes.push(Series::data(
            &format!("{s}, used"),
            col(st, Row::used_bytes_per_body),
        ));
        times.push(Series::data(
            &format!("{s}, build"),
            col(st, |r| r.build_ms),
        ));
        times.push(Series::data(
            &format!("{s}, traversal"),
            col(st, |r| r.gravity_ms),
        ));
    }
    report.heading("Figures");
    plot::line_chart(
        dir.path(),
        "bytes",
        &LineChart {
            title: format!("Memory per body ({note})"),
            x: Axis::new("bodies N", Scale::Log2),
            y: Axis::new("bytes per body", Scale::Linear),
            series: bytes,
        },
    )?;
    report.figure("bytes", "bytes per body against N");
    plot::line_chart(
        dir.path(),
        "time",
        &LineChart {
            title: format!("Build and traversal time ({note})"),
            x: Axis::new("bodies N", Scale::Log2),
            y: Axis::new("time (ms)", Scale::Log10),
            series: times,
        },
    )?;
    report.figure("time", "build and traversal time against N");
    Ok(())
}
