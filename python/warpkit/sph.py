"""SPH on your particles: neighbour lists, smoothing lengths and densities (the search of
``warpkit neighbours``), and runs of ``warpkit sph`` cases.

>>> import numpy as np, warpkit.sph
>>> pos = np.random.default_rng(1).random((2000, 3))
>>> A = warpkit.sph.neighbours(pos, h=0.1)        # (2000, 2000) scipy.sparse.csr_matrix
>>> d = warpkit.sph.density(pos, 1 / 2000)         # h iterated to 64 neighbours
>>> d.h, d.rho, d.counts                           # (2000,) float32, float32, int64

``h`` is the kernel's support radius, and a particle's neighbours are those strictly inside it:
particle ``i`` gathers ``j`` when ``|r_i - r_j| < h_i`` (itself included). Names (``method``,
``criterion``, ``kernel``) are the command line's.
"""

import collections as _collections
import math as _math
import warnings as _warnings

import numpy as _np

from . import _warpkit

__all__ = ["neighbours", "density", "run", "Density"]

# The library's bound on the lists' entries (`warpkit::sph::DEFAULT_MAX_PAIRS`, 4 GiB of indices).
_MAX_PAIRS = 1 << 30

Density = _collections.namedtuple("Density", ["h", "rho", "counts"])
Density.__doc__ = """What :func:`density` returns: ``h`` (N,) float32 smoothing lengths, ``rho``
(N,) float32 densities, ``counts`` (N,) int64 gather neighbour counts at ``h`` (each particle
counts itself)."""


def _particles(pos, mass, need_mass):
    """An (N, 4) float32 array x, y, z, m from (N, 3) ``pos`` with ``mass`` (N,) or a scalar, or
    from (N, 4) ``pos`` without ``mass``. Without a mass where none is needed, every mass is 1."""
    from . import _coordinates, _f32_array, _real

    p = _real(pos, "pos")
    if p.ndim != 2 or p.shape[1] not in (3, 4):
        raise ValueError(f"pos must have shape (N, 3), or (N, 4) with the masses as its last "
                         f"column, got {p.shape}")
    if p.shape[0] == 0:
        raise ValueError("pos holds no particles (N = 0)")
    n = p.shape[0]
    bodies = _np.empty((n, 4), dtype=_np.float32)
    if p.shape[1] == 4:
        if mass is not None:
            raise ValueError("pos of shape (N, 4) holds the masses already: leave mass=None")
        bodies[:] = _f32_array(p, "pos")
    else:
        bodies[:, :3] = _f32_array(p, "pos")
        if mass is None:
            if need_mass:
                raise ValueError("mass is needed for the density: give mass (N,) or a scalar, "
                                 "or pos as (N, 4) rows x, y, z, m")
            bodies[:, 3] = 1.0
        else:
            m = _real(mass, "mass")
            if m.ndim == 0:
                m = _np.full(n, m)
            if m.shape != (n,):
                raise ValueError(f"mass must be a scalar or have shape ({n},), got {m.shape}")
            bodies[:, 3] = _f32_array(m, "mass")
    _coordinates(bodies, "particle")
    return bodies


def _smoothing(h, n):
    """``h`` (a scalar or (n,)) as (n,) float32, or None."""
    if h is None:
        return None
    from . import _f32_array, _real

    a = _real(h, "h")
    if a.ndim == 0:
        a = _np.full(n, a)
    if a.shape != (n,):
        raise ValueError(f"h must be a scalar or have shape ({n},), got {a.shape}")
    return _f32_array(a, "h")


