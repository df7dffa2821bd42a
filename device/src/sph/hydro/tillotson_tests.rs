//! The Tillotson EOS against an independent implementation's values, thermodynamic consistency of
//! its sound speed, and continuity between its branches.

use super::tillotson::Tillotson;

/// (ρ, u, P) from WoMa's `tillotson.P_u_rho` (Ruiz-Bonilla & Kegerreis's planet builder, with the
/// same Melosh 1989 parameters), one state in each branch: compressed cold, compressed hot,
/// expanded hot, the hybrid state and far expanded; P = 0 there marks tension, which WoMa floors
/// at P_min = 0 and we at SWIFT's 0.01 Pa.
/// (ρ, u, P).
type State = (f64, f64, f64);

const WOMA: [(&str, [State; 6]); 4] = [
    (
        "iron",
        [
            (11700.0, 1e5, 9.258182770663562e10),
            (9360.0, 17340000.0, 2.183156502901354e11),
            (3900.0, 26010000.0, 5.080237686997321e10),
            (6240.0, 5535000.0, 2.736624170628056e10),
            (7020.0, 240000.0, 0.0),
            (2340.0, 13005000.0, 1.521585000000424e10),
        ],
    ),
    (
        "granite",
        [
            (4020.0, 1e5, 1.422215235457064e10),
            (3216.0, 36000000.0, 1.209431414634146e11),
            (1340.0, 54000000.0, 3.622330348327421e10),
            (2144.0, 10750000.0, 2.236238334392099e10),
            (2412.0, 350000.0, 0.0),
            (804.0, 27000000.0, 1.085400000000215e10),
        ],
    ),
    (
        "basalt",
        [
            (4050.0, 1e5, 2.083494456358078e10),
            (3240.0, 36400000.0, 2.335508686693417e11),
            (1350.0, 54600000.0, 3.736872025137933e10),
            (2160.0, 11460000.0, 4.068882260929925e10),
            (2430.0, 472000.0, 0.0),
            (810.0, 27300000.0, 1.105650000003076e10),
        ],
    ),
    (
        "water",
        [
            (1497.0, 1e5, 4.52960332807571e9),
            (1197.6, 5380000.0, 6.106300607503234e9),
            (499.0, 8070000.0, 2.818855553619833e9),
            (798.4000000000001, 1554500.0, 4.379473185807735e8),
            (898.2, 41900.0, 0.0),
            (299.4, 4035000.0, 8.456552999999999e8),
        ],
    ),
];

fn material(name: &str) -> Tillotson<f64> {
    match name {
        "iron" => Tillotson::IRON,
        "granite" => Tillotson::GRANITE,
        "basalt" => Tillotson::BASALT,
        "water" => Tillotson::WATER,
        _ => Tillotson::ICE,
    }
}

#[test]
fn pressures_match_an_independent_implementation_in_every_branch() {
    for (name, states) in WOMA {
        let m = material(name);
        for (rho, u, want) in states {
            let p = m.pressure(rho, u);
            if want == 0.0 {
                assert_eq!(
                    p, m.p_min,
                    "{name} at ρ {rho}, u {u}: tension floors at P_min"
                );
            } else {
                let rel = ((p - want) / want).abs();
                assert!(
                    rel < 1e-13,
                    "{name} at ρ {rho}, u {u}: {p} vs {want} ({rel:.1e})"
                );
            }
        }
    }
}

/// The reference state and the cold compression curve by hand: P(ρ₀, 0) = 0 (floored to P_min)
/// and P(2ρ₀, 0) = A + B (ω = 1 at u = 0).
#[test]
fn reference_and_cold_compression_by_hand() {
    for m in [
        Tillotson::IRON,
        Tillotson::GRANITE,
        Tillotson::BASALT,
        Tillotson::WATER,
        Tillotson::ICE,
    ] {
        assert_eq!(m.pressure(m.rho_0, 0.0), m.p_min.max(0.0));
        let p = m.pressure(2.0 * m.rho_0, 0.0);
        assert!(((p - (m.big_a + m.big_b)) / p).abs() < 1e-15, "{p}");
    }
}

