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
