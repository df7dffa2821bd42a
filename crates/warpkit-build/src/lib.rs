//! Compiles a Rust device crate to one PTX module from a build script: the role `cuda_builder`
//! had, on rustc's own `nvptx64-nvidia-cuda` target.
//!
//! In `build.rs` of a host crate whose kernels live in `./kernels`:
//! ```no_run
//! let ptx = warpkit_build::PtxBuilder::new("kernels")
//!     .arch_env("MY_CUDA_ARCH") // e.g. sm_80; default sm_90
//!     .build()
//!     .unwrap_or_else(|e| e.exit());
//! println!("cargo:rustc-env=MY_PTX={}", ptx.path.display());
//! ```
//! and in the host crate: `const PTX: &str = include_str!(env!("MY_PTX"));`.
//!
//! The recipe: a nested `cargo rustc --release --target nvptx64-nvidia-cuda -Zbuild-std=core
//! --crate-type staticlib -- --emit=asm -C target-cpu=<arch>` with fat LTO, one codegen unit and
//! panic=abort. With no linker for nvptx available, the assembly of the LTO'd staticlib *is* the
//! whole, self-contained PTX module. The nested cargo gets its own target directory (the outer
//! build holds a lock on its own) and none of the outer build's flags or wrappers, which are for
//! the host. It needs a nightly toolchain with the `rust-src` component (for `-Zbuild-std`); when
//! either is missing the error says how to get it.

use std::env;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Architectures that rustc's NVPTX backend targets and that have the `*.sync` warp intrinsics
/// with independent thread scheduling (Volta and later).
pub const ARCHS: &[&str] = &[
    "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_120",
];

/// The architecture when none is chosen: Hopper.
pub const DEFAULT_ARCH: &str = "sm_90";

/// A PTX module the builder wrote.
#[derive(Clone, Debug)]
pub struct Ptx {
    /// Where the module is (inside `OUT_DIR`).
    pub path: PathBuf,
    /// The architecture it targets, e.g. `sm_90`.
    pub arch: String,
}

