//! Bad input on the command line: each case is a clear error with exit code 1, no
//! panic, hang or abort, and no file written half. CPU backend; these run in CI.

mod common;

use common::cli::{fails, listing, run_in, scratch};
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn huge_npy_shape() {
    let dir = scratch("npy");
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }\n";
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&[0; 64]);
    std::fs::write(dir.join("big.npy"), &bytes).unwrap();
    fails(
        &dir,
        &["gravity", "--input", "big.npy"],
        &["big.npy", "data bytes"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gravity_n_limits() {
    let dir = scratch("n");
    fails(
        &dir,
        &["gravity", "--n", "18446744073709551615"],
        &["N = 18446744073709551615 exceeds"],
    );
    fails(&dir, &["gravity", "--n", "2000000000"], &["exceeds"]);
    fails(&dir, &["gravity", "--n", "0"], &["N = 0"]);
    // Within the index limit but about 90 GiB: refused with the size where the host lacks it.
    let avail = warpkit::backend::available_memory().unwrap_or(usize::MAX);
    if avail < 80 << 30 {
        fails(
            &dir,
            &["gravity", "--n", "1000000000"],
            &["needs about", "MiB of memory"],
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fem_cells_overflow_and_memory() {
    let dir = scratch("cells");
    fails(
        &dir,
        &["fem", "--cells", "18446744073709551615", "1", "1"],
        &["more than 2^32 nodes"],
    );
    // 10^9 elements: about 3 TB by the estimate, on any machine.
    fails(
        &dir,
        &["fem", "--cells", "1000", "1000", "1000"],
        &["need about", "MiB of memory"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn output_paths_checked_before_the_work() {
    let dir = scratch("out");
    std::fs::create_dir_all(dir.join("adir")).unwrap();
    let small = ["--n", "512", "--check", "0"];
    // A directory as the file: refused first, nothing (no `*.partial`) left beside it.
    let err = fails(
        &dir,
        &[&["gravity", "--output", "adir"][..], &small].concat(),
        &["adir is a directory"],
    );
    assert!(!err.contains("Barnes"), "{err}");
    for args in [
        &["gravity", "--output", "nodir/acc.npy", "--n", "512"][..],
        &["fem", "--cells", "4", "2", "2", "--vtu", "nodir/u.vtu"],
        &["fem", "--cells", "4", "2", "2", "--mtx", "nodir/k.mtx"],
        &[
            "repro",
            "sort",
            "--n",
            "1024",
            "--out",
            "r",
            "--tar",
            "nodir/x.tar",
        ],
    ] {
        let out = run_in(&dir, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("the directory nodir does not exist"),
            "{args:?}: {err}"
        );
        // Refused before the work: nothing printed on stdout.
        assert!(
            out.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    assert_eq!(listing(&dir), ["adir"]);
    assert_eq!(listing(&dir.join("adir")).len(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The OS error once, not repeated by each layer that quotes it.
#[test]
fn os_error_printed_once() {
    let dir = scratch("once");
    let err = fails(
        &dir,
        &["gravity", "--input", "missing.npy"],
        &["missing.npy"],
    );
    assert_eq!(err.matches("(os error 2)").count(), 1, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn contradictory_or_ignored_options() {
    let dir = scratch("opts");
    fails(
        &dir,
        &["gravity", "--n", "512", "--quadrupole"],
        &["--traversal group or group2"],
    );
    for args in [
        &["gravity", "--n", "512", "--repeats", "0"][..],
        &["sbh", "--m", "512", "--repeats", "0"],
        &["repro", "sort", "--n", "512", "--repeats", "0"],
    ] {
        fails(&dir, args, &["--repeats 0"]);
    }
    fails(
        &dir,
        &[
            "gravity",
            "--n",
            "512",
            "--traversal",
            "group",
            "--alpha",
            "0.001",
        ],
        &["group2"],
    );
    fails(
        &dir,
        &[
            "gravity",
            "--n",
            "512",
            "--traversal",
            "group2",
            "--alpha",
            "nan",
        ],
        &["α"],
    );
    fails(&dir, &["nbody", "--n", "64", "--alpha", "-1"], &["alpha"]);
    fails(
        &dir,
        &["sbh", "--m", "512", "--grid", "4", "--levels", "3"],
        &["levels = 3"],
    );
    fails(
        &dir,
        &[
            "repro",
            "sort",
            "--n",
            "1024",
            "--out",
            "r",
            "--repeats",
            "0",
        ],
        &["--repeats 0"],
    );
    assert!(!dir.join("r").exists());
    fails(
        &dir,
        &["fem", "--cells", "4", "2", "2", "--load", "nan"],
        &["load = NaN"],
    );
    fails(
        &dir,
        &["fem", "--cells", "4", "2", "2", "--load", "0"],
        &["load = 0"],
    );
    // --strategy on the CPU runs (the host assembly) but says that it does not apply.
    let out = run_in(
        &dir,
        &["fem", "--cells", "4", "2", "2", "--strategy", "warp8"],
    );
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("warning: --strategy warp8"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Negative numbers are parsed as values and refused by validation (exit code 1), not taken
/// for unknown options (clap's exit code 2).
#[test]
fn negative_numbers_validated() {
    let dir = scratch("neg");
    fails(
        &dir,
        &["gravity", "--n", "512", "--theta", "-1"],
        &["θ = -1"],
    );
    fails(
        &dir,
        &["gravity", "--n", "512", "--eps", "-0.1"],
        &["ε = -0.1"],
    );
    fails(
        &dir,
        &["sbh", "--m", "512", "--grid", "4", "--beta", "-2"],
        &["β = -2"],
    );
    fails(
        &dir,
        &["fem", "--cells", "4", "2", "2", "--poisson", "-1.5"],
        &["-1.5"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `repro --help` names the sizes the code uses.
#[test]
fn repro_help_matches_defaults() {
    use warpkit_app::repro::{fem, sbh};
    let out = Command::new(common::warpkit_exe())
        .args(["repro", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let list = |v: &[usize]| {
        v.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    for want in [
        format!(
            "default {} on the GPU, {} on the CPU",
            list(&fem::GPU_SIZES),
            list(&fem::CPU_SIZES)
        ),
        format!(
            "default {} on the GPU, {} on the CPU",
            sbh::GPU_GRID,
            sbh::CPU_GRID
        ),
        format!("uses at most {}", sbh::CPU_CONV_GRID),
    ] {
        assert!(help.contains(&want), "repro --help lacks {want:?}: {help}");
    }
}

/// Ctrl-C during a sweep: the rows measured so far, then the table, figures and meta.json marked
/// interrupted; exit code 130 (an interrupted run, not an error).
#[test]
fn ctrl_c_finishes_what_was_measured() {
    let dir = scratch("sigint");
    let mut child = Command::new(common::warpkit_exe())
        .args([
            "--backend",
            "cpu",
            "repro",
            "theta",
            "--n",
            "32768",
            "--out",
            "r",
        ])
        .current_dir(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let csv = dir.join("r/theta/data.csv");
    let start = Instant::now();
    // The header and one measured row.
    while std::fs::read_to_string(&csv).map_or(0, |t| t.lines().count()) < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no row measured"
        );
        assert!(child.try_wait().unwrap().is_none(), "ended before a row");
        std::thread::sleep(Duration::from_millis(20));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let rows = std::fs::read_to_string(&csv).unwrap().lines().count() - 1;
    assert!((1..8).contains(&rows), "{rows} rows");
    let table = std::fs::read_to_string(dir.join("r/theta/table.md")).unwrap();
    assert!(table.contains("Interrupted"), "{table}");
    let meta = std::fs::read_to_string(dir.join("r/theta/meta.json")).unwrap();
    assert!(meta.contains(r#""status": "interrupted""#), "{meta}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `fem --mesh`: two hexahedra along x with the physical surfaces "fixed" (x = 0) and "load"
/// (x = 2) and the volume "solid" (Gmsh 4.1 ASCII).
const TWO_HEX_MSH: &str = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$PhysicalNames\n3\n\
2 8 \"fixed\"\n2 9 \"load\"\n3 7 \"solid\"\n$EndPhysicalNames\n$Entities\n0 0 2 1\n\
1 0 0 0 0 1 1 1 8 0\n2 2 0 0 2 1 1 1 9 0\n3 0 0 0 2 1 1 1 7 2 1 2\n$EndEntities\n\
$Nodes\n1 12 1 12\n3 3 0 12\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n\
0 0 0\n0 1 0\n0 1 1\n0 0 1\n1 0 0\n1 1 0\n1 1 1\n1 0 1\n2 0 0\n2 1 0\n2 1 1\n2 0 1\n$EndNodes\n\
$Elements\n3 4 1 4\n2 1 3 1\n1 1 2 3 4\n2 2 3 1\n2 9 10 11 12\n3 3 5 2\n\
3 1 5 6 2 4 8 7 3\n4 5 9 10 6 8 12 11 7\n$EndElements\n";

/// [`TWO_HEX_MSH`] with sparse element tags, its second hexahedron (tag 1042) inside out: its
/// top and bottom faces swapped.
fn inverted_msh() -> String {
    let good = "3 3 5 2\n3 1 5 6 2 4 8 7 3\n4 5 9 10 6 8 12 11 7\n";
    let bad = "3 3 5 2\n1041 1 5 6 2 4 8 7 3\n1042 8 12 11 7 5 9 10 6\n";
    assert!(TWO_HEX_MSH.contains(good));
    TWO_HEX_MSH
        .replace(good, bad)
        .replace("3 4 1 4\n", "3 4 1 1042\n")
}

#[test]
fn fem_errors_name_gmsh_tags() {
    let dir = scratch("fem-tags");
    std::fs::write(dir.join("inv.msh"), inverted_msh()).unwrap();
    let args = [
        "fem",
        "--mesh",
        "inv.msh",
        "--traction",
        "load",
        "0",
        "0",
        "-1",
    ];
    let err = fails(
        &dir,
        &args,
        &[
            "Gmsh element 1042 in physical group \"solid\" is inverted",
            "det J",
        ],
    );
    // Not the internal index (1), nor the 1-based position (2).
    assert!(
        !err.contains("element 1 ") && !err.contains("element 2"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fem_mesh_names_its_sets() {
    let dir = scratch("fem-mesh");
    std::fs::write(dir.join("m.msh"), TWO_HEX_MSH).unwrap();
    let base = ["fem", "--mesh", "m.msh"];
    let out = run_in(
        &dir,
        &[
            &base[..],
            &["--traction", "load", "0", "0", "-1e6", "--vtu", "u.vtu"],
        ]
        .concat(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("2 hexahedra, 12 nodes") && text.contains("4 clamped nodes, 1 loaded faces"),
        "{text}"
    );
    assert!(std::fs::metadata(dir.join("u.vtu")).unwrap().len() > 1000);
    // Equilibrium: 1e6 per area on the unit face at x = 2, balanced by the clamped face.
    let line = text
        .lines()
        .find(|l| l.starts_with("applied force"))
        .unwrap();
    let nums: Vec<f64> = line
        .split(['(', ')', ',', ' '])
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(nums.len(), 6, "{line}");
    assert!(
        (nums[2] + 1e6).abs() < 1.0 && (nums[5] - 1e6).abs() < 1e-3 * 1e6,
        "{line}"
    );
    fails(
        &dir,
        &[
            &base[..],
            &["--fix", "nope", "--traction", "load", "0", "0", "1"],
        ]
        .concat(),
        &[
            "no physical group \"nope\"",
            "\"fixed\", \"load\", \"solid\"",
        ],
    );
    fails(
        &dir,
        &[&base[..], &["--traction", "solid", "0", "0", "1"]].concat(),
        &["\"solid\" has no quadrangles"],
    );
    fails(&dir, &base, &["no load"]);
    fails(
        &dir,
        &[&base[..], &["--traction", "load", "0", "x", "1"]].concat(),
        &["not 3 finite numbers"],
    );
    std::fs::write(dir.join("m.msh"), &TWO_HEX_MSH[..300]).unwrap();
    fails(
        &dir,
        &[&base[..], &["--traction", "load", "0", "0", "1"]].concat(),
        &["m.msh:"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `fem --case`: a TOML case on the two-hexahedra mesh runs, composes with the command line, and
/// each bad case is a clear error naming its key, with exit code 1 and nothing written.
#[test]
fn fem_case_files() {
    let dir = scratch("fem-case");
    std::fs::write(dir.join("m.msh"), TWO_HEX_MSH).unwrap();
    let good = "mesh = \"m.msh\"\nbody_force = [0.0, 0.0, -1e4]\n\
                [[material]]\ngroup = \"solid\"\nE = 70e9\nnu = 0.33\n\
                [[fixed]]\ngroup = \"fixed\"\ncomponents = \"all\"\n\
                [[traction]]\ngroup = \"load\"\nvector = [0.0, 0.0, -1e6]\n";
    std::fs::write(dir.join("good.toml"), good).unwrap();
    let applied_z = |args: &[&str]| {
        let out = run_in(&dir, args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = text
            .lines()
            .find(|l| l.starts_with("applied force"))
            .unwrap()
            .to_string();
        let nums: Vec<f64> = line
            .split(['(', ')', ',', ' '])
            .filter_map(|w| w.parse().ok())
            .collect();
        assert_eq!(nums.len(), 6, "{line}");
        // Equilibrium: the reaction balances the load.
        assert!((nums[2] + nums[5]).abs() < 1e-6 * nums[2].abs(), "{line}");
        nums[2]
    };
    // Traction 1e6 on the unit face plus the weight 1e4 × 2 of the two unit cubes.
    let z = applied_z(&["fem", "--case", "good.toml", "--vtu", "u.vtu"]);
    assert!((z + 1.02e6).abs() < 1.0, "{z}");
    assert!(std::fs::metadata(dir.join("u.vtu")).unwrap().len() > 1000);
    // --traction adds a set; --body-force replaces the file's.
    let z = applied_z(&[
        "fem",
        "--case",
        "good.toml",
        "--traction",
        "load",
        "0",
        "0",
        "-1e6",
        "--body-force",
        "0",
        "0",
        "0",
    ]);
    assert!((z + 2e6).abs() < 1.0, "{z}");
    std::fs::remove_file(dir.join("u.vtu")).unwrap();
    let before = listing(&dir);
    let bad = [
        (
            good.replace("nu = 0.33", "nu = 0.33\ncolour = 1"),
            "unknown field `colour`",
        ),
        (good.replace("nu = 0.33", "nu = 0.5"), "material[0].poisson"),
        (good.replace("E = 70e9", "E = -1"), "material[0].young"),
        (good.replace("\"solid\"", "\"nope\""), "material[0].group"),
        (
            good.replace("group = \"load\"", "group = \"solid\""),
            "traction[0].group",
        ),
        (good.replace("mesh = \"m.msh\"\n", ""), "no mesh"),
    ];
    for (i, (text, want)) in bad.iter().enumerate() {
        let name = format!("bad{i}.toml");
        std::fs::write(dir.join(&name), text).unwrap();
        fails(&dir, &["fem", "--case", &name, "--vtu", "u.vtu"], &[want]);
        std::fs::remove_file(dir.join(&name)).unwrap();
    }
    fails(
        &dir,
        &[
            "fem",
            "--case",
            "good.toml",
            "--poisson",
            "0.7",
            "--vtu",
            "u.vtu",
        ],
        &["--young/--poisson: Poisson's ratio"],
    );
    fails(&dir, &["fem", "--case", "none.toml"], &["none.toml"]);
    fails(&dir, &["fem", "--fix", "fixed"], &["need --mesh or --case"]);
    assert_eq!(listing(&dir), before);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Without the `hdf5` cargo feature, asking for HDF5 is an error naming the feature.
#[cfg(not(feature = "hdf5"))]
#[test]
fn hdf5_without_the_feature_names_it() {
    let dir = scratch("hdf5");
    let want = ["`hdf5` cargo feature", "--features hdf5"];
    fails(&dir, &["nbody", "--n", "64", "--format", "hdf5"], &want);
    std::fs::write(dir.join("x.hdf5"), b"\x89HDF\r\n\x1a\n not really").unwrap();
    fails(&dir, &["nbody", "--restart", "x.hdf5"], &want);
    fails(&dir, &["gravity", "--input", "x.hdf5"], &want);
    // Told by the signature, whatever the name.
    std::fs::copy(dir.join("x.hdf5"), dir.join("x.snap")).unwrap();
    fails(&dir, &["nbody", "--restart", "x.snap"], &want);
}

/// `fem --bbar` and the locking warning: ν > 0.45 without B-bar warns on stderr and
/// still runs; `--bbar` or the case file's `formulation = "bbar"` silence it; a strategy without
/// a B-bar kernel and an unknown formulation are errors naming them.
#[test]
fn fem_bbar_and_locking_warning() {
    let dir = scratch("fem-bbar");
    let beam = ["fem", "--cells", "10", "1", "2", "--poisson", "0.4999"];
    let run = |extra: &[&str]| {
        let out = run_in(&dir, &[&beam[..], extra].concat());
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert_eq!(out.status.code(), Some(0), "{o}{e}");
        (o, e)
    };
    let (_, err) = run(&[]);
    assert!(
        err.contains("warning: Poisson's ratio 0.4999") && err.contains("--bbar"),
        "{err}"
    );
    let (out, err) = run(&["--bbar"]);
    assert!(!err.contains("warning"), "{err}");
    assert!(out.contains("f64, bbar"), "{out}");
    fails(
        &dir,
        &[&beam[..], &["--bbar", "--strategy", "warp4"]].concat(),
        &["warp4 has no B-bar kernel"],
    );
    std::fs::write(dir.join("m.msh"), TWO_HEX_MSH).unwrap();
    let case = "mesh = \"m.msh\"\nformulation = \"bbar\"\n\
                [default_material]\nE = 1e7\nnu = 0.49\n\
                [[fixed]]\ngroup = \"fixed\"\n\
                [[traction]]\ngroup = \"load\"\nvector = [0.0, 0.0, -1e3]\n";
    std::fs::write(dir.join("bbar.toml"), case).unwrap();
    let out = run_in(&dir, &["fem", "--case", "bbar.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("warning"), "{err}");
    let standard = case.replace("\"bbar\"", "\"standard\"");
    std::fs::write(dir.join("std.toml"), standard).unwrap();
    let out = run_in(&dir, &["fem", "--case", "std.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("warning: Poisson's ratio 0.49"), "{err}");
    std::fs::write(dir.join("bad.toml"), case.replace("\"bbar\"", "\"mixed\"")).unwrap();
    fails(&dir, &["fem", "--case", "bad.toml"], &["formulation"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
