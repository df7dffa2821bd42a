"""Bad, degenerate and unusual input on the CPU backend: a TypeError or ValueError naming the
argument, or the right answer; never a silently wrong result (what test_warpkit.py does not
already cover)."""

import _thread
import threading
import time

import numpy as np
import pytest

import warpkit


def bodies(n=50, seed=0):
    rng = np.random.default_rng(seed)
    b = np.empty((n, 4), np.float32)
    b[:, :3] = rng.random((n, 3)) - 0.5
    b[:, 3] = 1.0 / n
    return b


def queries(n=10, seed=1):
    return (np.random.default_rng(seed).random((n, 3)) - 0.5).astype(np.float32)


def shifted_sum(src, q, delta=0.1):
    d = src[None, :, :3].astype(np.float64) - q[:, None, :].astype(np.float64)
    return -(src[None, :, 3] / (np.sqrt((d * d).sum(-1)) + delta)).sum(1)


def unit_cube():
    nodes = np.array([[i, j, k] for k in (0, 1) for j in (0, 1) for i in (0, 1)], np.float64)
    return nodes, np.array([[0, 1, 3, 2, 4, 5, 7, 6]], np.uint32)


@pytest.mark.parametrize("dtype", [np.complex64, bool, "U1"])
def test_arrays_that_are_not_real_numbers_are_type_errors(dtype):
    # NumPy would drop the imaginary part or read True as 1 without a word.
    b, q = bodies(), queries()
    nodes, elems = unit_cube()
    for what, call in [
        ("positions", lambda: warpkit.gravity(b.astype(dtype), backend="cpu")),
        ("masses", lambda: warpkit.gravity(b[:, :3], b[:, 3].astype(dtype), backend="cpu")),
        ("queries", lambda: warpkit.sbh(b, q.astype(dtype), backend="cpu")),
        ("sources", lambda: warpkit.sbh(b.astype(dtype), q, backend="cpu")),
        ("normals", lambda: warpkit.sbh(b, q, normals=np.ones((50, 3), dtype), kernel="winding",
                                        backend="cpu")),
        ("nodes", lambda: warpkit.fem.assemble(nodes.astype(dtype), elems, young=1.0,
                                               poisson=0.3, backend="cpu")),
        ("elements", lambda: warpkit.fem.assemble(nodes, elems.astype(dtype), young=1.0,
                                                  poisson=0.3, backend="cpu")),
    ]:
        with pytest.raises(TypeError, match=what):
            call()


def test_none_and_non_numbers_are_type_errors_naming_the_argument():
    b, q = bodies(), queries()
    nodes, elems = unit_cube()
    for what, call in [
        ("positions", lambda: warpkit.gravity(None, backend="cpu")),
        ("queries", lambda: warpkit.sbh(b, None, backend="cpu")),
        ("elements", lambda: warpkit.fem.assemble(nodes, None, young=1, poisson=0.3)),
        ("positions", lambda: warpkit.gravity(np.array([[1, "a", 2, 3]], object))),
        ("G", lambda: warpkit.gravity(b, G="x", backend="cpu")),
        ("eps", lambda: warpkit.gravity(b, eps=None, backend="cpu")),
        ("param", lambda: warpkit.sbh(b, q, param="x", backend="cpu")),
        ("samples", lambda: warpkit.sbh(b, q, samples=1.5, backend="cpu")),  # not truncated to 1
        ("seed", lambda: warpkit.sbh(b, q, seed=None, backend="cpu")),
    ]:
        with pytest.raises(TypeError, match=what):
            call()
    # Lists and object arrays of numbers are fine.
    ref = warpkit.gravity(b, backend="cpu")
    np.testing.assert_array_equal(warpkit.gravity(b.tolist(), backend="cpu"), ref)
    np.testing.assert_array_equal(warpkit.gravity(b.astype(object), backend="cpu"), ref)


def test_flags_are_true_or_false():
    # bool("False") is True: quadrupole="False" ran with quadrupoles.
    b, q = bodies(), queries()
    for name, call in [
        ("quadrupole", lambda: warpkit.gravity(b, quadrupole="False", backend="cpu")),
        ("potential", lambda: warpkit.gravity(b, potential="no", backend="cpu")),
        ("coherent", lambda: warpkit.sbh(b, q, coherent=None, backend="cpu")),
        ("paper_allocation", lambda: warpkit.sbh(b, q, paper_allocation=2, backend="cpu")),
    ]:
        with pytest.raises(TypeError, match=name):
            call()
    ref = warpkit.gravity(b, quadrupole=True, backend="cpu")
    for v in (np.True_, 1):
        np.testing.assert_array_equal(warpkit.gravity(b, quadrupole=v, backend="cpu"), ref)


