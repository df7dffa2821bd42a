//! The SPH force pass on the GPU: pressure and viscous accelerations, `du/dt` and the largest
//! signal velocity of every particle over its pairs `r < max(h_i, h_j)`, by the vote walk of
//! the octree ([`super::vote_walk`] under [`SYMMETRIC`]) and the pair terms of
//! [`crate::sph::hydro::pair_terms`] in float32 (the CPU solver sums the same terms in float64).

use super::*;
use crate::sph::hydro::{DensitySum, ForceSide, HLimits, HSearch, pair_terms};

/// The gas as the force pass reads and writes it, one kernel parameter. Arrays of `n` entries
/// in the particles' own order (the tree's bodies).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GasView {
    /// Velocity and specific internal energy: `[vx, vy, vz, u]`.
    pub vel_u: *const [f32; 4],
    /// What a pair term reads of a particle besides its velocity and energy:
    /// `[h, ρ, f P / ρ², c_s, α, Balsara factor, P, α_u]` ([`ForceSide`]).
    pub side: *const [f32; 8],
    /// Out: `[a_x, a_y, a_z, du/dt]`.
    pub acc_du: *mut [f32; 4],
    /// Out: the largest signal velocity over the pairs (at least `2 c_s`).
    pub vsig: *mut f32,
    /// Which particles get outputs (non-zero: yes), `n` entries; null: every particle. The
    /// others' outputs are left as they were.
    pub active: *const u32,
    /// The smoothing kernel (`crate::sph::CUBIC_SPLINE`, `WENDLAND_C2`, …).
    pub kernel: u32,
    /// Sides of the periodic box holding every particle (separations to the nearest image);
    /// infinite for an open domain.
    pub period: [f32; 3],
}

// SAFETY: #[repr(C)]; raw pointers and a u32 only.
unsafe impl crate::gpu::DeviceViewMut for GasView {}

/// The box of a view's `period`, `None` for an open domain: the walk's two forms are separate
/// code, the open one without the images' tests.
#[inline(always)]
fn periodic(period: [f32; 3]) -> Option<[f32; 3]> {
    period[0].is_finite().then_some(period)
}

/// `p − q` to the nearest image in the box of sides `period` (infinite sides: open, `p − q`).
#[inline(always)]
fn separation(p: [f32; 3], q: [f32; 3], period: [f32; 3]) -> [f32; 3] {
    core::array::from_fn(|k| crate::sph::min_image(p[k] - q[k], period[k]))
}

/// A particle's [`ForceSide`] from its packed side and energy.
#[inline(always)]
fn side_of(s: [f32; 8], u: f32) -> ForceSide<f32> {
    ForceSide {
        h: s[0],
        rho: s[1],
        pf: s[2],
        c: s[3],
        alpha: s[4],
        balsara: s[5],
        p: s[6],
        u,
        alpha_u: s[7],
    }
}

/// One lane's sums for its particle `i`.
struct Force {
    i: u32,
    p: [f32; 3],
    v: [f32; 3],
    me: ForceSide<f32>,
    acc: [f32; 3],
    du: f32,
    vsig: f32,
    bodies: *const Body,
    gas: GasView,
}

impl Sink for Force {
    #[inline(always)]
    fn take(&mut self, j: u32, _: f32, mj: f32) {
        if j == self.i {
            return;
        }
        // SAFETY: j is a particle of the walked tree; the view's arrays hold n entries.
        let (q, vu, s) = unsafe {
            (
                load(self.bodies.add(j as usize)).pos(),
                load(self.gas.vel_u.add(j as usize)),
                load(self.gas.side.add(j as usize)),
            )
        };
        let dx = separation(self.p, q, self.gas.period);
        let dv = [self.v[0] - vu[0], self.v[1] - vu[1], self.v[2] - vu[2]];
        let t = pair_terms(self.gas.kernel, dx, dv, &self.me, &side_of(s, vu[3]));
        for k in 0..3 {
            self.acc[k] += mj * t.acc[k];
        }
        self.du += mj * t.du;
        self.vsig = self.vsig.max(t.vsig);
    }
}

