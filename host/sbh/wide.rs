//! The wide-node layout of the 64-ary estimator, built on the host from any octree view (the
//! layout and its invariants are described in `warpkit_device::sbh::wide`): breadth-first
//! ([`WideTree::build`]) or in the GPU build's order ([`WideTree::build_top_down`], the CPU twin of
//! `warpkit_device::sbh::wide_kernels`). Every block is written by `wide_block`, the one copy of
//! the block's formulas that the kernels call too. [`WideTree::check`] and
//! [`WideTree::same_blocks`] test a layout, wherever it was built.

use crate::device::bh::Body;
use crate::device::sbh::{
    TreeView, WIDE_CHAINS, WIDE_EVEN, WIDE_HEAD, WIDE_ODD, WideMeta, wide_block, wide_entries,
    wide_mark, wide_padded, wide_rows,
};

/// The wide layout's three row arrays; `dipole` is empty unless the tree carries dipoles.
#[derive(Clone, Debug, Default)]
pub struct WideTree {
    pub pm: Vec<Body>,
    pub meta: Vec<WideMeta>,
    pub dipole: Vec<Body>,
}

impl WideTree {
    /// Empty arrays of `rows` rows (dipoles too with `dipoles`).
    fn zeroed(rows: usize, dipoles: bool) -> WideTree {
        WideTree {
            pm: vec![Body::default(); rows],
            meta: vec![WideMeta::default(); rows],
            dipole: if dipoles {
                vec![Body::default(); rows]
            } else {
                Vec::new()
            },
        }
    }

    /// Writes wide node `cell`'s block at row `s` ([`wide_block`]).
    fn put_block<V: TreeView>(
        &mut self,
        v: &V,
        cell: i32,
        s: u32,
        link: impl Fn(i32) -> (u32, u32),
    ) {
        let dipoles = !self.dipole.is_empty();
        wide_block(v, cell, dipoles, link, |off, pm, meta, d| {
            let r = (s + off) as usize;
            self.pm[r] = pm;
            self.meta[r] = meta;
            if dipoles {
                self.dipole[r] = d;
            }
        });
    }

    /// The wide layout of `v`'s octree: a block for the root and for every cell at an even depth,
    /// in breadth-first order (the root's block at row 0). With `dipoles`, the entries' dipoles
    /// too (from `v.cell_dipole` / `v.body_dipole`).
    pub fn build<V: TreeView>(v: &V, dipoles: bool) -> WideTree {
        let n = v.n();
        // Pass 1: the wide nodes breadth-first, their entry counts and first rows.
        let mut nodes = vec![v.root()];
        let mut count = Vec::new();
        let mut start = Vec::new();
        let mut block_of = vec![u32::MAX; v.root() as usize + 1];
        let mut rows = 0u32;
        let mut i = 0;
        while i < nodes.len() {
            let cell = nodes[i];
            block_of[cell as usize] = i as u32;
            let (ends, _) = wide_entries(v, cell, |_, val| {
                if val >= n {
                    nodes.push(val - n);
                }
            });
            let c = ends[7] as u32;
            count.push(c);
            start.push(rows);
            rows += wide_rows(c);
            i += 1;
        }
        // Pass 2: the rows.
        let mut w = WideTree::zeroed(rows as usize, dipoles);
        for (i, &cell) in nodes.iter().enumerate() {
            w.put_block(v, cell, start[i], |c| {
                let b = block_of[c as usize] as usize;
                (start[b], count[b])
            });
        }
        w
    }

    /// The GPU build's layout, computed on the host (its CPU twin: the same steps as the kernels
    /// of `warpkit_device::sbh::wide_kernels`, sequentially): positions `j = root - cell` for the
    /// `used` cells `root - used + 1 ..= root` (every child cell below its parent, as both octree
    /// builds number them), depth parities top down with [`wide_mark`], an exclusive scan of the
    /// blocks' rows in position order, then [`wide_block`] per wide node. The same blocks as
    /// [`Self::build`]'s in another order. Panics if a cell in use is not reached from the root.
    pub fn build_top_down<V: TreeView>(v: &V, used: usize, dipoles: bool) -> WideTree {
        let root = v.root();
        let mut mark = vec![0u32; root as usize + 1];
        mark[root as usize] = WIDE_EVEN;
        let cnt: Vec<u32> = (0..used as i32)
            .map(|j| {
                let k = root - j;
                let m = mark[k as usize];
                assert_ne!(m, 0, "cell {k} is not below its parent");
                wide_mark(v, k, m == WIDE_EVEN, |c, even| {
                    mark[c as usize] = if even { WIDE_EVEN } else { WIDE_ODD }
                })
            })
            .collect();
        let mut start = Vec::with_capacity(used);
        let mut rows = 0u32;
        for &c in &cnt {
            start.push(rows);
            rows += wide_rows(c);
        }
        let mut w = WideTree::zeroed(rows as usize, dipoles);
        for (j, &c) in cnt.iter().enumerate() {
            if c > 0 {
                w.put_block(v, root - j as i32, start[j], |cell| {
                    let at = (root - cell) as usize;
                    (start[at], cnt[at])
                });
            }
        }
        w
    }

