//! The stochastic estimator (paths, strata, roulette) and Barnes–Hut at a query point.

use super::*;

/// Width of a cell at `depth` (≤ 126) below a root of half-width `root_half`: `root_half ·
/// 2^(1 − depth)`, an exact power-of-two scaling (no integer-to-float conversion, no division).
#[inline(always)]
pub fn width_at(root_half: f32, depth: u32) -> f32 {
    root_half * f32::from_bits((128 - depth.min(126)) << 23)
}

/// √3: a cube's diagonal over its width.
pub(super) const SQRT_3: f32 = 1.732_050_8;

/// The "size" `|B|` of a cell at `depth` in the far-field ratio: the length of its box's diagonal,
/// `√3 · width`, as in the authors' code (`Tree3DNode::diameter_ = bounds.diagonal().norm()`).
#[inline(always)]
pub fn diameter_at(root_half: f32, depth: u32) -> f32 {
    SQRT_3 * width_at(root_half, depth)
}

/// The far-field ratio `β̃ = |q − p| / |B|` of a cell whose weighted centre (centre of mass) is `p`
/// and whose box diagonal is `diameter` ([`diameter_at`]): the paper's `‖q − p̃_{i,k}‖ / |B_{i,k}|`
/// with the authors' definitions (distance to the centre of mass, size = box diagonal). A cell is
/// far (used whole by Barnes–Hut) when `β̃ ≥ β`; with this definition our `β` is the authors' `β`
/// (an older form divided by the width, so its `β` was theirs times √3). On the device the square
/// root and the reciprocal are single approximate instructions (relative error ≲ 2^-22).
#[inline(always)]
pub fn far_ratio(q: [f32; 3], p: [f32; 3], diameter: f32) -> f32 {
    math::sqrt_approx(crate::bh::dist2(q, p)) * math::rcp(diameter)
}

/// Whether a cell of centre `p` and box diagonal `diameter` is far from `q` for ratio `beta`:
/// `β̃ ≥ β`, tested squared (no square root, no division).
#[inline(always)]
pub fn is_far(q: [f32; 3], p: [f32; 3], diameter: f32, beta: f32) -> bool {
    let r = beta * diameter;
    crate::bh::dist2(q, p) >= r * r
}

/// Whether a cell of centre `p` and box diagonal `diameter` is far, for ratio `beta`, from every
/// point of the box with centre `bc` and half-extents `bh`: far from the box's nearest point
/// ([`crate::bh::box_dist2`]), which implies [`is_far`] for every query in the box. The group
/// traversal's test (`sbh_bh_group_kernel`); like the authors' warp vote it uses a cell whole only
/// when it is far for the whole warp, so it is at least as accurate as [`bh_estimate`].
#[inline(always)]
pub fn is_far_from_box(bc: [f32; 3], bh: [f32; 3], p: [f32; 3], diameter: f32, beta: f32) -> bool {
    let r = beta * diameter;
    crate::bh::box_dist2(p, bc, bh) >= r * r
}

/// The roulette's continuation probability into a child whose far-field ratio is `beta_child`,
/// after a path whose largest ratio so far is `beta_max`: `min(1, max(1, β̂) / β̃_c)`. Near field
/// (ratios below 1) always continues; far field continues with about the ratio of successive
/// widths (1/2 for an octree). The quotient is a product with [`math::rcp`] (one `MUFU.RCP` on the
/// device, no division subroutine); the path weights divide by the same `pc` through `rcp` too.
#[inline(always)]
pub fn continue_probability(beta_max: f32, beta_child: f32) -> f32 {
    let p = beta_max.max(1.0) * math::rcp(beta_child);
    // β̃_c = 0 (query on the centre) gives +inf: continue. NaN cannot arise from valid input.
    if p >= 1.0 { 1.0 } else { p }
}

