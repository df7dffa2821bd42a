//! `warpkit._warpkit`: the extension module behind the `warpkit` Python package. Thin: it checks
//! shapes, borrows NumPy's buffers (no copy where the layout allows), releases the GIL while
//! warpkit works, and turns every warpkit error into a Python `ValueError` (bad input) or
//! `RuntimeError` (the device).

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use warpkit::backend::{Backend, BackendChoice};
use warpkit::bh::gpu::{BhError, Traversal};
use warpkit::bh::{Options, Params};
use warpkit::device::bh::Body;

/// One backend per choice for the whole process: opening a CUDA context per call would cost more
/// than most calls.
fn backend(choice: &str) -> PyResult<Backend> {
    static CACHE: OnceLock<Mutex<HashMap<String, Backend>>> = OnceLock::new();
    let c = backend_choice(choice)?;
    let mut cache = CACHE
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(b) = cache.get(choice) {
        return Ok(b.clone());
    }
    let (b, _notice) =
        warpkit::backend::select(c).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    cache.insert(choice.to_string(), b.clone());
    Ok(b)
}

mod planet;

fn backend_choice(choice: &str) -> PyResult<BackendChoice> {
    match choice {
        "auto" => Ok(BackendChoice::Auto),
        "gpu" => Ok(BackendChoice::Gpu),
        "cpu" => Ok(BackendChoice::Cpu),
        other => Err(PyValueError::new_err(format!(
            "backend must be \"auto\", \"gpu\" or \"cpu\", not {other:?}"
        ))),
    }
}

/// The backend `"auto"` resolves to here: `"gpu"` or `"cpu"`.
#[pyfunction]
#[pyo3(signature = (backend_choice = "auto"))]
fn backend_name(backend_choice: &str) -> PyResult<&'static str> {
    Ok(backend(backend_choice)?.name())
}

fn traversal(name: &str) -> PyResult<Traversal> {
    match name {
        "vote" => Ok(Traversal::Vote),
        "group" => Ok(Traversal::Group),
        "group2" => Ok(Traversal::Group2),
        other => Err(PyValueError::new_err(format!(
            "traversal must be \"vote\", \"group\" or \"group2\", not {other:?}"
        ))),
    }
}

fn bh_error(e: BhError) -> PyErr {
    match e {
        BhError::Input(_) | BhError::Option(_) => PyValueError::new_err(e.to_string()),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// The (N, 4) float32 array as bodies: zero copy when NumPy's buffer is 16-byte aligned
/// (`Body`'s alignment), else one copy into `owned`.
fn body_view<'a>(
    bodies: &'a PyReadonlyArray2<'_, f32>,
    owned: &'a mut Vec<Body>,
) -> PyResult<&'a [Body]> {
    let shape = bodies.shape();
    if shape.len() != 2 || shape[1] != 4 {
        return Err(PyValueError::new_err(format!(
            "bodies must have shape (N, 4), got {shape:?}"
        )));
    }
    let flat = bodies
        .as_slice()
        .map_err(|_| PyValueError::new_err("bodies must be C-contiguous"))?;
    match bytemuck::try_cast_slice(flat) {
        Ok(v) => Ok(v),
        Err(_) => {
            *owned = flat
                .chunks_exact(4)
                .map(|c| Body {
                    x: c[0],
                    y: c[1],
                    z: c[2],
                    m: c[3],
                })
                .collect();
            Ok(owned)
        }
    }
}

/// An (N, 3) float32 array from flat rows.
fn rows3<'py>(py: Python<'py>, flat: Vec<f32>) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let n = flat.len() / 3;
    numpy::ndarray::Array2::from_shape_vec((n, 3), flat)
        .map(|a| a.into_pyarray(py))
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// With ε = 0, two bodies at one point exert an infinite force on each other (the trees'
/// centres of mass then give values like 1e15, not an error): refused, as the CLI does.
fn distinct(bodies: &[Body], eps: f32) -> PyResult<()> {
    match (eps == 0.0).then(|| warpkit::bh::coincident_pair(bodies)) {
        Some(Some((i, j))) => Err(PyValueError::new_err(
            warpkit::bh::InputError::Coincident(i, j).to_string(),
        )),
        _ => Ok(()),
    }
}

