//! `gravity --ranks` / `nbody --ranks` on the CPU, and the refusals of `--gpus` without GPUs or
//! NCCL. CPU backend; these run in CI.

mod common;

use std::process::{Command, Output};

fn warpkit(args: &[&str]) -> Output {
    Command::new(common::warpkit_exe())
        .args(args)
        .env_remove("WARPKIT_NCCL_LIB")
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn gravity_over_virtual_ranks_reports_communication_and_accuracy() {
    let o = warpkit(&[
        "--backend",
        "cpu",
        "gravity",
        "--n",
        "6000",
        "--scene",
        "plummer",
        "--ranks",
        "3",
        "--quadrupole",
        "--check",
        "200",
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("3 virtual ranks on the CPU"), "{out}");
    assert!(out.contains("communication per step"), "{out}");
    assert_eq!(
        out.matches("\n| ").count(),
        5,
        "header, rule, 3 ranks: {out}"
    );
    // θ = 0.5 with quadrupoles: a median error of a few 1e-4 at most.
    let median: f64 = out
        .split("direct summation")
        .nth(1)
        .and_then(|s| s.split("median ").nth(1))
        .and_then(|s| s.split(',').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no median error in {out}"));
    assert!(median < 1e-3, "{out}");
}

#[test]
fn nbody_over_virtual_ranks_keeps_every_body_and_the_energy() {
    let o = warpkit(&[
        "--backend",
        "cpu",
        "nbody",
        "--ranks",
        "2",
        "--ic",
        "plummer",
        "--n",
        "2000",
        "--t-end",
        "0.5",
        "--dt",
        "0.05",
        "--theta",
        "0.6",
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let de: f64 = out
        .split("|ΔE/E| = ")
        .nth(1)
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no energy drift in {out}"));
    assert!(de < 1e-3, "{out}");
}

#[test]
fn gpus_without_gpus_or_nccl_is_a_clear_error() {
    for args in [
        &["--backend", "cpu", "gravity", "--gpus", "2"][..],
        &["gravity", "--gpus", "2", "--n", "1000"][..],
        &["nbody", "--gpus"][..],
        &["--backend", "cpu", "gravity", "--ranks", "0"][..],
        // A thread per rank: a huge K is refused before anything is allocated.
        &[
            "--backend",
            "cpu",
            "gravity",
            "--ranks",
            "1000000",
            "--n",
            "100",
        ][..],
        &[
            "--backend",
            "cpu",
            "nbody",
            "--ranks",
            "18446744073709551615",
        ][..],
        &["--backend", "cpu", "nbody", "--ranks", "2", "--block-steps"][..],
    ] {
        let o = warpkit(args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {out}\n{err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
