//! Hex8 linear-elasticity element formulas: trilinear shape functions at the 2×2×2 Gauss points,
//! the Jacobian, its determinant and inverse, the strain-displacement matrix B, isotropic
//! elasticity D, and the element stiffness Ke = Σ_g Bᵀ D B det J w_g, both whole and per entry.
//!
//! After U. Kiran, D. Sharma, S. S. Gautam, "GPU-warp based finite element matrices generation and
//! assembly using coloring method", Journal of Computational Design and Engineering 6 (2019)
//! 705–718, <https://doi.org/10.1016/j.jcde.2018.11.001>.
//!
//! Everything here is a plain function generic over [`Real`] (`f32`, `f64`): the GPU kernels
//! (`kernels.rs`), the host's CPU assembly and the tests all call these, so each formula exists
//! once. Two routes to Ke coexist on purpose:
//! - [`element_stiffness`] multiplies the matrices Bᵀ, D, B literally (any D): the reference;
//! - [`stiffness_integrand`] is one entry of Bᵀ D B for isotropic D written out in Lamé form,
//!   λ ∂ᵢNₐ ∂ⱼN_b + μ (∂ⱼNₐ ∂ᵢN_b + δᵢⱼ ∇Nₐ·∇N_b), which is what a lane needs when it owns a few
//!   entries of Ke ([`add_block`], [`stiffness_entry`]).
//!
//! The tests check that both agree. B-bar ([`element_stiffness_bbar`]) has the same two routes:
//! explicit B̄ᵀ D B̄, and the split of [`Lame::bbar_split`] + [`add_volumetric`] for the kernels.
//!
//! Node order is VTK's (and Gmsh's) hexahedron: 0–3 the ζ = −1 face counter-clockwise seen from
//! +ζ, starting at (−1, −1, −1); 4–7 the same on ζ = +1. DOF `3a + i` is node `a`, direction `i`.

pub mod kernels;

use core::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

/// Nodes per element.
pub const NODES: usize = 8;
/// Degrees of freedom per element (3 per node).
pub const DOFS: usize = 24;
/// Entries of the element matrix, the number of CSR positions precomputed per element.
pub const ENTRIES: usize = DOFS * DOFS;
/// Gauss points per element (2×2×2; weight 1 each).
pub const GAUSS: usize = 8;

/// Values per element of the block position table: 64 block bases (`NODES·a + b`), then 8 row
/// strides (`NODES² + a`). With 3 DOF per node the three rows of a node share their column set,
/// so entry (3a + i, 3b + j) sits at [`block_position`]`(base[8a+b], stride[a], i, j)`.
pub const BLOCK_TABLE: usize = NODES * NODES + NODES;

/// CSR position of entry (3a + i, 3b + j) of an element from its block table values.
#[inline(always)]
pub fn block_position(base: u32, stride: u32, i: usize, j: usize) -> u32 {
    base + i as u32 * stride + j as u32
}

/// Values of one element's geometry in global memory (two-kernel strategy): 8 Gauss points ×
/// 8 nodes × (∇N, det J).
pub const GEOMETRY_VALUES: usize = 4 * NODES * GAUSS;

/// Threads per block of the thread-per-element kernels.
pub const THREAD_BLOCK: u32 = 128;
/// Threads per block of the warp-per-element kernels: 8 warps, 8 elements per block.
pub const WARP_BLOCK: u32 = 256;
const _: () = assert!(WARP_BLOCK.is_multiple_of(crate::WARP_SIZE));
/// Threads per block of the node-row kernels (`fem_rows_*`): 4 warps, 4 nodes per block (their
/// shared scratch, 46 KB in f64, must stay under the 48 KB a block may declare statically).
pub const ROWS_BLOCK: u32 = 128;
/// Values of a node's three CSR rows that a `fem_rows_*` warp accumulates in shared memory (32
/// neighbour nodes × 9); a node with more neighbours accumulates into its rows in global memory
/// with atomic adds instead (correct, slower).
pub const ROW_CAPACITY: u32 = 9 * 32;

