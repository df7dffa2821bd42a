//! HDF5 snapshots in the Gadget-4/SWIFT layout (feature `hdf5`), as pynbody, yt and swiftsimio
//! read them: a `/Header` group whose attributes are Gadget's header fields, then one group
//! `/PartTypeN` for each particle type present, holding `Coordinates` (N×3), `Velocities` (N×3),
//! `ParticleIDs` (N, uint64), `Masses` (N) and, when known, `Potential` (N).
//!
//! Header attributes written: `NumPart_ThisFile` (6 × uint64, as Gadget-4), `NumPart_Total` and
//! `NumPart_Total_HighWord` (6 × uint32 each: the low and high words of the total, the Gadget-2/3
//! and SWIFT convention that readers add up as `Total + 2^32 HighWord`), `MassTable` (6 × float64;
//! non-zero for a type whose particles all have one mass — `Masses` is written for every type all
//! the same), the float64 scalars `Time`, `Redshift`, `BoxSize`, `Omega0`, `OmegaLambda`,
//! `HubbleParam`, and the int32 scalars `NumFilesPerSnapshot` (1), `Flag_Sfr`, `Flag_Cooling`,
//! `Flag_Feedback`, `Flag_StellarAge`, `Flag_Metals`, `Flag_DoublePrecision`. Floats are float32
//! or float64 ([`Precision`]).
//!
//! The reader takes any integer or float width (HDF5 converts on read), uses `Masses` when
//! present and `MassTable` otherwise, and checks every shape and value: a file without `/Header`,
//! a dataset of the wrong shape or a missing one is an error naming it, never a panic. All HDF5
//! encoding is the `hdf5-metno` crate's (the HDF5 C library): nothing here writes the format.

use super::snapshot::{
    Header, Precision, Snapshot, SnapshotError, check_particles, check_writable,
};
use super::{Particles, TYPES};
use hdf5::{Group, H5Type};
use std::fs;
use std::path::{Path, PathBuf};

