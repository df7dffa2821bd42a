//! Gadget-2 snapshots (Springel 2005; the Gadget-2 user guide, §6): format 1 read and write,
//! format 2 (each block preceded by a record holding its 4-character name) read and write.
//!
//! A file is a sequence of Fortran-style records, each `[u32 n][n bytes][u32 n]`: the 256-byte
//! header, then the blocks POS (3 floats per particle), VEL, ID (u32 or u64) and MASS (one float
//! per particle of the types whose header mass `massarr` is 0; absent when there are none),
//! particles in type order 0..=5. Floats are float32, or float64 in the double-precision variant:
//! the reader tells them (and 32- from 64-bit ids) apart by the block sizes, and byte-swapped
//! (big-endian) files by the first record marker. Gas (type 0) carries the blocks U (specific
//! internal energy), RHO and HSML after MASS, one float per gas particle; format 2 may add the
//! integrator's state that an exact restart needs (ACCE, DUDT, VSIG, ALPH, DIVV, BALS:
//! acceleration, du/dt, signal velocity, viscosity α, velocity divergence and Balsara factor of
//! the last density pass) and the material ids of a multi-material run (MATI, uint32 per
//! gas particle: warpkit's own block, as Gadget has none). A file with gas must have U; RHO, HSML and the rest are
//! optional (initial conditions often hold U only). Other blocks are skipped; multi-file
//! snapshots are not read.
//!
//! Every value read is checked: positions and velocities finite, masses positive. Writes go to a
//! temporary file that is synced and renamed over the target, so a crash leaves the old file or
//! the new one, never half of one.

use super::{Particles, TYPES};
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The 256-byte Gadget-2 header, field by field (the names of Gadget's `io_header`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Header {
    /// Particles of each type in this file.
    pub npart: [u32; TYPES],
    /// Mass of every particle of a type, or 0 when the MASS block holds them.
    pub massarr: [f64; TYPES],
    pub time: f64,
    pub redshift: f64,
    pub flag_sfr: i32,
    pub flag_feedback: i32,
    /// Particles of each type in all files (low 32 bits).
    pub npart_total: [u32; TYPES],
    pub flag_cooling: i32,
    pub num_files: i32,
    pub box_size: f64,
    pub omega0: f64,
    pub omega_lambda: f64,
    pub hubble_param: f64,
    pub flag_stellarage: i32,
    pub flag_metals: i32,
    /// High 32 bits of `npart_total`.
    pub npart_total_high_word: [u32; TYPES],
    pub flag_entropy_instead_u: i32,
}

impl Header {
    pub const BYTES: usize = 256;