/// Slots of the GPU conjugate-gradient scalars (`f64`), shared by the kernels and the host.
pub const PCG_RZ: usize = 0;
/// pᵀKp of the current iteration.
pub const PCG_PKP: usize = 1;
/// rᵀz after the current iteration's update.
pub const PCG_RZ_NEW: usize = 2;
/// rᵀr after the current iteration's update.
pub const PCG_RR: usize = 3;
/// The stopping threshold on rᵀr: (rtol ‖b‖)².
pub const PCG_TOL2: usize = 4;
/// 0 while running, 1 converged, 2 broke down (pᵀKp ≤ 0).
pub const PCG_DONE: usize = 5;
/// The last iteration recorded (1-based).
pub const PCG_ITER: usize = 6;
/// rᵀr at the last iteration recorded.
pub const PCG_LAST_RR: usize = 7;
/// pᵀKp at the last iteration recorded.
pub const PCG_LAST_PKP: usize = 8;
/// Number of PCG scalar slots.
pub const PCG_SCALARS: usize = 9;

/// The floating-point types the element formulas run in.
pub trait Real:
    Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
{
    const ZERO: Self;
    const ONE: Self;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    /// `self * b + c` with one rounding (one PTX `fma` on the device).
    fn mul_add(self, b: Self, c: Self) -> Self;
}

macro_rules! real {
    ($t:ty, $fma:path) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn mul_add(self, b: Self, c: Self) -> Self {
                $fma(self, b, c)
            }
        }
    };
}
real!(f32, crate::math::fma);
real!(f64, crate::math::fma_f64);

/// Natural coordinates (ξ, η, ζ) ∈ {−1, 1}³ of the element's nodes; Gauss point `g` sits at
/// `NODE_SIGNS[g] / √3`, so node `a` and Gauss point `a` share an octant.
pub const NODE_SIGNS: [[i8; 3]; NODES] = [
    [-1, -1, -1],
    [1, -1, -1],
    [1, 1, -1],
    [-1, 1, -1],
    [-1, -1, 1],
    [1, -1, 1],
    [1, 1, 1],
    [-1, 1, 1],
];

/// 1/√3, the 2-point Gauss–Legendre abscissa.
const GAUSS_X: f64 = 0.577_350_269_189_625_8;

/// ∂N_a/∂(ξ, η, ζ) at Gauss point `g`, with N_a = (1 + ξₐξ)(1 + ηₐη)(1 + ζₐζ) / 8.
#[inline(always)]
pub fn shape_gradient_natural<T: Real>(g: usize, a: usize) -> [T; 3] {
    let s = NODE_SIGNS[a];
    let p = NODE_SIGNS[g];
    // 1 + sₐ pᵍ/√3 per direction: the shape function's linear factor at the Gauss point.
    let f = |d: usize| 1.0 + (s[d] as f64) * (p[d] as f64) * GAUSS_X;
    let (fx, fy, fz) = (f(0), f(1), f(2));
    [
        T::from_f64(s[0] as f64 * fy * fz * 0.125),
        T::from_f64(s[1] as f64 * fx * fz * 0.125),
        T::from_f64(s[2] as f64 * fx * fy * 0.125),
    ]
}

/// Node `a`'s natural coordinates as ±1 in `T`, by bit arithmetic (equal to [`NODE_SIGNS`]`[a]`):
/// what a lane with a run-time node or Gauss point index uses instead of indexing a table, which
/// on the GPU would cost a local-memory array.
#[inline(always)]
pub fn node_signs<T: Real>(a: u32) -> [T; 3] {
    let s = |bit: u32| if bit & 1 == 1 { T::ONE } else { -T::ONE };
    [s((a + 1) >> 1), s(a >> 1), s(a >> 2)]
}

