//! The seed's gravity-kernel profile, collected by running Nsight Compute (`ncu`) on warpkit
//! itself: `warpkit repro-target` evaluates one scene twice (a warm-up, then the profiled launch)
//! and ncu reports the metrics of [`super::seed::PROFILE`] for the second `bh_gravity` launch as
//! CSV, which [`parse`] reads.

use super::measure::{Storage, bodies_for, evaluate};
use super::seed;
use std::path::{Path, PathBuf};
use std::process::Command;
use warpkit::backend::Backend;
use warpkit::bh::gpu::BhError;
use warpkit::bh::{Mode, Params, scene};

/// The gravity kernel's entry point, as ncu's `-k` filter names it.
pub const KERNEL: &str = "bh_gravity";

#[derive(Debug, thiserror::Error)]
pub enum NcuError {
    #[error("cannot start {ncu}: {source}")]
    Spawn {
        ncu: PathBuf,
        source: std::io::Error,
    },
    #[error("ncu failed while profiling mode {mode} (status {status}; log {log}): {tail}")]
    Failed {
        mode: &'static str,
        status: String,
        log: PathBuf,
        tail: String,
    },
    #[error("ncu reported no metrics of `{KERNEL}` for mode {mode} (log {log}): {tail}")]
    NoMetrics {
        mode: &'static str,
        log: PathBuf,
        tail: String,
    },
}

/// `ncu` on the PATH (or in /usr/local/cuda/bin), if any.
pub fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/local/cuda/bin")])
        .map(|d| d.join("ncu"))
        .find(|p| p.is_file())
}

/// One metric as ncu reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    pub name: String,
    pub unit: String,
    pub value: String,
}

impl Metric {
    /// The value as a number (ncu groups thousands with commas).
    pub fn number(&self) -> Option<f64> {
        self.value.replace(',', "").trim().parse().ok()
    }

    /// The value in the units the seed uses: ms, GB/s, GHz, %, or as reported.
    pub fn display(&self) -> String {
        let Some(v) = self.number() else {
            return format!("{} {}", self.value, self.unit).trim().to_string();
        };
        match self.unit.as_str() {
            "nsecond" | "ns" => format!("{:.3} ms", v * 1e-6),
            "usecond" | "us" => format!("{:.3} ms", v * 1e-3),
            "msecond" | "ms" => format!("{v:.3} ms"),
            "second" | "s" => format!("{:.3} ms", v * 1e3),
            "byte/second" => format!("{:.2} GB/s", v * 1e-9),
            "Kbyte/second" => format!("{:.2} GB/s", v * 1e-6),
            "Mbyte/second" => format!("{:.2} GB/s", v * 1e-3),
            "Gbyte/second" => format!("{v:.2} GB/s"),
            "Tbyte/second" => format!("{:.2} GB/s", v * 1e3),
            "cycle/second" | "hz" | "Hz" => format!("{:.2} GHz", v * 1e-9),
            "cycle/usecond" | "Mhz" | "MHz" => format!("{:.2} GHz", v * 1e-3),
            "cycle/nsecond" | "Ghz" | "GHz" => format!("{v:.2} GHz"),
            "%" => format!("{v:.2} %"),
            "inst" | "cycle" | "" if v >= 1e6 => format!("{:.3}e9", v * 1e-9),
            u => format!("{v} {u}").trim().to_string(),
        }
    }

    /// Milliseconds, for a duration metric.
    pub fn ms(&self) -> Option<f64> {
        let v = self.number()?;
        Some(match self.unit.as_str() {
            "nsecond" | "ns" => v * 1e-6,
            "usecond" | "us" => v * 1e-3,
            "msecond" | "ms" => v,
            "second" | "s" => v * 1e3,
            _ => return None,
        })
    }
}

