//! Reading Gadget format 1 and 2 files: records checked marker by marker, blocks found by
//! position (format 1) or by name (format 2), every value checked before it is returned.

use super::*;
use std::fs;

/// Record-by-record reading of a whole file in memory.
struct Records<'a> {
    b: &'a [u8],
    at: usize,
    big_endian: bool,
}

impl<'a> Records<'a> {
    fn marker(&self, at: usize, block: &'static str) -> Result<u32, GadgetError> {
        let m = self.b.get(at..at + 4).ok_or(GadgetError::Truncated {
            block,
            offset: at as u64,
            needed: 4,
            available: self.b.len().saturating_sub(at) as u64,
        })?;
        let m: [u8; 4] = m.try_into().expect("4 bytes");
        Ok(if self.big_endian {
            u32::from_be_bytes(m)
        } else {
            u32::from_le_bytes(m)
        })
    }

    /// The next record's payload.
    fn record(&mut self, block: &'static str) -> Result<&'a [u8], GadgetError> {
        let start = self.at;
        let n = self.marker(start, block)? as usize;
        let body = start + 4;
        if self.b.len() < body + n + 4 {
            return Err(GadgetError::Truncated {
                block,
                offset: body as u64,
                needed: n as u64 + 4,
                available: (self.b.len() - body) as u64,
            });
        }
        let end = self.marker(body + n, block)?;
        if end as usize != n {
            return Err(GadgetError::RecordMarker {
                block,
                offset: start as u64,
                start: n as u32,
                end,
            });
        }
        self.at = body + n + 4;
        Ok(&self.b[body..body + n])
    }

    fn done(&self) -> bool {
        self.at >= self.b.len()
    }

    fn fields(&self, b: &'a [u8]) -> Fields<'a> {
        Fields {
            b,
            at: 0,
            big_endian: self.big_endian,
        }
    }
}

/// The block names of format 2 (space-padded to 4 characters).
const NAMES: [(&[u8; 4], &str); 15] = [
    (b"HEAD", "HEAD"),
    (b"POS ", "POS"),
    (b"VEL ", "VEL"),
    (b"ID  ", "ID"),
    (b"MASS", "MASS"),
    (b"U   ", "U"),
    (b"RHO ", "RHO"),
    (b"HSML", "HSML"),
    (b"ACCE", "ACCE"),
    (b"DUDT", "DUDT"),
    (b"VSIG", "VSIG"),
    (b"ALPH", "ALPH"),
    (b"MATI", "MATI"),
    (b"DIVV", "DIVV"),
    (b"BALS", "BALS"),
];

/// The blocks a format-1 file holds after MASS when it has gas, in order (each optional from the
/// second on: initial conditions often stop after U).
const GAS_BLOCKS_1: [usize; 3] = [5, 6, 7];

/// Decodes a snapshot from the bytes of a whole file.
pub fn parse_gadget(bytes: &[u8]) -> Result<Snapshot, GadgetError> {
    let first: [u8; 4] = bytes
        .get(..4)
        .ok_or(GadgetError::Truncated {
            block: "HEAD",
            offset: 0,
            needed: 4,
            available: bytes.len() as u64,
        })?
        .try_into()
        .expect("4 bytes");
    let (le, be) = (u32::from_le_bytes(first), u32::from_be_bytes(first));
    let (format, big_endian) = match (le, be) {
        (256, _) => (Format::Gadget1, false),
        (8, _) => (Format::Gadget2, false),
        (_, 256) => (Format::Gadget1, true),
        (_, 8) => (Format::Gadget2, true),
        _ => {
            return Err(GadgetError::Foreign(format!(
                "the first record marker is {le} (byte-swapped {be}), not 256 (format 1) or 8 \
                 (format 2)"
            )));
        }
    };
    let mut r = Records {
        b: bytes,
        at: 0,
        big_endian,
    };
    // The blocks by name: in order for format 1, by their name records for format 2.
    let mut blocks: [Option<&[u8]>; NAMES.len()] = [None; NAMES.len()];
    let header_bytes = match format {
        Format::Gadget1 => r.record("HEAD")?,
        Format::Gadget2 => {
            let (k, payload) = named_record(&mut r)?;
            if k != Some(0) {
                return Err(GadgetError::Foreign(
                    "format 2 file whose first block is not HEAD".into(),
                ));
            }
            payload
        }
    };
    if header_bytes.len() != Header::BYTES {
        return Err(GadgetError::BlockSize {
            block: "HEAD",
            bytes: header_bytes.len() as u64,
            count: 1,
            expected: "256",
        });
    }
    let header = Header::from_bytes(header_bytes.try_into().expect("256"), big_endian);
    check_header(&header)?;
    let n = header.count();
    let n_mass: u64 = (0..TYPES)
        .filter(|&t| header.massarr[t] == 0.0)
        .map(|t| header.npart[t] as u64)
        .sum();
    match format {
        Format::Gadget1 => {
            for (k, &(_, name)) in NAMES.iter().enumerate().take(5).skip(1) {
                if k == 4 && n_mass == 0 {
                    break;
                }
                blocks[k] = Some(r.record(name)?);
            }
            if header.npart[0] > 0 {
                for &k in &GAS_BLOCKS_1 {
                    if r.done() {
                        break;
                    }
                    blocks[k] = Some(r.record(NAMES[k].1)?);
                }
            }
        }
        Format::Gadget2 => {
            while !r.done() {
                let (k, payload) = named_record(&mut r)?;
                if let Some(k) = k.filter(|&k| k > 0 && blocks[k].is_none()) {
                    blocks[k] = Some(payload);
                }
            }
        }
    }
    let block = |k: usize| blocks[k].ok_or(GadgetError::MissingBlock(NAMES[k].1));
    let width = |k: usize, per: u64, count: u64, small: u64| -> Result<u64, GadgetError> {
        let bytes = block(k)?.len() as u64;
        match bytes {
            _ if bytes == per * small * count => Ok(small),
            _ if bytes == per * 2 * small * count => Ok(2 * small),
            _ => Err(GadgetError::BlockSize {
                block: NAMES[k].1,
                bytes,
                count,
                expected: if small == 4 && per == 3 {
                    "12 or 24 bytes a particle"
                } else {
                    "4 or 8 bytes a particle"
                },
            }),
        }
    };
    let vec3 = |k: usize| -> Result<Vec<[f64; 3]>, GadgetError> {
        let w = width(k, 3, n, 4)?;
        let mut f = r.fields(block(k)?);
        Ok((0..n)
            .map(|_| std::array::from_fn(|_| if w == 4 { f.f32() as f64 } else { f.f64() }))
            .collect())
    };
    let pos = vec3(1)?;
    let vel = vec3(2)?;
    let w = width(3, 1, n, 4)?;
    let mut f = r.fields(block(3)?);
    let id: Vec<u64> = (0..n)
        .map(|_| if w == 4 { f.u32() as u64 } else { f.u64() })
        .collect();
    let mut masses = if n_mass > 0 {
        let w = width(4, 1, n_mass, 4)?;
        let mut f = r.fields(block(4)?);
        (0..n_mass)
            .map(|_| if w == 4 { f.f32() as f64 } else { f.f64() })
            .collect::<Vec<_>>()
            .into_iter()
    } else {
        Vec::new().into_iter()
    };
    let mut mass = Vec::with_capacity(n as usize);
    let mut ptype = Vec::with_capacity(n as usize);
    for t in 0..TYPES {
        for _ in 0..header.npart[t] {
            mass.push(if header.massarr[t] == 0.0 {
                masses.next().expect("counted")
            } else {
                header.massarr[t]
            });
            ptype.push(t as u8);
        }
    }
    let particles = Particles {
        pos,
        vel,
        mass,
        id,
        ptype,
    };
    check_particles(&particles)?;
    let n_gas = header.npart[0] as u64;
    let gas = if n_gas > 0 {
        let scalar = |k: usize| -> Result<Vec<f64>, GadgetError> {
            if blocks[k].is_none() {
                return Ok(Vec::new());
            }
            let w = width(k, 1, n_gas, 4)?;
            let mut f = r.fields(block(k)?);
            Ok((0..n_gas)
                .map(|_| if w == 4 { f.f32() as f64 } else { f.f64() })
                .collect())
        };
        if blocks[5].is_none() {
            return Err(no_u());
        }
        let acc = if blocks[8].is_some() {
            let w = width(8, 3, n_gas, 4)?;
            let mut f = r.fields(block(8)?);
            (0..n_gas)
                .map(|_| std::array::from_fn(|_| if w == 4 { f.f32() as f64 } else { f.f64() }))
                .collect()
        } else {
            Vec::new()
        };
        let mat = if blocks[12].is_some() {
            let bytes = block(12)?.len() as u64;
            if bytes != 4 * n_gas {
                return Err(GadgetError::BlockSize {
                    block: "MATI",
                    bytes,
                    count: n_gas,
                    expected: "4 bytes a particle",
                });
            }
            let mut f = r.fields(block(12)?);
            (0..n_gas).map(|_| f.u32()).collect()
        } else {
            Vec::new()
        };
        let g = GasFields {
            mat,
            u: scalar(5)?,
            rho: scalar(6)?,
            hsml: scalar(7)?,
            acc,
            du_dt: scalar(9)?,
            vsig: scalar(10)?,
            alpha: scalar(11)?,
            div_v: scalar(13)?,
            balsara: scalar(14)?,
            pressure: Vec::new(),
        };
        g.check(n_gas as usize)?;
        Some(g)
    } else {
        None
    };
    Ok(Snapshot {
        header,
        particles,
        potential: None,
        gas,
    })
}

fn no_u() -> GadgetError {
    GadgetError::Gas(
        "gas particles (type 0) without a U block (their specific internal energies)".into(),
    )
}

/// A format-2 name record and the block after it: the index in [`NAMES`] (None for a block
/// warpkit does not read) and the payload.
fn named_record<'a>(r: &mut Records<'a>) -> Result<(Option<usize>, &'a [u8]), GadgetError> {
    let label = r.record("block name")?;
    if label.len() != 8 {
        return Err(GadgetError::BlockSize {
            block: "block name",
            bytes: label.len() as u64,
            count: 1,
            expected: "8",
        });
    }
    let k = NAMES.iter().position(|(tag, _)| &label[..4] == *tag);
    let payload = r.record(k.map_or("unnamed", |k| NAMES[k].1))?;
    Ok((k, payload))
}

fn check_header(h: &Header) -> Result<(), GadgetError> {
    if h.num_files > 1 {
        return Err(GadgetError::Header(format!(
            "one file of a snapshot in {} files (multi-file snapshots are not read)",
            h.num_files
        )));
    }
    if let Some(t) = (0..TYPES).find(|&t| !(h.massarr[t].is_finite() && h.massarr[t] >= 0.0)) {
        return Err(GadgetError::Header(format!(
            "massarr[{t}] = {} (must be finite and ≥ 0)",
            h.massarr[t]
        )));
    }
    if h.count() > (usize::MAX / 64) as u64 {
        return Err(GadgetError::Header(format!("{} particles", h.count())));
    }
    Ok(())
}

/// Reads a Gadget format 1 or 2 file.
pub fn read_gadget(path: &Path) -> Result<Snapshot, SnapshotError> {
    let bytes = fs::read(path).map_err(|source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_gadget(&bytes).map_err(|source| SnapshotError::Gadget {
        path: path.to_path_buf(),
        source,
    })
}