/// ∂N/∂(ξ, η, ζ) of the node with signs `s` at the Gauss point with signs `p` (both from
/// [`node_signs`]): [`shape_gradient_natural`] for run-time indices, computed in `T`.
#[inline(always)]
pub fn shape_gradient_signs<T: Real>(s: [T; 3], p: [T; 3]) -> [T; 3] {
    let c = T::from_f64(GAUSS_X);
    let f = |d: usize| (s[d] * p[d]).mul_add(c, T::ONE);
    let e = T::from_f64(0.125);
    let (fx, fy, fz) = (f(0), f(1), f(2));
    [
        s[0] * e * (fy * fz),
        s[1] * e * (fx * fz),
        s[2] * e * (fx * fy),
    ]
}

/// [`jacobian`] at the Gauss point with signs `p` (a run-time Gauss point).
#[inline(always)]
pub fn jacobian_signs<T: Real>(x: &[[T; 3]; NODES], p: [T; 3]) -> [[T; 3]; 3] {
    let mut j = [[T::ZERO; 3]; 3];
    // Unrolled by hand: LLVM leaves the f64 node loop rolled, which puts `x` in local memory.
    macro_rules! nodes {
        ($($a:literal)*) => {$({
            let dn = shape_gradient_signs(node_signs::<T>($a), p);
            for i in 0..3 {
                for k in 0..3 {
                    j[i][k] = dn[i].mul_add(x[$a][k], j[i][k]);
                }
            }
        })*};
    }
    nodes!(0 1 2 3 4 5 6 7);
    j
}

/// J[i][j] = ∂x_j/∂ξ_i = Σ_a ∂N_a/∂ξ_i x_a[j] at Gauss point `g`.
#[inline(always)]
pub fn jacobian<T: Real>(x: &[[T; 3]; NODES], g: usize) -> [[T; 3]; 3] {
    let mut j = [[T::ZERO; 3]; 3];
    for (a, xa) in x.iter().enumerate() {
        let dn = shape_gradient_natural::<T>(g, a);
        for i in 0..3 {
            for k in 0..3 {
                j[i][k] = dn[i].mul_add(xa[k], j[i][k]);
            }
        }
    }
    j
}

/// Determinant of a 3×3 matrix by cofactor expansion along the first row.
#[inline(always)]
pub fn det3<T: Real>(m: &[[T; 3]; 3]) -> T {
    m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
        - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
}

/// `m⁻¹` given `det = det3(m)`: the adjugate over the determinant. The caller checks `det > 0`
/// first (a non-positive Jacobian is an inverted or degenerate element, not a number to divide by).
#[inline(always)]
pub fn inverse3<T: Real>(m: &[[T; 3]; 3], det: T) -> [[T; 3]; 3] {
    let r = T::ONE / det;
    // Cofactor C[j][i] of m lands at inv[i][j] (the transpose of the cofactor matrix).
    let c =
        |r0: usize, r1: usize, c0: usize, c1: usize| m[r0][c0] * m[r1][c1] - m[r0][c1] * m[r1][c0];
    [
        [c(1, 2, 1, 2) * r, c(0, 2, 2, 1) * r, c(0, 1, 1, 2) * r],
        [c(1, 2, 2, 0) * r, c(0, 2, 0, 2) * r, c(0, 1, 2, 0) * r],
        [c(1, 2, 0, 1) * r, c(0, 2, 1, 0) * r, c(0, 1, 0, 1) * r],
    ]
}

/// ∂N/∂x = J⁻¹ ∂N/∂ξ for one node (from ∂N/∂ξ_i = Σ_j J[i][j] ∂N/∂x_j).
#[inline(always)]
pub fn physical_gradient<T: Real>(inv: &[[T; 3]; 3], dn: [T; 3]) -> [T; 3] {
    let row = |i: usize| inv[i][0].mul_add(dn[0], inv[i][1].mul_add(dn[1], inv[i][2] * dn[2]));
    [row(0), row(1), row(2)]
}

/// Det J ≤ 0 at a Gauss point: the element is inverted (nodes out of order) or degenerate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NonPositiveJacobian {
    /// The Gauss point, 0..8 (in [`NODE_SIGNS`] order).
    pub gauss: usize,
    /// det J there (natural to physical volume ratio).
    pub det: f64,
}

