//! The FEM reproduction's report: its tables (each strategy's time and achieved bandwidth against
//! the CSR-traffic floor), the figure groups and the figures.

use super::*;

pub(super) fn tables(
    s: &Settings,
    report: &mut Report,
    runs: &[Run],
    sizes: &[usize],
    rows: &[Row],
    checks: &[Check],
    copy: Option<CopyBandwidth>,
) {
    let measured: Vec<usize> = sizes
        .iter()
        .copied()
        .filter(|&n| rows.iter().any(|r| r.edge == n))
        .collect();
    let largest = measured.last().copied();

    report.heading("Assembly time (ms)");
    let mut head = vec!["strategy".to_string(), "precision".into()];
    head.extend(measured.iter().map(|&n| size_label(n)));
    let mut t = Table::new(&head);
    for &r in runs {
        let mut line = vec![format!("`{}`", r.name()), r.precision().into()];
        line.extend(
            measured
                .iter()
                .map(|&n| find(rows, r, n).map_or("–".into(), |x| fmt_ms(x.ms))),
        );
        t.push(line);
    }
    report.table(&t);
    if !measured.is_empty() {
        report.para(&format!(
            "Colours per mesh (greedy): {}.",
            measured
                .iter()
                .filter_map(|&n| rows.iter().find(|r| r.edge == n))
                .map(|r| format!("{}³: {}", r.edge, r.colours))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }

    report.heading(&format!(
        "Speedup over the {} baseline (`{}`)",
        if s.is_gpu() {
            "thread-per-element"
        } else {
            "coloured CPU"
        },
        runs[0].label()
    ));
    let mut head = vec!["strategy".to_string()];
    head.extend(measured.iter().map(|&n| format!("{n}³")));
    head.push("paper, K40".into());
    let mut t = Table::new(&head);
    for &r in runs {
        let mut line = vec![format!("`{}`", r.label())];
        line.extend(
            measured
                .iter()
                .map(|&n| find(rows, r, n).map_or("–".into(), |x| format!("{:.2}×", x.speedup))),
        );
        line.push(r.paper());
        t.push(line);
    }
    report.table(&t);
    report.para(&format!(
        "Speedup = the baseline's median time over the strategy's, both measured at the same size \
         in this run. † {CAVEAT}"
    ));

    bandwidth_tables(s.is_gpu(), report, runs, &measured, rows, copy);

    report.heading("Jacobian by warp shuffle, shared memory or atomics (the paper's Table 1)");
    let jac = |four: Strategy, eight: Strategy| {
        let at = |st: Strategy| {
            largest.and_then(|n| {
                find(
                    rows,
                    Run {
                        method: Method::Gpu(st),
                        double: false,
                    },
                    n,
                )
            })
        };
        (at(four), at(eight))
    };
    let methods = [
        (Strategy::Warp4, Strategy::Warp8),
        (Strategy::Warp4JacShared, Strategy::Warp8JacShared),
        (Strategy::Warp4JacAtomic, Strategy::Warp8JacAtomic),
    ];
    let (s4, s8) = jac(methods[0].0, methods[0].1);
    let mut t = Table::new(&[
        "Jacobian method",
        "ours, 4 threads/row (ms)",
        "ours, 4: / shuffle",
        "ours, 8 threads/row (ms)",
        "ours, 8: / shuffle",
        "paper, K40, 4 threads/row (s)",
        "paper: / shuffle",
    ]);
    for (k, &(four, eight)) in methods.iter().enumerate() {
        let (a, b) = jac(four, eight);
        let rel = |x: Option<&Row>, base: Option<&Row>| match (x, base) {
            (Some(x), Some(b)) => format!("{:.3}", x.ms / b.ms),
            _ => "–".into(),
        };
        t.push(vec![
            PAPER_TABLE1_S[k].0.into(),
            a.map_or("–".into(), |x| fmt_ms(x.ms)),
            rel(a, s4),
            b.map_or("–".into(), |x| fmt_ms(x.ms)),
            rel(b, s8),
            format!("{:.2}", PAPER_TABLE1_S[k].1),
            format!("{:.3}", PAPER_TABLE1_S[k].1 / PAPER_TABLE1_S[0].1),
        ]);
    }
    report.table(&t);
    report.para(&format!(
        "Ours: assembly kernel time at the largest size ({}), float32. The paper's Table 1 gives \
         the overall run time of its warp (4 threads per row) assembly at 6.5M DOF on a Tesla K40 \
         in seconds, so only the ratios to warp shuffle compare.{}",
        largest.map_or("–".into(), size_label),
        if s.is_gpu() {
            ""
        } else {
            " The CPU backend has no warp kernels: rerun with `--backend gpu` to fill our columns."
        }
    ));

    report.heading("Colouring against atomics");
    let pairs: Vec<(Run, Run)> = if s.is_gpu() {
        [
            (Strategy::Thread, Strategy::ThreadAtomic),
            (Strategy::Warp4, Strategy::Warp4Atomic),
            (Strategy::Ppni4Blocks, Strategy::Ppni4BlocksAtomic),
            (Strategy::Ppni8Blocks, Strategy::Ppni8BlocksAtomic),
        ]
        .into_iter()
        .map(|(a, b)| {
            (
                Run {
                    method: Method::Gpu(a),
                    double: false,
                },
                Run {
                    method: Method::Gpu(b),
                    double: false,
                },
            )
        })
        .collect()
    } else {
        vec![(
            Run {
                method: Method::CpuColoured,
                double: false,
            },
            Run {
                method: Method::CpuAtomic,
                double: false,
            },
        )]
    };
    let mut t = Table::new(&[
        "coloured",
        "atomic (no colouring)",
        "mesh",
        "colours",
        "coloured ms",
        "atomic ms",
        "atomic / coloured",
    ]);
    for &(c, a) in &pairs {
        for &n in &measured {
            if let (Some(x), Some(y)) = (find(rows, c, n), find(rows, a, n)) {
                t.push(vec![
                    format!("`{}`", c.label()),
                    format!("`{}`", a.label()),
                    size_label(n),
                    x.colours.to_string(),
                    fmt_ms(x.ms),
                    fmt_ms(y.ms),
                    format!("{:.3}", y.ms / x.ms),
                ]);
            }
        }
    }
    report.table(&t);
    report.para(
        "Below 1: assembling every element in one launch with atomic adds beats one launch per \
         colour. The paper uses colouring throughout; this comparison is beyond it.",
    );

    report.heading("Correctness against the float64 CPU assembly");
    let mut t = Table::new(&[
        "strategy",
        "precision",
        "mesh",
        "relative Frobenius error",
        "bound",
        "within",
    ]);
    for c in checks {
        t.push(vec![
            format!("`{}`", c.run.name()),
            c.run.precision().into(),
            format!("{}³ jittered, shuffled", c.edge),
            format!("{:.2e}", c.error),
            format!("{:.0e}", c.bound),
            if c.error < c.bound { "yes" } else { "NO" }.into(),
        ]);
    }
    report.table(&t);
    report.para(
        "‖K − K_ref‖_F / ‖K_ref‖_F over the CSR values, K_ref from `fem::assemble::cpu` in \
         float64, on a mesh whose interior nodes are moved by up to ±20% of a cell and whose \
         elements are shuffled. The timing sweep also records each strategy's difference from \
         the baseline's matrix at every size (`rel_diff_vs_baseline` in data.csv).",
    );
}

/// The time figures: groups of at most 7 strategies, each drawn where any was measured.
pub(super) fn groups(runs: &[Run]) -> Vec<(&'static str, &'static str, Vec<Run>)> {
    use Strategy::*;
    let gpu = |v: &[Strategy]| -> Vec<Run> {
        v.iter()
            .map(|&s| Run {
                method: Method::Gpu(s),
                double: false,
            })
            .filter(|r| runs.contains(r))
            .collect()
    };
    let mut g = vec![
        (
            "time-paper",
            "the paper's strategies",
            gpu(&[Thread, Warp4, Warp8, Ppni4, Ppni8, TwoKernel]),
        ),
        (
            "time-jacobian",
            "Jacobian by shuffle, shared memory, atomics",
            gpu(&[
                Warp4,
                Warp4JacShared,
                Warp4JacAtomic,
                Warp8,
                Warp8JacShared,
                Warp8JacAtomic,
            ]),
        ),
        (
            "time-beyond",
            // Short: the plot's title (with the GPU's name) must fit its width.
            "beyond the paper",
            gpu(&[
                Thread,
                ThreadAtomic,
                Warp4Atomic,
                Ppni4Blocks,
                Ppni8Blocks,
                Ppni4BlocksAtomic,
                Ppni8BlocksAtomic,
                Rows,
                RowsRounds,
            ]),
        ),
    ];
    let cpu: Vec<Run> = runs
        .iter()
        .copied()
        .filter(|r| !matches!(r.method, Method::Gpu(_)))
        .collect();
    g.push(("time-cpu", "host assembly paths", cpu));
    g.retain(|x| !x.2.is_empty());
    g
}

pub(super) fn figure_list(runs: &[Run], rows: &[Row]) -> Vec<(String, String)> {
    if rows.is_empty() {
        return Vec::new();
    }
    let mut v: Vec<(String, String)> = groups(runs)
        .into_iter()
        .map(|(stem, what, _)| (stem.into(), format!("assembly time against DOF: {what}")))
        .collect();
    v.push((
        "speedup".into(),
        "speedup over the baseline at the largest size".into(),
    ));
    v
}

pub(super) fn figures(
    dir: &OutDir,
    runs: &[Run],
    rows: &[Row],
    device: &str,
    report: &mut Report,
) -> Result<(), ReproError> {
    if rows.is_empty() {
        return Ok(());
    }
    report.heading("Figures");
    for (stem, what, members) in groups(runs) {
        let series = members
            .iter()
            .map(|&r| {
                let pts = rows
                    .iter()
                    .filter(|x| x.run == r && x.ms.is_finite())
                    .map(|x| (x.dofs as f64, x.ms))
                    .collect();
                Series::data(&r.label(), pts)
            })
            .collect();
        let caption = format!("assembly time against DOF: {what}");
        plot::line_chart(
            dir.path(),
            stem,
            &LineChart {
                title: format!("Assembly time against DOF: {what} ({device})"),
                x: Axis::new("degrees of freedom", Scale::Log10),
                y: Axis::new("time (ms)", Scale::Log10),
                series,
            },
        )?;
        report.figure(stem, &caption);
    }
    let largest = rows.iter().map(|r| r.edge).max().unwrap_or(0);
    let at: Vec<&Row> = rows
        .iter()
        .filter(|r| r.edge == largest && r.run != runs[0])
        .collect();
    let mut series = vec![(
        "ours".to_string(),
        at.iter().map(|r| r.speedup).collect::<Vec<_>>(),
    )];
    if at.iter().any(|r| r.method_gpu().is_some()) {
        series.push((
            format!("paper's maximum, K40 ({}×)", PAPER_SPEEDUP.1),
            at.iter()
                .map(|r| {
                    if r.run.paper().contains('†') {
                        PAPER_SPEEDUP.1
                    } else {
                        f64::NAN
                    }
                })
                .collect(),
        ));
    }
    plot::bar_chart(
        dir.path(),
        "speedup",
        &BarChart {
            title: format!(
                "Speedup over {} at {} ({device})",
                runs[0].label(),
                size_label(largest)
            ),
            y_label: "baseline time / strategy time".into(),
            categories: at.iter().map(|r| r.run.short().to_string()).collect(),
            series,
        },
    )?;
    report.figure("speedup", "speedup over the baseline at the largest size");
    report.para(&format!(
        "Bar labels: {}.",
        at.iter()
            .map(|r| format!("{} = `{}`", r.run.short(), r.run.label()))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Ok(())
}

impl Row {
    fn method_gpu(&self) -> Option<Strategy> {
        match self.run.method {
            Method::Gpu(s) => Some(s),
            _ => None,
        }
    }

    /// Bytes of a value in this run's precision.
    fn value_bytes(&self) -> usize {
        if self.run.double { 8 } else { 4 }
    }

    /// [`min_bytes`] of this strategy on this mesh (GPU strategies only).
    pub fn model_bytes(&self) -> Option<u64> {
        self.method_gpu()
            .map(|st| min_bytes(st, self.elements, self.nodes, self.nnz, self.value_bytes()))
    }

    /// Model bytes over the median time, in GB/s (10⁹).
    pub fn achieved_gb_s(&self) -> Option<f64> {
        self.model_bytes()
            .map(|b| b as f64 / (self.ms * 1e-3) / 1e9)
            .filter(|v| v.is_finite())
    }

    /// The achieved rate as a percentage of the copy bandwidth.
    pub fn percent_of(&self, copy: Option<CopyBandwidth>) -> Option<f64> {
        let (a, c) = (self.achieved_gb_s()?, copy?.gb_s());
        Some(100.0 * a / c).filter(|v| v.is_finite())
    }
}

/// A CSV cell: the number, or empty.
pub(super) fn opt(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}
