//! A load case from a TOML file (`warpkit fem --case case.toml`): materials per physical volume,
//! fixed sets with their components, surface tractions and a body force, resolved against a
//! Gmsh mesh's physical groups into a [`Problem`] and checked whole before any assembly.
//!
//! ```toml
//! mesh = "bar.msh"                      # optional, relative to the case file; --mesh overrides
//! body_force = [0.0, 0.0, -78500.0]     # force per volume (e.g. ρ g), optional
//! formulation = "bbar"                  # "standard" (default) or "bbar" (near-incompressible)
//!
//! [default_material]                    # elements in no [[material]] group (else 210e9, 0.3)
//! young = 210e9                         # E > 0 (alias E)
//! poisson = 0.3                         # −1 < ν < 0.5 (alias nu)
//!
//! [[material]]                          # one per physical volume (hexahedra)
//! group = "rubber"
//! young = 1e7
//! poisson = 0.45
//!
//! [[fixed]]                             # u = 0 on the group's nodes
//! group = "left"
//! components = ["x", "z"]               # x, y, z or "all" (default all)
//!
//! [[traction]]                          # force per area on the group's quadrangles/triangles
//! group = "load"
//! vector = [0.0, 0.0, -1e6]
//! ```
//!
//! Unknown keys are errors (`deny_unknown_fields`); each error names the key at fault.

use super::gmsh::GmshMesh;
use super::{ElementMaterials, Formulation, Material, Mesh, solve};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The material of elements that no `[[material]]` names, when the case gives none (steel).
pub const DEFAULT_MATERIAL: Material = Material {
    young: 210e9,
    poisson: 0.3,
};

/// A load case of `warpkit fem`: materials per physical volume, fixed sets, tractions and a
/// body force on a Gmsh mesh, its groups named by their physical names. Units are the user's,
/// consistent (SI: Pa, N/m², N/m³, m). The options compose with the file: `--mesh`,
/// `--young`/`--poisson` and `--body-force` replace its keys, `--fix` and `--traction` add sets.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct CaseFile {
    /// The Gmsh mesh (`.msh` 2.2 or 4.1), relative to the case file (`--mesh` overrides).
    pub mesh: Option<PathBuf>,
    /// The material of elements in no `[[material]]` group (absent: steel, E = 210e9, ν = 0.3).
    pub default_material: Option<MaterialSpec>,
    /// One material per physical volume (its hexahedra); a hexahedron takes at most one.
    #[serde(default, rename = "material")]
    pub materials: Vec<GroupMaterial>,
    /// Nodes held at zero displacement, by group (repeatable; with none here nor `--fix`, the
    /// group `fixed` is clamped).
    #[serde(default)]
    pub fixed: Vec<FixedSpec>,
    /// A uniform force per area on a group's quadrangles and triangles (repeatable).
    #[serde(default, rename = "traction")]
    pub tractions: Vec<TractionSpec>,
    /// Force per unit volume on every element (e.g. ρ g: `[0.0, 0.0, -78500.0]` for steel);
    /// absent: none.
    pub body_force: Option<[f64; 3]>,
    /// The element formulation (absent: `standard`; `--bbar` selects `bbar`).
    pub formulation: Option<Formulation>,
}

/// E and ν.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct MaterialSpec {
    /// Young's modulus E, a stress (Pa in SI; > 0; alias `E`).
    #[serde(alias = "E")]
    pub young: f64,
    /// Poisson's ratio ν, in (−1, 0.5) (alias `nu`; above 0.45 use `formulation = "bbar"`).
    #[serde(alias = "nu")]
    pub poisson: f64,
}

/// A physical volume's material.
#[derive(Clone, Debug, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct GroupMaterial {
    /// The physical volume (a group of hexahedra).
    pub group: String,
    /// Young's modulus E, a stress (Pa in SI; > 0; alias `E`).
    #[serde(alias = "E")]
    pub young: f64,
    /// Poisson's ratio ν, in (−1, 0.5) (alias `nu`).
    #[serde(alias = "nu")]
    pub poisson: f64,
}

/// A displacement component, or all three.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Component {
    X,
    Y,
    Z,
    All,
}

/// A fixed set: the group's nodes held at zero in `components`.
#[derive(Clone, Debug, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct FixedSpec {
    /// A physical group with nodes (any dimension).
    pub group: String,
    /// The components held at zero: one name or a list such as `["x", "z"]` (a roller).
    #[serde(default = "all_components")]
    pub components: Components,
    /// Where it came from when not the file (`--fix`), for errors.
    #[serde(skip)]
    pub origin: Option<String>,
}

/// `components = "all"` or a list such as `["x", "z"]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(
    untagged,
    expecting = "components: \"x\", \"y\", \"z\", \"all\" or a list of them"
)]
pub enum Components {
    One(Component),
    List(Vec<Component>),
}

fn all_components() -> Components {
    Components::One(Component::All)
}