/// Why a build failed; [`BuildError::exit`] prints it the way cargo shows build-script errors.
#[derive(Debug)]
pub enum BuildError {
    /// The requested architecture is not one of [`ARCHS`].
    Arch {
        var: String,
        value: String,
    },
    /// `OUT_DIR` or `CARGO_MANIFEST_DIR` is unset: not running inside a build script.
    NotInBuildScript(&'static str),
    /// The device crate's directory has no Cargo.toml.
    NoCrate(PathBuf),
    /// The toolchain cannot build for nvptx (no nightly, no rust-src, no target).
    Toolchain(String),
    /// rustc reported errors in the device crate (shown above the message).
    Compile {
        arch: String,
    },
    /// The module holds no `.entry`: no `#[kernel]` was compiled.
    NoKernels(PathBuf),
    /// A `#[kernel(launch_bounds(..))]` that cannot be applied to the PTX.
    LaunchBounds {
        entry: String,
        why: String,
    },
    Io(std::io::Error),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Arch { var, value } => write!(
                f,
                "{var}={value:?} is not a supported CUDA architecture; use one of {}",
                ARCHS.join(", ")
            ),
            BuildError::NotInBuildScript(v) => {
                write!(
                    f,
                    "{v} is not set: warpkit-build runs inside a build script"
                )
            }
            BuildError::NoCrate(p) => {
                write!(f, "no device crate at {} (no Cargo.toml)", p.display())
            }
            BuildError::Toolchain(msg) => write!(f, "{msg}"),
            BuildError::Compile { arch } => write!(
                f,
                "compiling the device crate for nvptx64-nvidia-cuda ({arch}) failed; see above"
            ),
            BuildError::NoKernels(p) => write!(f, "{} holds no kernel entry point", p.display()),
            BuildError::LaunchBounds { entry, why } => {
                write!(f, "launch bounds of kernel `{entry}`: {why}")
            }
            BuildError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for BuildError {}

impl BuildError {
    /// Prints `error: …` and exits the build script with status 1.
    pub fn exit(self) -> ! {
        eprintln!("error: {self}");
        std::process::exit(1)
    }
}

/// Builds one device crate to PTX.
#[derive(Clone, Debug)]
pub struct PtxBuilder {
    crate_dir: PathBuf,
    arch: Option<String>,
    arch_var: Option<String>,
    name: Option<String>,
    watch: Vec<PathBuf>,
}

impl PtxBuilder {
    /// The device crate at `crate_dir` (relative to the calling crate's manifest directory).
    pub fn new(crate_dir: impl AsRef<Path>) -> Self {
        PtxBuilder {
            crate_dir: crate_dir.as_ref().to_path_buf(),
            arch: None,
            arch_var: None,
            name: None,
            watch: Vec::new(),
        }
    }

    /// Targets `arch` (one of [`ARCHS`]).
    pub fn arch(mut self, arch: &str) -> Self {
        self.arch = Some(arch.to_string());
        self
    }

    /// Reads the architecture from environment variable `var` when set (it wins over
    /// [`Self::arch`]); the build reruns when it changes.
    pub fn arch_env(mut self, var: &str) -> Self {
        self.arch_var = Some(var.to_string());
        self
    }

    /// The module's file name in `OUT_DIR` (default: the crate directory's name + `.ptx`).
    pub fn file_name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    /// Also rebuilds when `dir` changes (path dependencies of the device crate, such as a local
    /// copy of the device layer; the device crate itself is always watched).
    pub fn watch(mut self, dir: impl AsRef<Path>) -> Self {
        self.watch.push(dir.as_ref().to_path_buf());
        self
    }

    /// The architecture this builder will target, validated.
    pub fn resolved_arch(&self) -> Result<String, BuildError> {
        let from_env = self
            .arch_var
            .as_ref()
            .and_then(|v| env::var(v).ok().map(|val| (v.clone(), val)));
        let (var, value) = match from_env {
            Some(pair) => pair,
            None => (
                "arch".to_string(),
                self.arch
                    .clone()
                    .unwrap_or_else(|| DEFAULT_ARCH.to_string()),
            ),
        };
        if ARCHS.contains(&value.as_str()) {
            Ok(value)
        } else {
            Err(BuildError::Arch { var, value })
        }
    }

    /// Runs the nested cargo and returns the module.
    pub fn build(self) -> Result<Ptx, BuildError> {
        let manifest_dir = PathBuf::from(
            env::var_os("CARGO_MANIFEST_DIR")
                .ok_or(BuildError::NotInBuildScript("CARGO_MANIFEST_DIR"))?,
        );
        let out_dir =
            PathBuf::from(env::var_os("OUT_DIR").ok_or(BuildError::NotInBuildScript("OUT_DIR"))?);
        let crate_dir = manifest_dir.join(&self.crate_dir);
        println!("cargo:rerun-if-changed={}", crate_dir.display());
        for w in &self.watch {
            println!("cargo:rerun-if-changed={}", manifest_dir.join(w).display());
        }
        if let Some(v) = &self.arch_var {
            println!("cargo:rerun-if-env-changed={v}");
        }
        let arch = self.resolved_arch()?;
        let manifest = crate_dir.join("Cargo.toml");
        if !manifest.is_file() {
            return Err(BuildError::NoCrate(crate_dir));
        }
        let stem = self.name.clone().unwrap_or_else(|| {
            let dir = crate_dir
                .file_name()
                .map(|s| s.to_string_lossy().into_owned());
            format!("{}.ptx", dir.unwrap_or_else(|| "kernels".into()))
        });
        let ptx = out_dir.join(&stem);
        // One nested target dir per arch beside the outer one: `core` is built once per arch and
        // shared by every outer profile (debug, release, test), not rebuilt into each OUT_DIR.
        let target_dir = outer_target_dir(&out_dir).join(format!("nvptx-{arch}"));
        let emitted = emit_path(&target_dir, &out_dir, &stem);
        if let Some(dir) = emitted.parent() {
            std::fs::create_dir_all(dir).map_err(BuildError::Io)?;
        }

        let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        check_toolchain(&cargo, &crate_dir)?;
        let mut cmd = Command::new(&cargo);
        cmd.current_dir(&crate_dir)
            .args(["rustc", "--release", "--target", "nvptx64-nvidia-cuda"])
            .args(["-Zbuild-std=core", "--crate-type", "staticlib"])
            .arg("--manifest-path")
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target_dir);
        // The outer build's lock file pins the device crate's dependencies too.
        if env::var_os("CARGO_LOCKED").is_some() || manifest_dir.join("Cargo.lock").is_file() {
            cmd.arg("--locked");
        }
        cmd.arg("--")
            .arg(format!("--emit=asm={}", emitted.display()))
            .args(["-C", &format!("target-cpu={arch}")])
            .env("CARGO_PROFILE_RELEASE_LTO", "fat")
            .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
            .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
            .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
            .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "3");
        for var in [
            "RUSTFLAGS",
            "CARGO_ENCODED_RUSTFLAGS",
            "RUSTC_WRAPPER",
            "RUSTC_WORKSPACE_WRAPPER",
            "CARGO_BUILD_TARGET",
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_RUSTFLAGS",
        ] {
            cmd.env_remove(var);
        }
        // rustc's diagnostics for device code go straight to the terminal as the user's own.
        let status = cmd.status().map_err(BuildError::Io)?;
        if !status.success() {
            return Err(BuildError::Compile { arch });
        }
        let text = std::fs::read_to_string(&emitted).map_err(BuildError::Io)?;
        if !text.contains(".entry") {
            return Err(BuildError::NoKernels(emitted));
        }
        std::fs::write(&ptx, apply_launch_bounds(&text)?).map_err(BuildError::Io)?;
        Ok(Ptx { path: ptx, arch })
    }
}

