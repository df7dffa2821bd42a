//! Loads from global memory through pointers that arrive as plain addresses.
//!
//! A kernel's pointer parameters are known to the backend to address global memory: loads
//! through them compile to `ld.global`. A pointer that arrives inside a by-value struct (a view
//! of several buffers, such as the octree's) reaches the kernel as an integer (rustc passes a
//! struct parameter as an integer array), so the same loads compile to generic `ld`s, and ptxas
//! holds more registers through a loop around them (the gravity walk: 53 → 64 registers, back
//! to 53 with these loads). [`load`] says the space itself.

use warpkit_macros::gpu_only;

/// `*p` by `ld.global` (one `b32`, `v2.b32` or `v4.b32` load for `T` of 4, 8 or 16 bytes; two
/// `v4` loads for 32). Other sizes do not compile.
///
/// # Safety
/// `p` points into global memory (a device buffer), aligned to `T`'s size (16 for 32 bytes),
/// valid for the read; `T` is plain data (any bit pattern of its size read is one of its values
/// where it is read).
#[inline(always)]
pub unsafe fn load<T: Copy>(p: *const T) -> T {
    const { assert!(matches!(core::mem::size_of::<T>(), 4 | 8 | 16 | 32)) };
    // SAFETY: per the contract; the sizes match the transmutes.
    unsafe {
        match core::mem::size_of::<T>() {
            4 => core::mem::transmute_copy(&ld_b32(p.cast())),
            8 => core::mem::transmute_copy(&ld_v2(p.cast())),
            16 => core::mem::transmute_copy(&ld_v4(p.cast())),
            _ => {
                let q: *const [u32; 4] = p.cast();
                core::mem::transmute_copy(&[ld_v4(q), ld_v4(q.add(1))])
            }
        }
    }
}

#[gpu_only]
#[inline(always)]
unsafe fn ld_b32(p: *const u32) -> u32 {
    let v: u32;
    // SAFETY: per `load`'s contract; a read of memory only.
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 a; cvta.to.global.u64 a, {p}; ld.global.b32 {v}, [a]; }}",
            p = in(reg64) p as u64,
            v = out(reg32) v,
            options(pure, readonly, nostack)
        )
    };
    v
}

#[gpu_only]
#[inline(always)]
unsafe fn ld_v2(p: *const [u32; 2]) -> [u32; 2] {
    let (x, y): (u32, u32);
    // SAFETY: per `load`'s contract; a read of memory only.
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 a; cvta.to.global.u64 a, {p}; ld.global.v2.b32 {{{x}, {y}}}, [a]; }}",
            p = in(reg64) p as u64,
            x = out(reg32) x,
            y = out(reg32) y,
            options(pure, readonly, nostack)
        )
    };
    [x, y]
}

#[gpu_only]
#[inline(always)]
unsafe fn ld_v4(p: *const [u32; 4]) -> [u32; 4] {
    let (x, y, z, w): (u32, u32, u32, u32);
    // SAFETY: per `load`'s contract; a read of memory only.
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 a; cvta.to.global.u64 a, {p}; ld.global.v4.b32 {{{x}, {y}, {z}, {w}}}, [a]; }}",
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
