//! Case files: parsing and its errors, and three load cases with closed-form answers:
//! a two-material bar in tension (springs in series), a roller (one fixed component) that lets
//! the section contract, and a column hanging under its weight (the reaction is the weight).

use super::case::{CaseError, CaseFile, Problem};
use super::gmsh::{GmshMesh, PhysicalGroup};
use super::{Formulation, Mesh, assemble, colour, csr, mesh, solve};
use std::path::Path;

/// A group of `dim` named `name`: the given elements, faces and their nodes.
fn group(
    name: &str,
    dim: i32,
    elements: Vec<u32>,
    faces: Vec<[u32; 4]>,
    extra: &[u32],
) -> PhysicalGroup {
    let mut nodes: Vec<u32> = faces
        .iter()
        .flatten()
        .copied()
        .chain(extra.iter().copied())
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    PhysicalGroup {
        dim,
        tag: 0,
        name: name.into(),
        nodes,
        faces,
        triangles: Vec::new(),
        elements,
    }
}

/// The element faces of `m` whose 4 nodes satisfy `on` (local VTK lists of the six faces).
fn faces_where(m: &Mesh, on: impl Fn([f64; 3]) -> bool) -> Vec<[u32; 4]> {
    const LOCAL: [[usize; 4]; 6] = [
        [0, 3, 2, 1],
        [4, 5, 6, 7],
        [0, 1, 5, 4],
        [1, 2, 6, 5],
        [2, 3, 7, 6],
        [3, 0, 4, 7],
    ];
    let mut out = Vec::new();
    for conn in &m.elements {
        for f in LOCAL {
            let n = f.map(|l| conn[l]);
            if n.iter().all(|&v| on(m.nodes[v as usize])) {
                out.push(n);
            }
        }
    }
    out
}

fn node_at(m: &Mesh, p: [f64; 3]) -> u32 {
    m.nodes.iter().position(|&q| q == p).unwrap() as u32
}

/// A bar [0, 2] × [0, 1] × [0, 1] of 8 × 2 × 2 hexahedra: volumes "a" (x < 1) and "b" (x > 1),
/// surfaces "left" (x = 0) and "right" (x = 2), points "origin" (0, 0, 0) and "corner" (0, 1, 0).
fn bar() -> GmshMesh {
    let m = mesh::cantilever([2.0, 1.0, 1.0], [8, 2, 2]).unwrap();
    let centre_x = |e: usize| m.element_coords(e).iter().map(|p| p[0]).sum::<f64>() / 8.0;
    let (a, b): (Vec<u32>, Vec<u32>) =
        (0..m.elements.len() as u32).partition(|&e| centre_x(e as usize) < 1.0);
    let groups = vec![
        group("a", 3, a, vec![], &[]),
        group("b", 3, b, vec![], &[]),
        group("left", 2, vec![], faces_where(&m, |p| p[0] == 0.0), &[]),
        group("right", 2, vec![], faces_where(&m, |p| p[0] == 2.0), &[]),
        group("origin", 0, vec![], vec![], &[node_at(&m, [0.0; 3])]),
        group("corner", 0, vec![], vec![], &[node_at(&m, [0.0, 1.0, 0.0])]),
    ];
    GmshMesh { mesh: m, groups }
}

/// Resolves `toml` on `g`, assembles on the CPU (coloured, per-element materials) and solves.
fn solve_case(g: &GmshMesh, toml: &str) -> (Problem, solve::SetsResult) {
    let case = CaseFile::parse(toml, Path::new("case.toml")).unwrap();
    let problem = Problem::resolve(&case, g).unwrap();
    let m = &g.mesh;
    let c = colour::greedy(m);
    let p = csr::Pattern::new(m).unwrap();
    let k = assemble::cpu_materials::<f64>(m, &problem.materials, Formulation::Standard, &c, &p)
        .unwrap();
    let serial =
        assemble::serial_materials(m, &problem.materials, Formulation::Standard, &p).unwrap();
    assert!(assemble::relative_frobenius(&k, &serial) < 1e-14);
    let f = problem.load(m);
    let r = solve::solve_dofs(
        &p,
        k,
        &problem.fixed_dofs(m),
        f,
        1e-12,
        Box::new(solve::pcg),
    )
    .unwrap();
    (problem, r)
}

/// The statically determinate supports of the bar: a roller on "left" (x only), "origin" held
/// in y and z, "corner" in z (no rotation about x). The section contracts freely.
const SUPPORTS: &str = r#"
[[fixed]]
group = "left"
components = ["x"]
[[fixed]]
group = "origin"
components = ["y", "z"]
[[fixed]]
group = "corner"
components = "z"
"#;

