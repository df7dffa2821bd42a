use super::particles::place;
use super::settle::{self, SettleOptions};
use super::tests::earth_like;
use super::*;

#[test]
fn explore() {
    let planet = earth_like();
    let profile = planet.profile(G_SI, 4000).unwrap();
    let n = 3000;
    let t0 = std::time::Instant::now();
    let placed = place(&profile, n, 1, 58.0, 1.0).unwrap();
    println!("placed in {:?}, {} shells", t0.elapsed(), placed.shells.len());
    for s in &placed.shells { println!("{:?}", s); }
    let opts = SettleOptions { solver: crate::sph::hydro::GravitySolver::Direct, ..Default::default() };
    let mut sim = settle::sim_of(&planet, &profile, &placed, &opts).unwrap();
    let outer = settle::surface_shells(&placed, profile.radius());
    let c = settle::criteria(&sim, &profile, &placed.shell_of, outer);
    println!("fresh: outer {outer} {c:?}");
    let tdyn = settle::dynamical_time(&profile);
    let ad = settle::adiabats(&planet);
    for k in 1..=10 {
        let t = std::time::Instant::now();
        settle::settle(&mut sim, &ad, k as f64 * tdyn, tdyn).unwrap();
        let c = settle::criteria(&sim, &profile, &placed.shell_of, outer);
        println!("t = {:.0} s step {} ({:?}): {c:?}", sim.t, sim.step, t.elapsed());
    }
    let t_end = sim.t + tdyn;
    sim.run_to(t_end).unwrap();
    let c = settle::criteria(&sim, &profile, &placed.shell_of, outer);
    println!("coast t = {:.0} s step {}: {c:?}", sim.t, sim.step);
    // per shell deviations
    for (s, sh) in placed.shells.iter().enumerate() {
        let devs: Vec<f64> = (0..n).filter(|&i| placed.shell_of[i]==s).map(|i| sim.gas.rho[i] / profile.in_layer(sh.r, sh.layer).0 - 1.0).collect();
        println!("shell {s} r {:.0} layer {} mean dev {:.4}", sh.r, sh.layer, devs.iter().sum::<f64>()/devs.len() as f64);
    }
}