/// The 30-bit Morton code (10 bits per axis, x lowest) of `q` in the box of corner `lo` and
/// `scale = 1024 / extent`: the key by which queries are ordered so that a warp's 32 queries are
/// close together (their traversals then share cells and paths).
#[inline(always)]
pub fn morton_key(q: [f32; 3], lo: [f32; 3], scale: f32) -> u32 {
    let spread = |c: f32, l: f32| {
        // Clamped cell index in 0..1024, its bits spread to every third position.
        let v = ((c - l) * scale).clamp(0.0, 1023.0) as u32;
        let mut x = v & 0x3ff;
        x = (x | (x << 16)) & 0x0300_00ff;
        x = (x | (x << 8)) & 0x0300_f00f;
        x = (x | (x << 4)) & 0x030c_30c3;
        (x | (x << 2)) & 0x0924_9249
    };
    spread(q[0], lo[0]) | spread(q[1], lo[1]) << 1 | spread(q[2], lo[2]) << 2
}

/// An idle lane in a grouped kernel's position list (`order`): the lane stands on its warp's first
/// query and writes nothing.
pub const NO_QUERY: u32 = u32::MAX;

/// Threads per block of the query kernels.
pub const QUERY_BLOCK: u32 = 128;

/// Queries per thread of the brute-force kernel (each source loaded from shared memory serves
/// them all).
pub const BRUTE_QUERIES: u32 = 4;

/// Query groups of `sbh_brute_force` (`QUERY_BLOCK · BRUTE_QUERIES` queries each) for `nq`.
pub fn brute_force_groups(nq: u32) -> u32 {
    nq.div_ceil(QUERY_BLOCK * BRUTE_QUERIES).max(1)
}

/// Source chunks for `sbh_brute_force`: `groups` query groups times `splits` chunks are its work
/// units, one block each, and `slots` blocks are resident at once (SMs × blocks per SM). Units of
/// equal cost finish in `⌈units / slots⌉` waves, so 1954 units on 1320 slots (10⁶ queries, 48
/// registers, 132 SMs) would take two full waves for 1.48 waves of work; this picks the fewest
/// splits (at most 8, and no more than the source tiles, `ceil(n / QUERY_BLOCK)`) whose waves are
/// at least 95% full, else the fullest.
pub fn brute_force_splits(groups: u32, slots: u32, n: u32) -> u32 {
    let max = n.div_ceil(QUERY_BLOCK).clamp(1, 8);
    let slots = slots.max(1) as u64;
    // (work, capacity) of `s` splits: units and the blocks of their whole waves.
    let fill = |s: u32| {
        let units = groups.max(1) as u64 * s as u64;
        (units, units.div_ceil(slots) * slots)
    };
    let mut best = 1;
    for s in 1..=max {
        let (w, c) = fill(s);
        if 100 * w >= 95 * c {
            return s;
        }
        let (bw, bc) = fill(best);
        if w * bc > bw * c {
            best = s;
        }
    }
    best
}

/// Parameters of one stochastic estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SbhParams {
    pub kernel: KernelSpec,
    /// Paths per stratum, `S ≥ 1`.
    pub samples: u32,
    pub seed: u64,
    /// Octree levels per level of the estimator's tree, 1 or 2: with 2, a node's children are
    /// its grandchildren (and its body children), which makes the octree the paper's 64-ary tree
    /// (4 splits per axis). Any other value is treated as 2.
    pub levels: u32,
    /// Paths per stratum by the stratum's distance ([`stratum_paths`]): `2S` in near strata, `S`
    /// kept with probability [`FAR_KEEP`] in far ones (ours); `false`: `S` in every stratum (the
    /// paper's).
    pub allocate: bool,
}

/// Octree levels per estimator level of the paper's tree (64 children: d = 4 splits per axis).
pub const WIDE_LEVELS: u32 = 2;

