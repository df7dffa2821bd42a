//! `gravity --input` with a Gadget snapshot: the same accelerations as the same bodies in .npy.

mod common;

use std::path::Path;
use std::process::Command;
use warpkit::nbody::snapshot::read_gadget;

fn warpkit(dir: &Path, args: &[&str]) {
    let out = Command::new(common::warpkit_exe())
        .args(["--backend", "cpu"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "warpkit {args:?}: {err}");
}

#[test]
fn gravity_reads_gadget_snapshots() {
    let dir = std::env::temp_dir().join(format!("warpkit-snapcli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let args = [
        "nbody", "--n", "64", "--t-end", "0.02", "--dt", "0.01", "--out", "run",
    ];
    warpkit(&dir, &args);
    let fin = dir.join("run/snapshot_final.gadget");
    let s = read_gadget(&fin).unwrap();
    assert_eq!(s.particles.len(), 64);
    let npy = dir.join("bodies.npy");
    let mut rows: Vec<f32> = Vec::new();
    for (x, m) in s.particles.pos.iter().zip(&s.particles.mass) {
        rows.extend([x[0] as f32, x[1] as f32, x[2] as f32, *m as f32]);
    }
    warpkit::bh::npy::write_f32(&npy, &rows, 4).unwrap();
    let acc = |input: &Path, out: &str| {
        let i = input.to_str().unwrap();
        warpkit(
            &dir,
            &[
                "gravity", "--input", i, "--output", out, "--mode", "regular",
            ],
        );
        std::fs::read(dir.join(out)).unwrap()
    };
    let a = acc(&npy, "a_npy.npy");
    let b = acc(&fin, "a_gadget.npy");
    assert!(a.len() > 64 * 12);
    assert_eq!(a, b);
    std::fs::remove_dir_all(&dir).unwrap();
}
