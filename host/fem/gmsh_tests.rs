//! The `.msh` reader on the four variants (2.2 and 4.1, ASCII and binary): a hand-written 4.1
//! ASCII file, and binary files written here byte by byte after the format specification (not
//! by the reader under test), all with physical groups.

use super::mesh::{self, GmshMesh};
use super::{FemError, Mesh};

/// Two hexahedra along x, a physical volume "solid" (tag 7), the quad at x = 0 in the physical
/// surface "clamped" (tag 8), the quad at x = 2 in "load" (tag 9). Node tags are sparse (10, 20,
/// …) and the nodes come in two blocks, as Gmsh writes one block per entity.
const ASCII_41: &str = r#"$MeshFormat
4.1 0 8
$EndMeshFormat
$PhysicalNames
3
2 8 "clamped"
2 9 "load"
3 7 "solid"
$EndPhysicalNames
$Entities
0 0 2 1
1 0 0 0 0 1 1 1 8 0
2 2 0 0 2 1 1 1 9 0
3 0 0 0 2 1 1 1 7 2 1 2
$EndEntities
$Nodes
2 12 10 120
2 1 0 4
10
20
30
40
0 0 0
0 1 0
0 1 1
0 0 1
3 3 0 8
50
60
70
80
90
100
110
120
1 0 0
1 1 0
1 1 1
1 0 1
2 0 0
2 1 0
2 1 1
2 0 1
$EndNodes
$Elements
3 4 1 4
2 1 3 1
1 10 20 30 40
2 2 3 1
2 90 100 110 120
3 3 5 2
3 10 50 60 20 40 80 70 30
4 50 90 100 60 80 120 110 70
$EndElements
"#;

/// The mesh of [`ASCII_41`], with node indices in file order.
fn expected() -> (Mesh, [[u32; 4]; 2]) {
    let mut nodes = vec![
        [0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 1.0, 1.0],
        [0.0, 0.0, 1.0],
    ];
    for x in [1.0, 2.0] {
        nodes.extend([[x, 0.0, 0.0], [x, 1.0, 0.0], [x, 1.0, 1.0], [x, 0.0, 1.0]]);
    }
    let elements = vec![[0, 4, 5, 1, 3, 7, 6, 2], [4, 8, 9, 5, 7, 11, 10, 6]];
    // Every variant below writes the hexahedra as elements 3 and 4 (after the two quadrangles).
    let element_tags = vec![3, 4];
    (
        Mesh {
            nodes,
            elements,
            element_tags,
        },
        [[0, 1, 2, 3], [8, 9, 10, 11]],
    )
}

fn check(g: &GmshMesh, what: &str) {
    let (m, quads) = expected();
    assert_eq!(g.mesh, m, "{what}");
    let names: Vec<&str> = g.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["clamped", "load", "solid"], "{what}");
    let clamped = g.group("clamped").unwrap();
    assert_eq!((clamped.dim, clamped.tag), (2, 8), "{what}");
    assert_eq!(clamped.nodes, [0, 1, 2, 3], "{what}");
    assert_eq!(clamped.faces, [quads[0]], "{what}");
    let load = g.group("load").unwrap();
    assert_eq!(load.nodes, [8, 9, 10, 11], "{what}");
    assert_eq!(load.faces, [quads[1]], "{what}");
    let solid = g.group("solid").unwrap();
    assert_eq!(solid.elements, [0, 1], "{what}");
    assert_eq!(solid.nodes, (0..12).collect::<Vec<u32>>(), "{what}");
    assert!(solid.faces.is_empty(), "{what}");
}

/// The node tags of [`ASCII_41`] in file order.
const TAGS: [u64; 12] = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120];

/// Little- or big-endian bytes of Gmsh's `int`, `size_t` (8) and `double`.
struct Bytes {
    out: Vec<u8>,
    big: bool,
}

impl Bytes {
    fn text(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }
    fn int(&mut self, v: i32) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.out.extend_from_slice(&b);
    }
    fn size(&mut self, v: u64) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.out.extend_from_slice(&b);
    }
    fn float(&mut self, v: f64) {
        self.size(v.to_bits());
    }
}

const NAMES: &str =
    "$PhysicalNames\n3\n2 8 \"clamped\"\n2 9 \"load\"\n3 7 \"solid\"\n$EndPhysicalNames\n";

