//! A range TLB: a small fully associative cache of range translations, each a virtual range
//! [BASE, LIMIT) mapped to physically contiguous memory starting at a frame (RMM, seed 000
//! chapter 4: range TLBs beside the page TLBs, probed after a first-level miss; Lite, chapter 5:
//! an L1 range TLB, looked up with the first-level page TLBs). Entries are tagged with the
//! address space like page TLB entries. A hit yields the 4KB translation of the address inside
//! the range; a hit past the first level fills the page TLBs above (as RMM's range TLB produces
//! a page-table entry for the L1 TLB: the entry of the page the OS maps `va` with, or its 4KB
//! entry with `fill = "4k"`), an L1 range TLB's hit fills nothing.
//!
//! Replacement is LRU over at most a few dozen entries: each entry keeps the time of its last
//! use, a probe scans them, and a fill replaces the least recently used.
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
    /// The entries in no order, each with the time of its last use (`stamps`): LRU by stamp,
    /// so a hit updates one stamp instead of moving entries (an L1 range TLB is probed on
    /// every access).
    entries: Vec<RangeEntry>,
    stamps: Vec<u64>,
    clock: u64,
    /// The index of the most recently used entry (hit or filled), `usize::MAX` if none.
    last: usize,
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
            stamps: Vec::with_capacity(c.entries as usize),
            clock: 0,
            last: usize::MAX,
            stats: StructStats::default(),
        }
    }

    /// The frame of `va`'s 4KB page if a range of address space `tag` covers it (a hit makes
    /// the entry the most recently used).
    pub fn probe(&mut self, va: u64, tag: u64) -> Option<u64> {
        self.probe_entry(va, tag).map(|e| e.pfn + ((va - e.base) >> 12))
    }

    /// The entry of address space `tag` covering `va`, as [`RangeTlb::probe`].
    #[inline]
    pub fn probe_entry(&mut self, va: u64, tag: u64) -> Option<RangeEntry> {
        let i = self.find(va, tag)?;
        self.rehit(i);
        Some(self.entries[i])
    }

    /// The index of the entry of address space `tag` covering `va` (no hit counted).
    #[inline]
    pub fn find(&self, va: u64, tag: u64) -> Option<usize> {
        self.entries.iter().position(|e| e.tag == tag && e.base <= va && va < e.limit)
    }

    /// Entry `i` (an index [`RangeTlb::find`] gave).
    #[inline(always)]
    pub fn entry(&self, i: usize) -> RangeEntry {
        self.entries[i]
    }

    /// A hit of entry `i` (found before, unchanged since): what [`RangeTlb::probe_entry`] does
    /// after its search.
    #[inline(always)]
    pub fn rehit(&mut self, i: usize) {
        self.stats.hits += 1;
        if i == self.last {
            // The most recent entry already has the largest stamp: the order stays.
            self.mru_hits += 1;
            return;
        }
        self.clock += 1;
        self.stamps[i] = self.clock;
        self.last = i;
    }

    /// Deferred hits (the memo of L1-range hits, `Mmu::range_memo_hit`): `hits` hits, the first
    /// on entry `first`, `mru` of the others on the entry used just before; `used`: entries in
    /// the order they last became the most recent; `last` the entry hit last. The same counts
    /// and recency order as `hits` calls of [`RangeTlb::rehit`] with nothing else in between.
    pub fn absorb(&mut self, hits: u64, first: usize, mru: u64, used: impl Iterator<Item = usize>, last: usize) {
        self.stats.hits += hits;
        self.mru_hits += mru + (first == self.last) as u64;
        for i in used {
            self.clock += 1;
            self.stamps[i] = self.clock;
        }
        self.last = last;
    }

    /// Insert a range (the caller knows no entry covers its addresses); the least recently used
    /// entry goes if the TLB is full.
    pub fn fill(&mut self, e: RangeEntry) {
        self.stats.fills += 1;
        self.clock += 1;
        if self.entries.len() == self.capacity {
            let j = (0..self.stamps.len()).min_by_key(|&j| self.stamps[j]).expect("a full TLB has entries");
            self.entries[j] = e;
            self.stamps[j] = self.clock;
            self.last = j;
            self.stats.evictions += 1;
        } else {
            self.entries.push(e);
            self.stamps.push(self.clock);
            self.last = self.entries.len() - 1;
        }
    }

    /// Drop the entries overlapping [start, end) of address space `tag` (any if `None`).
    pub fn invalidate(&mut self, start: u64, end: u64, tag: Option<u64>) {
        let before = self.entries.len();
        let mut k = 0;
        while k < self.entries.len() {
            let e = self.entries[k];
            if e.base < end && start < e.limit && tag.is_none_or(|t| t == e.tag) {
                self.entries.swap_remove(k);
                self.stamps.swap_remove(k);
            } else {
                k += 1;
            }
        }
        self.stats.invalidations += (before - self.entries.len()) as u64;
        self.last = (0..self.stamps.len()).max_by_key(|&j| self.stamps[j]).unwrap_or(usize::MAX);
    }

    pub fn flush(&mut self) {
        self.stats.invalidations += self.entries.len() as u64;
        self.entries.clear();
        self.stamps.clear();
        self.last = usize::MAX;
    }

    /// Valid entries, most recent first (tests and reports).
    pub fn entries(&self) -> Vec<RangeEntry> {
        let mut order: Vec<usize> = (0..self.entries.len()).collect();
        order.sort_by_key(|&j| std::cmp::Reverse(self.stamps[j]));
        order.into_iter().map(|j| self.entries[j]).collect()
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
