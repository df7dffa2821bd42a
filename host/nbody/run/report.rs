//! What a run reports: the timing table and the sampled force error of the GPU's forces against
//! float64 direct summation (the energy and virial plots are the front end's, drawn from the
//! diagnostics that [`super::Observer::finish`] receives).

use super::{RunError, RunSummary};
use crate::nbody::Particles;
use crate::nbody::gpu::GpuSim;

/// The run's time per step by stage (Markdown).
pub fn timing_table(s: &RunSummary) -> String {
    let per = |ms: f64| ms / s.steps.max(1) as f64;
    let t = &s.gpu_times;
    let mut out = format!(
        "# nbody run: {} particles, {} steps to t = {:.3} on the {} backend\n\n\
         wall {:.2} s ({:.2} steps/s), output {:.2} s, |ΔE/E| = {:.3e} at the end, {:.3e} at \
         most over the run{}\n\n",
        s.n,
        s.steps,
        s.time,
        s.backend,
        s.wall_s,
        s.steps as f64 / s.wall_s.max(1e-9),
        s.io_s,
        s.energy_drift(),
        s.energy_max_dev,
        if s.interrupted { " (interrupted)" } else { "" }
    );
    if s.snapshots.0 > 0 {
        out.push_str(&format!(
            "snapshots: {} written, {:.3} s each\n\n",
            s.snapshots.0,
            s.snapshots.1 / s.snapshots.0 as f64
        ));
    }
    if let Some((med, p99)) = s.force_error {
        out.push_str(&format!(
            "force error at t = 0 (sampled, against float64 direct summation): median {med:.3e}, \
             99th percentile {p99:.3e}\n\n"
        ));
    }
    if let Some((substeps, table)) = &s.block {
        out.push_str(&format!(
            "block time steps: a step is one largest step dt; {substeps} substeps ({:.2} per \
             step), the tree rebuilt on each\n\n{table}\n",
            *substeps as f64 / s.steps.max(1) as f64
        ));
    }
    if s.backend == "gpu" {
        out.push_str("| stage | ms per step |\n| --- | --- |\n");
        let rows = [
            ("bounding box + reset", t.tree.reset + t.tree.bounding_box),
            ("build", t.tree.build),
            ("centre of mass (summary)", t.tree.summarize),
            ("sort", t.tree.sort),
            ("forces", t.tree.gravity),
            ("kick / drift", t.kick_drift),
            ("reorder (tree order) + closing kick", t.permute),
            ("active set (block steps)", t.active_set),
            ("potential (diagnostic steps)", t.potential),
            ("total GPU", t.total()),
        ];
        for (name, ms) in rows {
            out.push_str(&format!("| {name} | {:.3} |\n", per(ms)));
        }
    }
    out
}

/// Median and 99th-percentile relative acceleration error of the GPU's first forces on `k`
/// particles drawn at random, against float64 direct summation over all particles (host).
pub(super) fn force_error_sample(
    sim: &GpuSim,
    p: &Particles,
    eps: f64,
    k: usize,
) -> Result<(f64, f64), RunError> {
    use rayon::prelude::*;
    let n = p.len();
    let k = k.min(n);
    // The GPU's current order: match its particles by id.
    let acc = sim.accelerations()?;
    let ids = sim.ids()?;
    let index: std::collections::HashMap<u64, usize> =
        p.id.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let eps2 = eps * eps;
    let mut err: Vec<f64> = (0..k)
        .into_par_iter()
        .map(|s| {
            let j = (crate::device::rng::draw_u64(0x5eed, s as u64) % n as u64) as usize;
            let i = index[&ids[j]];
            let x = p.pos[i];
            let mut a = [0.0f64; 3];
            for (q, &m) in p.pos.iter().zip(&p.mass) {
                let d = [q[0] - x[0], q[1] - x[1], q[2] - x[2]];
                // The particle itself (and a coincident one) pulls nothing.
                if d != [0.0; 3] {
                    let (aj, _) = crate::device::nbody::pair_accel_pot(d, m, eps2);
                    for c in 0..3 {
                        a[c] += aj[c];
                    }
                }
            }
            let g = acc[j];
            let e = [g.x as f64 - a[0], g.y as f64 - a[1], g.z as f64 - a[2]];
            let norm = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            norm(e) / norm(a)
        })
        .collect();
    err.sort_by(f64::total_cmp);
    let at = |q: f64| err[((err.len() - 1) as f64 * q).round() as usize];
    Ok((at(0.5), at(0.99)))
}
