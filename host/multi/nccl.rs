//! [`NcclComm`]: the [`Comm`] of one rank per GPU over NCCL (cudarc's `nccl` module, loaded at run
//! time like the driver: builds and CPU-only runs never touch it), and finding the library.
//!
//! One process drives K devices, a thread per device ([`run_nccl`]), as [`super::comm::MemComm`]'s
//! ranks are threads: rank 0's thread-free caller makes the unique id, every thread makes its
//! communicator with `ncclCommInitRank` (they meet there) and keeps it (cudarc's `Comm` is not
//! `Send`). Buffers are staged through device memory on the rank's [`Gpu`] stream:
//! - [`Comm::all_gather`]: an all-gather of the 8-byte lengths, then `ncclAllGather` of buffers
//!   padded to the longest;
//! - [`Comm::all_to_all_v`]: an all-gather of each rank's K lengths, then one NCCL group of a
//!   `ncclSend` per non-empty outgoing buffer and a `ncclRecv` per non-empty incoming one (NCCL
//!   has no all-to-all-v), a rank's buffer to itself included (NCCL sends to self, as
//!   PyTorch's all-to-all does: one code path, exercised by a one-rank communicator).
//!
//! [`Comm::bytes_sent`] counts what goes on the wire to other ranks: lengths, padding and
//! payload.
//!
//! Multi-node with the same code: one process per GPU, rank 0's [`Id`] bytes (`id.internal()`,
//! 128 bytes) handed to the others out of band (the launcher's environment, a shared file), each
//! process calling [`NcclComm::new`] with its rank; the code above [`Comm`] does not change. NCCL
//! allows one rank per device in a communicator, so K virtual ranks on one GPU exchange through
//! memory ([`super::comm::MemComm`]) instead.
//!
//! # Finding libnccl
//! cudarc 0.19 (`get_lib_name_candidates("nccl")`) `dlopen`s `libnccl.so`, `libnccl.so.12`,
//! `.11`, `.10`, `.9`, `.1` and a few `libnccl64_*` names, but NCCL and the `nvidia-nccl-cu12`
//! wheel (PyTorch's) ship `libnccl.so.2`. Loading that file first by its path does not help:
//! glibc matches a later `dlopen("libnccl.so")` against loaded objects by the requested name and
//! their `DT_SONAME` (`libnccl.so.2`) only, and it reads `LD_LIBRARY_PATH` once, when the process
//! starts, so setting it in-process changes nothing either. What works is a directory holding a
//! `libnccl.so` link to the wheel's file, on `LD_LIBRARY_PATH` *when the process starts*:
//! [`link_dir`] makes it, `gpu-multi.sh` exports it, and `warpkit gravity --gpus` re-executes
//! itself with it ([`reexec_with_nccl`]) when NCCL is not loadable but a wheel's library is found.

use super::comm::Comm;
use crate::runtime::Gpu;
use cudarc::driver::CudaSlice;
use cudarc::nccl::Id;
use std::cell::Cell;
use std::path::{Path, PathBuf};

/// Why NCCL could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum NcclError {
    #[error("{0}")]
    Missing(String),
    #[error("NCCL {op} failed: {detail}")]
    Call { op: &'static str, detail: String },
    #[error("{0}")]
    Devices(String),
}

fn call(op: &'static str) -> impl Fn(cudarc::nccl::result::NcclError) -> NcclError {
    move |e| NcclError::Call {
        op,
        detail: format!("{e:?}"),
    }
}

/// Whether cudarc can load NCCL under one of the names it tries.
pub fn loadable() -> bool {
    // SAFETY: loads and unloads the library by cudarc's candidate names (its initialisers run, as
    // at any NCCL use); no symbol is called.
    unsafe { cudarc::nccl::sys::is_culib_present() }
}

