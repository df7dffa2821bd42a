//! The global top tree and the locally essential tree (LET).
//!
//! Every rank builds the octree of its own bodies in the *global* root cell ([`build_local`]), so
//! its cells are cells of the single tree of all bodies. A cell whose key interval lies inside the
//! rank's range holds the same bodies as in the single tree, hence the same subtree and the same
//! moments, bit for bit: such maximal cells (and bodies alone in a slot above them) are the rank's
//! [`Item`]s. All ranks all-gather their items and rebuild, identically, the cells above them
//! ([`TopTree`]: the single tree's cells that straddle ranks, with moments summed by the one
//! summary formula in the same order).
//!
//! Rank `s` then sends rank `r` the part of each of its items that `r`'s walks can open: the walk
//! from the item down, opening cells that are not far (`is_far_from_box`, the group walk's test)
//! from `r`'s domain box, and sending far cells as pseudo-bodies with their moments ([`let_for`]).
//! A group's box lies inside its rank's domain box, so any cell far from the domain box is far
//! from the group too (the box is widened by [`DOMAIN_MARGIN`] against rounding): the walk over
//! top tree + own items + imported parts ([`Essential`]) lists exactly the sources that the walk
//! over the single tree lists, in the same order. Forces then equal the single tree's bit for bit
//! for the same groups (`tests.rs`).

use super::comm::{Comm, all_gather_pod, all_to_all_pod};
use super::sfc::{KEY_LEVELS, cell_range};
use crate::bh::{Params, Tree, cpu};
use crate::device::bh::{self as dev, Accel, Body, Layout, MAX_DEPTH, Quad, TreeHeader};
use crate::device::walk::{Interaction, Octree, walk_list};
use rayon::prelude::*;

mod walk;
pub use walk::*;

/// The octree of one rank's `bodies` in the global root cell of `header` (its box), built,
/// summarized and sorted by the CPU twin's stages.
pub fn build_local(bodies: &[Body], header: &TreeHeader) -> Tree {
    let mut cells = crate::bh::initial_cells(bodies.len());
    loop {
        let layout = Layout::dense(cells as u32);
        let mut h = TreeHeader::new(layout.cells);
        (h.min, h.max) = (header.min, header.max);
        if let Some(mut t) = cpu::insert(bodies, layout, h) {
            cpu::summarize(bodies, &mut t);
            cpu::sort(&mut t);
            return t;
        }
        cells *= 2;
    }
}

/// A branch of the top tree: a cell of one rank's tree that no other rank's keys reach, or a body
/// alone in a slot above such cells. 80 bytes in the all-gather.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Item {
    pub pm: Body,
    /// Zero for a body.
    pub quad: Quad,
    /// A cell's first key; a body's key.
    pub key: u64,
    /// A cell's level; [`KEY_LEVELS`] for a body (placed where it is alone).
    pub depth: u32,
    /// Bodies below: 1 for a body (a cell holds at least two).
    pub count: u32,
    pub rank: u32,
    /// The slot value in the owner's tree: `n + cell`, or the body.
    pub node: i32,
    pub _pad: [u32; 2],
}

impl Item {
    pub fn is_body(&self) -> bool {
        self.count == 1
    }
}

/// The items of a rank's `tree` over `bodies` (with `keys`) for its key range `lo..hi`, in key
/// order.
pub fn items(
    tree: &Tree,
    bodies: &[Body],
    keys: &[u64],
    (lo, hi): (u64, u64),
    rank: u32,
) -> Vec<Item> {
    let n = tree.n as i32;
    let mut out = Vec::new();
    if tree.n == 0 {
        return out;
    }
    let root = tree.root();
    let cell_item = |c: i32, key: u64, depth: usize| Item {
        pm: tree.cell_pm[c as usize],
        quad: tree.cell_quad[c as usize],
        key,
        depth: depth as u32,
        count: tree.count[c as usize],
        rank,
        node: n + c,
        _pad: [0; 2],
    };
    if lo == 0 && hi == super::sfc::KEY_END {
        out.push(cell_item(root, 0, 0));
        return out;
    }
    // Cells whose interval crosses `lo` or `hi` are opened; they are at most KEY_LEVELS − 1 deep
    // (a level-KEY_LEVELS cell is one key), so no item is deeper than KEY_LEVELS.
    let mut stack = vec![(root, 0usize, 0u64)];
    while let Some((cell, depth, prefix)) = stack.pop() {
        for o in (0..8).rev() {
            let ch = tree.child[tree.layout.slot(cell, o)];
            let (d, p) = (depth + 1, prefix << 3 | o as u64);
            if ch >= n {
                let (a, b) = cell_range(p, d);
                if lo <= a && b <= hi {
                    out.push(cell_item(ch - n, a, d));
                } else {
                    stack.push((ch - n, d, p));
                }
            } else if ch >= 0 {
                // Buckets exist only at MAX_DEPTH, far below any cell that crosses a splitter.
                debug_assert!(tree.next[ch as usize] < 0);
                out.push(Item {
                    pm: bodies[ch as usize],
                    key: keys[ch as usize],
                    depth: KEY_LEVELS as u32,
                    count: 1,
                    rank,
                    node: ch,
                    ..Item::default()
                });
            }
        }
    }
    out.sort_by_key(|i| i.key);
    out
}

