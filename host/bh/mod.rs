//! Barnes–Hut self-gravity: validation, the tree as the host sees it, its invariants, and the two
//! backends ([`cpu`] twin and [`gpu`] pipeline) over the kernels and formulas of
//! `warpkit_device::bh` (whose module docs describe the algorithm). [`evaluate`] and its siblings
//! are the façade that picks the backend.

pub mod cpu;
mod facade;
pub mod gpu;
pub mod npy;
pub mod rate;
pub mod scene;

pub use facade::{
    BruteTime, Evaluation, Timed, brute_force_ms, check_memory, evaluate, evaluate_median,
    potential, potential_of, reference, sample_indices,
};
pub use gpu::{Options, Relative};

use crate::device::bh::{self as dev, Accel, Body, TreeHeader};

/// Parameters of one gravity evaluation.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// Opening angle: a cell of width w at distance r is used whole when w / r < θ.
    pub theta: f32,
    /// Plummer softening length ε (ε² is added to r²).
    pub eps: f32,
    /// Gravitational constant.
    pub g: f32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            theta: 0.5,
            eps: 0.05,
            g: 1.0,
        }
    }
}

/// Everything that makes a gravity request invalid, caught before any work or launch.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum InputError {
    #[error("no bodies: N = 0")]
    Empty,
    #[error("the relative opening criterion (--alpha) runs with the group2 traversal")]
    RelativeTraversal,
    #[error("α = {0} must be finite and > 0")]
    Alpha(f32),
    #[error("N = {0} exceeds the 2^30 - 1 bodies that the tree's 32-bit indices address")]
    TooMany(usize),
    #[error("N = {n} {why}")]
    Memory { n: usize, why: String },
    #[error("body {index} has a non-finite coordinate or mass ({body})")]
    NonFinite { index: usize, body: Body },
    #[error("body {index} has mass {mass}; masses must be positive")]
    NonPositiveMass { index: usize, mass: f32 },
    #[error(
        "body {index} has a coordinate beyond ±{MAX_COORD:e} ({body}): float32 squares of distances would overflow (rescale the units)"
    )]
    FarCoordinate { index: usize, body: Body },
    #[error("θ = {0} is invalid: it must be finite and ≥ 0")]
    Theta(f32),
    #[error("ε = {0} is invalid: it must be ≥ 0 and at most {MAX_COORD:e}")]
    Eps(f32),
    #[error(
        "quadrupole moments need a warp-group traversal (--traversal group or group2); the vote kernel has monopoles only"
    )]
    QuadrupoleVote,
    #[error("--repeats 0: at least one timed run is needed")]
    NoRepeats,
    #[error("G = {0} is invalid: it must be finite")]
    G(f32),
    #[error(
        "bodies {0} and {1} are at the same point and ε = 0: their force is infinite (soften with \
         ε > 0, or merge them)"
    )]
    Coincident(usize, usize),
}

/// Why a bodies file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodiesFileError {
    #[error(transparent)]
    Npy(#[from] npy::NpyError),
    #[error(transparent)]
    Snapshot(#[from] crate::nbody::snapshot::SnapshotError),
}

/// Bodies from a file: `.npy` (N×4 x, y, z, m) by its extension, else a snapshot (Gadget 1/2,
/// or HDF5 with the `hdf5` feature; every particle type's positions and masses). The one
/// reader of `gravity --input`, and of `neighbours --input` through [`read_particles_file`].
pub fn read_bodies_file(path: &std::path::Path) -> Result<Vec<Body>, BodiesFileError> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
    {
        return Ok(npy::read_bodies(path)?);
    }
    Ok(read_particles_file(path)?.0)
}

