//! Particle sets: the seed's regular lattice in a cube (and shuffled), uniform random, and the
//! Plummer sphere of SPLASH-2 / ECL-BH. Masses 1/N. Deterministic for a given seed.

use crate::device::bh::Body;
use crate::device::rng;
use glam::{DVec3, Vec3};
use rayon::prelude::*;

/// A body at `pos` of mass `m` (the kernels' `#[repr(C)]` layout is unchanged: x, y, z, m).
pub fn body(pos: Vec3, m: f32) -> Body {
    Body {
        x: pos.x,
        y: pos.y,
        z: pos.z,
        m,
    }
}

/// The position of `b`.
pub fn position(b: &Body) -> Vec3 {
    Vec3::new(b.x, b.y, b.z)
}

/// The positions of `bodies`.
pub fn positions(bodies: &[Body]) -> Vec<Vec3> {
    bodies.iter().map(position).collect()
}

/// The scenes `--scene` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, crate::choice::Choice)]
pub enum Scene {
    /// The seed's cube: a regular lattice in [-0.5, 0.5]³, in lattice order.
    Lattice,
    /// Uniform random in [-0.5, 0.5]³.
    Uniform,
    /// Plummer sphere, SPLASH-2 generator (scale length 3π/16, radii capped at 0.999 of the mass).
    Plummer,
    /// Centrally condensed, ρ ∝ 1/r inside the unit sphere (Evrard's collapse test's profile).
    Condensed,
}

/// `n` bodies of `scene`.
pub fn generate(scene: Scene, n: usize, seed: u64) -> Vec<Body> {
    match scene {
        Scene::Lattice => lattice(n),
        Scene::Uniform => uniform(n, seed),
        Scene::Plummer => plummer(n, seed),
        Scene::Condensed => condensed(n, seed),
    }
}

/// The first `n` points of the smallest k³ lattice holding them, spacing 1/k, cell-centred in
/// [-0.5, 0.5]³, x fastest.
pub fn lattice(n: usize) -> Vec<Body> {
    // Checked: k³ wraps for n near usize::MAX and the search would never end.
    let k = (1..)
        .find(|k: &usize| k.checked_pow(3).is_none_or(|c| c >= n))
        .unwrap_or(1);
    let h = 1.0 / k as f32;
    let m = 1.0 / n as f32;
    (0..n)
        .into_par_iter()
        .map(|i| {
            let c = |j: usize| -0.5 + h * (j as f32 + 0.5);
            body(Vec3::new(c(i % k), c(i / k % k), c(i / (k * k))), m)
        })
        .collect()
}

/// Uniform random in [-0.5, 0.5]³.
pub fn uniform(n: usize, seed: u64) -> Vec<Body> {
    let m = 1.0 / n as f32;
    (0..n as u64)
        .into_par_iter()
        .map(|i| {
            let u = |k: u64| rng::uniform_f32(seed, 3 * i + k) - 0.5;
            body(Vec3::new(u(0), u(1), u(2)), m)
        })
        .collect()
}

/// Plummer scale length of [`plummer`] (virial units, SPLASH-2's `rsc`).
pub const PLUMMER_SCALE: f64 = 3.0 * std::f64::consts::PI / 16.0;
/// Fraction of the Plummer mass the generator samples (radii from X·0.999).
pub const PLUMMER_MASS_CAP: f64 = 0.999;

