//! SPH neighbour search, density and smoothing lengths: validation, the CSR neighbour lists, and
//! the two backends ([`cpu`] twins and brute force, [`gpu`] launchers) over the kernels and
//! formulas of `warpkit_device::sph` (whose module docs state the conventions: `h` is the
//! kernel's support radius, the neighbour boundary is strict).

pub mod cpu;
mod facade;
pub mod gpu;
pub mod hydro;

pub use facade::{Profile, Search, SearchOptions, profile, search};
#[cfg(test)]
mod tests;

use crate::device::bh::Body;
use crate::device::sph as dev;

/// Which particles are neighbours of `i` (see `warpkit_device::sph::radius`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, crate::choice::Choice)]
pub enum Criterion {
    /// `|r_ij| < h_i`
    #[default]
    Gather,
    /// `|r_ij| < h_j`
    Scatter,
    /// `|r_ij| < max(h_i, h_j)`
    Symmetric,
}

impl Criterion {
    pub const ALL: [Criterion; 3] = [Criterion::Gather, Criterion::Scatter, Criterion::Symmetric];
    /// The kernels' code.
    pub fn code(self) -> u32 {
        match self {
            Criterion::Gather => dev::GATHER,
            Criterion::Scatter => dev::SCATTER,
            Criterion::Symmetric => dev::SYMMETRIC,
        }
    }
}

/// The SPH smoothing kernel (support radius `h`, normalised in 3D).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, crate::choice::Choice)]
pub enum SmoothingKernel {
    /// M4 cubic spline.
    #[default]
    CubicSpline,
    /// Wendland C2.
    WendlandC2,
}

impl SmoothingKernel {
    pub fn code(self) -> u32 {
        match self {
            SmoothingKernel::CubicSpline => dev::CUBIC_SPLINE,
            SmoothingKernel::WendlandC2 => dev::WENDLAND_C2,
        }
    }
}

/// The search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, crate::choice::Choice)]
pub enum Method {
    /// The seed's traversal: one walk per warp of 32 tree-sorted particles, a vote per cell.
    Vote,
    /// One walk per warp group of tree-sorted particles against the group's box.
    #[default]
    Group,
    /// Linked cells: cell hash, counting sort, 27-cell stencil, cells as wide as the largest h.
    Cells,
}

impl Method {
    pub const ALL: [Method; 3] = [Method::Vote, Method::Group, Method::Cells];
}

/// Everything that makes a request invalid, caught before any work or launch.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SphError {
    #[error("no particles: N = 0")]
    Empty,
    #[error("N = {0} exceeds the 2^30 particles that 32-bit tree indices address")]
    TooMany(usize),
    #[error("{bodies} particles but {h} smoothing lengths")]
    Length { bodies: usize, h: usize },
    #[error("particle {index} has a non-finite coordinate or mass ({body})")]
    NonFinite { index: usize, body: Body },
    #[error("particle {index} has mass {mass}; masses must be positive")]
    NonPositiveMass { index: usize, mass: f32 },
    #[error("h[{index}] = {h} is invalid: smoothing lengths must be finite and ≥ 0")]
    BadH { index: usize, h: f32 },
    #[error(
        "h[{index}] = 0: the density needs h > 0 (h = 0 gathers no neighbour, not even itself)"
    )]
    ZeroH { index: usize },
    #[error("{0}")]
    Option(String),
    #[error(
        "the neighbour lists would hold {pairs} entries ({mib} MiB), over the limit of {limit} \
         entries: lower h, or raise the limit (at most 2^32 - 1 entries)"
    )]
    TooManyPairs { pairs: u64, mib: u64, limit: u64 },
}

/// Default bound on CSR entries (4 GiB of 32-bit indices).
pub const DEFAULT_MAX_PAIRS: u64 = 1 << 30;

/// Checks particles and smoothing lengths; `positive_h` refuses `h = 0` (density, iteration).
pub fn validate(bodies: &[Body], h: &[f32], positive_h: bool) -> Result<(), SphError> {
    if bodies.is_empty() {
        return Err(SphError::Empty);
    }
    if bodies.len() > 1 << 30 {
        return Err(SphError::TooMany(bodies.len()));
    }
    if bodies.len() != h.len() {
        return Err(SphError::Length {
            bodies: bodies.len(),
            h: h.len(),
        });
    }
    for (index, b) in bodies.iter().enumerate() {
        if ![b.x, b.y, b.z, b.m].iter().all(|v| v.is_finite()) {
            return Err(SphError::NonFinite { index, body: *b });
        }
        if b.m <= 0.0 {
            return Err(SphError::NonPositiveMass { index, mass: b.m });
        }
    }
    for (index, &hi) in h.iter().enumerate() {
        if !(hi.is_finite() && hi >= 0.0) {
            return Err(SphError::BadH { index, h: hi });
        }
        if positive_h && hi == 0.0 {
            return Err(SphError::ZeroH { index });
        }
    }
    Ok(())
}

