//! The interface every miss handler implements, and what it works with.

use crate::mem::backend::Backend;
use crate::mem::Caches;
use crate::mmu::{Mmu, Shape};
use crate::os::{Invalidation, Os, SimError};
use crate::stats::Counters;
use crate::units::PageSize;
use xlat_trace::SideBody;

/// What a miss handler works with: the OS model (translations, faults), the caches and memory
/// its loads go through, the MMU (a software handler's loads are themselves translated) and
/// where the invalidations a fault asks for go.
pub struct MissCx<'a, B> {
    pub os: &'a mut Os,
    pub caches: &'a mut Caches,
    pub backend: &'a mut B,
    pub mmu: &'a mut Mmu,
    pub inval: &'a mut Vec<Invalidation>,
}

impl<B> MissCx<'_, B> {
    /// Fault `va` in; perform at once any invalidation the fault asked for (a reclaim policy
    /// evicting pages) on the TLBs, and return whether there was one (the handler then drops
    /// what it caches of the page tables).
    #[inline(always)]
    pub fn fault(&mut self, va: u64) -> Result<bool, SimError> {
        // (The context's fields passed one by one: a call taking the context itself would
        // make the compiler keep it in memory on every miss, not only on faults.)
        fault(self.os, self.mmu, self.inval, va)
    }

    /// The OS's mapping of `va` (first frame, page size) and whether a fault on the way
    /// invalidated mappings (the handler then drops what it caches of the page tables): a page
    /// not mapped yet is faulted in first, `on_fault` called before (the handler's count of
    /// faulting misses). Every miss handler starts here.
    #[inline(always)]
    pub fn mapping(&mut self, va: u64, on_fault: impl FnOnce()) -> Result<(u64, PageSize, bool), SimError> {
        if let Some((pfn, size)) = self.os.translate(va) {
            return Ok((pfn, size, false));
        }
        on_fault();
        let invalidated = self.fault(va)?;
        let (pfn, size) = self.os.translate(va).expect("the fault mapped the page");
        Ok((pfn, size, invalidated))
    }
}

impl<B: Backend> MissCx<'_, B> {
    /// A handler's load of physical address `pa`: through the caches from the walker's first
    /// level, then memory. Returns the level that served it (`caches.levels.len()`: memory) and
    /// its latency.
    #[inline(always)]
    pub fn walk_load(&mut self, pa: u64) -> (usize, u64) {
        let from = self.caches.walk_first();
        let (hit, lat) = self.caches.access(pa, from, true);
        let lat = if hit == self.caches.levels.len() { self.backend.access(pa, false, true, lat) } else { lat };
        (hit, lat)
    }
}

impl<B: Backend> MissCx<'_, B> {
    /// A walk load at physical address `pa` through the caches, compiled for the loop's shape
    /// `S` (without caches: straight to memory at `memory.dram_latency`): the level that served
    /// it (`caches.levels.len()`: memory) and its latency. The nested and hashed walkers' loads.
    #[inline(always)]
    pub fn walk_load_as<S: Shape>(&mut self, pa: u64) -> (usize, u64) {
        let n = self.caches.levels.len();
        let (hit, lat) =
            if n == 0 { (0, self.caches.dram_latency) } else { self.caches.access_walk_as(S::LANES.caches, pa) };
        let lat = if hit == n { self.backend.access(pa, false, true, lat) } else { lat };
        (hit, lat)
    }
}

#[cold]
#[inline(never)]
fn fault(os: &mut Os, mmu: &mut Mmu, inval: &mut Vec<Invalidation>, va: u64) -> Result<bool, SimError> {
    os.fault(va, inval)?;
    if inval.is_empty() {
        return Ok(false);
    }
    mmu.invalidate(inval);
    inval.clear();
    Ok(true)
}

/// A handler of last-level TLB misses.
pub trait MissHandler: Counters + Send {
    /// Whether the handler translates every access itself (it holds the machine's only TLB:
    /// `[mach]`, no page TLBs in the MMU): each range of accesses then runs through
    /// [`MissHandler::run_direct`], with no first-level probe, memo, deep probe or fill.
    const TRANSLATES_ALL: bool = false;

    /// The handler's own loop when [`MissHandler::TRANSLATES_ALL`]: translate the accesses
    /// `addr` (kinds `kind`, addresses masked with `va_mask`) and, if `DATA`, access their data
    /// through the caches, adding its latency to `data_cycles`; the counts complete even on an
    /// error.
    #[inline(always)]
    fn run_direct<const DATA: bool, B: Backend>(
        &mut self,
        _cx: &mut MissCx<'_, B>,
        _addr: &[u64],
        _kind: &[u8],
        _va_mask: u64,
        _data_cycles: &mut u64,
    ) -> Result<(), SimError> {
        unreachable!("only a handler that translates every access runs its own loop")
    }

    /// Translate `va` (role `r`: 0 data, 1 instruction) after every TLB missed: the first frame
    /// and the size of its page, faulting the page in first if it is not mapped, with the
    /// miss's loads and cycles counted. The caller fills the TLBs.
    fn handle<S: Shape, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        r: usize,
        va: u64,
    ) -> Result<(u64, PageSize), SimError>;

    /// Misses handled (every last-level TLB miss is one).
    fn misses(&self) -> u64;

    /// Drop what the handler caches of the page tables (after invalidations, or a switch of
    /// address space without ASIDs).
    fn flush(&mut self) {}

    /// The OS changed or removed the mappings `inval` names (the TLBs have dropped them):
    /// drop what the handler caches of the page tables (a hashed page table also removes the
    /// entries of the pages that went).
    fn invalidated(&mut self, _inval: &[Invalidation]) {
        self.flush()
    }

    /// Host prefetch of what a miss of `va` will read (no simulated effect).
    #[inline(always)]
    fn prefetch(&self, _os: &Os, _caches: &Caches, _va: u64) {}

    /// Whether the handler benefits from [`MissHandler::prefetch`].
    fn prefetches(&self) -> bool {
        false
    }

    /// At the end of every range of accesses: hand counts over to the caches.
    fn settle(&mut self, _caches: &mut Caches) {}

    /// Whether every structure the loop of geometry `S` probes unchecked has its class.
    fn has_shape<S: Shape>(&self) -> bool {
        S::LANES.psc == 0
    }

    /// A side event (IPC, context switch, phase) reached the handler.
    fn side(&mut self, _body: &SideBody) {}

    /// The handler's invariants; the first violated one.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }

    /// Cycles spent on misses (the walk cycles of the time estimate, `C`).
    fn cycles(&self) -> u64;

    /// Walks per 2MB region (`sim.miss_profile`), if kept.
    fn miss_profile(&self) -> Option<Vec<(u64, u64)>> {
        None
    }

    /// The walk log (`virt.walk_log`), if kept: records of the first walks' loads.
    fn walk_log(&self) -> Option<Vec<[u64; 5]>> {
        None
    }
}
