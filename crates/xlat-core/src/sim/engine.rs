//! The engine: one hot loop over the accesses of each batch, side events (syscalls, context
//! switches, markers) applied in order between them, and the epochs.
//!
//! Per access: probe the first-level TLBs that serve the access kind (or the memo of
//! first-level hits), and stop there on a hit. A miss goes down the miss path's levels (page
//! TLBs, range TLBs); a miss everywhere goes to the miss handler (the radix walker:
//! paging-structure caches, then one load per remaining level through the caches), and the
//! translation fills every TLB above that holds its page size. Faults (first touches) are
//! handled by the OS model inside the miss handler, before its loads.
//!
//! The loop is compiled per [`Variant`] (miss handler, memory backend, observer, whether range
//! TLBs can sit in the miss path, whether first-level hits count their LRU distance), per
//! [`Shape`] (the structures' geometry as constants) and per data-caching and memo state, so
//! that the plain configuration's copy contains none of the other designs' code.

use super::epoch::{EpochController, EpochCx, Epochs};
use crate::mmu::observer::{AccessObserver, Observed, Translated, MEMO_HINTS};

/// The miss handler's view of a core's parts (a macro, not a method: the handler itself stays
/// borrowable beside it).
macro_rules! miss_cx {
    ($core:ident) => {
        MissCx {
            os: &mut $core.os,
            caches: &mut $core.caches,
            backend: &mut $core.backend,
            mmu: &mut $core.mmu,
            inval: &mut $core.inval,
        }
    };
}

/// What an epoch controller acts on ([`EpochCx`]), from the core's fields (a macro, not a method:
/// the caller holds a borrow of the controller's slot), `$epoch` the controller's last epoch.
macro_rules! epoch_cx {
    ($core:ident, $epoch:expr) => {
        EpochCx {
            epoch: $epoch,
            accesses: $core.accesses,
            instructions: $core.instructions,
            walk_cycles: $core.handler.cycles(),
            mmu: &mut $core.mmu,
            caches: &mut $core.caches,
            os: &mut $core.os,
            inval: &mut $core.inval,
            backend: &mut $core.backend,
            observer: &mut $core.obs,
        }
    };
}

/// [`Observed::hint`] of an access no memo entry translated.
const NO_HINT: u8 = (MEMO_HINTS - 1) as u8;
use super::shape::{AnyShape, SkylakeShape};
use crate::config::Config;
use crate::mem::backend::Backend;
use crate::mem::Caches;
use crate::mmu::hook::WalkHook;
use crate::mmu::range_walk::RangeWalker;
use crate::mmu::walker::{MissCx, MissHandler};
use crate::mmu::{Mmu, Shape};
use crate::os::{Invalidation, Os, SimError};
use crate::units::PageSize;
use rustc_hash::FxHashMap;
use xlat_trace::{Batch, Marker, SideBody};

/// What one compiled copy of the loop is specialised for: its parts, and what the loop
/// compiles in besides them. The engine knows no design: the assembly room names the copies
/// (`assembly/simulator.rs` builds them from `crate::assembly`'s plan).
pub trait Variant: 'static {
    type Handler: MissHandler;
    type Backend: Backend;
    type Observer: AccessObserver + 'static;
    /// Whether range TLBs and other structures may sit in the miss path (the staged probe, and
    /// the walk hooks after a walk).
    const RANGES: bool;
    /// Whether first-level hits count their LRU distance ([`Mmu::count_lru_distance`]; hits
    /// through the memo of first-level hits are MRU re-hits, distance 0).
    const LRU_DISTANCE: bool;
    /// Whether the memo of first-level hits may be used: not when the backend redirects
    /// translations ([`Backend::REMAP`]: a redirected page's 4KB entry must win over the
    /// superpage entry that also holds it, as in a parallel probe of split TLBs; the memo keeps
    /// one entry per page and could answer with the superpage's).
    const MEMO: bool = !<Self::Backend as Backend>::REMAP;
}

/// The copy of the loop over handler `H`, backend `B` and observer `O`, with the staged probe
/// if `STAGED` and LRU distances of first-level hits if `LRU`.
pub struct Parts<H, B, O, const STAGED: bool, const LRU: bool>(std::marker::PhantomData<(H, B, O)>);

impl<H, B, O, const STAGED: bool, const LRU: bool> Variant for Parts<H, B, O, STAGED, LRU>
where
    H: MissHandler + 'static,
    B: Backend + 'static,
    O: AccessObserver + 'static,
{
    type Handler = H;
    type Backend = B;
    type Observer = O;
    const RANGES: bool = STAGED;
    const LRU_DISTANCE: bool = LRU;
}

