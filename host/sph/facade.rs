//! One neighbour search over either backend: the one place that chooses between the GPU searches
//! ([`super::gpu::DeviceSph`]) and the CPU twins ([`super::cpu`]).

use super::gpu::{DeviceSph, SphGpuError};
use super::{Criterion, HIteration, HParams, Method, Neighbours, SmoothingKernel, cpu};
use crate::backend::Backend;
use crate::device::bh::Body;
use std::time::Instant;

/// What a search does besides counting.
#[derive(Clone, Copy, Debug)]
pub struct SearchOptions {
    pub method: Method,
    pub criterion: Criterion,
    /// Iterate the smoothing lengths first with these parameters, from the given ones or
    /// (`guess`) from each particle's local-density guess.
    pub iterate: Option<HParams>,
    pub guess: bool,
    /// Also sum the density with this kernel.
    pub density: Option<SmoothingKernel>,
    /// Also fill the CSR neighbour lists (of `criterion`), refused past this many entries
    /// ([`super::check_pairs`]).
    pub lists: Option<u64>,
}

/// A search's results; times in ms (GPU: CUDA events, CPU: wall time).
pub struct Search {
    /// The smoothing lengths used (iterated when asked).
    pub h: Vec<f32>,
    pub counts: Vec<u32>,
    pub count_ms: f64,
    /// The GPU's tree build and cell boxes (the CPU twins build theirs inside each search).
    pub tree_ms: Option<(f64, f64)>,
    pub iteration: Option<(HIteration, f64)>,
    pub density: Option<(Vec<f32>, f64)>,
    /// The CSR lists when asked for (rows ascending); `counts` are then their row lengths and
    /// `count_ms` the time of the lists' count, scan and fill.
    pub neighbours: Option<Neighbours>,
}

/// Counts (optionally after iterating h, optionally with the density) of `bodies` with `h`.
pub fn search(
    backend: &Backend,
    bodies: &[Body],
    h: Vec<f32>,
    o: &SearchOptions,
) -> Result<Search, SphGpuError> {
    match backend {
        Backend::Gpu(g) => {
            let mut d = DeviceSph::new(g, bodies, &h)?;
            let tree_ms = Some((d.tree_ms, d.boxes_ms));
            let iteration = match &o.iterate {
                Some(hp) => Some(d.iterate_h(g, o.method, hp, o.guess)?),
                None => None,
            };
            let (counts, count_ms, neighbours) = match o.lists {
                Some(max_pairs) => {
                    let (nb, ms) = d.neighbours(g, o.method, o.criterion, max_pairs)?;
                    (nb.counts(), ms, Some(nb))
                }
                None => {
                    let (counts, ms) = d.counts(g, o.method, o.criterion)?;
                    (counts, ms, None)
                }
            };
            let density = match o.density {
                Some(k) => Some(d.density(g, o.method, k)?),
                None => None,
            };
            Ok(Search {
                h: d.h_host().to_vec(),
                counts,
                count_ms,
                tree_ms,
                iteration,
                density,
                neighbours,
            })
        }
        Backend::Cpu => {
            let t = Instant::now();
            let (h, iteration) = match &o.iterate {
                Some(hp) => {
                    let h0 = (!o.guess).then_some(h.as_slice());
                    let r = cpu::iterate_h(o.method, bodies, h0, hp)?;
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    (r.h.clone(), Some((r, ms)))
                }
                None => (h, None),
            };
            let t = Instant::now();
            let (counts, neighbours) = match o.lists {
                Some(max_pairs) => {
                    let nb = cpu::neighbours(o.method, bodies, &h, o.criterion, max_pairs)?;
                    (nb.counts(), Some(nb))
                }
                None => (cpu::counts(o.method, bodies, &h, o.criterion)?, None),
            };
            let count_ms = t.elapsed().as_secs_f64() * 1e3;
            let density = match o.density {
                Some(k) => {
                    let t = Instant::now();
                    let r = cpu::density(o.method, bodies, &h, k)?;
                    Some((r, t.elapsed().as_secs_f64() * 1e3))
                }
                None => None,
            };
            Ok(Search {
                h,
                counts,
                count_ms,
                tree_ms: None,
                iteration,
                density,
                neighbours,
            })
        }
    }
}

