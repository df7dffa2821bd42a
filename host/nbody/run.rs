//! `warpkit nbody`: a whole run — initial conditions, the loop on either backend, diagnostics as
//! CSV, snapshots and a timing table — configured by one [`RunConfig`] (a TOML file and
//! command-line overrides). The GPU backend runs [`super::gpu::GpuSim`] (tree forces); the CPU
//! backend runs [`super::cpu::Simulation`] (float64 direct summation), the reference at small N.
//! What a front end shows or draws on the way (a progress bar, movie frames, the energy plot) it
//! does through an [`Observer`].

use super::Particles;
use super::block::{BlockSimulation, rung_table};
use super::cpu::{Diagnostics, Forces, Simulation};
use super::gpu::block::GpuBlockSim;
use super::gpu::{ForceOptions, GpuSim, LoopTimes, NbodyGpuError};
use super::ic::{DiskGalaxy, Encounter, Hernquist, Plummer};
use super::snapshot::{self, Format, Precision, Snapshot};
use crate::backend::Backend;
use crate::bh::gpu::{Build, Traversal};
use crate::bh::{Params, Relative};
use crate::device::nbody::LEVEL_BINS;
use crate::output::{Csv, OutDir, Plain};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

mod config;
pub use config::*;

/// What a front end does while a run goes, beside the files the run writes itself: the
/// `warpkit` command line draws movie frames and the energy plot and shows a progress bar.
/// Every method has a default that does nothing.
pub trait Observer {
    /// Before the first step, with the initial state at `time` and the run's step count `step`.
    fn start(
        &mut self,
        dir: &OutDir,
        c: &RunConfig,
        p: &Particles,
        time: f64,
        step: u64,
    ) -> Result<(), RunError> {
        let _ = (dir, c, p, time, step);
        Ok(())
    }
    /// Every `output.image_every` steps, with the state after the step.
    fn frame(&mut self, dir: &OutDir, p: &Particles, time: f64, step: u64) -> Result<(), RunError> {
        let _ = (dir, p, time, step);
        Ok(())
    }
    /// After each step: `done` of `steps`, and a short status (the time, substeps per step).
    fn progress(&mut self, done: u64, steps: u64, status: &str) {
        let _ = (done, steps, status);
    }
    /// The loop is over (before the final snapshot and the summary are written).
    fn steps_done(&mut self) {}
    /// At the end, with the diagnostics rows of the run (the first at its start).
    fn finish(&mut self, dir: &OutDir, history: &[Diagnostics]) -> Result<(), RunError> {
        let _ = (dir, history);
        Ok(())
    }
}

/// The observer of [`run`]: a plain progress line on standard error every
/// `output.progress_every` seconds, nothing drawn.
pub struct LogProgress {
    every: f64,
    plain: Option<Plain>,
}

impl LogProgress {
    pub fn new(c: &RunConfig) -> Self {
        LogProgress {
            every: c.output.progress_every,
            plain: None,
        }
    }
}

impl Observer for LogProgress {
    fn progress(&mut self, done: u64, steps: u64, status: &str) {
        let every = std::time::Duration::from_secs_f64(self.every.clamp(0.0, 1e9));
        self.plain
            .get_or_insert_with(|| Plain::new("nbody", steps, every))
            .update(done, status);
    }
}