    /// Little-endian bytes (60 zero bytes of padding at the end).
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut b = Vec::with_capacity(Self::BYTES);
        self.npart.iter().for_each(|x| b.extend(x.to_le_bytes()));
        self.massarr.iter().for_each(|x| b.extend(x.to_le_bytes()));
        b.extend(self.time.to_le_bytes());
        b.extend(self.redshift.to_le_bytes());
        b.extend(self.flag_sfr.to_le_bytes());
        b.extend(self.flag_feedback.to_le_bytes());
        self.npart_total
            .iter()
            .for_each(|x| b.extend(x.to_le_bytes()));
        b.extend(self.flag_cooling.to_le_bytes());
        b.extend(self.num_files.to_le_bytes());
        for x in [
            self.box_size,
            self.omega0,
            self.omega_lambda,
            self.hubble_param,
        ] {
            b.extend(x.to_le_bytes());
        }
        b.extend(self.flag_stellarage.to_le_bytes());
        b.extend(self.flag_metals.to_le_bytes());
        self.npart_total_high_word
            .iter()
            .for_each(|x| b.extend(x.to_le_bytes()));
        b.extend(self.flag_entropy_instead_u.to_le_bytes());
        b.resize(Self::BYTES, 0);
        b.try_into().expect("256 bytes")
    }

    /// Decodes 256 bytes of either byte order.
    pub fn from_bytes(b: &[u8; Self::BYTES], big_endian: bool) -> Self {
        let mut r = Fields {
            b,
            at: 0,
            big_endian,
        };
        Header {
            npart: std::array::from_fn(|_| r.u32()),
            massarr: std::array::from_fn(|_| r.f64()),
            time: r.f64(),
            redshift: r.f64(),
            flag_sfr: r.u32() as i32,
            flag_feedback: r.u32() as i32,
            npart_total: std::array::from_fn(|_| r.u32()),
            flag_cooling: r.u32() as i32,
            num_files: r.u32() as i32,
            box_size: r.f64(),
            omega0: r.f64(),
            omega_lambda: r.f64(),
            hubble_param: r.f64(),
            flag_stellarage: r.u32() as i32,
            flag_metals: r.u32() as i32,
            npart_total_high_word: std::array::from_fn(|_| r.u32()),
            flag_entropy_instead_u: r.u32() as i32,
        }
    }

    /// Particles in this file.
    pub fn count(&self) -> u64 {
        self.npart.iter().map(|&n| n as u64).sum()
    }

    /// Particles of type `t` in all files.
    pub fn total(&self, t: usize) -> u64 {
        self.npart_total[t] as u64 | (self.npart_total_high_word[t] as u64) << 32
    }
}

/// Sequential reads of fixed-width fields in one byte order.
struct Fields<'a> {
    b: &'a [u8],
    at: usize,
    big_endian: bool,
}

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut a: [u8; N] = self.b[self.at..self.at + N].try_into().expect("in bounds");
        self.at += N;
        if self.big_endian {
            a.reverse();
        }
        a
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn f32(&mut self) -> f32 {
        f32::from_le_bytes(self.take())
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }
}

/// A snapshot: its header (as read, or as written: `npart`, `massarr`, the totals and
/// `num_files` are derived from the particles) and its particles.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub header: Header,
    pub particles: Particles,
    /// Gravitational potential per particle (in particle order), when known. Only the HDF5
    /// format carries it (`/PartTypeN/Potential`); the Gadget-2 writer ignores it.
    pub potential: Option<Vec<f64>>,
    /// The SPH fields of the gas (type-0) particles, required when there are any.
    pub gas: Option<GasFields>,
}

/// SPH fields of the gas particles, in their order in the snapshot (the first particles). `u` is
/// required; an empty vector is a field the file does not hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GasFields {
    /// Specific internal energy (Gadget's U, SWIFT's InternalEnergies).
    pub u: Vec<f64>,
    /// Density (RHO, Densities).
    pub rho: Vec<f64>,
    /// Smoothing length (HSML, SmoothingLengths): the kernel's support radius.
    pub hsml: Vec<f64>,
    /// What the next step's opening kick and time step use, so that a restart continues the
    /// run to round-off: acceleration (ACCE), du/dt (DUDT), largest signal velocity (VSIG) and
    /// viscosity α (ALPH).
    pub acc: Vec<[f64; 3]>,
    pub du_dt: Vec<f64>,
    pub vsig: Vec<f64>,
    pub alpha: Vec<f64>,
    /// Velocity divergence ∇·v (DIVV) and Balsara factor (BALS) of the last density pass: under
    /// block steps an inactive particle's density and h are predicted from its ∇·v, and its
    /// neighbours' viscosity uses its Balsara factor, until its next pass.
    pub div_v: Vec<f64>,
    pub balsara: Vec<f64>,
    /// Pressure (HDF5's Pressures; the Gadget formats have no such block).
    pub pressure: Vec<f64>,
    /// Material id of a multi-material run (format 2's MATI block, uint32; SWIFT's
    /// MaterialIDs), an index into the run's equations of state.
    pub mat: Vec<u32>,
}

