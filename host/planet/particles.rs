//! Equal-mass SPH particles on a planet's profile, on nested spherical shells in the manner of
//! SEAGen (Kegerreis et al. 2019, MNRAS 487, 5029).
//!
//! Each layer is cut into shells whose thickness follows the local particle spacing
//! `(m/ρ)^{1/3}`: with `x(r) = ∫ (ρ/m)^{1/3} dr` the layer holds `round(Δx)` shells, equal in x.
//! A shell boundary at radius `r_j` encloses `c_j = round(M(r_j)/m)` particles, so the particle
//! mass inside every boundary is the profile's to within half a particle mass; layer tops are
//! boundaries too, so no shell crosses a layer and each particle has its layer's material. A
//! shell's `c_j − c_{j−1}` particles sit at the radius that halves its mass.
//!
//! On a shell the points are a Fibonacci (golden-angle) spiral, `z_i = 1 − (2i+1)/n`,
//! `φ_i = i · π(3 − √5)`, turned by a uniformly random rotation per shell. SEAGen instead
//! stretches a regular spiral so that every particle's area is equal and its neighbours
//! equidistant; the golden spiral gives equal areas too, and its distances vary by a few per
//! cent, which the settling removes. The random rotations keep neighbouring shells' spirals out
//! of alignment (an aligned pole would stack particles radially).

use super::Profile;
use crate::device::rng;
use crate::sph::hydro::Gas;
use crate::sph::hydro::density::h_guess;
use std::f64::consts::PI;

/// One shell: its boundaries, the radius of its particles, their number and its layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shell {
    pub r_in: f64,
    pub r_out: f64,
    pub r: f64,
    pub n: usize,
    pub layer: usize,
}

/// Particles on a profile: the gas (at rest, material id = layer index, `u` on the cold
/// adiabat, `h` guessed from the profile's density), the particle mass, the shells, and each
/// particle's shell index.
#[derive(Clone, Debug)]
pub struct Placement {
    pub gas: Gas,
    pub particle_mass: f64,
    pub shells: Vec<Shell>,
    pub shell_of: Vec<usize>,
}

/// Why particles cannot be placed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlacementError {
    #[error("{n} particles are too few: a planet needs at least {min}")]
    TooFew { n: usize, min: usize },
    #[error("layer {layer} would hold no particle at {n} particles: use more particles")]
    EmptyLayer { layer: usize, n: usize },
    #[error("n_ngb = {0} must be at least 8")]
    Neighbours(f64),
}

/// The fewest particles a planet takes: a few shells of a few particles each, so that a
/// particle has neighbours in every direction.
pub const MIN_PARTICLES: usize = 100;

