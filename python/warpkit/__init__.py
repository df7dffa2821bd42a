"""warpkit from Python: Barnes–Hut gravity (and potentials), stochastic Barnes–Hut sums at query
points, hex8 FEM assembly, N-body runs, SPH neighbours, densities and runs (``warpkit.sph``), and
planets and giant impacts (``warpkit.planet``).

Arrays go in and out as NumPy arrays; the work runs on the GPU when one is usable and on
warpkit's CPU backend otherwise (``backend="auto"``, or ``"gpu"`` / ``"cpu"``).

>>> import numpy as np, warpkit
>>> bodies = np.random.default_rng(1).random((1000, 4), dtype=np.float32)  # x, y, z, m
>>> acc = warpkit.gravity(bodies, eps=0.01, theta=0.5)                    # (1000, 3) float32
>>> acc, pot = warpkit.gravity(bodies, eps=0.01, potential=True)          # and (1000,) float32
>>> phi = warpkit.sbh(bodies, np.zeros((5, 3), np.float32), samples=4)   # (5,) float64
"""

import math as _math
import operator as _operator
import os as _os

import numpy as _np

from . import _warpkit
from . import fem
from ._warpkit import backend_name

__all__ = ["gravity", "sbh", "fem", "nbody", "sph", "planet", "backend_name"]


_F32_MAX = float(_np.finfo(_np.float32).max)


def _real(a, what):
    """``a`` as an array of real numbers. NumPy would cast complex numbers (dropping the imaginary
    part) and booleans silently, and fail on None or strings without naming the argument."""
    if a is None:
        raise TypeError(f"{what} must be an array of real numbers, not None")
    try:
        arr = _np.asarray(a)
        if arr.dtype.kind == "O":
            arr = arr.astype(_np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} must be an array of real numbers: {e}") from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{what} must be an array of real numbers (integer or floating point), "
                        f"got dtype {arr.dtype}")
    return arr


def _f32_array(a, what):
    """``a`` (real) as float32, C-contiguous: finite values past float32's range are named here
    (as infinities they would be reported as non-finite input)."""
    with _np.errstate(over="ignore"):
        out = _np.ascontiguousarray(a, dtype=_np.float32)
    if a.dtype.itemsize > 4 or a.dtype.kind in "iu":
        over = _np.isinf(out) & _np.isfinite(a)
        if over.any():
            i = tuple(int(k) for k in _np.argwhere(over)[0])
            raise ValueError(f"{what}{list(i)} = {a[i]} is beyond float32's range (±3.4e38)")
    return out


def _scalar(v, what):
    """A float parameter that the extension converts to float32: named when it is not a real
    number or past float32's range (which would become ±inf)."""
    # float(True) is 1.0: a flag given where a number belongs (eps=True) is refused.
    if isinstance(v, (bool, _np.bool_)):
        raise TypeError(f"{what} must be a real number, got {v!r}")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a real number, got {v!r}") from None
    if _math.isfinite(x) and abs(x) > _F32_MAX:
        raise ValueError(f"{what} = {v} is beyond float32's range (±3.4e38)")
    return x


def _integer(v, what, bits):
    """An unsigned integer parameter of ``bits`` bits: a float would be truncated silently, a
    value out of range would raise an OverflowError without the argument's name."""
    if isinstance(v, (bool, _np.bool_)):
        raise TypeError(f"{what} must be an integer, got {v!r}")
    try:
        i = _operator.index(v)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {v!r}") from None
    if not 0 <= i < 1 << bits:
        raise ValueError(f"{what} must be in 0..{(1 << bits) - 1}, got {i}")
    return i


def _flag(v, what):
    """A True/False option: ``bool("False")`` is True, so strings and other objects are refused."""
    if isinstance(v, (bool, _np.bool_)) or (isinstance(v, (int, _np.integer)) and v in (0, 1)):
        return bool(v)
    raise TypeError(f"{what} must be True or False, got {v!r}")


def _finite(a, what):
    """``a`` when every value is finite: float32 overflow (huge masses, weights or G, or with
    eps = 0 distances whose squares underflow) would otherwise come back as inf or NaN."""
    bad = ~_np.isfinite(a)
    if bad.any():
        i = int(_np.argwhere(bad)[0][0])
        raise ValueError(f"{what} {i} overflowed float32 ({a[i]}): masses or weights, G or "
                         f"coordinates too large for float32 arithmetic, or without softening "
                         f"distances too small (their squares underflow); rescale the units")
    return a


