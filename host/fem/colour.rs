//! Element colouring: no two elements of a colour share a node, so a colour's element matrices
//! touch disjoint rows of the global matrix and can be added in parallel without atomics.

use super::{FemError, Mesh};

/// Elements grouped by colour.
#[derive(Clone, Debug, PartialEq)]
pub struct Colouring {
    /// The colour of each element.
    pub colour_of: Vec<u32>,
    /// Per colour, its elements in increasing order.
    pub groups: Vec<Vec<u32>>,
}

impl Colouring {
    pub fn colours(&self) -> usize {
        self.groups.len()
    }
}

/// Node → elements incidence as CSR (`ptr[n]..ptr[n+1]` indexes `elems`), element order kept.
pub(crate) fn node_elements(mesh: &Mesh) -> (Vec<usize>, Vec<u32>) {
    node_incidence(mesh, |e, _| e as u32)
}

/// Node → (element, local node) incidence as CSR, element order kept: one entry
/// `entry(e, a)` under node `elements[e][a]` for every element e and local index a (a counting
/// sort; [`node_elements`] and the node-row kernels' `gpu::node_adjacency` are both this).
pub(crate) fn node_incidence<T: Copy + Default>(
    mesh: &Mesh,
    entry: impl Fn(usize, usize) -> T,
) -> (Vec<usize>, Vec<T>) {
    let mut ptr = vec![0usize; mesh.nodes.len() + 1];
    for conn in &mesh.elements {
        for &n in conn {
            ptr[n as usize + 1] += 1;
        }
    }
    for i in 0..mesh.nodes.len() {
        ptr[i + 1] += ptr[i];
    }
    let mut fill = ptr.clone();
    let mut out = vec![T::default(); ptr[mesh.nodes.len()]];
    for (e, conn) in mesh.elements.iter().enumerate() {
        for (a, &n) in conn.iter().enumerate() {
            out[fill[n as usize]] = entry(e, a);
            fill[n as usize] += 1;
        }
    }
    (ptr, out)
}

/// Greedy first-fit colouring in element order: each element takes the smallest colour that no
/// already-coloured element sharing a node holds. On a structured hex grid this gives the optimal
/// 8; in general at most (max elements touching one element's nodes) + 1. Indices must be valid
/// (see [`super::validate`]).
pub fn greedy(mesh: &Mesh) -> Colouring {
    let (ptr, adj) = node_elements(mesh);
    let mut colour_of = vec![u32::MAX; mesh.elements.len()];
    // `seen[c] == e` marks colour c as taken by a neighbour of element e (stamps avoid clearing).
    let mut seen: Vec<usize> = Vec::new();
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for (e, conn) in mesh.elements.iter().enumerate() {
        for &n in conn {
            for &other in &adj[ptr[n as usize]..ptr[n as usize + 1]] {
                let c = colour_of[other as usize];
                if c != u32::MAX {
                    seen[c as usize] = e;
                }
            }
        }
        let c = (0..seen.len())
            .find(|&c| seen[c] != e)
            .unwrap_or(seen.len());
        if c == seen.len() {
            seen.push(usize::MAX);
            groups.push(Vec::new());
        }
        colour_of[e] = c as u32;
        groups[c].push(e as u32);
    }
    Colouring { colour_of, groups }
}

/// Checks that every element has exactly one colour consistent with `groups`, and that no two
/// elements of a colour share a node (naming the first pair found).
pub fn verify(mesh: &Mesh, colouring: &Colouring) -> Result<(), FemError> {
    let mut counted = 0usize;
    // owner[n] = (colour, element) of the last element of the current colour touching node n.
    let mut owner: Vec<(u32, u32)> = vec![(u32::MAX, 0); mesh.nodes.len()];
    for (c, group) in colouring.groups.iter().enumerate() {
        let c = c as u32;
        for &e in group {
            counted += 1;
            if colouring.colour_of.get(e as usize) != Some(&c) {
                return Err(FemError::MeshSize(format!(
                    "colouring lists {} under colour {c} but records {:?}",
                    mesh.element_id(e as usize),
                    colouring.colour_of.get(e as usize)
                )));
            }
            for &n in &mesh.elements[e as usize] {
                let slot = &mut owner[n as usize];
                if slot.0 == c && slot.1 != e {
                    return Err(FemError::ColourConflict {
                        first: mesh.element_id(slot.1 as usize),
                        second: mesh.element_id(e as usize),
                        node: n,
                        colour: c,
                    });
                }
                *slot = (c, e);
            }
        }
    }
    if counted != mesh.elements.len() || colouring.colour_of.len() != mesh.elements.len() {
        return Err(FemError::MeshSize(format!(
            "colouring covers {counted} of {} elements",
            mesh.elements.len()
        )));
    }
    Ok(())
}
