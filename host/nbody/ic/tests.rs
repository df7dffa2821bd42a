//! Tests of the initial conditions.

use super::super::cpu;
use super::disk::*;
use super::*;

fn radii(p: &Particles, t: Option<u8>) -> Vec<f64> {
    let mut r: Vec<f64> = (0..p.len())
        .filter(|&i| t.is_none_or(|t| p.ptype[i] == t))
        .map(|i| p.pos[i].iter().map(|x| x * x).sum::<f64>().sqrt())
        .collect();
    r.sort_by(f64::total_cmp);
    r
}

#[test]
fn plummer_is_in_virial_equilibrium_with_the_analytic_half_mass_radius() {
    let pl = Plummer::henon(8192, 11);
    let p = pl.generate();
    assert_eq!(p.len(), 8192);
    let (k, w) = cpu::energies(&p, 0.0);
    let q = 2.0 * k / w.abs();
    eprintln!("Plummer N = 8192: 2K/|W| = {q:.4}, E = {:.4}", k + w);
    assert!((q - 1.0).abs() < 0.03, "virial ratio {q}");
    // Hénon units: E = −1/4.
    assert!(((k + w) / -0.25 - 1.0).abs() < 0.03, "E = {}", k + w);
    let r = radii(&p, None);
    let half = r[r.len() / 2];
    let want = pl.radius_of_mass_fraction(0.5 * pl.max_mass_fraction);
    assert!((want / pl.scale - 1.305).abs() < 2e-3);
    assert!((half / want - 1.0).abs() < 0.03, "r_half {half} vs {want}");
    // Every particle is bound: below the local escape speed.
    for i in 0..p.len() {
        let r2: f64 = p.pos[i].iter().map(|x| x * x).sum();
        let v2: f64 = p.vel[i].iter().map(|x| x * x).sum();
        assert!(v2 < 2.0 / (r2 + pl.scale * pl.scale).sqrt() * 1.05);
    }
}

#[test]
fn softened_plummer_distribution_function_tends_to_plummers_at_eps_0() {
    // ε → 0: Ψ = GM/sqrt(r² + a²) and f ∝ ℰ^{7/2}. (ε = 1e-3 rather than less: the
    // kernel's kink at r' = r, unresolved by the mass integral, adds noise to Ψ' near the
    // centre as ε → 0.)
    let a = 3.0 * PI / 16.0;
    let df = SoftenedPlummer::new(1.0, a, 1e-3);
    for r in [0.01, 0.3, 1.0, 5.0, 100.0] {
        let want = 1.0 / (r * r + a * a).sqrt();
        assert!((df.psi(r) / want - 1.0).abs() < 1e-4, "Ψ({r})");
    }
    let e0 = 0.5 * df.psi(0.0);
    let c = df.f(e0) / e0.powf(3.5);
    for x in [0.05, 0.2, 0.4, 0.6, 0.8, 0.95] {
        let e = x * df.psi(0.0);
        let ratio = df.f(e) / e.powf(3.5) / c;
        assert!((ratio - 1.0).abs() < 2e-3, "f({x} Ψ₀) / ℰ^3.5: {ratio}");
    }
    // ε = 0.05: the centre is 2.2% shallower than GM/a (not GM/sqrt(a² + ε²)).
    let soft = SoftenedPlummer::new(1.0, a, 0.05);
    let centre = soft.psi(1e-4) * a;
    assert!((centre - 0.978).abs() < 1e-3, "Ψ_ε(0) a / GM = {centre}");
    // Far out the potential is Keplerian.
    assert!((soft.psi(20.0) * 20.0 - 1.0).abs() < 1e-3);
}

/// 2K/|W| with the softened potential, and the largest relative change of the 25/50/75%
/// Lagrangian radii over `t_end` (float64 direct summation, leapfrog at dt = 0.01).
fn softened_run(pl: Plummer, eps: f64, t_end: f64) -> (f64, f64) {
    let p = pl.generate();
    let (k, w) = cpu::energies(&p, eps);
    let f = [0.25, 0.5, 0.75];
    let r0 = cpu::lagrangian_radii(&p, &f);
    let mut sim = cpu::Simulation::new(p, eps, 0.01).unwrap();
    let mut worst: f64 = 0.0;
    for _ in 0..(t_end / 0.25).round() as u64 {
        sim.run(25).unwrap();
        let r = cpu::lagrangian_radii(&sim.particles, &f);
        for (x, x0) in r.iter().zip(&r0) {
            worst = worst.max((x / x0 - 1.0).abs());
        }
    }
    (2.0 * k / w.abs(), worst)
}

