//! `warpkit sph`'s run: the loop of a case from [`super::cli`] (passes on the backend chosen,
//! integration float64 on the host),
//! writing `diagnostics.csv`, gas snapshots (each with the `.run.toml` that a restart continues
//! from) and a final `profile.csv` (with the exact solution beside the particles where one
//! exists). What a front end adds per snapshot (images) it does through an [`Observer`].

use super::cli::{IcKind, SphArgs, SphConfig, SphRunState, config, prepare, restart};
use super::ic;
use super::ic_gravity::Polytrope;
use super::{Boundary, Sim, sedov, snapio};
use crate::backend::{Backend, BackendChoice};
use crate::nbody::run::SnapshotFormat;
use crate::nbody::snapshot::{self, Format};
use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a front end does beside the run's own files.
pub trait Observer {
    /// After each snapshot (numbered or final) is written to `path`, with the state it holds.
    fn snapshot(&mut self, c: &SphConfig, sim: &Sim, path: &Path) -> Result<()> {
        let _ = (c, sim, path);
        Ok(())
    }
}

/// The observer that adds nothing.
pub struct NoImages;

impl Observer for NoImages {}

/// What a run did.
#[derive(Clone, Debug)]
pub struct SphSummary {
    pub t: f64,
    /// Steps of this run (not counting those before a restart).
    pub steps: u64,
    /// Stopped by `stop` (Ctrl-C) before `t_end`; the final snapshot holds where it stopped.
    pub interrupted: bool,
    pub dir: PathBuf,
    pub particles: usize,
    /// The passes' backend (`"gpu"` or `"cpu"`).
    pub backend: &'static str,
    /// The total energy's relative change since the first run's start.
    pub energy_error: f64,
    /// `diagnostics.csv`.
    pub diagnostics: PathBuf,
    /// The final snapshot.
    pub snapshot: PathBuf,
    /// `profile.csv`.
    pub profile: PathBuf,
}

/// Runs the command: [`config`], [`restart`] for a snapshot (its notes on standard error),
/// then [`run_case`].
pub fn run(choice: BackendChoice, a: SphArgs, stop: Arc<AtomicBool>) -> Result<SphSummary> {
    run_with(choice, a, stop, &mut NoImages)
}