/// Accelerations of an (N, 4) float32 array of bodies (x, y, z, m): see `warpkit.gravity`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn gravity<'py>(
    py: Python<'py>,
    bodies: PyReadonlyArray2<'py, f32>,
    eps: f32,
    theta: f32,
    g: f32,
    quadrupole: bool,
    traversal_name: &str,
    backend_choice: &str,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let t = traversal(traversal_name)?;
    if quadrupole && t == Traversal::Vote {
        return Err(PyValueError::new_err(
            "quadrupole moments need a group traversal (\"group\" or \"group2\")",
        ));
    }
    let b = backend(backend_choice)?;
    let mut owned = Vec::new();
    let view = body_view(&bodies, &mut owned)?;
    distinct(view, eps)?;
    let p = Params { theta, eps, g };
    let o = Options {
        sorted: true,
        traversal: t,
        quadrupole,
        ..Default::default()
    };
    let n = view.len();
    let acc = py
        .detach(|| warpkit::bh::evaluate(&b, view, &p, &o))
        .map_err(bh_error)?
        .acc;
    debug_assert_eq!(acc.len(), n);
    rows3(py, acc.iter().flat_map(|a| [a.x, a.y, a.z]).collect())
}

/// Accelerations and potentials (`bh_gravity_group2_pot` or its CPU twin: monopoles, groups of
/// up to 64): see `warpkit.gravity(..., potential=True)`.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn gravity_potential<'py>(
    py: Python<'py>,
    bodies: PyReadonlyArray2<'py, f32>,
    eps: f32,
    theta: f32,
    g: f32,
    backend_choice: &str,
) -> PyResult<(Bound<'py, PyArray2<f32>>, Bound<'py, PyArray1<f32>>)> {
    let b = backend(backend_choice)?;
    let mut owned = Vec::new();
    let view = body_view(&bodies, &mut owned)?;
    distinct(view, eps)?;
    let p = Params { theta, eps, g };
    let (acc, pot) = py
        .detach(|| warpkit::bh::potential(&b, view, &p))
        .map_err(bh_error)?;
    Ok((
        rows3(py, acc.iter().flat_map(|a| [a.x, a.y, a.z]).collect())?,
        pot.into_pyarray(py),
    ))
}

/// One of `names`' values by name, or a `ValueError` listing them.
fn choose<T: Copy>(what: &str, name: &str, names: &[(&str, T)]) -> PyResult<T> {
    names
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, v)| v)
        .ok_or_else(|| {
            let all: Vec<_> = names.iter().map(|(n, _)| format!("{n:?}")).collect();
            PyValueError::new_err(format!(
                "{what} must be one of {}, not {name:?}",
                all.join(", ")
            ))
        })
}