/// A `libnccl.so.2` that cudarc's names miss: `$WARPKIT_NCCL_LIB` (the file or its directory),
/// else the Python environment's `nvidia-nccl-cu12`/`-cu13` wheel (`python3`, or
/// `$WARPKIT_PYTHON`: `nvidia/nccl/lib/libnccl.so.2`).
pub fn find_wheel_library() -> Option<PathBuf> {
    let check = |p: PathBuf| {
        let p = if p.is_dir() {
            p.join("libnccl.so.2")
        } else {
            p
        };
        p.is_file().then_some(p)
    };
    if let Some(p) = std::env::var_os("WARPKIT_NCCL_LIB") {
        return check(PathBuf::from(p));
    }
    let python = std::env::var("WARPKIT_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = std::process::Command::new(python)
        .args(["-c", "import nvidia.nccl as m; print(list(m.__path__)[0])"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let dir = String::from_utf8(out.stdout).ok()?;
    check(Path::new(dir.trim()).join("lib"))
}

/// A directory (under the temporary directory, per user) holding `libnccl.so` → `lib`, for
/// `LD_LIBRARY_PATH`.
pub fn link_dir(lib: &Path) -> std::io::Result<PathBuf> {
    let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
    let dir = std::env::temp_dir().join(format!("warpkit-nccl-{user}"));
    std::fs::create_dir_all(&dir)?;
    let link = dir.join("libnccl.so");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(lib, &link)?;
    Ok(dir)
}

/// The error for an NCCL that cannot be loaded, with what to do.
pub fn missing() -> NcclError {
    let found = find_wheel_library();
    let hint = match &found {
        Some(lib) => format!(
            "found {} (cudarc does not try that name): make a link and put it on the library \
             path before starting: `mkdir -p /tmp/nccl && ln -sf {} /tmp/nccl/libnccl.so && \
             export LD_LIBRARY_PATH=/tmp/nccl:$LD_LIBRARY_PATH` (gpu-multi.sh does this)",
            lib.display(),
            lib.display()
        ),
        None => "no libnccl.so.2 found either (set WARPKIT_NCCL_LIB to it, or `pip install \
                 nvidia-nccl-cu12` in the python3 on PATH)"
            .into(),
    };
    NcclError::Missing(format!(
        "NCCL cannot be loaded: cudarc looks for libnccl.so / libnccl.so.12 (not libnccl.so.2) on \
         LD_LIBRARY_PATH and the system paths; {hint}"
    ))
}

/// NCCL loadable, or [`missing`]'s error.
pub fn ensure_loadable() -> Result<(), NcclError> {
    if loadable() { Ok(()) } else { Err(missing()) }
}

/// For the `warpkit` binary, before any thread starts: when NCCL is not loadable but a wheel's
/// `libnccl.so.2` is found, re-executes the process with a [`link_dir`] prepended to
/// `LD_LIBRARY_PATH` and `NCCL_NVLS_ENABLE=0` (once: `WARPKIT_NCCL_REEXEC` marks the second
/// start). Returns when NCCL is loadable or nothing can be done (the caller's error then comes
/// from [`ensure_loadable`]).
pub fn reexec_with_nccl() {
    if loadable() || std::env::var_os("WARPKIT_NCCL_REEXEC").is_some() {
        return;
    }
    let Some(lib) = find_wheel_library() else {
        return;
    };
    let Ok(dir) = link_dir(&lib) else { return };
    let mut path = dir.into_os_string();
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        path.push(":");
        path.push(old);
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    eprintln!(
        "NCCL: using {} through a libnccl.so link (re-executing with LD_LIBRARY_PATH)",
        lib.display()
    );
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env("LD_LIBRARY_PATH", path)
        .env("WARPKIT_NCCL_REEXEC", "1")
        .env("NCCL_NVLS_ENABLE", "0")
        .exec();
    eprintln!("NCCL: re-executing failed: {err}");
}

/// `NCCL_NVLS_ENABLE=0` (never NVLink multicast) unless the environment already says 0: NCCL reads
/// it when a communicator is made.
fn nvls_off() {
    if std::env::var("NCCL_NVLS_ENABLE").is_ok_and(|v| v == "0") {
        return;
    }
    // SAFETY: called by `run_nccl` before its rank threads start and before NCCL initialises;
    // warpkit reads the environment only at start-up and in `Gpu::new`, not concurrently with
    // this (the GPU tests run with --test-threads 1; gpu-multi.sh exports the variable, so this
    // branch is not taken there).
    unsafe { std::env::set_var("NCCL_NVLS_ENABLE", "0") };
}

/// One rank's NCCL endpoint on its GPU (not `Send`: it stays on the thread that made it).
pub struct NcclComm<'a> {
    comm: cudarc::nccl::Comm,
    gpu: &'a Gpu,
    sent: Cell<u64>,
}

impl<'a> NcclComm<'a> {
    /// Rank `rank` of `size` on `gpu` (its stream), joining the communicator of `id`: every rank
    /// calls this at the same time (it returns once all have joined).
    pub fn new(gpu: &'a Gpu, rank: usize, size: usize, id: Id) -> Result<Self, NcclError> {
        ensure_loadable()?;
        nvls_off();
        gpu.context()
            .bind_to_thread()
            .map_err(|e| NcclError::Devices(format!("binding the device to a thread: {e}")))?;
        let comm = cudarc::nccl::Comm::from_rank(gpu.stream().clone(), rank, size, id)
            .map_err(call("ncclCommInitRank"))?;
        Ok(NcclComm {
            comm,
            gpu,
            sent: Cell::new(0),
        })
    }

    fn add_sent(&self, bytes: usize) {
        self.sent.set(self.sent.get() + bytes as u64);
    }

    /// Each rank's `v` (the same length on every rank), concatenated by rank.
    fn gather_u64(&self, v: &[u64]) -> Vec<u64> {
        let k = self.size();
        let send = self.upload(v);
        let mut recv: CudaSlice<u64> = self.alloc(v.len() * k);
        self.comm
            .all_gather(&send, &mut recv)
            .unwrap_or_else(|e| fail("ncclAllGather (lengths)", e));
        self.add_sent(8 * v.len() * (k - 1));
        self.download(&recv)
    }

    fn upload<T: cudarc::driver::DeviceRepr>(&self, v: &[T]) -> CudaSlice<T> {
        self.gpu
            .upload(v)
            .unwrap_or_else(|e| panic!("NCCL staging upload: {e}"))
    }
    fn alloc<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
        &self,
        n: usize,
    ) -> CudaSlice<T> {
        self.gpu
            .alloc_zeros(n)
            .unwrap_or_else(|e| panic!("NCCL staging allocation: {e}"))
    }
    fn download<T: cudarc::driver::DeviceRepr>(&self, b: &CudaSlice<T>) -> Vec<T> {
        self.gpu
            .download(b)
            .unwrap_or_else(|e| panic!("NCCL staging download: {e}"))
    }
}

fn fail(op: &str, e: cudarc::nccl::result::NcclError) -> ! {
    panic!("NCCL {op} failed: {e:?}")
}

impl Comm for NcclComm<'_> {
    fn rank(&self) -> usize {
        self.comm.rank()
    }
    fn size(&self) -> usize {
        self.comm.world_size()
    }
    fn all_gather(&self, send: &[u8]) -> Vec<Vec<u8>> {
        let k = self.size();
        let lens = self.gather_u64(&[send.len() as u64]);
        let max = lens.iter().copied().max().unwrap_or(0) as usize;
        if max == 0 {
            return vec![Vec::new(); k];
        }
        let mut padded = send.to_vec();
        padded.resize(max, 0);
        let d_send = self.upload(&padded);
        let mut d_recv: CudaSlice<u8> = self.alloc(max * k);
        self.comm
            .all_gather(&d_send, &mut d_recv)
            .unwrap_or_else(|e| fail("ncclAllGather", e));
        self.add_sent(max * (k - 1));
        let all = self.download(&d_recv);
        (0..k)
            .map(|r| all[r * max..r * max + lens[r] as usize].to_vec())
            .collect()
    }
    fn all_to_all_v(&self, send: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        let (k, me) = (self.size(), self.rank());
        assert_eq!(send.len(), k, "one buffer per rank");
        let lens: Vec<u64> = send.iter().map(|b| b.len() as u64).collect();
        // m[s * k + d]: bytes from s to d.
        let m = self.gather_u64(&lens);
        let d_send: Vec<Option<CudaSlice<u8>>> = (0..k)
            .map(|d| (!send[d].is_empty()).then(|| self.upload(&send[d])))
            .collect();
        let mut d_recv: Vec<Option<CudaSlice<u8>>> = (0..k)
            .map(|s| {
                let len = m[s * k + me] as usize;
                (len > 0).then(|| self.alloc(len))
            })
            .collect();
        {
            let mut g = self.comm.group();
            for (d, b) in d_send.iter().enumerate() {
                if let Some(b) = b {
                    g.send(b.slice(..), d as i32)
                        .unwrap_or_else(|e| fail("ncclSend", e));
                }
            }
            for (s, b) in d_recv.iter_mut().enumerate() {
                if let Some(b) = b {
                    g.recv(b.slice_mut(..), s as i32)
                        .unwrap_or_else(|e| fail("ncclRecv", e));
                }
            }
            // ncclGroupEnd when the group drops.
        }
        self.add_sent(
            send.iter()
                .enumerate()
                .filter(|&(d, _)| d != me)
                .map(|(_, b)| b.len())
                .sum(),
        );
        d_recv
            .iter()
            .map(|b| b.as_ref().map_or_else(Vec::new, |b| self.download(b)))
            .collect()
    }
    fn bytes_sent(&self) -> u64 {
        self.sent.get()
    }
}