/// Refuses lists of more than `max_pairs` (and 2^32 − 1) entries, before they are allocated.
pub fn check_pairs(pairs: u64, max_pairs: u64) -> Result<(), SphError> {
    let limit = max_pairs.min(u32::MAX as u64);
    if pairs > limit {
        return Err(SphError::TooManyPairs {
            pairs,
            mib: (pairs * 4) >> 20,
            limit,
        });
    }
    Ok(())
}

/// Neighbour lists in CSR form: particle `i`'s neighbours are `list[offsets[i]..offsets[i+1]]`,
/// ascending.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Neighbours {
    pub offsets: Vec<u32>,
    pub list: Vec<u32>,
}

impl Neighbours {
    pub fn row(&self, i: usize) -> &[u32] {
        &self.list[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
    pub fn counts(&self) -> Vec<u32> {
        self.offsets.windows(2).map(|w| w[1] - w[0]).collect()
    }
    /// Sorts each row (searches fill rows in walk order).
    pub fn sort_rows(&mut self) {
        use rayon::prelude::*;
        let mut rows: Vec<&mut [u32]> = Vec::with_capacity(self.offsets.len());
        let mut rest = self.list.as_mut_slice();
        for w in self.offsets.windows(2) {
            let (row, tail) = rest.split_at_mut((w[1] - w[0]) as usize);
            rows.push(row);
            rest = tail;
        }
        rows.par_iter_mut().for_each(|r| r.sort_unstable());
    }
}

/// Exclusive prefix sum (n + 1 offsets) of `counts`, with the exact total.
pub fn offsets_of(counts: &[u32]) -> (Vec<u32>, u64) {
    let mut off = Vec::with_capacity(counts.len() + 1);
    let mut run = 0u64;
    for &c in counts {
        off.push(run as u32);
        run += c as u64;
    }
    off.push(run as u32);
    (off, run)
}

/// Parameters of the smoothing-length iteration.
#[derive(Clone, Copy, Debug)]
pub struct HParams {
    /// Target gather count (the particle itself included).
    pub target: f32,
    /// Accepted |count − target|.
    pub tol: f32,
    /// Count passes at most.
    pub max_iter: u32,
}

impl Default for HParams {
    fn default() -> Self {
        HParams {
            target: 64.0,
            tol: 2.0,
            max_iter: 40,
        }
    }
}

impl HParams {
    pub fn check(&self, n: usize) -> Result<(), SphError> {
        if !(self.target.is_finite()
            && self.target >= 1.0
            && self.tol.is_finite()
            && self.tol >= 0.0)
        {
            return Err(SphError::Option(format!(
                "target {} ± {} neighbours is invalid: target ≥ 1, tolerance ≥ 0",
                self.target, self.tol
            )));
        }
        if self.target - self.tol > n as f32 {
            return Err(SphError::Option(format!(
                "target {} ± {} neighbours cannot be reached with {n} particles",
                self.target, self.tol
            )));
        }
        Ok(())
    }
}

/// The outcome of a smoothing-length iteration.
#[derive(Clone, Debug)]
pub struct HIteration {
    /// Final smoothing lengths (for converged particles, the one their count was taken at).
    pub h: Vec<f32>,
    /// Gather counts at the final h (converged particles; the others: at the largest rung of
    /// their last pass).
    pub counts: Vec<u32>,
    /// Count passes run.
    pub iterations: u32,
    /// Particles that did not converge (still iterating, or stuck: their count jumps over the
    /// target, e.g. coincident particles), ascending.
    pub unconverged: Vec<u32>,
    /// Per count pass: what it searched and what that cost.
    pub passes: Vec<HPass>,
}

/// One count pass of the smoothing-length iteration.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HPass {
    /// Particles searched (those still iterating).
    pub active: u32,
    /// Walks the group search handed out (each a warp group, or a lane range of a split one,
    /// with particles still iterating; `sph_active_groups`); 0 for the other searches.
    pub groups: u32,
    /// Neighbours they found.
    pub found: u64,
    /// Pairs tested (distance evaluations).
    pub tested: u64,
    /// Milliseconds (GPU: CUDA events of the search and the update; CPU: wall time).
    pub ms: f64,
}

impl HPass {
    /// Pairs tested per neighbour found.
    pub fn tested_per_found(&self) -> f64 {
        self.tested as f64 / self.found.max(1) as f64
    }
}

impl HIteration {
    /// One line per pass: active particles, neighbours found, pairs tested per neighbour found,
    /// time.
    pub fn pass_table(&self) -> String {
        let mut t = String::from(
            "| pass | active | walks handed out | neighbours found | pairs tested | tested/found | ms \
             |\n| --- | --- | --- | --- | --- | --- | --- |\n",
        );
        for (k, p) in self.passes.iter().enumerate() {
            t += &format!(
                "| {} | {} | {} | {} | {} | {:.2} | {:.3} |\n",
                k + 1,
                p.active,
                p.groups,
                p.found,
                p.tested,
                p.tested_per_found(),
                p.ms
            );
        }
        t
    }