/// A child slot of the top tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Empty,
    /// An index into [`TopTree::items`].
    Item(u32),
    /// An index into [`TopTree::cells`].
    Top(u32),
}

/// A cell of the single tree that holds bodies of more than one rank's range.
#[derive(Clone, Copy, Debug)]
pub struct TopCell {
    pub child: [Slot; 8],
    pub pm: Body,
    pub quad: Quad,
    pub count: u32,
}

/// The cells above every rank's items, the same on every rank.
#[derive(Clone, Debug)]
pub struct TopTree {
    /// Every rank's items, in key order.
    pub items: Vec<Item>,
    pub cells: Vec<TopCell>,
    pub root: Slot,
}

impl TopTree {
    /// Rebuilds the cells above `items` (any order): a region with one item is that item; with
    /// more, a cell of the single tree (it holds at least two bodies), summarized from its
    /// children in octant order as `bh_summarize` does.
    pub fn new(mut items: Vec<Item>) -> TopTree {
        items.sort_by_key(|i| i.key);
        let mut t = TopTree {
            items,
            cells: Vec::new(),
            root: Slot::Empty,
        };
        t.root = t.node(0, 0, 0, t.items.len());
        t
    }

    fn node(&mut self, depth: usize, prefix: u64, i0: usize, i1: usize) -> Slot {
        if i0 == i1 {
            return Slot::Empty;
        }
        let first = self.items[i0];
        if i1 - i0 == 1 && (first.is_body() || first.depth as usize == depth) {
            return Slot::Item(i0 as u32);
        }
        let mut child = [Slot::Empty; 8];
        let mut at = i0;
        for (o, c) in child.iter_mut().enumerate() {
            let (_, b) = cell_range(prefix << 3 | o as u64, depth + 1);
            let end = at + self.items[at..i1].partition_point(|i| i.key < b);
            *c = self.node(depth + 1, prefix << 3 | o as u64, at, end);
            at = end;
        }
        let (pm, quad, count) = dev::summarize_cell::<true>(
            &TopChildren {
                top: self,
                child: &child,
            },
            self.items.len() as i32,
        );
        self.cells.push(TopCell {
            child,
            pm,
            quad,
            count,
        });
        Slot::Top(self.cells.len() as u32 - 1)
    }
}

/// A top cell's children for [`dev::summarize_cell`]: body items are bodies `0..n`, cell items
/// cells `0..n`, top cells cells `n..`.
struct TopChildren<'a> {
    top: &'a TopTree,
    child: &'a [Slot; 8],
}

impl dev::CellChildren for TopChildren<'_> {
    fn slot(&self, octant: u32) -> i32 {
        let n = self.top.items.len() as i32;
        match self.child[octant as usize] {
            Slot::Empty => dev::EMPTY,
            Slot::Item(i) if self.top.items[i as usize].is_body() => i as i32,
            Slot::Item(i) => n + i as i32,
            Slot::Top(c) => 2 * n + c as i32,
        }
    }
    fn cell(&self, c: usize) -> (Body, Quad, u32) {
        let n = self.top.items.len();
        if c < n {
            let i = &self.top.items[c];
            (i.pm, i.quad, i.count)
        } else {
            let t = &self.top.cells[c - n];
            (t.pm, t.quad, t.count)
        }
    }
    fn body(&self, b: i32) -> Body {
        self.top.items[b as usize].pm
    }
    fn next(&self, _: i32) -> i32 {
        -1
    }
}

/// An axis-aligned box of a rank's domain, widened by [`DOMAIN_MARGIN`]. 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DomainBox {
    pub centre: [f32; 3],
    pub half: [f32; 3],
    pub _pad: [f32; 2],
}

