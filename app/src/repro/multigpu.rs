//! `repro multigpu`: strong and weak scaling of gravity over K ranks through the
//! multi-rank pipeline of [`warpkit::multi`] (Morton decomposition balanced by work, migration,
//! global top tree, locally essential trees, one group walk per rank), on Plummer spheres.
//!
//! Where the ranks run depends on the machine: with two or more visible GPUs (and NCCL loadable)
//! one rank per GPU over NCCL (K ≤ GPUs); with one GPU, K virtual ranks taking turns on it (which
//! measures the decomposition's overhead, not scaling); on the CPU backend, K virtual ranks as
//! threads. Per point: wall time per force evaluation (median of repeats after a warm-up), the
//! communication per step (bytes, exchange ms) beside compute and GPU-walk ms, the work
//! imbalance, the efficiency (strong: t1 / (K tK); weak: t1 / tK), and the force error against
//! the single-rank result (strong) and against float64 direct summation on a sample.
//! Not part of `repro all`.

use super::output::{Csv, OutDir, Report, Table, progress};
use super::plot::{self, Axis, LineChart, Scale, Series, StackedBars};
use super::{ReproError, Settings, Summary, finish, fmt_ms, fmt_n, meta};
use serde_json::json;
use std::time::Instant;
use warpkit::bh::scene::{self, Scene};
use warpkit::bh::{Params, cpu};
use warpkit::device::bh::{Accel, Body};
use warpkit::multi::{MultiError, Place, StepStats, VirtualRanks};
use warpkit::runtime::Gpu;
use warpkit::stats::median;

const TITLE: &str = "Gravity over K ranks: strong and weak scaling";

/// Ranks tried, limited by the place.
pub const KS: [usize; 4] = [1, 2, 4, 8];
/// The scaling targets: strong at K = 2 and K = 8, weak up to K = 8.
pub const TARGET_STRONG_2: f64 = 0.85;
pub const TARGET_STRONG_8: f64 = 0.70;
pub const TARGET_WEAK: f64 = 0.90;

/// Where the ranks run.
enum Where {
    /// One rank per GPU over NCCL (K = 1 runs the same pipeline on GPU 0 alone).
    Nccl(Vec<std::sync::Arc<Gpu>>),
    /// K virtual ranks sharing GPU 0; the string says why not NCCL.
    OneGpu(std::sync::Arc<Gpu>, String),
    /// K virtual ranks as threads on the CPU backend.
    Cpu,
}

impl Where {
    fn name(&self) -> &'static str {
        match self {
            Where::Nccl(_) => "nccl-gpus",
            Where::OneGpu(..) => "virtual-ranks-one-gpu",
            Where::Cpu => "cpu-threads",
        }
    }

    fn max_k(&self) -> usize {
        match self {
            Where::Nccl(g) => g.len(),
            _ => usize::MAX,
        }
    }

    /// A plain sentence for table.md.
    fn describe(&self) -> String {
        match self {
            Where::Nccl(g) => format!(
                "**Place: NCCL, one rank per GPU** ({} GPUs: {}); K ≤ {} (K = 1: the same \
                 pipeline on GPU 0 alone, exchanging through memory).",
                g.len(),
                g.iter()
                    .map(|g| g.info().name.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
                g.len()
            ),
            Where::OneGpu(g, why) => format!(
                "**Place: K virtual ranks on one GPU** ({}; {why}). The ranks take turns on the \
                 same GPU and exchange through memory, so these numbers measure the \
                 decomposition's overhead, not scaling.",
                g.info().name
            ),
            Where::Cpu => format!(
                "**Place: K virtual ranks as CPU threads** ({} rayon threads), exchanging through \
                 memory, walks on the CPU; the decomposition's overhead on the host, not GPU \
                 scaling. One rank already uses every core, so the K ranks share the same cores \
                 and the strong efficiency falls about as 1/K here by construction.",
                rayon::current_num_threads()
            ),
        }
    }

    /// Short form for figure titles (the device follows it).
    fn short(&self) -> String {
        match self {
            Where::Nccl(g) => format!("NCCL, {} GPUs", g.len()),
            Where::OneGpu(..) => "K ranks share 1 GPU".into(),
            Where::Cpu => "K threads".into(),
        }
    }

    /// What the tables' headings add.
    fn caveat(&self) -> &'static str {
        match self {
            Where::Nccl(_) => "one rank per GPU over NCCL",
            Where::OneGpu(..) => {
                "virtual ranks share one GPU: this measures the decomposition's overhead, not \
                 scaling"
            }
            Where::Cpu => "virtual ranks as CPU threads: the decomposition's overhead, not scaling",
        }
    }
}

