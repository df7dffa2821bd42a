//! `warpkit sph` runs a user can trust, through the executable on the CPU backend: gas
//! snapshots that a restart continues to float64 round-off, outputs that never replace the
//! input, exit code 130 with a final snapshot on Ctrl-C, and progress lines in logs.

mod common;

use common::cli::{fails, run_in, scratch};
use std::path::Path;
use warpkit::nbody::snapshot::{Snapshot, read_snapshot};

fn succeeds(dir: &Path, args: &[&str]) -> String {
    let out = run_in(dir, args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {err}");
    err
}

/// Every float of the particles and of the gas fields, as bits.
fn state_bits(s: &Snapshot) -> Vec<u64> {
    let p = &s.particles;
    let g = s.gas.as_ref().expect("gas");
    p.pos
        .iter()
        .chain(&p.vel)
        .chain(&g.acc)
        .flatten()
        .chain(&p.mass)
        .chain(&g.u)
        .chain(&g.hsml)
        .chain(&g.du_dt)
        .chain(&g.vsig)
        .chain(&g.alpha)
        .map(|x| x.to_bits())
        .collect()
}

/// A Sod run restarted from one of its snapshots ends where the run that did not stop ends,
/// bit for bit, with the run's parameters and clock; an override is said; a restart that would
/// write over its snapshot is refused.
#[test]
fn sph_restart_continues_the_run() {
    let dir = scratch("sph-restart");
    let case = [
        "sph",
        "--ic",
        "sod",
        "--resolution",
        "16",
        "--t-end",
        "0.1",
        "--snapshot-every",
        "3",
    ];
    succeeds(&dir, &[&case[..], &["--out", "whole"]].concat());
    let err = succeeds(
        &dir,
        &[
            "sph",
            "--restart",
            "whole/snapshot_000003.gadget",
            "--out",
            "rB",
        ],
    );
    assert!(!err.contains("overrides"), "{err}");
    let a = read_snapshot(&dir.join("whole/snapshot_final.gadget")).unwrap();
    let b = read_snapshot(&dir.join("rB/snapshot_final.gadget")).unwrap();
    let mid = read_snapshot(&dir.join("whole/snapshot_000003.gadget")).unwrap();
    assert!(mid.header.time > 0.0 && mid.header.time < 0.1);
    assert_eq!(a.header.time, 0.1);
    assert_eq!(a.header.time, b.header.time);
    assert_eq!(a.particles.id, b.particles.id);
    assert_eq!(state_bits(&a), state_bits(&b));
    // The restart's diagnostics start at the snapshot's time and step, and its energy error
    // is measured from the first run's start.
    let diag = |d: &str| std::fs::read_to_string(dir.join(d).join("diagnostics.csv")).unwrap();
    let (whole, part) = (diag("whole"), diag("rB"));
    let first: Vec<&str> = part.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(first[0], "3");
    assert_eq!(first[1].parse::<f64>().unwrap(), mid.header.time);
    assert_eq!(whole.lines().last(), part.lines().last());
    // The run's case file may come along with --restart: its [ic] is the snapshot's now, and
    // its [run] keys that equal the run's are no override.
    std::fs::write(
        dir.join("case.toml"),
        "[ic]\nkind = \"sod\"\nresolution = 16\n[run]\nt_end = 0.1\n",
    )
    .unwrap();
    let err = succeeds(
        &dir,
        &[
            "sph",
            "--config",
            "case.toml",
            "--restart",
            "whole/snapshot_000003.gadget",
            "--out",
            "rD",
        ],
    );
    assert!(!err.contains("overrides"), "{err}");
    let d = read_snapshot(&dir.join("rD/snapshot_final.gadget")).unwrap();
    assert_eq!(state_bits(&a), state_bits(&d));
    // The profile is still the Sod tube's, with the exact solution.
    let profile = std::fs::read_to_string(dir.join("rB/profile.csv")).unwrap();
    assert!(
        profile.starts_with("x,rho,vx,p,u,h,rho_exact"),
        "{profile:.80}"
    );
    // An option given overrides the run's value, and says so.
    let err = succeeds(
        &dir,
        &[
            "sph",
            "--restart",
            "whole/snapshot_000003.gadget",
            "--t-end",
            "0.12",
            "--out",
            "rC",
        ],
    );
    assert!(
        err.contains("restart: t_end 0.12 overrides the run's 0.1"),
        "{err}"
    );
    let c = read_snapshot(&dir.join("rC/snapshot_final.gadget")).unwrap();
    assert_eq!(c.header.time, 0.12);
    // A previous run's outputs are replaced only when asked.
    let again = [
        "sph",
        "--restart",
        "whole/snapshot_000003.gadget",
        "--out",
        "rC",
    ];
    fails(
        &dir,
        &again,
        &["holds a previous run's outputs", "--overwrite"],
    );
    succeeds(&dir, &[&again[..], &["--overwrite"]].concat());
    let c = read_snapshot(&dir.join("rC/snapshot_final.gadget")).unwrap();
    assert_eq!(c.header.time, 0.1);
    // Writing over the snapshot a run starts from is refused before any work.
    let before = std::fs::read(dir.join("whole/snapshot_final.gadget")).unwrap();
    fails(
        &dir,
        &[
            "sph",
            "--restart",
            "whole/snapshot_final.gadget",
            "--t-end",
            "0.2",
            "--out",
            "whole",
        ],
        &["would replace its input"],
    );
    assert_eq!(
        std::fs::read(dir.join("whole/snapshot_final.gadget")).unwrap(),
        before
    );
    // A snapshot without gas is refused by name.
    succeeds(
        &dir,
        &[
            "nbody", "--ic", "plummer", "--n", "50", "--t-end", "0.01", "--dt", "0.01", "--out",
            "nb",
        ],
    );
    fails(
        &dir,
        &[
            "sph",
            "--restart",
            "nb/snapshot_final.gadget",
            "--t-end",
            "1",
            "--out",
            "x",
        ],
        &["no gas"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SIGINT ends an SPH run after its step with the final snapshot (and its run state),
/// diagnostics and profile, and exit code 130.
#[test]
fn sph_interrupted_run_exits_130() {
    let dir = scratch("sph-sigint");
    let args = [
        "--backend",
        "cpu",
        "sph",
        "--ic",
        "sod",
        "--resolution",
        "16",
        "--t-end",
        "100",
        "--out",
        "run",
    ];
    common::cli::interrupt(&dir, &args, "run/diagnostics.csv");
    let snap = read_snapshot(&dir.join("run/snapshot_final.gadget")).unwrap();
    assert!(snap.header.time > 0.0 && snap.header.time < 100.0);
    assert!(dir.join("run/snapshot_final.gadget.run.toml").exists());
    assert!(dir.join("run/profile.csv").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With standard error not a terminal, an SPH run prints plain progress lines at the interval
/// asked for, and none with 0.
#[test]
fn sph_progress_lines_in_logs() {
    let dir = scratch("sph-progress");
    let run = ["sph", "--ic", "sod", "--resolution", "16", "--t-end", "0.2"];
    let err = succeeds(
        &dir,
        &[&run[..], &["--out", "a", "--progress-every", "0.001"]].concat(),
    );
    let progress: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("sph: ") && l.contains("ETA"))
        .collect();
    assert!(progress.len() >= 2, "{err}");
    assert!(progress.iter().all(|l| l.contains("t = ")), "{err}");
    let err = succeeds(
        &dir,
        &[&run[..], &["--out", "b", "--progress-every", "0"]].concat(),
    );
    assert!(!err.contains("ETA"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The width, height and RGB bytes of a PNG.
fn decode_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = png::Decoder::new(file).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// Every snapshot of a run has its slice and column-density images (the size asked for, not
/// one flat colour); `images = false` writes none.
#[test]
fn sph_snapshots_come_with_images() {
    let dir = scratch("sph_images");
    let case = "[ic]\nkind = \"sedov\"\nresolution = 8\n\
                [run]\nt_end = 0.02\n\
                [output]\ndir = \"out\"\nsnapshot_every = 2\nimage_pixels = 48\n";
    std::fs::write(dir.join("case.toml"), case).unwrap();
    succeeds(&dir, &["sph", "--config", "case.toml"]);
    let out = dir.join("out");
    let finals = ["snapshot_final.slice.png", "snapshot_final.column.png"];
    for name in finals
        .iter()
        .chain(&["snapshot_000002.slice.png", "snapshot_000002.column.png"])
    {
        let (w, h, rgb) = decode_png(&out.join(name));
        assert_eq!((w, h), (48, 48), "{name}");
        let distinct: std::collections::HashSet<&[u8]> = rgb.chunks(3).collect();
        assert!(distinct.len() > 10, "{name}: {} colours", distinct.len());
    }
    std::fs::write(
        dir.join("off.toml"),
        case.replace("image_pixels = 48", "images = false"),
    )
    .unwrap();
    succeeds(&dir, &["sph", "--config", "off.toml", "--out", "off"]);
    let pngs = std::fs::read_dir(dir.join("off"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("png".as_ref()))
        .count();
    assert_eq!(pngs, 0);
    std::fs::write(dir.join("bad.toml"), case.replace("= 48", "= 4")).unwrap();
    fails(
        &dir,
        &["sph", "--config", "bad.toml", "--out", "bad"],
        &["image_pixels = 4 must be in 16..=8192"],
    );
}