    /// Checks the layout's invariants against the octree `v` it was built from (any block order):
    /// the blocks tile the rows from row 0 (the root's); headers are consistent (group ends,
    /// count, cell mask, flags, a zero second meta row); every entry sits in its child's group, a
    /// body entry heads its bucket chain (`aux = next`) with the chain's weight, a cell entry
    /// links to a block's first row with that block's entry count; every block but the root's is
    /// linked exactly once and every body appears in exactly one chain; each header's pick weights
    /// are its groups' summed entry weights, and they sum to the block's weight (the linking
    /// entry's, or the total body weight at the root), up to float32 rounding; padding is
    /// weightless. Returns (blocks, entries).
    pub fn check<V: TreeView>(&self, v: &V) -> Result<(usize, usize), String> {
        let n = v.n();
        let rows = self.meta.len();
        if self.pm.len() != rows || !(self.dipole.is_empty() || self.dipole.len() == rows) {
            return Err("array lengths differ".into());
        }
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-5 * a.abs().max(b.abs()).max(1e-30);
        // Pass 1: the blocks' first rows and counts.
        let mut count_at = std::collections::HashMap::new();
        let mut r = 0usize;
        while r < rows {
            let c = self.meta[r].count();
            if c == 0 || c > 64 || r + wide_rows(c) as usize > rows {
                return Err(format!("block at row {r}: bad entry count {c}"));
            }
            count_at.insert(r as u32, c);
            r += wide_rows(c) as usize;
        }
        // Pass 2: every block.
        let mut linked = std::collections::HashMap::new();
        let mut links = Vec::new();
        let block_weight = |s: u32| -> f64 {
            let (a, b) = (self.pm[s as usize], self.pm[s as usize + 1]);
            [a.x, a.y, a.z, a.m, b.x, b.y, b.z, b.m]
                .iter()
                .map(|&x| x as f64)
                .sum()
        };
        let mut seen = vec![0u32; n as usize];
        let mut entries = 0usize;
        let mut starts: Vec<u32> = count_at.keys().copied().collect();
        starts.sort_unstable();
        for &s in &starts {
            let h = self.meta[s as usize];
            let c = h.count();
            let err = |m: String| Err(format!("block at row {s}: {m}"));
            if self.meta[s as usize + 1] != WideMeta::default() {
                return err("second header row of meta is not zero".into());
            }
            let hw = [self.pm[s as usize], self.pm[s as usize + 1]];
            let hw: [f32; 8] = std::array::from_fn(|o| {
                let b = hw[o / 4];
                [b.x, b.y, b.z, b.m][o % 4]
            });
            let base = s as usize + WIDE_HEAD as usize;
            let mut chains = false;
            let mut prev_hi = 0;
            for o in 0..8u32 {
                let (lo, hi) = h.group(o);
                if lo != prev_hi || hi < lo || hi - lo > 8 || hi > c {
                    return err(format!("group {o} is {lo}..{hi}"));
                }
                prev_hi = hi;
                let mut sum = 0.0f64;
                for e in lo..hi {
                    let r = base + e as usize;
                    let m = self.meta[r];
                    if m.slot() / 8 != o {
                        return err(format!("entry {e} (slot {}) in group {o}", m.slot()));
                    }
                    sum += m.weight() as f64;
                    if m.link() >= 0 {
                        if !h.is_cell(o) {
                            return err(format!("cell entry {e} under body child {o}"));
                        }
                        match count_at.get(&(m.link() as u32)) {
                            Some(&k) if k == m.aux() as u32 => {}
                            _ => {
                                return err(format!(
                                    "entry {e}: link {} aux {}",
                                    m.link(),
                                    m.aux()
                                ));
                            }
                        }
                        if m.weight() != self.pm[r].m || m.link() as u32 == s {
                            return err(format!("entry {e}: weight or self link"));
                        }
                        *linked.entry(m.link() as u32).or_insert(0u32) += 1;
                        links.push((m.link() as u32, m.weight() as f64));
                    } else {
                        let b = -1 - m.link();
                        if b >= n || m.aux() != v.next(b) || self.pm[r] != v.body(b) {
                            return err(format!("entry {e}: body {b} aux {}", m.aux()));
                        }
                        if !h.is_cell(o) && hi - lo != 1 {
                            return err(format!("body child {o} is not alone in its group"));
                        }
                        chains |= m.aux() >= 0;
                        let (mut w, mut b) = (0.0f32, b);
                        while b >= 0 {
                            seen[b as usize] += 1;
                            w += v.body(b).m;
                            b = v.next(b);
                        }
                        if w != m.weight() {
                            return err(format!("entry {e}: weight {} chain {w}", m.weight()));
                        }
                    }
                }
                if !close(hw[o as usize] as f64, sum) {
                    return err(format!(
                        "child {o}: pick weight {} entries {sum}",
                        hw[o as usize]
                    ));
                }
                if h.is_cell(o) && hi == lo {
                    return err(format!("child cell {o} without entries"));
                }
            }
            if prev_hi != c {
                return err(format!("groups end at {prev_hi}, count {c}"));
            }
            if chains != (h.flags() & WIDE_CHAINS != 0) {
                return err("chain flag".into());
            }
            for e in c..wide_padded(c) {
                let r = base + e as usize;
                if self.pm[r].m != 0.0 || self.meta[r] != WideMeta::entry(-1, -1, 0.0, 0) {
                    return err(format!("padding row {e}"));
                }
            }
            // The root block's weight, the bodies' (the others': checked through their links).
            if s == 0 {
                let own: f64 = (0..n).map(|b| v.body(b).m as f64).sum();
                if !close(block_weight(s), own) {
                    return err(format!("pick weights {}, bodies {own}", block_weight(s)));
                }
            }
            entries += c as usize;
        }
        // Links: every block but the root's exactly once, with the linking entry's weight equal
        // to the linked block's pick weights' sum.
        for &s in &starts {
            let times = linked.get(&s).copied().unwrap_or(0);
            if times != (s != 0) as u32 {
                return Err(format!("block at row {s} linked {times} times"));
            }
        }
        for (s, w) in links {
            if !close(block_weight(s), w) {
                return Err(format!(
                    "block at row {s}: pick weights {}, its entry {w}",
                    block_weight(s)
                ));
            }
        }
        if let Some(b) = seen.iter().position(|&k| k != 1) {
            return Err(format!("body {b} appears {} times", seen[b]));
        }
        Ok((starts.len(), entries))
    }

