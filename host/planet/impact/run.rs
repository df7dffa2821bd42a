//! `warpkit impact`'s run: the case of [`super::cli`] built, then the SPH solver with
//! self-gravity to the end time, writing `diagnostics.csv` (energy and angular momentum),
//! `outcome.csv` (remnant, disk and escaping mass, per material, [`super::outcome`]), Gadget-2
//! float64 snapshots with material ids, and `impact.toml` (units, materials, bodies, orbit,
//! run, and at the end a summary). What a front end adds per snapshot (images) it does through
//! an [`ImpactObserver`].

use super::cli::{ImpactArgs, ImpactConfig, OUTPUTS, Setup, Source, config, validate};
use super::outcome::{self, Outcome, OutcomeOptions};
use crate::backend::BackendChoice;
use crate::nbody::snapshot::{self, Format, Precision};
use crate::planet::G_SI;
use crate::planet::cli::EARTH_MASS;
use crate::sph::hydro::{Diagnostics, Sim, snapio};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a front end does beside the run's own files.
pub trait ImpactObserver {
    /// After each snapshot is written to `path`, with the state it holds and the run's material
    /// names by id.
    fn snapshot(
        &mut self,
        c: &ImpactConfig,
        sim: &Sim,
        materials: &[String],
        path: &Path,
    ) -> Result<()> {
        let _ = (c, sim, materials, path);
        Ok(())
    }

    /// Every `[output] frame_every` seconds of simulated time, the start's included, with the
    /// output directory.
    fn frame(&mut self, c: &ImpactConfig, sim: &Sim, materials: &[String]) -> Result<()> {
        let _ = (c, sim, materials);
        Ok(())
    }

    /// After the last step (the end time, or Ctrl-C).
    fn finish(&mut self, c: &ImpactConfig) -> Result<()> {
        let _ = c;
        Ok(())
    }
}

/// The observer that adds nothing.
pub struct NoImages;

impl ImpactObserver for NoImages {}

/// One row of `outcome.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct OutcomeRow {
    pub t: f64,
    pub outcome: Outcome,
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct ImpactSummary {
    pub dir: PathBuf,
    /// The final snapshot.
    pub snapshot: PathBuf,
    pub particles: usize,
    /// Particles of the target (the first ones).
    pub target_particles: usize,
    pub materials: Vec<String>,
    pub t: f64,
    pub t_contact: f64,
    pub steps: u64,
    /// Wall-clock seconds of the run (after the settling).
    pub wall_s: f64,
    /// Wall-clock seconds of building and settling the bodies.
    pub setup_s: f64,
    /// `(E − E₀)/|E₀|` at the end and its largest magnitude on the diagnostics rows.
    pub energy_error: f64,
    pub energy_error_max: f64,
    /// `|L − L₀|/|L₀|` at the end and its largest value.
    pub angular_momentum_error: f64,
    pub angular_momentum_error_max: f64,
    pub outcomes: Vec<OutcomeRow>,
    /// Stopped by `stop` (Ctrl-C) before `t_end`; the final snapshot holds where it stopped.
    pub interrupted: bool,
}

/// Runs the command: [`config`], [`validate`], [`run_case_with`].
pub fn run_with(
    choice: BackendChoice,
    a: ImpactArgs,
    stop: Arc<AtomicBool>,
    observer: &mut dyn ImpactObserver,
) -> Result<ImpactSummary> {
    let c = config(&a)?;
    run_case_with(&c, choice, stop, observer)
}

fn norm(v: [f64; 3]) -> f64 {
    v.iter().map(|c| c * c).sum::<f64>().sqrt()
}

/// The CSV header of `diagnostics.csv` (SI units in the names).
pub const DIAGNOSTICS_HEADER: &str = "step,t_s,dt_s,kinetic_j,thermal_j,potential_j,total_j,\
    energy_error,px_kg_m_s,py_kg_m_s,pz_kg_m_s,lx_kg_m2_s,ly_kg_m2_s,lz_kg_m2_s,\
    angular_momentum_error";

