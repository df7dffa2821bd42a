//! The gravity stage's counted rate: interactions per second and floating-point
//! operations counted the way GPU tree codes count them — 23 per body–body or body–monopole
//! interaction, 65 per body–quadrupole — not the instructions executed.
//!
//! The group kernels count their interactions (list entries × group size, in the tree header)
//! but not how many of them are cells; with quadrupoles the share of cells is taken from a
//! replay of evenly spaced groups' walks on the host ([`cpu::listed_kinds`], the kernels'
//! decisions). The vote kernel counts nothing: its rate is not known.

use super::gpu::{Options, Traversal};
use super::{Evaluation, Params, cpu, sample_indices};
use crate::device::bh::Body;

/// Counted flops of one body–body or body–monopole interaction.
pub const FLOPS_MONOPOLE: f64 = 23.0;
/// Counted flops of one body–quadrupole interaction.
pub const FLOPS_QUADRUPOLE: f64 = 65.0;
/// Warp groups replayed for the quadrupole share (evenly spaced over the tree order, so every
/// region of the scene is in the sample).
pub const SAMPLE_GROUPS: usize = 512;

/// The counted work of one gravity evaluation.
#[derive(Clone, Copy, Debug)]
pub struct Rate {
    /// Interactions (body–body and body–cell).
    pub interactions: u64,
    /// Share of them with a cell's quadrupole (0 without quadrupoles).
    pub quadrupole_share: f64,
    /// Groups behind `quadrupole_share` (0: not sampled, the share is exact).
    pub sampled_groups: usize,
}

impl Rate {
    /// Counted floating-point operations.
    pub fn flops(&self) -> f64 {
        let i = self.interactions as f64;
        i * ((1.0 - self.quadrupole_share) * FLOPS_MONOPOLE
            + self.quadrupole_share * FLOPS_QUADRUPOLE)
    }
    /// Counted TFLOP/s over `gravity_ms`.
    pub fn tflops(&self, gravity_ms: f64) -> f64 {
        self.flops() / (gravity_ms * 1e-3) / 1e12
    }
    /// Interactions per second over `gravity_ms`.
    pub fn per_second(&self, gravity_ms: f64) -> f64 {
        self.interactions as f64 / (gravity_ms * 1e-3)
    }
}

/// TFLOP/s for tables: two decimals, or two significant digits below 0.1 (the CPU twin's rates).
pub fn fmt_tflops(t: f64) -> String {
    if t >= 0.1 {
        format!("{t:.2}")
    } else {
        format!("{t:.2e}")
    }
}

/// What the run `e` of `bodies` under `o` can tell of its counted work: `None` for the vote
/// kernel (no counter), and for quadrupoles without the tree (`Options::keep_tree`).
/// GPU: the header's count, the quadrupole share from [`SAMPLE_GROUPS`] replayed groups.
/// CPU twin: every group replayed (exact).
pub fn counted(e: &Evaluation, bodies: &[Body], p: &Params, o: &Options) -> Option<Rate> {
    if o.traversal == Traversal::Vote {
        return None;
    }
    match (&e.header, &e.tree) {
        (Some(h), _) if !o.quadrupole => Some(Rate {
            interactions: h.interactions,
            quadrupole_share: 0.0,
            sampled_groups: 0,
        }),
        (Some(h), Some(tree)) => {
            let groups = sample_indices(tree.groups.len(), SAMPLE_GROUPS);
            let k = cpu::listed_kinds(bodies, tree, p, true, o.relative, &groups);
            Some(Rate {
                interactions: h.interactions,
                quadrupole_share: share(k),
                sampled_groups: groups.len(),
            })
        }
        (None, Some(tree)) => {
            let all: Vec<usize> = (0..tree.groups.len()).collect();
            let k = cpu::listed_kinds(bodies, tree, p, o.quadrupole, o.relative, &all);
            Some(Rate {
                interactions: k.bodies + k.cells,
                quadrupole_share: if o.quadrupole { share(k) } else { 0.0 },
                sampled_groups: 0,
            })
        }
        _ => None,
    }
}

fn share(k: cpu::ListedKinds) -> f64 {
    k.cells as f64 / (k.bodies + k.cells).max(1) as f64
}

/// Whether [`counted`] needs the tree of a run under `o` (ask with `Options::keep_tree`): the
/// quadrupole share on the GPU, everything on the CPU twin (no header).
pub fn needs_tree(o: &Options, gpu: bool) -> bool {
    o.traversal != Traversal::Vote && (o.quadrupole || !gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Monopole-only work counts 23 per interaction; a quadrupole share mixes 23 and 65.
    #[test]
    fn counted_flops_mix_the_two_weights() {
        let r = Rate {
            interactions: 1_000_000,
            quadrupole_share: 0.0,
            sampled_groups: 0,
        };
        assert_eq!(r.flops(), 23e6);
        // 1e6 interactions in 1 ms: 1e9 interactions/s, 23e9 flops/s.
        assert!((r.per_second(1.0) - 1e9).abs() < 1.0);
        assert!((r.tflops(1.0) - 0.023).abs() < 1e-12);
        let q = Rate {
            quadrupole_share: 0.25,
            ..r
        };
        assert!((q.flops() - (0.75 * 23e6 + 0.25 * 65e6)).abs() < 1.0);
        assert_eq!(fmt_tflops(18.234), "18.23");
        assert_eq!(fmt_tflops(0.0123), "1.23e-2");
    }
}
