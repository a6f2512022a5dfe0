//! Utility-based migration of 4KB or 2MB pages between DRAM and NVM (`hybrid.migration =
//! "utility"`; seed 003 section III-C, HSCC-4KB-mig and HSCC-2MB-mig): an epoch controller over
//! the hybrid memory (`mem/hybrid.rs`), using the utility, threshold, DRAM lists, interval clock
//! and placement of `mem/migrate.rs` (shared with Rainbow's controller, `designs/rainbow.rs`); pages
//! move by the OS's remap (`Os::migrate`).
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
//!
//! The design's entry in the wing ([`DESIGN`]) comes first, then its parts.

use super::design::{no_hooks, Backend, Claims, Design, Observer};
use super::tlbcount::TlbCounts;
use crate::config::{Counting, Granularity, HybridConfig, MigrationPolicy};
use crate::mem::hybrid::{HybridMemory, DRAM, LINES_PER_PAGE, NVM};
use crate::mem::migrate::{Demoted, Latencies, Mover, Utility, UtilityMigration};
use crate::mem::Caches;
use crate::os::SimError;
use crate::os::{Invalidation, Os};
use crate::sim::epoch::{EpochController, EpochCx, Period};
use crate::stats::{Counters, Sink};
use crate::units::PageSize;

pub const DESIGN: Design = Design {
    name: "[hybrid]",
    claim: "the hybrid DRAM/NVM memory",
    present: |c| c.hybrid.as_ref().is_some_and(|h| h.migration != MigrationPolicy::Rainbow),
    claims: |c| {
        let h = c.hybrid.as_ref().expect("present");
        let observer = (h.counting == Counting::Tlb).then_some(Observer::TlbCounts);
        Claims { backend: Some(Backend::Hybrid), observer, ..Claims::default() }
    },
    controllers: |c| {
        let h = c.hybrid.as_ref().expect("present");
        match h.migration {
            MigrationPolicy::Utility => {
                vec![Box::new(Migration::new(h)) as Box<dyn EpochController>]
            }
            _ => Vec::new(),
        }
    },
    walk_hooks: no_hooks,
};

/// The latencies the utility compares, from the hybrid memory's kinds.
pub(crate) fn latencies(m: &HybridMemory) -> Latencies {
    let (d, n) = (m.spec(DRAM), m.spec(NVM));
    Latencies {
        dram_read: d.read_latency,
        dram_write: d.write_latency,
        nvm_read: n.read_latency,
        nvm_write: n.write_latency,
    }
}

/// The migration controller.
pub struct Migration {
    /// 4KB frames per page moved (1, or 512 for 2MB pages) and that page size.
    frames: u64,
    size: PageSize,
    tlb_counting: bool,
    check: u64,
    u: UtilityMigration,
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
            u: UtilityMigration::new(h.interval, h.threshold_cycles, h.threshold_step_cycles),
            dirty_flushed: 0,
        }
    }

    /// Fixed cycles of one page move besides the copy (shootdown, remap, `clflush`).
    fn fixed(&self, m: &HybridMemory) -> u64 {
        m.cfg.shootdown_cycles + m.cfg.remap_cycles + self.frames * LINES_PER_PAGE * m.cfg.clflush_cycles
    }

    fn utility(&self, m: &HybridMemory) -> Utility {
        Utility {
            lat: latencies(m),
            migrate_cost: self.frames * m.page_copy_cycles(NVM, DRAM) + self.fixed(m),
            writeback_cost: self.frames * m.page_copy_cycles(DRAM, NVM) + self.fixed(m),
        }
    }

    fn interval_end(
        &mut self,
        cx: &mut Cx<'_>,
        m: &mut HybridMemory,
        tlb: Option<&mut TlbCounts>,
    ) -> Result<(), SimError> {
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
                    self.u.lists.mark_dirty(pfn);
                }
            } else {
                let b = u.benefit(c.reads as u64, c.writes as u64);
                if self.u.threshold.passes(b) {
                    cands.push((b, pfn));
                }
            }
        }
        let mut mover = Remapper { cx, m, frames: self.frames, size: self.size, va: 0, dirty_flushed: 0 };
        let r = self.u.place(cands, u.writeback_cost, &mut mover);
        self.dirty_flushed += mover.dirty_flushed;
        r
    }
}

/// What a move needs of the epoch's context besides the memory (HSCC's and Rainbow's movers).
pub(crate) struct Cx<'a> {
    pub(crate) os: &'a mut Os,
    pub(crate) caches: &'a Caches,
    pub(crate) inval: &'a mut Vec<Invalidation>,
}

/// HSCC's moves: the OS remaps the page (`Os::migrate`), after a `clflush` of its lines, with
/// the copy, the remap and the shootdown charged to the hybrid memory. Keys are frames (the
/// first of a 2MB page).
struct Remapper<'a, 'b> {
    cx: &'a mut Cx<'b>,
    m: &'a mut HybridMemory,
    frames: u64,
    size: PageSize,
    /// The prepared candidate's virtual page.
    va: u64,
    dirty_flushed: u64,
}

impl Remapper<'_, '_> {
    /// The virtual page at frame `pfn`, if it is still there (of the migration's size, in the
    /// current address space).
    fn page(&self, pfn: u64) -> Option<u64> {
        let va = self.m.page_of(pfn)?;
        (self.cx.os.lookup(va) == Some((pfn, self.size))).then_some(va)
    }

    /// Move the page `va` (now at `pfn`) to `zone`; its costs (`copy`: its data is copied, as
    /// it is anyway when a page going back to NVM had dirty lines cached); the new frame and
    /// whether it was copied, or None if the OS could not (no free frame there).
    fn move_page(&mut self, va: u64, pfn: u64, zone: usize, copy: bool) -> Result<Option<(u64, bool)>, SimError> {
        let (cx, m) = (&mut *self.cx, &mut *self.m);
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
}

impl Mover for Remapper<'_, '_> {
    type Error = SimError;
    fn prepare(&mut self, pfn: u64) -> bool {
        match self.page(pfn) {
            Some(va) => {
                self.va = va;
                true
            }
            None => false,
        }
    }
    fn promote(&mut self, pfn: u64) -> Result<Option<u64>, SimError> {
        Ok(self.move_page(self.va, pfn, DRAM, true)?.map(|(new, _)| new))
    }
    fn demote(&mut self, pfn: u64, dirty: bool) -> Result<Demoted, SimError> {
        let Some(va) = self.page(pfn) else {
            return Ok(Demoted::Stale);
        };
        Ok(match self.move_page(va, pfn, NVM, dirty)? {
            None => Demoted::Full,
            Some((_, true)) => Demoted::Dirty,
            Some((_, false)) => Demoted::Clean,
        })
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
        if !self.u.clock.due(m.time_cycles(*instructions, *walk_cycles)) {
            return Ok(());
        }
        let tlb = if self.tlb_counting { observer.downcast_mut::<TlbCounts>() } else { None };
        self.interval_end(&mut Cx { os, caches, inval }, m, tlb)
    }
}

impl Counters for Migration {
    fn counters(&self, out: &mut dyn Sink) {
        self.u.report(out);
        let u = &self.u;
        let moved = u.promotions + u.demotions_clean + u.demotions_dirty;
        out.put(format_args!("shootdowns"), moved);
        out.put(format_args!("bytes_copied"), (u.promotions + u.demotions_dirty) * self.frames * 4096);
        out.put(format_args!("dirty_lines_flushed"), self.dirty_flushed);
    }
}
