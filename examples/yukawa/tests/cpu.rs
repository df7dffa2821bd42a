//! The CPU twin against float64 direct summation on fresh random bodies, and λ → ∞ against
//! warpkit's own Newtonian gravity.

mod common;

use common::{quantiles, seed};
use warpkit::bh::{cpu as bhcpu, relative_errors, scene};
use warpkit::device::bh::Accel;
use warpkit_example_yukawa::{Params, cpu};

fn pick(acc: &[Accel], targets: &[usize]) -> Vec<Accel> {
    targets.iter().map(|&i| acc[i]).collect()
}

#[test]
fn tree_walk_converges_to_the_direct_sum_as_theta_shrinks() {
    let seed = seed();
    let n = 4000;
    let targets: Vec<usize> = (0..n).step_by(4).collect();
    for (scene, bodies) in [
        ("plummer", scene::plummer(n, seed)),
        ("uniform", scene::uniform(n, seed)),
    ] {
        let tree = cpu::build_tree(&bodies);
        for lambda in [0.1, 0.5, f32::INFINITY] {
            let mut last = f64::INFINITY;
            for theta in [0.8, 0.5, 0.3, 0.15, 0.0] {
                let p = Params {
                    theta,
                    eps: 0.01,
                    lambda,
                    g: 1.0,
                };
                let reference = cpu::direct_f64(&bodies, &targets, &p);
                let acc = cpu::tree_walk(&bodies, &tree, &p);
                let (median, p99, max) =
                    quantiles(relative_errors(&pick(&acc, &targets), &reference));
                let what = format!(
                    "seed {seed} {scene} λ {lambda} θ {theta}: median {median:.2e} 99% \
                     {p99:.2e} max {max:.2e}"
                );
                println!("{what}");
                // Smaller θ, smaller error (allowing float32 noise once it is that small).
                assert!(median <= last * 1.1 + 2e-6, "{what}: not below {last:.2e}");
                last = median;
                if theta == 0.5 {
                    assert!(median < 6e-3 && p99 < 5e-2, "{what}");
                }
                if theta == 0.15 {
                    assert!(median < 2e-4 && p99 < 3e-3, "{what}");
                }
                if theta == 0.0 {
                    // Every cell opened: the direct sum up to float32 rounding.
                    assert!(median < 1e-5 && p99 < 1e-4, "{what}");
                }
            }
        }
    }
}

#[test]
fn infinite_lambda_is_warpkits_newtonian_gravity() {
    let seed = seed();
    let bodies = scene::plummer(3000, seed);
    let p = Params {
        lambda: f32::INFINITY,
        ..Params::default()
    };
    // The tree walk: the same tree, opening decisions and summation as warpkit's CPU twin of
    // `bh_gravity_group`, and a screening factor of exactly 1: equal bit for bit.
    let tree = cpu::build_tree(&bodies);
    let ours = cpu::tree_walk(&bodies, &tree, &p);
    let warpkit = bhcpu::gravity_group(&bodies, &tree, &p.bh(), false, None);
    assert!(ours == warpkit, "seed {seed}: the tree walks differ");
    // The float64 references agree exactly too.
    let targets: Vec<usize> = (0..bodies.len()).step_by(7).collect();
    let ours = cpu::direct_f64(&bodies, &targets, &p);
    let warpkit = bhcpu::brute_force_f64(&bodies, &targets, &p.bh());
    assert!(
        ours == warpkit,
        "seed {seed}: the float64 direct sums differ"
    );
}

#[test]
fn float32_direct_sum_is_the_float64_one_to_rounding() {
    let seed = seed();
    let bodies = scene::plummer(3000, seed);
    let all: Vec<usize> = (0..bodies.len()).collect();
    for lambda in [0.1, 1.0, f32::INFINITY] {
        let p = Params {
            lambda,
            ..Params::default()
        };
        let e = relative_errors(
            &cpu::direct(&bodies, &p),
            &cpu::direct_f64(&bodies, &all, &p),
        );
        let (median, p99, _) = quantiles(e);
        assert!(
            median < 1e-5 && p99 < 1e-4,
            "seed {seed} λ {lambda}: median {median:.2e} 99% {p99:.2e}"
        );
    }
}

#[test]
fn screening_weakens_a_pair_by_the_analytic_factor() {
    use warpkit::device::bh::Body;
    // Two bodies at distance 0.3, ε = 0: the force on each is the Newtonian one times
    // e^{−r/λ}(1 + r/λ).
    let bodies = [
        Body {
            x: 0.0,
            y: 0.0,
            z: 0.0,
            m: 1.0,
        },
        Body {
            x: 0.3,
            y: 0.0,
            z: 0.0,
            m: 2.0,
        },
    ];
    let newton = Params {
        eps: 0.0,
        lambda: f32::INFINITY,
        ..Params::default()
    };
    let screened = Params {
        lambda: 0.2,
        ..newton
    };
    let x = 0.3f64 / 0.2;
    let factor = (-x).exp() * (1.0 + x);
    let (a, b) = (
        cpu::direct(&bodies, &screened),
        cpu::direct(&bodies, &newton),
    );
    for (a, b) in a.iter().zip(&b) {
        assert!(
            ((a.x / b.x) as f64 - factor).abs() < 1e-6,
            "{a:?} {b:?} {factor}"
        );
    }
    // The tree walk of two bodies lists both: the same.
    let tree = cpu::build_tree(&bodies);
    assert_eq!(cpu::tree_walk(&bodies, &tree, &screened), a);
}

#[test]
fn bad_parameters_are_refused() {
    let bodies = scene::uniform(10, 1);
    for lambda in [0.0, -1.0, f32::NAN] {
        let p = Params {
            lambda,
            ..Params::default()
        };
        assert!(
            warpkit_example_yukawa::check(&bodies, &p).is_err(),
            "λ {lambda}"
        );
    }
    assert!(warpkit_example_yukawa::check(&bodies, &Params::default()).is_ok());
    assert!(warpkit_example_yukawa::check(&[], &Params::default()).is_err());
}