/// The header of `outcome.csv` for `materials`.
pub fn outcome_header(materials: &[String]) -> String {
    let mut h = String::from(
        "t_s,remnant_kg,disk_kg,escaping_kg,remnant_radius_m,bound_iterations,converged",
    );
    for class in ["remnant", "disk", "escaping"] {
        for m in materials {
            h += &format!(",{class}_{m}_kg");
        }
    }
    h
}

fn outcome_line(t: f64, o: &Outcome) -> String {
    let mut s = format!(
        "{t},{:e},{:e},{:e},{:e},{},{}",
        o.remnant.mass, o.disk.mass, o.escaping.mass, o.radius, o.iterations, o.converged
    );
    for share in [&o.remnant, &o.disk, &o.escaping] {
        for m in &share.by_material {
            s += &format!(",{m:e}");
        }
    }
    s
}

/// Runs a case into `c.output.dir`. When `stop` is set (Ctrl-C) the run ends after its current
/// step and writes its final snapshot, outcome row and summary where it stands.
pub fn run_case_with(
    c: &ImpactConfig,
    choice: BackendChoice,
    stop: Arc<AtomicBool>,
    observer: &mut dyn ImpactObserver,
) -> Result<ImpactSummary> {
    let setup = validate(c)?;
    let (backend, note) = crate::sph::hydro::cli::backend_for(choice)?;
    if let Some(n) = note {
        eprintln!("{n}");
    }
    print_setup(&setup);
    let start_setup = std::time::Instant::now();
    let mut sim = super::cli::build(c, &setup, backend)?;
    let setup_s = start_setup.elapsed().as_secs_f64();
    let dir = &c.output.dir;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let n_t = setup.target.particles;
    let materials = setup.materials.clone();
    println!(
        "impact: {} particles ({} target, {} impactor), t 0 → {} s, contact at {:.0} s, \
         softening {:.1} km, {}",
        sim.gas.len(),
        n_t,
        sim.gas.len() - n_t,
        c.run.t_end,
        setup.t_contact,
        setup.eps / 1e3,
        if sim.backend.is_gpu() {
            "passes on the GPU (float32), integration float64"
        } else {
            "CPU float64"
        }
    );
    write_info(c, &setup, &sim, None, &dir.join(OUTPUTS[2]))?;

    let d0 = sim.diagnostics();
    let (e0, l0) = (d0.total, d0.angular_momentum);
    let energy_error = |d: &Diagnostics| (d.total - e0) / e0.abs();
    let l_error = |d: &Diagnostics| {
        let l = d.angular_momentum;
        norm(core::array::from_fn(|k| l[k] - l0[k])) / norm(l0)
    };
    let diag_path = dir.join(OUTPUTS[0]);
    let mut diag = std::io::BufWriter::new(
        std::fs::File::create(&diag_path)
            .with_context(|| format!("creating {}", diag_path.display()))?,
    );
    writeln!(diag, "{DIAGNOSTICS_HEADER}")?;
    let (mut e_max, mut l_max) = (0.0f64, 0.0f64);
    let mut row = |sim: &Sim, dt: f64, w: &mut dyn Write| -> std::io::Result<()> {
        let d = sim.diagnostics();
        let (e, l) = (energy_error(&d), l_error(&d));
        e_max = e_max.max(e.abs());
        l_max = l_max.max(l);
        let p = d.momentum;
        let a = d.angular_momentum;
        writeln!(
            w,
            "{},{},{dt},{:e},{:e},{:e},{:e},{e:e},{:e},{:e},{:e},{:e},{:e},{:e},{l:e}",
            d.step,
            d.t,
            d.kinetic,
            d.thermal,
            d.potential,
            d.total,
            p[0],
            p[1],
            p[2],
            a[0],
            a[1],
            a[2]
        )
    };
    row(&sim, 0.0, &mut diag)?;

    let out_path = dir.join(OUTPUTS[1]);
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(&out_path)
            .with_context(|| format!("creating {}", out_path.display()))?,
    );
    writeln!(out, "{}", outcome_header(&materials))?;
    let mut outcomes: Vec<OutcomeRow> = Vec::new();
    let start = std::time::Instant::now();
    let rho_0: Vec<f64> = materials
        .iter()
        .map(|m| Ok(crate::planet::cli::material(m)?.rho_0))
        .collect::<Result<_>>()?;
    let mut analyse = |sim: &Sim, out: &mut dyn Write| -> Result<()> {
        let o = outcome::analyse(&sim.gas, &sim.phi, G_SI, &rho_0, &OutcomeOptions::default())?;
        writeln!(out, "{}", outcome_line(sim.t, &o))?;
        out.flush()?;
        let d = sim.diagnostics();
        let share = |s: &outcome::Share| {
            let parts: Vec<String> = materials
                .iter()
                .zip(&s.by_material)
                .map(|(m, x)| format!("{m} {:.4}", x / EARTH_MASS))
                .collect();
            format!("{:.4} M⊕ ({})", s.mass / EARTH_MASS, parts.join(", "))
        };
        println!(
            "t = {:.0} s ({:.2} h), step {}, {:.1} s: remnant {}, disk {}, escaping {}; energy \
             error {:.2e}, angular momentum {:.2e}",
            sim.t,
            sim.t / 3600.0,
            sim.step,
            start.elapsed().as_secs_f64(),
            share(&o.remnant),
            share(&o.disk),
            share(&o.escaping),
            energy_error(&d),
            l_error(&d)
        );
        outcomes.push(OutcomeRow {
            t: sim.t,
            outcome: o,
        });
        Ok(())
    };
    analyse(&sim, &mut out)?;

    let mut snapshot_index = 0u32;
    let ext = c.output.format.extension();
    let write_snapshot = |observer: &mut dyn ImpactObserver, sim: &Sim, stem: &str| -> Result<()> {
        let path = dir.join(format!("{stem}.{ext}"));
        let s = snapio::snapshot_of(sim);
        match c.output.format {
            #[cfg(feature = "hdf5")]
            crate::nbody::run::SnapshotFormat::Hdf5 => crate::nbody::hdf5::write_hdf5_in(
                &path,
                &s,
                Precision::Double,
                &crate::nbody::hdf5::Units::si(crate::planet::G_SI),
            )?,
            // Format 1 and, without the feature, HDF5 are refused by `validate`.
            _ => snapshot::write_gadget(&path, &s, Format::Gadget2, Precision::Double)?,
        }
        observer.snapshot(c, sim, &materials, &path)
    };
    let every = (c.run.snapshot_every > 0.0).then_some(c.run.snapshot_every);
    if every.is_some() {
        write_snapshot(observer, &sim, &format!("snapshot_{snapshot_index:04}"))?;
    }
    let frame_every =
        (c.output.images && c.output.frame_every > 0.0).then_some(c.output.frame_every);
    if frame_every.is_some() {
        observer.frame(c, &sim, &materials)?;
    }
    let mut next_frame = frame_every.unwrap_or(f64::INFINITY);
    let analysis_every = (c.run.analysis_every > 0.0).then_some(c.run.analysis_every);
    let t_end = c.run.t_end;
    let mut next_snapshot = every.unwrap_or(f64::INFINITY);
    let mut next_analysis = analysis_every.unwrap_or(f64::INFINITY);
    const TICKS: u64 = 1000;
    let progress_every = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        0.0
    } else {
        c.output.progress_every.clamp(0.0, 1e9)
    };
    let mut plain = crate::output::Plain::new(
        "impact",
        TICKS,
        std::time::Duration::from_secs_f64(progress_every),
    );
    let reached = |t: f64, mark: f64| t >= mark * (1.0 - 1e-12);
    let mut interrupted = false;
    let mut analysed_at = 0.0;
    while !reached(sim.t, t_end) {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        // Steps land on the output times.
        let mark = t_end.min(next_snapshot).min(next_analysis).min(next_frame);
        let dt = sim
            .step(mark - sim.t)
            .with_context(|| format!("at t = {:.1} s, step {}", sim.t, sim.step))?;
        let last = reached(sim.t, t_end);
        if sim.step % c.run.diag_every == 0 || last {
            row(&sim, dt, &mut diag)?;
        }
        if reached(sim.t, next_analysis) {
            analyse(&sim, &mut out)?;
            analysed_at = sim.t;
            next_analysis += analysis_every.unwrap_or(f64::INFINITY);
        }
        if reached(sim.t, next_frame) {
            observer.frame(c, &sim, &materials)?;
            next_frame += frame_every.unwrap_or(f64::INFINITY);
        }
        if reached(sim.t, next_snapshot) {
            snapshot_index += 1;
            write_snapshot(observer, &sim, &format!("snapshot_{snapshot_index:04}"))?;
            next_snapshot += every.unwrap_or(f64::INFINITY);
        }
        let ticks = ((sim.t / t_end) * TICKS as f64).min(TICKS as f64) as u64;
        plain.update(ticks, &format!("t = {:.0} s, step {}", sim.t, sim.step));
    }
    if analysed_at != sim.t {
        analyse(&sim, &mut out)?;
    }
    diag.flush()?;
    write_snapshot(observer, &sim, "snapshot_final")?;
    observer.finish(c)?;
    let wall_s = start.elapsed().as_secs_f64();
    let d = sim.diagnostics();
    let steps = sim.step;
    let summary = ImpactSummary {
        dir: dir.clone(),
        snapshot: dir.join(format!("snapshot_final.{ext}")),
        particles: sim.gas.len(),
        target_particles: n_t,
        materials: materials.clone(),
        t: sim.t,
        t_contact: setup.t_contact,
        steps,
        wall_s,
        setup_s,
        energy_error: energy_error(&d),
        energy_error_max: e_max,
        angular_momentum_error: l_error(&sim.diagnostics()),
        angular_momentum_error_max: l_max,
        outcomes,
        interrupted,
    };
    println!(
        "t = {:.0} s after {} steps in {:.1} s ({:.1} ms per step; settling {:.1} s); energy \
         error {:.2e} (largest {:.2e}), angular momentum {:.2e} (largest {:.2e})",
        sim.t,
        steps,
        wall_s,
        1e3 * wall_s / steps.max(1) as f64,
        setup_s,
        summary.energy_error,
        e_max,
        summary.angular_momentum_error,
        l_max
    );
    let st = sim.times;
    println!(
        "time by stage: density and h {:.2} s, forces {:.2} s, gravity {:.2} s, integration \
         {:.2} s",
        st.density, st.forces, st.gravity, st.integration
    );
    write_info(c, &setup, &sim, Some(&summary), &dir.join(OUTPUTS[2]))?;
    println!("wrote {}", dir.display());
    Ok(summary)
}

