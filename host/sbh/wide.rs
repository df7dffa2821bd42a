//! The wide-node layout of the 64-ary estimator, built on the host from any octree view (the
//! layout and its invariants are described in `warpkit_device::sbh::wide`).

use crate::device::bh::Body;
use crate::device::sbh::{TreeView, WIDE_CHAINS, WIDE_HEAD, WideMeta, slot_weight, wide_padded};

/// The wide layout's three row arrays; `dipole` is empty unless the tree carries dipoles.
#[derive(Clone, Debug, Default)]
pub struct WideTree {
    pub pm: Vec<Body>,
    pub meta: Vec<WideMeta>,
    pub dipole: Vec<Body>,
}

/// Entries of one wide node: slot values (child slot contents: `n + cell` or a body) in `(o, o2)`
/// order, the end of each child's group, and the mask of children that are cells.
fn entries<V: TreeView>(v: &V, cell: i32, out: &mut Vec<(u32, i32)>) -> ([u8; 8], u8) {
    let n = v.n();
    let start = out.len();
    let (mut ends, mut cells) = ([0u8; 8], 0u8);
    for o in 0..8u32 {
        let ch = v.child(cell, o);
        if ch >= n {
            cells |= 1 << o;
            for o2 in 0..8 {
                let gc = v.child(ch - n, o2);
                if gc >= 0 {
                    out.push((8 * o + o2, gc));
                }
            }
        } else if ch >= 0 {
            out.push((8 * o, ch));
        }
        ends[o as usize] = (out.len() - start) as u8;
    }
    (ends, cells)
}

impl WideTree {
    /// The wide layout of `v`'s octree: a block for the root and for every cell at an even depth,
    /// in breadth-first order (the root's block at row 0). With `dipoles`, the entries' dipoles
    /// too (from `v.cell_dipole` / `v.body_dipole`).
    pub fn build<V: TreeView>(v: &V, dipoles: bool) -> WideTree {
        let n = v.n();
        // Pass 1: the wide nodes breadth-first, their entries, and their first rows.
        let mut nodes = vec![v.root()];
        let mut heads: Vec<([u8; 8], u8)> = Vec::new();
        let mut first = vec![0u32]; // entry offsets into `flat`, per node (+ end)
        let mut flat: Vec<(u32, i32)> = Vec::new();
        let mut block_of = vec![u32::MAX; v.root() as usize + 1];
        let mut rows = 0u32;
        let mut start = Vec::new();
        let mut i = 0;
        while i < nodes.len() {
            let cell = nodes[i];
            block_of[cell as usize] = i as u32;
            let at = flat.len();
            heads.push(entries(v, cell, &mut flat));
            first.push(flat.len() as u32);
            for &(_, val) in &flat[at..] {
                if val >= n {
                    nodes.push(val - n);
                }
            }
            start.push(rows);
            rows += WIDE_HEAD + wide_padded((flat.len() - at) as u32);
            i += 1;
        }
        // Pass 2: the rows.
        let rows = rows as usize;
        let mut pm = vec![Body::default(); rows];
        let mut meta = vec![WideMeta::default(); rows];
        let mut dip = if dipoles {
            vec![Body::default(); rows]
        } else {
            Vec::new()
        };
        for (i, &cell) in nodes.iter().enumerate() {
            let s = start[i] as usize;
            let w: [f32; 8] = std::array::from_fn(|o| slot_weight(v, v.child(cell, o as u32)));
            pm[s] = Body {
                x: w[0],
                y: w[1],
                z: w[2],
                m: w[3],
            };
            pm[s + 1] = Body {
                x: w[4],
                y: w[5],
                z: w[6],
                m: w[7],
            };
            let mut flags = 0;
            let list = &flat[first[i] as usize..first[i + 1] as usize];
            let base = s + WIDE_HEAD as usize;
            for (e, &(slot, val)) in list.iter().enumerate() {
                let r = base + e;
                let d;
                if val >= n {
                    let c = val - n;
                    let b = block_of[c as usize] as usize;
                    let count = first[b + 1] - first[b];
                    pm[r] = v.cell(c);
                    meta[r] = WideMeta::entry(start[b] as i32, count as i32, pm[r].m, slot);
                    d = if dipoles { v.cell_dipole(c) } else { [0.0; 3] };
                } else {
                    pm[r] = v.body(val);
                    let next = v.next(val);
                    if next >= 0 {
                        flags |= WIDE_CHAINS;
                    }
                    meta[r] = WideMeta::entry(-1 - val, next, slot_weight(v, val), slot);
                    d = if dipoles {
                        v.body_dipole(val)
                    } else {
                        [0.0; 3]
                    };
                }
                if dipoles {
                    dip[r] = Body {
                        x: d[0],
                        y: d[1],
                        z: d[2],
                        m: 0.0,
                    };
                }
            }
            // Padding: weightless copies of the last entry (exact zero terms), never picked.
            let last = pm[base + list.len() - 1];
            for e in list.len()..wide_padded(list.len() as u32) as usize {
                pm[base + e] = Body { m: 0.0, ..last };
                meta[base + e] = WideMeta::entry(-1, -1, 0.0, 0);
            }
            let (ends, cells) = heads[i];
            meta[s] = WideMeta::header(ends, cells, flags);
        }
        WideTree {
            pm,
            meta,
            dipole: dip,
        }
    }

    /// Bytes of the three arrays.
    pub fn bytes(&self) -> usize {
        (self.pm.len() + self.meta.len() + self.dipole.len()) * 16
    }

    /// Wide nodes (blocks) and entries (without padding).
    pub fn counts(&self) -> (usize, usize) {
        let (mut blocks, mut entries, mut r) = (0, 0, 0usize);
        while r < self.meta.len() {
            let c = self.meta[r].count();
            blocks += 1;
            entries += c as usize;
            r += (WIDE_HEAD + wide_padded(c)) as usize;
        }
        (blocks, entries)
    }
}
