//! The two-body backtrack: integrated forward numerically it returns to the contact point and
//! speed (parabolic, hyperbolic and bound orbits); a start at a given separation lies on the
//! conic of the library's `kepler_orbit`; and the refusals.

use super::orbit::{Contact, OrbitError, State, centre_of_mass_frame, mutual_escape_speed};
use crate::nbody::ic::kepler_orbit;
use crate::planet::G_SI;
use crate::planet::cli::EARTH_MASS;

/// The demo's bodies: 0.887 and 0.133 Earth masses, radii about 1 and 0.566 Earth radii.
const M: (f64, f64) = (0.887 * EARTH_MASS, 0.133 * EARTH_MASS);
const R: (f64, f64) = (6.371e6, 0.566 * 6.371e6);

fn contact(b: f64, v_over_esc: f64) -> Contact {
    let v_esc = mutual_escape_speed(G_SI, M.0, M.1, R.0, R.1);
    Contact::new(G_SI, M, R, b, v_over_esc * v_esc).unwrap()
}

fn norm(v: [f64; 3]) -> f64 {
    v.iter().map(|c| c * c).sum::<f64>().sqrt()
}

/// Fourth-order Runge–Kutta of the relative two-body problem `r'' = −μ r/|r|³`, `steps` steps
/// over `t`: independent of the universal-variable solution it checks.
fn integrate(mu: f64, s: State, t: f64, steps: usize) -> State {
    let acc = |r: [f64; 3]| {
        let d = norm(r);
        r.map(|c| -mu * c / (d * d * d))
    };
    let add = |a: [f64; 3], b: [f64; 3], k: f64| -> [f64; 3] {
        core::array::from_fn(|i| a[i] + k * b[i])
    };
    let h = t / steps as f64;
    let (mut r, mut v) = (s.pos, s.vel);
    for _ in 0..steps {
        let (k1r, k1v) = (v, acc(r));
        let (k2r, k2v) = (add(v, k1v, 0.5 * h), acc(add(r, k1r, 0.5 * h)));
        let (k3r, k3v) = (add(v, k2v, 0.5 * h), acc(add(r, k2r, 0.5 * h)));
        let (k4r, k4v) = (add(v, k3v, h), acc(add(r, k3r, h)));
        r = core::array::from_fn(|i| {
            r[i] + h / 6.0 * (k1r[i] + 2.0 * k2r[i] + 2.0 * k3r[i] + k4r[i])
        });
        v = core::array::from_fn(|i| {
            v[i] + h / 6.0 * (k1v[i] + 2.0 * k2v[i] + 2.0 * k3v[i] + k4v[i])
        });
    }
    State { pos: r, vel: v }
}

#[test]
fn the_backtrack_integrated_forward_returns_to_contact() {
    // Parabolic (the demo), hyperbolic, and bound with the start well before its apoapsis.
    for (b, v, t) in [
        (0.5f64.sqrt(), 1.0, 3600.0),
        (0.3, 1.5, 5000.0),
        (0.5, 0.8, 1800.0),
    ] {
        let c = contact(b, v);
        let start = c.before(t).unwrap();
        // Far from contact at the start, approaching.
        let d = norm(start.pos);
        assert!(d > 1.5 * c.r_c, "b {b}, v {v}: separation {d}");
        let end = integrate(c.mu, start, t, 20_000);
        let want = c.state();
        let dx: f64 = norm(core::array::from_fn(|k| end.pos[k] - want.pos[k]));
        let dv: f64 = norm(core::array::from_fn(|k| end.vel[k] - want.vel[k]));
        assert!(dx < 1e-8 * c.r_c, "b {b}, v {v}: position off by {dx} m");
        assert!(dv < 1e-8 * c.v_c, "b {b}, v {v}: velocity off by {dv} m/s");
        // The contact's impact parameter and speed, from the integrated state.
        let h = end.pos[0] * end.vel[1] - end.pos[1] * end.vel[0];
        assert!((h / (norm(end.pos) * norm(end.vel)) - b).abs() < 1e-8);
        assert!((norm(end.vel) / c.v_c - 1.0).abs() < 1e-9);
    }
}

