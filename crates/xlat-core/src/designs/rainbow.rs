//! Rainbow's migration controller (`hybrid.migration = "rainbow"`; seed 003 sections III-A to
//! III-F): DRAM caches the hot 4KB pages of NVM superpages without splintering them. An epoch
//! controller over Rainbow's memory controller (`mem/rainbow.rs`), sharing utility-based
//! migration with HSCC's (`mem/migrate.rs`: utility, threshold, DRAM lists, interval clock,
//! placement); what differs is the counting (two stages at the memory controller,
//! `mem/twostage.rs`) and how a page moves (the migration bitmap and the pointer in the NVM
//! page, not the page table).
//!
//! At the end of each interval (the time model's cycles passing a multiple of
//! `hybrid.interval`, checked every `hybrid.check_instructions`):
//! 1. DRAM copies written back to during the interval move to the dirty list;
//! 2. every 4KB page of the superpages monitored during the interval (stage 2) that is not
//!    cached yet and whose benefit (Equation 1) passes the threshold is a candidate; the next
//!    interval monitors the interval's top `hybrid.top_superpages` superpages (stage 1);
//! 3. placement as HSCC's (`UtilityMigration::place`): a free DRAM frame from the buddy
//!    allocator's DRAM zone, else the oldest clean copy, else the oldest dirty one if worth
//!    Equation 2;
//! 4. caching a page: `clflush` of its lines (dirty ones written to NVM first), the copy NVM ->
//!    DRAM, the pointer written over its first 8 bytes (one NVM line write), the bit set, the
//!    OS's bookkeeping (`hybrid.remap_cycles`); no TLB shootdown (the superpage's mapping is
//!    unchanged, section III-F);
//! 5. uncaching one: `clflush` of the copy, the copy DRAM -> NVM if dirty, else the first 8
//!    bytes restored (one NVM line write), the bit cleared, the frame freed, and a shootdown of
//!    the 4KB entries of the page only (`Invalidation::Page4K`).
//!
//! A syscall that unmaps (or moves) pages drops their copies at once, before the next access:
//! the bit cleared and the DRAM frame freed, no copy back (the data is gone), the OS's
//! bookkeeping charged (`hybrid.remap_cycles` per copy). The hardware follows any set bit to
//! the pointer in the NVM page (section III-E); a bit left set on a frame the OS frees and
//! reuses would send another page's accesses to a dead copy, so the OS must clear it when it
//! frees the frame. (Until issue 34 the copies were dropped at the next interval's end and the
//! translations in between, `rainbow.stale_remaps`, went to NVM at no cost.)
//!
//! The design's entry in the wing ([`DESIGN`]) comes first, then its parts.

use super::design::{no_hooks, Backend, Claims, Design};
use super::hybrid::{latencies, Cx};
use crate::config::HybridConfig;
use crate::config::MigrationPolicy;
use crate::mem::hybrid::{DRAM, LINES_PER_PAGE, NVM};
use crate::mem::migrate::{Demoted, Mover, Utility, UtilityMigration};
use crate::mem::rainbow::RainbowMemory;
use crate::os::{Invalidation, Os, SimError};
use crate::sim::epoch::{EpochController, EpochCx, Period};
use crate::stats::{Counters, Sink};
use crate::units::PageSize;

pub const DESIGN: Design = Design {
    name: "[hybrid] with migration = \"rainbow\"",
    claim: "Rainbow's memory controller",
    present: |c| c.hybrid.as_ref().is_some_and(|h| h.migration == MigrationPolicy::Rainbow),
    claims: |_| Claims { backend: Some(Backend::Rainbow), no_memo: true, ..Claims::default() },
    controllers: |c| {
        let h = c.hybrid.as_ref().expect("present");
        vec![Box::new(RainbowMigration::new(h)) as Box<dyn EpochController>]
    },
    walk_hooks: no_hooks,
};