/// c² = ∂P/∂ρ at fixed entropy, against a central difference along the adiabat du = P/ρ² dρ, in
/// every branch (states chosen away from the branch edges, where P has a kink).
#[test]
fn sound_speed_is_the_adiabatic_derivative() {
    for m in [
        Tillotson::IRON,
        Tillotson::GRANITE,
        Tillotson::BASALT,
        Tillotson::WATER,
        Tillotson::ICE,
    ] {
        let mid = 0.5 * (m.u_iv + m.u_cv);
        let states = [
            (1.4 * m.rho_0, 0.3 * m.u_iv),
            (1.1 * m.rho_0, 3.0 * m.u_cv),
            (0.6 * m.rho_0, 2.0 * m.u_cv),
            (0.3 * m.rho_0, 5.0 * m.u_cv),
            (0.8 * m.rho_0, mid),
            (0.95 * m.rho_0, 0.3 * m.u_iv + 0.0 * mid),
        ];
        for (rho, u) in states {
            let s = m.state(rho, u);
            if s.p <= m.p_min {
                continue;
            }
            let c2 = s.sound_speed_sq(rho);
            let h = 1e-5 * rho;
            let adiabat = |d: f64| {
                // Second-order step of du/dρ = P/ρ² to ρ + d (midpoint rule).
                let half = u + 0.5 * d * s.p / (rho * rho);
                let rm = rho + 0.5 * d;
                let um = half;
                let pm = m.pressure(rm, um);
                m.pressure(rho + d, u + d * pm / (rm * rm))
            };
            let numeric = (adiabat(h) - adiabat(-h)) / (2.0 * h);
            let rel = ((c2 - numeric) / c2).abs();
            assert!(
                rel < 1e-6,
                "ρ {rho}, u {u}: c² {c2} vs adiabat {numeric} ({rel:.1e})"
            );
            assert!(m.sound_speed(rho, u) >= (m.big_a / m.rho_0).sqrt());
        }
    }
}

/// P is continuous across the branch edges u_iv, u_cv (at η < 1) and η = 1.
#[test]
fn pressure_is_continuous_across_the_branches() {
    for m in [
        Tillotson::IRON,
        Tillotson::GRANITE,
        Tillotson::BASALT,
        Tillotson::WATER,
    ] {
        // Jumps measured against the material's pressure scale A as well (water's cold branch is cut to
        // zero below η_zero, so its pressure there is the floor's few hundredths of a pascal).
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b.abs().max(m.big_a);
        let rho = 0.7 * m.rho_0;
        for u in [m.u_iv, m.u_cv] {
            let (lo, hi) = (
                m.pressure(rho, u * (1.0 - 1e-9)),
                m.pressure(rho, u * (1.0 + 1e-9)),
            );
            assert!(close(lo, hi), "at u {u}: {lo} vs {hi}");
        }
        let u = 2.0 * m.u_cv;
        let (lo, hi) = (
            m.pressure(m.rho_0 * (1.0 - 1e-10), u),
            m.pressure(m.rho_0 * (1.0 + 1e-10), u),
        );
        assert!(close(lo, hi), "at η = 1: {lo} vs {hi}");
    }
}

#[test]
fn float32_evaluation_follows_the_float64_reference() {
    for m in [Tillotson::IRON, Tillotson::GRANITE, Tillotson::WATER] {
        let m32 = m.cast::<f32>();
        for (rho, u) in [
            (1.3 * m.rho_0, 1e6),
            (0.5 * m.rho_0, 3.0 * m.u_cv),
            (0.8 * m.rho_0, 0.5 * (m.u_iv + m.u_cv)),
        ] {
            let p64 = m.pressure(rho, u);
            let p32 = m32.pressure(rho as f32, u as f32) as f64;
            assert!(((p32 - p64) / p64).abs() < 1e-5, "{p32} vs {p64}");
            let c64 = m.sound_speed(rho, u);
            let c32 = m32.sound_speed(rho as f32, u as f32) as f64;
            assert!(((c32 - c64) / c64).abs() < 1e-5, "{c32} vs {c64}");
        }
    }
}
