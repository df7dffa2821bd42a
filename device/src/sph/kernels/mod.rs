//! SPH kernels. Searches take `mode` ([`MODE_COUNT`]: `counts[i]`; [`MODE_FILL`]: row `i` of a
//! CSR list, `list[offsets[i]..offsets[i+1]]`, never written past its end; [`MODE_DENSITY`]:
//! `rho[i]` with smoothing kernel `kernel`; [`MODE_LADDER`]: the counts at the rungs of each
//! target's [`ladder`], `counts[LADDER i..LADDER (i + 1)]`, `state` given); pointers a mode does
//! not use may be null. A search
//! given `state` (non-null) serves only the particles still iterating ([`HState::iterating`]),
//! writing nothing for the others; given `tested` (non-null) it adds the pairs its active
//! targets tested (distance evaluations) to `*tested`.
//! `sph_cell_boxes` waits on other threads' results, so its whole grid must be resident.
//!
//! One module per stage: the outputs and per-lane sinks every search shares (`outputs`), the
//! cells' boxes (`boxes`), the three searches (the seed's vote walk `vote`, the warp-group walk
//! `group`, the linked cells `cells`), the smoothing-length iteration (`iteration`) and the
//! force pass (`hydro`), all re-exported here. This file holds the block sizes and the mode
//! dispatch (`by_mode!`), macros that must precede the modules that use them.

use super::*;
use crate::bh::{Layout, TreeView};
use crate::gpu::atomic::*;
use crate::gpu::global::load;
use crate::gpu::thread::*;
use crate::gpu::warp::*;

/// Threads per block of the vote search.
pub const VOTE_BLOCK: u32 = 256;
/// Threads per block of the warp-group search.
pub const GROUP_BLOCK: u32 = 128;
/// Threads per block of the per-particle and per-cell kernels.
pub const CELL_BLOCK: u32 = 256;
/// Threads of the one block of `sph_scan`.
pub const SCAN_BLOCK: u32 = 1024;

/// Runs `$f::<S>($args)` with the sink of `$mode`.
macro_rules! by_mode {
    ($mode:expr, $f:ident($($a:expr),* $(,)?)) => {
        match $mode {
            MODE_COUNT => $f::<Count>($($a),*),
            MODE_FILL => $f::<Fill>($($a),*),
            MODE_LADDER => $f::<Ladder>($($a),*),
            _ => $f::<Density>($($a),*),
        }
    };
}

/// [`by_mode!`] without [`MODE_LADDER`] (density in its place), for a kernel whose ladder runs
/// as an entry of its own: the ladder's sixteen live values raised every mode's registers. The
/// density's smoothing kernel `$kernel` is a constant of its sink ([`DensityOf`]).
macro_rules! by_mode_but_ladder {
    ($mode:expr, $kernel:expr, $f:ident($($a:expr),* $(,)?)) => {
        match $mode {
            MODE_COUNT => $f::<Count>($($a),*),
            MODE_FILL => $f::<Fill>($($a),*),
            _ if $kernel == WENDLAND_C2 => $f::<DensityOf<WENDLAND_C2>>($($a),*),
            _ => $f::<DensityOf<CUBIC_SPLINE>>($($a),*),
        }
    };
}

mod boxes;
mod cells;
mod group;
mod hydro;
mod iteration;
mod outputs;
mod vote;
pub use boxes::*;
pub use cells::*;
pub use group::*;
pub use hydro::*;
pub use iteration::*;
pub use outputs::*;
pub use vote::*;
