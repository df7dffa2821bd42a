//! `repro hydro`: the float64 CPU SPH solver on its four standard tests — the Sod shock tube
//! in 3D (profiles at t = 0.2 against the exact Riemann solution), the Sedov–Taylor blast (radial
//! density against the similarity solution), the Evrard collapse (energies against time) and the
//! n = 1 polytrope (density against Lane–Emden after it has settled and run) — each at three
//! resolutions: L1 errors and their observed order, and the step's time by stage. The cases are
//! `warpkit sph`'s ([`warpkit::sph::hydro::cli`]) with their default parameters, except the
//! Sedov blast's Morris–Monaghan viscosity (α from 0.1 to 2, as its test runs it) and the
//! Evrard collapse's end time ([`EVRARD_T_END`]).
//!
//! The solver runs on the CPU whatever the backend; the GPU backend's hosts get larger sizes.

use super::output::{Csv, OutDir, OutputError, Report, Table, interrupted, progress};
use super::plot::{self, Axis, LineChart, Scale, Series};
use super::{ReproError, Settings, Summary, finish, fmt_ms, meta};
use serde_json::json;
use warpkit::backend::BackendChoice;
use warpkit::sph::hydro::cli::{IcKind, SphConfig, prepare};
use warpkit::sph::hydro::ic::{self, SOD_WINDOW};
use warpkit::sph::hydro::ic_gravity::Polytrope;
use warpkit::sph::hydro::{Sim, StageTimes, sedov};

const TITLE: &str = "SPH hydrodynamics: Sod, Sedov–Taylor, Evrard, polytrope";

/// Past the thermal energy's peak at t ≈ 1.15 (`warpkit sph` stops at 0.8, mid-collapse).
pub const EVRARD_T_END: f64 = 1.3;

/// The cases in the order of the tables.
pub const CASES: [IcKind; 4] = [
    IcKind::Sod,
    IcKind::Sedov,
    IcKind::Evrard,
    IcKind::Polytrope,
];

/// Three resolutions per case: Sod and Sedov in particles per unit length (per box side for
/// Sedov), Evrard and the polytrope in particles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sizes {
    pub sod: [usize; 3],
    pub sedov: [usize; 3],
    pub evrard: [usize; 3],
    pub polytrope: [usize; 3],
}

/// The CPU backend's: the Sod resolutions of the solver's convergence test; `repro all` spends
/// about three minutes here on two cores.
pub const CPU_SIZES: Sizes = Sizes {
    sod: [24, 36, 54],
    sedov: [12, 16, 24],
    evrard: [1000, 2000, 4000],
    polytrope: [1000, 2000, 4000],
};

/// A GPU host's (its CPU cores run the solver).
pub const GPU_SIZES: Sizes = Sizes {
    sod: [36, 54, 80],
    sedov: [16, 24, 32],
    evrard: [2000, 4000, 8000],
    polytrope: [2000, 4000, 8000],
};

impl Sizes {
    /// The backend's defaults, or with `--n` resolutions whose largest runs have about `n`
    /// particles (each case at least a few hundred).
    pub fn of(s: &Settings) -> Sizes {
        let Some(n) = s.n else {
            return s.pick(GPU_SIZES, CPU_SIZES);
        };
        let even = |x: f64, min: usize| ((x / 2.0).round() as usize * 2).max(min);
        // A Sod lattice of resolution r holds 9/8 r a² particles, a particles across.
        let across = ic::sod_across(58.0) as f64;
        let sod = n as f64 / (1.125 * across * across);
        let side = (n as f64).cbrt().round().max(8.0);
        let np = n.max(400);
        Sizes {
            // Below 8 the dense half's smoothing length reaches half the tube.
            sod: [
                even(sod * 4.0 / 9.0, 8),
                even(sod * 2.0 / 3.0, 10),
                even(sod, 12),
            ],
            sedov: [
                ((side * 2.0 / 3.0).round() as usize).max(6),
                ((side * 5.0 / 6.0).round() as usize).max(7),
                side as usize,
            ],
            evrard: [np / 4, np / 2, np],
            polytrope: [np / 4, np / 2, np],
        }
    }

    pub fn of_case(&self, case: IcKind) -> [usize; 3] {
        match case {
            IcKind::Sod => self.sod,
            IcKind::Sedov => self.sedov,
            IcKind::Evrard => self.evrard,
            _ => self.polytrope,
        }
    }
}

