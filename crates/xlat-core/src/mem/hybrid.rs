//! The hybrid DRAM/NVM memory (`[hybrid]`, seed 003 and its baselines; `docs/rainbow.md`): two
//! memory kinds by frame (`memory.kinds`: DRAM from physical address 0, then NVM), behind the
//! caches, with the counts the time and energy model and the migration engine need.
//!
//! - An access that misses every cache level is a *read* of its kind (a store miss too: the
//!   caches write-allocate, so the line is read, and written back later), at the kind's read
//!   latency.
//! - *Write-backs*: the caches keep no dirty state, so this backend tracks the dirty lines
//!   itself, grouped by their last-level set: a data store marks its line dirty; after a
//!   data access that missed the last level (a fill into one of its sets), every dirty line of
//!   that set which the last level no longer holds (and the missed line itself, if it was
//!   dirty) was evicted dirty: one write-back, at its kind's write latency, counted against its
//!   frame. Lines still dirty at the end are reported (`hybrid.dirty_lines`), not
//!   written back. The plain loop has none of this (the backend's hooks compile out there).
//! - The counts a migration policy needs ([`PageCounting`]: per-frame reads and write-backs
//!   within the current interval for HSCC, or Rainbow's two-stage counters), and the frame ->
//!   virtual page map learnt from walks (`pages`), for the migration controllers
//!   (`designs/hybrid.rs`, `designs/rainbow.rs`), which also charge their costs here (copies,
//!   `clflush`, shootdowns, remaps; Rainbow's bitmap-cache lookups and pointer reads).

use crate::config::{Config, HybridConfig};
use crate::mem::backend::{Backend, KindSpec};
use crate::mem::twostage::TwoStage;
use crate::mem::Caches;
use crate::stats::{Counters, Sink};
use crate::units::PageSize;
use std::collections::BTreeMap;

/// DRAM is kind 0, NVM kind 1.
pub const DRAM: usize = 0;
pub const NVM: usize = 1;
/// Lines of a 64-byte line size in a 4KB page.
pub const LINES_PER_PAGE: u64 = 64;
const LINE_SHIFT: u32 = 6;

/// One frame's memory traffic in the current interval (lines).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageCount {
    pub reads: u32,
    pub writes: u32,
}

/// Per-frame counts of an interval, indexed by frame (allocated zeroed, so that the host backs
/// only the frames touched), with the frames counted, in first-touch order.
#[derive(Debug, Clone, Default)]
pub struct FrameCounts {
    counts: Vec<PageCount>,
    touched: Vec<u32>,
}

impl FrameCounts {
    /// Counts for `frames` frames (0: none kept).
    pub fn new(frames: usize) -> FrameCounts {
        FrameCounts { counts: vec![PageCount::default(); frames], touched: Vec::new() }
    }

    /// Frame `pfn`'s count.
    #[inline(always)]
    pub fn get(&mut self, pfn: u64) -> &mut PageCount {
        let c = &mut self.counts[pfn as usize];
        if *c == PageCount::default() {
            self.touched.push(pfn as u32);
        }
        c
    }

    /// Ask the host to bring frame `pfn`'s count into its cache (no effect on the counts).
    #[inline(always)]
    pub fn prefetch(&self, pfn: u64) {
        if let Some(c) = self.counts.get(pfn as usize) {
            crate::host::prefetch_ptr(c);
        }
    }

    /// The counts so far, in first-touch order; they start again at zero.
    pub fn take(&mut self) -> Vec<(u64, PageCount)> {
        let touched = std::mem::take(&mut self.touched);
        touched.into_iter().map(|f| (f as u64, std::mem::take(&mut self.counts[f as usize]))).collect()
    }
}

#[derive(Debug, Clone, Default)]
struct KindCounts {
    /// Lines read on a last-level miss (data and walk loads).
    reads: u64,
    walk_reads: u64,
    writebacks: u64,
    /// Lines read and written by page copies (migration).
    copy_reads: u64,
    copy_writes: u64,
    /// Rainbow's metadata traffic: migration-bitmap lines loaded (DRAM), the DRAM frame's
    /// address read from and written to an NVM page's first 8 bytes (NVM).
    meta_reads: u64,
    meta_writes: u64,
}

