//! `warpkit combined`: gravity and SPH density by one walk against the two separate walks on a
//! scene: times, speed-up, walk counts, and how far the two answers are apart.

use crate::choice::{Choice, choice};
use warpkit::backend::{self, BackendChoice};
use warpkit::bh::Params;
use warpkit::bh::scene::{self, Scene};
use warpkit::combined::{Comparison, Form, Options, compare, max_acc_diff, max_rel_diff};
use warpkit::sph::{HParams, Method, SmoothingKernel, initial_h};

/// Arguments of `warpkit combined`.
#[derive(clap::Args, Debug)]
pub struct CombinedArgs {
    #[arg(long, value_parser = choice::<Scene>(), default_value = Scene::Uniform.name())]
    pub scene: Scene,
    #[arg(long, default_value_t = 1 << 20)]
    pub n: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// One smoothing length (support radius) for every particle (default: the sphere of
    /// --neighbours particles at the box's mean density).
    #[arg(long, conflicts_with = "adapt", allow_negative_numbers = true)]
    pub h: Option<f32>,
    /// Target gather count, for the default h and --adapt.
    #[arg(long, default_value_t = 64.0, allow_negative_numbers = true)]
    pub neighbours: f32,
    /// Iterate per-particle h to --neighbours ± 2 first (the SPH group search), untimed here.
    #[arg(long)]
    pub adapt: bool,
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    pub theta: f32,
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    pub eps: f32,
    /// Quadrupole moments in the cells' gravity (both walks; the group form only).
    #[arg(long)]
    pub quadrupole: bool,
    /// The walks compared: warp groups (`combined_group` against `bh_gravity_group` +
    /// `sph_group`) or the seed's per-warp vote walks, GASPHiA's setting (`combined_vote`
    /// against `bh_gravity` + `sph_vote`).
    #[arg(long, value_parser = choice::<Form>(), default_value = Form::Group.name())]
    pub form: Form,
    #[arg(long, value_parser = choice::<SmoothingKernel>(), default_value = SmoothingKernel::CubicSpline.name())]
    pub kernel: SmoothingKernel,
    /// Timed rounds (median; the GPU also runs one warm-up round).
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
}

/// Runs the command; prints the times as a Markdown table.
pub fn run(choice: BackendChoice, a: CombinedArgs) -> anyhow::Result<()> {
    if a.repeats == 0 {
        return Err(warpkit::bh::InputError::NoRepeats.into());
    }
    // Refused before the scene and the h iteration, not after them.
    if a.form == Form::Vote && a.quadrupole {
        return Err(warpkit::combined::CombinedError::VoteQuadrupole.into());
    }
    let hp = HParams {
        target: a.neighbours,
        ..HParams::default()
    };
    // --neighbours sets the default h and --adapt's target: checked itself, not reported as
    // the h it gives.
    if a.adapt || a.h.is_none() {
        hp.check(if a.adapt { a.n } else { usize::MAX })?;
    }
    let (backend, notice) = backend::select(choice)?;
    if let Some(m) = notice {
        eprintln!("note: {m}");
    }
    // The count before a scene of that size is generated (`--n` near usize::MAX panicked).
    warpkit::bh::check_count(&backend, a.n)?;
    let mut bodies = scene::generate(a.scene, a.n, a.seed);
    scene::shuffle(&mut bodies, a.seed);
    let n = bodies.len();
    let h0 = vec![a.h.unwrap_or_else(|| initial_h(&bodies, a.neighbours)); n];
    let h = if a.adapt {
        let o = warpkit::sph::SearchOptions {
            method: Method::Group,
            criterion: warpkit::sph::Criterion::Gather,
            iterate: Some(hp),
            // Without `--h`, from each particle's local-density guess (as `neighbours` does).
            guess: a.h.is_none(),
            density: None,
            lists: None,
        };
        let s = warpkit::sph::search(&backend, &bodies, h0, &o)?;
        if let Some((r, _)) = &s.iteration {
            println!("h iteration: {}", r.report());
        }
        s.h
    } else {
        h0
    };
    let o = Options {
        gravity: Params {
            theta: a.theta,
            eps: a.eps,
            g: 1.0,
        },
        kernel: a.kernel,
        quadrupole: a.quadrupole,
    };
    println!(
        "combined gravity + density walk ({:?} form): {:?} n={n} θ={} ε={} {} kernel {:?} on {}",
        a.form,
        a.scene,
        a.theta,
        a.eps,
        if a.quadrupole {
            "quadrupoles"
        } else {
            "monopoles"
        },
        a.kernel,
        backend.name()
    );
    let Comparison {
        combined,
        separate,
        times: t,
        walks,
        tree_ms,
    } = compare(&backend, &bodies, &h, &o, a.form, a.repeats)?;
    if let Some((tree, boxes)) = tree_ms {
        println!("tree {tree:.3} ms, cell boxes {boxes:.3} ms");
    }
    let digits = if backend.is_gpu() { 3 } else { 1 };
    println!("| walk | ms (median of {}) |", a.repeats.max(1));
    println!("| --- | --- |");
    println!(
        "| combined (gravity + density + counts) | {:.digits$} |",
        t.combined
    );
    let (gw, dw) = match a.form {
        Form::Group => ("gravity group walk", "SPH group walk, density"),
        Form::Vote => ("gravity vote walk (bh_gravity)", "SPH vote walk, density"),
    };
    println!("| {gw} | {:.digits$} |", t.gravity);
    println!("| {dw} | {:.digits$} |", t.density);
    println!("| separate, sum | {:.digits$} |", t.separate());
    if let (Some(g), Some(d)) = (t.gravity_part, t.density_part) {
        println!("| combined kernel, gravity alone | {g:.digits$} |");
        println!("| combined kernel, density alone | {d:.digits$} |");
    }
    println!(
        "speed-up of the combined walk over the separate walks: {:.2}×",
        t.speedup()
    );
    if let Some(w) = walks {
        println!(
            "combined walk: {:.1} gravity interactions, {:.1} near pairs tested per body; {} cells opened",
            w.gravity as f64 / n as f64,
            w.near as f64 / n as f64,
            w.opened
        );
    }
    let mean_count = combined.counts.iter().map(|&c| c as f64).sum::<f64>() / n as f64;
    let count_diff = combined
        .counts
        .iter()
        .zip(&separate.counts)
        .filter(|(a, b)| a != b)
        .count();
    println!(
        "combined vs separate: acceleration max rel diff {:.2e}, density max rel diff {:.2e}, \
         counts differing {count_diff} (mean count {mean_count:.2})",
        max_acc_diff(&combined.acc, &separate.acc, 1e-30),
        max_rel_diff(&combined.rho, &separate.rho, 1e-30),
    );
    Ok(())
}
