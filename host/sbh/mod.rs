//! Stochastic Barnes–Hut (Madan et al., SIGGRAPH 2025) and deterministic Barnes–Hut at query
//! points: sources, queries, validation, the tree with its dipole summary, error statistics, and
//! the two backends ([`cpu`] twin and [`gpu`] launchers) over the formulas and traversals of
//! `warpkit_device::sbh` (whose module docs describe the estimator).
//!
//! Trees: the octree of [`crate::bh`], built on the CPU by [`crate::bh::cpu::build_tree`] and
//! uploaded for the GPU ([`gpu::DeviceTree::upload`]), as the paper's authors build theirs, or
//! built on the GPU ([`gpu::DeviceTree::build_on_gpu`]). The 64-ary estimator (`levels = 2`)
//! reads the octree through its wide-node layout ([`wide::WideTree`], built on the host for a
//! host tree, on the GPU right after a GPU-built octree). [`Summation`] is the façade that picks
//! the backend.

pub mod cpu;
mod facade;
pub mod gpu;
#[cfg(test)]
mod tests;
pub mod wide;

pub use facade::{Summation, TreeOrigin, check_device_memory};

use crate::bh::{Tree, cpu::build_tree};
use crate::device::bh::{self as dbh, Body};
use crate::device::rng;
use crate::device::sbh::{self as dev, KernelSpec, SliceTree};
use rayon::prelude::*;

/// The kernel functions of the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, crate::choice::Choice)]
pub enum Kernel {
    /// `-w / (r + δ)`, the authors' softened potential (their table: δ = 0.1).
    Shifted,
    /// `-w / sqrt(r² + ε²)`, the Plummer-softened potential.
    Plummer,
    /// The winding number of oriented surface samples (solid angle).
    Winding,
    /// The smooth distance `-ln(Σ w e^{-α r}) / α`.
    Smooth,
}

impl Kernel {
    /// The device form with parameter δ, ε, (unused), α.
    pub fn spec(self, param: f32) -> KernelSpec {
        let kind = match self {
            Kernel::Shifted => dev::KIND_SHIFTED,
            Kernel::Plummer => dev::KIND_PLUMMER,
            Kernel::Winding => dev::KIND_WINDING,
            Kernel::Smooth => dev::KIND_SMOOTH,
        };
        KernelSpec { kind, param }
    }

    /// The parameter of the paper's experiments: δ = 0.1, ε = 0.1, α = 50.
    pub fn default_param(self) -> f32 {
        match self {
            Kernel::Shifted | Kernel::Plummer => 0.1,
            Kernel::Winding => 0.0,
            Kernel::Smooth => 50.0,
        }
    }
}

/// The field reported for a summed value: the sum itself, or the smooth distance of it.
pub fn field(k: KernelSpec, sum: f64) -> f64 {
    if k.kind == dev::KIND_SMOOTH {
        dev::smooth_distance(sum as f32, k.param) as f64
    } else {
        sum
    }
}

/// Source points with weights (`Body::m`: mass, or area for the winding number) and, for the
/// winding number, area-weighted normals (`dipoles`, else empty).
#[derive(Clone, Debug, Default)]
pub struct Sources {
    pub bodies: Vec<Body>,
    pub dipoles: Vec<[f32; 3]>,
}

/// M point masses uniform in [-0.5, 0.5]³ with mass 1/M (the paper's table).
pub fn uniform_sources(m: usize, seed: u64) -> Sources {
    Sources {
        bodies: crate::bh::scene::uniform(m, seed),
        dipoles: Vec::new(),
    }
}

