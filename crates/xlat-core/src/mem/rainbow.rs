//! Rainbow's memory controller (seed 003 sections III-D and III-E; `docs/rainbow.md`): the
//! hybrid memory (`mem/hybrid.rs`, with Rainbow's two-stage counters, `mem/twostage.rs`) plus
//!
//! - the *migration bitmap*, one bit per 4KB page of NVM: set while the page is cached in DRAM;
//! - the *pointer* to the DRAM copy, which Rainbow writes over the NVM page's first 8 bytes
//!   (here a map from the NVM frame to its copy, read at the cost of one NVM read);
//! - the *migration-bitmap cache* (8-way, 4000 entries of 512 bits, 9 cycles): the controller
//!   consults it before every NVM read (a last-level miss to NVM) and when it follows a pointer;
//!   a miss loads the superpage's 64-byte bitmap from DRAM; a superpage walk fills it.
//!
//! The loop asks [`Backend::remap`] about every translation (the four cases of section III-E):
//! a 4KB-TLB hit on a DRAM copy (cases 1 and 2: path 1, the DRAM frame, nothing more); a
//! superpage translation (case 3, a 2MB-TLB hit; case 4, a superpage walk) of an NVM 4KB page
//! whose bit is set: the bitmap-cache lookup and the pointer read (path 2), and the loop enters
//! the DRAM frame in the 4KB TLBs ("constructed on its first access", section III-F); else the
//! NVM frame (path 3), whose last-level misses consult the bitmap cache at the controller. The
//! migration controller (`designs/rainbow.rs`) caches and uncaches pages here.

use crate::array::{Replacement, SetAssoc};
use crate::config::Config;
use crate::mem::backend::{Backend, Via};
use crate::mem::hybrid::{HybridMemory, DRAM, NVM};
use crate::mem::Caches;
use crate::stats::{Counters, Sink};
use crate::units::PageSize;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};
use xlat_trace::SideBody;

/// A 4KB page of an NVM superpage cached in DRAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cached {
    /// The DRAM frame of the copy (what the NVM page's first 8 bytes point to).
    pub dram: u64,
    /// The virtual 4KB page it was cached for (a later translation of another page to the same
    /// NVM frame, after an unmap, does not follow the pointer).
    pub va: u64,
}

#[derive(Debug, Clone, Default)]
struct Stats {
    /// The four translation cases of section III-E (4KB-TLB hit/miss x 2MB-TLB hit/miss).
    cases: [u64; 4],
    /// Translations of other pages: 4KB pages that are not DRAM copies (outside superpages),
    /// superpages in DRAM, 1GB pages.
    other: u64,
    /// Case-1 translations whose 4KB entry was found below the superpage's level.
    below: u64,
    /// Pointers followed (path 2), and set bits whose page was not the one translated.
    remaps: u64,
    stale: u64,
    lookups: u64,
    misses: u64,
    walk_fills: u64,
    walk_fill_misses: u64,
    /// Copies made, and copies dropped after at least one access.
    copies_made: u64,
    copies_used_dropped: u64,
}

/// The backend.
#[derive(Debug, Clone)]
pub struct RainbowMemory {
    pub hybrid: HybridMemory,
    /// The first NVM frame.
    nvm_base: u64,
    /// The migration bitmap, over NVM frames; and which DRAM frames hold copies.
    bits: Vec<u64>,
    copy_bits: Vec<u64>,
    /// DRAM frames whose current copy has been accessed (a translation reached it: a 4KB TLB
    /// hit on the copy or a pointer followed), for `rainbow.copies_used`.
    used_bits: Vec<u64>,
    /// NVM frame -> its copy; DRAM frame -> NVM frame.
    cached: FxHashMap<u64, Cached>,
    copies: FxHashMap<u64, u64>,
    /// (virtual 4KB page, NVM frame) of every copy, to find the copies an unmap drops.
    by_va: BTreeSet<(u64, u64)>,
    /// The migration-bitmap cache: tags are physical superpage numbers.
    bitmap: SetAssoc,
    bitmap_cycles: u64,
    stats: Stats,
}

#[inline(always)]
fn bit(v: &[u64], i: u64) -> bool {
    v[(i / 64) as usize] >> (i % 64) & 1 != 0
}

#[inline(always)]
fn set_bit(v: &mut [u64], i: u64, on: bool) {
    let (w, m) = ((i / 64) as usize, 1u64 << (i % 64));
    v[w] = if on { v[w] | m } else { v[w] & !m };
}

