//! `warpkit neighbours`: one search on a scene, counts and time (kept out of `main.rs`, which
//! only forwards to [`run`]).

use crate::choice::{Choice, choice};
use std::path::{Path, PathBuf};
use warpkit::backend::{self, BackendChoice};
use warpkit::bh::scene::{self, Scene};
use warpkit::sph::{
    Criterion, DEFAULT_MAX_PAIRS, HParams, Method, Search, SearchOptions, SmoothingKernel,
    initial_h, search,
};

/// Arguments of `warpkit neighbours`.
#[derive(clap::Args, Debug)]
pub struct NeighboursArgs {
    #[arg(long, value_parser = choice::<Scene>(), default_value = Scene::Uniform.name())]
    pub scene: Scene,
    #[arg(long, default_value_t = 1 << 16)]
    pub n: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// One smoothing length (support radius) for every particle.
    #[arg(long, conflicts_with = "neighbours", allow_negative_numbers = true)]
    pub h: Option<f32>,
    /// Iterate per-particle h to this gather count (± --tol) instead of a fixed h.
    #[arg(long, allow_negative_numbers = true)]
    pub neighbours: Option<f32>,
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true)]
    pub tol: f32,
    #[arg(long, value_parser = choice::<Method>(), default_value = Method::Group.name())]
    pub method: Method,
    #[arg(long, value_parser = choice::<Criterion>(), default_value = Criterion::Gather.name())]
    pub criterion: Criterion,
    /// Also sum the density with this kernel.
    #[arg(long, value_parser = choice::<SmoothingKernel>())]
    pub kernel: Option<SmoothingKernel>,
    /// Particles from a file instead of a scene: `.npy` (N×4 float32 or float64: x, y, z, m; or
    /// N×5 with each particle's h, the fixed h or with --neighbours the iteration's start) or a
    /// snapshot (Gadget 1/2; HDF5 with the `hdf5` feature), every particle type, with HSML as
    /// each particle's h when every particle is gas.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Write each particle's neighbour count, smoothing length and density as `.npy` (N×3
    /// float32, in the input's order; the density with --kernel, cubic spline by default).
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Write the neighbour lists (of --criterion) in CSR form: PREFIX_offsets.npy (int64, N + 1)
    /// and PREFIX_indices.npy (int64); particle i's neighbours, in the input's order and
    /// ascending, are indices[offsets[i]:offsets[i + 1]].
    #[arg(long, value_name = "PREFIX")]
    pub csr: Option<PathBuf>,
    /// Refuse neighbour lists of more than this many entries (checked before they are filled).
    #[arg(long, default_value_t = DEFAULT_MAX_PAIRS, requires = "csr")]
    pub max_pairs: u64,
}

/// The two files of `--csr PREFIX`: offsets, indices.
fn csr_paths(prefix: &Path) -> [PathBuf; 2] {
    ["offsets", "indices"].map(|what| {
        let mut p = prefix.as_os_str().to_owned();
        p.push(format!("_{what}.npy"));
        PathBuf::from(p)
    })
}

