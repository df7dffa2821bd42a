"""warpkit from Python: Barnes–Hut gravity (and potentials), stochastic Barnes–Hut sums at query
points, hex8 FEM assembly and N-body runs.

Arrays go in and out as NumPy arrays; the work runs on the GPU when one is usable and on
warpkit's CPU backend otherwise (``backend="auto"``, or ``"gpu"`` / ``"cpu"``).

>>> import numpy as np, warpkit
>>> bodies = np.random.default_rng(1).random((1000, 4), dtype=np.float32)  # x, y, z, m
>>> acc = warpkit.gravity(bodies, eps=0.01, theta=0.5)                    # (1000, 3) float32
>>> acc, pot = warpkit.gravity(bodies, eps=0.01, potential=True)          # and (1000,) float32
>>> phi = warpkit.sbh(bodies, np.zeros((5, 3), np.float32), samples=4)   # (5,) float64
"""

import numpy as _np

from . import _warpkit
from . import fem
from ._warpkit import backend_name

__all__ = ["gravity", "sbh", "fem", "nbody", "backend_name"]


def _bodies(positions, masses, what):
    """An (N, 4) float32 C-contiguous array from (N, 4) rows or (N, 3) positions + (N,) masses."""
    p = _np.asarray(positions)
    if masses is None:
        if p.ndim != 2 or p.shape[1] != 4:
            raise ValueError(f"{what} without {'masses' if what == 'positions' else 'weights'} "
                             f"must have shape (N, 4), got {p.shape}")
        return _np.ascontiguousarray(p, dtype=_np.float32)
    m = _np.asarray(masses)
    if p.ndim != 2 or p.shape[1] != 3:
        raise ValueError(f"{what} must have shape (N, 3), got {p.shape}")
    if m.shape != (p.shape[0],):
        raise ValueError(f"the masses or weights must have shape ({p.shape[0]},), got {m.shape}")
    bodies = _np.empty((p.shape[0], 4), dtype=_np.float32)
    bodies[:, :3] = p
    bodies[:, 3] = m
    return bodies


def _points(a, what, n=None):
    """An (n, 3) float32 C-contiguous array."""
    a = _np.asarray(a)
    if a.ndim != 2 or a.shape[1] != 3 or (n is not None and a.shape[0] != n):
        want = f"({n}, 3)" if n is not None else "(Q, 3)"
        raise ValueError(f"{what} must have shape {want}, got {a.shape}")
    return _np.ascontiguousarray(a, dtype=_np.float32)


def gravity(positions, masses=None, *, eps=0.05, theta=0.5, G=1.0, quadrupole=False,
            traversal="group2", potential=False, backend="auto"):
    """Barnes–Hut accelerations of every body, float32, shape (N, 3).

    ``positions`` is either an (N, 4) float32 array of x, y, z, m (read without a copy when it is
    C-contiguous), or (N, 3) positions with ``masses`` of shape (N,). ``traversal`` is ``"vote"``
    (the seed's kernel), ``"group"`` or ``"group2"``; ``quadrupole`` adds the cells' quadrupole
    moments (group traversals). With ``potential=True`` returns ``(acc, pot)``: ``pot`` (N,)
    float32 is each body's potential ``-G Σ_{j≠i} m_j / sqrt(r² + eps²)`` of the others, from the
    potential kernel (``"group2"`` groups, monopoles: ``quadrupole`` must stay False). Bad input
    (NaN, non-positive masses, wrong shapes, θ < 0) raises ``ValueError`` before any work.
    """
    bodies = _bodies(positions, masses, "positions")
    if potential:
        if quadrupole or traversal != "group2":
            raise ValueError("potential=True runs the \"group2\" monopole traversal: "
                             "leave quadrupole=False and traversal=\"group2\"")
        return _warpkit.gravity_potential(bodies, float(eps), float(theta), float(G),
                                          str(backend))
    return _warpkit.gravity(bodies, float(eps), float(theta), float(G), bool(quadrupole),
                            str(traversal), str(backend))


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
    unknown names) raises ``ValueError`` before any work.
    """
    for name, v in (("samples", samples), ("levels", levels), ("seed", seed)):
        if int(v) < 0:  # else an OverflowError from the unsigned conversion
            raise ValueError(f"{name} must be ≥ 0, got {v}")
    src = _bodies(sources, weights, "sources")
    q = _points(queries, "queries")
    d = None if normals is None else _points(normals, "normals", src.shape[0])
    return _warpkit.sbh(src, q, d, str(method), str(kernel),
                        None if param is None else float(param), int(samples), float(beta),
                        int(levels), int(seed), bool(coherent), bool(paper_allocation),
                        str(warps), str(moments), str(backend))


def nbody(config=None, out="nbody-out", *, backend="auto"):
    """Runs ``warpkit nbody`` with a TOML configuration (the CLI's ``--config`` format; ``None``:
    the backend's default collision), writing into the directory ``out``; returns a summary dict
    (``backend``, ``particles``, ``steps``, ``time``, ``wall_s``, ``energy_drift``,
    ``virial_ratio``, ``dir``). A bad configuration raises ``ValueError``."""
    return _warpkit.nbody(config, str(out), str(backend))