/// Relative widening of a domain box: far larger than the float32 rounding of box centres and
/// distances (≈ 1e-7), so a cell far from the widened box is far from every group box inside it.
pub const DOMAIN_MARGIN: f32 = 1e-5;

/// Boxes per rank in its [`Domain`].
pub const DOMAIN_BOXES: usize = 64;

/// A rank's domain as the opening test sees it: boxes that together hold every one of its warp
/// groups' boxes (each group inside one), tighter than one box around all of a rank's bodies,
/// which a cluster's few outlying bodies stretch over most of the volume. Not yet measured to
/// matter: on 12000 Plummer bodies at K = 2, θ = 0.5 both forms send the same 1.14 MB of LET
/// (the interface through the dense centre dominates at that N).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Domain {
    pub boxes: Vec<DomainBox>,
}

impl Domain {
    /// The boxes of `groups` (lists of positions, in the tree's sort order: neighbours in space)
    /// merged into at most [`DOMAIN_BOXES`] runs of consecutive groups.
    pub fn of(groups: &[Vec<[f32; 3]>]) -> Domain {
        let groups: Vec<&Vec<[f32; 3]>> = groups.iter().filter(|g| !g.is_empty()).collect();
        let runs = groups.len().min(DOMAIN_BOXES);
        let boxes = (0..runs)
            .map(|j| {
                let (a, b) = (groups.len() * j / runs, groups.len() * (j + 1) / runs);
                let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
                for p in groups[a..b].iter().flat_map(|g| g.iter()) {
                    for k in 0..3 {
                        lo[k] = lo[k].min(p[k]);
                        hi[k] = hi[k].max(p[k]);
                    }
                }
                let scale = (0..3).fold(0f32, |m, k| {
                    m.max(hi[k] - lo[k]).max(lo[k].abs()).max(hi[k].abs())
                });
                let d = DOMAIN_MARGIN * scale + f32::MIN_POSITIVE;
                let (centre, half) = dev::box_of(lo.map(|v| v - d), hi.map(|v| v + d));
                DomainBox {
                    centre,
                    half,
                    _pad: [0.0; 2],
                }
            })
            .collect();
        Domain { boxes }
    }

    /// The group walk's opening test (`s` a cell at `depth`) for every box: far from all.
    pub fn far(&self, s: &Body, w2: &[f32], depth: usize, theta2: f32) -> bool {
        self.boxes
            .iter()
            .all(|b| dev::is_far_from_box(s.pos(), w2[depth], b.centre, b.half, theta2))
    }
}

/// Squared cell widths per level below the root of `header`.
pub fn widths2(header: &TreeHeader) -> Vec<f32> {
    let (_, root_half) = dev::root_cell(header);
    (0..=MAX_DEPTH)
        .map(|d| dev::width2_at(root_half, d))
        .collect()
}

/// One node of a LET in pre-order: a cell (its occupied octants in `arg`, children follow), a
/// pseudo-body (a far cell with its moments), or a body (`arg` = 1: the next body of its bucket
/// follows). 64 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LetNode {
    pub pm: Body,
    pub quad: Quad,
    pub kind: u32,
    pub arg: u32,
    /// The sender's body index when the sender is the receiver (its own items), else `u32::MAX`.
    pub local: u32,
    pub _pad: u32,
}

pub const CELL: u32 = 0;
pub const PSEUDO: u32 = 1;
pub const BODY: u32 = 2;

/// The part of cell `cell` (at `depth`) of `tree` that a walk with opening test `far` can reach,
/// in pre-order; `own` keeps body indices (a rank's own items, `far` never true).
pub fn encode(
    tree: &Tree,
    bodies: &[Body],
    cell: i32,
    depth: usize,
    far: &dyn Fn(&Body, usize) -> bool,
    own: bool,
    out: &mut Vec<LetNode>,
) {
    let n = tree.n as i32;
    let slots: [i32; 8] = std::array::from_fn(|o| tree.child[tree.layout.slot(cell, o as u32)]);
    out.push(LetNode {
        pm: tree.cell_pm[cell as usize],
        quad: tree.cell_quad[cell as usize],
        kind: CELL,
        arg: slots
            .iter()
            .enumerate()
            .filter(|(_, c)| **c >= 0)
            .fold(0, |m, (o, _)| m | 1 << o),
        local: u32::MAX,
        _pad: 0,
    });
    for &ch in &slots {
        if ch >= n {
            let c = ch - n;
            let s = tree.cell_pm[c as usize];
            if far(&s, depth + 1) {
                out.push(LetNode {
                    pm: s,
                    quad: tree.cell_quad[c as usize],
                    kind: PSEUDO,
                    local: u32::MAX,
                    ..LetNode::default()
                });
            } else {
                encode(tree, bodies, c, depth + 1, far, own, out);
            }
        } else {
            let mut b = ch;
            while b >= 0 {
                let nb = tree.next[b as usize];
                out.push(LetNode {
                    pm: bodies[b as usize],
                    kind: BODY,
                    arg: (nb >= 0) as u32,
                    local: if own { b as u32 } else { u32::MAX },
                    ..LetNode::default()
                });
                b = nb;
            }
        }
    }
}

