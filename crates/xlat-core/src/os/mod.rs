//! The OS model: address spaces with VMAs built from the trace's syscalls, physical memory in
//! zones managed by a buddy allocator, radix page tables in that memory, faults, and the
//! policies (page size, allocation timing, range creation, tiering, reclaim, metadata). See
//! `docs/os-model.md` for what is and is not modelled.
//!
//! [`Os`] is the whole interface the rest of the simulator uses: the MMU asks it for page
//! tables to walk ([`Os::tables`], [`Os::translate`]), reports faults and side events to it, and
//! performs the invalidations it returns. It depends on nothing of the MMU or the caches.
//!
//! Files: `kernel.rs` (memory, spaces, frame allocation, reclaim), `fault.rs` (faults, mapping,
//! release, splits, eager population, migration), `syscalls.rs`, `mosaic.rs` (mosaic pools and
//! relocation), `space.rs` (VMAs), `ranges.rs` (range tables), `buddy.rs`, `pagetable.rs`,
//! `policy/`, and the leaves `types.rs` and `counters.rs`.

pub mod buddy;
mod check;
mod contiguity;
mod counters;
mod fault;
mod kernel;
mod mosaic;
pub mod pagetable;
pub mod policy;
mod ranges;
pub mod rangetree;
mod space;
mod syscalls;
mod types;

#[cfg(test)]
mod tests;

pub use contiguity::Contiguity;
pub use counters::OsStats;
pub use mosaic::{ANON_POOL_BASE, FILE_POOL_BASE, HEAP_POOL_BASE, MAX_POOL};
pub use policy::Policies;
pub use types::{Invalidation, PoolKind, Purpose, Range, SimError, Vma, VmaKind};

use crate::config::{Config, Policy};
use crate::units::PageSize;
use counters::Groups;
use kernel::Kernel;
use mosaic::Mosaic;
use pagetable::PageTables;
use xlat_trace::Syscall;

/// The OS of the simulated machine.
pub struct Os {
    k: Kernel,
    mosaic: Option<Mosaic>,
    /// The optional counter groups this run reports.
    groups: Groups,
}

impl Os {
    /// The OS `cfg` describes, with the policies it selects.
    pub fn new(cfg: &Config) -> Result<Os, SimError> {
        Os::with_policies(cfg, Policies::from_config(cfg))
    }

    /// The OS `cfg` describes, running `policies` instead of the ones it selects (any
    /// implementation of the policy traits, installed before the run).
    pub fn with_policies(cfg: &Config, policies: Policies) -> Result<Os, SimError> {
        let mosaic = match (&cfg.layout, cfg.os.policy) {
            (Some(l), Policy::Mosaic) => Some(Mosaic::new(l, cfg.os.pools_at)?),
            (Some(l), _) => {
                Mosaic::new(l, None)?; // the same check of the layout's pools
                None
            }
            (None, _) => None,
        };
        let groups = Groups {
            eager: !policies.timing.is_default(),
            promote: policies.timing.promotes() && policies.page_size.name() != "4k",
            ranges: policies.ranges.threshold().is_some(),
            zones: cfg.memory.kinds.len() > 1,
            reclaim: !policies.reclaim.is_default(),
            metadata: policies.metadata.companion_level().is_some(),
        };
        let mut os = Os { k: Kernel::new(cfg, policies), mosaic, groups };
        os.switch_to(0)?;
        os.k.stats.context_switches = 0;
        Ok(os)
    }

    // ------------------------------------------------------------------ for the walker

    /// Page-table levels (4 or 5).
    #[inline(always)]
    pub fn levels(&self) -> usize {
        self.k.levels
    }
    /// The current address space's root table (an index into [`Os::tables`]).
    #[inline(always)]
    pub fn root(&self) -> u32 {
        self.k.root()
    }
    pub fn asid(&self) -> u32 {
        self.k.asid()
    }
    /// The page tables of every address space, read-only: `table_pa`, `entry`, `pt_of`,
    /// `prefetch`, `companion_pa`.
    #[inline(always)]
    pub fn tables(&self) -> &PageTables {
        &self.k.pt
    }
    /// The current space's translation of `va` (first frame, page size), through the region
    /// memo: what a walk finds.
    #[inline(always)]
    pub fn translate(&mut self, va: u64) -> Option<(u64, PageSize)> {
        self.k.translate(va)
    }
    /// Whether a page larger than 4KB was ever mapped in this run (in any space).
    #[inline(always)]
    pub fn maps_huge(&self) -> bool {
        self.k.mapped_huge
    }
    /// The range translation of the current space containing `va` (`os.ranges`).
    pub fn range_of(&self, va: u64) -> Option<Range> {
        self.k.space().ranges.containing(va)
    }
    /// The largest range translation of the current space, and the generation of its range
    /// table (it moves on at every change of the table): what an ideal direct segment holds.
    pub fn largest_range(&self) -> (Option<Range>, u64) {
        let t = &self.k.space().ranges;
        (t.largest(), t.generation())
    }
    /// The generation of the current space's range table (see [`Os::largest_range`]).
    #[inline]
    pub fn range_generation(&self) -> u64 {
        self.k.space().ranges.generation()
    }

    /// A range-table walk of `va` in the current space: the physical addresses of the B-tree
    /// nodes it visits, root first, into `out`; whether it found a range (`os/rangetree.rs`).
    pub fn range_walk(&mut self, va: u64, out: &mut Vec<u64>) -> Result<bool, SimError> {
        self.k.range_walk(va, out)
    }