def test_integers_out_of_range_are_value_errors_naming_the_argument():
    # Were OverflowErrors without the argument's name.
    b, q = bodies(), queries()
    for name, v in [("samples", 2**32), ("samples", 2**64), ("levels", 2**40), ("seed", 2**64),
                    ("seed", -1), ("samples", -1)]:
        with pytest.raises(ValueError, match=name):
            warpkit.sbh(b, q, backend="cpu", **{name: v})
    assert warpkit.sbh(b, q, seed=2**64 - 1, backend="cpu").shape == (10,)


def test_values_past_float32_are_named_not_reported_as_infinities():
    b = bodies()
    with pytest.raises(ValueError, match=r"eps = 1e\+300 is beyond float32"):
        warpkit.gravity(b, eps=1e300, backend="cpu")
    with pytest.raises(ValueError, match=r"beta = 1e\+300 is beyond float32"):
        warpkit.sbh(b, queries(), beta=1e300, method="bh", backend="cpu")
    with pytest.raises(ValueError, match=r"positions\[0, 0\] = 1e\+40 is beyond float32"):
        x = b.astype(np.float64)
        x[0, 0] = 1e40
        warpkit.gravity(x, backend="cpu")


def test_float32_overflow_of_the_sums_is_a_value_error_not_nan():
    # Finite float32 masses whose moments overflow: the accelerations came back as NaN, the sums
    # at the queries as -inf.
    b = bodies()
    b[:, 3] = 1e37
    with pytest.raises(ValueError, match="overflowed float32"):
        warpkit.gravity(b, backend="cpu")
    with pytest.raises(ValueError, match="overflowed float32"):
        warpkit.gravity(b, potential=True, backend="cpu")
    b = bodies()
    b[:, 3] = 1e38
    with pytest.raises(ValueError, match="overflowed float32"):
        warpkit.sbh(b, queries(), method="direct", backend="cpu")
    # Without softening, distances of 1e-15 (squares 1e-30): NaN accelerations before.
    b = bodies()
    b[:, :3] *= 1e-15
    with pytest.raises(ValueError, match="distances too small"):
        warpkit.gravity(b, eps=0.0, backend="cpu")


def test_coincident_bodies_without_softening_are_value_errors():
    # 3 bodies at one point with eps = 0 gave accelerations of 1e12 from rounded centres of mass.
    b = bodies()
    b[[3, 17, 40], :3] = [0.0, 0.25, -0.125]
    b[40, 0] = -0.0  # the same point
    for kw in [{}, {"traversal": "vote"}, {"potential": True}]:
        with pytest.raises(ValueError, match="bodies 3 and 17 are at the same point"):
            warpkit.gravity(b, eps=0.0, backend="cpu", **kw)
    # With softening they are fine: the force between them is 0.
    assert np.isfinite(warpkit.gravity(b, eps=0.05, backend="cpu")).all()
    # A single body, and distinct bodies at eps = 0, still work.
    assert (warpkit.gravity(b[:1], eps=0.0, backend="cpu") == 0).all()
    assert np.isfinite(warpkit.gravity(bodies(), eps=0.0, backend="cpu")).all()


def test_sbh_coordinates_past_the_float32_kernels_are_value_errors():
    # A source at 1e25 made Barnes–Hut drop every term (an error of 100%); queries at 1e30 read 0.
    b, q = bodies(), queries()
    far = b.copy()
    far[0, 0] = 1e25
    with pytest.raises(ValueError, match="source 0 has a coordinate beyond"):
        warpkit.sbh(far, q, method="bh", backend="cpu")
    with pytest.raises(ValueError, match="query 0 has a coordinate beyond"):
        warpkit.sbh(b, q * 1e30, method="direct", backend="cpu")
    # Within the bound the answer is right.
    far[0, 0] = 1e15
    got = warpkit.sbh(far, q, method="bh", backend="cpu")
    np.testing.assert_allclose(got, shifted_sum(far, q), rtol=1e-5)


