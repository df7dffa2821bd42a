//! N-body time integration: the per-particle formulas of the kick-drift-kick leapfrog, the softened
//! pair interaction with its potential, Gadget's individual time-step criterion on a power-of-two
//! block hierarchy, and the energy terms of the diagnostics. Plain functions on `[T; 3]` so that a
//! kernel (one thread per particle) and the CPU backend (`warpkit::nbody::cpu`) run the same code;
//! generic over f32 and f64 through [`Float`].
//!
//! Kick-drift-kick (symplectic, time reversible, second order) for one step of length `dt`:
//! `v += a·dt/2` ([`half_kick`]), `x += v·dt` ([`drift`]), new forces, `v += a·dt/2` again.
//!
//! Block time steps (Gadget-2, Springel 2005, §5): the step of a particle is
//! `dt_max / 2^level`; time runs on an integer timeline of `2^max_level` ticks per `dt_max`, and a
//! particle of level `k` is active (kicked) on ticks that are multiples of `2^(max_level - k)`.

pub mod kernels;

use crate::fem::Real;
use crate::math;
use core::cmp::Ordering::{Equal, Less};

/// [`Real`] plus a square root: what the N-body formulas need of f32 and f64.
pub trait Float: Real {
    fn sqrt(self) -> Self;
}

impl Float for f32 {
    #[inline(always)]
    fn sqrt(self) -> Self {
        math::sqrt(self)
    }
}

impl Float for f64 {
    #[inline(always)]
    fn sqrt(self) -> Self {
        math::sqrt_f64(self)
    }
}

/// Parameters of the individual time-step criterion, as a kernel argument.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Timestep {
    /// Accuracy parameter η of `dt = η·sqrt(ε/|a|)` (Gadget's ErrTolIntAccuracy; 0.025 typical).
    pub eta: f32,
    /// Softening length ε.
    pub eps: f32,
    /// The largest step, the length of one block.
    pub dt_max: f32,
    /// The deepest level: the smallest step is `dt_max / 2^max_level` (at most [`MAX_LEVEL`]).
    pub max_level: u32,
}

crate::shared_type!(Timestep);

/// Threads per block of the N-body kernels (memory bound: any whole number of warps).
pub const NBODY_BLOCK: u32 = 256;

/// Levels are tick counts in a u64 timeline; 62 leaves room for the sum of two steps.
pub const MAX_LEVEL: u32 = 62;

const _: () = assert!((MAX_LEVEL as usize) < LEVEL_BINS);

/// `v += a·dt`: a kick. The GPU loop merges one step's closing half kick with the next step's
/// opening one into a kick of `dt` when no output falls between them.
#[inline(always)]
pub fn kick<T: Float>(v: &mut [T; 3], a: [T; 3], dt: T) {
    for k in 0..3 {
        v[k] = a[k].mul_add(dt, v[k]);
    }
}

/// `v += a·dt/2`: the half kick that opens and closes each leapfrog step.
#[inline(always)]
pub fn half_kick<T: Float>(v: &mut [T; 3], a: [T; 3], dt: T) {
    kick(v, a, dt * T::from_f64(0.5));
}

/// `x += v·dt`: the drift between the two half kicks.
#[inline(always)]
pub fn drift<T: Float>(x: &mut [T; 3], v: [T; 3], dt: T) {
    for k in 0..3 {
        x[k] = v[k].mul_add(dt, x[k]);
    }
}

/// Acceleration on a particle from mass `m` at offset `d` (the source's position minus the
/// particle's), Plummer-softened with `eps2 = ε²`, and the potential it contributes, per unit G:
/// `a = m·d/(|d|² + ε²)^{3/2}`, `φ = −m/(|d|² + ε²)^{1/2}`. Swapping the two particles negates `d`
/// exactly, so the pair's accelerations are exactly antisymmetric per unit source mass: that is
/// what keeps the direct sum's momentum to rounding. A coincident pair (`d = 0`) needs `ε > 0`.
#[inline(always)]
pub fn pair_accel_pot<T: Float>(d: [T; 3], m: T, eps2: T) -> ([T; 3], T) {
    let r2 = d[0].mul_add(d[0], d[1].mul_add(d[1], d[2].mul_add(d[2], eps2)));
    let inv = T::ONE / r2.sqrt();
    let m_inv = m * inv;
    let s = m_inv * inv * inv;
    ([d[0] * s, d[1] * s, d[2] * s], -m_inv)
}

