//! Every GPU assembly strategy, in f32 and f64, against the float64 CPU assembly (the paper's
//! targets: relative Frobenius error below 1e-5 in f32 and 1e-12 in f64). The values buffer is
//! poisoned (0xFF bytes) with a tail past the pattern's end: the launcher zeroes only the pattern,
//! so a stray write into the tail or a NaN anywhere fails; after each assembly every input buffer
//! is downloaded and compared with what was uploaded. The per-strategy tests run each strategy in
//! a child process (`WARPKIT_FEM_STRATEGY`, see [`each_strategy`]): a kernel fault spoils only its
//! own process's CUDA context, so one run names every failing strategy.

mod common;

use common::gpu;
use warpkit::device::rng;
use warpkit::fem::gpu::{DeviceMaterials, GpuMesh, GpuReal, Strategy};
use warpkit::fem::{
    ElementMaterials, FemError, Formulation, Material, Mesh, assemble, colour, csr, mesh, validate,
};
use warpkit::runtime::Gpu;

const STEEL: Material = Material {
    young: 210e9,
    poisson: 0.3,
};

/// Entries past the pattern that must stay poisoned.
const GUARD: usize = 64;

/// A grid with interior nodes moved by up to ±20% of a cell, and elements in shuffled order, so
/// no kernel can profit from regular geometry or element order.
fn irregular(cells: [usize; 3], seed: u64) -> Mesh {
    let size = [3.0, 1.0, 0.5];
    let mut m = mesh::cantilever(size, cells).unwrap();
    for (n, p) in m.nodes.iter_mut().enumerate() {
        for d in 0..3 {
            let h = size[d] / cells[d] as f64;
            if p[d] > 1e-12 && p[d] < size[d] - 1e-12 {
                p[d] += 0.4 * h * (rng::uniform_f32(seed, (3 * n + d) as u64) as f64 - 0.5);
            }
        }
    }
    let ne = m.elements.len();
    for i in (1..ne).rev() {
        let j = (rng::draw_u64(seed + 1, i as u64) % (i as u64 + 1)) as usize;
        m.elements.swap(i, j);
    }
    m
}

/// Aluminium: a second material close enough to steel in scale that a wrong material index
/// changes the matrix by far more than the tolerance.
const ALUMINIUM: Material = Material {
    young: 70e9,
    poisson: 0.33,
};

/// One element, a few warps' worth, and several blocks with partial last blocks.
const SIZES: [[usize; 3]; 3] = [[1, 1, 1], [7, 5, 3], [24, 10, 6]];

/// The environment variable naming the one strategy (its command-line name) that a test process
/// runs: [`each_strategy`] sets it for its child processes; set it by hand to run one strategy
/// (`WARPKIT_FEM_STRATEGY=warp8-jshared gpu_fem every_strategy_matches_cpu_in_f64 --exact
/// --include-ignored`, e.g. under compute-sanitizer).
const ONLY: &str = "WARPKIT_FEM_STRATEGY";

