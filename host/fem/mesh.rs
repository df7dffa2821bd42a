//! Meshes: the cantilever generator, and the Gmsh `.msh` reader of `gmsh.rs` re-exported.

use super::{FemError, Mesh};

/// The elements and nodes of a cantilever of `cells` elements, checked (at least one element per
/// direction, at most 2^32 nodes) before anything is allocated.
pub fn cantilever_counts(cells: [usize; 3]) -> Result<(usize, usize), FemError> {
    if cells.contains(&0) {
        return Err(FemError::MeshSize(format!(
            "need at least one element per direction, got {cells:?}"
        )));
    }
    // Checked throughout: `nx + 1` wraps for nx = usize::MAX.
    let [nx, ny, nz] = cells.map(|c| c.checked_add(1));
    let nodes = nx
        .zip(ny)
        .and_then(|(a, b)| a.checked_mul(b))
        .zip(nz)
        .and_then(|(a, b)| a.checked_mul(b))
        .filter(|&v| v <= u32::MAX as usize)
        .ok_or_else(|| FemError::MeshSize(format!("{cells:?} has more than 2^32 nodes")))?;
    // Fewer elements than nodes: no overflow.
    Ok((cells[0] * cells[1] * cells[2], nodes))
}

/// A box [0, lx] × [0, ly] × [0, lz] of nx × ny × nz hexahedra, as unstructured connectivity
/// (nothing downstream knows it is a grid). Node (i, j, k) is `i + (nx+1)(j + (ny+1)k)`.
pub fn cantilever(size: [f64; 3], cells: [usize; 3]) -> Result<Mesh, FemError> {
    let [nx, ny, nz] = cells;
    let (_, nodes_total) = cantilever_counts(cells)?;
    if !size.iter().all(|&l| l > 0.0 && l.is_finite()) {
        return Err(FemError::MeshSize(format!(
            "lengths must be positive and finite, got {size:?}"
        )));
    }
    let id = |i: usize, j: usize, k: usize| (i + (nx + 1) * (j + (ny + 1) * k)) as u32;
    let mut nodes = Vec::with_capacity(nodes_total);
    for k in 0..=nz {
        for j in 0..=ny {
            for i in 0..=nx {
                nodes.push([
                    size[0] * i as f64 / nx as f64,
                    size[1] * j as f64 / ny as f64,
                    size[2] * k as f64 / nz as f64,
                ]);
            }
        }
    }
    let mut elements = Vec::with_capacity(nx * ny * nz);
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                elements.push([
                    id(i, j, k),
                    id(i + 1, j, k),
                    id(i + 1, j + 1, k),
                    id(i, j + 1, k),
                    id(i, j, k + 1),
                    id(i + 1, j, k + 1),
                    id(i + 1, j + 1, k + 1),
                    id(i, j + 1, k + 1),
                ]);
            }
        }
    }
    Ok(Mesh {
        nodes,
        elements,
        element_tags: Vec::new(),
    })
}

pub use super::gmsh::{GmshMesh, PhysicalGroup, parse_gmsh, parse_msh, read_gmsh, read_msh};
