"""Hex8 linear-elastic stiffness assembly (Kiran et al. 2019's kernels on the GPU, the coloured
host assembly on the CPU backend)."""

import numpy as _np

from . import _warpkit


def assemble(nodes, elements, *, young, poisson, backend="auto"):
    """The global stiffness matrix as a ``scipy.sparse.csr_matrix`` of shape (3M, 3M), float64.

    ``nodes``: (M, 3) coordinates; ``elements``: (E, 8) node indices in VTK/Gmsh hexahedron
    order; DOF ``3a + i`` is node ``a``, direction ``i``. Inverted or degenerate elements and
    out-of-range indices raise ``ValueError``.
    """
    import scipy.sparse

    x = _np.ascontiguousarray(nodes, dtype=_np.float64)
    e = _np.ascontiguousarray(elements, dtype=_np.uint32)
    if x.ndim != 2 or x.shape[1] != 3:
        raise ValueError(f"nodes must have shape (M, 3), got {x.shape}")
    if e.ndim != 2 or e.shape[1] != 8:
        raise ValueError(f"elements must have shape (E, 8), got {e.shape}")
    data, indices, indptr = _warpkit.fem_assemble(x, e, float(young), float(poisson), str(backend))
    n = 3 * x.shape[0]
    return scipy.sparse.csr_matrix((data, indices, indptr), shape=(n, n))
