//! The comparison on either backend: the one place that chooses between the GPU launchers
//! ([`super::gpu::DeviceCombined`]) and the CPU twins ([`super::cpu`]).

use super::gpu::{CombinedGpuError, DeviceCombined, WalkCounts};
use super::{Options, Results, cpu, validate};
use crate::backend::Backend;
use crate::device::bh::Body;
use crate::device::combined::{PART_BOTH, PART_DENSITY, PART_GRAVITY};
use crate::sph::cpu::SphTree;
use crate::stats::median;
use std::time::Instant;

/// Median milliseconds of each walk (GPU: CUDA events of the kernel alone; CPU: wall time).
#[derive(Clone, Copy, Debug, Default)]
pub struct Times {
    /// The combined walk: gravity, counts and density.
    pub combined: f64,
    /// The existing gravity walk (`bh_gravity_group`; CPU: `bh::cpu::gravity_group`).
    pub gravity: f64,
    /// The existing neighbour walk in density mode (`sph_group`; CPU: the group search).
    pub density: f64,
    /// The combined kernel asked for one part alone (GPU only): the same code walking twice.
    pub gravity_part: Option<f64>,
    pub density_part: Option<f64>,
}

impl Times {
    /// The two separate walks together.
    pub fn separate(&self) -> f64 {
        self.gravity + self.density
    }
    /// How many times faster the combined walk is than the two separate ones.
    pub fn speedup(&self) -> f64 {
        self.separate() / self.combined
    }
}

/// A comparison's results: the combined walk's outputs, the separate walks' (the gravity walk's
/// accelerations, the neighbour walk's densities; counts from its count mode on the GPU, from its
/// count-and-density sink on the CPU), times, and the combined walk's counts (GPU).
pub struct Comparison {
    pub combined: Results,
    pub separate: Results,
    pub times: Times,
    pub walks: Option<WalkCounts>,
    /// Tree and cell boxes (GPU).
    pub tree_ms: Option<(f64, f64)>,
}

/// Runs the combined walk and the two separate ones on `bodies` with smoothing lengths `h`,
/// `repeats` times each (after one warm-up on the GPU), on one tree.
pub fn compare(
    backend: &Backend,
    bodies: &[Body],
    h: &[f32],
    o: &Options,
    repeats: usize,
) -> Result<Comparison, CombinedGpuError> {
    validate(bodies, h, o)?;
    let repeats = repeats.max(1);
    let med = |v: &[f64]| median(v).unwrap_or(f64::NAN);
    match backend {
        Backend::Gpu(g) => {
            let mut d = DeviceCombined::new(g, bodies, h, o)?;
            let (mut tc, mut tg, mut td, mut tgp, mut tdp) =
                (vec![], vec![], vec![], vec![], vec![]);
            let mut last = None;
            for r in 0..=repeats {
                // Round 0 warms up (module functions, caches) and is not counted.
                let (c, walks, ms_c) = d.combined(g, o, PART_BOTH)?;
                let (acc, ms_g) = d.gravity_group(g, o)?;
                let (_, rho, ms_d) = d.sph_group(g, o, false)?;
                let (_, _, ms_gp) = d.combined(g, o, PART_GRAVITY)?;
                let (_, _, ms_dp) = d.combined(g, o, PART_DENSITY)?;
                if r > 0 {
                    tc.push(ms_c);
                    tg.push(ms_g);
                    td.push(ms_d);
                    tgp.push(ms_gp);
                    tdp.push(ms_dp);
                }
                last = Some((c, walks, acc, rho));
            }
            let (combined, walks, acc, rho) = last.expect("at least one round");
            let (counts, _, _) = d.sph_group(g, o, true)?;
            Ok(Comparison {
                combined,
                separate: Results { acc, counts, rho },
                times: Times {
                    combined: med(&tc),
                    gravity: med(&tg),
                    density: med(&td),
                    gravity_part: Some(med(&tgp)),
                    density_part: Some(med(&tdp)),
                },
                walks: Some(walks),
                tree_ms: Some((d.tree_ms, d.boxes_ms)),
            })
        }
        Backend::Cpu => {
            let t = SphTree::new(bodies, h).without_ranges();
            let (mut tc, mut tg, mut td) = (vec![], vec![], vec![]);
            let (mut combined, mut separate) = (Results::default(), Results::default());
            for _ in 0..repeats {
                let s = Instant::now();
                combined = cpu::combined(bodies, h, &t, o, PART_BOTH);
                tc.push(s.elapsed().as_secs_f64() * 1e3);
                let s = Instant::now();
                let acc =
                    crate::bh::cpu::gravity_group(bodies, &t.tree, &o.gravity, o.quadrupole, None);
                tg.push(s.elapsed().as_secs_f64() * 1e3);
                let s = Instant::now();
                let sep = cpu::separate_density(bodies, h, &t, o);
                td.push(s.elapsed().as_secs_f64() * 1e3);
                separate = Results { acc, ..sep };
            }
            Ok(Comparison {
                combined,
                separate,
                times: Times {
                    combined: med(&tc),
                    gravity: med(&tg),
                    density: med(&td),
                    gravity_part: None,
                    density_part: None,
                },
                walks: None,
                tree_ms: None,
            })
        }
    }
}