/// Kinetic energy `m|v|²/2` of one particle.
#[inline(always)]
pub fn kinetic_energy<T: Float>(m: T, v: [T; 3]) -> T {
    T::from_f64(0.5) * m * v[0].mul_add(v[0], v[1].mul_add(v[1], v[2] * v[2]))
}

/// A particle's share `mφ/2` of the potential energy (each pair is counted by both partners).
#[inline(always)]
pub fn potential_energy<T: Float>(m: T, phi: T) -> T {
    T::from_f64(0.5) * m * phi
}

/// Gadget's time-step criterion `η·sqrt(ε/|a|)` for an acceleration `a`: infinite when `a = 0`.
#[inline(always)]
pub fn criterion<T: Float>(eta: T, eps: T, a: [T; 3]) -> T {
    let a2 = a[0].mul_add(a[0], a[1].mul_add(a[1], a[2] * a[2]));
    eta * (eps / a2.sqrt()).sqrt()
}

/// The level `k` of the largest power-of-two step `dt_max / 2^k` that does not exceed `dt`,
/// at most `max_level` (a particle that wants a shorter step gets the shortest there is). A NaN
/// `dt` (a blown-up acceleration) gets `max_level`, so it cannot stall the hierarchy at level 0.
#[inline(always)]
pub fn level_for<T: Float>(dt: T, dt_max: T, max_level: u32) -> u32 {
    let mut level = 0;
    let mut step = dt_max;
    let half = T::from_f64(0.5);
    // Halving is exact in binary floating point, so the comparison sees the true block steps;
    // an unordered (NaN) comparison keeps halving.
    while level < max_level && !matches!(step.partial_cmp(&dt), Some(Less | Equal)) {
        step = step * half;
        level += 1;
    }
    level
}

/// The level a particle gets from [`criterion`] under `p`.
#[inline(always)]
pub fn timestep_level(p: &Timestep, a: [f32; 3]) -> u32 {
    level_for(criterion(p.eta, p.eps, a), p.dt_max, p.max_level)
}

/// Ticks in one step of `level` on a timeline of `2^max_level` ticks per `dt_max`.
#[inline(always)]
pub fn ticks(level: u32, max_level: u32) -> u64 {
    1u64 << (max_level - level)
}

/// Whether a particle of `level` begins (and so is kicked at) a step on `tick`. Steps are powers
/// of two ticks: a mask, not a 64-bit remainder (which the GPU emulates in software).
#[inline(always)]
pub fn is_active(tick: u64, level: u32, max_level: u32) -> bool {
    tick & (ticks(level, max_level) - 1) == 0
}

/// The length `dt_max / 2^level` of a step of `level` (exact: a power-of-two scaling).
#[inline(always)]
pub fn block_step<T: Float>(dt_max: T, level: u32) -> T {
    dt_max / T::from_f64((1u64 << level) as f64)
}

/// The next tick after `tick` on which a step of level `deepest` ends: where the block loop
/// stops next when `deepest` is the deepest occupied level (the shortest step ends first).
#[inline(always)]
pub fn next_tick(tick: u64, deepest: u32, max_level: u32) -> u64 {
    (tick | (ticks(deepest, max_level) - 1)) + 1
}

/// The time `ticks` ticks span, `ticks · dt_max / 2^max_level`: the drift between two ticks, and
/// the time of a tick counted from the start.
#[inline(always)]
pub fn tick_span<T: Float>(ticks: u64, dt_max: T, max_level: u32) -> T {
    T::from_f64(ticks as f64) * dt_max / T::from_f64((1u64 << max_level) as f64)
}