impl SbhParams {
    /// `samples` paths per stratum on the paper's 64-ary tree ([`WIDE_LEVELS`]), paths
    /// allocated by stratum distance ([`stratum_paths`]): the defaults.
    pub fn new(kernel: KernelSpec, samples: u32, seed: u64) -> Self {
        SbhParams {
            kernel,
            samples,
            seed,
            levels: WIDE_LEVELS,
            allocate: true,
        }
    }
}

/// Index of a query's random stream: the query itself, or with `coherent` its warp (32
/// consecutive queries share every draw).
#[inline(always)]
pub fn stream_of(query: u32, coherent: bool) -> u64 {
    if coherent {
        (query / crate::WARP_SIZE) as u64
    } else {
        query as u64
    }
}

/// The path's uniform draw at octree depth `depth` for `purpose` (0: the child, 1: the roulette).
#[inline(always)]
pub(super) fn path_draw(
    p: &SbhParams,
    key: u64,
    stratum: u32,
    sample: u32,
    depth: u32,
    purpose: u32,
) -> f32 {
    // A near stratum draws for up to 3S samples.
    rng::uniform_f32(
        key,
        draw_index(stratum, sample, 3 * p.samples, depth, purpose),
    )
}

/// The roulette at a path node of far-field ratio `beta` after the running maximum `beta_max`:
/// evaluate the node's correction with probability `pc = min(1, max(1, β̂) / β̃)`. `None` when the
/// path ends here, else the factor `1 / pc` (1 without a draw) for the inverse probability.
#[inline(always)]
pub(super) fn roulette(
    p: &SbhParams,
    key: u64,
    stratum: u32,
    sample: u32,
    depth: u32,
    beta_max: f32,
    beta: f32,
) -> Option<f32> {
    let pc = continue_probability(beta_max, beta);
    if pc < 1.0 {
        if path_draw(p, key, stratum, sample, depth, 1) >= pc {
            None
        } else {
            Some(math::rcp(pc))
        }
    } else {
        Some(1.0)
    }
}

/// Counter of a draw within a query's stream: stratum, sample, octree depth and purpose (0: the
/// child of the path, 1: the roulette) never collide.
#[inline(always)]
pub(super) fn draw_index(stratum: u32, sample: u32, samples: u32, depth: u32, purpose: u32) -> u64 {
    (((stratum as u64 * samples as u64 + sample as u64) * 64 + depth as u64) << 1) | purpose as u64
}

/// The terms and weights of the slots of `cell`: a child cell by its summary, a bucket chain by
/// its bodies. Returns (Σ terms, Σ weights).
#[inline(always)]
pub(super) fn slot_terms<V: TreeView>(v: &V, k: KernelSpec, q: [f32; 3], cell: i32) -> (f32, f32) {
    let n = v.n();
    let (mut f, mut w) = (0.0, 0.0);
    for o in 0..8 {
        let ch = v.child(cell, o);
        let (fc, wc) = if ch >= n {
            let (fc, s) = cell_term(v, k, q, ch - n);
            (fc, s.m)
        } else {
            chain_terms(v, k, q, ch)
        };
        f += fc;
        w += wc;
    }
    (f, w)
}

/// Σ of the terms of the estimator-level children of `cell`: its slots when `wide` is false, else
/// the slots of its child cells and its own bucket chains.
#[inline(always)]
pub(super) fn children_terms<V: TreeView>(
    v: &V,
    k: KernelSpec,
    q: [f32; 3],
    cell: i32,
    wide: bool,
) -> f32 {
    if !wide {
        return slot_terms(v, k, q, cell).0;
    }
    let n = v.n();
    let mut f = 0.0;
    for o in 0..8 {
        let ch = v.child(cell, o);
        f += if ch >= n {
            slot_terms(v, k, q, ch - n).0
        } else {
            chain_terms(v, k, q, ch).0
        };
    }
    f
}