impl Components {
    /// Which of x, y, z are fixed.
    pub fn mask(&self) -> [bool; 3] {
        let list = match self {
            Components::One(c) => std::slice::from_ref(c),
            Components::List(v) => v.as_slice(),
        };
        let mut m = [false; 3];
        for c in list {
            match c {
                Component::X => m[0] = true,
                Component::Y => m[1] = true,
                Component::Z => m[2] = true,
                Component::All => m = [true; 3],
            }
        }
        m
    }
}

/// A uniform traction (force per area) on a group's quadrangles and 3-node triangles.
#[derive(Clone, Debug, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::config_keys::field_order::<Self>)]
pub struct TractionSpec {
    /// A physical group of surface quadrangles or triangles.
    pub group: String,
    /// The traction, force per area (x, y, z).
    pub vector: [f64; 3],
    /// Where it came from when not the file (`--traction`), for errors.
    #[serde(skip)]
    pub origin: Option<String>,
}

/// What is wrong with a case; each names the file or key at fault.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{key}: Young's modulus must be positive and finite, got {value}")]
    Young { key: String, value: f64 },
    #[error("{key}: Poisson's ratio must lie in (-1, 0.5), got {value}")]
    Poisson { key: String, value: f64 },
    #[error("{key}: {value:?} is not 3 finite numbers")]
    Vector { key: String, value: [f64; 3] },
    #[error("{key}: no physical group {group:?} in the mesh (physical groups: {available:?})")]
    UnknownGroup {
        key: String,
        group: String,
        available: Vec<String>,
    },
    #[error("{key}: physical group {group:?} has no {what}")]
    WrongKind {
        key: String,
        group: String,
        what: &'static str,
    },
    #[error("{key}: {element} is already in {other} (a hexahedron takes one material)")]
    Overlap {
        key: String,
        element: super::ElementId,
        other: String,
    },
    #[error("{key}: no component fixed (use x, y, z or \"all\")")]
    NoComponent { key: String },
    #[error("no fixed set: give [[fixed]] in the case file or --fix GROUP")]
    NoFixed,
    #[error(
        "no load: give [[traction]] or body_force in the case file, or --traction GROUP TX TY TZ \
         (not all zero)"
    )]
    NoLoad,
    #[error("no mesh: give --mesh FILE or mesh = \"FILE\" in the case file")]
    NoMesh,
}

impl CaseFile {
    /// Reads and parses `path` (unknown keys and wrong types are errors naming the key and line)
    /// and checks its numbers; a relative `mesh` becomes relative to the file's folder.
    pub fn read(path: &Path) -> Result<CaseFile, CaseError> {
        let text = std::fs::read_to_string(path).map_err(|source| CaseError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut case = CaseFile::parse(&text, path)?;
        if let Some(m) = &case.mesh
            && m.is_relative()
        {
            case.mesh = Some(path.parent().unwrap_or(Path::new("")).join(m));
        }
        Ok(case)
    }

    /// Parses a case file's text (`path` only names it in errors) and checks its numbers.
    pub fn parse(text: &str, path: &Path) -> Result<CaseFile, CaseError> {
        let case: CaseFile = toml::from_str(text).map_err(|e| CaseError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })?;
        case.check_numbers()?;
        Ok(case)
    }

    /// E, ν and vectors, each error naming its key (`material[1].poisson`, …).
    pub fn check_numbers(&self) -> Result<(), CaseError> {
        if let Some(m) = &self.default_material {
            check_material("default_material", m.young, m.poisson)?;
        }
        for (i, m) in self.materials.iter().enumerate() {
            check_material(&format!("material[{i}]"), m.young, m.poisson)?;
        }
        for (i, t) in self.tractions.iter().enumerate() {
            let key = t.origin.clone().unwrap_or(format!("traction[{i}].vector"));
            check_vector(&key, t.vector)?;
        }
        if let Some(b) = self.body_force {
            check_vector("body_force", b)?;
        }
        for (i, f) in self.fixed.iter().enumerate() {
            if f.components.mask() == [false; 3] {
                return Err(CaseError::NoComponent {
                    key: format!("fixed[{i}].components"),
                });
            }
        }
        Ok(())
    }
}

fn check_material(key: &str, young: f64, poisson: f64) -> Result<(), CaseError> {
    if !(young > 0.0 && young.is_finite()) {
        return Err(CaseError::Young {
            key: format!("{key}.young"),
            value: young,
        });
    }
    if !(poisson > -1.0 && poisson < 0.5) {
        return Err(CaseError::Poisson {
            key: format!("{key}.poisson"),
            value: poisson,
        });
    }
    Ok(())
}

/// Checks a vector from the command line or a file: 3 finite numbers.
pub fn check_vector(key: &str, v: [f64; 3]) -> Result<(), CaseError> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(CaseError::Vector {
            key: key.to_string(),
            value: v,
        })
    }
}

/// A fixed set resolved: its group's name, nodes and fixed components.
#[derive(Clone, Debug, PartialEq)]
pub struct FixedSet {
    pub group: String,
    pub nodes: Vec<u32>,
    pub components: [bool; 3],
}