/// One measured point.
#[derive(Clone, Debug)]
pub struct Row {
    /// "strong" or "weak".
    pub scaling: &'static str,
    pub k: usize,
    pub n: usize,
    /// Median wall ms per force evaluation.
    pub wall_ms: f64,
    /// Medians over the repeats of the slowest rank's exchange, compute (incl. GPU walk) and
    /// GPU-walk ms.
    pub exchange_ms: f64,
    pub compute_ms: f64,
    pub device_ms: f64,
    /// The last repeat's statistics (bytes, imbalance, migration).
    pub stats: StepStats,
    /// t1 / (K tK) (strong) or t1 / tK (weak).
    pub efficiency: f64,
    /// Median and max |a_K − a_1| / |a_1| (strong; NaN for weak).
    pub diff_median: f64,
    pub diff_max: f64,
    /// Median and max relative error against float64 direct summation on `samples` bodies.
    pub err_median: f64,
    pub err_max: f64,
    pub samples: usize,
}

pub fn run(s: &Settings) -> Result<Summary, ReproError> {
    let n_strong = s.n.unwrap_or(s.pick(1 << 24, 1 << 15));
    let n_rank = (n_strong / 2).max(2);
    let repeats = s.repeats_or(3, 3);
    let samples = s.pick(128, 256);
    let place = choose(s)?;
    let ks: Vec<usize> = KS
        .iter()
        .copied()
        .filter(|&k| k <= place.max_k() && k <= n_strong)
        .collect();
    let weak_max = n_rank * ks.last().copied().unwrap_or(1);
    if weak_max > i32::MAX as usize / 2 {
        return Err(ReproError::InvalidN {
            n: n_strong,
            why: format!("weak scaling would reach {weak_max} bodies, past the 32-bit indices"),
        });
    }
    let p = Params {
        theta: 0.5,
        eps: 0.05,
        g: 1.0,
    };
    let dir = s.dir("multigpu")?;
    let gpus: Vec<String> = match &place {
        Where::Nccl(g) => g.iter().map(|g| g.info().name.clone()).collect(),
        Where::OneGpu(g, _) => vec![g.info().name.clone()],
        Where::Cpu => Vec::new(),
    };
    let params = json!({
        "scene": "plummer", "strong_n": n_strong, "weak_n_per_rank": n_rank, "ranks": ks,
        "theta": p.theta, "eps": p.eps, "G": p.g, "quadrupole": false, "repeats": repeats,
        "warm_up": 1, "f64_samples": samples, "seed": s.seed, "place": place.name(),
        "gpus": gpus,
        "targets": {"strong_k2": TARGET_STRONG_2, "strong_k8": TARGET_STRONG_8,
            "weak": TARGET_WEAK},
    });
    let meta = meta::write(&dir, "multigpu", &s.backend, params)?;
    let mut report = Report::new(TITLE);
    report.para(&format!("Machine: {}.", meta::machine_line(&s.backend)));
    report.para(&place.describe());
    report.para(&format!(
        "Plummer spheres, float32, θ = {}, ε = {}, monopoles; each rank's walk is the group walk \
         ({}). Strong scaling: N = {} at every K. Weak scaling: {} bodies per rank. Wall ms: one \
         force evaluation over all ranks (decomposition, migration, trees, LET exchange, walks), \
         median of {repeats} after one warm-up. Exchange / compute / GPU walk: the slowest rank's \
         ms in collectives, in its own work (keys, trees, walks; includes the GPU walk), and in \
         its GPU walk (upload, kernel, download), medians over the repeats. Bytes: sent to other \
         ranks per step, all ranks together. Imbalance: the largest rank's interactions over the \
         mean. Efficiency: strong t1 / (K·tK), weak t1 / tK. Δ vs K = 1: relative difference of \
         the accelerations from the single-rank result (strong only: weak scaling changes N). \
         Error vs f64: relative error against float64 direct summation on {samples} bodies.",
        p.theta,
        p.eps,
        s.pick("group kernel on the GPU", "the CPU group walk"),
        fmt_n(n_strong),
        fmt_n(n_rank),
    ));
    report.para(
        "Trees and LETs are built on the host (each rank's keys, sort, local tree, top tree and \
         essential tree are CPU work; only the walks run on the GPUs), so the compute column is \
         mostly host time, and on one GPU with virtual ranks these numbers measure the host \
         side of the decomposition.",
    );
    let mut rows = Vec::new();
    let res = measure(
        s, &place, &ks, n_strong, n_rank, repeats, samples, &p, &dir, &mut rows,
    );
    tables(&mut report, &rows, place.caveat());
    let figs = figures(
        &dir,
        &rows,
        &meta::figure_note(&s.backend, None),
        &place,
        n_strong,
        n_rank,
        &mut report,
    );
    let err = res.and(figs).err();
    finish(s, &dir, &mut report, meta, err.as_ref())?;
    if let Some(e) = err {
        return Err(e);
    }
    let eff = |sc: &str, k: usize| {
        rows.iter()
            .find(|r| r.scaling == sc && r.k == k)
            .map_or("–".into(), |r| format!("{:.0}%", 100.0 * r.efficiency))
    };
    let kmax = ks.last().copied().unwrap_or(1);
    Ok(Summary {
        name: "multigpu",
        title: TITLE.into(),
        headline: format!(
            "{}: strong N = {} efficiency {} at K = 2, {} at K = {kmax}; weak {} per rank {} at \
             K = {kmax}",
            place.name(),
            fmt_n(n_strong),
            eff("strong", 2),
            eff("strong", kmax),
            fmt_n(n_rank),
            eff("weak", kmax),
        ),
        figures: vec![
            ("efficiency".into(), "efficiency against K".into()),
            (
                "parts-strong".into(),
                "time per step by part, strong".into(),
            ),
            ("parts-weak".into(), "time per step by part, weak".into()),
        ],
    })
}