/// Two materials in series under uniform tension σ: u(2) = σ (L_a / E_a + L_b / E_b). ν = 0 so
/// that the two parts' lateral strains agree and the stress stays uniform (a linear field, which
/// hex8 represents exactly).
#[test]
fn two_material_bar_is_springs_in_series() {
    let g = bar();
    let (ea, eb, sigma) = (1e9, 3e9, 2e6);
    let toml = format!(
        "{SUPPORTS}\n[[material]]\ngroup = \"a\"\nE = {ea:e}\nnu = 0.0\n\
         [[material]]\ngroup = \"b\"\nyoung = {eb:e}\npoisson = 0.0\n\
         [[traction]]\ngroup = \"right\"\nvector = [{sigma:e}, 0.0, 0.0]\n"
    );
    let (problem, r) = solve_case(&g, &toml);
    assert_eq!(problem.materials.table.len(), 3);
    assert!(problem.materials.single().is_none());
    let m = &g.mesh;
    let want_tip = sigma * (1.0 / ea + 1.0 / eb);
    let want_mid = sigma / ea;
    for (n, p) in m.nodes.iter().enumerate() {
        let ux = r.displacement[3 * n];
        let want = if p[0] <= 1.0 {
            want_mid * p[0]
        } else {
            want_mid + sigma / eb * (p[0] - 1.0)
        };
        assert!(
            (ux - want).abs() < 1e-9 * want_tip,
            "node {n} at {p:?}: {ux} vs {want}"
        );
    }
    // One material for the whole bar would give σ L / E: the per-element E matters.
    assert!((want_tip - sigma * 2.0 / ea).abs() > 0.1 * want_tip);
    assert!((r.applied[0] - sigma).abs() < 1e-6 * sigma);
    assert!(
        (r.reaction[0] + sigma).abs() < 1e-6 * sigma,
        "{:?}",
        r.reaction
    );
}

/// A roller fixes x only: under tension the fixed face contracts by ν σ / E per unit length, as
/// it could not if the face were clamped.
#[test]
fn roller_lets_the_section_contract() {
    let g = bar();
    let (e, nu, sigma) = (2e9, 0.3, 1e6);
    let toml = format!(
        "{SUPPORTS}\n[default_material]\nyoung = {e:e}\npoisson = {nu}\n\
         [[traction]]\ngroup = \"right\"\nvector = [{sigma:e}, 0.0, 0.0]\n"
    );
    let (problem, r) = solve_case(&g, &toml);
    assert_eq!(problem.materials.single().unwrap().poisson, nu);
    let m = &g.mesh;
    let lateral = -nu * sigma / e;
    for (n, p) in m.nodes.iter().enumerate() {
        let u = &r.displacement[3 * n..3 * n + 3];
        let want = [sigma / e * p[0], lateral * p[1], lateral * p[2]];
        for d in 0..3 {
            assert!(
                (u[d] - want[d]).abs() < 1e-8 * sigma / e,
                "node {n} at {p:?}: {u:?} vs {want:?}"
            );
        }
    }
    // The left face moved sideways: only x was fixed there.
    let n = node_at(m, [0.0, 1.0, 1.0]) as usize;
    assert!(r.displacement[3 * n + 1] < 0.5 * lateral);
}

/// The patch test through the solver: on a mesh whose interior nodes are moved off the lattice
/// (distorted hexahedra, planar boundary faces), uniform tension must still give the linear
/// displacement field exactly — the isoparametric hex8 reproduces every linear field.
#[test]
fn distorted_patch_reproduces_uniform_tension_exactly() {
    let mut g = bar();
    let (e, nu, sigma) = (2e9, 0.3, 1e6);
    let inside = |p: [f64; 3]| {
        p[0] > 0.0 && p[0] < 2.0 && p[1] > 0.0 && p[1] < 1.0 && p[2] > 0.0 && p[2] < 1.0
    };
    let mut moved = 0;
    for (n, p) in g.mesh.nodes.iter_mut().enumerate() {
        if inside(*p) {
            // Up to 30% of the spacing (0.25 in x, 0.5 in y and z) in each direction.
            let d = |k: u64, h: f64| {
                0.6 * h * (crate::device::rng::uniform_f64(7, 3 * n as u64 + k) - 0.5)
            };
            *p = [p[0] + d(0, 0.25), p[1] + d(1, 0.5), p[2] + d(2, 0.5)];
            moved += 1;
        }
    }
    assert_eq!(moved, 7);
    let toml = format!(
        "{SUPPORTS}\n[default_material]\nyoung = {e:e}\npoisson = {nu}\n\
         [[traction]]\ngroup = \"right\"\nvector = [{sigma:e}, 0.0, 0.0]\n"
    );
    let (_, r) = solve_case(&g, &toml);
    let lateral = -nu * sigma / e;
    for (n, p) in g.mesh.nodes.iter().enumerate() {
        let u = &r.displacement[3 * n..3 * n + 3];
        let want = [sigma / e * p[0], lateral * p[1], lateral * p[2]];
        for d in 0..3 {
            assert!(
                (u[d] - want[d]).abs() < 1e-8 * sigma / e,
                "node {n} at {p:?}: {u:?} vs {want:?}"
            );
        }
    }
}