/// The simulator of one configuration, compiled for variant `V`.
pub(crate) struct Core<V: Variant> {
    pub(crate) mmu: Mmu,
    pub(crate) handler: V::Handler,
    pub(crate) caches: Caches,
    pub(crate) backend: V::Backend,
    pub(crate) obs: V::Observer,
    pub(crate) os: Os,
    pub(crate) cfg: Config,
    /// Invalidations the OS asked for, performed after each OS operation.
    inval: Vec<Invalidation>,
    /// The relocated addresses of a range (mosaic relocation).
    reloc: Vec<u64>,
    va_mask: u64,
    pub(crate) accesses: u64,
    pub(crate) by_kind: [u64; 3],
    pub(crate) untranslated: u64,
    pub(crate) data_cycles: u64,
    /// Per thread: the instruction count of its last access seen (FxHash: thread ids are the
    /// trace's, looked up twice per range).
    threads: FxHashMap<u32, u64>,
    pub(crate) instructions: u64,
    pub(crate) context_flushes: u64,
    pub(crate) markers: u64,
    pub(crate) epochs: Epochs,
    /// Every counter at each sample (values in the order of `sample_order`).
    pub(crate) series: Vec<Vec<u64>>,
    /// Where each sample was taken: accesses or instructions (the series' unit) so far.
    pub(crate) series_at: Vec<u64>,
    /// Host bytes the series holds, and the most it may: a sixteenth of the host memory
    /// available when sampling is on (the result copies it into Python objects and JSON, which
    /// took about five times its size: 1.3 GB for a 254 MB series).
    series_bytes: u64,
    series_budget: u64,
    /// Report order -> sorted name order of the counters (computed at the first sample).
    sample_order: Vec<usize>,
    prefetching: bool,
    /// Where the last miss was translated (kept for observers only).
    last_at: Translated,
    /// The range-table walker (range TLBs only).
    pub(crate) rwalk: RangeWalker,
    /// Whether the configuration has [`SkylakeShape`] (then accesses that do not go through
    /// the data caches run that shape's loop).
    pub(crate) skylake_shape: bool,
    /// Code run after each walk with the MMU and the OS (copies with the staged probe only).
    pub(crate) walk_hooks: Vec<Box<dyn WalkHook>>,
    /// The overlap time model (`time.model = "overlap"`; with the data caches only), fed one
    /// event per access from the data access.
    pub(crate) timing: Option<Box<Timing>>,
    /// The counts when the warm-up ended (`Simulator::set_warmup`), subtracted from what the
    /// result reports.
    pub(crate) warm: Option<Box<super::warm::Warm>>,
}

/// The overlap model and what the engine tells it per access: the translation's latency (set
/// on the miss path) and the access's position in instructions.
pub(crate) struct Timing {
    pub(crate) model: crate::time::Models,
    /// The current access's translation cycles and whether it walked (reset at its data access).
    xlat: u64,
    walk: bool,
    /// The L1D hit latency (data cycles beyond it are the event's).
    l1: u64,
    /// The current range's instruction counts, the next access's index in it, the global
    /// instruction count at its start, and whether the range is one thread's.
    icount: Vec<u64>,
    k: usize,
    base: f64,
    one_thread: bool,
    /// Instructions per access so far (positions of ranges of several threads).
    ipa: f64,
}

impl Timing {
    /// The position of the range's access `k`.
    #[inline]
    fn pos(&self, k: usize) -> f64 {
        if self.one_thread {
            if let (Some(&i), Some(&i0)) = (self.icount.get(k), self.icount.first()) {
                return self.base + i.saturating_sub(i0) as f64;
            }
        }
        self.base + k as f64 * self.ipa
    }
}

impl<V: Variant> Core<V> {
    pub(crate) fn new(
        cfg: &Config,
        handler: V::Handler,
        backend: V::Backend,
        obs: V::Observer,
    ) -> Result<Core<V>, SimError> {
        let os = Os::new(cfg)?;
        let mut core = Core {
            mmu: Mmu::new(cfg),
            handler,
            caches: Caches::from_config(cfg),
            backend,
            obs,
            os,
            inval: Vec::new(),
            reloc: Vec::new(),
            va_mask: if cfg.os.levels == 5 { (1 << 57) - 1 } else { (1 << 48) - 1 },
            accesses: 0,
            by_kind: [0; 3],
            untranslated: 0,
            data_cycles: 0,
            threads: FxHashMap::default(),
            instructions: 0,
            context_flushes: 0,
            markers: 0,
            epochs: Epochs::new(cfg.sim.interval_accesses, cfg.sim.interval_instructions),
            series: Vec::new(),
            series_at: Vec::new(),
            series_bytes: 0,
            series_budget: match cfg.sim.interval_accesses > 0 || cfg.sim.interval_instructions > 0 {
                true => crate::config::footprint::mem_available().map_or(u64::MAX, |a| a / 16),
                false => u64::MAX,
            },
            sample_order: Vec::new(),
            prefetching: false,
            last_at: Translated::Walk,
            rwalk: RangeWalker::new(cfg.cache.iter().map(|c| c.name.as_str())),
            skylake_shape: false,
            walk_hooks: Vec::new(),
            timing: match &cfg.time {
                Some(t) if t.model == crate::config::TimeModel::Overlap => Some(Box::new(Timing {
                    model: crate::time::Models::new(t, cfg.sim.base_cpi),
                    xlat: 0,
                    walk: false,
                    l1: cfg.cache.first().map_or(0, |c| c.latency),
                    icount: Vec::new(),
                    k: 0,
                    base: 0.0,
                    one_thread: true,
                    ipa: 1.0,
                })),
                _ => None,
            },
            warm: None,
            cfg: cfg.clone(),
        };
        core.skylake_shape = core.has_shape::<SkylakeShape>();
        if V::LRU_DISTANCE {
            core.mmu.count_lru_distance();
        }
        if !V::MEMO {
            core.mmu.set_memo(false);
        }
        Ok(core)
    }

