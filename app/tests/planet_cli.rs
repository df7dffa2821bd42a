//! `warpkit planet` through the executable: a tiny planet's files and summary, and one-line
//! refusals (exit 1) before any work.

mod common;

use common::cli::{fails, listing, run_in, scratch};

#[test]
fn a_tiny_planet_and_its_refusals() {
    let dir = scratch("planet");
    let args = [
        "planet",
        "--mass",
        "0.5",
        "--layers",
        "iron:0.3,granite:0.7",
        "--particles",
        "300",
        "--settle",
        "0.5",
        "--out",
        "p",
    ];
    let out = run_in(&dir, &args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in ["radius", "core radius", "central density", "criteria"] {
        assert!(text.contains(want), "missing {want:?} in {text}");
    }
    assert_eq!(
        listing(&dir.join("p")),
        ["planet.gadget", "planet.toml", "profile.csv"]
    );
    let s = warpkit::nbody::snapshot::read_snapshot(&dir.join("p/planet.gadget")).unwrap();
    assert_eq!(s.gas.unwrap().mat.iter().filter(|&&m| m == 0).count(), 90);
    // Refusals: one line each, exit 1, nothing written.
    let err = fails(&dir, &args, &["--overwrite", "previous run"]);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let mut bad = args;
    bad[4] = "iron:0.3,cheese:0.7";
    bad[10] = "q";
    fails(&dir, &bad, &["unknown material \"cheese\""]);
    bad[4] = "iron:0.3,granite:0.6";
    fails(&dir, &bad, &["sum to 0.900000"]);
    bad[4] = "iron:1";
    bad[6] = "10";
    fails(&dir, &bad, &["10 particles"]);
    assert!(!dir.join("q").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
