//! N-body simulation: the particle set, initial conditions ([`ic`]), Gadget snapshots
//! ([`snapshot`]), the float64 reference integrator with its diagnostics ([`cpu`]), the GPU loop
//! ([`gpu`]) and whole runs (`warpkit nbody`, [`run`]), over the per-particle formulas of
//! `warpkit_device::nbody`. Units: G = 1.

pub mod block;
pub mod cpu;
pub mod gpu;
#[cfg(feature = "hdf5")]
pub mod hdf5;
pub mod ic;
pub mod run;
pub mod snapshot;

/// Gadget's particle types: 0 gas, 1 halo, 2 disk, 3 bulge (4 stars, 5 boundary).
pub const GAS: u8 = 0;
pub const HALO: u8 = 1;
pub const DISK: u8 = 2;
pub const BULGE: u8 = 3;
/// Gadget files hold six particle types.
pub const TYPES: usize = 6;

/// A particle set as a struct of arrays. Float64 throughout: the reference integrator and the
/// generators need it; snapshots may store float32 (see [`snapshot::Precision`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Particles {
    pub pos: Vec<[f64; 3]>,
    pub vel: Vec<[f64; 3]>,
    pub mass: Vec<f64>,
    pub id: Vec<u64>,
    /// Gadget particle type, 0..=5.
    pub ptype: Vec<u8>,
}

impl Particles {
    pub fn with_capacity(n: usize) -> Self {
        Particles {
            pos: Vec::with_capacity(n),
            vel: Vec::with_capacity(n),
            mass: Vec::with_capacity(n),
            id: Vec::with_capacity(n),
            ptype: Vec::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.mass.len()
    }

    pub fn is_empty(&self) -> bool {
        self.mass.is_empty()
    }

    pub fn push(&mut self, pos: [f64; 3], vel: [f64; 3], mass: f64, id: u64, ptype: u8) {
        self.pos.push(pos);
        self.vel.push(vel);
        self.mass.push(mass);
        self.id.push(id);
        self.ptype.push(ptype);
    }

    /// Appends all of `other`.
    pub fn append(&mut self, other: &Particles) {
        self.pos.extend_from_slice(&other.pos);
        self.vel.extend_from_slice(&other.vel);
        self.mass.extend_from_slice(&other.mass);
        self.id.extend_from_slice(&other.id);
        self.ptype.extend_from_slice(&other.ptype);
    }

    pub fn total_mass(&self) -> f64 {
        self.mass.iter().sum()
    }

    /// Mass-weighted mean position and velocity.
    pub fn centre_of_mass(&self) -> ([f64; 3], [f64; 3]) {
        let mut x = [0.0; 3];
        let mut v = [0.0; 3];
        for i in 0..self.len() {
            for k in 0..3 {
                x[k] += self.mass[i] * self.pos[i][k];
                v[k] += self.mass[i] * self.vel[i][k];
            }
        }
        let m = self.total_mass();
        (x.map(|c| c / m), v.map(|c| c / m))
    }

    /// Adds `dx` to every position and `dv` to every velocity.
    pub fn shift(&mut self, dx: [f64; 3], dv: [f64; 3]) {
        for (x, v) in self.pos.iter_mut().zip(&mut self.vel) {
            for k in 0..3 {
                x[k] += dx[k];
                v[k] += dv[k];
            }
        }
    }

    /// Moves to the centre-of-mass frame (centre at the origin, zero total momentum).
    pub fn to_centre_of_mass_frame(&mut self) {
        let (x, v) = self.centre_of_mass();
        self.shift(x.map(|c| -c), v.map(|c| -c));
    }

    /// Applies the rotation matrix `r` (row-major) to positions and velocities.
    pub fn rotate(&mut self, r: [[f64; 3]; 3]) {
        let apply = |p: &mut [f64; 3]| {
            let q = *p;
            for (k, row) in r.iter().enumerate() {
                p[k] = row[0] * q[0] + row[1] * q[1] + row[2] * q[2];
            }
        };
        self.pos.iter_mut().for_each(apply);
        self.vel.iter_mut().for_each(apply);
    }

    /// Reorders by type, keeping the order within a type: Gadget files store types in order.
    pub fn sort_by_type(&mut self) {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by_key(|&i| self.ptype[i]);
        let take = |v: &[[f64; 3]]| order.iter().map(|&i| v[i]).collect::<Vec<_>>();
        self.pos = take(&self.pos);
        self.vel = take(&self.vel);
        self.mass = order.iter().map(|&i| self.mass[i]).collect();
        self.id = order.iter().map(|&i| self.id[i]).collect();
        self.ptype = order.iter().map(|&i| self.ptype[i]).collect();
    }

    /// Orders the particles by type, then id: the snapshot order, the same whatever order a
    /// backend keeps them in.
    /// Returns the order applied (`new[k] = old[order[k]]`), for per-particle data kept beside.
    pub fn sort_by_type_and_id(&mut self) -> Vec<usize> {
        use rayon::prelude::*;
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.par_sort_unstable_by_key(|&i| (self.ptype[i], self.id[i]));
        let take = |v: &[[f64; 3]]| order.par_iter().map(|&i| v[i]).collect::<Vec<_>>();
        self.pos = take(&self.pos);
        self.vel = take(&self.vel);
        self.mass = order.par_iter().map(|&i| self.mass[i]).collect();
        self.id = order.par_iter().map(|&i| self.id[i]).collect();
        self.ptype = order.par_iter().map(|&i| self.ptype[i]).collect();
        order
    }

    /// Particles of each type.
    pub fn count_by_type(&self) -> [usize; TYPES] {
        let mut n = [0; TYPES];
        for &t in &self.ptype {
            n[(t as usize).min(TYPES - 1)] += 1;
        }
        n
    }

    /// The indices of particles of type `t`.
    pub fn of_type(&self, t: u8) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).filter(move |&i| self.ptype[i] == t)
    }
}
