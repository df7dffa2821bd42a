//! `warpkit neighbours --csr` on the user's particles: the CSR lists equal an O(N²) brute force
//! computed here (float64 distances), with each particle's h from an N×5 `.npy`; the outputs are
//! refused where they would replace the input.

mod common;

use common::cli::{fails, run_in, scratch};
use std::path::Path;

/// Uniform draws in [0, 1) (splitmix64): the points are the test's own, not the library's.
fn uniform(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as f64 / 2f64.powi(64)
        })
        .collect()
}

/// A C-order float64 `.npy` file of `rows`, written by hand (version 1 header).
fn write_f64(path: &Path, rows: &[Vec<f64>]) {
    let dict = format!(
        "{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, {}), }}",
        rows.len(),
        rows[0].len()
    );
    // Magic, version, length, dict and its newline: padded to a multiple of 64 bytes.
    let pad = 63 - (10 + dict.len()) % 64;
    let header = format!("{dict}{}\n", " ".repeat(pad));
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for v in rows.iter().flatten() {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

/// A one-dimensional int64 `.npy` file's values (its header checked).
fn read_i64(path: &Path) -> Vec<i64> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..6], b"\x93NUMPY");
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
    assert!(header.contains("'descr': '<i8'"), "{header}");
    let data = &bytes[10 + len..];
    let n = data.len() / 8;
    assert!(header.contains(&format!("'shape': ({n},")), "{header}");
    data.chunks_exact(8)
        .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

