//! The SBH reproduction's report: the table, the verdict per source set, the answer to the
//! paper's question and the figures.

use super::*;

/// Per M of the table, in the given order: (M, BH point, SBH point).
pub(super) fn table_points<'a>(
    points: &'a [Point],
    order: &str,
) -> Vec<(usize, &'a Point, &'a Point)> {
    let mut out = Vec::new();
    for p in points
        .iter()
        .filter(|p| p.section == "table" && p.order == order)
    {
        if let Method::Bh(_) = p.method
            && let Some(q) = points.iter().find(|q| {
                q.section == "table" && q.order == order && q.m == p.m && q.method == Method::Sbh(S)
            })
        {
            out.push((p.m, p, q));
        }
    }
    out
}

fn errs(e: &ErrorStats) -> String {
    format!("{:.2e} / {:.2e} / {:.2e}", e.mean, e.median, e.max)
}

fn errs3(e: &[f64; 3]) -> String {
    format!("{:.1e} / {:.1e} / {:.1e}", e[0], e[1], e[2])
}

pub(super) fn table(report: &mut Report, points: &[Point]) {
    let find = |m: usize, order: &str, method: Method| {
        points
            .iter()
            .find(|p| p.section == "table" && p.m == m && p.order == order && p.method == method)
    };
    let ms_of = |p: Option<&Point>| p.map_or("–".into(), |p| fmt_ms(p.ms));
    // "grid / shuffled" times of one method.
    let both = |m: usize, method: Method| {
        format!(
            "{} / {}",
            ms_of(find(m, "grid", method)),
            ms_of(find(m, "shuffled", method))
        )
    };
    let mut ms: Vec<usize> = points
        .iter()
        .filter(|p| p.section == "table")
        .map(|p| p.m)
        .collect();
    ms.dedup();
    report.heading("Ours");
    let mut t = Table::new(&[
        "M",
        "brute force ms",
        "BH β=2 ms, grid / shuffled",
        "BH mean / median / max error (grid)",
        "SBH S=1 ms, grid / shuffled",
        "SBH mean / median / max error (grid)",
        "SBH errors (shuffled)",
        "BH errors (grid nodes)",
        "SBH errors (grid nodes)",
        "BH β=2 row warps ms, grid / shuffled",
        "BH row warps errors (grid)",
        "SBH S=1 paper's allocation ms, grid / shuffled",
        "its errors (grid)",
        "BH β=2 + quadrupoles ms, grid / shuffled",
        "its errors (grid)",
    ]);
    for &m in &ms {
        let e = |p: Option<&Point>| p.map_or("–".into(), |p| errs(&p.err));
        t.push(vec![
            fmt_n(m),
            ms_of(find(m, "grid", Method::Brute)),
            both(m, Method::Bh(BETA)),
            e(find(m, "grid", Method::Bh(BETA))),
            both(m, Method::Sbh(S)),
            e(find(m, "grid", Method::Sbh(S))),
            e(find(m, "shuffled", Method::Sbh(S))),
            e(find(m, "nodes", Method::Bh(BETA))),
            e(find(m, "nodes", Method::Sbh(S))),
            both(m, Method::BhRows(BETA)),
            e(find(m, "grid", Method::BhRows(BETA))),
            both(m, Method::SbhPaper(S)),
            e(find(m, "grid", Method::SbhPaper(S))),
            both(m, Method::BhQuad(BETA)),
            e(find(m, "grid", Method::BhQuad(BETA))),
        ]);
    }
    report.table(&t);
    report.para(NODES);
    report.para(ROWS);
    report.para(QUAD);
    report.heading("The authors' CUDA code on the H200");
    let mut t = Table::new(&[
        "M",
        "brute force ms",
        "BH β=2 ms, grid / shuffled",
        "BH mean / median / max error",
        "SBH S=1 ms, grid / shuffled",
        "SBH mean / median / max error",
    ]);
    for (m, brute, bh, bhe, sbh, sbhe) in AUTHORS_H200 {
        t.push(vec![
            fmt_n(m),
            fmt_ms(brute),
            format!("{} / {}", fmt_ms(bh[0]), fmt_ms(bh[1])),
            errs3(&bhe),
            format!("{} / {}", fmt_ms(sbh[0]), fmt_ms(sbh[1])),
            errs3(&sbhe),
        ]);
    }
    report.table(&t);
    report.heading("The paper (its GPU, grid queries)");
    let mut t = Table::new(&[
        "M",
        "BH ms",
        "BH mean / median / max error",
        "SBH S=1 ms",
        "SBH mean / median / max error",
    ]);
    for (m, bh, bhe, sbh, sbhe) in PAPER {
        t.push(vec![
            fmt_n(m),
            fmt_ms(bh),
            errs3(&bhe),
            fmt_ms(sbh),
            errs3(&sbhe),
        ]);
    }
    report.table(&t);
    report.para(CAVEAT);
}