/// One run's results.
#[derive(Clone, Debug)]
pub struct Row {
    pub case: IcKind,
    /// Resolution (Sod, Sedov) or requested particles (Evrard, polytrope).
    pub size: usize,
    pub particles: usize,
    pub t_end: f64,
    pub steps: u64,
    /// Mean absolute errors: Sod `[ρ, v_x, P]` in its window; Sedov and the polytrope `[ρ]`;
    /// Evrard none.
    pub l1: Vec<f64>,
    /// `|ΔE / E|` over the run.
    pub energy_error: f64,
    pub times: StageTimes,
}

impl Row {
    /// The linear resolution against which the order is measured: particles per length, or
    /// `N^(1/3)`.
    fn scale(&self) -> f64 {
        match self.case {
            IcKind::Sod | IcKind::Sedov => self.size as f64,
            _ => (self.particles as f64).cbrt(),
        }
    }

    fn ms_per_step(&self, seconds: f64) -> f64 {
        1e3 * seconds / self.steps.max(1) as f64
    }
}

/// The observed order of `l1[k]` from the first to the last row of a case: `ln(e₀/e₂) /
/// ln(s₂/s₀)` for linear resolutions `s`.
pub fn order(rows: &[&Row], k: usize) -> Option<f64> {
    let (a, b) = (rows.first()?, rows.last()?);
    let (ea, eb) = (*a.l1.get(k)?, *b.l1.get(k)?);
    (rows.len() >= 2 && ea > 0.0 && eb > 0.0).then(|| (ea / eb).ln() / (b.scale() / a.scale()).ln())
}

/// What a case's figure shows of its finest run.
enum Shown {
    /// Sod: particles' (x, ρ, v_x, P).
    Sod(Vec<[f64; 4]>, f64),
    /// Sedov and the polytrope: (r, ρ) about the centre and the shock radius (Sedov).
    Radial(Vec<(f64, f64)>, f64),
    /// Evrard: (t, kinetic, thermal, potential, total).
    Energies(Vec<[f64; 5]>),
}

pub fn run(s: &Settings) -> Result<Summary, ReproError> {
    let sizes = Sizes::of(s);
    let dir = s.dir("hydro")?;
    let params = json!({
        "sod_resolutions": sizes.sod, "sedov_sides": sizes.sedov,
        "evrard_particles": sizes.evrard, "polytrope_particles": sizes.polytrope,
        "solver": "warpkit::sph::hydro, CPU float64, KDK leapfrog, cubic spline, 58 neighbours",
        "cases": "warpkit sph defaults (Sod t = 0.2; Sedov E = 1 until the shock reaches r = 0.35 \
            with α from 0.1 to 2; Evrard t = 1.3; polytrope settled 3, then t = 3)",
        "threads": rayon::current_num_threads(),
    });
    let meta = meta::write(&dir, "hydro", &s.backend, params)?;
    let mut report = Report::new(TITLE);
    report.para(&format!(
        "{}; the CPU float64 solver on {} threads. L1: the mean |error| over particles — Sod in \
         0.5 ≤ x ≤ 1.5 against the exact Riemann solution at t = 0.2; Sedov within r < 0.5 of \
         the centre against the similarity solution; the polytrope against Lane–Emden about \
         the centre of mass. Order: from the coarsest to the finest run, in particles per \
         length (N^(1/3) for the polytrope).",
        meta::machine_line(&s.backend),
        rayon::current_num_threads()
    ));
    let mut rows = Vec::new();
    let mut shown = Vec::new();
    let res = measure(&dir, &sizes, &mut rows, &mut shown);
    tables(&mut report, &rows);
    let figs = figures(&dir, &shown, &mut report);
    let err = res.and(figs).err();
    finish(s, &dir, &mut report, meta, err.as_ref())?;
    if let Some(e) = err {
        return Err(e);
    }
    let last = |case| rows.iter().rfind(|r| r.case == case);
    let of = |case| rows.iter().filter(|r| r.case == case).collect::<Vec<_>>();
    let fmt = |case, what: &str| {
        last(case).map_or(String::new(), |r| {
            format!(
                "{what} L1 ρ {:.3e} (order {:.2})",
                r.l1[0],
                order(&of(case), 0).unwrap_or(f64::NAN)
            )
        })
    };
    Ok(Summary {
        name: "hydro",
        title: TITLE.into(),
        headline: format!(
            "{}, {}, {}; Evrard |ΔE/E| {:.1e}",
            fmt(IcKind::Sod, "Sod"),
            fmt(IcKind::Sedov, "Sedov"),
            fmt(IcKind::Polytrope, "polytrope"),
            last(IcKind::Evrard).map_or(f64::NAN, |r| r.energy_error)
        ),
        figures: FIGURES
            .iter()
            .map(|(stem, caption)| (stem.to_string(), caption.to_string()))
            .collect(),
    })
}

