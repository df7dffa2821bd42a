//! `warpkit planet`'s configuration: the refusals before any work, and a tiny planet written.

use super::cli::{self, PlanetArgs};
use crate::backend::BackendChoice;

fn args(layers: &str, n: usize, out: &std::path::Path) -> PlanetArgs {
    PlanetArgs {
        layers: Some(layers.into()),
        particles: Some(n),
        out: Some(out.to_path_buf()),
        ..Default::default()
    }
}

fn refusal(a: &PlanetArgs) -> String {
    let c = cli::config(a);
    match c.and_then(|c| cli::validate(&c)) {
        Ok(_) => panic!("accepted"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn bad_planets_are_refused_before_any_work() {
    let dir = std::env::temp_dir().join(format!("warpkit-planet-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let e = refusal(&args("iron:0.3,cheese:0.7", 1000, &dir));
    assert!(
        e.contains("unknown material \"cheese\"") && e.contains("granite"),
        "{e}"
    );
    let e = refusal(&args("iron:0.3,granite:0.6", 1000, &dir));
    assert!(e.contains("sum to 0.900000, not 1"), "{e}");
    let e = refusal(&args("iron:0.3,granite", 1000, &dir));
    assert!(e.contains("material:fraction"), "{e}");
    let e = refusal(&args("iron:1", 20, &dir));
    assert!(e.contains("20 particles"), "{e}");
    let mut a = args("iron:1", 1000, &dir);
    a.mass = Some(-1.0);
    assert!(refusal(&a).contains("positive"));
    a.mass = Some(1.0);
    a.mass_kg = Some(1e24);
    assert!(refusal(&a).contains("not both"));
    a.mass_kg = None;
    a.settle = Some(f64::NAN);
    assert!(refusal(&a).contains("settle time"));
    // A previous planet's files: refused unless --overwrite.
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("profile.csv"), "").unwrap();
    let e = refusal(&args("iron:1", 1000, &dir));
    assert!(
        e.contains("previous run") && e.contains("--overwrite"),
        "{e}"
    );
    let mut a = args("iron:1", 1000, &dir);
    a.overwrite = true;
    cli::validate(&cli::config(&a).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A tiny planet through the whole command: its files, the snapshot's material ids and SI
/// values read back.
#[test]
fn a_tiny_planet_is_written() {
    let dir = std::env::temp_dir().join(format!("warpkit-planet-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut a = args("iron:0.3,granite:0.7", 300, &dir);
    a.settle = Some(0.5);
    let s = cli::run(a, BackendChoice::Cpu).unwrap();
    assert!((5.5e6..7.5e6).contains(&s.radius), "{}", s.radius);
    let snap = crate::nbody::snapshot::read_snapshot(&dir.join("planet.gadget")).unwrap();
    let gas = snap.gas.unwrap();
    assert_eq!(snap.particles.len(), 300);
    assert_eq!(gas.mat.len(), 300);
    assert!(gas.mat.contains(&0) && gas.mat.contains(&1));
    let mass: f64 = snap.particles.mass.iter().sum();
    assert!((mass / cli::EARTH_MASS - 1.0).abs() < 1e-12, "{mass}");
    let info = std::fs::read_to_string(dir.join("planet.toml")).unwrap();
    let t: toml::Table = toml::from_str(&info).unwrap();
    assert_eq!(t["units"]["system"].as_str(), Some("SI"));
    assert!(t.contains_key("criteria") && t.contains_key("criteria_coast"));
    let csv = std::fs::read_to_string(dir.join("profile.csv")).unwrap();
    assert!(csv.starts_with("r_m,mass_kg,pressure_pa,density_kg_m3,u_j_kg,layer,material"));
    // Again without --overwrite: refused.
    let e = cli::run(args("iron:0.3,granite:0.7", 300, &dir), BackendChoice::Cpu).unwrap_err();
    assert!(format!("{e:#}").contains("--overwrite"), "{e:#}");
    std::fs::remove_dir_all(&dir).unwrap();
}
