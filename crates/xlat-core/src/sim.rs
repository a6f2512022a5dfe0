//! The simulator: one hot loop over the accesses of each batch, the TLB hierarchy, the walker,
//! side events (syscalls, context switches) applied in order, and the counters.
//!
//! Per access: (mosaic only) relocate the address, probe the first-level TLBs that serve the
//! access kind, and stop there on a hit. Misses go down the levels; a miss everywhere walks the
//! page tables: paging-structure caches give the longest cached prefix, then one load per
//! remaining level goes through the caches, and the translation fills every TLB that holds its
//! page size. Faults (first touches) are handled by the OS model before the walk's loads.

use crate::config::Config;
use crate::mem::Caches;
use crate::mmu::{asid_tag, Psc, StructStats, Tlb};
use crate::os::pagetable::{index, Entry};
use crate::os::{Invalidation, Os, SimError};
use crate::units::PageSize;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use xlat_trace::{Batch, EventSource, Marker, SideBody};

/// Names of page-table levels by level number (1 = PT).
pub const TABLE_NAMES: [&str; 6] = ["", "pt", "pd", "pdpt", "pml4", "pml5"];

#[derive(Debug, Clone, Default)]
struct WalkStats {
    walks: u64,
    walks_by_size: [u64; 3],
    faulting_walks: u64,
    /// [table level * (caches + 1) + hit level (caches..., DRAM)]
    loads_at: Vec<u64>,
    /// Per hit level: the walk loads already added to the caches' counts.
    loads_counted: Vec<u64>,
    cycles: u64,
}

impl WalkStats {
    /// Walk loads (each is counted once in `loads_at`).
    fn loads(&self) -> u64 {
        self.loads_at.iter().sum()
    }
}

#[derive(Debug, Clone, Copy)]
struct Probe {
    /// Route level (0 = first).
    level: u32,
    tlb: u32,
    shift: u32,
    size: u8,
    size_bits: u64,
}

/// The geometry a copy of the hot loop is compiled for: the [`SetAssoc::class`] (recency-row
/// lanes of a power-of-two set count) of the first-level TLBs of each role, of the deeper TLBs
/// that hold 4KB pages and of the paging-structure caches, and the lanes of the three cache
/// levels walk loads go through ([`Caches::walk_classes`]). With these as constants a probe is
/// a mask, a few vector compares and a branch, with no dispatch on the structure's width.
///
/// A configuration takes a shape's loop only if [`Simulator::has_shape`] says every structure
/// matches. Then the first-level TLB probes and fills and the PSC probes and fills use the
/// row code of the shape's width unchecked (their classes were checked once, at construction,
/// and never change); the deeper TLBs and the caches check their class on each use (a cheap
/// compare, predictable as it never changes) and fall back to the general code out of line, so
/// the deeper levels' other arrays (Skylake's 4-way 1GB STLB beside the 12-way STLB) still
/// work. [`AnyShape`] (all 0) is the general loop every other configuration runs. Each shape
/// is another copy of the loop to compile; the results are the same either way (a unit test
/// compares every counter).
///
/// [`SetAssoc::class`]: crate::setassoc::SetAssoc::class
trait Shape {
    /// First-level data TLBs.
    const L1D: usize;
    /// First-level instruction TLBs.
    const L1I: usize;
    /// Deeper TLBs that hold 4KB pages.
    const L2: usize;
    /// Paging-structure caches.
    const PSC: usize;
    /// The three cache levels, from the walker's first (the first level of three).
    const CACHES: [u32; 3];
}

/// Any configuration: every structure dispatches on its own geometry.
struct AnyShape;

impl Shape for AnyShape {
    const L1D: usize = 0;
    const L1I: usize = 0;
    const L2: usize = 0;
    const PSC: usize = 0;
    const CACHES: [u32; 3] = [0; 3];
}

/// The Skylake preset's geometry (and that of any configuration with the same classes): 4-way
/// L1 DTLBs of a power-of-two set count, 8-way L1 ITLBs, a 12-way STLB, PSCs of at most 4
/// ways, walks from an 8-way L1D through a 4-way L2 to a 16-way LLC (LRU or FIFO throughout).
struct SkylakeShape;

impl Shape for SkylakeShape {
    const L1D: usize = 4;
    const L1I: usize = 8;
    const L2: usize = 12;
    const PSC: usize = 4;
    const CACHES: [u32; 3] = [8, 4, 16];
}

/// The last first-level TLB hits that are each the most recently used entry of their set.
///
/// Re-hitting an entry that is already the most recently used of its set changes no replacement
/// state (LRU: every set's order is kept, stamps come from one clock; tree-PLRU: the same bits;
/// FIFO and random: nothing on hits). Such an access only counts a hit, so it skips the probe.
/// A memo of a few such entries, not only the last one, catches kernels that interleave a few
/// arrays (STREAM triad: three pages in turn).
///
/// An entry stays valid while its entry is its set's most recently used: a probe that hits
/// another entry of the same set drops it, and so does a fill of that set (the fill becomes the
/// set's most recently used entry and may evict any other); every side event (invalidations,
/// context switches) drops them all. A first-level fill after a miss enters the memo, so the
/// next access to the page (a store after a load, the next element) skips the probe. Keys (page
/// and role) are kept apart from the translations so that the check of all entries is a few
/// compares over two small arrays.
///
/// Hits through the memo are counted per entry and added to the TLB's count when the entry is
/// replaced or the memo is flushed (at the end of each range): one counter incremented by
/// every access would chain every access to the last through memory.
#[derive(Clone, Copy)]
struct Memo {
    /// The page's first address `| role << 63`, or `u64::MAX` when empty (no 57-bit address
    /// with the role bit reaches it).
    key: [u64; MEMO],
    /// The bits of an address that select its page, and the role bit: `key[j]` holds the
    /// page of `va` iff `(va | role << 63) & mask[j] == key[j]` (an AND, not a variable shift).
    mask: [u64; MEMO],
    hit: [MemoHit; MEMO],
    /// `tlb << 32 | set` of each entry's `hit` (one compare per entry when a set is dropped).
    slot: [u64; MEMO],
    /// Hits through each entry not yet added to its TLB's count.
    hits: [u64; MEMO],
    /// Entry replaced by the next insertion (round robin).
    next: usize,
}

const MEMO: usize = 4;

/// The translation of a memo entry and where it sits.
#[derive(Clone, Copy)]
struct MemoHit {
    tlb: u32,
    set: u32,
    size: u8,
    pfn: u64,
}

impl Memo {
    const EMPTY: Memo = Memo {
        key: [u64::MAX; MEMO],
        mask: [0; MEMO],
        hit: [MemoHit { tlb: 0, set: u32::MAX, size: 0, pfn: 0 }; MEMO],
        slot: [u32::MAX as u64; MEMO],
        hits: [0; MEMO],
        next: 0,
    };