    /// Whether every structure the loop of shape `S` compiles in has that shape's class (the
    /// loop's unchecked probes rely on it): the MMU's TLBs, the handler's PSCs, and the cache
    /// levels walk loads go through.
    pub(crate) fn has_shape<S: Shape>(&self) -> bool {
        self.mmu.has_lanes(S::LANES) && self.handler.has_shape::<S>() && self.caches.walk_classes() == S::LANES.caches
    }

    pub(crate) fn add_controller(&mut self, c: Box<dyn EpochController>) -> Result<(), String> {
        self.epochs.add(c)
    }

    // ------------------------------------------------------------------ the hot loop

    /// Translate one access. Monomorphised over data caching, whether the hit memo is in use
    /// (see [`Mmu::set_memo`]) and the structures' [`Shape`]. The first-level probes are a flat
    /// list (TLB, size) per access kind, and a hit increments a single counter (the TLB's
    /// hits); level-1 lookups are the accesses of the kind, counted per range.
    #[inline(always)]
    fn access<const DATA: bool, const MEMO: bool, S: Shape>(&mut self, va: u64, kind: u8) -> Result<(), SimError> {
        let va = va & self.va_mask;
        let r = (kind == 2) as usize;
        let rbit = (r as u64) << 63;
        // An L1-range TLB is looked up with the first-level page TLBs (seed 000 section 5.4.3).
        let range = if V::RANGES && self.mmu.has_first_ranges(r) {
            // A page whose last access the L1 range TLB answered alone, nothing filled since:
            // the same again, without the probes (`Mmu::range_memo_hit`).
            if let Some(pfn) = self.mmu.range_memo_hit(r, va) {
                return self.first_level_hit::<DATA, S>(r, va, kind, pfn, PageSize::Size4K as u8);
            }
            self.mmu.probe_first_ranges(r, va)
        } else {
            None
        };
        if let Some(j) = if MEMO { self.mmu.memo_hit(va, rbit) } else { None } {
            if DATA || <V::Observer as AccessObserver>::ACTIVE {
                let (pfn, size) = self.mmu.memo_translation(j);
                self.translated::<DATA>(pfn, size, va, kind, Translated::Level(0), j as u8);
            }
            return Ok(());
        }
        // One copy of the probe loop per role when the roles' first-level TLBs differ in shape
        // (the lane count must be a constant of each copy).
        let hit = if V::LRU_DISTANCE {
            self.mmu.probe_first_lru::<MEMO>(r, va, range.is_none())
        } else if S::LANES.l1d == S::LANES.l1i || r == 0 {
            self.mmu.probe_first::<MEMO>(S::LANES.l1d, r, va)
        } else {
            self.mmu.probe_first::<MEMO>(S::LANES.l1i, r, va)
        };
        // The page TLBs missed and the L1-range TLB hit: its translation, nothing filled.
        let hit = if V::RANGES {
            hit.or_else(|| {
                range.map(|(pfn, k)| {
                    self.mmu.range_memo_insert(r, va, k, pfn);
                    (pfn, PageSize::Size4K as u8)
                })
            })
        } else {
            hit
        };
        if let Some((pfn, size)) = hit {
            return self.first_level_hit::<DATA, S>(r, va, kind, pfn, size);
        }
        // (Checked after the probes: with no first-level TLB the probe list is empty too.)
        if !self.mmu.translates(r) {
            self.untranslated += 1;
            if DATA {
                if let Some(t) = self.timing.as_mut() {
                    t.k += 1; // (its position passes; it has no latency)
                }
            }
            if <V::Observer as AccessObserver>::ACTIVE {
                let a =
                    Observed { va, page: 0, size: PageSize::Size4K, kind, at: Translated::Untranslated, hint: NO_HINT };
                self.obs.access(&a);
            }
            return Ok(());
        }
        self.mmu.count_first_miss(r);
        let (pfn, s) = self.miss::<S>(va, r)?;
        let remap = <V::Backend as Backend>::REMAP;
        let at = if <V::Observer as AccessObserver>::ACTIVE || remap { self.last_at } else { Translated::Walk };
        let (pfn, s) = if remap { self.remap::<S>(r, va, pfn, s as u8, at) } else { (pfn, s as u8) };
        self.translated::<DATA>(pfn, s, va, kind, at, NO_HINT);
        Ok(())
    }

