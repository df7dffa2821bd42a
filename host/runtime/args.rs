//! How a launch's argument tuple meets a kernel's contract.
//!
//! A `#[kernel]` contract lists its parameters as types ([`DevPtr`], [`DevMut`], values). A tuple
//! of arguments is accepted only where each element implements [`KernelArg`] for its parameter:
//!
//! | parameter | accepted arguments |
//! | --- | --- |
//! | `DevPtr<T>` (`*const T`) | `&CudaSlice<T>`, `&mut CudaSlice<T>`, `&CudaView<T>`, `Option<&CudaSlice<T>>`, [`Null`] |
//! | `DevMut<T>` (`*mut T`) | `&mut CudaSlice<T>`, `&mut CudaViewMut<T>`, `Option<&mut CudaSlice<T>>`, [`Null`] |
//! | a value `T` (`bytemuck::Pod`) | `T` |
//! | a view `T` ([`DeviceView`]: e.g. the octree) | [`View<T>`] from its owner's `view` |
//! | a writable view `T` ([`DeviceViewMut`]) | [`ViewMut<T>`] from its owner's `view_mut` |
//!
//! So a wrong count, order, element type or mutability is a compile error at the launch.

use bytemuck::Pod;
use core::marker::PhantomData;
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DeviceRepr, LaunchArgs, PushKernelArg};
use warpkit_gpu::{DevMut, DevPtr, DeviceView, DeviceViewMut};

/// An argument that can stand for kernel parameter `P`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a kernel parameter `{P}`",
    label = "this argument does not match the kernel's parameter",
    note = "`*const T` parameters take `&CudaSlice<T>` (or `Null`), `*mut T` parameters take \
            `&mut CudaSlice<T>`, value parameters take the value itself"
)]
pub trait KernelArg<P> {
    /// Appends the argument to a cudarc launch.
    fn push<'a>(&'a mut self, args: &mut LaunchArgs<'a>);
}

/// A whole argument list for parameter tuple `P`.
#[diagnostic::on_unimplemented(
    message = "these arguments do not match the kernel's parameters `{P}`",
    note = "pass one argument per kernel parameter, in order, as a tuple"
)]
pub trait KernelArgs<P> {
    /// Appends every argument in order.
    fn push_all<'a>(&'a mut self, args: &mut LaunchArgs<'a>);
}

/// A null device pointer, for parameters a kernel documents as optional.
#[derive(Clone, Copy, Debug)]
pub struct Null;

/// The null pointer's bytes; cudarc passes parameters by address.
static NULL_PTR: u64 = 0;

impl<T> KernelArg<DevPtr<T>> for Null {
    fn push<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        args.arg(&NULL_PTR);
    }
}
impl<T> KernelArg<DevMut<T>> for Null {
    fn push<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        args.arg(&NULL_PTR);
    }
}

impl<T> KernelArg<DevPtr<T>> for &CudaSlice<T> {
    fn push<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        args.arg(*self);
    }
}
impl<T> KernelArg<DevPtr<T>> for &mut CudaSlice<T> {
    fn push<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        args.arg(&**self);
    }
}
impl<T> KernelArg<DevMut<T>> for &mut CudaSlice<T> {
    fn push<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        args.arg(&mut **self);
    }
}
impl<T> KernelArg<DevPtr<T>> for &CudaView<'_, T> {
    fn push<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        args.arg(*self);
    }
}
impl<T> KernelArg<DevMut<T>> for &mut CudaViewMut<'_, T> {
    fn push<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        args.arg(&mut **self);
    }
}

/// `Some(buffer)` or a null pointer, for parameters a kernel documents as optional.
impl<T> KernelArg<DevPtr<T>> for Option<&CudaSlice<T>> {
    fn push<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        match self {
            Some(s) => args.arg(*s),
            None => args.arg(&NULL_PTR),
        };
    }
}
impl<T> KernelArg<DevMut<T>> for Option<&mut CudaSlice<T>> {
    fn push<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        match self {
            Some(s) => args.arg(&mut **s),
            None => args.arg(&NULL_PTR),
        };
    }
}
impl<T> KernelArg<DevMut<T>> for Option<CudaViewMut<'_, T>> {
    fn push<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        match self {
            Some(v) => args.arg(v),
            None => args.arg(&NULL_PTR),
        };
    }
}

/// A by-value parameter as cudarc passes it: the value's bytes.
#[repr(transparent)]
struct PodArg<T>(T);

// SAFETY: T is Pod (any bit pattern, no padding or pointers to track), and the contract's type is
// the kernel's own parameter type, so the bytes are what the kernel reads.
unsafe impl<T: Pod> DeviceRepr for PodArg<T> {}