    /// Whether `self` and `other` hold the same blocks, bit for bit, in any order: walked from
    /// both roots (row 0) along the links in step, every row of each pair of blocks must be equal
    /// except the links themselves, which must lead to blocks that are equal in turn, and both
    /// layouts must have no other blocks. Returns the number of blocks.
    pub fn same_blocks(&self, other: &WideTree) -> Result<usize, String> {
        let bits = |b: &Body| bytemuck::cast::<Body, [u32; 4]>(*b);
        let rows_of = |w: &WideTree, s: usize| -> Result<usize, String> {
            let c = w.meta.get(s).ok_or(format!("no block at row {s}"))?.count();
            let r = wide_rows(c) as usize;
            if c == 0 || s + r > w.meta.len() {
                return Err(format!("bad block at row {s}"));
            }
            Ok(r)
        };
        let mut todo = vec![(0usize, 0usize)];
        let (mut blocks, mut rows) = (0usize, 0usize);
        while let Some((a, b)) = todo.pop() {
            let (ra, rb) = (rows_of(self, a)?, rows_of(other, b)?);
            if ra != rb {
                return Err(format!("blocks at rows {a} and {b}: {ra} and {rb} rows"));
            }
            for off in 0..ra {
                let (i, j) = (a + off, b + off);
                let diff =
                    |what: &str| Err(format!("blocks at rows {a} and {b}, row {off}: {what}"));
                if bits(&self.pm[i]) != bits(&other.pm[j]) {
                    return diff("summary");
                }
                if self.dipole.len() != other.dipole.len()
                    || (!self.dipole.is_empty() && bits(&self.dipole[i]) != bits(&other.dipole[j]))
                {
                    return diff("dipole");
                }
                let (ma, mb) = (self.meta[i], other.meta[j]);
                let is_entry = off >= WIDE_HEAD as usize;
                if is_entry && ma.link() >= 0 && mb.link() >= 0 {
                    if ma.0[1..] != mb.0[1..] {
                        return diff("entry");
                    }
                    todo.push((ma.link() as usize, mb.link() as usize));
                } else if ma != mb {
                    return diff("meta");
                }
            }
            blocks += 1;
            rows += ra;
        }
        if rows != self.meta.len() || rows != other.meta.len() {
            return Err(format!(
                "{rows} rows reached from the roots of layouts of {} and {} rows",
                self.meta.len(),
                other.meta.len()
            ));
        }
        Ok(blocks)
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
