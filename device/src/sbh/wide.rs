//! The wide-node layout of the 64-ary estimator (`levels = 2`): each path step of
//! [`super::path`] on the plain octree walks a cell's 8 child slots, each child's 8 slots, then
//! loads every grandchild's summary — three levels of dependent loads per step. The wide layout
//! stores, for every *wide node* (the root and every cell at an even depth: the cells a
//! `levels = 2` path can stand on), one contiguous block with everything the step reads, so a step
//! loads one block (a straight run of 16-byte rows) and the next step's block address comes with
//! the chosen entry.
//!
//! Three parallel arrays of 16-byte rows (`wide_pm`, `wide_meta`, and, for the winding number
//! only, `wide_dipole`). The block of a wide node `N` starts at row `s` (the root's at row 0):
//! - Header, rows `s` and `s + 1` (`WIDE_HEAD` rows): `wide_pm[s]`, `wide_pm[s + 1]` hold the
//!   pick weights of `N`'s 8 child slots (x, y, z, m of the two rows = octants 0..8: a child
//!   cell's weight, a bucket chain's summed weight, 0 for an empty slot), the exact floats
//!   `pick_slot` computes from the octree. `wide_meta[s]` = [`WideMeta::header`]: the end of each
//!   child's group of entries (8 bytes), the entry count, the mask of children that are cells and
//!   flags ([`WIDE_CHAINS`]). Row `s + 1` of `wide_meta` is unused (zero).
//! - Entries, rows `s + 2 ..`: the non-empty grandchild slots in the order `(o, o2)` (octant of the
//!   child, then of the grandchild), grouped by child `o` (at most 8 entries per group). A child
//!   slot of `N` that holds a body (or bucket chain) is one entry, alone in its group: it ends
//!   the path when picked, exactly as in the octree form. Each entry: `wide_pm` = the summary
//!   (cell centre of mass and weight, or the chain's first body), `wide_dipole` = its dipole, and
//!   `wide_meta` = [`WideMeta::entry`]: link (a cell's block row, or `-1 - b` for body `b`), aux
//!   (the cell block's entry count, or `next(b)`: the rest of a bucket chain, -1 for a single
//!   body), pick weight, and slot `8 o + o2` (the stratum index at the root).
//! - The entries are padded to a multiple of [`WIDE_PAD`] rows with zero-weight, zero-dipole
//!   copies of the last entry (each adds an exact zero to a sum) so the term loop runs in whole
//!   groups of four loads; padding never takes part in a pick.
//!
//! Built by [`wide_block`] per wide node, on the host (breadth-first, the root's block at row 0)
//! or on the GPU (module `wide_kernels`: the blocks in decreasing cell index, again the root's
//! first); the estimator only follows links, so the order of the blocks does not matter.
//!
//! Every body appears in exactly one block (the block of its parent or of its grandparent,
//! whichever has even depth), and so does every cell at even depth ≥ 2: the layout holds
//! `M + C_even` entries plus `2 + pad` rows per wide node, 32 bytes a row (48 with dipoles).
//!
//! The draws are those of the octree form: the same weights in the same order give the same
//! picks (the level-1 pick reads the child group's entry weights, which are that child's non-empty
//! slot weights in octant order), so the estimates differ from the octree form's only by the
//! order of float32 additions in the children's sums.

use super::*;

/// Header rows before a wide node's entries.
pub const WIDE_HEAD: u32 = 2;
/// A block's entries are padded to a multiple of this many rows.
pub const WIDE_PAD: u32 = 4;
/// Header flag: some entry of the block heads a bucket chain of more than one body.
pub const WIDE_CHAINS: i32 = 1;

/// GPU build ([`wide_mark`], then a scan of the blocks' rows, then [`wide_block`] per wide node):
/// positions `j = root - cell` (the root's block first) are scanned in tiles of this many, one
/// thread each (the block size of `sbh_wide_start`).
pub const WIDE_TILE: u32 = 256;
/// Threads of `sbh_wide_scan`, the one block that scans the tiles' sums.
pub const WIDE_SCAN_BLOCK: u32 = 1024;
/// Block size of `sbh_wide_mark` and `sbh_wide_fill` (resident grids).
pub const WIDE_BUILD_BLOCK: u32 = 256;

