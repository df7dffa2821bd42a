//! Meshes: the cantilever generator and a Gmsh `.msh` 4.1 ASCII reader for hexahedra.

use super::{FemError, Mesh};
use std::collections::HashMap;
use std::path::Path;

/// The elements and nodes of a cantilever of `cells` elements, checked (at least one element per
/// direction, at most 2^32 nodes) before anything is allocated.
pub fn cantilever_counts(cells: [usize; 3]) -> Result<(usize, usize), FemError> {
    if cells.contains(&0) {
        return Err(FemError::MeshSize(format!(
            "need at least one element per direction, got {cells:?}"
        )));
    }
    // Checked throughout: `nx + 1` wraps for nx = usize::MAX (issue 17).
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
    Ok(Mesh { nodes, elements })
}

/// Gmsh's element type number for the 8-node hexahedron.
const GMSH_HEX8: u32 = 5;

/// Reads the hexahedra (element type 5) of a Gmsh `.msh` 4.1 ASCII file; other element types
/// (boundary quads, lines, points) are skipped, unknown sections too. Nodes keep their file
/// order; node tags may be sparse. Gmsh's hexahedron node order is VTK's.
pub fn read_msh(path: &Path) -> Result<Mesh, FemError> {
    let bytes = std::fs::read(path).map_err(|source| FemError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    // Lossy: a binary .msh is not UTF-8 after its header, and the header is what says "binary"
    // (issue 17: it failed with a bare UTF-8 error).
    parse_msh(
        &String::from_utf8_lossy(&bytes),
        &path.display().to_string(),
    )
}

/// [`read_msh`] on text already in memory; `name` is used in error messages.
pub fn parse_msh(text: &str, name: &str) -> Result<Mesh, FemError> {
    let mut r = Reader {
        lines: text.lines().enumerate(),
        line: 0,
        name,
    };
    let mut version_seen = false;
    let mut tags: HashMap<u64, u32> = HashMap::new();
    let mut mesh = Mesh::default();
    while let Some(header) = r.next_line_opt() {
        match header {
            "$MeshFormat" => {
                let f = r.fields(3)?;
                if f[0] != "4.1" {
                    return Err(r.err(format!("version {} is not supported (only 4.1)", f[0])));
                }
                if f[1] != "0" {
                    return Err(r.err("binary .msh is not supported (save as ASCII)".into()));
                }
                version_seen = true;
                r.expect("$EndMeshFormat")?;
            }
            "$Nodes" => {
                if !version_seen {
                    return Err(r.err("$Nodes before $MeshFormat".into()));
                }
                let h = r.numbers::<u64>(4)?;
                let (blocks, total) = (h[0], h[1] as usize);
                // Counts come from the file: reserve no more than its bytes can hold (a node
                // takes two lines of at least 2 and 6 bytes), so a huge count is an error at
                // the end of the text, not an allocation failure.
                let room = text.len() / 8;
                mesh.nodes.reserve(total.min(room));
                for _ in 0..blocks {
                    let b = r.numbers::<u64>(4)?;
                    let count = b[3] as usize;
                    let first = mesh.nodes.len();
                    let mut block_tags = Vec::with_capacity(count.min(room));
                    for _ in 0..count {
                        block_tags.push(r.numbers::<u64>(1)?[0]);
                    }
                    for tag in block_tags {
                        // Parametric blocks append u (v, w) after x y z: only the first three count.
                        let c = r.numbers::<f64>(3)?;
                        let index = mesh.nodes.len() as u32;
                        if tags.insert(tag, index).is_some() {
                            return Err(r.err(format!("node tag {tag} defined twice")));
                        }
                        mesh.nodes.push([c[0], c[1], c[2]]);
                    }
                    debug_assert_eq!(mesh.nodes.len() - first, count);
                }
                if mesh.nodes.len() != total {
                    return Err(r.err(format!(
                        "$Nodes header announces {total} nodes, the blocks hold {}",
                        mesh.nodes.len()
                    )));
                }
                r.expect("$EndNodes")?;
            }
            "$Elements" => {
                if !version_seen {
                    return Err(r.err("$Elements before $MeshFormat".into()));
                }
                let h = r.numbers::<u64>(4)?;
                for _ in 0..h[0] {
                    let b = r.numbers::<u64>(4)?;
                    let (etype, count) = (b[2] as u32, b[3] as usize);
                    for _ in 0..count {
                        if etype != GMSH_HEX8 {
                            r.next_line()?;
                            continue;
                        }
                        let v = r.numbers::<u64>(9)?;
                        let mut conn = [0u32; 8];
                        for (slot, &tag) in conn.iter_mut().zip(&v[1..]) {
                            *slot = *tags.get(&tag).ok_or_else(|| {
                                r.err(format!(
                                    "element {} refers to undefined node tag {tag}",
                                    v[0]
                                ))
                            })?;
                        }
                        mesh.elements.push(conn);
                    }
                }
                r.expect("$EndElements")?;
            }
            other if other.starts_with('$') && !other.starts_with("$End") => {
                let end = format!("$End{}", &other[1..]);
                while r.next_line()? != end {}
            }
            other => {
                return Err(r.err(format!(
                    "expected a section header ($Name), found {other:?}"
                )));
            }
        }
    }
    if !version_seen {
        return Err(FemError::Msh {
            path: name.into(),
            line: r.line.max(1),
            reason: "no $MeshFormat section: not a Gmsh .msh file".into(),
        });
    }
    if mesh.elements.is_empty() {
        return Err(FemError::NoHexahedra { path: name.into() });
    }
    Ok(mesh)
}

/// Lines of a `.msh` file with their 1-based numbers, for errors that name the line.
struct Reader<'a, I> {
    lines: I,
    line: usize,
    name: &'a str,
}

impl<'a, I: Iterator<Item = (usize, &'a str)>> Reader<'a, I> {
    fn err(&self, reason: String) -> FemError {
        FemError::Msh {
            path: self.name.into(),
            line: self.line,
            reason,
        }
    }

    /// The next non-blank line, trimmed, or None at the end of the file.
    fn next_line_opt(&mut self) -> Option<&'a str> {
        for (i, l) in self.lines.by_ref() {
            self.line = i + 1;
            let t = l.trim();
            if !t.is_empty() {
                return Some(t);
            }
        }
        None
    }

    fn next_line(&mut self) -> Result<&'a str, FemError> {
        self.next_line_opt().ok_or_else(|| {
            self.line += 1;
            self.err("unexpected end of file".into())
        })
    }

    fn expect(&mut self, want: &str) -> Result<(), FemError> {
        let got = self.next_line()?;
        if got != want {
            return Err(self.err(format!("expected {want}, found {got:?}")));
        }
        Ok(())
    }

    /// The next line's first `n` whitespace-separated fields (more are allowed).
    fn fields(&mut self, n: usize) -> Result<Vec<&'a str>, FemError> {
        let l = self.next_line()?;
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < n {
            return Err(self.err(format!("expected {n} fields, found {}: {l:?}", f.len())));
        }
        Ok(f)
    }

    fn numbers<T: std::str::FromStr>(&mut self, n: usize) -> Result<Vec<T>, FemError> {
        let f = self.fields(n)?;
        f[..n]
            .iter()
            .map(|s| {
                s.parse::<T>().map_err(|_| {
                    self.err(format!(
                        "{s:?} is not a valid {}",
                        std::any::type_name::<T>()
                    ))
                })
            })
            .collect()
    }
}