/// Every particle served, each with a [`Force`] sink.
struct ForceTargets {
    bodies: *const Body,
    gas: GasView,
}

impl VoteTargets for ForceTargets {
    type S = Force;
    #[inline(always)]
    unsafe fn serves(&self, i: u32) -> bool {
        // SAFETY: i < n, per the contract.
        self.gas.active.is_null() || unsafe { *self.gas.active.add(i as usize) != 0 }
    }
    #[inline(always)]
    unsafe fn start(&self, i: u32, _: f32) -> Force {
        // SAFETY: i < n, per the contract.
        unsafe {
            let vu = load(self.gas.vel_u.add(i as usize));
            let me = side_of(load(self.gas.side.add(i as usize)), vu[3]);
            Force {
                i,
                p: load(self.bodies.add(i as usize)).pos(),
                v: [vu[0], vu[1], vu[2]],
                // The self pair's signal velocity: a lone particle still has a sound crossing.
                vsig: 2.0 * me.c,
                me,
                acc: [0.0; 3],
                du: 0.0,
                bodies: self.bodies,
                gas: self.gas,
            }
        }
    }
    #[inline(always)]
    unsafe fn finish(&self, s: Force, i: u32) {
        // SAFETY: i < n, per the contract.
        unsafe {
            *self.gas.acc_du.add(i as usize) = [s.acc[0], s.acc[1], s.acc[2], s.du];
            *self.gas.vsig.add(i as usize) = s.vsig;
        }
    }
    #[inline(always)]
    fn tested(&self) -> *mut u64 {
        core::ptr::null_mut()
    }
}

/// The force pass ([`GasView`]'s outputs) for every particle of `tree` (built, summarized and
/// sorted: lane k serves `sort[k]`), its cells boxed for the smoothing lengths `h`
/// (`sph_cell_boxes`); the pairs are `r < max(h_i, h_j)` ([`SYMMETRIC`]), each particle's own
/// left out; masses from the tree's bodies. `VOTE_BLOCK`-thread blocks, any grid.
#[crate::kernel]
pub unsafe fn sph_hydro_force(tree: TreeView, h: *const f32, boxes: *const CellBox, gas: GasView) {
    let t = ForceTargets {
        bodies: tree.bodies,
        gas,
    };
    // SAFETY: forwarded contract.
    unsafe { walk(tree, h, boxes, SYMMETRIC, gas.period, &t) }
}

