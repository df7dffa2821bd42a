//! `repro fem`'s bandwidth section: the compulsory-traffic model of each strategy, the copy
//! bandwidth measured in the same run, the floors and the achieved rates.

use super::*;

/// What [`min_bytes`] states, said under the bandwidth tables.
pub const TRAFFIC_MODEL: &str = "Bytes = a model of the compulsory DRAM traffic of each \
strategy's algorithm (every input read once, every output written once; caches can make the real \
traffic higher — a value's 32-byte sector moved once per colour — or lower — positions or \
coordinates of neighbouring elements shared in L2), with the mesh's real element, node and \
nonzero counts and s = 4 bytes per float32 value. Element-centric strategies (all but `rows` and \
`rows-rounds`): the values zeroed (nnz · s), per element 576 read-modify-write updates (576 · 2s), \
their positions (576 · 4 bytes; 72 · 4 for the block-table strategies), the connectivity \
(8 · 4) and coordinates (24 · s); `two-kernel` also writes and reads its geometry (256 values per \
element, 2 · 256 · s). Node-row strategies (`rows`, `rows-rounds`): the values written once \
(nnz · s), per node its three row pointers and its adjacency pointer (4 · 4), per adjacency \
entry (8 per element) the entry (4), the element's 8 block bases (8 · 4), connectivity (8 · 4) \
and coordinates (24 · s). Achieved = model bytes / median time.";

/// Bytes of the 576 read-modify-write updates per element (each value read and written) over
/// `elements` elements with `value`-byte values: the element-centric strategies' floor.
pub fn rmw_bytes(elements: usize, value: usize) -> u64 {
    (elements * ENTRIES * 2 * value) as u64
}

/// Bytes of writing each of `nnz` values once: the node-row strategies' floor.
pub fn write_once_bytes(nnz: usize, value: usize) -> u64 {
    (nnz * value) as u64
}

/// The bytes `strategy`'s algorithm must move at minimum to assemble a mesh of `elements` hex8
/// elements on `nodes` nodes into `nnz` CSR values of `value` bytes each: a model of compulsory
/// traffic (each input read once, each output written once), not a measurement — caches can make
/// the real DRAM traffic higher (a colour's scattered updates move whole 32-byte sectors) or lower
/// (inputs shared by neighbouring elements served from L2). [`TRAFFIC_MODEL`] states it in words:
///
/// - element-centric strategies (all but [`Strategy::node_rows`]): zeroing nnz values (written),
///   per element 576 updates each read and written ([`rmw_bytes`]), their position table reads
///   (576 × 4 bytes, or [`BLOCK_TABLE`] = 72 × 4 for [`Strategy::block_positions`]), the
///   connectivity (8 × 4) and the coordinates (24 values); [`Strategy::TwoKernel`] additionally
///   writes and reads its geometry ([`GEOMETRY_VALUES`] = 256 values per element);
/// - node-row strategies (`rows`, `rows-rounds`): the values written once ([`write_once_bytes`]),
///   per node its three row pointers and its adjacency pointer (4 × 4 bytes), per adjacency entry
///   (8 per element) the entry (4), the element's 8 block bases (8 × 4), its connectivity (8 × 4)
///   and coordinates (24 values).
pub fn min_bytes(
    strategy: Strategy,
    elements: usize,
    nodes: usize,
    nnz: usize,
    value: usize,
) -> u64 {
    let (e, idx) = (elements as u64, 4u64);
    let geometry_in = NODES as u64 * idx + 3 * NODES as u64 * value as u64;
    if strategy.node_rows() {
        let per_node = 3 * idx + idx;
        let per_entry = idx + NODES as u64 * idx + geometry_in;
        return write_once_bytes(nnz, value)
            + nodes as u64 * per_node
            + NODES as u64 * e * per_entry;
    }
    let positions = if strategy.block_positions() {
        BLOCK_TABLE
    } else {
        ENTRIES
    } as u64;
    let two_kernel = if strategy == Strategy::TwoKernel {
        2 * GEOMETRY_VALUES as u64 * value as u64
    } else {
        0
    };
    write_once_bytes(nnz, value)
        + rmw_bytes(elements, value)
        + e * (positions * idx + geometry_in + two_kernel)
}

