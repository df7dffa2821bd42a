//! Tests of the estimators and the tree views.

use super::*;

fn src(x: f32, y: f32, z: f32, m: f32) -> Body {
    Body { x, y, z, m }
}

#[test]
fn quadrupole_term_cuts_the_far_field_error_by_the_size_ratio() {
    // Twenty sources within 0.1 of their weighted centre, seen from 0.8 to 3: the monopole
    // errs by about (0.1/r)², for every radial kernel.
    // Pairs mirrored about the origin: odd moments vanish, so the quadrupole's error is of
    // fourth order, (0.1/r)² of the monopole's: a sharp check of the second-order formula.
    let pts: std::vec::Vec<Body> = (0..20u64)
        .map(|i| {
            let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
            let u = |k| sign * (rng::uniform_f32(7, 3 * (i / 2) + k) * 0.2 - 0.1);
            src(u(0), u(1), u(2), 0.5 + rng::uniform_f32(8, i / 2))
        })
        .collect();
    let m: f32 = pts.iter().map(|p| p.m).sum();
    let c: [f32; 3] =
        core::array::from_fn(|k| pts.iter().map(|p| p.pos()[k] * p.m).sum::<f32>() / m);
    let quad = pts.iter().fold(Quad::default(), |q, p| {
        q.plus(&Quad::point(p.m, [p.x - c[0], p.y - c[1], p.z - c[2]]))
    });
    let cell = src(c[0], c[1], c[2], m);
    for (kind, param) in [
        (KIND_SHIFTED, 0.1),
        (KIND_PLUMMER, 0.05),
        (KIND_PLUMMER, 0.5),
        (KIND_SMOOTH, 2.0),
    ] {
        let k = KernelSpec { kind, param };
        assert!(has_quadrupole(k));
        for (i, r) in [0.8f32, 1.5, 3.0].into_iter().enumerate() {
            let dir = [[0.6, 0.0, 0.8], [0.0, -1.0, 0.0], [0.48, 0.6, -0.64]][i];
            let q = dir.map(|x| x * r);
            let exact: f64 = pts
                .iter()
                .map(|p| {
                    let to64 = |v: [f32; 3]| v.map(|x| x as f64);
                    term_f64(k, to64(q), to64(p.pos()), p.m as f64, [0.0; 3])
                })
                .sum();
            let mono = (term(k, q, &cell, [0.0; 3]) as f64 - exact).abs();
            let quadr =
                (term_quad_add(k, q, &cell, &QuadTerm::of(&quad), 0.0) as f64 - exact).abs();
            let scale = exact.abs();
            assert!(
                quadr < 0.15 * mono && quadr < 1e-4 * scale,
                "kind {kind} ε/δ/α {param} r {r}: monopole {mono:.3e} quadrupole {quadr:.3e} of {scale:.3e}"
            );
            // A body (zero moment) is the monopole term, up to rounding.
            let (t0, t1) = (
                term_quad_add(k, q, &cell, &QuadTerm::default(), 0.0),
                term(k, q, &cell, [0.0; 3]),
            );
            assert!((t0 - t1).abs() <= 4e-7 * t1.abs(), "{t0} {t1}");
        }
    }
    assert!(!has_quadrupole(KernelSpec {
        kind: KIND_WINDING,
        param: 0.0
    }));
}

#[test]
fn kernels_match_their_float64_forms() {
    let q = [0.1, -0.2, 0.3];
    let s = src(0.7, 0.4, -0.5, 2.0);
    let a = [0.3, -0.4, 0.5];
    for k in [
        KernelSpec {
            kind: KIND_SHIFTED,
            param: 0.1,
        },
        KernelSpec {
            kind: KIND_PLUMMER,
            param: 0.05,
        },
        KernelSpec {
            kind: KIND_WINDING,
            param: 0.0,
        },
        KernelSpec {
            kind: KIND_SMOOTH,
            param: 3.0,
        },
    ] {
        let f = term(k, q, &s, a) as f64;
        let g = term_f64(
            k,
            q.map(|x| x as f64),
            s.pos().map(|x| x as f64),
            s.m as f64,
            a.map(|x| x as f64),
        );
        assert!((f - g).abs() < 1e-6 * g.abs(), "kind {} {f} {g}", k.kind);
    }
    // The paper's form at r = 1, δ = 0.1: -1 / 1.1.
    let k = KernelSpec {
        kind: KIND_SHIFTED,
        param: 0.1,
    };
    assert!((term(k, [0.0; 3], &src(1.0, 0.0, 0.0, 1.0), [0.0; 3]) + 1.0 / 1.1).abs() < 1e-7);
}

