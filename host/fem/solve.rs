//! Boundary conditions, the end load, Jacobi-preconditioned conjugate gradients, and the
//! cantilever check against Timoshenko beam theory.

use super::csr::Pattern;
use super::{FemError, Material, Mesh};
use rayon::prelude::*;

/// Local node lists of a hexahedron's six faces (VTK order).
const FACES: [[usize; 4]; 6] = [
    [0, 3, 2, 1],
    [4, 5, 6, 7],
    [0, 1, 5, 4],
    [1, 2, 6, 5],
    [2, 3, 7, 6],
    [3, 0, 4, 7],
];

/// Nodes with |x − x0| ≤ tol: the clamped or loaded plane.
pub fn nodes_on_plane(mesh: &Mesh, x0: f64, tol: f64) -> Vec<u32> {
    (0..mesh.nodes.len() as u32)
        .filter(|&n| (mesh.nodes[n as usize][0] - x0).abs() <= tol)
        .collect()
}

/// Clamps every DOF of `nodes`: their rows and columns become those of the identity and their
/// right-hand side zero (symmetric elimination of u = 0 keeps K symmetric positive definite).
pub fn clamp(pattern: &Pattern, values: &mut [f64], rhs: &mut [f64], nodes: &[u32]) {
    let mut fixed = vec![false; pattern.rows()];
    for &n in nodes {
        for d in 0..3 {
            fixed[3 * n as usize + d] = true;
        }
    }
    clamp_dofs(pattern, values, rhs, &fixed);
}

/// [`clamp`] by DOF: every row `r` with `fixed[r]` (one flag per DOF) is held at u = 0.
pub fn clamp_dofs(pattern: &Pattern, values: &mut [f64], rhs: &mut [f64], fixed: &[bool]) {
    for r in 0..pattern.rows() {
        let (s, e) = (pattern.row_ptr[r] as usize, pattern.row_ptr[r + 1] as usize);
        for (&c, v) in pattern.col[s..e].iter().zip(&mut values[s..e]) {
            let c = c as usize;
            if fixed[r] || fixed[c] {
                *v = if r == c { 1.0 } else { 0.0 };
            }
        }
        if fixed[r] {
            rhs[r] = 0.0;
        }
    }
}

/// Nodal forces of a uniform traction `traction` (force per area) on every element face lying in
/// the plane x = x0 ([`add_face_traction`]).
pub fn face_load(mesh: &Mesh, x0: f64, tol: f64, traction: [f64; 3]) -> Result<Vec<f64>, FemError> {
    let mut f = vec![0.0; mesh.dofs()];
    let on = |n: u32| (mesh.nodes[n as usize][0] - x0).abs() <= tol;
    let mut faces = Vec::new();
    for conn in &mesh.elements {
        for face in FACES {
            let n = face.map(|l| conn[l]);
            if n.iter().all(|&v| on(v)) {
                faces.push(n);
            }
        }
    }
    add_face_traction(mesh, &faces, traction, &mut f);
    if faces.is_empty() {
        return Err(FemError::EmptyFace {
            what: "loaded",
            x: x0,
        });
    }
    Ok(f)
}

/// Adds to `f` the nodal forces of a uniform `traction` on quadrilateral `faces` (mesh node
/// indices): each face gives a quarter of its area to each of its nodes (exact for parallelogram
/// faces, the consistent load of bilinear shape functions).
pub fn add_face_traction(mesh: &Mesh, faces: &[[u32; 4]], traction: [f64; 3], f: &mut [f64]) {
    for n in faces {
        let p = n.map(|v| mesh.nodes[v as usize]);
        // Area of a planar quad: half the norm of the cross product of its diagonals.
        let d1 = [p[2][0] - p[0][0], p[2][1] - p[0][1], p[2][2] - p[0][2]];
        let d2 = [p[3][0] - p[1][0], p[3][1] - p[1][1], p[3][2] - p[1][2]];
        let cr = [
            d1[1] * d2[2] - d1[2] * d2[1],
            d1[2] * d2[0] - d1[0] * d2[2],
            d1[0] * d2[1] - d1[1] * d2[0],
        ];
        let area = 0.5 * (cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]).sqrt();
        for &v in n {
            for d in 0..3 {
                f[3 * v as usize + d] += 0.25 * area * traction[d];
            }
        }
    }
}

