use super::*;

fn pt(method: Method, ms: f64, median: f64) -> Point {
    Point {
        section: "convergence",
        m: 1024,
        set: "grid",
        order: "grid",
        queries: 8,
        method,
        ms,
        err: ErrorStats {
            mean: median,
            median,
            max: median,
        },
    }
}

/// The verdict follows the data: SBH S = 1 at 1e-3 in 10 ms against BH needing 40 ms (β = 4)
/// for it, and BH β = 2 (3e-3, 5 ms) cheaper than any SBH.
#[test]
fn verdict_is_computed_from_the_points() {
    let points = vec![
        pt(Method::Sbh(1), 10.0, 1e-3),
        pt(Method::Sbh(4), 40.0, 5e-4),
        pt(Method::Bh(2.0), 5.0, 3e-3),
        pt(Method::Bh(4.0), 40.0, 8e-4),
        pt(Method::Bh(6.0), 90.0, 2e-4),
    ];
    let v = verdict(&points, "grid", false).unwrap();
    assert!(
        v.contains("At SBH S = 1's median error (≤ 1.00e-3) BH β = 4 takes 40.000 ms")
            && v.contains("SBH is faster by 4.00×"),
        "{v}"
    );
    assert!(
        v.contains("At BH β = 2's median error (≤ 3.00e-3) BH β = 2 takes 5.000 ms")
            && v.contains("BH is faster by 2.00×"),
        "{v}"
    );
    // Slower SBH flips the answer at its own operating point.
    let mut slow = points.clone();
    slow[0].ms = 100.0;
    slow[1].ms = 200.0;
    let v = verdict(&slow, "grid", false).unwrap();
    assert!(v.contains("BH is faster by 2.50×"), "{v}");
    assert!(verdict(&points, "random", false).is_none());
}

#[test]
fn sizes_follow_n_and_backend() {
    assert_eq!(super::super::capped(&CPU_MS, 1024), vec![1024]);
    assert_eq!(
        super::super::capped(&GPU_MS, 1 << 20),
        vec![1 << 15, 1 << 17, 1 << 20]
    );
}