    /// The entry holding the page of `va` for role bit `rbit`, if any.
    #[inline(always)]
    fn find(&self, va: u64, rbit: u64) -> Option<usize> {
        // Branch-free over the entries: which one matches varies from access to access.
        let va = va | rbit;
        let mut found = usize::MAX;
        for j in 0..MEMO {
            found = if va & self.mask[j] == self.key[j] { j } else { found };
        }
        (found != usize::MAX).then_some(found)
    }

    /// Record a hit on (or a fill of) `h.tlb`'s set `h.set`: it becomes that set's most
    /// recently used entry, so other entries of the set are dropped.
    #[inline(always)]
    fn insert(&mut self, tlbs: &mut [Tlb], va: u64, rbit: u64, shift: u32, h: MemoHit) {
        self.drop_set(h.tlb, h.set);
        let j = self.next;
        tlbs[self.hit[j].tlb as usize].hits += std::mem::take(&mut self.hits[j]);
        self.mask[j] = !((1u64 << shift) - 1);
        self.key[j] = (va & self.mask[j]) | rbit;
        self.hit[j] = h;
        self.slot[j] = (h.tlb as u64) << 32 | h.set as u64;
        self.next = (j + 1) % MEMO;
    }

    /// Drop the entries of `tlb`'s set `set` (their hits stay pending until the entry is
    /// replaced or flushed).
    #[inline(always)]
    fn drop_set(&mut self, tlb: u32, set: u32) {
        let slot = (tlb as u64) << 32 | set as u64;
        for j in 0..MEMO {
            if self.slot[j] == slot {
                self.key[j] = u64::MAX;
            }
        }
    }

    /// Add the pending hits to the TLBs' counts.
    fn flush(&mut self, tlbs: &mut [Tlb]) {
        for j in 0..MEMO {
            if self.hits[j] > 0 {
                tlbs[self.hit[j].tlb as usize].hits += std::mem::take(&mut self.hits[j]);
            }
        }
    }

    /// Flush, then drop every entry.
    fn clear(&mut self, tlbs: &mut [Tlb]) {
        self.flush(tlbs);
        *self = Memo::EMPTY;
    }
}

/// The simulator of one configuration.
pub struct Simulator {
    memo: Memo,
    /// Whether the memo is in use. It pays when most accesses re-hit a few pages; when many
    /// accesses miss the first level (every miss inserts an entry, every access checks them
    /// all), it costs more than the probes it saves, so it is turned off (and emptied) for a
    /// chunk after one in which more than one access in 8 missed the first level. Off or on,
    /// the results are the same: the memo only skips probes that change nothing.
    memo_on: bool,
    cfg: Config,
    pub os: Os,
    tlbs: Vec<Tlb>,
    /// Per role (0 data, 1 instruction): per level, the TLBs probed.
    route: [Vec<Vec<usize>>; 2],
    lookups: [Vec<u64>; 2],
    /// Per role and page size of a translation: the TLBs it fills, as (level, TLB, size held
    /// as), in `route` order (precomputed: which TLBs hold which size never changes).
    fills: [[Vec<(usize, usize, PageSize)>; 3]; 2],
    level_hits: [Vec<u64>; 2],
    /// Level-1 probes per access kind, flattened over the TLBs and their page sizes.
    fast: [Vec<Probe>; 2],
    /// The probes of the levels below the first, flattened the same way, in route order.
    deep: [Vec<Probe>; 2],
    /// `fast` and `deep` without the probes of page sizes their TLB holds no entry of (such a
    /// probe misses and changes nothing). Rebuilt when a size's count goes to or from zero.
    fast_live: [Vec<Probe>; 2],
    deep_live: [Vec<Probe>; 2],
    l1_misses: [u64; 2],
    level_latency: Vec<u64>,
    pscs: Vec<Psc>,
    /// The PSC caching entries of each table level (`usize::MAX`: none, past every index).
    psc_for_level: [usize; 8],
    /// Per leaf page size: the PSCs a walk to such a leaf probes (above the leaf's level, within
    /// the page table's levels), lowest table level first.
    psc_probe: [Vec<usize>; 3],
    caches: Caches,
    walk_latency: u64,
    tag: u64,
    asid_mode: bool,
    va_mask: u64,
    ws: WalkStats,
    accesses: u64,
    by_kind: [u64; 3],
    untranslated: u64,
    data_cycles: u64,
    threads: HashMap<u32, u64>,
    instructions: u64,
    range_shootdowns: u64,
    /// Invalidations the OS returned, performed by `drain_invalidations`.
    inval: Vec<Invalidation>,
    context_flushes: u64,
    markers: u64,
    series: Vec<(u64, u64, Vec<u64>)>,
    next_sample: u64,
    prefetching: bool,
    /// `sim.miss_profile`: walks per 2MB region (`va >> 21`) of the simulated address space.
    miss_profile: Option<HashMap<u64, u64>>,
    /// Whether the configuration has [`SkylakeShape`] (then accesses that do not go through
    /// the data caches run that shape's loop).
    skylake_shape: bool,
}

/// The probes of route levels `levels`: every (TLB, page size held), in route order.
fn probes(tlbs: &[Tlb], route: &[Vec<usize>], levels: std::ops::Range<usize>) -> Vec<Probe> {
    let mut v = Vec::new();
    for l in levels {
        for &t in route.get(l).map_or(&[][..], Vec::as_slice) {
            for &s in &tlbs[t].sizes {
                v.push(Probe {
                    level: l as u32,
                    tlb: t as u32,
                    shift: s.shift(),
                    size: s as u8,
                    size_bits: (s as u64) << crate::mmu::VPN_BITS,
                });
            }
        }
    }
    v
}

/// Where the simulation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Trace(#[from] xlat_trace::Error),
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
}

