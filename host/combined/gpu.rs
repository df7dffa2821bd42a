//! The GPU launchers: one boxed, sorted octree on the device (the `bh` tree stages, `bh_sort` in
//! warp groups of 32, `sph_cell_boxes`), and on it the combined kernel and the two walks it
//! replaces, the existing `bh_gravity_group` (or `_quad`) and `sph_group` (gather density or
//! count), each timed with CUDA events.

use super::{CombinedError, Options, Results, validate};
use crate::bh::gpu::{BhError, DeviceOctree, Storage, build_device_tree_with, sort_tree};
use crate::bh::initial_cells;
use crate::device::bh::kernels as bk;
use crate::device::bh::{self as bdev, Accel, Body, TreeHeader};
use crate::device::combined::kernels as k;
use crate::device::combined::{Fields, fields};
use crate::device::sph::kernels as sk;
use crate::device::sph::{self as sdev, CellBox};
use crate::runtime::{CudaSlice, Gpu, GpuError};
use crate::sph::gpu::outputs;

/// Failures of a GPU request.
#[derive(Debug, thiserror::Error)]
pub enum CombinedGpuError {
    #[error(transparent)]
    Input(#[from] CombinedError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Tree(#[from] BhError),
}

/// What the combined kernel's walks did (`stats`: sums over the groups).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkCounts {
    /// Gravity interactions: listed sources × group size.
    pub gravity: u64,
    /// Near pairs tested: listed candidates × group size.
    pub near: u64,
    /// Cells opened.
    pub opened: u64,
}

/// Bodies, smoothing lengths and their boxed, sorted octree (with moments when asked) on the
/// device.
pub struct DeviceCombined {
    pub n: usize,
    /// Sorted in warp groups of at most 32; with moments when the options asked for them.
    pub octree: DeviceOctree,
    pub h: CudaSlice<f32>,
    pub boxes: CudaSlice<CellBox>,
    /// Milliseconds: tree (bounding box, build, summarize, sort) and the cell boxes.
    pub tree_ms: f64,
    pub boxes_ms: f64,
}

impl DeviceCombined {
    /// Uploads and builds (input valid per [`validate`]; moments when `o.quadrupole`).
    pub fn new(
        gpu: &Gpu,
        bodies: &[Body],
        h: &[f32],
        o: &Options,
    ) -> Result<Self, CombinedGpuError> {
        validate(bodies, h, o)?;
        let n = bodies.len();
        let mut oct =
            build_device_tree_with(gpu, bodies, Storage::Dense, initial_cells(n), o.quadrupole)?;
        let layout = oct.layout;
        let sort_ms = sort_tree(gpu, &mut oct, bdev::GROUP_SIZE)?;
        let d_h = gpu.upload(h)?;
        let mut boxes = gpu.alloc_poisoned::<CellBox>(layout.cells as usize)?;
        let mut ready = gpu.alloc_zeros::<u32>(layout.cells as usize)?;
        let cfg = gpu.resident_grid(sk::sph_cell_boxes, sk::CELL_BLOCK)?;
        // SAFETY: boxes and ready hold layout.cells entries; the tree is complete.
        let boxes_ms = gpu
            .time(|| unsafe {
                let args = (oct.view(gpu), &d_h, &mut boxes, &mut ready);
                gpu.launch(sk::sph_cell_boxes, cfg, args)
            })?
            .1;
        Ok(DeviceCombined {
            n,
            tree_ms: oct.times.tree() + sort_ms,
            octree: oct,
            h: d_h,
            boxes,
            boxes_ms,
        })
    }

    /// The tree's header (after the sort: box, group count).
    pub fn header(&self, gpu: &Gpu) -> Result<TreeHeader, GpuError> {
        Ok(gpu.download(&self.octree.tree.header)?[0])
    }