/// The place: NCCL over the visible GPUs when there are two or more and NCCL loads, else the
/// backend's GPU with virtual ranks, else CPU threads.
fn choose(s: &Settings) -> Result<Where, ReproError> {
    let Some(g0) = s.backend.gpu() else {
        return Ok(Where::Cpu);
    };
    let visible = warpkit::runtime::probe::driver().map_or(1, |d| d.device_count);
    if visible < 2 {
        return Ok(Where::OneGpu(g0.clone(), "the only visible GPU".into()));
    }
    if let Err(e) = warpkit::multi::nccl::ensure_loadable() {
        return Ok(Where::OneGpu(
            g0.clone(),
            format!("{visible} GPUs visible but NCCL is not loadable: {e}"),
        ));
    }
    let k = visible.min(*KS.last().expect("KS is not empty"));
    let mut gpus = vec![g0.clone()];
    for i in 1..k {
        let g = Gpu::new(i)
            .map_err(|e| MultiError::Setup(format!("opening GPU {i}: {e}")))
            .map_err(ReproError::from)?;
        gpus.push(std::sync::Arc::new(g));
    }
    Ok(Where::Nccl(gpus))
}

/// A Plummer sphere of `n` bodies, shuffled (the ranks start from contiguous chunks).
fn bodies(n: usize, seed: u64) -> Vec<Body> {
    let mut b = scene::generate(Scene::Plummer, n, seed);
    scene::shuffle(&mut b, seed);
    b
}

