//! `warpkit gravity`.

use super::*;

#[derive(clap::Args)]
pub(crate) struct GravityArgs {
    /// Number of bodies (ignored with --input).
    #[arg(long, default_value_t = 1 << 20)]
    n: usize,
    /// Opening angle θ.
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    theta: f32,
    /// Plummer softening ε.
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    eps: f32,
    /// Gravitational constant.
    #[arg(long = "G", default_value_t = 1.0, allow_negative_numbers = true)]
    g: f32,
    #[arg(long, value_parser = choice::<Scene>(), default_value = Scene::Lattice.name())]
    scene: Scene,
    /// Bodies from a .npy file (N×4 float32 or float64, any byte order, C or Fortran order: x, y,
    /// z, m) or a snapshot (any other name: Gadget format 1/2, or HDF5 in the Gadget-4/SWIFT
    /// layout with the `hdf5` cargo feature; every type's positions and masses) instead of a
    /// scene.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Write the accelerations as .npy (N×3 float32), in the input's order.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Traversal order: random (shuffled, unsorted), regular (given order), sorted.
    #[arg(long, value_parser = choice::<Mode>(), default_value = Mode::Sorted.name())]
    mode: Mode,
    /// GPU gravity kernel: the seed's per-warp vote, or the warp-group traversal.
    #[arg(long, value_parser = choice::<Traversal>(), default_value = Traversal::Vote.name())]
    traversal: Traversal,
    /// Node storage: dense (cells allocated by a counter) or sparse (the seed's implicit octree).
    #[arg(long, value_parser = choice::<Storage>(), default_value = Storage::Dense.name())]
    storage: Storage,
    /// Tree build: sorted (octant-path keys radix-sorted, cells linked without locks; dense
    /// storage) or locked (the seed's insertion with a lock per child slot).
    #[arg(long, value_parser = choice::<warpkit::bh::gpu::Build>(), default_value = warpkit::bh::gpu::Build::Sorted.name())]
    build: warpkit::bh::gpu::Build,
    /// Quadrupole moments in cell interactions (group kernel only).
    #[arg(long)]
    quadrupole: bool,
    /// Gadget's relative opening criterion with this α (group2 only): a cell is used whole when
    /// its truncation error is below α times the group's smallest acceleration. A first pass at
    /// θ gives those accelerations (timed apart: a simulation has them from its last step).
    #[arg(long, allow_negative_numbers = true)]
    alpha: Option<f32>,
    /// The relative criterion's geometric guard: never a cell with width / distance ≥ θ_max.
    #[arg(long, default_value_t = warpkit::bh::Relative::THETA_MAX, allow_negative_numbers = true)]
    theta_max: f32,
    /// Timed repeats after one warm-up (GPU); medians are printed.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Bodies sampled for the error against float64 direct summation (0: skip).
    #[arg(long, default_value_t = 1000)]
    check: usize,
    /// Seed of the scene and of the shuffle.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Split the bodies over K virtual ranks in this process (Morton decomposition
    /// balanced by work, migration, global top tree, locally essential trees), exchanging through
    /// memory; each rank's walk runs on the selected backend (the CPU, or GPU 0 shared by the
    /// ranks). The group walk (group kernel on a GPU) whatever --traversal says; reports bytes
    /// and milliseconds of communication per step beside compute.
    #[arg(long, default_value_t = 1, conflicts_with = "gpus")]
    ranks: usize,
    /// One rank per GPU on GPUs 0..K−1, exchanging over NCCL (one process, a thread per GPU);
    /// `--gpus` alone takes every visible GPU. Needs libnccl (docs/nbody.md: Several ranks and GPUs). The multi-rank
    /// pipeline of --ranks otherwise.
    #[arg(long, num_args = 0..=1, default_missing_value = "0")]
    gpus: Option<usize>,
}