/// The path-sampling weight of a child slot's value `ch`: a cell's weight, a bucket chain's summed
/// weight (in chain order), 0 for an empty slot. The wide layout stores exactly these floats.
#[inline(always)]
pub fn slot_weight<V: TreeView>(v: &V, ch: i32) -> f32 {
    if ch >= v.n() {
        v.cell(ch - v.n()).m
    } else {
        let mut b = ch;
        let mut w = 0.0;
        while b >= 0 {
            w += v.body(b).m;
            b = v.next(b);
        }
        w
    }
}

/// One child slot of `cell` drawn with probability proportional to its weight, from the uniform
/// `u`: (slot value, the probability's inverse). The last non-empty slot catches a draw that
/// rounding leaves past the running sum.
#[inline(always)]
pub(super) fn pick_slot<V: TreeView>(v: &V, cell: i32, u: f32) -> (i32, f32) {
    let mut slots = [0i32; 8];
    let mut weights = [0.0f32; 8];
    for o in 0..8 {
        let ch = v.child(cell, o);
        slots[o as usize] = ch;
        weights[o as usize] = slot_weight(v, ch);
    }
    let (o, inv) = pick_weighted(&weights, u);
    (if o < 0 { -1 } else { slots[o as usize] }, inv)
}

/// The index of one of 8 weights drawn with probability proportional to its weight, from the
/// uniform `u`: (index, the probability's inverse), or (-1, total) when every weight is 0. The
/// last positive weight catches a draw that rounding leaves past the running sum. The one rule of
/// both tree layouts: zeros anywhere in `w` do not change the pick (the wide layout leaves empty
/// slots out).
#[inline(always)]
pub(super) fn pick_weighted(w: &[f32; 8], u: f32) -> (i32, f32) {
    let mut total = 0.0f32;
    for &x in w {
        total += x;
    }
    let u = u * total;
    let (mut pick, mut pick_w, mut acc, mut found) = (-1i32, 1.0f32, 0.0f32, false);
    for (o, &x) in w.iter().enumerate() {
        if x > 0.0 && !found {
            acc += x;
            pick = o as i32;
            pick_w = x;
            found = u < acc;
        }
    }
    (pick, total * math::rcp(pick_w))
}

/// One telescoping path from the stratum cell `c` at octree depth `depth`, returning
/// `Σ Δ_T / (π_T P_T)` over the cells it reaches. The running maximum of the far-field ratios
/// starts at the stratum's own ratio, so the stratum's correction is always evaluated (the
/// authors' `cur_beta = fmax(1, subdomain->farFieldRatio(q))` before their loop).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn path<V: TreeView>(
    v: &V,
    p: &SbhParams,
    q: [f32; 3],
    key: u64,
    stratum: u32,
    sample: u32,
    c: i32,
    mut depth: u32,
) -> f32 {
    let n = v.n();
    let k = p.kernel;
    let wide = p.levels != 1;
    let step = if wide { 2 } else { 1 };
    let root_half = v.root_half();
    let mut est = 0.0f32;
    let mut node = c;
    // 1 / (π_T P_T): inverse probability of having reached and kept evaluating `node`.
    let mut inv_prob = 1.0f32;
    let (mut f_node, mut s_node) = cell_term(v, k, q, node);
    let mut beta = far_ratio(q, s_node.pos(), diameter_at(root_half, depth));
    let mut beta_max = beta;
    // A path is at most MAX_DEPTH cells deep; the bound keeps the loop finite on any input.
    while (depth as usize) < MAX_DEPTH {
        let Some(keep) = roulette(p, key, stratum, sample, depth, beta_max, beta) else {
            break;
        };
        inv_prob *= keep;
        beta_max = beta_max.max(beta);
        // Contribution exchange: the children's terms minus the node's own.
        let children = children_terms(v, k, q, node, wide);
        est = math::fma(children - f_node, inv_prob, est);
        // Path: a child (then, wide, a grandchild) with probability proportional to weight.
        let mut next = node;
        let mut leaf = false;
        for l in 0..step {
            let u = path_draw(p, key, stratum, sample, depth + l, 0);
            let (pick, inv) = pick_slot(v, next, u);
            inv_prob *= inv;
            if pick < n {
                leaf = true; // a body or bucket: its terms are exact, the path ends
                break;
            }
            next = pick - n;
        }
        if leaf {
            break;
        }
        node = next;
        (f_node, s_node) = cell_term(v, k, q, node);
        depth += step;
        beta = far_ratio(q, s_node.pos(), diameter_at(root_half, depth));
    }
    est
}