/// The cheapest measured point of `method` (BH or SBH) with median error ≤ `e`.
fn cheapest<'a>(pts: &[&'a Point], e: f64) -> Option<&'a Point> {
    pts.iter()
        .filter(|p| p.err.median <= e)
        .min_by(|a, b| a.ms.total_cmp(&b.ms))
        .copied()
}

/// Whether `m` is a Barnes–Hut point of the sweep with (`quad`) or without quadrupoles.
fn is_bh(m: Method, quad: bool) -> bool {
    matches!(
        (quad, m),
        (false, Method::Bh(_)) | (true, Method::BhQuad(_))
    )
}

/// The verdict for one query set, from the convergence points: SBH against BH with monopoles
/// (the paper's BH) or, with `quad`, with quadrupoles.
pub fn verdict(points: &[Point], set: &str, quad: bool) -> Option<String> {
    let of = |bh: bool| -> Vec<&Point> {
        points
            .iter()
            .filter(|p| {
                p.section == "convergence"
                    && p.set == set
                    && if bh {
                        is_bh(p.method, quad)
                    } else {
                        matches!(p.method, Method::Sbh(_))
                    }
                    && p.ms.is_finite()
                    && p.err.median.is_finite()
            })
            .collect()
    };
    let (bh, sbh) = (of(true), of(false));
    if bh.is_empty() || sbh.is_empty() {
        return None;
    }
    // Every measured median error that both methods reach.
    let mut levels: Vec<f64> = bh.iter().chain(&sbh).map(|p| p.err.median).collect();
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    let common: Vec<(f64, &Point, &Point)> = levels
        .iter()
        .filter_map(|&e| Some((e, cheapest(&bh, e)?, cheapest(&sbh, e)?)))
        .collect();
    let line = |e: f64, b: &Point, s: &Point| {
        format!(
            "(≤ {e:.2e}) {} takes {} ms and {} {} ms",
            b.method.label(),
            fmt_ms(b.ms),
            s.method.label(),
            fmt_ms(s.ms)
        )
    };
    if common.is_empty() {
        let best_b = bh
            .iter()
            .map(|p| p.err.median)
            .fold(f64::INFINITY, f64::min);
        let best_s = sbh
            .iter()
            .map(|p| p.err.median)
            .fold(f64::INFINITY, f64::min);
        return Some(format!(
            "{set} queries: the two curves do not overlap in median error (BH's best {best_b:.2e}, \
             SBH's best {best_s:.2e}); no equal-error comparison is possible at these settings."
        ));
    }
    let sbh_wins = common.iter().filter(|(_, b, s)| s.ms < b.ms).count();
    let ratios: Vec<f64> = common.iter().map(|(_, b, s)| b.ms / s.ms).collect();
    let (lo, hi) = ratios
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), &r| (l.min(r), h.max(r)));
    // The SBH levels where SBH wins, as a band of median errors.
    let won: Vec<f64> = common
        .iter()
        .filter(|(_, b, s)| s.ms < b.ms)
        .map(|c| c.0)
        .collect();
    let at = |m: Method| {
        bh.iter()
            .chain(&sbh)
            .find(|p| p.method == m)
            .and_then(|p| common.iter().find(|c| c.0 == p.err.median))
    };
    let compare = |(e, b, s): &(f64, &Point, &Point)| {
        let faster = if s.ms == b.ms {
            "equally fast".to_string()
        } else if s.ms < b.ms {
            format!("SBH is faster by {:.2}×", b.ms / s.ms)
        } else {
            format!("BH is faster by {:.2}×", s.ms / b.ms)
        };
        format!("{}: {faster}", line(*e, b, s))
    };
    // The paper's claim is about its operating point: BH needs 2–8× the time to match SBH S = 1.
    let mut out = if quad {
        format!("**{set} queries, BH with quadrupoles.** ")
    } else {
        format!("**{set} queries.** ")
    };
    match at(Method::Sbh(S)) {
        Some(c) => out.push_str(&format!("At SBH S = {S}'s median error {}. ", compare(c))),
        None => out.push_str(&format!(
            "No BH configuration of the sweep reaches SBH S = {S}'s median error. "
        )),
    }
    let bh_beta = if quad {
        Method::BhQuad(BETA)
    } else {
        Method::Bh(BETA)
    };
    if let Some(c) = at(bh_beta) {
        out.push_str(&format!(
            "At {}'s median error {}. ",
            bh_beta.label(),
            compare(c)
        ));
    }
    out.push_str(&format!(
        "Over the {} median-error levels both reach ({:.2e} … {:.2e}), SBH is the faster at {sbh_wins}{}; BH time / SBH time ranges over {lo:.2} … {hi:.2}.",
        common.len(),
        common.first().map_or(f64::NAN, |c| c.0),
        common.last().map_or(f64::NAN, |c| c.0),
        match (won.first(), won.last()) {
            (Some(a), Some(b)) => format!(" (median errors {a:.2e} … {b:.2e})"),
            _ => String::new(),
        },
    ));
    Some(out)
}