def test_lengths_whose_float32_squares_overflow_are_value_errors():
    # eps = 1e20 or a plummer ε of 1e20: every term read 0 (the potential of the others is
    # -Σm/ε ≈ -1e-19 here); bodies spread over 1e22 likewise.
    b, q = bodies(), queries()
    with pytest.raises(ValueError, match="eps = 1e\\+20 is beyond 1e\\+18"):
        warpkit.gravity(b, eps=1e20, potential=True, backend="cpu")
    with pytest.raises(ValueError, match="param .ε. = 1e\\+20 is beyond"):
        warpkit.sbh(b, q, kernel="plummer", param=1e20, method="direct", backend="cpu")
    far = b.copy()
    far[:, :3] *= 1e22
    with pytest.raises(ValueError, match="body 0 has a coordinate beyond"):
        warpkit.gravity(far, backend="cpu")
    # The shifted kernel's δ is not squared: right at 1e30.
    got = warpkit.sbh(b, q, param=1e30, method="direct", backend="cpu")
    np.testing.assert_allclose(got, -b[:, 3].sum() / 1e30, rtol=1e-5)
    # At 1e18 the potential is right.
    _, pot = warpkit.gravity(b, eps=1e18, potential=True, backend="cpu")
    np.testing.assert_allclose(pot, -(b[:, 3].sum() - b[:, 3]) / 1e18, rtol=1e-4)


def test_sbh_sources_the_octree_cannot_separate_are_a_value_error():
    # One source 1e9 away puts the other 49 in one bucket past the tree's depth: the estimate was
    # biased by 25% at any number of samples.
    b, q = bodies(), queries()
    b[0, 0] = 1e9
    with pytest.raises(ValueError, match="closer than the octree resolves"):
        warpkit.sbh(b, q, samples=64, backend="cpu")
    # Barnes–Hut and direct summation treat a bucket body by body: right.
    for method in ["bh", "direct"]:
        got = warpkit.sbh(b, q, method=method, backend="cpu")
        np.testing.assert_allclose(got, shifted_sum(b, q), rtol=1e-5)
    # Coincident sources share a bucket legitimately.
    c = np.vstack([np.tile(bodies()[1:2], (49, 1)), bodies()[2:3]])
    got = warpkit.sbh(c, q, samples=16, backend="cpu")
    np.testing.assert_allclose(got, shifted_sum(c, q), rtol=1e-4)


def test_sbh_smooth_kernel_underflow_is_a_value_error():
    # α = 1e4 makes every e^{-α r} underflow float32 for queries 0.01 from their nearest source:
    # the distance read 87/α = 0.0087 instead of the nearest source's distance (~0.1).
    b, q = bodies(), queries()
    for method in ["direct", "bh", "sbh"]:
        with pytest.raises(ValueError, match="underflows float32"):
            warpkit.sbh(b, q, kernel="smooth", param=1e4, method=method, backend="cpu")
    # A query on a source keeps its sum normal: right (distance −ln(w)/α from that source).
    got = warpkit.sbh(b, b[:3, :3], kernel="smooth", param=1e4, method="direct", backend="cpu")
    np.testing.assert_allclose(got, -np.log(b[:3, 3].astype(np.float64)) / 1e4, rtol=1e-5)


def test_sbh_options_the_method_or_kernel_would_ignore_are_value_errors():
    b, q = bodies(), queries()
    for match, kw in [
        ("normals are for", {"normals": np.ones((50, 3))}),
        ("moments='quadrupole' applies to", {"moments": "quadrupole", "method": "sbh"}),
        ("moments='quadrupole' applies to", {"moments": "quadrupole", "method": "direct"}),
        ("warps='rows' applies to", {"warps": "rows", "method": "bh_query"}),
    ]:
        with pytest.raises(ValueError, match=match):
            warpkit.sbh(b, q, backend="cpu", **kw)
    assert warpkit.sbh(b, q, moments="quadrupole", warps="rows", method="bh",
                       backend="cpu").shape == (10,)


@pytest.mark.parametrize(
    "bad, match",
    [
        (-1, r"elements\[0, 0\] = -1"),
        (2**32, r"elements\[0, 0\] = 4294967296"),        # wrapped onto node 0
        (-(2**32), r"elements\[0, 0\] = -4294967296"),    # wrapped onto node 0
        (0.7, r"elements\[0, 0\] = 0.7: node indices must be integers"),  # truncated to 0
        (np.nan, "must be integers"),
    ],
)
def test_fem_element_indices_are_checked_before_the_uint32_cast(bad, match):
    nodes, elems = unit_cube()
    e = elems.astype(np.float64 if isinstance(bad, float) else np.int64)
    e[0, 0] = bad
    with pytest.raises(ValueError, match=match):
        warpkit.fem.assemble(nodes, e, young=1.0, poisson=0.3, backend="cpu")


