"""The Python package against NumPy/SciPy references, on whatever backend is usable (the CPU
backend in CI). Inputs are drawn fresh each run; WARPKIT_TEST_SEED repeats one.

The accuracy tests run on every backend (the ``backend`` fixture): ``"cpu"`` always, ``"gpu"`` when
a CUDA GPU is usable and skipped (with its reason in the summary) otherwise. On a GPU machine set
WARPKIT_EXPECT_GPU=1 (scripts/gpu-python.sh does): then a missing or unusable GPU fails the tests
instead of skipping them, and ``backend_name()`` must resolve "auto" to the GPU."""

import os

import numpy as np
import pytest

import warpkit

SEED = int(os.environ.get("WARPKIT_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
EXPECT_GPU = os.environ.get("WARPKIT_EXPECT_GPU", "") not in ("", "0")


def gpu_error():
    """None when warpkit can open the GPU, else why not."""
    try:
        name = warpkit.backend_name("gpu")
    except RuntimeError as e:
        return str(e)
    return None if name == "gpu" else f"backend_name('gpu') is {name!r}"


GPU_ERROR = gpu_error()


@pytest.fixture(params=["cpu", "gpu"])
def backend(request):
    """Each backend in turn: the GPU one is skipped without a usable GPU, unless
    WARPKIT_EXPECT_GPU=1, where that is a failure."""
    if request.param == "gpu" and GPU_ERROR is not None:
        if EXPECT_GPU:
            pytest.fail(f"WARPKIT_EXPECT_GPU=1 but the GPU backend is not usable: {GPU_ERROR}")
        pytest.skip(f"no usable CUDA GPU ({GPU_ERROR})")
    return request.param


def test_backend_name():
    assert warpkit.backend_name("cpu") == "cpu"
    auto = warpkit.backend_name()
    assert auto == warpkit.backend_name("auto")
    # "auto" is the GPU exactly when one is usable.
    assert auto == ("cpu" if GPU_ERROR else "gpu"), (auto, GPU_ERROR)
    if EXPECT_GPU:
        assert GPU_ERROR is None, GPU_ERROR
        assert auto == "gpu" and warpkit.backend_name("gpu") == "gpu"
    with pytest.raises(ValueError):
        warpkit.backend_name("tpu")


def direct_sum(bodies, eps, G=1.0):
    """float64 direct summation (the reference)."""
    x = bodies[:, :3].astype(np.float64)
    m = bodies[:, 3].astype(np.float64)
    d = x[None, :, :] - x[:, None, :]
    r2 = (d * d).sum(-1) + eps * eps
    inv3 = r2 ** -1.5
    return G * (d * (m[None, :, None] * inv3[:, :, None])).sum(1)


def plummer_like(n, rng):
    r = rng.random(n) ** (1 / 3) / np.sqrt(1 - rng.random(n) ** 0.6 + 0.05)
    v = rng.normal(size=(n, 3))
    x = v / np.linalg.norm(v, axis=1)[:, None] * r[:, None]
    b = np.empty((n, 4), dtype=np.float32)
    b[:, :3] = x
    b[:, 3] = 1.0 / n
    return b


def test_gravity_matches_the_float64_direct_sum(backend):
    rng = np.random.default_rng(SEED)
    b = plummer_like(3000, rng)
    ref = direct_sum(b, 0.05)
    for traversal, quad, bound in [("vote", False, 3e-3), ("group2", True, 1e-3)]:
        acc = warpkit.gravity(b, eps=0.05, theta=0.5, traversal=traversal, quadrupole=quad,
                              backend=backend)
        assert acc.shape == (3000, 3) and acc.dtype == np.float32
        err = np.linalg.norm(acc - ref, axis=1) / np.linalg.norm(ref, axis=1)
        assert np.median(err) < bound, (backend, traversal, np.median(err), SEED)
    # θ = 0 opens every cell: direct summation in float32.
    exact = warpkit.gravity(b, eps=0.05, theta=0.0, traversal="group", backend=backend)
    err = np.linalg.norm(exact - ref, axis=1) / np.linalg.norm(ref, axis=1)
    assert np.max(err) < 1e-4, (backend, np.max(err), SEED)


def test_positions_and_masses_give_the_same_answer_as_bodies():
    rng = np.random.default_rng(SEED + 1)
    b = plummer_like(500, rng)
    a1 = warpkit.gravity(b, eps=0.1)
    a2 = warpkit.gravity(b[:, :3].astype(np.float64), b[:, 3], eps=0.1)
    np.testing.assert_array_equal(a1, a2)
    # A strided (non-contiguous) array is copied, not misread.
    wide = np.zeros((500, 8), dtype=np.float32)
    wide[:, :4] = b
    np.testing.assert_array_equal(warpkit.gravity(wide[:, :4], eps=0.1), a1)


@pytest.mark.parametrize(
    "bad",
    [
        lambda b: b.__setitem__((3, 0), np.nan),
        lambda b: b.__setitem__((5, 3), 0.0),
        lambda b: b.__setitem__((5, 3), -1.0),
    ],
)
def test_bad_bodies_are_value_errors(bad):
    b = plummer_like(100, np.random.default_rng(SEED + 2))
    bad(b)
    with pytest.raises(ValueError):
        warpkit.gravity(b)


def test_bad_options_are_value_errors():
    b = plummer_like(100, np.random.default_rng(SEED + 3))
    with pytest.raises(ValueError):
        warpkit.gravity(b[:, :3])
    with pytest.raises(ValueError):
        warpkit.gravity(b, theta=-1.0)
    with pytest.raises(ValueError):
        warpkit.gravity(b, traversal="vote", quadrupole=True)
    with pytest.raises(ValueError):
        warpkit.gravity(b, traversal="nope")
    with pytest.raises(ValueError):
        warpkit.gravity(b, backend="tpu")
    with pytest.raises(ValueError):
        warpkit.gravity(np.zeros((0, 4), dtype=np.float32))


def cube_mesh(n, h=1.0):
    """n³ unit hexahedra, VTK node order."""
    g = np.arange(n + 1)
    nodes = np.array([[i, j, k] for k in g for j in g for i in g], dtype=np.float64) * h
    idx = lambda i, j, k: i + (n + 1) * (j + (n + 1) * k)
    elems = []
    for k in range(n):
        for j in range(n):
            for i in range(n):
                elems.append([idx(i, j, k), idx(i + 1, j, k), idx(i + 1, j + 1, k), idx(i, j + 1, k),
                              idx(i, j, k + 1), idx(i + 1, j, k + 1), idx(i + 1, j + 1, k + 1),
                              idx(i, j + 1, k + 1)])
    return nodes, np.array(elems, dtype=np.uint32)


def test_fem_stiffness_is_symmetric_and_annihilates_rigid_motions(backend):
    scipy = pytest.importorskip("scipy")
    nodes, elems = cube_mesh(4)
    rng = np.random.default_rng(SEED + 4)
    nodes = nodes + 0.1 * rng.random(nodes.shape)  # distorted but valid elements
    K = warpkit.fem.assemble(nodes, elems, young=210e9, poisson=0.3, backend=backend)
    assert isinstance(K, scipy.sparse.csr_matrix)
    n = 3 * len(nodes)
    assert K.shape == (n, n)
    scale = abs(K).max()
    assert abs(K - K.T).max() <= 1e-9 * scale
    # Rigid translations and infinitesimal rotations produce no forces.
    for d in range(3):
        u = np.zeros(n)
        u[d::3] = 1.0
        assert np.abs(K @ u).max() <= 1e-9 * scale
    c = nodes - nodes.mean(0)
    rot = np.zeros_like(c)
    rot[:, 0], rot[:, 1] = -c[:, 1], c[:, 0]  # about z
    assert np.abs(K @ rot.ravel()).max() <= 1e-8 * scale * np.abs(c).max()
    # Positive semi-definite: a random displacement stores energy.
    u = rng.normal(size=n)
    assert u @ (K @ u) > 0
    if backend != "cpu":
        # The CPU backend's coloured assembly: the same pattern, and values within the relative
        # Frobenius error of 1e-12 that tests/gpu_fem.rs holds every float64 strategy to.
        ref = warpkit.fem.assemble(nodes, elems, young=210e9, poisson=0.3, backend="cpu")
        np.testing.assert_array_equal(K.indptr, ref.indptr)
        np.testing.assert_array_equal(K.indices, ref.indices)
        rel = np.linalg.norm(K.data - ref.data) / np.linalg.norm(ref.data)
        assert rel < 1e-12, (backend, rel)


def test_fem_bad_meshes_are_value_errors():
    nodes, elems = cube_mesh(1)
    bad = elems.copy()
    bad[0, 0] = 99
    with pytest.raises(ValueError):
        warpkit.fem.assemble(nodes, bad, young=1.0, poisson=0.3)
    inverted = elems[:, [4, 5, 6, 7, 0, 1, 2, 3]]
    # Arrays carry no Gmsh tags: the element is counted from 1, and the message says so.
    with pytest.raises(ValueError, match=r"element 1 \(numbered from 1 in mesh order\) is inverted"):
        warpkit.fem.assemble(nodes, inverted, young=1.0, poisson=0.3)
    with pytest.raises(ValueError):
        warpkit.fem.assemble(nodes, elems, young=1.0, poisson=0.7)


def test_nbody_plummer_run_conserves_energy(tmp_path, backend):
    config = """
[ic]
kind = "plummer"
n = 400
seed = 3
[run]
t_end = 1.0
dt = 0.01
eps = 0.05
[output]
diag_every = 10
snapshot_every = 0
image_every = 0
"""
    s = warpkit.nbody(config, out=str(tmp_path / "run"), backend=backend)
    assert s["backend"] == backend, s
    assert s["particles"] == 400 and s["steps"] == 100
    assert s["energy_drift"] < 1e-3, s
    assert (tmp_path / "run" / "diagnostics.csv").exists()
    assert (tmp_path / "run" / "snapshot_final.gadget").exists()
    with pytest.raises(ValueError):
        warpkit.nbody("[run]\ndt = -1\n", out=str(tmp_path / "bad"), backend=backend)


def direct_potential(bodies, eps, G=1.0):
    """float64 potential of the others, -G Σ_{j≠i} m_j / sqrt(r² + ε²)."""
    x = bodies[:, :3].astype(np.float64)
    m = bodies[:, 3].astype(np.float64)
    d = x[None, :, :] - x[:, None, :]
    inv = 1.0 / np.sqrt((d * d).sum(-1) + eps * eps)
    np.fill_diagonal(inv, 0.0)
    return -G * (inv * m[None, :]).sum(1)


def test_gravity_potential_matches_the_float64_direct_sum(backend):
    rng = np.random.default_rng(SEED + 5)
    b = plummer_like(2000, rng)
    ref_acc, ref_pot = direct_sum(b, 0.05, G=2.0), direct_potential(b, 0.05, G=2.0)
    # θ = 0: every body listed, float32 rounding only (the self term m/ε would be ~1e-2 of φ).
    for theta, pot_bound, acc_bound in [(0.0, 1e-5, 1e-5), (0.5, 2e-3, 3e-3)]:
        acc, pot = warpkit.gravity(b, eps=0.05, theta=theta, G=2.0, potential=True,
                                   backend=backend)
        assert acc.shape == (2000, 3) and pot.shape == (2000,) and pot.dtype == np.float32
        err = np.abs(pot - ref_pot) / np.abs(ref_pot)
        assert err.max() < pot_bound, (backend, theta, err.max(), SEED)
        aerr = np.linalg.norm(acc - ref_acc, axis=1) / np.linalg.norm(ref_acc, axis=1)
        assert np.median(aerr) < acc_bound, (backend, theta, np.median(aerr), SEED)
    # The same bodies as positions + masses.
    _, pot2 = warpkit.gravity(b[:, :3], b[:, 3], eps=0.05, theta=0.0, G=2.0, potential=True,
                              backend=backend)
    err = np.abs(pot2 - ref_pot) / np.abs(ref_pot)
    assert err.max() < 1e-5


def test_gravity_potential_bad_input_is_value_errors():
    b = plummer_like(100, np.random.default_rng(SEED + 6))
    with pytest.raises(ValueError):
        warpkit.gravity(b, potential=True, quadrupole=True)
    with pytest.raises(ValueError):
        warpkit.gravity(b, potential=True, traversal="vote")
    with pytest.raises(ValueError):
        warpkit.gravity(b[:, :3], potential=True)
    b[7, 1] = np.nan
    with pytest.raises(ValueError):
        warpkit.gravity(b, potential=True)


def sbh_reference(src, q, kernel, param, normals=None):
    """float64 sums of the kernels of ``warpkit.sbh`` (the smooth one as its distance)."""
    d = src[None, :, :3].astype(np.float64) - q[:, None, :].astype(np.float64)  # source − query
    r = np.sqrt((d * d).sum(-1))
    w = src[None, :, 3].astype(np.float64)
    if kernel == "shifted":
        return -(w / (r + param)).sum(1)
    if kernel == "plummer":
        return -(w / np.sqrt(r * r + param * param)).sum(1)
    if kernel == "winding":
        dn = (d * normals[None, :, :].astype(np.float64)).sum(-1)
        return (dn / (4 * np.pi * r ** 3)).sum(1)
    return -np.log((w * np.exp(-param * r)).sum(1)) / param


def uniform_sources(m, rng):
    s = np.empty((m, 4), dtype=np.float32)
    s[:, :3] = rng.random((m, 3)) - 0.5
    s[:, 3] = 1.0 / m
    return s


def test_sbh_methods_match_the_float64_direct_sum(backend):
    rng = np.random.default_rng(SEED + 7)
    src = uniform_sources(4000, rng)
    q = (rng.random((500, 3)) - 0.5).astype(np.float32)
    for kernel, param in [("shifted", 0.1), ("plummer", 0.1), ("smooth", 50.0)]:
        ref = sbh_reference(src, q, kernel, param)
        scale = np.abs(ref).max()
        # (method, options, bound on the mean |error| / max |ref|, about 10× what is measured):
        # direct in float32 terms; Barnes–Hut at β = 2, quadrupoles ~30× better than monopoles;
        # the stochastic estimate with 8 paths per stratum.
        errs = {}
        for method, opts, bound in [
            ("direct", {}, 1e-6),
            ("bh", {}, 5e-4),
            ("bh", {"moments": "quadrupole"}, 2e-5),
            ("bh_query", {}, 2e-3),
            ("sbh", {"samples": 8}, 1e-3),
        ]:
            got = warpkit.sbh(src, q, kernel=kernel, param=param, method=method, backend=backend,
                              **opts)
            assert got.shape == (500,) and got.dtype == np.float64
            assert np.isfinite(got).all(), (kernel, method)
            err = np.abs(got - ref).mean() / scale
            errs[method, "moments" in opts] = err
            # The smooth distance of a noisy estimate is heavy-tailed (-ln of a small sum):
            # its stochastic error is not bounded here, its Barnes–Hut ones are.
            if not (kernel == "smooth" and method == "sbh"):
                assert err < bound, (backend, kernel, method, opts, err, SEED)
        assert errs["bh", True] < errs["bh", False], (backend, kernel, errs, SEED)
    # The estimator is unbiased: more paths, less error (S = 1 against S = 16, same seed).
    ref = sbh_reference(src, q, "shifted", 0.1)
    e1 = np.abs(warpkit.sbh(src, q, samples=1, backend=backend) - ref).mean()
    e16 = np.abs(warpkit.sbh(src, q, samples=16, backend=backend) - ref).mean()
    assert e16 < 0.45 * e1, (backend, e1, e16, SEED)  # 1/√16 = 0.25 for pure noise


def test_sbh_winding_number_of_a_sphere(backend):
    rng = np.random.default_rng(SEED + 8)
    m, r = 4000, 0.3
    n = rng.normal(size=(m, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    area = 4 * np.pi * r * r / m
    q = np.array([[0.0, 0.0, 0.0], [0.1, -0.05, 0.02], [0.45, 0.0, 0.0], [0.0, 0.4, 0.3]],
                 dtype=np.float32)
    got = warpkit.sbh((r * n).astype(np.float32), q, np.full(m, area), normals=area * n,
                      kernel="winding", method="direct", backend=backend)
    ref = sbh_reference(np.hstack([r * n, np.full((m, 1), area)]).astype(np.float32), q,
                        "winding", 0.0, normals=(area * n).astype(np.float32))
    np.testing.assert_allclose(got, ref, atol=1e-4)
    # Inside 1, outside 0, up to the samples' quadrature error.
    np.testing.assert_allclose(got, [1, 1, 0, 0], atol=0.05)


def test_sbh_bad_input_is_value_errors():
    rng = np.random.default_rng(SEED + 9)
    src = uniform_sources(200, rng)
    q = (rng.random((20, 3)) - 0.5).astype(np.float32)
    bad_src = src.copy()
    bad_src[3, 2] = np.nan
    bad_q = q.copy()
    bad_q[4, 0] = np.nan
    for call in [
        lambda: warpkit.sbh(src[:, :3], q),                       # no weights
        lambda: warpkit.sbh(src, q[:, :2]),                       # (Q, 2) queries
        lambda: warpkit.sbh(src[:, :3], q, np.ones(199)),         # weights of the wrong length
        lambda: warpkit.sbh(bad_src, q),
        lambda: warpkit.sbh(src, bad_q),
        lambda: warpkit.sbh(src, q, method="fmm"),
        lambda: warpkit.sbh(src, q, kernel="gauss"),
        lambda: warpkit.sbh(src, q, samples=0),
        lambda: warpkit.sbh(src, q, samples=-1),
        lambda: warpkit.sbh(src, q, levels=3),
        lambda: warpkit.sbh(src, q, beta=-1.0),
        lambda: warpkit.sbh(src, q, kernel="winding", normals=np.ones((199, 3))),
        lambda: warpkit.sbh(src, q, kernel="winding"),            # no normals
        lambda: warpkit.sbh(src, q, kernel="winding", moments="quadrupole", method="bh",
                            normals=np.ones((200, 3))),
        lambda: warpkit.sbh(src, src[:5, :3], param=0.0),         # a query on a source, δ = 0
        lambda: warpkit.sbh(src, np.zeros((0, 3), np.float32)),
    ]:
        with pytest.raises(ValueError):
            call()