fn err(path: &Path, reason: impl Into<String>) -> SnapshotError {
    SnapshotError::Hdf5 {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Writes `s` to `path` (through a temporary file beside it, renamed when complete, as
/// [`super::snapshot::write_gadget`]). The header's counts, `MassTable` and
/// `NumFilesPerSnapshot` are derived from the particles; its time, redshift, box, cosmology and
/// flags are written as they are.
pub fn write_hdf5(path: &Path, s: &Snapshot, precision: Precision) -> Result<(), SnapshotError> {
    let p = &s.particles;
    let gadget = |source| SnapshotError::Gadget {
        path: path.to_path_buf(),
        source,
    };
    check_writable(p, precision).map_err(gadget)?;
    if let Some(pot) = &s.potential {
        if pot.len() != p.len() {
            return Err(err(
                path,
                format!("{} potentials for {} particles", pot.len(), p.len()),
            ));
        }
        if let Some(i) = pot.iter().position(|x| !x.is_finite()) {
            return Err(err(
                path,
                format!("particle {i} has a non-finite potential"),
            ));
        }
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        encode(&tmp, s, precision).map_err(|e| err(path, format!("writing: {e}")))?;
        let io = |source| SnapshotError::Io {
            path: path.to_path_buf(),
            source,
        };
        fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(io)?;
        fs::rename(&tmp, path).map_err(io)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn encode(path: &Path, s: &Snapshot, precision: Precision) -> hdf5::Result<()> {
    let p = &s.particles;
    let h = super::snapshot::header_for(s);
    let file = hdf5::File::create(path)?;
    let g = file.create_group("Header")?;
    let array = |name: &str, v: &[_]| -> hdf5::Result<()> {
        g.new_attr::<u32>().shape(TYPES).create(name)?.write_raw(v)
    };
    g.new_attr::<u64>()
        .shape(TYPES)
        .create("NumPart_ThisFile")?
        .write_raw(&h.npart.map(u64::from))?;
    array("NumPart_Total", &h.npart_total)?;
    array("NumPart_Total_HighWord", &h.npart_total_high_word)?;
    g.new_attr::<f64>()
        .shape(TYPES)
        .create("MassTable")?
        .write_raw(&h.massarr)?;
    for (name, x) in [
        ("Time", h.time),
        ("Redshift", h.redshift),
        ("BoxSize", h.box_size),
        ("Omega0", h.omega0),
        ("OmegaLambda", h.omega_lambda),
        ("HubbleParam", h.hubble_param),
    ] {
        g.new_attr::<f64>().create(name)?.write_scalar(&x)?;
    }
    for (name, x) in [
        ("NumFilesPerSnapshot", 1),
        ("Flag_Sfr", h.flag_sfr),
        ("Flag_Cooling", h.flag_cooling),
        ("Flag_Feedback", h.flag_feedback),
        ("Flag_StellarAge", h.flag_stellarage),
        ("Flag_Metals", h.flag_metals),
        (
            "Flag_DoublePrecision",
            (precision == Precision::Double) as i32,
        ),
    ] {
        g.new_attr::<i32>().create(name)?.write_scalar(&x)?;
    }
    let mut start = 0;
    for (t, &n) in p.count_by_type().iter().enumerate() {
        if n == 0 {
            continue;
        }
        let r = start..start + n;
        start += n;
        let g = file.create_group(&format!("PartType{t}"))?;
        let vec3 = |v: &[[f64; 3]]| v.iter().flatten().copied().collect::<Vec<f64>>();
        floats(
            &g,
            "Coordinates",
            (n, 3),
            &vec3(&p.pos[r.clone()]),
            precision,
        )?;
        floats(
            &g,
            "Velocities",
            (n, 3),
            &vec3(&p.vel[r.clone()]),
            precision,
        )?;
        g.new_dataset::<u64>()
            .shape(n)
            .create("ParticleIDs")?
            .write_raw(&p.id[r.clone()])?;
        floats(&g, "Masses", (n, 1), &p.mass[r.clone()], precision)?;
        if let Some(pot) = &s.potential {
            floats(&g, "Potential", (n, 1), &pot[r], precision)?;
        }
    }
    file.flush()?;
    file.close()
}

/// A float dataset of `n` rows (`cols` 1: one dimension, else N×cols), float32 or float64.
fn floats(
    g: &Group,
    name: &str,
    (n, cols): (usize, usize),
    v: &[f64],
    precision: Precision,
) -> hdf5::Result<()> {
    fn put<T: H5Type>(g: &Group, name: &str, n: usize, cols: usize, v: &[T]) -> hdf5::Result<()> {
        let d = if cols == 1 {
            g.new_dataset::<T>().shape(n).create(name)?
        } else {
            g.new_dataset::<T>().shape((n, cols)).create(name)?
        };
        d.write_raw(v)
    }
    match precision {
        Precision::Double => put(g, name, n, cols, v),
        Precision::Single => {
            let v: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            put(g, name, n, cols, &v)
        }
    }
}

/// Reads a single-file HDF5 snapshot (Gadget-3/4 or SWIFT layout) of any particle types. Gas
/// (type 0) is read as particles like any other (its SPH fields are ignored).
pub fn read_hdf5(path: &Path) -> Result<Snapshot, SnapshotError> {
    if !path.exists() {
        return Err(SnapshotError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
    }
    let file =
        hdf5::File::open(path).map_err(|e| err(path, format!("not a readable HDF5 file: {e}")))?;
    let e = |m: String| err(path, m);
    let hg = file
        .group("Header")
        .map_err(|_| e("no /Header group: not a Gadget/SWIFT HDF5 snapshot".into()))?;
    let attr_array = |name: &str, required: bool| -> Result<Option<Vec<f64>>, SnapshotError> {
        if !hg
            .attr_names()
            .unwrap_or_default()
            .iter()
            .any(|a| a == name)
        {
            return if required {
                Err(e(format!("/Header has no attribute {name}")))
            } else {
                Ok(None)
            };
        }
        let a = hg
            .attr(name)
            .map_err(|x| e(format!("/Header/{name}: {x}")))?;
        if a.size() != TYPES {
            return Err(e(format!(
                "/Header/{name} has {} values, not {TYPES}",
                a.size()
            )));
        }
        let v = a
            .read_raw::<f64>()
            .map_err(|x| e(format!("/Header/{name}: {x}")))?;
        Ok(Some(v))
    };
    let counts = |name: &str, required: bool| -> Result<[u64; TYPES], SnapshotError> {
        let Some(v) = attr_array(name, required)? else {
            return Ok([0; TYPES]);
        };
        let mut out = [0; TYPES];
        for (t, &x) in v.iter().enumerate() {
            if !(x >= 0.0 && x <= u32::MAX as f64 && x.fract() == 0.0) {
                return Err(e(format!("/Header/{name}[{t}] = {x}")));
            }
            out[t] = x as u64;
        }
        Ok(out)
    };
    let scalar = |name: &str| -> Result<f64, SnapshotError> {
        if !hg
            .attr_names()
            .unwrap_or_default()
            .iter()
            .any(|a| a == name)
        {
            return Ok(0.0);
        }
        let a = hg
            .attr(name)
            .map_err(|x| e(format!("/Header/{name}: {x}")))?;
        // Some writers store scalars as one-element arrays.
        match a.read_raw::<f64>() {
            Ok(v) if v.len() == 1 => Ok(v[0]),
            Ok(v) => Err(e(format!("/Header/{name} has {} values, not 1", v.len()))),
            Err(x) => Err(e(format!("/Header/{name}: {x}"))),
        }
    };
    let npart = counts("NumPart_ThisFile", true)?;
    let total = counts("NumPart_Total", false)?;
    let high = counts("NumPart_Total_HighWord", false)?;
    let massarr = attr_array("MassTable", true)?.expect("required");
    if let Some(t) = (0..TYPES).find(|&t| !(massarr[t].is_finite() && massarr[t] >= 0.0)) {
        return Err(e(format!(
            "/Header/MassTable[{t}] = {} (must be finite and ≥ 0)",
            massarr[t]
        )));
    }
    let num_files = scalar("NumFilesPerSnapshot")?;
    if num_files > 1.0 {
        return Err(e(format!(
            "one file of a snapshot in {num_files} files (multi-file snapshots are not read)"
        )));
    }
    let flag = |name: &str| scalar(name).map(|x| x as i32);
    let header = Header {
        npart: npart.map(|x| x as u32),
        massarr: massarr.try_into().expect("6 values"),
        time: scalar("Time")?,
        redshift: scalar("Redshift")?,
        flag_sfr: flag("Flag_Sfr")?,
        flag_feedback: flag("Flag_Feedback")?,
        npart_total: total.map(|x| x as u32),
        flag_cooling: flag("Flag_Cooling")?,
        num_files: num_files as i32,
        box_size: scalar("BoxSize")?,
        omega0: scalar("Omega0")?,
        omega_lambda: scalar("OmegaLambda")?,
        hubble_param: scalar("HubbleParam")?,
        flag_stellarage: flag("Flag_StellarAge")?,
        flag_metals: flag("Flag_Metals")?,
        npart_total_high_word: high.map(|x| x as u32),
        flag_entropy_instead_u: 0,
    };
    // Nothing is allocated from the header's counts: each dataset's shape is checked first.
    let mut particles = Particles::default();
    let mut potential = Some(Vec::new());
    for (t, &nt) in npart.iter().enumerate() {
        let nt = nt as usize;
        if nt == 0 {
            continue;
        }
        let gname = format!("PartType{t}");
        let g = file.group(&gname).map_err(|_| {
            e(format!(
                "no /{gname} group, but /Header/NumPart_ThisFile[{t}] = {nt}"
            ))
        })?;
        let data =
            |name: &str, cols: usize, required: bool| -> Result<Option<Vec<f64>>, SnapshotError> {
                if !g.link_exists(name) {
                    return if required {
                        Err(e(format!("no dataset /{gname}/{name}")))
                    } else {
                        Ok(None)
                    };
                }
                let d = g
                    .dataset(name)
                    .map_err(|x| e(format!("/{gname}/{name}: {x}")))?;
                let shape = d.shape();
                let ok = if cols == 1 {
                    shape == [nt] || shape == [nt, 1]
                } else {
                    shape == [nt, cols]
                };
                if !ok {
                    let want = if cols == 1 {
                        format!("[{nt}]")
                    } else {
                        format!("[{nt}, {cols}]")
                    };
                    return Err(e(format!(
                        "/{gname}/{name} has shape {shape:?}, expected {want}"
                    )));
                }
                d.read_raw::<f64>()
                    .map(Some)
                    .map_err(|x| e(format!("/{gname}/{name}: {x}")))
            };
        let rows = |v: Vec<f64>| -> Vec<[f64; 3]> {
            v.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect()
        };
        particles
            .pos
            .extend(rows(data("Coordinates", 3, true)?.expect("required")));
        particles
            .vel
            .extend(rows(data("Velocities", 3, true)?.expect("required")));
        let ids = {
            let name = "ParticleIDs";
            let d = g
                .dataset(name)
                .map_err(|_| e(format!("no dataset /{gname}/{name}")))?;
            if d.shape() != [nt] {
                return Err(e(format!(
                    "/{gname}/{name} has shape {:?}, expected [{nt}]",
                    d.shape()
                )));
            }
            d.read_raw::<u64>()
                .map_err(|x| e(format!("/{gname}/{name} (integer IDs expected): {x}")))?
        };
        particles.id.extend(ids);
        match data("Masses", 1, false)? {
            Some(m) => particles.mass.extend(m),
            None if header.massarr[t] > 0.0 => particles
                .mass
                .extend(std::iter::repeat_n(header.massarr[t], nt)),
            None => {
                return Err(e(format!(
                    "no dataset /{gname}/Masses and /Header/MassTable[{t}] = 0"
                )));
            }
        }
        particles.ptype.extend(std::iter::repeat_n(t as u8, nt));
        match (data("Potential", 1, false)?, potential.as_mut()) {
            (Some(phi), Some(all)) => all.extend(phi),
            _ => potential = None,
        }
    }
    check_particles(&particles).map_err(|source| SnapshotError::Gadget {
        path: path.to_path_buf(),
        source,
    })?;
    if let Some(i) = potential.iter().flatten().position(|x| !x.is_finite()) {
        return Err(e(format!("particle {i} has a non-finite potential")));
    }
    Ok(Snapshot {
        header,
        particles,
        potential,
    })
}