/// The controller.
pub struct RainbowMigration {
    check: u64,
    top: usize,
    u: UtilityMigration,
    dirty_flushed: u64,
    /// Pointer writes (caching) and restores of the first 8 bytes (clean uncaching).
    pointer_writes: u64,
    restores: u64,
    /// Copies dropped because their page was unmapped.
    dropped: u64,
}

impl RainbowMigration {
    pub fn new(h: &HybridConfig) -> RainbowMigration {
        RainbowMigration {
            check: h.check_instructions,
            top: h.top_superpages as usize,
            u: UtilityMigration::new(h.interval, h.threshold_cycles, h.threshold_step_cycles),
            dirty_flushed: 0,
            pointer_writes: 0,
            restores: 0,
            dropped: 0,
        }
    }

    /// Equations 1 and 2 for one 4KB page: caching costs the copy, the pointer write, the
    /// `clflush` and the OS's bookkeeping (no shootdown); writing a dirty copy back costs the
    /// copy, the `clflush`, the bookkeeping and the 4KB shootdown.
    fn utility(m: &RainbowMemory) -> Utility {
        let h = &m.hybrid;
        let c = &h.cfg;
        let fixed = c.remap_cycles + LINES_PER_PAGE * c.clflush_cycles;
        Utility {
            lat: latencies(h),
            migrate_cost: h.page_copy_cycles(NVM, DRAM) + h.spec(NVM).write_latency + fixed,
            writeback_cost: h.page_copy_cycles(DRAM, NVM) + c.shootdown_cycles + fixed,
        }
    }

    /// Drop the copies of pages in `[start, end)` no longer mapped where they were cached.
    fn drop_unmapped(&mut self, os: &mut Os, m: &mut RainbowMemory, start: u64, end: u64) {
        for (pfn, c) in m.cached_in(start, end) {
            if !holds(os, c.va, pfn) {
                m.uncache(c.dram);
                m.hybrid.two_stage().expect("Rainbow counts in two stages").forget_dram(c.dram);
                self.u.lists.remove(c.dram);
                os.free_frame(c.dram);
                m.hybrid.cycles.remap += m.hybrid.cfg.remap_cycles;
                self.dropped += 1;
            }
        }
    }

    fn interval_end(&mut self, cx: &mut Cx<'_>, m: &mut RainbowMemory) -> Result<(), SimError> {
        let (small, written) = m.hybrid.two_stage().expect("Rainbow counts in two stages").take(self.top);
        for d in written {
            if m.original_of(d).is_some() {
                self.u.lists.mark_dirty(d);
            }
        }
        let u = Self::utility(m);
        let mut cands = Vec::new();
        for c in small {
            let b = u.benefit(c.reads, c.writes);
            if !m.is_cached(c.pfn) && self.u.threshold.passes(b) {
                cands.push((b, c.pfn));
            }
        }
        let mut mover = Cacher { cx, m, va: 0, flushed: 0, pointers: 0, restores: 0 };
        let r = self.u.place(cands, u.writeback_cost, &mut mover);
        self.dirty_flushed += mover.flushed;
        self.pointer_writes += mover.pointers;
        self.restores += mover.restores;
        r
    }
}

/// Whether the virtual 4KB page `va` is still in the NVM superpage around frame `pfn`.
fn holds(os: &Os, va: u64, pfn: u64) -> bool {
    os.lookup(va) == Some((pfn & !511, PageSize::Size2M))
}

/// Rainbow's moves. Candidates are NVM frames, DRAM pages their copies' frames.
struct Cacher<'a, 'b> {
    cx: &'a mut Cx<'b>,
    m: &'a mut RainbowMemory,
    /// The prepared candidate's virtual page.
    va: u64,
    flushed: u64,
    pointers: u64,
    restores: u64,
}

impl Mover for Cacher<'_, '_> {
    type Error = SimError;

    fn prepare(&mut self, pfn: u64) -> bool {
        let sp = pfn & !511;
        let Some(spva) = self.m.hybrid.page_of(sp) else {
            return false;
        };
        self.va = spva + ((pfn - sp) << 12);
        holds(self.cx.os, self.va, pfn) && !self.m.is_cached(pfn)
    }

