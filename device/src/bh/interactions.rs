//! The tree as the generic walk (`crate::walk`) reads it on the host ([`SliceOctree`]), and
//! gravity as the walk's interactions: monopoles, with the potential, and quadrupoles.

use super::*;

/// An octree as the tree kernels store it ([`Layout`]), in host slices (the CPU twins' view).
#[derive(Clone, Copy, Debug)]
pub struct SliceOctree<'a> {
    pub bodies: &'a [Body],
    pub child: &'a [i32],
    pub next: &'a [i32],
    pub cell_pm: &'a [Body],
    pub layout: Layout,
}

impl Octree for SliceOctree<'_> {
    #[inline(always)]
    fn n(&self) -> i32 {
        self.bodies.len() as i32
    }
    #[inline(always)]
    fn root(&self) -> i32 {
        self.layout.root()
    }
    #[inline(always)]
    fn child(&self, cell: i32, octant: u32) -> i32 {
        self.child[self.layout.slot(cell, octant)]
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

/// `K` bodies' positions, accelerations and potentials (one lane's in the group kernels; one
/// body's on the CPU). Interactions without the potential leave `phi` alone (and the kernels'
/// registers do not hold it).
#[derive(Clone, Copy, Debug)]
pub struct Targets<const K: usize> {
    pub p: [[f32; 3]; K],
    pub a: [[f32; 3]; K],
    pub phi: [f32; K],
}

impl<const K: usize> Targets<K> {
    #[inline(always)]
    pub fn at(p: [[f32; 3]; K]) -> Self {
        Targets {
            p,
            a: [[0.0; 3]; K],
            phi: [0.0; K],
        }
    }
}

/// [`Monopole`] with the potential ([`add_pair_accel_pot`]): for N-body diagnostics.
#[derive(Clone, Copy, Debug)]
pub struct MonopolePot<const K: usize, const SOFT: bool> {
    pub eps2: f32,
}

impl<const K: usize, const SOFT: bool> Interaction for MonopolePot<K, SOFT> {
    type Extra = ();
    type Target = Targets<K>;
    #[inline(always)]
    fn cell_extra(&self, _: i32) {}
    #[inline(always)]
    fn body_extra(&self, _: i32) {}
    #[inline(always)]
    fn add(&self, t: &mut Targets<K>, s: &Body, _: &()) {
        for k in 0..K {
            add_pair_accel_pot::<SOFT>(&mut t.a[k], &mut t.phi[k], t.p[k], s.pos(), s.m, self.eps2);
        }
    }
}

/// Softened gravity of listed monopoles ([`add_pair_accel`]; `SOFT` as [`softened`]).
#[derive(Clone, Copy, Debug)]
pub struct Monopole<const K: usize, const SOFT: bool> {
    pub eps2: f32,
}

impl<const K: usize, const SOFT: bool> Interaction for Monopole<K, SOFT> {
    type Extra = ();
    type Target = Targets<K>;
    #[inline(always)]
    fn cell_extra(&self, _: i32) {}
    #[inline(always)]
    fn body_extra(&self, _: i32) {}
    #[inline(always)]
    fn add(&self, t: &mut Targets<K>, s: &Body, _: &()) {
        for k in 0..K {
            add_pair_accel::<SOFT>(&mut t.a[k], t.p[k], s.pos(), s.m, self.eps2);
        }
    }
}

/// Listed cells with their quadrupole moments ([`add_pair_accel_quad`]); bodies carry none.
#[derive(Clone, Copy, Debug)]
pub struct Quadrupole<Q, const K: usize, const SOFT: bool> {
    pub eps2: f32,
    /// Per cell, from the summary.
    pub quads: Q,
}

impl<Q: CellData<Quad>, const K: usize, const SOFT: bool> Interaction for Quadrupole<Q, K, SOFT> {
    type Extra = Quad;
    type Target = Targets<K>;
    #[inline(always)]
    fn cell_extra(&self, c: i32) -> Quad {
        self.quads.get(c)
    }
    #[inline(always)]
    fn body_extra(&self, _: i32) -> Quad {
        Quad::default()
    }
    #[inline(always)]
    fn add(&self, t: &mut Targets<K>, s: &Body, q: &Quad) {
        for k in 0..K {
            add_pair_accel_quad::<SOFT>(&mut t.a[k], t.p[k], s.pos(), s.m, q, self.eps2);
        }
    }
}

impl ListExtra for Quad {
    const V4: u32 = 2;
    #[inline(always)]
    unsafe fn load(addr: u32) -> Self {
        use crate::gpu::shared::ld_shared_v4;
        // SAFETY: per the contract.
        let ([xx, yy, zz, xy], [xz, yz, tr, _]) =
            unsafe { (ld_shared_v4(addr), ld_shared_v4(addr + 16)) };
        Quad {
            xx,
            yy,
            zz,
            xy,
            xz,
            yz,
            tr,
            _pad: 0.0,
        }
    }
}
