use super::*;

#[test]
fn octants_and_children_agree() {
    let c = [0.0, 0.0, 0.0];
    for o in 0..8 {
        let cc = child_center(c, 0.5, o);
        assert_eq!(octant(cc, c), o);
    }
    // Points on a dividing plane go to the lower side.
    assert_eq!(octant([0.0, 1.0, 0.0], c), 2);
}

#[test]
fn root_cell_contains_the_box() {
    let mut h = TreeHeader::new(8);
    h.min = [-1.0, 0.0, 2.0];
    h.max = [3.0, 1.0, 2.5];
    let (c, half) = root_cell(&h);
    for (k, ck) in c.iter().enumerate() {
        assert!(ck - half <= h.min[k] && h.max[k] <= ck + half);
    }
    h.max = h.min;
    assert!(root_cell(&h).1 > 0.0);
}

#[test]
fn pair_accel_is_inverse_square_and_softened() {
    let a = pair_accel([0.0; 3], [2.0, 0.0, 0.0], 4.0, 0.0);
    assert!((a[0] - 1.0).abs() < 1e-6 && a[1] == 0.0);
    assert_eq!(pair_accel([1.0; 3], [1.0; 3], 1.0, 0.0), [0.0; 3]);
    let s = pair_accel([0.0; 3], [1.0, 0.0, 0.0], 1.0, 1.0);
    assert!((s[0] - 2f32.powf(-1.5)).abs() < 1e-6);
    let d = pair_accel_f64([0.0; 3], [0.0, 3.0, 4.0], 25.0, 0.0);
    assert!((d[1] - 0.6).abs() < 1e-12 && (d[2] - 0.8).abs() < 1e-12);
}

#[test]
fn quadrupole_interaction_of_a_body_on_itself_is_zero_for_small_softening() {
    // The body's own entry: no moments, d = 0, the softened 1/r at 1/ε.
    for eps in [1e-3f32, 1e-6, 1e-9, 1e-12] {
        let mut a = [0.0; 3];
        add_pair_accel_quad::<true>(&mut a, [0.5; 3], [0.5; 3], 1.0, &Quad::default(), eps * eps);
        assert_eq!(a, [0.0; 3], "ε = {eps}");
    }
    // A finite pair is unchanged by the saturation: the monopole plus the moments' terms.
    let q = Quad {
        xx: 1e-3,
        yy: -5e-4,
        zz: -5e-4,
        ..Quad::default()
    };
    let mut a = [0.0; 3];
    add_pair_accel_quad::<true>(&mut a, [0.0; 3], [2.0, 0.0, 0.0], 1.0, &q, 1e-12);
    // d = (2, 0, 0): m/r² + (5/2)·q_xx·4/r⁷·2 − q_xx·2/r⁵ = 0.25 + 1e-3·(20/128 − 2/32).
    let want = 0.25 + 1e-3 * (20.0 / 128.0 - 2.0 / 32.0);
    assert!((a[0] - want).abs() < 1e-7, "{} vs {want}", a[0]);
}

#[test]
fn group_lanes_hold_every_member_once_per_copy() {
    for k in [1u32, 2] {
        for size in 1..=32 * k {
            let lanes: std::vec::Vec<GroupLanes> =
                (0..32).map(|l| GroupLanes::of(size, k, l)).collect();
            let shift = lanes[0].shift;
            assert!(lanes.iter().all(|g| g.shift == shift));
            let seats = 32 >> shift;
            // Small groups are repeated, and the repeated layout still holds the group.
            assert!(
                size * 2 > (32 * k) >> shift || shift == 2,
                "k {k} size {size}"
            );
            assert!(k * seats >= size, "k {k} size {size}");
            for part in 0..1 << shift {
                let mut seen = std::vec![0u32; size as usize];
                for g in lanes.iter().filter(|g| g.part == part) {
                    for j in 0..k {
                        let m = g.seat + seats * j;
                        if m < size {
                            seen[m as usize] += 1;
                        }
                    }
                }
                assert!(
                    seen.iter().all(|&c| c == 1),
                    "k {k} size {size} part {part}: {seen:?}"
                );
            }
        }
    }
}

#[test]
fn quadrupole_improves_the_far_field_by_an_order() {
    // Ten masses within 0.1 of their centre, seen from distance 2: the monopole errs by
    // about (0.1/2)², the quadrupole by about (0.1/2)³.
    let pts: std::vec::Vec<([f32; 3], f32)> = (0..10u64)
        .map(|i| {
            let u = |k| crate::rng::uniform_f32(5, 3 * i + k) * 0.2 - 0.1;
            ([u(0), u(1), u(2)], 0.5 + crate::rng::uniform_f32(6, i))
        })
        .collect();
    let m: f32 = pts.iter().map(|p| p.1).sum();
    let c: [f32; 3] = core::array::from_fn(|k| pts.iter().map(|p| p.0[k] * p.1).sum::<f32>() / m);
    let q = pts.iter().fold(Quad::default(), |q, (x, mi)| {
        q.plus(&Quad::point(*mi, [x[0] - c[0], x[1] - c[1], x[2] - c[2]]))
    });
    // Unsoftened, and softened with ε comparable to the distance: there the expansion's
    // trace term decides whether the quadrupole helps at all.
    for eps2 in [0.0f32, 1.0] {
        let mut worst = (0.0f64, 0.0f64);
        for t in [[2.0, 0.3, -0.2], [-0.5, 1.9, 0.7], [0.1, -0.4, -2.1]] {
            let exact = pts.iter().fold([0.0f64; 3], |a, (x, mi)| {
                let d = pair_accel_f64(
                    [t[0] as f64, t[1] as f64, t[2] as f64],
                    [x[0] as f64, x[1] as f64, x[2] as f64],
                    *mi as f64,
                    eps2 as f64,
                );
                [a[0] + d[0], a[1] + d[1], a[2] + d[2]]
            });
            let norm = (exact[0] * exact[0] + exact[1] * exact[1] + exact[2] * exact[2]).sqrt();
            let err = |a: [f32; 3]| {
                let e: f64 = (0..3).map(|k| (a[k] as f64 - exact[k]).powi(2)).sum();
                e.sqrt() / norm
            };
            worst.0 = worst.0.max(err(pair_accel(t, c, m, eps2)));
            worst.1 = worst.1.max(err(pair_accel_quad(t, c, m, &q, eps2)));
        }
        assert!(
            worst.0 > 1e-5 && worst.1 < worst.0 / 5.0,
            "ε² {eps2}: monopole {:.2e} quadrupole {:.2e}",
            worst.0,
            worst.1
        );
    }
    // A zero moment reduces to the monopole.
    let a = pair_accel_quad([0.0; 3], [2.0, 0.0, 0.0], 4.0, &Quad::default(), 0.0);
    assert!((a[0] - 1.0).abs() < 1e-6);
}

#[test]
fn opening_test() {
    assert!(is_far(4.0, 0.5, 0.25)); // w/r = 0.35 < 0.5
    assert!(!is_far(4.0, 2.0, 0.25)); // w/r = 0.71
    assert!(!is_far(1e30, 1e-30, 0.0)); // θ = 0 opens everything
    assert_eq!(width2_at(1.0, 0), 4.0);
    assert_eq!(width2_at(1.0, 3), 0.0625);
}