/// What one Gauss point contributes: the physical shape-function gradients and the weight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GaussGeometry<T> {
    /// `grad[a]` = ∂N_a/∂(x, y, z).
    pub grad: [[T; 3]; NODES],
    /// w_g det J (the Gauss weights are all 1).
    pub weight: T,
}

/// An element's geometry at all Gauss points: everything Ke needs besides the material.
pub type ElementGeometry<T> = [GaussGeometry<T>; GAUSS];

/// det J at Gauss point `g` and J⁻¹, or the failure when det J ≤ 0 (NaN coordinates fail too).
#[inline(always)]
pub fn jacobian_inverse<T: Real>(
    x: &[[T; 3]; NODES],
    g: usize,
) -> Result<(T, [[T; 3]; 3]), NonPositiveJacobian> {
    let j = jacobian(x, g);
    let det = det3(&j);
    // Only a strictly positive det passes: zero, negative and NaN (unordered) all fail.
    if det.partial_cmp(&T::ZERO) != Some(core::cmp::Ordering::Greater) {
        return Err(NonPositiveJacobian {
            gauss: g,
            det: det.to_f64(),
        });
    }
    Ok((det, inverse3(&j, det)))
}

/// The geometry of Gauss point `g` of the element with node coordinates `x`.
#[inline(always)]
pub fn gauss_geometry<T: Real>(
    x: &[[T; 3]; NODES],
    g: usize,
) -> Result<GaussGeometry<T>, NonPositiveJacobian> {
    let (det, inv) = jacobian_inverse(x, g)?;
    let mut grad = [[T::ZERO; 3]; NODES];
    for (a, ga) in grad.iter_mut().enumerate() {
        *ga = physical_gradient(&inv, shape_gradient_natural(g, a));
    }
    Ok(GaussGeometry { grad, weight: det })
}

/// The geometry at all eight Gauss points, or the first one with det J ≤ 0.
#[inline(always)]
pub fn element_geometry<T: Real>(
    x: &[[T; 3]; NODES],
) -> Result<ElementGeometry<T>, NonPositiveJacobian> {
    let mut geom = [GaussGeometry {
        grad: [[T::ZERO; 3]; NODES],
        weight: T::ZERO,
    }; GAUSS];
    for (g, slot) in geom.iter_mut().enumerate() {
        *slot = gauss_geometry(x, g)?;
    }
    Ok(geom)
}

/// Strain-displacement matrix B (6×24), Voigt order (xx, yy, zz, xy, yz, zx) with engineering
/// shear strains (γ = 2ε), so that σ = D B u with [`elasticity_matrix`].
#[inline(always)]
pub fn strain_displacement<T: Real>(grad: &[[T; 3]; NODES]) -> [[T; DOFS]; 6] {
    let mut b = [[T::ZERO; DOFS]; 6];
    for (a, g) in grad.iter().enumerate() {
        let c = 3 * a;
        b[0][c] = g[0];
        b[1][c + 1] = g[1];
        b[2][c + 2] = g[2];
        b[3][c] = g[1];
        b[3][c + 1] = g[0];
        b[4][c + 1] = g[2];
        b[4][c + 2] = g[1];
        b[5][c] = g[2];
        b[5][c + 2] = g[0];
    }
    b
}

/// Isotropic material as the kernels take it: the Lamé constants.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lame<T> {
    pub lambda: T,
    pub mu: T,
}

impl<T: Real> Lame<T> {
    /// λ = Eν / ((1 + ν)(1 − 2ν)), μ = E / (2(1 + ν)). Validity (E > 0, −1 < ν < 1/2) is the
    /// host's to check; here ν = 1/2 divides by zero.
    #[inline(always)]
    pub fn from_young_poisson(young: f64, poisson: f64) -> Self {
        Lame {
            lambda: T::from_f64(young * poisson / ((1.0 + poisson) * (1.0 - 2.0 * poisson))),
            mu: T::from_f64(young / (2.0 * (1.0 + poisson))),
        }
    }
}

