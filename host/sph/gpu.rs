//! The GPU launchers: the octree of `crate::bh` built and sorted on the device, cell boxes, the
//! three searches (count, CSR fill, density) and the smoothing-length iteration, each timed with
//! CUDA events.

use super::{
    Criterion, HIteration, HParams, Method, Neighbours, SmoothingKernel, SphError, check_pairs,
    grid, initial_h, validate,
};
use crate::bh::gpu::{BhError, DeviceOctree, Storage, build_device_tree, sort_tree};
use crate::bh::initial_cells;
use crate::device::bh::{self as bdev, Body};
use crate::device::sph::kernels as k;
use crate::device::sph::kernels::Outputs;
use crate::device::sph::{self as dev, CellBox, HState};
use crate::runtime::{CudaSlice, Gpu, GpuError, LaunchConfig, ViewMut};

/// Failures of a GPU SPH request.
#[derive(Debug, thiserror::Error)]
pub enum SphGpuError {
    #[error(transparent)]
    Input(#[from] SphError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Tree(#[from] BhError),
}

/// Particles, smoothing lengths and their boxed, sorted octree on the device.
pub struct DeviceSph {
    pub n: usize,
    /// Sorted in warp groups of at most 32.
    pub octree: DeviceOctree,
    pub h: CudaSlice<f32>,
    /// The particles in tree order (`sph_tree_order`): what the group walk's ranges read.
    pub sorted: CudaSlice<Body>,
    pub ngroups: u32,
    pub boxes: CudaSlice<CellBox>,
    /// Milliseconds: tree (build, summarize, sort) and the cell boxes.
    pub tree_ms: f64,
    pub boxes_ms: f64,
    /// The smoothing lengths on the host (for the cell grid).
    h_host: Vec<f32>,
    /// While the h iteration runs the group search: the groups its next pass walks.
    walk: Option<ActiveGroups>,
    host_bodies: Vec<Body>,
}

/// The walks of the group search's next pass (`sph_active_groups`: a warp group each, or a lane
/// range of a split one, with particles still iterating): `groups[..n]`.
struct ActiveGroups {
    groups: CudaSlice<[u32; 2]>,
    count: CudaSlice<u32>,
    n: u32,
}

/// A search's outputs as one kernel parameter (null where `None`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn outputs<'a>(
    gpu: &Gpu,
    kernel: u32,
    counts: Option<&'a mut CudaSlice<u32>>,
    offsets: Option<&'a CudaSlice<u32>>,
    list: Option<&'a mut CudaSlice<u32>>,
    rho: Option<&'a mut CudaSlice<f32>>,
    state: Option<&'a CudaSlice<HState>>,
    tested: Option<&'a mut CudaSlice<u64>>,
) -> ViewMut<'a, Outputs> {
    use core::ptr::{null, null_mut};
    let o = Outputs {
        counts: counts.map_or(null_mut(), |b| gpu.addr_mut(b)),
        offsets: offsets.map_or(null(), |b| gpu.addr(b)),
        list: list.map_or(null_mut(), |b| gpu.addr_mut(b)),
        rho: rho.map_or(null_mut(), |b| gpu.addr_mut(b)),
        state: state.map_or(null(), |b| gpu.addr(b)),
        tested: tested.map_or(null_mut(), |b| gpu.addr_mut(b)),
        kernel,
    };
    // SAFETY: each pointer is a buffer borrowed (mutably where written) for 'a, or null.
    unsafe { ViewMut::new(o) }
}

