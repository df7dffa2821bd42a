//! Helpers shared by the example's tests.
#![allow(dead_code)]

use warpkit::device::bh::Accel;

/// A fresh seed per run (so the tests see new bodies each time), or `YUKAWA_TEST_SEED` to repeat
/// one; every assertion message names it.
pub fn seed() -> u64 {
    match std::env::var("YUKAWA_TEST_SEED") {
        Ok(s) => s.parse().expect("YUKAWA_TEST_SEED is a u64"),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
    }
}

/// Median, 99th percentile and maximum of `e`.
pub fn quantiles(mut e: Vec<f64>) -> (f64, f64, f64) {
    e.sort_by(f64::total_cmp);
    (e[e.len() / 2], e[e.len() * 99 / 100], e[e.len() - 1])
}

/// `|a − b| / |b|` per body.
pub fn relative(a: &[Accel], b: &[Accel]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(a, b)| {
            let d = [(a.x - b.x) as f64, (a.y - b.y) as f64, (a.z - b.z) as f64];
            let nb = ((b.x as f64).powi(2) + (b.y as f64).powi(2) + (b.z as f64).powi(2)).sqrt();
            (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() / nb.max(1e-30)
        })
        .collect()
}
