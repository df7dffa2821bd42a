//! Exports: the stiffness in Matrix Market coordinate format, displacements as VTK XML
//! unstructured grid (`.vtu`, ASCII) for ParaView. Both write through a temporary file and a
//! rename, so a failure leaves nothing half-written.

use super::csr::Pattern;
use super::{FemError, Mesh, write_atomically};
use std::io::Write;
use std::path::Path;

/// VTK's cell type for the linear hexahedron.
const VTK_HEXAHEDRON: u8 = 12;

/// Writes the CSR matrix as `%%MatrixMarket matrix coordinate real general` (1-based indices,
/// 17 significant digits so the f64 values round-trip).
pub fn matrix_market(path: &Path, pattern: &Pattern, values: &[f64]) -> Result<(), FemError> {
    write_atomically(path, |w| {
        writeln!(w, "%%MatrixMarket matrix coordinate real general")?;
        writeln!(w, "% hex8 linear-elasticity stiffness written by warpkit")?;
        writeln!(w, "{} {} {}", pattern.rows(), pattern.rows(), pattern.nnz())?;
        for r in 0..pattern.rows() {
            let (s, e) = (pattern.row_ptr[r] as usize, pattern.row_ptr[r + 1] as usize);
            for (c, v) in pattern.col[s..e].iter().zip(&values[s..e]) {
                writeln!(w, "{} {} {v:.16e}", r + 1, c + 1)?;
            }
        }
        Ok(())
    })
}

/// Writes the mesh with the point field `displacement` (3 per node) as a `.vtu` file.
pub fn vtu(path: &Path, mesh: &Mesh, displacement: &[f64]) -> Result<(), FemError> {
    if displacement.len() != mesh.dofs() {
        return Err(FemError::MeshSize(format!(
            "displacement has {} values, the mesh {} DOFs",
            displacement.len(),
            mesh.dofs()
        )));
    }
    write_atomically(path, |w| {
        writeln!(w, r#"<?xml version="1.0"?>"#)?;
        writeln!(
            w,
            r#"<VTKFile type="UnstructuredGrid" version="1.0" byte_order="LittleEndian">"#
        )?;
        writeln!(w, "<UnstructuredGrid>")?;
        writeln!(
            w,
            r#"<Piece NumberOfPoints="{}" NumberOfCells="{}">"#,
            mesh.nodes.len(),
            mesh.elements.len()
        )?;
        writeln!(w, "<PointData Vectors=\"displacement\">")?;
        writeln!(
            w,
            r#"<DataArray type="Float64" Name="displacement" NumberOfComponents="3" format="ascii">"#
        )?;
        for u in displacement.chunks(3) {
            writeln!(w, "{:e} {:e} {:e}", u[0], u[1], u[2])?;
        }
        writeln!(w, "</DataArray>\n</PointData>\n<Points>")?;
        writeln!(
            w,
            r#"<DataArray type="Float64" NumberOfComponents="3" format="ascii">"#
        )?;
        for p in &mesh.nodes {
            writeln!(w, "{:e} {:e} {:e}", p[0], p[1], p[2])?;
        }
        writeln!(w, "</DataArray>\n</Points>\n<Cells>")?;
        writeln!(
            w,
            r#"<DataArray type="Int64" Name="connectivity" format="ascii">"#
        )?;
        for c in &mesh.elements {
            let s: Vec<String> = c.iter().map(|n| n.to_string()).collect();
            writeln!(w, "{}", s.join(" "))?;
        }
        writeln!(w, "</DataArray>")?;
        writeln!(
            w,
            r#"<DataArray type="Int64" Name="offsets" format="ascii">"#
        )?;
        for e in 0..mesh.elements.len() {
            writeln!(w, "{}", 8 * (e + 1))?;
        }
        writeln!(w, "</DataArray>")?;
        writeln!(w, r#"<DataArray type="UInt8" Name="types" format="ascii">"#)?;
        for _ in &mesh.elements {
            writeln!(w, "{VTK_HEXAHEDRON}")?;
        }
        writeln!(
            w,
            "</DataArray>\n</Cells>\n</Piece>\n</UnstructuredGrid>\n</VTKFile>"
        )?;
        Ok(())
    })
}
