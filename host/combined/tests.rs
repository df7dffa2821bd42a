//! CPU correctness of the combined walk: its gravity equals the gravity group walk's and its
//! counts and densities the SPH group search's, bit for bit (the same lists in the same order);
//! the counts equal the O(N²) gather counts; one part alone equals both; bad input is refused.

use super::cpu;
use super::gpu::CombinedGpuError;
use super::*;
use crate::bh::scene::{self, Scene};
use crate::device::combined::{PART_BOTH, PART_DENSITY, PART_GRAVITY};
use crate::device::rng;
use crate::sph::cpu::SphTree;
use crate::sph::{Criterion, SmoothingKernel};

fn random_h(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    (0..n as u64)
        .map(|i| lo + (hi - lo) * rng::uniform_f32(seed, i))
        .collect()
}

/// An integer lattice 0..=8 (pairs at exactly h, bodies on the tree's dividing planes) with 60
/// duplicated points and a pile of 40 coincident bodies (bucket chains).
fn lattice_with_piles() -> Vec<Body> {
    let mut b: Vec<Body> = (0..729)
        .map(|i| Body {
            x: (i % 9) as f32,
            y: (i / 9 % 9) as f32,
            z: (i / 81) as f32,
            m: 1.0,
        })
        .collect();
    for i in 0..60 {
        b.push(b[(i * 37) % 729]);
    }
    b.extend(std::iter::repeat_n(
        Body {
            x: 4.0,
            y: 4.0,
            z: 4.0,
            m: 1.0,
        },
        40,
    ));
    b
}

fn cases() -> Vec<(String, Vec<Body>, Vec<f32>)> {
    let mut cases = Vec::new();
    for (scene, n, hs) in [
        (Scene::Uniform, 1, (0.1, 0.2)),
        (Scene::Uniform, 33, (0.1, 1.0)),
        (Scene::Uniform, 3000, (0.03, 0.12)),
        (Scene::Plummer, 3000, (0.01, 0.4)),
        (Scene::Lattice, 4096, (0.05, 0.15)),
    ] {
        let mut b = scene::generate(scene, n, 5 + n as u64);
        scene::shuffle(&mut b, 2);
        let h = random_h(n, 9 + n as u64, hs.0, hs.1);
        cases.push((format!("{scene:?} n={n}"), b, h));
    }
    let b = lattice_with_piles();
    let n = b.len();
    for hv in [1.0f32, 2.5] {
        cases.push((format!("lattice h={hv}"), b.clone(), vec![hv; n]));
    }
    let mixed = (0..n)
        .map(|i| 0.5 + (rng::draw_u64(5, i as u64) % 4) as f32)
        .collect();
    cases.push(("lattice mixed h".into(), b, mixed));
    cases
}

fn options(theta: f32, eps: f32, quadrupole: bool, kernel: SmoothingKernel) -> Options {
    Options {
        gravity: crate::bh::Params { theta, eps, g: 1.0 },
        kernel,
        quadrupole,
    }
}

/// Bitwise equality of float vectors (NaN never equal).
fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

fn acc_bits(a: &[Accel]) -> Vec<f32> {
    a.iter().flat_map(|v| [v.x, v.y, v.z]).collect()
}

#[test]
fn combined_equals_the_separate_walks_bit_for_bit() {
    for (what, b, h) in cases() {
        let t = SphTree::new(&b, &h).without_ranges();
        for (theta, eps, quad, kernel) in [
            (0.5, 0.05, false, SmoothingKernel::CubicSpline),
            (0.7, 0.0, true, SmoothingKernel::CubicSpline),
            (0.3, 0.01, false, SmoothingKernel::WendlandC2),
        ] {
            let o = options(theta, eps, quad, kernel);
            let got = cpu::combined(&b, &h, &t, &o, PART_BOTH);
            let want = cpu::separate(&b, &h, &t, &o);
            let case = format!("{what} θ {theta} ε {eps} quad {quad} {kernel:?}");
            assert!(
                same_bits(&acc_bits(&got.acc), &acc_bits(&want.acc)),
                "{case}: accelerations differ (max rel {:.2e})",
                max_acc_diff(&got.acc, &want.acc, 1e-30)
            );
            assert_eq!(got.counts, want.counts, "{case}: counts");
            assert!(
                same_bits(&got.rho, &want.rho),
                "{case}: densities differ (max rel {:.2e})",
                max_rel_diff(&got.rho, &want.rho, 1e-30)
            );
            // One part alone walks as the separate walk of that part.
            let g = cpu::combined(&b, &h, &t, &o, PART_GRAVITY);
            assert!(same_bits(&acc_bits(&g.acc), &acc_bits(&want.acc)));
            assert!(g.counts.is_empty() && g.rho.is_empty());
            let d = cpu::combined(&b, &h, &t, &o, PART_DENSITY);
            assert!(d.acc.is_empty() && d.counts == want.counts && same_bits(&d.rho, &want.rho));
        }
    }
}

