//! The Mach machine's own loop over a range of accesses ([`crate::sim::engine`]'s
//! `MissHandler::TRANSLATES_ALL`): each access translated by the software-managed TLB (a hit inline, the
//! miss handlers out of line), then its data access through the caches. The counts of the hit
//! path are kept in locals and added at the range's end; when the caches are the configs'
//! single direct-mapped level ([`Caches::direct`]), data accesses and handler loads probe it
//! directly (mem/direct.rs), counted in batches. Nothing else is specialised: the counts are
//! those of the general path (tests/mach_frozen.rs).

use super::{MachHandler, KSEG0, KSEG2, L1K};
use crate::mem::backend::Backend;
use crate::mem::direct::Direct;
use crate::mem::Caches;
use crate::mmu::walker::MissCx;
use crate::os::SimError;

/// What the loop counts during a range (the TLB's hits are what its accesses to mapped pages
/// did not miss: none counted on the hit path).
#[derive(Default)]
struct Local {
    /// Accesses translated (the last one included when it failed).
    accesses: u64,
    /// Accesses to kseg0, and the loop's TLB misses.
    unmapped: u64,
    misses: u64,
    /// Data accesses through a direct-mapped level: hits and misses.
    data: [u64; 2],
    data_cycles: u64,
}

impl MachHandler {
    /// Translate the accesses `addr` (kinds `kind`, addresses masked with `va_mask`) and, if
    /// `DATA`, access their data through the caches, the latency added to `data_cycles`. The
    /// counts are complete when it returns, even with an error.
    pub fn run<const DATA: bool, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        addr: &[u64],
        kind: &[u8],
        va_mask: u64,
        data_cycles: &mut u64,
    ) -> Result<(), SimError> {
        if addr.is_empty() {
            return Ok(());
        }
        self.direct_level = cx.caches.direct();
        if !self.pending.is_empty() {
            self.run_pending(cx);
        }
        let mut n = Local::default();
        let r = match (DATA, self.direct_level) {
            (true, Some(d)) => self.accesses::<true, true, B>(cx, addr, kind, va_mask, d, &mut n),
            (true, None) => self.accesses::<true, false, B>(cx, addr, kind, va_mask, Direct::default(), &mut n),
            (false, _) => self.accesses::<false, false, B>(cx, addr, kind, va_mask, Direct::default(), &mut n),
        };
        *data_cycles += n.data_cycles;
        self.settle(&n, cx.caches);
        r
    }

    /// The loop of [`MachHandler::run`]; `DIRECT`: the caches are one direct-mapped level, `d`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn accesses<const DATA: bool, const DIRECT: bool, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        addr: &[u64],
        kind: &[u8],
        va_mask: u64,
        d: Direct,
        n: &mut Local,
    ) -> Result<(), SimError> {
        // (The address space changes only at side events, between ranges.)
        let tag = self.tag;
        // Data accesses through the direct-mapped level that missed it, and their latency when
        // the backend's is not the constant DRAM one.
        let (mut data_misses, mut data_cycles) = (0, 0);
        let mut r = Ok(());
        let mut it = addr.iter().zip(kind);
        for (&a, &k) in it.by_ref() {
            let va = a & va_mask;
            let pfn = match self.translate::<DIRECT, B>(cx, d, va, tag, n) {
                Ok(pfn) => pfn,
                Err(e) => {
                    r = Err(e);
                    break;
                }
            };
            if !DATA {
                continue;
            }
            let pa = (pfn << 12) | (va & 0xFFF);
            let write = k == 1;
            if DIRECT {
                // SAFETY: `DIRECT` only with `d` the caches' direct level (`run`).
                let hit = unsafe { cx.caches.probe_direct(&d, pa) };
                data_misses += !hit as u64;
                if !B::DRAM_ONLY {
                    data_cycles += if hit { d.hit } else { cx.backend.access(pa, write, false, d.dram) };
                }
                if B::HOOKS {
                    cx.backend.data(pa, write, !hit, cx.caches);
                }
            } else {
                let (hit, lat) = cx.caches.access(pa, 0, false);
                let miss = hit == cx.caches.levels.len();
                data_cycles += if miss { cx.backend.access(pa, write, false, lat) } else { lat };
                if B::HOOKS {
                    cx.backend.data(pa, write, miss, cx.caches);
                }
            }
        }
        // (The failed access included.)
        let done = (addr.len() - it.len()) as u64;
        n.accesses = done;
        if DATA && DIRECT {
            // (A failed access made no data access.)
            let data = done - r.is_err() as u64;
            n.data = [data - data_misses, data_misses];
            if B::DRAM_ONLY {
                data_cycles = n.data[0] * d.hit + data_misses * d.dram;
            }
        }
        n.data_cycles = data_cycles;
        r
    }

    /// The frame of `va` in the space of tag `tag`: the TLB (a miss counted in `n`), else the
    /// miss handler of its kind; kseg0 is unmapped. `DIRECT`: the caches are one direct-mapped
    /// level, `d`.
    #[inline(always)]
    fn translate<const DIRECT: bool, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        d: Direct,
        va: u64,
        tag: u64,
        n: &mut Local,
    ) -> Result<u64, SimError> {
        if va < KSEG0 {
            let key = Self::key(va, tag);
            return match self.tlb.get(key) {
                Some(pfn) => Ok(pfn),
                None => {
                    n.misses += 1;
                    self.l1u::<DIRECT, B>(cx, d, va, key)
                }
            };
        }
        if va < KSEG2 {
            n.unmapped += 1;
            return Ok((va - KSEG0) >> 12);
        }
        Ok(match self.tlb.get(Self::key(va, 0)) {
            Some(pfn) => pfn,
            None => {
                n.misses += 1;
                self.generic(cx, L1K, va, false)
            }
        })
    }

    /// [`crate::mmu::walker::MissHandler::handle`] of one access (the general loops' way in; the Mach loop runs
    /// [`MachHandler::run`]).
    pub(super) fn handle_one<B: Backend>(&mut self, cx: &mut MissCx<'_, B>, va: u64) -> Result<u64, SimError> {
        if !self.pending.is_empty() {
            self.run_pending(cx);
        }
        let mut n = Local { accesses: 1, ..Local::default() };
        let r = self.translate::<false, B>(cx, Direct::default(), va, self.tag, &mut n);
        self.settle(&n, cx.caches);
        r
    }

    /// Add the counts of `n` (and the handler's loads through a direct-mapped level) to the
    /// handler's and the caches'.
    fn settle(&mut self, n: &Local, caches: &mut Caches) {
        self.tlb.hits += n.accesses - n.unmapped - n.misses;
        self.tlb.misses += n.misses;
        self.unmapped += n.unmapped;
        if self.direct_level.is_none() {
            return;
        }
        for (h, (&d, k)) in n.data.iter().zip(&mut self.direct_loads).enumerate() {
            caches.add_accesses(false, 0, h, d);
            self.loads_at[h] += *k;
            caches.add_accesses(true, 0, h, *k);
            *k = 0;
        }
    }

    /// [`MachHandler::load`] from the loop: `DIRECT`, the caches are one direct-mapped level, `d`.
    #[inline(always)]
    pub(super) fn load_in<const DIRECT: bool, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        d: Direct,
        pa: u64,
    ) -> u64 {
        if !DIRECT {
            return self.load(cx, pa);
        }
        // SAFETY: `DIRECT` only with `d` the caches' direct level (`run`).
        let hit = unsafe { cx.caches.probe_direct(&d, pa) };
        self.direct_loads[!hit as usize] += 1;
        if hit {
            d.hit
        } else {
            cx.backend.access(pa, false, true, d.dram)
        }
    }

    /// A handler's load of physical address `pa` through the caches (directly when they are one
    /// direct-mapped level; counted by level); its latency.
    #[inline(always)]
    pub(super) fn load<B: Backend>(&mut self, cx: &mut MissCx<'_, B>, pa: u64) -> u64 {
        if let Some(d) = self.direct_level {
            // SAFETY: `direct_level` is the caches' direct level (set by `run`).
            let hit = unsafe { cx.caches.probe_direct(&d, pa) };
            self.direct_loads[!hit as usize] += 1;
            return if hit { d.hit } else { cx.backend.access(pa, false, true, d.dram) };
        }
        let (hit, lat) = cx.walk_load(pa);
        self.loads_at[hit] += 1;
        lat
    }
}
