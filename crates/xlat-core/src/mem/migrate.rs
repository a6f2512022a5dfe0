//! The pieces of utility-based page migration between DRAM and NVM that do not depend on the
//! page size or on how pages are counted (seed 003 section III-C, after HSCC): the utility of
//! moving a page, the dynamic threshold, and DRAM's clean and dirty lists (its free list is the
//! buddy allocator's DRAM zone). The epoch controller that uses them for 4KB and 2MB pages is
//! `sim/hybrid.rs`; Rainbow's caching of the 4KB pages of NVM superpages is to reuse them.

use std::collections::BTreeMap;

/// The latencies (cycles) the utility compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latencies {
    pub dram_read: u64,
    pub dram_write: u64,
    pub nvm_read: u64,
    pub nvm_write: u64,
}

/// The utility of moving a page to DRAM (seed 003 Equations 1 and 2, whose text was lost: their
/// terms as section III-C describes them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utility {
    pub lat: Latencies,
    /// Cycles of moving the page NVM -> DRAM (the copy and its fixed costs).
    pub migrate_cost: u64,
    /// Cycles of writing a dirty DRAM page back to NVM (the copy and its fixed costs).
    pub writeback_cost: u64,
}

impl Utility {
    /// Equation 1: the cycles saved in the next interval if the page, read `reads` and written
    /// `writes` times (lines) in this one, is as busy there from DRAM, minus the migration.
    pub fn benefit(&self, reads: u64, writes: u64) -> i64 {
        let l = &self.lat;
        let saved = reads as i128 * (l.nvm_read as i128 - l.dram_read as i128)
            + writes as i128 * (l.nvm_write as i128 - l.dram_write as i128);
        (saved - self.migrate_cost as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    /// Equation 2: the benefit when a dirty DRAM page must be written back to make room.
    pub fn benefit_evicting_dirty(&self, reads: u64, writes: u64) -> i64 {
        self.benefit(reads, writes).saturating_sub(self.writeback_cost as i64)
    }
}

/// The dynamic threshold (section III-C: "we monitor the data traffic of bidirectional page
/// migrations, and dynamically increase the threshold"): after an interval in which pages moved
/// both ways (a dirty DRAM page was written back to NVM), it rises by `step`; after one in
/// which they did not, it falls by `step`, never below its initial value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threshold {
    pub base: u64,
    pub step: u64,
    pub current: u64,
    pub changes: u64,
}

impl Threshold {
    pub fn new(base: u64, step: u64) -> Threshold {
        Threshold { base, step, current: base, changes: 0 }
    }

    /// Whether a page of this benefit moves.
    pub fn passes(&self, benefit: i64) -> bool {
        benefit > self.current as i64
    }

    /// The end of an interval; `both_ways`: pages moved in both directions during it.
    pub fn end_interval(&mut self, both_ways: bool) {
        let next = if both_ways {
            self.current.saturating_add(self.step)
        } else {
            self.current.saturating_sub(self.step).max(self.base)
        };
        if next != self.current {
            self.changes += 1;
            self.current = next;
        }
    }
}

/// DRAM pages that migration placed there, clean or dirty, each list in arrival order (seed 003
/// section III-A, after HSCC: evict free pages first, then clean, then dirty). A page is a key
/// (its frame); pages that arrived in the current interval are not evicted (they were chosen
/// as the hottest just now).
#[derive(Debug, Clone, Default)]
pub struct DramLists {
    /// Key -> (arrival sequence, interval of arrival, dirty).
    pages: BTreeMap<u64, (u64, u64, bool)>,
    clean: BTreeMap<u64, u64>,
    dirty: BTreeMap<u64, u64>,
    seq: u64,
}

impl DramLists {
    /// Page `key` arrived (clean) in interval `interval`.
    pub fn insert(&mut self, key: u64, interval: u64) {
        self.seq += 1;
        self.remove(key);
        self.pages.insert(key, (self.seq, interval, false));
        self.clean.insert(self.seq, key);
    }

    /// Page `key` was written since it arrived.
    pub fn mark_dirty(&mut self, key: u64) {
        if let Some(e) = self.pages.get_mut(&key) {
            if !e.2 {
                e.2 = true;
                self.clean.remove(&e.0);
                self.dirty.insert(e.0, key);
            }
        }
    }

    pub fn remove(&mut self, key: u64) -> bool {
        match self.pages.remove(&key) {
            Some((seq, _, dirty)) => {
                if dirty {
                    self.dirty.remove(&seq);
                } else {
                    self.clean.remove(&seq);
                }
                true
            }
            None => false,
        }
    }

    pub fn contains(&self, key: u64) -> bool {
        self.pages.contains_key(&key)
    }

    pub fn is_dirty(&self, key: u64) -> bool {
        self.pages.get(&key).is_some_and(|e| e.2)
    }

    /// The page to evict in interval `now`: the oldest clean page, else the oldest dirty one,
    /// that arrived before `now`; with whether it is dirty.
    pub fn victim(&self, now: u64) -> Option<(u64, bool)> {
        let old = |(_, &k): (&u64, &u64)| (self.pages[&k].1 < now).then_some(k);
        if let Some(k) = self.clean.iter().find_map(old) {
            return Some((k, false));
        }
        self.dirty.iter().find_map(old).map(|k| (k, true))
    }

    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// (clean, dirty) pages.
    pub fn counts(&self) -> (u64, u64) {
        (self.clean.len() as u64, self.dirty.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAT: Latencies = Latencies { dram_read: 200, dram_write: 200, nvm_read: 306, nvm_write: 1000 };

    #[test]
    fn utility_by_hand() {
        let u = Utility { lat: LAT, migrate_cost: 1000, writeback_cost: 5000 };
        // 10 reads x 106 + 3 writes x 800 - 1000 = 1060 + 2400 - 1000 = 2460.
        assert_eq!(u.benefit(10, 3), 2460);
        assert_eq!(u.benefit_evicting_dirty(10, 3), 2460 - 5000);
        assert_eq!(u.benefit(0, 0), -1000);
    }

    #[test]
    fn threshold_rises_with_two_way_traffic_and_falls_to_its_base() {
        let mut t = Threshold::new(100, 50);
        assert!(t.passes(101) && !t.passes(100));
        t.end_interval(true);
        t.end_interval(true);
        assert_eq!((t.current, t.changes), (200, 2));
        t.end_interval(false);
        assert_eq!(t.current, 150);
        t.end_interval(false);
        t.end_interval(false);
        assert_eq!((t.current, t.changes), (100, 4), "never below the base; no change counted at the base");
    }

    #[test]
    fn lists_evict_clean_then_dirty_oldest_first_never_this_interval() {
        let mut l = DramLists::default();
        l.insert(10, 1);
        l.insert(11, 1);
        l.insert(12, 2);
        l.mark_dirty(10);
        assert_eq!(l.counts(), (2, 1));
        assert_eq!(l.victim(2), Some((11, false)), "clean before dirty");
        l.remove(11);
        assert_eq!(l.victim(2), Some((10, true)), "12 arrived in interval 2: kept");
        assert_eq!(l.victim(3), Some((12, false)));
        l.remove(12);
        l.remove(10);
        assert!(l.is_empty() && l.victim(9).is_none());
    }
}