/// Cycles of the time model beyond translation, by component.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cycles {
    /// Data reads on last-level misses (walk loads are in the walker's cycles).
    pub data_reads: u64,
    pub writebacks: u64,
    /// Page copies.
    pub migration: u64,
    pub clflush: u64,
    pub shootdown: u64,
    pub remap: u64,
    /// Migration-bitmap cache lookups and the bitmap loads of its misses (Rainbow).
    pub bitmap: u64,
    /// Reads of a cached page's DRAM frame from the first 8 bytes of its NVM page, on a 4KB-TLB
    /// miss (Rainbow's remap).
    pub pointer: u64,
    /// Rainbow's split TLBs: 4KB entries found below a level whose superpage entry hit.
    pub tlb4k: u64,
}

impl Cycles {
    pub fn total(&self) -> u64 {
        self.data_reads
            + self.writebacks
            + self.migration
            + self.clflush
            + self.shootdown
            + self.remap
            + self.bitmap
            + self.pointer
            + self.tlb4k
    }
}

/// The per-page counts a migration policy reads at each interval's end.
#[derive(Debug, Clone)]
pub enum PageCounting {
    /// None (no migration).
    Off,
    /// Every frame's reads and write-backs, by page of the migration's size (HSCC counted at
    /// the memory, `hybrid.counting = "memory"`; with TLB counting, the observer counts).
    Frames(FrameCounts),
    /// Rainbow's two stages (`mem/twostage.rs`).
    TwoStage(Box<TwoStage>),
}

/// The hybrid memory backend.
#[derive(Debug, Clone)]
pub struct HybridMemory {
    /// DRAM, then NVM if there is one.
    specs: Vec<KindSpec>,
    /// The first physical address past DRAM.
    dram_end: u64,
    kinds: Vec<KindCounts>,
    pub cycles: Cycles,
    /// Dirty line numbers by last-level set (sized at the first data access).
    dirty: Vec<Vec<u64>>,
    /// Whether the page map is kept (a migration policy is on).
    tracking: bool,
    /// The counts of the current interval.
    counting: PageCounting,
    /// Frames are counted at their page of the migration's size: `pfn & group`.
    group: u64,
    /// Per frame, 1 + the virtual 4KB page a walk last translated to it (0: none; may be
    /// stale: check with the OS before acting on it).
    pages: Vec<u64>,
    pub(crate) cfg: HybridConfig,
    base_cpi: f64,
    /// Write-back cycles not yet taken by the overlap model ([`Backend::take_writebacks`]).
    writeback_since: u64,
}

impl HybridMemory {
    /// The backend of `cfg` (its `[hybrid]` table and one or two `memory.kinds`, validated).
    pub fn new(cfg: &Config) -> HybridMemory {
        use crate::config::MigrationPolicy;
        let h = cfg.hybrid.clone().unwrap_or_default();
        let tracking = h.migration != MigrationPolicy::None;
        let frames = cfg.memory.frames() as usize;
        let dram_frames = cfg.memory.kinds[0].frames();
        let counting = match h.migration {
            MigrationPolicy::None => PageCounting::Off,
            MigrationPolicy::Utility => PageCounting::Frames(FrameCounts::new(frames)),
            MigrationPolicy::Rainbow => {
                PageCounting::TwoStage(Box::new(TwoStage::new(dram_frames, frames as u64, h.write_weight)))
            }
        };
        HybridMemory {
            dram_end: cfg.memory.kinds[0].size.0,
            specs: cfg.memory.kinds.iter().map(KindSpec::from_config).collect(),
            kinds: vec![KindCounts::default(); cfg.memory.kinds.len()],
            cycles: Cycles::default(),
            dirty: Vec::new(),
            tracking,
            counting,
            group: if h.granularity == crate::config::Granularity::Page2M { !511 } else { !0 },
            pages: if tracking { vec![0; frames] } else { Vec::new() },
            cfg: h,
            base_cpi: cfg.sim.base_cpi,
            writeback_since: 0,
        }
    }

    /// The kind of physical address `pa` (with DRAM alone, every address is below its end).
    #[inline(always)]
    pub fn kind_of(&self, pa: u64) -> usize {
        (pa >= self.dram_end) as usize
    }