    /// The combined kernel for `parts` (`warpkit_device::combined::PART_*`; the vectors of a part
    /// not asked for stay empty), its walk counts and milliseconds. `o.quadrupole` needs a tree
    /// built with moments. Outputs are poisoned before the launch.
    pub fn combined(
        &mut self,
        gpu: &Gpu,
        o: &Options,
        parts: u32,
    ) -> Result<(Results, WalkCounts, f64), CombinedGpuError> {
        self.check_quadrupole(o)?;
        let fields = fields(parts);
        let n = self.n;
        let mut acc = (fields != Fields::Near)
            .then(|| gpu.alloc_poisoned::<Accel>(n))
            .transpose()?;
        let mut counts = (fields != Fields::Far)
            .then(|| gpu.alloc_poisoned::<u32>(n))
            .transpose()?;
        let mut rho = (fields != Fields::Far)
            .then(|| gpu.alloc_poisoned::<f32>(n))
            .transpose()?;
        let mut stats = gpu.alloc_zeros::<u64>(3)?;
        let mut next_group = gpu.alloc_zeros::<u32>(1)?;
        let params = o.walk_params(parts);
        // SAFETY (both launches): a boxed, sorted tree of n bodies with groups of at most 32;
        // outputs of n entries (or null for a part not computed), stats 3, counter zeroed.
        let ms = if o.quadrupole {
            let cfg = gpu.resident_grid(k::combined_group_quad, bdev::GROUP_BLOCK)?;
            let args = (
                self.octree.view(gpu),
                &self.h,
                &self.boxes,
                &mut next_group,
                params,
                acc.as_mut(),
                counts.as_mut(),
                rho.as_mut(),
                &mut stats,
            );
            gpu.time(|| unsafe { gpu.launch(k::combined_group_quad, cfg, args) })?
                .1
        } else {
            let cfg = gpu.resident_grid(k::combined_group, bdev::GROUP_BLOCK)?;
            let args = (
                self.octree.view(gpu),
                &self.h,
                &self.boxes,
                &mut next_group,
                params,
                acc.as_mut(),
                counts.as_mut(),
                rho.as_mut(),
                &mut stats,
            );
            gpu.time(|| unsafe { gpu.launch(k::combined_group, cfg, args) })?
                .1
        };
        let download = |b: Option<CudaSlice<f32>>| -> Result<Vec<f32>, GpuError> {
            b.map(|b| gpu.download(&b)).unwrap_or(Ok(Vec::new()))
        };
        let r = Results {
            acc: acc.map(|b| gpu.download(&b)).unwrap_or(Ok(Vec::new()))?,
            counts: counts.map(|b| gpu.download(&b)).unwrap_or(Ok(Vec::new()))?,
            rho: download(rho)?,
        };
        let s = gpu.download(&stats)?;
        let walks = WalkCounts {
            gravity: s[0],
            near: s[1],
            opened: s[2],
        };
        Ok((r, walks, ms))
    }

    /// The existing gravity walk on this tree: `bh_gravity_group` (or `bh_gravity_group_quad`),
    /// its accelerations and milliseconds.
    pub fn gravity_group(
        &mut self,
        gpu: &Gpu,
        o: &Options,
    ) -> Result<(Vec<Accel>, f64), CombinedGpuError> {
        self.check_quadrupole(o)?;
        // The kernel takes its groups from the header's counter: reset it (untimed).
        let mut header = self.header(gpu)?;
        header.next_group = 0;
        gpu.stream()
            .memcpy_htod(&[header], &mut self.octree.tree.header)
            .map_err(|source| GpuError::Driver {
                op: "resetting the group counter",
                source,
            })?;
        let mut acc = gpu.alloc_poisoned::<Accel>(self.n)?;
        let p = &o.gravity;
        // The two kernels share one signature.
        macro_rules! launch {
            ($k:expr) => {{
                let cfg = gpu.resident_grid($k, bdev::GROUP_BLOCK)?;
                let args = (
                    self.octree.view(gpu),
                    p.theta * p.theta,
                    p.eps * p.eps,
                    p.g,
                    &mut acc,
                );
                // SAFETY: a summarized, sorted tree (moments when asked) with groups of at most
                // 32; n accelerations out.
                gpu.time(|| unsafe { gpu.launch($k, cfg, args) })?.1
            }};
        }
        let ms = if o.quadrupole {
            launch!(bk::bh_gravity_group_quad)
        } else {
            launch!(bk::bh_gravity_group)
        };
        Ok((gpu.download(&acc)?, ms))
    }

    /// The existing neighbour walk on this tree: `sph_group` under the gather criterion, in
    /// density mode (`o.kernel`) or, with `count`, count mode, descending every cell (no
    /// ranges: `sph::SPH_BUCKET`) as the combined walk does; its outputs (the other vector
    /// empty) and milliseconds.
    pub fn sph_group(
        &mut self,
        gpu: &Gpu,
        o: &Options,
        count: bool,
    ) -> Result<(Vec<u32>, Vec<f32>, f64), CombinedGpuError> {
        let ngroups = self.header(gpu)?.groups;
        let mut next_group = gpu.alloc_zeros::<u32>(1)?;
        let (mut counts, mut rho, mode) = search_outputs(gpu, self.n, count)?;
        let cfg = gpu.resident_grid(sk::sph_group, sk::GROUP_BLOCK)?;
        let out = outputs(
            gpu,
            o.kernel.code(),
            counts.as_mut(),
            None,
            None,
            rho.as_mut(),
            None,
            None,
        );
        let args = (
            self.octree.view(gpu),
            &self.h,
            // No ranges: the separate walk visits cells as the combined walk does (its
            // bit-for-bit reference).
            crate::runtime::Null,
            &self.boxes,
            ngroups,
            &mut next_group,
            sdev::GATHER,
            mode,
            out,
        );
        // SAFETY: a boxed, sorted tree with groups of at most 32; the mode's output holds n.
        let ms = gpu
            .time(|| unsafe { gpu.launch(sk::sph_group, cfg, args) })?
            .1;
        let (counts, rho) = download_search(gpu, counts, rho)?;
        Ok((counts, rho, ms))
    }

