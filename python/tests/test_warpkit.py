"""The Python package against NumPy/SciPy references, on whatever backend is usable (the CPU
backend in CI). Inputs are drawn fresh each run; WARPKIT_TEST_SEED repeats one."""

import os

import numpy as np
import pytest

import warpkit

SEED = int(os.environ.get("WARPKIT_TEST_SEED", np.random.SeedSequence().entropy % 2**32))


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


def test_gravity_matches_the_float64_direct_sum():
    rng = np.random.default_rng(SEED)
    b = plummer_like(3000, rng)
    ref = direct_sum(b, 0.05)
    for traversal, quad, bound in [("vote", False, 3e-3), ("group2", True, 1e-3)]:
        acc = warpkit.gravity(b, eps=0.05, theta=0.5, traversal=traversal, quadrupole=quad)
        assert acc.shape == (3000, 3) and acc.dtype == np.float32
        err = np.linalg.norm(acc - ref, axis=1) / np.linalg.norm(ref, axis=1)
        assert np.median(err) < bound, (traversal, np.median(err), SEED)
    # θ = 0 opens every cell: direct summation in float32.
    exact = warpkit.gravity(b, eps=0.05, theta=0.0, traversal="group")
    err = np.linalg.norm(exact - ref, axis=1) / np.linalg.norm(ref, axis=1)
    assert np.max(err) < 1e-4, (np.max(err), SEED)


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


def test_fem_stiffness_is_symmetric_and_annihilates_rigid_motions():
    scipy = pytest.importorskip("scipy")
    nodes, elems = cube_mesh(4)
    rng = np.random.default_rng(SEED + 4)
    nodes = nodes + 0.1 * rng.random(nodes.shape)  # distorted but valid elements
    K = warpkit.fem.assemble(nodes, elems, young=210e9, poisson=0.3)
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


def test_fem_bad_meshes_are_value_errors():
    nodes, elems = cube_mesh(1)
    bad = elems.copy()
    bad[0, 0] = 99
    with pytest.raises(ValueError):
        warpkit.fem.assemble(nodes, bad, young=1.0, poisson=0.3)
    inverted = elems[:, [4, 5, 6, 7, 0, 1, 2, 3]]
    with pytest.raises(ValueError):
        warpkit.fem.assemble(nodes, inverted, young=1.0, poisson=0.3)
    with pytest.raises(ValueError):
        warpkit.fem.assemble(nodes, elems, young=1.0, poisson=0.7)


def test_nbody_plummer_run_conserves_energy(tmp_path):
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
    s = warpkit.nbody(config, out=str(tmp_path / "run"))
    assert s["particles"] == 400 and s["steps"] == 100
    assert s["energy_drift"] < 1e-3, s
    assert (tmp_path / "run" / "diagnostics.csv").exists()
    assert (tmp_path / "run" / "snapshot_final.gadget").exists()
    with pytest.raises(ValueError):
        warpkit.nbody("[run]\ndt = -1\n", out=str(tmp_path / "bad"))
