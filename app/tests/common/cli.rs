//! Running the `warpkit` executable on bad input (`tests/bad_input*.rs`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Runs `warpkit --backend cpu ARGS` in `dir`, killed after 60 s (a hang is a failure).
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(super::warpkit_exe())
        .args(["--backend", "cpu"])
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("warpkit {args:?} hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("warpkit-bad-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A run that must fail with exit code 1; its standard error, which must contain every `want`.
pub fn fails(dir: &Path, args: &[&str], want: &[&str]) -> String {
    let out = run_in(dir, args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    for w in want {
        assert!(err.contains(w), "{args:?}: missing {w:?} in {err}");
    }
    err
}

/// The files left in `dir`, sorted.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Starts `warpkit ARGS` in `dir`, waits until `diagnostics` (relative to `dir`) holds three
/// lines, sends SIGINT, and checks that the run ends with exit code 130 and says it was
/// interrupted; returns its standard error.
pub fn interrupt(dir: &Path, args: &[&str], diagnostics: &str) -> String {
    let child = Command::new(super::warpkit_exe())
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let csv = dir.join(diagnostics);
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
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    err
}
