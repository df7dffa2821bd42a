use super::super::{DISK, HALO, ic};
use super::*;
use std::fs;

fn bits(p: &Particles) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    (
        p.pos.iter().flatten().map(|x| x.to_bits()).collect(),
        p.vel.iter().flatten().map(|x| x.to_bits()).collect(),
        p.mass.iter().map(|x| x.to_bits()).collect(),
    )
}

/// A halo of equal masses (massarr) and a disk of unequal ones (MASS block).
fn sample() -> Snapshot {
    let mut p = ic::Plummer::henon(300, 3).generate();
    for i in 200..300 {
        p.ptype[i] = DISK;
        p.mass[i] *= 1.0 + i as f64 / 1000.0;
    }
    Snapshot {
        header: Header {
            time: 1.25,
            redshift: 0.5,
            box_size: 100.0,
            hubble_param: 0.7,
            ..Header::default()
        },
        particles: p,
        potential: None,
        gas: None,
    }
}

#[test]
fn round_trip_is_bitwise_exact() {
    let s = sample();
    for format in [Format::Gadget1, Format::Gadget2] {
        // Double precision keeps every float64 bit.
        let mut buf = Vec::new();
        encode_gadget(&s, format, Precision::Double, &mut buf).unwrap();
        let back = parse_gadget(&buf).unwrap();
        assert_eq!(bits(&back.particles), bits(&s.particles));
        assert_eq!(back.particles.id, s.particles.id);
        assert_eq!(back.particles.ptype, s.particles.ptype);
        assert_eq!(back.header, header_for(&s));
        assert_eq!(back.header.time, 1.25);
        assert_eq!(back.header.npart, [0, 200, 100, 0, 0, 0]);
        assert_eq!(back.header.massarr[DISK as usize], 0.0);
        assert_eq!(back.header.massarr[HALO as usize], 1.0 / 300.0);
        // Single precision: float32 values, then a fixed point — file and values identical.
        let mut one = Vec::new();
        encode_gadget(&s, format, Precision::Single, &mut one).unwrap();
        let first = parse_gadget(&one).unwrap();
        assert_eq!(
            first.particles.pos[7][1],
            s.particles.pos[7][1] as f32 as f64
        );
        let mut two = Vec::new();
        encode_gadget(&first, format, Precision::Single, &mut two).unwrap();
        assert_eq!(one, two);
        assert_eq!(
            bits(&parse_gadget(&two).unwrap().particles),
            bits(&first.particles)
        );
    }
    // 64-bit ids are written when needed and read back.
    let mut big = sample();
    big.particles.id[5] = 1 << 40;
    let mut buf = Vec::new();
    encode_gadget(&big, Format::Gadget1, Precision::Single, &mut buf).unwrap();
    assert_eq!(parse_gadget(&buf).unwrap().particles.id[5], 1 << 40);
}

