//! The Gmsh `.msh` reader: formats 2.2 and 4.1, ASCII and binary (8-byte `size_t` and `double`,
//! either byte order), hexahedra (element type 5) and the physical groups that name boundary sets.
//!
//! Format: <https://gmsh.info/doc/texinfo/gmsh.html#MSH-file-format> (4.1) and its "legacy
//! formats" appendix (2.2). One tokenizer serves the four variants: in ASCII a number is a
//! whitespace-separated token, in binary the bytes of its type; section markers (`$Nodes`) and the
//! 2.2 counts are text in both. Every count read from the file is checked against the bytes left
//! before anything is reserved or looped over (a huge `$Nodes` count panicked), and
//! every read past the end is an error, never a panic.

use super::{FemError, Mesh};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Gmsh's element type number for the 8-node hexahedron (its node order is VTK's).
const GMSH_HEX8: i32 = 5;
/// Gmsh's 4-node quadrangle: the faces a Neumann set names.
const GMSH_QUAD4: i32 = 3;
/// Gmsh's 3-node triangle: a Neumann set's faces too (a surface meshed apart from the hexahedra).
const GMSH_TRI3: i32 = 2;

/// Nodes per element of Gmsh's types 1–19 (the linear and quadratic ones): binary files need it
/// to step over elements that are not hexahedra.
fn nodes_per_element(etype: i32) -> Option<usize> {
    const N: [usize; 19] = [
        2, 3, 4, 4, 8, 6, 5, 3, 6, 9, 10, 27, 18, 14, 1, 8, 20, 15, 13,
    ];
    usize::try_from(etype)
        .ok()
        .and_then(|t| t.checked_sub(1))
        .and_then(|i| N.get(i).copied())
}

/// The dimension of an element type's entity: points 0, lines 1, triangles and quadrangles 2.
fn element_dim(etype: i32) -> i32 {
    match etype {
        15 => 0,
        1 | 8 => 1,
        2 | 3 | 9 | 10 | 16 => 2,
        _ => 3,
    }
}

/// One physical group: what a case file names as a Dirichlet set (its `nodes`), a Neumann set (its
/// quadrangle `faces`) or a material region (its hexahedra `elements`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhysicalGroup {
    /// Dimension of the group's entities: 0 points, 1 curves, 2 surfaces, 3 volumes.
    pub dim: i32,
    pub tag: i32,
    /// From `$PhysicalNames`; empty when the file names no such group.
    pub name: String,
    /// Mesh node indices of all the group's elements, sorted, without repeats.
    pub nodes: Vec<u32>,
    /// The group's 4-node quadrangles (mesh node indices, file order).
    pub faces: Vec<[u32; 4]>,
    /// The group's 3-node triangles (mesh node indices, file order).
    pub triangles: Vec<[u32; 3]>,
    /// Indices into [`Mesh::elements`] of the group's hexahedra.
    pub elements: Vec<u32>,
}

/// A mesh read from a `.msh` file with its physical groups (sorted by dimension and tag).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GmshMesh {
    pub mesh: Mesh,
    pub groups: Vec<PhysicalGroup>,
}

impl GmshMesh {
    /// The group called `name`.
    pub fn group(&self, name: &str) -> Option<&PhysicalGroup> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// `e` with the physical volume of each element it names, so the user can find it in Gmsh.
    pub fn name_group(&self, mut e: FemError) -> FemError {
        for id in e.elements_mut() {
            id.group = self.volume_of(id.index);
        }
        e
    }

    /// The name (else the tag) of the first physical volume holding element `index`.
    pub fn volume_of(&self, index: usize) -> Option<String> {
        // A group's hexahedra are indexed in file order, so its list is sorted.
        let g = self
            .groups
            .iter()
            .find(|g| g.dim == 3 && g.elements.binary_search(&(index as u32)).is_ok())?;
        Some(if g.name.is_empty() {
            g.tag.to_string()
        } else {
            format!("{:?}", g.name)
        })
    }
}