    /// Rainbow: the memory may redirect a translation ([`Backend::remap`]: a 4KB page of an
    /// NVM superpage cached in DRAM); then the 4KB TLBs of every level get the DRAM frame. A
    /// superpage entry that hit above a level holding the cached page's 4KB entry yields to it
    /// (split 4KB and 2MB TLBs are probed in parallel, level by level on each side).
    #[inline(always)]
    fn remap<S: Shape>(&mut self, r: usize, va: u64, pfn: u64, size: u8, at: Translated) -> (u64, u8) {
        use crate::mem::backend::Via;
        let s = PageSize::from_index(size as usize);
        let frame = pfn + ((va & (s.bytes() - 1)) >> 12);
        let via = match at {
            Translated::Level(l) if s == PageSize::Size2M && self.backend.redirects(frame) => {
                if let Some((level, dram, cycles)) = self.mmu.find_4k_below(r, l as usize + 1, va) {
                    self.mmu.fill_above::<S>(r, level, va, PageSize::Size4K, dram);
                    self.backend.remap(va, dram, PageSize::Size4K, Via::Below { cycles });
                    return (dram, PageSize::Size4K as u8);
                }
                Via::Tlb { superpage_held: false }
            }
            Translated::Level(l) => Via::Tlb {
                superpage_held: s == PageSize::Size4K && self.mmu.holds_at(r, l as usize, va, PageSize::Size2M),
            },
            _ => Via::Walk,
        };
        match self.backend.remap(va, frame, s, via) {
            Some(dram) => {
                let levels = self.mmu.levels(r);
                self.mmu.fill_above::<S>(r, levels, va, PageSize::Size4K, dram);
                (dram, PageSize::Size4K as u8)
            }
            None => (pfn, size),
        }
    }

    /// After a translation (page at frame `pfn`, size index `size`): the data access through
    /// the caches (if `DATA`) and the observer.
    #[inline(always)]
    fn translated<const DATA: bool>(&mut self, pfn: u64, size: u8, va: u64, kind: u8, at: Translated, hint: u8) {
        if DATA {
            self.data_access(pfn, PageSize::from_index(size as usize), va, kind);
        }
        if <V::Observer as AccessObserver>::ACTIVE {
            // (A match, not `from_index`'s table: no load or bounds check per access.)
            let s = match size {
                0 => PageSize::Size4K,
                1 => PageSize::Size2M,
                _ => PageSize::Size1G,
            };
            let a = Observed { va, page: pfn, size: s, kind, at, hint };
            self.obs.access(&a);
        }
    }

    /// A first-level hit (a page TLB or the L1 range TLB): the translation, remapped by the
    /// backend if it remaps.
    #[inline(always)]
    fn first_level_hit<const DATA: bool, S: Shape>(
        &mut self,
        r: usize,
        va: u64,
        kind: u8,
        pfn: u64,
        size: u8,
    ) -> Result<(), SimError> {
        let (pfn, size) = if <V::Backend as Backend>::REMAP {
            self.remap::<S>(r, va, pfn, size, Translated::Level(0))
        } else {
            (pfn, size)
        };
        self.translated::<DATA>(pfn, size, va, kind, Translated::Level(0), NO_HINT);
        Ok(())
    }

    #[inline]
    fn data_access(&mut self, pfn: u64, s: PageSize, va: u64, kind: u8) {
        let pa = (pfn << 12) | (va & (s.bytes() - 1));
        let (hit, lat) = self.caches.access(pa, 0, false);
        let miss = hit == self.caches.levels.len();
        let lat = if miss { self.backend.access(pa, kind == 1, false, lat) } else { lat };
        if <V::Backend as Backend>::HOOKS {
            self.backend.data(pa, kind == 1, miss, &self.caches);
        }
        self.data_cycles += lat;
        if let Some(t) = self.timing.as_mut() {
            let k = t.k;
            t.k += 1;
            let data = lat.saturating_sub(t.l1);
            // An access with no latency beyond an L1 hit only moves the position (an interval
            // it would close is closed by the next event, or at the end).
            if t.xlat | data != 0 {
                let e = crate::time::Event {
                    pos: t.pos(k),
                    xlat: std::mem::take(&mut t.xlat),
                    walk: std::mem::take(&mut t.walk),
                    data,
                    kind,
                };
                t.model.event(e);
            }
            if <V::Backend as Backend>::HOOKS {
                let wb = self.backend.take_writebacks();
                if wb > 0 {
                    t.model.writeback(t.pos(k), wb);
                }
            }
        }
    }

    /// Every first-level TLB missed: the deeper levels, then the miss handler; fill the levels
    /// above the one that translated.
    #[inline(never)]
    fn miss<S: Shape>(&mut self, va: u64, r: usize) -> Result<(u64, PageSize), SimError> {
        let cycles0 = if self.timing.is_some() { self.handler.cycles() } else { 0 };
        let (upto, pfn, s) = match self.mmu.probe_deep::<S>(r, va, V::RANGES) {
            // A range TLB hit that fills the entry of the page `va` lies in (`fill = "page"`):
            // the OS's page, a 2MB or 1GB one where it maps one.
            Some((l, pfn, s)) if V::RANGES && self.mmu.take_range_page_fill() && self.os.maps_huge() => {
                match self.os.translate(va) {
                    Some((base, size)) if size != PageSize::Size4K => (l, base, size),
                    _ => (l, pfn, s),
                }
            }
            Some((l, pfn, s)) => (l, pfn, s),
            None => {
                let levels = self.mmu.levels(r);
                let mut cx = miss_cx!(self);
                let (pfn, s) = self.handler.handle::<S, V::Backend>(&mut cx, r, va)?;
                if <V::Backend as Backend>::HOOKS {
                    self.backend.walked(va, pfn, s);
                }
                if <V::Observer as AccessObserver>::ACTIVE {
                    self.obs.walked(va, pfn, s, &self.os, &mut self.caches, &mut self.backend);
                }
                if V::RANGES && self.mmu.has_ranges() {
                    self.range_walk(r, va)?;
                }
                if V::RANGES && self.mmu.has_baselines() {
                    self.after_walk_baselines(va, pfn, s);
                }
                if V::RANGES && !self.walk_hooks.is_empty() {
                    self.after_walk_hooks(r, va, pfn, s);
                }
                (levels, pfn, s)
            }
        };
        // (A clustered TLB's or direct segment's hit at the first level is level 0: it fills the
        // first level.)
        let fill_to = if V::RANGES { upto.max(1) } else { upto };
        self.mmu.fill_above::<S>(r, fill_to, va, s, pfn);
        if <V::Observer as AccessObserver>::ACTIVE || <V::Backend as Backend>::REMAP {
            self.last_at = if upto == self.mmu.levels(r) { Translated::Walk } else { Translated::Level(upto as u8) };
        }
        if self.timing.is_some() {
            self.time_miss(r, upto, cycles0);
        }
        // A page mapped at `s` but held only as smaller (splintered) entries still translates.
        Ok((pfn, s))
    }