/// [`run`] with `observer` told of each snapshot.
pub fn run_with(
    choice: BackendChoice,
    a: SphArgs,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<SphSummary> {
    let (mut c, set) = config(&a)?;
    if c.ic.kind == IcKind::Snapshot {
        for note in restart(&mut c, &set)? {
            eprintln!("{note}");
        }
    }
    run_case_with(&c, choice, stop, observer)
}

/// Runs a case into `c.output.dir`: `diagnostics.csv`, `snapshot_NNNNNN.gadget` every
/// `snapshot_every` steps and `snapshot_final.gadget` (each with its `.run.toml`), and
/// `profile.csv`. When `stop` is set (Ctrl-C) the run ends after its current step and writes
/// all of them where it stands.
pub fn run_case(c: &SphConfig, choice: BackendChoice, stop: Arc<AtomicBool>) -> Result<SphSummary> {
    run_case_with(c, choice, stop, &mut NoImages)
}

/// [`run_case`] with `observer` told of each snapshot.
pub fn run_case_with(
    c: &SphConfig,
    choice: BackendChoice,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<SphSummary> {
    let ext = c.output.format.extension();
    #[cfg(not(feature = "hdf5"))]
    if c.output.format == SnapshotFormat::Hdf5 {
        bail!("{}", snapshot::NO_HDF5);
    }
    let dir = &c.output.dir;
    // The output names that could be the snapshot a restart reads: refused before any work.
    if let (IcKind::Snapshot, Some(input)) = (c.ic.kind, &c.ic.file) {
        let step0 = c.restart_of.map_or(0, |r| r.step);
        let mut names = vec![format!("snapshot_final.{ext}")];
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
            names.push(format!("snapshot_{k:06}.{ext}"));
        }
        if dir.is_dir() {
            for name in names {
                crate::files::check_not_input(
                    "--out",
                    &dir.join(name),
                    &[("restart", Some(input))],
                )?;
            }
        }
    }
    if !c.output.overwrite {
        refuse_previous_outputs(dir, "--overwrite (`overwrite = true` under [output])")?;
    }
    if c.output.images && !(16..=8192).contains(&c.output.image_pixels) {
        bail!(
            "image_pixels = {} must be in 16..=8192",
            c.output.image_pixels
        );
    }
    let p = prepare(c, choice)?;
    let (mut sim, t_end) = (p.sim, p.t_end);
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // Only a restart can continue exactly; initial conditions start from their own forces.
    if !p.exact && c.restart_of.is_some() {
        eprintln!(
            "sph: the snapshot has no accelerations, du/dt and signal velocities (a format-2 \
             snapshot of warpkit has): the run starts from forces computed at its state"
        );
    }
    println!(
        "sph {:?}: {} particles, t {} → {t_end}, kernel {:?}, N_ngb {}, {}",
        c.ic.kind,
        sim.gas.len(),
        sim.t,
        sim.params.kernel,
        sim.params.n_ngb,
        match sim.backend {
            Backend::Cpu => "CPU float64",
            Backend::Gpu(_) => "passes on the GPU (float32), integration float64",
        }
    );
    let periodic_box = match sim.boundary {
        Boundary::Periodic(l) => Some(l),
        Boundary::Open => None,
    };
    let d0 = sim.diagnostics();
    // A restart measures the energy error from its first run's start.
    let energy_0 = c.restart_of.and_then(|r| r.energy_0).unwrap_or(d0.total);
    let mut write_snapshot = |sim: &Sim, name: &str| -> Result<()> {
        let path = dir.join(name);
        let s = snapio::snapshot_of(sim);
        let precision = c.output.precision;
        match c.output.format {
            SnapshotFormat::Gadget1 => {
                snapshot::write_gadget(&path, &s, Format::Gadget1, precision)?
            }
            SnapshotFormat::Gadget2 => {
                snapshot::write_gadget(&path, &s, Format::Gadget2, precision)?
            }
            #[cfg(feature = "hdf5")]
            SnapshotFormat::Hdf5 => crate::nbody::hdf5::write_hdf5(&path, &s, precision)?,
            #[cfg(not(feature = "hdf5"))]
            SnapshotFormat::Hdf5 => unreachable!("refused above"),
        }
        SphRunState {
            step: sim.step,
            time: sim.t,
            precision: c.output.precision,
            case: p.case,
            energy: c.ic.energy,
            periodic_box,
            energy_0: Some(energy_0),
            run: p.run.clone(),
        }
        .write(&path)?;
        observer.snapshot(c, sim, &path)
    };
    let diag_path = dir.join("diagnostics.csv");
    let mut diag = std::io::BufWriter::new(
        std::fs::File::create(&diag_path)
            .with_context(|| format!("creating {}", diag_path.display()))?,
    );
    writeln!(
        diag,
        "step,t,dt,kinetic,thermal,potential,total,px,py,pz,energy_error,lx,ly,lz"
    )?;
    let row = |sim: &Sim, dt: f64, w: &mut dyn Write| -> std::io::Result<()> {
        let d = sim.diagnostics();
        writeln!(
            w,
            "{},{},{dt},{},{},{},{},{},{},{},{:e},{},{},{}",
            d.step,
            d.t,
            d.kinetic,
            d.thermal,
            d.potential,
            d.total,
            d.momentum[0],
            d.momentum[1],
            d.momentum[2],
            (d.total - energy_0) / energy_0.abs(),
            d.angular_momentum[0],
            d.angular_momentum[1],
            d.angular_momentum[2],
        )
    };
    row(&sim, 0.0, &mut diag)?;
    let start = std::time::Instant::now();
    let (t0, step0) = (sim.t, sim.step);
    // The number of steps is not known in advance (CFL): progress in thousandths of the time.
    const TICKS: u64 = 1000;
    let every = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        0.0
    } else {
        c.output.progress_every.clamp(0.0, 1e9)
    };
    let mut plain =
        crate::output::Plain::new("sph", TICKS, std::time::Duration::from_secs_f64(every));
    let mut interrupted = false;
    while sim.t < t_end * (1.0 - 1e-12) {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let dt = sim.step(t_end - sim.t)?;
        let last = sim.t >= t_end * (1.0 - 1e-12);
        if sim.step % c.run.diag_every == 0 || last {
            row(&sim, dt, &mut diag)?;
        }
        let every = c.output.snapshot_every;
        if every > 0 && sim.step % every == 0 {
            write_snapshot(&sim, &format!("snapshot_{:06}.{ext}", sim.step))?;
        }
        let ticks = ((sim.t - t0) / (t_end - t0) * TICKS as f64).min(TICKS as f64) as u64;
        plain.update(ticks, &format!("t = {:.5}, step {}", sim.t, sim.step));
    }
    diag.flush()?;
    let final_name = format!("snapshot_final.{ext}");
    write_snapshot(&sim, &final_name)?;
    let d = sim.diagnostics();
    println!(
        "t = {:.5} after {} steps in {:.1} s; energy error {:.2e}; momentum {:.2e}",
        d.t,
        d.step - step0,
        start.elapsed().as_secs_f64(),
        (d.total - energy_0) / energy_0.abs(),
        d.momentum.iter().map(|p| p.abs()).fold(0.0, f64::max)
    );
    let st = sim.times;
    println!(
        "time by stage: density and h {:.2} s, forces {:.2} s, gravity {:.2} s, integration \
         {:.2} s{}",
        st.density,
        st.forces,
        st.gravity,
        st.integration,
        if sim.backend.is_gpu() {
            format!(" (GPU kernels {:.2} s of them)", st.kernels)
        } else {
            String::new()
        }
    );
    let profile = dir.join("profile.csv");
    write_profile(&sim, p.case, c.ic.energy, &profile)?;
    println!("wrote {}", dir.display());
    Ok(SphSummary {
        t: sim.t,
        steps: sim.step - step0,
        interrupted,
        dir: dir.clone(),
        particles: sim.gas.len(),
        backend: sim.backend.name(),
        energy_error: (d.total - energy_0) / energy_0.abs(),
        diagnostics: diag_path,
        snapshot: dir.join(final_name),
        profile,
    })
}

