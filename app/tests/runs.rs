//! Runs a user can trust, through the `warpkit` executable on the CPU backend: restarts that
//! continue the run, outputs that never replace inputs, exit codes (0 finished, 130 interrupted,
//! 1 error), quiet broken pipes, and progress lines in logs.

mod common;

use common::cli::{fails, run_in, scratch};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use warpkit::nbody::snapshot::read_snapshot;

fn succeeds(dir: &Path, args: &[&str]) -> String {
    let out = run_in(dir, args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {err}");
    err
}

/// `nbody --restart` on the GPU continues the run: a Plummer sphere of 4096 particles stopped at
/// t = 0.1 (float64 snapshot) and restarted to t = 0.2 ends where the run that did not stop
/// ends, to float32 rounding (each step's tree is built anew, so its sums may come in another
/// order; on the CPU the same restart holds to 1e-12).
#[test]
#[ignore = "needs a CUDA GPU"]
fn nbody_restart_on_the_gpu_continues() {
    let dir = scratch("restart-gpu");
    let on_gpu = |args: &[&str]| {
        let out = Command::new(common::warpkit_exe())
            .args(["--backend", "gpu"])
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {err}");
        err
    };
    let run = [
        "nbody", "--ic", "plummer", "--n", "4096", "--dt", "0.01", "--eps", "0.02",
    ];
    let double = ["--precision", "double", "--snapshot-every", "0"];
    on_gpu(&[&run[..], &double, &["--t-end", "0.2", "--out", "whole"]].concat());
    on_gpu(&[&run[..], &double, &["--t-end", "0.1", "--out", "rA"]].concat());
    let err = on_gpu(
        &[
            &[
                "nbody",
                "--restart",
                "rA/snapshot_final.gadget",
                "--t-end",
                "0.2",
            ][..],
            &double,
            &["--out", "rB"],
        ]
        .concat(),
    );
    assert!(!err.contains("overrides"), "{err}");
    let t0 = first_time(&dir.join("rB/diagnostics.csv"));
    assert!((t0 - 0.1).abs() < 1e-12, "the restart starts at t = {t0}");
    let a = read_snapshot(&dir.join("whole/snapshot_final.gadget")).unwrap();
    let b = read_snapshot(&dir.join("rB/snapshot_final.gadget")).unwrap();
    assert_eq!(a.header.time, b.header.time);
    assert_eq!(a.particles.id, b.particles.id);
    let pairs = || {
        a.particles
            .pos
            .iter()
            .zip(&b.particles.pos)
            .chain(a.particles.vel.iter().zip(&b.particles.vel))
    };
    let worst = pairs()
        .flat_map(|(x, y)| (0..3).map(move |k| (x[k] - y[k]).abs() / x[k].abs().max(1e-3)))
        .fold(0.0, f64::max);
    let same = pairs().filter(|(x, y)| x == y).count();
    println!(
        "nbody restart on the GPU: largest relative difference {worst:.2e}; {same} of {} \
         positions and velocities equal to the bit",
        2 * a.particles.pos.len()
    );
    assert!(worst <= 1e-5, "the restart differs by {worst:.3e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The first column of the diagnostics' first data row: the run's starting time.
fn first_time(csv: &Path) -> f64 {
    let text = std::fs::read_to_string(csv).unwrap();
    let row = text.lines().nth(1).unwrap();
    row.split(',').next().unwrap().parse().unwrap()
}

/// `nbody --restart` continues from the snapshot's time with the run's ε and dt, to the state of
/// the run that did not stop (float64 snapshots); an option given overrides and is said.
#[test]
fn nbody_restart_continues() {
    let dir = scratch("restart");
    let run = [
        "nbody", "--ic", "plummer", "--n", "300", "--dt", "0.01", "--eps", "0.02",
    ];
    let double = ["--precision", "double", "--snapshot-every", "0"];
    succeeds(
        &dir,
        &[&run[..], &double, &["--t-end", "1.0", "--out", "whole"]].concat(),
    );
    succeeds(
        &dir,
        &[&run[..], &double, &["--t-end", "0.5", "--out", "rA"]].concat(),
    );
    let restart = [
        "nbody",
        "--restart",
        "rA/snapshot_final.gadget",
        "--t-end",
        "1.0",
    ];
    let err = succeeds(&dir, &[&restart[..], &double, &["--out", "rB"]].concat());
    assert!(!err.contains("overrides"), "{err}");
    let t0 = first_time(&dir.join("rB/diagnostics.csv"));
    assert!((t0 - 0.5).abs() < 1e-12, "the restart starts at t = {t0}");
    let config = std::fs::read_to_string(dir.join("rB/config.toml")).unwrap();
    assert!(
        config.contains("eps = 0.02") && config.contains("dt = 0.01"),
        "{config}"
    );
    let a = read_snapshot(&dir.join("whole/snapshot_final.gadget")).unwrap();
    let b = read_snapshot(&dir.join("rB/snapshot_final.gadget")).unwrap();
    assert_eq!(a.header.time, b.header.time);
    assert_eq!(a.particles.id, b.particles.id);
    let worst = a
        .particles
        .pos
        .iter()
        .zip(&b.particles.pos)
        .chain(a.particles.vel.iter().zip(&b.particles.vel))
        .flat_map(|(x, y)| (0..3).map(move |k| (x[k] - y[k]).abs() / x[k].abs().max(1e-3)))
        .fold(0.0, f64::max);
    assert!(worst <= 1e-12, "the restart differs by {worst:.3e}");
    // An override is said.
    let args = [
        "nbody",
        "--restart",
        "rA/snapshot_final.gadget",
        "--eps",
        "0.05",
        "--t-end",
        "0.52",
        "--out",
        "rC",
    ];
    let err = succeeds(&dir, &args);
    assert!(
        err.contains("restart: eps 0.05 overrides the run's 0.02"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// No command writes over one of its inputs: refused before any work, the input untouched.
#[test]
fn outputs_never_replace_inputs() {
    let dir = scratch("inputs");
    std::fs::write(dir.join("m.msh"), b"not read: refused before").unwrap();
    for flag in ["--vtu", "--mtx"] {
        let err = fails(
            &dir,
            &["fem", "--mesh", "m.msh", flag, "./m.msh"],
            &[flag, "is the --mesh file"],
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert_eq!(
            std::fs::read(dir.join("m.msh")).unwrap(),
            b"not read: refused before"
        );
    }
    // A restart into its own run's directory would replace the snapshot it starts from.
    let run = [
        "nbody", "--ic", "plummer", "--n", "16", "--t-end", "0.02", "--dt", "0.01",
    ];
    succeeds(&dir, &[&run[..], &["--out", "run"]].concat());
    let snap = std::fs::read(dir.join("run/snapshot_final.gadget")).unwrap();
    fails(
        &dir,
        &[
            "nbody",
            "--restart",
            "run/snapshot_final.gadget",
            "--t-end",
            "0.05",
            "--out",
            "run",
            "--overwrite",
        ],
        &["snapshot_final.gadget is the restart file"],
    );
    assert_eq!(
        std::fs::read(dir.join("run/snapshot_final.gadget")).unwrap(),
        snap
    );
    // The configuration file is an input too: the run writes OUT/config.toml.
    let config = std::fs::read(dir.join("run/config.toml")).unwrap();
    fails(
        &dir,
        &[
            "nbody",
            "--config",
            "run/config.toml",
            "--out",
            "run",
            "--overwrite",
        ],
        &["is the --config file"],
    );
    assert_eq!(std::fs::read(dir.join("run/config.toml")).unwrap(), config);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Output into a closed pipe ends quietly: no panic, not Rust's panic exit code 101.
#[test]
fn broken_pipe_is_quiet() {
    for (args, read) in [
        (&["info", "--kernels"][..], 0),
        (&["info", "--keys"][..], 0),
        (&["ptx"][..], 100),
    ] {
        let mut child = Command::new(common::warpkit_exe())
            .args(["--backend", "cpu"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut head = vec![0u8; read];
        stdout.read_exact(&mut head).unwrap();
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_ne!(out.status.code(), Some(101), "{args:?}: {err}");
        assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
    }
}

/// SIGINT ends an N-body run after its step with the final snapshot and diagnostics, and exit
/// code 130 (a batch script tells it from a finished run, 0).
#[cfg(unix)]
#[test]
fn interrupted_run_exits_130() {
    let dir = scratch("sigint");
    let args = [
        "--backend",
        "cpu",
        "nbody",
        "--ic",
        "plummer",
        "--n",
        "400",
        "--t-end",
        "1000",
        "--dt",
        "0.001",
        "--diag-every",
        "1",
        "--out",
        "run",
    ];
    common::cli::interrupt(&dir, &args, "run/diagnostics.csv");
    let snap = read_snapshot(&dir.join("run/snapshot_final.gadget")).unwrap();
    assert!(snap.header.time > 0.0 && snap.header.time < 1000.0);
    assert!(dir.join("run/snapshot_final.gadget.run.toml").exists());
    assert!(dir.join("run/timing.md").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With standard error not a terminal, a run prints plain progress lines (count, rate, time
/// left, t) at the interval asked for, and none with 0.
#[test]
fn progress_lines_in_logs() {
    let dir = scratch("progress");
    let run = [
        "nbody", "--ic", "plummer", "--n", "300", "--t-end", "0.3", "--dt", "0.001",
    ];
    let err = succeeds(
        &dir,
        &[&run[..], &["--out", "a", "--progress-every", "0.001"]].concat(),
    );
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("nbody: ")).collect();
    let progress: Vec<&&str> = lines.iter().filter(|l| l.contains("ETA")).collect();
    assert!(progress.len() >= 2, "{err}");
    assert!(
        progress
            .iter()
            .all(|l| l.contains("/300") && l.contains("t = ")),
        "{err}"
    );
    let err = succeeds(
        &dir,
        &[&run[..], &["--out", "b", "--progress-every", "0"]].concat(),
    );
    assert!(!err.contains("ETA"), "{err}");
    let out = run_in(
        &dir,
        &[&run[..], &["--out", "c", "--progress-every", "-1"]].concat(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("-1 is not a number of seconds"),
        "{err}"
    );
    assert!(!dir.join("c").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