impl<T: Real> Lame<T> {
    /// The B-bar split of isotropic D: the deviatoric part as Lamé constants (λ' = −2μ/3, μ) and
    /// the bulk modulus κ = λ + 2μ/3, so that D = D(λ', μ) + κ m mᵀ (m = (1, 1, 1, 0, 0, 0)).
    /// [`element_stiffness_bbar`] integrates the first part at every Gauss point and the second
    /// with the element's mean dilatation only.
    #[inline(always)]
    pub fn bbar_split(self) -> (Self, T) {
        let third = T::from_f64(2.0 / 3.0) * self.mu;
        (
            Lame {
                lambda: -third,
                mu: self.mu,
            },
            self.lambda + third,
        )
    }
}

/// Isotropic D (6×6) in the Voigt order of [`strain_displacement`].
#[inline(always)]
pub fn elasticity_matrix<T: Real>(m: Lame<T>) -> [[T; 6]; 6] {
    let mut d = [[T::ZERO; 6]; 6];
    for i in 0..3 {
        d[i][..3].fill(m.lambda);
        d[i][i] = m.lambda + m.mu + m.mu;
        d[i + 3][i + 3] = m.mu;
    }
    d
}

/// Ke = Σ_g Bᵀ D B w det J by explicit matrix products (the reference route), or the first Gauss
/// point with det J ≤ 0.
pub fn element_stiffness<T: Real>(
    x: &[[T; 3]; NODES],
    m: Lame<T>,
) -> Result<[[T; DOFS]; DOFS], NonPositiveJacobian> {
    let d = elasticity_matrix(m);
    let mut k = [[T::ZERO; DOFS]; DOFS];
    for g in 0..GAUSS {
        let geo = gauss_geometry(x, g)?;
        add_product(&mut k, &strain_displacement(&geo.grad), &d, geo.weight);
    }
    Ok(k)
}

/// k += Bᵀ D B w: one Gauss point of the reference route.
#[inline(always)]
fn add_product<T: Real>(k: &mut [[T; DOFS]; DOFS], b: &[[T; DOFS]; 6], d: &[[T; 6]; 6], weight: T) {
    // DB (6×24), scaled by the weight once here rather than per entry of Ke.
    let mut db = [[T::ZERO; DOFS]; 6];
    for i in 0..6 {
        for c in 0..DOFS {
            let mut s = T::ZERO;
            for l in 0..6 {
                s = d[i][l].mul_add(b[l][c], s);
            }
            db[i][c] = s * weight;
        }
    }
    for r in 0..DOFS {
        for c in 0..DOFS {
            let mut s = k[r][c];
            for l in 0..6 {
                s = b[l][r].mul_add(db[l][c], s);
            }
            k[r][c] = s;
        }
    }
}

/// The B-bar element stiffness (selective reduced integration, T. J. R. Hughes, "Generalization
/// of selective integration procedures to anisotropic and nonlinear media", IJNME 15 (1980)
/// 1413–1418) by explicit matrix products (the reference route): Ke = Σ_g B̄ᵀ D B̄ w det J, where
/// B̄ is B with its dilatational part ∂ⱼN_a replaced by the element mean
/// b̄_a = (1/V) ∫ ∇N_a dV, B̄ = B + ⅓ m (b̄_a − ∇N_a)ᵀ per node. Full integration locks hex8 as
/// ν → ½ (the 8 Gauss points' volume constraints outnumber the modes); one mean dilatation per
/// element does not. The kernels use the equivalent split of [`Lame::bbar_split`]:
/// Ke = Ke(λ' = −2μ/3, μ) + (κ / V) s_a s_bᵀ with s_a = ∫ ∇N_a dV ([`add_volumetric`]).
pub fn element_stiffness_bbar<T: Real>(
    x: &[[T; 3]; NODES],
    m: Lame<T>,
) -> Result<[[T; DOFS]; DOFS], NonPositiveJacobian> {
    let geom = element_geometry(x)?;
    let d = elasticity_matrix(m);
    let mean = mean_gradients(&geom);
    let mut k = [[T::ZERO; DOFS]; DOFS];
    for gp in &geom {
        add_product(
            &mut k,
            &strain_displacement_bbar(&gp.grad, &mean),
            &d,
            gp.weight,
        );
    }
    Ok(k)
}

