//! The smoothing-length iteration: each particle's state ([`HState`]), the radii a count pass
//! counts at ([`ladder`]) and its sink ([`Ladder`]), the step from those counts ([`update_h`])
//! and the first guess from the local density ([`guess_h`]).

use super::*;

/// Still iterating.
pub const H_ITERATING: u32 = 0;
/// The neighbour count is within the tolerance of the target.
pub const H_CONVERGED: u32 = 1;
/// The bracket shrank to nothing without reaching the target: the count jumps over it
/// (coincident particles) at this `h`.
pub const H_STUCK: u32 = 2;

/// One particle's smoothing-length iteration: the current `h`, the bracket `[lo, hi]` known so
/// far (`lo = 0`, `hi = +inf` while unknown) with the gather counts measured at its ends
/// (`nlo < target < nhi`), the window `[wlo, whi]` of the bracket that the next [`ladder`]
/// fills (set by [`update_h`] once bracketed) and its state. 32 bytes (two vector loads on the
/// device).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct HState {
    pub h: f32,
    pub lo: f32,
    pub hi: f32,
    pub state: u32,
    pub nlo: f32,
    pub nhi: f32,
    pub wlo: f32,
    pub whi: f32,
}

impl HState {
    pub fn start(h: f32) -> Self {
        HState {
            h,
            lo: 0.0,
            hi: f32::INFINITY,
            state: H_ITERATING,
            nlo: 0.0,
            nhi: 0.0,
            wlo: 0.0,
            whi: 0.0,
        }
    }
    /// Whether the particle still needs a count pass.
    #[inline(always)]
    pub fn iterating(&self) -> bool {
        self.state == H_ITERATING
    }
}

/// Radii a count pass of the h iteration counts at, at once ([`ladder`]).
pub const LADDER: usize = 8;

/// The rungs around `h` while the target is not bracketed: `h · 1.1^((2k − 7)/7)`, from
/// `h / 1.1` to `1.1 h` (the count from about 0.75× to 1.33× its value at `h`; the local-density
/// guess is mostly that close), one multiply each (the same float32 on every backend). On the
/// CPU twin (2^16 particles, 64 ± 2) spreads of 1.08 and 1.12 tested 21–35% fewer pairs in all
/// than one count per pass, in 4–6 passes instead of 8–12; 1.25, as many pairs as before.
const LADDER_SPREAD: [f32; LADDER] = [
    0.90909094, 0.93418694, 0.9599758, 0.98647654, 1.0137088, 1.041693, 1.0704496, 1.1,
];

/// Half-width factor of the window a bracketed particle's next ladder fills, around the false
/// position estimate (see [`update_h`]).
const LADDER_WINDOW: f32 = 1.15;

/// The radii, ascending, that a count pass of the h iteration counts each particle's gather
/// neighbours at: spread around `s.h` until the target is bracketed, then spaced evenly in
/// volume strictly inside the window `(wlo, whi)` of the bracket (each pass narrows it about
/// ninefold, so a ±2 tolerance at 64 neighbours is met in two or three passes where one count
/// per pass took five to twelve). The pass walks with the largest ([`walk_radius`]).
#[inline(always)]
pub fn ladder(s: &HState) -> [f32; LADDER] {
    if s.lo > 0.0 && s.hi.is_finite() {
        let (v0, v1) = (s.wlo * s.wlo * s.wlo, s.whi * s.whi * s.whi);
        core::array::from_fn(|k| cbrt(v0 + (k + 1) as f32 / (LADDER + 1) as f32 * (v1 - v0)))
    } else {
        core::array::from_fn(|k| s.h * LADDER_SPREAD[k])
    }
}

/// The gather radius a particle is searched with: its ladder's largest rung while it iterates,
/// else its `h`.
#[inline(always)]
pub fn walk_radius(s: &HState) -> f32 {
    if s.iterating() {
        ladder(s)[LADDER - 1]
    } else {
        s.h
    }
}

/// Counts a target's gather neighbours at every rung of its [`ladder`] (squared radii `r2`):
/// the sink of an h-iteration pass ([`MODE_LADDER`]).
#[derive(Clone, Copy, Debug)]
pub struct Ladder {
    pub r2: [f32; LADDER],
    pub c: [u32; LADDER],
}

impl Ladder {
    #[inline(always)]
    pub fn new(s: &HState) -> Self {
        let r = ladder(s);
        Ladder {
            r2: core::array::from_fn(|k| r[k] * r[k]),
            c: [0; LADDER],
        }
    }
}