/// An active particle's kick on the block timeline at `tick` (Gadget-2's): it closes its step of
/// `level` with a half kick (`None` at the start: no step to close yet), moves to the level that
/// [`next_level`] allows for the `wanted` one, and opens the new step with a half kick of that
/// length. Returns the new level. The CPU reference and the GPU kernel run this one sequence, so
/// they agree wherever their accelerations ask for the same level.
#[inline(always)]
pub fn block_kick<T: Float>(
    v: &mut [T; 3],
    a: [T; 3],
    level: Option<u32>,
    wanted: u32,
    tick: u64,
    dt_max: T,
    max_level: u32,
) -> u32 {
    let new = match level {
        Some(l) => {
            half_kick(v, a, block_step(dt_max, l));
            next_level(l, wanted, tick, max_level)
        }
        None => wanted,
    };
    half_kick(v, a, block_step(dt_max, new));
    new
}

/// Bins of the level histogram: levels `0..=MAX_LEVEL`, rounded up to a power of two.
pub const LEVEL_BINS: usize = 64;

/// The GPU block-step loop's counters: one `u32` buffer of [`COUNTERS`] entries, written by the
/// kernels and read by the host once per substep (`warpkit::nbody::gpu::block`).
pub mod counter {
    use super::LEVEL_BINS;
    /// The first particle (index in the current order) whose drift went non-finite; `u32::MAX`
    /// while none has (never reset: the run stops).
    pub const BAD_DRIFT: usize = 0;
    /// The same for the kicks.
    pub const BAD_KICK: usize = 1;
    /// Active bodies and their warp groups gathered by `nbody_active_groups` (zeroed before it).
    pub const ACTIVE_BODIES: usize = 2;
    pub const ACTIVE_GROUPS: usize = 3;
    /// The deepest occupied level after the last `nbody_block_kick` (zeroed before it, with the
    /// histogram).
    pub const DEEPEST: usize = 4;
    /// `LEVELS + l`: particles of level `l` after the last `nbody_block_kick`.
    pub const LEVELS: usize = 8;
    /// Entries in the buffer.
    pub const COUNTERS: usize = LEVELS + LEVEL_BINS;
}