/// A device-to-device copy timed in this run: the bandwidth the achieved rates are compared with.
#[derive(Clone, Copy, Debug)]
pub struct CopyBandwidth {
    /// Bytes of the buffer copied (the copy moves twice this: read + write).
    pub buffer: usize,
    pub repeats: usize,
    /// Median time of one copy.
    pub ms: f64,
}

impl CopyBandwidth {
    /// Read + write bytes per second, in GB/s (10⁹).
    pub fn gb_s(&self) -> f64 {
        2.0 * self.buffer as f64 / (self.ms * 1e-3) / 1e9
    }
    /// Milliseconds to move `bytes` at this bandwidth.
    pub fn ms_for(&self, bytes: u64) -> f64 {
        bytes as f64 / (self.gb_s() * 1e9) * 1e3
    }
}

/// Copies a float32 buffer of `values` values to another `repeats` times after one warm-up, each
/// between CUDA events ([`Gpu::time`], as the assemblies are timed): the median.
pub(super) fn copy_bandwidth(
    gpu: &Gpu,
    values: usize,
    repeats: usize,
) -> Result<CopyBandwidth, FemError> {
    let src = gpu.alloc_zeros::<f32>(values)?;
    let mut dst = gpu.alloc_zeros::<f32>(values)?;
    gpu.copy(&src, &mut dst)?;
    gpu.sync()?;
    let mut times = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let ((), ms) = gpu.time(|| gpu.copy(&src, &mut dst))?;
        times.push(ms);
    }
    Ok(CopyBandwidth {
        buffer: values * std::mem::size_of::<f32>(),
        repeats,
        ms: median(&times).unwrap_or(f64::NAN),
    })
}

/// `bytes` in decimal units (B, kB, MB, GB).
pub fn fmt_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}

