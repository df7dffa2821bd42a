//! Warp groups of the warp-group traversal: how a lane serves a group ([`GroupLanes`]) and how
//! the sort packs children into groups ([`GroupPacker`]).

/// Bodies per warp group of the warp-group traversal: one per lane ([`GROUP_SIZE`]), or two per
/// lane ([`GROUP_SIZE_2`]), which halves the traversals per body and loads each interaction-list
/// entry once for two bodies.
pub const GROUP_SIZE: u32 = crate::WARP_SIZE;
/// Bodies per warp group with two bodies per lane.
pub const GROUP_SIZE_2: u32 = 2 * crate::WARP_SIZE;

/// How a group kernel's lane serves a warp group of `size` bodies with `k` bodies per lane: a
/// small group spreads its bodies over `2^-shift` of the lanes (`k` each, members `seat + (32 >>
/// shift) j`) and repeats them `2^shift` times; copy `part` sums one consecutive share of the
/// interaction list, so the list costs the warp `2^-shift` of its length. A group's traversal and
/// list hardly depend on its size, and small groups are common: on the lattice a quarter of the
/// groups hold at most 8 bodies (cells of 36 bodies split 32 + 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupLanes {
    /// 0, 1 or 2: `2^shift` copies of the group.
    pub shift: u32,
    /// The lane's place within its copy, `0..32 >> shift`.
    pub seat: u32,
    /// Which copy (share of the list) the lane sums, `0..2^shift`.
    pub part: u32,
}

impl GroupLanes {
    #[inline(always)]
    pub fn of(size: u32, k: u32, lane: u32) -> GroupLanes {
        let cap = crate::WARP_SIZE * k;
        let shift = if size > cap / 2 {
            0
        } else if size > cap / 4 {
            1
        } else {
            2
        };
        let seats = crate::WARP_SIZE >> shift;
        GroupLanes {
            shift,
            seat: lane & (seats - 1),
            part: lane >> (5 - shift),
        }
    }
}

/// Packs the children of a cell with more than `size` bodies into warp groups: runs of
/// consecutive small children (bodies, buckets, cells of at most `size` bodies), which are
/// contiguous in the sort order, of at most `size` bodies. A group therefore never spans more than
/// its parent cell, so its bounding box stays compact — 32 consecutive bodies of the sort order
/// can straddle the whole domain. Big child cells pack their own children; buckets longer than a
/// group are cut into whole groups.
#[derive(Clone, Copy, Debug)]
pub struct GroupPacker {
    size: u32,
    start: u32,
    count: u32,
}

impl GroupPacker {
    #[inline(always)]
    pub fn new(size: u32) -> Self {
        GroupPacker {
            size,
            start: 0,
            count: 0,
        }
    }

    /// The next child in octant order: `c` bodies from sort position `s`; `cell` when it is a cell.
    /// Calls `emit(start, count)` for each completed group.
    #[inline(always)]
    pub fn add(&mut self, s: u32, c: u32, cell: bool, emit: &mut impl FnMut(u32, u32)) {
        if c == 0 {
            return;
        }
        if c > self.size {
            self.finish(emit);
            if !cell {
                let mut off = 0;
                while off < c {
                    emit(s + off, (c - off).min(self.size));
                    off += self.size;
                }
            }
            return;
        }
        if self.count + c > self.size {
            self.finish(emit);
        }
        if self.count == 0 {
            self.start = s;
        }
        self.count += c;
    }

    /// Emits the group in progress, if any.
    #[inline(always)]
    pub fn finish(&mut self, emit: &mut impl FnMut(u32, u32)) {
        if self.count > 0 {
            emit(self.start, self.count);
            self.count = 0;
        }
    }
}
