use super::*;

/// A block-step run on the CPU backend writes the per-level log and table: one `rungs.csv`
/// row per diagnostic whose particles add up to N, and the table in `timing.md`.
#[test]
fn block_step_runs_log_their_levels() {
    let dir = std::env::temp_dir().join(format!("warpkit-rungs-{}", std::process::id()));
    let mut c = RunConfig::cpu_default();
    c.ic.kind = IcKind::Plummer;
    c.ic.n = 300;
    c.run.dt = 1.0 / 16.0;
    c.run.t_end = 0.25;
    c.run.block_steps = true;
    c.output.dir = dir.join("out");
    c.output.diag_every = 2;
    c.output.image_every = 0;
    let stop = Arc::new(AtomicBool::new(false));
    let s = run(&Backend::Cpu, &c, stop).unwrap();
    let (substeps, table) = s.block.clone().expect("a block-step run");
    assert!(substeps >= 4, "{substeps} substeps in 4 blocks");
    assert!(
        table.contains("| level |") && table.contains("fewer"),
        "{table}"
    );
    let csv = std::fs::read_to_string(s.dir.join("rungs.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert!(rows[0].starts_with("time,substeps,force_evaluations,level_0,"));
    // t = 0, 0.125, 0.25.
    assert_eq!(rows.len(), 4, "{csv}");
    for row in &rows[1..] {
        let f: Vec<u64> = row.split(',').skip(3).map(|x| x.parse().unwrap()).collect();
        assert_eq!(f.iter().sum::<u64>(), 300, "{row}");
    }
    let timing = std::fs::read_to_string(s.dir.join("timing.md")).unwrap();
    assert!(timing.contains("block time steps"), "{timing}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A small Plummer run on the CPU backend into `dir`, float64 snapshots every `every` steps.
fn plummer(dir: &Path, t_end: f64, every: u64) -> RunConfig {
    let mut c = RunConfig::cpu_default();
    c.ic.kind = IcKind::Plummer;
    c.ic.n = 300;
    c.run.t_end = t_end;
    c.run.dt = 0.01;
    c.run.eps = 0.02;
    c.output.dir = dir.to_path_buf();
    c.output.diag_every = 10;
    c.output.snapshot_every = every;
    c.output.image_every = 0;
    c.output.precision = Precision::Double;
    c
}

fn max_rel_diff(a: &Particles, b: &Particles) -> f64 {
    assert_eq!(a.id, b.id);
    let rel = |x: &[f64; 3], y: &[f64; 3]| {
        let scale = x.iter().map(|v| v.abs()).fold(1e-3, f64::max);
        (0..3)
            .map(|k| (x[k] - y[k]).abs() / scale)
            .fold(0.0, f64::max)
    };
    let pos = a.pos.iter().zip(&b.pos).map(|(x, y)| rel(x, y));
    let vel = a.vel.iter().zip(&b.vel).map(|(x, y)| rel(x, y));
    pos.chain(vel).fold(0.0, f64::max)
}

/// A restart from a float64 snapshot continues the run: from the snapshot's time, with the run's
/// ε and dt (not this configuration's defaults), to the same state as the run without a stop.
#[test]
fn restart_continues_the_run() {
    let dir = std::env::temp_dir().join(format!("warpkit-restart-{}", std::process::id()));
    let stop = || Arc::new(AtomicBool::new(false));
    let a = plummer(&dir.join("a"), 1.0, 50);
    let whole = run(&Backend::Cpu, &a, stop()).unwrap();
    let mid = dir.join("a/snapshot_000050.gadget");
    let state = RunState::read(&mid)
        .unwrap()
        .expect("a run state beside the snapshot");
    assert_eq!((state.step, state.precision), (50, Precision::Double));
    assert_eq!(state.run.eps, 0.02);

    let mut b = RunConfig::cpu_default();
    b.ic.kind = IcKind::Snapshot;
    b.ic.file = Some(mid.clone());
    b.run.t_end = 1.0;
    b.output.dir = dir.join("b");
    b.output.image_every = 0;
    b.output.precision = Precision::Double;
    assert_ne!((b.run.eps, b.run.dt), (0.02, 0.01), "the defaults differ");
    let notes = b.restart(&["t_end"]).unwrap();
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!((b.run.eps, b.run.dt), (0.02, 0.01));
    let rest = run(&Backend::Cpu, &b, stop()).unwrap();
    assert_eq!(rest.first.time, state.time);
    assert!((rest.first.time - 0.5).abs() < 1e-12, "{}", rest.first.time);
    assert_eq!(rest.steps, 50);
    assert_eq!(rest.last.time, whole.last.time);
    let end = |d: &str| {
        snapshot::read_snapshot(&dir.join(d).join("snapshot_final.gadget"))
            .unwrap()
            .particles
    };
    let diff = max_rel_diff(&end("a"), &end("b"));
    assert!(diff <= 1e-12, "restart differs by {diff:.3e}");
    // The restart's final snapshot counts the steps from the first run's start.
    let last = RunState::read(&dir.join("b/snapshot_final.gadget"))
        .unwrap()
        .unwrap();
    assert_eq!(last.step, 100);

    // A setting the user gives replaces the run's, and says so.
    let mut c = b.clone();
    c.run = StepConfig::default();
    c.run.eps = 0.05;
    let notes = c.restart(&["t_end", "eps"]).unwrap();
    assert_eq!(c.run.eps, 0.05);
    assert_eq!(c.run.dt, 0.01);
    assert!(
        notes
            .iter()
            .any(|n| n == "restart: eps 0.05 overrides the run's 0.02"),
        "{notes:?}"
    );
    // An end before the snapshot's time is refused.
    let mut early = b.clone();
    early.run.t_end = 0.2;
    early.output.dir = dir.join("c");
    let e = run(&Backend::Cpu, &early, stop()).unwrap_err().to_string();
    assert!(e.contains("before the snapshot's time"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The same with block time steps: the snapshot holds the synchronised velocities, and the
/// restart opens the same steps again.
#[test]
fn block_step_restart_continues_the_run() {
    let dir = std::env::temp_dir().join(format!("warpkit-restart-block-{}", std::process::id()));
    let stop = || Arc::new(AtomicBool::new(false));
    let mut a = plummer(&dir.join("a"), 0.5, 4);
    a.run.dt = 1.0 / 16.0;
    a.run.block_steps = true;
    a.output.diag_every = 2;
    run(&Backend::Cpu, &a, stop()).unwrap();
    let mut b = a.clone();
    b.ic.kind = IcKind::Snapshot;
    b.ic.file = Some(dir.join("a/snapshot_000004.gadget"));
    b.run = StepConfig::default();
    b.run.t_end = 0.5;
    b.output.dir = dir.join("b");
    b.restart(&["t_end"]).unwrap();
    assert!(b.run.block_steps);
    let rest = run(&Backend::Cpu, &b, stop()).unwrap();
    assert_eq!(rest.first.time, 0.25);
    assert_eq!(rest.steps, 4);
    let end = |d: &str| {
        snapshot::read_snapshot(&dir.join(d).join("snapshot_final.gadget"))
            .unwrap()
            .particles
    };
    let diff = max_rel_diff(&end("a"), &end("b"));
    assert!(diff <= 1e-12, "restart differs by {diff:.3e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// docs/nbody.md's key table names every key of the configuration, read from the one definition
/// (the serialized default, `file` set so that the optional key appears), and no key that does
/// not exist: the reference cannot drift from the program.
#[test]
fn the_docs_name_every_configuration_key() {
    let mut c = RunConfig::default();
    c.ic.file = Some("snap.gadget".into());
    let value: toml::Value = toml::Value::try_from(&c).unwrap();
    let mut keys = Vec::new();
    for (table, v) in value.as_table().unwrap() {
        for key in v.as_table().unwrap().keys() {
            keys.push(format!("{table}.{key}"));
        }
    }
    assert!(keys.len() > 25, "{keys:?}");
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/nbody.md")).unwrap();
    let listed: Vec<&str> = docs
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .filter(|k| k.starts_with("ic.") || k.starts_with("run.") || k.starts_with("output."))
        .collect();
    for k in &keys {
        assert!(
            listed.contains(&k.as_str()),
            "docs/nbody.md does not list `{k}`"
        );
    }
    for k in &listed {
        assert!(
            keys.iter().any(|x| x == k),
            "docs/nbody.md lists `{k}`, which is no key"
        );
    }
}