pub(crate) fn run(choice: BackendChoice, a: GravityArgs) -> Result<()> {
    use warpkit::bh::Options;
    if a.gpus.is_some() {
        if choice == BackendChoice::Cpu {
            bail!("--gpus runs on GPUs: it cannot be combined with --backend cpu (use --ranks)");
        }
        // Before any thread: a wheel's libnccl.so.2 needs a libnccl.so link on the library path
        // at process start (host/multi/nccl.rs).
        warpkit::multi::nccl::reexec_with_nccl();
        warpkit::multi::nccl::ensure_loadable()?;
    }
    warpkit::multi::check_ranks(a.ranks).map_err(anyhow::Error::msg)?;
    let multi = a.ranks > 1 || a.gpus.is_some();
    if multi && a.alpha.is_some() {
        bail!("--alpha (the relative criterion) is not available with --ranks or --gpus");
    }
    let p = Params {
        theta: a.theta,
        eps: a.eps,
        g: a.g,
    };
    if let Some(path) = &a.output {
        warpkit::files::check_output(path)?;
        warpkit::files::check_not_input("--output", path, &[("--input", a.input.as_deref())])?;
    }
    let o = Options {
        sorted: a.mode == Mode::Sorted,
        traversal: a.traversal,
        quadrupole: a.quadrupole,
        storage: a.storage,
        build: a.build,
        relative: a.alpha.map(|alpha| warpkit::bh::Relative {
            alpha,
            theta_max: a.theta_max,
        }),
        ..Default::default()
    };
    // The multi-rank walks are group walks (the group kernel on a GPU), whatever --traversal.
    warpkit::bh::validate_options(&Options {
        traversal: if multi { Traversal::Group } else { o.traversal },
        ..o
    })?;
    if a.repeats == 0 {
        return Err(warpkit::bh::InputError::NoRepeats.into());
    }
    let gpus = match a.gpus {
        Some(k) => Some(open_gpus(k)?),
        None => None,
    };
    let backend = match &gpus {
        Some(g) => Backend::Gpu(g[0].clone()),
        None => select(choice)?,
    };
    // The count is checked before a scene of that size is generated (`--n` near
    // usize::MAX hung, 2·10^9 aborted in the allocator).
    let mut bodies = match &a.input {
        Some(path) => warpkit::bh::read_bodies_file(path)?,
        None => {
            warpkit::bh::check_count(&backend, a.n)?;
            scene::generate(a.scene, a.n, a.seed)
        }
    };
    warpkit::bh::validate(&bodies, &p)?;
    if p.eps == 0.0
        && let Some((i, j)) = warpkit::bh::coincident_pair(&bodies)
    {
        return Err(warpkit::bh::InputError::Coincident(i, j).into());
    }
    warpkit::bh::check_count(&backend, bodies.len())?;
    let n = bodies.len();
    // Shuffling must not change what --output means: remember where each body came from.
    let mut origin: Vec<u32> = (0..n as u32).collect();
    if a.mode != Mode::Regular {
        scene::shuffle(&mut bodies, a.seed);
        scene::shuffle(&mut origin, a.seed);
    }
    let what = match &a.input {
        Some(path) => path.display().to_string(),
        None => format!("{:?}", a.scene),
    };
    // `--repeats` is the GPU's (milliseconds per run); the CPU twin runs once.
    let repeats = if backend.is_gpu() { a.repeats } else { 1 };
    if multi {
        let m = Multi {
            ranks: a.ranks,
            gpus: gpus.as_deref(),
            backend: &backend,
            repeats,
            quadrupole: a.quadrupole,
            what: &what,
        };
        let acc = m.run(&bodies, &p)?;
        check_and_write(&a, &bodies, &p, &acc, &origin)?;
        return Ok(());
    }
    // The quadrupole share of the counted flops is replayed from the tree.
    let o = Options {
        keep_tree: warpkit::bh::rate::needs_tree(&o, backend.is_gpu()),
        ..o
    };
    let timed = warpkit::bh::evaluate_median(&backend, &bodies, &p, &o, repeats)?;
    let gravity_ms = timed.median.gravity;
    let run = timed.last;
    let rate = warpkit::bh::rate::counted(&run, &bodies, &p, &o);
    match (backend.gpu(), run.header) {
        (Some(gpu), Some(header)) => {
            let t = &timed.median;
            println!(
                "Barnes–Hut on {} ({what}, N = {n}, θ = {}, ε = {}, mode {:?}, {:?} kernel; median of {})",
                gpu.info().name,
                p.theta,
                p.eps,
                a.mode,
                a.traversal,
                timed.runs
            );
            println!("| stage | ms |\n| --- | --- |");
            for (name, ms) in [
                ("reset", t.reset),
                ("bounding box", t.bounding_box),
                ("build", t.build),
                ("centre of mass", t.summarize),
                ("sort", t.sort),
                ("gravity", t.gravity),
                ("total", timed.median_total),
            ] {
                println!("| {name} | {ms:.3} |");
            }
            if let Some(r) = o.relative {
                println!(
                    "relative criterion α = {}, θ_max = {}; its first pass at θ = {} (not in the total): {:.3} ms",
                    r.alpha, r.theta_max, p.theta, t.prepass
                );
            }
            println!(
                "cells used {} of {} (depth {}, bucketed {}, retries {}); interactions/body {:.0} (group kernel only)",
                run.cells as i32 - header.bottom,
                run.cells,
                header.depth,
                header.bucketed,
                run.retries,
                header.interactions as f64 / n as f64
            );
        }
        _ => println!(
            "Barnes–Hut on the CPU ({} threads; {what}, N = {n}, θ = {}, mode {:?}, {:?}): tree {:.1} ms, gravity {:.1} ms",
            rayon::current_num_threads(),
            p.theta,
            a.mode,
            a.traversal,
            run.times.build,
            run.times.gravity
        ),
    }
    print_rate(rate.as_ref(), n, gravity_ms, backend.is_gpu());
    check_and_write(&a, &bodies, &p, &run.acc, &origin)
}

