//! Static shared memory: the `__shared__ T name[N]` of CUDA C++.
//!
//! rustc cannot place a `static` in PTX's `.shared` state space, so [`static_shared!`] declares the
//! array in module-level PTX (`global_asm!`) and reads its address with `cvta.shared.u64`. ptxas
//! then reserves it in the block's shared memory of every kernel that uses it, and its size shows
//! in ptxas's `smem` report.
//!
//! Hazards, as in CUDA C++:
//! - the memory is per block, uninitialised at block start, and gone when the block ends;
//! - a write by one thread is visible to another only after a barrier
//!   ([`super::thread::sync_threads`], or [`super::warp::sync_warp`] within a warp);
//! - two kernels using the same array each get their own copy; one kernel calling the accessor in
//!   several places gets one array.

/// Declares a block-shared array and a function returning a raw pointer to its first element.
///
/// ```ignore
/// static_shared!(tile: [f32; 256]);        // fn tile() -> *mut f32
/// ```
/// The PTX symbol is `wk_smem_<name>`, so names must be unique within the device crate.
#[macro_export]
macro_rules! static_shared {
    ($vis:vis $name:ident : [$ty:ty; $len:expr]) => {
        core::arch::global_asm!(
            concat!(".shared .align 16 .b8 wk_smem_", stringify!($name), "[{bytes}];"),
            bytes = const ($len) * core::mem::size_of::<$ty>(),
        );
        #[inline(always)]
        $vis fn $name() -> *mut $ty {
            let p: u64;
            // SAFETY: takes the address of a symbol declared just above; no memory is touched.
            unsafe {
                core::arch::asm!(
                    concat!("cvta.shared.u64 {p}, wk_smem_", stringify!($name), ";"),
                    p = out(reg64) p,
                    options(pure, nomem, nostack)
                )
            };
            p as *mut $ty
        }
    };
}

/// The shared-window address of a pointer into block-shared memory (for [`ld_shared_v4`]).
///
/// # Safety
/// `p` points into block-shared memory.
#[inline(always)]
pub unsafe fn shared_addr<T>(p: *const T) -> u32 {
    let a: u32;
    // SAFETY: address arithmetic only.
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 t; cvta.to.shared.u64 t, {p}; cvt.u32.u64 {a}, t; }}",
            p = in(reg64) p as u64,
            a = out(reg32) a,
            options(pure, nomem, nostack)
        )
    };
    a
}

/// Loads 16 bytes from block-shared memory by shared-window address with `ld.shared.v4`: a
/// generic pointer carried through a loop compiles to a generic `LD`, which ptxas cannot turn
/// into `LDS` on its own.
///
/// # Safety
/// `addr` is 16-byte aligned, inside the block's shared memory, and written (and made visible by a
/// barrier) before the load.
#[inline(always)]
pub unsafe fn ld_shared_v4(addr: u32) -> [f32; 4] {
    let (x, y, z, w): (f32, f32, f32, f32);
    // SAFETY: per the contract; `readonly` keeps the load after the barriers that order it.
    unsafe {
        core::arch::asm!(
            "ld.shared.v4.f32 {{{x}, {y}, {z}, {w}}}, [{a}];",
            a = in(reg32) addr,
            x = out(reg32) x,
            y = out(reg32) y,
            z = out(reg32) z,
            w = out(reg32) w,
            options(pure, readonly, nostack)
        )
    };
    [x, y, z, w]
}

/// [`ld_shared_v4`] through a generic pointer into shared memory (e.g. from [`static_shared!`]);
/// ptxas folds the `cvta.to.shared` with the pointer's own `cvta.shared`.
///
/// # Safety
/// As [`ld_shared_v4`], for the shared location `p` points to.
#[inline(always)]
pub unsafe fn ld_shared_v4_ptr(p: *const [f32; 4]) -> [f32; 4] {
    let (x, y, z, w): (f32, f32, f32, f32);
    // SAFETY: per the contract; reads memory only (the barriers around it are memory clobbers).
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 a; cvta.to.shared.u64 a, {p}; ld.shared.v4.f32 {{{x}, {y}, {z}, {w}}}, [a]; }}",
            p = in(reg64) p as u64,
            x = out(reg32) x,
            y = out(reg32) y,
            z = out(reg32) z,
            w = out(reg32) w,
            options(pure, readonly, nostack)
        )
    };
    [x, y, z, w]
}
