//! `yukawa`: the Yukawa force on a Plummer sphere through warpkit's tree, on the GPU when one is
//! usable (else the CPU twin), and its error against float64 direct summation.
//!
//! ```text
//! cargo run --release -p warpkit-example-yukawa -- [--n N] [--theta T] [--lambda L] [--eps E]
//!     [--seed S] [--backend auto|gpu|cpu] [--ptx-out FILE]
//! ```
//! `--ptx-out FILE` writes the embedded PTX (for ptxas, cuobjdump) and exits.

use std::process::ExitCode;
use warpkit::backend::{Backend, BackendChoice, select};
use warpkit::bh::{relative_errors, scene};
use warpkit::device::bh::Accel;
use warpkit_example_yukawa::{Params, cpu, gpu};

/// Bodies the float64 reference is computed for (all of them when fewer).
const SAMPLE: usize = 2048;

struct Args {
    n: Option<usize>,
    seed: u64,
    p: Params,
    backend: BackendChoice,
    ptx_out: Option<String>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        n: None,
        seed: 1,
        p: Params::default(),
        backend: BackendChoice::Auto,
        ptx_out: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        fn num<T: std::str::FromStr>(flag: &str, v: String) -> Result<T, String> {
            v.parse()
                .map_err(|_| format!("{flag}: `{v}` is not a number"))
        }
        match flag.as_str() {
            "--n" => a.n = Some(num(&flag, value()?)?),
            "--theta" => a.p.theta = num(&flag, value()?)?,
            "--lambda" => a.p.lambda = num(&flag, value()?)?,
            "--eps" => a.p.eps = num(&flag, value()?)?,
            "--seed" => a.seed = num(&flag, value()?)?,
            "--ptx-out" => a.ptx_out = Some(value()?),
            "--backend" => {
                a.backend = match value()?.as_str() {
                    "auto" => BackendChoice::Auto,
                    "gpu" => BackendChoice::Gpu,
                    "cpu" => BackendChoice::Cpu,
                    v => return Err(format!("--backend: `{v}` is not auto, gpu or cpu")),
                }
            }
            "-h" | "--help" => {
                return Err(
                    "usage: yukawa [--n N] [--theta T] [--lambda L] [--eps E] [--seed S] \
                            [--backend auto|gpu|cpu] [--ptx-out FILE]"
                        .into(),
                );
            }
            _ => return Err(format!("unknown argument `{flag}` (try --help)")),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let a = parse()?;
    if let Some(path) = a.ptx_out {
        std::fs::write(&path, warpkit_example_yukawa::PTX)?;
        println!("wrote {path} ({})", warpkit_example_yukawa::PTX_ARCH);
        return Ok(());
    }
    let (backend, notice) = select(a.backend)?;
    if let Some(msg) = notice {
        eprintln!("{msg}");
    }
    let n = a.n.unwrap_or(match backend {
        Backend::Gpu(_) => 1 << 20,
        Backend::Cpu => 1 << 13,
    });
    let p = a.p;
    let bodies = scene::plummer(n, a.seed);
    warpkit_example_yukawa::check(&bodies, &p)?;
    println!(
        "Yukawa on a Plummer sphere: N = {n}, θ = {}, ε = {}, λ = {}, backend {}",
        p.theta,
        p.eps,
        p.lambda,
        backend.name()
    );
    let (tree_acc, direct_acc) = match &backend {
        Backend::Gpu(g) => {
            let t = std::time::Instant::now();
            let y = gpu::Yukawa::new(g)?;
            println!(
                "loaded the example's PTX module in {:.0} ms",
                t.elapsed().as_secs_f64() * 1e3
            );
            let run = y.tree_walk(g, &bodies, &p)?;
            println!(
                "GPU tree (warpkit's kernels) {:.3} ms, yukawa_group {:.3} ms",
                run.tree_ms, run.force_ms
            );
            let (direct, ms) = y.direct(g, &bodies, &p)?;
            println!("GPU yukawa_direct {ms:.3} ms");
            (run.acc, direct)
        }
        Backend::Cpu => {
            let t = std::time::Instant::now();
            let tree = cpu::build_tree(&bodies);
            let acc = cpu::tree_walk(&bodies, &tree, &p);
            println!(
                "CPU tree and walk {:.1} ms",
                t.elapsed().as_secs_f64() * 1e3
            );
            // The f32 direct sum is O(N²): only up to the size where it takes seconds.
            let direct = if n <= 1 << 15 {
                cpu::direct(&bodies, &p)
            } else {
                Vec::new()
            };
            (acc, direct)
        }
    };
    // Every (N / SAMPLE)-th body against the float64 direct sum.
    let step = n.div_ceil(SAMPLE);
    let targets: Vec<usize> = (0..n).step_by(step).collect();
    let reference = cpu::direct_f64(&bodies, &targets, &p);
    let pick = |acc: &[Accel]| targets.iter().map(|&i| acc[i]).collect::<Vec<_>>();
    let report = |what: &str, acc: &[Accel]| {
        let mut e = relative_errors(&pick(acc), &reference);
        e.sort_by(f64::total_cmp);
        println!(
            "{what}: relative error against float64 direct sum over {} bodies: median {:.2e}, \
             99% {:.2e}, max {:.2e}",
            e.len(),
            e[e.len() / 2],
            e[e.len() * 99 / 100],
            e[e.len() - 1]
        );
    };
    report("tree walk", &tree_acc);
    if !direct_acc.is_empty() {
        report("direct f32", &direct_acc);
    }
    Ok(())
}