impl Simulator {
    pub fn new(cfg: &Config) -> Result<Simulator, Error> {
        cfg.validate()?;
        let seed = cfg.sim.seed;
        let tlbs: Vec<Tlb> = cfg
            .tlb
            .iter()
            .enumerate()
            .map(|(i, c)| Tlb::new(c, seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9)))
            .collect();
        let nlev = tlbs.iter().map(|t| t.level + 1).max().unwrap_or(0);
        let mut route: [Vec<Vec<usize>>; 2] = [Vec::new(), Vec::new()];
        for (r, rt) in route.iter_mut().enumerate() {
            for l in 0..nlev {
                let v: Vec<usize> =
                    (0..tlbs.len()).filter(|&i| tlbs[i].level == l && tlbs[i].role.serves(r == 1)).collect();
                if !v.is_empty() {
                    rt.push(v);
                }
            }
        }
        // Level latency for the time estimate: the slowest structure of the level.
        let level_latency: Vec<u64> =
            (0..nlev).map(|l| tlbs.iter().filter(|t| t.level == l).map(|t| t.latency).max().unwrap_or(0)).collect();
        let mut pscs: Vec<Psc> =
            cfg.psc.iter().enumerate().map(|(i, c)| Psc::new(c, seed ^ (0x50 + i as u64))).collect();
        pscs.sort_by_key(|p| p.table_level);
        let mut psc_for_level = [usize::MAX; 8];
        for (i, p) in pscs.iter().enumerate() {
            psc_for_level[p.table_level] = i;
        }
        let walk_first = match &cfg.walker.first_cache {
            Some(n) => cfg.cache.iter().position(|c| &c.name == n).expect("validated"),
            None => 0,
        };
        let ncache = cfg.cache.len();
        let os = Os::new(cfg)?;
        let psc_probe = std::array::from_fn(|s| {
            let leaf = PageSize::from_index(s).leaf_level();
            (0..pscs.len()).filter(|&p| pscs[p].table_level > leaf && pscs[p].table_level <= os.levels()).collect()
        });
        let fills = std::array::from_fn(|r| {
            std::array::from_fn(|s| {
                let mut v = Vec::new();
                for (l, ts) in route[r].iter().enumerate() {
                    for &t in ts {
                        if let Some(held) = tlbs[t].holds(PageSize::from_index(s)) {
                            v.push((l, t, held));
                        }
                    }
                }
                v
            })
        });
        let mut sim = Simulator {
            fills,
            lookups: [vec![0; route[0].len()], vec![0; route[1].len()]],
            fast: std::array::from_fn(|r| probes(&tlbs, &route[r], 0..1)),
            deep: std::array::from_fn(|r| probes(&tlbs, &route[r], 1..route[r].len())),
            fast_live: [Vec::new(), Vec::new()],
            deep_live: [Vec::new(), Vec::new()],
            l1_misses: [0; 2],
            level_hits: [vec![0; route[0].len()], vec![0; route[1].len()]],
            route,
            level_latency,
            tlbs,
            pscs,
            psc_for_level,
            psc_probe,
            caches: Caches::new(&cfg.cache, cfg.memory.size.0, cfg.memory.dram_latency, seed),
            walk_latency: cfg.walker.latency,
            tag: 0,
            asid_mode: cfg.os.asid,
            va_mask: if cfg.os.levels == 5 { (1 << 57) - 1 } else { (1 << 48) - 1 },
            ws: WalkStats {
                loads_at: vec![0; 6 * (ncache + 1)],
                loads_counted: vec![0; ncache + 1],
                ..Default::default()
            },
            accesses: 0,
            by_kind: [0; 3],
            untranslated: 0,
            data_cycles: 0,
            threads: HashMap::new(),
            instructions: 0,
            range_shootdowns: 0,
            inval: Vec::new(),
            context_flushes: 0,
            markers: 0,
            series: Vec::new(),
            next_sample: cfg.sim.interval_accesses.max(cfg.sim.interval_instructions),
            prefetching: false,
            miss_profile: cfg.sim.miss_profile.then(HashMap::new),
            memo: Memo::EMPTY,
            memo_on: true,
            os,
            cfg: cfg.clone(),
            skylake_shape: false,
        };
        sim.caches.set_walk_first(walk_first);
        sim.live_probes();
        sim.skylake_shape = sim.has_shape::<SkylakeShape>();
        Ok(sim)
    }

    /// Whether every structure the loop of shape `S` compiles in has that shape's class: the
    /// TLBs of each role's first route level (whatever their configured level), the deeper TLBs
    /// that hold 4KB pages, every PSC, and the cache levels walk loads go through. The loop's
    /// unchecked probes (see [`Shape`]) rely on this.
    fn has_shape<S: Shape>(&self) -> bool {
        let tlbs = (0..2).all(|r| {
            let first = if r == 0 { S::L1D } else { S::L1I };
            self.route[r].iter().enumerate().all(|(l, ts)| {
                ts.iter().all(|&t| {
                    let (tlb, c) = (&self.tlbs[t], self.tlbs[t].arr.class());
                    if l == 0 {
                        c == first
                    } else {
                        c == S::L2 || !tlb.sizes.contains(&PageSize::Size4K)
                    }
                })
            })
        });
        tlbs && self.pscs.iter().all(|p| p.arr.class() == S::PSC) && self.caches.walk_classes() == S::CACHES
    }

    /// Rebuild `fast_live` and `deep_live` from the TLBs' entry counts per size.
    #[cold]
    fn live_probes(&mut self) {
        let tlbs = &self.tlbs;
        let live =
            |v: &Vec<Probe>| v.iter().copied().filter(|p| tlbs[p.tlb as usize].present[p.size as usize] > 0).collect();
        self.fast_live = [live(&self.fast[0]), live(&self.fast[1])];
        self.deep_live = [live(&self.deep[0]), live(&self.deep[1])];
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    // ------------------------------------------------------------------ the hot loop

    /// Translate one access. Monomorphised over mosaic relocation, data caching, whether the
    /// hit memo is in use (see [`Simulator::memo_on`]) and the structures' [`Shape`]. The
    /// first-level probes are a flat list (TLB, size) per access kind, and a hit increments a
    /// single counter (the TLB's hits); level-1 lookups are the accesses of the kind, counted
    /// per range in `count_range`.
    #[inline(always)]
    fn access<const MOSAIC: bool, const DATA: bool, const MEMO: bool, S: Shape>(
        &mut self,
        va: u64,
        kind: u8,
    ) -> Result<(), SimError> {
        let va = if MOSAIC { self.os.relocate(va) } else { va } & self.va_mask;
        let r = (kind == 2) as usize;
        let rbit = (r as u64) << 63;
        if let Some(j) = if MEMO { self.memo.find(va, rbit) } else { None } {
            let h = self.memo.hit[j];
            self.memo.hits[j] += 1;
            if DATA {
                self.data_access(h.pfn, PageSize::from_index(h.size as usize), va);
            }
            return Ok(());
        }
        // One copy of the probe loop per role when the roles' first-level TLBs differ in shape
        // (the lane count must be a constant of each copy).
        let hit = if S::L1D == S::L1I || r == 0 {
            self.probe_first::<DATA, MEMO>(S::L1D, r, va)
        } else {
            self.probe_first::<DATA, MEMO>(S::L1I, r, va)
        };
        if hit {
            return Ok(());
        }
        // (Checked after the probes: with no first-level TLB the probe list is empty too.)
        if self.fast[r].is_empty() {
            self.untranslated += 1;
            return Ok(());
        }
        self.l1_misses[r] += 1;
        let (pfn, s) = self.miss::<S>(va, r)?;
        if DATA {
            self.data_access(pfn, s, va);
        }
        Ok(())
    }

    /// Probe role `r`'s first-level TLBs for `va`, whose class is `lanes` (0: any); on a hit,
    /// enter the memo (if in use) and access the data (if `DATA`), and return true.
    #[inline(always)]
    fn probe_first<const DATA: bool, const MEMO: bool>(&mut self, lanes: usize, r: usize, va: u64) -> bool {
        let (tag, rbit) = (self.tag, (r as u64) << 63);
        for k in 0..self.fast_live[r].len() {
            let p = self.fast_live[r][k];
            let tlb = &mut self.tlbs[p.tlb as usize];
            // SAFETY: `lanes` is 0 or the shape's class of role `r`'s first route level, which
            // `has_shape` checked for every TLB of that level before this loop was chosen.
            if let (set, Some(pfn)) = unsafe { tlb.probe_as::<true>(lanes, va, p.shift, p.size_bits, tag) } {
                if MEMO {
                    let h = MemoHit { tlb: p.tlb, set: set as u32, size: p.size, pfn };
                    self.memo.insert(&mut self.tlbs, va, rbit, p.shift, h);
                }
                if DATA {
                    self.data_access(pfn, PageSize::from_index(p.size as usize), va);
                }
                return true;
            }
        }
        false
    }

    #[inline]
    fn data_access(&mut self, pfn: u64, s: PageSize, va: u64) {
        let pa = (pfn << 12) | (va & (s.bytes() - 1));
        let (_, lat) = self.caches.access(pa, 0, false);
        self.data_cycles += lat;
    }

    #[inline(never)]
    fn miss<S: Shape>(&mut self, va: u64, r: usize) -> Result<(u64, PageSize), SimError> {
        let tag = self.tag;
        // The levels below the first, probe by probe (a TLB per size it holds, in route order):
        // (level, frame, size) of the first hit. Lookups per level are derived from the hits
        // (`count_range`): every miss of a level is a lookup of the next.
        let mut found = None;
        for p in &self.deep_live[r] {
            // SAFETY: not KNOWN: the class is checked.
            if let (_, Some(pfn)) =
                unsafe { self.tlbs[p.tlb as usize].probe_as::<false>(S::L2, va, p.shift, p.size_bits, tag) }
            {
                found = Some((p.level as usize, pfn, PageSize::from_index(p.size as usize)));
                break;
            }
        }
        let (upto, pfn, s) = match found {
            Some((l, pfn, s)) => {
                self.level_hits[r][l] += 1;
                (l, pfn, s)
            }
            None => {
                let levels = self.route[r].len();
                let (pfn, s) = self.walk::<S>(va)?;
                (levels, pfn, s)
            }
        };
        self.fill_above::<S>(r, upto, va, s, pfn);
        // A page mapped at `s` but held only as smaller (splintered) entries still translates.
        Ok((pfn, s))
    }

    /// Fill the TLBs of levels below `upto` that hold `s` pages. While the memo is on, the first
    /// first-level fill enters it (it is the first of the level in probe order, the one an
    /// access to the page would hit), and any other drops the memo entries of the set it filled.
    fn fill_above<S: Shape>(&mut self, r: usize, upto: usize, va: u64, s: PageSize, pfn: u64) {
        let tag = self.tag;
        let rbit = (r as u64) << 63;
        let mut first = true;
        let mut flipped = false;
        for &(l, t, held) in &self.fills[r][s as usize] {
            if l >= upto {
                break;
            }
            let tlb = &mut self.tlbs[t];
            // SAFETY: the first route level's TLBs are of the shape's class of the role
            // (`has_shape`); the deeper ones are checked (not KNOWN).
            let (set, entry, f) = unsafe {
                if l != 0 {
                    tlb.fill_shaped::<false>(S::L2, va, s, held, pfn, tag)
                } else if S::L1D == S::L1I || r == 0 {
                    tlb.fill_shaped::<true>(S::L1D, va, s, held, pfn, tag)
                } else {
                    tlb.fill_shaped::<true>(S::L1I, va, s, held, pfn, tag)
                }
            };
            flipped |= f;
            if l == 0 && self.memo_on {
                if first {
                    let h = MemoHit { tlb: t as u32, set: set as u32, size: held as u8, pfn: entry };
                    self.memo.insert(&mut self.tlbs, va, rbit, held.shift(), h);
                    first = false;
                } else {
                    self.memo.drop_set(t as u32, set as u32);
                }
            }
        }
        if flipped {
            self.live_probes();
        }
    }

    /// Walk the page tables for `va` (faulting the page in first if it is not mapped).
    fn walk<S: Shape>(&mut self, va: u64) -> Result<(u64, PageSize), SimError> {
        self.ws.walks += 1;
        if let Some(p) = &mut self.miss_profile {
            *p.entry(va >> 21).or_default() += 1;
        }
        let levels = self.os.levels();
        let root = self.os.root();
        let (pfn, size) = match self.os.translate(va) {
            Some(x) => x,
            None => {
                self.ws.faulting_walks += 1;
                self.os.fault(va, &mut self.inval)?;
                if !self.inval.is_empty() {
                    // Reclaim evicted pages to make room.
                    self.memo.clear(&mut self.tlbs);
                    self.drain_invalidations();
                }
                self.os.translate(va).expect("the fault mapped the page")
            }
        };
        self.ws.walks_by_size[size as usize] += 1;
        let tag = self.tag;
        // Longest cached prefix: PSCs are sorted from the lowest table level (PDE) up.
        let (mut level, mut t) = (levels, root);
        for &p in &self.psc_probe[size as usize] {
            let p = &mut self.pscs[p];
            // SAFETY: `S::PSC` is 0 or every PSC's class (`has_shape`).
            if let Some(tab) = unsafe { p.lookup(S::PSC, va, tag) } {
                level = p.table_level - 1;
                t = tab;
                break;
            }
        }
        let mut cycles = self.walk_latency;
        let ncache = self.caches.levels.len();
        loop {
            let i = index(va, level);
            let pa = self.os.tables().table_pa(t) + 8 * i as u64;
            let (hit, lat) =
                if ncache == 0 { (0, self.caches.dram_latency) } else { self.caches.access_walk_as(S::CACHES, pa) };
            cycles += lat;
            self.ws.loads_at[level * (ncache + 1) + hit] += 1;
            match self.os.tables().entry(t, i) {
                Entry::Leaf(_) => break,
                Entry::Table(c) => {
                    if let Some(p) = self.pscs.get_mut(self.psc_for_level[level & 7]) {
                        // SAFETY: as for the lookup above.
                        unsafe { p.fill(S::PSC, va, tag, c) };
                    }
                    t = c;
                    level -= 1;
                }
                Entry::Empty => unreachable!("the page was mapped before the walk"),
            }
        }
        self.ws.cycles += cycles;
        Ok((pfn, size))
    }

    fn drain_invalidations(&mut self) {
        if self.inval.is_empty() {
            return;
        }
        let mut inval = std::mem::take(&mut self.inval);
        for i in &inval {
            match *i {
                Invalidation::Range { asid, start, end } => {
                    let tag = self.asid_mode.then(|| asid_tag(asid));
                    for t in &mut self.tlbs {
                        t.invalidate(start, end, tag);
                    }
                }
                Invalidation::All => {
                    for t in &mut self.tlbs {
                        t.flush();
                    }
                }
            }
        }
        // INVLPG and CR3 writes may drop every paging-structure-cache entry (SDM 4.10.4.1).
        for p in &mut self.pscs {
            p.flush();
        }
        inval.clear();
        self.inval = inval;
        self.live_probes();
        self.range_shootdowns += 1;
    }

    fn side(&mut self, body: &SideBody) -> Result<(), SimError> {
        self.memo.clear(&mut self.tlbs);
        match body {
            SideBody::Syscall(s) => {
                self.os.syscall(s, &mut self.inval)?;
                self.drain_invalidations();
            }
            SideBody::Marker(Marker::ContextSwitch { asid }) => {
                if self.os.switch_to(*asid)? {
                    if self.asid_mode {
                        self.tag = asid_tag(*asid);
                    } else {
                        for t in &mut self.tlbs {
                            t.flush();
                        }
                        for p in &mut self.pscs {
                            p.flush();
                        }
                        self.live_probes();
                        self.context_flushes += 1;
                    }
                }
            }
            SideBody::Marker(_) => self.markers += 1,
        }
        Ok(())
    }

    fn run_range<const MOSAIC: bool, const DATA: bool, S: Shape>(
        &mut self,
        b: &Batch,
        lo: usize,
        hi: usize,
    ) -> Result<(), SimError> {
        let r = self.run_accesses::<MOSAIC, DATA, S>(b, lo, hi);
        // The counters are complete after every range (even one that failed).
        self.memo.flush(&mut self.tlbs);
        self.count_walk_loads();
        r
    }

    /// Add the walk loads since the last call to the caches' counts, by hit level (walk loads
    /// are counted once per load, in `loads_at`).
    fn count_walk_loads(&mut self) {
        let n = self.caches.levels.len();
        if n == 0 {
            return; // (walk loads go straight to DRAM, outside the caches' counts)
        }
        for (hit, counted) in self.ws.loads_counted.iter_mut().enumerate() {
            let total: u64 = self.ws.loads_at.iter().skip(hit).step_by(n + 1).sum();
            self.caches.add_walk_loads(hit, total - *counted);
            *counted = total;
        }
    }

    fn run_accesses<const MOSAIC: bool, const DATA: bool, S: Shape>(
        &mut self,
        b: &Batch,
        lo: usize,
        hi: usize,
    ) -> Result<(), SimError> {
        let mut i = lo;
        while i < hi {
            let chunk_end = hi.min(i + 4096);
            let (walks0, misses0) = (self.ws.walks, self.l1_misses[0] + self.l1_misses[1]);
            if self.memo_on {
                self.run_chunk::<MOSAIC, DATA, true, S>(b, i, chunk_end, hi)?;
            } else {
                self.run_chunk::<MOSAIC, DATA, false, S>(b, i, chunk_end, hi)?;
            }
            let n = (chunk_end - i) as u64;
            // Turn prefetching on when more than 1 access in 32 walked.
            self.prefetching = (self.ws.walks - walks0) * 32 > n;
            // The memo off when more than 1 access in 8 missed the first level.
            let memo_on = (self.l1_misses[0] + self.l1_misses[1] - misses0) * 8 <= n;
            if self.memo_on && !memo_on {
                self.memo.clear(&mut self.tlbs);
            }
            self.memo_on = memo_on;
            i = chunk_end;
        }
        Ok(())
    }

    /// The accesses `i..end` of a range ending at `hi`.
    #[inline(always)]
    fn run_chunk<const MOSAIC: bool, const DATA: bool, const MEMO: bool, S: Shape>(
        &mut self,
        b: &Batch,
        i: usize,
        end: usize,
        hi: usize,
    ) -> Result<(), SimError> {
        // When walks are frequent, the simulator's own time goes to host cache misses on the
        // page-table entry and the cache rows a walk reads; prefetching them a few accesses
        // ahead overlaps those misses. Prefetches change no simulated state.
        const AHEAD: usize = 6;
        if self.prefetching && !MOSAIC {
            // The accesses of the chunk whose look-ahead (AHEAD later) is in the range, then
            // the rest; slices zipped, so that no index is checked per access.
            let m = (end - i).min(hi.saturating_sub(i + AHEAD));
            let (addr, kind) = (&b.addr[i..end], &b.kind[i..end]);
            let (prev, next) = if m > 0 {
                (&b.addr[i + AHEAD - 1..i + AHEAD - 1 + m], &b.addr[i + AHEAD..i + AHEAD + m])
            } else {
                (&[][..], &[][..])
            };
            for (((&a, &k), &p), &q) in addr.iter().zip(kind).zip(prev).zip(next) {
                // Once per page run (a load and a store to one word share their walk).
                if (q ^ p) >> 12 != 0 {
                    self.prefetch(q);
                }
                self.access::<MOSAIC, DATA, MEMO, S>(a, k)?;
            }
            for (&a, &k) in addr[m..].iter().zip(&kind[m..]) {
                self.access::<MOSAIC, DATA, MEMO, S>(a, k)?;
            }
        } else {
            for (&a, &k) in b.addr[i..end].iter().zip(&b.kind[i..end]) {
                self.access::<MOSAIC, DATA, MEMO, S>(a, k)?;
            }
        }
        Ok(())
    }

    #[inline]
    fn prefetch(&self, va: u64) {
        let va = va & self.va_mask;
        let pt = self.os.tables();
        let Some(t) = pt.pt_of(self.os.root(), self.os.levels(), va) else {
            return;
        };
        let i = index(va, 1);
        pt.prefetch(t, i);
        if !self.caches.levels.is_empty() {
            self.caches.prefetch_walk(pt.table_pa(t) + 8 * i as u64);
        }
    }

    fn count_range(&mut self, b: &Batch, lo: usize, hi: usize) {
        if lo == hi {
            return;
        }
        self.accesses += (hi - lo) as u64;
        // Branch-free counts: loads, ifetches (kind >= 2), stores the rest. Byte counters over
        // chunks of 255 vectorise to byte adds (64-bit counters would widen every byte).
        let (mut n0, mut n2) = (0u64, 0u64);
        for chunk in b.kind[lo..hi].chunks(255) {
            let (mut c0, mut c2) = (0u8, 0u8);
            for &k in chunk {
                c0 += (k == 0) as u8;
                c2 += (k >= 2) as u8;
            }
            n0 += c0 as u64;
            n2 += c2 as u64;
        }
        let kinds = [n0, (hi - lo) as u64 - n0 - n2, n2];
        for (a, k) in self.by_kind.iter_mut().zip(kinds) {
            *a += k;
        }
        let per_role = [kinds[0] + kinds[1], kinds[2]];
        for (r, n) in per_role.into_iter().enumerate() {
            let (lookups, hits) = (&mut self.lookups[r], &mut self.level_hits[r]);
            if !lookups.is_empty() {
                lookups[0] += n;
                hits[0] = lookups[0] - self.l1_misses[r];
                for l in 1..lookups.len() {
                    lookups[l] = lookups[l - 1] - hits[l - 1];
                }
            }
        }
        let t0 = b.tid[lo];
        // A fold, not `all`: no early exit, so it vectorises (almost every range is one thread).
        if b.tid[lo..hi].iter().fold(true, |same, &t| same & (t == t0)) {
            // The first count seeds the thread's baseline if the thread is new.
            self.set_icount(t0, b.icount[lo]);
            self.set_icount(t0, b.icount[hi - 1]);
        } else {
            for i in lo..hi {
                self.set_icount(b.tid[i], b.icount[i]);
            }
        }
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

    /// Simulate one batch: accesses in order, side events before the access they precede.
    pub fn batch(&mut self, b: &Batch) -> Result<(), SimError> {
        let n = b.len();
        let mosaic = self.os.relocates();
        let data = self.cfg.sim.data_through_caches;
        let (ia, ii) = (self.cfg.sim.interval_accesses, self.cfg.sim.interval_instructions);
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
            if ia > 0 {
                end = end.min(i + (self.next_sample - self.accesses) as usize);
            } else if ii > 0 {
                // First access at which this thread's instruction count reaches the next sample.
                // (Wrapping: `base` is the count minus the thread's last instruction count,
                // plus one for a thread not seen yet, whose first access counts one.)
                let base = match self.threads.get(&b.tid[i]) {
                    Some(&last) => self.instructions.wrapping_sub(last),
                    None => (self.instructions + 1).wrapping_sub(b.icount[i]),
                };
                if let Some(p) = (i..end).find(|&k| base.wrapping_add(b.icount[k]) >= self.next_sample) {
                    end = p + 1;
                }
            }
            // (Accesses through the data caches run the general loop: no shape's copy for them.)
            match (mosaic, data, self.skylake_shape) {
                (false, false, false) => self.run_range::<false, false, AnyShape>(b, i, end)?,
                (false, false, true) => self.run_range::<false, false, SkylakeShape>(b, i, end)?,
                (true, false, false) => self.run_range::<true, false, AnyShape>(b, i, end)?,
                (true, false, true) => self.run_range::<true, false, SkylakeShape>(b, i, end)?,
                (false, true, _) => self.run_range::<false, true, AnyShape>(b, i, end)?,
                (true, true, _) => self.run_range::<true, true, AnyShape>(b, i, end)?,
            }
            self.count_range(b, i, end);
            i = end;
            if ia > 0 && self.accesses >= self.next_sample {
                self.sample();
                self.next_sample += ia;
            } else if ii > 0 && self.instructions >= self.next_sample {
                self.sample();
                while self.next_sample <= self.instructions {
                    self.next_sample += ii;
                }
            }
        }
        Ok(())
    }

    fn sample(&mut self) {
        let c = self.counters();
        let v = c.values().copied().collect();
        self.series.push((self.accesses, self.instructions, v));
    }

    // ------------------------------------------------------------------ counters

    /// Every counter, flat, named as a tree (`tlb.l2.hits`, `walker.loads.pd.L2`), sorted.
    pub fn counters(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        let mut put = |k: String, v: u64| {
            m.insert(k, v);
        };
        put("accesses".into(), self.accesses);
        put("loads".into(), self.by_kind[0]);
        put("stores".into(), self.by_kind[1]);
        put("ifetches".into(), self.by_kind[2]);
        put("instructions".into(), self.instructions);
        put("untranslated".into(), self.untranslated);
        put("markers".into(), self.markers);
        for (i, t) in self.tlbs.iter().enumerate() {
            let s = self.tlb_stats(i);
            for (k, v) in struct_fields(&s) {
                put(format!("tlb.{}.{k}", t.name), v);
            }
        }
        for (r, role) in ["data", "instruction"].iter().enumerate() {
            for (l, &n) in self.lookups[r].iter().enumerate() {
                let h = self.level_hits[r][l];
                put(format!("tlb_level{}.{role}.lookups", l + 1), n);
                put(format!("tlb_level{}.{role}.hits", l + 1), h);
                put(format!("tlb_level{}.{role}.misses", l + 1), n - h);
            }
        }
        for p in &self.pscs {
            let mut s = p.stats;
            s.misses = s.accesses - s.hits;
            for (k, v) in struct_fields(&s) {
                put(format!("psc.{}.{k}", p.name), v);
            }
        }
        let w = &self.ws;
        put("walker.walks".into(), w.walks);
        put("walker.walks_4k".into(), w.walks_by_size[0]);
        put("walker.walks_2m".into(), w.walks_by_size[1]);
        put("walker.walks_1g".into(), w.walks_by_size[2]);
        put("walker.faulting_walks".into(), w.faulting_walks);
        put("walker.loads".into(), w.loads());
        put("walker.cycles".into(), w.cycles);
        let hit_names = self.hit_names();
        for (lvl, row) in w.loads_at.chunks(hit_names.len()).enumerate().skip(1) {
            if lvl > self.os.levels() {
                continue;
            }
            put(format!("walker.loads.{}", TABLE_NAMES[lvl]), row.iter().sum());
            for (h, &v) in row.iter().enumerate() {
                put(format!("walker.loads.{}.{}", TABLE_NAMES[lvl], hit_names[h]), v);
            }
        }
        for (h, name) in hit_names.iter().enumerate() {
            put(format!("walker.loads_hit.{name}"), w.loads_at.iter().skip(h).step_by(hit_names.len()).sum());
        }
        for (name, s) in self.caches.stats() {
            put(format!("cache.{name}.accesses"), s.accesses);
            put(format!("cache.{name}.hits"), s.hits);
            put(format!("cache.{name}.misses"), s.misses);
            put(format!("cache.{name}.fills"), s.fills);
            put(format!("cache.{name}.evictions"), s.evictions);
            put(format!("cache.{name}.walk_accesses"), s.walk_accesses);
            put(format!("cache.{name}.walk_hits"), s.walk_hits);
        }
        put("dram.accesses".into(), self.caches.dram_accesses());
        put("dram.walk_accesses".into(), self.caches.dram_walk_accesses());
        put("data.cycles".into(), self.data_cycles);
        put("shootdowns".into(), self.range_shootdowns + self.context_flushes);
        put("shootdowns.range".into(), self.range_shootdowns);
        put("shootdowns.context_switch".into(), self.context_flushes);
        let mut os = crate::stats::Named::default();
        crate::stats::Counters::counters(&self.os, &mut os);
        m.extend(os.0);
        m
    }

    fn hit_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.caches.levels.iter().map(|c| c.name.clone()).collect();
        v.push("DRAM".into());
        v
    }

    fn tlb_stats(&self, i: usize) -> StructStats {
        let t = &self.tlbs[i];
        // Every TLB of a level is probed on each lookup of that level for the roles it serves.
        let mut accesses = 0;
        for r in 0..2 {
            for (l, v) in self.route[r].iter().enumerate() {
                if v.contains(&i) {
                    accesses += self.lookups[r][l];
                }
            }
        }
        StructStats {
            accesses,
            hits: t.hits,
            misses: accesses - t.hits,
            fills: t.fills,
            evictions: t.evictions,
            invalidations: t.invalidations,
        }
    }

    /// Derived metrics: MPKI per level, H/M/C, the additive time estimate.
    pub fn derived(&self, c: &BTreeMap<String, u64>) -> BTreeMap<String, f64> {
        let mut d = BTreeMap::new();
        let instr = self.instructions as f64;
        let per_k = |x: u64| {
            if instr > 0.0 {
                x as f64 * 1000.0 / instr
            } else {
                0.0
            }
        };
        let nlev = self.route[0].len().max(self.route[1].len());
        let mut stlb_cycles = 0u64;
        let mut h = 0u64;
        for l in 0..nlev {
            let (mut n, mut hit) = (0, 0);
            for r in 0..2 {
                if l < self.lookups[r].len() {
                    n += self.lookups[r][l];
                    hit += self.level_hits[r][l];
                }
            }
            d.insert(format!("tlb_level{}.mpki", l + 1), per_k(n - hit));
            d.insert(format!("tlb_level{}.hit_rate", l + 1), if n > 0 { hit as f64 / n as f64 } else { 0.0 });
            if l >= 1 {
                h += hit;
                stlb_cycles += hit * self.level_latency[l];
            }
        }
        let walks = c["walker.walks"];
        let cyc = c["walker.cycles"];
        d.insert("H".into(), h as f64);
        d.insert("M".into(), walks as f64);
        d.insert("C".into(), cyc as f64);
        d.insert("walks_pki".into(), per_k(walks));
        d.insert("loads_per_walk".into(), if walks > 0 { c["walker.loads"] as f64 / walks as f64 } else { 0.0 });
        d.insert("cycles_per_walk".into(), if walks > 0 { cyc as f64 / walks as f64 } else { 0.0 });
        let base = instr * self.cfg.sim.base_cpi;
        let xlat = (stlb_cycles + cyc) as f64;
        let total = base + xlat;
        d.insert("time.base_cycles".into(), base);
        d.insert("time.stlb_hit_cycles".into(), stlb_cycles as f64);
        d.insert("time.walk_cycles".into(), cyc as f64);
        d.insert("time.total_cycles".into(), total);
        let share = |x: f64| if total > 0.0 { x / total } else { 0.0 };
        d.insert("time.translation_fraction".into(), share(xlat));
        d.insert("time.walk_share".into(), share(cyc as f64));
        d.insert("time.tlb_hit_share".into(), share(stlb_cycles as f64));
        d
    }

    /// Check the invariants that hold after every run; returns the first violated one.
    pub fn check_invariants(&self) -> Result<(), String> {
        for r in 0..2 {
            let n = self.lookups[r].len();
            for l in 0..n {
                if self.level_hits[r][l] > self.lookups[r][l] {
                    return Err(format!("level {} role {r}: hits exceed lookups", l + 1));
                }
                if l + 1 < n && self.lookups[r][l + 1] != self.lookups[r][l] - self.level_hits[r][l] {
                    return Err(format!("level {} lookups != level {} misses", l + 2, l + 1));
                }
            }
        }
        let last_misses: u64 = (0..2)
            .filter(|&r| !self.lookups[r].is_empty())
            .map(|r| {
                let l = self.lookups[r].len() - 1;
                self.lookups[r][l] - self.level_hits[r][l]
            })
            .sum();
        if last_misses != self.ws.walks {
            return Err(format!("walks {} != last-level misses {last_misses}", self.ws.walks));
        }
        if self.ws.loads() > self.ws.walks * self.os.levels() as u64 {
            return Err("more walk loads than walks x levels".into());
        }
        let min_loads = self.ws.walks_by_size[0] + self.ws.walks_by_size[1] + self.ws.walks_by_size[2];
        if self.ws.loads() < min_loads {
            return Err("a walk issued no load".into());
        }
        for i in 0..self.tlbs.len() {
            let s = self.tlb_stats(i);
            if s.hits + s.misses != s.accesses {
                return Err(format!("tlb {}: hits + misses != accesses", self.tlbs[i].name));
            }
        }
        if self.accesses != self.by_kind.iter().sum::<u64>() {
            return Err("accesses != loads + stores + ifetches".into());
        }
        Ok(())
    }

    /// The result of the run so far.
    pub fn result(&self, trace: &str) -> SimResult {
        let counters = self.counters();
        let derived = self.derived(&counters);
        let series = (!self.series.is_empty()).then(|| {
            let (unit, every) = if self.cfg.sim.interval_accesses > 0 {
                ("accesses", self.cfg.sim.interval_accesses)
            } else {
                ("instructions", self.cfg.sim.interval_instructions)
            };
            Series {
                unit: unit.into(),
                every,
                columns: counters.keys().cloned().collect(),
                rows: self.series.iter().map(|s| s.2.clone()).collect(),
            }
        });
        SimResult {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            xlat_version: env!("CARGO_PKG_VERSION").into(),
            trace: trace.into(),
            config_name: self.cfg.name.clone(),
            config_hash: self.cfg.hash_hex(),
            policy: self.os.policy_name().into(),
            counters,
            derived,
            fragmentation: serde_json::to_value(self.os.fragmentation()).expect("serialises"),
            series,
            miss_profile: self.miss_profile.as_ref().map(|p| {
                let mut v: Vec<(u64, u64)> = p.iter().map(|(&k, &n)| (k << 21, n)).collect();
                v.sort_unstable();
                v
            }),
            config: self.cfg.to_json(),
        }
    }
}

