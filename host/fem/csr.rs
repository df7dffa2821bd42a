//! The global CSR sparsity pattern (3 DOF per node) and, per element, the position in the CSR
//! values of each of its 576 element-matrix entries, precomputed on the host as in the paper, so
//! that assembly is a scatter with no searching.

use super::colour::node_elements;
use super::{FemError, Mesh};
use crate::device::fem::{DOFS, ENTRIES, NODES};
use rayon::prelude::*;

/// CSR structure of the global stiffness: rows and columns are DOFs `3 n + d`.
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    /// `row_ptr[r]..row_ptr[r+1]` are row r's entries.
    pub row_ptr: Vec<u32>,
    /// Column of each entry, increasing within a row.
    pub col: Vec<u32>,
    /// Per element, `ENTRIES` positions: entry (r, c) of Ke (row-major) adds into
    /// `values[positions[576 e + 24 r + c]]`.
    pub positions: Vec<u32>,
}

impl Pattern {
    /// Builds the pattern of `mesh` (indices must be valid: see [`super::validate`]).
    pub fn new(mesh: &Mesh) -> Result<Self, FemError> {
        let nn = mesh.nodes.len();
        let (ptr, adj) = node_elements(mesh);
        // Node-level neighbour lists (including the node itself), sorted.
        let neighbours: Vec<Vec<u32>> = (0..nn)
            .into_par_iter()
            .map(|n| {
                let mut v: Vec<u32> = adj[ptr[n]..ptr[n + 1]]
                    .iter()
                    .flat_map(|&e| mesh.elements[e as usize])
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        let nnz: usize = neighbours.iter().map(|v| 9 * v.len()).sum();
        if nnz > u32::MAX as usize {
            return Err(FemError::TooManyEntries {
                nnz,
                max: u32::MAX as usize,
            });
        }
        let mut row_ptr = Vec::with_capacity(3 * nn + 1);
        row_ptr.push(0u32);
        let mut col = Vec::with_capacity(nnz);
        for nb in &neighbours {
            for _d in 0..3 {
                col.extend(nb.iter().flat_map(|&m| [3 * m, 3 * m + 1, 3 * m + 2]));
                row_ptr.push(col.len() as u32);
            }
        }
        let mut positions = vec![0u32; mesh.elements.len() * ENTRIES];
        positions
            .par_chunks_mut(ENTRIES)
            .zip(&mesh.elements)
            .for_each(|(pos, conn)| {
                for a in 0..NODES {
                    let na = conn[a] as usize;
                    for b in 0..NODES {
                        // Present by construction: b shares this element with a.
                        let rank = neighbours[na].binary_search(&conn[b]).unwrap_or(0) as u32;
                        for i in 0..3 {
                            let row_start = row_ptr[3 * na + i] + 3 * rank;
                            for j in 0..3 {
                                pos[(3 * a + i) * DOFS + 3 * b + j] = row_start + j as u32;
                            }
                        }
                    }
                }
            });
        Ok(Pattern {
            row_ptr,
            col,
            positions,
        })
    }

    pub fn rows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    pub fn nnz(&self) -> usize {
        self.col.len()
    }

    /// Element `e`'s 576 positions.
    pub fn element_positions(&self, e: usize) -> &[u32] {
        &self.positions[e * ENTRIES..][..ENTRIES]
    }

    /// `y = K x` for CSR values `values` (rayon over rows).
    pub fn matvec(&self, values: &[f64], x: &[f64], y: &mut [f64]) {
        y.par_iter_mut().enumerate().for_each(|(r, yr)| {
            let (s, e) = (self.row_ptr[r] as usize, self.row_ptr[r + 1] as usize);
            *yr = self.col[s..e]
                .iter()
                .zip(&values[s..e])
                .map(|(&c, v)| v * x[c as usize])
                .sum();
        });
    }

    /// The value at (r, c), if (r, c) is in the pattern.
    pub fn get(&self, values: &[f64], r: usize, c: usize) -> Option<f64> {
        let (s, e) = (self.row_ptr[r] as usize, self.row_ptr[r + 1] as usize);
        self.col[s..e]
            .binary_search(&(c as u32))
            .ok()
            .map(|k| values[s + k])
    }
}