def _search(pos, mass, h, n_ngb, tol, method, criterion, kernel, max_pairs, backend):
    from . import _integer, _scalar

    bodies = _particles(pos, mass, need_mass=kernel is not None)
    n = bodies.shape[0]
    h = _smoothing(h, n)
    if n_ngb is not None:
        n_ngb = _scalar(n_ngb, "n_ngb")
        if not (_math.isfinite(n_ngb) and n_ngb >= 1):
            raise ValueError(f"n_ngb must be finite and at least 1, got {n_ngb}")
    tol = _scalar(tol, "tol")
    if not (_math.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be finite and at least 0, got {tol}")
    if max_pairs is not None:
        max_pairs = _integer(max_pairs, "max_pairs", 64)
    r = _warpkit.sph_search(bodies, h, n_ngb, tol, str(method), str(criterion),
                            None if kernel is None else str(kernel), max_pairs, str(backend))
    if r.get("unconverged") is not None and len(r["unconverged"]):
        # The counts of those particles miss n_ngb ± tol (coincident particles, or a count that
        # jumps over the target); their h is the last one tried.
        _warnings.warn(f"warpkit.sph: h iterated to n_ngb ± tol: {r['report']}",
                       RuntimeWarning, stacklevel=3)
    return r


def neighbours(pos, mass=None, h=None, *, n_ngb=None, tol=2.0, criterion="gather",
               method="group", max_pairs=_MAX_PAIRS, return_h=False, backend="auto"):
    """Every particle's neighbour list, as an (N, N) ``scipy.sparse.csr_matrix``.

    ``pos``: (N, 3) positions (``mass`` (N,) or a scalar is optional: the search does not use it),
    or (N, 4) rows x, y, z, m. ``h``: the support radius, one for all (a scalar) or one per
    particle (N,); with ``h=None`` each particle's h is iterated until it gathers ``n_ngb`` ± ``tol``
    neighbours (``n_ngb`` defaults to 64, the command line's), and with both given the iteration
    starts from ``h``. ``criterion``: ``"gather"`` (``|r_ij| < h_i``), ``"scatter"`` (``< h_j``)
    or ``"symmetric"`` (``< max(h_i, h_j)``); ``method``: ``"group"``, ``"vote"`` or ``"cells"``
    (the same lists, other costs).

    Row ``i`` holds ``True`` at each neighbour ``j`` of ``i``, columns ascending (``A.indptr``,
    ``A.indices``: the CSR lists; ``A.sum(axis=1)``: the counts; ``A @ x``: sums over
    neighbours). Without scipy the result is the tuple ``(offsets, indices)`` of int64 arrays, the
    neighbours of ``i`` being ``indices[offsets[i]:offsets[i + 1]]`` (the files of
    ``warpkit neighbours --csr``). With ``return_h=True``: ``(lists, h)``, ``h`` (N,) float32 the
    smoothing lengths used. Lists of more than ``max_pairs`` entries (at most 2^32 - 1) are
    refused before they are filled, with ``ValueError``; so is bad input (NaN, non-positive masses,
    negative h, wrong shapes, unknown names, ``n_ngb`` out of reach). Particles whose h does not
    converge are named in a ``RuntimeWarning``.
    """
    from . import _flag

    return_h = _flag(return_h, "return_h")
    if max_pairs is None:
        raise TypeError("max_pairs must be an integer, got None")
    r = _search(pos, mass, h, n_ngb, tol, method, criterion, None, max_pairs, backend)
    n = len(r["h"])
    offsets, indices = r["offsets"], r["indices"]
    try:
        import scipy.sparse
    except ImportError:
        lists = (offsets, indices.astype(_np.int64))
    else:
        # Column indices fit int32 (N <= 2^30); offsets only below 2^31 entries. The arrays go
        # in without a copy.
        indptr = offsets.astype(_np.int32) if offsets[-1] < 2**31 else offsets
        cols = indices.view(_np.int32) if indptr.dtype == _np.int32 else indices.astype(_np.int64)
        data = _np.ones(len(indices), dtype=bool)
        lists = scipy.sparse.csr_matrix((data, cols, indptr), shape=(n, n))
        lists.has_sorted_indices = True
    return (lists, r["h"]) if return_h else lists


def density(pos, mass=None, h=None, *, n_ngb=None, tol=2.0, kernel="cubic-spline",
            method="group", backend="auto"):
    """Smoothing lengths and SPH densities by summation over the gather neighbours:
    a :class:`Density` ``(h, rho, counts)``.

    ``pos``: (N, 3) positions with ``mass`` (N,) or a scalar, or (N, 4) rows x, y, z, m.
    ``h``, ``n_ngb`` and ``tol`` as for :func:`neighbours` (``h=None``: iterated to ``n_ngb``,
    default 64, ± ``tol``; the same arguments give both functions the same h). ``kernel``:
    ``"cubic-spline"`` (M4) or ``"wendland-c2"``, normalised in 3D with support radius h;
    ``rho_i = sum_j m_j W(|r_ij|, h_i)`` over the ``counts_i`` gather neighbours, itself included.
    Bad input (NaN, non-positive masses, h <= 0, wrong shapes, unknown names) raises
    ``ValueError``; particles whose h does not converge are named in a ``RuntimeWarning``.
    """
    r = _search(pos, mass, h, n_ngb, tol, method, "gather", kernel, None, backend)
    return Density(r["h"], r["rho"], r["counts"].astype(_np.int64))


def run(config=None, out=None, *, backend="auto", overwrite=False):
    """Runs an SPH case, as ``warpkit sph --config`` does, and returns a summary dict.

    ``config``: the TOML case (``[ic]``, ``[run]``, ``[output]``: docs/sph.md) as the path of a
    file, a string naming an existing file, or the TOML text; ``None``: the default Sod tube. A
    case of ``kind = "snapshot"`` with the ``.run.toml`` beside its snapshot continues that run.
    ``out``: the output directory (``None``: the case's ``[output] dir``, default ``sph_out``),
    which receives ``diagnostics.csv``, the snapshots (each with its ``.run.toml``) and
    ``profile.csv``; the images beside the snapshots are the command line's. A directory holding
    a previous run's diagnostics or snapshots is refused unless ``overwrite`` is True (or
    ``overwrite = true`` under ``[output]``).

    The dict: ``time`` (the final time), ``steps`` (of this run), ``particles``, ``backend``,
    ``energy_error`` (the total energy's relative change), ``dir``, ``diagnostics``,
    ``snapshot`` (the final one) and ``profile`` (paths). A bad case raises ``ValueError``.
    Ctrl-C stops the run after the current step (its final snapshot, diagnostics and profile
    written) and raises KeyboardInterrupt.
    """
    from . import _flag, _out_dir, _toml_text

    overwrite = _flag(overwrite, "overwrite")
    out = None if out is None else _out_dir(out)
    return _warpkit.sph_run(_toml_text(config), out, str(backend), overwrite)
