//! Bad input on the command line, continued from `tests/bad_input.rs` (the adversarial sweep of
//! the CPU backend): counts before generation, options of `neighbours`, `combined` and `sbh`,
//! outputs that would replace inputs or other outputs, runs refused before their work.

mod common;

use common::cli::{fails, listing, run_in, scratch};

/// Counts are checked before a scene, sources or queries of that size are generated: `--n` near
/// usize::MAX panicked (capacity overflow) in `neighbours`, `combined` and `sbh`, 2·10^9 aborted
/// in the allocator there and in `nbody`.
#[test]
fn counts_checked_before_generation() {
    let dir = scratch("counts");
    let huge = "18446744073709551615";
    for args in [
        &["neighbours", "--n", huge][..],
        &["neighbours", "--n", "2000000000"],
        &["combined", "--n", huge],
        &["combined", "--n", "2000000000"],
        &["sbh", "--m", huge, "--grid", "4"],
        &["sbh", "--m", "2000000000", "--grid", "4"],
    ] {
        fails(&dir, args, &["exceeds the 2^30 - 1 bodies"]);
    }
    fails(
        &dir,
        &["sbh", "--m", "512", "--grid", "3000000"],
        &["--grid 3000000: 3000000³ queries exceed"],
    );
    fails(
        &dir,
        &["sbh", "--m", "512", "--random", huge],
        &["--random 18446744073709551615: queries exceed"],
    );
    // About 250 GB by the estimate.
    let avail = warpkit::backend::available_memory().unwrap_or(usize::MAX);
    if avail < 200 << 30 {
        fails(
            &dir,
            &[
                "nbody",
                "--ic",
                "plummer",
                "--n",
                "1000000000",
                "--out",
                "o",
            ],
            &["ic.n = 1000000000 needs about", "MiB of memory"],
        );
        assert!(!dir.join("o").exists());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `neighbours` and `combined` take negative numbers as values and refuse them with exit code 1
/// (not clap's "unexpected argument", exit code 2); a bad `--neighbours` is named as such, not
/// as the h it gives; `combined --repeats 0` is refused as elsewhere; `sbh --samples` is capped
/// (S near 2^32 wrapped 3S and ran for hours on a 4³ grid).
#[test]
fn sph_and_sbh_options_validated() {
    let dir = scratch("sph-opts");
    let small = ["--n", "512"];
    for (cmd, extra, want) in [
        ("neighbours", &["--h", "-1"][..], "h[0] = -1"),
        ("neighbours", &["--neighbours", "0"], "target 0 ± 2"),
        ("neighbours", &["--neighbours", "-5"], "target -5"),
        ("neighbours", &["--neighbours", "32", "--tol", "-1"], "± -1"),
        ("combined", &["--h", "-1"], "h[0] = -1"),
        ("combined", &["--neighbours", "0"], "target 0 ± 2"),
        ("combined", &["--theta", "-1"], "θ = -1"),
        ("combined", &["--eps", "-1"], "ε = -1"),
        ("combined", &["--repeats", "0"], "--repeats 0"),
    ] {
        fails(&dir, &[&[cmd][..], &small, extra].concat(), &[want]);
    }
    fails(
        &dir,
        &[
            "sbh",
            "--m",
            "512",
            "--grid",
            "4",
            "--samples",
            "4294967295",
        ],
        &["S = 4294967295", "1..=4096"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `gravity --output` naming the `--input` file is refused (it silently replaced the bodies by
/// the accelerations); coordinates whose root box overflows float32 are refused (they gave NaN
/// accelerations, silently), and so are coincident bodies at ε = 0 (infinite forces).
#[test]
fn gravity_input_kept_and_far_bodies_refused() {
    let dir = scratch("same");
    let rows = [0.0f32, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0];
    warpkit::bh::npy::write_f32(&dir.join("b.npy"), &rows, 4).unwrap();
    let before = std::fs::read(dir.join("b.npy")).unwrap();
    for out in ["b.npy", "./b.npy"] {
        fails(
            &dir,
            &["gravity", "--input", "b.npy", "--output", out],
            &["is the --input file"],
        );
    }
    assert_eq!(std::fs::read(dir.join("b.npy")).unwrap(), before);
    let far = [3e38f32, 0.0, 0.0, 1.0, -3e38, 0.0, 0.0, 1.0];
    warpkit::bh::npy::write_f32(&dir.join("far.npy"), &far, 4).unwrap();
    let msg = fails(
        &dir,
        &["gravity", "--input", "far.npy", "--output", "a.npy"],
        &[
            "body 0 has a coordinate beyond",
            "x = 3e38, y = 0, z = 0, m = 1",
        ],
    );
    // The values as a user reads them, not a Rust dump of the type.
    assert!(!msg.contains("Body {"), "{msg}");
    assert!(!dir.join("a.npy").exists());
    // Coincident bodies (−0 and +0 alike) without softening: infinite forces, refused; with
    // softening they are fine.
    let twins = [
        0.5f32, 0.0, 1.0, 1.0, 2.0, 0.0, 0.0, 1.0, 0.5, -0.0, 1.0, 3.0,
    ];
    warpkit::bh::npy::write_f32(&dir.join("twins.npy"), &twins, 4).unwrap();
    fails(
        &dir,
        &[
            "gravity",
            "--input",
            "twins.npy",
            "--eps",
            "0",
            "--output",
            "a.npy",
        ],
        &["bodies 0 and 2 are at the same point and ε = 0"],
    );
    assert!(!dir.join("a.npy").exists());
    let out = run_in(
        &dir,
        &[
            "gravity",
            "--input",
            "twins.npy",
            "--eps",
            "0.01",
            "--check",
            "0",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A file where the output's directory should be: named as such.
    fails(
        &dir,
        &["gravity", "--n", "512", "--output", "b.npy/a.npy"],
        &["b.npy is not a directory"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `nbody --restart` from a snapshot with gas (type 0), which warpkit's snapshots cannot hold,
/// is refused before the run (it ran to the end and failed at the final snapshot), and a
/// previous run's config.toml in the output directory is kept.
#[test]
fn nbody_gas_restart_refused_before_the_run() {
    use warpkit::nbody::snapshot::{Format, Precision, Snapshot, header_for, write_gadget};
    let dir = scratch("gas");
    let base = ["nbody", "--ic", "plummer", "--n", "16", "--t-end", "0.02"];
    let out = run_in(
        &dir,
        &[&base[..], &["--dt", "0.01", "--out", "run"]].concat(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config = std::fs::read(dir.join("run/config.toml")).unwrap();
    // Two dark-matter particles written as format 1, then relabelled as gas in the header
    // (npart and massarr of types 0 and 1 swapped): the writer itself refuses gas.
    let mut s = Snapshot::default();
    s.particles.pos = vec![[0.0; 3], [1.0, 0.0, 0.0]];
    s.particles.vel = vec![[0.0; 3]; 2];
    s.particles.mass = vec![0.5; 2];
    s.particles.id = vec![1, 2];
    s.particles.ptype = vec![1; 2];
    s.header = header_for(&s);
    let gas = dir.join("gas.gadget");
    write_gadget(&gas, &s, Format::Gadget1, Precision::Single).unwrap();
    let mut b = std::fs::read(&gas).unwrap();
    let swap = |b: &mut Vec<u8>, at: usize, w: usize| {
        let t: Vec<u8> = b[at..at + w].to_vec();
        b.copy_within(at + w..at + 2 * w, at);
        b[at + w..at + 2 * w].copy_from_slice(&t);
    };
    swap(&mut b, 4, 4);
    swap(&mut b, 4 + 24, 8);
    std::fs::write(&gas, &b).unwrap();
    let err = fails(
        &dir,
        &[
            "nbody",
            "--restart",
            "gas.gadget",
            "--t-end",
            "0.02",
            "--out",
            "run",
            "--overwrite",
        ],
        &["gas particles (type 0)"],
    );
    assert!(!err.contains("step"), "{err}");
    assert_eq!(std::fs::read(dir.join("run/config.toml")).unwrap(), config);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A second run (here a restart from the first's final snapshot) into the first's output
/// directory is refused before anything is written, naming what is there; the first run's
/// diagnostics stay as they were. With `--overwrite` it runs and replaces them.
#[test]
fn nbody_refuses_a_previous_runs_directory() {
    let dir = scratch("again");
    let args = [
        "nbody", "--ic", "plummer", "--n", "16", "--t-end", "0.02", "--dt", "0.01",
    ];
    let out = run_in(&dir, &[&args[..], &["--out", "run"]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let diagnostics = std::fs::read(dir.join("run/diagnostics.csv")).unwrap();
    let config = std::fs::read(dir.join("run/config.toml")).unwrap();
    // A copy: the run's own final snapshot cannot be the input of a run that writes there.
    std::fs::copy(dir.join("run/snapshot_final.gadget"), dir.join("a.gadget")).unwrap();
    let restart = ["nbody", "--restart", "a.gadget", "--t-end", "0.05"];
    let err = fails(
        &dir,
        &[&restart[..], &["--out", "run"]].concat(),
        &["previous run's outputs", "diagnostics.csv", "--overwrite"],
    );
    assert!(err.contains("snapshot_final.gadget"), "{err}");
    assert_eq!(
        std::fs::read(dir.join("run/diagnostics.csv")).unwrap(),
        diagnostics
    );
    assert_eq!(std::fs::read(dir.join("run/config.toml")).unwrap(), config);
    let out = run_in(
        &dir,
        &[&restart[..], &["--out", "run", "--overwrite"]].concat(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(
        std::fs::read(dir.join("run/diagnostics.csv")).unwrap(),
        diagnostics
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `nbody --out .` writes into that directory, not into `./nbody-out` (a path without a file
/// name fell back to the default name).
#[test]
fn nbody_out_dot_is_that_directory() {
    let dir = scratch("dot");
    let args = ["nbody", "--ic", "plummer", "--n", "16", "--t-end", "0.02"];
    let out = run_in(&dir, &[&args[..], &["--dt", "0.01", "--out", "."]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.join("config.toml").exists() && dir.join("snapshot_final.gadget").exists());
    assert!(!dir.join("nbody-out").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A mesh node that no hexahedron uses has no stiffness: the error says so (it named only a
/// DOF's zero diagonal).
#[test]
fn fem_unused_node_named() {
    let dir = scratch("fem-unused");
    let msh = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$PhysicalNames\n2\n2 8 \"fixed\"\n\
               2 9 \"load\"\n$EndPhysicalNames\n$Nodes\n9\n9 5 5 5\n1 0 0 0\n2 1 0 0\n\
               3 1 1 0\n4 0 1 0\n5 0 0 1\n6 1 0 1\n7 1 1 1\n8 0 1 1\n$EndNodes\n$Elements\n3\n\
               1 5 2 7 1 1 2 3 4 5 6 7 8\n2 3 2 8 1 1 4 8 5\n3 3 2 9 1 2 3 7 6\n$EndElements\n";
    std::fs::write(dir.join("m.msh"), msh).unwrap();
    fails(
        &dir,
        &[
            "fem",
            "--mesh",
            "m.msh",
            "--traction",
            "load",
            "0",
            "0",
            "-1",
        ],
        &["(node 0)", "no element uses"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A load whose vector's norm overflows float64 is named as such (CG's NaN curvature read as
/// "singular or indefinite (missing Dirichlet conditions?)").
#[test]
fn fem_load_overflow_named() {
    let dir = scratch("fem-overflow");
    fails(
        &dir,
        &["fem", "--cells", "4", "2", "2", "--load", "1e300"],
        &["load vector's norm is inf"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `repro --tar` naming DIR, `all`'s index or a file among a reproduction's outputs is refused
/// before the sweep (the archive, packed last, replaced `data.csv`; as DIR it failed after the
/// whole sweep), and a `--repeats` near usize::MAX is refused (it panicked reserving the
/// timings).
#[test]
fn repro_tar_and_repeats_checked() {
    let dir = scratch("tar");
    let base = ["repro", "sort", "--n", "1024", "--out", "r"];
    for tar in ["r", "r/sort/data.csv"] {
        fails(
            &dir,
            &[&base[..], &["--tar", tar]].concat(),
            &["--tar", "must not be DIR"],
        );
    }
    // `all` writes DIR/README.md last: an archive there would replace it (or be replaced).
    fails(
        &dir,
        &["repro", "all", "--out", "r", "--tar", "r/README.md"],
        &["--tar", "must not be DIR"],
    );
    fails(
        &dir,
        &[&base[..], &["--repeats", "18446744073709551615"]].concat(),
        &["--repeats 18446744073709551615: at most"],
    );
    assert_eq!(listing(&dir).len(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}
