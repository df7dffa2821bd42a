use super::*;

const EARTH_MASS: f64 = 5.972e24;

fn one(material: Tillotson<f64>, mass: f64) -> Planet {
    Planet {
        mass,
        layers: vec![Layer {
            material,
            mass_fraction: 1.0,
        }],
    }
}

pub(super) fn earth_like() -> Planet {
    Planet {
        mass: EARTH_MASS,
        layers: vec![
            Layer {
                material: Tillotson::IRON,
                mass_fraction: 0.3,
            },
            Layer {
                material: Tillotson::GRANITE,
                mass_fraction: 0.7,
            },
        ],
    }
}

/// The cold adiabat: u = 0 and P = 0 at ρ₀, `du/dρ = P/ρ²` along it (a finite difference of
/// the table against the pressure), and the pressure increasing.
#[test]
fn the_cold_adiabat_is_an_adiabat() {
    for m in [Tillotson::IRON, Tillotson::GRANITE, Tillotson::BASALT] {
        let a = Adiabat::cold(&m);
        assert_eq!((a.rho[0], a.u[0]), (m.rho_0, 0.0));
        assert!(a.p[0].abs() <= m.p_min.max(1e-6), "P(ρ₀, 0) = {}", a.p[0]);
        // From the 97th point on: next to ρ₀ the slope itself is of the order of the spacing, and
        // the central difference's error is relatively first order there.
        for k in (97..TABLE - 1).step_by(97) {
            let du = (a.u[k + 1] - a.u[k - 1]) / (a.rho[k + 1] - a.rho[k - 1]);
            let want = a.p[k] / (a.rho[k] * a.rho[k]);
            assert!(
                (du - want).abs() <= 1e-4 * want,
                "point {k}: {du} against {want}"
            );
        }
        assert!(
            a.p.windows(2).all(|w| w[1] > w[0]),
            "pressure not increasing"
        );
    }
}

/// A small body hardly compresses: the uniform sphere's radius `(3M/4πρ₀)^{1/3}` and central
/// pressure `(2π/3) G ρ₀² R²`, to the compression `P/A` (about 10⁻⁴ at its centre).
#[test]
fn a_small_body_is_the_uniform_sphere() {
    let m = 1e18;
    let p = one(Tillotson::GRANITE, m).profile(G_SI, 4000).unwrap();
    let rho0 = Tillotson::GRANITE.rho_0;
    let r = (3.0 * m / (4.0 * PI * rho0)).cbrt();
    let pc = 2.0 * PI / 3.0 * G_SI * rho0 * rho0 * r * r;
    let (got_r, got_pc) = (p.radius(), p.p[0]);
    println!("R {got_r:.6e} against {r:.6e}; P_c {got_pc:.6e} against {pc:.6e}");
    assert!(
        got_r < r && r - got_r < 1e-4 * r,
        "radius {got_r} against {r}"
    );
    assert!(
        (got_pc - pc).abs() < 1e-3 * pc,
        "central pressure {got_pc} against {pc}"
    );
    assert!(p.m[0] < 1e-6 * m, "mass left at the centre: {}", p.m[0]);
}