/// A column hanging from its top under its weight ρ g per volume: the reaction equals the weight,
/// and with ν = 0 the bottom drops ρ g H² / (2 E) (nodally exact for linear elements).
#[test]
fn hanging_column_reaction_is_its_weight() {
    let (h, e, rho_g) = (4.0, 1e8, 7.85e4);
    let m = mesh::cantilever([1.0, 0.5, h], [2, 1, 8]).unwrap();
    let top = faces_where(&m, |p| p[2] == h);
    let g = GmshMesh {
        groups: vec![group("top", 2, vec![], top, &[])],
        mesh: m,
    };
    let toml = format!(
        "body_force = [0.0, 0.0, {}]\n[default_material]\nE = {e:e}\nnu = 0.0\n\
         [[fixed]]\ngroup = \"top\"\n",
        -rho_g
    );
    let (_, r) = solve_case(&g, &toml);
    let weight = rho_g * 1.0 * 0.5 * h;
    assert!(
        (r.applied[2] + weight).abs() < 1e-9 * weight,
        "{:?}",
        r.applied
    );
    assert!(
        (r.reaction[2] - weight).abs() < 1e-6 * weight,
        "{:?}",
        r.reaction
    );
    assert!(r.reaction[0].abs() < 1e-6 * weight && r.reaction[1].abs() < 1e-6 * weight);
    let bottom = node_at(&g.mesh, [0.0, 0.0, 0.0]) as usize;
    let want = -rho_g * h * h / (2.0 * e);
    let got = r.displacement[3 * bottom + 2];
    assert!((got - want).abs() < 1e-6 * want.abs(), "{got} vs {want}");
}

fn parse_err(toml: &str) -> String {
    CaseFile::parse(toml, Path::new("c.toml"))
        .unwrap_err()
        .to_string()
}

fn resolve_err(toml: &str) -> String {
    let case = CaseFile::parse(toml, Path::new("c.toml")).unwrap();
    Problem::resolve(&case, &bar()).unwrap_err().to_string()
}

/// Each bad case names its key.
#[test]
fn bad_cases_name_the_key() {
    let e = parse_err("[[material]]\ngroup = \"a\"\nyoung = 1e9\npoisson = 0.3\ncolour = 1\n");
    assert!(e.contains("c.toml") && e.contains("colour"), "{e}");
    let e = parse_err("[[material]]\ngroup = \"a\"\nyoung = 1e9\npoisson = 0.5\n");
    assert!(
        e.contains("material[0].poisson") && e.contains("(-1, 0.5)"),
        "{e}"
    );
    let e = parse_err("[default_material]\nyoung = 0\npoisson = 0.3\n");
    assert!(e.contains("default_material.young"), "{e}");
    let e = parse_err("[[fixed]]\ngroup = \"left\"\ncomponents = [\"w\"]\n");
    assert!(
        e.contains("c.toml") && e.contains("components: \"x\""),
        "{e}"
    );
    let e = parse_err("[[fixed]]\ngroup = \"left\"\ncomponents = []\n");
    assert!(e.contains("fixed[0].components"), "{e}");
    let e = parse_err("body_force = [0, 0]\n");
    assert!(e.contains("body_force"), "{e}");
    let load = "[[traction]]\ngroup = \"right\"\nvector = [1.0, 0.0, 0.0]\n";
    let e = resolve_err(&format!("{load}[[fixed]]\ngroup = \"nope\"\n"));
    assert!(
        e.contains("fixed[0].group") && e.contains("\"nope\"") && e.contains("\"left\""),
        "{e}"
    );
    let e = resolve_err(&format!(
        "{load}[[fixed]]\ngroup = \"left\"\n[[material]]\ngroup = \"left\"\nE = 1.0\nnu = 0.0\n"
    ));
    assert!(
        e.contains("material[0].group") && e.contains("hexahedra"),
        "{e}"
    );
    let e = resolve_err(&format!(
        "{load}[[fixed]]\ngroup = \"left\"\n[[material]]\ngroup = \"a\"\nE = 1.0\nnu = 0.0\n\
         [[material]]\ngroup = \"a\"\nE = 2.0\nnu = 0.0\n"
    ));
    // The bar is generated (no Gmsh tags): its first element, counted from 1.
    assert!(
        e.starts_with(
            "material[1].group: element 1 (numbered from 1 in mesh order) is already in \
             material[0] (\"a\")"
        ),
        "{e}"
    );
    let e = resolve_err("[[fixed]]\ngroup = \"left\"\n");
    assert!(e.contains("no load"), "{e}");
    let e = resolve_err(load);
    assert!(e.contains("no fixed set"), "{e}");
    assert!(matches!(
        Problem::resolve(
            &CaseFile::parse("[[fixed]]\ngroup = \"left\"\n", Path::new("c")).unwrap(),
            &bar()
        ),
        Err(CaseError::NoLoad)
    ));
}