def _bodies(positions, masses, what):
    """An (N, 4) float32 C-contiguous array from (N, 4) rows or (N, 3) positions + (N,) masses."""
    p = _real(positions, what)
    if masses is None:
        if p.ndim != 2 or p.shape[1] != 4:
            raise ValueError(f"{what} without {'masses' if what == 'positions' else 'weights'} "
                             f"must have shape (N, 4), got {p.shape}")
        return _f32_array(p, what)
    m = _real(masses, "masses" if what == "positions" else "weights")
    if p.ndim != 2 or p.shape[1] != 3:
        raise ValueError(f"{what} must have shape (N, 3), got {p.shape}")
    if m.shape != (p.shape[0],):
        raise ValueError(f"the masses or weights must have shape ({p.shape[0]},), got {m.shape}")
    bodies = _np.empty((p.shape[0], 4), dtype=_np.float32)
    bodies[:, :3] = _f32_array(p, what)
    bodies[:, 3] = _f32_array(m, "masses" if what == "positions" else "weights")
    return bodies


def _points(a, what, n=None):
    """An (n, 3) float32 C-contiguous array."""
    a = _real(a, what)
    if a.ndim != 2 or a.shape[1] != 3 or (n is not None and a.shape[0] != n):
        want = f"({n}, 3)" if n is not None else "(Q, 3)"
        raise ValueError(f"{what} must have shape {want}, got {a.shape}")
    return _f32_array(a, what)


# Coordinates (and softening lengths) stay within ±1e18 (`warpkit::bh::MAX_COORD`): the float32
# kernels square distances, and past about 1.8e19 r² overflows, a term becomes 0 (potentials and
# sums of zeros) and the trees' boxes stop resolving.
_MAX_COORD = _warpkit.MAX_COORD


def _coordinates(a, what):
    far = _np.abs(a[:, :3]) > _MAX_COORD  # NaN and inf: the extension names them
    far &= _np.isfinite(a[:, :3])
    if far.any():
        i = int(_np.argwhere(far)[0][0])
        raise ValueError(f"{what} {i} has a coordinate beyond ±{_MAX_COORD:g} "
                         f"({a[i, :3].tolist()}): the float32 kernels square distances; "
                         f"rescale the units")


def _length(v, what):
    # Compared as the float32 the kernels get (the limit is a float32 too).
    if _math.isfinite(v) and float(_np.float32(v)) > _MAX_COORD:
        raise ValueError(f"{what} = {v:g} is beyond {_MAX_COORD:g}: the float32 kernels square "
                         f"it; rescale the units")
    return v


def gravity(positions, masses=None, *, eps=0.05, theta=0.5, G=1.0, quadrupole=False,
            traversal="group2", potential=False, backend="auto"):
    """Barnes–Hut accelerations of every body, float32, shape (N, 3).

    ``positions`` is either an (N, 4) float32 array of x, y, z, m (read without a copy when it is
    C-contiguous), or (N, 3) positions with ``masses`` of shape (N,). ``traversal`` is ``"vote"``
    (the seed's kernel), ``"group"`` or ``"group2"``; ``quadrupole`` adds the cells' quadrupole
    moments (group traversals). With ``potential=True`` returns ``(acc, pot)``: ``pot`` (N,)
    float32 is each body's potential ``-G Σ_{j≠i} m_j / sqrt(r² + eps²)`` of the others, from the
    potential kernel (``"group2"`` groups, monopoles: ``quadrupole`` must stay False). Bad input
    (NaN, non-positive masses, wrong shapes, θ < 0, two bodies at one point with ``eps=0``,
    coordinates or ``eps`` beyond 1e18, where float32 squares overflow)
    raises ``ValueError`` before any work, arrays that are not real numbers ``TypeError``;
    accelerations that overflow float32 raise ``ValueError``.
    """
    eps, theta, G = _length(_scalar(eps, "eps"), "eps"), _scalar(theta, "theta"), _scalar(G, "G")
    quadrupole, potential = _flag(quadrupole, "quadrupole"), _flag(potential, "potential")
    bodies = _bodies(positions, masses, "positions")
    _coordinates(bodies, "body")
    if potential:
        if quadrupole or traversal != "group2":
            raise ValueError("potential=True runs the \"group2\" monopole traversal: "
                             "leave quadrupole=False and traversal=\"group2\"")
        acc, pot = _warpkit.gravity_potential(bodies, eps, theta, G, str(backend))
        return _finite(acc, "the acceleration of body"), _finite(pot, "the potential of body")
    acc = _warpkit.gravity(bodies, eps, theta, G, quadrupole, str(traversal), str(backend))
    return _finite(acc, "the acceleration of body")


