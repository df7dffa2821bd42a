//! The outcome analysis on particle sets whose answer is known: a bound Plummer clump beside an
//! unbound stream, and a clump at rest inside a ring on circular orbits (G = 1 units; the
//! analysis has no scale of its own).

use super::outcome::{Fate, OutcomeOptions, analyse};
use crate::device::rng;
use crate::sph::hydro::Gas;
use std::f64::consts::PI;

/// A uniformly random unit vector, draws `2k`, `2k + 1` of stream `seed`.
fn direction(seed: u64, k: u64) -> [f64; 3] {
    let z = 2.0 * rng::uniform_f64(seed, 2 * k) - 1.0;
    let phi = 2.0 * PI * rng::uniform_f64(seed, 2 * k + 1);
    let s = (1.0 - z * z).sqrt();
    [s * phi.cos(), s * phi.sin(), z]
}

/// One particle: position, velocity, mass, density, material id.
type Part = ([f64; 3], [f64; 3], f64, f64, u32);

/// Particles from their parts.
fn gas(parts: Vec<Part>) -> Gas {
    let n = parts.len();
    let mut g = Gas::new(
        parts.iter().map(|p| p.0).collect(),
        parts.iter().map(|p| p.1).collect(),
        parts.iter().map(|p| p.2).collect(),
        vec![0.0; n],
        vec![1.0; n],
        1.0,
    );
    g.rho = parts.iter().map(|p| p.3).collect();
    g.mat = parts.iter().map(|p| p.4).collect();
    g
}

fn add(a: [f64; 3], b: [f64; 3], k: f64) -> [f64; 3] {
    core::array::from_fn(|i| a[i] + k * b[i])
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1e-300)
}

/// A Plummer sphere (scale a = 1, truncated at 5a) of 2000 particles turning as a solid body,
/// half the circular speed at its edge, with random motions of a tenth of the local circular
/// speed (a fluid body's coherent flow: the seed grows through particles moving slowly relative
/// to it), and a stream of 300 particles leaving it at three times the escape speed, the whole
/// set offset and moving: all of the clump is the remnant, all of the stream escapes, nothing is
/// disk, per material too; seeded at the potential minimum or at the densest particle.
#[test]
fn a_plummer_clump_is_bound_and_a_stream_escapes() {
    let (n_c, n_s) = (2000, 300);
    let (m_clump, a, r_max) = (1.0f64, 1.0f64, 5.0f64);
    let m = m_clump / n_c as f64;
    let (x0, v0) = ([10.0, 20.0, -5.0], [3.0, -1.0, 0.5]);
    // The truncated sphere's mass fraction of the untruncated one, for its density.
    let frac = (r_max * r_max / (1.0 + r_max * r_max)).powf(1.5);
    let omega = 0.5 * (m_clump / r_max.powi(3)).sqrt();
    let mut parts = Vec::new();
    let mut phi = Vec::new();
    for i in 0..n_c as u64 {
        let u = frac * rng::uniform_f64(7, i).max(1e-12);
        let r = a / (u.powf(-2.0 / 3.0) - 1.0).sqrt();
        let s = (r * r + a * a).sqrt();
        let rho = m_clump / frac * 3.0 / (4.0 * PI * a.powi(3)) * (s / a).powi(-5);
        let d = direction(8, i).map(|c| c * r);
        let spin = [-omega * d[1], omega * d[0], 0.0];
        let pos = add(x0, d, 1.0);
        let vel = add(
            add(v0, spin, 1.0),
            direction(9, i),
            0.1 * (m_clump / s).sqrt(),
        );
        parts.push((pos, vel, m, rho, if r < a { 0 } else { 1 }));
        phi.push(-m_clump / s);
    }
    let m_s = 0.5 * m;
    let axis = direction(10, 0);
    for k in 0..n_s {
        let r = 6.0 + 14.0 * k as f64 / n_s as f64;
        let v = 3.0 * (2.0 * m_clump / r).sqrt();
        parts.push((add(x0, axis, r), add(v0, axis, v), m_s, 1e-3, 2));
        phi.push(-m_clump / r);
    }
    let g = gas(parts);
    for phi in [&phi[..], &[]] {
        let o = analyse(&g, phi, 1.0, &[0.0; 3], &OutcomeOptions::default()).unwrap();
        assert!(o.converged, "{} iterations", o.iterations);
        assert!(close(o.remnant.mass, m_clump, 1e-12), "{}", o.remnant.mass);
        assert!(
            close(o.escaping.mass, n_s as f64 * m_s, 1e-12),
            "{}",
            o.escaping.mass
        );
        assert_eq!(o.disk.mass, 0.0);
        let core = g.mat[..n_c].iter().filter(|&&id| id == 0).count() as f64 * m;
        assert!(close(o.remnant.by_material[0], core, 1e-12));
        assert!(close(o.remnant.by_material[1], m_clump - core, 1e-12));
        assert_eq!(o.remnant.by_material[2], 0.0);
        assert_eq!(o.escaping.by_material[..2], [0.0, 0.0]);
        // The bound set's frame is the clump's.
        for k in 0..3 {
            assert!((o.centre[k] - x0[k]).abs() < 0.1, "{:?}", o.centre);
            assert!((o.velocity[k] - v0[k]).abs() < 0.05, "{:?}", o.velocity);
        }
        // The SPH volume of the truncated sphere: radius about 5a (a Monte Carlo estimate).
        assert!((4.0..6.0).contains(&o.radius), "{}", o.radius);
        assert!(o.fate[n_c..].iter().all(|&f| f == Fate::Escaping));
    }
}