/// The prefix of the globals that `#[kernel(launch_bounds(..))]` leaves in the PTX.
const BOUNDS_PREFIX: &str = "__warpkit_launch_bounds_";

/// Gives each entry that has a `__warpkit_launch_bounds_<entry>` global (two `u32`: max threads,
/// min blocks per SM) the directives `.maxntid <max>, 1, 1` and `.minnctapersm <min>` — what
/// CUDA C++'s `__launch_bounds__` emits, for which rustc has no attribute.
pub fn apply_launch_bounds(ptx: &str) -> Result<String, BuildError> {
    let mut out = ptx.to_string();
    for line in ptx.lines() {
        let Some(at) = line.find(BOUNDS_PREFIX) else {
            continue;
        };
        if !line.contains(".global") {
            continue;
        }
        let rest = &line[at + BOUNDS_PREFIX.len()..];
        let entry: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let bad = |why: &str| BuildError::LaunchBounds {
            entry: entry.clone(),
            why: why.to_string(),
        };
        // `.b8 name[8] = {128, 0, 0, 0, 9};`: little-endian bytes, trailing zeros left out.
        let mut bytes: Vec<u8> = rest
            .split_once('{')
            .and_then(|(_, b)| b.split_once('}'))
            .map(|(b, _)| b.split(',').filter_map(|v| v.trim().parse().ok()).collect())
            .unwrap_or_default();
        if bytes.is_empty() || bytes.len() > 8 || !rest.contains("[8]") {
            return Err(bad("its bounds global is not two initialised u32"));
        }
        bytes.resize(8, 0);
        let word =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let (max_threads, min_blocks) = (word(0), word(4));
        if max_threads == 0 || max_threads > 1024 || max_threads % 32 != 0 || min_blocks == 0 {
            return Err(bad(
                "max_threads must be a multiple of 32 in 32..=1024, min_blocks ≥ 1",
            ));
        }
        let head = format!(".entry {entry}(");
        let start = out
            .find(&head)
            .ok_or_else(|| bad("no such .entry in the module"))?;
        let brace = start
            + out[start..]
                .find("\n{")
                .ok_or_else(|| bad("entry has no body"))?;
        if out[start..brace].contains(".maxntid") {
            continue;
        }
        out.insert_str(
            brace,
            &format!("\n.maxntid {max_threads}, 1, 1\n.minnctapersm {min_blocks}"),
        );
    }
    Ok(out)
}

/// Fails early, with the fix, when the toolchain that will build the device crate is not a
/// nightly or lacks rust-src (`-Zbuild-std` needs both).
fn check_toolchain(cargo: &std::ffi::OsStr, crate_dir: &Path) -> Result<(), BuildError> {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(&rustc)
        .current_dir(crate_dir)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| BuildError::Toolchain(format!("cannot run {rustc:?}: {e}")))?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let version = Command::new(&rustc)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if !version.contains("nightly") && env::var_os("RUSTC_BOOTSTRAP").is_none() {
        return Err(BuildError::Toolchain(format!(
            "building PTX needs a nightly toolchain (-Zbuild-std, the ptx-kernel ABI); {cargo:?} \
             runs `{}`. Pin one in rust-toolchain.toml, e.g. channel = \"nightly-2026-05-20\" with \
             components = [\"rust-src\"]",
            version.trim()
        )));
    }
    let src = sysroot.join("lib/rustlib/src/rust/library/core");
    if !src.is_dir() {
        return Err(BuildError::Toolchain(format!(
            "the toolchain at {} has no rust-src component, which -Zbuild-std=core needs for \
             nvptx64: run `rustup component add rust-src` (or list it in rust-toolchain.toml)",
            sysroot.display()
        )));
    }
    Ok(())
}

