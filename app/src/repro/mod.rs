//! Reproductions of the seed documents' tables and figures (`warpkit repro <name>`).
//!
//! Each reproduction measures through [`measure`] (one code path for both backends), streams its
//! rows into `DIR/<name>/data.csv` as they are measured, and writes `table.md` (our numbers beside
//! the seed's), `meta.json` (machine, commit, date, every parameter) and PNG + SVG figures
//! ([`output`], [`meta`], [`plot`]). The GPU runs the document's sizes; the CPU backend runs
//! smaller defaults so that `repro all` ends in minutes on two cores.
//!
//! | name | what | seed |
//! | --- | --- | --- |
//! | [`sort`] | per-stage times of the three traversal orders, ncu profile | its profile tables |
//! | [`theta`] | time, error and speedup against θ | its θ table |
//! | [`scaling`] | time against N: brute force, three orders, tree build | its two N figures |
//! | [`storage`] | bytes per body, build and traversal time against N per storage | – |
//! | [`fem`] | hex8 assembly time per strategy and mesh, speedups, Jacobian table, colouring vs atomics | the FEM paper's speedups and Table 1 |
//! | [`sbh`] | stochastic against deterministic Barnes–Hut: time and error per M, convergence, error slices | the SBH paper's table and figures |
//! | [`gravity`] (not in `all`) | the accuracy–time frontier of every gravity kernel and option, equal-error table | its θ curve |
//! | [`hydro`] | the CPU SPH solver on Sod, Sedov–Taylor, Evrard and the polytrope: profiles against the exact solutions, L1 errors at three resolutions, time per stage | the standard tests |
//! | [`neighbours`] | SPH neighbour search: tree (group, vote) against linked cells, three distributions, 32/64/128 neighbours, against N | the targets |
//! | [`collision`] (not in `all`) | the 5·10^6-particle galaxy collision: time per step by stage, energy, snapshots | the document's collision run |
//! | [`impact`] | the demo giant impact at a small N: remnant, disk and escaping mass against time, conservation | SWIFT's DemoImpact set-up |
//! | [`multigpu`] (not in `all`) | gravity over K ranks (NCCL GPUs, virtual ranks on one GPU, or CPU threads): strong and weak scaling, communication beside compute, efficiency | the targets |

pub mod collision;
pub mod fem;
pub mod gravity;
pub mod hydro;
pub mod impact;
pub mod measure;
pub mod meta;
pub mod multigpu;
pub mod ncu;
pub mod neighbours;
pub mod output;
pub mod pack;
pub mod plot;
pub mod sbh;
pub mod scaling;
pub mod seed;
pub mod sort;
pub mod storage;
pub mod theta;

use output::{OutDir, OutputError, Report};
use std::path::PathBuf;
use warpkit::backend::Backend;
use warpkit::bh::gpu::BhError;

/// `warpkit repro <name>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, warpkit::choice::Choice)]
pub enum Name {
    /// Three traversal orders at N = 2^20: per-stage times, ratios, ncu profile.
    Sort,
    /// θ = 0.1 … 0.8: time, error against float64 direct summation, speedup.
    Theta,
    /// Time against N for brute force, the three orders and the tree build.
    Scaling,
    /// Dense (and, once it lands, sparse) octree storage: bytes per body and times against N.
    Storage,
    /// FEM hex8 stiffness assembly: time per strategy and mesh size, speedup over the
    /// thread-per-element baseline, the Jacobian-method table, colouring against atomics.
    Fem,
    /// Stochastic against deterministic Barnes–Hut: the SBH paper's table (time, mean / median /
    /// max error per M), its convergence figure, error slices and which is faster at equal error.
    Sbh,
    /// All of the above and an index `README.md`.
    All,
    /// Gravity's accuracy–time frontier: every kernel and option (vote, group, group2, ±
    /// quadrupoles, the relative criterion) on three scenes against float64 direct summation,
    /// and the fastest configuration at each error level; not part of `all`.
    Gravity,
    /// SPH neighbour search: tree against linked cells on uniform, Plummer and
    /// ρ ∝ 1/r sets, 32/64/128 neighbours, against N.
    Neighbours,
    /// The self-gravity document's N-body galaxy collision (5·10^6 particles on the GPU, 2000
    /// on the CPU backend); not part of `all`.
    Collision,
    /// Gravity over K = 1, 2, 4, 8 ranks: strong (Plummer 2^24 on the GPU) and weak
    /// (2^23 per rank) scaling, one rank per GPU over NCCL with two or more GPUs, else K virtual
    /// ranks on one GPU (or CPU threads); communication beside compute, efficiency, force error
    /// across K; not part of `all`.
    Multigpu,
    /// SPH hydrodynamics on the CPU float64 solver: the Sod shock tube, the Sedov–Taylor blast,
    /// the Evrard collapse and the polytrope against their exact solutions, L1 errors at three
    /// resolutions, the step's time by stage.
    Hydro,
    /// A planetary giant impact (SWIFT's demo: 0.887 and 0.133 Earth masses, iron and granite,
    /// 45°, the mutual escape speed) at a small N (--n; 1000 on the CPU): remnant, disk and
    /// escaping mass against time, conservation, time per step.
    Impact,
}