const FIGURES: [(&str, &str); 6] = [
    ("sod-density", "Sod density at t = 0.2"),
    ("sod-velocity", "Sod velocity at t = 0.2"),
    ("sod-pressure", "Sod pressure at t = 0.2"),
    ("sedov", "Sedov–Taylor radial density"),
    ("evrard", "Evrard collapse energies"),
    ("polytrope", "polytrope density profile"),
];

fn measure(
    dir: &OutDir,
    sizes: &Sizes,
    rows: &mut Vec<Row>,
    shown: &mut Vec<Shown>,
) -> Result<(), ReproError> {
    let mut csv = Csv::create(
        dir.file("data.csv"),
        &[
            "case",
            "size",
            "particles",
            "t_end",
            "steps",
            "l1_rho",
            "l1_v",
            "l1_p",
            "energy_error",
            "density_ms_per_step",
            "forces_ms_per_step",
            "gravity_ms_per_step",
            "integration_ms_per_step",
            "total_s",
        ],
    )?;
    let bar = progress(12, "hydro");
    for case in CASES {
        for (k, size) in sizes.of_case(case).into_iter().enumerate() {
            bar.set_message(format!("{case:?} {size}"));
            let (row, show) = run_case(case, size, k == 2)?;
            let l1 = |j: usize| row.l1.get(j).map_or(String::new(), |v| v.to_string());
            let ms = |s: f64| row.ms_per_step(s).to_string();
            csv.row(&[
                format!("{case:?}").to_lowercase(),
                size.to_string(),
                row.particles.to_string(),
                row.t_end.to_string(),
                row.steps.to_string(),
                l1(0),
                l1(1),
                l1(2),
                row.energy_error.to_string(),
                ms(row.times.density),
                ms(row.times.forces),
                ms(row.times.gravity),
                ms(row.times.integration),
                row.times.total().to_string(),
            ])?;
            rows.push(row);
            shown.extend(show);
            bar.inc(1);
            if interrupted() {
                return Err(OutputError::Interrupted.into());
            }
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// Runs one case at one size; with `show`, also what its figure needs.
fn run_case(case: IcKind, size: usize, show: bool) -> Result<(Row, Option<Shown>), ReproError> {
    let mut c = SphConfig::default();
    c.ic.kind = case;
    match case {
        IcKind::Sod | IcKind::Sedov => c.ic.resolution = size,
        _ => c.ic.particles = size,
    }
    if case == IcKind::Sedov {
        c.run.alpha_min = 0.1;
        c.run.alpha_max = 2.0;
    }
    if case == IcKind::Evrard {
        c.run.t_end = Some(EVRARD_T_END);
    }
    let hydro = |e: anyhow::Error| ReproError::Hydro(format!("{case:?} at {size}: {e:#}"));
    // The float64 CPU solver throughout: the table's errors are the method's, not float32's.
    let p = prepare(&c, BackendChoice::Cpu).map_err(hydro)?;
    let (mut sim, t_end) = (p.sim, p.t_end);
    // The polytrope's settling is set-up, not the run.
    sim.times = StageTimes::default();
    let (step0, e0) = (sim.step, sim.diagnostics().total);
    let mut energies = Vec::new();
    let record = |sim: &Sim, e: &mut Vec<[f64; 5]>| {
        let d = sim.diagnostics();
        e.push([d.t, d.kinetic, d.thermal, d.potential, d.total]);
    };
    record(&sim, &mut energies);
    while sim.t < t_end * (1.0 - 1e-12) {
        sim.step(t_end - sim.t)
            .map_err(|e| hydro(anyhow::Error::new(e)))?;
        if case == IcKind::Evrard {
            record(&sim, &mut energies);
        }
        if interrupted() {
            return Err(OutputError::Interrupted.into());
        }
    }
    let g = &sim.gas;
    let radial = |centre: [f64; 3]| -> Vec<(f64, f64)> {
        (0..g.len())
            .map(|i| {
                let d: [f64; 3] = core::array::from_fn(|k| g.pos[i][k] - centre[k]);
                ((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt(), g.rho[i])
            })
            .collect()
    };
    let mean_abs = |pairs: &[(f64, f64)], exact: &dyn Fn(f64) -> f64| {
        let e: Vec<f64> = pairs
            .iter()
            .map(|&(r, rho)| (rho - exact(r)).abs())
            .collect();
        e.iter().sum::<f64>() / e.len().max(1) as f64
    };
    let (l1, shown) = match case {
        IcKind::Sod => {
            let pts = (0..g.len())
                .map(|i| [g.pos[i][0], g.rho[i], g.vel[i][0], g.p[i]])
                .collect();
            (ic::sod_l1(g, sim.t).to_vec(), Shown::Sod(pts, sim.t))
        }
        IcKind::Sedov => {
            let gamma = 5.0 / 3.0;
            let profile = sedov::density_profile(gamma).expect("γ = 5/3 is covered");
            let rs = sedov::shock_radius(gamma, 1.0, 1.0, sim.t).unwrap_or(f64::NAN);
            let pts: Vec<(f64, f64)> = radial([0.5; 3]).into_iter().filter(|p| p.0 < 0.5).collect();
            let l1 = mean_abs(&pts, &|r| sedov::density(&profile, 1.0, rs, r));
            (vec![l1], Shown::Radial(pts, rs))
        }
        IcKind::Polytrope => {
            let poly = Polytrope::new(sim.params.gravity.g);
            let m: f64 = g.mass.iter().sum();
            let com = core::array::from_fn(|k| {
                (0..g.len()).map(|i| g.pos[i][k] * g.mass[i]).sum::<f64>() / m
            });
            let pts = radial(com);
            let l1 = mean_abs(&pts, &|r| poly.density(r));
            (vec![l1], Shown::Radial(pts, f64::NAN))
        }
        _ => (Vec::new(), Shown::Energies(energies)),
    };
    let e1 = sim.diagnostics().total;
    let row = Row {
        case,
        size,
        particles: g.len(),
        t_end,
        steps: sim.step - step0,
        l1,
        energy_error: ((e1 - e0) / e0).abs(),
        times: sim.times,
    };
    Ok((row, show.then_some(shown)))
}

fn tables(report: &mut Report, rows: &[Row]) {
    report.heading("L1 errors");
    let mut t = Table::new(&[
        "case",
        "resolution",
        "particles",
        "steps",
        "L1 ρ",
        "L1 v",
        "L1 P",
        "|ΔE/E|",
    ]);
    let e = |v: Option<&f64>| v.map_or("–".into(), |v| format!("{v:.4e}"));
    for r in rows {
        t.push(vec![
            format!("{:?}", r.case),
            r.size.to_string(),
            r.particles.to_string(),
            r.steps.to_string(),
            e(r.l1.first()),
            e(r.l1.get(1)),
            e(r.l1.get(2)),
            format!("{:.2e}", r.energy_error),
        ]);
    }
    for case in [IcKind::Sod, IcKind::Sedov, IcKind::Polytrope] {
        let of: Vec<&Row> = rows.iter().filter(|r| r.case == case).collect();
        let o = |k| order(&of, k).map_or("–".into(), |v| format!("{v:.2}"));
        if of.len() >= 2 {
            t.push(vec![
                format!("{case:?}"),
                "observed order".into(),
                String::new(),
                String::new(),
                o(0),
                o(1),
                o(2),
                String::new(),
            ]);
        }
    }
    report.table(&t);
    report.para(
        "Evrard has no exact solution to compare with once it moves: its row gives the energy \
         conservation. Where the solution jumps (Sod, Sedov) first order is the best SPH can \
         reach; the smooth polytrope's error is set by the kernel's smoothing and the settling.",
    );
    report.heading("Time per step by stage (finest run of each case)");
    let mut t = Table::new(&[
        "case",
        "particles",
        "steps",
        "density / h ms",
        "forces ms",
        "gravity ms",
        "integration ms",
        "total ms",
    ]);
    for case in CASES {
        if let Some(r) = rows.iter().rfind(|r| r.case == case) {
            let m = |s: f64| fmt_ms(r.ms_per_step(s));
            t.push(vec![
                format!("{case:?}"),
                r.particles.to_string(),
                r.steps.to_string(),
                m(r.times.density),
                m(r.times.forces),
                m(r.times.gravity),
                m(r.times.integration),
                m(r.times.total()),
            ]);
        }
    }
    report.table(&t);
}

/// Means of `y` in `bins` bins of `x` over `[lo, hi)` (empty bins left out).
fn binned(
    points: impl Iterator<Item = (f64, f64)>,
    lo: f64,
    hi: f64,
    bins: usize,
) -> Vec<(f64, f64)> {
    let mut sum = vec![(0.0, 0.0); bins];
    let w = (hi - lo) / bins as f64;
    for (x, y) in points {
        if (lo..hi).contains(&x) {
            let b = (((x - lo) / w) as usize).min(bins - 1);
            sum[b].0 += y;
            sum[b].1 += 1.0;
        }
    }
    (0..bins)
        .filter(|&b| sum[b].1 > 0.0)
        .map(|b| (lo + (b as f64 + 0.5) * w, sum[b].0 / sum[b].1))
        .collect()
}

fn curve(lo: f64, hi: f64, f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
    (0..=400)
        .map(|k| lo + (hi - lo) * k as f64 / 400.0)
        .map(|x| (x, f(x)))
        .collect()
}

fn figures(dir: &OutDir, shown: &[Shown], report: &mut Report) -> Result<(), ReproError> {
    if shown.len() < 4 {
        return Ok(());
    }
    report.heading("Figures");
    let linear = |label: &str| Axis::new(label, Scale::Linear);
    let mut chart = |stem: &str, title: String, x: &str, y: &str, series| {
        plot::line_chart(
            dir.path(),
            stem,
            &LineChart {
                title,
                x: linear(x),
                y: linear(y),
                series,
            },
        )?;
        let caption = FIGURES.iter().find(|f| f.0 == stem).map_or(stem, |f| f.1);
        report.figure(stem, caption);
        Ok::<(), ReproError>(())
    };
    for s in shown {
        match s {
            Shown::Sod(pts, t) => {
                let rp = ic::sod_riemann();
                let (lo, hi) = SOD_WINDOW;
                for (k, (stem, name)) in [
                    ("sod-density", "density ρ"),
                    ("sod-velocity", "velocity v_x"),
                    ("sod-pressure", "pressure P"),
                ]
                .into_iter()
                .enumerate()
                {
                    let exact = curve(lo, hi, |x| {
                        let e = ic::sod_exact(&rp, x, *t);
                        [e.rho, e.u, e.p][k]
                    });
                    let sph = binned(pts.iter().map(|p| (p[0], p[k + 1])), lo, hi, 100);
                    chart(
                        stem,
                        format!(
                            "Sod shock tube, {name} at t = {t:.2} ({} particles)",
                            pts.len()
                        ),
                        "x",
                        name,
                        vec![
                            Series::data("SPH (mean per slab)", sph),
                            Series::guide("exact Riemann solution", exact),
                        ],
                    )?;
                }
            }
            Shown::Radial(pts, rs) if rs.is_finite() => {
                let profile = sedov::density_profile(5.0 / 3.0).expect("γ = 5/3 is covered");
                chart(
                    "sedov",
                    format!(
                        "Sedov–Taylor blast, shock at r = {rs:.3} ({} particles)",
                        pts.len()
                    ),
                    "radius r",
                    "density ρ",
                    vec![
                        Series::data(
                            "SPH (mean per shell)",
                            binned(pts.iter().copied(), 0.0, 0.5, 50),
                        ),
                        Series::guide(
                            "similarity solution",
                            curve(0.0, 0.5, |r| sedov::density(&profile, 1.0, *rs, r)),
                        ),
                    ],
                )?;
            }
            Shown::Radial(pts, _) => {
                let poly = Polytrope::new(1.0);
                chart(
                    "polytrope",
                    format!(
                        "n = 1 polytrope after settling and t = 3 ({} particles)",
                        pts.len()
                    ),
                    "radius r",
                    "density ρ",
                    vec![
                        Series::data(
                            "SPH (mean per shell)",
                            binned(pts.iter().copied(), 0.0, 1.2, 30),
                        ),
                        Series::guide("Lane–Emden", curve(0.0, 1.2, |r| poly.density(r))),
                    ],
                )?;
            }
            Shown::Energies(e) => {
                // About 80 points of each curve.
                let every = e.len().div_ceil(80).max(1);
                let pick = |k: usize| -> Vec<(f64, f64)> {
                    e.iter()
                        .step_by(every)
                        .chain(e.last())
                        .map(|r| (r[0], r[k]))
                        .collect()
                };
                chart(
                    "evrard",
                    format!("Evrard collapse energies ({} steps)", e.len() - 1),
                    "time t",
                    "energy",
                    vec![
                        Series::data("kinetic", pick(1)),
                        Series::data("thermal", pick(2)),
                        Series::data("potential", pick(3)),
                        Series::data("total", pick(4)),
                    ],
                )?;
            }
        }
    }
    Ok(())
}