def sbh(sources, queries, weights=None, *, normals=None, method="sbh", kernel="shifted",
        param=None, samples=1, beta=2.0, levels=2, seed=1, coherent=True, paper_allocation=False,
        warps="morton", moments="monopole", backend="auto"):
    """Sums over weighted sources at query points (the CLI's ``warpkit sbh``), float64, shape (Q,).

    ``sources`` is an (M, 4) array of x, y, z, w, or (M, 3) positions with ``weights`` (M,);
    ``queries`` is (Q, 3). ``kernel``: ``"shifted"`` ``-w/(r + δ)``, ``"plummer"``
    ``-w/sqrt(r² + ε²)``, ``"winding"`` (the winding number of oriented samples: ``normals``
    (M, 3) are the area-weighted normals, ``weights`` the areas) or ``"smooth"`` (the smooth
    distance ``-ln(Σ w e^{-α r})/α``, returned as the distance); ``param`` is δ, ε or α (default
    0.1, 0.1, 50). ``method``: ``"sbh"`` (stochastic Barnes–Hut, Madan et al. 2025: ``samples``
    paths per stratum, ``levels`` 2 for the 64-ary tree or 1, ``seed``, warp-``coherent`` random
    streams, ``paper_allocation`` for S paths in every stratum), ``"bh"`` (Barnes–Hut with far
    ratio ``beta``, one walk per warp of queries: ``warps`` ``"morton"`` or ``"rows"``,
    ``moments`` ``"monopole"`` or ``"quadrupole"``), ``"bh_query"`` (one walk per query) or
    ``"direct"`` (float32 terms summed in float64). Values are float32 sums except ``"direct"``.
    Bad input (NaN, negative weights, wrong shapes, a query on a source of a singular kernel,
    unknown names, coordinates beyond ±1e18, ``normals`` without ``"winding"``, ``moments`` or
    ``warps`` with a method other than ``"bh"``; for ``"sbh"`` distinct sources closer than the
    octree's 30 levels resolve) raises ``ValueError`` before any work.
    """
    # Options that the chosen kernel or method would ignore without a word (as the CLI refuses
    # --quadrupole with the vote kernel).
    if normals is not None and kernel != "winding":
        raise ValueError(f"normals are for kernel=\"winding\"; kernel {kernel!r} has none")
    for name, v, default in (("moments", moments, "monopole"), ("warps", warps, "morton")):
        if v != default and method != "bh":
            raise ValueError(f"{name}={v!r} applies to method=\"bh\" only, not {method!r}")
    samples, levels = _integer(samples, "samples", 32), _integer(levels, "levels", 32)
    seed = _integer(seed, "seed", 64)
    coherent = _flag(coherent, "coherent")
    paper_allocation = _flag(paper_allocation, "paper_allocation")
    param = None if param is None else _scalar(param, "param")
    beta = _scalar(beta, "beta")
    src = _bodies(sources, weights, "sources")
    q = _points(queries, "queries")
    d = None if normals is None else _points(normals, "normals", src.shape[0])
    _coordinates(src, "source")
    _coordinates(q, "query")
    if kernel == "plummer" and param is not None:
        _length(param, "param (ε)")
    sums = _warpkit.sbh(src, q, d, str(method), str(kernel), param, samples, beta, levels, seed,
                        coherent, paper_allocation, str(warps), str(moments), str(backend))
    return _finite(sums, "the sum at query")


def nbody(config=None, out="nbody-out", *, backend="auto", overwrite=False):
    """Runs ``warpkit nbody`` with a TOML configuration (the CLI's ``--config`` format: the path of
    a file, a string naming an existing file, or the TOML text; ``None``: the backend's default
    collision), writing into the directory ``out``; returns a summary dict
    (``backend``, ``particles``, ``steps``, ``time``, ``wall_s``, ``energy_drift``,
    ``virial_ratio``, ``dir``). A bad configuration raises ``ValueError``, and so does an ``out``
    holding a previous run's diagnostics or snapshots unless ``overwrite`` is True. Ctrl-C stops
    the run after the current step (its final snapshot and logs written) and raises
    KeyboardInterrupt."""
    overwrite = _flag(overwrite, "overwrite")
    return _warpkit.nbody(_toml_text(config), _out_dir(out), str(backend), overwrite)


def _toml_text(config):
    """A run's configuration as TOML text (or None): ``config`` is the path of a file, a string
    naming an existing file, or the text itself."""
    if isinstance(config, _os.PathLike) or (isinstance(config, str) and "\n" not in config
                                             and _os.path.isfile(config)):
        path = _os.fspath(config)
        try:
            with open(path, encoding="utf-8") as f:
                config = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"config {path}: {e}") from None
    if config is not None and not isinstance(config, str):
        raise TypeError("config must be a TOML file's path, the TOML text (str) or None, got "
                        f"{type(config).__name__}")
    return config


def _out_dir(out):
    """A run's output directory as a str path."""
    try:
        out = _os.fspath(out)
    except TypeError:
        raise TypeError(f"out must be a path (str or os.PathLike), got {out!r}") from None
    if not isinstance(out, str):
        raise TypeError(f"out must be a str path, got {out!r}")
    if not out:
        raise ValueError("out must name a directory (\".\" for the current one), got \"\"")
    return out


# Last: `sph` and `planet` take the helpers above from this module.
from . import planet, sph  # noqa: E402