impl Name {
    pub fn as_str(self) -> &'static str {
        match self {
            Name::Sort => "sort",
            Name::Theta => "theta",
            Name::Scaling => "scaling",
            Name::Storage => "storage",
            Name::Fem => "fem",
            Name::Sbh => "sbh",
            Name::All => "all",
            Name::Gravity => "gravity",
            Name::Neighbours => "neighbours",
            Name::Collision => "collision",
            Name::Multigpu => "multigpu",
            Name::Hydro => "hydro",
            Name::Impact => "impact",
        }
    }
}

/// Failures of a reproduction. Rows measured before a failure stay in `data.csv`, and `table.md`
/// says where it stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReproError {
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error(transparent)]
    Plot(#[from] plot::PlotError),
    #[error(transparent)]
    Bh(#[from] BhError),
    #[error("invalid --n {n}: {why}")]
    InvalidN { n: usize, why: String },
    #[error("invalid --sizes {sizes}: {why}")]
    InvalidSizes { sizes: String, why: String },
    #[error(transparent)]
    Fem(#[from] warpkit::fem::FemError),
    #[error(transparent)]
    Sbh(#[from] warpkit::sbh::SbhError),
    #[error(transparent)]
    SbhGpu(#[from] warpkit::sbh::gpu::SbhGpuError),
    #[error("invalid --repeats 0: at least one timed run is needed")]
    NoRepeats,
    #[error("invalid --grid {grid}: {why}")]
    InvalidGrid { grid: usize, why: String },
    #[error(transparent)]
    Ncu(#[from] ncu::NcuError),
    #[error("repro all: {0} failed (the others completed; see the errors above and README.md)")]
    Failed(String),
    #[error(transparent)]
    Sph(#[from] warpkit::sph::gpu::SphGpuError),
    #[error(transparent)]
    Multi(#[from] warpkit::multi::MultiError),
    #[error("nbody: {0}")]
    Nbody(String),
    #[error("sph: {0}")]
    Hydro(String),
    #[error("{name}: {source}")]
    In {
        name: &'static str,
        #[source]
        source: Box<ReproError>,
    },
}

/// What every reproduction is given.
#[derive(Clone)]
pub struct Settings {
    pub backend: Backend,
    /// The root output directory; each reproduction writes `out/<name>/`.
    pub out: PathBuf,
    /// `sort`, `theta`: the number of bodies; `scaling`, `storage`: the largest.
    pub n: Option<usize>,
    /// Timed repeats per point (each reproduction has a backend-dependent default).
    pub repeats: Option<usize>,
    /// `fem`: cube edges (elements per side) of the meshes; default per backend.
    pub fem_sizes: Option<Vec<usize>>,
    /// `sbh`: the query grid's cells per side; default per backend.
    pub grid: Option<usize>,
    /// Seed of scenes and shuffles.
    pub seed: u64,
    /// Print each table to stdout when done.
    pub print: bool,
}

impl Settings {
    pub fn is_gpu(&self) -> bool {
        self.backend.is_gpu()
    }
    /// `gpu` on the GPU, `cpu` on the CPU backend.
    pub fn pick<T>(&self, gpu: T, cpu: T) -> T {
        if self.is_gpu() { gpu } else { cpu }
    }
    pub fn repeats_or(&self, gpu: usize, cpu: usize) -> usize {
        self.repeats.unwrap_or(self.pick(gpu, cpu)).max(1)
    }
    fn dir(&self, name: &str) -> Result<OutDir, OutputError> {
        OutDir::create(&self.out, name)
    }
}

/// What a finished reproduction leaves, for the index.
#[derive(Clone, Debug)]
pub struct Summary {
    pub name: &'static str,
    pub title: String,
    /// One line of results.
    pub headline: String,
    /// Figures written (stems, relative to the reproduction's directory).
    pub figures: Vec<(String, String)>,
}

/// Checks `--n` for a run of up to `n` bodies: at least 2, addressable by the tree's 32-bit
/// indices, and within the memory of the backend (a rough bound; the GPU checks exactly again).
pub fn check_n(backend: &Backend, n: usize) -> Result<(), ReproError> {
    let bad = |why: String| Err(ReproError::InvalidN { n, why });
    if n < 2 {
        return bad("at least 2 bodies are needed".into());
    }
    if n > i32::MAX as usize / 2 {
        return bad(format!(
            "at most {} bodies fit the tree's 32-bit indices",
            i32::MAX / 2
        ));
    }
    warpkit::bh::check_memory(backend, n).or_else(bad)
}

/// One reproduction's entry point.
type RunFn = fn(&Settings) -> Result<Summary, ReproError>;

/// Runs reproduction `name` (all of them for `All`).
pub fn run(name: Name, s: &Settings) -> Result<Vec<Summary>, ReproError> {
    if let Some(n) = s.n {
        if name == Name::Fem {
            return Err(ReproError::InvalidN {
                n,
                why: "repro fem takes --sizes (cube edges, e.g. --sizes 8,16), not --n".into(),
            });
        }
        check_n(&s.backend, n)?;
    }
    if let Some(sizes) = &s.fem_sizes {
        if !matches!(name, Name::Fem | Name::All) {
            return Err(ReproError::InvalidSizes {
                sizes: format!("{sizes:?}"),
                why: format!("--sizes is for repro fem (and all), not {}", name.as_str()),
            });
        }
        fem::check_sizes(&s.backend, sizes)?;
    }
    // Refused, not raised to 1 behind the user's back (a "median of 1 runs").
    if s.repeats == Some(0) {
        return Err(ReproError::NoRepeats);
    }
    if let Some(grid) = s.grid {
        if !matches!(name, Name::Sbh | Name::All) {
            return Err(ReproError::InvalidGrid {
                grid,
                why: format!("--grid is for repro sbh (and all), not {}", name.as_str()),
            });
        }
        sbh::check_grid(&s.backend, grid)?;
    }
    let one = |name: &'static str, r: Result<Summary, ReproError>| {
        r.map_err(|e| ReproError::In {
            name,
            source: Box::new(e),
        })
    };
    match name {
        Name::Sort => Ok(vec![one("sort", sort::run(s))?]),
        Name::Theta => Ok(vec![one("theta", theta::run(s))?]),
        Name::Scaling => Ok(vec![one("scaling", scaling::run(s))?]),
        Name::Storage => Ok(vec![one("storage", storage::run(s))?]),
        Name::Fem => Ok(vec![one("fem", fem::run(s))?]),
        Name::Sbh => Ok(vec![one("sbh", sbh::run(s))?]),
        Name::Gravity => Ok(vec![one("gravity", gravity::run(s))?]),
        Name::Collision => Ok(vec![one("collision", collision::run(s))?]),
        Name::Neighbours => Ok(vec![one("neighbours", neighbours::run(s))?]),
        Name::Multigpu => Ok(vec![one("multigpu", multigpu::run(s))?]),
        Name::Hydro => Ok(vec![one("hydro", hydro::run(s))?]),
        Name::Impact => Ok(vec![one("impact", impact::run(s))?]),
        Name::All => {
            let mut done = Vec::new();
            let mut failed = Vec::new();
            let all: [(&'static str, RunFn); 9] = [
                ("sort", sort::run),
                ("theta", theta::run),
                ("scaling", scaling::run),
                ("storage", storage::run),
                ("fem", fem::run),
                ("sbh", sbh::run),
                ("neighbours", neighbours::run),
                ("hydro", hydro::run),
                ("impact", impact::run),
            ];
            let bar = output::progress(all.len() as u64, "all");
            for (name, f) in all {
                bar.set_message(name);
                // One failure does not stop the others; each is reported in the index.
                match f(s) {
                    Ok(sum) => done.push(sum),
                    Err(e) => {
                        eprintln!("error: repro {name}: {e}");
                        failed.push((name, e.to_string()));
                    }
                }
                bar.inc(1);
                // Ctrl-C: no further reproduction starts; the index lists what was done.
                if output::interrupted() {
                    break;
                }
            }
            bar.finish_and_clear();
            write_index(s, &done, &failed)?;
            if !failed.is_empty() {
                let names: Vec<&str> = failed.iter().map(|f| f.0).collect();
                return Err(ReproError::Failed(names.join(", ")));
            }
            Ok(done)
        }
    }
}

/// `DIR/README.md`: every reproduction's table and figures, and the machine.
pub fn write_index(
    s: &Settings,
    done: &[Summary],
    failed: &[(&str, String)],
) -> Result<PathBuf, ReproError> {
    let mut r = Report::new("warpkit reproductions");
    r.para(&format!(
        "Machine: {}. Commit `{}`, warpkit {}, {}. Regenerate with `warpkit repro all --backend {} \
         --out DIR`{}.",
        meta::machine_line(&s.backend),
        meta::commit(),
        env!("CARGO_PKG_VERSION"),
        meta::utc_now(),
        s.backend.name(),
        s.n.map(|n| format!(" --n {n}")).unwrap_or_default()
            + &s.fem_sizes
                .as_ref()
                .map(|v| {
                    let v: Vec<String> = v.iter().map(|n| n.to_string()).collect();
                    format!(" --sizes {}", v.join(","))
                })
                .unwrap_or_default()
            + &s.grid.map(|g| format!(" --grid {g}")).unwrap_or_default(),
    ));
    r.para(seed::CAVEAT);
    for sum in done {
        r.heading(&sum.title);
        r.para(&format!(
            "{} — [table]({n}/table.md), [data]({n}/data.csv), [metadata]({n}/meta.json)",
            sum.headline,
            n = sum.name
        ));
        for (stem, caption) in &sum.figures {
            r.para(&format!(
                "![{caption}]({n}/{stem}.png) ([SVG]({n}/{stem}.svg))",
                n = sum.name
            ));
        }
    }
    if !failed.is_empty() {
        r.heading("Failed");
        for (name, e) in failed {
            r.para(&format!(
                "`{name}`: {e} (rows measured before the failure are in [{name}/data.csv]({name}/data.csv))"
            ));
        }
    }
    let path = s.out.join("README.md");
    std::fs::create_dir_all(&s.out).map_err(|source| OutputError::CreateDir {
        path: s.out.clone(),
        source,
    })?;
    output::write_atomic(&path, r.as_str().as_bytes())?;
    Ok(path)
}

/// Writes `table.md` and `meta.json` of a reproduction, and prints the table when asked. Called
/// on success and on failure (then with a note of where the sweep stopped).
pub(crate) fn finish(
    s: &Settings,
    dir: &OutDir,
    report: &mut Report,
    meta: serde_json::Value,
    failure: Option<&ReproError>,
) -> Result<(), ReproError> {
    let mut meta = meta;
    if let Some(ReproError::Output(OutputError::Interrupted)) = failure {
        report.heading("Interrupted");
        report.para(
            "The run was interrupted (Ctrl-C). The rows above and in `data.csv` were measured before it.",
        );
        meta["status"] = "interrupted".into();
    } else if let Some(e) = failure {
        report.heading("Incomplete");
        report.para(&format!(
            "The run stopped: {e}. The rows above and in `data.csv` were measured before it."
        ));
        meta["status"] = format!("failed: {e}").into();
    } else {
        meta["status"] = "complete".into();
    }
    report.write(dir)?;
    let json = serde_json::to_string_pretty(&meta).unwrap_or_else(|_| "{}".into());
    dir.write("meta.json", json.as_bytes())?;
    if s.print {
        println!("{}", report.as_str());
    }
    Ok(())
}

/// Formats milliseconds for tables.
pub fn fmt_ms(ms: f64) -> String {
    if !ms.is_finite() {
        "–".into()
    } else if ms >= 100.0 {
        format!("{ms:.1}")
    } else if ms >= 1.0 {
        format!("{ms:.3}")
    } else {
        format!("{ms:.4}")
    }
}

/// `2^k` when `n` is a power of two, else `n`.
pub fn fmt_n(n: usize) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

/// The values of `defaults` below `n`, then `n` itself (the largest size of a sweep).
pub fn capped(defaults: &[usize], n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = defaults.iter().copied().filter(|&d| d < n).collect();
    v.push(n);
    v
}

/// Powers of two from `2^lo` up to `max` (and `max` itself when it is not one).
pub fn sizes(lo: u32, max: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (lo..usize::BITS)
        .map(|k| 1usize << k)
        .take_while(|&n| n <= max)
        .collect();
    if v.last() != Some(&max) && max >= 2 {
        v.push(max);
    }
    v
}
