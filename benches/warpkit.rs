//! Criterion benches (`cargo bench --bench warpkit`). Group `bh`: every Barnes–Hut pipeline stage
//! on the CPU twin (bounding box, build, summarize, sort, gravity) and, where a CUDA GPU opens, on the GPU (each stage's CUDA-event time inside one
//! whole evaluation, both gravity kernels, the brute-force kernel). Group `fem`: the CPU assembly (f64, f32)
//! and, where a CUDA GPU opens, every GPU strategy in f32 and the fastest ones in f64, timed by
//! CUDA events around one whole assembly (zeroing and every colour's launch). Without a GPU the
//! GPU benches are skipped with a note.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use std::time::Duration;
use warpkit::fem::gpu::{GpuMesh, GpuReal, Strategy};
use warpkit::fem::{Material, assemble, colour, csr, mesh};
use warpkit::runtime::Gpu;

const STEEL: Material = Material {
    young: 210e9,
    poisson: 0.3,
};

/// Mesh cells of the CPU benches (13,824 elements) and of the GPU benches (262,144 elements,
/// the size the H200 numbers in the README quote).
const CPU_CELLS: [usize; 3] = [24, 24, 24];
const GPU_CELLS: [usize; 3] = [64, 64, 64];

fn fem(c: &mut Criterion) {
    let mut g = c.benchmark_group("fem");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    let m = mesh::cantilever([1.0, 1.0, 1.0], CPU_CELLS).unwrap();
    let col = colour::greedy(&m);
    let p = csr::Pattern::new(&m).unwrap();
    g.bench_function("cpu_assembly_f64", |b| {
        b.iter(|| assemble::cpu::<f64>(&m, &STEEL, &col, &p).unwrap())
    });
    g.bench_function("cpu_assembly_f32", |b| {
        b.iter(|| assemble::cpu::<f32>(&m, &STEEL, &col, &p).unwrap())
    });
    match Gpu::new(0) {
        Ok(gpu) => {
            let m = mesh::cantilever([1.0, 1.0, 1.0], GPU_CELLS).unwrap();
            let col = colour::greedy(&m);
            let p = csr::Pattern::new(&m).unwrap();
            gpu_strategies::<f32>(&mut g, &gpu, &m, &col, &p, &Strategy::ALL);
            let fast = [
                Strategy::Warp4,
                Strategy::Ppni4Blocks,
                Strategy::Ppni8Blocks,
                Strategy::Ppni8BlocksAtomic,
            ];
            gpu_strategies::<f64>(&mut g, &gpu, &m, &col, &p, &fast);
        }
        Err(e) => eprintln!("fem: GPU benches skipped ({e})"),
    }
    g.finish();
}

fn gpu_strategies<T: GpuReal>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    gpu: &Gpu,
    m: &warpkit::fem::Mesh,
    col: &colour::Colouring,
    p: &csr::Pattern,
    strategies: &[Strategy],
) {
    let dm = GpuMesh::<T>::upload(gpu, m, col, p).unwrap();
    let mut values = gpu.alloc_zeros::<T>(p.nnz()).unwrap();
    let ty = if T::DOUBLE { "f64" } else { "f32" };
    for &s in strategies {
        dm.assemble(gpu, s, &STEEL, &mut values).unwrap(); // warm-up (and lazy buffers)
        g.bench_function(format!("gpu_{}_{ty}", s.name()), |b| {
            b.iter_custom(|iters| {
                let ms: f64 = (0..iters)
                    .map(|_| dm.assemble_timed(gpu, s, &STEEL, &mut values).unwrap())
                    .sum();
                Duration::from_secs_f64(ms * 1e-3)
            })
        });
    }
}

/// Reads one stage's time out of a GPU evaluation.
type StageFn = fn(&warpkit::bh::gpu::StageTimes) -> f64;

/// Bodies of the CPU benches (Plummer, seeded) and of the GPU benches.
const BH_CPU_N: usize = 1 << 15;
const BH_GPU_N: usize = 1 << 20;

