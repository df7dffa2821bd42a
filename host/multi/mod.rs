//! Gravity and N-body over K ranks, the CPU side: domain decomposition along the
//! Morton curve ([`sfc`]), the global top tree and the locally essential trees ([`tree`]), and an
//! exchange of byte buffers ([`comm`]) — here between K virtual ranks (threads of one process,
//! [`VirtualRanks`]), on GPUs through NCCL behind the same [`comm::Comm`] trait ([`nccl`]), and
//! each rank's walk on the CPU or a GPU ([`tree::Walker`], [`gpu`]); [`Place`] picks.
//!
//! One step on every rank, each a collective in the same order:
//! 1. the global box (all-gather of 24 bytes), Morton keys in the tree's own geometry;
//! 2. splitters balanced by last step's work (sources summed per body; equal counts at first):
//!    an all-gather of [`sfc::SAMPLES`] (key, work) pieces per rank;
//! 3. migration: bodies whose key left the rank's range move with id, velocity and work
//!    (all-to-all-v of 80-byte [`Record`]s);
//! 4. the local tree in the global root cell, its items all-gathered into the top tree, the
//!    domain boxes all-gathered, the LETs exchanged (all-to-all-v of 64-byte nodes);
//! 5. one walk per warp group over the essential tree: the single tree's forces (bit for bit for
//!    the same groups).

pub mod comm;
pub mod gpu;
pub mod nccl;
pub mod sfc;
#[cfg(test)]
mod tests;
pub mod tree;

use crate::bh::Params;
use crate::device::bh::{self as dev, Accel, Body};
use crate::nbody::Particles;
use comm::{Comm, all_gather_pod, all_to_all_pod, run_ranks};
use sfc::Decomposition;
use std::time::Instant;
use tree::{CpuWalk, Walker};

/// Where the ranks of a [`VirtualRanks`] evaluation run and how they exchange.
#[derive(Clone, Copy)]
pub enum Place<'a> {
    /// [`VirtualRanks::k`] threads exchanging through memory, walks on the CPU.
    Cpu,
    /// [`VirtualRanks::k`] threads exchanging through memory, each rank's walk on this one GPU
    /// (the ranks take turns on it).
    Gpu(&'a crate::runtime::Gpu),
    /// One rank per GPU ([`VirtualRanks::k`] must be their count), exchanging over NCCL
    /// ([`nccl::NcclComm`]).
    Gpus(&'a [&'a crate::runtime::Gpu]),
    /// [`VirtualRanks::k`] threads exchanging through memory, walks by this walker (e.g. the GPU
    /// form of the essential tree walked on the CPU, in the tests).
    Walker(&'a (dyn Walker + Sync)),
}

/// Failures of a multi-rank evaluation.
#[derive(Debug, thiserror::Error)]
pub enum MultiError {
    #[error(transparent)]
    Nccl(#[from] nccl::NcclError),
    /// A rank's GPU walk failed (every rank stops at the same step).
    #[error("rank {rank}: {message}")]
    Rank { rank: usize, message: String },
    #[error("{0}")]
    Setup(String),
}

/// The most virtual ranks one process runs (each is a thread with its own tree and buffers): a
/// bound so that `--ranks` with a huge K is an error, not an exhausted machine.
pub const MAX_VIRTUAL_RANKS: usize = 1024;

/// `--ranks K` checked: at least 1, at most [`MAX_VIRTUAL_RANKS`].
pub fn check_ranks(k: usize) -> Result<(), String> {
    if k == 0 {
        return Err("--ranks must be at least 1".into());
    }
    if k > MAX_VIRTUAL_RANKS {
        return Err(format!(
            "--ranks {k}: at most {MAX_VIRTUAL_RANKS} virtual ranks (each is a thread with its own tree)"
        ));
    }
    Ok(())
}

/// A body as it migrates: 80 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Record {
    pub pos: [f64; 3],
    pub vel: [f64; 3],
    pub mass: f64,
    pub id: u64,
    /// Sources summed for this body at the last force evaluation (1 before the first).
    pub work: f64,
    pub ptype: u32,
    pub _pad: u32,
}

impl Record {
    fn body(&self) -> Body {
        Body {
            x: self.pos[0] as f32,
            y: self.pos[1] as f32,
            z: self.pos[2] as f32,
            m: self.mass as f32,
        }
    }
}