/// The error against float64 direct summation on `--check` bodies, and `--output`.
fn check_and_write(
    a: &GravityArgs,
    bodies: &[warpkit::device::bh::Body],
    p: &Params,
    acc: &[warpkit::device::bh::Accel],
    origin: &[u32],
) -> Result<()> {
    let n = bodies.len();
    if let Some(step) = n.checked_div(a.check) {
        let idx: Vec<usize> = (0..n).step_by(step.max(1)).collect();
        let reference = warpkit::bh::cpu::brute_force_f64(bodies, &idx, p);
        let picked: Vec<_> = idx.iter().map(|&i| acc[i]).collect();
        let mut e = warpkit::bh::relative_errors(&picked, &reference);
        e.sort_by(f64::total_cmp);
        let mean = e.iter().sum::<f64>() / e.len() as f64;
        println!(
            "relative error vs float64 direct summation on {} bodies: mean {mean:.3e}, median {:.3e}, p99 {:.3e}, max {:.3e}",
            e.len(),
            e[e.len() / 2],
            e[e.len() * 99 / 100],
            e[e.len() - 1]
        );
    }
    if let Some(path) = &a.output {
        let mut out = vec![Default::default(); n];
        for (k, &o) in origin.iter().enumerate() {
            out[o as usize] = acc[k];
        }
        warpkit::bh::npy::write_accels(path, &out)?;
        println!("accelerations written to {}", path.display());
    }
    Ok(())
}

/// GPUs 0..k−1 (`k` = 0: every visible GPU) for `--gpus`.
pub(crate) fn open_gpus(k: usize) -> Result<Vec<std::sync::Arc<warpkit::runtime::Gpu>>> {
    let visible = warpkit::runtime::probe::driver()
        .context("--gpus needs a CUDA driver")?
        .device_count;
    let k = if k == 0 { visible } else { k };
    if k == 0 {
        bail!("--gpus: the driver sees no GPU");
    }
    if k > visible {
        bail!(
            "--gpus {k}: only {visible} GPU(s) visible (CUDA_VISIBLE_DEVICES); for K ranks on \
             one GPU use --ranks {k}"
        );
    }
    (0..k)
        .map(|i| {
            warpkit::runtime::Gpu::new(i)
                .map(std::sync::Arc::new)
                .with_context(|| format!("opening GPU {i}"))
        })
        .collect()
}

/// `gravity --ranks K` / `--gpus K`: the multi-rank pipeline, timed, with its communication.
struct Multi<'a> {
    ranks: usize,
    gpus: Option<&'a [std::sync::Arc<warpkit::runtime::Gpu>]>,
    backend: &'a Backend,
    repeats: usize,
    quadrupole: bool,
    what: &'a str,
}