impl Sink for Ladder {
    /// Strictly inside each rung, as [`within`] (the same test a count at that h makes).
    #[inline(always)]
    fn take(&mut self, _: u32, r2: f32, _: f32) {
        for k in 0..LADDER {
            self.c[k] += (r2 < self.r2[k]) as u32;
        }
    }
    /// The rungs lie within the walk radius (the largest is [`walk_radius`]), so a candidate
    /// outside it adds nothing: counted without the test.
    #[inline(always)]
    fn offer(&mut self, j: u32, r2: f32, mj: f32, _: bool) {
        self.take(j, r2, mj);
    }
}

/// One step of the smoothing-length iteration from the gather counts `c` at the rungs of
/// `s`'s [`ladder`] (target's own term included; non-decreasing). Returns the new state and the
/// count at its `h` when it converged (else at the largest rung).
/// - A rung within `tol` of the target converges, at the rung closest to it (the smallest of
///   equals).
/// - Otherwise the rungs below and above the target narrow the bracket `[lo, hi]`; once both
///   ends are known the next ladder fills a window of it around the false-position estimate
///   (in volume, from the ends' counts). Until then `h` moves by the Newton step on `N ∝ h³`
///   from the end rung nearest the target, at most a factor 2 (Gadget-2's update).
/// - A bracket of relative width 1e-5 holds no float32 h worth trying further (a count that
///   jumps over the target: coincident particles): stuck.
#[inline(always)]
pub fn update_h(s: HState, c: &[u32; LADDER], target: f32, tol: f32) -> (HState, u32) {
    if s.state != H_ITERATING {
        return (s, 0);
    }
    let r = ladder(&s);
    let mut best = 0;
    for k in 1..LADDER {
        if (c[k] as f32 - target).abs() < (c[best] as f32 - target).abs() {
            best = k;
        }
    }
    if (c[best] as f32 - target).abs() <= tol {
        let n = HState {
            h: r[best],
            state: H_CONVERGED,
            ..s
        };
        return (n, c[best]);
    }
    let mut n = s;
    for k in 0..LADDER {
        let ck = c[k] as f32;
        if ck < target && r[k] > n.lo {
            n.lo = r[k];
            n.nlo = ck;
        } else if ck > target && r[k] < n.hi {
            n.hi = r[k];
            n.nhi = ck;
        }
    }
    let bracketed = n.hi.is_finite() && n.lo > 0.0;
    n.h = if bracketed {
        // False position in volume between the ends and their counts; the next ladder fills
        // ±15% in h around it, inside the bracket: a wide bracket (its top engulfing a dense
        // core) is not walked out to its top.
        let (v0, v1) = (n.lo * n.lo * n.lo, n.hi * n.hi * n.hi);
        let f = ((target - n.nlo) / (n.nhi - n.nlo)).clamp(0.0, 1.0);
        let est = cbrt(v0 + f * (v1 - v0));
        n.wlo = (est / LADDER_WINDOW).max(n.lo);
        n.whi = (est * LADDER_WINDOW).min(n.hi);
        est
    } else if (c[LADDER - 1] as f32) < target {
        let ct = c[LADDER - 1] as f32;
        r[LADDER - 1] * cbrt((target / ct.max(1.0)).clamp(1.0, 8.0))
    } else {
        r[0] * cbrt((target / (c[0] as f32).max(1.0)).clamp(0.125, 1.0))
    };
    if bracketed && n.hi - n.lo <= 1e-5 * n.hi {
        n.state = H_STUCK;
    }
    (n, c[LADDER - 1])
}

/// What [`guess_h`] reads of the octree: child slots and cells' body counts (`crate::bh`'s
/// arrays, device pointers in the kernel, slices in the CPU twin).
pub trait CountTree {
    fn slot(&self, cell: i32, octant: u32) -> i32;
    fn count(&self, cell: i32) -> u32;
}

/// A first smoothing length from the local density: `p` descends the octree (root `root`, cube
/// of centre `centre` and half-size `half`, as `crate::bh::root_cell`) through the octants that
/// hold it while the child cell keeps at least `target` bodies; the smallest such cell, of `k`
/// bodies in a cube of side `a`, gives the density `k / a³`, and the sphere holding `target`
/// bodies at that density has radius `a ∛(3 target / (4π k))`. On a Plummer sphere this is
/// within tens of percent of the converged h where the global mean density is off by orders
/// of magnitude (the first passes from it tested thousands of candidates per neighbour).
#[inline(always)]
pub fn guess_h(
    t: &impl CountTree,
    root: i32,
    n: i32,
    centre: [f32; 3],
    half: f32,
    p: [f32; 3],
    target: f32,
) -> f32 {
    let (mut cell, mut c, mut half) = (root, centre, half);
    let mut k = t.count(root);
    for _ in 0..crate::bh::MAX_DEPTH {
        let o = crate::bh::octant(p, c);
        let ch = t.slot(cell, o);
        if ch < n {
            break;
        }
        let kc = t.count(ch - n);
        if (kc as f32) < target {
            break;
        }
        half *= 0.5;
        c = crate::bh::child_center(c, half, o);
        cell = ch - n;
        k = kc;
    }
    let k = (k as f32).max(1.0);
    2.0 * half * cbrt(3.0 * target / (4.0 * core::f32::consts::PI * k))
}