#[test]
fn files_are_written_atomically_and_read_back() {
    let dir = std::env::temp_dir().join(format!("warpkit-snap-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("snap_000");
    let s = sample();
    write_gadget(&path, &s, Format::Gadget1, Precision::Double).unwrap();
    let back = read_gadget(&path).unwrap();
    assert_eq!(bits(&back.particles), bits(&s.particles));
    // Invalid particles: an error, the old file untouched, no temporary left behind.
    let before = fs::read(&path).unwrap();
    let mut bad = s.clone();
    bad.particles.mass[10] = -1.0;
    let err = write_gadget(&path, &bad, Format::Gadget1, Precision::Double).unwrap_err();
    assert!(matches!(
        err,
        SnapshotError::Gadget {
            source: GadgetError::NonPositiveMass { index: 10, .. },
            ..
        }
    ));
    assert_eq!(fs::read(&path).unwrap(), before);
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "only the snapshot");
    // An unwritable place and a missing file are I/O errors naming the path.
    let nowhere = dir.join("missing/snap");
    let err = write_gadget(&nowhere, &s, Format::Gadget1, Precision::Single).unwrap_err();
    assert!(matches!(err, SnapshotError::Io { .. }) && err.to_string().contains("missing"));
    assert!(matches!(
        read_gadget(&dir.join("absent")),
        Err(SnapshotError::Io { .. })
    ));
    fs::remove_dir_all(&dir).unwrap();
}

/// A record: marker, payload, marker.
fn record(out: &mut Vec<u8>, payload: &[u8], be: bool) {
    let m = payload.len() as u32;
    let m = if be { m.to_be_bytes() } else { m.to_le_bytes() };
    out.extend(m);
    out.extend(payload);
    out.extend(m);
}

/// A Gadget-2 file assembled byte by byte from the user guide's description of the header
/// and blocks, independent of `Header::to_bytes` and `encode_gadget`: 2 halo particles of
/// mass 0.5 (in massarr) and 3 disk particles with a MASS block, float32, u32 ids.
fn handmade(format2: bool, be: bool) -> Vec<u8> {
    let u32b = |x: u32| if be { x.to_be_bytes() } else { x.to_le_bytes() };
    let i32b = |x: i32| if be { x.to_be_bytes() } else { x.to_le_bytes() };
    let f32b = |x: f32| if be { x.to_be_bytes() } else { x.to_le_bytes() };
    let f64b = |x: f64| if be { x.to_be_bytes() } else { x.to_le_bytes() };
    let mut h = Vec::new();
    for n in [0u32, 2, 3, 0, 0, 0] {
        h.extend(u32b(n)); // npart[6]: bytes 0..24
    }
    for m in [0.0f64, 0.5, 0.0, 0.0, 0.0, 0.0] {
        h.extend(f64b(m)); // massarr[6]: 24..72
    }
    h.extend(f64b(2.5)); // time: 72
    h.extend(f64b(0.0)); // redshift: 80
    h.extend(i32b(0)); // flag_sfr: 88
    h.extend(i32b(0)); // flag_feedback: 92
    for n in [0u32, 2, 3, 0, 0, 0] {
        h.extend(u32b(n)); // npartTotal[6]: 96..120
    }
    h.extend(i32b(0)); // flag_cooling: 120
    h.extend(i32b(1)); // num_files: 124
    h.extend(f64b(0.0)); // BoxSize: 128
    h.extend(f64b(0.3)); // Omega0: 136
    h.extend(f64b(0.7)); // OmegaLambda: 144
    h.extend(f64b(0.7)); // HubbleParam: 152
    h.extend(i32b(0)); // flag_stellarage: 160
    h.extend(i32b(0)); // flag_metals: 164
    for _ in 0..6 {
        h.extend(u32b(0)); // npartTotalHighWord[6]: 168..192
    }
    h.extend(i32b(0)); // flag_entropy_instead_u: 192
    assert_eq!(h.len(), 196);
    h.resize(256, 0xAB); // fill: 60 bytes of anything
    let floats = |xs: &[f32]| xs.iter().flat_map(|&x| f32b(x)).collect::<Vec<u8>>();
    let pos = floats(&[
        1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 0.5, 0.25, 0.125, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0,
    ]);
    let vel = floats(&[
        0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5,
    ]);
    let ids: Vec<u8> = [10u32, 11, 20, 21, 22]
        .iter()
        .flat_map(|&i| u32b(i))
        .collect();
    let mass = floats(&[0.1, 0.2, 0.3]);
    let mut out = Vec::new();
    for (name, payload) in [
        (b"HEAD", &h),
        (b"POS ", &pos),
        (b"VEL ", &vel),
        (b"ID  ", &ids),
        (b"MASS", &mass),
    ] {
        if format2 {
            let mut label = name.to_vec();
            label.extend(u32b(payload.len() as u32 + 8));
            record(&mut out, &label, be);
        }
        record(&mut out, payload, be);
    }
    // A gas-like trailing block the reader must skip.
    if format2 {
        let mut label = b"RHO ".to_vec();
        label.extend(u32b(12));
        record(&mut out, &label, be);
    }
    record(&mut out, &[0u8; 4], be);
    out
}

fn check_handmade(s: &Snapshot) {
    let p = &s.particles;
    assert_eq!(p.len(), 5);
    assert_eq!(p.ptype, vec![1, 1, 2, 2, 2]);
    assert_eq!(p.id, vec![10, 11, 20, 21, 22]);
    assert_eq!(p.pos[1], [-1.0, -2.0, -3.0]);
    assert_eq!(p.pos[2], [0.5, 0.25, 0.125]);
    assert_eq!(p.vel[4], [1.3f32 as f64, 1.4f32 as f64, 1.5f32 as f64]);
    assert_eq!(
        p.mass,
        vec![0.5, 0.5, 0.1f32 as f64, 0.2f32 as f64, 0.3f32 as f64]
    );
    assert_eq!(s.header.time, 2.5);
    assert_eq!(s.header.omega0, 0.3);
    assert_eq!(s.header.num_files, 1);
}

#[test]
fn a_file_made_by_hand_from_the_format_description_reads_back() {
    for format2 in [false, true] {
        for be in [false, true] {
            let bytes = handmade(format2, be);
            let s = parse_gadget(&bytes)
                .unwrap_or_else(|e| panic!("format2 {format2}, big-endian {be}: {e}"));
            check_handmade(&s);
        }
    }
    // And warpkit's writer produces the same bytes for the same data (format 1, LE),
    // except the header's padding, which it zeroes.
    let s = parse_gadget(&handmade(false, false)).unwrap();
    let mut ours = Vec::new();
    encode_gadget(&s, Format::Gadget1, Precision::Single, &mut ours).unwrap();
    let mut theirs = handmade(false, false);
    theirs.truncate(theirs.len() - 12); // the trailing extra record
    theirs[4 + 196..4 + 256].fill(0);
    assert_eq!(ours, theirs);
}

#[test]
fn bad_files_give_the_right_errors() {
    let good = handmade(false, false);
    // Foreign: a text file, a PNG.
    assert!(matches!(
        parse_gadget(b"hello world, not a snapshot"),
        Err(GadgetError::Foreign(_))
    ));
    assert!(matches!(
        parse_gadget(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
        Err(GadgetError::Foreign(_))
    ));
    assert!(matches!(
        parse_gadget(&[1, 0]),
        Err(GadgetError::Truncated { .. })
    ));
    // Truncated anywhere: in the header, in a block, in the final marker.
    for cut in [10, 200, 264, 300, good.len() - 22, good.len() - 15] {
        match parse_gadget(&good[..cut]) {
            Err(GadgetError::Truncated { .. }) => {}
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
    // The block after MASS is optional for format 1, so cutting it off is fine.
    assert!(parse_gadget(&good[..good.len() - 12]).is_ok());
    // A trailing marker that disagrees with the leading one.
    let mut bad = good.clone();
    bad[4 + 256] ^= 1;
    match parse_gadget(&bad) {
        Err(GadgetError::RecordMarker {
            block: "HEAD",
            start: 256,
            end,
            ..
        }) => {
            assert_eq!(end, 257)
        }
        other => panic!("{other:?}"),
    }
    // POS with 4 particles' worth of floats for 5 particles (markers consistent), the rest
    // of the file intact.
    let mut bytes = Vec::new();
    record(&mut bytes, &good[4..260], false);
    record(&mut bytes, &[0u8; 48], false);
    bytes.extend(&good[264 + 68..]);
    match parse_gadget(&bytes) {
        Err(GadgetError::BlockSize {
            block: "POS",
            bytes: 48,
            count: 5,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    // NaN position, zero and negative masses (in the MASS block and in massarr).
    let pos_at = 4 + 256 + 4 + 4;
    let mut nan = good.clone();
    nan[pos_at + 12..pos_at + 16].copy_from_slice(&f32::NAN.to_le_bytes());
    assert_eq!(
        parse_gadget(&nan).unwrap_err(),
        GadgetError::NonFinite {
            index: 1,
            id: 11,
            what: "position"
        }
    );
    let mass_at = good.len() - 12 - 4 - 12;
    for m in [0.0f32, -0.1] {
        let mut zero = good.clone();
        zero[mass_at + 4..mass_at + 8].copy_from_slice(&m.to_le_bytes());
        match parse_gadget(&zero) {
            Err(GadgetError::NonPositiveMass {
                index: 3, id: 21, ..
            }) => {}
            other => panic!("mass {m}: {other:?}"),
        }
    }
    let mut neg = good.clone();
    neg[4 + 32..4 + 40].copy_from_slice(&(-0.5f64).to_le_bytes());
    assert!(matches!(parse_gadget(&neg), Err(GadgetError::Header(_))));
    // A format-2 file without its VEL block.
    let f2 = handmade(true, false);
    let vel_label = 4 + 8 + 4 + 4 + 256 + 4 + (4 + 8 + 4) + (4 + 60 + 4);
    assert_eq!(&f2[vel_label + 4..vel_label + 8], b"VEL ");
    let mut no_vel = f2[..vel_label].to_vec();
    no_vel.extend(&f2[vel_label + 16 + 68..]);
    assert_eq!(
        parse_gadget(&no_vel).unwrap_err(),
        GadgetError::MissingBlock("VEL")
    );
    // The error names the file.
    let dir = std::env::temp_dir().join(format!("warpkit-snapbad-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("garbage.dat");
    fs::write(&path, b"garbage garbage").unwrap();
    let err = read_gadget(&path).unwrap_err();
    assert!(err.to_string().contains("garbage.dat"), "{err}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn writer_refuses_what_it_cannot_write() {
    let mut s = sample();
    s.particles.ptype.swap(0, 299);
    let e = encode_gadget(&s, Format::Gadget1, Precision::Single, &mut Vec::new());
    assert!(matches!(
        e,
        Err(EncodeError::Gadget(GadgetError::Unwritable(_)))
    ));
    let mut s = sample();
    s.particles.pos[3][0] = f64::NAN;
    let e = encode_gadget(&s, Format::Gadget1, Precision::Single, &mut Vec::new());
    assert!(matches!(
        e,
        Err(EncodeError::Gadget(GadgetError::NonFinite { index: 3, .. }))
    ));
    let mut s = sample();
    s.particles.pos[3][0] = 1e300;
    let e = encode_gadget(&s, Format::Gadget1, Precision::Single, &mut Vec::new());
    assert!(matches!(
        e,
        Err(EncodeError::Gadget(GadgetError::Unwritable(_)))
    ));
    assert!(encode_gadget(&s, Format::Gadget1, Precision::Double, &mut Vec::new()).is_ok());
}

/// Gas particles (type 0) with their SPH fields before a halo: every field back bit for bit in
/// double precision, in both formats (format 1 keeps U, RHO and HSML only).
#[test]
fn gas_round_trips_with_its_sph_fields() {
    let mut s = sample();
    let n_gas = 120;
    s.particles.ptype[..n_gas].fill(0);
    let f = |k: f64| (0..n_gas).map(|i| k + i as f64 / 7.0).collect::<Vec<_>>();
    s.gas = Some(GasFields {
        u: f(0.3),
        rho: f(1.1),
        hsml: f(0.05),
        acc: (0..n_gas).map(|i| [i as f64, -0.5, 1e-3 / 3.0]).collect(),
        du_dt: f(-2.0),
        vsig: f(1.5),
        alpha: f(0.1),
        div_v: f(-0.4),
        balsara: f(0.01),
        pressure: Vec::new(),
        mat: (0..n_gas as u32).map(|i| i % 3).collect(),
    });
    for format in [Format::Gadget1, Format::Gadget2] {
        let mut buf = Vec::new();
        encode_gadget(&s, format, Precision::Double, &mut buf).unwrap();
        let back = parse_gadget(&buf).unwrap();
        assert_eq!(bits(&back.particles), bits(&s.particles));
        assert_eq!(back.header.npart[0], n_gas as u32);
        let (g, want) = (back.gas.unwrap(), s.gas.as_ref().unwrap());
        let b = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(b(&g.u), b(&want.u));
        assert_eq!(b(&g.rho), b(&want.rho));
        assert_eq!(b(&g.hsml), b(&want.hsml));
        if format == Format::Gadget2 {
            assert_eq!(g.acc, want.acc);
            assert_eq!(b(&g.du_dt), b(&want.du_dt));
            assert_eq!(b(&g.vsig), b(&want.vsig));
            assert_eq!(b(&g.alpha), b(&want.alpha));
            assert_eq!(g.mat, want.mat);
        } else {
            assert!(g.acc.is_empty() && g.du_dt.is_empty() && g.alpha.is_empty());
            assert!(g.mat.is_empty());
        }
        // Single precision: the floats rounded once.
        let mut one = Vec::new();
        encode_gadget(&s, format, Precision::Single, &mut one).unwrap();
        let g1 = parse_gadget(&one).unwrap().gas.unwrap();
        assert_eq!(g1.u[5], want.u[5] as f32 as f64);
    }
    // An initial-conditions file with U only reads, the other fields empty.
    let mut ic = s.clone();
    let g = ic.gas.as_mut().unwrap();
    (g.rho, g.hsml, g.acc, g.du_dt, g.vsig, g.alpha, g.mat) = Default::default();
    let mut buf = Vec::new();
    encode_gadget(&ic, Format::Gadget1, Precision::Single, &mut buf).unwrap();
    let back = parse_gadget(&buf).unwrap().gas.unwrap();
    assert_eq!(back.u.len(), n_gas);
    assert!(back.rho.is_empty() && back.hsml.is_empty());
    // Gas without its fields, or with a bad one, is not written; a file without U is refused.
    let mut bare = s.clone();
    bare.gas = None;
    let err = encode_gadget(&bare, Format::Gadget2, Precision::Double, &mut Vec::new());
    assert!(err.unwrap_err().to_string().contains("SPH fields"));
    let mut neg = s.clone();
    neg.gas.as_mut().unwrap().u[7] = -1.0;
    let err = encode_gadget(&neg, Format::Gadget2, Precision::Double, &mut Vec::new());
    assert!(err.unwrap_err().to_string().contains("gas particle 7"));
    // Format 2 with the U block renamed: gas without its energies.
    let mut buf = Vec::new();
    encode_gadget(&s, Format::Gadget2, Precision::Double, &mut buf).unwrap();
    let at = buf.windows(4).position(|w| w == b"U   ").unwrap();
    buf[at..at + 4].copy_from_slice(b"QQQQ");
    let err = parse_gadget(&buf).unwrap_err();
    assert!(matches!(err, GadgetError::Gas(_)), "{err}");
    // Format 1 that ends before U: the same.
    let mut buf = Vec::new();
    encode_gadget(&ic, Format::Gadget1, Precision::Double, &mut buf).unwrap();
    let u_record = 8 + 8 * n_gas;
    let err = parse_gadget(&buf[..buf.len() - u_record]).unwrap_err();
    assert!(err.to_string().contains("without a U block"), "{err}");
}

/// Format 1 holds the gas's blocks by position: smoothing lengths without densities are
/// refused (they would come back as densities), and format 2 writes them.
#[test]
fn format_1_refuses_hsml_without_rho() {
    let mut s = sample();
    let n_gas = 10;
    s.particles.ptype[..n_gas].fill(0);
    s.gas = Some(GasFields {
        u: vec![1.0; n_gas],
        hsml: vec![0.1; n_gas],
        ..Default::default()
    });
    let mut buf = Vec::new();
    let e = encode_gadget(&s, Format::Gadget1, Precision::Double, &mut buf).unwrap_err();
    assert!(e.to_string().contains("by position"), "{e}");
    assert!(
        buf.is_empty(),
        "{} bytes written before the refusal",
        buf.len()
    );
    encode_gadget(&s, Format::Gadget2, Precision::Double, &mut buf).unwrap();
    let back = parse_gadget(&buf).unwrap();
    let g = back.gas.unwrap();
    assert_eq!((g.rho.len(), g.hsml), (0, vec![0.1; n_gas]));
}