/// One search method's costs on one particle set at one neighbour number (`warpkit repro
/// neighbours`); times in ms (GPU: CUDA events, CPU: wall time).
#[derive(Clone, Debug)]
pub struct Profile {
    /// The h iteration from the local-density guess (guess included) and its count passes.
    pub iterate_ms: f64,
    pub passes: u32,
    /// Particles that did not converge.
    pub unconverged: usize,
    /// One count pass at the final h (gather): median time, neighbours found, pairs tested.
    pub count_ms: f64,
    pub neighbours: u64,
    pub tested: u64,
    /// Density summation (cubic spline) at the final h: median time.
    pub density_ms: f64,
    /// Device bytes of the search's buffers ([`super::device_bytes`]).
    pub bytes: usize,
    /// The GPU's tree build and cell boxes (the CPU twins build theirs inside each search).
    pub tree_ms: Option<f64>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Iterates h to `hp` from the local-density guess with `method`, then times `repeats` gather
/// count passes and density summations at the final h and counts one pass's pairs tested.
pub fn profile(
    backend: &Backend,
    bodies: &[Body],
    method: Method,
    hp: &HParams,
    repeats: usize,
) -> Result<Profile, SphGpuError> {
    let repeats = repeats.max(1);
    let n = bodies.len();
    let kernel = SmoothingKernel::CubicSpline;
    let gather = Criterion::Gather;
    match backend {
        Backend::Gpu(g) => {
            // Any valid h builds the tree; the iteration starts from the guess.
            let h0 = vec![super::initial_h(bodies, hp.target); n];
            let mut d = DeviceSph::new(g, bodies, &h0)?;
            let tree_ms = d.tree_ms + d.boxes_ms;
            let (r, iterate_ms) = d.iterate_h(g, method, hp, true)?;
            let mut count = Vec::new();
            let mut neighbours = 0;
            for _ in 0..repeats {
                let (c, ms) = d.counts(g, method, gather)?;
                neighbours = c.iter().map(|&x| x as u64).sum();
                count.push(ms);
            }
            let tested = d.tested(g, method, gather)?;
            let mut density = Vec::new();
            for _ in 0..repeats {
                density.push(d.density(g, method, kernel)?.1);
            }
            Ok(Profile {
                iterate_ms,
                passes: r.iterations,
                unconverged: r.unconverged.len(),
                count_ms: median(count),
                neighbours,
                tested,
                density_ms: median(density),
                bytes: super::device_bytes(n, method, d.h_host(), bodies),
                tree_ms: Some(tree_ms),
            })
        }
        Backend::Cpu => {
            let t = Instant::now();
            let r = cpu::iterate_h(method, bodies, None, hp)?;
            let iterate_ms = t.elapsed().as_secs_f64() * 1e3;
            let h = r.h;
            let mut count = Vec::new();
            let mut neighbours = 0;
            for _ in 0..repeats {
                let t = Instant::now();
                let c = cpu::counts(method, bodies, &h, gather)?;
                count.push(t.elapsed().as_secs_f64() * 1e3);
                neighbours = c.iter().map(|&x| x as u64).sum();
            }
            let (_, tested) = cpu::search_some(method, bodies, &h, None, gather, None, |_| {
                crate::device::sph::Count(0)
            });
            let mut density = Vec::new();
            for _ in 0..repeats {
                let t = Instant::now();
                cpu::density(method, bodies, &h, kernel)?;
                density.push(t.elapsed().as_secs_f64() * 1e3);
            }
            Ok(Profile {
                iterate_ms,
                passes: r.iterations,
                unconverged: r.unconverged.len(),
                count_ms: median(count),
                neighbours,
                tested,
                density_ms: median(density),
                bytes: super::device_bytes(n, method, &h, bodies),
                tree_ms: None,
            })
        }
    }
}