/// Runs `f(comm, gpu)` on one rank per GPU of `gpus` (a thread each, rank = position), over
/// NCCL, and returns the results by rank. A failing rank cannot release the others from an NCCL
/// collective, so a panic in a rank ends the process (exit status 101) after its message.
pub fn run_nccl<T: Send>(
    gpus: &[&Gpu],
    f: impl Fn(&dyn Comm, &Gpu) -> T + Sync,
) -> Result<Vec<T>, NcclError> {
    ensure_loadable()?;
    nvls_off();
    if gpus.is_empty() {
        return Err(NcclError::Devices("no GPU given".into()));
    }
    let mut ordinals: Vec<usize> = gpus.iter().map(|g| g.info().ordinal).collect();
    ordinals.sort_unstable();
    if ordinals.windows(2).any(|w| w[0] == w[1]) {
        return Err(NcclError::Devices(
            "NCCL takes one rank per device: the same GPU appears twice (virtual ranks on one \
             GPU exchange through memory: --ranks)"
                .into(),
        ));
    }
    let id = Id::new().map_err(call("ncclGetUniqueId"))?;
    let k = gpus.len();
    // No rank drops (aborts) its communicator before every rank's work is done on the device.
    let done = std::sync::Barrier::new(k);
    std::thread::scope(|s| {
        let handles: Vec<_> = gpus
            .iter()
            .enumerate()
            .map(|(r, gpu)| {
                let (f, done) = (&f, &done);
                s.spawn(move || {
                    struct ExitOnPanic;
                    impl Drop for ExitOnPanic {
                        fn drop(&mut self) {
                            if std::thread::panicking() {
                                eprintln!("an NCCL rank failed (above); ending the process");
                                std::process::exit(101);
                            }
                        }
                    }
                    let _guard = ExitOnPanic;
                    let comm = match NcclComm::new(gpu, r, k, id) {
                        Ok(c) => c,
                        // The other ranks wait in ncclCommInitRank for this one.
                        Err(e) if k > 1 => {
                            eprintln!("NCCL rank {r}: {e}; ending the process");
                            std::process::exit(1)
                        }
                        Err(e) => return Err(e),
                    };
                    let out = f(&comm, gpu);
                    if let Err(e) = gpu.sync() {
                        panic!("NCCL rank {r}: {e}");
                    }
                    done.wait();
                    drop(comm);
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}
