//! Utility-based migration of 4KB pages between DRAM and NVM (`hybrid.migration = "utility"`;
//! seed 003 section III-C, HSCC-4KB-mig): an epoch controller over the hybrid memory
//! (`mem/hybrid.rs`), using the utility, threshold and DRAM lists of `mem/migrate.rs`.
//!
//! It runs every `hybrid.check_instructions` instructions and acts when the time model's
//! cycles (base CPI x instructions + walk cycles + the hybrid memory's cycles; first-level-miss
//! TLB hits are left out of this clock) pass the next multiple of `hybrid.interval`. Then:
//! 1. DRAM pages written back to during the interval move to the dirty list;
//! 2. every NVM frame read or written back in the interval (counted at the memory: last-level
//!    misses and write-backs) whose benefit (Equation 1) passes the threshold is a candidate,
//!    most beneficial first (ties: lower frame first);
//! 3. each candidate moves to a free DRAM frame (the DRAM zone's free list); if none is free, the
//!    oldest clean page moved in an earlier interval goes back to NVM (a remap: its NVM copy is
//!    current), else the oldest dirty one (a copy back, Equation 2's cost, which the candidate's
//!    benefit must still exceed the threshold by); no page is evicted for a candidate it is not
//!    worth it for, and pages that arrived this interval are not evicted;
//! 4. every move: `clflush` of the page (its dirty lines written back first), the copy (64 lines
//!    read from one kind and written to the other), the page-table update and a TLB shootdown
//!    (the OS's invalidation, performed by the engine after the controller);
//! 5. the threshold rises if a dirty page went back to NVM, else falls toward its base.

use super::epoch::{EpochController, EpochCx, Period};
use super::tlbcount::TlbCounts;
use crate::config::{Counting, Granularity, HybridConfig};
use crate::mem::hybrid::{HybridMemory, DRAM, LINES_PER_PAGE, NVM};
use crate::mem::migrate::{DramLists, Latencies, Threshold, Utility};
use crate::mem::Caches;
use crate::os::SimError;
use crate::os::{Invalidation, Os};

/// What a move needs of the epoch's context besides the hybrid memory.
struct Cx<'a> {
    os: &'a mut Os,
    caches: &'a Caches,
    inval: &'a mut Vec<Invalidation>,
}
use crate::stats::{Counters, Sink};
use crate::units::PageSize;

/// The migration controller.
pub struct Migration {
    /// 4KB frames per page moved (1, or 512 for 2MB pages) and that page size.
    frames: u64,
    size: PageSize,
    tlb_counting: bool,
    check: u64,
    interval: u64,
    /// The time-model cycle count at which the next interval ends.
    next: u64,
    intervals: u64,
    threshold: Threshold,
    lists: DramLists,
    promotions: u64,
    demotions_clean: u64,
    demotions_dirty: u64,
    candidates: u64,
    stale: u64,
    dirty_flushed: u64,
}

impl Migration {
    pub fn new(h: &HybridConfig) -> Migration {
        let two_mb = h.granularity == Granularity::Page2M;
        Migration {
            frames: if two_mb { 512 } else { 1 },
            size: if two_mb { PageSize::Size2M } else { PageSize::Size4K },
            tlb_counting: h.counting == Counting::Tlb,
            check: h.check_instructions,
            interval: h.interval,
            next: h.interval,
            intervals: 0,
            threshold: Threshold::new(h.threshold_cycles, h.threshold_step_cycles),
            lists: DramLists::default(),
            promotions: 0,
            demotions_clean: 0,
            demotions_dirty: 0,
            candidates: 0,
            stale: 0,
            dirty_flushed: 0,
        }
    }

    /// Fixed cycles of one page move besides the copy (shootdown, remap, `clflush`).
    fn fixed(&self, m: &HybridMemory) -> u64 {
        m.cfg.shootdown_cycles + m.cfg.remap_cycles + self.frames * LINES_PER_PAGE * m.cfg.clflush_cycles
    }

    fn utility(&self, m: &HybridMemory) -> Utility {
        let (d, n) = (m.spec(DRAM), m.spec(NVM));
        Utility {
            lat: Latencies {
                dram_read: d.read_latency,
                dram_write: d.write_latency,
                nvm_read: n.read_latency,
                nvm_write: n.write_latency,
            },
            migrate_cost: self.frames * m.page_copy_cycles(NVM, DRAM) + self.fixed(m),
            writeback_cost: self.frames * m.page_copy_cycles(DRAM, NVM) + self.fixed(m),
        }
    }

    /// Move the page `va` (now at `pfn`) to `zone`; its costs (`copy`: its data is copied, as
    /// it is anyway when a page going back to NVM had dirty lines cached); the new frame and
    /// whether it was copied, or None if the OS could not (no free frame there).
    fn move_page(
        &mut self,
        cx: &mut Cx<'_>,
        m: &mut HybridMemory,
        va: u64,
        pfn: u64,
        zone: usize,
        copy: bool,
    ) -> Result<Option<(u64, bool)>, SimError> {
        if !cx.os.migrate(va, zone, cx.inval)? {
            return Ok(None);
        }
        let flushed: u64 = (pfn..pfn + self.frames).map(|f| m.flush_page(f, cx.caches)).sum();
        self.dirty_flushed += flushed;
        // (A DRAM page with dirty lines still cached is dirty too: they were just written to it.)
        let copy = copy || (zone == NVM && flushed > 0);
        if copy {
            m.copy(1 - zone, zone, self.frames * LINES_PER_PAGE);
        }
        m.cycles.shootdown += m.cfg.shootdown_cycles;
        m.cycles.remap += m.cfg.remap_cycles;
        let new = cx.os.lookup(va).map(|(p, _)| p).expect("a migrated page is mapped");
        m.moved(pfn, new, va);
        Ok(Some((new, copy)))
    }