    /// The overlap model: the translation cycles of the access that missed the first level (a
    /// deeper level's hit latency, or the walk's cycles).
    #[cold]
    fn time_miss(&mut self, r: usize, upto: usize, cycles0: u64) {
        let walked = upto == self.mmu.levels(r);
        let xlat = if walked { self.handler.cycles() - cycles0 } else { self.mmu.level_latency(upto) };
        if let Some(t) = self.timing.as_mut() {
            t.xlat = xlat;
            t.walk = walked;
        }
    }

    /// After a page walk: if the page lies in a range (the PTE's range bit: the OS has a range
    /// containing `va`), the range-table walk in the background (its loads counted, no cycles
    /// added), then the range fills the range TLBs.
    #[cold]
    fn range_walk(&mut self, r: usize, va: u64) -> Result<(), SimError> {
        let Some(e) = self.os.range_of(va) else {
            return Ok(());
        };
        let found = self.os.range_walk(va, &mut self.rwalk.path)?;
        debug_assert!(found, "the range table holds the range");
        self.rwalk.walk(&mut self.caches, &mut self.backend);
        self.mmu.fill_ranges(r, crate::mmu::RangeEntry { base: e.base, limit: e.limit, pfn: e.pfn, tag: 0 });
        Ok(())
    }

    /// After a walk: the walk hooks (a TLB prefetcher), in the order they were added.
    #[cold]
    fn after_walk_hooks(&mut self, r: usize, va: u64, pfn: u64, s: PageSize) {
        for h in &mut self.walk_hooks {
            h.walked(r, va, pfn, s, &mut self.mmu, &self.os);
        }
    }

    /// Add a walk hook; `Err` in a copy of the loop without the staged probe (it would never run).
    pub(crate) fn add_walk_hook(&mut self, h: Box<dyn WalkHook>) -> Result<(), String> {
        if !V::RANGES {
            return Err("a walk hook needs a copy of the loop with the staged probe".into());
        }
        self.walk_hooks.push(h);
        Ok(())
    }

    /// After a walk of `va` (page at frame `pfn`, of size `s`): a 4KB page fills the clustered
    /// TLB from its cluster's PTEs; the direct segment follows the range table (the walk may
    /// have faulted).
    #[inline(always)]
    fn after_walk_baselines(&mut self, va: u64, pfn: u64, s: PageSize) {
        if s == PageSize::Size4K && self.mmu.cluster_tlb().is_some() {
            let line = crate::mmu::cluster::cluster_line(&self.os, va);
            self.mmu.fill_cluster(va, pfn, &line);
        }
        self.sync_segment();
    }

    /// Load the direct segment with the current address space's largest range if its range
    /// table changed since the last load (off the access path: after walks, side events and
    /// epoch controllers, the only places the range table changes).
    #[inline]
    fn sync_segment(&mut self) {
        if self.mmu.direct_segment().is_none() {
            return;
        }
        let (asid, generation) = (self.os.asid(), self.os.range_generation());
        if let Some(d) = self.mmu.direct_segment_mut() {
            if !d.is_synced(asid, generation) {
                let (largest, generation) = self.os.largest_range();
                d.load(asid, generation, largest);
            }
        }
    }

    /// Simulate the accesses `lo..hi` of `b` (no side event among them), at addresses `addr`
    /// (`b.addr[lo..hi]`, relocated if the mosaic relocates).
    fn run_range<const DATA: bool, S: Shape>(&mut self, addr: &[u64], kind: &[u8]) -> Result<(), SimError> {
        let r = if <V::Handler as MissHandler>::TRANSLATES_ALL {
            debug_assert!(!<V::Observer as AccessObserver>::ACTIVE, "a handler's own loop has no observer");
            let mut cx = miss_cx!(self);
            self.handler.run_direct::<DATA, V::Backend>(&mut cx, addr, kind, self.va_mask, &mut self.data_cycles)
        } else {
            self.run_accesses::<DATA, S>(addr, kind)
        };
        // The counters are complete after every range (even one that failed).
        self.mmu.flush_memo();
        self.handler.settle(&mut self.caches);
        r
    }