fn grid_cfg(gpu: &Gpu, n: usize, block: u32) -> LaunchConfig {
    let blocks = (n as u32).div_ceil(block).clamp(1, 65_535);
    let _ = gpu;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl DeviceSph {
    /// Uploads and builds (h ≥ 0; `positive_h` refuses h = 0, for density).
    pub fn new(gpu: &Gpu, bodies: &[Body], h: &[f32]) -> Result<Self, SphGpuError> {
        validate(bodies, h, false)?;
        let n = bodies.len();
        let n32 = n as u32;
        let mut oct = build_device_tree(gpu, bodies, Storage::Dense, initial_cells(n))?;
        let layout = oct.layout;
        let sort_ms = sort_tree(gpu, &mut oct, bdev::GROUP_SIZE)?;
        let ngroups = gpu.download(&oct.tree.header)?[0].groups;
        let mut sorted = gpu.alloc_poisoned::<Body>(n)?;
        // SAFETY: sort is a permutation of 0..n (bh_sort); both arrays hold n entries.
        let order_ms = gpu
            .time(|| unsafe {
                let cfg = grid_cfg(gpu, n, k::CELL_BLOCK);
                let args = (&oct.bodies, &oct.tree.sort, n32, &mut sorted);
                gpu.launch(k::sph_tree_order, cfg, args)
            })?
            .1;
        let mut s = DeviceSph {
            n,
            tree_ms: oct.times.tree() + sort_ms + order_ms,
            octree: oct,
            h: gpu.upload(h)?,
            sorted,
            ngroups,
            boxes: gpu.alloc_poisoned(layout.cells as usize)?,
            boxes_ms: 0.0,
            h_host: h.to_vec(),
            walk: None,
            host_bodies: bodies.to_vec(),
        };
        s.compute_boxes(gpu)?;
        Ok(s)
    }

    /// New smoothing lengths (validated), and the cells' boxes for them.
    pub fn set_h(&mut self, gpu: &Gpu, h: &[f32]) -> Result<(), SphGpuError> {
        validate(&self.host_bodies, h, false)?;
        self.h = gpu.upload(h)?;
        self.h_host = h.to_vec();
        self.compute_boxes(gpu)
    }

    fn compute_boxes(&mut self, gpu: &Gpu) -> Result<(), SphGpuError> {
        let mut ready = gpu.alloc_zeros::<u32>(self.octree.layout.cells as usize)?;
        let cfg = gpu.resident_grid(k::sph_cell_boxes, k::CELL_BLOCK)?;
        // SAFETY: boxes and ready hold layout.cells entries; the tree is complete.
        self.boxes_ms = gpu
            .time(|| unsafe {
                let args = (self.octree.view(gpu), &self.h, &mut self.boxes, &mut ready);
                gpu.launch(k::sph_cell_boxes, cfg, args)
            })?
            .1;
        Ok(())
    }

    /// The smoothing lengths in use.
    pub fn h_host(&self) -> &[f32] {
        &self.h_host
    }

    /// The cells' boxes (for checks against the CPU twin).
    pub fn download_boxes(&self, gpu: &Gpu) -> Result<Vec<CellBox>, SphGpuError> {
        Ok(gpu.download(&self.boxes)?)
    }

    /// One search pass writing the outputs of `mode`; returns milliseconds (for the cell list,
    /// its hash, sort and scan included).
    #[allow(clippy::too_many_arguments)]
    fn search(
        &mut self,
        gpu: &Gpu,
        method: Method,
        crit: Criterion,
        mode: u32,
        kernel: u32,
        counts: Option<&mut CudaSlice<u32>>,
        offsets: Option<&CudaSlice<u32>>,
        list: Option<&mut CudaSlice<u32>>,
        rho: Option<&mut CudaSlice<f32>>,
        state: Option<&CudaSlice<HState>>,
        tested: Option<&mut CudaSlice<u64>>,
    ) -> Result<f64, SphGpuError> {
        let n32 = self.n as u32;
        let c = crit.code();
        let out = outputs(gpu, kernel, counts, offsets, list, rho, state, tested);
        // SAFETY (each launch): buffers sized as the kernels' docs require (outputs n, offsets
        // n + 1, list offsets[n]).
        match method {
            Method::Vote => {
                let cfg = gpu.resident_grid(k::sph_vote, k::VOTE_BLOCK)?;
                let args = (self.octree.view(gpu), &self.h, &self.boxes, c, mode, out);
                Ok(gpu
                    .time(|| unsafe { gpu.launch(k::sph_vote, cfg, args) })?
                    .1)
            }
            Method::Group => {
                let mut next_group = gpu.alloc_zeros::<u32>(1)?;
                let (tree, ngroups) = match &self.walk {
                    Some(a) => (self.octree.view_groups(gpu, &a.groups), a.n),
                    None => (self.octree.view(gpu), self.ngroups),
                };
                let args = (
                    tree,
                    &self.h,
                    &self.sorted,
                    &self.boxes,
                    ngroups,
                    &mut next_group,
                    c,
                    mode,
                    out,
                );
                // The ladder has entries of its own (its registers would be every mode's); a
                // search of few walks tests each served target's own sphere (FEW_PASS_WALKS).
                let ms = if mode == dev::MODE_LADDER && ngroups <= dev::FEW_PASS_WALKS {
                    let cfg = gpu.resident_grid(k::sph_group_ladder_few, k::GROUP_BLOCK)?;
                    gpu.time(|| unsafe { gpu.launch(k::sph_group_ladder_few, cfg, args) })?
                } else if mode == dev::MODE_LADDER {
                    let cfg = gpu.resident_grid(k::sph_group_ladder, k::GROUP_BLOCK)?;
                    gpu.time(|| unsafe { gpu.launch(k::sph_group_ladder, cfg, args) })?
                } else if ngroups <= dev::FEW_PASS_WALKS {
                    let cfg = gpu.resident_grid(k::sph_group_few, k::GROUP_BLOCK)?;
                    gpu.time(|| unsafe { gpu.launch(k::sph_group_few, cfg, args) })?
                } else {
                    let cfg = gpu.resident_grid(k::sph_group, k::GROUP_BLOCK)?;
                    gpu.time(|| unsafe { gpu.launch(k::sph_group, cfg, args) })?
                };
                Ok(ms.1)
            }
            Method::Cells => {
                let g = grid(&self.host_bodies, &self.h_host);
                let m = g.cells() as usize;
                let mut cell_of = gpu.alloc_poisoned::<u32>(self.n)?;
                let mut rank = gpu.alloc_poisoned::<u32>(self.n)?;
                let mut cell_count = gpu.alloc_zeros::<u32>(m)?;
                let mut start = gpu.alloc_poisoned::<u32>(m + 1)?;
                let mut total = gpu.alloc_zeros::<u64>(1)?;
                let mut order = gpu.alloc_poisoned::<u32>(self.n)?;
                let cfg = grid_cfg(gpu, self.n, k::CELL_BLOCK);
                let one = LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (k::SCAN_BLOCK, 1, 1),
                    shared_mem_bytes: 0,
                };
                let ms = gpu.time(|| unsafe {
                    gpu.launch(
                        k::sph_cell_hash,
                        cfg,
                        (
                            &self.octree.bodies,
                            n32,
                            g,
                            &mut cell_of,
                            &mut rank,
                            &mut cell_count,
                        ),
                    )?;
                    gpu.launch(
                        k::sph_scan,
                        one,
                        (&cell_count, m as u32, &mut start, &mut total),
                    )?;
                    gpu.launch(
                        k::sph_cell_scatter,
                        cfg,
                        (n32, &cell_of, &rank, &start, &mut order),
                    )?;
                    let args = (
                        &self.octree.bodies,
                        &self.h,
                        n32,
                        g,
                        &start,
                        &order,
                        c,
                        mode,
                        out,
                    );
                    gpu.launch(k::sph_cell_query, cfg, args)
                })?;
                Ok(ms.1)
            }
        }
    }

    /// Neighbour counts and the search's milliseconds.
    pub fn counts(
        &mut self,
        gpu: &Gpu,
        method: Method,
        crit: Criterion,
    ) -> Result<(Vec<u32>, f64), SphGpuError> {
        let mut counts = gpu.alloc_poisoned::<u32>(self.n)?;
        let ms = self.search(
            gpu,
            method,
            crit,
            dev::MODE_COUNT,
            0,
            Some(&mut counts),
            None,
            None,
            None,
            None,
            None,
        )?;
        Ok((gpu.download(&counts)?, ms))
    }

    /// CSR lists: a count pass, the scan (on the device; the exact total checked against
    /// `max_pairs` before the list is allocated), a fill pass. Rows sorted on the host.
    /// Milliseconds of the three device stages.
    pub fn neighbours(
        &mut self,
        gpu: &Gpu,
        method: Method,
        crit: Criterion,
        max_pairs: u64,
    ) -> Result<(Neighbours, f64), SphGpuError> {
        let n32 = self.n as u32;
        let mut counts = gpu.alloc_poisoned::<u32>(self.n)?;
        let mut offsets = gpu.alloc_poisoned::<u32>(self.n + 1)?;
        let mut total = gpu.alloc_zeros::<u64>(1)?;
        let t0 = self.search(
            gpu,
            method,
            crit,
            dev::MODE_COUNT,
            0,
            Some(&mut counts),
            None,
            None,
            None,
            None,
            None,
        )?;
        let one = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (k::SCAN_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: counts n, offsets n + 1, total 1.
        let t1 = gpu
            .time(|| unsafe {
                gpu.launch(k::sph_scan, one, (&counts, n32, &mut offsets, &mut total))
            })?
            .1;
        let pairs = gpu.download(&total)?[0];
        check_pairs(pairs, max_pairs)?;
        let mut list = gpu.alloc_poisoned::<u32>((pairs as usize).max(1))?;
        let t2 = self.search(
            gpu,
            method,
            crit,
            dev::MODE_FILL,
            0,
            None,
            Some(&offsets),
            Some(&mut list),
            None,
            None,
            None,
        )?;
        let mut list = gpu.download(&list)?;
        list.truncate(pairs as usize);
        let mut nb = Neighbours {
            offsets: gpu.download(&offsets)?,
            list,
        };
        nb.sort_rows();
        Ok((nb, t0 + t1 + t2))
    }

    /// SPH density (gather, h > 0) and the search's milliseconds.
    pub fn density(
        &mut self,
        gpu: &Gpu,
        method: Method,
        kernel: SmoothingKernel,
    ) -> Result<(Vec<f32>, f64), SphGpuError> {
        validate(&self.host_bodies, &self.h_host, true)?;
        let mut rho = gpu.alloc_poisoned::<f32>(self.n)?;
        let ms = self.search(
            gpu,
            method,
            Criterion::Gather,
            dev::MODE_DENSITY,
            kernel.code(),
            None,
            None,
            None,
            Some(&mut rho),
            None,
            None,
        )?;
        Ok((gpu.download(&rho)?, ms))
    }

    /// Each particle's local-density guess (`sph_h_guess`) as its h (the cell boxes are not
    /// updated: gather counts do not read them), its iteration state, and the milliseconds.
    fn guess(&mut self, gpu: &Gpu, target: f32) -> Result<(CudaSlice<HState>, f64), SphGpuError> {
        let cfg = grid_cfg(gpu, self.n, k::CELL_BLOCK);
        let mut state = gpu.alloc_poisoned::<HState>(self.n)?;
        // SAFETY: bodies, h and state hold n entries; the tree is built and summarized.
        let ms = gpu
            .time(|| unsafe {
                let args = (self.octree.view(gpu), target, &mut self.h, &mut state);
                gpu.launch(k::sph_h_guess, cfg, args)
            })?
            .1;
        self.h_host = gpu.download(&self.h)?;
        validate(&self.host_bodies, &self.h_host, true)?;
        Ok((state, ms))
    }

    /// The local-density guess of every particle's h (`sph_h_guess`, twin `cpu::guess_h`), made
    /// the current h (boxes recomputed).
    pub fn guess_h(&mut self, gpu: &Gpu, target: f32) -> Result<Vec<f32>, SphGpuError> {
        self.guess(gpu, target)?;
        let h = self.h_host.clone();
        self.compute_boxes(gpu)?;
        Ok(h)
    }

    /// Gathers the walks of the groups with a particle still iterating into `self.walk` (allocated on first
    /// use) for the group search; their count is read by the caller (`walk.count`) with the
    /// pass's other counters. Milliseconds.
    fn gather_groups(&mut self, gpu: &Gpu, state: &CudaSlice<HState>) -> Result<f64, SphGpuError> {
        let a = match &mut self.walk {
            Some(a) => a,
            None => self.walk.insert(ActiveGroups {
                groups: gpu.alloc_poisoned(self.n)?,
                count: gpu.alloc_zeros(1)?,
                n: self.ngroups,
            }),
        };
        a.count = gpu.alloc_zeros(1)?;
        let cfg = grid_cfg(
            gpu,
            self.ngroups as usize * crate::device::WARP_SIZE as usize,
            k::CELL_BLOCK,
        );
        // SAFETY: groups (ngroups entries) and sort as bh_sort wrote them; bodies, h, state n;
        // the output holds n entries, its counter is zero.
        let ms = gpu
            .time(|| unsafe {
                let args = (
                    &self.octree.bodies,
                    &self.h,
                    &self.octree.tree.sort,
                    &self.octree.tree.groups,
                    self.ngroups,
                    state,
                    &mut a.groups,
                    &mut a.count,
                );
                gpu.launch(k::sph_active_groups, cfg, args)
            })?
            .1;
        Ok(ms)
    }

    /// The walks of the warp groups with a particle still iterating per `state`, each as a group
    /// (`sph_active_groups`, twin `cpu::active_groups`), sorted.
    pub fn active_groups(
        &mut self,
        gpu: &Gpu,
        state: &[HState],
    ) -> Result<Vec<[u32; 2]>, SphGpuError> {
        let state = gpu.upload(state)?;
        self.gather_groups(gpu, &state)?;
        let a = self.walk.take().expect("gathered above");
        let n = gpu.download(&a.count)?[0] as usize;
        let mut g = gpu.download(&a.groups)?;
        g.truncate(n);
        g.sort_unstable();
        Ok(g)
    }

    /// Pairs tested (distance evaluations) by one count pass of `method` at the current h.
    pub fn tested(
        &mut self,
        gpu: &Gpu,
        method: Method,
        crit: Criterion,
    ) -> Result<u64, SphGpuError> {
        let mut counts = gpu.alloc_poisoned::<u32>(self.n)?;
        let mut tested = gpu.alloc_zeros::<u64>(1)?;
        self.search(
            gpu,
            method,
            crit,
            dev::MODE_COUNT,
            0,
            Some(&mut counts),
            None,
            None,
            None,
            None,
            Some(&mut tested),
        )?;
        Ok(gpu.download(&tested)?[0])
    }

    /// The smoothing-length iteration on the device, from the current h or (`guess`) from each
    /// particle's local-density guess (`sph_h_guess`): each pass counts the gather neighbours of
    /// the particles still iterating at the rungs of their ladders (`MODE_LADDER`, searched out
    /// to the largest, `sph_h_walk`) and steps them (`sph_h_update`); the host reads two
    /// counters per pass. Leaves the final h on the device (boxes recomputed). Milliseconds of
    /// the device passes (the guess included).
    pub fn iterate_h(
        &mut self,
        gpu: &Gpu,
        method: Method,
        hp: &HParams,
        guess: bool,
    ) -> Result<(HIteration, f64), SphGpuError> {
        let r = self.iterate_passes(gpu, method, hp, guess);
        // Later searches walk every group (also after a failed pass).
        self.walk = None;
        r
    }

    fn iterate_passes(
        &mut self,
        gpu: &Gpu,
        method: Method,
        hp: &HParams,
        guess: bool,
    ) -> Result<(HIteration, f64), SphGpuError> {
        hp.check(self.n)?;
        let n32 = self.n as u32;
        let cfg = grid_cfg(gpu, self.n, k::CELL_BLOCK);
        let mut ms = 0.0;
        let mut state = if guess {
            let (state, g_ms) = self.guess(gpu, hp.target)?;
            ms += g_ms;
            state
        } else {
            validate(&self.host_bodies, &self.h_host, true)?;
            let start: Vec<HState> = self.h_host.iter().map(|&h| HState::start(h)).collect();
            gpu.upload(&start)?
        };
        let mut counts = gpu.alloc_poisoned::<u32>(self.n)?;
        let mut ladder = gpu.alloc_poisoned::<u32>(self.n * dev::LADDER)?;
        // Each pass searches every particle still iterating out to its ladder's largest rung.
        // SAFETY: state and h hold n entries.
        ms += gpu
            .time(|| unsafe { gpu.launch(k::sph_h_walk, cfg, (&state, n32, &mut self.h)) })?
            .1;
        if method == Method::Cells {
            // The cell grid is as wide as the largest search radius.
            self.h_host = gpu.download(&self.h)?;
        }
        let mut passes = Vec::new();
        let mut active = n32;
        // The group search walks only the groups with a particle still iterating: gathered
        // before the first pass and after each update (their count read with the pass's stats).
        let group = method == Method::Group;
        if group {
            ms += self.gather_groups(gpu, &state)?;
            let a = self.walk.as_mut().expect("gathered above");
            a.n = gpu.download(&a.count)?[0];
        }
        // Gather counts ignore the cells' largest h, so the boxes need no update inside the loop;
        // the linked cells' grid (sized by the largest h) is rebuilt by each pass.
        while (passes.len() as u32) < hp.max_iter {
            let mut tested = gpu.alloc_zeros::<u64>(1)?;
            let mut stats = gpu.alloc_zeros::<u64>(2)?;
            let mut pass_ms = self.search(
                gpu,
                method,
                Criterion::Gather,
                dev::MODE_LADDER,
                0,
                Some(&mut ladder),
                None,
                None,
                None,
                Some(&state),
                Some(&mut tested),
            )?;
            // SAFETY: ladder holds LADDER entries per particle; counts, state, h n; stats 2.
            pass_ms += gpu
                .time(|| unsafe {
                    let args = (
                        &ladder,
                        n32,
                        hp.target,
                        hp.tol,
                        &mut state,
                        &mut self.h,
                        &mut counts,
                        &mut stats,
                    );
                    gpu.launch(k::sph_h_update, cfg, args)
                })?
                .1;
            let walked = self.walk.as_ref().map_or(0, |a| a.n);
            if group {
                pass_ms += self.gather_groups(gpu, &state)?;
            }
            ms += pass_ms;
            if method == Method::Cells {
                self.h_host = gpu.download(&self.h)?;
            }
            let st = gpu.download(&stats)?;
            if let Some(a) = self.walk.as_mut() {
                a.n = gpu.download(&a.count)?[0];
            }
            passes.push(super::HPass {
                active,
                groups: walked,
                found: st[1],
                tested: gpu.download(&tested)?[0],
                ms: pass_ms,
            });
            active = st[0] as u32;
            if active == 0 {
                break;
            }
        }
        self.walk = None;
        let state = gpu.download(&state)?;
        let h: Vec<f32> = state.iter().map(|s| s.h).collect();
        let unconverged = (0..self.n as u32)
            .filter(|&i| state[i as usize].state != dev::H_CONVERGED)
            .collect();
        self.set_h(gpu, &h)?;
        Ok((
            HIteration {
                h,
                counts: gpu.download(&counts)?,
                iterations: passes.len() as u32,
                unconverged,
                passes,
            },
            ms,
        ))
    }
}

/// [`DeviceSph::iterate_h`] from `h0` (default: the local-density guess) for particles on the
/// host.
pub fn iterate_h(
    gpu: &Gpu,
    method: Method,
    bodies: &[Body],
    h0: Option<&[f32]>,
    hp: &HParams,
) -> Result<(HIteration, f64), SphGpuError> {
    let h = match h0 {
        Some(h) => h.to_vec(),
        // Replaced by the guess before any search; any valid h builds the tree.
        None => vec![initial_h(bodies, hp.target); bodies.len()],
    };
    let mut d = DeviceSph::new(gpu, bodies, &h)?;
    d.iterate_h(gpu, method, hp, h0.is_none())
}
