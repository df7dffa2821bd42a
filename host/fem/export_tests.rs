//! The exports read back: the `.vtu` parsed (XML nesting, appended block lengths, values), the
//! centre stresses against a linear displacement field, the `.pvd`, and the symmetric Matrix
//! Market file mirrored back into the full matrix.

use super::stress::{self, ElementStress};
use super::{ElementMaterials, Formulation, Material, Mesh, assemble, colour, csr, export, mesh};

const STEEL: Material = Material {
    young: 210e9,
    poisson: 0.3,
};

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("warpkit-export-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A 3 × 2 × 2 box with its nodes moved off the grid (elements stay valid): nothing may rely on
/// parallelepipeds.
fn distorted() -> Mesh {
    let mut m = mesh::cantilever([3.0, 1.0, 1.0], [3, 2, 2]).unwrap();
    for (n, p) in m.nodes.iter_mut().enumerate() {
        for (d, x) in p.iter_mut().enumerate() {
            *x += 0.04 * ((7 * n + 3 * d) as f64).sin();
        }
    }
    m
}

/// u = A x: trilinear elements reproduce a linear field exactly, so every element's strain is
/// sym(A) whatever its shape.
const A: [[f64; 3]; 3] = [[1e-3, 2e-4, 0.0], [5e-4, -3e-4, 1e-4], [0.0, 3e-4, 2e-4]];

fn linear_field(m: &Mesh) -> Vec<f64> {
    m.nodes
        .iter()
        .flat_map(|x| A.map(|row| row[0] * x[0] + row[1] * x[1] + row[2] * x[2]))
        .collect()
}

/// B-bar centre strains: a linear field's are exact, as the standard element's (its dilatation is
/// uniform, so its mean is itself); otherwise B̄ moves only the volumetric part: the shear strains
/// stay B's and the three normal strains shift by one common amount, the dilatation's correction.
#[test]
fn bbar_centre_strain_changes_only_the_dilatation() {
    let m = distorted();
    let mats = ElementMaterials::uniform(STEEL, m.elements.len());
    let at = |f, u: &[f64]| stress::element_centre_materials(&m, &mats, f, u).unwrap();
    let u = linear_field(&m);
    for (s, b) in at(Formulation::Standard, &u)
        .iter()
        .zip(at(Formulation::Bbar, &u))
    {
        for i in 0..6 {
            assert!(
                (s.strain[i] - b.strain[i]).abs() < 1e-12,
                "linear field, {i}"
            );
        }
    }
    let u: Vec<f64> = m
        .nodes
        .iter()
        .flat_map(|x| [x[0] * x[1], x[2] * x[2], x[0] * x[2]].map(|v| 1e-3 * v))
        .collect();
    let (s, b) = (at(Formulation::Standard, &u), at(Formulation::Bbar, &u));
    let mut moved = 0.0f64;
    for (e, (s, b)) in s.iter().zip(&b).enumerate() {
        let shift = b.strain[0] - s.strain[0];
        moved = moved.max(shift.abs());
        for i in 0..3 {
            assert!(
                (b.strain[i] - s.strain[i] - shift).abs() < 1e-15,
                "element {e}, {i}"
            );
            assert!(
                (b.strain[3 + i] - s.strain[3 + i]).abs() < 1e-15,
                "element {e}, {i}"
            );
        }
    }
    assert!(moved > 1e-8, "B-bar changed nothing: {moved}");
}

#[test]
fn centre_stress_of_a_linear_field_is_exact() {
    let m = distorted();
    let s = stress::element_centre(&m, &STEEL, &linear_field(&m)).unwrap();
    let eps = [
        A[0][0],
        A[1][1],
        A[2][2],
        0.5 * (A[0][1] + A[1][0]),
        0.5 * (A[1][2] + A[2][1]),
        0.5 * (A[2][0] + A[0][2]),
    ];
    let lame = STEEL.lame::<f64>();
    let tr = eps[0] + eps[1] + eps[2];
    let sigma: [f64; 6] = std::array::from_fn(|i| {
        2.0 * lame.mu * eps[i] + if i < 3 { lame.lambda * tr } else { 0.0 }
    });
    for (e, es) in s.iter().enumerate() {
        for i in 0..6 {
            assert!(
                (es.strain[i] - eps[i]).abs() < 1e-12,
                "element {e} strain {i}"
            );
            assert!(
                (es.stress[i] - sigma[i]).abs() < 1e-9 * 1e9,
                "element {e} stress {i}"
            );
        }
        assert!(
            (es.von_mises - stress::von_mises(&sigma)).abs() < 1.0,
            "element {e}"
        );
    }
    // von Mises: uniaxial σ gives σ, pure shear τ gives √3 τ, a hydrostatic state 0.
    assert_eq!(stress::von_mises(&[5.0, 0.0, 0.0, 0.0, 0.0, 0.0]), 5.0);
    let shear = stress::von_mises(&[0.0, 0.0, 0.0, 2.0, 0.0, 0.0]);
    assert!((shear - 2.0 * 3f64.sqrt()).abs() < 1e-12);
    assert_eq!(stress::von_mises(&[4.0, 4.0, 4.0, 0.0, 0.0, 0.0]), 0.0);
}

/// One `<DataArray …/>` of the header: its attributes.
#[derive(Debug)]
struct Array {
    section: String,
    name: String,
    kind: String,
    components: usize,
    offset: usize,
}

fn attr(tag: &str, key: &str) -> Option<String> {
    let k = format!(" {key}=\"");
    let at = tag.find(&k)? + k.len();
    Some(tag[at..at + tag[at..].find('"')?].to_string())
}

/// Parses a `.vtu` written by [`export::vtu_fields`] as a reader would: the XML header must nest,
/// name the appended encoding, and each array's block must start at its offset with a UInt64
/// byte count that ends exactly where the next block starts (the last one at `</AppendedData>`).
/// Returns each array's section, name and little-endian values as f64 (integers converted).
fn read_vtu(bytes: &[u8]) -> Vec<(String, String, usize, Vec<f64>)> {
    let open = b"<AppendedData encoding=\"raw\">";
    let head_end = bytes.windows(open.len()).position(|w| w == open).unwrap();
    let header = std::str::from_utf8(&bytes[..head_end]).unwrap();
    let data = head_end
        + open.len()
        + bytes[head_end + open.len()..]
            .iter()
            .position(|&b| b == b'_')
            .unwrap()
        + 1;
    let tail = b"\n  </AppendedData>\n</VTKFile>\n";
    assert!(bytes.ends_with(tail), "the file ends in its closing tags");
    let data_end = bytes.len() - tail.len();
    // XML nesting of the header (AppendedData and VTKFile close in the tail).
    let mut stack: Vec<String> = Vec::new();
    let mut arrays = Vec::new();
    for piece in header.split('<').skip(1) {
        let tag = &piece[..piece.find('>').unwrap()];
        if tag.starts_with('?') {
            continue;
        }
        let name: String = tag
            .trim_start_matches('/')
            .split([' ', '/'])
            .next()
            .unwrap()
            .into();
        if tag.starts_with('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.as_str()),
                "</{name}> closes"
            );
        } else if tag.ends_with('/') {
            assert_eq!(name, "DataArray");
            assert_eq!(attr(tag, "format").as_deref(), Some("appended"));
            arrays.push(Array {
                section: stack.last().unwrap().clone(),
                name: attr(tag, "Name").unwrap_or_default(),
                kind: attr(tag, "type").unwrap(),
                components: attr(tag, "NumberOfComponents").map_or(1, |c| c.parse().unwrap()),
                offset: attr(tag, "offset").unwrap().parse().unwrap(),
            });
        } else {
            if name == "VTKFile" {
                assert_eq!(attr(tag, "header_type").as_deref(), Some("UInt64"));
                assert_eq!(attr(tag, "byte_order").as_deref(), Some("LittleEndian"));
            }
            stack.push(name);
        }
    }
    assert_eq!(
        stack,
        ["VTKFile"],
        "only VTKFile is open before the appended data"
    );
    let mut next = 0;
    let out: Vec<_> = arrays
        .into_iter()
        .map(|a| {
            assert_eq!(
                a.offset, next,
                "{} starts where the previous block ends",
                a.name
            );
            let at = data + a.offset;
            let len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
            let block = &bytes[at + 8..at + 8 + len];
            next = a.offset + 8 + len;
            let values: Vec<f64> = match a.kind.as_str() {
                "Float64" => block
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
                "Int64" => block
                    .chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64)
                    .collect(),
                "UInt8" => block.iter().map(|&b| b as f64).collect(),
                other => panic!("type {other}"),
            };
            (a.section, a.name, a.components, values)
        })
        .collect();
    assert_eq!(
        data + next,
        data_end,
        "the blocks fill the appended data exactly"
    );
    out
}