    fn run_accesses<const DATA: bool, S: Shape>(&mut self, addr: &[u64], kind: &[u8]) -> Result<(), SimError> {
        let hi = addr.len();
        let mut i = 0;
        while i < hi {
            let chunk_end = hi.min(i + 4096);
            let (walks0, misses0) = (self.handler.misses(), self.mmu.first_misses());
            if V::MEMO && self.mmu.memo_on() {
                self.run_chunk::<DATA, true, S>(addr, kind, i, chunk_end)?;
            } else {
                self.run_chunk::<DATA, false, S>(addr, kind, i, chunk_end)?;
            }
            let n = (chunk_end - i) as u64;
            // Turn prefetching on when more than 1 access in 32 walked.
            self.prefetching = (self.handler.misses() - walks0) * 32 > n;
            // The memo off when more than 1 access in 8 missed the first level.
            self.mmu.set_memo(V::MEMO && (self.mmu.first_misses() - misses0) * 8 <= n);
            i = chunk_end;
        }
        Ok(())
    }

    /// The accesses `i..end` of a range of `addr.len()` accesses.
    #[inline(always)]
    fn run_chunk<const DATA: bool, const MEMO: bool, S: Shape>(
        &mut self,
        addr_all: &[u64],
        kind_all: &[u8],
        i: usize,
        end: usize,
    ) -> Result<(), SimError> {
        // When walks are frequent, the simulator's own time goes to host cache misses on the
        // page-table entry and the cache rows a walk reads; prefetching them a few accesses
        // ahead overlaps those misses. Prefetches change no simulated state.
        const AHEAD: usize = 6;
        let hi = addr_all.len();
        if self.prefetching && self.handler.prefetches() {
            // The accesses of the chunk whose look-ahead (AHEAD later) is in the range, then
            // the rest; slices zipped, so that no index is checked per access.
            let m = (end - i).min(hi.saturating_sub(i + AHEAD));
            let (addr, kind) = (&addr_all[i..end], &kind_all[i..end]);
            let (prev, next) = if m > 0 {
                (&addr_all[i + AHEAD - 1..i + AHEAD - 1 + m], &addr_all[i + AHEAD..i + AHEAD + m])
            } else {
                (&[][..], &[][..])
            };
            for (((&a, &k), &p), &q) in addr.iter().zip(kind).zip(prev).zip(next) {
                // Once per page run (a load and a store to one word share their walk).
                if (q ^ p) >> 12 != 0 {
                    self.prefetch(q);
                }
                self.access::<DATA, MEMO, S>(a, k)?;
            }
            for (&a, &k) in addr[m..].iter().zip(&kind[m..]) {
                self.access::<DATA, MEMO, S>(a, k)?;
            }
        } else {
            for (&a, &k) in addr_all[i..end].iter().zip(&kind_all[i..end]) {
                self.access::<DATA, MEMO, S>(a, k)?;
            }
        }
        Ok(())
    }

    /// Host prefetch of what a miss of `va` will read (one call with the engine alone, the
    /// handler's prefetch inlined in it).
    #[inline(never)]
    fn prefetch(&self, va: u64) {
        self.handler.prefetch(&self.os, &self.caches, va & self.va_mask);
    }

    /// Count the accesses `lo..hi` of `b` and the threads' instructions (their kinds are counted
    /// by [`Core::count_kinds`], over many ranges at once); `one_thread`: every access of `b` is
    /// of one thread ([`one_thread_in`]).
    fn count_range(&mut self, b: &Batch, lo: usize, hi: usize, one_thread: bool) {
        if lo == hi {
            return;
        }
        self.accesses += (hi - lo) as u64;
        let t0 = b.tid[lo];
        if one_thread || one_thread_in(&b.tid[lo..hi]) {
            // The first count seeds the thread's baseline if the thread is new.
            self.set_icount(t0, b.icount[lo]);
            self.set_icount(t0, b.icount[hi - 1]);
        } else {
            for i in lo..hi {
                self.set_icount(b.tid[i], b.icount[i]);
            }
        }
    }

    /// Count the accesses `*from..to` of `b` by kind and as first-level lookups per role, and
    /// move `*from` to `to`. A batch counts its ranges' kinds together, at its end or before
    /// anything reads the counts within it (a sample, an epoch controller): a range is tens of
    /// accesses, which a vector loop would run mostly in its scalar tail.
    fn count_kinds(&mut self, b: &Batch, from: &mut usize, to: usize) {
        let lo = std::mem::replace(from, to);
        if lo >= to {
            return;
        }
        // Branch-free counts: loads, ifetches (kind 2), stores the rest (kinds are 0, 1 or 2:
        // the trace readers reject others). Byte counters over chunks of 255 vectorise to byte
        // adds (64-bit counters would widen every byte).
        let (mut n0, mut n2) = (0u64, 0u64);
        for chunk in b.kind[lo..to].chunks(255) {
            let (mut c0, mut c2) = (0u8, 0u8);
            for &k in chunk {
                c0 += (k == 0) as u8;
                c2 += (k == 2) as u8;
            }
            n0 += c0 as u64;
            n2 += c2 as u64;
        }
        let kinds = [n0, (to - lo) as u64 - n0 - n2, n2];
        for (a, k) in self.by_kind.iter_mut().zip(kinds) {
            *a += k;
        }
        self.mmu.count_lookups([kinds[0] + kinds[1], kinds[2]]);
    }