/// What rank `me` sends rank `to` (domain `dom`): for each of its cell items in key order that is
/// not far from `dom` (the receiver lists far ones from the top tree itself), [`encode`]'s nodes.
pub fn let_for(
    tree: &Tree,
    bodies: &[Body],
    items: &[Item],
    dom: &Domain,
    w2: &[f32],
    theta2: f32,
) -> Vec<LetNode> {
    let mut out = Vec::new();
    if dom.boxes.is_empty() {
        return out;
    }
    let far = |s: &Body, d: usize| dom.far(s, w2, d, theta2);
    for it in items.iter().filter(|i| !i.is_body()) {
        if !far(&it.pm, it.depth as usize) {
            let cell = it.node - tree.n as i32;
            encode(tree, bodies, cell, it.depth as usize, &far, false, &mut out);
        }
    }
    out
}

/// A node of the essential tree under construction.
#[derive(Clone, Copy, Debug)]
enum Node {
    Empty,
    Body(u32),
    Cell(u32),
}

/// A rank's locally essential tree: the top tree, its own items whole, the other ranks' items as
/// far as its walks open them (far cells as pseudo-bodies: bodies that carry moments). The same
/// slot conventions as `bh::Tree` (bodies `0..n`, cells `n + c`), so `walk_list` reads it.
#[derive(Clone, Debug, Default)]
pub struct Essential {
    pub bodies: Vec<Body>,
    /// Moments of pseudo-bodies; zero for bodies.
    pub body_quad: Vec<Quad>,
    /// The rank's own body index, or `u32::MAX` for imported bodies and pseudo-bodies.
    pub local: Vec<u32>,
    /// Whether each body is a pseudo-body (a far cell with its moments): the GPU form
    /// (`super::gpu`) makes these childless cells, so the quadrupole kernels read their moments.
    pub pseudo: Vec<bool>,
    pub next: Vec<i32>,
    /// 8 slots per cell.
    pub child: Vec<i32>,
    pub cell_pm: Vec<Body>,
    pub cell_quad: Vec<Quad>,
    pub root: i32,
    /// Nodes received from other ranks.
    pub imported: usize,
}

#[derive(Default)]
struct Builder {
    e: Essential,
    slots: Vec<[Node; 8]>,
}

impl Builder {
    fn body(&mut self, pm: Body, quad: Quad, local: u32) -> Node {
        self.push(pm, quad, local, false)
    }
    fn pseudo(&mut self, pm: Body, quad: Quad) -> Node {
        self.push(pm, quad, u32::MAX, true)
    }
    fn push(&mut self, pm: Body, quad: Quad, local: u32, pseudo: bool) -> Node {
        self.e.bodies.push(pm);
        self.e.body_quad.push(quad);
        self.e.local.push(local);
        self.e.pseudo.push(pseudo);
        self.e.next.push(-1);
        Node::Body(self.e.bodies.len() as u32 - 1)
    }
    fn cell(&mut self, pm: Body, quad: Quad) -> u32 {
        self.e.cell_pm.push(pm);
        self.e.cell_quad.push(quad);
        self.slots.push([Node::Empty; 8]);
        self.e.cell_pm.len() as u32 - 1
    }
    /// The subtree of [`encode`]'s nodes from `*at`.
    fn decode(&mut self, nodes: &[LetNode], at: &mut usize) -> Node {
        let nd = nodes[*at];
        *at += 1;
        match nd.kind {
            PSEUDO => self.pseudo(nd.pm, nd.quad),
            BODY => {
                let first = self.body(nd.pm, Quad::default(), nd.local);
                let (mut prev, mut more) = (self.e.bodies.len() - 1, nd.arg == 1);
                while more {
                    let b = nodes[*at];
                    *at += 1;
                    self.body(b.pm, Quad::default(), b.local);
                    self.e.next[prev] = self.e.bodies.len() as i32 - 1;
                    (prev, more) = (self.e.bodies.len() - 1, b.arg == 1);
                }
                first
            }
            _ => {
                let c = self.cell(nd.pm, nd.quad);
                for o in 0..8 {
                    if nd.arg & 1 << o != 0 {
                        self.slots[c as usize][o] = self.decode(nodes, at);
                    }
                }
                Node::Cell(c)
            }
        }
    }
}

