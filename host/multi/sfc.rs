//! Space-filling-curve keys in the tree's own geometry, and the domain decomposition into K
//! contiguous key ranges balanced by work.

use super::comm::{Comm, all_gather_pod};
use crate::device::bh::{self as dev, TreeHeader};

/// Octree levels a key resolves: 3 bits each, 63 bits.
pub const KEY_LEVELS: usize = 21;
/// One past the largest key.
pub const KEY_END: u64 = 1 << (3 * KEY_LEVELS);

/// The Morton key of `p`: its octants from the root down [`KEY_LEVELS`] levels, found by the very
/// comparisons and halvings of the tree build (`cpu::insert`), not by quantized coordinates, so
/// key order is the tree's depth-first order and a cell's bodies are exactly one key interval
/// ([`cell_range`]) even at float32 rounding.
pub fn key(p: [f32; 3], root: ([f32; 3], f32)) -> u64 {
    let (mut c, mut half) = root;
    let mut k = 0u64;
    for _ in 0..KEY_LEVELS {
        let o = dev::octant(p, c);
        k = k << 3 | o as u64;
        half *= 0.5;
        c = dev::child_center(c, half, o);
    }
    k
}

/// The keys of the cell at `depth` (≤ [`KEY_LEVELS`]) whose path from the root is `prefix`.
pub fn cell_range(prefix: u64, depth: usize) -> (u64, u64) {
    let shift = 3 * (KEY_LEVELS - depth);
    (prefix << shift, (prefix + 1) << shift)
}

/// The global bounding box of every rank's `points` (an all-gather of 24 bytes per rank) as the
/// header a tree of `cells` cells starts from: every rank's tree then has the single tree's root.
pub fn global_header(
    comm: &dyn Comm,
    points: impl Iterator<Item = [f32; 3]>,
    cells: u32,
) -> TreeHeader {
    let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
    for p in points {
        for k in 0..3 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    let mut h = TreeHeader::new(cells);
    (h.min, h.max) = (lo, hi);
    for b in all_gather_pod(comm, &[lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]]) {
        for k in 0..3 {
            h.min[k] = h.min[k].min(b[k]);
            h.max[k] = h.max[k].max(b[3 + k]);
        }
    }
    h
}

/// K contiguous key ranges: rank `r` owns `splitters[r]..splitters[r + 1]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decomposition {
    /// K + 1 keys, non-decreasing, from 0 to [`KEY_END`].
    pub splitters: Vec<u64>,
}

/// Samples per rank in [`Decomposition::balanced`]: a rank's work is cut into this many pieces,
/// which bounds the imbalance by about K / `SAMPLES` of the mean work plus the heaviest body.
pub const SAMPLES: usize = 256;

impl Decomposition {
    pub fn ranks(&self) -> usize {
        self.splitters.len() - 1
    }

    /// The rank owning `key`.
    pub fn rank_of(&self, key: u64) -> usize {
        self.splitters.partition_point(|&s| s <= key) - 1
    }

    /// Rank `r`'s keys.
    pub fn range(&self, r: usize) -> (u64, u64) {
        (self.splitters[r], self.splitters[r + 1])
    }

    /// Splitters that give each rank about the same total `work` (per body; all ones: equal
    /// counts). `keys` are this rank's, sorted, `work` in the same order. Each rank cuts its work
    /// into [`SAMPLES`] pieces of equal weight, all-gathers (first key, weight) per piece (16
    /// bytes each) and every rank places the same splitters at the pieces' edges nearest to the
    /// quantiles of the global work: deterministic, and independent of N.
    pub fn balanced(comm: &dyn Comm, keys: &[u64], work: &[f64]) -> Decomposition {
        debug_assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        let total: f64 = work.iter().sum();
        let mut pieces: Vec<[u64; 2]> = Vec::with_capacity(SAMPLES);
        let (mut acc, mut start, mut first) = (0.0f64, 0.0f64, None);
        for (i, (&k, &w)) in keys.iter().zip(work).enumerate() {
            first.get_or_insert(k);
            acc += w;
            let full = acc - start >= total / SAMPLES as f64;
            // A piece never ends between equal keys (they go to one rank anyway).
            if (full && keys.get(i + 1) != Some(&k)) || i + 1 == keys.len() {
                pieces.push([first.take().unwrap_or(k), (acc - start).to_bits()]);
                start = acc;
            }
        }
        let mut all: Vec<(u64, f64)> = all_gather_pod(comm, &pieces)
            .into_iter()
            .flatten()
            .map(|[k, w]| (k, f64::from_bits(w)))
            .collect();
        all.sort_by_key(|a| a.0);
        let total: f64 = all.iter().map(|a| a.1).sum();
        let k = comm.size();
        let mut splitters = vec![0u64; k + 1];
        splitters[k] = KEY_END;
        let mut before = 0.0f64; // work of the pieces before piece `j`
        let mut j = 0;
        for (r, s) in splitters.iter_mut().enumerate().take(k).skip(1) {
            let target = total * r as f64 / k as f64;
            // Advance while the next edge is nearer to the target.
            while j < all.len() && (before + all[j].1 - target).abs() <= (before - target).abs() {
                before += all[j].1;
                j += 1;
            }
            *s = all.get(j).map_or(KEY_END, |a| a.0);
        }
        // Equal first keys of two pieces (from two ranks) would make the order above ambiguous;
        // splitters stay non-decreasing whatever happens.
        for r in 1..=k {
            splitters[r] = splitters[r].max(splitters[r - 1]);
        }
        Decomposition { splitters }
    }
}