/// The floors (RMW updates, values written once) at the copy bandwidth, each strategy's model
/// bytes and its achieved rate against the copy bandwidth.
pub(super) fn bandwidth_tables(
    gpu: bool,
    report: &mut Report,
    runs: &[Run],
    measured: &[usize],
    rows: &[Row],
    copy: Option<CopyBandwidth>,
) {
    report.heading("Achieved bandwidth against the CSR traffic floor");
    report.para(&match copy {
        Some(c) => format!(
            "Copy bandwidth measured in this run: {:.0} GB/s (read + write bytes: a \
             device-to-device copy of a {} float32 buffer, median {} ms of {} copies after a \
             warm-up, CUDA events as for the assemblies). Floors in float32 at that bandwidth: \
             the RMW floor is the time of the element-centric strategies' 576 read-modify-write \
             updates per element alone (576 · 2 · 4 bytes per element); the write-once floor \
             that of writing each of the nnz values once (nnz · 4 bytes), which the node-row \
             strategies (`rows`, `rows-rounds`: no zeroing, no read-modify-write) can approach.",
            c.gb_s(),
            fmt_bytes(c.buffer as u64),
            fmt_ms(c.ms),
            c.repeats
        ),
        None => format!(
            "{}: no copy bandwidth measured, so no floors in time and no percentages; rerun \
             with `--backend gpu`.",
            if gpu {
                "The measurement stopped before the copy"
            } else {
                "The CPU backend times host paths, not GPU strategies"
            }
        ),
    });
    let mut t = Table::new(&[
        "mesh",
        "elements",
        "nodes",
        "nnz",
        "RMW updates",
        "RMW floor (ms)",
        "write-once floor (ms)",
        "fastest (ms)",
    ]);
    for &n in measured {
        let at: Vec<&Row> = rows.iter().filter(|r| r.edge == n).collect();
        let Some(r) = at.first() else { continue };
        let floor = |b: u64| copy.map_or("–".into(), |c| fmt_ms(c.ms_for(b)));
        let fastest = at
            .iter()
            .filter(|x| x.model_bytes().is_some())
            .min_by(|a, b| a.ms.total_cmp(&b.ms))
            .map_or("–".into(), |x| {
                format!("{} (`{}`)", fmt_ms(x.ms), x.run.label())
            });
        t.push(vec![
            size_label(n),
            group_digits(r.elements),
            group_digits(r.nodes),
            group_digits(r.nnz),
            group_digits(r.elements * ENTRIES),
            floor(rmw_bytes(r.elements, 4)),
            floor(write_once_bytes(r.nnz, 4)),
            fastest,
        ]);
    }
    report.table(&t);

    let mut head = vec!["strategy".to_string()];
    head.extend(measured.iter().map(|&n| format!("{n}³")));
    let mut bytes = Table::new(&head);
    head.push("model".into());
    let mut rate = Table::new(&head);
    for &r in runs {
        let mut b = vec![format!("`{}`", r.label())];
        let mut a = b.clone();
        for &n in measured {
            let x = find(rows, r, n);
            b.push(x.and_then(Row::model_bytes).map_or("–".into(), fmt_bytes));
            a.push(match x.and_then(Row::achieved_gb_s) {
                Some(g) => match x.and_then(|x| x.percent_of(copy)) {
                    Some(p) => format!("{g:.0} GB/s ({p:.0}%)"),
                    None => format!("{g:.0} GB/s"),
                },
                None => "–".into(),
            });
        }
        a.push(match r.method {
            Method::Gpu(st) if st.node_rows() => "write once".into(),
            Method::Gpu(_) => "zero + RMW".into(),
            _ => "–".into(),
        });
        bytes.push(b);
        rate.push(a);
    }
    report.para("Compulsory bytes per assembly (model):");
    report.table(&bytes);
    report.para(&format!(
        "Achieved rate (model bytes / median time) and its percentage of the copy bandwidth{}:",
        copy.map_or(String::new(), |c| format!(" ({:.0} GB/s)", c.gb_s()))
    ));
    report.table(&rate);
    report.para(TRAFFIC_MODEL);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 2×2×2 cantilever counted by hand: 8 elements, 27 nodes, and per axis 2 + 3 + 2 = 7
    /// neighbour nodes summed over the 3 node positions, so 7³ = 343 node pairs of 9 values.
    #[test]
    fn byte_model_on_a_2x2x2_cantilever() {
        let p = Problem::new(mesh::cantilever([1.0; 3], [2; 3]).unwrap()).unwrap();
        let (e, nodes, nnz) = (p.mesh.elements.len(), p.mesh.nodes.len(), p.pattern.nnz());
        assert_eq!((e, nodes, nnz), (8, 27, 3087));
        let m = |st, value| min_bytes(st, e, nodes, nnz, value);
        // float32: zeroing 3087 · 4 = 12,348; updates 8 · 576 · 8 = 36,864; connectivity and
        // coordinates 8 · (32 + 96) = 1,024; positions 8 · 576 · 4 = 18,432 (full) or
        // 8 · 72 · 4 = 2,304 (block table).
        assert_eq!(rmw_bytes(e, 4), 36_864);
        assert_eq!(write_once_bytes(nnz, 4), 12_348);
        for st in [Strategy::Thread, Strategy::Warp4Atomic, Strategy::Ppni8] {
            assert_eq!(m(st, 4), 12_348 + 36_864 + 18_432 + 1_024, "{}", st.name());
        }
        for st in [Strategy::Ppni4Blocks, Strategy::Ppni8BlocksAtomic] {
            assert_eq!(m(st, 4), 12_348 + 36_864 + 2_304 + 1_024, "{}", st.name());
        }
        // Two kernels: + the geometry written and read, 8 · 256 · 4 · 2 = 16,384.
        assert_eq!(
            m(Strategy::TwoKernel, 4),
            12_348 + 36_864 + 18_432 + 1_024 + 16_384
        );
        // Node rows: values once 12,348; 27 nodes · 16 = 432; 64 adjacency entries ·
        // (4 + 32 + 32 + 96) = 10,496.
        for st in [Strategy::Rows, Strategy::RowsRounds] {
            assert_eq!(m(st, 4), 12_348 + 432 + 10_496, "{}", st.name());
        }
        // float64: zeroing 24,696; updates 73,728; positions 18,432; 8 · (32 + 192) = 1,792.
        assert_eq!(m(Strategy::Thread, 8), 24_696 + 73_728 + 18_432 + 1_792);
        assert_eq!(
            m(Strategy::Rows, 8),
            24_696 + 432 + 64 * (4 + 32 + 32 + 192)
        );
        // Every strategy moves at least its floor.
        for st in Strategy::ALL {
            let floor = if st.node_rows() {
                write_once_bytes(nnz, 4)
            } else {
                rmw_bytes(e, 4)
            };
            assert!(m(st, 4) > floor, "{}", st.name());
        }
    }

    /// The traffic floor's numbers: 128³ elements make about 1.2·10⁹ updates, 9.7 GB of float32
    /// read-modify-writes, about 2.3 ms at 4.26 TB/s.
    #[test]
    fn rmw_floor_at_128_cubed() {
        let e = 128usize.pow(3);
        assert_eq!(e * ENTRIES, 1_207_959_552);
        let c = CopyBandwidth {
            buffer: 2_130_000_000,
            repeats: 5,
            ms: 1.0,
        };
        assert!((c.gb_s() - 4260.0).abs() < 1e-6);
        let ms = c.ms_for(rmw_bytes(e, 4));
        assert!((ms - 2.27).abs() < 0.01, "{ms}");
    }

    #[test]
    fn rates_only_for_gpu_rows() {
        let row = |method| Row {
            run: Run {
                method,
                double: false,
            },
            edge: 2,
            elements: 8,
            nodes: 27,
            dofs: 81,
            nnz: 3087,
            colours: 8,
            ms: 0.001,
            min_ms: 0.001,
            speedup: 1.0,
            rel_diff: 0.0,
        };
        let copy = Some(CopyBandwidth {
            buffer: 1_000_000,
            repeats: 5,
            ms: 0.001,
        });
        let g = row(Method::Gpu(Strategy::Rows));
        assert_eq!(g.model_bytes(), Some(23_276));
        assert!((g.achieved_gb_s().unwrap() - 23.276).abs() < 1e-9);
        assert!((g.percent_of(copy).unwrap() - 100.0 * 23.276 / 2000.0).abs() < 1e-9);
        let c = row(Method::CpuColoured);
        assert_eq!(
            (c.model_bytes(), c.achieved_gb_s(), c.percent_of(copy)),
            (None, None, None)
        );
        assert_eq!(fmt_bytes(23_276), "23.3 kB");
        // The GPU table: floors at the copy bandwidth (here 2 GB/s: RMW 36,864 B in 0.0184 ms,
        // values once 12,348 B in 0.0062 ms), rates with percentages.
        let slow = CopyBandwidth {
            buffer: 1_000_000,
            repeats: 5,
            ms: 1.0,
        };
        let runs = [g.run, c.run];
        let mut report = Report::new("t");
        bandwidth_tables(
            true,
            &mut report,
            &runs,
            &[2],
            std::slice::from_ref(&g),
            Some(slow),
        );
        let md = report.as_str();
        for needle in [
            "Copy bandwidth measured in this run: 2 GB/s (read + write bytes",
            "| 2³ (81 DOF) | 8 | 27 | 3,087 | 4,608 | 0.0184 | 0.0062 | 0.0010 (`rows`) |",
            "| `rows` | 23.3 kB |",
            "| `rows` | 23 GB/s (1164%) | write once |",
            "| `cpu-coloured f32` | – | – |",
        ] {
            assert!(md.contains(needle), "lacks {needle:?}:\n{md}");
        }
        assert_eq!(fmt_bytes(9_663_676_416), "9.66 GB");
    }
}