/// M oriented samples uniform on a sphere of radius `r` at the origin: weight = area 4πr²/M,
/// dipole = area × outward normal (winding number 1 inside, 0 outside).
pub fn sphere_sources(m: usize, r: f32, seed: u64) -> Sources {
    let area = 4.0 * std::f32::consts::PI * r * r / m as f32;
    let (bodies, dipoles) = (0..m as u64)
        .map(|i| {
            let z = 2.0 * rng::uniform_f32(seed, 2 * i) - 1.0;
            let phi = 2.0 * std::f32::consts::PI * rng::uniform_f32(seed, 2 * i + 1);
            let s = (1.0 - z * z).max(0.0).sqrt();
            let n = [s * phi.cos(), s * phi.sin(), z];
            let b = Body {
                x: r * n[0],
                y: r * n[1],
                z: r * n[2],
                m: area,
            };
            (b, n.map(|c| c * area))
        })
        .unzip();
    Sources { bodies, dipoles }
}

/// Centres of a `res`³ grid of cells over [-0.5, 0.5]³, x fastest.
pub fn grid_queries(res: usize) -> Vec<[f32; 3]> {
    lattice_queries(res, |i| (i as f32 + 0.5) / res as f32 - 0.5)
}

/// The `res`³ points `(c(i), c(j), c(k))`, x fastest.
fn lattice_queries(res: usize, c: impl Fn(usize) -> f32) -> Vec<[f32; 3]> {
    (0..res * res * res)
        .map(|i| [c(i % res), c(i / res % res), c(i / (res * res))])
        .collect()
}

/// The nodes of a `res`³ grid over [-0.5, 0.5]³, faces included (spacing 1/(res − 1)), x
/// fastest: the other reading of "a 100³ query grid", under which our SBH errors at M = 2^15 match
/// the authors' (see `repro sbh`). `res` ≥ 2.
pub fn node_queries(res: usize) -> Vec<[f32; 3]> {
    lattice_queries(res, |i| i as f32 / (res - 1) as f32 - 0.5)
}

/// `n` points uniform in [-0.5, 0.5]³.
pub fn random_queries(n: usize, seed: u64) -> Vec<[f32; 3]> {
    let s = seed ^ 0x0051_e4f1_u64;
    (0..n as u64)
        .map(|i| std::array::from_fn(|k| rng::uniform_f32(s, 3 * i + k as u64) - 0.5))
        .collect()
}

/// Everything that makes a request invalid, caught before any work or launch.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SbhError {
    #[error("no sources")]
    NoSources,
    #[error("{0} sources exceed the 2^30 that 32-bit tree indices address")]
    TooMany(usize),
    #[error("no queries")]
    NoQueries,
    #[error("{0} queries exceed the 2^30 that 32-bit query indices address")]
    TooManyQueries(String),
    #[error("source {index} has a non-finite coordinate or weight ({body})")]
    NonFiniteSource { index: usize, body: Body },
    #[error(
        "source {index} has weight {weight}; weights must be ≥ 0 (paths are sampled by weight)"
    )]
    NegativeWeight { index: usize, weight: f32 },
    #[error(
        "the total source weight is {0}: path sampling (a density over sources) needs a positive total"
    )]
    TotalWeight(f64),
    #[error(
        "the winding number needs one dipole (area-weighted normal) per source: {got} for {want}"
    )]
    Dipoles { got: usize, want: usize },
    #[error("source {index} has a non-finite dipole {dipole:?}")]
    NonFiniteDipole { index: usize, dipole: [f32; 3] },
    #[error("query {index} has a non-finite coordinate ({query:?})")]
    NonFiniteQuery { index: usize, query: [f32; 3] },
    #[error(
        "query {query} lies on source {body}: the kernel is singular there (use a softening > 0)"
    )]
    QueryOnSource { query: usize, body: usize },
    #[error("invalid query order: {0} (it must be a permutation of the query indices)")]
    Order(String),
    #[error("S = {0} samples per stratum: it must be in 1..={MAX_SAMPLES}")]
    Samples(u32),
    #[error("levels = {0} is invalid: octree levels per estimator level are 1 or 2")]
    Levels(u32),
    #[error("β = {0} is invalid: the far-field ratio must be > 0 (+∞ sums every pair exactly)")]
    Beta(f32),
    #[error("kernel parameter {0} is invalid: δ and ε must be finite and ≥ 0, α finite and > 0")]
    Param(f32),
    #[error(
        "quadrupole moments need a radial kernel (potential or smooth distance), not the winding number"
    )]
    Quadrupole,
    #[error("this tree carries no quadrupole moments (built without them)")]
    NoQuadrupoles,
}

