//! Index tables of the element-centric and node-row strategies, built on the host.

use super::*;
pub use crate::device::fem::BLOCK_TABLE;
use crate::device::fem::block_position;

/// The block position table from the full positions. In CSR with 3 DOF per node the three rows
/// of a node share their column set, so entry (3a + i, 3b + j) of element e sits at
/// `base[8a + b] + i · stride[a] + j`: 72 values per element instead of 576.
pub fn block_table(pattern: &Pattern, elements: usize) -> Vec<u32> {
    use rayon::prelude::*;
    let mut t = vec![0u32; elements * BLOCK_TABLE];
    t.par_chunks_exact_mut(BLOCK_TABLE)
        .enumerate()
        .for_each(|(e, tab)| {
            let pos = pattern.element_positions(e);
            for a in 0..NODES {
                for b in 0..NODES {
                    tab[NODES * a + b] = pos[3 * a * 24 + 3 * b];
                }
                tab[NODES * NODES + a] = pos[(3 * a + 1) * 24] - pos[3 * a * 24];
            }
            debug_assert!((0..ENTRIES).all(|k| {
                let (r, c) = (k / 24, k % 24);
                let (a, i, b, j) = (r / 3, r % 3, c / 3, c % 3);
                pos[k] == block_position(tab[NODES * a + b], tab[NODES * NODES + a], i, j)
            }));
        });
    t
}

/// Node → element adjacency for the node-row kernels: node n's entries are
/// `elements[ptr[n] .. ptr[n + 1]]`, each `8 e + a` for element e whose local node a is n
/// (an element that names a node twice is listed twice, once per local index).
pub fn node_adjacency(mesh: &Mesh) -> Result<(Vec<u32>, Vec<u32>), FemError> {
    let too_big = || FemError::MeshSize("more than 2^29 elements or 2^32 node references".into());
    if mesh.elements.len() > (u32::MAX / NODES as u32) as usize {
        return Err(too_big());
    }
    // 8 e + a < 2^32 by the check above.
    let (ptr, adj) = crate::fem::colour::node_incidence(mesh, |e, a| (NODES * e + a) as u32);
    let ptr = ptr
        .into_iter()
        .map(|p| u32::try_from(p).map_err(|_| too_big()))
        .collect::<Result<Vec<u32>, FemError>>()?;
    Ok((ptr, adj))
}