def test_fem_integral_float_indices_are_accepted():
    nodes, elems = unit_cube()
    ref = warpkit.fem.assemble(nodes, elems, young=1.0, poisson=0.3, backend="cpu")
    got = warpkit.fem.assemble(nodes, elems.astype(np.float64), young=1.0, poisson=0.3,
                               backend="cpu")
    assert abs(got - ref).max() == 0


def test_nbody_bad_config_and_out_are_type_and_value_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for bad in [b"[ic]\nn = 5\n", {"ic": {"n": 5}}]:
        with pytest.raises(TypeError, match="config"):
            warpkit.nbody(bad, out=str(tmp_path / "x"), backend="cpu")
    # A path object names a file: one that is not there is said.
    with pytest.raises(ValueError, match="c.toml"):
        warpkit.nbody(tmp_path / "c.toml", out=str(tmp_path / "x"), backend="cpu")
    # None wrote a directory named "None", "" wrote into the current directory.
    with pytest.raises(TypeError, match="out"):
        warpkit.nbody("[ic]\nn = 5\n", out=None, backend="cpu")
    with pytest.raises(ValueError, match="out must name a directory"):
        warpkit.nbody("[ic]\nn = 5\n", out="", backend="cpu")
    assert list(tmp_path.iterdir()) == []


def test_nbody_refuses_a_previous_runs_directory(tmp_path):
    config = """
[ic]
kind = "plummer"
n = 32
[run]
t_end = 0.02
dt = 0.01
[output]
image_every = 0
"""
    out = str(tmp_path / "run")
    warpkit.nbody(config, out=out, backend="cpu")
    diagnostics = (tmp_path / "run" / "diagnostics.csv").read_bytes()
    with pytest.raises(ValueError, match="previous run's outputs") as e:
        warpkit.nbody(config.replace("t_end = 0.02", "t_end = 0.04"), out=out, backend="cpu")
    # The Python keyword, not the command line's option.
    assert "overwrite=True" in str(e.value) and "--overwrite" not in str(e.value), e.value
    assert (tmp_path / "run" / "diagnostics.csv").read_bytes() == diagnostics
    with pytest.raises(TypeError, match="overwrite"):
        warpkit.nbody(config, out=out, backend="cpu", overwrite="yes")
    s = warpkit.nbody(config.replace("t_end = 0.02", "t_end = 0.04"), out=out, backend="cpu",
                      overwrite=True)
    assert s["time"] > 0.03, s
    assert (tmp_path / "run" / "diagnostics.csv").read_bytes() != diagnostics


def test_nbody_stops_on_keyboard_interrupt(tmp_path):
    # A run of a minute or more: Ctrl-C (here interrupt_main) stops it after the current step
    # with its final snapshot, instead of being held until the run ends.
    config = """
[ic]
kind = "plummer"
n = 1000
[run]
t_end = 1000.0
dt = 0.01
[output]
diag_every = 10
snapshot_every = 0
image_every = 0
"""
    timer = threading.Timer(1.0, _thread.interrupt_main)
    t0 = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            warpkit.nbody(config, out=str(tmp_path / "run"), backend="cpu")
    finally:
        timer.cancel()
    assert time.perf_counter() - t0 < 10
    assert (tmp_path / "run" / "snapshot_final.gadget").exists()


def test_nbody_config_may_be_a_path(tmp_path):
    config = """
[ic]
kind = "plummer"
n = 32
[run]
t_end = 0.02
dt = 0.01
[output]
image_every = 0
"""
    (tmp_path / "pl.toml").write_text(config)
    a = warpkit.nbody(str(tmp_path / "pl.toml"), out=str(tmp_path / "a"), backend="cpu")
    b = warpkit.nbody(tmp_path / "pl.toml", out=str(tmp_path / "b"), backend="cpu")
    assert a["particles"] == b["particles"] == 32 and a["steps"] == 2, a


def test_flags_are_not_numbers():
    # float(True) is 1.0 and operator.index(True) is 1: a flag where a number belongs is refused.
    b = bodies(100)
    with pytest.raises(TypeError, match="eps must be a real number, got True"):
        warpkit.gravity(b, eps=True, backend="cpu")
    with pytest.raises(TypeError, match="young and poisson must be real numbers"):
        warpkit.fem.assemble(*unit_cube(), young=True, poisson=0.3, backend="cpu")


def test_fem_one_based_indices_are_named():
    nodes, elems = unit_cube()
    with pytest.raises(ValueError, match="1-based"):
        warpkit.fem.assemble(nodes, elems + 1, young=1.0, poisson=0.3, backend="cpu")