/// One row of the wide layout's integer side: an entry's `[link, aux, weight bits, slot]` or a
/// block header's `[ends 0..4, ends 4..8, count, flags | cell mask << 8]` (module docs).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct WideMeta(pub [i32; 4]);

crate::shared_type!(WideMeta);

impl WideMeta {
    /// An entry row: `link` (a cell block's first row, or `-1 - b` for body `b`), `aux` (the
    /// cell block's entry count, or the next body of the chain), pick `weight`, `slot = 8 o + o2`.
    #[inline(always)]
    pub fn entry(link: i32, aux: i32, weight: f32, slot: u32) -> Self {
        WideMeta([link, aux, weight.to_bits() as i32, slot as i32])
    }

    /// A header row: `ends[o]` = entries of groups `0..=o`, `count = ends[7]`, `cells` bit `o`
    /// set when child `o` is a cell, `flags` ([`WIDE_CHAINS`]).
    #[inline(always)]
    pub fn header(ends: [u8; 8], cells: u8, flags: i32) -> Self {
        let lo = u32::from_le_bytes([ends[0], ends[1], ends[2], ends[3]]) as i32;
        let hi = u32::from_le_bytes([ends[4], ends[5], ends[6], ends[7]]) as i32;
        WideMeta([lo, hi, ends[7] as i32, flags | (cells as i32) << 8])
    }

    #[inline(always)]
    pub fn link(self) -> i32 {
        self.0[0]
    }
    #[inline(always)]
    pub fn aux(self) -> i32 {
        self.0[1]
    }
    #[inline(always)]
    pub fn weight(self) -> f32 {
        f32::from_bits(self.0[2] as u32)
    }
    #[inline(always)]
    pub fn slot(self) -> u32 {
        self.0[3] as u32
    }
    /// Header: entries in the block (without padding).
    #[inline(always)]
    pub fn count(self) -> u32 {
        self.0[2] as u32
    }
    /// Header: flags ([`WIDE_CHAINS`]).
    #[inline(always)]
    pub fn flags(self) -> i32 {
        self.0[3] & 0xff
    }
    /// Header: whether child `o` is a cell.
    #[inline(always)]
    pub fn is_cell(self, o: u32) -> bool {
        (self.0[3] >> (8 + o)) & 1 != 0
    }
    /// Header: the entries `lo..hi` of child `o`'s group.
    #[inline(always)]
    pub fn group(self, o: u32) -> (u32, u32) {
        let ends = (self.0[0] as u32 as u64) | (self.0[1] as u32 as u64) << 32;
        let hi = (ends >> (8 * o)) as u32 & 0xff;
        let lo = ((ends << 8) >> (8 * o)) as u32 & 0xff;
        (lo, hi)
    }
}

/// `count` rounded up to whole [`WIDE_PAD`] groups.
#[inline(always)]
pub fn wide_padded(count: u32) -> u32 {
    (count + WIDE_PAD - 1) & !(WIDE_PAD - 1)
}

/// Rows of the block of a wide node with `count` entries: header, entries, padding (a wide node
/// has at least one entry; `count = 0` marks a cell that is no wide node and takes no rows).
#[inline(always)]
pub fn wide_rows(count: u32) -> u32 {
    if count == 0 {
        0
    } else {
        WIDE_HEAD + wide_padded(count)
    }
}

/// The entries of wide node `cell`, in layout order: `f(slot, value)` for each non-empty
/// grandchild slot and each body child (`slot = 8 o + o2`; `value` is the slot's content: `n + c`
/// for cell `c`, else the body heading a bucket chain). Returns the end of each child's group
/// and the mask of children that are cells (the header's fields).
#[inline(always)]
pub fn wide_entries<V: TreeView>(v: &V, cell: i32, mut f: impl FnMut(u32, i32)) -> ([u8; 8], u8) {
    let n = v.n();
    // The ends as 8 bytes of a u64: no array indexed by a loop variable (a stack frame on the GPU).
    let (mut ends, mut cells, mut count) = (0u64, 0u8, 0u8);
    for o in 0..8u32 {
        let ch = v.child(cell, o);
        if ch >= n {
            cells |= 1 << o;
            for o2 in 0..8 {
                let gc = v.child(ch - n, o2);
                if gc >= 0 {
                    f(8 * o + o2, gc);
                    count += 1;
                }
            }
        } else if ch >= 0 {
            f(8 * o, ch);
            count += 1;
        }
        ends |= (count as u64) << (8 * o);
    }
    (ends.to_le_bytes(), cells)
}