/// Cube root (positive `x`): `2^{log2(x)/3}` (two PTX instructions on the device).
#[inline(always)]
pub fn cbrt(x: f32) -> f32 {
    math::exp2(math::log2(x) * (1.0 / 3.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps `s` with the counts `count(r)` at its ladder's rungs until it stops; the passes.
    fn iterate(mut s: HState, count: impl Fn(f32) -> u32, tol: f32, max: u32) -> (HState, u32) {
        let mut it = 0;
        while s.iterating() && it < max {
            let c = ladder(&s).map(&count);
            s = update_h(s, &c, 64.0, tol).0;
            it += 1;
        }
        (s, it)
    }

    #[test]
    fn h_update_brackets_and_converges_on_a_power_law() {
        // N(h) = 1000 h³ (uniform density): the target 64 is at h = 0.4.
        let count = |h: f32| (1000.0 * h * h * h) as u32;
        // From a guess within 10%: two passes (the ladder brackets, the next lands); 25% off:
        // a Newton step first; 40× off: several.
        for (h0, most) in [(0.38f32, 2), (0.42, 2), (0.3, 3), (0.01, 9), (3.0, 9)] {
            let (s, it) = iterate(HState::start(h0), count, 1.0, 50);
            assert_eq!(s.state, H_CONVERGED, "h0 {h0}: {s:?}");
            assert!((count(s.h) as f32 - 64.0).abs() <= 1.0, "{s:?}");
            assert!(it <= most, "h0 {h0}: {it} passes");
        }
        // A count that jumps over the target (coincident particles) ends stuck, not in a loop.
        let step = |h: f32| if h < 0.5 { 1 } else { 200 };
        let (s, it) = iterate(HState::start(0.1), step, 2.0, 100);
        assert_eq!(s.state, H_STUCK);
        assert!(it < 20 && (s.lo - 0.5).abs() < 1e-4, "{it} {s:?}");
        // The ladder: ascending, around h until bracketed, then inside the bracket.
        let r = ladder(&HState::start(1.0));
        assert!(
            r.windows(2).all(|w| w[0] < w[1]) && r[0] == LADDER_SPREAD[0] && r[LADDER - 1] == 1.1
        );
        let b = HState {
            lo: 1.0,
            hi: 1.1,
            wlo: 1.0,
            whi: 1.1,
            ..HState::start(1.05)
        };
        let r = ladder(&b);
        assert!(r.windows(2).all(|w| w[0] < w[1]) && r[0] > 1.0 && r[LADDER - 1] < 1.1);
        assert_eq!(walk_radius(&b), r[LADDER - 1]);
    }

    #[test]
    fn the_ladder_follows_the_local_slope_and_lanes_split_depth_first() {
        // N(h) = 5000 h³ + 30 (a dense core at the centre of the sphere): the h³ Newton step
        // alone misjudges the slope; once bracketed, the ladder lands on the target.
        let count = |h: f32| (5000.0 * h * h * h + 30.0) as u32;
        let (s, it) = iterate(HState::start(0.05), count, 1.0, 40);
        assert_eq!(s.state, H_CONVERGED);
        assert!(it <= 6, "{it}");
        // Aligned ranges in depth-first order: after [0, 8) comes [8, 8), then [16, 16).
        assert_eq!(next_lanes(0, 8), Some((8, 8)));
        assert_eq!(next_lanes(8, 8), Some((16, 16)));
        assert_eq!(next_lanes(16, 16), None);
        assert_eq!(next_lanes(5, 1), Some((6, 2)));
        let w = GROUP_SPLIT;
        assert!(group_too_wide([0.0; 3], [w.next_up(), 0.0, 0.0], 1.0, 1.0));
        assert!(!group_too_wide([0.0; 3], [w, 0.0, 0.0], 1.0, 1.0));
        assert!(!group_too_wide([0.0; 3], [5.0; 3], f32::INFINITY, 0.0));
        let s = GROUP_H_SPREAD;
        assert!(!group_too_wide([0.0; 3], [w, 0.0, 0.0], 1.0, s));
        assert!(group_too_wide([0.0; 3], [0.0; 3], 1.0, s.next_up()));
    }
}