/// Where the nested build writes the module for `out_dir`: inside the nested target dir, so the
/// file lives and dies with the fingerprint that calls it up to date (emitted straight into
/// OUT_DIR, a deleted `target/debug` left the nested build fresh and the module missing).
fn emit_path(target_dir: &Path, out_dir: &Path, stem: &str) -> PathBuf {
    use std::hash::{Hash, Hasher};
    // DefaultHasher::new() has fixed keys: the same OUT_DIR gives the same path.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    out_dir.hash(&mut h);
    target_dir
        .join("emit")
        .join(format!("{:016x}", h.finish()))
        .join(stem)
}

/// `.../target/<profile>/build/<crate>-<hash>/out` → `.../target`.
fn outer_target_dir(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .nth(4)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| out_dir.join("nvptx"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_bounds_become_entry_directives() {
        // (LLVM leaves out an initialiser's trailing zero bytes.)
        let ptx = ".visible .global .align 4 .b8 __warpkit_launch_bounds_k[8] = {128, 0, 0, 0, \
                   9};\n.visible .entry k(\n\t.param .u32 k_param_0\n)\n{\nret;\n}\n\
                   .visible .entry other(\n)\n{\nret;\n}\n";
        let out = apply_launch_bounds(ptx).unwrap();
        assert!(out.contains("k_param_0\n)\n.maxntid 128, 1, 1\n.minnctapersm 9\n{"));
        assert!(
            out.contains(".entry other(\n)\n{"),
            "only the named entry changes"
        );
        // Idempotent, and a module without bounds is unchanged.
        assert_eq!(apply_launch_bounds(&out).unwrap(), out);
        let plain = ".visible .entry other(\n)\n{\n}\n";
        assert_eq!(apply_launch_bounds(plain).unwrap(), plain);
        // Bounds for a missing entry, or impossible ones, are errors that name the kernel.
        let orphan = ".visible .global .align 4 .b8 __warpkit_launch_bounds_gone[8] = {64, 0, 0, \
                      0, 1, 0, 0, 0};\n";
        let e = apply_launch_bounds(orphan).unwrap_err().to_string();
        assert!(e.contains("`gone`") && e.contains("no such .entry"), "{e}");
        let zero = ptx.replace("{128, 0", "{100, 0");
        assert!(apply_launch_bounds(&zero).is_err());
    }

    #[test]
    fn arch_is_validated() {
        assert_eq!(PtxBuilder::new("d").resolved_arch().unwrap(), DEFAULT_ARCH);
        assert_eq!(
            PtxBuilder::new("d").arch("sm_80").resolved_arch().unwrap(),
            "sm_80"
        );
        let e = PtxBuilder::new("d")
            .arch("sm_12")
            .resolved_arch()
            .unwrap_err();
        assert!(
            e.to_string().contains("not a supported CUDA architecture"),
            "{e}"
        );
    }

    #[test]
    fn target_dir_is_beside_the_profile() {
        let out = Path::new("/x/target/release/build/k-1234/out");
        assert_eq!(outer_target_dir(out), Path::new("/x/target"));
    }

    #[test]
    fn each_out_dir_has_its_own_emitted_module_in_the_nested_target() {
        let t = Path::new("/x/target/nvptx-sm_90");
        let a = emit_path(t, Path::new("/x/target/debug/build/k-1/out"), "k.ptx");
        let b = emit_path(t, Path::new("/x/target/release/build/k-2/out"), "k.ptx");
        assert!(
            a.starts_with(t) && b.starts_with(t) && a.ends_with("k.ptx"),
            "{a:?}"
        );
        assert_ne!(a, b);
        let again = emit_path(t, Path::new("/x/target/debug/build/k-1/out"), "k.ptx");
        assert_eq!(a, again);
    }
}
