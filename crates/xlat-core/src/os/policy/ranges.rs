//! Range creation: which runs of contiguous memory get a range translation (RMM).

/// Creation of range translations. The OS finds the maximal runs of a VMA's pages that are
/// backed by physically contiguous frames (after eager population, on faults) and keeps those
/// the policy accepts in the address space's range table, trimming them when memory is
/// unmapped, migrated or reclaimed.
pub trait RangeCreation: Send {
    fn name(&self) -> &'static str;
    /// The smallest run (bytes) that becomes a range translation; None: no range table.
    fn threshold(&self) -> Option<u64>;
}

/// No range translations (`os.ranges = "none"`, the default).
pub struct NoRanges;

impl RangeCreation for NoRanges {
    fn name(&self) -> &'static str {
        "none"
    }
    fn threshold(&self) -> Option<u64> {
        None
    }
}

/// A range for each maximal contiguous run of at least `threshold` bytes (`os.ranges =
/// "contiguous"`, `os.range_threshold`; RMM's contiguity threshold, seed 000 section 4.4: 32 KB,
/// 8 pages, so that small ranges do not thrash the range TLB).
pub struct ContiguousRanges {
    pub threshold: u64,
}

impl RangeCreation for ContiguousRanges {
    fn name(&self) -> &'static str {
        "contiguous"
    }
    fn threshold(&self) -> Option<u64> {
        Some(self.threshold)
    }
}
