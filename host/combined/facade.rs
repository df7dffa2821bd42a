//! The comparison on either backend: the one place that chooses between the GPU launchers
//! ([`super::gpu::DeviceCombined`]) and the CPU twins ([`super::cpu`]).

use super::gpu::{CombinedGpuError, DeviceCombined, WalkCounts};
use super::{CombinedError, Form, Options, Results, cpu, validate};
use crate::backend::Backend;
use crate::device::bh::{Accel, Body};
use crate::device::combined::{PART_BOTH, PART_DENSITY, PART_GRAVITY};
use crate::runtime::Gpu;
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

/// One GPU round of `form`: the combined walk (its results, walk counts where the form counts
/// them, ms), the separate gravity (accelerations, ms) and density walks (densities, ms), and the
/// combined kernel's parts alone (ms; the group form only).
type Round = (
    Results,
    Option<WalkCounts>,
    f64,
    Vec<Accel>,
    f64,
    Vec<f32>,
    f64,
    Option<(f64, f64)>,
);

fn gpu_round(
    d: &mut DeviceCombined,
    g: &Gpu,
    o: &Options,
    form: Form,
) -> Result<Round, CombinedGpuError> {
    Ok(match form {
        Form::Group => {
            let (c, walks, ms_c) = d.combined(g, o, PART_BOTH)?;
            let (acc, ms_g) = d.gravity_group(g, o)?;
            let (_, rho, ms_d) = d.sph_group(g, o, false)?;
            let (_, _, ms_gp) = d.combined(g, o, PART_GRAVITY)?;
            let (_, _, ms_dp) = d.combined(g, o, PART_DENSITY)?;
            let parts = Some((ms_gp, ms_dp));
            (c, Some(walks), ms_c, acc, ms_g, rho, ms_d, parts)
        }
        Form::Vote => {
            let (c, ms_c) = d.combined_vote(g, o)?;
            let (acc, ms_g) = d.gravity_vote(g, o)?;
            let (_, rho, ms_d) = d.sph_vote(g, o, false)?;
            (c, None, ms_c, acc, ms_g, rho, ms_d, None)
        }
    })
}

/// Runs the combined walk and the two separate ones of `form` on `bodies` with smoothing
/// lengths `h`, `repeats` times each (after one warm-up on the GPU), on one tree.
pub fn compare(
    backend: &Backend,
    bodies: &[Body],
    h: &[f32],
    o: &Options,
    form: Form,
    repeats: usize,
) -> Result<Comparison, CombinedGpuError> {
    validate(bodies, h, o)?;
    if form == Form::Vote && o.quadrupole {
        return Err(CombinedError::VoteQuadrupole.into());
    }
    let repeats = repeats.max(1);
    let med = |v: &[f64]| median(v).unwrap_or(f64::NAN);
    let (mut tc, mut tg, mut td) = (vec![], vec![], vec![]);
    match backend {
        Backend::Gpu(g) => {
            let mut d = DeviceCombined::new(g, bodies, h, o)?;
            let (mut tgp, mut tdp) = (vec![], vec![]);
            let mut last = None;
            for r in 0..=repeats {
                // Round 0 warms up (module functions, caches) and is not counted.
                let (c, walks, ms_c, acc, ms_g, rho, ms_d, parts) = gpu_round(&mut d, g, o, form)?;
                if r > 0 {
                    tc.push(ms_c);
                    tg.push(ms_g);
                    td.push(ms_d);
                    if let Some((gp, dp)) = parts {
                        tgp.push(gp);
                        tdp.push(dp);
                    }
                }
                last = Some((c, walks, acc, rho));
            }
            let (combined, walks, acc, rho) = last.expect("at least one round");
            let (counts, _, _) = match form {
                Form::Group => d.sph_group(g, o, true)?,
                Form::Vote => d.sph_vote(g, o, true)?,
            };
            let part = |v: &[f64]| (!v.is_empty()).then(|| med(v));
            Ok(Comparison {
                combined,
                separate: Results { acc, counts, rho },
                times: Times {
                    combined: med(&tc),
                    gravity: med(&tg),
                    density: med(&td),
                    gravity_part: part(&tgp),
                    density_part: part(&tdp),
                },
                walks,
                tree_ms: Some((d.tree_ms, d.boxes_ms)),
            })
        }
        Backend::Cpu => {
            let t = SphTree::new(bodies, h).without_ranges();
            let (mut combined, mut separate) = (Results::default(), Results::default());
            let timed = |f: &mut dyn FnMut(), into: &mut Vec<f64>| {
                let s = Instant::now();
                f();
                into.push(s.elapsed().as_secs_f64() * 1e3);
            };
            for _ in 0..repeats {
                let (mut acc, mut sep) = (Vec::new(), Results::default());
                match form {
                    Form::Group => {
                        timed(
                            &mut || combined = cpu::combined(bodies, h, &t, o, PART_BOTH),
                            &mut tc,
                        );
                        let p = &o.gravity;
                        let gravity = || {
                            crate::bh::cpu::gravity_group(bodies, &t.tree, p, o.quadrupole, None)
                        };
                        timed(&mut || acc = gravity(), &mut tg);
                        timed(
                            &mut || sep = cpu::separate_density(bodies, h, &t, o),
                            &mut td,
                        );
                    }
                    Form::Vote => {
                        timed(
                            &mut || combined = cpu::combined_vote(bodies, h, &t, o),
                            &mut tc,
                        );
                        let gravity =
                            || crate::bh::cpu::gravity(bodies, &t.tree, &t.tree.sort, &o.gravity);
                        timed(&mut || acc = gravity(), &mut tg);
                        timed(&mut || sep = cpu::vote_density(bodies, h, &t, o), &mut td);
                    }
                }
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
