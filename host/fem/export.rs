//! Exports: the stiffness in Matrix Market coordinate format; displacements, strains and
//! stresses as VTK XML unstructured grid (`.vtu`, binary appended as ParaView writes it) and a
//! `.pvd` collection for series. Both write through a temporary file and a
//! rename, so a failure leaves nothing half-written.

use super::csr::Pattern;
use super::stress::ElementStress;
use super::{FemError, Mesh, write_atomically};
use std::io::Write;
use std::path::Path;

/// VTK's cell type for the linear hexahedron.
const VTK_HEXAHEDRON: u8 = 12;

/// Writes the CSR stiffness as `%%MatrixMarket matrix coordinate real symmetric`: the lower
/// triangle only (row ≥ column, 1-based, rows in order), about half the entries of the full
/// matrix, 17 significant digits so the f64 values round-trip. K is symmetric to rounding (its
/// two triangles differ by ~1e-16 relative, from the order of the element products); the lower
/// one is written.
pub fn matrix_market(path: &Path, pattern: &Pattern, values: &[f64]) -> Result<(), FemError> {
    let lower = |r: usize| {
        let (s, e) = (pattern.row_ptr[r] as usize, pattern.row_ptr[r + 1] as usize);
        // Columns are sorted within a row: the lower part is a prefix.
        let end = s + pattern.col[s..e].partition_point(|&c| c as usize <= r);
        s..end
    };
    let entries: usize = (0..pattern.rows()).map(|r| lower(r).len()).sum();
    write_atomically(path, |w| {
        writeln!(w, "%%MatrixMarket matrix coordinate real symmetric")?;
        writeln!(
            w,
            "% hex8 linear-elasticity stiffness written by warpkit (lower triangle)"
        )?;
        writeln!(w, "{} {} {entries}", pattern.rows(), pattern.rows())?;
        for r in 0..pattern.rows() {
            let span = lower(r);
            for (c, v) in pattern.col[span.clone()].iter().zip(&values[span]) {
                writeln!(w, "{} {} {v:.16e}", r + 1, c + 1)?;
            }
        }
        Ok(())
    })
}

/// A named field: `components` values per point (or per cell), `values` point after point.
#[derive(Clone, Copy, Debug)]
pub struct Field<'a> {
    pub name: &'a str,
    pub components: usize,
    pub values: &'a [f64],
}

/// Writes the mesh with the point field `displacement` (3 per node) and, when given, each
/// element's centre `strain`, `stress` (6 components, ParaView's symmetric-tensor order) and
/// `von_mises` as cell fields, as a `.vtu` file ([`vtu_fields`]).
pub fn vtu(
    path: &Path,
    mesh: &Mesh,
    displacement: &[f64],
    stresses: Option<&[ElementStress]>,
) -> Result<(), FemError> {
    let point = [Field {
        name: "displacement",
        components: 3,
        values: displacement,
    }];
    let Some(s) = stresses else {
        return vtu_fields(path, mesh, &point, &[]);
    };
    let strain: Vec<f64> = s.iter().flat_map(|e| e.strain).collect();
    let stress: Vec<f64> = s.iter().flat_map(|e| e.stress).collect();
    let vm: Vec<f64> = s.iter().map(|e| e.von_mises).collect();
    let cell = [
        Field {
            name: "strain",
            components: 6,
            values: &strain,
        },
        Field {
            name: "stress",
            components: 6,
            values: &stress,
        },
        Field {
            name: "von_mises",
            components: 1,
            values: &vm,
        },
    ];
    vtu_fields(path, mesh, &point, &cell)
}

/// One appended array: its XML attributes (type, name, components) and its little-endian bytes.
struct Block {
    attrs: String,
    bytes: Vec<u8>,
}

