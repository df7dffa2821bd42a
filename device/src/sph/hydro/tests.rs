use super::*;
use crate::sph::{CUBIC_SPLINE, WENDLAND_C2};
use std::vec::Vec;

const KERNELS: [u32; 2] = [CUBIC_SPLINE, WENDLAND_C2];

/// `∫ 4π r² W(r, h) dr` over the support by composite Simpson.
fn volume_integral(kernel: u32, h: f64) -> f64 {
    let n = 2000;
    let dr = h / n as f64;
    let f = |r: f64| 4.0 * core::f64::consts::PI * r * r * w(kernel, r, h);
    let mut s = f(0.0) + f(h);
    for i in 1..n {
        s += if i % 2 == 1 { 4.0 } else { 2.0 } * f(i as f64 * dr);
    }
    s * dr / 3.0
}

#[test]
fn kernels_are_normalised() {
    for k in KERNELS {
        for h in [0.3, 1.0, 2.5] {
            let v = volume_integral(k, h);
            assert!((v - 1.0).abs() < 1e-9, "kernel {k}, h {h}: ∫W = {v}");
        }
    }
}

#[test]
fn derivatives_match_finite_differences() {
    let e = 1e-6f64;
    for k in KERNELS {
        let h = 1.3f64;
        // Away from the spline's knot at q = ½ and the edge, where W is only C².
        for q in [0.05f64, 0.2, 0.37, 0.61, 0.8, 0.95] {
            let r = q * h;
            let fd_r = (w(k, r + e, h) - w(k, r - e, h)) / (2.0 * e);
            let fd_h = (w(k, r, h + e) - w(k, r, h - e)) / (2.0 * e);
            assert!((dw_dr(k, r, h) - fd_r).abs() < 1e-7, "∂W/∂r k {k} q {q}");
            assert!((dw_dh(k, r, h) - fd_h).abs() < 1e-7, "∂W/∂h k {k} q {q}");
        }
        assert_eq!(dw_dr(k, h, h), 0.0);
        assert_eq!(dw_dh(k, 1.2 * h, h), 0.0);
        // The gradient against a 3D central difference of W(|x|).
        let x = [0.31f64, -0.22, 0.4];
        let r = dot(x, x).sqrt();
        let g = grad_w(k, x, r, h);
        for a in 0..3 {
            let mut p = x;
            let mut m = x;
            p[a] += e;
            m[a] -= e;
            let fd = (w(k, dot(p, p).sqrt(), h) - w(k, dot(m, m).sqrt(), h)) / (2.0 * e);
            assert!(
                (g[a] - fd).abs() < 1e-7,
                "∇W k {k} axis {a}: {} vs {fd}",
                g[a]
            );
        }
        assert_eq!(grad_w(k, [0.0; 3], 0.0, h), [0.0; 3]);
    }
}

#[test]
fn float32_matches_float64() {
    for k in KERNELS {
        for q in [0.1f64, 0.45, 0.55, 0.9] {
            let (a, b) = (dw_dh(k, q, 1.0), dw_dh(k, q as f32, 1.0f32) as f64);
            assert!((a - b).abs() < 1e-6 * a.abs().max(1.0), "k {k} q {q}");
        }
    }
}

/// Particles of a jittered lattice around the origin (a deterministic generator).
fn cloud() -> Vec<([f64; 3], f64)> {
    let mut s = 12345u64;
    let mut rnd = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut v = Vec::new();
    for i in -4..=4 {
        for j in -4..=4 {
            for l in -4..=4 {
                let p = [
                    0.1 * i as f64 + 0.03 * (rnd() - 0.5),
                    0.1 * j as f64 + 0.03 * (rnd() - 0.5),
                    0.1 * l as f64 + 0.03 * (rnd() - 0.5),
                ];
                v.push((p, 1.0 + 0.5 * rnd()));
            }
        }
    }
    v
}

fn density_at(k: u32, h: f64, parts: &[([f64; 3], f64)]) -> DensitySum<f64> {
    let mut d = DensitySum::ZERO;
    for (p, m) in parts {
        let dx = [-p[0], -p[1], -p[2]];
        d.add(k, h, dx, dot(dx, dx).sqrt(), [0.0; 3], *m);
    }
    d
}

