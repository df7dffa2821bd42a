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

    from . import _real

    x = _np.ascontiguousarray(_real(nodes, "nodes"), dtype=_np.float64)
    e = _real(elements, "elements")
    if x.ndim != 2 or x.shape[1] != 3:
        raise ValueError(f"nodes must have shape (M, 3), got {x.shape}")
    if e.ndim != 2 or e.shape[1] != 8:
        raise ValueError(f"elements must have shape (E, 8), got {e.shape}")
    # Checked before the uint32 cast, which would wrap -1 or 2^32 onto valid nodes and truncate
    # 0.7 to 0.
    if e.dtype.kind == "f":
        bad = ~_np.isfinite(e) | (e != _np.round(e))
        if bad.any():
            i = tuple(int(k) for k in _np.argwhere(bad)[0])
            raise ValueError(f"elements{list(i)} = {e[i]}: node indices must be integers")
    if e.size:
        # Only what the cast would wrap: an index past the mesh's nodes is the library's check.
        bad = (e < 0) | (e > _np.iinfo(_np.uint32).max)
        if bad.any():
            i = tuple(int(k) for k in _np.argwhere(bad)[0])
            raise ValueError(f"elements{list(i)} = {e[i]}: node indices must lie in "
                             f"[0, {len(x)}) (the mesh has {len(x)} nodes)")
    e = _np.ascontiguousarray(e, dtype=_np.uint32)
    if any(isinstance(v, (bool, _np.bool_)) for v in (young, poisson)):
        raise TypeError(f"young and poisson must be real numbers, got {young!r} and {poisson!r}")
    try:
        young, poisson = float(young), float(poisson)
    except (TypeError, ValueError):
        raise TypeError(f"young and poisson must be real numbers, got {young!r} and "
                        f"{poisson!r}") from None
    data, indices, indptr = _warpkit.fem_assemble(x, e, young, poisson, str(backend))
    n = 3 * x.shape[0]
    return scipy.sparse.csr_matrix((data, indices, indptr), shape=(n, n))