    pub fn spec(&self, kind: usize) -> &KindSpec {
        &self.specs[kind]
    }

    /// The time model's cycles so far, given the instructions and the translation cycles.
    pub fn time_cycles(&self, instructions: u64, translation: u64) -> u64 {
        (instructions as f64 * self.base_cpi) as u64 + translation + self.cycles.total()
    }

    /// A reference to frame `pfn` that reached the memory (`write`: a write-back).
    #[inline(always)]
    fn count(&mut self, pfn: u64, write: bool) {
        match &mut self.counting {
            PageCounting::Off => {}
            PageCounting::Frames(f) => {
                let c = f.get(pfn & self.group);
                if write {
                    c.writes += 1;
                } else {
                    c.reads += 1;
                }
            }
            PageCounting::TwoStage(t) => t.count(pfn, write),
        }
    }

    /// The interval's per-frame counts by page of the migration's size (its first frame), in
    /// first-touch order; the counts start again at zero (none unless counted per frame).
    pub fn take_counts(&mut self) -> Vec<(u64, PageCount)> {
        match &mut self.counting {
            PageCounting::Frames(f) => f.take(),
            _ => Vec::new(),
        }
    }

    /// The counting.
    pub fn counting(&self) -> &PageCounting {
        &self.counting
    }

    /// Rainbow's two-stage counters, if they are the counting.
    pub fn two_stage(&mut self) -> Option<&mut TwoStage> {
        match &mut self.counting {
            PageCounting::TwoStage(t) => Some(t),
            _ => None,
        }
    }

    /// A metadata read (`write` false) or write of one line in kind `kind` at the memory
    /// controller (Rainbow: a migration-bitmap line, an NVM page's first 8 bytes): counted, its
    /// latency returned for the caller to charge.
    pub fn meta(&mut self, kind: usize, write: bool) -> u64 {
        let k = &mut self.kinds[kind];
        if write {
            k.meta_writes += 1;
            self.specs[kind].write_latency
        } else {
            k.meta_reads += 1;
            self.specs[kind].read_latency
        }
    }

    /// The first NVM frame (every frame below is DRAM).
    pub fn dram_frames(&self) -> u64 {
        self.dram_end >> 12
    }

    /// The virtual page a walk last translated to frame `pfn` (tracking only).
    pub fn page_of(&self, pfn: u64) -> Option<u64> {
        self.pages.get(pfn as usize).and_then(|&v| v.checked_sub(1))
    }

    /// Frame `pfn` now holds the virtual page `va` (a migration), and `old` no longer.
    pub fn moved(&mut self, old: u64, new: u64, va: u64) {
        self.pages[old as usize] = 0;
        self.pages[new as usize] = va + 1;
    }

    #[inline]
    fn writeback(&mut self, line: u64) {
        let pa = line << LINE_SHIFT;
        let k = self.kind_of(pa);
        self.kinds[k].writebacks += 1;
        self.cycles.writebacks += self.specs[k].write_latency;
        self.writeback_since += self.specs[k].write_latency;
        self.count(pa >> 12, true);
    }

    /// `clflush` of the 4KB frame `pfn`: its dirty lines are written back (to its kind) and
    /// forgotten, each line costs `hybrid.clflush_cycles`. Returns the dirty lines written.
    pub fn flush_page(&mut self, pfn: u64, caches: &Caches) -> u64 {
        let mut n = 0;
        if !self.dirty.is_empty() {
            for i in 0..LINES_PER_PAGE {
                let line = (pfn << (12 - LINE_SHIFT)) + i;
                let (set, _) = caches.llc_set(line << LINE_SHIFT);
                if let Some(p) = self.dirty[set].iter().position(|&d| d == line) {
                    self.dirty[set].swap_remove(p);
                    self.writeback(line);
                    n += 1;
                }
            }
        }
        self.cycles.clflush += LINES_PER_PAGE * self.cfg.clflush_cycles;
        n
    }

    /// A copy of `lines` lines from kind `from` to kind `to` (a migration): traffic and cycles.
    pub fn copy(&mut self, from: usize, to: usize, lines: u64) {
        self.kinds[from].copy_reads += lines;
        self.kinds[to].copy_writes += lines;
        self.cycles.migration += lines * (self.specs[from].read_latency + self.specs[to].write_latency);
    }