/// Runs the command; prints the h used, count statistics, and times.
pub fn run(choice: BackendChoice, a: NeighboursArgs) -> anyhow::Result<()> {
    let target = a.neighbours.unwrap_or(64.0);
    let hp = HParams {
        target,
        tol: a.tol,
        ..HParams::default()
    };
    // The options and the count before a scene of that size is generated: `--n` near
    // usize::MAX panicked in the allocator, and `--neighbours 0` was reported as h = 0.
    if a.neighbours.is_some() {
        hp.check(a.n)?;
    }
    let (backend, notice) = backend::select(choice)?;
    if let Some(m) = notice {
        eprintln!("note: {m}");
    }
    let input = [("--input", a.input.as_deref())];
    if let Some(path) = &a.output {
        warpkit::files::check_output(path)?;
        warpkit::files::check_not_input("--output", path, &input)?;
    }
    let csr = a.csr.as_deref().map(csr_paths);
    for path in csr.iter().flatten() {
        warpkit::files::check_output(path)?;
        warpkit::files::check_not_input("--csr", path, &input)?;
        if let Some(out) = a
            .output
            .as_deref()
            .filter(|o| warpkit::files::same_file(path, o))
        {
            anyhow::bail!(
                "--csr writes {}, the --output file: give another prefix",
                out.display()
            );
        }
    }
    let (bodies, file_h) = match &a.input {
        Some(path) => {
            let (bodies, file_h) = warpkit::bh::read_particles_file(path)?;
            if file_h.is_some() && a.h.is_some() {
                anyhow::bail!(
                    "{} gives each particle's h (an N×5 file's fifth column, a gas snapshot's \
                     HSML) and --h one for all: drop --h, or give a file without h",
                    path.display()
                );
            }
            warpkit::bh::validate(&bodies, &warpkit::bh::Params::default())?;
            if a.neighbours.is_some() {
                hp.check(bodies.len())?;
            }
            (bodies, file_h)
        }
        None => {
            warpkit::bh::check_count(&backend, a.n)?;
            let mut bodies = scene::generate(a.scene, a.n, a.seed);
            scene::shuffle(&mut bodies, a.seed);
            (bodies, None)
        }
    };
    let n = bodies.len();
    let guess = a.h.is_none() && file_h.is_none();
    let h0 = file_h.unwrap_or_else(|| vec![a.h.unwrap_or_else(|| initial_h(&bodies, target)); n]);
    let what = match &a.input {
        Some(path) => path.display().to_string(),
        None => format!("{:?}", a.scene),
    };
    println!(
        "{what} n={n} method {:?} criterion {:?} on {}",
        a.method,
        a.criterion,
        backend.name()
    );
    let o = SearchOptions {
        method: a.method,
        criterion: a.criterion,
        iterate: a.neighbours.map(|_| hp),
        guess,
        density: a
            .kernel
            .or(a.output.as_ref().map(|_| SmoothingKernel::CubicSpline)),
        lists: csr.as_ref().map(|_| a.max_pairs),
    };
    let Search {
        h,
        counts,
        count_ms: ms,
        tree_ms,
        iteration,
        density: rho,
        neighbours: lists,
    } = search(&backend, &bodies, h0, &o)?;
    if let Some((tree, boxes)) = tree_ms {
        println!("tree {tree:.3} ms, cell boxes {boxes:.3} ms");
    }
    if let Some((r, ms)) = iteration {
        // CUDA event times to the microsecond, wall times to 0.1 ms.
        let digits = if backend.is_gpu() { 3 } else { 1 };
        println!("h iteration {ms:.digits$} ms: {}", r.report());
        print!("{}", r.pass_table());
    }
    let total: u64 = counts.iter().map(|&c| c as u64).sum();
    let (lo, hi) = (
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
    );
    let hmean = h.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
    println!(
        "neighbours: mean {:.2}, min {lo}, max {hi}, {total} pairs; mean h {hmean:.4e}; {} \
         {ms:.3} ms ({:.3e} neighbours/s)",
        total as f64 / n as f64,
        if lists.is_some() {
            "lists (count, scan, fill)"
        } else {
            "count pass"
        },
        total as f64 / (ms * 1e-3)
    );
    if let Some((rho, ms)) = &rho {
        let mean = rho.iter().map(|&r| r as f64).sum::<f64>() / n as f64;
        println!("density: mean {mean:.4e}, {ms:.3} ms");
    }
    if let Some(path) = &a.output {
        let rho = rho.map(|(r, _)| r).unwrap_or_default();
        let rows: Vec<f32> = (0..n)
            .flat_map(|i| [counts[i] as f32, h[i], rho.get(i).copied().unwrap_or(0.0)])
            .collect();
        warpkit::bh::npy::write_f32(path, &rows, 3)?;
        println!("wrote {} (count, h, density per particle)", path.display());
    }
    if let (Some([offsets, indices]), Some(nb)) = (&csr, &lists) {
        use warpkit::bh::npy::write_i64;
        write_i64(offsets, nb.offsets.iter().map(|&o| o as i64))?;
        write_i64(indices, nb.list.iter().map(|&j| j as i64))?;
        println!(
            "wrote {} and {} (CSR neighbour lists, {} entries)",
            offsets.display(),
            indices.display(),
            nb.list.len()
        );
    }
    Ok(())
}