    // ------------------------------------------------------------------ events

    /// Handle a page fault at simulated address `va` (not mapped). Invalidations it causes
    /// (pages reclaimed to make room) are pushed to `inv`.
    pub fn fault(&mut self, va: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        self.k.fault(va, inv)
    }

    /// Apply one syscall of the current address space; invalidations go to `inv`.
    pub fn syscall(&mut self, s: &Syscall, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        if !self.k.count_syscall(s) {
            return Ok(());
        }
        if let Some(m) = &mut self.mosaic {
            if let Some(r) = m.syscall(s, &mut self.k, inv) {
                return r;
            }
        }
        self.k.syscall(s, inv)
    }

    /// Switch to address space `asid`, creating it on first use. Returns whether it changed.
    pub fn switch_to(&mut self, asid: u32) -> Result<bool, SimError> {
        let pools = self.mosaic.as_ref().map(|m| m.pool_vmas());
        let changed = self.k.switch_to(asid, pools.as_ref().map_or(&[][..], |p| &p[..]))?;
        if let Some(m) = &mut self.mosaic {
            m.switch_to(self.k.cur);
        }
        Ok(changed)
    }

    /// Move the mapped 4KB or 2MB page at `va` of the current space to frames of memory zone
    /// `zone` (`memory.kinds` index); its invalidation goes to `inv`. False: not a mapped 4KB or
    /// 2MB page, already in that zone, or no free block of its size there.
    pub fn migrate(&mut self, va: u64, zone: usize, inv: &mut Vec<Invalidation>) -> Result<bool, SimError> {
        self.k.migrate(va, zone, inv)
    }

    /// One 4KB frame of memory zone `zone` that no page maps, counted in use (a memory-side
    /// cache's frame: Rainbow's DRAM copies of NVM pages); None when the zone has none free.
    pub fn alloc_frame(&mut self, zone: usize) -> Option<u64> {
        self.k.alloc_frame(zone)
    }

    /// Give back a frame of [`Os::alloc_frame`].
    pub fn free_frame(&mut self, pfn: u64) {
        self.k.free_frame(pfn)
    }

    /// The number of memory zones (`memory.kinds`, or 1).
    pub fn zones(&self) -> usize {
        self.k.phys.zones()
    }

    // ------------------------------------------------------------------ mosaic relocation

    /// Whether trace addresses are relocated into simulator-placed mosaic pools (mosaic
    /// without `os.pools_at`); otherwise [`Os::relocate`] is the identity.
    pub fn relocates(&self) -> bool {
        self.mosaic.as_ref().is_some_and(|m| m.relocates())
    }

    /// Trace address -> simulated address (identity unless a mosaic pool relocates it).
    #[inline(always)]
    pub fn relocate(&mut self, va: u64) -> u64 {
        match &mut self.mosaic {
            Some(m) => m.relocate(va),
            None => va,
        }
    }

    /// Relocate a run of accesses that no side event separates: `out` (cleared first) gets
    /// `relocate(a)` for each `a` of `trace_addrs`.
    pub fn relocate_run(&mut self, trace_addrs: &[u64], out: &mut Vec<u64>) {
        match &mut self.mosaic {
            Some(m) => m.relocate_run(trace_addrs, out),
            None => {
                out.clear();
                out.extend_from_slice(trace_addrs);
            }
        }
    }

    // ------------------------------------------------------------------ reports

    pub fn policy_name(&self) -> &'static str {
        self.k.policies.page_size.name()
    }
    pub fn fragmentation(&self) -> buddy::Fragmentation {
        self.k.phys.fragmentation()
    }
    /// The memory zone (`memory.kinds` index) frame `pfn` is in.
    pub fn zone_of(&self, pfn: u64) -> usize {
        self.k.phys.zone_of(pfn)
    }
    /// The OS counters (`os.*`; the optional ones are zero unless their policy is installed).
    pub fn stats(&self) -> OsStats {
        let mut s = self.k.stats;
        s.pool_overflows = self.mosaic.as_ref().map_or(0, |m| m.pool_overflows());
        s
    }
    /// VMAs of the current address space (for tests and reports).
    pub fn vmas(&self) -> Vec<Vma> {
        self.k.space().vmas().copied().collect()
    }
    /// Range translations of the current address space.
    pub fn ranges(&self) -> Vec<Range> {
        self.k.space().ranges.iter().copied().collect()
    }
    /// The ranges every address space could form now (`sim.contiguity`; see `contiguity.rs`).
    pub fn contiguity(&self) -> Contiguity {
        contiguity::measure(&self.k.pt, self.k.levels, &self.k.spaces)
    }
    /// Check the OS model's invariants (`check.rs`: frames in use = mapped pages + table pages,
    /// buddy conservation, disjoint VMAs around every mapped page); the first violation. A walk
    /// of every page table: for tests and fuzzing, not for every run.
    pub fn check(&self) -> Result<(), String> {
        self.k.check()
    }
    /// Software lookup of the current space's mapping of simulated `va` (a plain walk).
    pub fn lookup(&self, va: u64) -> Option<(u64, PageSize)> {
        self.k.lookup(va)
    }
}

impl crate::stats::Counters for Os {
    fn counters(&self, out: &mut dyn crate::stats::Sink) {
        self.stats().report(self.groups, self.k.range_totals(), out);
    }
}
