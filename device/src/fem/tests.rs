//! Invariants of the element formulas (no golden numbers): symmetry, rigid-body modes in the null
//! space, exactly six zero eigenvalues, the linear size scaling of 3-D stiffness, a uniform-strain
//! patch, and the agreement of the two routes to Ke.
// Index loops mirror the subscripts of the formulas being checked.
#![allow(clippy::needless_range_loop)]

use super::*;
use std::vec::Vec;

const STEEL: (f64, f64) = (210e9, 0.3);

fn cube(h: f64) -> [[f64; 3]; NODES] {
    NODE_SIGNS.map(|s| s.map(|v| (v as f64 + 1.0) * 0.5 * h))
}

/// A skewed, tapered, non-affine hexahedron: exercises every term of J (a parallelepiped would
/// leave J constant and hide errors in its ξ dependence).
fn distorted() -> [[f64; 3]; NODES] {
    let mut x = cube(1.0);
    let shifts = [
        [0.05, -0.02, 0.03],
        [0.1, 0.04, -0.05],
        [0.2, 0.15, 0.0],
        [-0.1, 0.1, 0.04],
        [0.12, -0.06, 0.2],
        [0.3, 0.0, 0.1],
        [0.25, 0.3, 0.35],
        [-0.05, 0.2, 0.15],
    ];
    for (p, s) in x.iter_mut().zip(shifts) {
        for d in 0..3 {
            p[d] += s[d];
        }
    }
    x
}

fn lame() -> Lame<f64> {
    Lame::from_young_poisson(STEEL.0, STEEL.1)
}

fn ke(x: &[[f64; 3]; NODES]) -> [[f64; DOFS]; DOFS] {
    element_stiffness(x, lame()).expect("valid element")
}

fn max_abs(k: &[[f64; DOFS]; DOFS]) -> f64 {
    k.iter().flatten().fold(0.0, |m, v| m.max(v.abs()))
}

fn matvec(k: &[[f64; DOFS]; DOFS], u: &[f64; DOFS]) -> [f64; DOFS] {
    core::array::from_fn(|r| (0..DOFS).map(|c| k[r][c] * u[c]).sum())
}

/// The six rigid-body modes at nodes `x`: three translations, three rotations u = e_k × x.
fn rigid_modes(x: &[[f64; 3]; NODES]) -> [[f64; DOFS]; 6] {
    let mut modes = [[0.0; DOFS]; 6];
    for (a, p) in x.iter().enumerate() {
        for k in 0..3 {
            modes[k][3 * a + k] = 1.0;
        }
        let rot = [[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]];
        for (k, r) in rot.iter().enumerate() {
            for d in 0..3 {
                modes[3 + k][3 * a + d] = r[d];
            }
        }
    }
    modes
}

