//! Tree access for the estimators: [`TreeView`] over host slices or device pointers.

use super::*;

/// Read access to an octree in `crate::bh`'s layout: child slots (`n + cell` for a cell, a body
/// index heading a bucket chain through `next`, or negative for empty), cell summaries, bodies.
/// The octree part (bodies, slots, summaries; the root is the last cell) is [`Octree`], which
/// the generic walk reads.
pub trait TreeView: Octree {
    /// Half the root cell's width.
    fn root_half(&self) -> f32;
    /// Area-weighted normal of body `i` (winding number only).
    fn body_dipole(&self, i: i32) -> [f32; 3];
    /// Summed area-weighted normal of cell `c` (winding number only).
    fn cell_dipole(&self, c: i32) -> [f32; 3];
    /// Whether the wide-node layout (module `wide`) is present: `levels = 2` then reads it.
    fn has_wide(&self) -> bool;
    /// Row `r` of the wide layout's summaries (and header pick weights).
    fn wide_pm(&self, r: u32) -> Body;
    /// Rows `r..r + 4` of the wide layout's summaries (one address for the four loads).
    #[inline(always)]
    fn wide_pm4(&self, r: u32) -> [Body; 4] {
        core::array::from_fn(|i| self.wide_pm(r + i as u32))
    }
    /// Dipoles of the wide entries at rows `r..r + 4`.
    #[inline(always)]
    fn wide_dipole4(&self, r: u32) -> [[f32; 3]; 4] {
        core::array::from_fn(|i| self.wide_dipole(r + i as u32))
    }
    /// Row `r` of the wide layout's links, weights and headers.
    fn wide_meta(&self, r: u32) -> WideMeta;
    /// Dipole of the wide entry at row `r` (winding number only).
    fn wide_dipole(&self, r: u32) -> [f32; 3];
}

/// A tree in host slices. `body_dipole`, `cell_dipole` and `wide_dipole` may be empty unless the
/// kernel is the winding number; the wide layout (`wide_pm`, `wide_meta`) may be empty (then
/// `levels = 2` walks the octree itself).
#[derive(Clone, Copy, Debug)]
pub struct SliceTree<'a> {
    pub bodies: &'a [Body],
    pub body_dipole: &'a [[f32; 3]],
    pub child: &'a [i32],
    pub next: &'a [i32],
    pub cell_pm: &'a [Body],
    pub cell_dipole: &'a [[f32; 3]],
    pub root_half: f32,
    pub wide_pm: &'a [Body],
    pub wide_meta: &'a [WideMeta],
    pub wide_dipole: &'a [Body],
}

/// The stochastic estimator reads trees in dense storage (`crate::bh::Layout`); its slot formula
/// does not depend on the capacity.
pub(super) const DENSE: crate::bh::Layout = crate::bh::Layout::dense(0);

impl TreeView for SliceTree<'_> {
    #[inline(always)]
    fn root_half(&self) -> f32 {
        self.root_half
    }
    #[inline(always)]
    fn body_dipole(&self, i: i32) -> [f32; 3] {
        self.body_dipole[i as usize]
    }
    #[inline(always)]
    fn cell_dipole(&self, c: i32) -> [f32; 3] {
        self.cell_dipole[c as usize]
    }
    #[inline(always)]
    fn has_wide(&self) -> bool {
        !self.wide_pm.is_empty()
    }
    #[inline(always)]
    fn wide_pm(&self, r: u32) -> Body {
        self.wide_pm[r as usize]
    }
    #[inline(always)]
    fn wide_meta(&self, r: u32) -> WideMeta {
        self.wide_meta[r as usize]
    }
    #[inline(always)]
    fn wide_dipole(&self, r: u32) -> [f32; 3] {
        let d = self.wide_dipole[r as usize];
        [d.x, d.y, d.z]
    }
}

impl Octree for SliceTree<'_> {
    #[inline(always)]
    fn n(&self) -> i32 {
        self.bodies.len() as i32
    }
    #[inline(always)]
    fn root(&self) -> i32 {
        self.cell_pm.len() as i32 - 1
    }
    #[inline(always)]
    fn child(&self, cell: i32, octant: u32) -> i32 {
        self.child[DENSE.slot(cell, octant)]
    }
    #[inline(always)]
    fn next(&self, body: i32) -> i32 {
        self.next[body as usize]
    }
    #[inline(always)]
    fn body(&self, i: i32) -> Body {
        self.bodies[i as usize]
    }
    #[inline(always)]
    fn cell(&self, c: i32) -> Body {
        self.cell_pm[c as usize]
    }
}

/// A tree in device memory, read through raw pointers (the kernels' view).
#[derive(Clone, Copy, Debug)]
pub struct RawTree {
    bodies: *const Body,
    body_dipole: *const [f32; 3],
    child: *const i32,
    next: *const i32,
    cell_pm: *const Body,
    cell_dipole: *const [f32; 3],
    wide_pm: *const Body,
    wide_meta: *const WideMeta,
    wide_dipole: *const Body,
    n: i32,
    cells: i32,
    root_half: f32,
}