fn print_setup(s: &Setup) {
    for b in [&s.target, &s.impactor] {
        let from = match &b.source {
            Source::Snapshot { path, .. } => format!("from {}", path.display()),
            Source::Built { .. } => "built here".into(),
        };
        println!(
            "{}: {:.4} Earth masses, radius {:.1} km, {} particles, materials {} ({from})",
            b.name,
            b.mass / EARTH_MASS,
            b.radius / 1e3,
            b.particles,
            b.materials.join(", ")
        );
    }
    println!(
        "orbit: b = {:.4} ({:.1}°), speed at contact {:.1} m/s = {:.3} v_esc (v_esc {:.1} m/s), \
         start {:.0} s before contact at separation {:.1} km (R_t + R_i = {:.1} km)",
        s.contact.b,
        s.angle_deg(),
        s.contact.v_c,
        s.contact.v_c / s.v_esc,
        s.v_esc,
        s.t_contact,
        norm(s.start.pos) / 1e3,
        s.contact.r_c / 1e3
    );
}

/// `impact.toml`: units, materials by id, bodies, orbit and run; with `summary`, the end.
fn write_info(
    c: &ImpactConfig,
    s: &Setup,
    sim: &Sim,
    summary: Option<&ImpactSummary>,
    path: &Path,
) -> Result<()> {
    let mut t = String::new();
    t += "# warpkit impact: snapshots are Gadget format 2, float64, gas (type 0) with the \
          material id of each particle in MATI; particle ids 1..=N_target are the target's\n";
    t += "[units]\nsystem = \"SI\"\nlength = \"m\"\nmass = \"kg\"\ntime = \"s\"\n";
    t += "velocity = \"m/s\"\ninternal_energy = \"J/kg\"\ndensity = \"kg/m^3\"\n";
    t += "energy = \"J\"\nangular_momentum = \"kg m^2/s\"\n";
    t += &format!("gravitational_constant = {G_SI:e}\n\n[materials]\n");
    t += "# material id (MATI) = Tillotson material\n";
    for (k, m) in s.materials.iter().enumerate() {
        t += &format!("{k} = \"{m}\"\n");
    }
    for b in [&s.target, &s.impactor] {
        let source = match &b.source {
            Source::Snapshot { path, .. } => format!("\"{}\"", path.display()),
            Source::Built { .. } => "\"built\"".into(),
        };
        t += &format!(
            "\n[{}]\nsource = {source}\nmass = {:e}\nradius = {:e}\nparticles = {}\n\
             particle_mass = {:e}\nmaterials = [{}]\n",
            b.name,
            b.mass,
            b.radius,
            b.particles,
            b.particle_mass,
            b.materials
                .iter()
                .map(|m| format!("\"{m}\""))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    t += &format!(
        "\n[orbit]\n# two point masses on the Kepler orbit, centre-of-mass frame, in the xy plane\n\
         b = {}\nangle_deg = {}\nv_contact = {:e}\nv_esc = {:e}\nv_contact_over_v_esc = {}\n\
         t_contact = {:e}\nseparation_start = {:e}\nseparation_contact = {:e}\n\
         relative_position_start = [{:e}, {:e}, {:e}]\nrelative_velocity_start = [{:e}, {:e}, {:e}]\n",
        s.contact.b,
        s.angle_deg(),
        s.contact.v_c,
        s.v_esc,
        s.contact.v_c / s.v_esc,
        s.t_contact,
        norm(s.start.pos),
        s.contact.r_c,
        s.start.pos[0],
        s.start.pos[1],
        s.start.pos[2],
        s.start.vel[0],
        s.start.vel[1],
        s.start.vel[2]
    );
    let p = &sim.params;
    t += &format!(
        "\n[run]\nt_end = {:e}\nparticles = {}\nsoftening_m = {:e}\ngravity_solver = {}\n\
         theta = {}\ncourant = {}\nn_ngb = {}\nseed = {}\nsettle_time = {}\n",
        c.run.t_end,
        sim.gas.len(),
        p.gravity.eps,
        toml::Value::try_from(p.gravity.solver).map_or_else(|_| "\"?\"".into(), |v| v.to_string()),
        p.gravity.theta,
        p.courant,
        p.n_ngb,
        c.particles.seed,
        c.settle.time
    );
    if let Some(r) = summary {
        t += &format!(
            "\n[summary]\nt = {:e}\nsteps = {}\nwall_s = {:.3}\nsetup_s = {:.3}\ninterrupted = {}\n\
             energy_error = {:e}\nenergy_error_max = {:e}\nangular_momentum_error = {:e}\n\
             angular_momentum_error_max = {:e}\n",
            r.t,
            r.steps,
            r.wall_s,
            r.setup_s,
            r.interrupted,
            r.energy_error,
            r.energy_error_max,
            r.angular_momentum_error,
            r.angular_momentum_error_max
        );
        if let Some(last) = r.outcomes.last() {
            let o = &last.outcome;
            t += &format!(
                "\n[outcome]\n# at t = {:e} s (outcome.csv: against time)\nremnant = {:e}\n\
                 disk = {:e}\nescaping = {:e}\nremnant_radius = {:e}\n",
                last.t, o.remnant.mass, o.disk.mass, o.escaping.mass, o.radius
            );
        }
    }
    crate::files::write_atomically(path, |w| w.write_all(t.as_bytes()))
        .with_context(|| format!("writing {}", path.display()))
}
