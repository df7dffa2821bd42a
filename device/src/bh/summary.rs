//! A cell's summary: its quadrupole moment ([`Quad`]) and the one copy of the summary formulas
//! ([`summarize_cell`]) over its children as the kernel or the CPU twin reads them
//! ([`CellChildren`]).

use super::*;

/// Traceless quadrupole moment of a cell about its centre of mass,
/// `Q_ij = Σ m (3 d_i d_j − |d|² δ_ij)` over its bodies at offsets `d`, and the trace the
/// traceless form drops, `tr = Σ m |d|²`: the softened kernel is not harmonic, so its expansion
/// keeps a trace term (see [`pair_accel_quad`]). Padded to 32 bytes so the device loads it with
/// two vector instructions.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Quad {
    pub xx: f32,
    pub yy: f32,
    pub zz: f32,
    pub xy: f32,
    pub xz: f32,
    pub yz: f32,
    pub tr: f32,
    pub _pad: f32,
}

impl Quad {
    /// The moment of mass `m` at offset `d` from the centre (the parallel-axis term).
    #[inline(always)]
    pub fn point(m: f32, d: [f32; 3]) -> Quad {
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        let m3 = 3.0 * m;
        Quad {
            xx: m3 * d[0] * d[0] - m * r2,
            yy: m3 * d[1] * d[1] - m * r2,
            zz: m3 * d[2] * d[2] - m * r2,
            xy: m3 * d[0] * d[1],
            xz: m3 * d[0] * d[2],
            yz: m3 * d[1] * d[2],
            tr: m * r2,
            _pad: 0.0,
        }
    }

    #[inline(always)]
    pub fn minus(&self, o: &Quad) -> Quad {
        Quad {
            xx: self.xx - o.xx,
            yy: self.yy - o.yy,
            zz: self.zz - o.zz,
            xy: self.xy - o.xy,
            xz: self.xz - o.xz,
            yz: self.yz - o.yz,
            tr: self.tr - o.tr,
            _pad: 0.0,
        }
    }

    #[inline(always)]
    pub fn plus(&self, o: &Quad) -> Quad {
        Quad {
            xx: self.xx + o.xx,
            yy: self.yy + o.yy,
            zz: self.zz + o.zz,
            xy: self.xy + o.xy,
            xz: self.xz + o.xz,
            yz: self.yz + o.yz,
            tr: self.tr + o.tr,
            _pad: 0.0,
        }
    }
}

/// One cell's children as the summary reads them: the kernel implements it over device pointers
/// (waiting until a child cell is summarized), the CPU twin over slices.
pub trait CellChildren {
    /// The value in child slot `octant`: `EMPTY`, a body `0..n`, or `n + cell`.
    fn slot(&self, octant: u32) -> i32;
    /// A summarized child cell: centre of mass and mass, quadrupole, body count.
    fn cell(&self, cell: usize) -> (Body, Quad, u32);
    fn body(&self, b: i32) -> Body;
    /// The next body of a bucket chain, or -1.
    fn next(&self, b: i32) -> i32;
}

/// Mass, centre of mass, quadrupole (about that centre; zero unless `QUAD`) and body count of a
/// cell from its children, in octant order and chain order: the one copy of the summary formulas.
///
/// One pass over the children, each read once: mass, first moment and quadrupole are summed about
/// the first child's position `r0`, then moved to the centre of mass, `c = r0 + s` with
/// `s = Σ m (x − r0) / M` and `Q_c = Q_r0 − point(M, s)` (the parallel-axis theorem; exact for
/// this `Quad`, trace term included). Offsets from `r0` are of the cell's size, so the centre is
/// no longer rounded at the scale of the coordinates (`Σ m x / M`), and the quadrupole's offsets
/// come from it. (Two passes, monopole then quadrupole about the centre, read every child twice:
/// the populous levels were most of the summary's time.)
#[inline(always)]
pub fn summarize_cell<const QUAD: bool>(c: &impl CellChildren, n: i32) -> (Body, Quad, u32) {
    let (mut m, mut sx, mut sy, mut sz, mut cnt) = (0.0f32, 0.0f32, 0.0f32, 0.0f32, 0u32);
    let mut r0: Option<[f32; 3]> = None;
    let mut quad = Quad::default();
    let mut add = |q: Body, cq: &Quad, k: u32| {
        let o = *r0.get_or_insert([q.x, q.y, q.z]);
        let d = [q.x - o[0], q.y - o[1], q.z - o[2]];
        m += q.m;
        sx = math::fma(q.m, d[0], sx);
        sy = math::fma(q.m, d[1], sy);
        sz = math::fma(q.m, d[2], sz);
        cnt += k;
        if QUAD {
            quad = quad.plus(cq).plus(&Quad::point(q.m, d));
        }
    };
    for o in 0..8 {
        let ch = c.slot(o);
        if ch >= n {
            let (pm, cq, k) = c.cell((ch - n) as usize);
            add(pm, &cq, k);
        } else {
            let mut b = ch;
            while b >= 0 {
                add(c.body(b), &Quad::default(), 1);
                b = c.next(b);
            }
        }
    }
    let o = r0.unwrap_or_default();
    let inv = 1.0 / m;
    let s = [sx * inv, sy * inv, sz * inv];
    if QUAD {
        quad = quad.minus(&Quad::point(m, s));
    }
    (
        Body {
            x: o[0] + s[0],
            y: o[1] + s[1],
            z: o[2] + s[2],
            m,
        },
        quad,
        cnt,
    )
}