#[test]
fn vote_form_equals_bh_gravity_and_the_gather_search() {
    // The seed's form: its gravity is `bh_gravity`'s twin's on the same order, bit for bit; its
    // counts the O(N²) gather counts; its densities the group search's up to summation order.
    for (what, b, h) in cases() {
        let t = SphTree::new(&b, &h).without_ranges();
        let brute: Vec<u32> = crate::sph::cpu::brute_force(&b, &h, Criterion::Gather, |_| Count(0))
            .into_iter()
            .map(|c| c.0)
            .collect();
        for (theta, eps, kernel) in [
            (0.5, 0.05, SmoothingKernel::CubicSpline),
            (0.8, 0.0, SmoothingKernel::WendlandC2),
            (0.0, 0.01, SmoothingKernel::CubicSpline),
        ] {
            let o = options(theta, eps, false, kernel);
            let case = format!("{what} θ {theta} ε {eps} {kernel:?}");
            let got = cpu::combined_vote(&b, &h, &t, &o);
            let acc = crate::bh::cpu::gravity(&b, &t.tree, &t.tree.sort, &o.gravity);
            assert!(
                same_bits(&acc_bits(&got.acc), &acc_bits(&acc)),
                "{case}: accelerations differ (max rel {:.2e})",
                max_acc_diff(&got.acc, &acc, 1e-30)
            );
            assert_eq!(got.counts, brute, "{case}: counts");
            let want = cpu::separate_density(&b, &h, &t, &o);
            for (i, ((&x, &y), &k)) in got.rho.iter().zip(&want.rho).zip(&brute).enumerate() {
                let d = ((x - y) as f64).abs() / (y as f64).abs().max(1e-30);
                assert!(
                    d < 1e-6 + 1e-7 * k as f64,
                    "{case}: density {i} differs by {d:.2e}"
                );
            }
        }
    }
}

#[test]
fn counts_equal_the_brute_force_and_every_body_counts_itself() {
    for (what, b, h) in cases() {
        let got = cpu::evaluate(
            &b,
            &h,
            &options(0.5, 0.05, false, SmoothingKernel::CubicSpline),
        );
        let want: Vec<u32> = crate::sph::cpu::brute_force(&b, &h, Criterion::Gather, |_| Count(0))
            .into_iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(got.counts, want, "{what}");
        assert!(got.counts.iter().all(|&c| c >= 1), "{what}");
        assert!(got.rho.iter().all(|r| r.is_finite() && *r > 0.0), "{what}");
        assert!(
            got.acc
                .iter()
                .all(|a| a.x.is_finite() && a.y.is_finite() && a.z.is_finite()),
            "{what}"
        );
    }
}

#[test]
fn gravity_is_barnes_hut_accurate() {
    // The combined walk's gravity is the group walk's: within the BH error of direct summation.
    let mut b = scene::generate(Scene::Plummer, 4000, 8);
    scene::shuffle(&mut b, 3);
    let h = vec![crate::sph::initial_h(&b, 64.0); b.len()];
    let o = options(0.5, 0.05, true, SmoothingKernel::CubicSpline);
    let got = cpu::evaluate(&b, &h, &o);
    let idx: Vec<usize> = (0..b.len()).step_by(40).collect();
    let want = crate::bh::cpu::brute_force_f64(&b, &idx, &o.gravity);
    for (k, &i) in idx.iter().enumerate() {
        let a = got.acc[i];
        let w = want[k];
        let d = ((a.x as f64 - w[0]).powi(2)
            + (a.y as f64 - w[1]).powi(2)
            + (a.z as f64 - w[2]).powi(2))
        .sqrt();
        let r = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).sqrt();
        assert!(d < 1e-2 * r, "body {i}: {a:?} vs {w:?}");
    }
}

#[test]
fn bad_input_is_refused() {
    let b = scene::generate(Scene::Uniform, 10, 1);
    let o = options(0.5, 0.05, false, SmoothingKernel::CubicSpline);
    let mut h = vec![0.1; 10];
    assert!(validate(&b, &h, &o).is_ok());
    h[3] = 0.0;
    assert_eq!(
        validate(&b, &h, &o),
        Err(CombinedError::Sph(SphError::ZeroH { index: 3 }))
    );
    h[3] = f32::NAN;
    assert!(matches!(
        validate(&b, &h, &o),
        Err(CombinedError::Sph(SphError::BadH { index: 3, .. }))
    ));
    assert!(matches!(
        validate(&b, &[0.1; 9], &o),
        Err(CombinedError::Sph(SphError::Length { .. }))
    ));
    let bad = options(-1.0, 0.05, false, SmoothingKernel::CubicSpline);
    assert_eq!(
        validate(&b, &[0.1; 10], &bad),
        Err(CombinedError::Gravity(InputError::Theta(-1.0)))
    );
    assert_eq!(
        validate(&[], &[], &o),
        Err(CombinedError::Gravity(InputError::Empty))
    );
    let r = compare(&crate::backend::Backend::Cpu, &b, &h, &o, Form::Group, 1);
    assert!(matches!(r, Err(gpu::CombinedGpuError::Input(_))));
}