    /// Whether `pfn` still holds the page (of the migration's size) at `va` of the current
    /// address space.
    fn holds(&self, cx: &Cx<'_>, va: u64, pfn: u64) -> bool {
        cx.os.lookup(va) == Some((pfn, self.size))
    }

    fn interval_end(
        &mut self,
        cx: &mut Cx<'_>,
        m: &mut HybridMemory,
        tlb: Option<&mut TlbCounts>,
    ) -> Result<(), SimError> {
        self.intervals += 1;
        let now = self.intervals;
        // (Counted by page of the migration's size already: its first frame.)
        let counts = match tlb {
            Some(t) => t.take(),
            None => m.take_counts(),
        };
        let u = self.utility(m);
        let mut cands: Vec<(i64, u64)> = Vec::new();
        for &(pfn, c) in &counts {
            if m.kind_of(pfn << 12) == DRAM {
                if c.writes > 0 {
                    self.lists.mark_dirty(pfn);
                }
            } else {
                let b = u.benefit(c.reads as u64, c.writes as u64);
                if self.threshold.passes(b) {
                    cands.push((b, pfn));
                }
            }
        }
        cands.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut both_ways = false;
        'candidates: for (b, pfn) in cands {
            let Some(va) = m.page_of(pfn) else {
                self.stale += 1;
                continue;
            };
            if !self.holds(cx, va, pfn) {
                self.stale += 1;
                continue;
            }
            self.candidates += 1;
            loop {
                if let Some((new, _)) = self.move_page(cx, m, va, pfn, DRAM, true)? {
                    self.promotions += 1;
                    self.lists.insert(new, now);
                    continue 'candidates;
                }
                // No free DRAM frame: evict, if the candidate is worth it.
                let Some((victim, dirty)) = self.lists.victim(now) else {
                    break 'candidates;
                };
                let worth = if dirty { b.saturating_sub(u.writeback_cost as i64) } else { b };
                if !self.threshold.passes(worth) {
                    continue 'candidates;
                }
                self.lists.remove(victim);
                let Some(vva) = m.page_of(victim) else {
                    self.stale += 1;
                    continue;
                };
                if !self.holds(cx, vva, victim) {
                    self.stale += 1;
                    continue;
                }
                let Some((_, copied)) = self.move_page(cx, m, vva, victim, NVM, dirty)? else {
                    break 'candidates; // NVM full: nothing can move
                };
                if copied {
                    self.demotions_dirty += 1;
                    both_ways = true;
                } else {
                    self.demotions_clean += 1;
                }
            }
        }
        self.threshold.end_interval(both_ways);
        Ok(())
    }
}

impl EpochController for Migration {
    fn name(&self) -> &str {
        "migrate"
    }
    fn period(&self) -> Period {
        Period::Instructions(self.check)
    }
    fn run(&mut self, cx: &mut EpochCx<'_>) -> Result<(), SimError> {
        let EpochCx { os, caches, inval, backend, observer, instructions, walk_cycles, .. } = cx;
        let Some(m) = backend.downcast_mut::<HybridMemory>() else {
            return Err(SimError::Invalid("hybrid.migration needs the hybrid memory backend".into()));
        };
        let now = m.time_cycles(*instructions, *walk_cycles);
        if now < self.next {
            return Ok(());
        }
        self.next = (now / self.interval + 1) * self.interval;
        let tlb = if self.tlb_counting { observer.downcast_mut::<TlbCounts>() } else { None };
        self.interval_end(&mut Cx { os, caches, inval }, m, tlb)
    }
}

impl Counters for Migration {
    fn counters(&self, out: &mut dyn Sink) {
        let (clean, dirty) = self.lists.counts();
        out.put(format_args!("intervals"), self.intervals);
        out.put(format_args!("candidates"), self.candidates);
        out.put(format_args!("promotions"), self.promotions);
        out.put(format_args!("demotions_clean"), self.demotions_clean);
        out.put(format_args!("demotions_dirty"), self.demotions_dirty);
        let moved = self.promotions + self.demotions_clean + self.demotions_dirty;
        out.put(format_args!("shootdowns"), moved);
        out.put(format_args!("bytes_copied"), (self.promotions + self.demotions_dirty) * self.frames * 4096);
        out.put(format_args!("dirty_lines_flushed"), self.dirty_flushed);
        out.put(format_args!("threshold_cycles"), self.threshold.current);
        out.put(format_args!("threshold_changes"), self.threshold.changes);
        out.put(format_args!("stale"), self.stale);
        out.put(format_args!("dram_clean_pages"), clean);
        out.put(format_args!("dram_dirty_pages"), dirty);
    }
}