/// The level an active particle moves to at `tick` when it wants `wanted`: any shorter step is
/// taken at once; a longer one only as far as `tick` lies on a boundary of it, so that all
/// particles of a level stay synchronised (Gadget-2 likewise only lengthens aligned steps).
#[inline(always)]
pub fn next_level(current: u32, wanted: u32, tick: u64, max_level: u32) -> u32 {
    let mut level = wanted;
    while level < current && !is_active(tick, level, max_level) {
        level += 1;
    }
    level
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kick_and_drift_advance_by_half_and_whole_steps() {
        let mut v = [1.0f64, -2.0, 0.5];
        half_kick(&mut v, [2.0, 4.0, -1.0], 0.5);
        assert_eq!(v, [1.5, -1.0, 0.25]);
        let mut x = [0.0f32, 1.0, 2.0];
        drift(&mut x, [1.0, -2.0, 0.5], 0.25);
        assert_eq!(x, [0.25, 0.5, 2.125]);
    }

    #[test]
    fn pair_interaction_is_newtonian_and_antisymmetric() {
        let d = [3.0f64, 0.0, 4.0];
        let (a, phi) = pair_accel_pot(d, 2.0, 0.0);
        // |a| = m/r² = 2/25 along d/|d|; φ = −m/r.
        assert!((a[0] - 2.0 / 25.0 * 0.6).abs() < 1e-15 && (a[2] - 2.0 / 25.0 * 0.8).abs() < 1e-15);
        assert!((phi + 0.4).abs() < 1e-15);
        let (b, psi) = pair_accel_pot([-3.0, -0.0, -4.0], 2.0, 0.0);
        assert_eq!(b.map(|x| -x), a);
        assert_eq!(psi, phi);
        // Softening: a coincident pair has zero force and potential −m/ε.
        let (c, phi0) = pair_accel_pot([0.0f32; 3], 1.0, 0.01);
        assert_eq!(c, [0.0; 3]);
        assert!((phi0 + 10.0).abs() < 1e-5);
    }

    #[test]
    fn energy_terms() {
        assert_eq!(kinetic_energy(2.0f64, [1.0, 2.0, 2.0]), 9.0);
        assert_eq!(potential_energy(2.0f64, -3.0), -3.0);
    }

    #[test]
    fn level_is_the_largest_block_step_not_above_the_criterion() {
        // η·sqrt(ε/|a|) = 0.1·sqrt(0.01/0.04) = 0.05 → dt_max = 1 halves to 1/32 = 0.03125.
        let p = Timestep {
            eta: 0.1,
            eps: 0.01,
            dt_max: 1.0,
            max_level: 20,
        };
        let dt = criterion(p.eta, p.eps, [0.0f32, 0.04, 0.0]);
        assert!((dt - 0.05).abs() < 1e-7);
        assert_eq!(timestep_level(&p, [0.0, 0.04, 0.0]), 5);
        for k in 0..10 {
            let want = 0.5f64.powi(k);
            assert_eq!(level_for(want, 1.0, 20), k as u32, "exactly a block step");
            assert_eq!(level_for(want * 0.999, 1.0, 20), k as u32 + 1);
            assert_eq!(level_for(want * 1.999, 1.0, 20), k as u32);
        }
        // No force: the longest step; too short or NaN: the shortest.
        assert_eq!(timestep_level(&p, [0.0; 3]), 0);
        assert_eq!(level_for(1e-30f64, 1.0, 20), 20);
        assert_eq!(level_for(f64::NAN, 1.0, 20), 20);
    }

    #[test]
    fn block_hierarchy_stays_synchronised() {
        let m = 4; // 16 ticks per block
        assert_eq!(ticks(0, m), 16);
        assert_eq!(ticks(4, m), 1);
        let active: usize = (0..16).filter(|&t| is_active(t, 2, m)).count();
        assert_eq!(active, 4);
        assert!(is_active(8, 1, m) && !is_active(4, 1, m));
        // Shorter steps are taken at once; longer ones only where the timeline is aligned.
        assert_eq!(next_level(2, 3, 4, m), 3);
        assert_eq!(next_level(3, 0, 2, m), 3, "tick 2 ends no level-2 step");
        assert_eq!(next_level(3, 0, 4, m), 2);
        assert_eq!(next_level(3, 0, 8, m), 1);
        assert_eq!(next_level(3, 0, 16, m), 0);
    }

    #[test]
    fn timeline_steps_and_spans() {
        let m = 4;
        // The next boundary of the deepest level, from on and off its boundaries.
        assert_eq!(next_tick(0, 4, m), 1);
        assert_eq!(next_tick(4, 2, m), 8);
        assert_eq!(next_tick(5, 2, m), 8);
        assert_eq!(next_tick(8, 0, m), 16);
        for t in 0..64u64 {
            for l in 0..=m {
                let k = ticks(l, m);
                assert_eq!(next_tick(t, l, m), (t / k + 1) * k);
                assert_eq!(is_active(t, l, m), t % k == 0);
            }
        }
        assert_eq!(block_step(0.5f32, 3), 0.0625);
        assert_eq!(tick_span(4u64, 2.0f64, 4), 0.5);
        assert_eq!(tick_span(16u64, 0.3f32, 4), 0.3);
    }

    /// The opening kick at the start and a full close-and-reopen on the timeline.
    #[test]
    fn block_kick_closes_and_opens_steps() {
        let a = [1.0f64, 0.0, -2.0];
        let mut v = [0.0f64; 3];
        // Start: level 2 of dt_max = 1 (step 1/4): v += a/8.
        assert_eq!(block_kick(&mut v, a, None, 2, 0, 1.0, 4), 2);
        assert_eq!(v, [0.125, 0.0, -0.25]);
        // At tick 4 (a level-2 boundary, not a level-1 one) a wish for level 0 gets level 2:
        // close with 1/8, open with 1/8.
        assert_eq!(block_kick(&mut v, a, Some(2), 0, 4, 1.0, 4), 2);
        assert_eq!(v, [0.375, 0.0, -0.75]);
        // At tick 8 level 1 is aligned: close 1/8, open 1/4.
        assert_eq!(block_kick(&mut v, a, Some(2), 0, 8, 1.0, 4), 1);
        assert_eq!(v, [0.75, 0.0, -1.5]);
    }
}
