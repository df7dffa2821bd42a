//! The seed document's own numbers ("GASPHiA中的自引力树代码效率与优化分析",
//! `shared/seeds/000_8ec06625c1cbc393.txt`), to print beside ours. Its GPU is not named in the
//! document and is not ours: compare ratios and trends, not absolute times.

/// Said under every table that holds the seed's numbers.
pub const CAVEAT: &str = "Seed: the GASPHiA self-gravity document (float32, 10^6 particles in a \
cube, θ = 0.5 unless stated). Its GPU is not named and differs from ours, and its tree code differs \
(GASPHiA's SPH octree, not warpkit's): compare ratios and trends, not absolute times.";

/// The first test (lattice, 10^6 bodies, θ = 0.5), ms per stage: (stage, regular, shuffled).
/// The document prints its two listings under swapped labels: its text and its profile table
/// (0.19 s regular, 3.10 s shuffled) say the shuffled order is the slow one, so the slow listing
/// is given here as "shuffled".
pub const FIRST_TEST_MS: [(&str, f64, f64); 5] = [
    ("reset", 10.7203, 11.6206),
    ("bounding box", 0.4361, 0.4268),
    ("build", 44.1606, 45.4690),
    ("centre of mass", 0.1303, 0.1025),
    ("gravity", 202.4100, 2955.5117),
];

/// One row of the seed's gravity-kernel profile (ncu): the metric, the ncu metric we collect for
/// it, and the seed's values for (random, regular, sorted) where it gives them. Values marked
/// with † come from the document's first profile (regular vs shuffled, a slower run of the same
/// kernel before the three-mode table).
pub struct ProfileRow {
    pub name: &'static str,
    pub metric: &'static str,
    pub seed: [&'static str; 3],
}

pub const PROFILE: [ProfileRow; 10] = [
    ProfileRow {
        name: "duration",
        metric: "gpu__time_duration.sum",
        seed: ["33.13 ms", "5.13 ms", "3.11 ms"],
    },
    ProfileRow {
        name: "instructions executed",
        metric: "smsp__inst_executed.sum",
        seed: ["24.62e9", "4.19e9", "2.21e9"],
    },
    ProfileRow {
        name: "L1/TEX hit rate",
        metric: "l1tex__t_sector_hit_rate.pct",
        seed: ["48.23 %", "57.52 %", "58.66 %"],
    },
    ProfileRow {
        name: "L2 throughput",
        metric: "lts__t_sectors.avg.pct_of_peak_sustained_elapsed",
        seed: ["14.1 % †", "23.9 % †", "–"],
    },
    ProfileRow {
        name: "DRAM throughput",
        metric: "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        seed: ["15.7 % †", "0.35 % †", "–"],
    },
    ProfileRow {
        name: "DRAM bandwidth",
        metric: "dram__bytes.sum.per_second",
        seed: ["2.37 GB/s", "8.14 GB/s", "12.25 GB/s"],
    },
    ProfileRow {
        name: "executed IPC",
        metric: "sm__inst_executed.avg.per_cycle_active",
        seed: ["2.97", "2.99", "2.74"],
    },
    ProfileRow {
        name: "achieved occupancy",
        metric: "sm__warps_active.avg.pct_of_peak_sustained_active",
        seed: ["95.2 % †", "98.6 % †", "–"],
    },
    ProfileRow {
        name: "SM frequency",
        metric: "smsp__cycles_elapsed.avg.per_second",
        seed: ["0.83 GHz †", "1.55 GHz †", "–"],
    },
    ProfileRow {
        name: "elapsed cycles",
        metric: "sm__cycles_elapsed.max",
        seed: ["2.58e9 †", "0.29e9 †", "–"],
    },
];

/// Gravity-kernel times of the three-mode profile, ms: random, regular, sorted.
pub const GRAVITY_MS: [f64; 3] = [33.13, 5.13, 3.11];

/// (θ, ms, max rel. error, mean rel. error, speedup over brute force).
pub type ThetaRow = (f64, f64, f64, f64, f64);

/// The θ table at 10^6 bodies: (θ, ms, max rel. error, mean rel. error, speedup over brute force).
pub const THETA: [ThetaRow; 8] = [
    (0.1, 181.877, 0.00219153, 3.27768e-05, 7.42231),
    (0.2, 39.5222, 0.00502609, 6.86399e-05, 34.1566),
    (0.3, 14.9356, 0.0214612, 0.00015996, 90.3847),
    (0.4, 8.75622, 0.0335255, 0.00028779, 154.17),
    (0.5, 5.88032, 0.0711218, 0.00053247, 229.57),
    (0.6, 4.20147, 0.0565245, 0.000783245, 321.303),
    (0.7, 3.52717, 0.106591, 0.00153542, 382.728),
    (0.8, 3.21018, 0.170889, 0.002965, 420.521),
];

/// The seed's θ table row for `theta`, if it has one.
pub fn theta_row(theta: f64) -> Option<ThetaRow> {
    THETA.iter().copied().find(|r| (r.0 - theta).abs() < 1e-6)
}
