//! `warpkit repro impact`: the demo giant impact — SWIFT's DemoImpact set-up (Kegerreis et al.
//! 2022): a 0.887 Earth-mass target and a 0.133 Earth-mass impactor, each 30% iron under 70%
//! rock (Tillotson iron and granite here, where SWIFT's demo uses ANEOS), at 45° and the mutual
//! escape speed, starting an hour before contact — at a CPU-sized N, run by `warpkit impact`
//! ([`warpkit::planet::impact`]) into `DIR/impact/`: the remnant, disk and escaping mass against
//! time (figure and `data.csv`), energy and angular momentum conservation, the time per step,
//! and the final state coloured by material.

use super::plot::{self, Axis, LineChart, Scale, Series};
use super::{ReproError, Settings, Summary, meta};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use warpkit::planet::cli::EARTH_MASS;
use warpkit::planet::impact::cli::ImpactConfig;
use warpkit::planet::impact::run::{ImpactSummary, run_case_with};
use warpkit::sph::hydro::GravitySolver;

const TITLE: &str = "A giant impact: the demo of SWIFT's planetary examples";

/// Particles of the two bodies together: CPU, GPU.
pub const PARTICLES: (usize, usize) = (1000, 10_000);
/// The run's end, s from the start (contact at 1 h).
pub const T_END: f64 = 36_000.0;
/// The fewest particles of the demo: the impactor's share (0.133/1.02) must reach the 100 a
/// planet takes.
pub const MIN_PARTICLES: usize = 770;
/// Below this many particles gravity is the float64 direct sum (exact angular momentum, and as
/// fast as the tree at this size).
const DIRECT_BELOW: usize = 5000;

/// The case: the demo at `n` particles, settled 3 dynamical times, outcome every half hour,
/// only the final snapshot (and its image).
pub fn case(s: &Settings, n: usize, dir: &std::path::Path) -> ImpactConfig {
    let mut c = ImpactConfig::default();
    c.particles.n = Some(n);
    c.particles.seed = s.seed;
    c.settle.time = 3.0;
    c.run.t_end = T_END;
    c.run.analysis_every = 1800.0;
    c.run.snapshot_every = 0.0;
    c.run.gravity_solver = if n < DIRECT_BELOW && !s.is_gpu() {
        GravitySolver::Direct
    } else {
        GravitySolver::Tree
    };
    c.output.dir = dir.to_path_buf();
    // The reproduction's folder is its own: a second run regenerates it.
    c.output.overwrite = true;
    c
}

pub fn run(s: &Settings) -> Result<Summary, ReproError> {
    let asked = s.n.unwrap_or(s.pick(PARTICLES.1, PARTICLES.0));
    // `--n` is shared with the other reproductions of `repro all`, some of which take far
    // fewer bodies: raised to the demo's minimum, and said so.
    let n = asked.max(MIN_PARTICLES);
    let raised = (n != asked).then(|| {
        format!("--n {asked} is below the demo's minimum of {MIN_PARTICLES} particles: ran {n}")
    });
    if let Some(note) = &raised {
        eprintln!("repro impact: {note}");
    }
    let dir = s.dir("impact")?;
    let c = case(s, n, dir.path());
    let mut m = meta::write(
        &dir,
        "impact",
        &s.backend,
        json!({
            "particles": n, "particles_asked": asked, "t_end_s": c.run.t_end, "settle_dynamical_times": c.settle.time,
            "gravity_solver": format!("{:?}", c.run.gravity_solver), "seed": c.particles.seed,
            "units": "SI (kg, m, s); masses in the table in Earth masses (5.97217e24 kg)",
            "scenario": "target 0.887 M_E, impactor 0.133 M_E, 30% iron / 70% granite \
                (Tillotson), impact angle 45 deg, speed at contact = mutual escape speed, \
                start 3600 s before contact",
        }),
    )?;
    let choice = if s.is_gpu() {
        warpkit::backend::BackendChoice::Gpu
    } else {
        warpkit::backend::BackendChoice::Cpu
    };
    let r = match run_case_with(
        &c,
        choice,
        Arc::new(AtomicBool::new(false)),
        &mut crate::image::materials::ImpactImages::default(),
    ) {
        Ok(r) => r,
        Err(e) => {
            m["status"] = format!("failed: {e:#}").into();
            write_meta(&dir, &m)?;
            return Err(ReproError::Hydro(format!("impact: {e:#}")));
        }
    };
    write_data(&dir, &r)?;
    figure(&dir, &r)?;
    let mut table = table(&r, n, &c);
    if let Some(note) = raised {
        table += &format!("\nNote: {note}.\n");
    }
    dir.write("table.md", table.as_bytes())?;
    if s.print {
        print!("{table}");
    }
    m["status"] = "complete".into();
    m["steps"] = r.steps.into();
    m["wall_s"] = r.wall_s.into();
    write_meta(&dir, &m)?;
    let last = &r.outcomes.last().expect("the final row").outcome;
    Ok(Summary {
        name: "impact",
        title: TITLE.into(),
        headline: format!(
            "{} particles to {:.0} h: remnant {:.4}, disk {:.4}, escaping {:.4} Earth masses; \
             |ΔE/E| ≤ {:.1e}, |ΔL/L| ≤ {:.1e}; {:.1} ms per step",
            r.particles,
            r.t / 3600.0,
            last.remnant.mass / EARTH_MASS,
            last.disk.mass / EARTH_MASS,
            last.escaping.mass / EARTH_MASS,
            r.energy_error_max,
            r.angular_momentum_error_max,
            1e3 * r.wall_s / r.steps.max(1) as f64
        ),
        figures: vec![("outcome".into(), "remnant, disk and escaping mass".into())],
    })
}