fn sbh_error(e: warpkit::sbh::gpu::SbhGpuError) -> PyErr {
    match e {
        warpkit::sbh::gpu::SbhGpuError::Input(_) => PyValueError::new_err(e.to_string()),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// Sums at query points (the CLI's `warpkit sbh` methods): see `warpkit.sbh`. Returns the field
/// per query (the sum; for the smooth kernel its smooth distance) as float64.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn sbh<'py>(
    py: Python<'py>,
    sources: PyReadonlyArray2<'py, f32>,
    queries: PyReadonlyArray2<'py, f32>,
    dipoles: Option<PyReadonlyArray2<'py, f32>>,
    method: &str,
    kernel: &str,
    param: Option<f32>,
    samples: u32,
    beta: f32,
    levels: u32,
    seed: u64,
    coherent: bool,
    paper_allocation: bool,
    warps: &str,
    moments: &str,
    backend_choice: &str,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    use warpkit::device::sbh::{KIND_SMOOTH as SMOOTH, SbhParams};
    const MIN_NORMAL: f64 = f32::MIN_POSITIVE as f64;
    use warpkit::sbh::{self as s, Kernel, Moments, SbhTree, Sources, Summation, Warps};
    #[derive(Clone, Copy, PartialEq)]
    enum Method {
        Sbh,
        Bh,
        BhQuery,
        Direct,
    }
    let method = choose(
        "method",
        method,
        &[
            ("sbh", Method::Sbh),
            ("bh", Method::Bh),
            ("bh_query", Method::BhQuery),
            ("direct", Method::Direct),
        ],
    )?;
    let kernel = choose(
        "kernel",
        kernel,
        &[
            ("shifted", Kernel::Shifted),
            ("plummer", Kernel::Plummer),
            ("winding", Kernel::Winding),
            ("smooth", Kernel::Smooth),
        ],
    )?;
    let warps = choose(
        "warps",
        warps,
        &[("morton", Warps::Morton), ("rows", Warps::Rows)],
    )?;
    let moments = choose(
        "moments",
        moments,
        &[
            ("monopole", Moments::Monopole),
            ("quadrupole", Moments::Quadrupole),
        ],
    )?;
    let input = |e: s::SbhError| PyValueError::new_err(e.to_string());
    s::validate_samples(samples).map_err(input)?;
    s::validate_levels(levels).map_err(input)?;
    s::validate_beta(beta).map_err(input)?;
    let k = kernel.spec(param.unwrap_or(kernel.default_param()));
    moments.validate(k).map_err(input)?;
    let mut owned = Vec::new();
    let bodies = body_view(&sources, &mut owned)?.to_vec();
    let triples = |a: &PyReadonlyArray2<'py, f32>, what: &str| -> PyResult<Vec<[f32; 3]>> {
        let shape = a.shape();
        if shape.len() != 2 || shape[1] != 3 {
            return Err(PyValueError::new_err(format!(
                "{what} must have shape (N, 3), got {shape:?}"
            )));
        }
        let flat = a
            .as_slice()
            .map_err(|_| PyValueError::new_err(format!("{what} must be C-contiguous")))?;
        Ok(flat.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
    };
    let q = triples(&queries, "queries")?;
    let dipoles = match &dipoles {
        Some(d) => triples(d, "dipoles")?,
        None => Vec::new(),
    };
    let src = Sources { bodies, dipoles };
    let p = SbhParams {
        kernel: k,
        samples,
        seed,
        levels,
        allocate: !paper_allocation,
    };
    let b = backend(backend_choice)?;
    let sums: Vec<f64> = py.detach(|| {
        s::validate(&src, &q, k).map_err(input)?;
        // As the CLI: every method evaluates the queries in Morton order; sums come back in
        // the queries' own order.
        let order = s::query_order(&q);
        let o = Some(order.as_slice());
        let tree = SbhTree::build(&src);
        if method == Method::Sbh {
            distinct_buckets(&tree.tree, &src.bodies)?;
        }
        let quad = moments == Moments::Quadrupole;
        let (sum, _) = Summation::build(&b, src, tree, quad).map_err(sbh_error)?;
        let f32s = |v: Vec<f32>| v.into_iter().map(f64::from).collect();
        match method {
            Method::Sbh => sum.estimate(&q, &p, coherent, o).map(|r| f32s(r.0)),
            Method::Bh => sum
                .barnes_hut_grouped(&q, k, beta, o, warps, moments)
                .map(|r| f32s(r.0)),
            Method::BhQuery => sum.barnes_hut(&q, k, beta, o).map(|r| f32s(r.0)),
            Method::Direct => sum.brute_force(&q, k).map(|r| r.0),
        }
        .map_err(sbh_error)
    })?;
    // The smooth distance clamps a sum below float32's smallest normal (every term e^{−α r}
    // underflowed: each source ≳ 87/α away) to 87/α, a wrong distance; a negative sum is a noisy
    // estimate's and stays clamped, as documented.
    if k.kind == SMOOTH
        && let Some(i) = sums.iter().position(|&v| (0.0..MIN_NORMAL).contains(&v))
    {
        return Err(PyValueError::new_err(format!(
            "the smooth kernel's sum at query {i} underflows float32 ({:e}: every source is more \
             than about 87/α = {:e} away); the distance would read 87/α: use a smaller param (α = {})",
            sums[i],
            87.3 / k.param,
            k.param
        )));
    }
    Ok(sums
        .into_iter()
        .map(|v| s::field(k, v))
        .collect::<Vec<f64>>()
        .into_pyarray(py))
}

/// Sources that the octree cannot separate within `MAX_DEPTH` levels share a bucket, a chain
/// through `next`. The stochastic estimator samples a bucket as one point: right for coincident
/// sources, a bias (not noise: it stays at any `samples`) when they are distinct, as when one
/// source lies 1e9 times the others' spread away.
fn distinct_buckets(tree: &warpkit::bh::Tree, bodies: &[Body]) -> PyResult<()> {
    let at = |b: &Body| [b.x, b.y, b.z];
    for (i, &j) in tree.next.iter().enumerate() {
        if j >= 0 && at(&bodies[i]) != at(&bodies[j as usize]) {
            return Err(PyValueError::new_err(format!(
                "sources {i} and {j} are distinct but closer than the octree resolves (2^-{} of \
                 the sources' bounding box): method \"sbh\" would sample them as one point; \
                 use a smaller spread of sources or method \"bh\" or \"direct\"",
                warpkit::device::bh::MAX_DEPTH
            )));
        }
    }
    Ok(())
}

/// CSR arrays (data, indices, indptr) of the hex8 stiffness matrix: see `warpkit.fem.assemble`.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn fem_assemble<'py>(
    py: Python<'py>,
    nodes: PyReadonlyArray2<'py, f64>,
    elements: PyReadonlyArray2<'py, u32>,
    young: f64,
    poisson: f64,
    backend_choice: &str,
) -> PyResult<(
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<u32>>,
)> {
    use warpkit::fem::{Assembler, Material, Mesh, Method, colour, csr::Pattern};
    let contiguous = |what| PyValueError::new_err(format!("{what} must be C-contiguous"));
    let x = nodes.as_slice().map_err(|_| contiguous("nodes"))?;
    let e = elements.as_slice().map_err(|_| contiguous("elements"))?;
    let mesh = Mesh {
        nodes: x.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect(),
        elements: e
            .chunks_exact(8)
            .map(|c| std::array::from_fn(|k| c[k]))
            .collect(),
        element_tags: Vec::new(),
    };
    let material = Material { young, poisson };
    let b = backend(backend_choice)?;
    let value_error = |e: warpkit::fem::FemError| PyValueError::new_err(e.to_string());
    let (values, pattern) = py
        .detach(|| {
            warpkit::fem::validate(&mesh, &material)?;
            let colouring = colour::greedy(&mesh);
            colour::verify(&mesh, &colouring)?;
            let pattern = Pattern::new(&mesh)?;
            let method = match &b {
                Backend::Gpu(_) => Method::Gpu(warpkit::fem::gpu::Strategy::RowsRounds),
                Backend::Cpu => Method::CpuColoured,
            };
            let asm = Assembler::<f64>::new(&b, &mesh, &colouring, &pattern);
            let values = asm.assemble(method, &material)?;
            Ok((values, pattern))
        })
        .map_err(value_error)?;
    Ok((
        values.into_pyarray(py),
        pattern.col.into_pyarray(py),
        pattern.row_ptr.into_pyarray(py),
    ))
}

