//! The FEM and stochastic Barnes–Hut reproductions end to end on the CPU backend, and their bad
//! parameters.

use super::*;

/// `warpkit repro fem --backend cpu` at tiny sizes: every file, the tables with their columns,
/// the paper's numbers beside ours, one CSV row per (path, size).
#[test]
fn repro_fem_end_to_end() {
    let out = scratch("fem").join("r");
    let o = warpkit(&[
        "--backend",
        "cpu",
        "repro",
        "fem",
        "--sizes",
        "3,2",
        "--repeats",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = out.join("fem");
    let md = read(&dir.join("table.md"));
    for needle in [
        "## Assembly time (ms)",
        "| strategy | precision | 2³ (81 DOF) | 3³ (192 DOF) |",
        "| strategy | 2³ | 3³ | paper, K40 |",
        "| Jacobian method | ours, 4 threads/row (ms) | ours, 4: / shuffle | ours, 8 threads/row (ms) \
         | ours, 8: / shuffle | paper, K40, 4 threads/row (s) | paper: / shuffle |",
        "| atomics | – | – | – | – | 1.39 | 1.350 |",
        "| coloured | atomic (no colouring) | mesh | colours | coloured ms | atomic ms | atomic / coloured |",
        "| strategy | precision | mesh | relative Frobenius error | bound | within |",
        "## Achieved bandwidth against the CSR traffic floor",
        "| mesh | elements | nodes | nnz | RMW updates | RMW floor (ms) | write-once floor (ms) | fastest (ms) |",
        "| 2³ (81 DOF) | 8 | 27 | 3,087 | 4,608 | – | – | – |",
        "| `cpu-coloured f32` | – | – | – |",
        "Bytes = a model of the compulsory DRAM traffic",
        "Tesla K40",
        "8.2",
    ] {
        assert!(md.contains(needle), "table.md lacks {needle:?}:\n{md}");
    }
    assert!(!md.contains("| NO |"), "a correctness check failed:\n{md}");
    let rows = parse_csv(&read(&dir.join("data.csv")));
    assert_eq!(
        rows.len(),
        1 + 4 * 2,
        "header + 4 paths × 2 sizes: {rows:?}"
    );
    assert_eq!(rows[0][1], "strategy");
    assert_eq!(rows[1][1], "cpu-coloured");
    assert_eq!(rows[1][3], "2", "sizes ascending");
    for r in &rows[1..] {
        let ms: f64 = r[11].parse().unwrap();
        let diff: f64 = r[15].parse().unwrap();
        assert!(ms > 0.0 && diff < 1e-5, "{r:?}");
    }
    let meta: serde_json::Value = serde_json::from_str(&read(&dir.join("meta.json"))).unwrap();
    assert_eq!(meta["status"], "complete");
    assert_eq!(meta["parameters"]["sizes"], serde_json::json!([2, 3]));
    assert_eq!(meta["correctness"].as_array().unwrap().len(), 5);
    assert_figure(&dir, "time-cpu", "Assembly time against DOF");
    assert_figure(&dir, "speedup", "Speedup over");
}

/// Bad `--sizes`: each a clear error; nothing is measured.
#[test]
fn repro_fem_bad_sizes_are_clear_errors() {
    let root = scratch("fem-bad");
    let out = root.to_str().unwrap();
    for (args, want) in [
        (
            vec!["--sizes", "0"],
            "invalid --sizes 0: a mesh needs at least one element",
        ),
        (vec!["--sizes", "4,300"], "invalid --sizes 300"),
        (vec!["--n", "64"], "repro fem takes --sizes"),
    ] {
        let mut a = vec!["--backend", "cpu", "repro", "fem", "--out", out];
        a.extend(args);
        let o = warpkit(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(want), "{a:?}: {err}");
    }
    let o = warpkit(&[
        "--backend",
        "cpu",
        "repro",
        "theta",
        "--sizes",
        "4",
        "--out",
        out,
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("--sizes is for repro fem"),
        "{err}"
    );
    assert!(!root.join("fem").join("data.csv").exists());
}

/// `warpkit repro sbh --backend cpu` at tiny sizes: every file, the table's columns beside the
/// authors' and the paper's numbers, the convergence rows and the computed verdict.
#[test]
fn repro_sbh_end_to_end() {
    let out = scratch("sbh").join("r");
    let o = warpkit(&[
        "--backend",
        "cpu",
        "repro",
        "sbh",
        "--n",
        "1024",
        "--grid",
        "6",
        "--repeats",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = out.join("sbh");
    let md = read(&dir.join("table.md"));
    for needle in [
        "| M | brute force ms | BH β=2 ms, grid / shuffled | BH mean / median / max error (grid) \
         | SBH S=1 ms, grid / shuffled | SBH mean / median / max error (grid) | SBH errors (shuffled) \
         | BH errors (grid nodes) | SBH errors (grid nodes) | BH β=2 row warps ms, grid / shuffled \
         | BH row warps errors (grid) | SBH S=1 paper's allocation ms, grid / shuffled \
         | its errors (grid) | BH β=2 + quadrupoles ms, grid / shuffled | its errors (grid) |",
        "Quadrupoles (ours, not the paper's)",
        "**grid queries, BH with quadrupoles.**",
        "| grid | BH β = 6 + quadrupoles |",
        "Row warps: the same Barnes–Hut kernel",
        "Grid nodes: the same sources and methods",
        "| 2^10 |",
        "## The authors' CUDA code on the H200",
        "| 2^22 | 3248.0 | 170.0 / 1171.0 |",
        "## The paper (its GPU, grid queries)",
        "## At equal median error, which is faster?",
        "**grid queries.**",
        "**random queries.**",
        "At SBH S = 1's median error",
        "| random | SBH S = 64 |",
        "| grid | BH β = 6 |",
    ] {
        assert!(md.contains(needle), "table.md lacks {needle:?}:\n{md}");
    }
    let rows = parse_csv(&read(&dir.join("data.csv")));
    // Header, brute + 2 orders × 5 methods (BH, BH in row warps, BH with quadrupoles, SBH, SBH
    // with the paper's allocation) + 2 methods on the grid's nodes, then 2 sets × (7 S + 8 β
    // with monopoles + 8 β with quadrupoles).
    assert_eq!(rows.len(), 1 + 13 + 2 * 23, "{rows:?}");
    // Quadrupoles refine the same cells: lower errors at the same β on every row pair.
    let err_of = |r: &Vec<String>| r[11].parse::<f64>().unwrap();
    for q in rows.iter().filter(|r| r[6] == "bh-quad") {
        let mono = rows
            .iter()
            .find(|r| r[6] == "bh" && r[1] == q[1] && r[3] == q[3] && r[4] == q[4] && r[7] == q[7])
            .unwrap();
        assert!(err_of(q) < err_of(mono), "{q:?} vs {mono:?}");
    }
    assert!(
        rows.iter().filter(|r| r[6] == "sbh-paper").count() == 2,
        "{rows:?}"
    );
    assert!(
        rows.iter().filter(|r| r[6] == "bh-rows").count() == 2,
        "{rows:?}"
    );
    assert!(
        rows.iter().filter(|r| r[3] == "nodes").count() == 2,
        "{rows:?}"
    );
    assert_eq!(rows[0][6], "method");
    assert_eq!(rows[0][12], "median_abs_err");
    for r in &rows[2..] {
        let (ms, median): (f64, f64) = (r[10].parse().unwrap(), r[12].parse().unwrap());
        assert!(ms > 0.0 && median > 0.0 && median < 0.1, "{r:?}");
    }
    let meta: serde_json::Value = serde_json::from_str(&read(&dir.join("meta.json"))).unwrap();
    assert_eq!(meta["status"], "complete");
    assert_eq!(meta["parameters"]["m"], serde_json::json!([1024]));
    assert_eq!(meta["parameters"]["grid"], 6);
    assert_figure(&dir, "convergence-grid", "Error against time");
    assert_figure(&dir, "convergence-random", "random queries");
    assert_figure(&dir, "slice-bh", "BH β = 2");
    assert_figure(&dir, "slice-sbh", "SBH S = 1");
}

/// Bad `--grid` and `--n` for `repro sbh`: clear errors, nothing measured.
#[test]
fn repro_sbh_bad_parameters_are_clear_errors() {
    let root = scratch("sbh-bad");
    let out = root.to_str().unwrap();
    for (name, args, want) in [
        (
            "sbh",
            vec!["--grid", "1"],
            "invalid --grid 1: the query grid needs at least 2 cells per side",
        ),
        (
            "sbh",
            vec!["--grid", "5000"],
            "invalid --grid 5000: at most 1024",
        ),
        ("sbh", vec!["--n", "1"], "invalid --n 1"),
        ("theta", vec!["--grid", "8"], "--grid is for repro sbh"),
    ] {
        let mut a = vec!["--backend", "cpu", "repro", name, "--out", out];
        a.extend(args);
        let o = warpkit(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(want), "{a:?}: {err}");
    }
    assert!(!root.join("sbh").join("data.csv").exists());
}