    fn promote(&mut self, pfn: u64) -> Result<Option<u64>, SimError> {
        let Some(dram) = self.cx.os.alloc_frame(DRAM) else {
            return Ok(None);
        };
        let h = &mut self.m.hybrid;
        self.flushed += h.flush_page(pfn, self.cx.caches);
        h.copy(NVM, DRAM, LINES_PER_PAGE);
        h.cycles.remap += h.cfg.remap_cycles;
        let w = self.m.cache(pfn, dram, self.va);
        self.m.hybrid.cycles.migration += w;
        self.pointers += 1;
        Ok(Some(dram))
    }

    fn demote(&mut self, dram: u64, dirty: bool) -> Result<Demoted, SimError> {
        let Some((pfn, c)) = self.m.uncache(dram) else {
            return Ok(Demoted::Stale);
        };
        let h = &mut self.m.hybrid;
        let flushed = h.flush_page(dram, self.cx.caches);
        self.flushed += flushed;
        // (The copy's frame may be reused at once: its flushed lines do not make the next copy
        // there dirty.)
        h.two_stage().expect("Rainbow counts in two stages").forget_dram(dram);
        self.cx.os.free_frame(dram);
        if !holds(self.cx.os, c.va, pfn) {
            return Ok(Demoted::Stale);
        }
        let dirty = dirty || flushed > 0;
        let h = &mut self.m.hybrid;
        if dirty {
            h.copy(DRAM, NVM, LINES_PER_PAGE);
        } else {
            h.cycles.migration += h.meta(NVM, true);
            self.restores += 1;
        }
        h.cycles.shootdown += h.cfg.shootdown_cycles;
        h.cycles.remap += h.cfg.remap_cycles;
        self.cx.inval.push(Invalidation::Page4K { asid: self.cx.os.asid(), va: c.va });
        Ok(if dirty { Demoted::Dirty } else { Demoted::Clean })
    }
}

impl EpochController for RainbowMigration {
    fn name(&self) -> &str {
        "rainbow"
    }
    fn period(&self) -> Period {
        Period::Instructions(self.check)
    }
    fn run(&mut self, cx: &mut EpochCx<'_>) -> Result<(), SimError> {
        let EpochCx { os, caches, inval, backend, instructions, walk_cycles, .. } = cx;
        let Some(m) = backend.downcast_mut::<RainbowMemory>() else {
            return Err(SimError::Invalid("hybrid.migration = \"rainbow\" needs Rainbow's memory backend".into()));
        };
        if !self.u.clock.due(m.hybrid.time_cycles(*instructions, *walk_cycles)) {
            return Ok(());
        }
        self.interval_end(&mut Cx { os, caches, inval }, m)
    }
    fn invalidating(&mut self, cx: &mut EpochCx<'_>) -> Result<(), SimError> {
        let Some(m) = cx.backend.downcast_mut::<RainbowMemory>() else {
            return Ok(());
        };
        for i in 0..cx.inval.len() {
            let (start, end) = match cx.inval[i] {
                Invalidation::Range { start, end, .. } => (start, end),
                Invalidation::All => (0, u64::MAX),
                Invalidation::Page4K { va, .. } => (va, va + 4096),
            };
            self.drop_unmapped(cx.os, m, start, end);
        }
        Ok(())
    }
}

impl Counters for RainbowMigration {
    fn counters(&self, out: &mut dyn Sink) {
        self.u.report(out);
        let u = &self.u;
        out.put(format_args!("shootdowns"), u.demotions_clean + u.demotions_dirty);
        out.put(format_args!("bytes_copied"), (u.promotions + u.demotions_dirty) * 4096);
        out.put(format_args!("dirty_lines_flushed"), self.dirty_flushed);
        out.put(format_args!("pointer_writes"), self.pointer_writes);
        out.put(format_args!("pointer_restores"), self.restores);
        out.put(format_args!("dropped_unmapped"), self.dropped);
    }
}