/// Evenly spaced sample indices and their float64 direct sums.
fn reference(b: &[Body], samples: usize, p: &Params) -> (Vec<usize>, Vec<[f64; 3]>) {
    let step = (b.len() / samples.max(1)).max(1);
    let idx: Vec<usize> = (0..b.len()).step_by(step).take(samples).collect();
    let exact = cpu::brute_force_f64(b, &idx, p);
    (idx, exact)
}

fn as_f64(a: &[Accel]) -> Vec<[f64; 3]> {
    a.iter()
        .map(|a| [a.x as f64, a.y as f64, a.z as f64])
        .collect()
}

fn med_max(v: &[f64]) -> (f64, f64) {
    (
        median(v).unwrap_or(f64::NAN),
        v.iter().copied().fold(f64::NAN, f64::max),
    )
}

/// One point: a warm-up, then `repeats` timed evaluations.
fn evaluate(
    place: &Where,
    k: usize,
    p: &Params,
    b: &[Body],
    repeats: usize,
) -> Result<(Vec<f64>, Vec<warpkit::multi::Gravity>), ReproError> {
    let vr = VirtualRanks {
        k,
        params: *p,
        quadrupole: false,
    };
    let refs: Vec<&Gpu> = match place {
        Where::Nccl(g) => g.iter().take(k).map(|g| &**g).collect(),
        _ => Vec::new(),
    };
    let at = match place {
        Where::Cpu => Place::Cpu,
        Where::OneGpu(g, _) => Place::Gpu(g),
        Where::Nccl(g) if k == 1 => Place::Gpu(&g[0]),
        Where::Nccl(_) => Place::Gpus(&refs),
    };
    vr.gravity_on(at, b)?;
    let mut wall = Vec::with_capacity(repeats);
    let mut runs = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let t = Instant::now();
        let g = vr.gravity_on(at, b)?;
        wall.push(t.elapsed().as_secs_f64() * 1e3);
        runs.push(g);
    }
    Ok((wall, runs))
}