/// Checks sources, queries and the kernel.
pub fn validate(src: &Sources, queries: &[[f32; 3]], k: KernelSpec) -> Result<(), SbhError> {
    let m = src.bodies.len();
    if m == 0 {
        return Err(SbhError::NoSources);
    }
    if m > 1 << 30 {
        return Err(SbhError::TooMany(m));
    }
    if queries.is_empty() {
        return Err(SbhError::NoQueries);
    }
    let ok = match k.kind {
        dev::KIND_SMOOTH => k.param.is_finite() && k.param > 0.0,
        _ => k.param.is_finite() && k.param >= 0.0,
    };
    if !ok {
        return Err(SbhError::Param(k.param));
    }
    let mut total = 0.0f64;
    for (index, b) in src.bodies.iter().enumerate() {
        if ![b.x, b.y, b.z, b.m].iter().all(|v| v.is_finite()) {
            return Err(SbhError::NonFiniteSource { index, body: *b });
        }
        if b.m < 0.0 {
            return Err(SbhError::NegativeWeight { index, weight: b.m });
        }
        total += b.m as f64;
    }
    if total <= 0.0 {
        return Err(SbhError::TotalWeight(total));
    }
    if k.kind == dev::KIND_WINDING {
        if src.dipoles.len() != m {
            return Err(SbhError::Dipoles {
                got: src.dipoles.len(),
                want: m,
            });
        }
        if let Some((index, d)) = src
            .dipoles
            .iter()
            .enumerate()
            .find(|(_, d)| !d.iter().all(|c| c.is_finite()))
        {
            return Err(SbhError::NonFiniteDipole { index, dipole: *d });
        }
    }
    if let Some((index, q)) = queries
        .iter()
        .enumerate()
        .find(|(_, q)| !q.iter().all(|c| c.is_finite()))
    {
        return Err(SbhError::NonFiniteQuery { index, query: *q });
    }
    if dev::is_singular(k) {
        let key = |p: [f32; 3]| p.map(|c| (c + 0.0).to_bits()); // -0.0 and 0.0 coincide
        // Sorted keys and parallel binary searches: O((M + Q) log M) on every core, with no
        // per-entry allocation (a hash map of 2^22 sources dominated whole sweeps).
        let mut at: Vec<([u32; 3], usize)> = src
            .bodies
            .par_iter()
            .enumerate()
            .map(|(i, b)| (key(b.pos()), i))
            .collect();
        at.par_sort_unstable_by_key(|e| e.0);
        let hit = queries.par_iter().enumerate().find_map_first(|(i, q)| {
            let found = at.binary_search_by_key(&key(*q), |e| e.0).ok()?;
            Some((i, at[found].1))
        });
        if let Some((query, source)) = hit {
            return Err(SbhError::QueryOnSource {
                query,
                body: source,
            });
        }
    }
    Ok(())
}

/// The most paths per stratum: far beyond the paper's 1–64 (the error falls as 1/√S; S = 4096
/// on a 4³ grid takes a second), and small enough that a near stratum's 3S draws and their draw
/// indices cannot wrap (S near 2^32 wrapped `3 * samples` and ran for hours on a 4³ grid).
pub const MAX_SAMPLES: u32 = 1 << 12;

/// The most queries: their indices are 32-bit, as the sources'.
pub const MAX_QUERIES: usize = 1 << 30;

/// Checks an estimator's sample count.
pub fn validate_samples(samples: u32) -> Result<(), SbhError> {
    if samples == 0 || samples > MAX_SAMPLES {
        Err(SbhError::Samples(samples))
    } else {
        Ok(())
    }
}