/// Adds to `f` the nodal forces of a uniform `traction` on 3-node triangles: a third of each
/// triangle's area to each node (the consistent load of linear shape functions). The total force
/// is traction × area whether or not the triangles match the hexahedra's faces.
pub fn add_triangle_traction(mesh: &Mesh, tris: &[[u32; 3]], traction: [f64; 3], f: &mut [f64]) {
    for n in tris {
        let p = n.map(|v| mesh.nodes[v as usize]);
        let e1 = [p[1][0] - p[0][0], p[1][1] - p[0][1], p[1][2] - p[0][2]];
        let e2 = [p[2][0] - p[0][0], p[2][1] - p[0][1], p[2][2] - p[0][2]];
        let cr = [
            e1[1] * e2[2] - e1[2] * e2[1],
            e1[2] * e2[0] - e1[0] * e2[2],
            e1[0] * e2[1] - e1[1] * e2[0],
        ];
        let area = 0.5 * (cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]).sqrt();
        for &v in n {
            for d in 0..3 {
                f[3 * v as usize + d] += area / 3.0 * traction[d];
            }
        }
    }
}

/// Adds to `f` the consistent nodal forces of a uniform body force `b` (force per volume) on
/// every element: ∫ N_a b dV by the 2×2×2 Gauss rule (exact for the trilinear hexahedron's
/// integrand on parallelepipeds; V/8 per node on a box). Elements must be valid (det J > 0).
pub fn add_body_force(mesh: &Mesh, b: [f64; 3], f: &mut [f64]) {
    use crate::device::fem::{self as dev, GAUSS, NODE_SIGNS, NODES};
    let gx = 1.0 / 3f64.sqrt();
    for (e, conn) in mesh.elements.iter().enumerate() {
        let x = mesh.element_coords(e);
        // Gauss point g sits at NODE_SIGNS[g] / √3.
        for (g, pg) in NODE_SIGNS.iter().enumerate().take(GAUSS) {
            let det = dev::det3(&dev::jacobian(&x, g));
            for (a, &n) in conn.iter().enumerate().take(NODES) {
                // N_a at Gauss point g: Π (1 + s_a p_g / √3) / 8.
                let na: f64 = (0..3)
                    .map(|k| 1.0 + f64::from(NODE_SIGNS[a][k] * pg[k]) * gx)
                    .product::<f64>()
                    / 8.0;
                for d in 0..3 {
                    f[3 * n as usize + d] += na * det * b[d];
                }
            }
        }
    }
}

/// What [`solve_sets`] returns.
#[derive(Clone, Debug)]
pub struct SetsResult {
    /// 3 per node.
    pub displacement: Vec<f64>,
    pub cg: CgStats,
    /// Σ of the applied nodal forces.
    pub applied: [f64; 3],
    /// Σ of the reaction forces at the clamped nodes, (K u − f) over their DOFs with the
    /// unconstrained K: equal and opposite to `applied` at equilibrium.
    pub reaction: [f64; 3],
}

/// Solves a mesh's own problem: every DOF of `fixed` clamped (u = 0), a uniform `traction` on
/// the quadrilateral `faces`; the displacement, CG's report and the reaction at `fixed`.
#[allow(clippy::too_many_arguments)]
pub fn solve_sets(
    mesh: &Mesh,
    pattern: &Pattern,
    values: Vec<f64>,
    fixed: &[u32],
    faces: &[[u32; 4]],
    traction: [f64; 3],
    rtol: f64,
    solve: Box<Solver<'_>>,
) -> Result<SetsResult, FemError> {
    let mut f = vec![0.0; mesh.dofs()];
    add_face_traction(mesh, faces, traction, &mut f);
    let mut dofs = vec![false; mesh.dofs()];
    for &n in fixed {
        dofs[3 * n as usize..3 * n as usize + 3].fill(true);
    }
    solve_dofs(pattern, values, &dofs, f, rtol, solve)
}