/// Depth-parity marks of the top-down pass ([`wide_mark`]): 0 = not reached yet.
pub const WIDE_ODD: u32 = 1;
/// See [`WIDE_ODD`]: the cell is at an even depth, a wide node.
pub const WIDE_EVEN: u32 = 2;

/// One step of the top-down pass that finds the wide nodes (the root and every cell at an even
/// depth) without stored depths: `cell` is at an even depth or not (`even`); each child cell is
/// handed to `mark(child, !even)`. Returns the entry count of `cell`'s block, 0 if `cell` is no
/// wide node ([`wide_rows`] of it: the block's rows).
#[inline(always)]
pub fn wide_mark<V: TreeView>(
    v: &V,
    cell: i32,
    even: bool,
    mut mark: impl FnMut(i32, bool),
) -> u32 {
    let n = v.n();
    for o in 0..8 {
        let ch = v.child(cell, o);
        if ch >= n {
            mark(ch - n, !even);
        }
    }
    if even {
        wide_entries(v, cell, |_, _| {}).0[7] as u32
    } else {
        0
    }
}

/// The rows of wide node `cell`'s block (module docs): `put(offset, summary, meta, dipole)` for
/// every offset `0..wide_rows(count)` from the block's first row, exactly once each (entries, then
/// padding, then the two header rows). `link(c)` is the first row and entry count of wide node
/// `c`'s block (the grandchild cells' links). With `dipoles`, the entries' dipoles come from
/// `cell_dipole` / `body_dipole` (x, y, z; m = 0); without, and for header and padding rows, they
/// are zero. Returns the entry count. The one builder of a block: the host's breadth-first layout
/// and the GPU's both call it.
#[inline(always)]
pub fn wide_block<V: TreeView>(
    v: &V,
    cell: i32,
    dipoles: bool,
    link: impl Fn(i32) -> (u32, u32),
    mut put: impl FnMut(u32, Body, WideMeta, Body),
) -> u32 {
    let n = v.n();
    let dipole = |d: [f32; 3]| Body {
        x: d[0],
        y: d[1],
        z: d[2],
        m: 0.0,
    };
    let (mut flags, mut e, mut last) = (0i32, 0u32, Body::default());
    let (ends, cells) = wide_entries(v, cell, |slot, val| {
        let (s, m, d) = if val >= n {
            let c = val - n;
            let (row, count) = link(c);
            let s = v.cell(c);
            let d = if dipoles { v.cell_dipole(c) } else { [0.0; 3] };
            (s, WideMeta::entry(row as i32, count as i32, s.m, slot), d)
        } else {
            let next = v.next(val);
            if next >= 0 {
                flags |= WIDE_CHAINS;
            }
            let d = if dipoles {
                v.body_dipole(val)
            } else {
                [0.0; 3]
            };
            let m = WideMeta::entry(-1 - val, next, slot_weight(v, val), slot);
            (v.body(val), m, d)
        };
        put(WIDE_HEAD + e, s, m, dipole(d));
        last = s;
        e += 1;
    });
    // Padding: weightless copies of the last entry (exact zero terms), never picked.
    for p in e..wide_padded(e) {
        let pad = Body { m: 0.0, ..last };
        put(
            WIDE_HEAD + p,
            pad,
            WideMeta::entry(-1, -1, 0.0, 0),
            Body::default(),
        );
    }
    // Header: the children's pick weights, exactly `pick_slot`'s floats.
    let w: [f32; 8] = core::array::from_fn(|o| slot_weight(v, v.child(cell, o as u32)));
    let (w0, w1) = (
        Body {
            x: w[0],
            y: w[1],
            z: w[2],
            m: w[3],
        },
        Body {
            x: w[4],
            y: w[5],
            z: w[6],
            m: w[7],
        },
    );
    put(0, w0, WideMeta::header(ends, cells, flags), Body::default());
    put(1, w1, WideMeta::default(), Body::default());
    e
}