/// Runs `warpkit nbody` with a TOML configuration (the CLI's `--config` format; `None`: the
/// backend's default collision), writing into `out`; returns a summary dict.
#[pyfunction]
#[pyo3(signature = (config = None, out = "nbody-out", backend_choice = "auto", overwrite = false))]
fn nbody<'py>(
    py: Python<'py>,
    config: Option<&str>,
    out: &str,
    backend_choice: &str,
    overwrite: bool,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    use warpkit::nbody::run::{IcKind, RunConfig, RunError, run};
    let b = backend(backend_choice)?;
    let mut c = match config {
        Some(text) => toml_config(text)?,
        None if b.is_gpu() => RunConfig::default(),
        None => RunConfig::cpu_default(),
    };
    c.output.dir = out.into();
    c.output.overwrite |= overwrite;
    if c.ic.kind == IcKind::Snapshot {
        // A restart: the run's parameters from the snapshot's run state, except the [run] keys
        // given, as on the command line; each override said.
        let set = RunConfig::run_keys(config.unwrap_or_default())
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let set: Vec<&str> = set.iter().map(String::as_str).collect();
        for note in c
            .restart(&set)
            .map_err(|e| PyValueError::new_err(e.to_string()))?
        {
            eprintln!("{note}");
        }
    }
    let s = interruptible(py, |stop| {
        // CUDA's current context is per thread: the run's thread takes the backend's.
        if let Backend::Gpu(g) = &b {
            g.context().bind_to_thread().map_err(|e| {
                PyRuntimeError::new_err(format!("binding the GPU to the run's thread: {e}"))
            })?;
        }
        run(&b, &c, stop).map_err(|e| {
            PyValueError::new_err(match &e {
                RunError::PreviousOutputs { dir, shown } => {
                    RunError::previous_outputs(dir, shown, "overwrite=True")
                }
                e => e.to_string(),
            })
        })
    })?;
    let d = pyo3::types::PyDict::new(py);
    d.set_item("backend", s.backend)?;
    d.set_item("particles", s.n)?;
    d.set_item("steps", s.steps)?;
    d.set_item("time", s.time)?;
    d.set_item("wall_s", s.wall_s)?;
    d.set_item("energy_drift", s.energy_drift())?;
    d.set_item("virial_ratio", s.last.virial_ratio)?;
    d.set_item("dir", s.dir.display().to_string())?;
    Ok(d)
}

