//! The exchange between ranks: a [`Comm`] of byte buffers, and [`MemComm`], its in-memory form
//! for K virtual ranks (threads) of one process.
//!
//! The same trait over NCCL is [`super::nccl::NcclComm`] (that module's doc: the collectives,
//! the library lookup, multi-node). Buffers stay host byte vectors at the trait (the LET and
//! migration are built on the CPU); the NCCL form stages them through device memory.

use std::sync::{Condvar, Mutex};

/// Collective exchange of byte buffers among `size()` ranks; every rank calls each collective,
/// in the same order (as with MPI and NCCL).
pub trait Comm {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// Every rank's `send`, indexed by rank (this rank's own included).
    fn all_gather(&self, send: &[u8]) -> Vec<Vec<u8>>;
    /// `send[d]` goes to rank `d`; returns what each rank sent to this one, indexed by sender.
    fn all_to_all_v(&self, send: Vec<Vec<u8>>) -> Vec<Vec<u8>>;
    /// Bytes this rank has sent to other ranks so far (its own buffers not counted).
    fn bytes_sent(&self) -> u64;
}

/// `bytes` as values (copied: a byte buffer need not be aligned for `T`).
fn from_bytes<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
    let mut v = vec![T::zeroed(); bytes.len() / std::mem::size_of::<T>().max(1)];
    bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(bytes);
    v
}

/// An all-gather of plain values.
pub fn all_gather_pod<T: bytemuck::Pod>(comm: &dyn Comm, v: &[T]) -> Vec<Vec<T>> {
    comm.all_gather(bytemuck::cast_slice(v))
        .iter()
        .map(|b| from_bytes(b))
        .collect()
}

/// An all-to-all-v of plain values.
pub fn all_to_all_pod<T: bytemuck::Pod>(comm: &dyn Comm, send: &[Vec<T>]) -> Vec<Vec<T>> {
    let bytes = send
        .iter()
        .map(|v| bytemuck::cast_slice(v).to_vec())
        .collect();
    comm.all_to_all_v(bytes)
        .iter()
        .map(|b| from_bytes(b))
        .collect()
}

/// The mailboxes shared by the K ranks of one process, and a barrier that fails every rank once
/// one has panicked (otherwise a failed test would hang the others at the barrier).
pub struct Exchange {
    k: usize,
    /// `slots[src][dst]`.
    slots: Mutex<Vec<Vec<Vec<u8>>>>,
    gate: Mutex<Gate>,
    turn: Condvar,
}

#[derive(Default)]
struct Gate {
    arrived: usize,
    generation: u64,
    aborted: bool,
}

impl Exchange {
    pub fn new(k: usize) -> Self {
        assert!(k > 0, "at least one rank");
        Exchange {
            k,
            slots: Mutex::new(vec![vec![Vec::new(); k]; k]),
            gate: Mutex::new(Gate::default()),
            turn: Condvar::new(),
        }
    }

    /// Rank `rank`'s endpoint.
    pub fn rank(&self, rank: usize) -> MemComm<'_> {
        assert!(rank < self.k);
        MemComm {
            ex: self,
            rank,
            sent: Default::default(),
        }
    }

    fn barrier(&self) {
        let mut g = self.gate.lock().unwrap_or_else(|e| e.into_inner());
        let generation = g.generation;
        g.arrived += 1;
        if g.arrived == self.k {
            g.arrived = 0;
            g.generation += 1;
            self.turn.notify_all();
        } else {
            while g.generation == generation && !g.aborted {
                g = self.turn.wait(g).unwrap_or_else(|e| e.into_inner());
            }
        }
        assert!(!g.aborted, "another rank failed");
    }

    /// Releases every waiting rank with a panic: called when a rank fails.
    pub fn abort(&self) {
        let mut g = self.gate.lock().unwrap_or_else(|e| e.into_inner());
        g.aborted = true;
        self.turn.notify_all();
    }
}

/// One virtual rank's endpoint on an [`Exchange`].
pub struct MemComm<'a> {
    ex: &'a Exchange,
    rank: usize,
    sent: std::sync::atomic::AtomicU64,
}

impl MemComm<'_> {
    fn count(&self, bytes: usize) {
        self.sent
            .fetch_add(bytes as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Comm for MemComm<'_> {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.ex.k
    }
    fn all_gather(&self, send: &[u8]) -> Vec<Vec<u8>> {
        self.count(send.len() * (self.ex.k - 1));
        self.ex.slots.lock().unwrap()[self.rank][self.rank] = send.to_vec();
        self.ex.barrier();
        let out = {
            let slots = self.ex.slots.lock().unwrap();
            (0..self.ex.k).map(|s| slots[s][s].clone()).collect()
        };
        // Nobody refills the slots before everyone has read them.
        self.ex.barrier();
        out
    }
    fn all_to_all_v(&self, send: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        assert_eq!(send.len(), self.ex.k, "one buffer per rank");
        let others: usize = send
            .iter()
            .enumerate()
            .filter(|&(d, _)| d != self.rank)
            .map(|(_, b)| b.len())
            .sum();
        self.count(others);
        self.ex.slots.lock().unwrap()[self.rank] = send;
        self.ex.barrier();
        let out = {
            let mut slots = self.ex.slots.lock().unwrap();
            (0..self.ex.k)
                .map(|s| std::mem::take(&mut slots[s][self.rank]))
                .collect()
        };
        self.ex.barrier();
        out
    }
    fn bytes_sent(&self) -> u64 {
        self.sent.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Runs `f(comm)` on each of `k` virtual ranks, one thread each, and returns the results by rank.
/// A panic in one rank fails the others' next collective and is re-raised here.
pub fn run_ranks<T: Send>(k: usize, f: impl Fn(&dyn Comm) -> T + Sync) -> Vec<T> {
    let ex = Exchange::new(k);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..k)
            .map(|r| {
                let (ex, f) = (&ex, &f);
                s.spawn(move || {
                    struct AbortOnPanic<'a>(&'a Exchange);
                    impl Drop for AbortOnPanic<'_> {
                        fn drop(&mut self) {
                            if std::thread::panicking() {
                                self.0.abort();
                            }
                        }
                    }
                    let _guard = AbortOnPanic(ex);
                    f(&ex.rank(r))
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}