fn struct_fields(s: &StructStats) -> [(&'static str, u64); 6] {
    [
        ("accesses", s.accesses),
        ("hits", s.hits),
        ("misses", s.misses),
        ("fills", s.fills),
        ("evictions", s.evictions),
        ("invalidations", s.invalidations),
    ]
}

pub const SCHEMA: &str = "xlat-sim-result";
pub const SCHEMA_VERSION: u32 = 1;

/// Counters sampled during the run (cumulative values, one row per sample).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Series {
    pub unit: String,
    pub every: u64,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<u64>>,
}

/// What one simulation produces (`docs/simulator.md` documents every field).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SimResult {
    pub schema: String,
    pub schema_version: u32,
    pub xlat_version: String,
    pub trace: String,
    pub config_name: String,
    pub config_hash: String,
    pub policy: String,
    pub counters: BTreeMap<String, u64>,
    pub derived: BTreeMap<String, f64>,
    pub fragmentation: serde_json::Value,
    pub series: Option<Series>,
    /// `sim.miss_profile`: (2MB region start address, walks in it), by address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub miss_profile: Option<Vec<(u64, u64)>>,
    pub config: serde_json::Value,
}

impl SimResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("result serialises")
    }
}

/// Run `src` through a simulator of `cfg`; `on_batch` is called after each batch (progress).
pub fn simulate(
    src: &mut dyn EventSource,
    trace: &str,
    cfg: &Config,
    mut on_batch: impl FnMut(&dyn EventSource),
) -> Result<SimResult, Error> {
    let mut sim = Simulator::new(cfg)?;
    let mut b = Batch::default();
    while src.next_batch(&mut b)? {
        sim.batch(&b)?;
        on_batch(src);
    }
    if let Err(e) = sim.check_invariants() {
        panic!("simulator invariant violated: {e}");
    }
    Ok(sim.result(trace))
}