/// Runs `work` on its own thread while this one, without the GIL, checks for signals every
/// 20 ms: Ctrl-C (KeyboardInterrupt) sets the flag handed to `work`, which stops a run after the
/// current step with its final snapshot and logs as in the CLI; the interrupt is then raised here
/// (a run of hours would not stop otherwise).
fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(Arc<AtomicBool>) -> PyResult<T> + Send,
) -> PyResult<T> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut interrupt = None;
    let result = std::thread::scope(|scope| {
        let worker = scope.spawn({
            let stop = stop.clone();
            move || work(stop)
        });
        while !worker.is_finished() {
            py.detach(|| std::thread::sleep(std::time::Duration::from_millis(20)));
            if interrupt.is_none()
                && let Err(e) = py.check_signals()
            {
                stop.store(true, Ordering::Relaxed);
                interrupt = Some(e);
            }
        }
        worker
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    });
    match interrupt {
        Some(e) => Err(e),
        None => result,
    }
}

fn toml_config(text: &str) -> PyResult<warpkit::nbody::run::RunConfig> {
    warpkit::nbody::run::RunConfig::from_toml_str(text)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The variant of `T` that `name` names (the command line's and the TOML's names), or a
/// `ValueError` naming the keyword and every choice.
fn named<T: warpkit::choice::Choice>(keyword: &str, name: &str) -> PyResult<T> {
    T::from_name(name).ok_or_else(|| {
        let all: Vec<_> = T::ALL.iter().map(|v| format!("{:?}", v.name())).collect();
        PyValueError::new_err(format!(
            "{keyword} must be one of {}, not {name:?}",
            all.join(", ")
        ))
    })
}

fn sph_error(e: warpkit::sph::gpu::SphGpuError, max_pairs: Option<u64>) -> PyErr {
    use warpkit::sph::{SphError, gpu::SphGpuError};
    match e {
        SphGpuError::Input(e @ SphError::TooManyPairs { .. }) => {
            PyValueError::new_err(match max_pairs {
                Some(m) => format!("max_pairs={m}: {e}"),
                None => e.to_string(),
            })
        }
        SphGpuError::Input(e) => PyValueError::new_err(e.to_string()),
        SphGpuError::Tree(e) => bh_error(e),
        SphGpuError::Gpu(e) => PyRuntimeError::new_err(e.to_string()),
    }
}

/// One neighbour search on (N, 4) float32 particles (`warpkit::sph::search`, the search of
/// `warpkit neighbours`): smoothing lengths `h` as given (N,) or, when `h` is None or `n_ngb` is
/// given, iterated to `n_ngb` ± `tol` gather neighbours (from `h`, else each particle's
/// local-density guess); the counts of `criterion`; the density with `kernel`; with `max_pairs`
/// the CSR lists. A dict of arrays: see `warpkit.sph`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (bodies, h, n_ngb, tol, method, criterion, kernel, max_pairs, backend_choice))]
fn sph_search<'py>(
    py: Python<'py>,
    bodies: PyReadonlyArray2<'py, f32>,
    h: Option<PyReadonlyArray1<'py, f32>>,
    n_ngb: Option<f32>,
    tol: f32,
    method: &str,
    criterion: &str,
    kernel: Option<&str>,
    max_pairs: Option<u64>,
    backend_choice: &str,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    use warpkit::sph::{
        Criterion, HParams, Method, SearchOptions, SmoothingKernel, initial_h, search,
    };
    let method: Method = named("method", method)?;
    let criterion: Criterion = named("criterion", criterion)?;
    let kernel = kernel
        .map(|k| named::<SmoothingKernel>("kernel", k))
        .transpose()?;
    let mut owned = Vec::new();
    let view = body_view(&bodies, &mut owned)?;
    warpkit::bh::validate(view, &Params::default())
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let n = view.len();
    let hp = HParams {
        target: n_ngb.unwrap_or(HParams::default().target),
        tol,
        ..HParams::default()
    };
    let iterate = h.is_none() || n_ngb.is_some();
    if iterate {
        hp.check(n)
            .map_err(|e| PyValueError::new_err(format!("n_ngb={}, tol={tol}: {e}", hp.target)))?;
    }
    let h0 = match &h {
        Some(h) => {
            let h = h
                .as_slice()
                .map_err(|_| PyValueError::new_err("h must be C-contiguous"))?;
            if h.len() != n {
                return Err(PyValueError::new_err(format!(
                    "h must have shape ({n},), got ({},)",
                    h.len()
                )));
            }
            h.to_vec()
        }
        // Any valid h builds the GPU's tree; the iteration starts from the guess.
        None => vec![initial_h(view, hp.target); n],
    };
    let o = SearchOptions {
        method,
        criterion,
        iterate: iterate.then_some(hp),
        guess: h.is_none(),
        density: kernel,
        lists: max_pairs,
    };
    let b = backend(backend_choice)?;
    let s = py
        .detach(|| search(&b, view, h0, &o))
        .map_err(|e| sph_error(e, max_pairs))?;
    let d = pyo3::types::PyDict::new(py);
    d.set_item("h", s.h.into_pyarray(py))?;
    d.set_item("counts", s.counts.into_pyarray(py))?;
    if let Some((rho, _)) = s.density {
        d.set_item("rho", rho.into_pyarray(py))?;
    }
    if let Some(nb) = s.neighbours {
        let offsets: Vec<i64> = nb.offsets.iter().map(|&o| o as i64).collect();
        d.set_item("offsets", offsets.into_pyarray(py))?;
        d.set_item("indices", nb.list.into_pyarray(py))?;
    }
    if let Some((r, _)) = s.iteration {
        d.set_item("report", r.report())?;
        d.set_item("unconverged", r.unconverged.into_pyarray(py))?;
    }
    Ok(d)
}