/// b̄_a = (1/V) ∫ ∇N_a dV of every node, by the element's Gauss rule.
pub fn mean_gradients<T: Real>(geom: &ElementGeometry<T>) -> [[T; 3]; NODES] {
    let mut vol = T::ZERO;
    let mut mean = [[T::ZERO; 3]; NODES];
    for gp in geom {
        vol += gp.weight;
        for (s, g) in mean.iter_mut().zip(&gp.grad) {
            for k in 0..3 {
                s[k] = gp.weight.mul_add(g[k], s[k]);
            }
        }
    }
    mean.map(|s| s.map(|v| v / vol))
}

/// B̄ (6×24) at a point with gradients `grad`: [`strain_displacement`] with each node's
/// dilatational part ∂ⱼN_a replaced by the element mean `mean[a][j]` ([`mean_gradients`]),
/// B̄ = B + ⅓ m (b̄_a − ∇N_a)ᵀ: the strain whose trace is the element's mean dilatation.
pub fn strain_displacement_bbar<T: Real>(
    grad: &[[T; 3]; NODES],
    mean: &[[T; 3]; NODES],
) -> [[T; DOFS]; 6] {
    let third = T::ONE / T::from_f64(3.0);
    let mut b = strain_displacement(grad);
    for (a, (g, s)) in grad.iter().zip(mean).enumerate() {
        for j in 0..3 {
            let shift = (s[j] - g[j]) * third;
            for row in b.iter_mut().take(3) {
                row[3 * a + j] += shift;
            }
        }
    }
    b
}

/// The volumetric part of a B-bar block: `acc[i][j]` += `scale` · sa_i sb_j, with sa, sb the
/// integrated gradients ∫ ∇N dV of the block's nodes and `scale` = κ / V.
#[inline(always)]
pub fn add_volumetric<T: Real>(acc: &mut [[T; 3]; 3], sa: [T; 3], sb: [T; 3], scale: T) {
    for (i, row) in acc.iter_mut().enumerate() {
        let si = sa[i] * scale;
        for (j, v) in row.iter_mut().enumerate() {
            *v = si.mul_add(sb[j], *v);
        }
    }
}

/// Entry (i, j) of the 3×3 block (a, b) of Bᵀ D B at one Gauss point, for isotropic D, given the
/// gradients `ga` = ∇N_a, `gb` = ∇N_b: λ ga_i gb_j + μ (ga_j gb_i + δᵢⱼ ga·gb). Multiply by the
/// weight and sum over Gauss points for Ke.
#[inline(always)]
pub fn stiffness_integrand<T: Real>(ga: [T; 3], gb: [T; 3], i: usize, j: usize, m: Lame<T>) -> T {
    let shear = if i == j {
        ga[j].mul_add(
            gb[i],
            ga[0].mul_add(gb[0], ga[1].mul_add(gb[1], ga[2] * gb[2])),
        )
    } else {
        ga[j] * gb[i]
    };
    m.lambda.mul_add(ga[i] * gb[j], m.mu * shear)
}

/// [`stiffness_integrand`] for run-time `i`, `j` (a thread that owns one entry): the components
/// are picked by selects, since indexing with a run-time index would put the vectors in local
/// memory on the GPU. (Kept apart on purpose: selects inside [`stiffness_integrand`] stop LLVM
/// from fully unrolling the block loops of [`add_block`], which then spills its accumulator to
/// local memory.) The tests check that both agree for every (i, j).
#[inline(always)]
pub fn stiffness_integrand_dyn<T: Real>(
    ga: [T; 3],
    gb: [T; 3],
    i: usize,
    j: usize,
    m: Lame<T>,
) -> T {
    let (gai, gaj, gbi, gbj) = (pick(ga, i), pick(ga, j), pick(gb, i), pick(gb, j));
    let shear = if i == j {
        gaj.mul_add(
            gbi,
            ga[0].mul_add(gb[0], ga[1].mul_add(gb[1], ga[2] * gb[2])),
        )
    } else {
        gaj * gbi
    };
    m.lambda.mul_add(gai * gbj, m.mu * shear)
}