#[test]
fn compare_on_the_cpu_reports_equal_answers() {
    let mut b = scene::generate(Scene::Uniform, 2000, 4);
    scene::shuffle(&mut b, 4);
    let h = vec![crate::sph::initial_h(&b, 32.0); b.len()];
    let o = options(0.5, 0.05, false, SmoothingKernel::CubicSpline);
    let c = compare(&crate::backend::Backend::Cpu, &b, &h, &o, Form::Group, 1).unwrap();
    assert_eq!(c.combined, c.separate);
    assert!(c.times.combined > 0.0 && c.times.separate() > 0.0);
}

#[test]
fn compare_in_the_vote_form_on_the_cpu() {
    let mut b = scene::generate(Scene::Plummer, 2000, 6);
    scene::shuffle(&mut b, 6);
    let h = random_h(b.len(), 7, 0.02, 0.3);
    let o = options(0.5, 0.05, false, SmoothingKernel::WendlandC2);
    let c = compare(&crate::backend::Backend::Cpu, &b, &h, &o, Form::Vote, 1).unwrap();
    // Gravity: `bh_gravity`'s twin bit for bit; counts exactly; densities to summation order.
    assert!(same_bits(
        &acc_bits(&c.combined.acc),
        &acc_bits(&c.separate.acc)
    ));
    assert_eq!(c.combined.counts, c.separate.counts);
    assert!(max_rel_diff(&c.combined.rho, &c.separate.rho, 1e-30) < 1e-4);
    assert!(c.times.combined > 0.0 && c.times.separate() > 0.0);
    // The seed's form has no quadrupoles: refused before any work.
    let q = options(0.5, 0.05, true, SmoothingKernel::WendlandC2);
    assert!(matches!(
        compare(&crate::backend::Backend::Cpu, &b, &h, &q, Form::Vote, 1),
        Err(CombinedGpuError::Input(CombinedError::VoteQuadrupole))
    ));
}

#[test]
fn may_reach_never_rules_out_a_reachable_cell() {
    // Every cell of trees over clouds far from the origin (centres of mass rounded at the
    // coordinates' scale) and of piles; targets just outside and inside each box's reach.
    use crate::device::bh::{self as dev, MAX_DEPTH};
    use crate::device::combined::{may_reach, reach_slack};
    use crate::device::sph::{GATHER, cell_reachable};
    let mut checked = 0u64;
    for (k, (offset, spread)) in [(0.0f32, 1.0f32), (1e3, 1.0), (-4e4, 0.05), (10.0, 1e-4)]
        .into_iter()
        .enumerate()
    {
        let mut b = scene::generate(Scene::Plummer, 3000, 11 + k as u64);
        for q in &mut b {
            (q.x, q.y, q.z) = (
                offset + spread * q.x,
                offset + spread * q.y,
                -offset + spread * q.z,
            );
        }
        b.extend(std::iter::repeat_n(b[7], 50));
        let h = vec![0.01 * spread; b.len()];
        let t = SphTree::new(&b, &h);
        let tree = &t.tree;
        let n = tree.n as i32;
        let (centre, half) = dev::root_cell(&tree.header);
        let slack = reach_slack(centre, half);
        let mut stack = vec![(tree.root(), 0usize)];
        while let Some((cell, depth)) = stack.pop() {
            for o in 0..8 {
                let ch = tree.child[tree.layout.slot(cell, o)];
                if ch < n {
                    continue;
                }
                let c = ch - n;
                assert!(depth < MAX_DEPTH);
                stack.push((c, depth + 1));
                let bx = &t.boxes[c as usize];
                let com = tree.cell_pm[c as usize].pos();
                let w = dev::width_at(half, depth + 1);
                for j in 0..6u64 {
                    // A target beside a box corner, at a distance around h.
                    let u = |d: u64| rng::uniform_f32(j * 7 + d, c as u64) - 0.5;
                    let hh = (0.5 + rng::uniform_f32(j, 99 + c as u64)) * 0.02 * spread;
                    let p = [
                        bx.hi[0] + hh * u(0),
                        bx.lo[1] + hh * u(1),
                        bx.hi[2] + hh * u(2),
                    ];
                    if cell_reachable(GATHER, p, p, hh, bx) {
                        checked += 1;
                        let r2 = dev::dist2(p, com);
                        assert!(
                            may_reach(r2, hh, w, slack),
                            "cell {c} depth {} ruled out (offset {offset})",
                            depth + 1
                        );
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "{checked} reachable cases");
}