/// One force evaluation over all ranks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepStats {
    /// Bodies per rank after migration.
    pub counts: Vec<usize>,
    /// Bodies that changed rank.
    pub migrated: u64,
    /// Bodies outside their rank's key range after migration (must be 0).
    pub misplaced: u64,
    /// Σ id and Σ id² over all ranks: unchanged while no body is lost or duplicated.
    pub id_sums: (u64, u128),
    /// Bytes sent, over all ranks: global box and splitter samples, migration, top tree and
    /// domain boxes, LETs.
    pub bytes_decomposition: u64,
    pub bytes_migration: u64,
    pub bytes_top: u64,
    pub bytes_let: u64,
    /// Sources summed, and the largest rank's share over the mean.
    pub interactions: u64,
    pub imbalance: f64,
    /// Slowest rank's milliseconds in collectives (in memory here: copies and waits) and in its
    /// own work (keys, trees, walks).
    pub ms_exchange: f64,
    pub ms_compute: f64,
    /// Slowest rank's milliseconds of its walk on a GPU (upload, kernel, download; part of
    /// `ms_compute`), 0 on the CPU.
    pub ms_device: f64,
}

impl StepStats {
    pub fn bytes(&self) -> u64 {
        self.bytes_decomposition + self.bytes_migration + self.bytes_top + self.bytes_let
    }

    fn merge(per_rank: &[RankStep]) -> StepStats {
        let sum = |f: fn(&RankStep) -> u64| per_rank.iter().map(f).sum::<u64>();
        let inter: Vec<u64> = per_rank.iter().map(|r| r.interactions).collect();
        let mean = inter.iter().sum::<u64>() as f64 / inter.len() as f64;
        StepStats {
            counts: per_rank.iter().map(|r| r.count).collect(),
            migrated: sum(|r| r.migrated),
            misplaced: sum(|r| r.misplaced),
            id_sums: per_rank
                .iter()
                .fold((0, 0), |(a, b), r| (a + r.id_sums.0, b + r.id_sums.1)),
            bytes_decomposition: sum(|r| r.bytes[0]),
            bytes_migration: sum(|r| r.bytes[1]),
            bytes_top: sum(|r| r.bytes[2]),
            bytes_let: sum(|r| r.bytes[3]),
            interactions: inter.iter().sum(),
            imbalance: inter.iter().copied().max().unwrap_or(0) as f64 / mean.max(1.0),
            ms_exchange: per_rank.iter().map(|r| r.ms[0]).fold(0.0, f64::max),
            ms_compute: per_rank.iter().map(|r| r.ms[1]).fold(0.0, f64::max),
            ms_device: per_rank.iter().map(|r| r.ms[2]).fold(0.0, f64::max),
        }
    }
}

/// One rank's share of a [`StepStats`].
#[derive(Clone, Copy, Debug, Default)]
struct RankStep {
    count: usize,
    migrated: u64,
    misplaced: u64,
    id_sums: (u64, u128),
    bytes: [u64; 4],
    interactions: u64,
    ms: [f64; 3],
}

/// K ranks in one process (threads), exchanging through memory: the CPU form of the multi-GPU
/// decomposition, deterministic (no result depends on thread timing).
#[derive(Clone, Copy, Debug)]
pub struct VirtualRanks {
    pub k: usize,
    pub params: Params,
    /// Cells act with their quadrupole moments too.
    pub quadrupole: bool,
}

/// [`VirtualRanks::gravity`]'s result.
#[derive(Clone, Debug)]
pub struct Gravity {
    /// In the input order.
    pub acc: Vec<Accel>,
    /// The warp groups walked, as input indices, rank by rank.
    pub groups: Vec<Vec<usize>>,
    pub stats: StepStats,
    pub per_rank: Vec<tree::GravityStats>,
}

/// [`VirtualRanks::run`]'s result.
#[derive(Clone, Debug)]
pub struct Run {
    /// The final state, ordered by id.
    pub particles: Particles,
    /// The first force evaluation, then one per step.
    pub steps: Vec<StepStats>,
}