/// 2K over the Clausius virial `−Σ m x·a` and over |W|, both with softening `eps`: in
/// equilibrium under softening it is the first that is 1 (`|Σ m x·a| < |W|`).
fn virial_ratios(p: &Particles, eps: f64) -> (f64, f64) {
    let mut acc = vec![[0.0; 3]; p.len()];
    let mut pot = vec![0.0; p.len()];
    cpu::direct_sum(&p.pos, &p.mass, eps, &mut acc, &mut pot);
    let (c, _) = p.centre_of_mass();
    let virial: f64 = (0..p.len())
        .map(|i| {
            p.mass[i]
                * (0..3)
                    .map(|k| (p.pos[i][k] - c[k]) * acc[i][k])
                    .sum::<f64>()
        })
        .sum();
    let (k, w) = cpu::energies(p, eps);
    (2.0 * k / virial.abs(), 2.0 * k / w.abs())
}

#[test]
fn softened_plummer_is_in_virial_equilibrium_in_the_softened_potential() {
    // Mean over 4 seeds of 8192 (one seed scatters by ~0.7%). The unsoftened distribution
    // function gives 2K/|Σ m x·a| = 1.025 at ε = 0.05 (8 seeds: 1.0249; 2K/|W| = 1.0099);
    // the softened one 0.997 (2K/|W| = 0.982, the equilibrium value under softening).
    let mean = |eps: f64| {
        (1..=4)
            .map(|seed| {
                let p = Plummer::henon(8192, seed).softened(eps).generate();
                virial_ratios(&p, 0.05)
            })
            .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / 4.0, b + y / 4.0))
    };
    let (soft, soft_w) = mean(0.05);
    let (hard, hard_w) = mean(0.0);
    eprintln!(
        "ε = 0.05: 2K/|Σ m x·a| = {soft:.4} (2K/|W| = {soft_w:.4}); unsoftened f: {hard:.4} \
         ({hard_w:.4})"
    );
    assert!((soft - 1.0).abs() < 0.01, "softened: 2K/|Σ m x·a| = {soft}");
    assert!(hard - 1.0 > 0.015, "unsoftened: 2K/|Σ m x·a| = {hard}");
}

#[test]
#[ignore = "measurement (minutes): cargo test --release softened_plummer_radii -- --ignored"]
fn softened_plummer_radii_measure() {
    for seed in 1..=4 {
        for eps in [0.0, 0.05] {
            let pl = Plummer::henon(4096, seed).softened(eps);
            let (q, dr) = softened_run(pl, 0.05, 3.0);
            eprintln!("seed {seed}, IC eps {eps}: 2K/|W|_eps = {q:.4}, max |Δr/r| = {dr:.4}");
        }
    }
}

#[test]
fn hernquist_is_in_virial_equilibrium_with_the_analytic_half_mass_radius() {
    let h = Hernquist::new(8192, 1.0, 1.0, 4);
    let p = h.generate();
    let (k, w) = cpu::energies(&p, 0.0);
    let q = 2.0 * k / w.abs();
    eprintln!("Hernquist N = 8192: 2K/|W| = {q:.4}");
    assert!((q - 1.0).abs() < 0.04, "virial ratio {q}");
    let r = radii(&p, None);
    let half = r[r.len() / 2];
    let want = h.radius_of_mass_fraction(0.5 * h.max_mass_fraction);
    assert!((h.radius_of_mass_fraction(0.5) - (1.0 + 2f64.sqrt())).abs() < 1e-12);
    assert!((half / want - 1.0).abs() < 0.04, "r_half {half} vs {want}");
}