/// Places `n` equal-mass particles (exactly `n`, total mass the profile's) on `profile`,
/// deterministically for a given `seed`. `n_ngb` sets the smoothing-length guess
/// `(4π/3) h³ ρ = N_ngb m`; `alpha` the particles' initial viscosity α.
pub fn place(
    profile: &Profile,
    n: usize,
    seed: u64,
    n_ngb: f64,
    alpha: f64,
) -> Result<Placement, PlacementError> {
    if n < MIN_PARTICLES {
        return Err(PlacementError::TooFew {
            n,
            min: MIN_PARTICLES,
        });
    }
    if !(n_ngb.is_finite() && n_ngb >= 8.0) {
        return Err(PlacementError::Neighbours(n_ngb));
    }
    let total = profile.mass();
    let m = total / n as f64;
    let layers = profile.layer.last().map_or(0, |&k| k + 1);
    let count = |mass: f64| ((mass / m).round() as usize).min(n);
    let mut shells = Vec::new();
    let mut r_lo = 0.0;
    let mut c_lo = 0;
    for k in 0..layers {
        let r_hi = if k + 1 == layers {
            profile.radius()
        } else {
            profile.layer_top(k)
        };
        let c_hi = if k + 1 == layers {
            n
        } else {
            count(profile.mass_at(r_hi))
        };
        if c_hi <= c_lo {
            return Err(PlacementError::EmptyLayer { layer: k, n });
        }
        // x(r) = ∫ (ρ/m)^{1/3} dr over the layer, by the trapezoid rule on its points.
        let pts = profile.layer_points(k);
        let mut rs = vec![r_lo];
        rs.extend(
            profile.r[pts.clone()]
                .iter()
                .copied()
                .filter(|&r| r > r_lo && r < r_hi),
        );
        rs.push(r_hi);
        let spacing_inv = |r: f64| (profile.in_layer(r, k).0 / m).cbrt();
        let mut xs = vec![0.0];
        for w in rs.windows(2) {
            let dx = 0.5 * (w[1] - w[0]) * (spacing_inv(w[0]) + spacing_inv(w[1]));
            xs.push(xs.last().expect("non-empty") + dx);
        }
        let x_top = *xs.last().expect("non-empty");
        let n_shells = (x_top.round() as usize).clamp(1, c_hi - c_lo);
        let mut c_prev = c_lo;
        let mut r_prev = r_lo;
        for j in 1..=n_shells {
            let (r_out, c_out) = if j == n_shells {
                (r_hi, c_hi)
            } else {
                let r = super::interp(&xs, &rs, x_top * j as f64 / n_shells as f64);
                (r, count(profile.mass_at(r)).clamp(c_prev, c_hi))
            };
            if c_out > c_prev {
                // The particles at the radius enclosing the shell's middle particle mass.
                let r_mid = profile
                    .radius_of_mass(0.5 * (c_prev + c_out) as f64 * m)
                    .clamp(r_prev, r_out);
                shells.push(Shell {
                    r_in: r_prev,
                    r_out,
                    r: r_mid,
                    n: c_out - c_prev,
                    layer: k,
                });
                c_prev = c_out;
                r_prev = r_out;
            }
        }
        r_lo = r_hi;
        c_lo = c_hi;
    }

    let mut pos = Vec::with_capacity(n);
    let (mut u, mut h, mut mat, mut shell_of) = (vec![], vec![], vec![], vec![]);
    for (s, shell) in shells.iter().enumerate() {
        let rot = random_rotation(seed, s as u64);
        let (rho, u_s, _) = profile.in_layer(shell.r, shell.layer);
        let h_s = h_guess(rho, m, n_ngb);
        for p in fibonacci_sphere(shell.n) {
            let q = rotate(&rot, p);
            pos.push(q.map(|x| x * shell.r));
            u.push(u_s);
            h.push(h_s);
            mat.push(shell.layer as u32);
            shell_of.push(s);
        }
    }
    debug_assert_eq!(pos.len(), n);
    let mut gas = Gas::new(pos, vec![[0.0; 3]; n], vec![m; n], u, h, alpha);
    gas.mat = mat;
    Ok(Placement {
        gas,
        particle_mass: m,
        shells,
        shell_of,
    })
}

/// `n` unit vectors on a golden-angle spiral: equal areas `4π/n` per point.
pub fn fibonacci_sphere(n: usize) -> impl Iterator<Item = [f64; 3]> {
    let golden = PI * (3.0 - 5f64.sqrt());
    (0..n).map(move |i| {
        let z = 1.0 - (2 * i + 1) as f64 / n as f64;
        let s = (1.0 - z * z).max(0.0).sqrt();
        let phi = golden * i as f64;
        [s * phi.cos(), s * phi.sin(), z]
    })
}

/// A uniformly random rotation (Shoemake 1992: a uniform unit quaternion from three uniform
/// numbers), draw `k` of stream `seed`, as a matrix.
fn random_rotation(seed: u64, k: u64) -> [[f64; 3]; 3] {
    let u = |i: u64| rng::uniform_f64(seed, 3 * k + i);
    let (u1, u2, u3) = (u(0), u(1), u(2));
    let (a, b) = ((1.0 - u1).sqrt(), u1.sqrt());
    let (w, x, y, z) = (
        a * (2.0 * PI * u2).sin(),
        a * (2.0 * PI * u2).cos(),
        b * (2.0 * PI * u3).sin(),
        b * (2.0 * PI * u3).cos(),
    );
    [
        [
            1.0 - 2.0 * (y * y + z * z),
            2.0 * (x * y - w * z),
            2.0 * (x * z + w * y),
        ],
        [
            2.0 * (x * y + w * z),
            1.0 - 2.0 * (x * x + z * z),
            2.0 * (y * z - w * x),
        ],
        [
            2.0 * (x * z - w * y),
            2.0 * (y * z + w * x),
            1.0 - 2.0 * (x * x + y * y),
        ],
    ]
}

fn rotate(m: &[[f64; 3]; 3], p: [f64; 3]) -> [f64; 3] {
    core::array::from_fn(|i| m[i][0] * p[0] + m[i][1] * p[1] + m[i][2] * p[2])
}