/// The dipole of the entry at `row` (zero unless the kernel is the winding number).
#[inline(always)]
fn entry_dipole<V: TreeView>(v: &V, k: KernelSpec, row: u32) -> [f32; 3] {
    if k.kind == KIND_WINDING {
        v.wide_dipole(row)
    } else {
        [0.0; 3]
    }
}

/// Σ of the terms of a wide node's entries (its grandchildren and body children): a straight loop
/// over the block's rows, four 16-byte loads then four fused terms per turn; with `chains`
/// (rare: coincident bodies), the rest of each bucket chain after its first body.
#[inline(always)]
fn wide_terms<V: TreeView>(
    v: &V,
    k: KernelSpec,
    q: [f32; 3],
    row: u32,
    count: u32,
    chains: bool,
) -> f32 {
    let base = row + WIDE_HEAD;
    let end = base + wide_padded(count);
    let mut f = 0.0f32;
    let mut r = base;
    while r < end {
        let s = v.wide_pm4(r);
        let a = if k.kind == KIND_WINDING {
            v.wide_dipole4(r)
        } else {
            [[0.0; 3]; 4]
        };
        for i in 0..4 {
            f = term_add(k, q, &s[i], a[i], f);
        }
        r += WIDE_PAD;
    }
    if chains {
        for r in base..base + count {
            let m = v.wide_meta(r);
            if m.link() < 0 {
                f += chain_terms(v, k, q, m.aux()).0;
            }
        }
    }
    f
}

/// The exact terms of the body entry at `row` (first term `first`) and the rest of its chain,
/// summed in chain order as [`chain_terms`] sums them.
#[inline(always)]
fn entry_chain_terms<V: TreeView>(v: &V, k: KernelSpec, q: [f32; 3], first: f32, aux: i32) -> f32 {
    let mut f = 0.0 + first;
    let mut b = aux;
    while b >= 0 {
        f += body_term(v, k, q, b).0;
        b = v.next(b);
    }
    f
}

/// Deepest node depth at which [`next_step_stops`] may decide: there a cell's width is at least
/// 2^-14 of the root's, so float32 rounding of a centre of mass (relative to the coordinates,
/// not to the cell) stays far inside the bound's 10% margin.
const EARLY_STOP_DEPTH: u32 = 14;

/// Whether the next step's roulette ends the path whatever grandchild the picks choose: every
/// grandchild's centre of mass lies in this node's box, within one box diagonal of the node's
/// own (10% margin), so its far-field ratio is at least `4 (β − 1.1)` (a diagonal two levels down
/// is a quarter) and its continuation probability at most `max(1, β̂) / (4 (β − 1.1))`. When the
/// next roulette draw — the very number the next step would draw — exceeds that bound the path
/// ends there in any case, so the two picks (two draws, eight weights, a child group's loads)
/// can be skipped: the estimate is exactly the one with the picks. `beta_max` already includes
/// this node's ratio `beta`.
#[inline(always)]
fn next_step_stops(
    p: &SbhParams,
    key: u64,
    stratum: u32,
    sample: u32,
    depth: u32,
    beta: f32,
    beta_max: f32,
) -> bool {
    if depth > EARLY_STOP_DEPTH || beta <= 1.5 {
        return false;
    }
    let bound = beta_max.max(1.0) * math::rcp(4.0 * (beta - 1.1));
    bound < 1.0 && {
        let r = path_draw(p, key, stratum, sample, depth + 2, 1);
        r >= bound
    }
}