/// Solves K u = `f` with u = 0 on every DOF flagged in `fixed` (one flag per DOF): the
/// displacement, CG's report, Σ `f` and the reaction at the fixed DOFs.
pub fn solve_dofs(
    pattern: &Pattern,
    mut values: Vec<f64>,
    fixed: &[bool],
    f: Vec<f64>,
    rtol: f64,
    solve: Box<Solver<'_>>,
) -> Result<SetsResult, FemError> {
    if !fixed.contains(&true) {
        return Err(FemError::Unconstrained);
    }
    // The fixed rows of the unconstrained K, kept for the reactions before clamping rewrites them.
    let rows: Vec<(usize, Vec<f64>)> = (0..fixed.len())
        .filter(|&r| fixed[r])
        .map(|r| {
            let span = pattern.row_ptr[r] as usize..pattern.row_ptr[r + 1] as usize;
            (r, values[span].to_vec())
        })
        .collect();
    let mut applied = [0.0; 3];
    for (i, v) in f.iter().enumerate() {
        applied[i % 3] += v;
    }
    let mut rhs = f.clone();
    clamp_dofs(pattern, &mut values, &mut rhs, fixed);
    let (u, cg) = solve(pattern, &values, &rhs, rtol, 20 * pattern.rows())?;
    let mut reaction = [0.0; 3];
    for (r, k) in &rows {
        let s = pattern.row_ptr[*r] as usize;
        let cols = &pattern.col[s..s + k.len()];
        let ku: f64 = cols.iter().zip(k).map(|(&c, k)| k * u[c as usize]).sum();
        reaction[r % 3] += ku - f[*r];
    }
    Ok(SetsResult {
        displacement: u,
        cg,
        applied,
        reaction,
    })
}

/// What CG reports besides the solution.
#[derive(Clone, Copy, Debug)]
pub struct CgStats {
    pub iterations: usize,
    /// ‖b − K u‖ / ‖b‖ at exit (CG's recurrence).
    pub relative_residual: f64,
}

/// The Jacobi preconditioner: 1 / K[r][r] per row, or the first non-positive (or NaN) diagonal.
pub fn inverse_diagonal(pattern: &Pattern, values: &[f64]) -> Result<Vec<f64>, FemError> {
    (0..pattern.rows())
        .map(|r| {
            let v = pattern.get(values, r, r).unwrap_or(0.0);
            if v.is_nan() || v <= 0.0 {
                Err(FemError::NonPositiveDiagonal { dof: r, value: v })
            } else {
                Ok(1.0 / v)
            }
        })
        .collect()
}

/// A linear solver as [`cantilever_tip_with`] takes it: (pattern, values, b, rtol,
/// max_iterations) ↦ (u, stats); [`pcg`] on the CPU, `gpu::pcg` on the GPU.
pub type Solver<'a> =
    dyn FnOnce(&Pattern, &[f64], &[f64], f64, usize) -> Result<(Vec<f64>, CgStats), FemError> + 'a;

/// Refuses a right-hand side whose norm overflows (`--load 1e300`): CG's first curvature is then
/// NaN, which read as a singular system.
pub(crate) fn check_load_norm(bnorm: f64) -> Result<(), FemError> {
    if bnorm.is_finite() {
        Ok(())
    } else {
        Err(FemError::LoadOverflow(bnorm))
    }
}

/// Solves K u = b by conjugate gradients with the Jacobi (diagonal) preconditioner, to
/// ‖r‖ ≤ `rtol` ‖b‖. A breakdown (pᵀKp ≤ 0, e.g. a singular K) and non-convergence are errors.
pub fn pcg(
    pattern: &Pattern,
    values: &[f64],
    b: &[f64],
    rtol: f64,
    max_iterations: usize,
) -> Result<(Vec<f64>, CgStats), FemError> {
    let n = pattern.rows();
    let inv_diag = inverse_diagonal(pattern, values)?;
    let dot = |a: &[f64], b: &[f64]| -> f64 { a.par_iter().zip(b).map(|(x, y)| x * y).sum() };
    let bnorm = dot(b, b).sqrt();
    check_load_norm(bnorm)?;
    let mut u = vec![0.0; n];
    if bnorm == 0.0 {
        return Ok((
            u,
            CgStats {
                iterations: 0,
                relative_residual: 0.0,
            },
        ));
    }
    let mut r = b.to_vec();
    let mut z: Vec<f64> = r.iter().zip(&inv_diag).map(|(a, d)| a * d).collect();
    let mut p = z.clone();
    let mut kp = vec![0.0; n];
    let mut rz = dot(&r, &z);
    for it in 1..=max_iterations {
        pattern.matvec(values, &p, &mut kp);
        let curvature = dot(&p, &kp);
        if curvature.is_nan() || curvature <= 0.0 {
            return Err(FemError::Singular {
                iteration: it,
                curvature,
            });
        }
        let alpha = rz / curvature;
        u.par_iter_mut().zip(&p).for_each(|(u, p)| *u += alpha * p);
        r.par_iter_mut()
            .zip(&kp)
            .for_each(|(r, kp)| *r -= alpha * kp);
        let rel = dot(&r, &r).sqrt() / bnorm;
        if rel <= rtol {
            return Ok((
                u,
                CgStats {
                    iterations: it,
                    relative_residual: rel,
                },
            ));
        }
        z.par_iter_mut()
            .zip(&r)
            .zip(&inv_diag)
            .for_each(|((z, r), d)| *z = r * d);
        let rz_new = dot(&r, &z);
        let beta = rz_new / rz;
        rz = rz_new;
        p.par_iter_mut()
            .zip(&z)
            .for_each(|(p, z)| *p = z + beta * *p);
    }
    let rel = dot(&r, &r).sqrt() / bnorm;
    Err(FemError::NotConverged {
        iterations: max_iterations,
        residual: rel,
    })
}