pub(super) fn answer(report: &mut Report, points: &[Point]) -> Vec<String> {
    let v: Vec<String> = [
        ("grid", false),
        ("random", false),
        ("grid", true),
        ("random", true),
    ]
    .iter()
    .filter_map(|&(set, quad)| verdict(points, set, quad))
    .collect();
    if v.is_empty() {
        return v;
    }
    report.heading("At equal median error, which is faster?");
    report.para(
        "Computed from the convergence sweep below: at each median error that both methods \
         reach, the cheapest measured configuration of each (BH over β, SBH over S) is compared. \
         Neither side is interpolated. The first two paragraphs answer the paper's claim against \
         its Barnes–Hut (monopoles); the last two against ours with quadrupoles.",
    );
    for line in &v {
        report.para(line);
    }
    let mut t = Table::new(&[
        "query set",
        "method",
        "ms",
        "mean error",
        "median error",
        "max error",
    ]);
    for p in points.iter().filter(|p| p.section == "convergence") {
        t.push(vec![
            p.set.into(),
            p.method.label(),
            fmt_ms(p.ms),
            format!("{:.2e}", p.err.mean),
            format!("{:.2e}", p.err.median),
            format!("{:.2e}", p.err.max),
        ]);
    }
    report.heading("Convergence sweep");
    report.table(&t);
    v
}

pub(super) fn figures(
    dir: &OutDir,
    plan: &Plan,
    points: &[Point],
    slices: Option<&Slices>,
    device: &str,
    report: &mut Report,
) -> Result<(), ReproError> {
    let mut drew = false;
    for set in ["grid", "random"] {
        // `bh`: None for SBH, else whether with quadrupoles.
        let pts = |bh: Option<bool>, f: fn(&ErrorStats) -> f64| -> Vec<(f64, f64)> {
            points
                .iter()
                .filter(|p| {
                    p.section == "convergence"
                        && p.set == set
                        && match bh {
                            Some(quad) => is_bh(p.method, quad),
                            None => matches!(p.method, Method::Sbh(_)),
                        }
                })
                .map(|p| (p.ms, f(&p.err)))
                .collect()
        };
        if pts(Some(false), |e| e.median).is_empty() {
            continue;
        }
        if !drew {
            report.heading("Figures");
            drew = true;
        }
        let stem = format!("convergence-{set}");
        let n = plan.conv_grid.pow(3);
        plot::line_chart(
            dir.path(),
            &stem,
            &LineChart {
                title: format!(
                    "Error against time, M = {}, {n} {set} queries ({device})",
                    plot::n_label(plan.conv_m)
                ),
                x: Axis::new("time (ms)", Scale::Log10),
                y: Axis::new("absolute error", Scale::Log10),
                series: vec![
                    Series::data("SBH median, S = 1 … 64", pts(None, |e| e.median)),
                    Series::data("BH median, β = 0.5 … 6", pts(Some(false), |e| e.median)),
                    Series::data(
                        "BH + quadrupoles median, β = 0.5 … 6",
                        pts(Some(true), |e| e.median),
                    ),
                    Series::data("SBH mean", pts(None, |e| e.mean)),
                    Series::data("BH mean", pts(Some(false), |e| e.mean)),
                    Series::data("BH + quadrupoles mean", pts(Some(true), |e| e.mean)),
                ],
            },
        )?;
        report.figure(&stem, &format!("error against time, {set} queries"));
    }
    if let Some(sl) = slices
        && !sl.bh.is_empty()
        && !sl.sbh.is_empty()
    {
        let hi = sl
            .bh
            .iter()
            .chain(&sl.sbh)
            .copied()
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let hi = if hi > 0.0 { hi } else { 1.0 };
        let range = (hi * 1e-4, hi);
        let c = |r: usize| (r as f64 + 0.5) / sl.res as f64 - 0.5;
        for (stem, what, values) in [
            ("slice-bh", format!("BH β = {BETA}"), &sl.bh),
            ("slice-sbh", format!("SBH S = {S}"), &sl.sbh),
        ] {
            plot::heat_map(
                dir.path(),
                stem,
                &HeatMap {
                    title: format!(
                        "|error| of {what}, M = {}, z = {:.3} slice of the {}³ grid ({device})",
                        plot::n_label(plan.conv_m),
                        c(sl.res / 2),
                        sl.res
                    ),
                    x_label: "x".into(),
                    y_label: "y".into(),
                    value_label: "absolute error".into(),
                    nx: sl.res,
                    ny: sl.res,
                    values: values.clone(),
                    extent: (-0.5, 0.5, -0.5, 0.5),
                    range,
                },
            )?;
            report.figure(stem, &format!("|error| of {what} on the middle z slice"));
        }
    }
    Ok(())
}