/// Checks the octree levels per estimator level: 1 (octree) or 2 (64-ary); any other value would
/// run as 2.
pub fn validate_levels(levels: u32) -> Result<(), SbhError> {
    if matches!(levels, 1 | 2) {
        Ok(())
    } else {
        Err(SbhError::Levels(levels))
    }
}

/// Checks an evaluation order: `None`, or a permutation of `0..nq`.
pub fn validate_order(order: Option<&[u32]>, nq: usize) -> Result<(), SbhError> {
    let Some(order) = order else { return Ok(()) };
    if order.len() != nq {
        return Err(SbhError::Order(format!(
            "{} entries for {nq} queries",
            order.len()
        )));
    }
    let mut seen = vec![false; nq];
    for (i, &j) in order.iter().enumerate() {
        match seen.get_mut(j as usize) {
            Some(s) if !*s => *s = true,
            _ => {
                return Err(SbhError::Order(format!(
                    "entry {i} is {j}: out of range or repeated"
                )));
            }
        }
    }
    Ok(())
}

/// The queries' Morton frame: the corner `lo` of their bounding box and `scale = 1024 / extent`
/// ([`dev::morton_key`]'s arguments).
fn morton_frame(queries: &[[f32; 3]]) -> ([f32; 3], f32) {
    let (lo, hi) = queries.iter().fold(
        ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]),
        |(lo, hi), q| {
            (
                std::array::from_fn(|k| lo[k].min(q[k])),
                std::array::from_fn(|k| hi[k].max(q[k])),
            )
        },
    );
    let extent = (0..3).map(|k| hi[k] - lo[k]).fold(0.0f32, f32::max);
    let scale = if extent > 0.0 && extent.is_finite() {
        1024.0 / extent
    } else {
        0.0
    };
    (lo, scale)
}

/// The queries' indices sorted by the Morton code of their position in the queries' bounding box
/// ([`dev::morton_key`], 10 bits per axis; ties by index): an evaluation order in which each warp's
/// 32 queries are close together, whatever order the caller holds them in. Computed on the host
/// (rayon), O(Q log Q).
pub fn query_order(queries: &[[f32; 3]]) -> Vec<u32> {
    let (lo, scale) = morton_frame(queries);
    let mut keyed: Vec<(u32, u32)> = queries
        .par_iter()
        .enumerate()
        .map(|(i, q)| (dev::morton_key(*q, lo, scale), i as u32))
        .collect();
    keyed.par_sort_unstable();
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// The far-field expansion of a cell in the grouped Barnes–Hut.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, crate::choice::Choice)]
pub enum Moments {
    /// Weight at the weighted centre: the paper's Barnes–Hut.
    #[default]
    Monopole,
    /// Plus the second moment about the weighted centre ([`dev::term_quad_add`]; ours): the error
    /// of a far cell falls by about its size over its distance, for 10 more floats per term.
    /// Radial kernels only.
    Quadrupole,
}

impl Moments {
    /// Refuses quadrupoles for a kernel without them.
    pub fn validate(self, k: KernelSpec) -> Result<(), SbhError> {
        if self == Moments::Quadrupole && !dev::has_quadrupole(k) {
            Err(SbhError::Quadrupole)
        } else {
            Ok(())
        }
    }
}

/// Which queries share a warp (one traversal) in the grouped Barnes–Hut.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, crate::choice::Choice)]
pub enum Warps {
    /// Morton order cut at aligned blocks ([`warp_groups`]): compact boxes (4 × 4 × 2 queries of
    /// a grid), the fastest.
    #[default]
    Morton,
    /// Row-major order ([`row_order`]: z, then y, then x; a grid's own order), 32 consecutive
    /// queries a warp: the authors' warps. A box spans a third of a 100-query grid row, so its
    /// vote is stricter than a Morton box's: lower errors at the same β, more time.
    Rows,
}

/// The queries' indices sorted by (z, y, x), ties by index: row-major order, the identity for
/// [`grid_queries`] in their own order. Sorting shuffled queries back into it gives the same warps
/// as the grid order.
pub fn row_order(queries: &[[f32; 3]]) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..queries.len() as u32).collect();
    idx.par_sort_unstable_by(|&a, &b| {
        let (p, q) = (queries[a as usize], queries[b as usize]);
        (p[2].total_cmp(&q[2]))
            .then(p[1].total_cmp(&q[1]))
            .then(p[0].total_cmp(&q[0]))
            .then(a.cmp(&b))
    });
    idx
}

