//! Each cell's box of its particles and largest `h` ([`CellBox`]), bottom-up over the existing
//! octree: what every tree search's opening test reads.

use super::*;
use core::ptr::read_volatile;

/// Each cell's box of its particles and largest `h` ([`summarize_box`]) into `boxes`, children
/// before parents as `bh_summarize` orders them; `ready` (`layout.cells` entries, zeroed before
/// the launch) is set to 1 once a cell's box is written, and a parent waits for it. The tree is
/// built (`header.bottom` final). All blocks must be resident; `CELL_BLOCK`-thread blocks.
#[crate::kernel]
pub unsafe fn sph_cell_boxes(tree: TreeView, h: *const f32, boxes: *mut CellBox, ready: *mut u32) {
    let TreeView {
        bodies,
        n,
        header,
        child,
        next,
        layout,
        ..
    } = tree;
    let ni = n as i32;
    let cells = layout.cells as i32;
    let stride = grid_size_1d() as i32;
    // SAFETY: arrays sized per bh_build; every visited cell is in use.
    unsafe {
        let bottom = (*header).bottom;
        let mut j = index_1d() as i32;
        loop {
            let k = if layout.is_sparse() {
                cells - 1 - j
            } else {
                bottom + j
            };
            if k < 0 || k >= cells {
                break;
            }
            j += stride;
            if layout.is_sparse() && k != 0 && *child.add(k as usize) != ni + k {
                continue;
            }
            let c = DeviceBoxChildren {
                layout,
                cell: k,
                bodies,
                h,
                child,
                next,
                boxes,
                ready,
            };
            *boxes.add(k as usize) = summarize_box(&c, ni);
            store_release_u32(ready.add(k as usize), 1);
        }
    }
}

struct DeviceBoxChildren {
    layout: Layout,
    cell: i32,
    bodies: *const Body,
    h: *const f32,
    child: *const i32,
    next: *const i32,
    boxes: *const CellBox,
    ready: *const u32,
}

// SAFETY (every read below): pointers and indices as in `sph_cell_boxes`' contract.
impl BoxChildren for DeviceBoxChildren {
    #[inline(always)]
    fn slot(&self, octant: u32) -> i32 {
        unsafe { *self.child.add(self.layout.slot(self.cell, octant)) }
    }
    #[inline(always)]
    fn cell(&self, cc: usize) -> CellBox {
        unsafe {
            // Published with release after the box: poll relaxed, then one acquire.
            while load_relaxed_u32(self.ready.add(cc)) == 0 {}
            load_acquire_u32(self.ready.add(cc));
            read_volatile(self.boxes.add(cc))
        }
    }
    #[inline(always)]
    fn body(&self, b: i32) -> ([f32; 3], f32) {
        unsafe {
            (
                (*self.bodies.add(b as usize)).pos(),
                *self.h.add(b as usize),
            )
        }
    }
    #[inline(always)]
    fn next(&self, b: i32) -> i32 {
        unsafe { *self.next.add(b as usize) }
    }
}