#[test]
fn winding_number_of_a_closed_sphere_is_one_inside() {
    // A small sphere sampled at its poles and equator: at the centre each sample's solid angle
    // is a_i / (4π R²) exactly, so the total is Σ a_i / 4πR² = 1.
    let r = 0.5f32;
    let area = 4.0 * core::f32::consts::PI * r * r / 6.0;
    let k = KernelSpec {
        kind: KIND_WINDING,
        param: 0.0,
    };
    let dirs = [
        [1.0, 0.0, 0.0],
        [-1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, -1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.0, 0.0, -1.0],
    ];
    let w: f32 = dirs
        .iter()
        .map(|d: &[f32; 3]| {
            let s = src(r * d[0], r * d[1], r * d[2], area);
            term(k, [0.0; 3], &s, d.map(|x| x * area))
        })
        .sum();
    assert!((w - 1.0).abs() < 1e-6, "{w}");
}

#[test]
fn smooth_distance_of_one_source_is_its_distance() {
    let k = KernelSpec {
        kind: KIND_SMOOTH,
        param: 20.0,
    };
    let sum = term(k, [0.0; 3], &src(0.3, 0.4, 0.0, 1.0), [0.0; 3]);
    assert!((smooth_distance(sum, 20.0) - 0.5).abs() < 1e-5);
    assert!(smooth_distance(-1.0, 1.0).is_finite());
}

#[test]
fn far_field_ratio_divides_by_the_box_diagonal() {
    // The authors' |B|: the diagonal of the cell's box, √3 × its width.
    let d = diameter_at(0.5, 1);
    assert!((d - 3f32.sqrt() * 0.5).abs() < 1e-7);
    let r = far_ratio([0.0; 3], [3.0, 4.0, 0.0], diameter_at(0.5, 0));
    assert!((r - 5.0 / 3f32.sqrt()).abs() < 1e-6, "{r}");
    // β̃ ≥ β, tested squared: on either side of β = 2 for a root of width 1.
    let at = 2.0 * 3f32.sqrt();
    assert!(is_far(
        [0.0; 3],
        [at * 1.001, 0.0, 0.0],
        diameter_at(0.5, 0),
        2.0
    ));
    assert!(!is_far(
        [0.0; 3],
        [at * 0.999, 0.0, 0.0],
        diameter_at(0.5, 0),
        2.0
    ));
    assert!(!is_far([0.0; 3], [1e15, 0.0, 0.0], 1.0, f32::INFINITY));
}

#[test]
fn brute_force_splits_fill_the_waves() {
    // 10⁶ queries (1954 groups) on 1320 resident blocks: two splits fill 2.96 of 3 waves.
    assert_eq!(brute_force_groups(1_000_000), 1954);
    assert_eq!(brute_force_splits(1954, 1320, 1 << 20), 2);
    // One wave, nearly full: no split.
    assert_eq!(brute_force_splits(2000, 2112, 1 << 20), 1);
    // Few sources: no more chunks than tiles.
    assert_eq!(brute_force_splits(1954, 1320, 100), 1);
    // Many waves are full anyway.
    assert_eq!(brute_force_splits(100_000, 1320, 1 << 20), 1);
    assert!(brute_force_splits(1, 1320, 1 << 20) <= 8);
}

#[test]
fn morton_key_interleaves_the_axes() {
    let s = 1024.0;
    assert_eq!(morton_key([0.0; 3], [0.0; 3], s), 0);
    assert_eq!(morton_key([1.5 / 1024.0, 0.0, 0.0], [0.0; 3], s), 1);
    assert_eq!(morton_key([0.0, 1.5 / 1024.0, 0.0], [0.0; 3], s), 2);
    assert_eq!(morton_key([0.0, 0.0, 1.5 / 1024.0], [0.0; 3], s), 4);
    assert_eq!(morton_key([2.5 / 1024.0, 0.0, 0.0], [0.0; 3], s), 8);
    assert_eq!(morton_key([1.0; 3], [0.0; 3], s), (1 << 30) - 1);
    assert_eq!(morton_key([-5.0; 3], [0.0; 3], s), 0); // clamped
}

#[test]
fn roulette_probability() {
    assert_eq!(continue_probability(0.5, 0.8), 1.0); // near field
    assert_eq!(continue_probability(4.0, 8.0), 0.5); // far field, one level down
    assert_eq!(continue_probability(4.0, 0.0), 1.0);
    assert!(is_singular(KernelSpec {
        kind: KIND_SHIFTED,
        param: 0.0
    }));
    assert!(!is_singular(KernelSpec {
        kind: KIND_SHIFTED,
        param: 0.1
    }));
    assert!(is_singular(KernelSpec {
        kind: KIND_WINDING,
        param: 0.0
    }));
}

#[test]
fn draw_indices_are_distinct() {
    let mut seen = std::collections::HashSet::new();
    for st in 0..8 {
        for s in 0..3 {
            for d in 0..=MAX_DEPTH as u32 {
                for p in 0..2 {
                    assert!(seen.insert(draw_index(st, s, 3, d, p)));
                }
            }
        }
    }
}