/// Two unit hexahedra along x; the loaded end x = 2 is a surface of two 3-node triangles (Gmsh
/// type 2), split along the diagonal of nodes 9–11, as a surface meshed apart from the volume.
const TRIANGLE_LOAD_MSH: &str = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$PhysicalNames\n3\n\
2 8 \"fixed\"\n2 9 \"load\"\n3 7 \"solid\"\n$EndPhysicalNames\n$Entities\n0 0 2 1\n\
1 0 0 0 0 1 1 1 8 0\n2 2 0 0 2 1 1 1 9 0\n3 0 0 0 2 1 1 1 7 2 1 2\n$EndEntities\n\
$Nodes\n1 12 1 12\n3 3 0 12\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n\
0 0 0\n0 1 0\n0 1 1\n0 0 1\n1 0 0\n1 1 0\n1 1 1\n1 0 1\n2 0 0\n2 1 0\n2 1 1\n2 0 1\n$EndNodes\n\
$Elements\n3 5 1 5\n2 1 3 1\n1 1 2 3 4\n2 2 2 2\n2 9 10 11\n3 9 11 12\n3 3 5 2\n\
4 1 5 6 2 4 8 7 3\n5 5 9 10 6 8 12 11 7\n$EndElements\n";

/// A traction on a surface of triangles is distributed (a third of each triangle's
/// area per node: the diagonal's nodes carry two shares), sums to traction × area, and is
/// balanced by the reaction; a group with neither quadrangles nor triangles is refused by name.
#[test]
fn triangle_surfaces_carry_tractions() {
    let g = super::mesh::parse_gmsh(TRIANGLE_LOAD_MSH.as_bytes(), "tri.msh").unwrap();
    let load = g.group("load").unwrap();
    assert_eq!(load.triangles, [[8, 9, 10], [8, 10, 11]]);
    assert!(load.faces.is_empty());
    let toml = "[[fixed]]\ngroup = \"fixed\"\n\
                [[traction]]\ngroup = \"load\"\nvector = [0.0, 0.0, -6e5]\n";
    let (problem, r) = solve_case(&g, toml);
    let f = problem.load(&g.mesh);
    let fz = |n: usize| f[3 * n + 2];
    for (n, share) in [(8, 2.0), (9, 1.0), (10, 2.0), (11, 1.0)] {
        assert!((fz(n) + share * 1e5).abs() < 1e-6, "node {n}: {}", fz(n));
    }
    assert!(f.iter().enumerate().all(|(d, v)| d / 3 >= 8 || *v == 0.0));
    assert!((r.applied[2] + 6e5).abs() < 1e-6, "{:?}", r.applied);
    assert!((r.applied[2] + r.reaction[2]).abs() < 1e-6 * 6e5, "{r:?}");
    let case = CaseFile::parse(
        "[[fixed]]\ngroup = \"fixed\"\n[[traction]]\ngroup = \"solid\"\nvector = [0.0, 0.0, 1.0]\n",
        Path::new("c.toml"),
    )
    .unwrap();
    let err = Problem::resolve(&case, &g).unwrap_err().to_string();
    assert!(
        err.contains("\"solid\"") && err.contains("no quadrangles or triangles to load"),
        "{err}"
    );
    // From a Gmsh file, an overlap names the element by its tag (4), not its index (0).
    let case = CaseFile::parse(
        "[[fixed]]\ngroup = \"fixed\"\n[[traction]]\ngroup = \"load\"\nvector = [0.0, 0.0, 1.0]\n\
         [[material]]\ngroup = \"solid\"\nE = 1.0\nnu = 0.0\n\
         [[material]]\ngroup = \"solid\"\nE = 2.0\nnu = 0.0\n",
        Path::new("c.toml"),
    )
    .unwrap();
    let err = Problem::resolve(&case, &g).unwrap_err().to_string();
    assert!(
        err.starts_with("material[1].group: Gmsh element 4 is already in material[0] (\"solid\")"),
        "{err}"
    );
}
