//! The Mach machine's own loop over a range of accesses ([`crate::sim::engine`]'s
//! `Variant::DIRECT`): each access translated by the software-managed TLB (a hit inline, the
//! miss handlers out of line), then its data access through the caches. The counts of the hit
//! path are kept in locals and added at the range's end; when the caches are the configs'
//! single direct-mapped level ([`Caches::is_direct`]), data accesses and handler loads probe it
//! directly (mem/direct.rs), counted in batches. Nothing else is specialised: the counts are
//! those of the general path (tests/mach_frozen.rs).

use super::{MachHandler, KSEG0, KSEG2, L1K};
use crate::mem::backend::Backend;
use crate::mem::Caches;
use crate::mmu::walker::MissCx;
use crate::os::SimError;

/// What the hit path counts during a range.
#[derive(Default)]
struct Local {
    tlb_hits: u64,
    unmapped: u64,
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
        self.direct_caches = cx.caches.is_direct();
        if !self.pending.is_empty() {
            self.run_pending(cx);
        }
        let mut n = Local::default();
        let r = match (DATA, self.direct_caches) {
            (true, true) => self.accesses::<true, true, B>(cx, addr, kind, va_mask, &mut n),
            (true, false) => self.accesses::<true, false, B>(cx, addr, kind, va_mask, &mut n),
            (false, _) => self.accesses::<false, false, B>(cx, addr, kind, va_mask, &mut n),
        };
        *data_cycles += n.data_cycles;
        self.settle(&n, cx.caches);
        r
    }

    /// The loop of [`MachHandler::run`]; `DIRECT`: the caches are one direct-mapped level.
    #[inline(always)]
    fn accesses<const DATA: bool, const DIRECT: bool, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        addr: &[u64],
        kind: &[u8],
        va_mask: u64,
        n: &mut Local,
    ) -> Result<(), SimError> {
        // (The address space changes only at side events, between ranges.)
        let tag = self.tag;
        let (hit_latency, dram) = cx.caches.direct_latencies();
        for (&a, &k) in addr.iter().zip(kind) {
            let va = a & va_mask;
            let pfn = self.translate(cx, va, tag, n)?;
            if !DATA {
                continue;
            }
            let pa = (pfn << 12) | (va & 0xFFF);
            let write = k == 1;
            if DIRECT {
                // SAFETY: `DIRECT` only when the caches are direct (`run`).
                let hit = unsafe { cx.caches.probe_direct(pa) };
                n.data[!hit as usize] += 1;
                n.data_cycles += if hit { hit_latency } else { cx.backend.access(pa, write, false, dram) };
                if B::HOOKS {
                    cx.backend.data(pa, write, !hit, cx.caches);
                }
            } else {
                let (hit, lat) = cx.caches.access(pa, 0, false);
                let miss = hit == cx.caches.levels.len();
                n.data_cycles += if miss { cx.backend.access(pa, write, false, lat) } else { lat };
                if B::HOOKS {
                    cx.backend.data(pa, write, miss, cx.caches);
                }
            }
        }
        Ok(())
    }

    /// The frame of `va` in the space of tag `tag`: the TLB (a hit counted in `n`), else the
    /// miss handler of its kind; kseg0 is unmapped.
    #[inline(always)]
    fn translate<B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        va: u64,
        tag: u64,
        n: &mut Local,
    ) -> Result<u64, SimError> {
        if va < KSEG0 {
            let key = Self::key(va, tag);
            return match self.tlb.find(key) {
                Some(s) => {
                    n.tlb_hits += 1;
                    Ok(self.tlb.pfn_at(s))
                }
                None => {
                    self.tlb.misses += 1;
                    self.l1u(cx, va, key)
                }
            };
        }
        if va < KSEG2 {
            n.unmapped += 1;
            return Ok((va - KSEG0) >> 12);
        }
        Ok(match self.tlb.find(Self::key(va, 0)) {
            Some(s) => {
                n.tlb_hits += 1;
                self.tlb.pfn_at(s)
            }
            None => {
                self.tlb.misses += 1;
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
        let mut n = Local::default();
        let r = self.translate(cx, va, self.tag, &mut n);
        self.settle(&n, cx.caches);
        r
    }

    /// Add the counts of `n` (and the handler's loads through a direct-mapped level) to the
    /// handler's and the caches'.
    fn settle(&mut self, n: &Local, caches: &mut Caches) {
        self.tlb.hits += n.tlb_hits;
        self.unmapped += n.unmapped;
        if !self.direct_caches {
            return;
        }
        for (h, (&d, k)) in n.data.iter().zip(&mut self.direct_loads).enumerate() {
            caches.add_accesses(false, 0, h, d);
            self.loads_at[h] += *k;
            caches.add_accesses(true, 0, h, *k);
            *k = 0;
        }
    }

    /// A handler's load of physical address `pa` through the caches (directly when they are one
    /// direct-mapped level; counted by level); its latency.
    #[inline(always)]
    pub(super) fn load<B: Backend>(&mut self, cx: &mut MissCx<'_, B>, pa: u64) -> u64 {
        if self.direct_caches {
            // SAFETY: `direct_caches` only when the caches are direct (`run`).
            let hit = unsafe { cx.caches.probe_direct(pa) };
            self.direct_loads[!hit as usize] += 1;
            let (hit_latency, dram) = cx.caches.direct_latencies();
            return if hit { hit_latency } else { cx.backend.access(pa, false, true, dram) };
        }
        let (hit, lat) = cx.walk_load(pa);
        self.loads_at[hit] += 1;
        lat
    }
}