fn bh(c: &mut Criterion) {
    use warpkit::bh::gpu::{Options, Traversal};
    use warpkit::bh::{Params, cpu, gpu as bhgpu, scene};
    let mut g = c.benchmark_group("bh");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    let p = Params::default();
    let bodies = scene::plummer(BH_CPU_N, 1);
    // The CPU twin's stages one by one, each on the previous stage's output.
    let layout = warpkit::device::bh::Layout::dense(warpkit::bh::initial_cells(BH_CPU_N) as u32);
    g.bench_function("cpu_bounding_box", |b| {
        b.iter(|| cpu::bounding_box(&bodies, layout))
    });
    let header = cpu::bounding_box(&bodies, layout);
    g.bench_function("cpu_build", |b| {
        b.iter(|| cpu::insert(&bodies, layout, header).unwrap())
    });
    let inserted = cpu::insert(&bodies, layout, header).unwrap();
    g.bench_function("cpu_summarize", |b| {
        b.iter_batched(
            || inserted.clone(),
            |mut t| cpu::summarize(&bodies, &mut t),
            BatchSize::LargeInput,
        )
    });
    let mut summarized = inserted.clone();
    cpu::summarize(&bodies, &mut summarized);
    g.bench_function("cpu_sort", |b| {
        b.iter_batched(
            || summarized.clone(),
            |mut t| cpu::sort(&mut t),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("cpu_tree", |b| b.iter(|| cpu::build_tree(&bodies)));
    let tree = cpu::build_tree(&bodies);
    g.bench_function("cpu_gravity_vote", |b| {
        b.iter(|| cpu::gravity(&bodies, &tree, &tree.sort, &p))
    });
    g.bench_function("cpu_gravity_group", |b| {
        b.iter(|| cpu::gravity_group(&bodies, &tree, &p, false, None))
    });
    match Gpu::new(0) {
        Ok(gpu) => {
            let mut bodies = scene::plummer(BH_GPU_N, 1);
            scene::shuffle(&mut bodies, 1);
            let stages: [(&str, StageFn); 6] = [
                ("bounding_box", |t| t.bounding_box),
                ("build", |t| t.build),
                ("summarize", |t| t.summarize),
                ("sort", |t| t.sort),
                ("tree_total", |t| t.tree()),
                ("gravity", |t| t.gravity),
            ];
            for traversal in [Traversal::Vote, Traversal::Group, Traversal::Group2] {
                let o = Options {
                    sorted: true,
                    traversal,
                    ..Default::default()
                };
                bhgpu::gravity_with(&gpu, &bodies, &p, &o).unwrap(); // warm-up
                for (name, stage) in stages {
                    if traversal != Traversal::Vote && name != "gravity" {
                        continue; // the tree stages do not depend on the kernel
                    }
                    g.bench_function(format!("gpu_{name}_{traversal:?}").to_lowercase(), |b| {
                        b.iter_custom(|iters| {
                            let ms: f64 = (0..iters)
                                .map(|_| {
                                    stage(
                                        &bhgpu::gravity_with(&gpu, &bodies, &p, &o).unwrap().times,
                                    )
                                })
                                .sum();
                            Duration::from_secs_f64(ms * 1e-3)
                        })
                    });
                }
            }
            let small = &bodies[..1 << 18];
            bhgpu::brute_force(&gpu, small, &p).unwrap();
            g.bench_function("gpu_brute_force_2^18", |b| {
                b.iter_custom(|iters| {
                    let ms: f64 = (0..iters)
                        .map(|_| bhgpu::brute_force(&gpu, small, &p).unwrap().1)
                        .sum();
                    Duration::from_secs_f64(ms * 1e-3)
                })
            });
        }
        Err(e) => eprintln!("bh: GPU benches skipped ({e})"),
    }
    g.finish();
}

criterion_group!(benches, bh, fem);
criterion_main!(benches);
