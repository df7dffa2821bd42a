//! Explicit shared-memory loads.
//!
//! A pointer from [`crate::static_shared!`] is a generic address, and a load through it compiles to
//! a generic `LD` (the hardware resolves the window at run time, with a longer latency than `LDS`).
//! These helpers convert the pointer back with `cvta.to.shared` (ptxas folds the pair of
//! conversions into a direct shared address) and load with `ld.shared`.
use core::arch::asm;

/// Four consecutive `f32` at `p` with one `ld.shared.v4.f32` (`LDS.128`).
///
/// # Safety
/// `p` points into block-shared memory (e.g. from [`crate::static_shared!`]), is 16-byte aligned,
/// and the 16 bytes are initialised; writes by other threads are ordered by a barrier.
#[inline(always)]
pub unsafe fn ld_shared_v4(p: *const [f32; 4]) -> [f32; 4] {
    let (x, y, z, w): (f32, f32, f32, f32);
    // SAFETY: per the contract; reads memory only (the barriers around it are memory clobbers).
    unsafe {
        asm!(
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