    /// Instructions are counted from each thread's first access in the trace, not from 0: a
    /// trace recorded after `--skip N` starts at instruction N, and those N instructions were
    /// not simulated (counting them would deflate every MPKI). A thread's count is its last
    /// access's instruction count minus its first's, plus one (the first access's instruction):
    /// 1000 accesses one instruction apart are 1000 instructions. `trace-info` counts the same.
    #[inline]
    fn set_icount(&mut self, tid: u32, ic: u64) {
        match self.threads.entry(tid) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(ic);
                self.instructions += 1;
            }
            std::collections::hash_map::Entry::Occupied(mut o) => {
                let e = o.get_mut();
                if ic > *e {
                    self.instructions += ic - *e;
                    *e = ic;
                }
            }
        }
    }

    // ------------------------------------------------------------------ side events

    /// Perform the invalidations an OS operation asked for.
    fn apply_invalidations(&mut self) {
        if self.inval.is_empty() {
            return;
        }
        self.mmu.invalidate(&self.inval);
        self.handler.invalidated(&self.inval);
        self.inval.clear();
    }

    fn side(&mut self, body: &SideBody) -> Result<(), SimError> {
        self.mmu.clear_memo();
        match body {
            SideBody::Syscall(s) => {
                self.os.syscall(s, &mut self.inval)?;
                if !self.inval.is_empty() {
                    self.invalidating()?;
                }
                self.apply_invalidations();
            }
            SideBody::Marker(Marker::ContextSwitch { asid }) => {
                if self.os.switch_to(*asid)? && self.mmu.switch_to(*asid) {
                    self.handler.flush();
                    self.context_flushes += 1;
                }
            }
            SideBody::Marker(_) => self.markers += 1,
        }
        if V::RANGES {
            self.sync_segment();
        }
        // Every component that wants side events hears it.
        self.handler.side(body);
        self.backend.side(body);
        self.obs.side(body);
        for s in &mut self.epochs.slots {
            s.c.side(body);
        }
        Ok(())
    }

    /// Tell the epoch controllers what a syscall is about to invalidate.
    fn invalidating(&mut self) -> Result<(), SimError> {
        for slot in &mut self.epochs.slots {
            let mut cx = epoch_cx!(self, slot.epochs);
            slot.c.invalidating(&mut cx)?;
        }
        Ok(())
    }

    // ------------------------------------------------------------------ batches

    /// Simulate one batch: accesses in order, side events before the access they precede,
    /// ranges cut where an epoch (or a sample) ends.
    pub(crate) fn batch(&mut self, b: &Batch) -> Result<(), SimError> {
        // The accesses simulated (`..done`) and those of them counted by kind (`..kinds`).
        let (mut done, mut kinds) = (0, 0);
        let r = self.ranges(b, &mut done, &mut kinds);
        self.count_kinds(b, &mut kinds, done);
        r
    }

    /// [`Core::batch`]'s ranges; `done`: the end of the last range simulated; `kinds`: where
    /// the counts by kind stand ([`Core::count_kinds`]).
    fn ranges(&mut self, b: &Batch, done: &mut usize, kinds: &mut usize) -> Result<(), SimError> {
        let n = b.len();
        // (Asked once of the whole batch, not of each range: a range is tens of accesses.)
        let one_thread = one_thread_in(&b.tid);
        let data = self.cfg.sim.data_through_caches;
        let mut i = 0;
        let mut si = 0;
        loop {
            while si < b.side.len() && b.side[si].pos as usize <= i {
                self.side(&b.side[si].body)?;
                si += 1;
            }
            if i >= n {
                break;
            }
            let mut end = b.side.get(si).map_or(n, |s| (s.pos as usize).min(n));
            let acc_stop = self.epochs.next_stop(false);
            if acc_stop != u64::MAX {
                end = end.min(i + (acc_stop - self.accesses) as usize);
            }
            let ins_stop = self.epochs.next_stop(true);
            if ins_stop != u64::MAX {
                // First access at which this thread's instruction count reaches the stop.
                // (Wrapping: `base` is the count minus the thread's last instruction count,
                // plus one for a thread not seen yet, whose first access counts one.)
                let base = match self.threads.get(&b.tid[i]) {
                    Some(&last) => self.instructions.wrapping_sub(last),
                    None => (self.instructions + 1).wrapping_sub(b.icount[i]),
                };
                // One thread's counts never decrease (the reader checks it), so when the range's
                // last access is short of the stop, none is: skip the search.
                let short = one_thread && end > i && base.wrapping_add(b.icount[end - 1]) < ins_stop;
                if !short {
                    if let Some(p) = (i..end).find(|&k| base.wrapping_add(b.icount[k]) >= ins_stop) {
                        end = p + 1;
                    }
                }
            }
            // The range's last instruction count, read by `count_range` after the range: the
            // loops read only addresses and kinds, so it would be a host cache miss per range.
            crate::host::prefetch_ptr(b.icount.as_ptr().wrapping_add(end).wrapping_sub(1));
            self.run(b, i, end, data)?;
            self.count_range(b, i, end, one_thread);
            i = end;
            *done = end;
            self.end_of_range(b, kinds, end)?;
        }
        Ok(())
    }

    /// The accesses `lo..hi` of `b`, through the loop of this configuration's shape.
    fn run(&mut self, b: &Batch, lo: usize, hi: usize, data: bool) -> Result<(), SimError> {
        let kind = &b.kind[lo..hi];
        if let Some(t) = self.timing.as_mut() {
            t.icount.clear();
            t.icount.extend_from_slice(&b.icount[lo..hi]);
            t.k = 0;
            t.base = self.instructions as f64;
            t.one_thread = one_thread_in(&b.tid[lo..hi]);
            if self.accesses > 0 {
                t.ipa = self.instructions as f64 / self.accesses as f64;
            }
        }
        if !self.os.relocates() {
            let addr = &b.addr[lo..hi];
            // (Accesses through the data caches run the general loop: no shape's copy for them.)
            return match (data, self.skylake_shape) {
                (false, false) => self.run_range::<false, AnyShape>(addr, kind),
                (false, true) => self.run_range::<false, SkylakeShape>(addr, kind),
                (true, _) => self.run_range::<true, AnyShape>(addr, kind),
            };
        }
        // Mosaic: trace addresses relocated into the pools, a range at a time (no side event
        // inside a range, so the relocation cannot change within it).
        let mut reloc = std::mem::take(&mut self.reloc);
        self.os.relocate_run(&b.addr[lo..hi], &mut reloc);
        let r = match (data, self.skylake_shape) {
            (false, false) => self.run_range::<false, AnyShape>(&reloc, kind),
            (false, true) => self.run_range::<false, SkylakeShape>(&reloc, kind),
            (true, _) => self.run_range::<true, AnyShape>(&reloc, kind),
        };
        self.reloc = reloc;
        r
    }

    /// After a range ending at access `at` of `b`: take the sample and run the epoch controllers
    /// that are due, with the accesses counted by kind up to `at` first (`kinds`:
    /// [`Core::count_kinds`]).
    fn end_of_range(&mut self, b: &Batch, kinds: &mut usize, at: usize) -> Result<(), SimError> {
        if self.epochs.sample_due(self.accesses, self.instructions) {
            self.count_kinds(b, kinds, at);
            self.sample()?;
        }
        for i in 0..self.epochs.slots.len() {
            for _ in 0..self.epochs.due(i, self.accesses, self.instructions) {
                self.count_kinds(b, kinds, at);
                let slot = &mut self.epochs.slots[i];
                slot.epochs += 1;
                let mut cx = epoch_cx!(self, slot.epochs);
                slot.c.run(&mut cx)?;
                self.apply_invalidations();
                if V::RANGES {
                    self.sync_segment();
                }
                self.epochs.record(i);
            }
        }
        Ok(())
    }

    /// Where the run is in the time series' unit: accesses, or instructions.
    pub(crate) fn series_position(&self) -> u64 {
        if self.cfg.sim.interval_accesses > 0 {
            self.accesses
        } else {
            self.instructions
        }
    }

    /// Report order -> sorted name order of the counters (the same at every call).
    pub(crate) fn name_order(&self) -> Vec<usize> {
        let mut names = crate::stats::Names::default();
        self.report(&mut names);
        let mut order: Vec<usize> = (0..names.0.len()).collect();
        order.sort_by(|&a, &b| names.0[a].cmp(&names.0[b]));
        order
    }

    /// Every counter now, in the order `order` ([`Core::name_order`]): a row of the time series.
    pub(crate) fn row(&self, order: &[usize]) -> Vec<u64> {
        let mut v = crate::stats::Values::default();
        self.report(&mut v);
        debug_assert_eq!(v.0.len(), order.len(), "the counters are the same at every sample");
        order.iter().map(|&i| v.0[i]).collect()
    }

    /// A row of the time series: every counter, in name order.
    fn sample(&mut self) -> Result<(), SimError> {
        if self.sample_order.is_empty() {
            self.sample_order = self.name_order();
        }
        let row = self.row(&self.sample_order);
        let n = row.len();
        self.series.push(row);
        self.series_at.push(self.series_position());
        self.series_bytes += 24 + 8 * n as u64;
        if self.series_bytes > self.series_budget {
            let s = &self.cfg.sim;
            let (key, every, unit) = match s.interval_accesses {
                0 => ("sim.interval_instructions", s.interval_instructions, "instructions"),
                n => ("sim.interval_accesses", n, "accesses"),
            };
            return Err(SimError::Invalid(format!(
                "{key} = {every}: the time series (a sample of {} counters every {every} {unit}) outgrew a sixteenth of the {:.1} GB of host memory available after {} samples (the result holds it several times over); take samples less often.",
                n,
                self.series_budget as f64 * 16.0 / 1e9,
                self.series.len()
            )));
        }
        Ok(())
    }
}

/// Whether the thread ids `tid` are all the same (a fold, not `all`: no early exit, so it
/// vectorises; almost every batch and range is one thread's).
fn one_thread_in(tid: &[u32]) -> bool {
    tid.first().is_none_or(|&t0| tid.iter().fold(true, |same, &t| same & (t == t0)))
}
