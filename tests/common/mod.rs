//! Helpers shared by the integration tests.
#![allow(dead_code)]

use warpkit::runtime::Gpu;

/// The GPU for `#[ignore = "needs a CUDA GPU"]` tests: failing to open it fails the test.
pub fn gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| panic!("GPU test without a usable GPU: {e}"))
}

/// Sizes that straddle warp and block boundaries, for launch-shape bugs.
pub const EDGE_SIZES: &[usize] = &[1, 31, 32, 33, 255, 256, 257, 1000, 4097];

/// Bodies for comparing tree builds: every scene at `sizes` (shuffled), a cluster far below the
/// sorted build's key resolution (2^-21 of the box) beside one outlier, and `coincident.1` bodies
/// on one point among a Plummer sphere of `coincident.0`.
pub fn tree_build_cases(
    sizes: &[usize],
    coincident: (usize, usize),
) -> Vec<(String, Vec<warpkit::device::bh::Body>)> {
    use warpkit::bh::scene::{self, Scene};
    use warpkit::device::bh::Body;
    let mut cases = Vec::new();
    for scene in [Scene::Lattice, Scene::Uniform, Scene::Plummer] {
        for &n in sizes {
            let mut b = scene::generate(scene, n, n as u64 + 3);
            scene::shuffle(&mut b, 2);
            cases.push((format!("{scene:?} {n}"), b));
        }
    }
    let mut tight = scene::generate(Scene::Uniform, 3000, 3);
    for b in &mut tight {
        (b.x, b.y, b.z) = (1.0 + b.x * 1e-6, 2.0 + b.y * 1e-6, 3.0 + b.z * 1e-6);
    }
    tight.push(Body {
        x: -1e3,
        y: 0.0,
        z: 0.0,
        m: 1.0,
    });
    cases.push(("tight cluster".into(), tight));
    let (n, k) = coincident;
    let mut b = scene::generate(Scene::Plummer, n, 4);
    let step = n / k;
    for j in 0..k {
        b[j * step] = Body {
            x: 0.25,
            y: -0.5,
            z: 0.125,
            m: 1.0,
        };
    }
    cases.push(("coincident".into(), b));
    cases
}
