"""warpkit from Python: Barnes–Hut gravity, hex8 FEM assembly and N-body runs.

Arrays go in and out as NumPy arrays; the work runs on the GPU when one is usable and on
warpkit's CPU backend otherwise (``backend="auto"``, or ``"gpu"`` / ``"cpu"``).

>>> import numpy as np, warpkit
>>> bodies = np.random.default_rng(1).random((1000, 4), dtype=np.float32)  # x, y, z, m
>>> acc = warpkit.gravity(bodies, eps=0.01, theta=0.5)                    # (1000, 3) float32
"""

import numpy as _np

from . import _warpkit
from . import fem
from ._warpkit import backend_name, nbody

__all__ = ["gravity", "fem", "nbody", "backend_name"]


def gravity(positions, masses=None, *, eps=0.05, theta=0.5, G=1.0, quadrupole=False,
            traversal="group2", backend="auto"):
    """Barnes–Hut accelerations of every body, float32, shape (N, 3).

    ``positions`` is either an (N, 4) float32 array of x, y, z, m (read without a copy when it is
    C-contiguous), or (N, 3) positions with ``masses`` of shape (N,). ``traversal`` is ``"vote"``
    (the seed's kernel), ``"group"`` or ``"group2"``; ``quadrupole`` adds the cells' quadrupole
    moments (group traversals). Bad input (NaN, non-positive masses, wrong shapes, θ < 0) raises
    ``ValueError`` before any work.
    """
    p = _np.asarray(positions)
    if masses is None:
        if p.ndim != 2 or p.shape[1] != 4:
            raise ValueError(f"positions without masses must have shape (N, 4), got {p.shape}")
        bodies = _np.ascontiguousarray(p, dtype=_np.float32)
    else:
        m = _np.asarray(masses)
        if p.ndim != 2 or p.shape[1] != 3:
            raise ValueError(f"positions must have shape (N, 3), got {p.shape}")
        if m.shape != (p.shape[0],):
            raise ValueError(f"masses must have shape ({p.shape[0]},), got {m.shape}")
        bodies = _np.empty((p.shape[0], 4), dtype=_np.float32)
        bodies[:, :3] = p
        bodies[:, 3] = m
    return _warpkit.gravity(bodies, float(eps), float(theta), float(G), bool(quadrupole),
                            str(traversal), str(backend))
