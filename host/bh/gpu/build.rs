//! The tree stages on the GPU: reset, bounding box, build (retried with more cells on overflow)
//! and summary, leaving the octree on the device.

use super::*;

/// The tree stages on the GPU (reset, bounding box, build retried with more cells on overflow,
/// summarize) for bodies already validated (finite, positive masses). Leaves the tree on the
/// device for a traversal: [`gravity_with`] sorts and traverses it; other methods (stochastic
/// Barnes–Hut) read it directly.
pub fn build_device_tree(
    gpu: &Gpu,
    bodies: &[Body],
    storage: Storage,
    cells: usize,
) -> Result<DeviceOctree, BhError> {
    build_device_tree_with(gpu, bodies, storage, cells, false)
}

/// [`build_device_tree`], with the cells' quadrupole moments when `quadrupole` (else `cell_quad`
/// is left unwritten and the summary makes one pass over each cell's children, not two).
pub fn build_device_tree_with(
    gpu: &Gpu,
    bodies: &[Body],
    storage: Storage,
    cells: usize,
    quadrupole: bool,
) -> Result<DeviceOctree, BhError> {
    build_device_tree_by(gpu, bodies, storage, Build::default(), cells, quadrupole)
}

/// [`build_device_tree_with`] by the build method `build`.
pub fn build_device_tree_by(
    gpu: &Gpu,
    bodies: &[Body],
    storage: Storage,
    build: Build,
    cells: usize,
    quadrupole: bool,
) -> Result<DeviceOctree, BhError> {
    let (free, _) = gpu.memory()?;
    let layout = storage.layout(cells);
    let need = device_bytes(bodies.len(), layout) + scratch_bytes(bodies.len(), storage, build);
    if need > free {
        return Err(BhError::TooLarge {
            n: bodies.len(),
            need: need >> 20,
            free: free >> 20,
        });
    }
    build_tree_on_device(gpu, gpu.upload(bodies)?, storage, build, cells, quadrupole)
}

fn scratch_bytes(n: usize, storage: Storage, build: Build) -> usize {
    match build.for_storage(storage) {
        Build::Sorted => sorted_build_bytes(n),
        Build::Locked => 0,
    }
}

/// [`build_device_tree_with`] for bodies already on the device (validated: finite, positive
/// masses), which the returned octree owns: the N-body loop's tree stages, with no copy.
pub fn build_tree_on_device(
    gpu: &Gpu,
    d_bodies: CudaSlice<Body>,
    storage: Storage,
    build: Build,
    cells: usize,
    quadrupole: bool,
) -> Result<DeviceOctree, BhError> {
    let mut scratch = BuildScratch::default();
    build_tree_reusing(
        gpu,
        d_bodies,
        storage,
        build,
        cells,
        quadrupole,
        &mut scratch,
    )
}

/// The sorted build's device scratch, kept by a caller that builds many trees of the same N
/// (the N-body loop: no allocation per step).
#[derive(Default)]
pub struct BuildScratch(Option<SortedScratch>);

/// [`build_tree_on_device`] with the scratch kept in `ws` (made or remade for this N).
pub fn build_tree_reusing(
    gpu: &Gpu,
    d_bodies: CudaSlice<Body>,
    storage: Storage,
    build: Build,
    cells: usize,
    quadrupole: bool,
    ws: &mut BuildScratch,
) -> Result<DeviceOctree, BhError> {
    let n = d_bodies.len();
    let build = build.for_storage(storage);
    let mut layout = storage.layout(cells);
    let mut times = StageTimes::default();
    let mut retries = 0;
    let bbox_cfg = gpu.resident_grid(k::bh_bounding_box, dev::TREE_BLOCK)?;
    let build_cfg = gpu.resident_grid(k::bh_build, dev::TREE_BLOCK)?;
    let one_block = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut scratch = match build {
        Build::Sorted => {
            if ws.0.as_ref().is_none_or(|s| s.list.len() != n) {
                ws.0 = None; // freed before the new one is made
                ws.0 = Some(SortedScratch::new(gpu, n)?);
            }
            ws.0.as_mut()
        }
        Build::Locked => None,
    };

    let mut oct = DeviceOctree {
        tree: TreeBuffers::new(gpu, n, layout)?,
        bodies: d_bodies,
        layout,
        moments: quadrupole,
        retries: 0,
        times: StageTimes::default(),
    };
    let built = loop {
        // SAFETY (all launches below): the octree's buffers, sized for n bodies in its layout.
        times.reset = gpu
            .time(|| unsafe { gpu.launch(k::bh_reset, one_block, (oct.view_mut(gpu),)) })?
            .1;
        times.bounding_box = gpu
            .time(|| unsafe { gpu.launch(k::bh_bounding_box, bbox_cfg, (oct.view_mut(gpu),)) })?
            .1;
        times.build = gpu
            .time(|| match scratch.as_deref_mut() {
                Some(sc) => sc.build(gpu, &mut oct),
                None => unsafe { gpu.launch(k::bh_build, build_cfg, (oct.view_mut(gpu),)) },
            })?
            .1;
        let header = gpu.download(&oct.tree.header)?[0];
        if header.error & dev::ERR_OVERFLOW == 0 {
            break header;
        }
        let grow = if layout.is_sparse() { 8 } else { 2 };
        if layout.cells as usize * grow > MAX_CELLS {
            return Err(BhError::Capacity(format!(
                "the tree needs more than {MAX_CELLS} cells in {:?} storage (depth {} reached)",
                storage, header.depth
            )));
        }
        layout.cells *= grow as u32;
        retries += 1;
        let (free, _) = gpu.memory()?;
        if device_bytes(n, layout) > free {
            return Err(BhError::TooLarge {
                n,
                need: device_bytes(n, layout) >> 20,
                free: free >> 20,
            });
        }
        // The old buffers are freed before the larger ones are made.
        oct.tree = TreeBuffers::new(gpu, 1, dev::Layout::dense(1))?;
        oct.tree = TreeBuffers::new(gpu, n, layout)?;
        oct.layout = layout;
    };
    let sum_cfg = gpu.resident_grid(k::bh_summarize, dev::TREE_BLOCK)?;
    times.summarize = gpu
        .time(|| unsafe {
            if let Some(sc) = scratch {
                // The sorted build's levels: one launch per depth, the deepest first.
                let in_use = (layout.cells as i32 - built.bottom).max(1) as u32;
                let cfg = grid_for(in_use, dev::TREE_BLOCK);
                for d in (0..=built.depth).rev() {
                    let args = (oct.view_mut(gpu), &sc.level, d);
                    gpu.launch(k::bh_summarize_level, cfg, args)?;
                }
                return Ok(());
            }
            gpu.launch(k::bh_summarize, sum_cfg, (oct.view_mut(gpu),))
        })?
        .1;
    oct.retries = retries;
    oct.times = times;
    Ok(oct)
}