/// An Earth-mass planet of 30% iron under granite: the mass in each layer as asked, pressure and
/// density rising inward, a density jump at the core, hydrostatic equilibrium at every interior
/// point, and the radius converged in the step count.
#[test]
fn an_earth_like_planet_is_in_equilibrium() {
    let planet = earth_like();
    let p = planet.profile(G_SI, 8000).unwrap();
    let coarse = planet.profile(G_SI, 4000).unwrap();
    let (r, rc) = (p.radius(), coarse.radius());
    let core = p.layer.iter().rposition(|&k| k == 0).unwrap();
    println!(
        "R = {:.1} km (4000 steps: {:.1} km), core radius {:.1} km, ρ_c = {:.0} kg/m³, P_c = {:.3e} Pa",
        r / 1e3,
        rc / 1e3,
        p.r[core] / 1e3,
        p.rho[0],
        p.p[0]
    );
    assert!(
        (r - rc).abs() < 1e-4 * r,
        "radius not converged: {r} against {rc}"
    );
    // Tillotson iron and granite are stiffer than the Earth's real materials and carry no
    // temperature: the radius comes out near, not at, the Earth's 6371 km.
    assert!((5.5e6..7.5e6).contains(&r), "radius {r}");
    assert!(
        (p.m[core] - 0.3 * EARTH_MASS).abs() < 2e-3 * EARTH_MASS,
        "core mass {}",
        p.m[core]
    );
    assert!(p.rho[core] > Tillotson::IRON.rho_0 && p.rho[core + 1] < p.rho[core]);
    assert!(
        p.p.windows(2).all(|w| w[1] <= w[0]),
        "pressure rises outward"
    );
    assert!(p.m.windows(2).all(|w| w[1] >= w[0]), "mass falls outward");
    for k in (p.layer.iter().position(|&l| l == 1).unwrap() + 2..p.r.len() - 2).step_by(50) {
        if p.layer[k - 1] != p.layer[k + 1] {
            continue;
        }
        let dp = (p.p[k + 1] - p.p[k - 1]) / (p.r[k + 1] - p.r[k - 1]);
        let want = -G_SI * p.m[k] * p.rho[k] / (p.r[k] * p.r[k]);
        assert!(
            (dp - want).abs() < 1e-3 * want.abs(),
            "r = {}: {dp} against {want}",
            p.r[k]
        );
    }
}

#[test]
fn bad_planets_are_named() {
    let mut p = earth_like();
    p.layers[1].mass_fraction = 0.6;
    assert!(matches!(
        p.profile(G_SI, 100),
        Err(PlanetError::FractionSum(_))
    ));
    p.layers[1].mass_fraction = -0.7;
    assert!(matches!(
        p.profile(G_SI, 100),
        Err(PlanetError::Fraction { layer: 1, .. })
    ));
    assert_eq!(
        one(Tillotson::IRON, 0.0).profile(G_SI, 100),
        Err(PlanetError::Mass(0.0)).map(|_: ()| Profile::default())
    );
    let none = Planet {
        mass: 1.0,
        layers: vec![],
    };
    assert!(matches!(
        none.profile(G_SI, 100),
        Err(PlanetError::NoLayers)
    ));
    // Far past what the tabulated adiabat reaches.
    let huge = one(Tillotson::GRANITE, 1e30);
    assert!(
        matches!(huge.profile(G_SI, 100), Err(PlanetError::Pressure { .. })),
        "{:?}",
        huge.profile(G_SI, 100).err()
    );
}

/// The central pressure is the weight of the column above it, `∫ G m ρ / r² dr` (trapezoid rule
/// over the profile), for a Mars-mass planet of iron under basalt, whose shot once ended with
/// mass left at the centre and a pressure spike there four times the weight.
#[test]
fn the_central_pressure_is_the_columns_weight() {
    let planet = Planet {
        mass: 6.4e23,
        layers: vec![
            Layer {
                material: Tillotson::IRON,
                mass_fraction: 0.25,
            },
            Layer {
                material: Tillotson::BASALT,
                mass_fraction: 0.75,
            },
        ],
    };
    let p = planet.profile(G_SI, 4000).unwrap();
    assert_eq!((p.r[0], p.m[0]), (0.0, 0.0));
    let f = |k: usize| {
        if p.r[k] > 0.0 {
            G_SI * p.m[k] * p.rho[k] / (p.r[k] * p.r[k])
        } else {
            0.0
        }
    };
    let weight: f64 = (1..p.r.len())
        .map(|k| 0.5 * (f(k) + f(k - 1)) * (p.r[k] - p.r[k - 1]))
        .sum();
    println!("P_c {:.4e} Pa, the column's weight {weight:.4e} Pa", p.p[0]);
    assert!(
        (p.p[0] - weight).abs() < 1e-3 * weight,
        "{} {weight}",
        p.p[0]
    );
}
