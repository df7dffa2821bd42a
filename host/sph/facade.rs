//! One neighbour search over either backend: the one place that chooses between the GPU searches
//! ([`super::gpu::DeviceSph`]) and the CPU twins ([`super::cpu`]).

use super::gpu::{DeviceSph, SphGpuError};
use super::{Criterion, HIteration, HParams, Method, SmoothingKernel, cpu};
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
            let (counts, count_ms) = d.counts(g, o.method, o.criterion)?;
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
            let counts = cpu::counts(o.method, bodies, &h, o.criterion)?;
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
            })
        }
    }
}
