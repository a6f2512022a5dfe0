//! Utility-based page migration between DRAM and NVM, the parts that do not depend on the page
//! size, on how pages are counted or on how a page moves (seed 003 section III-C, after HSCC):
//! the utility of moving a page, the dynamic threshold, DRAM's clean and dirty lists (its free
//! list is the buddy allocator's DRAM zone), the interval clock, and the placement of an
//! interval's candidates ([`UtilityMigration::place`]) through a [`Mover`]. Two epoch
//! controllers use them: `designs/hybrid.rs` (HSCC: 4KB and 2MB pages remapped by the OS) and
//! `designs/rainbow.rs` (Rainbow: 4KB pages of NVM superpages cached in DRAM, remapped by the
//! memory controller).

use crate::stats::Sink;
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

/// When a migration controller acts: it is run every so many instructions and compares the
/// time model's cycles with the next multiple of the interval (seed 003 section III-C: 10^8
/// cycles); the interval ends at the first check past it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntervalClock {
    pub interval: u64,
    /// The cycle count at which the current interval ends.
    next: u64,
    /// Intervals ended so far.
    pub intervals: u64,
}

impl IntervalClock {
    pub fn new(interval: u64) -> IntervalClock {
        IntervalClock { interval, next: interval, intervals: 0 }
    }

    /// Whether an interval has ended by cycle `now`; if so it is counted, and the next one
    /// ends at the first multiple of the interval past `now`.
    pub fn due(&mut self, now: u64) -> bool {
        if now < self.next {
            return false;
        }
        self.next = (now / self.interval + 1) * self.interval;
        self.intervals += 1;
        true
    }
}

/// How a controller moves pages (HSCC: the OS remaps them; Rainbow: the memory controller
/// caches NVM pages in DRAM). Pages are keys: NVM pages as counted, DRAM pages as [`DramLists`]
/// holds them.
pub trait Mover {
    type Error;
    /// Whether candidate `key` is still the page it was counted as (false: stale, skipped).
    fn prepare(&mut self, key: u64) -> bool;
    /// Move candidate `key` (prepared) to DRAM: its DRAM key, or None when DRAM has no free frame.
    fn promote(&mut self, key: u64) -> Result<Option<u64>, Self::Error>;
    /// Move DRAM page `key` back to NVM, copying its data if `dirty` (or if it turns out dirty).
    fn demote(&mut self, key: u64, dirty: bool) -> Result<Demoted, Self::Error>;
}

/// What became of a DRAM page sent back to NVM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Demoted {
    /// Remapped only (its NVM copy was current).
    Clean,
    /// Copied back (dirty).
    Dirty,
    /// No longer the page it was (unmapped since): dropped from the lists.
    Stale,
    /// NVM has no room: nothing can move.
    Full,
}

/// Utility-based migration's state over the intervals: the clock, the threshold, the DRAM
/// lists and the counts.
#[derive(Debug, Clone)]
pub struct UtilityMigration {
    pub clock: IntervalClock,
    pub threshold: Threshold,
    pub lists: DramLists,
    /// Candidates that passed the threshold and were still their page.
    pub candidates: u64,
    pub promotions: u64,
    pub demotions_clean: u64,
    pub demotions_dirty: u64,
    /// Candidates and victims that were no longer the page counted.
    pub stale: u64,
}

impl UtilityMigration {
    pub fn new(interval: u64, threshold: u64, step: u64) -> UtilityMigration {
        UtilityMigration {
            clock: IntervalClock::new(interval),
            threshold: Threshold::new(threshold, step),
            lists: DramLists::default(),
            candidates: 0,
            promotions: 0,
            demotions_clean: 0,
            demotions_dirty: 0,
            stale: 0,
        }
    }

