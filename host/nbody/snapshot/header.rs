//! The 256-byte Gadget-2 header: its fields, its bytes in either byte order, and the header a
//! writer derives from a snapshot's particles ([`header_for`]).

use super::*;

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
pub(super) struct Fields<'a> {
    pub(super) b: &'a [u8],
    pub(super) at: usize,
    pub(super) big_endian: bool,
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
    pub(super) fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    pub(super) fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    pub(super) fn f32(&mut self) -> f32 {
        f32::from_le_bytes(self.take())
    }
    pub(super) fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }
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