#[test]
fn vtu_reads_back_with_paraview_layout() {
    let m = distorted();
    let u = linear_field(&m);
    let s: Vec<ElementStress> = stress::element_centre(&m, &STEEL, &u).unwrap();
    let dir = scratch("vtu");
    let path = dir.join("u.vtu");
    export::vtu(&path, &m, &u, Some(&s)).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains(&format!(
        r#"<Piece NumberOfPoints="{}" NumberOfCells="{}">"#,
        m.nodes.len(),
        m.elements.len()
    )));
    assert!(
        text.contains(r#"<CellData Scalars="von_mises" Tensors="strain">"#),
        "{text:.900}"
    );
    let arrays = read_vtu(&bytes);
    let names: Vec<(&str, &str, usize)> = arrays
        .iter()
        .map(|(s, n, c, _)| (s.as_str(), n.as_str(), *c))
        .collect();
    assert_eq!(
        names,
        [
            ("PointData", "displacement", 3),
            ("CellData", "strain", 6),
            ("CellData", "stress", 6),
            ("CellData", "von_mises", 1),
            ("Points", "", 3),
            ("Cells", "connectivity", 1),
            ("Cells", "offsets", 1),
            ("Cells", "types", 1),
        ]
    );
    let values = |i: usize| &arrays[i].3;
    assert_eq!(values(0), &u);
    let flat = |f: fn(&ElementStress) -> Vec<f64>| s.iter().flat_map(f).collect::<Vec<f64>>();
    assert_eq!(values(1), &flat(|e| e.strain.to_vec()));
    assert_eq!(values(2), &flat(|e| e.stress.to_vec()));
    assert_eq!(values(3), &flat(|e| vec![e.von_mises]));
    assert_eq!(
        values(4),
        &m.nodes.iter().flatten().copied().collect::<Vec<f64>>()
    );
    let conn: Vec<f64> = m.elements.iter().flatten().map(|&n| n as f64).collect();
    assert_eq!(values(5), &conn);
    let offsets: Vec<f64> = (1..=m.elements.len()).map(|e| (8 * e) as f64).collect();
    assert_eq!(values(6), &offsets);
    assert_eq!(values(7), &vec![12.0; m.elements.len()]);
    // Without stresses: displacement only, and no CellData section.
    export::vtu(&path, &m, &u, None).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(read_vtu(&bytes).len(), 5);
    // A series: two files and their collection.
    let second = dir.join("u2.vtu");
    export::vtu(&second, &m, &u, Some(&s)).unwrap();
    let pvd = dir.join("series.pvd");
    export::pvd(&pvd, &[(0.0, path.as_path()), (1.0, second.as_path())]).unwrap();
    let text = std::fs::read_to_string(&pvd).unwrap();
    assert!(text.contains(r#"<VTKFile type="Collection""#));
    assert!(
        text.contains(r#"timestep="0e0" group="" part="0" file="u.vtu""#),
        "{text}"
    );
    assert!(
        text.contains(r#"timestep="1e0" group="" part="0" file="u2.vtu""#),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The symmetric Matrix Market file holds the lower triangle (about half the entries); mirrored,
/// it is the full K: the lower triangle bit for bit, the upper to K's own symmetry (rounding).
#[test]
fn matrix_market_symmetric_reads_back_as_the_full_matrix() {
    let m = distorted();
    let c = colour::greedy(&m);
    let p = csr::Pattern::new(&m).unwrap();
    let k = assemble::cpu::<f64>(&m, &STEEL, &c, &p).unwrap();
    let dir = scratch("mtx");
    let path = dir.join("k.mtx");
    export::matrix_market(&path, &p, &k).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("%%MatrixMarket matrix coordinate real symmetric")
    );
    let mut lines = lines.filter(|l| !l.starts_with('%'));
    let header: Vec<usize> = lines
        .next()
        .unwrap()
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect();
    let n = p.rows();
    // The diagonal plus half of the rest.
    assert_eq!(header, [n, n, (p.nnz() + n) / 2]);
    let mut full = vec![f64::NAN; p.nnz()];
    let mut count = 0;
    for l in lines {
        let f: Vec<&str> = l.split(' ').collect();
        let (r, col): (usize, usize) = (f[0].parse().unwrap(), f[1].parse().unwrap());
        let v: f64 = f[2].parse().unwrap();
        assert!(col <= r, "({r}, {col}) is above the diagonal");
        count += 1;
        for (i, j) in [(r - 1, col - 1), (col - 1, r - 1)] {
            let s = p.row_ptr[i] as usize;
            let idx = s + p.col[s..p.row_ptr[i + 1] as usize]
                .binary_search(&(j as u32))
                .unwrap();
            full[idx] = v;
        }
    }
    assert_eq!(count, header[2]);
    let kmax = k.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    for r in 0..n {
        for idx in p.row_ptr[r] as usize..p.row_ptr[r + 1] as usize {
            let col = p.col[idx] as usize;
            if col <= r {
                assert_eq!(full[idx].to_bits(), k[idx].to_bits(), "({r}, {col})");
            } else {
                assert!((full[idx] - k[idx]).abs() <= 1e-13 * kmax, "({r}, {col})");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