#[test]
fn grad_h_term_matches_finite_differences() {
    let parts = cloud();
    for k in KERNELS {
        let h = 0.27;
        let e = 1e-6;
        let d = density_at(k, h, &parts);
        let fd = (density_at(k, h + e, &parts).rho - density_at(k, h - e, &parts).rho) / (2.0 * e);
        assert!(
            (d.drho_dh - fd).abs() < 1e-6 * fd.abs(),
            "k {k}: {} vs {fd}",
            d.drho_dh
        );
        let f = grad_h_factor(h, d.rho, d.drho_dh);
        // A smooth, nearly uniform cloud: ρ barely depends on h, so f is close to 1.
        assert!((f - 1.0).abs() < 0.2, "f = {f}");
        // The residual's derivative is the derivative of the residual.
        let m = 1.2;
        let n = 50.0;
        let (g, dg) = h_residual(h, d.rho, d.drho_dh, m, n);
        let gp = h_residual(h + e, density_at(k, h + e, &parts).rho, 0.0, m, n).0;
        let gm = h_residual(h - e, density_at(k, h - e, &parts).rho, 0.0, m, n).0;
        assert!(
            (dg - (gp - gm) / (2.0 * e)).abs() < 1e-6 * dg.abs(),
            "g' k {k}"
        );
        assert!(g.is_finite());
    }
}

#[test]
fn velocity_derivatives_of_linear_fields() {
    // v = A x with A = expansion 0.7 I plus a rotation of rate ω about z: ∇·v = 2.1,
    // |∇×v| = 2ω; SPH's estimates of a linear field are close on a regular cloud.
    let parts = cloud();
    let omega = 0.4;
    let vel = |p: [f64; 3]| {
        [
            0.7 * p[0] - omega * p[1],
            0.7 * p[1] + omega * p[0],
            0.7 * p[2],
        ]
    };
    for k in KERNELS {
        let h = 0.3;
        let mut d = DensitySum::ZERO;
        for (p, m) in &parts {
            let dx = [-p[0], -p[1], -p[2]];
            let v = vel(*p);
            d.add(k, h, dx, dot(dx, dx).sqrt(), [-v[0], -v[1], -v[2]], *m);
        }
        assert!((d.div_v() - 2.1).abs() < 0.15, "div {}", d.div_v());
        assert!(
            (d.curl_v() - 2.0 * omega).abs() < 0.1,
            "curl {}",
            d.curl_v()
        );
    }
}

fn side(h: f64, rho: f64, p: f64, c: f64) -> ForceSide<f64> {
    ForceSide {
        h,
        rho,
        pf: 0.9 * p / (rho * rho),
        c,
        alpha: 0.8,
        balsara: 0.7,
        p,
        u: p / (0.4 * rho),
        alpha_u: 1.0,
    }
}

#[test]
fn pair_terms_are_antisymmetric_and_dissipative() {
    let a = side(0.3, 1.1, 2.0, 1.4);
    let b = side(0.25, 0.9, 1.5, 1.2);
    let dx = [0.1, -0.05, 0.07];
    // Approaching (dv · dx < 0): viscosity acts.
    let dv = [-0.8, 0.3, -0.2];
    for k in KERNELS {
        let ij = pair_terms(k, dx, dv, &a, &b);
        let ji = pair_terms(k, dx.map(|x| -x), dv.map(|x| -x), &b, &a);
        assert_eq!(ij.acc, ji.acc.map(|x| -x), "momentum to the bit");
        assert_eq!(ij.vsig, ji.vsig);
        // Energy: v_i · a_i + v_j · a_j + du_i + du_j per unit mass² is zero: pressure work and
        // viscous heating are the kinetic energy's exchange with the thermal one.
        let (vi, vj) = ([0.3, 0.1, 0.0], [1.1, -0.2, 0.2]);
        let de = |p: &ForceSide<f64>, q: &ForceSide<f64>| {
            let ij = pair_terms(k, dx, dv, p, q);
            let ji = pair_terms(k, dx.map(|x| -x), dv.map(|x| -x), q, p);
            dot(vi, ij.acc) + dot(vj, ji.acc) + ij.du + ji.du
        };
        assert!(
            de(&a, &b).abs() < 1e-9,
            "viscosity acts: dE = {}",
            de(&a, &b)
        );
        let (a0, b0) = (ForceSide { alpha: 0.0, ..a }, ForceSide { alpha: 0.0, ..b });
        assert!(de(&a0, &b0).abs() < 1e-12);
        // Conduction moves heat out of the hotter particle (a, per unit mass).
        let (an, bn) = (
            ForceSide { alpha_u: 0.0, ..a0 },
            ForceSide { alpha_u: 0.0, ..b0 },
        );
        let cond = pair_terms(k, dx, dv, &a0, &b0).du - pair_terms(k, dx, dv, &an, &bn).du;
        assert!(a.u > b.u && cond < 0.0, "conduction {cond}");
        assert!(de(&an, &bn).abs() < 1e-12);
        // Viscosity heats: the pair's du grows with α.
        let heat = |p: &ForceSide<f64>, q: &ForceSide<f64>| {
            pair_terms(k, dx, dv, p, q).du + pair_terms(k, dx.map(|x| -x), dv.map(|x| -x), q, p).du
        };
        assert!(heat(&a, &b) > heat(&a0, &b0));
        // Receding: no viscosity, v_sig = c_i + c_j.
        let rec = pair_terms(k, dx, dv.map(|x| -x), &a, &b);
        assert_eq!(rec.vsig, a.c + b.c);
        assert!(ij.vsig > a.c + b.c);
    }
}

