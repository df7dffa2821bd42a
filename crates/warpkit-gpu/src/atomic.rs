//! Atomics at GPU scope (`atom.relaxed.gpu.*`) on generic addresses, so one function serves global
//! and shared memory.
//!
//! `core::sync::atomic` also works on nvptx but emits system scope (`.sys`), which orders against
//! the host and peer GPUs and costs more; warpkit's kernels only ever synchronise with other
//! threads of the same GPU. Pair with [`super::fence`] where ordering matters.
//!
//! # Safety (all functions here)
//! `ptr` must be valid, aligned, and point into global or shared memory that stays allocated for
//! the call.
#[cfg(target_arch = "nvptx64")]
use core::arch::asm;
use warpkit_macros::gpu_only;

macro_rules! atomic_rmw {
    ($(#[$doc:meta])* $name:ident, $ty:ty, $reg:ident, $op:literal) => {
        $(#[$doc])*
        /// Returns the value before the operation.
        ///
        /// # Safety
        /// See the module docs.
        #[gpu_only]
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $ty, value: $ty) -> $ty {
            let old: $ty;
            // SAFETY: caller guarantees `ptr`.
            unsafe {
                asm!(
                    concat!("atom.relaxed.gpu.", $op, " {old}, [{ptr}], {v};"),
                    ptr = in(reg64) ptr, v = in($reg) value, old = out($reg) old,
                    options(nostack)
                )
            };
            old
        }
    };
}

atomic_rmw!(/// `atomicAdd` on `u32`: `atom.relaxed.gpu.add.u32`.
    atomic_add_u32, u32, reg32, "add.u32");
atomic_rmw!(/// `atomicAdd` on `i32`: `atom.relaxed.gpu.add.s32`.
    atomic_add_i32, i32, reg32, "add.s32");
atomic_rmw!(/// `atomicAdd` on `u64`: `atom.relaxed.gpu.add.u64`.
    atomic_add_u64, u64, reg64, "add.u64");
atomic_rmw!(/// `atomicAdd` on `f32`: `atom.relaxed.gpu.add.f32` (round to nearest even).
    atomic_add_f32, f32, reg32, "add.f32");
atomic_rmw!(/// `atomicAdd` on `f64`: `atom.relaxed.gpu.add.f64` (sm_60+).
    atomic_add_f64, f64, reg64, "add.f64");
atomic_rmw!(/// `atomicExch` on `u32`: `atom.relaxed.gpu.exch.b32`.
    atomic_exch_u32, u32, reg32, "exch.b32");
atomic_rmw!(/// `atomicMin` on `i32`: `atom.relaxed.gpu.min.s32`.
    atomic_min_i32, i32, reg32, "min.s32");
atomic_rmw!(/// `atomicMax` on `i32`: `atom.relaxed.gpu.max.s32`.
    atomic_max_i32, i32, reg32, "max.s32");
atomic_rmw!(/// `atomicMin` on `u32`: `atom.relaxed.gpu.min.u32`.
    atomic_min_u32, u32, reg32, "min.u32");
atomic_rmw!(/// `atomicMax` on `u32`: `atom.relaxed.gpu.max.u32`.
    atomic_max_u32, u32, reg32, "max.u32");

/// `atomicCAS` on 32 bits: `atom.relaxed.gpu.cas.b32`. Stores `new` when `*ptr == compare`;
/// returns the value found (equal to `compare` exactly when the swap happened).
///
/// # Safety
/// See the module docs.
#[gpu_only]
#[inline(always)]
pub unsafe fn atomic_cas_u32(ptr: *mut u32, compare: u32, new: u32) -> u32 {
    let old: u32;
    // SAFETY: caller guarantees `ptr`.
    unsafe {
        asm!(
            "atom.relaxed.gpu.cas.b32 {old}, [{ptr}], {cmp}, {new};",
            ptr = in(reg64) ptr, cmp = in(reg32) compare, new = in(reg32) new, old = out(reg32) old,
            options(nostack)
        )
    };
    old
}

/// `atomicCAS` on `i32` (the octree's child slots hold signed markers).
///
/// # Safety
/// See the module docs.
#[inline(always)]
pub unsafe fn atomic_cas_i32(ptr: *mut i32, compare: i32, new: i32) -> i32 {
    // SAFETY: forwarded; i32 and u32 share size and alignment.
    unsafe { atomic_cas_u32(ptr.cast(), compare as u32, new as u32) as i32 }
}

/// Maximum of an `f32` slot by a CAS loop, for any sign (NaN never wins). Returns the old value.
///
/// # Safety
/// See the module docs.
#[inline(always)]
pub unsafe fn atomic_max_f32(ptr: *mut f32, value: f32) -> f32 {
    let slot = ptr.cast::<u32>();
    // SAFETY: caller guarantees `ptr`; a plain first read only seeds the loop.
    let mut seen = unsafe { core::ptr::read_volatile(slot) };
    while value > f32::from_bits(seen) {
        // SAFETY: as above.
        let found = unsafe { atomic_cas_u32(slot, seen, value.to_bits()) };
        if found == seen {
            break;
        }
        seen = found;
    }
    f32::from_bits(seen)
}

/// Minimum of an `f32` slot by a CAS loop, for any sign (NaN never wins). Returns the old value.
///
/// # Safety
/// See the module docs.
#[inline(always)]
pub unsafe fn atomic_min_f32(ptr: *mut f32, value: f32) -> f32 {
    let slot = ptr.cast::<u32>();
    // SAFETY: caller guarantees `ptr`; a plain first read only seeds the loop.
    let mut seen = unsafe { core::ptr::read_volatile(slot) };
    while value < f32::from_bits(seen) {
        // SAFETY: as above.
        let found = unsafe { atomic_cas_u32(slot, seen, value.to_bits()) };
        if found == seen {
            break;
        }
        seen = found;
    }
    f32::from_bits(seen)
}

/// A load that orders later accesses after it at GPU scope: `ld.acquire.gpu.b32`. The reading side
/// of a flag or lock published by [`store_release_u32`].
///
/// # Safety
/// See the module docs.
#[gpu_only]
#[inline(always)]
pub unsafe fn load_acquire_u32(ptr: *const u32) -> u32 {
    let v: u32;
    // SAFETY: caller guarantees `ptr`.
    unsafe {
        asm!("ld.acquire.gpu.b32 {v}, [{ptr}];", ptr = in(reg64) ptr, v = out(reg32) v,
            options(nostack))
    };
    v
}

/// A strong load without ordering at GPU scope: `ld.relaxed.gpu.b32` (served by L2, never a
/// stale L1 line; unlike [`load_acquire_u32`] it does not invalidate the SM's L1 afterwards). For
/// polling a flag, with one acquire load once it is seen set, or where a later atomic
/// re-validates the value read.
///
/// # Safety
/// See the module docs.
#[gpu_only]
#[inline(always)]
pub unsafe fn load_relaxed_u32(ptr: *const u32) -> u32 {
    let v: u32;
    // SAFETY: caller guarantees `ptr`.
    unsafe {
        asm!("ld.relaxed.gpu.b32 {v}, [{ptr}];", ptr = in(reg64) ptr, v = out(reg32) v,
            options(nostack))
    };
    v
}

/// A store that orders earlier accesses before it at GPU scope: `st.release.gpu.b32`.
///
/// # Safety
/// See the module docs.
#[gpu_only]
#[inline(always)]
pub unsafe fn store_release_u32(ptr: *mut u32, value: u32) {
    // SAFETY: caller guarantees `ptr`.
    unsafe {
        asm!("st.release.gpu.b32 [{ptr}], {v};", ptr = in(reg64) ptr, v = in(reg32) value,
            options(nostack))
    };
}

/// A strong store without ordering at GPU scope: `st.relaxed.gpu.b32`, for a flag that carries
/// its own payload (the reader polls it with [`load_relaxed_u32`] and needs nothing else the
/// writer wrote): no fence, where [`store_release_u32`] waits for the writer's earlier accesses.
///
/// # Safety
/// See the module docs.
#[gpu_only]
#[inline(always)]
pub unsafe fn store_relaxed_u32(ptr: *mut u32, value: u32) {
    // SAFETY: caller guarantees `ptr`.
    unsafe {
        asm!("st.relaxed.gpu.b32 [{ptr}], {v};", ptr = in(reg64) ptr, v = in(reg32) value,
            options(nostack))
    };
}

/// Types with a hardware `atom.add` at GPU scope: [`AtomicAdd::atomic_add`] picks the instruction.
pub trait AtomicAdd: Copy {
    /// `atomicAdd`: returns the value before.
    ///
    /// # Safety
    /// See the module docs.
    unsafe fn atomic_add(ptr: *mut Self, value: Self) -> Self;
}

macro_rules! atomic_add_impl {
    ($($t:ty => $f:ident),*) => {$(
        impl AtomicAdd for $t {
            #[inline(always)]
            unsafe fn atomic_add(ptr: *mut Self, value: Self) -> Self {
                // SAFETY: forwarded contract.
                unsafe { $f(ptr, value) }
            }
        }
    )*};
}
atomic_add_impl!(u32 => atomic_add_u32, i32 => atomic_add_i32, u64 => atomic_add_u64,
    f32 => atomic_add_f32, f64 => atomic_add_f64);
