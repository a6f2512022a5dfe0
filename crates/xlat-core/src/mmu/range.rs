//! A range TLB: a small fully associative cache of range translations, each a virtual range
//! [BASE, LIMIT) mapped to physically contiguous memory starting at a frame (RMM, seed 000
//! chapter 4: range TLBs beside the page TLBs, probed after a first-level miss; Lite, chapter 5:
//! an L1 range TLB, looked up with the first-level page TLBs). Entries are tagged with the
//! address space like page TLB entries. A hit yields the 4KB translation of the address inside
//! the range; a hit past the first level fills the page TLBs above (as RMM's range TLB produces
//! a page-table entry for the L1 TLB: the entry of the page the OS maps `va` with, or its 4KB
//! entry with `fill = "4k"`), an L1 range TLB's hit fills nothing.
//!
//! Replacement is LRU over at most a few dozen entries: the entries are kept in recency order,
//! most recent first, and a probe scans them.
//!
//! The optional MRU pointer (`mru = true`, seed 000 section 4.4.1) holds the most recently used
//! entry and is checked first; a hit there skips the associative search of the others (an
//! energy saving). It changes no hit or miss: it only counts `mru_hits`, the hits the pointer
//! served (the front entry of the recency order: the last one hit or filled).

use crate::config::RangeTlbConfig;
use crate::stats::StructStats;

/// A range translation: [base, limit) maps to frames from `pfn` on (`base` 4KB-aligned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeEntry {
    pub base: u64,
    pub limit: u64,
    pub pfn: u64,
    /// Address-space tag (see [`super::keys::asid_tag`]).
    pub tag: u64,
}

#[derive(Debug, Clone)]
pub struct RangeTlb {
    pub name: String,
    pub latency: u64,
    capacity: usize,
    /// Whether it has an MRU pointer (then `mru_hits` counts).
    pub mru: bool,
    /// Hits of the MRU pointer (the most recently used entry).
    pub mru_hits: u64,
    /// Most recently used first.
    entries: Vec<RangeEntry>,
    /// Hits, fills, evictions, invalidations (accesses follow from the lookups of its stage).
    pub stats: StructStats,
}

impl RangeTlb {
    pub fn new(c: &RangeTlbConfig) -> RangeTlb {
        RangeTlb {
            name: c.name.clone(),
            latency: c.latency,
            capacity: c.entries as usize,
            mru: c.mru,
            mru_hits: 0,
            entries: Vec::with_capacity(c.entries as usize),
            stats: StructStats::default(),
        }
    }

    /// The frame of `va`'s 4KB page if a range of address space `tag` covers it (a hit moves
    /// the entry to the front).
    pub fn probe(&mut self, va: u64, tag: u64) -> Option<u64> {
        self.probe_entry(va, tag).map(|e| e.pfn + ((va - e.base) >> 12))
    }

    /// The entry of address space `tag` covering `va`, as [`RangeTlb::probe`].
    pub fn probe_entry(&mut self, va: u64, tag: u64) -> Option<RangeEntry> {
        let i = self.entries.iter().position(|e| e.tag == tag && e.base <= va && va < e.limit)?;
        let e = self.entries[i];
        self.entries[..=i].rotate_right(1);
        self.stats.hits += 1;
        self.mru_hits += (i == 0) as u64;
        Some(e)
    }

    /// Insert a range (the caller knows no entry covers its addresses); the least recently used
    /// entry goes if the TLB is full.
    pub fn fill(&mut self, e: RangeEntry) {
        self.stats.fills += 1;
        if self.entries.len() == self.capacity {
            self.entries.pop();
            self.stats.evictions += 1;
        }
        self.entries.insert(0, e);
    }

    /// Drop the entries overlapping [start, end) of address space `tag` (any if `None`).
    pub fn invalidate(&mut self, start: u64, end: u64, tag: Option<u64>) {
        let before = self.entries.len();
        self.entries.retain(|e| !(e.base < end && start < e.limit && tag.is_none_or(|t| t == e.tag)));
        self.stats.invalidations += (before - self.entries.len()) as u64;
    }

    pub fn flush(&mut self) {
        self.stats.invalidations += self.entries.len() as u64;
        self.entries.clear();
    }

    /// Valid entries, most recent first (tests and reports).
    pub fn entries(&self) -> &[RangeEntry] {
        &self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tlb(n: u64) -> RangeTlb {
        RangeTlb::new(&RangeTlbConfig {
            name: "r".into(),
            entries: n,
            latency: 0,
            stage: 2,
            mru: true,
            fill: Default::default(),
        })
    }

    #[test]
    fn hits_inside_ranges_evicts_the_least_recent_and_invalidates_overlaps() {
        let mut r = tlb(2);
        r.fill(RangeEntry { base: 0x10_0000, limit: 0x20_0000, pfn: 1000, tag: 0 });
        r.fill(RangeEntry { base: 0x40_0000, limit: 0x40_8000, pfn: 50, tag: 0 });
        assert_eq!(r.probe(0x10_3fff, 0), Some(1003));
        assert_eq!(r.probe(0x20_0000, 0), None, "limit is exclusive");
        assert_eq!(r.probe(0x10_3fff, 1 << 48), None, "another address space");
        // 0x10_0000 was used last: the third range evicts 0x40_0000.
        r.fill(RangeEntry { base: 0x90_0000, limit: 0x91_0000, pfn: 7, tag: 0 });
        assert_eq!(r.stats.evictions, 1);
        assert_eq!(r.probe(0x40_0000, 0), None);
        assert_eq!(r.probe(0x90_1000, 0), Some(8));
        r.invalidate(0x1f_f000, 0x20_1000, None);
        assert_eq!(r.probe(0x10_0000, 0), None);
        assert_eq!((r.stats.hits, r.stats.invalidations, r.entries().len()), (2, 1, 1));
        // The MRU pointer: 0x10_0000's first hit was not at the front (0x40_0000 was filled
        // after it); 0x90_1000's was (it was just filled). Two hits in a row on one range:
        // the second at the front.
        assert_eq!(r.mru_hits, 1);
        assert_eq!(r.probe(0x90_2000, 0), Some(9));
        assert_eq!((r.stats.hits, r.mru_hits), (3, 2));
    }
}