impl RawTree {
    /// # Safety
    /// `bodies` and `next` hold `n` entries, `cell_pm` `cells`, `child` `8 * cells`, forming a
    /// complete tree of `crate::bh`'s layout whose root has half-width `root_half`; the dipole
    /// arrays hold as many entries as bodies and cells, or are null when the winding number is
    /// not evaluated. `wide_pm` is null (no wide layout) or, with `wide_meta`, the wide layout
    /// of this tree (module `wide`), `wide_dipole` too when the winding number is evaluated.
    /// Everything stays valid and unchanged while the view is used.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub unsafe fn new(
        bodies: *const Body,
        body_dipole: *const [f32; 3],
        child: *const i32,
        next: *const i32,
        cell_pm: *const Body,
        cell_dipole: *const [f32; 3],
        wide_pm: *const Body,
        wide_meta: *const WideMeta,
        wide_dipole: *const Body,
        n: u32,
        cells: u32,
        root_half: f32,
    ) -> Self {
        RawTree {
            bodies,
            body_dipole,
            child,
            next,
            cell_pm,
            cell_dipole,
            wide_pm,
            wide_meta,
            wide_dipole,
            n: n as i32,
            cells: cells as i32,
            root_half,
        }
    }
}

// SAFETY (every read below): indices come from the tree itself, which the contract of
// `RawTree::new` makes complete and in bounds.
impl TreeView for RawTree {
    #[inline(always)]
    fn root_half(&self) -> f32 {
        self.root_half
    }
    #[inline(always)]
    fn body_dipole(&self, i: i32) -> [f32; 3] {
        unsafe { *self.body_dipole.add(i as usize) }
    }
    #[inline(always)]
    fn cell_dipole(&self, c: i32) -> [f32; 3] {
        unsafe { *self.cell_dipole.add(c as usize) }
    }
    #[inline(always)]
    fn has_wide(&self) -> bool {
        !self.wide_pm.is_null()
    }
    #[inline(always)]
    fn wide_pm(&self, r: u32) -> Body {
        unsafe { *self.wide_pm.add(r as usize) }
    }
    #[inline(always)]
    fn wide_pm4(&self, r: u32) -> [Body; 4] {
        let p = unsafe { self.wide_pm.add(r as usize) };
        core::array::from_fn(|i| unsafe { *p.add(i) })
    }
    #[inline(always)]
    fn wide_dipole4(&self, r: u32) -> [[f32; 3]; 4] {
        let p = unsafe { self.wide_dipole.add(r as usize) };
        core::array::from_fn(|i| {
            let d = unsafe { *p.add(i) };
            [d.x, d.y, d.z]
        })
    }
    #[inline(always)]
    fn wide_meta(&self, r: u32) -> WideMeta {
        unsafe { *self.wide_meta.add(r as usize) }
    }
    #[inline(always)]
    fn wide_dipole(&self, r: u32) -> [f32; 3] {
        let d = unsafe { *self.wide_dipole.add(r as usize) };
        [d.x, d.y, d.z]
    }
}

// SAFETY (every read below): as above.
impl Octree for RawTree {
    #[inline(always)]
    fn n(&self) -> i32 {
        self.n
    }
    #[inline(always)]
    fn root(&self) -> i32 {
        self.cells - 1
    }
    #[inline(always)]
    fn child(&self, cell: i32, octant: u32) -> i32 {
        unsafe { *self.child.add(DENSE.slot(cell, octant)) }
    }
    #[inline(always)]
    fn next(&self, body: i32) -> i32 {
        unsafe { *self.next.add(body as usize) }
    }
    #[inline(always)]
    fn body(&self, i: i32) -> Body {
        unsafe { *self.bodies.add(i as usize) }
    }
    #[inline(always)]
    fn cell(&self, c: i32) -> Body {
        unsafe { *self.cell_pm.add(c as usize) }
    }
}

/// What source `i` (cell `i` when `cell`, else body `i`) brings to [`term`] besides its summary:
/// its area-weighted normal for the winding number, zero for every other kernel.
#[inline(always)]
pub fn dipole_of<V: TreeView>(v: &V, k: KernelSpec, cell: bool, i: i32) -> [f32; 3] {
    if k.kind != KIND_WINDING {
        [0.0; 3]
    } else if cell {
        v.cell_dipole(i)
    } else {
        v.body_dipole(i)
    }
}

/// The term of body `i` and its weight.
#[inline(always)]
pub(super) fn body_term<V: TreeView>(v: &V, k: KernelSpec, q: [f32; 3], i: i32) -> (f32, f32) {
    let b = v.body(i);
    (term(k, q, &b, dipole_of(v, k, false, i)), b.m)
}

/// The Barnes–Hut term of cell `c` (its summary as one source) and its summary.
#[inline(always)]
pub(super) fn cell_term<V: TreeView>(v: &V, k: KernelSpec, q: [f32; 3], c: i32) -> (f32, Body) {
    let s = v.cell(c);
    (term(k, q, &s, dipole_of(v, k, true, c)), s)
}

/// The summed terms and weights of the bodies in the bucket chain that starts at `b`.
#[inline(always)]
pub(super) fn chain_terms<V: TreeView>(
    v: &V,
    k: KernelSpec,
    q: [f32; 3],
    mut b: i32,
) -> (f32, f32) {
    let (mut f, mut w) = (0.0, 0.0);
    while b >= 0 {
        let (fb, wb) = body_term(v, k, q, b);
        f += fb;
        w += wb;
        b = v.next(b);
    }
    (f, w)
}