impl RainbowMemory {
    /// The backend of `cfg` (`hybrid.migration = "rainbow"`, validated).
    pub fn new(cfg: &Config) -> RainbowMemory {
        let hybrid = HybridMemory::new(cfg);
        let h = &hybrid.cfg;
        let nvm_base = hybrid.dram_frames();
        let frames = cfg.memory.frames();
        let bitmap = SetAssoc::new_tags_only(
            h.bitmap_cache_entries as usize,
            h.bitmap_cache_ways as usize,
            Replacement::Lru,
            cfg.sim.seed,
        );
        RainbowMemory {
            nvm_base,
            bits: vec![0; (frames - nvm_base).div_ceil(64) as usize],
            copy_bits: vec![0; nvm_base.div_ceil(64) as usize],
            used_bits: vec![0; nvm_base.div_ceil(64) as usize],
            cached: FxHashMap::default(),
            copies: FxHashMap::default(),
            by_va: BTreeSet::new(),
            bitmap,
            bitmap_cycles: h.bitmap_cache_cycles,
            stats: Stats::default(),
            hybrid,
        }
    }

    /// A lookup of NVM frame `pfn`'s bitmap in the bitmap cache: its cycles (a miss adds the
    /// load of the 64-byte bitmap from DRAM), charged to the bitmap cycles.
    fn lookup(&mut self, pfn: u64) -> u64 {
        self.stats.lookups += 1;
        let mut c = self.bitmap_cycles;
        if !self.touch_bitmap(pfn) {
            self.stats.misses += 1;
            c += self.hybrid.meta(DRAM, false);
        }
        self.hybrid.cycles.bitmap += c;
        c
    }

    /// Bring superpage `pfn >> 9`'s bitmap into the bitmap cache; whether it was there.
    fn touch_bitmap(&mut self, pfn: u64) -> bool {
        let psn = pfn >> 9;
        let set = self.bitmap.set_of(psn);
        self.bitmap.access(set, psn).0
    }

    /// Whether NVM frame `pfn` is cached in DRAM (its bit is set).
    pub fn is_cached(&self, pfn: u64) -> bool {
        pfn >= self.nvm_base && bit(&self.bits, pfn - self.nvm_base)
    }

    /// NVM frame `pfn`'s copy, if cached.
    pub fn copy_of(&self, pfn: u64) -> Option<Cached> {
        self.cached.get(&pfn).copied()
    }

    /// The NVM frame DRAM frame `dram` is a copy of.
    pub fn original_of(&self, dram: u64) -> Option<u64> {
        self.copies.get(&dram).copied()
    }

    /// NVM frame `pfn` (the virtual page `va`) is now cached in DRAM frame `dram`: its bit is
    /// set and the pointer written over its first 8 bytes (one NVM line write, whose cycles are
    /// returned). The data copy and the `clflush` are the caller's.
    pub fn cache(&mut self, pfn: u64, dram: u64, va: u64) -> u64 {
        let i = pfn - self.nvm_base;
        set_bit(&mut self.bits, i, true);
        set_bit(&mut self.copy_bits, dram, true);
        set_bit(&mut self.used_bits, dram, false);
        self.stats.copies_made += 1;
        self.cached.insert(pfn, Cached { dram, va: va & !0xfff });
        self.copies.insert(dram, pfn);
        self.by_va.insert((va & !0xfff, pfn));
        self.hybrid.meta(NVM, true)
    }

    /// DRAM frame `dram` no longer caches its NVM page: the bit is cleared. Returns the NVM frame
    /// and the entry (None if `dram` held no copy).
    pub fn uncache(&mut self, dram: u64) -> Option<(u64, Cached)> {
        let pfn = self.copies.remove(&dram)?;
        let c = self.cached.remove(&pfn).expect("a copy has its page");
        self.by_va.remove(&(c.va, pfn));
        let i = pfn - self.nvm_base;
        set_bit(&mut self.bits, i, false);
        set_bit(&mut self.copy_bits, dram, false);
        self.stats.copies_used_dropped += bit(&self.used_bits, dram) as u64;
        Some((pfn, c))
    }

    /// The cached pages whose virtual page lies in `[start, end)`: (NVM frame, its copy), in
    /// address order.
    pub fn cached_in(&self, start: u64, end: u64) -> Vec<(u64, Cached)> {
        self.by_va.range((start, 0)..(end, 0)).map(|&(_, p)| (p, self.cached[&p])).collect()
    }

    /// The translation cases so far: [case 1, 2, 3, 4] (for tests and reports).
    pub fn cases(&self) -> [u64; 4] {
        self.stats.cases
    }
}

impl Backend for RainbowMemory {
    const HOOKS: bool = true;
    const REMAP: bool = true;

    #[inline]
    fn access(&mut self, pa: u64, write: bool, walk: bool, dram: u64) -> u64 {
        let lat = self.hybrid.access(pa, write, walk, dram);
        // Before an NVM data read, the controller checks the page's migration bit.
        if !walk && pa >> 12 >= self.nvm_base {
            return lat + self.lookup(pa >> 12);
        }
        lat
    }

    #[inline]
    fn data(&mut self, pa: u64, write: bool, llc_miss: bool, caches: &Caches) {
        self.hybrid.data(pa, write, llc_miss, caches)
    }

    #[inline]
    fn take_writebacks(&mut self) -> u64 {
        self.hybrid.take_writebacks()
    }