/// The SPLASH-2 Plummer generator as in ECL-BH: `r = 1/sqrt((0.999 X)^(-2/3) - 1)` scaled by
/// 3π/16, isotropic direction.
pub fn plummer(n: usize, seed: u64) -> Vec<Body> {
    let m = 1.0 / n as f32;
    (0..n as u64)
        .into_par_iter()
        .map(|i| {
            let u = |k: u64| rng::uniform_f64(seed, 4 * i + k);
            let x = (u(0) * PLUMMER_MASS_CAP).max(1e-12);
            let r = 1.0 / (x.powf(-2.0 / 3.0) - 1.0).sqrt();
            // Uniform direction (Archimedes: z uniform on [-1, 1]); the same distribution as
            // SPLASH-2's rejection from the unit ball, without a data-dependent loop.
            let z = 2.0 * u(1) - 1.0;
            let phi = 2.0 * std::f64::consts::PI * u(2);
            let rho = (1.0 - z * z).max(0.0).sqrt();
            let d = DVec3::new(rho * phi.cos(), rho * phi.sin(), z);
            body((d * (PLUMMER_SCALE * r)).as_vec3(), m)
        })
        .collect()
}

/// Isotropic direction from two uniform deviates (Archimedes: z uniform on [-1, 1]).
fn direction(u1: f64, u2: f64) -> DVec3 {
    let z = 2.0 * u1 - 1.0;
    let phi = 2.0 * std::f64::consts::PI * u2;
    let rho = (1.0 - z * z).max(0.0).sqrt();
    DVec3::new(rho * phi.cos(), rho * phi.sin(), z)
}

/// ρ ∝ 1/r inside the unit sphere (Evrard 1988's initial gas sphere): the enclosed mass grows as
/// r², so `r = √X` for X uniform; isotropic direction.
pub fn condensed(n: usize, seed: u64) -> Vec<Body> {
    let m = 1.0 / n as f32;
    (0..n as u64)
        .into_par_iter()
        .map(|i| {
            let u = |k: u64| rng::uniform_f64(seed, 3 * i + k);
            let r = u(0).sqrt();
            body((direction(u(1), u(2)) * r).as_vec3(), m)
        })
        .collect()
}

/// Analytic acceleration magnitude of [`plummer`]'s distribution at radius `r` (G = 1, M = 1, no
/// softening): enclosed mass `min(1, X(r)/0.999)` with `X = r³/(r² + a²)^{3/2}`, over r².
pub fn plummer_accel(r: f64) -> f64 {
    let a = PLUMMER_SCALE;
    let x = r.powi(3) / (r * r + a * a).powf(1.5);
    (x / PLUMMER_MASS_CAP).min(1.0) / (r * r)
}

/// A seeded Fisher–Yates shuffle (the seed's "shuffled" input order).
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    for i in (1..items.len()).rev() {
        let j = (rng::draw_u64(seed ^ 0x5bd1_e995, i as u64) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lattice_is_regular_and_inside() {
        let b = lattice(1000);
        assert_eq!(b.len(), 1000);
        assert!(
            b.iter()
                .all(|p| p.x.abs() < 0.5 && p.y.abs() < 0.5 && p.z.abs() < 0.5)
        );
        assert!((b[1].x - b[0].x - 0.1).abs() < 1e-6);
        assert!((b.iter().map(|p| p.m as f64).sum::<f64>() - 1.0).abs() < 1e-4);
    }

    #[test]
    fn plummer_half_mass_radius() {
        // Half the mass lies within r = a / sqrt(2^(2/3) - 1) ≈ 1.305 a for a Plummer sphere.
        let b = plummer(20_000, 3);
        let mut r: Vec<f64> = b
            .iter()
            .map(|p| (p.x as f64).hypot(p.y as f64).hypot(p.z as f64))
            .collect();
        r.sort_by(f64::total_cmp);
        let want = PLUMMER_SCALE / (2f64.powf(2.0 / 3.0) - 1.0).sqrt();
        let got = r[r.len() / 2];
        assert!(
            (got / want - 1.0).abs() < 0.03,
            "half-mass radius {got} vs {want}"
        );
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut v: Vec<u32> = (0..500).collect();
        shuffle(&mut v, 9);
        assert_ne!(v, (0..500).collect::<Vec<_>>());
        v.sort_unstable();
        assert_eq!(v, (0..500).collect::<Vec<_>>());
    }
}