/// Strata whose far-field ratio at the query is below this get `3S` paths ([`stratum_paths`]).
pub const NEAREST_STRATUM: f32 = 0.5;
/// Strata whose far-field ratio at the query is below this get `2S` paths ([`stratum_paths`]).
pub const NEAR_STRATUM: f32 = 0.7;
/// Strata whose far-field ratio at the query is at least this keep each path with probability
/// [`FAR_KEEP`] ([`stratum_paths`]).
pub const FAR_STRATUM: f32 = 1.2;
/// The probability with which a far stratum keeps a path.
pub const FAR_KEEP: f32 = 0.35;

/// The paths from one stratum (far-field ratio `beta` at the query), averaged: `path(s)` for
/// samples `s = 0..S`, or with `p.allocate` — a Neyman-style allocation, beyond the paper — `3S`
/// paths when the stratum is nearest (`beta < NEAREST_STRATUM`), `2S` when near (`beta <
/// NEAR_STRATUM`: the query in or at the stratum, where the paths' variance is), and when it is
/// far (`beta ≥ FAR_STRATUM`) each of its `S` paths kept with probability [`FAR_KEEP`] (the draw
/// at depth 0, which no path uses) and weighted by its inverse. Unbiased either way. On the CPU at
/// M = 2^20 (100³-grid queries, S = 1) it lowered the median error 16% and the work 27% against
/// `S` everywhere.
#[inline(always)]
pub fn stratum_paths(
    p: &SbhParams,
    key: u64,
    stratum: u32,
    beta: f32,
    mut path: impl FnMut(u32) -> f32,
) -> f32 {
    let near = p.allocate && beta < NEAR_STRATUM;
    let keep = if p.allocate && beta >= FAR_STRATUM {
        FAR_KEEP
    } else {
        1.0
    };
    let n = if p.allocate && beta < NEAREST_STRATUM {
        3 * p.samples
    } else if near {
        2 * p.samples
    } else {
        p.samples
    };
    let mut sum = 0.0f32;
    for s in 0..n {
        if keep >= 1.0 || path_draw(p, key, stratum, s, 0, 1) < keep {
            sum += path(s);
        }
    }
    sum * math::rcp(keep * n as f32)
}

/// The paths from stratum cell `c` at `depth` ([`stratum_paths`]), plus the cell's own term.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn stratum<V: TreeView>(
    v: &V,
    p: &SbhParams,
    q: [f32; 3],
    key: u64,
    id: u32,
    c: i32,
    depth: u32,
) -> f32 {
    let (own, s) = cell_term(v, p.kernel, q, c);
    let beta = far_ratio(q, s.pos(), diameter_at(v.root_half(), depth));
    stratum_paths(p, key, id, beta, |smp| {
        path(v, p, q, key, id, smp, c, depth)
    }) + own
}