    /// Cycles of copying one 4KB page from kind `from` to kind `to`.
    pub fn page_copy_cycles(&self, from: usize, to: usize) -> u64 {
        LINES_PER_PAGE * (self.specs[from].read_latency + self.specs[to].write_latency)
    }

    /// Dirty lines still cached (never written back).
    pub fn dirty_lines(&self) -> u64 {
        self.dirty.iter().map(|s| s.len() as u64).sum()
    }

    /// Per-kind reads, write-backs (for tests and reports).
    pub fn traffic(&self, kind: usize) -> (u64, u64) {
        (self.kinds[kind].reads, self.kinds[kind].writebacks)
    }
}

impl Backend for HybridMemory {
    const HOOKS: bool = true;

    #[inline]
    fn take_writebacks(&mut self) -> u64 {
        std::mem::take(&mut self.writeback_since)
    }

    #[inline]
    fn access(&mut self, pa: u64, _write: bool, walk: bool, _: u64) -> u64 {
        let k = self.kind_of(pa);
        let c = &mut self.kinds[k];
        c.reads += 1;
        let lat = self.specs[k].read_latency;
        if walk {
            c.walk_reads += 1;
        } else {
            self.cycles.data_reads += lat;
            self.count(pa >> 12, false);
        }
        lat
    }

    #[inline]
    fn data(&mut self, pa: u64, write: bool, llc_miss: bool, caches: &Caches) {
        if !(write || llc_miss) {
            return;
        }
        let line = pa >> LINE_SHIFT;
        let (set, sets) = caches.llc_set(pa);
        if self.dirty.is_empty() {
            self.dirty = vec![Vec::new(); sets];
        }
        if llc_miss && !self.dirty[set].is_empty() {
            // The fill evicted a line of this set (or an earlier walk fill did): the dirty lines
            // the last level no longer holds were written back, and so was the missed line if
            // it was dirty (it left the last level before this miss).
            let mut list = std::mem::take(&mut self.dirty[set]);
            // (Every line of the list is in this set: one look at its row answers for all.)
            let row = caches.llc_row(pa);
            let mut i = 0;
            while i < list.len() {
                let d = list[i];
                let held = match row {
                    Some((tags, shift)) => tags.contains(&((d << LINE_SHIFT >> shift) as u32)),
                    None => caches.llc_contains(d << LINE_SHIFT),
                };
                if d == line || !held {
                    list.swap_remove(i);
                    self.writeback(d);
                } else {
                    i += 1;
                }
            }
            self.dirty[set] = list;
        }
        if write && !self.dirty[set].contains(&line) {
            self.dirty[set].push(line);
        }
    }

    #[inline]
    fn walked(&mut self, va: u64, pfn: u64, size: PageSize) {
        if self.tracking && size != PageSize::Size1G {
            self.pages[pfn as usize] = (va & !(size.bytes() - 1)) + 1;
        }
    }

