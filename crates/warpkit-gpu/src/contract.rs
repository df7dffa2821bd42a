//! Typed kernel contracts: what `#[kernel]` emits on the host.
//!
//! A kernel `unsafe fn k(x: *const f32, y: *mut f32, n: u32)` becomes, on the host, a unit struct
//! `k` implementing [`Kernel`] with `Params = (DevPtr<f32>, DevMut<f32>, u32)`. A runtime (warpkit's
//! `Gpu::launch`) accepts an argument tuple only where each element converts to its parameter:
//! a read-only or writable device buffer of the right element type for a [`DevPtr`], a writable
//! one for a [`DevMut`], the value itself otherwise. So the count, order, element type and
//! mutability of a launch are checked by the compiler; buffer lengths stay the kernel's documented
//! contract (and the reason a launch is `unsafe`).

use core::marker::PhantomData;

/// A kernel parameter declared `*const T`: a device pointer the kernel reads (or a null one).
pub struct DevPtr<T>(PhantomData<*const T>);

/// A kernel parameter declared `*mut T`: a device pointer the kernel may write.
pub struct DevMut<T>(PhantomData<*mut T>);

/// A `#[repr(C)]` value of device pointers and plain values that a kernel takes as one
/// parameter: a view of buffers the host owns (an octree: the bodies, the child slots, the cell
/// summaries, the sort order and groups). The kernel only reads through it (but for atomics the
/// type documents); a host runtime passes one made from buffers it holds borrowed.
///
/// # Safety
/// The type is `#[repr(C)]` and every field is a raw pointer or a plain value without padding
/// invariants, so its bytes are what the kernel reads from the parameter space.
pub unsafe trait DeviceView: Copy {}

/// A [`DeviceView`] whose kernels write through it (the tree's build stages): a host runtime
/// passes one made from buffers it holds borrowed mutably.
///
/// # Safety
/// As [`DeviceView`].
pub unsafe trait DeviceViewMut: Copy {}

/// One parameter of a kernel as the PTX sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    /// The parameter's name in the Rust source.
    pub name: &'static str,
    /// Bytes the parameter occupies in the PTX parameter space.
    pub size: usize,
    /// Its alignment in bytes.
    pub align: usize,
    /// A device pointer (`.u64`), and whether the kernel may write through it.
    pub pointer: Option<bool>,
}

impl Param {
    /// A `*const T` (`mutable = false`) or `*mut T` parameter.
    pub const fn pointer(name: &'static str, mutable: bool) -> Param {
        Param {
            name,
            size: 8,
            align: 8,
            pointer: Some(mutable),
        }
    }

    /// A by-value parameter of type `T`.
    pub const fn value<T>(name: &'static str) -> Param {
        Param {
            name,
            size: core::mem::size_of::<T>(),
            align: core::mem::align_of::<T>(),
            pointer: None,
        }
    }
}

/// The host side of a `#[kernel]`: its PTX entry name and parameter types.
pub trait Kernel: Copy {
    /// The `.entry` name in the PTX module.
    const NAME: &'static str;
    /// The parameters as a tuple of [`DevPtr`], [`DevMut`] and value types.
    type Params;
    /// The same parameters as data, for checks against the PTX.
    const PARAMS: &'static [Param];
    /// `#[kernel(launch_bounds(..))]`, when given.
    const LAUNCH_BOUNDS: Option<LaunchBounds> = None;
}

/// CUDA's `__launch_bounds__`: the entry's `.maxntid` (threads per block, at most) and
/// `.minnctapersm` (blocks that must fit on one multiprocessor, which caps the registers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchBounds {
    pub max_threads: u32,
    pub min_blocks: u32,
}

/// A contract as data, entered in [`KERNELS`] by `#[kernel]`.
#[derive(Clone, Copy, Debug)]
pub struct KernelInfo {
    pub name: &'static str,
    /// `module_path!()` of the kernel's definition (its crate first).
    pub module: &'static str,
    pub params: &'static [Param],
    pub launch_bounds: Option<LaunchBounds>,
}

impl KernelInfo {
    /// The crate that defined the kernel (`module`'s first segment).
    pub fn krate(&self) -> &'static str {
        self.module.split("::").next().unwrap_or(self.module)
    }
}

/// Every `#[kernel]` contract linked into this program (host only).
#[cfg(not(target_arch = "nvptx64"))]
#[linkme::distributed_slice]
pub static KERNELS: [KernelInfo];