/// A traction resolved: its group's name, quadrangles, triangles and vector.
#[derive(Clone, Debug, PartialEq)]
pub struct Traction {
    pub group: String,
    pub faces: Vec<[u32; 4]>,
    pub triangles: Vec<[u32; 3]>,
    pub vector: [f64; 3],
}

/// A case resolved against a mesh: everything the solve needs, in mesh indices.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub materials: ElementMaterials,
    pub fixed: Vec<FixedSet>,
    pub tractions: Vec<Traction>,
    pub body_force: [f64; 3],
}

impl Problem {
    /// Resolves `case` against `mesh`'s physical groups: every group must exist and hold what
    /// its key needs (hexahedra for a material, nodes for a fixed set, quadrangles for a
    /// traction), a hexahedron takes at most one material, and something must be fixed and
    /// loaded. Elements in no material group take `default_material`, else [`DEFAULT_MATERIAL`].
    pub fn resolve(case: &CaseFile, mesh: &GmshMesh) -> Result<Problem, CaseError> {
        case.check_numbers()?;
        let find = |key: String, name: &str| {
            mesh.group(name).ok_or_else(|| CaseError::UnknownGroup {
                key,
                group: name.to_string(),
                available: mesh.groups.iter().map(|g| g.name.clone()).collect(),
            })
        };
        let default = case
            .default_material
            .map(|m| Material {
                young: m.young,
                poisson: m.poisson,
            })
            .unwrap_or(DEFAULT_MATERIAL);
        let elements = mesh.mesh.elements.len();
        let mut table = vec![default];
        let mut index = vec![0u32; elements];
        let mut owner: Vec<Option<usize>> = vec![None; elements];
        for (i, m) in case.materials.iter().enumerate() {
            let key = format!("material[{i}].group");
            let g = find(key.clone(), &m.group)?;
            if g.elements.is_empty() {
                return Err(CaseError::WrongKind {
                    key,
                    group: m.group.clone(),
                    what: "hexahedra (a material needs a physical volume)",
                });
            }
            table.push(Material {
                young: m.young,
                poisson: m.poisson,
            });
            for &e in &g.elements {
                if let Some(j) = owner[e as usize] {
                    return Err(CaseError::Overlap {
                        key,
                        element: mesh.mesh.element_id(e as usize),
                        other: format!("material[{j}] ({:?})", case.materials[j].group),
                    });
                }
                owner[e as usize] = Some(i);
                index[e as usize] = table.len() as u32 - 1;
            }
        }
        let mut fixed = Vec::new();
        for (i, f) in case.fixed.iter().enumerate() {
            let key = f.origin.clone().unwrap_or(format!("fixed[{i}].group"));
            let g = find(key.clone(), &f.group)?;
            if g.nodes.is_empty() {
                return Err(CaseError::WrongKind {
                    key,
                    group: f.group.clone(),
                    what: "nodes",
                });
            }
            fixed.push(FixedSet {
                group: f.group.clone(),
                nodes: g.nodes.clone(),
                components: f.components.mask(),
            });
        }
        let mut tractions = Vec::new();
        for (i, t) in case.tractions.iter().enumerate() {
            let key = t.origin.clone().unwrap_or(format!("traction[{i}].group"));
            let g = find(key.clone(), &t.group)?;
            if g.faces.is_empty() && g.triangles.is_empty() {
                return Err(CaseError::WrongKind {
                    key,
                    group: t.group.clone(),
                    what: "quadrangles or triangles to load",
                });
            }
            tractions.push(Traction {
                group: t.group.clone(),
                faces: g.faces.clone(),
                triangles: g.triangles.clone(),
                vector: t.vector,
            });
        }
        let problem = Problem {
            materials: ElementMaterials { table, index },
            fixed,
            tractions,
            body_force: case.body_force.unwrap_or([0.0; 3]),
        };
        if problem.fixed.is_empty() {
            return Err(CaseError::NoFixed);
        }
        let loaded = problem.body_force != [0.0; 3]
            || problem.tractions.iter().any(|t| t.vector != [0.0; 3]);
        if !loaded {
            return Err(CaseError::NoLoad);
        }
        Ok(problem)
    }

    /// One flag per DOF: held at zero.
    pub fn fixed_dofs(&self, mesh: &Mesh) -> Vec<bool> {
        let mut dofs = vec![false; mesh.dofs()];
        for set in &self.fixed {
            for &n in &set.nodes {
                for d in 0..3 {
                    dofs[3 * n as usize + d] |= set.components[d];
                }
            }
        }
        dofs
    }

    /// The nodal force vector: every traction and the body force.
    pub fn load(&self, mesh: &Mesh) -> Vec<f64> {
        let mut f = vec![0.0; mesh.dofs()];
        for t in &self.tractions {
            solve::add_face_traction(mesh, &t.faces, t.vector, &mut f);
            solve::add_triangle_traction(mesh, &t.triangles, t.vector, &mut f);
        }
        if self.body_force != [0.0; 3] {
            solve::add_body_force(mesh, self.body_force, &mut f);
        }
        f
    }
}