/// The launch positions of the grouped Barnes–Hut (32 per warp; [`NO_QUERY`] marks an idle
/// lane): [`warp_groups`] of `order` for [`Warps::Morton`] (`None`: the queries' own order, 32
/// consecutive), [`row_order`] for [`Warps::Rows`] (whatever `order`).
pub fn bh_positions(queries: &[[f32; 3]], order: Option<&[u32]>, warps: Warps) -> Option<Vec<u32>> {
    match (warps, order) {
        (Warps::Rows, _) => Some(row_order(queries)),
        (Warps::Morton, Some(o)) => Some(warp_groups(queries, o)),
        (Warps::Morton, None) => None,
    }
}

/// An idle lane in [`warp_groups`]' layout.
pub const NO_QUERY: u32 = dev::NO_QUERY;

/// Queries an aligned Morton block of [`warp_groups`] holds on average, at least.
const GROUP_BLOCK_QUERIES: f64 = 128.0;

/// The warps of the grouped Barnes–Hut traversal: `order` (normally [`query_order`]'s) cut into
/// runs of at most 32 consecutive positions whose queries share one aligned Morton block (a cube of
/// `8^l` cells of the 1024³ key grid, `l` the smallest level whose blocks hold at least 128 queries
/// on average), each run padded with [`NO_QUERY`] to a whole warp. Without the cut, 32
/// Morton-consecutive queries can straddle a jump of the curve — at the edges of blocks that the
/// queries fill only partly, as a 100³ grid does in the 1024³ key grid — and span up to the whole
/// domain; such a warp opens nearly every cell and outlasts all the others (at M = 2^20 on the
/// 100³ grid the H200's SMs idled 57% of the kernel's time). Every query appears once; each run's
/// first entry is a query.
pub fn warp_groups(queries: &[[f32; 3]], order: &[u32]) -> Vec<u32> {
    let w = crate::device::WARP_SIZE as usize;
    let (lo, scale) = morton_frame(queries);
    let cells_per_block = GROUP_BLOCK_QUERIES * f64::from(1u32 << 30) / queries.len().max(1) as f64;
    let level = (0..10u32)
        .find(|&l| 8f64.powi(l as i32) >= cells_per_block)
        .unwrap_or(10);
    let block = |j: u32| dev::morton_key(queries[j as usize], lo, scale) >> (3 * level);
    let mut out = Vec::with_capacity(order.len() + order.len() / 4);
    let mut current = 0;
    for &j in order {
        let b = block(j);
        if out.len() % w != 0 && b != current {
            out.resize(out.len().next_multiple_of(w), NO_QUERY);
        }
        out.push(j);
        current = b;
    }
    out.resize(out.len().next_multiple_of(w), NO_QUERY);
    out
}

/// Checks a far-field ratio.
pub fn validate_beta(beta: f32) -> Result<(), SbhError> {
    if beta.is_nan() || beta <= 0.0 || beta == f32::NEG_INFINITY {
        Err(SbhError::Beta(beta))
    } else {
        Ok(())
    }
}