/// The stochastic Barnes–Hut estimate of `Σ_i w_i f(p_i, q)`: the root's estimator-level
/// children (its 8 children, or with `levels = 2` its 64 grandchildren) are the strata, summed
/// exactly, and `S = p.samples` telescoping paths from each stratum cell are averaged (module
/// docs). `stream` selects the random stream ([`stream_of`]). Unbiased for `S ≥ 1`.
#[inline(always)]
pub fn sbh_estimate<V: TreeView>(v: &V, p: &SbhParams, q: [f32; 3], stream: u64) -> f32 {
    if p.levels != 1 && v.has_wide() {
        return sbh_estimate_on_wide(v, p, q, stream);
    }
    let key = rng::draw_u64(p.seed, stream);
    let n = v.n();
    let root = v.root();
    let mut total = 0.0f32;
    for o in 0..8 {
        let ch = v.child(root, o);
        if ch < n {
            total += chain_terms(v, p.kernel, q, ch).0;
        } else if p.levels == 1 {
            total += stratum(v, p, q, key, o, ch - n, 1);
        } else {
            for o2 in 0..8 {
                let gc = v.child(ch - n, o2);
                if gc < n {
                    total += chain_terms(v, p.kernel, q, gc).0;
                } else {
                    total += stratum(v, p, q, key, 8 * o + o2, gc - n, 2);
                }
            }
        }
    }
    total
}

/// [`sbh_estimate`] on the wide-node layout, which `v` must hold (`levels = 2`): what the
/// `sbh_estimate_wide_kernel` entry runs, without the octree walks' registers.
#[inline(always)]
pub fn sbh_estimate_on_wide<V: TreeView>(v: &V, p: &SbhParams, q: [f32; 3], stream: u64) -> f32 {
    wide::sbh_estimate_wide::<V, true>(v, p, q, rng::draw_u64(p.seed, stream))
}

/// [`sbh_estimate_on_wide`] without its early stop (`next_step_stops`): every path step picks its
/// child and grandchild even when the next roulette is certain to end the path. For tests: the
/// two must agree bit for bit.
#[doc(hidden)]
#[inline(always)]
pub fn sbh_estimate_on_wide_exhaustive<V: TreeView>(
    v: &V,
    p: &SbhParams,
    q: [f32; 3],
    stream: u64,
) -> f32 {
    wide::sbh_estimate_wide::<V, false>(v, p, q, rng::draw_u64(p.seed, stream))
}

/// Capacity of the deterministic traversal's stack: a popped cell pushes at most 8 children, so
/// the stack holds at most 7 per level plus one cell's 8.
pub const BH_STACK: usize = 7 * MAX_DEPTH + 8;

/// Deterministic Barnes–Hut at query `q`: a cell whose far-field ratio ([`far_ratio`]: distance
/// to its centre of mass over its box diagonal) is at least `beta` is used whole, others are
/// opened; bodies are summed exactly. The root is tested too. `beta = ∞` (or any value above every
/// ratio) gives the exact sum. This is the authors' `evaluateBarnesHut` (`useFarField(q, β)`:
/// `farFieldRatio(q) >= β`, leaves always exact), so `β = 2` here is their table's `β = 2`.
#[inline(always)]
pub fn bh_estimate<V: TreeView>(v: &V, k: KernelSpec, beta: f32, q: [f32; 3]) -> f32 {
    let n = v.n();
    let root_half = v.root_half();
    let (f_root, s_root) = cell_term(v, k, q, v.root());
    if is_far(q, s_root.pos(), diameter_at(root_half, 0), beta) {
        return f_root;
    }
    // Entries: cell * 32 + depth (cells < 2^26 and depth ≤ 30, so it fits an i32).
    let mut stack = [0i32; BH_STACK];
    stack[0] = v.root() * 32;
    let mut top = 1usize;
    let mut total = 0.0f32;
    while top > 0 {
        top -= 1;
        let e = stack[top];
        let (cell, depth) = (e >> 5, (e & 31) as u32);
        for o in 0..8 {
            let ch = v.child(cell, o);
            if ch >= n {
                let (f, s) = cell_term(v, k, q, ch - n);
                let far = is_far(q, s.pos(), diameter_at(root_half, depth + 1), beta);
                if far || top >= BH_STACK {
                    total += f;
                } else {
                    stack[top] = (ch - n) * 32 + depth as i32 + 1;
                    top += 1;
                }
            } else {
                total += chain_terms(v, k, q, ch).0;
            }
        }
    }
    total
}