/// Eigenvalues of a symmetric matrix by cyclic Jacobi rotations (ample for 24×24 in a test).
fn eigenvalues(k: &[[f64; DOFS]; DOFS]) -> Vec<f64> {
    let mut a = *k;
    for _sweep in 0..100 {
        let off: f64 = (0..DOFS)
            .flat_map(|i| (0..DOFS).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        if off.sqrt() <= 1e-14 * max_abs(&a) {
            break;
        }
        for p in 0..DOFS {
            for q in p + 1..DOFS {
                if a[p][q] == 0.0 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for r in 0..DOFS {
                    let (arp, arq) = (a[r][p], a[r][q]);
                    a[r][p] = c * arp - s * arq;
                    a[r][q] = s * arp + c * arq;
                }
                for r in 0..DOFS {
                    let (apr, aqr) = (a[p][r], a[q][r]);
                    a[p][r] = c * apr - s * aqr;
                    a[q][r] = s * apr + c * aqr;
                }
            }
        }
    }
    let mut ev: Vec<f64> = (0..DOFS).map(|i| a[i][i]).collect();
    ev.sort_by(f64::total_cmp);
    ev
}

#[test]
fn shape_gradients_sum_to_zero_and_reproduce_coordinates() {
    // Σ_a N_a = 1 makes Σ_a ∇N_a = 0; and x = Σ N_a x_a makes Σ_a ∇N_a x_a = I.
    let x = distorted();
    for g in 0..GAUSS {
        let geo = gauss_geometry(&x, g).unwrap();
        for d in 0..3 {
            let s: f64 = geo.grad.iter().map(|v| v[d]).sum();
            assert!(s.abs() < 1e-12, "g {g} d {d}: {s}");
            for e in 0..3 {
                let s: f64 = (0..NODES).map(|a| geo.grad[a][d] * x[a][e]).sum();
                let want = (d == e) as u8 as f64;
                assert!((s - want).abs() < 1e-12, "g {g}: ∂x_{e}/∂x_{d} = {s}");
            }
        }
    }
}

#[test]
fn inverse_times_jacobian_is_identity() {
    let x = distorted();
    for g in 0..GAUSS {
        let j = jacobian(&x, g);
        let (det, inv) = jacobian_inverse(&x, g).unwrap();
        assert_eq!(det, det3(&j));
        for r in 0..3 {
            for c in 0..3 {
                let s: f64 = (0..3).map(|k| j[r][k] * inv[k][c]).sum();
                assert!((s - (r == c) as u8 as f64).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn gauss_weights_integrate_the_volume() {
    // det J of a trilinear map has degree ≤ 2 in each natural variable, which 2-point Gauss
    // integrates exactly: Σ_g det J must be the volume. An affine image of a cube of side 2 has
    // volume 8 times the map's determinant (1.5 here).
    let mut x = cube(2.0);
    for p in &mut x {
        p[0] += 0.3 * p[1] + 0.1 * p[2];
        p[2] *= 1.5;
    }
    let geom = element_geometry(&x).unwrap();
    let vol: f64 = geom.iter().map(|g| g.weight).sum();
    assert!((vol - 8.0 * 1.5).abs() < 1e-12, "volume {vol}");
}

#[test]
fn stiffness_is_symmetric() {
    let k = ke(&distorted());
    let scale = max_abs(&k);
    for r in 0..DOFS {
        for c in 0..r {
            assert!((k[r][c] - k[c][r]).abs() <= 1e-13 * scale, "({r}, {c})");
        }
    }
}

#[test]
fn rigid_body_modes_are_in_the_null_space() {
    for x in [cube(1.0), distorted()] {
        let k = ke(&x);
        let scale = max_abs(&k);
        for (m, u) in rigid_modes(&x).iter().enumerate() {
            let unorm = u.iter().map(|v| v * v).sum::<f64>().sqrt();
            let f = matvec(&k, u);
            let fnorm = f.iter().map(|v| v * v).sum::<f64>().sqrt();
            assert!(fnorm <= 1e-12 * scale * unorm, "mode {m}: |Ku| = {fnorm}");
        }
    }
}

#[test]
fn exactly_six_zero_eigenvalues_and_the_rest_positive() {
    for x in [cube(1.0), distorted()] {
        let ev = eigenvalues(&ke(&x));
        let top = ev[DOFS - 1];
        let zero = ev.iter().filter(|v| v.abs() <= 1e-10 * top).count();
        assert_eq!(zero, 6, "eigenvalues {ev:?}");
        assert!(
            ev[6] > 1e-3 * top,
            "smallest deformation mode {} vs {top}",
            ev[6]
        );
        assert!(ev[0] >= -1e-10 * top, "negative eigenvalue {}", ev[0]);
    }
}

#[test]
fn stiffness_scales_linearly_with_size() {
    // K ~ ∫ ∇N·∇N dV ~ h⁻² h³ = h in 3-D.
    let k1 = ke(&cube(1.0));
    let k2 = ke(&cube(2.0));
    let x = distorted();
    let k3 = ke(&x);
    let k4 = ke(&x.map(|p| p.map(|v| 0.25 * v)));
    let scale = max_abs(&k1).max(max_abs(&k3));
    for r in 0..DOFS {
        for c in 0..DOFS {
            assert!((k2[r][c] - 2.0 * k1[r][c]).abs() <= 1e-12 * scale);
            assert!((k4[r][c] - 0.25 * k3[r][c]).abs() <= 1e-12 * scale);
        }
    }
}

#[test]
fn uniform_strain_gives_the_face_force_of_the_stress() {
    // u_x = ε x on a cube of side h with ν = 0: σ_xx = E ε and every other stress vanishes, so the
    // nodes on x = h carry a total x-force E ε h², those on x = 0 the opposite, and nothing else.
    let (e, eps, h) = (3.0, 1e-3, 2.0);
    let x = cube(h);
    let k = element_stiffness(&x, Lame::from_young_poisson(e, 0.0)).unwrap();
    let mut u = [0.0; DOFS];
    for a in 0..NODES {
        u[3 * a] = eps * x[a][0];
    }
    let f = matvec(&k, &u);
    let face: f64 = (0..NODES)
        .filter(|&a| x[a][0] > 0.0)
        .map(|a| f[3 * a])
        .sum();
    assert!((face - e * eps * h * h).abs() < 1e-12, "face force {face}");
    for a in 0..NODES {
        assert!(f[3 * a + 1].abs() < 1e-12 && f[3 * a + 2].abs() < 1e-12);
        let per_node = e * eps * h * h / 4.0 * if x[a][0] > 0.0 { 1.0 } else { -1.0 };
        assert!(
            (f[3 * a] - per_node).abs() < 1e-12,
            "node {a}: {}",
            f[3 * a]
        );
    }
}

#[test]
fn entry_form_matches_the_matrix_product() {
    let x = distorted();
    let k = ke(&x);
    let geom = element_geometry(&x).unwrap();
    let scale = max_abs(&k);
    let mut blocks = [[[[0.0; 3]; 3]; NODES]; NODES];
    for gp in &geom {
        for a in 0..NODES {
            for b in 0..NODES {
                add_block(&mut blocks[a][b], gp.grad[a], gp.grad[b], gp.weight, lame());
            }
        }
    }
    for r in 0..DOFS {
        for c in 0..DOFS {
            let e = stiffness_entry(&geom, r, c, lame());
            assert!(
                (e - k[r][c]).abs() <= 1e-13 * scale,
                "({r}, {c}): {e} vs {}",
                k[r][c]
            );
            assert_eq!(e, blocks[r / 3][c / 3][r % 3][c % 3], "({r}, {c})");
        }
    }
}

#[test]
fn f32_agrees_with_f64() {
    let x = distorted();
    let k = ke(&x);
    let x32 = x.map(|p| p.map(|v| v as f32));
    let k32 = element_stiffness(&x32, Lame::from_young_poisson(STEEL.0, STEEL.1)).unwrap();
    let (mut num, mut den) = (0.0, 0.0);
    for r in 0..DOFS {
        for c in 0..DOFS {
            num += (k32[r][c] as f64 - k[r][c]).powi(2);
            den += k[r][c].powi(2);
        }
    }
    let rel = (num / den).sqrt();
    assert!(rel < 1e-6, "relative Frobenius error {rel}");
}

#[test]
fn inverted_and_degenerate_elements_are_detected() {
    // Mirroring z swaps the element's orientation: det J < 0 everywhere.
    let mirrored = cube(1.0).map(|p| [p[0], p[1], -p[2]]);
    let err = element_stiffness(&mirrored, lame()).unwrap_err();
    assert_eq!(err.gauss, 0);
    assert!(err.det < 0.0);
    // Collapsing the top face onto the bottom: det J = 0.
    let flat = cube(1.0).map(|p| [p[0], p[1], 0.0]);
    assert!(element_geometry(&flat).unwrap_err().det == 0.0);
    // One node pushed through the opposite face: positive at some Gauss points, not at all.
    let mut bad = cube(1.0);
    bad[6] = [-0.9, -0.9, -0.9];
    let err = element_geometry(&bad).unwrap_err();
    assert!(err.det <= 0.0 && err.gauss > 0, "{err:?}");
    let nan = cube(1.0).map(|p| [p[0], f64::NAN, p[2]]);
    assert!(element_geometry(&nan).is_err());
}

#[test]
fn run_time_sign_formulas_match_the_tables() {
    let x = distorted();
    for a in 0..NODES {
        let s = node_signs::<f64>(a as u32);
        assert_eq!(s, NODE_SIGNS[a].map(|v| v as f64), "node {a}");
        for g in 0..GAUSS {
            let p = node_signs::<f64>(g as u32);
            let got = shape_gradient_signs(s, p);
            let want = shape_gradient_natural::<f64>(g, a);
            for d in 0..3 {
                assert!((got[d] - want[d]).abs() < 1e-15, "node {a} gauss {g}");
            }
        }
    }
    for g in 0..GAUSS {
        let got = jacobian_signs(&x, node_signs(g as u32));
        let want = jacobian(&x, g);
        for i in 0..3 {
            for k in 0..3 {
                assert!((got[i][k] - want[i][k]).abs() < 1e-14, "gauss {g}");
            }
        }
    }
    // At other points (the element centre, where stresses are evaluated, and an arbitrary one)
    // against the sum of the nodes' gradients.
    for p in [[0.0, 0.0, 0.0], [0.3, -0.7, 0.1]] {
        let got = jacobian_signs(&x, p);
        for i in 0..3 {
            for k in 0..3 {
                let want: f64 = (0..NODES)
                    .map(|a| shape_gradient_signs(node_signs::<f64>(a as u32), p)[i] * x[a][k])
                    .sum();
                assert!((got[i][k] - want).abs() < 1e-14, "point {p:?}");
            }
        }
    }
}

#[test]
fn split_block_accumulation_matches_add_block() {
    let x = distorted();
    let m = lame();
    let geom = element_geometry(&x).unwrap();
    for (a, b) in [(0, 0), (2, 5), (7, 1), (6, 6)] {
        let mut want = [[0.0; 3]; 3];
        let mut got = [[0.0; 3]; 3];
        let mut diag = 0.0;
        for gp in &geom {
            add_block(&mut want, gp.grad[a], gp.grad[b], gp.weight, m);
            add_block_split(&mut got, &mut diag, gp.grad[a], gp.grad[b], gp.weight, m);
        }
        finish_block(&mut got, diag);
        let scale = max_abs(&ke(&x));
        for i in 0..3 {
            for j in 0..3 {
                assert!(
                    (got[i][j] - want[i][j]).abs() < 1e-13 * scale,
                    "block ({a}, {b}) entry ({i}, {j})"
                );
            }
        }
    }
}

#[test]
fn run_time_integrand_matches_the_constant_one() {
    let geom = element_geometry(&distorted()).unwrap();
    let m = lame();
    for gp in &geom {
        for (a, b) in [(0, 3), (5, 5), (7, 2)] {
            for i in 0..3 {
                for j in 0..3 {
                    let (ga, gb) = (gp.grad[a], gp.grad[b]);
                    let want = stiffness_integrand(ga, gb, i, j, m);
                    assert_eq!(stiffness_integrand_dyn(ga, gb, i, j, m), want, "({i}, {j})");
                }
            }
        }
    }
}

/// The B-bar Ke at ν = 0.4999, where the standard element locks.
fn ke_bbar(x: &[[f64; 3]; NODES], poisson: f64) -> [[f64; DOFS]; DOFS] {
    element_stiffness_bbar(x, Lame::from_young_poisson(STEEL.0, poisson)).expect("valid element")
}

#[test]
fn bbar_is_symmetric_with_exactly_six_rigid_zero_modes() {
    for poisson in [0.3, 0.4999] {
        for x in [cube(1.0), distorted()] {
            let k = ke_bbar(&x, poisson);
            let top = max_abs(&k);
            for r in 0..DOFS {
                for c in 0..DOFS {
                    assert!((k[r][c] - k[c][r]).abs() <= 1e-13 * top, "({r}, {c})");
                }
            }
            for mode in rigid_modes(&x) {
                let f = matvec(&k, &mode);
                assert!(f.iter().all(|v| v.abs() <= 1e-12 * top), "{f:?}");
            }
            let ev = eigenvalues(&k);
            let top = ev[DOFS - 1];
            let zero = ev.iter().filter(|v| v.abs() <= 1e-10 * top).count();
            assert_eq!(zero, 6, "ν = {poisson}: eigenvalues {ev:?}");
            assert!(ev[0] >= -1e-10 * top, "negative eigenvalue {}", ev[0]);
        }
    }
}

/// B̄ changes only the dilatation's variation inside the element: for a linear displacement
/// (uniform strain, dilatation included) uᵀ(K̄ − K)v = κ div u (V mean(div v) − ∫ div v) = 0 for
/// every v, so both elements give the same nodal forces. A non-linear field (bending) must differ,
/// or B-bar would be a no-op.
#[test]
fn bbar_matches_standard_on_uniform_strain_and_differs_in_bending() {
    let x = distorted();
    let m = Lame::from_young_poisson(STEEL.0, 0.45);
    let k = element_stiffness(&x, m).unwrap();
    let kb = element_stiffness_bbar(&x, m).unwrap();
    let grad = [
        [1e-3, 2e-4, -3e-4],
        [5e-4, -7e-4, 1e-4],
        [-2e-4, 3e-4, 9e-4],
    ];
    let mut u = [0.0; DOFS];
    for a in 0..NODES {
        for i in 0..3 {
            u[3 * a + i] = (0..3).map(|j| grad[i][j] * x[a][j]).sum();
        }
    }
    let (f, fb) = (matvec(&k, &u), matvec(&kb, &u));
    let scale = f.iter().fold(0.0f64, |s, v| s.max(v.abs()));
    for r in 0..DOFS {
        assert!(
            (f[r] - fb[r]).abs() <= 1e-10 * scale,
            "DOF {r}: {} vs {}",
            f[r],
            fb[r]
        );
    }
    // u_x = x z: bending, with a dilatation varying in z.
    let mut b = [0.0; DOFS];
    for a in 0..NODES {
        b[3 * a] = x[a][0] * x[a][2];
    }
    let (e, eb) = (dot(&b, &matvec(&k, &b)), dot(&b, &matvec(&kb, &b)));
    assert!(eb < 0.99 * e, "bending energy: B-bar {eb} vs standard {e}");
}

fn dot(a: &[f64; DOFS], b: &[f64; DOFS]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The kernels' B-bar route — deviatoric blocks by [`add_block_split`] at each Gauss point plus
/// [`add_volumetric`] of the integrated gradients — against the explicit B̄ᵀ D B̄ products.
#[test]
fn bbar_block_route_matches_the_matrix_product() {
    for poisson in [0.3, 0.4999] {
        let x = distorted();
        let m = Lame::from_young_poisson(STEEL.0, poisson);
        let reference = element_stiffness_bbar(&x, m).unwrap();
        let geom = element_geometry(&x).unwrap();
        let (dev, kappa) = m.bbar_split();
        let vol: f64 = geom.iter().map(|g| g.weight).sum();
        let integral = |a: usize| -> [f64; 3] {
            core::array::from_fn(|d| geom.iter().map(|g| g.weight * g.grad[a][d]).sum())
        };
        let top = max_abs(&reference);
        for a in 0..NODES {
            for b in 0..NODES {
                let (mut acc, mut diag) = ([[0.0; 3]; 3], 0.0);
                for g in &geom {
                    add_block_split(&mut acc, &mut diag, g.grad[a], g.grad[b], g.weight, dev);
                }
                finish_block(&mut acc, diag);
                add_volumetric(&mut acc, integral(a), integral(b), kappa / vol);
                for i in 0..3 {
                    for j in 0..3 {
                        let want = reference[3 * a + i][3 * b + j];
                        assert!(
                            (acc[i][j] - want).abs() <= 1e-12 * top,
                            "ν = {poisson}, block ({a}, {b}) entry ({i}, {j}): {} vs {want}",
                            acc[i][j]
                        );
                    }
                }
            }
        }
    }
}
