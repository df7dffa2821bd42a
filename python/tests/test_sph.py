"""``warpkit.sph`` against NumPy brute force on fresh random points (WARPKIT_TEST_SEED repeats a
draw), on every usable backend, and ``warpkit.sph.run`` on tiny Sod and Sedov cases."""

import _thread
import os
import sys
import threading
import time

import numpy as np
import pytest

import warpkit
import warpkit.sph

SEED = int(os.environ.get("WARPKIT_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
EXPECT_GPU = os.environ.get("WARPKIT_EXPECT_GPU", "") not in ("", "0")


def gpu_error():
    try:
        name = warpkit.backend_name("gpu")
    except RuntimeError as e:
        return str(e)
    return None if name == "gpu" else f"backend_name('gpu') is {name!r}"


GPU_ERROR = gpu_error()


@pytest.fixture(params=["cpu", "gpu"])
def backend(request):
    """As in test_warpkit.py: the GPU is skipped when unusable, unless WARPKIT_EXPECT_GPU=1."""
    if request.param == "gpu" and GPU_ERROR is not None:
        if EXPECT_GPU:
            pytest.fail(f"WARPKIT_EXPECT_GPU=1 but the GPU backend is not usable: {GPU_ERROR}")
        pytest.skip(f"no usable CUDA GPU ({GPU_ERROR})")
    return request.param


def rng(k=0):
    return np.random.default_rng([SEED, k])


def brute(pos, radius):
    """float64 brute force: (inside, outside) masks of the pairs clearly inside or outside
    ``radius`` (N, N); pairs within 1e-5 of the boundary (relative, in r²) are in neither, as
    float32 distances may round them either way."""
    p = pos.astype(np.float32).astype(np.float64)
    d2 = ((p[:, None, :] - p[None, :, :]) ** 2).sum(-1)
    r2 = radius.astype(np.float64) ** 2
    return d2 < r2 * (1 - 1e-5), d2 > r2 * (1 + 1e-5)


def assert_pattern(A, inside, outside, what):
    dense = A.toarray()
    assert dense.dtype == bool
    missing = inside & ~dense
    extra = outside & dense
    assert not missing.any(), f"{what}: pairs {np.argwhere(missing)[:5].tolist()} missing"
    assert not extra.any(), f"{what}: pairs {np.argwhere(extra)[:5].tolist()} listed"
    for i in range(A.shape[0]):
        row = A.indices[A.indptr[i]:A.indptr[i + 1]]
        assert (np.diff(row) > 0).all(), f"{what}: row {i} not ascending"


def test_neighbours_equal_brute_force(backend):
    g = rng(1)
    n = 600
    pos = g.random((n, 3))
    h = g.uniform(0.08, 0.2, n).astype(np.float32)
    hi, hj = h[:, None], h[None, :]
    for criterion, radius in [("gather", np.broadcast_to(hi, (n, n))),
                              ("scatter", np.broadcast_to(hj, (n, n))),
                              ("symmetric", np.maximum(hi, hj))]:
        for method in ("group", "cells"):
            A = warpkit.sph.neighbours(pos, h=h, criterion=criterion, method=method,
                                       backend=backend)
            assert A.shape == (n, n)
            assert_pattern(A, *brute(pos, radius), f"{criterion} {method}")
            # Row sums are the counts; every particle gathers itself.
            counts = np.asarray(A.sum(axis=1)).ravel()
            assert (counts == np.diff(A.indptr)).all()
            if criterion == "gather":
                assert A.diagonal().all()
    # One h for all, with (N, 4) rows: the masses play no part.
    bodies = np.hstack([pos, g.uniform(0.5, 2, (n, 1))])
    A = warpkit.sph.neighbours(bodies, h=0.15, backend=backend)
    assert_pattern(A, *brute(pos, np.full((n, n), np.float32(0.15))), "scalar h")
    assert (A != warpkit.sph.neighbours(pos, h=0.15, backend=backend)).nnz == 0


def test_neighbours_with_iterated_h(backend):
    pos = rng(2).random((1500, 3))
    A, h = warpkit.sph.neighbours(pos, n_ngb=32, tol=1, return_h=True, backend=backend)
    assert h.shape == (1500,) and h.dtype == np.float32 and (h > 0).all()
    counts = np.diff(A.indptr)
    assert (np.abs(counts - 32) <= 1).all(), (counts.min(), counts.max())
    inside, outside = brute(pos, np.broadcast_to(h[:, None], (1500, 1500)))
    assert_pattern(A, inside, outside, "iterated h")
    # density() with the same arguments reaches the same h and counts.
    d = warpkit.sph.density(pos, 1.0, n_ngb=32, tol=1, backend=backend)
    assert (d.h == h).all() and (d.counts == counts).all()


def test_neighbours_without_scipy(monkeypatch):
    pos = rng(3).random((300, 3))
    A = warpkit.sph.neighbours(pos, h=0.2, backend="cpu")
    # `import scipy.sparse` fails: the CSR arrays come back as a tuple of int64 arrays.
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)
    offsets, indices = warpkit.sph.neighbours(pos, h=0.2, backend="cpu")
    assert offsets.dtype == np.int64 and indices.dtype == np.int64
    assert (offsets == A.indptr).all() and (indices == A.indices).all()


def cubic_spline(q):
    """The M4 cubic spline's h³ W in 3D, support radius h (the reference for the test)."""
    q = np.asarray(q)
    w = np.where(q < 0.5, 1 - 6 * q**2 + 6 * q**3, 2 * np.clip(1 - q, 0, None) ** 3)
    return 8 / np.pi * np.where(q < 1, w, 0.0)


def test_density_is_positive_and_consistent_with_counts(backend):
    g = rng(4)
    n = 1200
    pos = g.normal(size=(n, 3))
    mass = g.uniform(0.5, 1.5, n)
    d = warpkit.sph.density(pos, mass, n_ngb=40, backend=backend)
    assert isinstance(d, warpkit.sph.Density)
    h, rho, counts = d
    assert rho.shape == (n,) and rho.dtype == np.float32
    assert np.isfinite(rho).all() and (rho > 0).all()
    assert (np.abs(counts - 40) <= 2).all(), (counts.min(), counts.max())
    # The counts are the gather counts at h ...
    p = pos.astype(np.float32).astype(np.float64)
    r = np.sqrt(((p[:, None, :] - p[None, :, :]) ** 2).sum(-1))
    hh = h.astype(np.float64)[:, None]
    inside, outside = r < hh * (1 - 1e-5), r > hh * (1 + 1e-5)
    assert (inside.sum(1) <= counts).all() and (counts <= n - outside.sum(1)).all()
    # ... and the density sums the kernel over exactly those neighbours.
    m = mass.astype(np.float32).astype(np.float64)
    want = (m[None, :] * cubic_spline(r / hh)).sum(1) / h.astype(np.float64) ** 3
    np.testing.assert_allclose(rho, want, rtol=1e-4)
    # Bounded by the self term and by all the neighbours' mass at the kernel's peak.
    peak = 8 / np.pi / h.astype(np.float64) ** 3
    assert (rho >= 0.999 * m * peak).all()
    assert (rho <= 1.001 * (inside | ~outside).astype(float) @ m * peak).all()
    # Given h and (N, 4) rows; the Wendland C2 kernel.
    bodies = np.hstack([pos, mass[:, None]])
    again = warpkit.sph.density(bodies, h=h, backend=backend)
    np.testing.assert_allclose(again.rho, rho, rtol=1e-6)
    assert (again.h == h).all() and (again.counts == counts).all()
    wendland = warpkit.sph.density(pos, mass, h=h, kernel="wendland-c2", backend=backend)
    assert (wendland.rho > 0).all() and not np.allclose(wendland.rho, rho)


def test_bad_input_names_the_keyword():
    pos = rng(5).random((50, 3))
    cases = [
        (lambda: warpkit.sph.neighbours(pos[:, :2], h=0.1), "pos"),
        (lambda: warpkit.sph.neighbours(pos, h=-0.1), "h[0]"),
        (lambda: warpkit.sph.neighbours(pos, h=np.ones(7)), "h must"),
        (lambda: warpkit.sph.neighbours(pos, n_ngb=0), "n_ngb"),
        (lambda: warpkit.sph.neighbours(pos, n_ngb=80), "n_ngb=80"),
        (lambda: warpkit.sph.neighbours(pos, h=0.1, criterion="nearest"), "criterion"),
        (lambda: warpkit.sph.neighbours(pos, h=0.1, method="kd"), "method"),
        (lambda: warpkit.sph.neighbours(pos, h=0.5, max_pairs=10), "max_pairs=10: "),
        (lambda: warpkit.sph.neighbours(pos, mass=-np.ones(50), h=0.1), "mass"),
        (lambda: warpkit.sph.neighbours(np.hstack([pos, np.ones((50, 1))]), 1.0), "mass=None"),
        (lambda: warpkit.sph.density(pos), "mass"),
        (lambda: warpkit.sph.density(pos, 1.0, h=0.0), "h[0] = 0"),
        (lambda: warpkit.sph.density(pos, 1.0, kernel="gauss"), "kernel"),
        (lambda: warpkit.sph.neighbours(pos, h=0.1, backend="tpu"), "backend"),
    ]
    for call, word in cases:
        with pytest.raises(ValueError) as e:
            call()
        assert word in str(e.value), (word, str(e.value))
    with pytest.raises(TypeError, match="return_h"):
        warpkit.sph.neighbours(pos, h=0.1, return_h="yes")
    with pytest.raises(TypeError, match="max_pairs"):
        warpkit.sph.neighbours(pos, h=0.1, max_pairs=1.5)


SOD = """
[ic]
kind = "sod"
resolution = 8
[run]
t_end = 0.05
[output]
images = false
"""


def test_run_sod(tmp_path):
    out = tmp_path / "sod"
    s = warpkit.sph.run(SOD, out=out, backend="cpu")
    assert s["time"] == pytest.approx(0.05, rel=1e-9), s
    assert s["steps"] > 0 and s["particles"] > 0 and s["backend"] == "cpu"
    assert abs(s["energy_error"]) < 1e-2, s
    assert s["dir"] == str(out)
    for key, name in [("diagnostics", "diagnostics.csv"), ("snapshot", "snapshot_final.gadget"),
                      ("profile", "profile.csv")]:
        assert s[key] == str(out / name) and (out / name).is_file(), (key, s)
    rows = np.genfromtxt(s["diagnostics"], delimiter=",", names=True)
    assert rows["t"][-1] == pytest.approx(s["time"])
    assert len(rows) == s["steps"] + 1
    # A second run into the same directory is refused, naming the keyword; overwrite=True runs.
    with pytest.raises(ValueError, match="overwrite=True"):
        warpkit.sph.run(SOD, out=out, backend="cpu")
    assert warpkit.sph.run(SOD, out=out, backend="cpu", overwrite=True)["steps"] == s["steps"]
    # A bad case names its key.
    with pytest.raises(ValueError, match="t_end"):
        warpkit.sph.run(SOD.replace("t_end = 0.05", "t_end = -1"), out=tmp_path / "bad")
    with pytest.raises(ValueError, match="resolutio"):
        warpkit.sph.run("[ic]\nresolutio = 8\n", out=tmp_path / "bad")


def test_run_sedov_from_a_file(tmp_path):
    # The case's own [output] dir, relative to the working directory, when out is None.
    case = tmp_path / "sedov.toml"
    case.write_text('[ic]\nkind = "sedov"\nresolution = 8\n[run]\nt_end = 0.002\n'
                    f'[output]\nimages = false\ndir = "{(tmp_path / "blast").as_posix()}"\n')
    s = warpkit.sph.run(case, backend="cpu")
    assert s["dir"] == str(tmp_path / "blast") and s["particles"] == 8**3
    assert s["time"] == pytest.approx(0.002) and os.path.isfile(s["profile"])
    header = open(s["profile"]).readline()
    assert header.startswith("r,rho,"), header


def test_run_stops_on_keyboard_interrupt(tmp_path):
    # A Sedov blast of minutes: Ctrl-C (here interrupt_main) ends it after the current step,
    # with the final snapshot, diagnostics and profile written.
    case = '[ic]\nkind = "sedov"\nresolution = 24\n[run]\nt_end = 1.0\n[output]\nimages = false\n'
    timer = threading.Timer(1.0, _thread.interrupt_main)
    t0 = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            warpkit.sph.run(case, out=tmp_path / "run", backend="cpu")
    finally:
        timer.cancel()
    assert time.perf_counter() - t0 < 10
    for name in ("snapshot_final.gadget", "diagnostics.csv", "profile.csv"):
        assert (tmp_path / "run" / name).exists(), name