/// Failures of a run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("configuration: {0}")]
    Config(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Ic(#[from] super::ic::IcError),
    #[error(transparent)]
    Snapshot(#[from] snapshot::SnapshotError),
    #[error(transparent)]
    Gpu(#[from] NbodyGpuError),
    #[error(transparent)]
    Cpu(#[from] super::cpu::SimError),
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
    #[error(transparent)]
    OverwritesInput(#[from] crate::files::OverwritesInput),
    #[error("plot: {0}")]
    Plot(String),
    /// The output directory holds a previous run's files (`shown`) and overwriting is off. The
    /// message names the command line's option; other front ends name their own
    /// ([`RunError::previous_outputs`]).
    #[error(
        "{}",
        RunError::previous_outputs(dir, shown, "--overwrite (`overwrite = true` under [output])")
    )]
    PreviousOutputs { dir: PathBuf, shown: String },
}

impl RunError {
    /// The message of [`RunError::PreviousOutputs`], naming `how` to overwrite.
    pub fn previous_outputs(dir: &Path, shown: &str, how: &str) -> String {
        format!(
            "{} holds a previous run's outputs ({shown}): choose another output directory, or \
             pass {how} to replace them",
            dir.display()
        )
    }
}

/// The initial conditions of `c`, for a run with Plummer softening `eps` (a Plummer sphere is
/// generated in equilibrium in the softened potential).
pub fn initial_conditions(c: &IcConfig, eps: f64) -> Result<Particles, RunError> {
    Ok(initial_state(c, eps)?.0)
}

/// The initial conditions and their time: a snapshot's header time, else 0.
pub fn initial_state(c: &IcConfig, eps: f64) -> Result<(Particles, f64), RunError> {
    if c.kind == IcKind::Snapshot {
        let path = c.file.as_ref().expect("validated");
        let s = snapshot::read_snapshot(path)?;
        return Ok((s.particles, s.header.time));
    }
    Ok((generate(c, eps)?, 0.0))
}

/// Generated initial conditions (not a snapshot).
fn generate(c: &IcConfig, eps: f64) -> Result<Particles, RunError> {
    Ok(match c.kind {
        IcKind::Plummer => Plummer::henon(c.n, c.seed).softened(eps).try_generate()?,
        IcKind::Hernquist => Hernquist::new(c.n, 1.0, 1.0, c.seed).try_generate()?,
        IcKind::Disk => galaxy(c, c.n).try_generate()?,
        IcKind::Collision => {
            let per = (c.n as f64 / (1.0 + c.mass_ratio)).round() as usize;
            let e = Encounter {
                primary: galaxy(c, per),
                mass_ratio: c.mass_ratio,
                pericentre: c.pericentre,
                eccentricity: c.eccentricity,
                separation: c.separation,
                inclination_deg: c.inclination_deg,
                seed: c.seed,
                ..Encounter::default()
            };
            e.try_generate()?
        }
        IcKind::Snapshot => unreachable!("read by initial_state"),
    })
}

/// A default galaxy with `n` particles in its default halo : disk proportion.
fn galaxy(c: &IcConfig, n: usize) -> DiskGalaxy {
    let d = DiskGalaxy::default();
    let total = (d.n_halo + d.n_disk) as f64;
    let n_disk = ((n as f64) * d.n_disk as f64 / total).round().max(1.0) as usize;
    DiskGalaxy {
        n_halo: n.saturating_sub(n_disk).max(1),
        n_disk,
        toomre_q: c.toomre_q,
        seed: c.seed,
        ..d
    }
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct RunSummary {
    pub backend: &'static str,
    pub n: usize,
    pub steps: u64,
    pub time: f64,
    pub wall_s: f64,
    /// GPU stage times summed over the run (ms); zero on the CPU.
    pub gpu_times: LoopTimes,
    /// Host time writing snapshots and diagnostics (s).
    pub io_s: f64,
    /// Snapshots written and their total time (s).
    pub snapshots: (u32, f64),
    /// Median and 99th-percentile relative force error at the start (GPU, sampled).
    pub force_error: Option<(f64, f64)>,
    /// Block steps: substeps taken and the per-level table ([`rung_table`]).
    pub block: Option<(u64, String)>,
    pub first: Diagnostics,
    pub last: Diagnostics,
    /// Largest |E − E₀|/|E₀| over the diagnostics (the end point alone can land near zero
    /// while the energy wanders in between).
    pub energy_max_dev: f64,
    pub interrupted: bool,
    pub dir: PathBuf,
}

impl RunSummary {
    /// |ΔE/E| between the first and last diagnostics.
    pub fn energy_drift(&self) -> f64 {
        ((self.last.total - self.first.total) / self.first.total).abs()
    }
}

/// The loop on either backend.
enum Sim<'g> {
    Gpu(Box<GpuSim<'g>>),
    /// Block steps on the GPU: one "step" of the loop is one largest step `dt`.
    GpuBlock(Box<GpuBlockSim<'g>>),
    Cpu(Box<Simulation>),
    /// Block steps: one "step" of the loop is one largest step `dt`.
    CpuBlock(Box<BlockSimulation>),
}

impl Sim<'_> {
    fn step(&mut self, dt: f64, potential: bool) -> Result<(), RunError> {
        match self {
            Sim::Gpu(s) => s.step(dt, potential)?,
            Sim::GpuBlock(s) => s.step_block(potential)?,
            Sim::Cpu(s) => s.step()?,
            Sim::CpuBlock(s) => {
                let t = s.time + s.dt_max;
                s.run_until(t)?
            }
        }
        Ok(())
    }

    /// Diagnostics, the particles and their potentials (particle order).
    fn diagnostics(&mut self) -> Result<(Diagnostics, Particles, Vec<f64>), RunError> {
        match self {
            Sim::Gpu(s) => {
                let time = s.time;
                let (p, pot) = s.state()?;
                Ok((Diagnostics::compute(&p, &pot, time), p, pot))
            }
            Sim::GpuBlock(s) => {
                let time = s.time;
                let (p, pot) = s.state()?;
                Ok((Diagnostics::compute(&p, &pot, time), p, pot))
            }
            Sim::Cpu(s) => Ok((s.diagnostics(), s.particles.clone(), s.pot.clone())),
            Sim::CpuBlock(s) => Ok((s.diagnostics(), s.synchronized(), s.pot.clone())),
        }
    }

    fn time(&self) -> f64 {
        match self {
            Sim::Gpu(s) => s.time,
            Sim::GpuBlock(s) => s.time,
            Sim::Cpu(s) => s.time,
            Sim::CpuBlock(s) => s.time,
        }
    }

    /// Block steps: substeps so far, particles and force evaluations per level.
    fn rungs(&self) -> Option<(u64, [u64; LEVEL_BINS], [u64; LEVEL_BINS])> {
        match self {
            Sim::GpuBlock(s) => Some((
                s.stats.substeps,
                s.stats.particles_by_level,
                s.stats.evaluations_by_level,
            )),
            Sim::CpuBlock(s) => Some((s.substeps, s.particles_by_level(), s.evaluations_by_level)),
            Sim::Gpu(_) | Sim::Cpu(_) => None,
        }
    }
}

/// `rungs.csv` of a block-step run: at each diagnostic, the substeps and force evaluations so
/// far and the particles on each level.
struct RungLog(Option<Csv>);

impl RungLog {
    fn create(dir: &OutDir, on: bool) -> Result<Self, RunError> {
        if !on {
            return Ok(RungLog(None));
        }
        let mut header = vec![
            "time".to_string(),
            "substeps".into(),
            "force_evaluations".into(),
        ];
        header.extend((0..=BLOCK_MAX_LEVEL).map(|l| format!("level_{l}")));
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        Ok(RungLog(Some(Csv::create(dir.file("rungs.csv"), &header)?)))
    }

    fn row(&mut self, sim: &Sim, time: f64) -> Result<(), RunError> {
        if let (Some(csv), Some((substeps, particles, evals))) = (self.0.as_mut(), sim.rungs()) {
            let mut row = vec![
                format!("{time}"),
                substeps.to_string(),
                evals.iter().sum::<u64>().to_string(),
            ];
            row.extend(
                particles[..=BLOCK_MAX_LEVEL as usize]
                    .iter()
                    .map(u64::to_string),
            );
            csv.row(&row)?;
        }
        Ok(())
    }
}

/// Runs `c` on `backend`, writing into `c.output.dir`: `diagnostics.csv` (a row every
/// `diag_every` steps, written as measured), `snapshot_NNNNNN.gadget`, `timing.md`,
/// `config.toml` (the configuration used); progress as plain lines ([`LogProgress`]). Ctrl-C
/// (when `stop` is set) ends the run after the current step with a final snapshot and the logs.
/// A blow-up stops the run naming the step and particle; the snapshots written before it are
/// kept.
pub fn run(
    backend: &Backend,
    c: &RunConfig,
    stop: Arc<AtomicBool>,
) -> Result<RunSummary, RunError> {
    run_with(backend, c, stop, &mut LogProgress::new(c))
}

/// [`run`] with `observer` told of the start, each step, each image step and the end.
pub fn run_with(
    backend: &Backend,
    c: &RunConfig,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<RunSummary, RunError> {
    c.validate()?;
    // The output directory first: a run must not fail at its end for want of a place to write.
    // `--out .` or `/` (no file name) is that directory itself, not `nbody-out` in the current
    // one.
    let dir = match (c.output.dir.parent(), c.output.dir.file_name()) {
        (Some(parent), Some(name)) => OutDir::create(parent, &name.to_string_lossy())?,
        _ => OutDir::create(&c.output.dir, "")?,
    };
    let ext = c.output.format.extension();
    // A restart continues the numbering of its run's steps.
    let (restart, step0) = match (&c.ic.kind, &c.ic.file) {
        (IcKind::Snapshot, Some(file)) => (Some(file), RunState::read(file)?.map_or(0, |s| s.step)),
        _ => (None, 0),
    };
    if let Some(input) = restart {
        // Not even with --overwrite: the snapshot is the run's only copy of its state.
        let mut outputs: Vec<String> = ["snapshot_final", "ic"]
            .iter()
            .map(|n| format!("{n}.{ext}"))
            .collect();
        let numbered = input
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("snapshot_"))
            .and_then(|n| n.strip_suffix(&format!(".{ext}")))
            .and_then(|k| k.parse::<u64>().ok());
        if let Some(k) = numbered
            && k > step0
            && c.output.snapshot_every > 0
            && k % c.output.snapshot_every == 0
        {
            outputs.push(format!("snapshot_{k:06}.{ext}"));
        }
        for name in outputs {
            crate::files::check_not_input("--out", &dir.file(&name), &[("restart", Some(input))])?;
        }
    }
    let previous = previous_outputs(dir.path());
    if !c.output.overwrite && !previous.is_empty() {
        let shown = match previous.len() {
            1..=3 => previous.join(", "),
            k => format!("{}, … ({k} files)", previous[..3].join(", ")),
        };
        return Err(RunError::PreviousOutputs {
            dir: dir.path().to_path_buf(),
            shown,
        });
    }
    let config_text =
        toml::to_string_pretty(c).map_err(|e| RunError::Config(format!("serialising: {e}")))?;

    let t0 = Instant::now();
    let (particles, start) = initial_state(&c.ic, c.run.eps)?;
    if c.run.t_end < start - 0.5 * c.run.dt {
        return Err(RunError::Config(format!(
            "run.t_end = {} is before the snapshot's time {start}: give a later --t-end",
            c.run.t_end
        )));
    }
    eprintln!(
        "nbody: {} particles ({:?}), generated in {:.2} s",
        particles.len(),
        c.ic.kind,
        t0.elapsed().as_secs_f64()
    );
    // Particles that no snapshot can hold (gas from a restart file) are refused now, not by
    // the final snapshot after the whole run; and before config.toml replaces a previous run's.
    // (The types alone: a sorted copy for `check_writable` cost a second at 5·10^6.)
    if let Some(i) = particles
        .ptype
        .iter()
        .position(|&t| t == 0 || t as usize >= super::TYPES)
    {
        return Err(RunError::Config(format!(
            "the run's snapshots cannot hold these initial conditions: particle {i} has type {} \
             (`nbody` has no hydrodynamics: gas particles (type 0) run with `warpkit sph`; types \
             are 1..{})",
            particles.ptype[i],
            super::TYPES - 1
        )));
    }
    dir.write("config.toml", config_text.as_bytes())?;
    let format = c.output.format;
    let precision = c.output.precision;
    let mut io_s = 0.0;
    let mut snapshots = (0u32, 0.0f64);
    // `pot`: the particles' potentials where the run has them (HDF5 stores them; the Gadget
    // formats have no such block).
    let mut write_snapshot = |name: &str,
                              p: &Particles,
                              pot: Option<&[f64]>,
                              time: f64,
                              step: u64|
     -> Result<(), RunError> {
        let t = Instant::now();
        let mut s = Snapshot {
            particles: p.clone(),
            ..Default::default()
        };
        let order = s.particles.sort_by_type_and_id();
        s.potential = pot.map(|pot| order.iter().map(|&i| pot[i]).collect());
        s.header = snapshot::header_for(&s);
        s.header.time = time;
        let path = dir.file(name);
        match format {
            SnapshotFormat::Gadget1 => {
                snapshot::write_gadget(&path, &s, Format::Gadget1, precision)?
            }
            SnapshotFormat::Gadget2 => {
                snapshot::write_gadget(&path, &s, Format::Gadget2, precision)?
            }
            #[cfg(feature = "hdf5")]
            SnapshotFormat::Hdf5 => super::hdf5::write_hdf5(&path, &s, precision)?,
            #[cfg(not(feature = "hdf5"))]
            SnapshotFormat::Hdf5 => unreachable!("refused by RunConfig::validate"),
        }
        let state = RunState {
            step,
            time,
            precision,
            run: c.run.clone(),
        };
        state.write(&path)?;
        io_s += t.elapsed().as_secs_f64();
        snapshots.0 += 1;
        snapshots.1 += t.elapsed().as_secs_f64();
        Ok(())
    };
    if c.output.write_ic {
        write_snapshot(&format!("ic.{ext}"), &particles, None, start, step0)?;
    }

    let n = particles.len();
    let mut force_error = None;
    let mut sim = match backend {
        Backend::Cpu if c.run.block_steps => {
            let mut s =
                BlockSimulation::new(particles, c.run.eps, c.run.eta, c.run.dt, BLOCK_MAX_LEVEL)?;
            s.start_at(start);
            Sim::CpuBlock(Box::new(s))
        }
        Backend::Gpu(gpu) => {
            let forces = ForceOptions {
                params: Params {
                    theta: c.run.theta as f32,
                    eps: c.run.eps as f32,
                    g: 1.0,
                },
                traversal: Traversal::Group2,
                quadrupole: c.run.quadrupole,
                relative: (c.run.alpha > 0.0).then_some(Relative {
                    alpha: c.run.alpha as f32,
                    theta_max: c.run.theta_max as f32,
                }),
                build: c.run.build,
            };
            let gpu = gpu.as_ref();
            let sim = if c.run.block_steps {
                let (eta, dt) = (c.run.eta, c.run.dt);
                let mut s = GpuBlockSim::new(gpu, &particles, forces, eta, dt, BLOCK_MAX_LEVEL)?;
                s.start_at(start);
                Sim::GpuBlock(Box::new(s))
            } else {
                let mut s = GpuSim::new(gpu, &particles, forces)?;
                s.time = start;
                s.steps = step0;
                Sim::Gpu(Box::new(s))
            };
            let inner = match &sim {
                Sim::Gpu(s) => s.as_ref(),
                Sim::GpuBlock(s) => s.inner(),
                _ => unreachable!("a GPU loop"),
            };
            if c.run.check > 0 {
                force_error = Some(force_error_sample(
                    inner,
                    &particles,
                    c.run.eps,
                    c.run.check,
                )?);
                let (med, p99) = force_error.expect("set above");
                eprintln!("nbody: force error at t = 0: median {med:.3e}, p99 {p99:.3e}");
            }
            sim
        }
        Backend::Cpu => {
            let r = &c.run;
            let tree = match r.forces {
                CpuForces::Direct => false,
                CpuForces::Tree => true,
                CpuForces::Auto => particles.len() > CPU_DIRECT_MAX,
            };
            let forces = if tree {
                let relative = (r.alpha > 0.0).then_some(crate::bh::Relative {
                    alpha: r.alpha as f32,
                    theta_max: r.theta_max as f32,
                });
                eprintln!(
                    "nbody: CPU forces by the tree (θ {}{}{}) for {} particles; run.forces = \
                     \"direct\" sums them in float64",
                    r.theta,
                    relative.map_or(String::new(), |x| format!(", α {}", x.alpha)),
                    if r.quadrupole { ", quadrupoles" } else { "" },
                    particles.len()
                );
                Forces::Tree {
                    theta: r.theta,
                    quadrupole: r.quadrupole,
                    relative,
                }
            } else {
                Forces::Direct
            };
            let mut s = Simulation::with_forces(particles, c.run.eps, c.run.dt, forces)?;
            s.time = start;
            s.steps = step0;
            Sim::Cpu(Box::new(s))
        }
    };

    let header: Vec<&str> = Diagnostics::CSV_HEADER.split(',').collect();
    let mut csv = Csv::create(dir.file("diagnostics.csv"), &header)?;
    let (first, first_state, _) = sim.diagnostics()?;
    let mut history = vec![first];
    csv.row(
        &first
            .csv_row()
            .split(',')
            .map(str::to_string)
            .collect::<Vec<_>>(),
    )?;

    let mut rung_log = RungLog::create(&dir, c.run.block_steps)?;
    rung_log.row(&sim, first.time)?;
    observer.start(&dir, c, &first_state, start, step0)?;
    let steps = c.steps_from(start);
    let wall = Instant::now();
    let mut last = first;
    let mut interrupted = false;
    let mut diag_s = 0.0;
    let mut done = 0u64;
    for s in 1..=steps {
        // The cadences count the steps since the first run's start.
        let g = step0 + s;
        let image = c.output.image_every > 0 && g % c.output.image_every == 0;
        let diag = g % c.output.diag_every == 0 || s == steps || image;
        sim.step(c.run.dt, diag)?;
        done = s;
        if s == 1 && steps > 1 {
            // Said once the first step is timed, so that a long run is never a surprise.
            let per = wall.elapsed().as_secs_f64();
            let total = per * steps as f64;
            if total > 60.0 {
                eprintln!(
                    "nbody: {per:.2} s for the first step: about {} for the {steps} steps",
                    duration_words(total)
                );
            }
        }
        if diag {
            let t = Instant::now();
            let (d, p, pot) = sim.diagnostics()?;
            csv.row(
                &d.csv_row()
                    .split(',')
                    .map(str::to_string)
                    .collect::<Vec<_>>(),
            )?;
            rung_log.row(&sim, d.time)?;
            diag_s += t.elapsed().as_secs_f64();
            if c.output.snapshot_every > 0 && g % c.output.snapshot_every == 0 {
                write_snapshot(&format!("snapshot_{g:06}.{ext}"), &p, Some(&pot), d.time, g)?;
            }
            if image {
                let t = Instant::now();
                observer.frame(&dir, &p, d.time, g)?;
                diag_s += t.elapsed().as_secs_f64();
            }
            last = d;
            history.push(d);
        }
        let sub = match sim.rungs() {
            Some((k, ..)) => format!(", {:.1} substeps/step", k as f64 / s as f64),
            None => String::new(),
        };
        observer.progress(s, steps, &format!("t = {:.3}{sub}", sim.time()));
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
    }
    observer.steps_done();
    // The final state: always a snapshot (interrupted runs too).
    let (d, p, pot) = sim.diagnostics()?;
    if d.time != last.time {
        csv.row(
            &d.csv_row()
                .split(',')
                .map(str::to_string)
                .collect::<Vec<_>>(),
        )?;
        history.push(d);
        rung_log.row(&sim, d.time)?;
    }
    write_snapshot(
        &format!("snapshot_final.{ext}"),
        &p,
        Some(&pot),
        d.time,
        step0 + done,
    )?;
    let wall_s = wall.elapsed().as_secs_f64();

    io_s += diag_s;
    let gpu_times = match &sim {
        Sim::Gpu(s) => s.times,
        Sim::GpuBlock(s) => s.inner().times,
        Sim::Cpu(_) | Sim::CpuBlock(_) => LoopTimes::default(),
    };
    let block = sim.rungs().map(|(substeps, particles, evals)| {
        let blocks = (d.time - start) / c.run.dt;
        let table = rung_table(n, blocks, c.run.dt, &particles, &evals);
        eprintln!("nbody: block steps: {substeps} substeps\n{table}");
        (substeps, table)
    });
    observer.finish(&dir, &history)?;
    let summary = RunSummary {
        backend: backend.name(),
        n,
        steps: done,
        time: d.time,
        wall_s,
        gpu_times,
        io_s,
        snapshots,
        force_error,
        block,
        first,
        last: d,
        energy_max_dev: history
            .iter()
            .map(|h| ((h.total - first.total) / first.total).abs())
            .fold(0.0, f64::max),
        interrupted,
        dir: dir.path().to_path_buf(),
    };
    dir.write("timing.md", timing_table(&summary).as_bytes())?;
    Ok(summary)
}

/// Seconds as `1 h 05 min`, `12 min 30 s` or `45 s`.
fn duration_words(s: f64) -> String {
    let s = s.round() as u64;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, sec) => format!("{sec} s"),
        (0, m, sec) => format!("{m} min {sec:02} s"),
        (h, m, _) => format!("{h} h {m:02} min"),
    }
}

mod report;
use report::force_error_sample;
pub use report::timing_table;

#[cfg(test)]
mod tests;