/// Reads the hexahedra of a `.msh` file (2.2 or 4.1, ASCII or binary); other element types
/// (boundary quads, lines, points) are skipped. Nodes keep their file order; tags may be sparse.
pub fn read_msh(path: &Path) -> Result<Mesh, FemError> {
    read_gmsh(path).map(|g| g.mesh)
}

/// [`read_msh`] with the physical groups.
pub fn read_gmsh(path: &Path) -> Result<GmshMesh, FemError> {
    let bytes = std::fs::read(path).map_err(|source| FemError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_gmsh(&bytes, &path.display().to_string())
}

/// [`read_msh`] on text already in memory; `name` is used in error messages.
pub fn parse_msh(text: &str, name: &str) -> Result<Mesh, FemError> {
    parse_gmsh(text.as_bytes(), name).map(|g| g.mesh)
}

#[derive(Clone, Copy, PartialEq)]
enum Encoding {
    Ascii,
    /// `swap`: the file's byte order is not this machine's.
    Binary {
        swap: bool,
    },
}

/// Physical tags per (dimension, tag), accumulated while elements are read.
#[derive(Default)]
struct Groups {
    by_key: BTreeMap<(i32, i32), PhysicalGroup>,
}

impl Groups {
    fn add(&mut self, dim: i32, phys: i32, etype: i32, conn: &[u32], hex: Option<u32>) {
        let g = self
            .by_key
            .entry((dim, phys))
            .or_insert_with(|| PhysicalGroup {
                dim,
                tag: phys,
                ..Default::default()
            });
        g.nodes.extend_from_slice(conn);
        if etype == GMSH_QUAD4 {
            g.faces.push([conn[0], conn[1], conn[2], conn[3]]);
        } else if etype == GMSH_TRI3 {
            g.triangles.push([conn[0], conn[1], conn[2]]);
        }
        g.elements.extend(hex);
    }
}

/// [`read_gmsh`] on bytes already in memory; `name` is used in error messages.
pub fn parse_gmsh(bytes: &[u8], name: &str) -> Result<GmshMesh, FemError> {
    let mut r = Cursor {
        b: bytes,
        pos: 0,
        name,
        enc: Encoding::Ascii,
    };
    let mut version: Option<u32> = None;
    let mut tags: HashMap<u64, u32> = HashMap::new();
    let mut mesh = Mesh::default();
    let mut names: HashMap<(i32, i32), String> = HashMap::new();
    // 4.1: the physical tags of each (dimension, entity tag).
    let mut entities: HashMap<(i32, i32), Vec<i32>> = HashMap::new();
    let mut groups = Groups::default();
    while let Some((at, header)) = r.marker()? {
        let need_version = |r: &Cursor| match version {
            Some(v) => Ok(v),
            None => Err(r.err_at(at, format!("{header} before $MeshFormat"))),
        };
        match header {
            "$MeshFormat" => {
                let (vat, v) = r.token()?;
                let v = match v {
                    b"2.2" => 2,
                    b"4.1" => 4,
                    other => {
                        return Err(r.err_at(
                            vat,
                            format!(
                                "version {} is not supported (2.2 and 4.1 are)",
                                String::from_utf8_lossy(other)
                            ),
                        ));
                    }
                };
                let (fat, file_type) = r.ascii::<u32>()?;
                let (sat, size) = r.ascii::<u32>()?;
                if size != 8 {
                    return Err(r.err_at(sat, format!("data size {size} is not supported (8)")));
                }
                match file_type {
                    0 => {}
                    1 => {
                        r.end_of_line()?;
                        let one = r.raw::<4>()?;
                        let swap = match (
                            i32::from_ne_bytes(one),
                            i32::from_ne_bytes(one).swap_bytes(),
                        ) {
                            (1, _) => false,
                            (_, 1) => true,
                            _ => {
                                return Err(r.err_at(
                                    r.pos - 4,
                                    "binary .msh: the byte-order check value is not 1".into(),
                                ));
                            }
                        };
                        r.enc = Encoding::Binary { swap };
                    }
                    other => {
                        return Err(r.err_at(fat, format!("file type {other} is neither 0 nor 1")));
                    }
                }
                version = Some(v);
                r.expect("$EndMeshFormat")?;
            }
            "$PhysicalNames" => {
                let n = r.text_count(6)?;
                for _ in 0..n {
                    let (_, dim) = r.ascii::<i32>()?;
                    let (_, tag) = r.ascii::<i32>()?;
                    let name = r.rest_of_line()?.trim().trim_matches('"').to_string();
                    names.insert((dim, tag), name);
                }
                r.expect("$EndPhysicalNames")?;
            }
            "$Entities" if need_version(&r)? == 4 => {
                let counts = [r.size()?, r.size()?, r.size()?, r.size()?];
                for (dim, &n) in counts.iter().enumerate() {
                    let n = r.check_count(n, 16)?;
                    for _ in 0..n {
                        let tag = r.int()?;
                        for _ in 0..if dim == 0 { 3 } else { 6 } {
                            r.float()?;
                        }
                        let np = r.size()?;
                        let np = r.check_count(np, 2)?;
                        let phys = (0..np).map(|_| r.int()).collect::<Result<Vec<_>, _>>()?;
                        if dim > 0 {
                            let nb = r.size()?;
                            for _ in 0..r.check_count(nb, 2)? {
                                r.int()?;
                            }
                        }
                        entities.insert((dim as i32, tag), phys);
                    }
                }
                r.expect("$EndEntities")?;
            }
            "$Nodes" => match need_version(&r)? {
                4 => {
                    let h = [r.size()?, r.size()?, r.size()?, r.size()?];
                    let blocks = r.check_count(h[0], 8)?;
                    let total = r.check_count(h[1], 8)?;
                    mesh.nodes.reserve(total);
                    for _ in 0..blocks {
                        let dim = r.int()?;
                        r.int()?;
                        let parametric = r.int()? != 0;
                        let count = r.size()?;
                        let count = r.check_count(count, 8)?;
                        let mut block_tags = Vec::with_capacity(count);
                        for _ in 0..count {
                            block_tags.push((r.here(), r.size()?));
                        }
                        let extra = if parametric { dim.clamp(0, 3) } else { 0 };
                        for (tat, tag) in block_tags {
                            let x = [r.float()?, r.float()?, r.float()?];
                            for _ in 0..extra {
                                r.float()?;
                            }
                            r.add_node(&mut mesh, &mut tags, tat, tag, x)?;
                        }
                    }
                    if mesh.nodes.len() != total {
                        return Err(r.err_at(
                            r.pos,
                            format!(
                                "$Nodes header announces {total} nodes, the blocks hold {}",
                                mesh.nodes.len()
                            ),
                        ));
                    }
                    r.expect("$EndNodes")?;
                }
                _ => {
                    let n = r.text_count(8)?;
                    mesh.nodes.reserve(n);
                    for _ in 0..n {
                        let tat = r.here();
                        let tag = r.int()?;
                        let tag = u64::try_from(tag)
                            .map_err(|_| r.err_at(tat, format!("node tag {tag} is negative")))?;
                        let x = [r.float()?, r.float()?, r.float()?];
                        r.add_node(&mut mesh, &mut tags, tat, tag, x)?;
                    }
                    r.expect("$EndNodes")?;
                }
            },
            "$Elements" => {
                let v = need_version(&r)?;
                let mut conn = Vec::new();
                let mut element = |r: &mut Cursor<'_>,
                                   etype: i32,
                                   etag: u64,
                                   n: usize,
                                   tag_at: usize,
                                   phys: &[i32],
                                   dim: i32| {
                    conn.clear();
                    for _ in 0..n {
                        let t = if v == 4 { r.size()? } else { r.int()? as u64 };
                        conn.push(*tags.get(&t).ok_or_else(|| {
                            r.err_at(
                                tag_at,
                                format!("an element refers to undefined node tag {t}"),
                            )
                        })?);
                    }
                    let hex = (etype == GMSH_HEX8).then(|| {
                        let mut c = [0u32; 8];
                        c.copy_from_slice(&conn);
                        mesh.elements.push(c);
                        mesh.element_tags.push(etag);
                        mesh.elements.len() as u32 - 1
                    });
                    for &p in phys {
                        groups.add(dim, p, etype, &conn, hex);
                    }
                    Ok::<(), FemError>(())
                };
                if v == 4 {
                    let h = [r.size()?, r.size()?, r.size()?, r.size()?];
                    let blocks = r.check_count(h[0], 8)?;
                    for _ in 0..blocks {
                        let dim = r.int()?;
                        let entity = r.int()?;
                        let (eat, etype) = (r.here(), r.int()?);
                        let count = r.size()?;
                        let n = nodes_per_element(etype).ok_or_else(|| {
                            r.err_at(eat, format!("element type {etype} is not supported"))
                        })?;
                        let count = r.check_count(count, 2 * (n + 1))?;
                        let phys = entities.get(&(dim, entity)).cloned().unwrap_or_default();
                        for _ in 0..count {
                            let at = r.here();
                            let etag = r.size()?;
                            element(&mut r, etype, etag, n, at, &phys, dim)?;
                        }
                    }
                } else {
                    let total = r.text_count(8)?;
                    let mut read = 0;
                    while read < total {
                        // ASCII: one element per line; binary: blocks of one type and tag count.
                        let (eat, etype, follow, ntags, ascii_tag) = match r.enc {
                            Encoding::Ascii => {
                                let at = r.here();
                                let tag = r.int()?;
                                (at, r.int()?, 1, r.int()?, tag)
                            }
                            Encoding::Binary { .. } => (r.here(), r.int()?, r.int()?, r.int()?, 0),
                        };
                        let n = nodes_per_element(etype).ok_or_else(|| {
                            r.err_at(eat, format!("element type {etype} is not supported"))
                        })?;
                        let ntags = r.check_count(u64::try_from(ntags).unwrap_or(u64::MAX), 2)?;
                        let follow = usize::try_from(follow)
                            .ok()
                            .filter(|&f| f <= total - read)
                            .ok_or_else(|| {
                                r.err_at(
                                    eat,
                                    format!("{follow} elements exceed the {total} announced"),
                                )
                            })?;
                        for _ in 0..follow {
                            let at = if r.enc == Encoding::Ascii {
                                eat
                            } else {
                                r.here()
                            };
                            let etag = match r.enc {
                                Encoding::Ascii => ascii_tag,
                                Encoding::Binary { .. } => r.int()?,
                            };
                            // A negative number names no element the user could look up.
                            let etag = u64::try_from(etag).map_err(|_| {
                                r.err_at(at, format!("element tag {etag} is negative"))
                            })?;
                            // Tags: physical, then geometrical entity, then partitions.
                            let t = (0..ntags).map(|_| r.int()).collect::<Result<Vec<_>, _>>()?;
                            let phys = t.first().copied().filter(|&p| p != 0);
                            let dim = element_dim(etype);
                            element(&mut r, etype, etag, n, at, phys.as_slice(), dim)?;
                        }
                        read += follow;
                    }
                }
                r.expect("$EndElements")?;
            }
            other if other.starts_with('$') && !other.starts_with("$End") => {
                r.skip_section(at, &other[1..])?;
            }
            other => {
                return Err(r.err_at(
                    at,
                    format!("expected a section header ($Name), found {other:?}"),
                ));
            }
        }
    }
    if version.is_none() {
        return Err(r.err_at(0, "no $MeshFormat section: not a Gmsh .msh file".into()));
    }
    if mesh.elements.is_empty() {
        return Err(FemError::NoHexahedra { path: name.into() });
    }
    let groups = groups
        .by_key
        .into_values()
        .map(|mut g| {
            g.nodes.sort_unstable();
            g.nodes.dedup();
            g.name = names.remove(&(g.dim, g.tag)).unwrap_or_default();
            g
        })
        .collect();
    Ok(GmshMesh { mesh, groups })
}

/// The bytes of a `.msh` file and a position in them; errors name the line (for binary data, the
/// line the value's bytes start on).
struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
    name: &'a str,
    enc: Encoding,
}