impl Essential {
    /// Rank `me`'s essential tree: `top` (every rank's), its own items' full encodings (`own`,
    /// key order), and `imported[s]` from each other rank `s` ([`let_for`] for `dom`, `me`'s
    /// domain).
    pub fn assemble(
        top: &TopTree,
        me: u32,
        own: &[LetNode],
        imported: &[Vec<LetNode>],
        dom: &Domain,
        w2: &[f32],
        theta2: f32,
    ) -> Essential {
        let mut b = Builder::default();
        let mut cursor = vec![0usize; imported.len()];
        let mut own_at = 0usize;
        let root = place(
            top,
            top.root,
            &mut b,
            me,
            own,
            &mut own_at,
            imported,
            &mut cursor,
            dom,
            w2,
            theta2,
        );
        debug_assert_eq!(own_at, own.len());
        debug_assert!(cursor.iter().zip(imported).all(|(c, v)| *c == v.len()));
        b.e.imported = imported.iter().map(|v| v.len()).sum();
        // Slot values: bodies 0..n, cells n + c.
        let n = b.e.bodies.len() as i32;
        let enc = |s: Node| match s {
            Node::Empty => dev::EMPTY,
            Node::Body(i) => i as i32,
            Node::Cell(c) => n + c as i32,
        };
        b.e.child = b.slots.iter().flat_map(|s| s.map(enc)).collect();
        b.e.root = match root {
            Node::Cell(c) => c as i32,
            // One body in all (or none): a root cell holding it.
            other => {
                let c = b.e.cell_pm.len() as i32;
                b.e.cell_pm.push(Body::default());
                b.e.cell_quad.push(Quad::default());
                b.e.child.extend([enc(other), -1, -1, -1, -1, -1, -1, -1]);
                c
            }
        };
        b.e
    }
}

#[allow(clippy::too_many_arguments)]
fn place(
    top: &TopTree,
    s: Slot,
    b: &mut Builder,
    me: u32,
    own: &[LetNode],
    own_at: &mut usize,
    imported: &[Vec<LetNode>],
    cursor: &mut [usize],
    dom: &Domain,
    w2: &[f32],
    theta2: f32,
) -> Node {
    match s {
        Slot::Empty => Node::Empty,
        Slot::Top(t) => {
            let tc = top.cells[t as usize];
            let c = b.cell(tc.pm, tc.quad);
            for o in 0..8 {
                let ch = place(
                    top,
                    tc.child[o],
                    b,
                    me,
                    own,
                    own_at,
                    imported,
                    cursor,
                    dom,
                    w2,
                    theta2,
                );
                b.slots[c as usize][o] = ch;
            }
            Node::Cell(c)
        }
        Slot::Item(i) => {
            let it = top.items[i as usize];
            let mine = it.rank == me;
            if it.is_body() {
                b.body(
                    it.pm,
                    Quad::default(),
                    if mine { it.node as u32 } else { u32::MAX },
                )
            } else if mine {
                b.decode(own, own_at)
            } else if dom.far(&it.pm, w2, it.depth as usize, theta2) {
                b.pseudo(it.pm, it.quad)
            } else {
                let s = it.rank as usize;
                b.decode(&imported[s], &mut cursor[s])
            }
        }
    }
}

impl Octree for Essential {
    fn n(&self) -> i32 {
        self.bodies.len() as i32
    }
    fn root(&self) -> i32 {
        self.root
    }
    fn child(&self, cell: i32, octant: u32) -> i32 {
        self.child[cell as usize * 8 + octant as usize]
    }
    fn next(&self, body: i32) -> i32 {
        self.next[body as usize]
    }
    fn body(&self, i: i32) -> Body {
        self.bodies[i as usize]
    }
    fn cell(&self, c: i32) -> Body {
        self.cell_pm[c as usize]
    }
}
