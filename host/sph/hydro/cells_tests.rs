//! The searches with outliers: a few particles far from a dense clump, their `h` reaching back
//! to it (ejecta after an impact), found as the brute force finds them, by the gather and the
//! symmetric search alike.

use super::CellList;
use crate::sph::hydro::Boundary;

#[test]
fn outliers_far_from_a_clump_find_the_brute_force_neighbours() {
    let mut s = 7u64;
    let mut rnd = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    // 2000 particles in a unit clump, h about 0.1; 10 at distances 50..500 with h reaching it.
    let mut pos: Vec<[f64; 3]> = (0..2000)
        .map(|_| [rnd() - 0.5, rnd() - 0.5, rnd() - 0.5])
        .collect();
    let mut h: Vec<f64> = (0..2000).map(|_| 0.08 + 0.04 * rnd()).collect();
    for k in 0..10 {
        let d = 50.0 * (1.0 + k as f64);
        pos.push([d * (k as f64).cos(), d * (k as f64).sin(), 0.3 * d]);
        h.push(1.3 * d);
    }
    let b = Boundary::Open;
    let cells = CellList::with_h(&pos, &h, &b);
    assert_eq!(cells.outliers.len(), 10);
    let dist = |p: [f64; 3], q: [f64; 3]| {
        ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2)).sqrt()
    };
    for i in (0..pos.len()).step_by(37).chain(2000..2010) {
        let p = pos[i];
        let mut got = Vec::new();
        cells.for_each_within(&pos, p, h[i], |j, _, _| got.push(j));
        got.sort();
        let want: Vec<usize> = (0..pos.len()).filter(|&j| dist(p, pos[j]) < h[i]).collect();
        assert_eq!(got, want, "gather, particle {i}");
        let mut got = Vec::new();
        cells.for_each_symmetric(&pos, &h, p, h[i], |j, _, _| got.push(j));
        got.sort();
        let want: Vec<usize> = (0..pos.len())
            .filter(|&j| dist(p, pos[j]) < h[i].max(h[j]))
            .collect();
        assert_eq!(got, want, "symmetric, particle {i}");
        // The clump's particles see the outliers whose h reaches them.
        if i < 2000 {
            assert!(
                got.iter().filter(|&&j| j >= 2000).count() >= 9,
                "particle {i}"
            );
        }
    }
}
