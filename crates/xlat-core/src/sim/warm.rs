//! The mark a warm-up leaves (`Simulator::set_window`, docs/windows.md): what the run had counted
//! when it ended, which the result subtracts.

use std::collections::{BTreeMap, BTreeSet};

/// What the run had counted when its warm-up ended (`Core::mark_warmup`): the result reports
/// counts since then, so that the structures and the OS start the window warm and the counters
/// at zero. Every derived figure is computed from the window's counts.
pub(crate) struct Warm {
    /// Every counter at the mark, and which of them are gauges (reported as they are at the end).
    pub(crate) counters: BTreeMap<String, u64>,
    pub(crate) gauges: BTreeSet<String>,
    /// Per TLB level: lookups and hits at the mark ([`crate::mmu::Mmu::level_summary`]).
    pub(crate) levels: Vec<(u64, u64, u64)>,
    /// The overlap model's tallies at the mark.
    pub(crate) timing: Option<crate::time::Models>,
    /// Walks per 2MB region at the mark (`sim.miss_profile`).
    pub(crate) miss_profile: Option<Vec<(u64, u64)>>,
    /// Samples of the time series taken during the warm-up (dropped from the result), and the
    /// series' position (accesses or instructions) at the mark.
    pub(crate) samples: usize,
    pub(crate) position: u64,
}