/// Runs `cases(strategy)` (which returns its failures) for each of `strategies`, each in a child
/// process of this test executable running test `test` with [`ONLY`] set: a kernel fault leaves
/// the CUDA context unusable for the rest of its process, so isolated, it costs only its own
/// strategy, and one run names every strategy that fails. The children's output is echoed with
/// the strategy's name in front. In a child, runs its one strategy and panics with every failure.
fn each_strategy(test: &str, strategies: &[Strategy], cases: impl Fn(Strategy) -> Vec<String>) {
    if let Ok(name) = std::env::var(ONLY) {
        let s = Strategy::parse(&name).unwrap_or_else(|| panic!("{ONLY}={name}: no such strategy"));
        assert!(
            strategies.contains(&s),
            "{ONLY}={name}: not one of {test}'s strategies"
        );
        let failures = cases(s);
        assert!(
            failures.is_empty(),
            "{name}: {} case(s) failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
        return;
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    let mut failed = Vec::new();
    for &s in strategies {
        let out = std::process::Command::new(&exe)
            .args([test, "--exact", "--include-ignored", "--test-threads", "1"])
            .arg("--nocapture")
            .env(ONLY, s.name())
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap_or_else(|e| panic!("running {} for {}: {e}", exe.display(), s.name()));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        for line in stdout.lines().chain(stderr.lines()) {
            if !line.trim().is_empty() {
                eprintln!("[{}] {line}", s.name());
            }
        }
        if !out.status.success() {
            failed.push(format!("{} ({})", s.name(), out.status));
        } else if !stdout.contains("1 passed") {
            failed.push(format!("{} (the child ran no test)", s.name()));
        }
    }
    assert!(
        failed.is_empty(),
        "{test}: {} of {} strategies failed: {}",
        failed.len(),
        strategies.len(),
        failed.join(", ")
    );
}

/// [`check_case`] of one material over [`SIZES`]: the failures.
fn check<T: GpuReal + std::fmt::Debug>(strategy: Strategy, tol: f64) -> Vec<String> {
    SIZES
        .iter()
        .filter_map(|&cells| {
            check_case::<T>(strategy, cells, Formulation::Standard, |_| STEEL, tol).err()
        })
        .collect()
}

/// Assembles the irregular mesh of `cells` with `strategy` in precision `T` and `formulation`,
/// element materials by centroid (`material(centroid)`, which on the shuffled mesh gives an
/// irregular per-element index), twice into the same poisoned buffer, and compares each with the
/// CPU's f64 assembly. After each assembly, checks that no input buffer (coordinates,
/// connectivity, positions, block table, colour lists, material table and index) changed, that
/// the guard entries past the pattern are still poisoned and that every value is finite.
/// Every failure names the strategy, formulation, precision, mesh and materials.
fn check_case<T: GpuReal + std::fmt::Debug>(
    strategy: Strategy,
    cells: [usize; 3],
    formulation: Formulation,
    material: impl Fn([f64; 3]) -> Material,
    tol: f64,
) -> Result<(), String> {
    let m = irregular(cells, 7 + cells[0] as u64);
    check_mesh::<T>(
        strategy,
        &m,
        &format!("{cells:?}"),
        formulation,
        material,
        tol,
    )
}

/// [`check_case`] on a given mesh, named `name` in failures.
fn check_mesh<T: GpuReal + std::fmt::Debug>(
    strategy: Strategy,
    m: &Mesh,
    name: &str,
    formulation: Formulation,
    material: impl Fn([f64; 3]) -> Material,
    tol: f64,
) -> Result<(), String> {
    let m = m.clone();
    let mut materials = ElementMaterials {
        table: Vec::new(),
        index: Vec::new(),
    };
    for e in 0..m.elements.len() {
        let x = m.element_coords(e);
        let centre: [f64; 3] = std::array::from_fn(|d| x.iter().map(|p| p[d]).sum::<f64>() / 8.0);
        let mat = material(centre);
        let i = match materials.table.iter().position(|t| *t == mat) {
            Some(i) => i,
            None => {
                materials.table.push(mat);
                materials.table.len() - 1
            }
        };
        materials.index.push(i as u32);
    }
    let what = format!(
        "{} {formulation:?} {} on {name}, {} material(s)",
        strategy.name(),
        std::any::type_name::<T>(),
        materials.table.len()
    );
    let fail = |stage: &str, e: &dyn std::fmt::Display| format!("{what}: {stage}: {e}");
    validate(&m, &materials.table[0]).map_err(|e| fail("validate", &e))?;
    let c = colour::greedy(&m);
    colour::verify(&m, &c).map_err(|e| fail("colouring", &e))?;
    let p = csr::Pattern::new(&m).map_err(|e| fail("pattern", &e))?;
    let reference = assemble::cpu_materials::<f64>(&m, &materials, formulation, &c, &p)
        .map_err(|e| fail("CPU assembly", &e))?;
    let gpu = Gpu::new(0).map_err(|e| fail("opening the GPU", &e))?;
    let dm = GpuMesh::<T>::upload(&gpu, &m, &c, &p).map_err(|e| fail("mesh upload", &e))?;
    let dmat =
        DeviceMaterials::<T>::upload(&gpu, &materials).map_err(|e| fail("materials upload", &e))?;
    let mut values = gpu
        .alloc_poisoned::<T>(p.nnz() + GUARD)
        .map_err(|e| fail("allocating the values", &e))?;
    // Assembling twice into the same buffer must give the same matrix (the launcher zeroes).
    for pass in ["first", "second"] {
        let stage = format!("{pass} assembly");
        dm.assemble_with(&gpu, strategy, formulation, &dmat, &mut values)
            .map_err(|e| fail(&stage, &e))?;
        let got = gpu.download(&values).map_err(|e| fail(&stage, &e))?;
        let mut overwritten = dm
            .check_inputs(&gpu, &m, &c, &p)
            .map_err(|e| fail("downloading the inputs", &e))?;
        overwritten.extend(
            dmat.check(&gpu, &materials)
                .map_err(|e| fail("downloading the materials", &e))?,
        );
        if !overwritten.is_empty() {
            return Err(format!(
                "{what}: {stage} overwrote its inputs:\n    {}",
                overwritten.join("\n    ")
            ));
        }
        if let Some((k, v)) = got[p.nnz()..]
            .iter()
            .enumerate()
            .find(|(_, v)| !v.to_f64().is_nan())
        {
            return Err(format!(
                "{what}: {stage}: guard entry {k} overwritten with {}",
                v.to_f64()
            ));
        }
        let got = &got[..p.nnz()];
        if let Some(i) = got.iter().position(|v| !v.to_f64().is_finite()) {
            return Err(format!(
                "{what}: {stage}: value {i} of {} is {}",
                p.nnz(),
                got[i].to_f64()
            ));
        }
        let rel = assemble::relative_frobenius(got, &reference);
        eprintln!("{what}: {stage}: relative Frobenius error {rel:.3e}");
        if rel.is_nan() || rel >= tol {
            return Err(format!(
                "{what}: {stage}: relative Frobenius error {rel:e} ≥ {tol:e}"
            ));
        }
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_strategy_matches_cpu_in_f32() {
    each_strategy("every_strategy_matches_cpu_in_f32", &Strategy::ALL, |s| {
        check::<f32>(s, 1e-5)
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_strategy_matches_cpu_in_f64() {
    each_strategy("every_strategy_matches_cpu_in_f64", &Strategy::ALL, |s| {
        check::<f64>(s, 1e-12)
    });
}

/// Per-element materials on the GPU. Two materials split the (shuffled, irregular)
/// mesh at x = 1.3, so the index is irregular in element order; every strategy must read each
/// element's own (λ, μ).
#[test]
#[ignore = "needs a CUDA GPU"]
fn two_materials_match_cpu() {
    let split = |c: [f64; 3]| if c[0] < 1.3 { STEEL } else { ALUMINIUM };
    each_strategy("two_materials_match_cpu", &Strategy::ALL, |s| {
        let mut failures = Vec::new();
        for cells in SIZES {
            failures.extend(check_case::<f32>(s, cells, Formulation::Standard, split, 1e-5).err());
            failures.extend(check_case::<f64>(s, cells, Formulation::Standard, split, 1e-12).err());
        }
        failures
    });
}

/// A mesh whose axis nodes are shared by far more elements than a grid's: `sides` kite-shaped
/// hexahedra around a vertical axis (a regular polygon cut into kites from its centre), in
/// `layers` layers. With 12 sides a middle axis node has 24 elements and 75 neighbour nodes,
/// past what the node-row kernels hold in shared memory (32), so their global-memory path runs.
fn star(sides: usize, layers: usize) -> Mesh {
    let per_layer = 2 * sides + 1; // centre, polygon vertices, edge midpoints
    let mut nodes = Vec::new();
    for l in 0..=layers {
        let z = 0.3 * l as f64 + 0.02 * (l % 2) as f64;
        nodes.push([0.0, 0.0, z]);
        for k in 0..sides {
            let t = std::f64::consts::TAU * k as f64 / sides as f64;
            nodes.push([t.cos(), t.sin(), z]);
        }
        for k in 0..sides {
            let t = std::f64::consts::TAU * (k as f64 + 0.5) / sides as f64;
            let r = (std::f64::consts::PI / sides as f64).cos();
            nodes.push([r * t.cos(), r * t.sin(), z]);
        }
    }
    let id = |l: usize, i: usize| (l * per_layer + i) as u32;
    let (vertex, mid) = (|k: usize| 1 + k % sides, |k: usize| 1 + sides + k % sides);
    let mut elements = Vec::new();
    for l in 0..layers {
        for k in 0..sides {
            // Counter-clockwise seen from +z: centre, midpoint before vertex k, vertex k,
            // midpoint after.
            let q = [0, mid(k + sides - 1), vertex(k), mid(k)];
            elements.push([
                id(l, q[0]),
                id(l, q[1]),
                id(l, q[2]),
                id(l, q[3]),
                id(l + 1, q[0]),
                id(l + 1, q[1]),
                id(l + 1, q[2]),
                id(l + 1, q[3]),
            ]);
        }
    }
    Mesh {
        nodes,
        elements,
        ..Default::default()
    }
}

/// The star meshes are valid (no inverted element) and reach the node-row kernels' global path:
/// some node has more than 32 neighbour nodes.
#[test]
fn star_meshes_are_valid_and_exceed_the_shared_rows() {
    for (sides, layers) in [(6, 2), (12, 3)] {
        let m = star(sides, layers);
        validate(&m, &STEEL).unwrap();
        let p = csr::Pattern::new(&m).unwrap();
        let widest = (0..m.nodes.len())
            .map(|n| (p.row_ptr[3 * n + 1] - p.row_ptr[3 * n]) / 3)
            .max()
            .unwrap();
        assert!(
            widest > 32,
            "star({sides}, {layers}): widest row has {widest} nodes"
        );
    }
}

/// Every strategy on meshes with high-valence nodes (the star meshes, two materials).
#[test]
#[ignore = "needs a CUDA GPU"]
fn high_valence_nodes_match_cpu() {
    let split = |c: [f64; 3]| if c[0] < 0.1 { STEEL } else { ALUMINIUM };
    each_strategy("high_valence_nodes_match_cpu", &Strategy::ALL, |s| {
        let mut failures = Vec::new();
        for (sides, layers) in [(6, 2), (12, 3)] {
            let m = star(sides, layers);
            let name = format!("star({sides}, {layers})");
            let st = Formulation::Standard;
            failures.extend(check_mesh::<f32>(s, &m, &name, st, split, 1e-5).err());
            failures.extend(check_mesh::<f64>(s, &m, &name, st, split, 1e-12).err());
        }
        failures
    });
}

/// The B-bar kernels against the CPU's B̄ᵀ D B̄ (two materials, and one nearly
/// incompressible, where the volumetric term dominates).
#[test]
#[ignore = "needs a CUDA GPU"]
fn bbar_matches_cpu() {
    let split = |c: [f64; 3]| if c[0] < 1.3 { STEEL } else { ALUMINIUM };
    let rubber = |_: [f64; 3]| Material {
        young: 1e7,
        poisson: 0.4999,
    };
    each_strategy("bbar_matches_cpu", &Strategy::BBAR, |s| {
        let mut failures = Vec::new();
        for cells in SIZES {
            let bbar = Formulation::Bbar;
            failures.extend(check_case::<f32>(s, cells, bbar, split, 1e-5).err());
            failures.extend(check_case::<f64>(s, cells, bbar, split, 1e-12).err());
            failures.extend(check_case::<f32>(s, cells, bbar, rubber, 1e-5).err());
            failures.extend(check_case::<f64>(s, cells, bbar, rubber, 1e-12).err());
        }
        failures
    });
}

/// Strategies without a B-bar kernel refuse the B-bar formulation.
#[test]
#[ignore = "needs a CUDA GPU"]
fn strategies_without_bbar_refuse_it() {
    let gpu = gpu();
    let m = mesh::cantilever([1.0, 1.0, 1.0], [2, 2, 2]).unwrap();
    let c = colour::greedy(&m);
    let p = csr::Pattern::new(&m).unwrap();
    let dm = GpuMesh::<f32>::upload(&gpu, &m, &c, &p).unwrap();
    let dmat = DeviceMaterials::<f32>::uniform(&gpu, &STEEL).unwrap();
    let mut values = gpu.alloc_poisoned::<f32>(p.nnz()).unwrap();
    for s in Strategy::ALL.into_iter().filter(|s| !s.has_bbar()) {
        let err = dm
            .assemble_with(&gpu, s, Formulation::Bbar, &dmat, &mut values)
            .unwrap_err();
        assert!(matches!(err, FemError::NoBbarKernel(_)), "{s:?}: {err}");
    }
}

/// Timings of every strategy on one mid-sized mesh, printed (not asserted: timing is the
/// reproduction's business, this only shows the launchers scale past toy sizes).
#[test]
#[ignore = "needs a CUDA GPU"]
fn strategies_run_on_a_large_mesh() {
    let gpu = gpu();
    let m = mesh::cantilever([1.0, 1.0, 1.0], [64, 64, 64]).unwrap();
    let c = colour::greedy(&m);
    let p = csr::Pattern::new(&m).unwrap();
    let dm = GpuMesh::<f32>::upload(&gpu, &m, &c, &p).unwrap();
    let mut values = gpu.alloc_poisoned::<f32>(p.nnz()).unwrap();
    let mut first: Option<Vec<f32>> = None;
    for s in Strategy::ALL {
        dm.assemble(&gpu, s, &STEEL, &mut values).unwrap();
        let mut ms: Vec<f64> = (0..5)
            .map(|_| dm.assemble_timed(&gpu, s, &STEEL, &mut values).unwrap())
            .collect();
        ms.sort_by(f64::total_cmp);
        eprintln!("{s:?}: median {:.3} ms for {} DOF", ms[2], m.dofs());
        let got = gpu.download(&values).unwrap();
        match &first {
            None => first = Some(got),
            Some(f) => {
                let f64s: Vec<f64> = f.iter().map(|&v| v as f64).collect();
                let rel = assemble::relative_frobenius(&got, &f64s);
                assert!(
                    rel < 1e-5,
                    "{s:?} differs from {:?}: {rel:e}",
                    Strategy::ALL[0]
                );
            }
        }
    }
}

/// The target mesh: 128³ elements (6.4M DOF), f32. Prints every strategy's median
/// assembly time and its speedup over the thread-per-element baseline (not asserted), and checks
/// that all strategies agree with the baseline's matrix.
#[test]
#[ignore = "needs a CUDA GPU (and ~12 GB of GPU memory)"]
fn target_mesh_128_cubed() {
    let gpu = gpu();
    let m = mesh::cantilever([1.0, 1.0, 1.0], [128, 128, 128]).unwrap();
    let c = colour::greedy(&m);
    let p = csr::Pattern::new(&m).unwrap();
    let dm = GpuMesh::<f32>::upload(&gpu, &m, &c, &p).unwrap();
    let mut values = gpu.alloc_poisoned::<f32>(p.nnz()).unwrap();
    let mut baseline: Option<(f64, Vec<f64>)> = None;
    for s in Strategy::ALL {
        dm.assemble(&gpu, s, &STEEL, &mut values).unwrap();
        let mut ms: Vec<f64> = (0..7)
            .map(|_| dm.assemble_timed(&gpu, s, &STEEL, &mut values).unwrap())
            .collect();
        ms.sort_by(f64::total_cmp);
        let median = ms[3];
        let got = gpu.download(&values).unwrap();
        match &baseline {
            None => {
                eprintln!("{}: median {median:.3} ms for {} DOF", s.name(), m.dofs());
                baseline = Some((median, got.iter().map(|&v| v as f64).collect()));
            }
            Some((t0, reference)) => {
                let rel = assemble::relative_frobenius(&got, reference);
                eprintln!(
                    "{}: median {median:.3} ms, {:.2}× the baseline, rel. diff {rel:.1e}",
                    s.name(),
                    t0 / median
                );
                assert!(rel < 1e-5, "{s:?} differs from the baseline: {rel:e}");
            }
        }
    }
    // Float64 (what `warpkit fem` assembles in) for the candidates of its default strategy.
    drop(values);
    drop(dm);
    let dm = GpuMesh::<f64>::upload(&gpu, &m, &c, &p).unwrap();
    let mut values = gpu.alloc_poisoned::<f64>(p.nnz()).unwrap();
    let mut first: Option<Vec<f64>> = None;
    for s in [Strategy::Warp4, Strategy::Ppni8Blocks, Strategy::RowsRounds] {
        dm.assemble(&gpu, s, &STEEL, &mut values).unwrap();
        let mut ms: Vec<f64> = (0..7)
            .map(|_| dm.assemble_timed(&gpu, s, &STEEL, &mut values).unwrap())
            .collect();
        ms.sort_by(f64::total_cmp);
        let got = gpu.download(&values).unwrap();
        let rel = first
            .as_ref()
            .map_or(0.0, |f| assemble::relative_frobenius(&got, f));
        eprintln!(
            "{} f64: median {:.3} ms, rel. diff {rel:.1e}",
            s.name(),
            ms[3]
        );
        assert!(rel < 1e-12, "{s:?} f64 differs from warp4: {rel:e}");
        first.get_or_insert(got);
    }
}

/// The GPU's Jacobi-PCG against the CPU's on a clamped cantilever: same solution, about the same
/// iteration count; and the same errors for a run cut short.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_pcg_matches_cpu_pcg() {
    use warpkit::fem::{FemError, solve};
    let gpu = gpu();
    // The irregular mesh's box (its boundary faces stay planar).
    let size = [3.0, 1.0, 0.5];
    let m = irregular([16, 4, 4], 11);
    let c = colour::greedy(&m);
    let p = csr::Pattern::new(&m).unwrap();
    let mut k = assemble::cpu::<f64>(&m, &STEEL, &c, &p).unwrap();
    let tol = 1e-9;
    let clamped = solve::nodes_on_plane(&m, 0.0, tol);
    let mut b = solve::face_load(&m, size[0], tol, [0.0, 0.0, -1e6]).unwrap();
    solve::clamp(&p, &mut k, &mut b, &clamped);
    let (u_cpu, s_cpu) = solve::pcg(&p, &k, &b, 1e-10, 100_000).unwrap();
    let (u_gpu, s_gpu) = warpkit::fem::gpu::pcg(&gpu, &p, &k, &b, 1e-10, 100_000).unwrap();
    eprintln!("CPU {s_cpu:?}, GPU {s_gpu:?}");
    assert!(s_gpu.relative_residual <= 1e-10);
    let diff = assemble::relative_frobenius(&u_gpu, &u_cpu);
    assert!(diff < 1e-7, "GPU and CPU solutions differ by {diff:e}");
    let (a, g) = (s_cpu.iterations as f64, s_gpu.iterations as f64);
    assert!(
        (a - g).abs() <= 0.05 * a + 2.0,
        "iterations: CPU {a}, GPU {g}"
    );
    let err = warpkit::fem::gpu::pcg(&gpu, &p, &k, &b, 1e-10, 5).unwrap_err();
    assert!(
        matches!(err, FemError::NotConverged { iterations: 5, .. }),
        "{err}"
    );
    let zero = vec![0.0; b.len()];
    let (u0, s0) = warpkit::fem::gpu::pcg(&gpu, &p, &k, &zero, 1e-10, 10).unwrap();
    assert_eq!(s0.iterations, 0);
    assert!(u0.iter().all(|&v| v == 0.0));
}
