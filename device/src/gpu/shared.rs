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