/// Open `trace`, decoding on a thread of its own if `pipeline` (see [`crate::pipeline`]).
pub fn open_source(trace: &str, pipeline: bool) -> Result<Box<dyn EventSource>, Error> {
    let src = xlat_trace::source::open(trace)?;
    Ok(if pipeline { Box::new(crate::pipeline::pipelined(src, 4)) } else { src })
}

/// Simulate `trace` (a path or workload spec) under each configuration, on up to `threads`
/// threads; results in configuration order, identical for any thread count. When there are at
/// least twice as many threads as configurations, each simulation also gets a decoding thread.
pub fn simulate_many(trace: &str, cfgs: &[Config], threads: usize) -> Vec<Result<SimResult, Error>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let out: Vec<Mutex<Option<Result<SimResult, Error>>>> = cfgs.iter().map(|_| Mutex::new(None)).collect();
    let pipeline = threads >= 2 * cfgs.len().max(1);
    let threads = threads.clamp(1, cfgs.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= cfgs.len() {
                    break;
                }
                let r =
                    open_source(trace, pipeline).and_then(|mut src| simulate(src.as_mut(), trace, &cfgs[i], |_| {}));
                *out[i].lock().expect("no poisoning") = Some(r);
            });
        }
    });
    out.into_iter().map(|m| m.into_inner().expect("no poisoning").expect("every config ran")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets;
    use xlat_trace::{Access, AccessKind, Syscall, SyscallKind};

    fn skylake(sets: &[&str]) -> Config {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Config::from_toml("skylake", presets::get("skylake").expect("preset"), &sets).expect("valid")
    }

    fn mmap(b: &mut Batch, addr: u64, len: u64, flags: u64) {
        let s = Syscall { kind: SyscallKind::Mmap, args: [0, len, 3, flags, u64::MAX, 0], ret: addr as i64 };
        b.push_side(1, 0, SideBody::Syscall(s));
    }

    #[test]
    fn the_skylake_shaped_loop_counts_what_the_generic_one_counts() {
        // Loads, stores and instruction fetches over 4KB pages (2 GiB anonymous), 2MB pages (64
        // MiB hugetlb) and 1GB pages (24 GiB hugetlb), half of them near a recent address (TLB
        // and memo hits), the rest anywhere (walks through every cache level): the Skylake
        // preset's shaped loop and the general loop give every counter alike.
        const G: u64 = 1 << 30;
        let (anon, huge2m, huge1g) = (0x7000_0000_0000u64, 0x7100_0000_0000u64, 0x7200_0000_0000u64);
        let regions = [(anon, 2 * G), (huge2m, 64 << 20), (huge1g, 24 * G)];
        let mut batches = vec![Batch::default()];
        mmap(&mut batches[0], anon, 2 * G, 0x22);
        mmap(&mut batches[0], huge2m, 64 << 20, 0x22 | 0x40000 | (21 << 26));
        mmap(&mut batches[0], huge1g, 24 * G, 0x22 | 0x40000 | (30 << 26));
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut recent = anon;
        for i in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let addr = if x & 1 == 0 {
                recent ^ ((x >> 8) & 0x3fff)
            } else {
                let (base, len) = regions[(x >> 1) as usize % 3];
                base + (x >> 16) % len
            };
            recent = addr;
            let kind = [AccessKind::Load, AccessKind::Store, AccessKind::IFetch][(x >> 4) as usize % 3];
            if i % 50_000 == 0 {
                batches.push(Batch::default());
            }
            let b = batches.last_mut().expect("a batch");
            b.push_access(Access { addr: addr & !7, icount: i + 1, tid: 1, size: 8, kind });
        }
        let run = |shaped: bool| {
            let mut s = Simulator::new(&skylake(&[])).expect("simulator");
            assert!(s.skylake_shape, "the Skylake preset has the Skylake shape");
            s.skylake_shape = shaped;
            for b in &batches {
                s.batch(b).expect("simulate");
            }
            s.check_invariants().expect("invariants");
            s.counters()
        };
        let (shaped, general) = (run(true), run(false));
        for k in [
            "tlb.l1d-4k.hits",
            "tlb.l1d-2m.hits",
            "tlb.l1d-1g.hits",
            "tlb.l1i-4k.hits",
            "tlb.l1i-2m.hits",
            "tlb.stlb.hits",
            "tlb.stlb-1g.hits",
            "psc.pde.hits",
            "walker.loads.pd.L1D",
            "walker.loads.pt.L2",
            "walker.loads.pt.LLC",
            "walker.loads.pt.DRAM",
        ] {
            assert!(shaped[k] > 100, "{k} = {} does not exercise the loop", shaped[k]);
        }
        assert_eq!(shaped, general);
    }

    #[test]
    fn only_configurations_of_the_skylake_shape_take_its_loop() {
        let shaped = |sets: &[&str]| Simulator::new(&skylake(sets)).expect("simulator").skylake_shape;
        assert!(shaped(&[]));
        assert!(shaped(&["tlb.stlb.entries=3072"]), "256 sets of 12 ways: the same class");
        assert!(shaped(&["tlb.l1d-4k.replacement=\"fifo\""]), "FIFO keeps recency rows");
        assert!(!shaped(&["tlb.l1d-4k.replacement=\"tree-plru\""]));
        assert!(!shaped(&["tlb.l1d-4k.ways=8"]));
        assert!(!shaped(&["tlb.l1d-4k.entries=48"]), "12 sets: not a mask");
        assert!(!shaped(&["tlb.stlb.ways=16"]));
        assert!(!shaped(&["psc.pde.ways=8"]));
        assert!(!shaped(&["walker.first_cache=\"L2\""]));
        assert!(!shaped(&["cache.L2.ways=8"]));
        for other in ["haswell", "zen4"] {
            let cfg = Config::from_toml(other, presets::get(other).expect("preset"), &[]).expect("valid");
            assert!(!Simulator::new(&cfg).expect("simulator").skylake_shape, "{other}");
        }
    }
}