impl Multi<'_> {
    fn run(
        &self,
        bodies: &[warpkit::device::bh::Body],
        p: &Params,
    ) -> Result<Vec<warpkit::device::bh::Accel>> {
        use warpkit::multi::{Place, VirtualRanks};
        let refs: Vec<&warpkit::runtime::Gpu> = self
            .gpus
            .map_or(Vec::new(), |gs| gs.iter().map(|g| &**g).collect());
        let (k, place, on) = match (self.gpus, self.backend.gpu()) {
            (Some(gs), _) => {
                let names: Vec<String> = gs.iter().map(|g| g.info().name.clone()).collect();
                (
                    gs.len(),
                    Place::Gpus(&refs),
                    format!("{} GPUs over NCCL ({})", gs.len(), names.join(", ")),
                )
            }
            (None, Some(g)) => (
                self.ranks,
                Place::Gpu(g),
                format!("{} virtual ranks on {}", self.ranks, g.info().name),
            ),
            (None, None) => (
                self.ranks,
                Place::Cpu,
                format!(
                    "{} virtual ranks on the CPU ({} threads)",
                    self.ranks,
                    rayon::current_num_threads()
                ),
            ),
        };
        let vr = VirtualRanks {
            k,
            params: *p,
            quadrupole: self.quadrupole,
        };
        let n = bodies.len();
        // One warm-up on the GPU (module functions, allocations), then the timed repeats.
        if self.backend.is_gpu() {
            vr.gravity_on(place, bodies)?;
        }
        let mut runs = Vec::with_capacity(self.repeats);
        for _ in 0..self.repeats {
            let t = std::time::Instant::now();
            let g = vr.gravity_on(place, bodies)?;
            runs.push((t.elapsed().as_secs_f64() * 1e3, g));
        }
        let mut wall: Vec<f64> = runs.iter().map(|r| r.0).collect();
        wall.sort_by(f64::total_cmp);
        let (_, g) = runs.pop().expect("at least one repeat");
        let s = &g.stats;
        println!(
            "Barnes–Hut over {on} ({}, N = {n}, θ = {}, ε = {}, {}; median of {})",
            self.what,
            p.theta,
            p.eps,
            if self.quadrupole {
                "quadrupoles"
            } else {
                "monopoles"
            },
            wall.len()
        );
        let device = if self.backend.is_gpu() {
            format!(
                " (of which GPU walk {:.2} ms: upload, group kernel, download)",
                s.ms_device
            )
        } else {
            String::new()
        };
        println!(
            "wall {:.1} ms per evaluation (median); last evaluation, slowest rank: exchange {:.2} \
             ms, compute {:.2} ms{device}",
            wall[wall.len() / 2],
            s.ms_exchange,
            s.ms_compute,
        );
        println!(
            "communication per step (all ranks, bytes sent to other ranks): decomposition {} B, \
             migration {} B, top tree {} B, LET {} B, total {} B",
            s.bytes_decomposition,
            s.bytes_migration,
            s.bytes_top,
            s.bytes_let,
            s.bytes()
        );
        println!(
            "bodies per rank {:?}, migrated {}, interactions/body {:.0}, work imbalance {:.3}",
            s.counts,
            s.migrated,
            s.interactions as f64 / n as f64,
            s.imbalance
        );
        println!(
            "| rank | items | top cells | LET nodes in | top B | LET B | exchange ms | GPU walk ms |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
        for (r, st) in g.per_rank.iter().enumerate() {
            println!(
                "| {r} | {} | {} | {} | {} | {} | {:.2} | {:.2} |",
                st.items,
                st.top_cells,
                st.imported,
                st.top_bytes,
                st.let_bytes,
                st.ms_exchange,
                st.ms_device
            );
        }
        Ok(g.acc)
    }
}

/// The gravity stage's counted rate, or what is known of it for the vote kernel.
pub(crate) fn print_rate(
    rate: Option<&warpkit::bh::rate::Rate>,
    n: usize,
    gravity_ms: f64,
    gpu: bool,
) {
    use warpkit::bh::rate::{FLOPS_MONOPOLE, FLOPS_QUADRUPOLE};
    let Some(r) = rate else {
        println!(
            "gravity rate: {:.3e} bodies/s; the vote kernel counts no interactions, so its \
             interactions/s and TFLOP/s are not known (the group kernels count them)",
            n as f64 / (gravity_ms * 1e-3)
        );
        return;
    };
    let how = match (r.quadrupole_share > 0.0, r.sampled_groups) {
        (false, _) => String::new(),
        (true, 0) => format!("; {:.1}% with quadrupoles", 100.0 * r.quadrupole_share),
        (true, k) => format!(
            "; {:.1}% with quadrupoles, from the walks of {k} groups replayed on the host",
            100.0 * r.quadrupole_share
        ),
    };
    println!(
        "gravity rate: {:.3e} interactions/s (counted {}{how}), {} TFLOP/s counted \
         ({FLOPS_MONOPOLE} flops per body–body or body–monopole, {FLOPS_QUADRUPOLE} per \
         body–quadrupole){}",
        r.per_second(gravity_ms),
        if gpu {
            "by the kernel"
        } else {
            "by the CPU twin's walks"
        },
        warpkit::bh::rate::fmt_tflops(r.tflops(gravity_ms)),
        if gpu { "" } else { " — the CPU twin's rate" },
    );
}
