//! Writing Gadget format 1 and 2 files: what a writer requires of the particles
//! ([`check_writable`]), the encoding ([`encode_gadget`]) and the atomic write to a path
//! ([`write_gadget`]).

use super::*;
use std::fs::{self, File};
use std::io::{BufWriter, Write};

/// What every snapshot writer (Gadget and HDF5) requires of the particles: valid values, types
/// 0..=5 in type order, no gas (its SPH fields are not kept), at most 2^32 − 1 in one file, and
/// (single precision) values that fit float32.
pub fn check_writable(p: &Particles, precision: Precision) -> Result<(), GadgetError> {
    check_writable_with(p, None, precision)
}

/// [`check_writable`] for a writer that keeps the gas's fields `gas` (required when there is
/// gas, one value per type-0 particle).
pub fn check_writable_with(
    p: &Particles,
    gas: Option<&GasFields>,
    precision: Precision,
) -> Result<(), GadgetError> {
    check_particles(p)?;
    let unwritable = GadgetError::Unwritable;
    if let Some(i) = p.ptype.iter().position(|&t| t as usize >= TYPES) {
        return Err(unwritable(format!("particle {i} has type {}", p.ptype[i])));
    }
    if !p.ptype.windows(2).all(|w| w[0] <= w[1]) {
        return Err(unwritable(
            "particles are not ordered by type (Particles::sort_by_type)".into(),
        ));
    }
    let n_gas = p.ptype.iter().take_while(|&&t| t == 0).count();
    match gas {
        None if n_gas > 0 => {
            return Err(unwritable(
                "gas particles (type 0) need their SPH fields (U, RHO, HSML)".into(),
            ));
        }
        Some(g) if n_gas > 0 => g.check(n_gas)?,
        Some(_) => return Err(unwritable("gas fields given without gas particles".into())),
        None => {}
    }
    let n = p.len() as u64;
    if n > u32::MAX as u64 {
        return Err(unwritable(format!("{n} particles in one file")));
    }
    if precision == Precision::Single {
        let overflow = |x: f64| !(x as f32).is_finite();
        if let Some(i) =
            (0..p.len()).find(|&i| p.pos[i].iter().chain(&p.vel[i]).any(|&x| overflow(x)))
        {
            return Err(unwritable(format!(
                "particle {i} does not fit float32; write double precision"
            )));
        }
    }
    Ok(())
}

/// Encodes `s` into `w`.
pub fn encode_gadget(
    s: &Snapshot,
    format: Format,
    precision: Precision,
    w: &mut impl Write,
) -> Result<(), EncodeError> {
    let p = &s.particles;
    check_writable_with(p, s.gas.as_ref(), precision)?;
    // Format 1 is read by position: HSML without RHO would be read back as densities.
    if format == Format::Gadget1
        && let Some(g) = &s.gas
        && g.rho.is_empty()
        && !g.hsml.is_empty()
    {
        return Err(GadgetError::Unwritable(
            "format 1 holds U, RHO and HSML by position: smoothing lengths without densities \
             would be read back as densities (write format 2, whose blocks are named)"
                .into(),
        )
        .into());
    }
    let n = p.len() as u64;
    let h = header_for(s);
    let wide = precision == Precision::Double;
    let long_ids = p.id.iter().any(|&i| i > u32::MAX as u64);
    let float_bytes = if wide { 8 } else { 4 };
    let mass_idx: Vec<usize> = (0..p.len())
        .filter(|&i| h.massarr[p.ptype[i] as usize] == 0.0)
        .collect();

    let mut rec = |name: &[u8; 4],
                   len: u64,
                   body: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>|
     -> std::io::Result<()> {
        let len = u32::try_from(len).map_err(|_| {
            std::io::Error::other(format!(
                "the {} block needs {len} bytes, more than a record holds",
                String::from_utf8_lossy(name)
            ))
        })?;
        if format == Format::Gadget2 {
            w.write_all(&8u32.to_le_bytes())?;
            w.write_all(name)?;
            w.write_all(&(len + 8).to_le_bytes())?;
            w.write_all(&8u32.to_le_bytes())?;
        }
        w.write_all(&len.to_le_bytes())?;
        body(w)?;
        w.write_all(&len.to_le_bytes())
    };
    let float = |w: &mut dyn Write, x: f64| {
        if wide {
            w.write_all(&x.to_le_bytes())
        } else {
            w.write_all(&(x as f32).to_le_bytes())
        }
    };
    rec(b"HEAD", 256, &mut |w| w.write_all(&h.to_bytes()))?;
    for (name, v) in [(b"POS ", &p.pos), (b"VEL ", &p.vel)] {
        rec(name, 3 * float_bytes * n, &mut |w| {
            v.iter().flatten().try_for_each(|&x| float(w, x))
        })?;
    }
    rec(b"ID  ", if long_ids { 8 } else { 4 } * n, &mut |w| {
        p.id.iter().try_for_each(|&i| {
            if long_ids {
                w.write_all(&i.to_le_bytes())
            } else {
                w.write_all(&(i as u32).to_le_bytes())
            }
        })
    })?;
    if !mass_idx.is_empty() {
        rec(b"MASS", float_bytes * mass_idx.len() as u64, &mut |w| {
            mass_idx.iter().try_for_each(|&i| float(w, p.mass[i]))
        })?;
    }
    if let Some(g) = &s.gas {
        let n_gas = g.u.len() as u64;
        // Format 1 is read by position: U, RHO, HSML only, as Gadget-2 writes them.
        let restart_state = format == Format::Gadget2;

        for (k, (name, v)) in g.scalars().into_iter().enumerate() {
            if k == 3 && restart_state && !g.acc.is_empty() {
                rec(b"ACCE", 3 * float_bytes * n_gas, &mut |w| {
                    g.acc.iter().flatten().try_for_each(|&x| float(w, x))
                })?;
            }
            if v.is_empty() || (k >= 3 && !restart_state) {
                continue;
            }
            rec(name, float_bytes * n_gas, &mut |w| {
                v.iter().try_for_each(|&x| float(w, x))
            })?;
        }
        if restart_state && !g.mat.is_empty() {
            rec(b"MATI", 4 * n_gas, &mut |w| {
                g.mat
                    .iter()
                    .try_for_each(|&k| w.write_all(&k.to_le_bytes()))
            })?;
        }
    }
    Ok(())
}

/// Why [`encode_gadget`] failed: the particles, or the writer.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error(transparent)]
    Gadget(#[from] GadgetError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Writes `s` to `path` through a temporary file beside it, synced, then renamed: `path` is
/// never seen half-written, and on any error the temporary file is removed.
pub fn write_gadget(
    path: &Path,
    s: &Snapshot,
    format: Format,
    precision: Precision,
) -> Result<(), SnapshotError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let io = |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    };
    let result = (|| {
        let file = File::create(&tmp).map_err(io)?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        encode_gadget(s, format, precision, &mut w).map_err(|e| match e {
            EncodeError::Gadget(source) => SnapshotError::Gadget {
                path: path.to_path_buf(),
                source,
            },
            EncodeError::Io(source) => io(source),
        })?;
        let file = w.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)?;
        fs::rename(&tmp, path).map_err(io)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
