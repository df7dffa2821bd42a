//! Finding a usable driver without ever panicking.
//!
//! cudarc loads libcuda on first use and panics when it is missing or lacks a symbol. The probe asks
//! whether the library can be loaded at all, then makes its first driver calls under
//! `catch_unwind`, so "no GPU here" is always an error value, never a crash.

use super::error::GpuError;
use cudarc::driver::{result, sys};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What the driver reports before any context exists.
#[derive(Clone, Debug)]
pub struct DriverInfo {
    /// `cuDriverGetVersion`, e.g. 13000 for CUDA 13.0.
    pub version: i32,
    /// Devices the driver sees.
    pub device_count: usize,
}

/// `12080` → `"12.8"`.
pub fn version_string(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// Runs `f` and turns a cudarc panic (missing library or symbol) into [`GpuError::NoDriver`].
pub(crate) fn guarded<T>(f: impl FnOnce() -> Result<T, GpuError>) -> Result<T, GpuError> {
    // The panic hook is left alone: swapping it is process-global and races with other threads.
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the CUDA bindings panicked".into());
        Err(GpuError::NoDriver(msg))
    })
}

/// Loads and initialises the driver and counts devices. Never panics.
pub fn driver() -> Result<DriverInfo, GpuError> {
    // SAFETY: only tries to dlopen the library; no symbol is called.
    if !unsafe { sys::is_culib_present() } {
        return Err(GpuError::NoDriver("libcuda.so could not be loaded".into()));
    }
    guarded(|| {
        result::init().map_err(GpuError::Init)?;
        let mut version = 0;
        // SAFETY: writes one int.
        unsafe { sys::cuDriverGetVersion(&mut version) }
            .result()
            .map_err(GpuError::Init)?;
        let count = result::device::get_count().map_err(GpuError::Init)?;
        Ok(DriverInfo {
            version,
            device_count: count.max(0) as usize,
        })
    })
}

/// The CUDA version (as `cuDriverGetVersion` numbers it) whose driver first accepts PTX ISA
/// `major.minor`. PTX 7.x shipped with CUDA 11.x; 8.0–8.5 with 12.0–12.5; 8.6/8.7/8.8 with
/// 12.7/12.8/12.9; 9.0 with 13.0.
pub fn cuda_for_ptx_isa(major: u32, minor: u32) -> i32 {
    let (maj, min) = match (major, minor) {
        (7, m) => (11, m),
        (8, m) if m <= 5 => (12, m),
        (8, m) => (12, m + 1),
        (9, m) => (13, m),
        (m, _) if m < 7 => (10, 0),
        _ => (99, 0),
    };
    (maj * 1000 + min * 10) as i32
}

/// The `.version` line of a PTX module, e.g. `(7, 8)`.
pub fn ptx_isa(ptx: &str) -> Option<(u32, u32)> {
    let v = ptx
        .lines()
        .find_map(|l| l.trim().strip_prefix(".version "))?;
    let (a, b) = v.trim().split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// `"sm_90"` → `90`.
pub fn arch_number(arch: &str) -> Option<u32> {
    arch.strip_prefix("sm_")?
        .trim_end_matches(['a', 'f'])
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_versions() {
        assert_eq!(cuda_for_ptx_isa(7, 8), 11080);
        assert_eq!(cuda_for_ptx_isa(8, 0), 12000);
        assert_eq!(cuda_for_ptx_isa(8, 7), 12080);
        assert_eq!(cuda_for_ptx_isa(9, 0), 13000);
        assert_eq!(ptx_isa("//\n.version 7.8\n.target sm_90"), Some((7, 8)));
        assert_eq!(ptx_isa("nothing"), None);
        assert_eq!(arch_number("sm_90"), Some(90));
        assert_eq!(arch_number("sm_90a"), Some(90));
        assert_eq!(arch_number("gfx90"), None);
        assert_eq!(version_string(12080), "12.8");
    }

    #[test]
    fn embedded_ptx_has_a_version() {
        let (major, _) = ptx_isa(crate::PTX).expect("embedded PTX lacks .version");
        assert!(major >= 7);
    }
}
