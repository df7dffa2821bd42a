//! `meta.json`: what ran, where, when, from which commit, with which parameters.

use serde_json::{Value, json};
use std::process::Command;
use warpkit::backend::Backend;
use warpkit::runtime::probe;

/// The commit that built this executable: `WARPKIT_COMMIT` when set (staged executables run away
/// from their checkout), else `git rev-parse HEAD` in the working directory, else in the source
/// tree the executable was built from, else "unknown". A dirty tree gets a `-dirty` suffix.
pub fn commit() -> String {
    if let Ok(c) = std::env::var("WARPKIT_COMMIT")
        && !c.trim().is_empty()
    {
        return c.trim().to_string();
    }
    for dir in [".", env!("CARGO_MANIFEST_DIR")] {
        let git = |args: &[&str]| {
            Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        if let Some(hash) = git(&["rev-parse", "HEAD"]).filter(|h| !h.is_empty()) {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            return if dirty { format!("{hash}-dirty") } else { hash };
        }
    }
    "unknown".to_string()
}

/// UTC now as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_string(secs)
}

/// Seconds since 1970 as an ISO 8601 UTC time (proleptic Gregorian; Hinnant's days-to-civil).
pub fn utc_string(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The CPU's model name (`/proc/cpuinfo`), or "unknown".
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// The machine: always the CPU; the GPU when the backend is one.
pub fn machine(backend: &Backend) -> Value {
    let cpu = json!({
        "model": cpu_model(),
        "threads": rayon::current_num_threads(),
    });
    let gpu = match backend.gpu() {
        Some(g) => {
            let i = g.info();
            json!({
                "name": i.name,
                "compute_capability": format!("{}.{}", i.compute_capability.0, i.compute_capability.1),
                "multiprocessors": i.multiprocessors,
                "clock_mhz": i.clock_mhz,
                "memory_bytes": i.total_memory,
                "l2_bytes": i.l2_bytes,
                "driver_version": i.driver_version,
                "driver_cuda": probe::version_string(i.driver_version),
                "ptx_arch": i.ptx_arch,
            })
        }
        None => Value::Null,
    };
    json!({ "backend": backend.name(), "cpu": cpu, "gpu": gpu })
}

/// A one-line description of where the run happened, for table headings.
pub fn machine_line(backend: &Backend) -> String {
    match backend.gpu() {
        Some(g) => {
            let i = g.info();
            format!(
                "{} ({} SMs, driver {}), PTX {}",
                i.name,
                i.multiprocessors,
                probe::version_string(i.driver_version),
                i.ptx_arch
            )
        }
        None => format!(
            "CPU backend: {} ({} threads)",
            cpu_model(),
            rayon::current_num_threads()
        ),
    }
}

/// What every figure title names: N where one N applies, and the
/// backend: the GPU's name or "CPU backend".
pub fn figure_note(backend: &Backend, n: Option<usize>) -> String {
    let device = match backend.gpu() {
        Some(g) => g.info().name.clone(),
        None => "CPU backend".to_string(),
    };
    match n {
        Some(n) => figure_note_n(n, &device),
        None => device,
    }
}

/// `N = 2¹⁸, {device}`: [`figure_note`] with the N of one figure of a sweep.
pub fn figure_note_n(n: usize, device: &str) -> String {
    format!("N = {}, {device}", super::plot::n_label(n))
}

/// The whole `meta.json` of reproduction `name` with its parameters.
pub fn meta(name: &str, backend: &Backend, params: Value) -> Value {
    json!({
        "reproduction": name,
        "warpkit_version": env!("CARGO_PKG_VERSION"),
        "commit": commit(),
        "date_utc": utc_now(),
        "machine": machine(backend),
        "parameters": params,
    })
}

/// Writes the first `meta.json` of reproduction `name` into `dir` (the run's end rewrites it with
/// its status) and returns it.
pub fn write(
    dir: &super::output::OutDir,
    name: &str,
    backend: &Backend,
    params: Value,
) -> Result<Value, super::output::OutputError> {
    let m = meta(name, backend, params);
    dir.write(
        "meta.json",
        serde_json::to_string_pretty(&m)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc_string(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_string(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_string(1_798_761_599), "2026-12-31T23:59:59Z");
    }
}