#[test]
fn hernquist_velocity_dispersion_matches_its_analytic_jeans_solution() {
    // The DF's second moment must be the isotropic Jeans σ² (Hernquist 1990, eq. 10) in each
    // radial shell: a check of the DF and the rejection sampler that the virial ratio alone
    // (a global average) would not catch.
    let p = Hernquist::new(20_000, 1.0, 1.0, 8).generate();
    let jeans = |r: f64| {
        // σ_r² = GM/(12a) {12 r(r+a)³/a⁴ ln((r+a)/r) − r/(r+a) [25 + 52 r/a + 42 (r/a)² +
        // 12 (r/a)³]}, here GM = a = 1.
        let x = r;
        (12.0 * x * (1.0 + x).powi(3) * ((1.0 + x) / x).ln()
            - x / (1.0 + x) * (25.0 + 52.0 * x + 42.0 * x * x + 12.0 * x * x * x))
            / 12.0
    };
    for (lo, hi) in [(0.2, 0.4), (0.8, 1.2), (2.0, 3.0)] {
        let mut sum = 0.0;
        let mut n = 0;
        for i in 0..p.len() {
            let r = p.pos[i].iter().map(|x| x * x).sum::<f64>().sqrt();
            if r >= lo && r < hi {
                sum += p.vel[i].iter().map(|v| v * v).sum::<f64>() / 3.0;
                n += 1;
            }
        }
        let got = sum / n as f64;
        let mid = 0.5 * (lo + hi);
        let want = jeans(mid);
        assert!(
            (got / want - 1.0).abs() < 0.08,
            "shell [{lo}, {hi}): σ² {got} vs {want} (n = {n})"
        );
    }
}