#[test]
fn a_start_at_a_separation_lies_on_the_conic() {
    for (b, v) in [(0.5f64.sqrt(), 1.0), (0.3, 1.5), (0.5, 0.8)] {
        let c = contact(b, v);
        let d = 2.5 * c.r_c;
        let (t, s) = c.at_separation(d).unwrap();
        assert!((norm(s.pos) / d - 1.0).abs() < 1e-12, "{}", norm(s.pos));
        assert!(t > 0.0);
        assert_eq!(c.before(t).unwrap(), s);
        // The library's conic at the same separation: same speed and radial velocity.
        let h = c.r_c * c.v_c * b;
        let energy = 0.5 * c.v_c * c.v_c - c.mu / c.r_c;
        let e = (1.0 + 2.0 * energy * h * h / (c.mu * c.mu)).sqrt();
        let rp = h * h / c.mu / (1.0 + e);
        let (x, u) = kepler_orbit(c.mu, rp, e, d).unwrap();
        let radial = |p: [f64; 3], w: [f64; 3]| (0..3).map(|k| p[k] * w[k]).sum::<f64>() / norm(p);
        assert!((norm(u) / norm(s.vel) - 1.0).abs() < 1e-9, "b {b}, v {v}");
        assert!((radial(x, u) / radial(s.pos, s.vel) - 1.0).abs() < 1e-7);
        assert!(radial(s.pos, s.vel) < 0.0);
    }
}

#[test]
fn the_centre_of_mass_frame_has_no_momentum() {
    let c = contact(0.7, 1.0);
    let rel = c.before(3600.0).unwrap();
    let (t, i) = centre_of_mass_frame(M.0, M.1, &rel);
    for k in 0..3 {
        assert!((M.0 * t.pos[k] + M.1 * i.pos[k]).abs() < 1e-9 * M.0 * c.r_c);
        assert!((M.0 * t.vel[k] + M.1 * i.vel[k]).abs() < 1e-9 * M.0 * c.v_c);
        assert!((i.pos[k] - t.pos[k] - rel.pos[k]).abs() < 1e-9 * c.r_c);
    }
}

#[test]
fn bad_impacts_are_refused() {
    let v = mutual_escape_speed(G_SI, M.0, M.1, R.0, R.1);
    let new = |b: f64, v: f64| Contact::new(G_SI, M, R, b, v);
    assert_eq!(new(1.0, v), Err(OrbitError::ImpactParameter(1.0)));
    assert_eq!(new(-0.1, v), Err(OrbitError::ImpactParameter(-0.1)));
    assert_eq!(new(0.5, -v), Err(OrbitError::Speed(-v)));
    assert_eq!(new(0.5, 0.0), Err(OrbitError::Speed(0.0)));
    assert!(matches!(
        Contact::new(G_SI, (M.0, -1.0), R, 0.5, v),
        Err(OrbitError::Body { .. })
    ));
    let c = new(0.5, v).unwrap();
    assert!(matches!(
        c.at_separation(0.9 * c.r_c),
        Err(OrbitError::Overlap { .. })
    ));
    assert_eq!(c.before(-1.0), Err(OrbitError::Time(-1.0)));
    // A bound orbit: no start beyond its apoapsis, nor before it in time.
    let bound = new(0.5, 0.8 * v).unwrap();
    assert!(matches!(
        bound.at_separation(10.0 * c.r_c),
        Err(OrbitError::BeyondApoapsis { .. })
    ));
    let e = bound.before(1e5).unwrap_err();
    let OrbitError::BeforeApoapsis { max, .. } = e else {
        panic!("{e}")
    };
    assert!(max > 1800.0 && max < 1e5, "{max}");
    bound.before(0.99 * max).unwrap();
}