impl VirtualRanks {
    /// Accelerations of `bodies` (at least 2), dealt to the ranks in contiguous chunks as if each
    /// had read its part of a file, then decomposed, migrated and summed; walks on the CPU.
    pub fn gravity(&self, bodies: &[Body]) -> Gravity {
        self.gravity_on(Place::Cpu, bodies)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Runs `f(comm, walker)` on each rank of `place`, results by rank.
    fn spawn<T: Send>(
        &self,
        place: Place<'_>,
        f: impl Fn(&dyn Comm, &dyn Walker) -> T + Sync,
    ) -> Result<Vec<T>, MultiError> {
        match place {
            Place::Cpu => Ok(run_ranks(self.k, |c| f(c, &CpuWalk))),
            Place::Walker(w) => Ok(run_ranks(self.k, |c| f(c, w))),
            Place::Gpu(g) => {
                let lock = std::sync::Mutex::new(());
                Ok(run_ranks(self.k, |c| {
                    f(
                        c,
                        &gpu::GpuWalk {
                            gpu: g,
                            lock: Some(&lock),
                        },
                    )
                }))
            }
            Place::Gpus(gs) => {
                if gs.len() != self.k {
                    return Err(MultiError::Setup(format!(
                        "{} ranks on {} GPUs: NCCL runs one rank per GPU",
                        self.k,
                        gs.len()
                    )));
                }
                Ok(nccl::run_nccl(gs, |c, g| {
                    f(c, &gpu::GpuWalk { gpu: g, lock: None })
                })?)
            }
        }
    }

    /// [`Self::gravity`] with the ranks of `place`.
    pub fn gravity_on(&self, place: Place<'_>, bodies: &[Body]) -> Result<Gravity, MultiError> {
        let k = self.k;
        let out = self.spawn(place, |c, walker| {
            let r = c.rank();
            let (a, b) = (bodies.len() * r / k, bodies.len() * (r + 1) / k);
            let mut recs: Vec<Record> = (a..b)
                .map(|i| Record {
                    pos: bodies[i].pos().map(|v| v as f64),
                    mass: bodies[i].m as f64,
                    id: i as u64,
                    work: 1.0,
                    ..Record::default()
                })
                .collect();
            let (acc, groups, st, gs) = self.forces(c, walker, &mut recs)?;
            let pairs: Vec<(u64, [f32; 3])> = recs
                .iter()
                .zip(&acc)
                .map(|(r, a)| (r.id, a.map(|v| v as f32)))
                .collect();
            let groups: Vec<Vec<usize>> = groups
                .iter()
                .map(|g| g.iter().map(|&i| recs[i as usize].id as usize).collect())
                .collect();
            Ok((pairs, groups, st, gs))
        })?;
        let out = out.into_iter().collect::<Result<Vec<_>, MultiError>>()?;
        let mut acc = vec![Accel::default(); bodies.len()];
        for (id, a) in out.iter().flat_map(|o| &o.0) {
            acc[*id as usize] = Accel {
                x: a[0],
                y: a[1],
                z: a[2],
            };
        }
        let per: Vec<RankStep> = out.iter().map(|o| o.2).collect();
        Ok(Gravity {
            acc,
            groups: out.iter().flat_map(|o| o.1.clone()).collect(),
            stats: StepStats::merge(&per),
            per_rank: out.iter().map(|o| o.3).collect(),
        })
    }

    /// `steps` kick-drift-kick steps of `dt` from `p` (ids distinct), the ranks starting with
    /// contiguous chunks of `p`; forces in float32 from the tree, as the GPU loop computes them.
    pub fn run(&self, p: &Particles, dt: f64, steps: usize) -> Run {
        self.run_on(Place::Cpu, p, dt, steps)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::run`] with the ranks of `place`.
    pub fn run_on(
        &self,
        place: Place<'_>,
        p: &Particles,
        dt: f64,
        steps: usize,
    ) -> Result<Run, MultiError> {
        let k = self.k;
        let out = self.spawn(place, |c, walker| {
            let r = c.rank();
            let (a, b) = (p.len() * r / k, p.len() * (r + 1) / k);
            let mut recs: Vec<Record> = (a..b)
                .map(|i| Record {
                    pos: p.pos[i],
                    vel: p.vel[i],
                    mass: p.mass[i],
                    id: p.id[i],
                    work: 1.0,
                    ptype: p.ptype[i] as u32,
                    _pad: 0,
                })
                .collect();
            let mut stats = Vec::with_capacity(steps + 1);
            let (mut acc, _, st, _) = self.forces(c, walker, &mut recs)?;
            stats.push(st);
            for _ in 0..steps {
                for (rec, a) in recs.iter_mut().zip(&acc) {
                    crate::device::nbody::half_kick(&mut rec.vel, *a, dt);
                    crate::device::nbody::drift(&mut rec.pos, rec.vel, dt);
                }
                let (acc_new, _, st, _) = self.forces(c, walker, &mut recs)?;
                acc = acc_new;
                for (rec, a) in recs.iter_mut().zip(&acc) {
                    crate::device::nbody::half_kick(&mut rec.vel, *a, dt);
                }
                stats.push(st);
            }
            // The final state to every rank (outside the step statistics).
            let all: Vec<Record> = all_gather_pod(c, &recs).concat();
            Ok((all, stats))
        })?;
        let out = out.into_iter().collect::<Result<Vec<_>, MultiError>>()?;
        let mut all = out[0].0.clone();
        all.sort_by_key(|r| r.id);
        let mut particles = Particles::with_capacity(all.len());
        for r in &all {
            particles.push(r.pos, r.vel, r.mass, r.id, r.ptype as u8);
        }
        let steps = (0..=steps)
            .map(|s| StepStats::merge(&out.iter().map(|o| o.1[s]).collect::<Vec<_>>()))
            .collect();
        Ok(Run { particles, steps })
    }

    /// One force evaluation on rank `c`: decomposition, migration of `recs` (replaced by the
    /// rank's new bodies, in key order), trees, exchange, walks. Returns the accelerations in
    /// `recs`' new order, the groups walked (indices into `recs`), and the statistics.
    /// A failed walk on one rank fails every rank at the same step (a one-byte all-gather of
    /// "done", outside the statistics), so no rank waits in a later collective.
    #[allow(clippy::type_complexity)]
    fn forces(
        &self,
        c: &dyn Comm,
        walker: &dyn Walker,
        recs: &mut Vec<Record>,
    ) -> Result<(Vec<[f64; 3]>, Vec<Vec<u32>>, RankStep, tree::GravityStats), MultiError> {
        let mut st = RankStep::default();
        let mut exchange = 0.0f64;
        let t0 = Instant::now();
        let timed = |ex: &mut f64, f: &mut dyn FnMut()| {
            let t = Instant::now();
            f();
            *ex += t.elapsed().as_secs_f64() * 1e3;
        };
        let b0 = c.bytes_sent();
        let mut header = dev::TreeHeader::new(0);
        timed(&mut exchange, &mut || {
            header = sfc::global_header(c, recs.iter().map(|r| r.body().pos()), 0)
        });
        let root = dev::root_cell(&header);
        let key_of = |r: &Record| sfc::key(r.body().pos(), root);
        let mut keyed: Vec<(u64, Record)> = recs.iter().map(|r| (key_of(r), *r)).collect();
        keyed.sort_by_key(|(k, r)| (*k, r.id));
        let keys: Vec<u64> = keyed.iter().map(|x| x.0).collect();
        let work: Vec<f64> = keyed.iter().map(|x| x.1.work).collect();
        let mut dec = Decomposition {
            splitters: Vec::new(),
        };
        timed(&mut exchange, &mut || {
            dec = Decomposition::balanced(c, &keys, &work)
        });
        let b1 = c.bytes_sent();
        let mut out = vec![Vec::new(); c.size()];
        for (k, r) in &keyed {
            out[dec.rank_of(*k)].push(*r);
        }
        st.migrated = out
            .iter()
            .enumerate()
            .filter(|&(d, _)| d != c.rank())
            .map(|(_, v)| v.len() as u64)
            .sum();
        let mut received = Vec::new();
        timed(&mut exchange, &mut || received = all_to_all_pod(c, &out));
        let b2 = c.bytes_sent();
        let mut keyed: Vec<(u64, Record)> = received
            .into_iter()
            .flatten()
            .map(|r| (key_of(&r), r))
            .collect();
        keyed.sort_by_key(|(k, r)| (*k, r.id));
        let range = dec.range(c.rank());
        st.misplaced = keyed
            .iter()
            .filter(|(k, _)| !(range.0..range.1).contains(k))
            .count() as u64;
        *recs = keyed.iter().map(|x| x.1).collect();
        let keys: Vec<u64> = keyed.iter().map(|x| x.0).collect();
        let bodies: Vec<Body> = recs.iter().map(Record::body).collect();
        let f = tree::rank_gravity(
            c,
            &bodies,
            &keys,
            range,
            &header,
            &self.params,
            self.quadrupole,
            walker,
        );
        let failed: Vec<Vec<u8>> = c.all_gather(&[f.is_err() as u8]);
        let f = match f {
            Ok(f) => f,
            Err(e) => {
                return Err(MultiError::Rank {
                    rank: c.rank(),
                    message: e.to_string(),
                });
            }
        };
        if let Some(r) = failed.iter().position(|v| v[0] != 0) {
            return Err(MultiError::Rank {
                rank: r,
                message: "its GPU walk failed (its own error is reported by that rank)".into(),
            });
        }
        for (r, w) in recs.iter_mut().zip(&f.work) {
            r.work = *w as f64;
        }
        st.count = recs.len();
        st.id_sums = recs
            .iter()
            .fold((0, 0), |(a, b), r| (a + r.id, b + (r.id as u128).pow(2)));
        st.bytes = [b1 - b0, b2 - b1, f.stats.top_bytes, f.stats.let_bytes];
        st.interactions = f.stats.interactions;
        let total = t0.elapsed().as_secs_f64() * 1e3;
        let exchange = exchange + f.stats.ms_exchange;
        st.ms = [exchange, total - exchange, f.stats.ms_device];
        let acc = f
            .acc
            .iter()
            .map(|a| [a.x as f64, a.y as f64, a.z as f64])
            .collect();
        Ok((acc, f.groups, st, f.stats))
    }
}