/// A float32 `.npy` file's values (the header skipped).
fn read_f32(path: &Path, count: usize) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    bytes[bytes.len() - 4 * count..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

/// Checks the CSR lists against the brute force: rows ascending, every pair clearly inside
/// `radius(i, j)` present and every pair clearly outside absent. Pairs within 1e-5 of the
/// boundary (relative, in r²) may fall either way: float32 distances round there.
fn assert_lists(
    offsets: &[i64],
    indices: &[i64],
    p: &[Vec<f64>],
    radius: impl Fn(usize, usize) -> f64,
) {
    let n = p.len();
    assert_eq!(offsets.len(), n + 1);
    assert_eq!(offsets[0], 0);
    assert_eq!(*offsets.last().unwrap() as usize, indices.len());
    let mut pairs = 0;
    for i in 0..n {
        let row = &indices[offsets[i] as usize..offsets[i + 1] as usize];
        assert!(
            row.windows(2).all(|w| w[0] < w[1]),
            "row {i} not ascending: {row:?}"
        );
        for j in 0..n {
            let d2: f64 = (0..3).map(|k| (p[j][k] - p[i][k]).powi(2)).sum();
            let r2 = radius(i, j).powi(2);
            let listed = row.binary_search(&(j as i64)).is_ok();
            if d2 < r2 * (1.0 - 1e-5) {
                assert!(listed, "particle {i}: {j} at r² {d2} < {r2} is missing");
            } else if d2 > r2 * (1.0 + 1e-5) {
                assert!(!listed, "particle {i}: {j} at r² {d2} > {r2} is listed");
            }
        }
        pairs += row.len();
    }
    // Each particle is its own neighbour; the h range gives tens more.
    assert!(pairs > 10 * n, "{pairs} pairs for {n} particles");
}

#[test]
fn csr_lists_equal_brute_force_on_random_points() {
    let dir = scratch("ngb-csr");
    let n = 500;
    let u = uniform(7, 5 * n);
    // x, y, z in the unit cube, masses in [0.5, 1.5), h in [0.1, 0.3).
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            let r = &u[5 * i..5 * i + 5];
            vec![r[0], r[1], r[2], 0.5 + r[3], 0.1 + 0.2 * r[4]]
        })
        .collect();
    write_f64(&dir.join("p.npy"), &rows);
    // The h column as the search sees it (float32).
    let h: Vec<f64> = rows.iter().map(|r| r[4] as f32 as f64).collect();
    let args = [
        "neighbours",
        "--input",
        "p.npy",
        "--csr",
        "g",
        "--output",
        "g.npy",
    ];
    let out = run_in(&dir, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("CSR neighbour lists"), "{stdout}");
    let (offsets, indices) = (
        read_i64(&dir.join("g_offsets.npy")),
        read_i64(&dir.join("g_indices.npy")),
    );
    assert_lists(&offsets, &indices, &rows, |i, _| h[i]);
    // --output: each particle's count is its row's length, its h the file's.
    let table = read_f32(&dir.join("g.npy"), 3 * n);
    for i in 0..n {
        assert_eq!(
            table[3 * i] as i64,
            offsets[i + 1] - offsets[i],
            "particle {i}"
        );
        assert_eq!(table[3 * i + 1] as f64, h[i], "particle {i}");
    }
    // The symmetric criterion: |r_ij| < max(h_i, h_j).
    let args = [
        "neighbours",
        "--input",
        "p.npy",
        "--csr",
        "s",
        "--criterion",
        "symmetric",
        "--method",
        "cells",
    ];
    let out = run_in(&dir, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (offsets, indices) = (
        read_i64(&dir.join("s_offsets.npy")),
        read_i64(&dir.join("s_indices.npy")),
    );
    assert_lists(&offsets, &indices, &rows, |i, j| h[i].max(h[j]));
    // The lists are symmetric under this criterion.
    let row = |i: usize| &indices[offsets[i] as usize..offsets[i + 1] as usize];
    for i in 0..n {
        for &j in row(i) {
            assert!(
                row(j as usize).contains(&(i as i64)),
                "{i} lists {j} but not back"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Refused before any work, naming the options: a list file over the input, over the --output
/// file, --h beside the file's h column, and lists past --max-pairs.
#[test]
fn csr_refusals() {
    let dir = scratch("ngb-csr-refuse");
    let rows: Vec<Vec<f64>> = uniform(3, 40 * 5)
        .chunks(5)
        .map(|r| vec![r[0], r[1], r[2], 1.0, 0.5])
        .collect();
    write_f64(&dir.join("x_offsets.npy"), &rows);
    fails(
        &dir,
        &["neighbours", "--input", "x_offsets.npy", "--csr", "x"],
        &["--csr", "--input"],
    );
    fails(
        &dir,
        &[
            "neighbours",
            "--input",
            "x_offsets.npy",
            "--csr",
            "y",
            "--output",
            "y_indices.npy",
        ],
        &["--csr", "--output"],
    );
    fails(
        &dir,
        &["neighbours", "--input", "x_offsets.npy", "--h", "0.1"],
        &["fifth column", "--h"],
    );
    fails(
        &dir,
        &[
            "neighbours",
            "--input",
            "x_offsets.npy",
            "--csr",
            "z",
            "--max-pairs",
            "10",
        ],
        &["over the limit of 10 entries"],
    );
    // Nothing was written by the refused runs.
    assert_eq!(common::cli::listing(&dir), ["x_offsets.npy"]);
    // --max-pairs means nothing without --csr: a usage error.
    let out = run_in(&dir, &["neighbours", "--n", "100", "--max-pairs", "10"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A gas-only snapshot's HSML is each particle's h, as an N×5 file's fifth column is.
#[test]
fn a_gas_snapshot_gives_each_particle_its_hsml() {
    use warpkit::nbody::Particles;
    use warpkit::nbody::snapshot::{
        Format, GasFields, Precision, Snapshot, header_for, write_gadget,
    };
    let dir = scratch("ngb-snapshot-h");
    let n = 400;
    let u = uniform(11, 4 * n);
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            let r = &u[4 * i..4 * i + 4];
            vec![r[0], r[1], r[2], 1.0, 0.1 + 0.2 * r[3]]
        })
        .collect();
    let mut s = Snapshot {
        particles: Particles {
            pos: rows.iter().map(|r| [r[0], r[1], r[2]]).collect(),
            vel: vec![[0.0; 3]; n],
            mass: vec![1.0; n],
            id: (1..=n as u64).collect(),
            ptype: vec![0; n],
        },
        gas: Some(GasFields {
            u: vec![1.0; n],
            hsml: rows.iter().map(|r| r[4]).collect(),
            ..Default::default()
        }),
        ..Default::default()
    };
    s.header = header_for(&s);
    write_gadget(
        &dir.join("gas.gadget"),
        &s,
        Format::Gadget2,
        Precision::Double,
    )
    .unwrap();
    let out = run_in(&dir, &["neighbours", "--input", "gas.gadget", "--csr", "g"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let h: Vec<f64> = rows.iter().map(|r| r[4] as f32 as f64).collect();
    assert_lists(
        &read_i64(&dir.join("g_offsets.npy")),
        &read_i64(&dir.join("g_indices.npy")),
        &rows,
        |i, _| h[i],
    );
    // The file's h and --h together: refused, as for an N×5 file.
    fails(
        &dir,
        &["neighbours", "--input", "gas.gadget", "--h", "0.1"],
        &["HSML", "drop --h"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