/// [`ASCII_41`]'s mesh as Gmsh 4.1 binary (spec §"MSH file format version 4.1": `$Entities`,
/// `$Nodes` and `$Elements` are binary after their marker line, ending in a newline).
pub(super) fn binary_41(big: bool) -> Vec<u8> {
    let (m, quads) = expected();
    let mut b = Bytes {
        out: Vec::new(),
        big,
    };
    b.text("$MeshFormat\n4.1 1 8\n");
    b.int(1);
    b.text("\n$EndMeshFormat\n");
    b.text(NAMES);
    b.text("$Entities\n");
    for n in [0, 0, 2, 1] {
        b.size(n);
    }
    // Surfaces 1 (x = 0, physical 8) and 2 (x = 2, physical 9), volume 3 (physical 7).
    for (tag, phys, bounds) in [(1, 8, vec![]), (2, 9, vec![]), (3, 7, vec![1, 2])] {
        b.int(tag);
        for v in [0.0, 0.0, 0.0, 2.0, 1.0, 1.0] {
            b.float(v);
        }
        b.size(1);
        b.int(phys);
        b.size(bounds.len() as u64);
        for t in bounds {
            b.int(t);
        }
    }
    b.text("\n$EndEntities\n$Nodes\n");
    for v in [2, 12, 10, 120] {
        b.size(v);
    }
    for (dim, entity, range) in [(2, 1, 0..4), (3, 3, 4..12)] {
        b.int(dim);
        b.int(entity);
        b.int(0);
        b.size(range.len() as u64);
        for i in range.clone() {
            b.size(TAGS[i]);
        }
        for i in range {
            for x in m.nodes[i] {
                b.float(x);
            }
        }
    }
    b.text("\n$EndNodes\n$Elements\n");
    for v in [3, 4, 1, 4] {
        b.size(v);
    }
    let mut tag = 1;
    for (entity, quad) in [(1, quads[0]), (2, quads[1])] {
        b.int(2);
        b.int(entity);
        b.int(3);
        b.size(1);
        b.size(tag);
        tag += 1;
        for n in quad {
            b.size(TAGS[n as usize]);
        }
    }
    b.int(3);
    b.int(3);
    b.int(5);
    b.size(2);
    for e in &m.elements {
        b.size(tag);
        tag += 1;
        for &n in e {
            b.size(TAGS[n as usize]);
        }
    }
    b.text("\n$EndElements\n");
    b.out
}

/// [`ASCII_41`]'s mesh as Gmsh 2.2 binary (legacy format: the counts are text, nodes are
/// `int tag, 3 double`, elements come in blocks headed by `int type, count, tag count`, and each
/// element's tags are `physical, geometrical entity`).
pub(super) fn binary_22(big: bool) -> Vec<u8> {
    let (m, quads) = expected();
    let mut b = Bytes {
        out: Vec::new(),
        big,
    };
    b.text("$MeshFormat\n2.2 1 8\n");
    b.int(1);
    b.text("\n$EndMeshFormat\n");
    b.text(NAMES);
    b.text("$Nodes\n12\n");
    for (i, x) in m.nodes.iter().enumerate() {
        b.int(TAGS[i] as i32);
        for &v in x {
            b.float(v);
        }
    }
    b.text("\n$EndNodes\n$Elements\n4\n");
    // Two blocks of one quad each (different tags), then one block of both hexahedra.
    for (tag, phys, quad) in [(1, 8, quads[0]), (2, 9, quads[1])] {
        for v in [3, 1, 2, tag, phys, tag] {
            b.int(v);
        }
        for n in quad {
            b.int(TAGS[n as usize] as i32);
        }
    }
    for v in [5, 2, 2] {
        b.int(v);
    }
    for (k, e) in m.elements.iter().enumerate() {
        for v in [3 + k as i32, 7, 3] {
            b.int(v);
        }
        for &n in e {
            b.int(TAGS[n as usize] as i32);
        }
    }
    b.text("\n$EndElements\n");
    b.out
}

/// [`ASCII_41`]'s mesh as Gmsh 2.2 ASCII.
fn ascii_22() -> String {
    let (m, quads) = expected();
    let mut s = format!("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n{NAMES}$Nodes\n12\n");
    for (i, x) in m.nodes.iter().enumerate() {
        s += &format!("{} {} {} {}\n", TAGS[i], x[0], x[1], x[2]);
    }
    s += "$EndNodes\n$Elements\n4\n";
    for (tag, phys, quad) in [(1, 8, quads[0]), (2, 9, quads[1])] {
        let n: Vec<String> = quad.iter().map(|&n| TAGS[n as usize].to_string()).collect();
        s += &format!("{tag} 3 2 {phys} {tag} {}\n", n.join(" "));
    }
    for (k, e) in m.elements.iter().enumerate() {
        let n: Vec<String> = e.iter().map(|&n| TAGS[n as usize].to_string()).collect();
        s += &format!("{} 5 2 7 3 {}\n", 3 + k, n.join(" "));
    }
    s + "$EndElements\n"
}

#[test]
fn all_four_variants_give_the_same_mesh_and_groups() {
    check(
        &mesh::parse_gmsh(ASCII_41.as_bytes(), "a41").unwrap(),
        "4.1 ASCII",
    );
    check(
        &mesh::parse_gmsh(ascii_22().as_bytes(), "a22").unwrap(),
        "2.2 ASCII",
    );
    for big in [false, true] {
        check(
            &mesh::parse_gmsh(&binary_41(big), "b41").unwrap(),
            "4.1 binary",
        );
        check(
            &mesh::parse_gmsh(&binary_22(big), "b22").unwrap(),
            "2.2 binary",
        );
    }
    // CRLF line ends (a file saved on Windows) read the same.
    let crlf = ASCII_41.replace('\n', "\r\n");
    check(&mesh::parse_gmsh(crlf.as_bytes(), "crlf").unwrap(), "CRLF");
}

