//! HDF5 snapshots through the command line (feature `hdf5`): `nbody --format hdf5`,
//! `--restart x.hdf5`, `gravity --input x.hdf5`. CPU only; `.ci/run` runs it with
//! `cargo test --release --features hdf5 --test hdf5_cli`.
#![cfg(feature = "hdf5")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use warpkit::nbody::hdf5::read_hdf5;

/// Held around each `warpkit` child process and while this test has HDF5 files open: the HDF5
/// library opens files without close-on-exec and locks them (flock), so a child forked while
/// another test thread has a file open inherits the descriptor and its lock for its whole life.
static FORK: Mutex<()> = Mutex::new(());

fn no_fork() -> MutexGuard<'static, ()> {
    FORK.lock().unwrap_or_else(|e| e.into_inner())
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("warpkit-h5-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn warpkit(dir: &Path, args: &[&str]) -> String {
    let _fork = no_fork();
    let out = Command::new(common::warpkit_exe())
        .args(["--backend", "cpu"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "warpkit {args:?}: {err}");
    err
}

/// `nbody --format hdf5` writes .hdf5 snapshots, `--restart` reads one back, and `gravity
/// --input x.hdf5` gives the accelerations of the same bodies as `--input x.npy`.
#[test]
fn cli_writes_restarts_and_reads_hdf5() {
    let dir = scratch("cli");
    let run = |out: &str, extra: &[&str]| {
        let args = [
            &["nbody", "--n", "64", "--t-end", "0.02", "--dt", "0.01"][..],
            &["--format", "hdf5", "--write-ic", "--out", out],
            extra,
        ]
        .concat();
        warpkit(&dir, &args);
    };
    run("a", &[]);
    let fin = dir.join("a/snapshot_final.hdf5");
    assert!(dir.join("a/ic.hdf5").exists());
    let s = read_hdf5(&fin).unwrap();
    assert_eq!(s.particles.len(), 64);
    assert!((s.header.time - 0.02).abs() < 1e-12, "{}", s.header.time);
    // The run's potentials are in its snapshots: Σ m φ / 2 is the potential energy of the last
    // diagnostics row (float32 storage); the initial conditions have none.
    let pot = s
        .potential
        .as_ref()
        .expect("a run's snapshot carries its potentials");
    let w: f64 = 0.5
        * pot
            .iter()
            .zip(&s.particles.mass)
            .map(|(p, m)| p * m)
            .sum::<f64>();
    let csv = std::fs::read_to_string(dir.join("a/diagnostics.csv")).unwrap();
    let last: Vec<f64> = csv
        .lines()
        .last()
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(
        w < 0.0 && ((w - last[2]) / last[2]).abs() < 1e-5,
        "{w} vs {}",
        last[2]
    );
    assert!(
        read_hdf5(&dir.join("a/ic.hdf5"))
            .unwrap()
            .potential
            .is_none()
    );
    // Restart from it: the new run's initial conditions are that snapshot's particles.
    run("b", &["--restart", fin.to_str().unwrap()]);
    let ic = read_hdf5(&dir.join("b/ic.hdf5")).unwrap();
    assert_eq!(ic.particles, s.particles);

    // gravity: the same bodies as .npy and as .hdf5 give the same accelerations.
    let npy = dir.join("bodies.npy");
    let mut rows: Vec<f32> = Vec::new();
    for (x, m) in s.particles.pos.iter().zip(&s.particles.mass) {
        rows.extend([x[0] as f32, x[1] as f32, x[2] as f32, *m as f32]);
    }
    warpkit::bh::npy::write_f32(&npy, &rows, 4).unwrap();
    let acc = |input: &Path, out: &str| {
        warpkit(
            &dir,
            &[
                "gravity",
                "--input",
                input.to_str().unwrap(),
                "--output",
                out,
                "--mode",
                "regular",
            ],
        );
        std::fs::read(dir.join(out)).unwrap()
    };
    let a = acc(&npy, "a_npy.npy");
    let b = acc(&fin, "a_h5.npy");
    assert!(a.len() > 64 * 12);
    assert_eq!(a, b);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `warpkit impact` with `format = "hdf5"`: SI snapshots with SWIFT's planetary fields
/// (MaterialIDs, InternalEnergies, Densities, Pressures, SmoothingLengths) that warpkit reads
/// back, the bodies' masses in kg, and the SI unit system stated in the file.
#[test]
fn impact_writes_si_hdf5_snapshots() {
    let dir = scratch("impact");
    std::fs::write(
        dir.join("case.toml"),
        "[settle]\ntime = 0\n[run]\ngravity_solver = \"direct\"\nt_end = 300\n\
         snapshot_every = 0\n[output]\nimages = false\nformat = \"hdf5\"\n",
    )
    .unwrap();
    warpkit(
        &dir,
        &[
            "impact",
            "--config",
            "case.toml",
            "--particles",
            "1000",
            "--out",
            "run",
        ],
    );
    let path = dir.join("run/snapshot_final.hdf5");
    let _fork = no_fork();
    let s = read_hdf5(&path).unwrap();
    let gas = s.gas.as_ref().expect("gas");
    let n = s.particles.pos.len();
    assert_eq!(n, 1000);
    assert_eq!(gas.mat.len(), n, "MaterialIDs");
    assert!(gas.mat.iter().all(|&m| m < 2), "iron 0, granite 1");
    for (name, v) in [
        ("InternalEnergies", &gas.u),
        ("Densities", &gas.rho),
        ("SmoothingLengths", &gas.hsml),
    ] {
        assert_eq!(v.len(), n, "{name}");
        assert!(v.iter().all(|x| x.is_finite() && *x >= 0.0), "{name}");
    }
    // Densities of rock and iron in kg/m³, masses in kg.
    let rho_max = gas.rho.iter().copied().fold(0.0, f64::max);
    assert!((3e3..2e4).contains(&rho_max), "ρ max {rho_max}");
    let m: f64 = s.particles.mass.iter().sum();
    let earth = 5.9722e24;
    assert!(
        ((m / earth) - 1.02).abs() < 1e-3,
        "{} Earth masses",
        m / earth
    );
    let bytes = std::fs::read(&path).unwrap();
    let says = |t: &str| bytes.windows(t.len()).any(|w| w == t.as_bytes());
    assert!(
        says("SI: kilograms, metres, seconds"),
        "the unit system in /Code"
    );
    assert!(says("Pressures"), "pressures written");
    std::fs::remove_dir_all(&dir).unwrap();
}