#[allow(clippy::too_many_arguments)]
fn measure(
    s: &Settings,
    place: &Where,
    ks: &[usize],
    n_strong: usize,
    n_rank: usize,
    repeats: usize,
    samples: usize,
    p: &Params,
    dir: &OutDir,
    rows: &mut Vec<Row>,
) -> Result<(), ReproError> {
    let mut csv = Csv::create(
        dir.file("data.csv"),
        &[
            "backend",
            "place",
            "scaling",
            "k",
            "n",
            "n_per_rank",
            "repeats",
            "wall_ms",
            "exchange_ms",
            "compute_ms",
            "gpu_walk_ms",
            "host_compute_ms",
            "bytes",
            "bytes_decomposition",
            "bytes_migration",
            "bytes_top",
            "bytes_let",
            "migrated",
            "imbalance",
            "interactions_per_body",
            "efficiency",
            "diff_median",
            "diff_max",
            "err_f64_median",
            "err_f64_max",
            "f64_samples",
        ],
    )?;
    let bar = progress(2 * ks.len() as u64, "multigpu");
    for scaling in ["strong", "weak"] {
        let mut single: Option<(f64, Vec<[f64; 3]>)> = None;
        let mut strong_ref: Option<(Vec<usize>, Vec<[f64; 3]>)> = None;
        for &k in ks {
            let n = if scaling == "strong" {
                n_strong
            } else {
                n_rank * k
            };
            bar.set_message(format!("{scaling} K = {k}, N = {}", fmt_n(n)));
            let b = bodies(n, s.seed);
            let (wall, runs) = evaluate(place, k, p, &b, repeats)?;
            let g = runs.last().expect("at least one repeat");
            let pick = |f: fn(&StepStats) -> f64| {
                median(&runs.iter().map(|r| f(&r.stats)).collect::<Vec<_>>()).unwrap_or(f64::NAN)
            };
            let wall_ms = median(&wall).unwrap_or(f64::NAN);
            // The float64 sample: once for the strong series (one N), per point for the weak.
            let (idx, exact) = match (&strong_ref, scaling) {
                (Some(r), "strong") => r.clone(),
                _ => {
                    let r = reference(&b, samples, p);
                    if scaling == "strong" {
                        strong_ref = Some(r.clone());
                    }
                    r
                }
            };
            let picked: Vec<Accel> = idx.iter().map(|&i| g.acc[i]).collect();
            let (err_median, err_max) = med_max(&warpkit::bh::relative_errors(&picked, &exact));
            let (t1, diff) = match &single {
                None => {
                    single = Some((wall_ms, as_f64(&g.acc)));
                    (wall_ms, [0.0, 0.0])
                }
                Some((t1, a1)) if scaling == "strong" => {
                    let (m, x) = med_max(&warpkit::bh::relative_errors(&g.acc, a1));
                    (*t1, [m, x])
                }
                Some((t1, _)) => (*t1, [f64::NAN, f64::NAN]),
            };
            let efficiency = if scaling == "strong" {
                t1 / (k as f64 * wall_ms)
            } else {
                t1 / wall_ms
            };
            let row = Row {
                scaling,
                k,
                n,
                wall_ms,
                exchange_ms: pick(|s| s.ms_exchange),
                compute_ms: pick(|s| s.ms_compute),
                device_ms: pick(|s| s.ms_device),
                stats: g.stats.clone(),
                efficiency,
                diff_median: diff[0],
                diff_max: diff[1],
                err_median,
                err_max,
                samples: idx.len(),
            };
            let st = &row.stats;
            let opt = |v: f64| {
                if v.is_finite() {
                    v.to_string()
                } else {
                    String::new()
                }
            };
            csv.row(&[
                s.backend.name().to_string(),
                place.name().to_string(),
                scaling.to_string(),
                k.to_string(),
                n.to_string(),
                (n / k).to_string(),
                repeats.to_string(),
                wall_ms.to_string(),
                row.exchange_ms.to_string(),
                row.compute_ms.to_string(),
                row.device_ms.to_string(),
                (row.compute_ms - row.device_ms).to_string(),
                st.bytes().to_string(),
                st.bytes_decomposition.to_string(),
                st.bytes_migration.to_string(),
                st.bytes_top.to_string(),
                st.bytes_let.to_string(),
                st.migrated.to_string(),
                st.imbalance.to_string(),
                (st.interactions as f64 / n as f64).to_string(),
                efficiency.to_string(),
                opt(row.diff_median),
                opt(row.diff_max),
                opt(row.err_median),
                opt(row.err_max),
                row.samples.to_string(),
            ])?;
            rows.push(row);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// Bytes as B / KiB / MiB.
fn fmt_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= (1 << 20) as f64 {
        format!("{:.2} MiB", b / (1 << 20) as f64)
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

fn fmt_err(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.is_finite() {
        format!("{v:.2e}")
    } else {
        "–".into()
    }
}

fn tables(report: &mut Report, rows: &[Row], caveat: &str) {
    for (scaling, what) in [
        ("strong", "Strong scaling (fixed N)"),
        ("weak", "Weak scaling (fixed N per rank)"),
    ] {
        report.heading(&format!("{what} — {caveat}"));
        let mut t = Table::new(&[
            "K",
            "N",
            "wall ms",
            "efficiency",
            "exchange ms",
            "compute ms",
            "GPU walk ms",
            "bytes / step",
            "LET bytes",
            "migrated",
            "imbalance",
            "Δ vs K = 1 (median / max)",
            "error vs f64 (median / max)",
        ]);
        for r in rows.iter().filter(|r| r.scaling == scaling) {
            t.push(vec![
                r.k.to_string(),
                fmt_n(r.n),
                fmt_ms(r.wall_ms),
                format!("{:.1}%", 100.0 * r.efficiency),
                fmt_ms(r.exchange_ms),
                fmt_ms(r.compute_ms),
                fmt_ms(r.device_ms),
                fmt_bytes(r.stats.bytes()),
                fmt_bytes(r.stats.bytes_let),
                r.stats.migrated.to_string(),
                format!("{:.3}", r.stats.imbalance),
                if r.diff_median.is_finite() {
                    format!("{} / {}", fmt_err(r.diff_median), fmt_err(r.diff_max))
                } else {
                    "–".into()
                },
                format!("{} / {}", fmt_err(r.err_median), fmt_err(r.err_max)),
            ]);
        }
        report.table(&t);
    }
    report.para(&format!(
        "Targets (H200s over NCCL): strong scaling of Plummer 2^24 at ≥ {:.0}% on 2 \
         GPUs and ≥ {:.0}% on 8; weak scaling of 2^23 per GPU at ≥ {:.0}% from 1 to 8 GPUs. \
         They apply to the NCCL place only.",
        100.0 * TARGET_STRONG_2,
        100.0 * TARGET_STRONG_8,
        100.0 * TARGET_WEAK
    ));
}

fn figures(
    dir: &OutDir,
    rows: &[Row],
    device: &str,
    place: &Where,
    n_strong: usize,
    n_rank: usize,
    report: &mut Report,
) -> Result<(), ReproError> {
    if rows.is_empty() {
        return Ok(());
    }
    report.heading("Figures");
    let kmax = rows.iter().map(|r| r.k).max().unwrap_or(1).max(2) as f64;
    let series = |sc: &str| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| r.scaling == sc && r.efficiency.is_finite())
            .map(|r| (r.k as f64, r.efficiency))
            .collect()
    };
    let flat = |v: f64| vec![(1.0, v), (kmax, v)];
    plot::line_chart(
        dir.path(),
        "efficiency",
        &LineChart {
            title: format!(
                "Efficiency vs K, strong N = {}, weak {}/rank ({}, {device})",
                plot::n_label(n_strong),
                plot::n_label(n_rank),
                place.short()
            ),
            x: Axis::new("ranks K", Scale::Linear),
            y: Axis::new("efficiency", Scale::Linear),
            series: vec![
                Series::data("strong: t1 / (K·tK)", series("strong")),
                Series::data("weak: t1 / tK", series("weak")),
                Series::guide("target 90% (weak, 8 GPUs)", flat(TARGET_WEAK)),
                Series::guide("target 85% (strong, 2 GPUs)", flat(TARGET_STRONG_2)),
                Series::guide("target 70% (strong, 8 GPUs)", flat(TARGET_STRONG_8)),
            ],
        },
    )?;
    report.figure("efficiency", "efficiency against K, strong and weak");
    for (sc, n, what) in [("strong", n_strong, "N"), ("weak", n_rank, "N/rank")] {
        let set: Vec<&Row> = rows.iter().filter(|r| r.scaling == sc).collect();
        if set.is_empty() {
            continue;
        }
        let stem = format!("parts-{sc}");
        plot::stacked_bar_chart(
            dir.path(),
            &stem,
            &StackedBars {
                title: format!(
                    "Time per step by part, {sc}, {what} = {} ({}, {device})",
                    plot::n_label(n),
                    place.short()
                ),
                y_label: "ms per force evaluation (slowest rank)".into(),
                categories: set.iter().map(|r| format!("K = {}", r.k)).collect(),
                parts: vec![
                    (
                        "exchange".into(),
                        set.iter().map(|r| r.exchange_ms).collect(),
                    ),
                    (
                        "compute outside the GPU walk (keys, trees, LETs; CPU walks)".into(),
                        set.iter()
                            .map(|r| (r.compute_ms - r.device_ms).max(0.0))
                            .collect(),
                    ),
                    ("GPU walk".into(), set.iter().map(|r| r.device_ms).collect()),
                ],
            },
        )?;
        report.figure(&stem, &format!("time per step by part, {sc} scaling"));
    }
    Ok(())
}