/// Every truncation of every variant is an error naming the file, never a panic.
#[test]
fn truncations_are_errors() {
    let files = [
        ASCII_41.as_bytes().to_vec(),
        ascii_22().into_bytes(),
        binary_41(false),
        binary_22(true),
    ];
    for f in &files {
        // Cutting inside `$EndElements` still leaves a complete mesh: stop before it.
        let end = f.len() - "$EndElements\n".len();
        for cut in 0..end {
            match mesh::parse_gmsh(&f[..cut], "cut.msh") {
                Err(FemError::Msh { path, .. }) => assert_eq!(path, "cut.msh"),
                Err(FemError::NoHexahedra { .. }) => {}
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
    }
}

#[test]
fn bad_headers_and_counts_are_named() {
    let e = mesh::parse_gmsh(ASCII_41.replace("4.1 0 8", "3.0 0 8").as_bytes(), "x")
        .unwrap_err()
        .to_string();
    assert!(e.contains("x:2:") && e.contains("2.2 and 4.1"), "{e}");
    let e = mesh::parse_gmsh(ASCII_41.replace("4.1 0 8", "4.1 0 4").as_bytes(), "x")
        .unwrap_err()
        .to_string();
    assert!(e.contains("data size 4"), "{e}");
    let mut b = binary_41(false);
    // The byte-order check value.
    let at = "$MeshFormat\n4.1 1 8\n".len();
    b[at] = 7;
    let e = mesh::parse_gmsh(&b, "x").unwrap_err().to_string();
    assert!(e.contains("byte-order"), "{e}");
    // A node count of 2^64 − 1 in binary: an error before any allocation.
    let mut b = binary_41(false);
    let nodes = find(&b, b"$Nodes\n") + "$Nodes\n".len() + 8;
    b[nodes..nodes + 8].fill(0xff);
    let e = mesh::parse_gmsh(&b, "x").unwrap_err().to_string();
    assert!(e.contains("cannot fit"), "{e}");
    // An unknown element type: its node count (what binary files need to step over it) is unknown.
    let e = mesh::parse_gmsh(&ASCII_41.replace("3 3 5 2", "3 3 99 2").into_bytes(), "x")
        .unwrap_err()
        .to_string();
    assert!(e.contains("x:51:") && e.contains("type 99"), "{e}");
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).position(|w| w == needle).unwrap()
}

/// Errors about an element name its tag in the file and its physical volume, never the reader's
/// 0-based index: a sparse tag (1042) for an inside-out second hexahedron.
#[test]
fn element_errors_name_the_gmsh_tag() {
    let hexes = "3 3 5 2\n3 10 50 60 20 40 80 70 30\n4 50 90 100 60 80 120 110 70\n";
    let inverted = "3 3 5 2\n17 10 50 60 20 40 80 70 30\n1042 80 120 110 70 50 90 100 60\n";
    assert!(ASCII_41.contains(hexes));
    let text = ASCII_41.replace(hexes, inverted);
    let g = mesh::parse_gmsh(text.as_bytes(), "inv.msh").unwrap();
    assert_eq!(g.mesh.element_tags, [17, 1042]);
    let e = super::validate(&g.mesh, &super::case::DEFAULT_MATERIAL).unwrap_err();
    assert!(
        matches!(&e, FemError::InvertedElement { element, .. } if element.index == 1),
        "{e}"
    );
    assert!(
        e.to_string().starts_with("Gmsh element 1042 is inverted"),
        "{e}"
    );
    let e = g.name_group(e).to_string();
    assert!(
        e.starts_with("Gmsh element 1042 in physical group \"solid\" is inverted"),
        "{e}"
    );
    // Both elements of a colour conflict are named, each with its volume.
    let both = super::colour::Colouring {
        colour_of: vec![0, 0],
        groups: vec![vec![0, 1]],
    };
    let e = super::colour::verify(&g.mesh, &both).unwrap_err();
    let e = g.name_group(e).to_string();
    assert!(
        e.starts_with(
            "colouring is invalid: Gmsh element 17 in physical group \"solid\" and Gmsh element \
             1042 in physical group \"solid\" share node"
        ),
        "{e}"
    );
    // A negative element tag names nothing the user could look up: refused on its line (4.1
    // reads tags as unsigned sizes, 2.2 as signed ints).
    let negative = ASCII_41.replace(hexes, &inverted.replace("1042", "-5"));
    let e = mesh::parse_gmsh(negative.as_bytes(), "neg.msh").unwrap_err();
    assert!(e.to_string().starts_with("neg.msh:53: \"-5\""), "{e}");
    let negative = ascii_22().replace("\n4 5 2 7 3 ", "\n-5 5 2 7 3 ");
    let line = negative.lines().position(|l| l.starts_with("-5 ")).unwrap() + 1;
    let e = mesh::parse_gmsh(negative.as_bytes(), "neg22.msh").unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("neg22.msh:{line}: element tag -5 is negative"),
    );
}