#[test]
fn generators_are_reproducible_and_seeded() {
    let a = Plummer::henon(500, 1).generate();
    assert_eq!(a, Plummer::henon(500, 1).generate());
    assert_eq!(a, Plummer::henon(500, 1).softened(0.0).generate());
    assert_ne!(a.pos, Plummer::henon(500, 2).generate().pos);
    let s = Plummer::henon(500, 1).softened(0.05);
    assert_eq!(s.generate(), s.generate());
    assert_ne!(s.generate().vel, a.vel);
    let t0 = std::time::Instant::now();
    let big = Plummer::henon(1 << 20, 1).softened(0.05).generate();
    eprintln!(
        "Plummer 2^20 at ε = 0.05: {:.2} s",
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(big.len(), 1 << 20);
    let g = DiskGalaxy {
        n_halo: 300,
        n_disk: 200,
        ..DiskGalaxy::default()
    };
    assert_eq!(g.generate(), g.generate());
    let g2 = DiskGalaxy { seed: 2, ..g };
    assert_ne!(g.generate().pos, g2.generate().pos);
}

#[test]
fn bessel_functions_match_tabulated_values() {
    // A&S table 9.8: I₀(1) = 1.266065878, I₁(1) = 0.565159104, K₀(1) = 0.421024438,
    // K₁(1) = 0.601907230; at x = 5: I₀ = 27.23987182, K₁ = 4.044613445e-3.
    let [i0, i1, k0, k1] = bessel_scaled(1.0);
    let e = 1f64.exp();
    for (got, want) in [
        (i0 * e, 1.266065878),
        (i1 * e, 0.565159104),
        (k0 / e, 0.421024438),
        (k1 / e, 0.601907230),
    ] {
        assert!((got / want - 1.0).abs() < 1e-6, "{got} vs {want}");
    }
    let [i0, _, _, k1] = bessel_scaled(5.0);
    assert!((i0 * 5f64.exp() / 27.23987182 - 1.0).abs() < 1e-6);
    assert!((k1 / 5f64.exp() / 4.044613445e-3 - 1.0).abs() < 1e-6);
}

#[test]
fn exponential_disk_rotation_curve() {
    // Disk alone (a negligible halo): Freeman's curve peaks at R ≈ 2.15 h with
    // v_max ≈ 0.622 sqrt(GM/h), and is Keplerian far out.
    let g = DiskGalaxy {
        halo: Halo::Hernquist {
            mass: 1e-12,
            scale: 1.0,
            max_mass_fraction: 0.5,
        },
        ..DiskGalaxy::default()
    };
    let peak = (1..400)
        .map(|k| k as f64 * 0.01)
        .max_by(|a, b| g.circular_speed(*a).total_cmp(&g.circular_speed(*b)))
        .unwrap();
    assert!((peak - 2.15).abs() < 0.02, "peak at {peak}");
    let vmax = g.circular_speed(peak);
    assert!((vmax / 0.6222 - 1.0).abs() < 0.005, "v_max {vmax}");
    let far = 30.0;
    let v2 = g.circular_speed(far).powi(2);
    assert!(
        (v2 * far - 1.0).abs() < 0.01,
        "Keplerian far out: {}",
        v2 * far
    );
}

#[test]
fn disk_galaxy_has_the_requested_mass_scale_length_and_toomre_q() {
    let g = DiskGalaxy {
        n_halo: 20_000,
        n_disk: 40_000,
        bulge: Some(Bulge {
            n: 2000,
            mass: 0.2,
            scale: 0.2,
        }),
        toomre_q: 1.2,
        ..DiskGalaxy::default()
    };
    let p = g.generate();
    assert_eq!(p.count_by_type(), [0, 20_000, 40_000, 2000, 0, 0]);
    assert!(p.ptype.windows(2).all(|w| w[0] <= w[1]), "ordered by type");
    let ids: std::collections::HashSet<u64> = p.id.iter().copied().collect();
    assert_eq!(ids.len(), p.len());
    let mass_of = |t: u8| p.of_type(t).map(|i| p.mass[i]).sum::<f64>();
    assert!((mass_of(DISK) - 1.0).abs() < 1e-9);
    assert!((mass_of(BULGE) - 0.99 * 0.2).abs() < 1e-9);
    assert!((p.total_mass() - g.total_mass()).abs() < 1e-9);
    // Cylindrical coordinates about the disk's centre (the set is in its centre-of-mass
    // frame; the disk's own centre differs only by noise).
    let disk: Vec<usize> = p.of_type(DISK).collect();
    let cyl = |i: usize| {
        let [x, y, z] = p.pos[i];
        let [vx, vy, vz] = p.vel[i];
        let r = x.hypot(y);
        (r, z, (x * vx + y * vy) / r, (x * vy - y * vx) / r, vz)
    };
    // Mean radius of an exponential disk (cut at 10 h) is 2h; median |z| is z₀·atanh(1/2).
    let mean_r = disk.iter().map(|&i| cyl(i).0).sum::<f64>() / disk.len() as f64;
    assert!((mean_r / 2.0 - 1.0).abs() < 0.02, "mean R {mean_r}");
    let mut z: Vec<f64> = disk.iter().map(|&i| cyl(i).1.abs()).collect();
    z.sort_by(f64::total_cmp);
    let want_z = 0.1 * 0.5f64.atanh();
    assert!((z[z.len() / 2] / want_z - 1.0).abs() < 0.04, "median |z|");
    // Toomre Q from the particles in rings, κ from the model.
    for (lo, hi) in [(1.0, 1.5), (2.0, 2.5), (3.0, 3.5)] {
        let ring: Vec<_> = disk
            .iter()
            .map(|&i| cyl(i))
            .filter(|c| c.0 >= lo && c.0 < hi)
            .collect();
        let n = ring.len() as f64;
        let sigma_density = n * p.mass[disk[0]] / (PI * (hi * hi - lo * lo));
        let mean_vr = ring.iter().map(|c| c.2).sum::<f64>() / n;
        let sigma_r = (ring.iter().map(|c| (c.2 - mean_vr).powi(2)).sum::<f64>() / n).sqrt();
        let q = sigma_r * g.kappa(0.5 * (lo + hi)) / (3.36 * sigma_density);
        eprintln!("disk ring [{lo}, {hi}): Q = {q:.3} (n = {n})");
        assert!((q / 1.2 - 1.0).abs() < 0.1, "ring [{lo}, {hi}): Q = {q}");
        // The disk rotates at close to (below) the circular speed.
        let vphi = ring.iter().map(|c| c.3).sum::<f64>() / n;
        let vc = g.circular_speed(0.5 * (lo + hi));
        assert!(vphi < vc && vphi > 0.8 * vc, "v_φ {vphi} vs v_c {vc}");
    }
    // Roughly in equilibrium as a whole (fewer particles: the direct sum is O(N²)).
    let small = DiskGalaxy {
        n_halo: 6000,
        n_disk: 3000,
        bulge: Some(Bulge {
            n: 500,
            ..g.bulge.unwrap()
        }),
        ..g
    };
    let (k, w) = cpu::energies(&small.generate(), 0.01);
    let q = 2.0 * k / w.abs();
    eprintln!("disk galaxy: 2K/|W| = {q:.3}");
    assert!((q - 1.0).abs() < 0.1, "virial ratio {q}");
}

#[test]
fn nfw_halo_is_truncated_at_r200_with_its_mass() {
    let g = DiskGalaxy {
        halo: Halo::Nfw {
            m200: 20.0,
            r200: 60.0,
            concentration: 10.0,
        },
        n_halo: 20_000,
        n_disk: 1000,
        ..DiskGalaxy::default()
    };
    let p = g.generate();
    let r = radii(&p, Some(HALO));
    assert!(*r.last().unwrap() < 61.0);
    let halo_mass: f64 = p.of_type(HALO).map(|i| p.mass[i]).sum();
    assert!((halo_mass - 20.0).abs() < 1e-9);
    // Half of M₂₀₀ inside the radius solving m(x) = m(c)/2.
    let want = Sphere::Nfw {
        rho0: 1.0,
        rs: 6.0,
        rmax: 60.0,
    }
    .radius(0.5, 60.0);
    let half = r[r.len() / 2];
    assert!((half / want - 1.0).abs() < 0.04, "{half} vs {want}");
}

#[test]
fn kepler_orbit_has_the_requested_pericentre_and_energy() {
    for e in [0.5, 1.0, 1.5] {
        let (x, v) = kepler_orbit(2.0, 1.0, e, 2.5).unwrap();
        let r = x.iter().map(|c| c * c).sum::<f64>().sqrt();
        let v2 = v.iter().map(|c| c * c).sum::<f64>();
        assert!((r - 2.5).abs() < 1e-12);
        // Specific energy v²/2 − M/r = M(e − 1)/(2 rp).
        let energy = 0.5 * v2 - 2.0 / r;
        assert!((energy - (e - 1.0)).abs() < 1e-12, "e = {e}: E {energy}");
        // Angular momentum sqrt(M rp (1 + e)); approaching (radial velocity < 0).
        let l = x[0] * v[1] - x[1] * v[0];
        assert!((l - (2.0 * (1.0 + e)).sqrt()).abs() < 1e-12);
        assert!(x[0] * v[0] + x[1] * v[1] < 0.0);
    }
    assert!(
        kepler_orbit(1.0, 2.0, 1.0, 1.0).is_err(),
        "inside pericentre"
    );
    assert!(
        kepler_orbit(1.0, 1.0, 0.5, 10.0).is_err(),
        "beyond apocentre"
    );
}

#[test]
fn encounter_places_two_galaxies_on_a_parabolic_orbit() {
    let small = DiskGalaxy {
        n_halo: 2000,
        n_disk: 1000,
        ..DiskGalaxy::default()
    };
    let enc = Encounter {
        primary: small,
        mass_ratio: 0.5,
        ..Encounter::default()
    };
    let p = enc.generate();
    let n1 = 3000;
    assert_eq!(p.len(), 3000 + 1500);
    assert!(p.ptype.windows(2).all(|w| w[0] <= w[1]));
    let mut ids = p.id.clone();
    ids.sort_unstable();
    assert_eq!(ids, (1..=4500).collect::<Vec<u64>>());
    // Each galaxy's centre of mass, separated by `separation`, on a zero-energy orbit.
    let part = |first: bool| {
        let mut g = Particles::default();
        for i in 0..p.len() {
            if (p.id[i] <= n1) == first {
                g.push(p.pos[i], p.vel[i], p.mass[i], p.id[i], p.ptype[i]);
            }
        }
        g
    };
    let (g1, g2) = (part(true), part(false));
    let (m1, m2) = (g1.total_mass(), g2.total_mass());
    assert!((m2 / m1 - 0.5).abs() < 1e-3);
    let (x1, v1) = g1.centre_of_mass();
    let (x2, v2) = g2.centre_of_mass();
    let d: f64 = (0..3).map(|k| (x2[k] - x1[k]).powi(2)).sum::<f64>().sqrt();
    assert!((d - 40.0).abs() < 1e-9, "separation {d}");
    let dv2: f64 = (0..3).map(|k| (v2[k] - v1[k]).powi(2)).sum();
    assert!((0.5 * dv2 - (m1 + m2) / d).abs() < 1e-9, "parabolic");
    let (xc, vc) = p.centre_of_mass();
    assert!(xc.iter().chain(&vc).all(|c| c.abs() < 1e-12));
    // The second disk's spin is inclined by 60° to the orbit's normal (+z).
    let spin = |g: &Particles| {
        let (c, u) = g.centre_of_mass();
        let mut l = [0.0; 3];
        for i in g.of_type(DISK) {
            let x: Vec<f64> = (0..3).map(|k| g.pos[i][k] - c[k]).collect();
            let v: Vec<f64> = (0..3).map(|k| g.vel[i][k] - u[k]).collect();
            l[0] += x[1] * v[2] - x[2] * v[1];
            l[1] += x[2] * v[0] - x[0] * v[2];
            l[2] += x[0] * v[1] - x[1] * v[0];
        }
        l[2] / l.iter().map(|c| c * c).sum::<f64>().sqrt()
    };
    assert!(spin(&g1) > 0.99);
    assert!((spin(&g2) - 0.5).abs() < 0.05, "cos i = {}", spin(&g2));
}
