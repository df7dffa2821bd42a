//! Barnes–Hut at query points as interactions of the generic walk (`crate::walk`).

use super::*;

// ---------------------------------------------------------------------------------------------
// Barnes–Hut at query points as interactions of the generic walk (`crate::walk`)
// ---------------------------------------------------------------------------------------------

/// One query and its running sum.
#[derive(Clone, Copy, Debug)]
pub struct Query {
    pub q: [f32; 3],
    pub total: f32,
}

/// The terms of a radial kernel `KIND` (not the winding number) of listed monopoles.
#[derive(Clone, Copy, Debug)]
pub struct Terms<const KIND: u32> {
    pub param: f32,
}

impl<const KIND: u32> Interaction for Terms<KIND> {
    type Extra = ();
    type Target = Query;
    #[inline(always)]
    fn cell_extra(&self, _: i32) {}
    #[inline(always)]
    fn body_extra(&self, _: i32) {}
    #[inline(always)]
    fn add(&self, t: &mut Query, s: &Body, _: &()) {
        let k = KernelSpec {
            kind: KIND,
            param: self.param,
        };
        t.total = term_add(k, t.q, s, [0.0; 3], t.total);
    }
}

/// The winding number's terms: each listed source with its area-weighted normal.
#[derive(Clone, Copy, Debug)]
pub struct WindingTerms<'v, V> {
    pub tree: &'v V,
}

impl<V: TreeView> Interaction for WindingTerms<'_, V> {
    type Extra = [f32; 4];
    type Target = Query;
    #[inline(always)]
    fn cell_extra(&self, c: i32) -> [f32; 4] {
        let d = self.tree.cell_dipole(c);
        [d[0], d[1], d[2], 0.0]
    }
    #[inline(always)]
    fn body_extra(&self, b: i32) -> [f32; 4] {
        let d = self.tree.body_dipole(b);
        [d[0], d[1], d[2], 0.0]
    }
    #[inline(always)]
    fn add(&self, t: &mut Query, s: &Body, d: &[f32; 4]) {
        let k = KernelSpec {
            kind: KIND_WINDING,
            param: 0.0,
        };
        t.total = term_add(k, t.q, s, [d[0], d[1], d[2]], t.total);
    }
}

/// A radial kernel's terms with listed cells' quadrupole moments ([`term_quad_add`]), each
/// prepared once per listed cell as a [`QuadTerm`]; bodies carry none.
#[derive(Clone, Copy, Debug)]
pub struct QuadTerms<Q, const KIND: u32> {
    pub param: f32,
    /// Per cell, as `crate::bh`'s summary computes them.
    pub quads: Q,
}

impl<Q: CellData<Quad>, const KIND: u32> Interaction for QuadTerms<Q, KIND> {
    type Extra = QuadTerm;
    type Target = Query;
    #[inline(always)]
    fn cell_extra(&self, c: i32) -> QuadTerm {
        QuadTerm::of(&self.quads.get(c))
    }
    #[inline(always)]
    fn body_extra(&self, _: i32) -> QuadTerm {
        QuadTerm::default()
    }
    #[inline(always)]
    fn add(&self, t: &mut Query, s: &Body, m: &QuadTerm) {
        let k = KernelSpec {
            kind: KIND,
            param: self.param,
        };
        t.total = term_quad_add(k, t.q, s, m, t.total);
    }
}

impl ListExtra for QuadTerm {
    const V4: u32 = 2;
    #[inline(always)]
    unsafe fn load(addr: u32) -> Self {
        use crate::gpu::shared::ld_shared_v4;
        // SAFETY: per the contract.
        let ([dx, dy, dz, o3xy], [o3xz, o3yz, t3, _]) =
            unsafe { (ld_shared_v4(addr), ld_shared_v4(addr + 16)) };
        #[rustfmt::skip]
        let m = QuadTerm { d6: [dx, dy, dz], o3xy, o3xz, o3yz, t3, _pad: 0.0 };
        m
    }
}