fn f64_block(name: Option<&str>, components: usize, values: &[f64]) -> Block {
    let name = name.map(|n| format!(r#" Name="{n}""#)).unwrap_or_default();
    Block {
        attrs: format!(r#"type="Float64"{name} NumberOfComponents="{components}""#),
        bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    }
}

/// Writes a VTK XML unstructured grid as ParaView writes it: the XML header, then every array in
/// one `<AppendedData encoding="raw">` block, each array as a UInt64 byte count followed by its
/// little-endian values (`offset` = where its count starts, after the `_` that opens the block).
/// Point fields have `components` values per node, cell fields per element.
pub fn vtu_fields(
    path: &Path,
    mesh: &Mesh,
    point: &[Field],
    cell: &[Field],
) -> Result<(), FemError> {
    for (f, per, what) in point
        .iter()
        .map(|f| (f, mesh.nodes.len(), "nodes"))
        .chain(cell.iter().map(|f| (f, mesh.elements.len(), "elements")))
    {
        if f.values.len() != f.components * per {
            return Err(FemError::MeshSize(format!(
                "field {} has {} values, {per} {what} × {} components need {}",
                f.name,
                f.values.len(),
                f.components,
                f.components * per
            )));
        }
    }
    let points: Vec<f64> = mesh.nodes.iter().flatten().copied().collect();
    let connectivity: Vec<u8> = mesh
        .elements
        .iter()
        .flatten()
        .flat_map(|&n| i64::from(n).to_le_bytes())
        .collect();
    let offsets: Vec<u8> = (1..=mesh.elements.len() as i64)
        .flat_map(|e| (8 * e).to_le_bytes())
        .collect();
    let int64 = |name: &str, bytes| Block {
        attrs: format!(r#"type="Int64" Name="{name}""#),
        bytes,
    };
    // The sections in the order of the XML; their blocks in the same order in the appended data.
    let sections: [(&str, Vec<Block>); 4] = [
        (
            "PointData",
            point
                .iter()
                .map(|f| f64_block(Some(f.name), f.components, f.values))
                .collect(),
        ),
        (
            "CellData",
            cell.iter()
                .map(|f| f64_block(Some(f.name), f.components, f.values))
                .collect(),
        ),
        ("Points", vec![f64_block(None, 3, &points)]),
        (
            "Cells",
            vec![
                int64("connectivity", connectivity),
                int64("offsets", offsets),
                Block {
                    attrs: r#"type="UInt8" Name="types""#.into(),
                    bytes: vec![VTK_HEXAHEDRON; mesh.elements.len()],
                },
            ],
        ),
    ];
    // The active attributes (what ParaView colours by first): the first vector, scalar and
    // tensor fields.
    let active = |fields: &[Field]| {
        let pick = |c: usize, attr: &str| {
            fields
                .iter()
                .find(|f| f.components == c)
                .map(|f| format!(r#" {attr}="{}""#, f.name))
                .unwrap_or_default()
        };
        pick(3, "Vectors") + &pick(1, "Scalars") + &pick(6, "Tensors")
    };
    write_atomically(path, |w| {
        writeln!(w, r#"<?xml version="1.0"?>"#)?;
        writeln!(
            w,
            r#"<VTKFile type="UnstructuredGrid" version="1.0" byte_order="LittleEndian" header_type="UInt64">"#
        )?;
        writeln!(w, "  <UnstructuredGrid>")?;
        writeln!(
            w,
            r#"    <Piece NumberOfPoints="{}" NumberOfCells="{}">"#,
            mesh.nodes.len(),
            mesh.elements.len()
        )?;
        let mut offset = 0usize;
        for (section, blocks) in &sections {
            let attrs = match *section {
                "PointData" => active(point),
                "CellData" => active(cell),
                _ => String::new(),
            };
            writeln!(w, "      <{section}{attrs}>")?;
            for b in blocks {
                writeln!(
                    w,
                    r#"        <DataArray {} format="appended" offset="{offset}"/>"#,
                    b.attrs
                )?;
                offset += 8 + b.bytes.len();
            }
            writeln!(w, "      </{section}>")?;
        }
        writeln!(w, "    </Piece>\n  </UnstructuredGrid>")?;
        write!(w, "  <AppendedData encoding=\"raw\">\n   _")?;
        for (_, blocks) in &sections {
            for b in blocks {
                w.write_all(&(b.bytes.len() as u64).to_le_bytes())?;
                w.write_all(&b.bytes)?;
            }
        }
        writeln!(w, "\n  </AppendedData>\n</VTKFile>")?;
        Ok(())
    })
}

/// Writes a ParaView collection (`.pvd`) of `steps` (time, `.vtu` file): ParaView opens it as
/// one series. Files are referred to relative to the `.pvd`'s folder when they lie in it.
pub fn pvd(path: &Path, steps: &[(f64, &Path)]) -> Result<(), FemError> {
    let dir = path.parent().unwrap_or(Path::new(""));
    write_atomically(path, |w| {
        writeln!(w, r#"<?xml version="1.0"?>"#)?;
        writeln!(
            w,
            r#"<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">"#
        )?;
        writeln!(w, "  <Collection>")?;
        for (t, file) in steps {
            let rel = file.strip_prefix(dir).unwrap_or(file);
            let name = rel.display().to_string();
            let name = name
                .replace('&', "&amp;")
                .replace('"', "&quot;")
                .replace('<', "&lt;");
            writeln!(
                w,
                r#"    <DataSet timestep="{t:e}" group="" part="0" file="{name}"/>"#
            )?;
        }
        writeln!(w, "  </Collection>\n</VTKFile>")?;
        Ok(())
    })
}
