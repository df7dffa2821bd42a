//! How the group search's warps walk: a warp group splits while its box or its spread of `h` is
//! too wide for one walk ([`group_too_wide`], [`next_lanes`]); a small cell is read as its range
//! in the tree order ([`SPH_BUCKET`]); a search of few walks also tests each target's own sphere
//! ([`FEW_PASS_WALKS`]).

/// A warp group walks as one only while its box's longest side is at most this many times its
/// smallest positive `h`; wider ones walk as halves (aligned lane ranges, [`next_lanes`]). Where
/// the density falls steeply (a Plummer sphere's halo) a group of 32 spans more than its
/// particles' h, and its box grown by its largest h reaches the dense centre that none of its
/// spheres reaches: a few such groups tested every particle of the set.
pub const GROUP_SPLIT: f32 = 2.0;

/// A warp group also splits while its largest `h` exceeds its smallest positive one by more than
/// this factor: its walk reaches as far as the largest h around every member, so a member of
/// small h tests candidates that only a wide sphere needs. In a Plummer halo (h varying fast
/// across a group) this cuts the costliest walk 1.6× to 2× on the CPU twin's count of
/// candidates and cells; on uniform and centrally condensed sets (h varies little within a
/// group) it changes the total by under 1%.
pub const GROUP_H_SPREAD: f32 = 1.5;

/// A group walk lists a reachable cell of at most this many particles as the particles' range
/// in the tree order (`start`, `count`; `bh_sort`) instead of descending into it: the bottom
/// levels of the tree are where a walk pops most of its cells. The candidates stay the same
/// (each particle still passes [`body_reachable`]); on the CPU twin's count (2^18 particles, 64
/// neighbours) cells popped fall 8.6× (uniform) and 7.4× (Plummer), and the ranges' particles
/// are loaded 32 at a time. On the H200 (64 neighbours) 32 against 16: the
/// density of uniform 2^22 4.18 → 3.50 ms, 2^20 0.82 → 0.77, Plummer 2^20 1.24 → 1.20; 8 was
/// slower everywhere.
///
/// [`body_reachable`]: super::body_reachable
pub const SPH_BUCKET: u32 = 32;

/// A group search of at most this many walks (`sph_group_few`, `sph_group_ladder_few`: the
/// h iteration's late passes, the searches of sets up to about 2^19 particles) also tests each
/// cell and candidate against every served target's own sphere (a point box grown by its h),
/// not only against the targets' box. Such a search (five walks per H200 warp slot of the
/// ladder's search at most) lasts about as long as its longest walk, and its longest walks are
/// a Plummer halo's: particles far apart whose box grown by their largest h reaches the dense
/// centre that none of their spheres reaches (one walk of 8 targets listed 42 000 candidates;
/// with the test, Plummer 2^18's h iteration took 2.6 ms instead of 69). A fuller search is
/// paced by throughput, where the plain walk's fewer registers and tests win (uniform 2^20's
/// second pass, 44 669 walks: 1.11 ms plain, 1.25 with the test). A constant, not the device's
/// count, so that the CPU twin tests the same pairs.
pub const FEW_PASS_WALKS: u32 = 16384;

/// Whether the members' box `[tlo, thi]` is too wide for one walk at smallest positive
/// smoothing length `hmin` (`+inf` when no member has h > 0: a walk that reaches nothing), or
/// their h too spread (largest `hmax`).
#[inline(always)]
pub fn group_too_wide(tlo: [f32; 3], thi: [f32; 3], hmin: f32, hmax: f32) -> bool {
    let ext = (thi[0] - tlo[0]).max(thi[1] - tlo[1]).max(thi[2] - tlo[2]);
    ext > GROUP_SPLIT * hmin || hmax > GROUP_H_SPREAD * hmin
}

/// The lane range after `[a, a + w)` in a depth-first split of the warp's 32 lanes into aligned
/// power-of-two ranges: every range still pending is the right half of a split one, so the next
/// starts at `a + w` and is as wide as that start's alignment. `None` after the last lane.
#[inline(always)]
pub fn next_lanes(a: u32, w: u32) -> Option<(u32, u32)> {
    let a = a + w;
    if a >= crate::WARP_SIZE {
        None
    } else {
        Some((a, a & a.wrapping_neg()))
    }
}