/// An error and its causes on one line (a TOML error's line and column included).
fn report<E: AsRef<dyn std::error::Error + 'static>>(e: &E) -> String {
    warpkit::files::error_report(e.as_ref())
}

/// Runs `warpkit sph` with a TOML case (the CLI's `--config` format; `None`: the default Sod
/// tube), into `out` when given (else the case's `[output] dir`); returns a summary dict.
#[pyfunction]
#[pyo3(signature = (config = None, out = None, backend_choice = "auto", overwrite = false))]
fn sph_run<'py>(
    py: Python<'py>,
    config: Option<&str>,
    out: Option<&str>,
    backend_choice: &str,
    overwrite: bool,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    use warpkit::sph::hydro::cli::{IcKind, SphConfig, refuse_previous_outputs, restart, run_case};
    // The case resolves its backend on the run's thread.
    let choice = self::backend_choice(backend_choice)?;
    let (mut c, set) = match config {
        Some(text) => {
            SphConfig::from_toml_str(text).map_err(|e| PyValueError::new_err(report(&e)))?
        }
        None => (SphConfig::default(), Vec::new()),
    };
    if let Some(out) = out {
        c.output.dir = out.into();
    }
    c.output.overwrite |= overwrite;
    if c.ic.kind == IcKind::Snapshot {
        // A restart, as on the command line: the run's parameters from the snapshot's run
        // state, except the [run] keys given; each override said.
        for note in restart(&mut c, &set).map_err(|e| PyValueError::new_err(report(&e)))? {
            eprintln!("{note}");
        }
    }
    if !c.output.overwrite {
        refuse_previous_outputs(&c.output.dir, "overwrite=True")
            .map_err(|e| PyValueError::new_err(report(&e)))?;
    }
    let s = interruptible(py, |stop| {
        run_case(&c, choice, stop).map_err(|e| PyValueError::new_err(report(&e)))
    })?;
    let d = pyo3::types::PyDict::new(py);
    let path = |p: &std::path::Path| p.display().to_string();
    d.set_item("backend", s.backend)?;
    d.set_item("particles", s.particles)?;
    d.set_item("steps", s.steps)?;
    d.set_item("time", s.t)?;
    d.set_item("energy_error", s.energy_error)?;
    d.set_item("dir", path(&s.dir))?;
    d.set_item("diagnostics", path(&s.diagnostics))?;
    d.set_item("snapshot", path(&s.snapshot))?;
    d.set_item("profile", path(&s.profile))?;
    Ok(d)
}

#[pymodule]
fn _warpkit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(gravity, m)?)?;
    m.add_function(wrap_pyfunction!(gravity_potential, m)?)?;
    m.add_function(wrap_pyfunction!(sbh, m)?)?;
    m.add_function(wrap_pyfunction!(fem_assemble, m)?)?;
    m.add_function(wrap_pyfunction!(nbody, m)?)?;
    m.add_function(wrap_pyfunction!(sph_search, m)?)?;
    m.add_function(wrap_pyfunction!(sph_run, m)?)?;
    m.add_function(wrap_pyfunction!(planet::planet_build, m)?)?;
    m.add_function(wrap_pyfunction!(planet::impact_run, m)?)?;
    m.add_function(wrap_pyfunction!(backend_name, m)?)?;
    // The coordinate limit of the float32 kernels, checked in Python before a call.
    m.add("MAX_COORD", f64::from(warpkit::bh::MAX_COORD))?;
    Ok(())
}
