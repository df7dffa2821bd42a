//! `warpkit impact`'s case: refusals before any work, and a body from a `warpkit planet`
//! snapshot beside one built here (materials merged by name, equal particle masses).

use super::cli::{self, ImpactArgs, Source};
use crate::planet::cli::{self as planet_cli, PlanetArgs};

/// A scratch directory for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("warpkit-impact-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The refusal of the case `toml` (with `[output] dir` inside `dir`).
fn refusal(dir: &std::path::Path, toml: &str) -> String {
    let path = dir.join("case.toml");
    std::fs::write(&path, toml).unwrap();
    let a = ImpactArgs {
        config: Some(path),
        out: Some(dir.join("out")),
        ..Default::default()
    };
    match cli::config(&a).and_then(|c| cli::validate(&c)) {
        Ok(_) => panic!("accepted: {toml}"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn bad_impacts_are_refused_before_any_work() {
    let dir = scratch("refusals");
    let cases = [
        (
            "[target]\nmass_earth = 1\nlayers = [{ material = \"iron\", fraction = 0.3 }, \
             { material = \"cheese\", fraction = 0.7 }]",
            "unknown material \"cheese\"",
        ),
        (
            "[impactor]\nmass_earth = 0.1\nlayers = [{ material = \"iron\", fraction = 0.3 }, \
             { material = \"granite\", fraction = 0.6 }]",
            "sum to 0.900000",
        ),
        // A core too thin for a single particle of the impactor's share.
        (
            "[impactor]\nmass_earth = 0.133\nlayers = [{ material = \"iron\", fraction = 0.0005 }, \
             { material = \"granite\", fraction = 0.9995 }]",
            "layer 0 would hold no particle",
        ),
        // Too massive for the ice's adiabat table.
        (
            "[target]\nmass_earth = 30000\nlayers = [{ material = \"ice\", fraction = 1 }]",
            "does not reach the pressure",
        ),
        (
            "[target]\nlayers = [{ material = \"iron\", fraction = 1 }]",
            "give the body's mass",
        ),
        ("[impact]\nseparation = 0.9", "overlap"),
        ("[impact]\nv_c = -1", "v_c = -1 must be positive"),
        ("[impact]\nv_c_m_s = 0", "must be positive"),
        ("[impact]\nb = 1", "b = 1 must be in [0, 1)"),
        ("[impact]\nb = -0.2", "must be in [0, 1)"),
        (
            "[impact]\nangle_deg = 90",
            "angle_deg = 90 must be in [0, 90)",
        ),
        ("[impact]\nb = 0.5\nangle_deg = 30", "not both"),
        ("[impact]\nt_contact = -5", "t_contact = -5"),
        ("[impact]\nt_contact = 60\nseparation = 3", "not both"),
        // A bound orbit traced back past its apoapsis.
        ("[impact]\nv_c = 0.5\nt_contact = 1e6", "apoapsis"),
        ("[particles]\nn = 150", "150 particles"),
        (
            "[particles]\nn = 400",
            "the impactor would have 52 particles",
        ),
        (
            "[output]\nformat = \"gadget1\"",
            "no block names to carry the material ids",
        ),
        ("[run]\nt_end = 0", "t_end = 0 must be > 0"),
        ("[run]\ncourant = 2", "courant"),
        (
            "[target]\nsnapshot = \"nowhere.gadget\"",
            "reading nowhere.gadget",
        ),
        (
            "[target]\nsnapshot = \"x.gadget\"\nmass_earth = 1",
            "either `snapshot` or a planet to build",
        ),
        ("[impact]\nspeed = 1", "unknown field `speed`"),
    ];
    for (toml, want) in cases {
        let e = refusal(&dir, toml);
        assert!(e.contains(want), "{toml}: {e}");
    }
    // A previous run's files: refused unless overwrite.
    std::fs::create_dir_all(dir.join("out")).unwrap();
    std::fs::write(dir.join("out/outcome.csv"), "").unwrap();
    let e = refusal(&dir, "");
    assert!(
        e.contains("previous run") && e.contains("--overwrite"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A 300-particle planet of `warpkit planet` (iron and basalt) as the impactor: its materials
/// come from its planet.toml and join the target's by name, and the target built here takes its
/// particle mass.
#[test]
fn a_planet_snapshot_joins_a_built_target() {
    let dir = scratch("snapshot");
    planet_cli::run(
        PlanetArgs {
            mass: Some(0.2),
            layers: Some("iron:0.3,basalt:0.7".into()),
            particles: Some(300),
            settle: Some(0.0),
            out: Some(dir.join("imp")),
            ..Default::default()
        },
        crate::backend::BackendChoice::Cpu,
    )
    .unwrap();
    let case = dir.join("case.toml");
    std::fs::write(
        &case,
        format!(
            "[impactor]\nsnapshot = \"{}\"\n[settle]\ntime = 0\n",
            dir.join("imp/planet.gadget").display()
        ),
    )
    .unwrap();
    let c = cli::config(&ImpactArgs {
        config: Some(case),
        out: Some(dir.join("out")),
        ..Default::default()
    })
    .unwrap();
    let setup = cli::validate(&c).unwrap();
    assert_eq!(setup.materials, ["iron", "granite", "basalt"]);
    assert!(matches!(setup.impactor.source, Source::Snapshot { .. }));
    assert_eq!(setup.impactor.particles, 300);
    // 0.887 Earth masses at the impactor's particle mass (0.2/300 Earth masses).
    assert_eq!(
        setup.target.particles,
        (0.887 / 0.2 * 300.0f64).round() as usize
    );
    let gas = cli::assemble(&c, &setup, &crate::backend::Backend::Cpu).unwrap();
    let n_t = setup.target.particles;
    assert_eq!(gas.len(), n_t + 300);
    assert!(gas.mat[..n_t].iter().all(|&m| m < 2));
    // The impactor's basalt (its id 1) is the run's id 2; its iron stays 0.
    assert!(gas.mat[n_t..].iter().all(|&m| m == 0 || m == 2));
    assert_eq!(gas.mat[n_t..].iter().filter(|&&m| m == 0).count(), 90);
    // Both bodies at rest in the centre-of-mass frame but for their orbital velocities.
    let m: f64 = gas.mass.iter().sum();
    for k in 0..3 {
        let p: f64 = (0..gas.len()).map(|i| gas.mass[i] * gas.vel[i][k]).sum();
        assert!(p.abs() < 1e-9 * m * setup.contact.v_c, "momentum {p}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Without the `hdf5` feature, HDF5 snapshots are refused by name before any work.
#[cfg(not(feature = "hdf5"))]
#[test]
fn hdf5_snapshots_without_the_feature_are_refused() {
    let dir = scratch("no-hdf5");
    let e = refusal(&dir, "[output]\nformat = \"hdf5\"");
    assert!(e.contains("hdf5"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