/// A uniform clump at rest (radius 1, 1500 particles, iron inside half its radius), a ring of
/// 200 particles on circular orbits at radius 2 (5% of its mass, a hundred times less dense),
/// and 20 particles at rest at radius 3 (1% of its mass, as diffuse as the ring): the ring is the disk; the particles at rest fall onto
/// the clump (periapsis 0) and count as the remnant.
#[test]
fn a_ring_on_circular_orbits_is_the_disk() {
    let (n_c, n_r, n_f) = (1500, 200, 20);
    let m_clump = 2.0;
    let m = m_clump / n_c as f64;
    let rho = m_clump / (4.0 / 3.0 * PI);
    let v_bulk = [0.0, 0.0, 0.25];
    let mut parts = Vec::new();
    for i in 0..n_c as u64 {
        let r = rng::uniform_f64(3, i).cbrt();
        let id = if r < 0.5 { 0 } else { 1 };
        parts.push((direction(4, i).map(|c| c * r), v_bulk, m, rho, id));
    }
    let m_ring = 0.05 * m_clump;
    let r_ring = 2.0;
    let v_circ = (m_clump / r_ring).sqrt();
    for k in 0..n_r {
        let t = 2.0 * PI * k as f64 / n_r as f64;
        let pos = [r_ring * t.cos(), r_ring * t.sin(), 0.0];
        let vel = add(v_bulk, [-t.sin(), t.cos(), 0.0], v_circ);
        parts.push((pos, vel, m_ring / n_r as f64, rho / 100.0, 1));
    }
    let m_fall = 0.01 * m_clump;
    for k in 0..n_f {
        let pos = direction(5, k).map(|c| 3.0 * c);
        parts.push((pos, v_bulk, m_fall / n_f as f64, rho / 100.0, 2));
    }
    let g = gas(parts);
    // The clump's potential (the ring's and the infalling particles' are small): its minimum,
    // where the analysis starts, is the clump's centre.
    let phi: Vec<f64> = g
        .pos
        .iter()
        .map(|p| {
            let r2 = p.iter().map(|c| c * c).sum::<f64>();
            if r2 < 1.0 {
                -m_clump * (3.0 - r2) / 2.0
            } else {
                -m_clump / r2.sqrt()
            }
        })
        .collect();
    let o = analyse(&g, &phi, 1.0, &[rho; 3], &OutcomeOptions::default()).unwrap();
    assert!(o.converged);
    assert!(
        close(o.remnant.mass, m_clump + m_fall, 1e-12),
        "{}",
        o.remnant.mass
    );
    assert!(close(o.disk.mass, m_ring, 1e-12), "{}", o.disk.mass);
    assert_eq!(o.escaping.mass, 0.0);
    assert!(close(o.disk.by_material[1], m_ring, 1e-12));
    assert_eq!(o.disk.by_material[0], 0.0);
    assert!(close(o.remnant.by_material[2], m_fall, 1e-12));
    // The clump's volume and the infalling 1%, whose low density counts at the reference
    // density: radius 1.0033 (at their own density they would add their volume 100 times).
    assert!((o.radius - 1.01f64.cbrt()).abs() < 1e-9, "{}", o.radius);
    assert!(o.fate[n_c..n_c + n_r].iter().all(|&f| f == Fate::Disk));
    // Half the ring's speed: its orbits now dive into the clump, and it is remnant.
    let mut slow = g.clone();
    for v in &mut slow.vel[n_c..n_c + n_r] {
        v[0] *= 0.5;
        v[1] *= 0.5;
    }
    let o = analyse(&slow, &phi, 1.0, &[rho; 3], &OutcomeOptions::default()).unwrap();
    assert!(close(o.remnant.mass, m_clump + m_fall + m_ring, 1e-12));
    assert_eq!(o.disk.mass, 0.0);
}

#[test]
fn bad_sets_are_refused() {
    let g = gas(vec![([0.0; 3], [0.0; 3], 1.0, 0.0, 0)]);
    let e = analyse(&g, &[], 1.0, &[1.0], &OutcomeOptions::default()).unwrap_err();
    assert!(e.to_string().contains("density"), "{e}");
    let g = gas(vec![([0.0; 3], [0.0; 3], 1.0, 1.0, 3)]);
    let e = analyse(&g, &[], 1.0, &[1.0; 2], &OutcomeOptions::default()).unwrap_err();
    assert!(e.to_string().contains("material id 3"), "{e}");
    let e = analyse(&g, &[0.0, 1.0], 1.0, &[1.0; 4], &OutcomeOptions::default()).unwrap_err();
    assert!(e.to_string().contains("2 potentials"), "{e}");
}