impl GasFields {
    /// Scalar fields by block name, in the order they are written.
    fn scalars(&self) -> [(&'static [u8; 4], &Vec<f64>); 8] {
        [
            (b"U   ", &self.u),
            (b"RHO ", &self.rho),
            (b"HSML", &self.hsml),
            (b"DUDT", &self.du_dt),
            (b"VSIG", &self.vsig),
            (b"ALPH", &self.alpha),
            (b"DIVV", &self.div_v),
            (b"BALS", &self.balsara),
        ]
    }

    /// Every field empty or of length `n`, `u` present, every value finite, `u` ≥ 0, `rho` and
    /// `hsml` > 0.
    pub fn check(&self, n: usize) -> Result<(), GadgetError> {
        let bad = |what: &str, i: usize, v: f64| {
            Err(GadgetError::Gas(format!("gas particle {i}: {what} = {v}")))
        };
        if self.u.len() != n {
            return Err(GadgetError::Gas(format!(
                "{} values of U for {n} gas particles",
                self.u.len()
            )));
        }
        for (name, v) in self.scalars() {
            if !v.is_empty() && v.len() != n {
                return Err(GadgetError::Gas(format!(
                    "{} values of {} for {n} gas particles",
                    v.len(),
                    String::from_utf8_lossy(name).trim()
                )));
            }
        }
        if !self.mat.is_empty() && self.mat.len() != n {
            return Err(GadgetError::Gas(format!(
                "{} material ids for {n} gas particles",
                self.mat.len()
            )));
        }
        if !self.acc.is_empty() && self.acc.len() != n {
            return Err(GadgetError::Gas(format!(
                "{} accelerations for {n} gas particles",
                self.acc.len()
            )));
        }
        for (i, &u) in self.u.iter().enumerate() {
            if !(u >= 0.0 && u.is_finite()) {
                return bad("U", i, u);
            }
        }
        for (what, v) in [("RHO", &self.rho), ("HSML", &self.hsml)] {
            if let Some(i) = v.iter().position(|x| !(*x > 0.0 && x.is_finite())) {
                return bad(what, i, v[i]);
            }
        }
        for (what, v) in [
            ("DUDT", &self.du_dt),
            ("VSIG", &self.vsig),
            ("ALPH", &self.alpha),
            ("DIVV", &self.div_v),
            ("BALS", &self.balsara),
        ] {
            if let Some(i) = v.iter().position(|x| !x.is_finite()) {
                return bad(what, i, v[i]);
            }
        }
        if let Some(i) = self
            .acc
            .iter()
            .position(|a| !a.iter().all(|x| x.is_finite()))
        {
            return bad("ACCE", i, self.acc[i][0]);
        }
        Ok(())
    }
}

/// The float width of the POS, VEL and MASS blocks.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    crate::choice::Choice,
)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// float32: Gadget's default.
    #[default]
    Single,
    /// float64: Gadget's `DOUBLEPRECISION` output; round-trips float64 values exactly.
    Double,
}

/// Format 1 (bare records) or format 2 (a name record before each block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Gadget1,
    Gadget2,
}

/// What is wrong with a Gadget file's contents (or with particles to be written).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GadgetError {
    #[error("not a Gadget snapshot: {0}")]
    Foreign(String),
    #[error(
        "truncated in the {block} record: {needed} bytes needed at offset {offset}, {available} left"
    )]
    Truncated {
        block: &'static str,
        offset: u64,
        needed: u64,
        available: u64,
    },
    #[error(
        "{block} record at offset {offset}: the leading marker says {start} bytes, the trailing one {end}"
    )]
    RecordMarker {
        block: &'static str,
        offset: u64,
        start: u32,
        end: u32,
    },
    #[error("{block} block has {bytes} bytes, which is not {expected} for {count} particles")]
    BlockSize {
        block: &'static str,
        bytes: u64,
        count: u64,
        expected: &'static str,
    },
    #[error("no {0} block")]
    MissingBlock(&'static str),
    #[error("header: {0}")]
    Header(String),
    #[error("particle {index} (id {id}) has a non-finite {what}")]
    NonFinite {
        index: usize,
        id: u64,
        what: &'static str,
    },
    #[error("gas: {0}")]
    Gas(String),
    #[error("particle {index} (id {id}) has mass {mass}; masses must be positive")]
    NonPositiveMass { index: usize, id: u64, mass: f64 },
    #[error("cannot write: {0}")]
    Unwritable(String),
}