fn write_meta(dir: &super::output::OutDir, m: &serde_json::Value) -> Result<(), ReproError> {
    let json = serde_json::to_string_pretty(m).unwrap_or_else(|_| "{}".into());
    dir.write("meta.json", json.as_bytes())?;
    Ok(())
}

/// `data.csv`: the outcome rows in hours and Earth masses.
fn write_data(dir: &super::output::OutDir, r: &ImpactSummary) -> Result<(), ReproError> {
    let mut t = String::from("t_h,remnant_earth,disk_earth,escaping_earth");
    for class in ["remnant", "disk", "escaping"] {
        for m in &r.materials {
            t += &format!(",{class}_{m}_earth");
        }
    }
    t.push('\n');
    for row in &r.outcomes {
        let o = &row.outcome;
        t += &format!(
            "{},{},{},{}",
            row.t / 3600.0,
            o.remnant.mass / EARTH_MASS,
            o.disk.mass / EARTH_MASS,
            o.escaping.mass / EARTH_MASS
        );
        for share in [&o.remnant, &o.disk, &o.escaping] {
            for m in &share.by_material {
                t += &format!(",{}", m / EARTH_MASS);
            }
        }
        t.push('\n');
    }
    dir.write("data.csv", t.as_bytes())?;
    Ok(())
}

/// `outcome.png`/`.svg`: the three masses against time, log scale (the disk and the ejecta are
/// hundredths of the remnant).
fn figure(dir: &super::output::OutDir, r: &ImpactSummary) -> Result<(), ReproError> {
    let series = |name: &str, f: &dyn Fn(&warpkit::planet::impact::outcome::Outcome) -> f64| {
        Series::data(
            name,
            r.outcomes
                .iter()
                .map(|row| (row.t / 3600.0, f(&row.outcome) / EARTH_MASS))
                .filter(|p| p.1 > 0.0)
                .collect(),
        )
    };
    let contact = r.t_contact / 3600.0;
    let lo = r
        .outcomes
        .iter()
        .flat_map(|row| {
            let o = &row.outcome;
            [o.remnant.mass, o.disk.mass, o.escaping.mass]
        })
        .filter(|&m| m > 0.0)
        .fold(f64::INFINITY, f64::min)
        / EARTH_MASS;
    plot::line_chart(
        dir.path(),
        "outcome",
        &LineChart {
            title: format!(
                "Largest remnant, disk and escaping mass ({} particles)",
                r.particles
            ),
            x: Axis::new("time [h] (contact at the dashed line)", Scale::Linear),
            y: Axis::new("mass [Earth masses]", Scale::Log10),
            series: vec![
                series("remnant", &|o| o.remnant.mass),
                series("disk", &|o| o.disk.mass),
                series("escaping", &|o| o.escaping.mass),
                Series::guide("contact", vec![(contact, lo.max(1e-6)), (contact, 1.1)]),
            ],
        },
    )?;
    Ok(())
}

fn table(r: &ImpactSummary, n: usize, c: &ImpactConfig) -> String {
    let mut t = format!("# {TITLE}\n\n");
    t += &format!(
        "{n} particles ({} target, {} impactor), equal masses; bodies built and settled for {} \
         dynamical times; {:?} gravity; Tillotson iron and granite. SWIFT's demo runs 10⁶ \
         particles with ANEOS: the numbers below are a small-N version of its set-up, not its \
         results.\n\n",
        r.target_particles,
        r.particles - r.target_particles,
        c.settle.time,
        c.run.gravity_solver
    );
    t += "| t [h] | remnant | disk | escaping | remnant iron | disk iron |\n";
    t += "| --- | --- | --- | --- | --- | --- |\n";
    let iron = r.materials.iter().position(|m| m == "iron");
    for row in &r.outcomes {
        let o = &row.outcome;
        let fe = |s: &warpkit::planet::impact::outcome::Share| {
            iron.map_or("–".into(), |k| {
                format!("{:.4}", s.by_material[k] / EARTH_MASS)
            })
        };
        t += &format!(
            "| {:.1} | {:.4} | {:.4} | {:.4} | {} | {} |\n",
            row.t / 3600.0,
            o.remnant.mass / EARTH_MASS,
            o.disk.mass / EARTH_MASS,
            o.escaping.mass / EARTH_MASS,
            fe(&o.remnant),
            fe(&o.disk)
        );
    }
    t += &format!(
        "\nMasses in Earth masses (5.97217·10²⁴ kg). Energy error |ΔE/E| {:.2e} at the end, \
         {:.2e} at most; angular momentum |ΔL/L| {:.2e} at the end, {:.2e} at most. {} steps in \
         {:.1} s ({:.1} ms per step), settling {:.1} s.\n\n\
         Files: `outcome.csv` and `diagnostics.csv` (SI), `impact.toml` (units, materials, \
         orbit, summary), `snapshot_final.gadget` and its image `snapshot_final.materials.png`, \
         `outcome.png` (this table's masses against time).\n\n\
         ![the final state, seen along the orbit's axis, coloured by material]\
         (snapshot_final.materials.png)\n",
        r.energy_error.abs(),
        r.energy_error_max,
        r.angular_momentum_error,
        r.angular_momentum_error_max,
        r.steps,
        r.wall_s,
        1e3 * r.wall_s / r.steps.max(1) as f64,
        r.setup_s
    );
    t
}