/// One `.param` of a PTX `.entry`: its size in bytes and whether rustc marked it `.ptr`.
#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtxParam {
    pub bytes: usize,
    pub pointer: bool,
}

/// The `.entry` functions of a PTX module and their parameters, in order: what a [`KernelInfo`]
/// is checked against.
#[cfg(not(target_arch = "nvptx64"))]
pub fn ptx_entries(ptx: &str) -> std::vec::Vec<(std::string::String, std::vec::Vec<PtxParam>)> {
    use std::string::ToString;
    use std::vec::Vec;
    let mut out = Vec::new();
    let mut lines = ptx.lines();
    while let Some(line) = lines.next() {
        let Some(pos) = line.find(".entry ") else {
            continue;
        };
        let rest = &line[pos + ".entry ".len()..];
        let name = rest
            .split(|c: char| c == '(' || c.is_whitespace())
            .next()
            .unwrap_or("")
            .to_string();
        let mut params = Vec::new();
        // Parameters follow one per line until the closing parenthesis.
        if !rest.contains(')') {
            for p in lines.by_ref() {
                let p = p.trim();
                if p.starts_with(".param") {
                    params.push(PtxParam {
                        bytes: param_bytes(p),
                        pointer: p.contains(" .ptr "),
                    });
                }
                if p.ends_with(')') || p.starts_with(')') {
                    break;
                }
            }
        }
        out.push((name, params));
    }
    out
}

/// The `.maxntid` (first dimension) and `.minnctapersm` directives of entry `name`, when it has
/// both.
#[cfg(not(target_arch = "nvptx64"))]
pub fn ptx_launch_bounds(ptx: &str, name: &str) -> Option<LaunchBounds> {
    let start = ptx.find(&std::format!(".entry {name}("))?;
    let head = &ptx[start..];
    let head = &head[..head.find('{')?];
    let value = |key: &str| -> Option<u32> {
        let at = head.find(key)? + key.len();
        let digits: std::string::String = head[at..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.parse().ok()
    };
    Some(LaunchBounds {
        max_threads: value(".maxntid")?,
        min_blocks: value(".minnctapersm")?,
    })
}

/// Bytes of one `.param` declaration: `.param .u64 x`, `.param .align 4 .b8 x[24]`, …
#[cfg(not(target_arch = "nvptx64"))]
fn param_bytes(decl: &str) -> usize {
    let decl = std::format!("{} ", decl.trim_end_matches([',', ')']).trim_end());
    if let (Some(open), Some(close)) = (decl.rfind('['), decl.rfind(']')) {
        let count: usize = decl[open + 1..close].parse().unwrap_or(0);
        let elem = if decl.contains(".b16") {
            2
        } else if decl.contains(".b32") {
            4
        } else if decl.contains(".b64") {
            8
        } else {
            1
        };
        return count * elem;
    }
    for (ty, bytes) in [("8 ", 1), ("16 ", 2), ("32 ", 4), ("64 ", 8)] {
        for prefix in [".u", ".s", ".b", ".f"] {
            if decl.contains(&std::format!("{prefix}{ty}")) {
                return bytes;
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn parses_entries_and_parameter_widths() {
        let ptx = "\
.visible .entry k1(
\t.param .u64 .ptr .global .align 4 k1_param_0,
\t.param .f32 k1_param_1,
\t.param .align 4 .b8 k1_param_2[24],
\t.param .u8 k1_param_3
)
{
}
.visible .entry k2()
{
}
";
        let e = ptx_entries(ptx);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].0, "k1");
        let bytes: Vec<usize> = e[0].1.iter().map(|p| p.bytes).collect();
        assert_eq!(bytes, [8, 4, 24, 1]);
        assert!(e[0].1[0].pointer && !e[0].1[1].pointer);
        assert_eq!(e[1], ("k2".into(), vec![]));
        assert_eq!(ptx_launch_bounds(ptx, "k1"), None);
    }

    #[test]
    fn reads_launch_bounds_of_one_entry() {
        let ptx = ".visible .entry a(\n)\n{\n}\n.visible .entry b(\n\t.param .u32 b_param_0\n)\n\
                   .maxntid 128, 1, 1\n.minnctapersm 9\n{\n}\n";
        assert_eq!(ptx_launch_bounds(ptx, "a"), None);
        let b = ptx_launch_bounds(ptx, "b").unwrap();
        assert_eq!((b.max_threads, b.min_blocks), (128, 9));
    }
}