/// A snapshot file that could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Gadget { path: PathBuf, source: GadgetError },
    /// An HDF5 snapshot (feature `hdf5`) that could not be opened, has the wrong layout, or
    /// could not be written; `reason` names the group, attribute or dataset.
    #[error("{path}: {reason}")]
    Hdf5 { path: PathBuf, reason: String },
}

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

/// Positions and velocities finite, masses positive, types 0..=5.
pub fn check_particles(p: &Particles) -> Result<(), GadgetError> {
    for i in 0..p.len() {
        let id = p.id[i];
        if !p.pos[i].iter().all(|x| x.is_finite()) {
            return Err(GadgetError::NonFinite {
                index: i,
                id,
                what: "position",
            });
        }
        if !p.vel[i].iter().all(|x| x.is_finite()) {
            return Err(GadgetError::NonFinite {
                index: i,
                id,
                what: "velocity",
            });
        }
        // `!(m > 0)` so that NaN is refused too.
        if !(p.mass[i] > 0.0 && p.mass[i].is_finite()) {
            return Err(GadgetError::NonPositiveMass {
                index: i,
                id,
                mass: p.mass[i],
            });
        }
    }
    Ok(())
}

/// The header written for `s`: its time, redshift, flags and cosmology, with the counts, the
/// per-type masses (a type whose particles all have one mass goes in `massarr`) and a single
/// file.
pub fn header_for(s: &Snapshot) -> Header {
    let p = &s.particles;
    let counts = p.count_by_type();
    let mut h = s.header;
    h.num_files = 1;
    let mut start = 0;
    for (t, &n) in counts.iter().enumerate() {
        h.npart[t] = n as u32;
        h.npart_total[t] = n as u32;
        h.npart_total_high_word[t] = (n as u64 >> 32) as u32;
        let m = &p.mass[start..start + n];
        h.massarr[t] = match m.first() {
            Some(&m0) if m.iter().all(|&x| x.to_bits() == m0.to_bits()) => m0,
            _ => 0.0,
        };
        start += n;
    }
    h
}

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

/// HDF5's file signature (at offset 0 in every file warpkit and Gadget/SWIFT write).
const HDF5_SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

/// Whether `path` is an HDF5 file: its extension (`.hdf5`, `.h5`) or its first 8 bytes.
pub fn is_hdf5(path: &Path) -> bool {
    let by_name = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "hdf5" | "h5"));
    let mut head = [0u8; 8];
    let by_bytes = File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| &head == HDF5_SIGNATURE);
    by_name || by_bytes
}

/// The message for HDF5 asked of a build without the `hdf5` feature.
pub const NO_HDF5: &str = "HDF5 snapshots need warpkit built with the `hdf5` cargo feature \
     (cargo build --release --features hdf5; scripts/setup-hdf5 installs what it needs)";

/// Reads a snapshot of any format warpkit knows: HDF5 (by [`is_hdf5`]; feature `hdf5`) or
/// Gadget format 1/2.
pub fn read_snapshot(path: &Path) -> Result<Snapshot, SnapshotError> {
    if is_hdf5(path) {
        #[cfg(feature = "hdf5")]
        return super::hdf5::read_hdf5(path);
        #[cfg(not(feature = "hdf5"))]
        return Err(SnapshotError::Hdf5 {
            path: path.to_path_buf(),
            reason: NO_HDF5.into(),
        });
    }
    read_gadget(path)
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

#[cfg(test)]
mod tests;