    /// The end of an interval: place its candidates, (benefit, key) pairs whose benefit passed
    /// the threshold, most beneficial first (ties: lower key). Each moves to a free DRAM frame;
    /// with none free, the oldest clean page moved in an earlier interval goes back to NVM, else
    /// the oldest dirty one, whose write-back (`writeback_cost`, Equation 2) the candidate's
    /// benefit must still exceed the threshold by; no page is evicted for a candidate it is not
    /// worth it for, and pages that arrived this interval are not evicted. Then the threshold
    /// rises if a dirty page went back to NVM (migration ran both ways), else falls.
    pub fn place<M: Mover>(
        &mut self,
        mut cands: Vec<(i64, u64)>,
        writeback_cost: u64,
        m: &mut M,
    ) -> Result<(), M::Error> {
        let now = self.clock.intervals;
        cands.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut both_ways = false;
        'candidates: for (b, key) in cands {
            if !m.prepare(key) {
                self.stale += 1;
                continue;
            }
            self.candidates += 1;
            loop {
                if let Some(new) = m.promote(key)? {
                    self.promotions += 1;
                    self.lists.insert(new, now);
                    continue 'candidates;
                }
                // No free DRAM frame: evict, if the candidate is worth it.
                let Some((victim, dirty)) = self.lists.victim(now) else {
                    break 'candidates;
                };
                let worth = if dirty { b.saturating_sub(writeback_cost as i64) } else { b };
                if !self.threshold.passes(worth) {
                    continue 'candidates;
                }
                self.lists.remove(victim);
                match m.demote(victim, dirty)? {
                    Demoted::Clean => self.demotions_clean += 1,
                    Demoted::Dirty => {
                        self.demotions_dirty += 1;
                        both_ways = true;
                    }
                    Demoted::Stale => self.stale += 1,
                    Demoted::Full => break 'candidates,
                }
            }
        }
        self.threshold.end_interval(both_ways);
        Ok(())
    }

    /// The counters every utility-based controller reports.
    pub fn report(&self, out: &mut dyn Sink) {
        let (clean, dirty) = self.lists.counts();
        out.put(format_args!("intervals"), self.clock.intervals);
        out.put(format_args!("candidates"), self.candidates);
        out.put(format_args!("promotions"), self.promotions);
        out.put(format_args!("demotions_clean"), self.demotions_clean);
        out.put(format_args!("demotions_dirty"), self.demotions_dirty);
        out.gauge(format_args!("threshold_cycles"), self.threshold.current);
        out.put(format_args!("threshold_changes"), self.threshold.changes);
        out.put(format_args!("stale"), self.stale);
        out.gauge(format_args!("dram_clean_pages"), clean);
        out.gauge(format_args!("dram_dirty_pages"), dirty);
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

    #[test]
    fn the_clock_ends_intervals_at_the_first_check_past_each_boundary() {
        let mut c = IntervalClock::new(100);
        assert!(!c.due(99));
        assert!(c.due(250), "past 100");
        assert!(!c.due(299), "the next boundary is 300");
        assert!(c.due(300));
        assert_eq!(c.intervals, 2);
    }

    /// DRAM of `room` frames; keys 100.. are NVM pages, DRAM keys are 1000 + n.
    struct Toy {
        room: u64,
        next: u64,
        moved: Vec<String>,
    }

    impl Mover for Toy {
        type Error = ();
        fn prepare(&mut self, key: u64) -> bool {
            key != 666
        }
        fn promote(&mut self, key: u64) -> Result<Option<u64>, ()> {
            if self.room == 0 {
                return Ok(None);
            }
            self.room -= 1;
            self.next += 1;
            self.moved.push(format!("up {key}"));
            Ok(Some(1000 + self.next))
        }
        fn demote(&mut self, key: u64, dirty: bool) -> Result<Demoted, ()> {
            self.room += 1;
            self.moved.push(format!("down {key}"));
            Ok(if dirty { Demoted::Dirty } else { Demoted::Clean })
        }
    }

    #[test]
    fn placement_by_hand() {
        let mut u = UtilityMigration::new(10, 100, 50);
        let mut t = Toy { room: 2, next: 0, moved: Vec::new() };
        // Interval 1: three candidates for two frames; 666 is stale.
        u.clock.due(10);
        u.place(vec![(300, 101), (500, 102), (400, 103), (900, 666)], 1000, &mut t).unwrap();
        assert_eq!(t.moved, ["up 102", "up 103"], "most beneficial first; 101 finds no room (no old page)");
        assert_eq!((u.candidates, u.promotions, u.stale), (3, 2, 1));
        // Interval 2: 1001 (102's copy) was written, 1002 (103's) was not.
        u.lists.mark_dirty(1001);
        u.clock.due(20);
        t.moved.clear();
        u.place(vec![(150, 104), (2000, 105)], 1000, &mut t).unwrap();
        // 105 (2000) first: evicts clean 1002; 104 (150): the only victim is dirty 1001,
        // 150 - 1000 does not pass 100: stays.
        assert_eq!(t.moved, ["down 1002", "up 105"]);
        assert_eq!((u.demotions_clean, u.demotions_dirty), (1, 0));
        assert_eq!(u.threshold.current, 100, "one way only: stays at its base");
        // Interval 3: 1003 (105's copy) written too; 106 worth 1200 evicts the oldest dirty page,
        // 1001 (1200 - 1000 = 200 > 100): migration ran both ways, the threshold rises.
        u.lists.mark_dirty(1003);
        u.clock.due(30);
        t.moved.clear();
        u.place(vec![(1200, 106)], 1000, &mut t).unwrap();
        assert_eq!(t.moved, ["down 1001", "up 106"]);
        assert_eq!((u.demotions_dirty, u.threshold.current), (1, 150));
    }
}
