//! `warpkit._warpkit`: the extension module behind the `warpkit` Python package. Thin: it checks
//! shapes, borrows NumPy's buffers (no copy where the layout allows), releases the GIL while
//! warpkit works, and turns every warpkit error into a Python `ValueError` (bad input) or
//! `RuntimeError` (the device).

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use warpkit::backend::{Backend, BackendChoice};
use warpkit::bh::gpu::{BhError, Traversal};
use warpkit::bh::{Options, Params};
use warpkit::device::bh::Body;

/// One backend per choice for the whole process: opening a CUDA context per call would cost more
/// than most calls.
fn backend(choice: &str) -> PyResult<Backend> {
    static CACHE: OnceLock<Mutex<HashMap<String, Backend>>> = OnceLock::new();
    let c = match choice {
        "auto" => BackendChoice::Auto,
        "gpu" => BackendChoice::Gpu,
        "cpu" => BackendChoice::Cpu,
        other => {
            return Err(PyValueError::new_err(format!(
                "backend must be \"auto\", \"gpu\" or \"cpu\", not {other:?}"
            )));
        }
    };
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
    let shape = bodies.shape();
    if shape.len() != 2 || shape[1] != 4 {
        return Err(PyValueError::new_err(format!(
            "bodies must have shape (N, 4), got {shape:?}"
        )));
    }
    let t = traversal(traversal_name)?;
    if quadrupole && t == Traversal::Vote {
        return Err(PyValueError::new_err(
            "quadrupole moments need a group traversal (\"group\" or \"group2\")",
        ));
    }
    let b = backend(backend_choice)?;
    let flat = bodies
        .as_slice()
        .map_err(|_| PyValueError::new_err("bodies must be C-contiguous"))?;
    // Zero copy when NumPy's buffer is 16-byte aligned (Body's alignment), else one copy.
    let owned: Vec<Body>;
    let view: &[Body] = match bytemuck::try_cast_slice(flat) {
        Ok(v) => v,
        Err(_) => {
            owned = flat
                .chunks_exact(4)
                .map(|c| Body {
                    x: c[0],
                    y: c[1],
                    z: c[2],
                    m: c[3],
                })
                .collect();
            &owned
        }
    };
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
    let flat: Vec<f32> = acc.iter().flat_map(|a| [a.x, a.y, a.z]).collect();
    numpy::ndarray::Array2::from_shape_vec((n, 3), flat)
        .map(|a| a.into_pyarray(py))
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))
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
                Backend::Gpu(_) => Method::Gpu(warpkit::fem::gpu::Strategy::Ppni8Blocks),
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
#[pyo3(signature = (config = None, out = "nbody-out", backend_choice = "auto"))]
fn nbody<'py>(
    py: Python<'py>,
    config: Option<&str>,
    out: &str,
    backend_choice: &str,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    use warpkit::nbody::run::{RunConfig, run};
    let b = backend(backend_choice)?;
    let mut c = match config {
        Some(text) => toml_config(text)?,
        None if b.is_gpu() => RunConfig::default(),
        None => RunConfig::cpu_default(),
    };
    c.output.dir = out.into();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = py
        .detach(|| run(&b, &c, stop))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
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

fn toml_config(text: &str) -> PyResult<warpkit::nbody::run::RunConfig> {
    warpkit::nbody::run::RunConfig::from_toml_str(text)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymodule]
fn _warpkit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(gravity, m)?)?;
    m.add_function(wrap_pyfunction!(fem_assemble, m)?)?;
    m.add_function(wrap_pyfunction!(nbody, m)?)?;
    m.add_function(wrap_pyfunction!(backend_name, m)?)?;
    Ok(())
}