/// Tip deflection of a cantilever of length `length`, rectangular section `width` × `height`
/// (bending about the width axis), under end load `load`, by Timoshenko beam theory:
/// P L³ / (3 E I) + P L / (κ G A), with I = b h³ / 12 and Cowper's shear coefficient for a
/// rectangle κ = 10 (1 + ν) / (12 + 11 ν).
pub fn timoshenko_tip_deflection(
    material: &Material,
    length: f64,
    width: f64,
    height: f64,
    load: f64,
) -> f64 {
    let (e, nu) = (material.young, material.poisson);
    let i = width * height.powi(3) / 12.0;
    let g = e / (2.0 * (1.0 + nu));
    let kappa = 10.0 * (1.0 + nu) / (12.0 + 11.0 * nu);
    load * length.powi(3) / (3.0 * e * i) + load * length / (kappa * g * width * height)
}

/// The result of [`cantilever_tip`].
#[derive(Clone, Debug)]
pub struct TipResult {
    /// Mean z-displacement of the loaded end's nodes.
    pub tip_deflection: f64,
    /// [`timoshenko_tip_deflection`] for the same beam.
    pub theory: f64,
    pub cg: CgStats,
    /// The displacement field (3 per node).
    pub displacement: Vec<f64>,
}

/// The cantilever load case on an assembled (unconstrained) stiffness: clamps the face x = 0,
/// applies a total end load `load` in −z as a uniform traction on the face x = `length`, solves by
/// PCG and compares the mean tip deflection with Timoshenko beam theory for a `width` (y) ×
/// `height` (z) section. `values` is consumed: the constraints are applied to it in place.
pub fn cantilever_tip(
    mesh: &Mesh,
    pattern: &Pattern,
    values: Vec<f64>,
    material: &Material,
    dims: [f64; 3],
    load: f64,
    rtol: f64,
) -> Result<TipResult, FemError> {
    cantilever_tip_with(
        mesh,
        pattern,
        values,
        material,
        dims,
        load,
        rtol,
        Box::new(pcg),
    )
}

/// [`cantilever_tip`] with the linear solver `solve` (e.g. the GPU's PCG).
#[allow(clippy::too_many_arguments)]
pub fn cantilever_tip_with(
    mesh: &Mesh,
    pattern: &Pattern,
    mut values: Vec<f64>,
    material: &Material,
    [length, width, height]: [f64; 3],
    load: f64,
    rtol: f64,
    solve: Box<Solver<'_>>,
) -> Result<TipResult, FemError> {
    super::validate_load(load)?;
    let tol = 1e-9 * length;
    let clamped = nodes_on_plane(mesh, 0.0, tol);
    if clamped.is_empty() {
        return Err(FemError::Unconstrained);
    }
    let tip = nodes_on_plane(mesh, length, tol);
    let mut rhs = face_load(mesh, length, tol, [0.0, 0.0, -load / (width * height)])?;
    clamp(pattern, &mut values, &mut rhs, &clamped);
    let (u, cg) = solve(pattern, &values, &rhs, rtol, 20 * pattern.rows())?;
    let tip_deflection =
        -tip.iter().map(|&n| u[3 * n as usize + 2]).sum::<f64>() / tip.len() as f64;
    Ok(TipResult {
        tip_deflection,
        theory: timoshenko_tip_deflection(material, length, width, height, load),
        cg,
        displacement: u,
    })
}