/// [`read_bodies_file`] for the neighbour search, with each particle's smoothing length where
/// the file has one: a `.npy` file's fifth column (N×5), or a snapshot's HSML when every
/// particle is gas (a snapshot with other types has none for those).
pub fn read_particles_file(
    path: &std::path::Path,
) -> Result<(Vec<Body>, Option<Vec<f32>>), BodiesFileError> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
    {
        return Ok(npy::read_particles(path)?);
    }
    let s = crate::nbody::snapshot::read_snapshot(path)?;
    let p = &s.particles;
    let bodies = p
        .pos
        .iter()
        .zip(&p.mass)
        .map(|(x, &m)| Body {
            x: x[0] as f32,
            y: x[1] as f32,
            z: x[2] as f32,
            m: m as f32,
        })
        .collect();
    let h = s
        .gas
        .as_ref()
        .filter(|g| g.hsml.len() == p.len())
        .map(|g| g.hsml.iter().map(|&h| h as f32).collect());
    Ok((bodies, h))
}

/// Two bodies at the same position (−0 and +0 alike), if any: with ε = 0 their mutual force
/// is infinite and every acceleration it reaches NaN. O(N log N), so [`validate`] (called per
/// evaluation) leaves it to the entry points that take ε = 0 from a user.
pub fn coincident_pair(bodies: &[Body]) -> Option<(usize, usize)> {
    // `+ 0.0` makes −0 into +0, so equal positions have equal bits.
    let key = |b: &Body| [b.x, b.y, b.z].map(|v| (v + 0.0).to_bits());
    let mut order: Vec<usize> = (0..bodies.len()).collect();
    // The index breaks ties: the pair named is the first two of a group, in input order.
    order.sort_unstable_by_key(|&i| (key(&bodies[i]), i));
    order
        .windows(2)
        .find(|w| key(&bodies[w[0]]) == key(&bodies[w[1]]))
        .map(|w| (w[0], w[1]))
}

/// Checks a body count before anything of that size is allocated: the index limit, then the
/// backend's memory (`check_memory`), so a huge `--n` is refused with the size it would need.
pub fn check_count(backend: &crate::backend::Backend, n: usize) -> Result<(), InputError> {
    if n == 0 {
        return Err(InputError::Empty);
    }
    if n > MAX_BODIES {
        return Err(InputError::TooMany(n));
    }
    check_memory(backend, n).map_err(|why| InputError::Memory { n, why })
}

/// The most bodies a tree addresses: cells are numbered below the bodies in one i32 range.
pub const MAX_BODIES: usize = i32::MAX as usize / 2;

/// Checks a combination of evaluation options that would otherwise be silently ignored.
pub fn validate_options(o: &Options) -> Result<(), InputError> {
    if o.quadrupole && !o.traversal.grouped() {
        return Err(InputError::QuadrupoleVote);
    }
    if let Some(r) = o.relative {
        if o.traversal != gpu::Traversal::Group2 {
            return Err(InputError::RelativeTraversal);
        }
        if !(r.alpha.is_finite() && r.alpha > 0.0) {
            return Err(InputError::Alpha(r.alpha));
        }
        if !(r.theta_max.is_finite() && r.theta_max > 0.0) {
            return Err(InputError::Theta(r.theta_max));
        }
    }
    Ok(())
}

/// Checks bodies and parameters.
pub fn validate(bodies: &[Body], p: &Params) -> Result<(), InputError> {
    if bodies.is_empty() {
        return Err(InputError::Empty);
    }
    if bodies.len() > MAX_BODIES {
        return Err(InputError::TooMany(bodies.len()));
    }
    if !(p.theta.is_finite() && p.theta >= 0.0) {
        return Err(InputError::Theta(p.theta));
    }
    if !(p.eps.is_finite() && (0.0..=MAX_COORD).contains(&p.eps)) {
        return Err(InputError::Eps(p.eps));
    }
    if !p.g.is_finite() {
        return Err(InputError::G(p.g));
    }
    for (index, b) in bodies.iter().enumerate() {
        if ![b.x, b.y, b.z, b.m].iter().all(|v| v.is_finite()) {
            return Err(InputError::NonFinite { index, body: *b });
        }
        if b.m <= 0.0 {
            return Err(InputError::NonPositiveMass { index, mass: b.m });
        }
        if [b.x, b.y, b.z].iter().any(|v| v.abs() > MAX_COORD) {
            return Err(InputError::FarCoordinate { index, body: *b });
        }
    }
    Ok(())
}