/// The octree of the sources with, for the winding number, each cell's summed dipole.
#[derive(Clone, Debug)]
pub struct SbhTree {
    pub tree: Tree,
    /// Per cell (empty unless the sources carry dipoles).
    pub cell_dipole: Vec<[f32; 3]>,
    pub root_half: f32,
    /// The wide-node layout of `levels = 2` (module `wide`).
    pub wide: wide::WideTree,
    /// Host milliseconds of the wide layout's build (part of [`Self::build`]).
    pub wide_ms: f64,
}

impl SbhTree {
    /// Builds the octree of `src` on the CPU and sums the dipoles bottom-up.
    pub fn build(src: &Sources) -> SbhTree {
        let tree = build_tree(&src.bodies);
        let cell_dipole = if src.dipoles.is_empty() {
            Vec::new()
        } else {
            dipole_summary(&tree, &src.dipoles)
        };
        let root_half = dbh::root_cell(&tree.header).1;
        let mut t = SbhTree {
            tree,
            cell_dipole,
            root_half,
            wide: wide::WideTree::default(),
            wide_ms: 0.0,
        };
        let t0 = std::time::Instant::now();
        t.wide = wide::WideTree::build(&t.view_octree(src), !src.dipoles.is_empty());
        t.wide_ms = t0.elapsed().as_secs_f64() * 1e3;
        t
    }

    /// The traversals' view of this tree and its sources, with the wide layout.
    pub fn view<'a>(&'a self, src: &'a Sources) -> SliceTree<'a> {
        SliceTree {
            wide_pm: &self.wide.pm,
            wide_meta: &self.wide.meta,
            wide_dipole: &self.wide.dipole,
            ..self.view_octree(src)
        }
    }

    /// [`Self::view`] without the wide layout: `levels = 2` then walks the octree's slots (the
    /// reference the wide layout is tested against).
    pub fn view_octree<'a>(&'a self, src: &'a Sources) -> SliceTree<'a> {
        SliceTree {
            bodies: &src.bodies,
            body_dipole: &src.dipoles,
            child: &self.tree.child,
            next: &self.tree.next,
            cell_pm: &self.tree.cell_pm,
            cell_dipole: &self.cell_dipole,
            root_half: self.root_half,
            wide_pm: &[],
            wide_meta: &[],
            wide_dipole: &[],
        }
    }
}

/// Each cell's summed dipole, bottom-up (a child cell always has a lower index than its parent,
/// in both the CPU and the GPU build).
pub fn dipole_summary(t: &Tree, dipoles: &[[f32; 3]]) -> Vec<[f32; 3]> {
    let n = t.n as i32;
    let mut out = vec![[0.0f32; 3]; t.cells()];
    for c in t.header.bottom.max(0)..t.cells() as i32 {
        let mut s = [0.0f32; 3];
        for o in 0..8 {
            let ch = t.child[t.layout.slot(c, o)];
            let mut add = |d: [f32; 3]| (0..3).for_each(|k| s[k] += d[k]);
            if ch >= n {
                add(out[(ch - n) as usize]);
            } else {
                let mut b = ch;
                while b >= 0 {
                    add(dipoles[b as usize]);
                    b = t.next[b as usize];
                }
            }
        }
        out[c as usize] = s;
    }
    out
}

/// Mean, median and maximum absolute error of a field against the reference.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ErrorStats {
    pub mean: f64,
    pub median: f64,
    pub max: f64,
}

/// Absolute errors of `field(k, got)` against `field(k, reference)`, summarized.
pub fn error_stats(k: KernelSpec, got: &[f32], reference: &[f64]) -> ErrorStats {
    assert_eq!(got.len(), reference.len());
    let e: Vec<f64> = got
        .iter()
        .zip(reference)
        .map(|(&g, &r)| (field(k, g as f64) - field(k, r)).abs())
        .collect();
    ErrorStats {
        mean: e.iter().sum::<f64>() / e.len().max(1) as f64,
        median: crate::stats::median(&e).unwrap_or(f64::NAN),
        max: e.iter().copied().fold(0.0, f64::max),
    }
}
