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
        #[cfg(target_arch = "nvptx64")]
        core::arch::global_asm!(
            concat!(".shared .align 16 .b8 wk_smem_", stringify!($name), "[{bytes}];"),
            bytes = const ($len) * core::mem::size_of::<$ty>(),
        );
        // The host build checks the size expression too (and so uses its constants).
        #[cfg(not(target_arch = "nvptx64"))]
        const _: usize = ($len) * core::mem::size_of::<$ty>();
        #[$crate::gpu_only]
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

use warpkit_macros::gpu_only;

/// Declares a block-shared array addressed by its 32-bit shared-window address: `fn name() ->
/// u32`, for the [`SharedScalar`] loads and stores (`ld.shared` with a 32-bit register, no
/// conversion from a generic pointer).
///
/// ```ignore
/// static_shared_window!(scratch: [f64; 2048]);   // fn scratch() -> u32
/// ```
#[macro_export]
macro_rules! static_shared_window {
    ($vis:vis $name:ident : [$ty:ty; $len:expr]) => {
        #[cfg(target_arch = "nvptx64")]
        core::arch::global_asm!(
            concat!(".shared .align 16 .b8 wk_smem_", stringify!($name), "[{bytes}];"),
            bytes = const ($len) * core::mem::size_of::<$ty>(),
        );
        // The host build checks the size expression too (and so uses its constants).
        #[cfg(not(target_arch = "nvptx64"))]
        const _: usize = ($len) * core::mem::size_of::<$ty>();
        #[$crate::gpu_only]
        #[inline(always)]
        $vis fn $name() -> u32 {
            let p: u32;
            // SAFETY: reads a symbol's shared-window address; touches no memory.
            unsafe {
                core::arch::asm!(
                    concat!("mov.u32 {p}, wk_smem_", stringify!($name), ";"),
                    p = out(reg32) p,
                    options(pure, nomem, nostack)
                )
            };
            p
        }
    };
}

/// Loads, stores and reductions on block-shared memory by 32-bit shared-window address
/// ([`static_shared_window!`], [`shared_addr`]): `ld.shared`, `st.shared`, `red.shared.add`.
///
/// # Safety (every method)
/// `addr` is aligned for the access (16 bytes for the four-value forms of `f32`, 16 for each half
/// of `f64`'s), inside the block's shared memory; reads see only writes ordered before them by a
/// barrier.
pub trait SharedScalar: Copy {
    /// Bytes per value.
    const SIZE: u32;
    /// One value.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn load(addr: u32) -> Self;
    /// One value.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn store(addr: u32, v: Self);
    /// Four consecutive values with vector loads.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn load4(addr: u32) -> [Self; 4];
    /// Four consecutive values with vector stores.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn store4(addr: u32, v: [Self; 4]);
    /// `red.shared.add`: an atomic add without a result.
    ///
    /// # Safety
    /// See the trait docs.
    unsafe fn red_add(addr: u32, v: Self);
}

impl SharedScalar for f32 {
    const SIZE: u32 = 4;
    #[gpu_only]
    #[inline(always)]
    unsafe fn load(addr: u32) -> Self {
        let v: f32;
        // SAFETY: per the trait's contract.
        unsafe {
            core::arch::asm!("ld.shared.f32 {v}, [{a}];", a = in(reg32) addr, v = out(reg32) v,
                options(pure, nostack, readonly))
        };
        v
    }
    #[gpu_only]
    #[inline(always)]
    unsafe fn store(addr: u32, v: Self) {
        // SAFETY: per the trait's contract.
        unsafe {
            core::arch::asm!("st.shared.f32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) v,
                options(nostack))
        };
    }
    #[gpu_only]
    #[inline(always)]
    unsafe fn load4(addr: u32) -> [Self; 4] {
        // SAFETY: per the trait's contract.
        unsafe { ld_shared_v4(addr) }
    }
    #[gpu_only]
    #[inline(always)]
    unsafe fn store4(addr: u32, v: [Self; 4]) {
        // SAFETY: per the trait's contract.
        unsafe {
            core::arch::asm!("st.shared.v4.f32 [{a}], {{{x}, {y}, {z}, {w}}};", a = in(reg32) addr,
                x = in(reg32) v[0], y = in(reg32) v[1], z = in(reg32) v[2], w = in(reg32) v[3],
                options(nostack))
        };
    }
    #[gpu_only]
    #[inline(always)]
    unsafe fn red_add(addr: u32, v: Self) {
        // SAFETY: per the trait's contract.
        unsafe {
            core::arch::asm!("red.shared.add.f32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) v,
                options(nostack))
        };
    }
}

impl SharedScalar for f64 {
    const SIZE: u32 = 8;
    #[gpu_only]
    #[inline(always)]
    unsafe fn load(addr: u32) -> Self {
        let v: f64;
        // SAFETY: per the trait's contract.
        unsafe {
            core::arch::asm!("ld.shared.f64 {v}, [{a}];", a = in(reg32) addr, v = out(reg64) v,
                options(pure, nostack, readonly))
        };
        v
    }
    #[gpu_only]
    #[inline(always)]
    unsafe fn store(addr: u32, v: Self) {
        // SAFETY: per the trait's contract.
        unsafe {
            core::arch::asm!("st.shared.f64 [{a}], {v};", a = in(reg32) addr, v = in(reg64) v,
                options(nostack))
        };
    }
    #[gpu_only]
    #[inline(always)]
    unsafe fn load4(addr: u32) -> [Self; 4] {
        let (x, y, z, w): (f64, f64, f64, f64);
        // SAFETY: per the trait's contract.
        unsafe {
            core::arch::asm!("ld.shared.v2.f64 {{{x}, {y}}}, [{a}];",
                "ld.shared.v2.f64 {{{z}, {w}}}, [{a}+16];", a = in(reg32) addr,
                x = out(reg64) x, y = out(reg64) y, z = out(reg64) z, w = out(reg64) w,
                options(pure, nostack, readonly))
        };
        [x, y, z, w]
    }
    #[gpu_only]
    #[inline(always)]
    unsafe fn store4(addr: u32, v: [Self; 4]) {
        // SAFETY: per the trait's contract.
        unsafe {
            core::arch::asm!("st.shared.v2.f64 [{a}], {{{x}, {y}}};",
                "st.shared.v2.f64 [{a}+16], {{{z}, {w}}};", a = in(reg32) addr,
                x = in(reg64) v[0], y = in(reg64) v[1], z = in(reg64) v[2], w = in(reg64) v[3],
                options(nostack))
        };
    }
    #[gpu_only]
    #[inline(always)]
    unsafe fn red_add(addr: u32, v: Self) {
        // SAFETY: per the trait's contract.
        unsafe {
            core::arch::asm!("red.shared.add.f64 [{a}], {v};", a = in(reg32) addr, v = in(reg64) v,
                options(nostack))
        };
    }
}

/// The shared-window address of a pointer into block-shared memory (for [`ld_shared_v4`]).
///
/// # Safety
/// `p` points into block-shared memory.
#[gpu_only]
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
#[gpu_only]
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
#[gpu_only]
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
