//! The self test: a warp reduction built from vote, shuffle and atomics, a block reduction built
//! from static shared memory, barriers and a fence, and one probe kernel per intrinsic family.
//!
//! Everything a kernel computes per element is a function here, called by the kernel on the GPU and
//! by the host's CPU twin (`warpkit::selftest`) on the CPU.

pub mod kernels;

use crate::math;

/// Threads per block of every self-test kernel: a whole number of warps, as the full-mask votes
/// and shuffles require, and a power of two for the shared-memory tree in `selftest_block_sum`.
pub const BLOCK: u32 = 256;
const _: () = assert!(BLOCK.is_power_of_two() && BLOCK.is_multiple_of(crate::WARP_SIZE));

/// Output of `selftest_warp_reduce`, accumulated by one atomic per warp and field.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct WarpReduction {
    /// Sum of [`value`] over all elements.
    pub sum: f32,
    /// Maximum of [`value`] (a CAS loop on the float).
    pub max: f32,
    /// Elements that satisfy [`passes`] (ballot and popcount).
    pub passing: u32,
    /// Warps whose in-range elements all satisfy [`passes`] (`vote.all`).
    pub all_passing_warps: u32,
}

crate::shared_type!(WarpReduction);

/// The per-element formula: `sqrt(x² + 1)`, always ≥ 1, through the device math module.
#[inline(always)]
pub fn value(x: f32) -> f32 {
    math::sqrt(math::fma(x, x, 1.0))
}

/// The predicate the votes test: true for 95% of uniform inputs, so a warp of 32 passes whole
/// with probability 0.95^32 ≈ 0.19 and both vote outcomes occur often.
#[inline(always)]
pub fn passes(x: f32) -> bool {
    x > -0.9
}

/// Element `i` of the self test's input for `seed`: uniform in [-1, 1).
#[inline(always)]
pub fn input(seed: u64, i: u64) -> f32 {
    2.0 * crate::rng::uniform_f32(seed, i) - 1.0
}

/// Element `i` of the `probe_math` input: a spread over [-8, 8) that includes exact zeros.
#[inline(always)]
pub fn math_input(seed: u64, i: u64) -> f32 {
    if i.is_multiple_of(97) {
        0.0
    } else {
        16.0 * crate::rng::uniform_f32(seed, i) - 8.0
    }
}

/// The four results `probe_math` writes for input `x` (at `out[4i..4i+4]`).
#[inline(always)]
pub fn math_probe(x: f32) -> [f32; 4] {
    let a = if x < 0.0 { -x } else { x };
    [
        math::sqrt(a),
        math::rsqrt(a + 0.25),
        math::fma(x, 1.5, -0.75),
        math::exp2(x),
    ]
}

/// Values per thread of `probe_indices` (at `out[6i..6i+6]`): tid, ctaid, ntid, nctaid, lane,
/// warp-in-block.
pub const INDEX_FIELDS: usize = 6;

/// The key `probe_atomics` feeds to min and max for thread `i`: spread over signs, and
/// non-monotone in `i` so that arrival order matters.
#[inline(always)]
pub fn atomic_key(i: u32) -> i32 {
    (i.wrapping_mul(2_654_435_761) >> 8) as i32 - (1 << 23)
}

/// Slots of `probe_atomics`' integer counter array.
pub mod slot {
    /// `atomic_add_u32(+1)` per thread: ends at n.
    pub const ADD_U32: usize = 0;
    /// `atomic_add_i32((i % 7) - 3)` per thread.
    pub const ADD_I32: usize = 1;
    /// `atomic_min_i32(key)`, starts at `i32::MAX`.
    pub const MIN_I32: usize = 2;
    /// `atomic_max_i32(key)`, starts at `i32::MIN`.
    pub const MAX_I32: usize = 3;
    /// `atomic_min_u32(key as u32)`, starts at `u32::MAX`.
    pub const MIN_U32: usize = 4;
    /// `atomic_max_u32(key as u32)`, starts at 0.
    pub const MAX_U32: usize = 5;
    /// `atomic_exch_u32(i)`: old values are recorded per thread.
    pub const EXCH: usize = 6;
    /// A ticket counter advanced by CAS loops: each thread records the ticket it took.
    pub const CAS_TICKET: usize = 7;
    /// Number of slots.
    pub const COUNT: usize = 8;
}

/// Initial values of `probe_atomics`' counters.
pub const ATOMIC_INIT: [u32; slot::COUNT] = [
    0,
    0,
    i32::MAX as u32,
    i32::MIN as u32,
    u32::MAX,
    0,
    u32::MAX,
    0,
];

/// What `probe_trap` indexes with; any value ≥ 4 makes the kernel panic (bounds check → trap).
pub const TRAP_TABLE: [u32; 4] = [3, 1, 4, 1];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_is_hypot_with_one() {
        assert_eq!(value(0.0), 1.0);
        assert!((value(1.0) - core::f32::consts::SQRT_2).abs() <= f32::EPSILON);
        assert!((value(-0.75) - 1.25).abs() <= f32::EPSILON);
    }

    #[test]
    fn vote_predicate_is_balanced() {
        // Both vote outcomes must occur often, or vote.all is never exercised.
        let n = 1 << 14;
        let pass = (0..n).filter(|&i| passes(input(5, i))).count() as f64 / n as f64;
        assert!((pass - 0.95).abs() < 0.01, "pass rate {pass}");
        assert!(!passes(-0.95) && passes(-0.85));
    }

    #[test]
    fn atomic_keys_cover_both_signs_out_of_order() {
        let keys: std::vec::Vec<i32> = (0..1000).map(atomic_key).collect();
        assert!(keys.iter().any(|&k| k < 0) && keys.iter().any(|&k| k > 0));
        assert!(keys.windows(2).any(|w| w[0] > w[1]) && keys.windows(2).any(|w| w[0] < w[1]));
    }

    #[test]
    fn math_inputs_include_zero_and_both_signs() {
        let xs: std::vec::Vec<f32> = (0..500).map(|i| math_input(3, i)).collect();
        assert!(xs.contains(&0.0));
        assert!(xs.iter().all(|x| (-8.0..8.0).contains(x)));
        assert!(xs.iter().any(|&x| x < -4.0) && xs.iter().any(|&x| x > 4.0));
        assert_eq!(math_probe(-4.0)[0], 2.0);
        assert_eq!(math_probe(2.0)[2], 2.25);
    }
}