    /// A one-line report: iterations, and the particles that did not converge (the first ten).
    pub fn report(&self) -> String {
        if self.unconverged.is_empty() {
            return format!(
                "all {} converged in {} passes",
                self.h.len(),
                self.iterations
            );
        }
        let names: Vec<String> = self
            .unconverged
            .iter()
            .take(10)
            .map(|i| i.to_string())
            .collect();
        format!(
            "{} of {} did not converge in {} passes: particles {}{}",
            self.unconverged.len(),
            self.h.len(),
            self.iterations,
            names.join(", "),
            if self.unconverged.len() > 10 {
                ", …"
            } else {
                ""
            }
        )
    }
}

/// Bounding box of the particles.
pub fn bounds(bodies: &[Body]) -> ([f32; 3], [f32; 3]) {
    bodies.iter().fold(
        ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]),
        |(lo, hi), b| {
            let p = b.pos();
            (
                std::array::from_fn(|k| lo[k].min(p[k])),
                std::array::from_fn(|k| hi[k].max(p[k])),
            )
        },
    )
}

/// A starting smoothing length: the sphere holding `target` particles at the mean density of the
/// bounding box (its degenerate sides widened to the longest).
pub fn initial_h(bodies: &[Body], target: f32) -> f32 {
    let (lo, hi) = bounds(bodies);
    let ext: Vec<f64> = (0..3).map(|k| (hi[k] - lo[k]) as f64).collect();
    let longest = ext.iter().cloned().fold(0.0, f64::max).max(1e-30);
    let volume: f64 = ext
        .iter()
        .map(|e| if *e > 0.0 { *e } else { longest })
        .product();
    let n = bodies.len().max(1) as f64;
    ((3.0 * target as f64 * volume / (4.0 * std::f64::consts::PI * n)).cbrt()) as f32
}

/// The linked-cell grid for these particles: cells at least the largest `h` wide, at most
/// `max(8 N, 64)` of them.
/// Device bytes a search of `n` particles allocates at smoothing lengths `h` (a model from the
/// buffer sizes of `gpu::DeviceSph`): bodies and the dense octree (`bh::gpu::device_bytes`, at
/// the initial cell capacity), h, cell boxes, the h iteration's state and counts and its active
/// groups; the linked cells add each particle's cell, rank and sorted index and two words per
/// grid cell.
pub fn device_bytes(n: usize, method: Method, h: &[f32], bodies: &[Body]) -> usize {
    let layout = crate::bh::gpu::Storage::Dense.layout(crate::bh::initial_cells(n));
    let tree = crate::bh::gpu::device_bytes(n, layout);
    let sph = n * (4 + 32 + 4 + 8) + layout.cells as usize * std::mem::size_of::<dev::CellBox>();
    let cells = match method {
        Method::Cells => n * 12 + grid(bodies, h).cells() as usize * 8 + 8,
        _ => 0,
    };
    tree + sph + cells
}

pub fn grid(bodies: &[Body], h: &[f32]) -> dev::Grid {
    let (lo, hi) = bounds(bodies);
    let hmax = h.iter().cloned().fold(0.0f32, f32::max);
    let cap = (8 * bodies.len()).clamp(64, 1 << 26) as u32;
    dev::grid_for(lo, hi, hmax, cap)
}