    /// The combined walk in the seed's form (`combined_vote`: one walk per warp of the tree
    /// order, monopoles), its results and milliseconds. Outputs are poisoned before the launch.
    pub fn combined_vote(
        &mut self,
        gpu: &Gpu,
        o: &Options,
    ) -> Result<(Results, f64), CombinedGpuError> {
        self.check_monopoles(o)?;
        let n = self.n;
        let mut acc = gpu.alloc_poisoned::<Accel>(n)?;
        let mut counts = gpu.alloc_poisoned::<u32>(n)?;
        let mut rho = gpu.alloc_poisoned::<f32>(n)?;
        let cfg = gpu.resident_grid(k::combined_vote, bdev::GRAVITY_BLOCK)?;
        let args = (
            self.octree.view(gpu),
            &self.h,
            &self.boxes,
            o.walk_params(crate::device::combined::PART_BOTH),
            &mut acc,
            &mut counts,
            &mut rho,
        );
        // SAFETY: a boxed, summarized, sorted tree of n bodies; outputs of n entries.
        let ms = gpu
            .time(|| unsafe { gpu.launch(k::combined_vote, cfg, args) })?
            .1;
        let r = Results {
            acc: gpu.download(&acc)?,
            counts: gpu.download(&counts)?,
            rho: gpu.download(&rho)?,
        };
        Ok((r, ms))
    }

    /// The seed's gravity walk on this tree (`bh_gravity` over the tree order), its
    /// accelerations and milliseconds.
    pub fn gravity_vote(
        &mut self,
        gpu: &Gpu,
        o: &Options,
    ) -> Result<(Vec<Accel>, f64), CombinedGpuError> {
        self.check_monopoles(o)?;
        let mut acc = gpu.alloc_poisoned::<Accel>(self.n)?;
        let p = &o.gravity;
        let cfg = gpu.resident_grid(bk::bh_gravity, bdev::GRAVITY_BLOCK)?;
        let args = (
            self.octree.view(gpu),
            p.theta * p.theta,
            p.eps * p.eps,
            p.g,
            &mut acc,
        );
        // SAFETY: a summarized tree of n bodies, its order; n accelerations out.
        let ms = gpu
            .time(|| unsafe { gpu.launch(bk::bh_gravity, cfg, args) })?
            .1;
        Ok((gpu.download(&acc)?, ms))
    }

    /// The seed's neighbour walk on this tree (`sph_vote` over the tree order, gather), in
    /// density mode (`o.kernel`) or, with `count`, count mode; its outputs (the other vector
    /// empty) and milliseconds.
    pub fn sph_vote(
        &mut self,
        gpu: &Gpu,
        o: &Options,
        count: bool,
    ) -> Result<(Vec<u32>, Vec<f32>, f64), CombinedGpuError> {
        let (mut counts, mut rho, mode) = search_outputs(gpu, self.n, count)?;
        let cfg = gpu.resident_grid(sk::sph_vote, sk::VOTE_BLOCK)?;
        let out = outputs(
            gpu,
            o.kernel.code(),
            counts.as_mut(),
            None,
            None,
            rho.as_mut(),
            None,
            None,
        );
        let args = (
            self.octree.view(gpu),
            &self.h,
            &self.boxes,
            sdev::GATHER,
            mode,
            out,
        );
        // SAFETY: a boxed tree of n bodies, its order; the mode's output holds n.
        let ms = gpu
            .time(|| unsafe { gpu.launch(sk::sph_vote, cfg, args) })?
            .1;
        let (counts, rho) = download_search(gpu, counts, rho)?;
        Ok((counts, rho, ms))
    }

    /// The seed's form has monopoles only.
    fn check_monopoles(&self, o: &Options) -> Result<(), CombinedGpuError> {
        if o.quadrupole {
            return Err(CombinedError::VoteQuadrupole.into());
        }
        Ok(())
    }

    fn check_quadrupole(&self, o: &Options) -> Result<(), CombinedGpuError> {
        if o.quadrupole && !self.octree.moments {
            return Err(BhError::Option(
                "quadrupole moments asked of a tree built without them".into(),
            )
            .into());
        }
        Ok(())
    }
}

/// A gather search's outputs in count (`count`) or density mode, poisoned (the other `None`), and
/// the mode's code.
#[allow(clippy::type_complexity)]
fn search_outputs(
    gpu: &Gpu,
    n: usize,
    count: bool,
) -> Result<(Option<CudaSlice<u32>>, Option<CudaSlice<f32>>, u32), GpuError> {
    let counts = count.then(|| gpu.alloc_poisoned::<u32>(n)).transpose()?;
    let rho = (!count).then(|| gpu.alloc_poisoned::<f32>(n)).transpose()?;
    let mode = if count {
        sdev::MODE_COUNT
    } else {
        sdev::MODE_DENSITY
    };
    Ok((counts, rho, mode))
}

/// [`search_outputs`]' contents (an output not asked for: empty).
fn download_search(
    gpu: &Gpu,
    counts: Option<CudaSlice<u32>>,
    rho: Option<CudaSlice<f32>>,
) -> Result<(Vec<u32>, Vec<f32>), GpuError> {
    let counts = counts.map(|b| gpu.download(&b)).unwrap_or(Ok(Vec::new()))?;
    let rho = rho.map(|b| gpu.download(&b)).unwrap_or(Ok(Vec::new()))?;
    Ok((counts, rho))
}