/// The largest |coordinate| (and ε) the float32 kernels take: squared distances of up to 2e18
/// stay finite (bodies at ±3e38 gave NaN accelerations, bodies 1e22 apart accelerations of 0,
/// silently). The Python package takes the same limit (`_warpkit.MAX_COORD`).
pub const MAX_COORD: f32 = 1e18;

/// Cells to allocate first for `n` bodies; the build doubles it on overflow. Lattice, uniform and
/// Plummer trees hold 0.14–0.48 cells per body (`repro storage`'s scene table), so one per body
/// leaves twice the room they need; 64 covers the chain of cells that separates two nearly
/// coincident bodies.
pub fn initial_cells(n: usize) -> usize {
    n.max(64)
}

/// Traversal order of the seed's three modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, crate::choice::Choice)]
pub enum Mode {
    /// Bodies in shuffled order, no tree sort (the seed's "completely random").
    Random,
    /// Bodies in generation order (a lattice's is spatially regular), no tree sort.
    Regular,
    /// Bodies in shuffled order, traversed in tree-sorted order (gather index).
    Sorted,
}

/// An octree in the layout the kernels use (see `warpkit_device::bh`), on the host.
#[derive(Clone, Debug)]
pub struct Tree {
    pub n: usize,
    pub header: TreeHeader,
    /// `layout.slots()` child slots.
    pub child: Vec<i32>,
    /// Bucket chains, -1 terminated.
    pub next: Vec<i32>,
    pub count: Vec<u32>,
    pub cell_pm: Vec<Body>,
    /// Quadrupole moments about each cell's centre of mass.
    pub cell_quad: Vec<dev::Quad>,
    /// The gather index (bodies in depth-first octant order).
    pub sort: Vec<u32>,
    /// Warp groups as (first, size) in `sort`, in any order.
    pub groups: Vec<[u32; 2]>,
    /// Largest group the sort packed (32, or 64 for two bodies per lane).
    pub group_size: u32,
    /// Dense or sparse storage, and its capacity.
    pub layout: dev::Layout,
}

impl Tree {
    pub fn cells(&self) -> usize {
        self.layout.cells as usize
    }
    pub fn root(&self) -> i32 {
        self.layout.root()
    }
    /// Cells in use.
    pub fn used_cells(&self) -> usize {
        self.cells() - self.header.bottom as usize
    }
}

/// The tree's shape, independent of cell numbering and of the order within buckets: for each
/// cell in depth-first octant order, its eight slots as `.` (empty), `(b c …)` (a body or bucket,
/// sorted) or `[`…`]` (a cell). Two builds of one body set must give equal strings.
pub fn tree_shape(t: &Tree) -> String {
    fn visit(t: &Tree, cell: i32, out: &mut String) {
        let n = t.n as i32;
        out.push('[');
        for o in 0..8 {
            let ch = t.child[t.layout.slot(cell, o)];
            if ch >= n {
                visit(t, ch - n, out);
            } else if ch < 0 {
                out.push('.');
            } else {
                let mut chain = vec![ch];
                while let Some(&b) = chain.last() {
                    match t.next[b as usize] {
                        -1 => break,
                        nb => chain.push(nb),
                    }
                }
                chain.sort_unstable();
                out.push('(');
                for b in chain {
                    out.push_str(&b.to_string());
                    out.push(' ');
                }
                out.push(')');
            }
        }
        out.push(']');
    }
    let mut out = String::new();
    visit(t, t.root(), &mut out);
    out
}