/// [`vote_walk`] of `tree` for the targets `t`, in the open form or, for finite `period`, the
/// periodic one (each compiled on its own).
///
/// # Safety
/// As [`vote_walk`]'s.
#[inline(always)]
unsafe fn walk<T: VoteTargets>(
    tree: TreeView,
    h: *const f32,
    boxes: *const CellBox,
    crit: u32,
    period: [f32; 3],
    t: &T,
) {
    let TreeView {
        bodies,
        n,
        sort,
        child,
        next,
        layout,
        ..
    } = tree;
    // SAFETY: forwarded contract.
    unsafe {
        match periodic(period) {
            None => vote_walk(
                bodies, h, n, sort, child, next, boxes, layout, crit, None, t,
            ),
            l => vote_walk(bodies, h, n, sort, child, next, boxes, layout, crit, l, t),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// the density pass: gather sums at each particle's h, and its h iteration
// ---------------------------------------------------------------------------------------------

/// What the density pass reads and writes besides the tree and `h`, one kernel parameter.
/// Arrays of `n` entries in the particles' own order.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DensityView {
    /// Velocities (the fourth entry unused): `∇·v` and `∇×v` are summed from them.
    pub vel_u: *const [f32; 4],
    /// Each particle's h iteration; only those still iterating are served (null: all).
    pub search: *const HSearch<f32>,
    /// Out: the gather sums at the particle's current `h`.
    pub sums: *mut DensitySum<f32>,
    pub kernel: u32,
    /// As [`GasView::period`].
    pub period: [f32; 3],
}

// SAFETY: #[repr(C)]; raw pointers and a u32 only.
unsafe impl crate::gpu::DeviceViewMut for DensityView {}

/// One lane's gather sums for its particle.
struct Density {
    p: [f32; 3],
    v: [f32; 3],
    h: f32,
    sum: DensitySum<f32>,
    bodies: *const Body,
    d: DensityView,
}

impl Sink for Density {
    #[inline(always)]
    fn take(&mut self, j: u32, r2: f32, mj: f32) {
        // SAFETY: j is a particle of the walked tree; the view's arrays hold n entries.
        let (q, vu) = unsafe {
            (
                load(self.bodies.add(j as usize)).pos(),
                load(self.d.vel_u.add(j as usize)),
            )
        };
        let dx = separation(self.p, q, self.d.period);
        let dv = [self.v[0] - vu[0], self.v[1] - vu[1], self.v[2] - vu[2]];
        let r = crate::math::sqrt(r2);
        self.sum.add(self.d.kernel, self.h, dx, r, dv, mj);
    }
}

struct DensityTargets {
    bodies: *const Body,
    d: DensityView,
}

impl VoteTargets for DensityTargets {
    type S = Density;
    #[inline(always)]
    unsafe fn serves(&self, i: u32) -> bool {
        // SAFETY: i < n, per the contract.
        self.d.search.is_null() || unsafe { (*self.d.search.add(i as usize)).iterating() }
    }
    #[inline(always)]
    unsafe fn start(&self, i: u32, hi: f32) -> Density {
        // SAFETY: i < n, per the contract.
        unsafe {
            let vu = load(self.d.vel_u.add(i as usize));
            Density {
                p: load(self.bodies.add(i as usize)).pos(),
                v: [vu[0], vu[1], vu[2]],
                h: hi,
                sum: DensitySum::ZERO,
                bodies: self.bodies,
                d: self.d,
            }
        }
    }
    #[inline(always)]
    unsafe fn finish(&self, s: Density, i: u32) {
        // SAFETY: i < n, per the contract.
        unsafe { *self.d.sums.add(i as usize) = s.sum };
    }
    #[inline(always)]
    fn tested(&self) -> *mut u64 {
        core::ptr::null_mut()
    }
}

/// The gather sums `ρ`, `∂ρ/∂h`, `Σ m dv·∇W`, `Σ m dv×∇W` ([`DensitySum`]) of every served
/// particle at its `h` over its pairs `r < h_i` ([`GATHER`], the particle itself included), as
/// the CPU solver's density pass sums them. `tree` built, summarized and sorted; `boxes` from
/// `sph_cell_boxes` (a gather reads only their extents, so any `h` made them).
/// `VOTE_BLOCK`-thread blocks, any grid.
#[crate::kernel]
pub unsafe fn sph_hydro_density(
    tree: TreeView,
    h: *const f32,
    boxes: *const CellBox,
    d: DensityView,
) {
    let t = DensityTargets {
        bodies: tree.bodies,
        d,
    };
    // SAFETY: forwarded contract.
    unsafe { walk(tree, h, boxes, GATHER, d.period, &t) }
}

/// One step of every iterating particle's h iteration ([`HSearch::update`]) from its sums at
/// the current `h`; the new trial goes to `h` too (what the next gather walks). `active[0]`
/// counts the particles still iterating (zero before the launch). Any grid.
#[crate::kernel]
pub unsafe fn sph_hydro_h_update(
    bodies: *const Body,
    n: u32,
    sums: *const DensitySum<f32>,
    lim: HLimits<f32>,
    search: *mut HSearch<f32>,
    h: *mut f32,
    active: *mut u32,
) {
    let lane = lane_id();
    let mut base = index_1d() - lane;
    let mut still = 0u32;
    // SAFETY: i < n for every access; whole warps at the reduction.
    unsafe {
        while base < n {
            let i = (base + lane) as usize;
            if i < n as usize {
                let mut s = *search.add(i);
                if s.iterating() {
                    let sum = *sums.add(i);
                    s.update(sum.rho, sum.drho_dh, (*bodies.add(i)).m, &lim);
                    *search.add(i) = s;
                    *h.add(i) = s.h;
                    still += s.iterating() as u32;
                }
            }
            base += grid_size_1d();
        }
        let still = all_reduce(still, |a, b| a + b);
        if lane == 0 && still > 0 {
            atomic_add_u32(active, still);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// the block steps' limiter: the neighbours' levels of the particles being assigned a step
// ---------------------------------------------------------------------------------------------

/// What the step limiter's walks read and write besides the tree and `h`, one kernel
/// parameter. Arrays of `n` entries in the particles' own order.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LevelView {
    /// Each particle's time-step level (deeper: shorter); those being assigned, their wanted
    /// ones.
    pub level: *const u32,
    /// Which particles are being assigned a step (non-zero): the walks serve only them.
    pub mine: *const u32,
    /// Pass 0 writes each served particle's level raised to its neighbours' less 2
    /// ([`crate::sph::hydro::limited_level`]); pass 1 reads it.
    pub limit: *mut u32,
    /// Pass 1: for every particle not being assigned, the deepest level a served neighbour
    /// wakes it to ([`crate::sph::hydro::wake_level`]) by atomic maximum (zero before the
    /// launch; zero after: not woken).
    pub wake: *mut u32,
    /// 0: the limits; 1: the wakes.
    pub pass: u32,
    /// As [`GasView::period`].
    pub period: [f32; 3],
}

// SAFETY: #[repr(C)]; raw pointers and u32s only.
unsafe impl crate::gpu::DeviceViewMut for LevelView {}

/// One lane's level for its particle.
struct Level {
    k: u32,
    v: LevelView,
}

impl Sink for Level {
    #[inline(always)]
    fn take(&mut self, j: u32, _: f32, _: f32) {
        // SAFETY: j is a particle of the walked tree; the view's arrays hold n entries.
        unsafe {
            let kj = *self.v.level.add(j as usize);
            if self.v.pass == 0 {
                self.k = crate::sph::hydro::limited_level(self.k, kj);
            } else if *self.v.mine.add(j as usize) == 0
                && let Some(w) = crate::sph::hydro::wake_level(self.k, kj)
            {
                atomic_max_u32(self.v.wake.add(j as usize), w);
            }
        }
    }
}

struct LevelTargets(LevelView);

impl VoteTargets for LevelTargets {
    type S = Level;
    #[inline(always)]
    unsafe fn serves(&self, i: u32) -> bool {
        // SAFETY: i < n, per the contract.
        unsafe { *self.0.mine.add(i as usize) != 0 }
    }
    #[inline(always)]
    unsafe fn start(&self, i: u32, _: f32) -> Level {
        let v = self.0;
        // SAFETY: i < n, per the contract.
        let k = unsafe {
            if v.pass == 0 {
                *v.level.add(i as usize)
            } else {
                *v.limit.add(i as usize)
            }
        };
        Level { k, v }
    }
    #[inline(always)]
    unsafe fn finish(&self, s: Level, i: u32) {
        if self.0.pass == 0 {
            // SAFETY: i < n, per the contract.
            unsafe { *self.0.limit.add(i as usize) = s.k };
        }
    }
    #[inline(always)]
    fn tested(&self) -> *mut u64 {
        core::ptr::null_mut()
    }
}

/// One pass of the block steps' limiter over the pairs `r < max(h_i, h_j)` ([`SYMMETRIC`]) of
/// the particles being assigned a step ([`LevelView`]): pass 0 their limited levels, pass 1
/// (after pass 0) the wakes of their neighbours, as the CPU solver's cell-list walks find them.
/// `tree` built, summarized and sorted, boxed for `h`. `VOTE_BLOCK`-thread blocks, any grid.
#[crate::kernel]
pub unsafe fn sph_level_limit(tree: TreeView, h: *const f32, boxes: *const CellBox, v: LevelView) {
    let t = LevelTargets(v);
    // SAFETY: forwarded contract.
    unsafe { walk(tree, h, boxes, SYMMETRIC, v.period, &t) }
}
