//! HDF5 snapshots (feature `hdf5`): the round trip, the layout read back through the
//! `hdf5` crate directly (not warpkit's reader) and bad files (the command line's use of them:
//! `app/tests/hdf5_cli.rs`). CPU only; `.ci/run` runs them with
//! `cargo test --release --features hdf5 --test hdf5_snapshot`.
#![cfg(feature = "hdf5")]

use hdf5::types::VarLenUnicode;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use warpkit::nbody::hdf5::{
    G_CGS, UNIT_LENGTH_CM, UNIT_MASS_G, UNIT_SYSTEM, read_hdf5, unit_time_s, write_hdf5,
};
use warpkit::nbody::snapshot::{Header, Precision, Snapshot, header_for, read_snapshot};
use warpkit::nbody::{DISK, HALO, ic};

/// Held by a test while it has HDF5 files open: the HDF5 library opens files without
/// close-on-exec and locks them (flock), so a child process forked while another test thread has
/// a file open inherits the descriptor and its lock for its whole life, and that test's next
/// `File::open_rw` of the file fails with "unable to lock file" (the tests that run `warpkit`
/// are app/tests/hdf5_cli.rs; this keeps any later child safe here too).
static FORK: Mutex<()> = Mutex::new(());

fn no_fork() -> MutexGuard<'static, ()> {
    FORK.lock().unwrap_or_else(|e| e.into_inner())
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("warpkit-h5-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A halo of equal masses (MassTable) and a disk of unequal ones, ids past 2^32, a potential.
fn sample() -> Snapshot {
    let mut p = ic::Plummer::henon(300, 3).generate();
    for i in 200..300 {
        p.ptype[i] = DISK;
        p.mass[i] *= 1.0 + i as f64 / 1000.0;
    }
    for (i, id) in p.id.iter_mut().enumerate() {
        *id = (1 << 33) + 7 * i as u64;
    }
    let potential = (0..p.len())
        .map(|i| -1.0 / (1.0 + i as f64 / 3.0))
        .collect();
    Snapshot {
        header: Header {
            time: 1.25,
            redshift: 0.5,
            box_size: 100.0,
            omega0: 0.3,
            omega_lambda: 0.7,
            hubble_param: 0.7,
            flag_cooling: 1,
            ..Header::default()
        },
        particles: p,
        potential: Some(potential),
        gas: None,
    }
}

fn bits(v: impl IntoIterator<Item = f64>) -> Vec<u64> {
    v.into_iter().map(f64::to_bits).collect()
}

#[test]
fn round_trip_is_exact() {
    let _open = no_fork();
    let dir = scratch("round-trip");
    let s = sample();
    let path = dir.join("s.hdf5");
    write_hdf5(&path, &s, Precision::Double).unwrap();
    let back = read_hdf5(&path).unwrap();
    let (p, q) = (&s.particles, &back.particles);
    assert_eq!(
        bits(q.pos.iter().flatten().copied()),
        bits(p.pos.iter().flatten().copied())
    );
    assert_eq!(
        bits(q.vel.iter().flatten().copied()),
        bits(p.vel.iter().flatten().copied())
    );
    assert_eq!(bits(q.mass.iter().copied()), bits(p.mass.iter().copied()));
    assert_eq!(q.id, p.id);
    assert_eq!(q.ptype, p.ptype);
    assert_eq!(
        bits(back.potential.clone().unwrap()),
        bits(s.potential.clone().unwrap())
    );
    assert_eq!(back.header, header_for(&s));
    // read_snapshot tells HDF5 by its signature too, whatever the name.
    let renamed = dir.join("s.snap");
    std::fs::copy(&path, &renamed).unwrap();
    assert_eq!(read_snapshot(&renamed).unwrap(), back);

    // Single precision: every value is the float32 rounding of the original.
    write_hdf5(&path, &s, Precision::Single).unwrap();
    let back = read_hdf5(&path).unwrap();
    let f32s = |v: &[[f64; 3]]| bits(v.iter().flatten().map(|&x| x as f32 as f64));
    assert_eq!(
        bits(back.particles.pos.iter().flatten().copied()),
        f32s(&p.pos)
    );
    assert_eq!(
        bits(back.particles.vel.iter().flatten().copied()),
        f32s(&p.vel)
    );
    assert_eq!(
        bits(back.particles.mass.iter().copied()),
        bits(p.mass.iter().map(|&m| m as f32 as f64))
    );
    assert_eq!(back.particles.id, p.id);
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The file as pynbody/yt/swiftsimio see it, read with the `hdf5` crate alone.
#[test]
fn layout_field_by_field() {
    let _open = no_fork();
    let dir = scratch("layout");
    let s = sample();
    let (n_halo, n_disk) = (200usize, 100usize);
    for precision in [Precision::Double, Precision::Single] {
        let path = dir.join("s.hdf5");
        write_hdf5(&path, &s, precision).unwrap();
        let f = hdf5::File::open(&path).unwrap();
        let mut groups = f.member_names().unwrap();
        groups.sort();
        assert_eq!(
            groups,
            [
                "Code",
                "Cosmology",
                "Header",
                "InternalCodeUnits",
                "PartType1",
                "PartType2",
                "Units"
            ]
        );
        let h = f.group("Header").unwrap();
        let attr = |name: &str| h.attr(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let this = attr("NumPart_ThisFile");
        assert_eq!(this.shape(), [6]);
        assert_eq!(this.dtype().unwrap().size(), 8, "uint64 as Gadget-4");
        assert!(this.dtype().unwrap().is::<u64>());
        let counts = [0, n_halo as u64, n_disk as u64, 0, 0, 0];
        assert_eq!(this.read_raw::<u64>().unwrap(), counts);
        let total = attr("NumPart_Total");
        assert!(total.dtype().unwrap().is::<u32>());
        assert_eq!(total.read_raw::<u32>().unwrap(), counts.map(|c| c as u32));
        let high = attr("NumPart_Total_HighWord");
        assert!(high.dtype().unwrap().is::<u32>());
        assert_eq!(high.read_raw::<u32>().unwrap(), [0; 6]);
        let table = attr("MassTable");
        assert!(table.dtype().unwrap().is::<f64>());
        let table = table.read_raw::<f64>().unwrap();
        assert_eq!(table[1].to_bits(), s.particles.mass[0].to_bits());
        assert_eq!(table[2], 0.0, "the disk's masses differ");
        assert_eq!(table[0], 0.0);
        // SWIFT's one-element arrays (swiftsimio reads element 0; yt and warpkit take either).
        let a = 1.0 / 1.5;
        for (name, want) in [("Time", 1.25), ("Redshift", 0.5), ("Scale-factor", a)] {
            let x = attr(name);
            assert_eq!(x.shape(), [1], "{name}");
            assert!(x.dtype().unwrap().is::<f64>(), "{name}");
            assert_eq!(x.read_raw::<f64>().unwrap(), [want], "{name}");
        }
        let dim = attr("Dimension");
        assert_eq!(dim.shape(), [1]);
        assert!(dim.dtype().unwrap().is::<i32>());
        assert_eq!(dim.read_raw::<i32>().unwrap(), [3]);
        for (name, want) in [
            ("ExpansionFactor", a),
            ("BoxSize", 100.0),
            ("Omega0", 0.3),
            ("OmegaLambda", 0.7),
            ("HubbleParam", 0.7),
        ] {
            let a = attr(name);
            assert!(a.is_scalar(), "{name}");
            assert!(a.dtype().unwrap().is::<f64>(), "{name}");
            assert_eq!(a.read_scalar::<f64>().unwrap(), want, "{name}");
        }
        let double = (precision == Precision::Double) as i32;
        for (name, want) in [
            ("NumFilesPerSnapshot", 1),
            ("Flag_Sfr", 0),
            ("Flag_Cooling", 1),
            ("Flag_Feedback", 0),
            ("Flag_StellarAge", 0),
            ("Flag_Metals", 0),
            ("Flag_DoublePrecision", double),
        ] {
            let a = attr(name);
            assert!(a.dtype().unwrap().is::<i32>(), "{name}");
            assert_eq!(a.read_scalar::<i32>().unwrap(), want, "{name}");
        }
        swift_metadata(&f);
        let width = if double == 1 { 8 } else { 4 };
        let p = &s.particles;
        for (t, range) in [(HALO, 0..n_halo), (DISK, n_halo..n_halo + n_disk)] {
            let g = f.group(&format!("PartType{t}")).unwrap();
            let mut names = g.member_names().unwrap();
            names.sort();
            assert_eq!(
                names,
                [
                    "Coordinates",
                    "Masses",
                    "ParticleIDs",
                    "Potential",
                    "Velocities"
                ]
            );
            let nt = range.len();
            for (name, v) in [("Coordinates", &p.pos), ("Velocities", &p.vel)] {
                let d = g.dataset(name).unwrap();
                assert_eq!(d.shape(), [nt, 3], "{name}");
                assert_eq!(d.dtype().unwrap().size(), width, "{name}");
                let got = d.read_2d::<f64>().unwrap();
                for (i, k) in range.clone().enumerate() {
                    for c in 0..3 {
                        let want = if double == 1 {
                            v[k][c]
                        } else {
                            v[k][c] as f32 as f64
                        };
                        assert_eq!(got[[i, c]].to_bits(), want.to_bits(), "{name}[{i}][{c}]");
                    }
                }
            }
            for (name, (m, l, t, a)) in [
                ("Coordinates", (0, 1, 0, 1)),
                ("Velocities", (0, 1, -1, 0)),
                ("Masses", (1, 0, 0, 0)),
                ("ParticleIDs", (0, 0, 0, 0)),
                ("Potential", (0, 2, -2, -1)),
            ] {
                field_units(&g.dataset(name).unwrap(), name, [m, l, t], a);
            }
            let ids = g.dataset("ParticleIDs").unwrap();
            assert_eq!(ids.shape(), [nt]);
            assert!(ids.dtype().unwrap().is::<u64>());
            assert_eq!(ids.read_raw::<u64>().unwrap(), p.id[range.clone()]);
            for (name, v) in [
                ("Masses", &p.mass),
                ("Potential", s.potential.as_ref().unwrap()),
            ] {
                let d = g.dataset(name).unwrap();
                assert_eq!(d.shape(), [nt], "{name}");
                assert_eq!(d.dtype().unwrap().size(), width, "{name}");
                let want: Vec<f64> = v[range.clone()]
                    .iter()
                    .map(|&x| if double == 1 { x } else { x as f32 as f64 })
                    .collect();
                assert_eq!(bits(d.read_raw::<f64>().unwrap()), bits(want), "{name}");
            }
        }
        drop(f);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn one_f64(at: &hdf5::Location, name: &str) -> f64 {
    let a = at.attr(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(a.shape(), [1], "{name}");
    assert!(a.dtype().unwrap().is::<f64>(), "{name}");
    a.read_raw::<f64>().unwrap()[0]
}

fn one_i32(at: &hdf5::Location, name: &str) -> i32 {
    let a = at.attr(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(a.shape(), [1], "{name}");
    assert!(a.dtype().unwrap().is::<i32>(), "{name}");
    a.read_raw::<i32>().unwrap()[0]
}

fn text(at: &hdf5::Location, name: &str) -> String {
    let a = at.attr(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    a.read_scalar::<VarLenUnicode>()
        .unwrap()
        .as_str()
        .to_owned()
}

fn close(x: f64, want: f64) -> bool {
    ((x - want) / want).abs() < 1e-12
}

/// SWIFT's groups, for swiftsimio: /Units and /InternalCodeUnits hold exactly SWIFT's five unit
/// attributes (swiftsimio refuses any other name), a scaling in which G = 1 as in the run.
fn swift_metadata(f: &hdf5::File) {
    let (l, m, t) = (UNIT_LENGTH_CM, UNIT_MASS_G, unit_time_s());
    assert!(close(l, 3.0856775814913673e21), "1 kpc: {l}");
    assert!((m / 1.98841e43 - 1.0).abs() < 1e-5, "1e10 Msun: {m}");
    assert!(
        close(l.powi(3) / (m * t * t), G_CGS),
        "G = 1 in these units"
    );
    assert!((t / 3.15576e13 - 4.7148).abs() < 1e-4, "{t} s");
    for group in ["Units", "InternalCodeUnits"] {
        let u = f.group(group).unwrap();
        let mut names = u.attr_names().unwrap();
        names.sort();
        assert_eq!(
            names,
            [
                "Unit current in cgs (U_I)",
                "Unit length in cgs (U_L)",
                "Unit mass in cgs (U_M)",
                "Unit temperature in cgs (U_T)",
                "Unit time in cgs (U_t)",
            ],
            "{group}"
        );
        for (name, want) in [
            ("Unit mass in cgs (U_M)", m),
            ("Unit length in cgs (U_L)", l),
            ("Unit time in cgs (U_t)", t),
            ("Unit current in cgs (U_I)", 1.0),
            ("Unit temperature in cgs (U_T)", 1.0),
        ] {
            assert_eq!(one_f64(&u, name), want, "{group}/{name}");
        }
    }
    let cosmology = f.group("Cosmology").unwrap();
    assert_eq!(one_i32(&cosmology, "Cosmological run"), 0);
    let code = f.group("Code").unwrap();
    assert_eq!(text(&code, "Code"), "warpkit");
    assert_eq!(text(&code, "Version"), env!("CARGO_PKG_VERSION"));
    assert_eq!(text(&code, "Unit system"), UNIT_SYSTEM);
    assert!(UNIT_SYSTEM.contains("G = 1") && UNIT_SYSTEM.contains("1 kpc"));
    assert_eq!(
        one_f64(&code, "Gravitational constant in internal units"),
        1.0
    );
    // No /Policy: pynbody would take the file for a SWIFT snapshot.
    assert!(!f.link_exists("Policy"));
}

/// SWIFT's unit attributes of one particle dataset: exponents of (M, L, t), the a-scale
/// exponent, and the conversion factor they give.
fn field_units(d: &hdf5::Dataset, name: &str, [m, l, t]: [i32; 3], a: i32) {
    for (attr, want) in [
        ("U_M exponent", m),
        ("U_L exponent", l),
        ("U_t exponent", t),
        ("U_I exponent", 0),
        ("U_T exponent", 0),
        ("h-scale exponent", 0),
        ("a-scale exponent", a),
    ] {
        assert_eq!(one_f64(d, attr), want as f64, "{name} {attr}");
    }
    let cgs = UNIT_MASS_G.powi(m) * UNIT_LENGTH_CM.powi(l) * unit_time_s().powi(t);
    for attr in [
        "Conversion factor to CGS (not including cosmological corrections)",
        "Conversion factor to physical CGS (including cosmological corrections)",
    ] {
        assert!(close(one_f64(d, attr), cgs), "{name} {attr}");
    }
    assert_eq!(one_i32(d, "Value stored as physical"), 1, "{name}");
    assert_eq!(
        one_i32(d, "Property can be converted to comoving"),
        1,
        "{name}"
    );
    assert!(!text(d, "Description").is_empty(), "{name}");
    let expr = text(d, "Expression for physical CGS units");
    let units = match name {
        "Coordinates" => "[ cm ]",
        "Velocities" => "[ cm s^-1 ]",
        "Masses" => "[ g ]",
        "ParticleIDs" => "[ - ]",
        _ => "[ cm^2 s^-2 ]",
    };
    assert!(expr.ends_with(units), "{name}: {expr}");
    let factor: f64 = expr.split(' ').next().unwrap().parse().unwrap();
    assert!(((factor - cgs) / cgs).abs() < 1e-6, "{name}: {expr}");
}

/// A valid file edited with the `hdf5` crate by `edit`, then read: the error must name `want`.
fn bad(name: &str, edit: impl FnOnce(&hdf5::File), want: &[&str]) {
    let dir = scratch(name);
    let path = dir.join("bad.hdf5");
    write_hdf5(&path, &sample(), Precision::Double).unwrap();
    {
        let f = hdf5::File::open_rw(&path).unwrap();
        edit(&f);
    }
    let e = read_hdf5(&path).expect_err(name).to_string();
    for w in want {
        assert!(e.contains(w), "{name}: {e:?} lacks {w:?}");
    }
    assert!(e.contains("bad.hdf5"), "{name}: the path: {e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_files_are_clear_errors() {
    let _open = no_fork();
    bad(
        "no-header",
        |f| f.unlink("Header").unwrap(),
        &["no /Header group"],
    );
    bad(
        "coordinates-shape",
        |f| {
            let g = f.group("PartType2").unwrap();
            g.unlink("Coordinates").unwrap();
            g.new_dataset::<f64>()
                .shape((100, 2))
                .create("Coordinates")
                .unwrap();
        },
        &["/PartType2/Coordinates has shape [100, 2], expected [100, 3]"],
    );
    bad(
        "velocities-rows",
        |f| {
            let g = f.group("PartType1").unwrap();
            g.unlink("Velocities").unwrap();
            g.new_dataset::<f32>()
                .shape((199, 3))
                .create("Velocities")
                .unwrap();
        },
        &["/PartType1/Velocities has shape [199, 3], expected [200, 3]"],
    );
    bad(
        "ids-shape",
        |f| {
            let g = f.group("PartType1").unwrap();
            g.unlink("ParticleIDs").unwrap();
            g.new_dataset::<u64>()
                .shape((200, 2))
                .create("ParticleIDs")
                .unwrap();
        },
        &["/PartType1/ParticleIDs has shape [200, 2], expected [200]"],
    );
    bad(
        "no-masses",
        |f| f.group("PartType2").unwrap().unlink("Masses").unwrap(),
        &["no dataset /PartType2/Masses and /Header/MassTable[2] = 0"],
    );
    bad(
        "no-group",
        |f| f.unlink("PartType1").unwrap(),
        &["no /PartType1 group", "NumPart_ThisFile[1] = 200"],
    );
    bad(
        "no-counts",
        |f| {
            f.group("Header")
                .unwrap()
                .delete_attr("NumPart_ThisFile")
                .unwrap()
        },
        &["/Header has no attribute NumPart_ThisFile"],
    );
    bad(
        "counts-length",
        |f| {
            let h = f.group("Header").unwrap();
            h.delete_attr("NumPart_ThisFile").unwrap();
            h.new_attr::<u32>()
                .shape(5)
                .create("NumPart_ThisFile")
                .unwrap()
                .write_raw(&[0u32, 200, 100, 0, 0])
                .unwrap();
        },
        &["/Header/NumPart_ThisFile has 5 values, not 6"],
    );
    bad(
        "multi-file",
        |f| {
            let a = f
                .group("Header")
                .unwrap()
                .attr("NumFilesPerSnapshot")
                .unwrap();
            a.write_scalar(&4i32).unwrap();
        },
        &["multi-file snapshots are not read"],
    );
    bad(
        "nan",
        |f| {
            let d = f.group("PartType1").unwrap().dataset("Masses").unwrap();
            let mut m = d.read_raw::<f64>().unwrap();
            m[5] = f64::NAN;
            d.write_raw(&m).unwrap();
        },
        &["mass NaN"],
    );

    // Not HDF5 at all, and no file.
    let dir = scratch("not-hdf5");
    let path = dir.join("x.hdf5");
    std::fs::write(&path, b"not an hdf5 file at all").unwrap();
    let e = read_hdf5(&path).unwrap_err().to_string();
    assert!(e.contains("not a readable HDF5 file"), "{e}");
    let e = read_hdf5(&dir.join("missing.hdf5"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.hdf5"), "{e}");
    // A potential of the wrong length is refused before anything is written.
    let mut s = sample();
    s.potential.as_mut().unwrap().pop();
    let out = dir.join("y.hdf5");
    let e = write_hdf5(&out, &s, Precision::Double)
        .unwrap_err()
        .to_string();
    assert!(e.contains("299 potentials for 300 particles"), "{e}");
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Gas in PartType0 with SWIFT's names: every SPH field back bit for bit in float64, and a hydro
/// run restarted from the file continues on the run that did not stop.
#[test]
fn gas_round_trips_and_a_hydro_run_continues_from_it() {
    use warpkit::sph::hydro::{HydroParams, Sim, ic, snapio};
    let _open = no_fork();
    let dir = scratch("gas");
    let params = HydroParams::ideal_gas(ic::SOD_GAMMA);
    let (gas, boundary) = ic::sod(8, ic::sod_across(params.n_ngb), &params);
    let mut whole = Sim::new(gas.clone(), params.clone(), boundary).unwrap();
    let mut first = Sim::new(gas, params.clone(), boundary).unwrap();
    for _ in 0..3 {
        first.step(f64::INFINITY).unwrap();
    }
    for _ in 0..6 {
        whole.step(f64::INFINITY).unwrap();
    }
    let s = snapio::snapshot_of(&first);
    let path = dir.join("gas.hdf5");
    write_hdf5(&path, &s, Precision::Double).unwrap();
    let back = read_hdf5(&path).unwrap();
    let (g, want) = (back.gas.clone().unwrap(), s.gas.clone().unwrap());
    for (a, b) in [
        (&g.u, &want.u),
        (&g.rho, &want.rho),
        (&g.hsml, &want.hsml),
        (&g.pressure, &want.pressure),
        (&g.du_dt, &want.du_dt),
        (&g.vsig, &want.vsig),
        (&g.alpha, &want.alpha),
    ] {
        assert!(!a.is_empty());
        assert_eq!(bits(a.iter().copied()), bits(b.iter().copied()));
    }
    assert_eq!(g.acc, want.acc);
    // Material ids (SWIFT's planetary `MaterialIDs`) round-trip.
    {
        let mut m = s.clone();
        let ids: Vec<u32> = (0..want.u.len()).map(|i| (i % 3) as u32).collect();
        m.gas.as_mut().unwrap().mat = ids.clone();
        let mpath = dir.join("mat.hdf5");
        write_hdf5(&mpath, &m, Precision::Single).unwrap();
        assert_eq!(read_hdf5(&mpath).unwrap().gas.unwrap().mat, ids);
        let f = hdf5::File::open(&mpath).unwrap();
        let d = f
            .group("PartType0")
            .unwrap()
            .dataset("MaterialIDs")
            .unwrap();
        assert_eq!(d.read_raw::<u32>().unwrap(), ids);
    }
    // The layout, read through the hdf5 crate: SWIFT's names under PartType0.
    {
        let f = hdf5::File::open(&path).unwrap();
        let p0 = f.group("PartType0").unwrap();
        for name in [
            "Coordinates",
            "Velocities",
            "Masses",
            "ParticleIDs",
            "InternalEnergies",
            "Densities",
            "SmoothingLengths",
            "Pressures",
        ] {
            assert!(p0.link_exists(name), "no PartType0/{name}");
        }
    }
    let (mut b, exact) = snapio::sim_of(
        &back,
        params,
        boundary,
        first.step,
        warpkit::backend::Backend::Cpu,
    )
    .unwrap();
    assert!(exact);
    for _ in 0..3 {
        b.step(f64::INFINITY).unwrap();
    }
    assert_eq!(b.t, whole.t);
    let state = |s: &Sim| {
        bits(
            s.gas
                .pos
                .iter()
                .chain(&s.gas.vel)
                .flatten()
                .chain(&s.gas.u)
                .copied(),
        )
    };
    assert_eq!(state(&b), state(&whole));
    std::fs::remove_dir_all(&dir).unwrap();
}