/// The metrics of ncu `--csv` output (long format: one row per metric); other lines (ncu's
/// `==PROF==` notes, the program's own output) are skipped. With several profiled launches, the
/// last one's values win.
pub fn parse(text: &str) -> Vec<Metric> {
    let mut out: Vec<Metric> = Vec::new();
    let mut cols: Option<(usize, usize, usize)> = None;
    for line in text.lines() {
        if !line.starts_with('"') {
            continue;
        }
        let Some(row) = super::output::parse_csv(line).into_iter().next() else {
            continue;
        };
        let find = |name: &str| row.iter().position(|c| c == name);
        if let (Some(n), Some(u), Some(v)) = (
            find("Metric Name"),
            find("Metric Unit"),
            find("Metric Value"),
        ) {
            cols = Some((n, u, v));
            continue;
        }
        let Some((n, u, v)) = cols else { continue };
        if let (Some(name), Some(unit), Some(value)) = (row.get(n), row.get(u), row.get(v)) {
            let m = Metric {
                name: name.clone(),
                unit: unit.clone(),
                value: value.clone(),
            };
            match out.iter_mut().find(|o| o.name == m.name) {
                Some(o) => *o = m,
                None => out.push(m),
            }
        }
    }
    out
}

/// The hidden `warpkit repro-target`: the `sort` reproduction's scene for `mode`, evaluated twice
/// (warm-up, then the launch ncu profiles).
pub fn target(
    backend: &Backend,
    mode: Mode,
    n: usize,
    theta: f32,
    seed: u64,
) -> Result<(), BhError> {
    let p = Params {
        theta,
        ..Params::default()
    };
    let bodies = bodies_for(&scene::lattice(n), mode, seed);
    for _ in 0..2 {
        evaluate(backend, &bodies, &p, mode, Storage::Dense)?;
    }
    Ok(())
}

/// Profiles `bh_gravity` in `mode` with ncu; ncu's own CSV log is kept at `log`.
pub fn profile(
    ncu: &Path,
    mode: Mode,
    n: usize,
    theta: f32,
    seed: u64,
    log: &Path,
) -> Result<Vec<Metric>, NcuError> {
    let name = mode_name(mode);
    let exe = std::env::current_exe().map_err(|source| NcuError::Spawn {
        ncu: ncu.to_path_buf(),
        source,
    })?;
    let metrics: Vec<&str> = seed::PROFILE.iter().map(|r| r.metric).collect();
    let out = Command::new(ncu)
        .args([
            "--clock-control",
            "none",
            "-k",
            KERNEL,
            "-s",
            "1",
            "-c",
            "1",
        ])
        .args(["--csv", "--print-units", "base", "--metrics"])
        .arg(metrics.join(","))
        .arg("--log-file")
        .arg(log)
        .arg(&exe)
        .args(["--backend", "gpu", "repro-target", "--mode", name])
        .args(["--n", &n.to_string(), "--theta", &theta.to_string()])
        .args(["--seed", &seed.to_string()])
        .output()
        .map_err(|source| NcuError::Spawn {
            ncu: ncu.to_path_buf(),
            source,
        })?;
    let logged = std::fs::read_to_string(log).unwrap_or_default();
    let tail = || {
        let all = format!(
            "{}{}{}",
            logged,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<&str> = all.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(6)..].join(" / ")
    };
    if !out.status.success() {
        return Err(NcuError::Failed {
            mode: name,
            status: out.status.to_string(),
            log: log.to_path_buf(),
            tail: tail(),
        });
    }
    let m = parse(&logged);
    if m.is_empty() {
        return Err(NcuError::NoMetrics {
            mode: name,
            log: log.to_path_buf(),
            tail: tail(),
        });
    }
    Ok(m)
}

/// The CLI spelling of a mode.
pub fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Random => "random",
        Mode::Regular => "regular",
        Mode::Sorted => "sorted",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ncu_long_csv() {
        let text = "==PROF== Connected to process 1\n\
            \"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
            \"0\",\"7\",\"warpkit\",\"127.0.0.1\",\"bh_gravity\",\"1\",\"7\",\"(256, 1, 1)\",\"(264, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"gpu__time_duration.sum\",\"nsecond\",\"6,840,123\"\n\
            \"0\",\"7\",\"warpkit\",\"127.0.0.1\",\"bh_gravity\",\"1\",\"7\",\"(256, 1, 1)\",\"(264, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"l1tex__t_sector_hit_rate.pct\",\"%\",\"57.5\"\n";
        let m = parse(text);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].name, "gpu__time_duration.sum");
        assert!((m[0].ms().unwrap() - 6.840123).abs() < 1e-12);
        assert_eq!(m[0].display(), "6.840 ms");
        assert_eq!(m[1].display(), "57.50 %");
    }
}