#[test]
fn ideal_gas_and_switches() {
    let g = Material::IdealGas(IdealGas {
        gamma: 5.0f64 / 3.0,
    });
    let (rho, u) = (2.0f64, 1.5f64);
    let p = g.pressure(rho, u);
    assert!((p - 2.0).abs() < 1e-14);
    let c = g.sound_speed(rho, u);
    assert!((c * c - 5.0 / 3.0 * p / rho).abs() < 1e-14);
    let Material::IdealGas(ig) = g else {
        panic!("built as an ideal gas")
    };
    assert!((ig.energy(rho, p) - u).abs() < 1e-14);
    // Balsara: pure compression → 1, pure shear → 0.
    assert!(balsara(-3.0f64, 0.0, 1.0, 0.1) > 0.999);
    assert!(balsara(0.0f64, 3.0, 1.0, 0.1) < 1e-12);
    // Morris–Monaghan: decays above the floor, grows in compression.
    let v = Viscosity {
        alpha_min: 0.1f64,
        alpha_max: 2.0,
        decay: 0.1,
        balsara: true,
    };
    assert!(alpha_rate(1.0, 0.0, 1.0, 0.1, &v) < 0.0);
    assert!(alpha_rate(0.1, -5.0, 1.0, 0.1, &v) > 0.0);
    assert_eq!(alpha_rate(0.1, 5.0, 1.0, 0.1, &v), 0.0);
    assert!((cfl_dt(0.3f64, 0.1, 3.0) - 0.01).abs() < 1e-15);
}

#[test]
fn h_search_converges_to_the_kernel_mass_and_stops_at_the_limit() {
    use super::hsearch::{H_CONVERGED, H_ITERATING, H_TOO_LARGE};
    // A medium whose density falls with the kernel's size, ρ(h) = ρ₀ (h₀/h)^½: the root of
    // (4π/3) h³ ρ(h) = N m is h₀ (N m / ((4π/3) ρ₀ h₀³))^(2/5).
    let (rho0, h0, m, n) = (2.0f64, 0.1, 1e-4, 50.0);
    let rho = |h: f64| rho0 * (h0 / h).sqrt();
    let drho = |h: f64| -0.5 * rho(h) / h;
    let root = h0 * (n * m / (FOUR_THIRDS_PI * rho0 * h0.powi(3))).powf(0.4);
    let lim = HLimits {
        n_ngb: n,
        tol: 1e-10,
        h_max: f64::INFINITY,
        collapse: 1e-14,
        max_steps: 100,
    };
    for start in [0.01 * root, 0.7 * root, 5.0 * root] {
        let mut s = HSearch::start(start, &lim);
        while s.status == H_ITERATING {
            s.update(rho(s.h), drho(s.h), m, &lim);
        }
        assert_eq!(s.status, H_CONVERGED, "from {start}");
        assert!((s.h / root - 1.0).abs() < 1e-9, "{} vs {root}", s.h);
        assert!(s.steps < 20, "{} steps", s.steps);
    }
    // Below the root, the limit stops it.
    let capped = HLimits {
        h_max: 0.5 * root,
        ..lim
    };
    let mut s = HSearch::start(0.1 * root, &capped);
    while s.status == H_ITERATING {
        s.update(rho(s.h), drho(s.h), m, &capped);
    }
    assert_eq!(s.status, H_TOO_LARGE);
}