/// `v[i]` by selects (`i` < 3): with a run-time `i` on the GPU, indexing would put `v` in local
/// memory; with a constant `i` this folds to the plain index.
#[inline(always)]
fn pick<T: Real>(v: [T; 3], i: usize) -> T {
    if i == 0 {
        v[0]
    } else if i == 1 {
        v[1]
    } else {
        v[2]
    }
}

/// Adds one Gauss point's contribution to the 3×3 block (a, b) of Ke: what a lane that owns the
/// block accumulates.
#[inline(always)]
pub fn add_block<T: Real>(acc: &mut [[T; 3]; 3], ga: [T; 3], gb: [T; 3], weight: T, m: Lame<T>) {
    for (i, row) in acc.iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            *v = weight.mul_add(stiffness_integrand(ga, gb, i, j, m), *v);
        }
    }
}

/// [`add_block`] rearranged for a lane that owns a block: `acc[i][j]` gains
/// w (λ ga_i gb_j + μ ga_j gb_i) and `diag` gains w μ ga·gb, the δᵢⱼ term, which
/// [`finish_block`] adds to the diagonal once after the last Gauss point (2 FMAs per entry and
/// Gauss point instead of about 5).
#[inline(always)]
pub fn add_block_split<T: Real>(
    acc: &mut [[T; 3]; 3],
    diag: &mut T,
    ga: [T; 3],
    gb: [T; 3],
    weight: T,
    m: Lame<T>,
) {
    let (la, ma) = scaled_gradient(ga, weight, m);
    add_block_split_scaled(acc, diag, la, ma, gb);
}

/// Row node a's gradient scaled as [`add_block_split`] scales it at a Gauss point of weight
/// `weight` (w det J): (w λ ∇N_a, w μ ∇N_a).
#[inline(always)]
pub fn scaled_gradient<T: Real>(ga: [T; 3], weight: T, m: Lame<T>) -> ([T; 3], [T; 3]) {
    let (wl, wm) = (weight * m.lambda, weight * m.mu);
    (ga.map(|v| v * wl), ga.map(|v| v * wm))
}

/// [`add_block_split`] with the row node's gradient already scaled ([`scaled_gradient`]), for
/// kernels that share the scaled gradient among the lanes of an element.
#[inline(always)]
pub fn add_block_split_scaled<T: Real>(
    acc: &mut [[T; 3]; 3],
    diag: &mut T,
    la: [T; 3],
    ma: [T; 3],
    gb: [T; 3],
) {
    for (i, row) in acc.iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            *v = ma[j].mul_add(gb[i], la[i].mul_add(gb[j], *v));
        }
    }
    *diag = ma[0].mul_add(gb[0], ma[1].mul_add(gb[1], ma[2].mul_add(gb[2], *diag)));
}

/// Completes a block accumulated by [`add_block_split`].
#[inline(always)]
pub fn finish_block<T: Real>(acc: &mut [[T; 3]; 3], diag: T) {
    for (i, row) in acc.iter_mut().enumerate() {
        row[i] += diag;
    }
}

/// Entry (r, c) of Ke straight from the precomputed geometry (one lane, one entry).
#[inline(always)]
pub fn stiffness_entry<T: Real>(geom: &ElementGeometry<T>, r: usize, c: usize, m: Lame<T>) -> T {
    let (a, i, b, j) = (r / 3, r % 3, c / 3, c % 3);
    let mut s = T::ZERO;
    for gp in geom {
        s = gp
            .weight
            .mul_add(stiffness_integrand(gp.grad[a], gp.grad[b], i, j, m), s);
    }
    s
}

#[cfg(test)]
mod tests;