    /// A superpage walk brings the superpage's bitmap into the bitmap cache ("filled
    /// accompanying with a superpage TLB miss", section III-D): a miss loads it from DRAM.
    #[inline]
    fn walked(&mut self, va: u64, pfn: u64, size: PageSize) {
        self.hybrid.walked(va, pfn, size);
        if size == PageSize::Size2M && pfn >= self.nvm_base {
            self.stats.walk_fills += 1;
            if !self.touch_bitmap(pfn) {
                self.stats.walk_fill_misses += 1;
                self.hybrid.cycles.bitmap += self.hybrid.meta(DRAM, false);
            }
        }
    }

    #[inline]
    fn remap(&mut self, va: u64, pfn: u64, size: PageSize, via: Via) -> Option<u64> {
        match (size, via) {
            (PageSize::Size4K, Via::Tlb { superpage_held }) if pfn < self.nvm_base && bit(&self.copy_bits, pfn) => {
                self.stats.cases[if superpage_held { 0 } else { 1 }] += 1;
                set_bit(&mut self.used_bits, pfn, true);
                None
            }
            (PageSize::Size4K, Via::Below { cycles }) => {
                // (Case 1: the superpage's entry hit above.)
                self.stats.cases[0] += 1;
                self.stats.below += 1;
                self.hybrid.cycles.tlb4k += cycles;
                if pfn < self.nvm_base && bit(&self.copy_bits, pfn) {
                    set_bit(&mut self.used_bits, pfn, true);
                }
                None
            }
            (PageSize::Size2M, _) if pfn >= self.nvm_base => {
                self.stats.cases[if via == Via::Walk { 3 } else { 2 }] += 1;
                if !bit(&self.bits, pfn - self.nvm_base) {
                    return None;
                }
                self.redirect(va, pfn)
            }
            _ => {
                self.stats.other += 1;
                None
            }
        }
    }

    #[inline(always)]
    fn redirects(&self, pfn: u64) -> bool {
        self.is_cached(pfn)
    }

    fn time_model(&self, c: &BTreeMap<String, u64>, instructions: u64, out: &mut BTreeMap<String, f64>) {
        self.hybrid.time_model(c, instructions, out)
    }

    fn side(&mut self, body: &SideBody) {
        self.hybrid.side(body)
    }
}

impl RainbowMemory {
    /// Path 2: the bit of NVM frame `pfn` is set: the bitmap-cache lookup, then the pointer
    /// read from the NVM page's first 8 bytes; the DRAM frame.
    #[inline(never)]
    fn redirect(&mut self, va: u64, pfn: u64) -> Option<u64> {
        let c = self.cached[&pfn];
        if c.va != va & !0xfff {
            // Cached for a page since unmapped (the controller drops it at its next interval).
            self.stats.stale += 1;
            return None;
        }
        self.lookup(pfn);
        let p = self.hybrid.meta(NVM, false);
        self.hybrid.cycles.pointer += p;
        self.stats.remaps += 1;
        set_bit(&mut self.used_bits, c.dram, true);
        Some(c.dram)
    }
}

impl Counters for RainbowMemory {
    fn counters(&self, out: &mut dyn Sink) {
        self.hybrid.counters(out);
        let s = &self.stats;
        let names = ["case1_4k_hit_2m_hit", "case2_4k_hit_2m_miss", "case3_4k_miss_2m_hit", "case4_4k_miss_2m_miss"];
        for (n, v) in names.iter().zip(s.cases) {
            out.put(format_args!("rainbow.{n}"), v);
        }
        out.put(format_args!("rainbow.other_translations"), s.other);
        out.put(format_args!("rainbow.4k_hits_below_superpage"), s.below);
        out.put(format_args!("rainbow.remaps"), s.remaps);
        out.put(format_args!("rainbow.stale_remaps"), s.stale);
        out.put(format_args!("rainbow.bitmap_cache.lookups"), s.lookups);
        out.put(format_args!("rainbow.bitmap_cache.misses"), s.misses);
        out.put(format_args!("rainbow.bitmap_cache.walk_fills"), s.walk_fills);
        out.put(format_args!("rainbow.bitmap_cache.walk_fill_misses"), s.walk_fill_misses);
        out.gauge(format_args!("rainbow.cached_pages"), self.cached.len() as u64);
        // Copies made over the run, and those a translation ever reached (dropped or still
        // cached): the rest were copied and never read from DRAM.
        let used_now = self.copies.keys().filter(|&&d| bit(&self.used_bits, d)).count() as u64;
        out.put(format_args!("rainbow.copies_made"), s.copies_made);
        out.put(format_args!("rainbow.copies_used"), s.copies_used_dropped + used_now);
        if let crate::mem::hybrid::PageCounting::TwoStage(t) = self.hybrid.counting() {
            out.gauge(format_args!("rainbow.monitored_superpages"), t.monitored().len() as u64);
            out.put(format_args!("rainbow.stage2_pages_counted"), t.pages_counted);
            out.put(format_args!("rainbow.counter_overflows"), t.overflows);
        }
    }
}
