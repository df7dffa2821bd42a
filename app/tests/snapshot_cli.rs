//! Reading the user's particles: `gravity --input` and `neighbours --input` with a Gadget snapshot
//! give the same answers as the same bodies in .npy.

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

/// `neighbours --input` reads the same particles from a snapshot and from `.npy`, and
/// `--output` writes each particle's count, h and density in the input's order: the counts equal
/// a brute-force gather count (`r < h`, the particle itself included) at a fixed h.
#[test]
fn neighbours_read_user_particles_and_write_counts_h_and_density() {
    let dir = std::env::temp_dir().join(format!("warpkit-ngbcli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    warpkit(
        &dir,
        &[
            "nbody", "--ic", "plummer", "--n", "700", "--t-end", "0", "--out", "run",
        ],
    );
    let fin = dir.join("run/snapshot_final.gadget");
    let s = read_gadget(&fin).unwrap();
    let n = s.particles.len();
    let mut rows: Vec<f32> = Vec::new();
    for (x, m) in s.particles.pos.iter().zip(&s.particles.mass) {
        rows.extend([x[0] as f32, x[1] as f32, x[2] as f32, *m as f32]);
    }
    let npy = dir.join("p.npy");
    warpkit::bh::npy::write_f32(&npy, &rows, 4).unwrap();
    let h = 0.3f32;
    let table = |input: &Path, out: &str| {
        let i = input.to_str().unwrap();
        let hs = h.to_string();
        warpkit(
            &dir,
            &["neighbours", "--input", i, "--h", &hs, "--output", out],
        );
        let bytes = std::fs::read(dir.join(out)).unwrap();
        let data = &bytes[bytes.len() - 12 * n..];
        data.chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect::<Vec<f32>>()
    };
    let a = table(&npy, "a.npy");
    let b = table(&fin, "b.npy");
    assert_eq!(a, b);
    for i in 0..n {
        let p = &rows[4 * i..4 * i + 3];
        let brute = (0..n)
            .filter(|&j| {
                let q = &rows[4 * j..4 * j + 3];
                let d: f32 = (0..3).map(|k| (q[k] - p[k]) * (q[k] - p[k])).sum();
                d < h * h
            })
            .count();
        let (count, hi, rho) = (a[3 * i], a[3 * i + 1], a[3 * i + 2]);
        // Summation order may put a pair exactly on the boundary either side: allow one.
        assert!(
            (count - brute as f32).abs() <= 1.0,
            "particle {i}: {count} vs {brute}"
        );
        assert_eq!(hi, h);
        assert!(rho > 0.0 && rho.is_finite(), "particle {i}: density {rho}");
    }
    // An output over the input is refused before any work.
    let out = Command::new(common::warpkit_exe())
        .args([
            "--backend",
            "cpu",
            "neighbours",
            "--input",
            "p.npy",
            "--output",
            "p.npy",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    std::fs::remove_dir_all(&dir).unwrap();
}
