//! The shape specialisation: copies of the hot loop compiled for one configuration's geometry
//! (the structures' recency-row lanes and the cache levels' lanes as constants), so that a
//! probe is a mask, a few vector compares and a branch, with no dispatch on the structure's
//! width.
//!
//! A configuration takes a shape's loop only if every structure matches (the engine's
//! `has_shape`, decided once when the simulator is built). Then the first-level TLB probes and
//! fills and the PSC probes and fills use the row code of the shape's width unchecked (their
//! classes were checked once, at construction, and never change: way-disabling changes the
//! active ways, not the lanes); the deeper TLBs and the caches check their class on each use (a
//! cheap compare, predictable as it never changes) and fall back to the general code out of
//! line, so the deeper levels' other arrays (Skylake's 4-way 1GB STLB beside the 12-way STLB)
//! still work. [`AnyShape`] (all 0) is the general loop every other configuration runs. Each
//! shape is another copy of the loop to compile; the results are the same either way (a test
//! compares every counter).

use crate::mmu::{Lanes, Shape};

/// Any configuration: every structure dispatches on its own geometry.
pub struct AnyShape;

impl Shape for AnyShape {
    const LANES: Lanes = Lanes::ANY;
}

/// The Skylake preset's geometry (and that of any configuration with the same classes): 4-way
/// L1 DTLBs of a power-of-two set count, 8-way L1 ITLBs, a 12-way STLB, PSCs of at most 4
/// ways, walks from an 8-way L1D through a 4-way L2 to a 16-way LLC (LRU or FIFO throughout).
pub struct SkylakeShape;

impl Shape for SkylakeShape {
    const LANES: Lanes = Lanes { l1d: 4, l1i: 8, l2: 12, psc: 4, caches: [8, 4, 16] };
}
