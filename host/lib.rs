//! warpkit: Barnes–Hut self-gravity, warp-level FEM assembly and stochastic fast summation, with
//! GPU kernels written in Rust (the `warpkit-device` crate, compiled to PTX by `build.rs`) and a
//! CPU backend that runs the same formulas.
//!
//! | CUDA concept | warpkit |
//! | --- | --- |
//! | the embedded PTX module | [`PTX`], built for [`PTX_ARCH`] |
//! | a context, stream and loaded module | [`runtime::Gpu`] |
//! | `cudaEvent` timing | [`runtime::Gpu::time`] |
//! | a `__global__` launch | [`runtime::Gpu::launch`] → [`runtime::Launch::run`] |
//! | "no GPU here" | [`backend::Backend::Cpu`], chosen by [`backend::select`] |

// `#[derive(Choice)]` names the trait as `::warpkit::choice::Choice`, here as in other crates.
extern crate self as warpkit;

pub mod backend;
pub mod bh;
pub mod choice;
pub mod combined;
pub mod config_keys;
pub mod fem;
pub mod files;
pub mod multi;
pub mod nbody;
pub mod output;
pub mod planet;
pub mod runtime;
pub mod sbh;
pub mod selftest;
pub mod sph;
pub mod stats;

pub use warpkit_device as device;

/// The device crate compiled to PTX for [`PTX_ARCH`] (by `build.rs`).
pub const PTX: &str = include_str!(env!("WARPKIT_PTX_PATH"));

/// The architecture the embedded PTX targets (`WARPKIT_CUDA_ARCH` at build time), e.g. `sm_90`.
pub const PTX_ARCH: &str = env!("WARPKIT_PTX_ARCH");

/// [`PTX`] as the GPU loads it and `warpkit ptx` writes it. Two measurement aids: register limits
/// from the environment variable `WARPKIT_MAXNREG` (`name=N,…`, written as `.maxnreg`; kernels
/// declare lasting limits with `#[kernel(launch_bounds(..))]`), and `WARPKIT_PTX_FILE`, which
/// replaces the embedded module by a file (another build's kernels under this host code).
pub fn module_ptx() -> Result<String, String> {
    let mut limits: Vec<(String, u32)> = Vec::new();
    if let Ok(spec) = std::env::var("WARPKIT_MAXNREG") {
        for item in spec.split(',').filter(|s| !s.trim().is_empty()) {
            let (name, regs) = item
                .split_once('=')
                .and_then(|(k, r)| Some((k.trim(), r.trim().parse::<u32>().ok()?)))
                .ok_or_else(|| format!("WARPKIT_MAXNREG: `{item}` is not `kernel=registers`"))?;
            limits.retain(|(k, _)| k != name);
            limits.push((name.to_string(), regs));
        }
    }
    let ptx = match std::env::var_os("WARPKIT_PTX_FILE") {
        Some(path) => std::fs::read_to_string(&path)
            .map_err(|e| format!("WARPKIT_PTX_FILE {}: {e}", path.to_string_lossy()))?,
        None => PTX.to_string(),
    };
    with_register_limits(&ptx, &limits)
}

/// `ptx` with a `.maxnreg` directive (between the parameter list and the body) in each named
/// entry; an unknown name or a limit outside 16..=255 is an error.
pub fn with_register_limits(ptx: &str, limits: &[(String, u32)]) -> Result<String, String> {
    let mut out = ptx.to_string();
    for (name, regs) in limits {
        if !(16..=255).contains(regs) {
            return Err(format!(
                "register limit {regs} for `{name}` is outside 16..=255"
            ));
        }
        let head = format!(".entry {name}(");
        let at = out
            .find(&head)
            .ok_or_else(|| format!("no kernel `{name}` to limit to {regs} registers"))?;
        let body = at
            + out[at..]
                .find("\n{")
                .ok_or_else(|| format!("kernel `{name}` has no body"))?;
        out.insert_str(body, &format!("\n.maxnreg {regs}"));
    }
    Ok(out)
}

/// The kernel entry points of [`PTX`], in order of appearance.
pub fn kernel_names() -> Vec<&'static str> {
    PTX.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .map(|rest| rest.split('(').next().unwrap_or(rest).trim())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_limits_go_between_an_entrys_parameters_and_its_body() {
        let ptx = ".visible .entry k_quad(\n.param .u32 a\n)\n{\nret;\n}\n\
                   .visible .entry k(\n.param .u32 a\n)\n{\nret;\n}\n";
        let got = with_register_limits(ptx, &[("k".into(), 32)]).unwrap();
        assert_eq!(got.matches(".maxnreg 32").count(), 1);
        let k = got.find(".entry k(").unwrap();
        assert!(got[k..].starts_with(".entry k(\n.param .u32 a\n)\n.maxnreg 32\n{"));
        assert!(with_register_limits(ptx, &[("absent".into(), 32)]).is_err());
        assert!(with_register_limits(ptx, &[("k".into(), 8)]).is_err());
        // Without the environment variables the module is the embedded one.
        assert!(module_ptx().is_ok() || std::env::var("WARPKIT_MAXNREG").is_ok());
    }
}