    /// The time and energy model (`docs/rainbow.md`): `out` already holds the translation part
    /// (`time.*`).
    fn time_model(&self, counts: &BTreeMap<String, u64>, instructions: u64, out: &mut BTreeMap<String, f64>) {
        let get = |k: &str| out.get(k).copied().unwrap_or(0.0);
        let (base, stlb, walk) = (get("time.base_cycles"), get("time.stlb_hit_cycles"), get("time.walk_cycles"));
        // From the counters (hybrid.cycles.*, hybrid.KIND.*), not the state: a window's own.
        let n = |k: String| counts.get(&k).copied().unwrap_or(0);
        let cy = |k: &str| n(format!("hybrid.cycles.{k}"));
        let c = Cycles {
            data_reads: cy("memory_reads"),
            writebacks: cy("writebacks"),
            migration: cy("migration"),
            clflush: cy("clflush"),
            shootdown: cy("shootdown"),
            remap: cy("remap"),
            bitmap: cy("bitmap"),
            pointer: cy("pointer"),
            tlb4k: cy("tlb4k"),
        };
        let parts = [
            ("base", base),
            ("stlb_hit", stlb),
            ("walk", walk),
            ("memory_reads", c.data_reads as f64),
            ("writebacks", c.writebacks as f64),
            ("migration", c.migration as f64),
            ("clflush", c.clflush as f64),
            ("shootdown", c.shootdown as f64),
            ("remap", c.remap as f64),
            ("bitmap", c.bitmap as f64),
            ("pointer", c.pointer as f64),
            ("tlb4k", c.tlb4k as f64),
        ];
        let total: f64 = parts.iter().map(|p| p.1).sum();
        let overlap = out.get("time.overlap.total_cycles").copied();
        let mut put = |k: String, v: f64| {
            out.insert(k, v);
        };
        for (n, v) in parts {
            put(format!("hybrid.time.{n}_cycles"), v);
        }
        put("hybrid.time.total_cycles".into(), total);
        put("hybrid.ipc".into(), if total > 0.0 { instructions as f64 / total } else { 0.0 });
        if let Some(overlap) = overlap {
            // The overlap model holds the accesses (reads, bitmap lookups, write-backs through
            // its write buffer); the controller's and the OS's work stays in series.
            let serial = (c.migration + c.clflush + c.shootdown + c.remap + c.pointer + c.tlb4k) as f64;
            let t = overlap + serial;
            put("hybrid.time.overlap_total_cycles".into(), t);
            put("hybrid.overlap_ipc".into(), if t > 0.0 { instructions as f64 / t } else { 0.0 });
        }
        // (Rainbow's bitmap lookups and pointer reads are part of its translation.)
        let xlat = stlb + walk + c.bitmap as f64 + c.pointer as f64 + c.tlb4k as f64;
        put("hybrid.translation_fraction".into(), if total > 0.0 { xlat / total } else { 0.0 });
        let seconds = total / (self.cfg.clock_ghz * 1e9);
        put("hybrid.seconds".into(), seconds);
        let mut energy = 0.0;
        for s in &self.specs {
            let k = |what: &str| n(format!("hybrid.{}.{what}", s.name));
            let dynamic = (k("reads") + k("copy_reads") + k("meta_reads")) as f64 * s.read_energy_pj
                + (k("writebacks") + k("copy_writes") + k("meta_writes")) as f64 * s.write_energy_pj;
            let dynamic_nj = dynamic / 1e3;
            // mW x s = mJ = 10^6 nJ.
            let static_nj = s.static_power_mw * seconds * 1e6;
            put(format!("hybrid.energy.{}.dynamic_nj", s.name), dynamic_nj);
            put(format!("hybrid.energy.{}.static_nj", s.name), static_nj);
            energy += dynamic_nj + static_nj;
        }
        put("hybrid.energy.total_nj".into(), energy);
    }
}

impl Counters for HybridMemory {
    fn counters(&self, out: &mut dyn Sink) {
        for (s, k) in self.specs.iter().zip(&self.kinds) {
            let n = &s.name;
            out.put(format_args!("hybrid.{n}.reads"), k.reads);
            out.put(format_args!("hybrid.{n}.walk_reads"), k.walk_reads);
            out.put(format_args!("hybrid.{n}.writebacks"), k.writebacks);
            out.put(format_args!("hybrid.{n}.copy_reads"), k.copy_reads);
            out.put(format_args!("hybrid.{n}.copy_writes"), k.copy_writes);
            out.put(format_args!("hybrid.{n}.meta_reads"), k.meta_reads);
            out.put(format_args!("hybrid.{n}.meta_writes"), k.meta_writes);
        }
        let c = &self.cycles;
        out.put(format_args!("hybrid.cycles.memory_reads"), c.data_reads);
        out.put(format_args!("hybrid.cycles.writebacks"), c.writebacks);
        out.put(format_args!("hybrid.cycles.migration"), c.migration);
        out.put(format_args!("hybrid.cycles.clflush"), c.clflush);
        out.put(format_args!("hybrid.cycles.shootdown"), c.shootdown);
        out.put(format_args!("hybrid.cycles.remap"), c.remap);
        out.put(format_args!("hybrid.cycles.bitmap"), c.bitmap);
        out.put(format_args!("hybrid.cycles.pointer"), c.pointer);
        out.put(format_args!("hybrid.cycles.tlb4k"), c.tlb4k);
        out.gauge(format_args!("hybrid.dirty_lines"), self.dirty_lines());
    }
}
