//! The octree as one kernel parameter: [`TreeView`] for the kernels that read it (the walks),
//! [`TreeViewMut`] for the stages that make it (reset, bounding box, build, summary, sort).
//!
//! The host owns the buffers (`warpkit::bh::gpu::DeviceOctree`) and passes a view made from
//! them, borrowed (`view`) or borrowed mutably (`view_mut`), so a launch's contract says what the
//! kernel may do with the tree as `&` and `&mut` do. On the device the view's fields are read
//! from the parameter space like separate parameters were; the kernels index them through the
//! [`Octree`] methods and the accessors below.

use super::*;
use crate::gpu::global::load;
use crate::gpu::{DeviceView, DeviceViewMut};

/// A built octree of `n` bodies in device memory, as a walk reads it: `bodies` and `next` hold
/// `n` entries, `child` `layout.slots()`, `count`, `start`, `cell_pm` and `cell_quad`
/// `layout.cells`; `sort` and `groups` `n` (the tree order and its warp groups, counted in
/// `header.groups`, once sorted).
///
/// `cell_quad` is null when the summary made no moments; `sort` is null in the one case that
/// walks the caller's order (the vote kernel unsorted). The header is read, but for the group
/// counter and the walk statistics that the group kernels advance with atomics.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TreeView {
    pub bodies: *const Body,
    pub child: *const i32,
    pub next: *const i32,
    pub count: *const u32,
    pub start: *const i32,
    pub cell_pm: *const Body,
    pub cell_quad: *const Quad,
    pub sort: *const u32,
    pub groups: *const [u32; 2],
    pub header: *mut TreeHeader,
    pub n: u32,
    pub layout: Layout,
}

// SAFETY: #[repr(C)]; raw pointers and Pod values only.
unsafe impl DeviceView for TreeView {}

/// [`TreeView`] for the stages that write it (same buffers and sizes): every array but the bodies
/// is written by one stage or another. `cell_quad` null: the summary makes no moments.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TreeViewMut {
    pub bodies: *const Body,
    pub child: *mut i32,
    pub next: *mut i32,
    pub count: *mut u32,
    pub start: *mut i32,
    pub cell_pm: *mut Body,
    pub cell_quad: *mut Quad,
    pub sort: *mut u32,
    pub groups: *mut [u32; 2],
    pub header: *mut TreeHeader,
    pub n: u32,
    pub layout: Layout,
}

// SAFETY: #[repr(C)]; raw pointers and Pod values only.
unsafe impl DeviceViewMut for TreeViewMut {}

impl TreeView {
    /// The body of tree position `k` (`sort[k]`, or `k` when `sort` is null).
    ///
    /// # Safety
    /// `k < n`.
    #[inline(always)]
    pub unsafe fn order(&self, k: u32) -> u32 {
        // SAFETY: per the contract.
        unsafe {
            if self.sort.is_null() {
                k
            } else {
                load(self.sort.add(k as usize))
            }
        }
    }

    /// Warp group `g`: (first tree position, size).
    ///
    /// # Safety
    /// `g < header.groups`.
    #[inline(always)]
    pub unsafe fn group(&self, g: u32) -> [u32; 2] {
        // SAFETY: per the contract.
        unsafe { load(self.groups.add(g as usize)) }
    }

    /// The root cell's centre and half width (from the header's box).
    ///
    /// # Safety
    /// The bounding box is complete.
    #[inline(always)]
    pub unsafe fn root_box(&self) -> ([f32; 3], f32) {
        // SAFETY: per the contract.
        root_cell(unsafe { &*self.header })
    }
}

impl TreeViewMut {
    /// The same tree, read only.
    #[inline(always)]
    pub fn read(self) -> TreeView {
        TreeView {
            bodies: self.bodies,
            child: self.child,
            next: self.next,
            count: self.count,
            start: self.start,
            cell_pm: self.cell_pm,
            cell_quad: self.cell_quad,
            sort: self.sort,
            groups: self.groups,
            header: self.header,
            n: self.n,
            layout: self.layout,
        }
    }
}

// The walk's loads, in global space (`crate::gpu::global`: the view's pointers are plain
// addresses to the backend).
impl Octree for TreeView {
    #[inline(always)]
    fn n(&self) -> i32 {
        self.n as i32
    }
    #[inline(always)]
    fn root(&self) -> i32 {
        self.layout.root()
    }
    #[inline(always)]
    fn child(&self, cell: i32, octant: u32) -> i32 {
        // SAFETY (all reads): indices of a complete tree in device buffers, per the type's
        // contract.
        unsafe { load(self.child.add(self.layout.slot(cell, octant))) }
    }
    #[inline(always)]
    fn next(&self, body: i32) -> i32 {
        unsafe { load(self.next.add(body as usize)) }
    }
    #[inline(always)]
    fn body(&self, i: i32) -> Body {
        unsafe { load(self.bodies.add(i as usize)) }
    }
    #[inline(always)]
    fn cell(&self, c: i32) -> Body {
        unsafe { load(self.cell_pm.add(c as usize)) }
    }
}