/// Refuses `dir` when it holds a previous run's diagnostics or snapshots; `how` names what
/// replaces them instead (the front end's option).
pub fn refuse_previous_outputs(dir: &Path, how: &str) -> Result<()> {
    let previous = crate::nbody::run::previous_outputs(dir);
    if previous.is_empty() {
        return Ok(());
    }
    let shown = match previous.len() {
        1..=3 => previous.join(", "),
        k => format!("{}, … ({k} files)", previous[..3].join(", ")),
    };
    bail!(
        "{}",
        crate::nbody::run::RunError::previous_outputs(dir, &shown, how)
    );
}

/// The final particles as a profile: Sod along x with the exact Riemann solution; Sedov
/// against radius with the similarity solution's shock radius.
fn write_profile(sim: &Sim, case: IcKind, energy: Option<f64>, path: &Path) -> Result<()> {
    let g = &sim.gas;
    let mut w = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    match case {
        IcKind::Sod => {
            let exact = ic::sod_riemann();
            writeln!(w, "x,rho,vx,p,u,h,rho_exact,vx_exact,p_exact")?;
            for i in 0..g.len() {
                let x = g.pos[i][0];
                let e = ic::sod_exact(&exact, x, sim.t);
                writeln!(
                    w,
                    "{x},{},{},{},{},{},{},{},{}",
                    g.rho[i], g.vel[i][0], g.p[i], g.u[i], g.h[i], e.rho, e.u, e.p
                )?;
            }
        }
        IcKind::Sedov => {
            let gamma = 5.0 / 3.0;
            let e = energy.unwrap_or(1.0);
            let rs = sedov::shock_radius(gamma, e, 1.0, sim.t).unwrap_or(f64::NAN);
            writeln!(w, "r,rho,vr,p,u,h,shock_radius_exact")?;
            for i in 0..g.len() {
                let d = [g.pos[i][0] - 0.5, g.pos[i][1] - 0.5, g.pos[i][2] - 0.5];
                let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                let vr = if r > 0.0 {
                    (0..3).map(|k| g.vel[i][k] * d[k]).sum::<f64>() / r
                } else {
                    0.0
                };
                writeln!(
                    w,
                    "{r},{},{vr},{},{},{},{rs}",
                    g.rho[i], g.p[i], g.u[i], g.h[i]
                )?;
            }
        }
        IcKind::Evrard | IcKind::Polytrope | IcKind::Snapshot => {
            // About the centre of mass; the polytrope beside Lane–Emden (Evrard has no exact
            // profile once it moves).
            let poly = Polytrope::new(sim.params.gravity.g);
            let mtot: f64 = g.mass.iter().sum();
            let com: [f64; 3] = core::array::from_fn(|k| {
                (0..g.len()).map(|i| g.pos[i][k] * g.mass[i]).sum::<f64>() / mtot
            });
            writeln!(w, "r,rho,vr,p,u,h,rho_exact")?;
            for i in 0..g.len() {
                let d: [f64; 3] = core::array::from_fn(|k| g.pos[i][k] - com[k]);
                let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                let vr = if r > 0.0 {
                    (0..3).map(|k| g.vel[i][k] * d[k]).sum::<f64>() / r
                } else {
                    0.0
                };
                let exact = if case == IcKind::Polytrope {
                    poly.density(r)
                } else {
                    f64::NAN
                };
                writeln!(
                    w,
                    "{r},{},{vr},{},{},{},{exact}",
                    g.rho[i], g.p[i], g.u[i], g.h[i]
                )?;
            }
        }
    }
    w.flush()?;
    Ok(())
}
