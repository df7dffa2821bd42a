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
//!
//! This file holds the snapshot's types, the checks shared by reader and writers and the
//! dispatch by format; the header, the reader and the writer each have a module, re-exported
//! here.

use super::{Particles, TYPES};
use std::fs::File;
use std::path::{Path, PathBuf};

mod header;
mod read;
mod write;
pub use header::*;
pub use read::*;
pub use write::*;

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
    schemars::JsonSchema,
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

#[cfg(test)]
mod tests;