/// [`super::path`] on the wide layout: the stratum cell's summary `node` (dipole `node_dipole`)
/// and block (`row`, `count` entries) at octree depth `depth`. The same roulette and path draws as
/// the octree form, from the same weights.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn path_wide<V: TreeView, const EARLY: bool>(
    v: &V,
    p: &SbhParams,
    q: [f32; 3],
    key: u64,
    stratum: u32,
    sample: u32,
    node: (Body, [f32; 3]),
    block: (u32, u32),
    mut depth: u32,
) -> f32 {
    let k = p.kernel;
    let root_half = v.root_half();
    let (mut row, mut count) = block;
    let mut est = 0.0f32;
    // 1 / (π_T P_T): inverse probability of having reached and kept evaluating the node.
    let mut inv_prob = 1.0f32;
    let mut f_node = term(k, q, &node.0, node.1);
    let mut beta = far_ratio(q, node.0.pos(), diameter_at(root_half, depth));
    let mut beta_max = beta;
    while (depth as usize) < MAX_DEPTH {
        let Some(keep) = roulette(p, key, stratum, sample, depth, beta_max, beta) else {
            break;
        };
        inv_prob *= keep;
        beta_max = beta_max.max(beta);
        let head = v.wide_meta(row);
        // Contribution exchange: the grandchildren's (and body children's) terms minus the node's.
        let children = wide_terms(v, k, q, row, count, head.flags() & WIDE_CHAINS != 0);
        est = math::fma(children - f_node, inv_prob, est);
        if EARLY && next_step_stops(p, key, stratum, sample, depth, beta, beta_max) {
            break; // the picks would not change the estimate
        }
        // Path: a child by the header's weights, then a grandchild in the child's group.
        let (w0, w1) = (v.wide_pm(row), v.wide_pm(row + 1));
        let u = path_draw(p, key, stratum, sample, depth, 0);
        let (o, inv) = pick_weighted(&[w0.x, w0.y, w0.z, w0.m, w1.x, w1.y, w1.z, w1.m], u);
        if o < 0 || !head.is_cell(o as u32) {
            break; // a body or bucket: its terms are exact, the path ends
        }
        inv_prob *= inv;
        let (lo, hi) = head.group(o as u32);
        let first = row + WIDE_HEAD + lo;
        let weights: [f32; 8] = core::array::from_fn(|i| {
            if lo + (i as u32) < hi {
                v.wide_meta(first + i as u32).weight()
            } else {
                0.0
            }
        });
        let u = path_draw(p, key, stratum, sample, depth + 1, 0);
        let (e, inv) = pick_weighted(&weights, u);
        if e < 0 {
            break;
        }
        let at = first + e as u32;
        let m = v.wide_meta(at);
        if m.link() < 0 {
            break;
        }
        inv_prob *= inv;
        let s = v.wide_pm(at);
        f_node = term(k, q, &s, entry_dipole(v, k, at));
        (row, count) = (m.link() as u32, m.aux() as u32);
        depth += 2;
        beta = far_ratio(q, s.pos(), diameter_at(root_half, depth));
    }
    est
}

/// [`super::sbh_estimate`] for `levels = 2` on the wide layout: the root block's entries are the
/// strata (cells, by slot `8 o + o2`) and the exact terms of bodies near the root.
#[inline(always)]
pub(super) fn sbh_estimate_wide<V: TreeView, const EARLY: bool>(
    v: &V,
    p: &SbhParams,
    q: [f32; 3],
    key: u64,
) -> f32 {
    let k = p.kernel;
    let count = v.wide_meta(0).count();
    let mut total = 0.0f32;
    for r in WIDE_HEAD..WIDE_HEAD + count {
        let m = v.wide_meta(r);
        let s = v.wide_pm(r);
        let a = entry_dipole(v, k, r);
        let own = term(k, q, &s, a);
        total += if m.link() >= 0 {
            let block = (m.link() as u32, m.aux() as u32);
            let beta = far_ratio(q, s.pos(), diameter_at(v.root_half(), 2));
            let path = |smp| path_wide::<V, EARLY>(v, p, q, key, m.slot(), smp, (s, a), block, 2);
            stratum_paths(p, key, m.slot(), beta, path) + own
        } else {
            entry_chain_terms(v, k, q, own, m.aux())
        };
    }
    total
}