impl<'a> Cursor<'a> {
    fn err_at(&self, pos: usize, reason: String) -> FemError {
        let pos = pos.min(self.b.len());
        let line = 1 + self.b[..pos].iter().filter(|&&c| c == b'\n').count();
        let binary = matches!(self.enc, Encoding::Binary { .. });
        FemError::Msh {
            path: self.name.into(),
            line,
            reason: if binary {
                format!("{reason} (byte {pos})")
            } else {
                reason
            },
        }
    }

    fn eof(&self) -> FemError {
        // The line after the last one.
        let lines = self.b.iter().filter(|&&c| c == b'\n').count()
            + usize::from(self.b.last().is_some_and(|&c| c != b'\n'));
        FemError::Msh {
            path: self.name.into(),
            line: lines + 1,
            reason: "unexpected end of file".into(),
        }
    }

    /// Where the next value starts (in ASCII past the whitespace, so errors name its line).
    fn here(&mut self) -> usize {
        if self.enc == Encoding::Ascii {
            self.skip_space();
        }
        self.pos
    }

    fn skip_space(&mut self) {
        while self.pos < self.b.len() && self.b[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    /// The next whitespace-separated token and where it starts.
    fn token(&mut self) -> Result<(usize, &'a [u8]), FemError> {
        self.skip_space();
        if self.pos >= self.b.len() {
            return Err(self.eof());
        }
        let start = self.pos;
        while self.pos < self.b.len() && !self.b[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        Ok((start, &self.b[start..self.pos]))
    }

    /// The next section marker, or None at the end of the file.
    fn marker(&mut self) -> Result<Option<(usize, &'a str)>, FemError> {
        self.skip_space();
        if self.pos >= self.b.len() {
            return Ok(None);
        }
        let (at, t) = self.token()?;
        let t = std::str::from_utf8(t)
            .map_err(|_| self.err_at(at, "expected a section header ($Name)".into()))?;
        // The marker's line ends here: binary data may start with bytes that look like spaces.
        self.end_of_line()?;
        Ok(Some((at, t)))
    }

    fn expect(&mut self, want: &str) -> Result<(), FemError> {
        let (at, got) = self.token()?;
        if got != want.as_bytes() {
            return Err(self.err_at(
                at,
                format!("expected {want}, found {:?}", String::from_utf8_lossy(got)),
            ));
        }
        self.end_of_line()
    }

    /// Consumes spaces and one line end (or the end of the file).
    fn end_of_line(&mut self) -> Result<(), FemError> {
        while self.pos < self.b.len() && matches!(self.b[self.pos], b' ' | b'\t' | b'\r') {
            self.pos += 1;
        }
        match self.b.get(self.pos) {
            None => Ok(()),
            Some(b'\n') => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => Err(self.err_at(self.pos, "expected the end of the line".into())),
        }
    }

    /// The rest of the current line as text.
    fn rest_of_line(&mut self) -> Result<String, FemError> {
        let start = self.pos;
        while self.pos < self.b.len() && self.b[self.pos] != b'\n' {
            self.pos += 1;
        }
        let s = String::from_utf8_lossy(&self.b[start..self.pos]).into_owned();
        self.end_of_line()?;
        Ok(s)
    }

    /// A text token parsed as `T` (in both encodings).
    fn ascii<T: std::str::FromStr>(&mut self) -> Result<(usize, T), FemError> {
        let (at, t) = self.token()?;
        std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.parse().ok())
            .map(|v| (at, v))
            .ok_or_else(|| {
                self.err_at(
                    at,
                    format!(
                        "{:?} is not a valid {}",
                        String::from_utf8_lossy(t),
                        std::any::type_name::<T>()
                    ),
                )
            })
    }

    /// A count written as text (2.2's sections, `$PhysicalNames`), on its own line, checked
    /// against the bytes left (`min_bytes` per item).
    fn text_count(&mut self, min_bytes: usize) -> Result<usize, FemError> {
        let (_, n) = self.ascii::<u64>()?;
        self.end_of_line()?;
        self.check_count(n, min_bytes)
    }

    /// `n` items of at least `min_bytes` each (in ASCII, at least 2 bytes per number) must fit
    /// in what is left of the file: a count past that is an error before anything is reserved.
    fn check_count(&self, n: u64, min_bytes: usize) -> Result<usize, FemError> {
        let left = (self.b.len() - self.pos) as u64;
        if n > left / min_bytes.max(1) as u64 {
            return Err(self.err_at(
                self.pos,
                format!("a count of {n} items cannot fit in the {left} bytes left"),
            ));
        }
        Ok(n as usize)
    }

    fn raw<const N: usize>(&mut self) -> Result<[u8; N], FemError> {
        let end = self.pos.checked_add(N).filter(|&e| e <= self.b.len());
        let end = end.ok_or_else(|| self.eof())?;
        let mut v = [0u8; N];
        v.copy_from_slice(&self.b[self.pos..end]);
        self.pos = end;
        Ok(v)
    }

    fn int(&mut self) -> Result<i32, FemError> {
        match self.enc {
            Encoding::Ascii => self.ascii().map(|(_, v)| v),
            Encoding::Binary { swap } => {
                let v = i32::from_ne_bytes(self.raw()?);
                Ok(if swap { v.swap_bytes() } else { v })
            }
        }
    }

    /// Gmsh's `size_t` (8 bytes in binary: the data size is checked in `$MeshFormat`).
    fn size(&mut self) -> Result<u64, FemError> {
        match self.enc {
            Encoding::Ascii => self.ascii().map(|(_, v)| v),
            Encoding::Binary { swap } => {
                let v = u64::from_ne_bytes(self.raw()?);
                Ok(if swap { v.swap_bytes() } else { v })
            }
        }
    }

    fn float(&mut self) -> Result<f64, FemError> {
        match self.enc {
            Encoding::Ascii => self.ascii().map(|(_, v)| v),
            Encoding::Binary { swap } => {
                let v = u64::from_ne_bytes(self.raw()?);
                Ok(f64::from_bits(if swap { v.swap_bytes() } else { v }))
            }
        }
    }

    fn add_node(
        &self,
        mesh: &mut Mesh,
        tags: &mut HashMap<u64, u32>,
        at: usize,
        tag: u64,
        x: [f64; 3],
    ) -> Result<(), FemError> {
        let index = u32::try_from(mesh.nodes.len())
            .map_err(|_| self.err_at(at, "more than 2^32 nodes".into()))?;
        if tags.insert(tag, index).is_some() {
            return Err(self.err_at(at, format!("node tag {tag} defined twice")));
        }
        mesh.nodes.push(x);
        Ok(())
    }

    /// Skips an unknown section (it may hold binary data) up to its `$End` marker.
    fn skip_section(&mut self, at: usize, name: &str) -> Result<(), FemError> {
        let end = format!("$End{name}");
        let found = self.b[self.pos..]
            .windows(end.len())
            .position(|w| w == end.as_bytes());
        match found {
            Some(i) => {
                self.pos += i + end.len();
                self.end_of_line()
            }
            None => Err(self.err_at(at, format!("${name} has no {end}"))),
        }
    }
}
