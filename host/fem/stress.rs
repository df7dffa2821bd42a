//! Strain, stress and von Mises stress per element, at the element centre (ξ = η = ζ = 0: the
//! one point where a trilinear hexahedron's strain is most accurate, the superconvergent point of
//! the 2×2×2 rule), from the element formulas of `warpkit_device::fem` (the same B and D that
//! assembly uses; only von Mises is new here). B-bar elements take B̄ there (the element's mean
//! dilatation, which is what their stiffness constrains).

use super::{ElementMaterials, FemError, Formulation, Material, Mesh};
use crate::device::fem::{self as dev, NODES};
use rayon::prelude::*;

/// One element's state at its centre, in Voigt order (xx, yy, zz, xy, yz, zx) — ParaView's order
/// for symmetric tensors.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ElementStress {
    /// Tensor strain ε (shear components are ε_xy = γ_xy / 2, not the engineering γ of B u).
    pub strain: [f64; 6],
    /// σ = D B u.
    pub stress: [f64; 6],
    pub von_mises: f64,
}

/// von Mises equivalent stress of a Voigt stress: √(½[(σxx−σyy)² + (σyy−σzz)² + (σzz−σxx)²]
/// + 3(σxy² + σyz² + σzx²)).
pub fn von_mises(s: &[f64; 6]) -> f64 {
    let d = |a: f64, b: f64| (a - b) * (a - b);
    (0.5 * (d(s[0], s[1]) + d(s[1], s[2]) + d(s[2], s[0]))
        + 3.0 * (s[3] * s[3] + s[4] * s[4] + s[5] * s[5]))
        .sqrt()
}

/// Every element's strain, stress and von Mises stress at its centre for the displacement `u`
/// (3 per node). An element with det J ≤ 0 at its centre is [`FemError::InvertedElement`] with
/// `gauss` = 8 (the centre; 0..8 are the Gauss points).
pub fn element_centre(
    mesh: &Mesh,
    material: &Material,
    u: &[f64],
) -> Result<Vec<ElementStress>, FemError> {
    element_centre_materials(
        mesh,
        &ElementMaterials::uniform(*material, mesh.elements.len()),
        Formulation::Standard,
        u,
    )
}

/// [`element_centre`] with a material per element and either formulation.
pub fn element_centre_materials(
    mesh: &Mesh,
    materials: &ElementMaterials,
    formulation: Formulation,
    u: &[f64],
) -> Result<Vec<ElementStress>, FemError> {
    if u.len() != mesh.dofs() {
        return Err(FemError::MeshSize(format!(
            "displacement has {} values, the mesh {} DOFs",
            u.len(),
            mesh.dofs()
        )));
    }
    let ds: Vec<[[f64; 6]; 6]> = materials
        .table
        .iter()
        .map(|m| dev::elasticity_matrix(m.lame::<f64>()))
        .collect();
    let centre = [0.0f64; 3];
    (0..mesh.elements.len())
        .into_par_iter()
        .map(|e| {
            let d = &ds[materials.index[e] as usize];
            let x = mesh.element_coords(e);
            let j = dev::jacobian_signs(&x, centre);
            let det = dev::det3(&j);
            if det.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
                return Err(FemError::InvertedElement {
                    element: mesh.element_id(e),
                    gauss: dev::GAUSS,
                    det,
                });
            }
            let inv = dev::inverse3(&j, det);
            let mut grad = [[0.0; 3]; NODES];
            for (a, g) in grad.iter_mut().enumerate() {
                let dn = dev::shape_gradient_signs(dev::node_signs::<f64>(a as u32), centre);
                *g = dev::physical_gradient(&inv, dn);
            }
            let b = match formulation {
                Formulation::Standard => dev::strain_displacement(&grad),
                Formulation::Bbar => {
                    // Valid at the centre implies nothing about the Gauss points: checked here.
                    let geom =
                        dev::element_geometry(&x).map_err(|j| FemError::InvertedElement {
                            element: mesh.element_id(e),
                            gauss: j.gauss,
                            det: j.det,
                        })?;
                    dev::strain_displacement_bbar(&grad, &dev::mean_gradients(&geom))
                }
            };
            let mut ue = [0.0; dev::DOFS];
            for (a, &n) in mesh.elements[e].iter().enumerate() {
                ue[3 * a..3 * a + 3].copy_from_slice(&u[3 * n as usize..3 * n as usize + 3]);
            }
            // Engineering strain γ = B u, then σ = D γ.
            let gamma: [f64; 6] =
                std::array::from_fn(|i| b[i].iter().zip(&ue).map(|(b, u)| b * u).sum());
            let stress: [f64; 6] =
                std::array::from_fn(|i| d[i].iter().zip(&gamma).map(|(d, g)| d * g).sum());
            let strain = std::array::from_fn(|i| if i < 3 { gamma[i] } else { 0.5 * gamma[i] });
            Ok(ElementStress {
                strain,
                stress,
                von_mises: von_mises(&stress),
            })
        })
        .collect()
}
