//! `warpkit sbh` on the CPU backend: a small run prints the comparison table, and bad input is a
//! clear error. These run in CI.

mod common;

use std::process::Command;

fn sbh(args: &[&str]) -> std::process::Output {
    Command::new(common::warpkit_exe())
        .args(["--backend", "cpu", "sbh"])
        .args(args)
        .output()
        .unwrap()
}

/// A run that must succeed, and its standard output.
fn sbh_ok(args: &[&str]) -> String {
    let out = sbh(args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn small_run_prints_every_method() {
    let text = sbh_ok(&["--m", "2048", "--grid", "8", "--samples", "2"]);
    for row in [
        "| brute force",
        "| SBH S = 2 |",
        "| BH β = 2, warp groups |",
        "| BH β = 2, per query |",
    ] {
        assert!(text.contains(row), "missing {row}: {text}");
    }
}

#[test]
fn the_authors_forms_are_selectable() {
    // The paper's allocation (S paths in every stratum) and the authors' row warps for BH.
    let text = sbh_ok(&[
        "--m",
        "2048",
        "--grid",
        "8",
        "--paper-allocation",
        "--warps",
        "rows",
    ]);
    for row in [
        "S = 1 in every stratum",
        "| SBH S = 1 |",
        "| BH β = 2, row warps |",
    ] {
        assert!(text.contains(row), "missing {row}: {text}");
    }
    let ours = sbh_ok(&["--m", "2048", "--grid", "8"]);
    assert!(
        ours.contains("(2S–3S in near strata, far ones thinned)"),
        "{ours}"
    );
}

#[test]
fn quadrupoles_are_selectable_for_radial_kernels_only() {
    let text = sbh_ok(&["--m", "2048", "--grid", "8", "--moments", "quadrupole"]);
    assert!(
        text.contains("| BH β = 2, warp groups + quadrupoles |"),
        "{text}"
    );
    let out = sbh(&[
        "--m",
        "256",
        "--grid",
        "4",
        "--kernel",
        "winding",
        "--moments",
        "quadrupole",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("quadrupole moments need a radial kernel"),
        "{err}"
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    for (args, message) in [
        (vec!["--samples", "0"], "S = 0 samples"),
        (vec!["--beta", "0"], "β = 0 is invalid"),
        (vec!["--beta=-2"], "β = -2 is invalid"),
        (
            vec!["--kernel", "smooth", "--param", "0"],
            "kernel parameter 0 is invalid",
        ),
    ] {
        let mut all = vec!["--m", "256", "--grid", "4"];
        all.extend(args);
        let out = sbh(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(message),
            "{all:?}: {err}"
        );
    }
}
