//! The command line without a GPU: `info`, `selftest`, `gravity` with .npy in and out, and the
//! printed rate. These run in CI.

mod common;

use std::process::Command;

fn driver_present() -> bool {
    // SAFETY: only tries to load the library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}
#[test]
fn cli_info_and_selftest_work_without_asking_for_a_gpu() {
    let exe = common::warpkit_exe();
    let out = Command::new(&exe)
        .args(["--backend", "cpu", "info", "--kernels"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("backend: cpu") && stdout.contains("probe_vote"),
        "{stdout}"
    );

    let out = Command::new(&exe).args(["info"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if !driver_present() {
        assert!(String::from_utf8_lossy(&out.stderr).contains("using the CPU backend"));
        let out = Command::new(&exe)
            .args(["--backend", "gpu", "info"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("no usable CUDA driver"));
    }

    let out = Command::new(&exe)
        .args(["selftest", "--n", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--n must be"));
}

/// `info --keys` prints the case-file reference (docs/keys.md whole, or one command's part),
/// without a device, and refuses a command without a case file, naming those with one.
#[test]
fn cli_info_keys_prints_the_case_file_reference() {
    let exe = common::warpkit_exe();
    let keys = |args: &[&str]| Command::new(&exe).arg("info").args(args).output().unwrap();
    let all = keys(&["--keys"]);
    assert!(
        all.status.success(),
        "{}",
        String::from_utf8_lossy(&all.stderr)
    );
    assert_eq!(
        String::from_utf8(all.stdout).unwrap(),
        warpkit::config_keys::page()
    );
    let sph = keys(&["--keys", "sph"]);
    assert!(sph.status.success());
    let text = String::from_utf8(sph.stdout).unwrap();
    assert_eq!(
        Some(text.as_str()),
        warpkit::config_keys::command_page("sph").as_deref()
    );
    assert!(
        text.contains("| `kernel` |") && !text.contains("warpkit nbody"),
        "{text}"
    );
    let bad = keys(&["--keys", "gravity"]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("[possible values: all, nbody, fem, sph, planet, impact]"),
        "{err}"
    );
}

#[test]
fn cli_gravity_reads_and_writes_npy_in_input_order() {
    use warpkit::bh::npy;
    let dir = std::env::temp_dir().join(format!("warpkit-cli-npy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Two bodies on the x axis: accelerations are known exactly.
    let input = dir.join("in.npy");
    npy::write_f32(
        &input,
        &[0.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 5.0, 5.0, 5.0, 1e-9],
        4,
    )
    .unwrap();
    let output = dir.join("acc.npy");
    let out = Command::new(common::warpkit_exe())
        .args([
            "--backend",
            "cpu",
            "gravity",
            "--eps",
            "0",
            "--mode",
            "random",
            "--check",
            "0",
        ])
        .arg("--input")
        .arg(&input)
        .arg("--output")
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&output).unwrap();
    let data: Vec<f32> = bytes[bytes.len() - 36..]
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    // Body 0 feels 3/4 toward +x, body 1 feels 1/4 toward -x (the third's pull is ~1e-11).
    assert!(
        (data[0] - 0.75).abs() < 1e-6 && (data[3] + 0.25).abs() < 1e-6,
        "{data:?}"
    );
    let bad = Command::new(common::warpkit_exe())
        .args(["--backend", "cpu", "gravity", "--theta=-1", "--n", "10"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("θ = -1"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `warpkit gravity` prints the counted rate: interactions/s and TFLOP/s for the group
/// kernels (with the quadrupole share when cells carry quadrupoles), and says the vote kernel's
/// are not known.
#[test]
fn gravity_prints_the_counted_rate() {
    let run = |extra: &[&str]| {
        let out = Command::new(common::warpkit_exe())
            .args([
                "--backend",
                "cpu",
                "gravity",
                "--n",
                "3000",
                "--scene",
                "plummer",
            ])
            .args(["--check", "0"])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .find(|l| l.starts_with("gravity rate: "))
            .unwrap_or_else(|| panic!("no rate line:\n{text}"))
            .to_string()
    };
    let group = run(&["--traversal", "group2"]);
    assert!(
        group.contains("interactions/s") && group.contains("TFLOP/s counted"),
        "{group}"
    );
    assert!(!group.contains("with quadrupoles"), "{group}");
    let quad = run(&["--traversal", "group2", "--quadrupole"]);
    assert!(quad.contains("% with quadrupoles"), "{quad}");
    let vote = run(&["--traversal", "vote"]);
    assert!(
        vote.contains("bodies/s") && vote.contains("not known"),
        "{vote}"
    );
}