impl<T: Pod> KernelArg<T> for T {
    fn push<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        // SAFETY: PodArg<T> is #[repr(transparent)] over T.
        let v: &'a PodArg<T> = unsafe { &*(self as *const T as *const PodArg<T>) };
        args.arg(v);
    }
}

/// A [`DeviceView`] argument: the view's value, made from buffers that stay borrowed (shared)
/// for `'a`, so no launch can hold them mutably at the same time.
#[derive(Clone, Copy, Debug)]
pub struct View<'a, T> {
    value: T,
    _borrow: PhantomData<&'a ()>,
}

/// A [`DeviceViewMut`] argument: the view's value, made from buffers borrowed mutably for `'a`.
#[derive(Debug)]
pub struct ViewMut<'a, T> {
    value: T,
    _borrow: PhantomData<&'a mut ()>,
}

impl<T: DeviceView> View<'_, T> {
    /// # Safety
    /// Every pointer in `value` addresses a live device buffer, borrowed for the view's lifetime
    /// and sized as `T` documents.
    pub unsafe fn new(value: T) -> Self {
        View {
            value,
            _borrow: PhantomData,
        }
    }

    /// The value the kernel receives.
    pub fn get(&self) -> T {
        self.value
    }
}

impl<T: DeviceViewMut> ViewMut<'_, T> {
    /// # Safety
    /// As [`View::new`], the buffers borrowed mutably.
    pub unsafe fn new(value: T) -> Self {
        ViewMut {
            value,
            _borrow: PhantomData,
        }
    }

    /// The value the kernel receives.
    pub fn get(&self) -> T {
        self.value
    }
}

/// A view as cudarc passes it: the value's bytes.
#[repr(transparent)]
struct ViewBytes<T>(T);

// SAFETY: a DeviceView is #[repr(C)] of pointers and plain values (its trait's contract), and the
// contract's type is the kernel's own parameter type.
unsafe impl<T: Copy> DeviceRepr for ViewBytes<T> {}

impl<T: DeviceView> KernelArg<T> for View<'_, T> {
    fn push<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        // SAFETY: ViewBytes<T> is #[repr(transparent)] over T.
        let v: &'a ViewBytes<T> = unsafe { &*(&self.value as *const T as *const ViewBytes<T>) };
        args.arg(v);
    }
}

impl<T: DeviceViewMut> KernelArg<T> for ViewMut<'_, T> {
    fn push<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        // SAFETY: as above.
        let v: &'a ViewBytes<T> = unsafe { &*(&self.value as *const T as *const ViewBytes<T>) };
        args.arg(v);
    }
}

macro_rules! tuple_args {
    ($($p:ident $a:ident $i:tt),*) => {
        impl<$($p, $a: KernelArg<$p>),*> KernelArgs<($($p,)*)> for ($($a,)*) {
            #[allow(unused_variables)]
            fn push_all<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
                $(self.$i.push(args);)*
            }
        }
    };
}

tuple_args!();
tuple_args!(P0 A0 0);
tuple_args!(P0 A0 0, P1 A1 1);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10, P11 A11 11);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13, P14 A14 14);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13, P14 A14 14, P15 A15 15);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13, P14 A14 14, P15 A15 15, P16 A16 16);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13, P14 A14 14, P15 A15 15, P16 A16 16,
    P17 A17 17);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13, P14 A14 14, P15 A15 15, P16 A16 16,
    P17 A17 17, P18 A18 18);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13, P14 A14 14, P15 A15 15, P16 A16 16,
    P17 A17 17, P18 A18 18, P19 A19 19);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13, P14 A14 14, P15 A15 15, P16 A16 16,
    P17 A17 17, P18 A18 18, P19 A19 19, P20 A20 20);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13, P14 A14 14, P15 A15 15, P16 A16 16,
    P17 A17 17, P18 A18 18, P19 A19 19, P20 A20 20, P21 A21 21);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13, P14 A14 14, P15 A15 15, P16 A16 16,
    P17 A17 17, P18 A18 18, P19 A19 19, P20 A20 20, P21 A21 21, P22 A22 22);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13, P14 A14 14, P15 A15 15, P16 A16 16,
    P17 A17 17, P18 A18 18, P19 A19 19, P20 A20 20, P21 A21 21, P22 A22 22, P23 A23 23);
tuple_args!(P0 A0 0, P1 A1 1, P2 A2 2, P3 A3 3, P4 A4 4, P5 A5 5, P6 A6 6, P7 A7 7, P8 A8 8,
    P9 A9 9, P10 A10 10, P11 A11 11, P12 A12 12, P13 A13 13, P14 A14 14, P15 A15 15, P16 A16 16,
    P17 A17 17, P18 A18 18, P19 A19 19, P20 A20 20, P21 A21 21, P22 A22 22, P23 A23 23,
    P24 A24 24);