/// Checks the tree's invariants: every body exactly once; each cell's count and mass equal the sum
/// over its bodies; each centre of mass inside its cell's box; `sort` a permutation in the same
/// depth-first order. Returns the first violation.
pub fn check_tree(bodies: &[Body], t: &Tree) -> Result<(), String> {
    let n = t.n as i32;
    let mut seen = vec![false; t.n];
    let mut order = Vec::with_capacity(t.n);
    let (rc, rh) = dev::root_cell(&t.header);
    // (cell, centre, half) → (mass, count)
    fn walk(
        t: &Tree,
        bodies: &[Body],
        cell: i32,
        c: [f32; 3],
        half: f32,
        seen: &mut [bool],
        order: &mut Vec<u32>,
    ) -> Result<(f64, u32), String> {
        let n = t.n as i32;
        let (mut m, mut cnt) = (0.0f64, 0u32);
        for o in 0..8 {
            let ch = t.child[t.layout.slot(cell, o)];
            if ch >= n {
                let cc = ch - n;
                let h = half * 0.5;
                let (cm, ccnt) = walk(t, bodies, cc, dev::child_center(c, h, o), h, seen, order)?;
                m += cm;
                cnt += ccnt;
            } else if ch >= 0 {
                let mut b = ch;
                while b >= 0 {
                    if std::mem::replace(&mut seen[b as usize], true) {
                        return Err(format!("body {b} appears twice"));
                    }
                    order.push(b as u32);
                    m += bodies[b as usize].m as f64;
                    cnt += 1;
                    b = t.next[b as usize];
                }
            } else if ch != dev::EMPTY {
                return Err(format!("cell {cell} slot {o} holds {ch}"));
            }
        }
        let pm = t.cell_pm[cell as usize];
        if t.count[cell as usize] != cnt {
            return Err(format!(
                "cell {cell}: count {} but {cnt} bodies",
                t.count[cell as usize]
            ));
        }
        if ((pm.m as f64) - m).abs() > 1e-5 * m {
            return Err(format!("cell {cell}: mass {} but bodies sum to {m}", pm.m));
        }
        // Cell centres are computed by repeated halving in float32: allow their rounding too.
        let scale = c.iter().fold(half, |m, v| m.max(v.abs()));
        let slack = half * 1e-4 + 64.0 * f32::EPSILON * scale;
        for (k, v) in pm.pos().iter().enumerate() {
            if (v - c[k]).abs() > half + slack {
                return Err(format!(
                    "cell {cell}: centre of mass {:?} outside box {c:?} ± {half}",
                    pm.pos()
                ));
            }
        }
        Ok((m, cnt))
    }
    let (_, cnt) = walk(t, bodies, t.root(), rc, rh, &mut seen, &mut order)?;
    if cnt as i32 != n || seen.iter().any(|s| !s) {
        return Err(format!("the tree holds {cnt} of {n} bodies"));
    }
    if t.sort != order {
        let k = t
            .sort
            .iter()
            .zip(&order)
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        return Err(format!("sort differs from the depth-first order at {k}"));
    }
    // Groups partition the sort order into runs of 1..=group_size.
    let mut covered = vec![false; t.n];
    for &[s, c] in &t.groups {
        if c == 0 || c > t.group_size || (s + c) as usize > t.n {
            return Err(format!("group ({s}, {c}) is invalid"));
        }
        for k in s..s + c {
            if std::mem::replace(&mut covered[k as usize], true) {
                return Err(format!("sort position {k} is in two groups"));
            }
        }
    }
    if let Some(k) = covered.iter().position(|c| !c) {
        return Err(format!("sort position {k} is in no group"));
    }
    Ok(())
}

/// Per-body relative error `|a - ref| / |ref|` against a float64 reference.
pub fn relative_errors(acc: &[Accel], reference: &[[f64; 3]]) -> Vec<f64> {
    acc.iter()
        .zip(reference)
        .map(|(a, r)| {
            let d = [a.x as f64 - r[0], a.y as f64 - r[1], a.z as f64 - r[2]];
            let num = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            let den = (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]).sqrt();
            num / den.max(f64::MIN_POSITIVE)
        })
        .collect()
}
