//! The sorted build's host side (`dev::morton`): its scratch, kept across overflow retries and
//! N-body steps, the radix sort's passes, and the launches from keys to linked cells.

use super::DeviceOctree;
use crate::device::bh as dev;
use crate::device::bh::morton as mk;
use crate::device::sort;
use crate::device::sph::kernels::{SCAN_BLOCK, sph_scan};
use crate::runtime::{CudaSlice, Gpu, GpuError, LaunchConfig, grid_for};

/// Bytes of the sorted build's scratch for `n` bodies: keys and values twice (the radix sort's
/// two buffers), pair bases, the insertion list, the histograms and the pair tiles' sums.
pub fn sorted_build_bytes(n: usize) -> usize {
    let tiles = (n as u32).div_ceil(sort::RADIX_TILE) as usize;
    let pair_tiles = n.div_ceil(mk::MORTON_BLOCK as usize);
    // keys ×2, values ×2, base, list; the level per cell (the initial n cells).
    n * (16 + 8 + 4 + 4 + 4) + 2 * tiles * sort::RADIX_DIGITS as usize * 4 + pair_tiles * 8 + 64
}

/// The one-block scan's (`sph_scan`) launch.
pub(super) fn scan_config() -> LaunchConfig {
    LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (SCAN_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Sorts `keys` stably on the GPU by the sorted build's radix sort: the keys in order and, for
/// each, its index in `keys` (for tests and benchmarks of the sort alone).
pub fn radix_sort(gpu: &Gpu, keys: &[u64]) -> Result<(Vec<u64>, Vec<u32>), GpuError> {
    let n = keys.len();
    let mut sc = SortedScratch::new(gpu, n)?;
    sc.keys[0] = gpu.upload(keys)?;
    sc.vals[0] = gpu.upload(&(0..n as u32).collect::<Vec<_>>())?;
    sc.sort(gpu, n as u32)?;
    Ok((gpu.download(&sc.keys[0])?, gpu.download(&sc.vals[0])?))
}

/// Scratch of the sorted build (`dev::morton`), kept across the overflow retries.
pub struct SortedScratch {
    keys: [CudaSlice<u64>; 2],
    vals: [CudaSlice<u32>; 2],
    hist: CudaSlice<u32>,
    digit_total: CudaSlice<u32>,
    base: CudaSlice<u32>,
    tile_sum: CudaSlice<u32>,
    tile_off: CudaSlice<u32>,
    total: CudaSlice<u64>,
    pub(super) list: CudaSlice<u32>,
    list_len: CudaSlice<u32>,
    /// Per cell: its depth (the root 0), for the summary's level-by-level launches.
    pub(super) level: CudaSlice<u32>,
}

impl SortedScratch {
    /// Sorts `keys[0][..n]` with `vals[0][..n]`: eight stable passes of eight bits, through the
    /// second buffers and back.
    fn sort(&mut self, gpu: &Gpu, n: u32) -> Result<(), GpuError> {
        let tiles = sort::radix_tiles(n);
        let radix = LaunchConfig {
            grid_dim: (tiles, 1, 1),
            block_dim: (sort::RADIX_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let rows = LaunchConfig {
            grid_dim: (sort::RADIX_DIGITS, 1, 1),
            block_dim: (sort::RADIX_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let [k0, k1] = &mut self.keys;
        let [v0, v1] = &mut self.vals;
        for pass in 0..8 {
            let shift = pass * sort::RADIX_BITS;
            let (ki, vi, ko, vo) = if pass % 2 == 0 {
                (&*k0, &*v0, &mut *k1, &mut *v1)
            } else {
                (&*k1, &*v1, &mut *k0, &mut *v0)
            };
            // SAFETY: keys and values hold n entries, the histogram RADIX_DIGITS × tiles and its
            // offsets one more.
            unsafe {
                gpu.launch(sort::radix_histogram, radix, (ki, n, shift, &mut self.hist))?;
                let args = (&mut self.hist, tiles, &mut self.digit_total);
                gpu.launch(sort::radix_scan_rows, rows, args)?;
                let args = (ki, vi, n, shift, &self.hist, &self.digit_total, ko, vo);
                gpu.launch(sort::radix_scatter, radix, args)?;
            }
        }
        Ok(())
    }

    pub(super) fn new(gpu: &Gpu, n: usize) -> Result<Self, GpuError> {
        let hist = sort::RADIX_DIGITS as usize * sort::radix_tiles(n as u32) as usize;
        let tiles = n.div_ceil(mk::MORTON_BLOCK as usize);
        Ok(SortedScratch {
            keys: [gpu.alloc_poisoned(n)?, gpu.alloc_poisoned(n)?],
            vals: [gpu.alloc_poisoned(n)?, gpu.alloc_poisoned(n)?],
            hist: gpu.alloc_poisoned(hist)?,
            digit_total: gpu.alloc_poisoned(sort::RADIX_DIGITS as usize)?,
            base: gpu.alloc_poisoned(n)?,
            tile_sum: gpu.alloc_poisoned(tiles)?,
            tile_off: gpu.alloc_poisoned(tiles + 1)?,
            total: gpu.alloc_poisoned(1)?,
            list: gpu.alloc_poisoned(n)?,
            list_len: gpu.alloc_zeros(1)?,
            level: gpu.alloc_poisoned(crate::bh::initial_cells(n))?,
        })
    }

    /// Keys, radix sort, numbering, linking and the insertion list, into `oct` (reset, with its
    /// bounding box).
    pub(super) fn build(&mut self, gpu: &Gpu, oct: &mut DeviceOctree) -> Result<(), GpuError> {
        let n = oct.n() as u32;
        let layout = oct.layout;
        let spread = grid_for(n, dev::TREE_BLOCK);
        let pairs = grid_for(n, mk::MORTON_BLOCK);
        // Runs of equal keys are rare: a few blocks cover them.
        let list_cfg = grid_for(4 * dev::TREE_BLOCK, dev::TREE_BLOCK);
        let cells = layout.cells as usize;
        if self.level.len() < cells {
            // An overflow retry with more cells.
            self.level = gpu.alloc_poisoned(cells)?;
        }
        // SAFETY (each launch): buffers sized per the kernels' docs by `new` for n bodies; the
        // tree's per `layout`.
        unsafe {
            gpu.launch(
                mk::bh_keys,
                spread,
                (
                    &oct.bodies,
                    n,
                    &oct.tree.header,
                    &mut self.keys[0],
                    &mut self.vals[0],
                ),
            )?;
        }
        self.sort(gpu, n)?;
        let scan = scan_config();
        let [keys, _] = &self.keys;
        let [vals, _] = &self.vals;
        // SAFETY: as above.
        unsafe {
            let m = pairs.grid_dim.0;
            gpu.launch(
                mk::bh_morton_tiles,
                pairs,
                (keys, n, &mut oct.tree.header, &mut self.tile_sum),
            )?;
            gpu.launch(
                sph_scan,
                scan,
                (&self.tile_sum, m, &mut self.tile_off, &mut self.total),
            )?;
            let args = (
                keys,
                n,
                &self.tile_off,
                &self.total,
                &mut oct.tree.header,
                &mut self.base,
                layout,
            );
            gpu.launch(mk::bh_morton_base, pairs, args)?;
            let args = (
                oct.view_mut(gpu),
                keys,
                &self.base,
                &self.total,
                &mut self.level,
            );
            gpu.launch(mk::bh_morton_cells, spread, args)?;
            gpu.zero(&mut self.list_len)?;
            let args = (
                oct.view_mut(gpu),
                keys,
                vals,
                &self.base,
                &self.total,
                &mut self.list,
                &mut self.list_len,
            );
            gpu.launch(mk::bh_morton_link, spread, args)?;
            let args = (
                oct.view_mut(gpu),
                keys,
                vals,
                &mut self.level,
                &self.list,
                &self.list_len,
            );
            gpu.launch(mk::bh_build_list, list_cfg, args)
        }
    }
}
