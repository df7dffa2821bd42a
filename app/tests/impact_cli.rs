//! `warpkit impact` through the executable: a tiny impact's files and progress lines, one-line
//! refusals (exit 1) before any work, and exit code 130 with a final snapshot on Ctrl-C.

mod common;

use common::cli::{fails, listing, run_in, scratch};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Two small bodies (0.6 and 0.4 Earth masses, 240 and 160 particles) settled for a dynamical
/// time, meeting 300 s after the start.
const CASE: &str = "\
[target]
mass_earth = 0.6
[impactor]
mass_earth = 0.4
[particles]
n = 400
[settle]
time = 1
[impact]
angle_deg = 45
v_c = 1
t_contact = 300
[run]
t_end = 600
analysis_every = 300
snapshot_every = 300
[output]
image_pixels = 64
";

#[test]
fn a_tiny_impact_and_its_refusals() {
    let dir = scratch("impact");
    std::fs::write(dir.join("case.toml"), CASE).unwrap();
    let args = ["impact", "--config", "case.toml", "--out", "run"];
    let out = run_in(&dir, &[&args[..], &["--progress-every", "0.001"]].concat());
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Plain progress lines in a log (standard error is not a terminal here).
    assert!(
        err.lines()
            .any(|l| l.starts_with("impact: ") && l.contains("ETA")),
        "{err}"
    );
    for want in [
        "orbit: b = 0.7071 (45.0°)",
        "remnant",
        "escaping",
        "energy error",
    ] {
        assert!(text.contains(want), "missing {want:?} in {text}");
    }
    assert_eq!(
        listing(&dir.join("run")),
        [
            "diagnostics.csv",
            "impact.gif",
            "impact.toml",
            "outcome.csv",
            "snapshot_0000.energy.png",
            "snapshot_0000.gadget",
            "snapshot_0000.materials.png",
            "snapshot_0001.energy.png",
            "snapshot_0001.gadget",
            "snapshot_0001.materials.png",
            "snapshot_0002.energy.png",
            "snapshot_0002.gadget",
            "snapshot_0002.materials.png",
            "snapshot_final.energy.png",
            "snapshot_final.gadget",
            "snapshot_final.materials.png",
        ]
    );
    let csv = std::fs::read_to_string(dir.join("run/outcome.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4, "{csv}");
    let s =
        warpkit::nbody::snapshot::read_snapshot(&dir.join("run/snapshot_final.gadget")).unwrap();
    assert_eq!(s.gas.unwrap().mat.len(), 400);

    // Refusals: one line each, exit 1, nothing written.
    let err = fails(&dir, &args, &["--overwrite", "previous run"]);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let bad = [
        (
            "[target]\nmass_earth = 1\nlayers = [{ material = \"cheese\", fraction = 1 }]\n",
            "unknown material \"cheese\"",
        ),
        (
            "[impactor]\nmass_earth = 0.1\nlayers = [{ material = \"iron\", fraction = 0.5 }]\n",
            "sum to 0.500000",
        ),
        ("[impact]\nseparation = 0.5\n", "overlap at the start"),
        ("[impact]\nv_c = -1\n", "must be positive"),
        ("[impact]\nb = 1.2\n", "must be in [0, 1)"),
    ];
    for (toml, want) in bad {
        std::fs::write(dir.join("bad.toml"), toml).unwrap();
        let err = fails(
            &dir,
            &["impact", "--config", "bad.toml", "--out", "q"],
            &[want],
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    assert!(!dir.join("q").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SIGINT ends an impact after its step with the final snapshot, outcome row and summary, and
/// exit code 130.
#[test]
fn interrupted_impact_exits_130() {
    let dir = scratch("impact-sigint");
    let case = CASE
        .replace("t_end = 600", "t_end = 1e6")
        .replace("analysis_every = 300", "analysis_every = 20")
        .replace("snapshot_every = 300", "snapshot_every = 0");
    std::fs::write(dir.join("case.toml"), case).unwrap();
    let child = Command::new(common::warpkit_exe())
        .args([
            "--backend",
            "cpu",
            "impact",
            "--config",
            "case.toml",
            "--out",
            "run",
        ])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let csv = dir.join("run/outcome.csv");
    let start = Instant::now();
    while std::fs::read_to_string(&csv).map_or(0, |t| t.lines().count()) < 3 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the run never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let snap =
        warpkit::nbody::snapshot::read_snapshot(&dir.join("run/snapshot_final.gadget")).unwrap();
    assert!(snap.header.time > 0.0 && snap.header.time < 1e6);
    let info = std::fs::read_to_string(dir.join("run/impact.toml")).unwrap();
    assert!(info.contains("interrupted = true"), "{info}");
    std::fs::remove_dir_all(&dir).unwrap();
}
