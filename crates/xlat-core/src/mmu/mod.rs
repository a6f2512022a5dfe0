//! The MMU model: page TLBs (any number of levels, split or unified, per-size index bits),
//! range TLBs in the miss path, the memo of first-level hits, the routes that say what each
//! access probes and fills, invalidation, and the miss handlers ([`walker`]: the radix hardware
//! walker with its paging-structure caches, or a software handler). The MMU asks the OS model
//! for translations; it owns no policy.
//!
//! Thesis (seed 000) chapter 2 (TLBs, MMU caches) and Table 5.1: split L1 TLBs per page size, a
//! unified L2 holding 4KB and 2MB entries; Intel SDM vol. 3 4.10.3 for the paging-structure
//! caches.
//!
//! The per-access path (`probe_first`, `probe_deep`, `fill_above`) is `#[inline(always)]`: the
//! simulator's loop compiles it with the structures' geometry ([`Lanes`]) as constants.

pub mod cluster;
pub mod hook;
pub mod keys;
mod lite;
pub mod mach;
mod memo;
pub mod observer;
pub(crate) use memo::MEMO;
pub mod prefetch;
pub mod prism;
pub mod psc;
pub mod range;
pub mod range_walk;
mod route;
pub mod segment;
pub mod tlb;
pub mod walker;

use crate::config::{Config, RangeFill};
use crate::os::Invalidation;
use crate::stats::{Counters, Sink, StructStats};
use crate::units::PageSize;
pub use cluster::ClusterTlb;
pub use keys::{asid_tag, key_range, tlb_key, VPN_BITS, VPN_MASK};
use memo::{Memo, MemoHit};
pub use psc::Psc;
pub use range::{RangeEntry, RangeTlb};
use route::{Probe, Routes, SideKind};
pub use segment::DirectSegment;
pub use tlb::Tlb;

/// The geometry a copy of the simulator's loop is compiled for: the class
/// ([`crate::array::SetAssoc::class`]) of the first-level data and instruction TLBs, of the
/// deeper TLBs that hold 4KB pages and of the paging-structure caches, and the lanes of the
/// three cache levels walk loads go through. All 0: any geometry (the general code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lanes {
    pub l1d: usize,
    pub l1i: usize,
    pub l2: usize,
    pub psc: usize,
    pub caches: [u32; 3],
}

impl Lanes {
    pub const ANY: Lanes = Lanes { l1d: 0, l1i: 0, l2: 0, psc: 0, caches: [0; 3] };
}

/// A geometry as a type, so that a copy of the loop (and every function it calls that is not
/// inlined) is compiled with its lanes as constants. `sim/shape.rs` defines the shapes and
/// decides which one a configuration runs.
pub trait Shape {
    const LANES: Lanes;
}

/// What [`Mmu::prefetch_fill`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefetchFill {
    /// The TLB took the entry.
    Filled,
    /// The TLB already held it (nothing changed).
    Held,
    /// The TLB holds no entry of the page's size.
    NotHeld,
}

/// The TLBs of one simulated core and what routes accesses through them.
pub struct Mmu {
    memo: Memo,
    /// Whether the memo is in use (see [`Mmu::set_memo`]).
    memo_on: bool,
    tlbs: Vec<Tlb>,
    /// Lite's LRU-distance counters per TLB (mmu/lite.rs; empty unless the Lite loop runs).
    lru_dist: Vec<[u64; 5]>,
    /// Range TLBs, each with its configured stage (1-based level).
    ranges: Vec<(RangeTlb, u32)>,
    /// Per role: the range TLBs of its first route level (L1-range TLBs), looked up with the
    /// first-level page TLBs on every access ([`Mmu::probe_first_ranges`]).
    first_ranges: [Vec<usize>; 2],
    /// Per range TLB: whether a hit fills the page TLBs above with the entry of the page `va`
    /// lies in (`fill = "page"`) rather than its 4KB entry.
    range_fill_page: Vec<bool>,
    /// The last [`Mmu::probe_deep`] was answered by a range TLB with `fill = "page"`.
    range_page_fill: bool,
    /// The memo of L1-range hits ([`Mmu::range_memo_hit`]).
    rmemo: Box<RangeMemo>,
    /// Section 4.8's baselines, each with its stage: the clustered TLB and the direct segment
    /// (the `extra` stages of the routes, in that order).
    cluster: Option<(ClusterTlb, u32)>,
    segment: Option<(DirectSegment, u32)>,
    /// Whether anything besides page TLBs sits in the miss path (the staged probe).
    staged: bool,
    /// Per role: the route level of the clustered TLB and the direct segment when they are
    /// the only structures besides the page TLBs and sit at one level (the staged probe's
    /// short form, [`Mmu::probe_with_extras`]).
    extras_level: [Option<u32>; 2],
    routes: Routes,
    /// `routes.fast` and `routes.deep` without the probes of page sizes their TLB holds no
    /// entry of (such a probe misses and changes nothing). Rebuilt when a size's count goes to
    /// or from zero, and after every invalidation or flush.
    fast_live: [Vec<Probe>; 2],
    deep_live: [Vec<Probe>; 2],
    /// First-level misses per role.
    l1_misses: [u64; 2],
    /// Lookups by miss handlers' own loads ([`Mmu::translate_nested`]) not yet counted.
    nested_lookups: [u64; 2],
    /// Per role and route level: lookups (level 0 counted per range from the accesses, the
    /// others derived: every miss of a level is a lookup of the next) and hits.
    lookups: [Vec<u64>; 2],
    level_hits: [Vec<u64>; 2],
    /// Per configured level: the slowest structure's hit latency (the time estimate).
    level_latency: Vec<u64>,
    /// Invalidation requests performed (`shootdowns.range`).
    shootdowns: u64,
    /// Address-space tag of the current address space (0 without ASIDs).
    tag: u64,
    asid_mode: bool,
    handler_tlb: bool, // `[mach]`: no page TLBs; every access reaches the handler, which holds the TLB
}

impl Mmu {
    pub fn new(cfg: &Config) -> Mmu {
        let seed = cfg.sim.seed;
        let tlbs: Vec<Tlb> = cfg
            .tlb
            .iter()
            .enumerate()
            .map(|(i, c)| Tlb::new(c, seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9)))
            .collect();
        let ranges: Vec<(RangeTlb, u32)> = cfg.range_tlb.iter().map(|c| (RangeTlb::new(c), c.stage)).collect();
        let cluster = cfg.cluster_tlb().map(|c| (ClusterTlb::new(c), c.stage));
        let segment = cfg.direct_segment().map(|d| (DirectSegment::new(d.latency), d.stage));
        let extra = [cluster.as_ref().map_or(0, |c| c.1), segment.as_ref().map_or(0, |d| d.1)];
        let extra_latency = [cluster.as_ref().map_or(0, |c| c.0.latency), segment.as_ref().map_or(0, |d| d.0.latency)];
        let routes = Routes::new(&tlbs, &ranges, &extra);
        let nlev = tlbs.iter().map(|t| t.level + 1).chain(ranges.iter().map(|r| r.1 as usize)).max().unwrap_or(0);
        let nlev = nlev.max(extra.iter().copied().max().unwrap_or(0) as usize);
        let level_latency: Vec<u64> = (0..nlev)
            .map(|l| {
                let pages = tlbs.iter().filter(|t| t.level == l).map(|t| t.latency);
                let rs = ranges.iter().filter(|r| r.1 as usize == l + 1).map(|r| r.0.latency);
                let xs = (0..2).filter(|&i| extra[i] as usize == l + 1).map(|i| extra_latency[i]);
                pages.chain(rs).chain(xs).max().unwrap_or(0)
            })
            .collect();
        let mut m = Mmu {
            memo: Memo::EMPTY,
            memo_on: true,
            lru_dist: Vec::new(),
            lookups: [vec![0; routes.levels(0)], vec![0; routes.levels(1)]],
            level_hits: [vec![0; routes.levels(0)], vec![0; routes.levels(1)]],
            fast_live: [Vec::new(), Vec::new()],
            deep_live: [Vec::new(), Vec::new()],
            l1_misses: [0; 2],
            nested_lookups: [0; 2],
            tlbs,
            staged: !ranges.is_empty() || cluster.is_some() || segment.is_some(),
            extras_level: std::array::from_fn(|r| {
                let sides = &routes.sides[r];
                let only_extras = sides.iter().all(|s| matches!(s.kind, SideKind::Extra(_)));
                match sides.first() {
                    Some(f) if only_extras && sides.iter().all(|s| s.level == f.level) => Some(f.level),
                    _ => None,
                }
            }),
            first_ranges: std::array::from_fn(|r| routes.ranges[r].first().cloned().unwrap_or_default()),
            range_fill_page: cfg.range_tlb.iter().map(|c| c.fill == RangeFill::Page).collect(),
            range_page_fill: false,
            rmemo: Box::new(RangeMemo::EMPTY),
            ranges,
            cluster,
            segment,
            routes,
            level_latency,
            shootdowns: 0,
            tag: 0,
            asid_mode: cfg.os.asid,
            handler_tlb: cfg.mach.is_some(),
        };
        m.live_probes();
        m
    }

    /// Rebuild `fast_live` and `deep_live` from the TLBs' entry counts per size.
    #[cold]
    fn live_probes(&mut self) {
        let tlbs = &self.tlbs;
        let live =
            |v: &Vec<Probe>| v.iter().copied().filter(|p| tlbs[p.tlb as usize].present[p.size as usize] > 0).collect();
        self.fast_live = [live(&self.routes.fast[0]), live(&self.routes.fast[1])];
        self.deep_live = [live(&self.routes.deep[0]), live(&self.routes.deep[1])];
    }

    /// Whether every page TLB the loop of geometry `lanes` probes unchecked has its class: the
    /// TLBs of each role's first route level (whatever their configured level); and the deeper
    /// TLBs that hold 4KB pages are of class `lanes.l2` (they are checked per use anyway, so
    /// this only keeps configurations that would fall back on every walk in the general loop).
    pub fn has_lanes(&self, lanes: Lanes) -> bool {
        (0..2).all(|r| {
            let first = if r == 0 { lanes.l1d } else { lanes.l1i };
            self.routes.tlbs[r].iter().enumerate().all(|(l, ts)| {
                ts.iter().all(|&t| {
                    let (tlb, c) = (&self.tlbs[t], self.tlbs[t].arr.class());
                    if l == 0 {
                        c == first
                    } else {
                        c == lanes.l2 || !tlb.sizes.contains(&PageSize::Size4K)
                    }
                })
            })
        })
    }

    /// Whether role `r` has first-level TLBs or the handler holds them (else: untranslated).
    #[inline(always)]
    pub fn translates(&self, r: usize) -> bool {
        !self.routes.fast[r].is_empty() || self.handler_tlb
    }

    /// The current address-space tag.
    #[inline(always)]
    pub fn tag(&self) -> u64 {
        self.tag
    }

    // ------------------------------------------------------------------ the per-access path

    /// The memo entry holding `va` for role bit `rbit` (its hit counted), if any.
    #[inline(always)]
    pub fn memo_hit(&mut self, va: u64, rbit: u64) -> Option<usize> {
        let j = self.memo.find(va, rbit)?;
        self.memo.hits[j] += 1;
        Some(j)
    }

    /// The translation of memo entry `j`: (frame, page size index).
    #[inline(always)]
    pub fn memo_translation(&self, j: usize) -> (u64, u8) {
        let h = self.memo.hit[j];
        (h.pfn, h.size)
    }

    /// Probe role `r`'s first-level TLBs for `va`, whose class is `lanes` (0: any); on a hit,
    /// enter the memo (if `MEMO`) and return (frame, page size index).
    #[inline(always)]
    pub fn probe_first<const MEMO: bool>(&mut self, lanes: usize, r: usize, va: u64) -> Option<(u64, u8)> {
        let (tag, rbit) = (self.tag, (r as u64) << 63);
        for k in 0..self.fast_live[r].len() {
            let p = self.fast_live[r][k];
            let tlb = &mut self.tlbs[p.tlb as usize];
            // SAFETY: `lanes` is 0 or the shape's class of role `r`'s first route level, which
            // the caller's `has_lanes` checked for every TLB of that level before its loop was
            // chosen (classes never change).
            if let (set, Some(pfn)) = unsafe { tlb.probe_as::<true>(lanes, va, p.shift, p.size_bits, tag) } {
                if MEMO {
                    let h = MemoHit { tlb: p.tlb, set: set as u32, size: p.size, pfn };
                    self.memo.insert(&mut self.tlbs, va, rbit, p.shift, h);
                }
                return Some((pfn, p.size));
            }
        }
        None
    }

    /// Whether a TLB of role `r`'s route level `level` holds the page of size `size` around
    /// `va`, without changing anything (Rainbow's cases 1 and 2: the superpage TLB probed in
    /// parallel with the 4KB TLB that hit).
    pub fn holds_at(&self, r: usize, level: usize, va: u64, size: PageSize) -> bool {
        let Some(ts) = self.routes.tlbs[r].get(level) else {
            return false;
        };
        let key = tlb_key(va, size, self.tag);
        ts.iter().any(|&t| {
            let arr = &self.tlbs[t].arr;
            self.tlbs[t].sizes.contains(&size) && arr.contains(arr.set_of(key & VPN_MASK), key)
        })
    }

    /// The 4KB entry of `va` in role `r`'s TLBs of route levels `from..`, first found: its
    /// level, frame and that level's hit latency. The entry becomes its set's most recently used,
    /// but no hit is counted (the access was counted as a hit above; Rainbow's split TLBs, whose
    /// 4KB side is probed in parallel with a superpage hit above).
    pub fn find_4k_below(&mut self, r: usize, from: usize, va: u64) -> Option<(usize, u64, u64)> {
        let (tag, size) = (self.tag, PageSize::Size4K as u8);
        for k in 0..self.deep_live[r].len() {
            let p = self.deep_live[r][k];
            if (p.level as usize) < from || p.size != size {
                continue;
            }
            let tlb = &mut self.tlbs[p.tlb as usize];
            if let (_, Some(pfn)) = tlb.probe(va, p.shift, p.size_bits, tag) {
                tlb.stats.hits -= 1;
                return Some((p.level as usize, pfn, self.level_latency[p.level as usize]));
            }
        }
        None
    }

    /// Whether the last [`Mmu::probe_deep`] hit a range TLB whose hits fill the page's own
    /// entry (`fill = "page"`); clears it.
    #[inline(always)]
    pub fn take_range_page_fill(&mut self) -> bool {
        std::mem::take(&mut self.range_page_fill)
    }

    /// Whether role `r` has range TLBs at its first route level.
    #[inline(always)]
    pub fn has_first_ranges(&self, r: usize) -> bool {
        !self.first_ranges[r].is_empty()
    }

    /// Look up role `r`'s first-level range TLBs for `va` (seed 000 section 5.4.3: the L1-range
    /// TLB "is accessed on every memory operation in parallel with the L1-page TLBs"): every one
    /// counts its hit; the frame of `va`'s 4KB page from the first that hit. Their lookups are
    /// the first level's (every access). A hit fills nothing: the translation comes from the
    /// range entry.
    #[inline]
    pub fn probe_first_ranges(&mut self, r: usize, va: u64) -> Option<(u64, u32)> {
        self.flush_range_memo();
        let tag = self.tag;
        if let [i] = self.first_ranges[r][..] {
            let t = &mut self.ranges[i].0;
            let k = t.find(va, tag)?;
            t.rehit(k);
            let e = t.entry(k);
            return Some((e.pfn + ((va - e.base) >> 12), k as u32));
        }
        let mut found = None;
        for &i in &self.first_ranges[r] {
            let pfn = self.ranges[i].0.probe(va, tag);
            found = found.or(pfn);
        }
        // (Several L1 range TLBs: no memo of their hits.)
        found.map(|pfn| (pfn, u32::MAX))
    }

    /// After the first-level page TLBs missed and the L1 range TLB hit entry `k` (from
    /// [`Mmu::probe_first_ranges`]): remember the page for [`Mmu::range_memo_hit`].
    #[inline(always)]
    pub fn range_memo_insert(&mut self, r: usize, va: u64, k: u32, pfn: u64) {
        if k != u32::MAX {
            self.rmemo.insert(va, (r as u64) << 63, k, pfn);
        }
    }

    /// The memo of L1-range hits: an access to a page whose last access missed the first-level
    /// page TLBs and hit the (one) L1 range TLB, with no first-level fill, range TLB fill or
    /// side event since, misses the page TLBs again (nothing was added to them; a probe miss
    /// changes no replacement state, and their misses are counted as first-level lookups
    /// minus hits) and hits the same range entry: count that hit, skip the probes. `None` when
    /// the page is not in the memo. Exact: the range TLB's and the page TLBs' counts and state
    /// are what the probes would leave.
    #[inline(always)]
    pub fn range_memo_hit(&mut self, r: usize, va: u64) -> Option<u64> {
        let (j, pfn) = self.rmemo.find(va, (r as u64) << 63)?;
        if r == 0 {
            // The data side's hits are counted when the memo is flushed or emptied.
            self.rmemo.defer(j);
        } else {
            self.flush_range_memo();
            let i = self.first_ranges[r][0];
            self.ranges[i].0.rehit(self.rmemo.entry[j] as usize);
        }
        Some(pfn)
    }

    /// Count the memo's deferred L1-range hits in the data side's L1 range TLB (before anything
    /// else looks at or changes it, and at the end of every range).
    #[inline]
    fn flush_range_memo(&mut self) {
        if self.rmemo.hits != 0 {
            let i = self.first_ranges[0][0];
            self.rmemo.flush_into(&mut self.ranges[i].0);
        }
    }

    /// Empty the memo of L1-range hits, its deferred hits counted first.
    #[inline(always)]
    fn clear_range_memo(&mut self) {
        clear_range_memo(&mut self.rmemo, &mut self.ranges, &self.first_ranges);
    }

    /// Count a first-level miss of role `r`.
    #[inline(always)]
    pub fn count_first_miss(&mut self, r: usize) {
        self.l1_misses[r] += 1;
    }

    /// Probe the levels below the first for `va` (role `r`; `l2` the class of the deeper TLBs
    /// that hold 4KB pages, checked per use): (route level, frame, page size) of the first hit,
    /// counted as that level's hit. Lookups per level are derived from the hits
    /// ([`Mmu::count_lookups`]): every miss of a level is a lookup of the next. `RANGES`: the
    /// range TLBs of each level are probed with its page TLBs (`ranges` a constant of the
    /// caller's variant: false compiles the range TLBs out).
    #[inline(always)]
    pub fn probe_deep<S: Shape>(&mut self, r: usize, va: u64, ranges: bool) -> Option<(usize, u64, PageSize)> {
        let l2 = S::LANES.l2;
        if ranges && self.staged {
            if let Some(x) = self.extras_level[r] {
                return self.probe_with_extras::<S>(r, va, x as usize);
            }
            return self.probe_staged::<S>(r, va);
        }
        let tag = self.tag;
        let mut found = None;
        for p in &self.deep_live[r] {
            // SAFETY: not KNOWN: the class is checked.
            if let (_, Some(pfn)) =
                unsafe { self.tlbs[p.tlb as usize].probe_as::<false>(l2, va, p.shift, p.size_bits, tag) }
            {
                found = Some((p.level as usize, pfn, PageSize::from_index(p.size as usize)));
                break;
            }
        }
        if let Some((l, _, _)) = found {
            self.level_hits[r][l] += 1;
        }
        found
    }

    /// [`Mmu::probe_deep`] with range TLBs: level by level (the first level's range TLBs were
    /// looked up with its page TLBs, [`Mmu::probe_first_ranges`]; a clustered TLB or direct
    /// segment at the first level is probed here, its hit returned as level 0), the page TLBs
    /// and then every other structure of the level (range TLBs, then the clustered TLB and the
    /// direct segment: all probed, as in parallel); a page-TLB hit wins over the others' hits at the same level (all
    /// count their hit). A range hit translates the 4KB page of `va` and fills the range TLBs
    /// of the stages above with its range (the first range TLB's that hit).
    ///
    /// The levels without side structures cost what [`Mmu::probe_deep`] does: the page TLBs
    /// are probed in one run up to the next level that has some.
    #[inline(never)]
    fn probe_staged<S: Shape>(&mut self, r: usize, va: u64) -> Option<(usize, u64, PageSize)> {
        let (l2, tag) = (S::LANES.l2, self.tag);
        self.range_page_fill = false;
        let (nd, ns) = (self.deep_live[r].len(), self.routes.sides[r].len());
        let (mut k, mut j) = (0, 0);
        loop {
            let level = if j < ns { self.routes.sides[r][j].level as usize } else { usize::MAX };
            // The page TLBs of the levels above: the first hit is the answer.
            while k < nd {
                let p = self.deep_live[r][k];
                if p.level as usize >= level {
                    break;
                }
                k += 1;
                // SAFETY: not KNOWN: the class is checked.
                if let (_, Some(pfn)) =
                    unsafe { self.tlbs[p.tlb as usize].probe_as::<false>(l2, va, p.shift, p.size_bits, tag) }
                {
                    self.level_hits[r][p.level as usize] += 1;
                    return Some((p.level as usize, pfn, PageSize::from_index(p.size as usize)));
                }
            }
            if level == usize::MAX {
                return None;
            }
            // This level: its page TLBs (up to a hit), then every side structure.
            let mut found = None;
            while k < nd && self.deep_live[r][k].level as usize == level {
                let p = self.deep_live[r][k];
                k += 1;
                if found.is_none() {
                    // SAFETY: not KNOWN: the class is checked.
                    if let (_, Some(pfn)) =
                        unsafe { self.tlbs[p.tlb as usize].probe_as::<false>(l2, va, p.shift, p.size_bits, tag) }
                    {
                        found = Some((level, pfn, PageSize::from_index(p.size as usize)));
                    }
                }
            }
            let mut range = None;
            while j < ns && self.routes.sides[r][j].level as usize == level {
                let side = self.routes.sides[r][j];
                j += 1;
                let pfn = match side.kind {
                    // The first level's range TLBs were looked up with its page TLBs.
                    SideKind::Range(_) if level == 0 => None,
                    SideKind::Range(i) => self.ranges[i as usize].0.probe_entry(va, tag).map(|e| {
                        range = range.or(Some(e));
                        e.pfn + ((va - e.base) >> 12)
                    }),
                    SideKind::Extra(0) => self.cluster.as_mut().and_then(|c| c.0.probe(va, tag)),
                    SideKind::Extra(_) => self.segment.as_mut().and_then(|d| d.0.probe(va)),
                };
                if found.is_none() && pfn.is_some() {
                    // The translation comes from this side: a range TLB that fills the page's
                    // own entry asks the caller for it (`take_range_page_fill`).
                    self.range_page_fill = matches!(side.kind, SideKind::Range(i) if self.range_fill_page[i as usize]);
                }
                found = found.or(pfn.map(|pfn| (level, pfn, PageSize::Size4K)));
            }
            if let Some(e) = range {
                for above in 0..level {
                    self.fill_ranges_at(r, above, e);
                }
            }
            if found.is_some() {
                match level {
                    0 => self.l1_misses[r] -= 1,
                    l => self.level_hits[r][l] += 1,
                }
                return found;
            }
        }
    }

    /// [`Mmu::probe_staged`] when the clustered TLB and the direct segment, at route level `x`,
    /// are the only structures besides the page TLBs: the page TLBs up to level `x` (the first
    /// hit above `x` is the answer), the extras at `x` (probed even after a page-TLB hit there;
    /// that hit wins), then the page TLBs below.
    #[inline(never)]
    fn probe_with_extras<S: Shape>(&mut self, r: usize, va: u64, x: usize) -> Option<(usize, u64, PageSize)> {
        let (l2, tag) = (S::LANES.l2, self.tag);
        let n = self.deep_live[r].len();
        let mut found = None;
        let mut k = 0;
        while k < n {
            let p = self.deep_live[r][k];
            if p.level as usize > x {
                break;
            }
            k += 1;
            // SAFETY: not KNOWN: the class is checked.
            if let (_, Some(pfn)) =
                unsafe { self.tlbs[p.tlb as usize].probe_as::<false>(l2, va, p.shift, p.size_bits, tag) }
            {
                found = Some((p.level as usize, pfn, PageSize::from_index(p.size as usize)));
                break;
            }
        }
        if found.is_none_or(|f| f.0 == x) {
            // (Both sit at `x`: every configured extra is a side of both roles.)
            let c = self.cluster.as_mut().and_then(|c| c.0.probe(va, tag));
            let d = self.segment.as_mut().and_then(|d| d.0.probe(va));
            found = found.or(c.or(d).map(|pfn| (x, pfn, PageSize::Size4K)));
            // The page TLBs below.
            while found.is_none() && k < n {
                let p = self.deep_live[r][k];
                k += 1;
                // SAFETY: not KNOWN: the class is checked.
                if let (_, Some(pfn)) =
                    unsafe { self.tlbs[p.tlb as usize].probe_as::<false>(l2, va, p.shift, p.size_bits, tag) }
                {
                    found = Some((p.level as usize, pfn, PageSize::from_index(p.size as usize)));
                }
            }
        }
        if let Some((l, _, _)) = found {
            self.level_hits[r][l] += 1;
        }
        found
    }

    /// Translate `va` for a miss handler's own load (role `r`) through the TLBs: counted as a
    /// lookup of every level it reaches, a hit below the first level filling the levels
    /// above; the frame of its 4KB page, or None when every level missed (a nested miss, which
    /// the caller handles and fills).
    pub fn translate_nested<S: Shape>(&mut self, r: usize, va: u64) -> Option<u64> {
        self.nested_lookups[r] += 1;
        let lanes = if r == 0 { S::LANES.l1d } else { S::LANES.l1i };
        let range = if self.has_first_ranges(r) { self.probe_first_ranges(r, va) } else { None };
        if let Some((pfn, size)) = self.probe_first::<false>(lanes, r, va) {
            return Some(pfn + ((va & (PageSize::from_index(size as usize).bytes() - 1)) >> 12));
        }
        if let Some((pfn, _)) = range {
            return Some(pfn);
        }
        self.l1_misses[r] += 1;
        let (l, pfn, s) = self.probe_deep::<S>(r, va, true)?;
        // (A clustered TLB's or direct segment's hit at the first level is level 0: it fills the
        // first level.)
        self.fill_above::<S>(r, l.max(1), va, s, pfn);
        Some(pfn + ((va & (s.bytes() - 1)) >> 12))
    }

    /// Route levels of role `r` (the level a walk's translation fills from).
    #[inline(always)]
    pub fn levels(&self, r: usize) -> usize {
        self.routes.levels(r)
    }

    /// Fill the TLBs of levels below `upto` that hold `s` pages with the translation of `va`
    /// (page at frame `pfn`). While the memo is on, the first first-level fill enters it (it is
    /// the first of the level in probe order, the one an access to the page would hit), and any
    /// other drops the memo entries of the set it filled.
    #[inline(always)]
    pub fn fill_above<S: Shape>(&mut self, r: usize, upto: usize, va: u64, s: PageSize, pfn: u64) {
        let lanes = S::LANES;
        let tag = self.tag;
        let rbit = (r as u64) << 63;
        let mut first = true;
        let mut flipped = false;
        for &(l, t, held) in &self.routes.fills[r][s as usize] {
            if l >= upto {
                break;
            }
            let tlb = &mut self.tlbs[t];
            // SAFETY: the first route level's TLBs are of the shape's class of the role
            // (`has_lanes`); the deeper ones are checked (not KNOWN).
            let (set, entry, f) = unsafe {
                if l != 0 {
                    tlb.fill_shaped::<false>(lanes.l2, va, s, held, pfn, tag)
                } else if lanes.l1d == lanes.l1i || r == 0 {
                    tlb.fill_shaped::<true>(lanes.l1d, va, s, held, pfn, tag)
                } else {
                    tlb.fill_shaped::<true>(lanes.l1i, va, s, held, pfn, tag)
                }
            };
            flipped |= f;
            if l == 0 {
                clear_range_memo(&mut self.rmemo, &mut self.ranges, &self.first_ranges);
            }
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

    /// Prefetch the translation of `va` (a `size` page at frame `pfn`) into TLB `t`, as a fill
    /// that no lookup asked for (a prefetcher after a walk): whether the TLB took it. Not for
    /// first-level TLBs (the memo of first-level hits is not told).
    pub fn prefetch_fill(&mut self, t: usize, va: u64, size: PageSize, pfn: u64) -> PrefetchFill {
        let tlb = &mut self.tlbs[t];
        let Some(s) = tlb.holds(size) else {
            return PrefetchFill::NotHeld;
        };
        if tlb.has_entry(va, s, self.tag) {
            return PrefetchFill::Held;
        }
        if tlb.fill_as(va, size, s, pfn, self.tag).2 {
            self.live_probes();
        }
        PrefetchFill::Filled
    }

    /// Fill every range TLB of role `r` with `e` (after a walk found its range).
    pub fn fill_ranges(&mut self, r: usize, e: RangeEntry) {
        for l in 0..self.routes.ranges[r].len() {
            self.fill_ranges_at(r, l, e);
        }
    }

    /// Fill the range TLBs of role `r`'s route level `l` with `e`.
    fn fill_ranges_at(&mut self, r: usize, l: usize, e: RangeEntry) {
        self.clear_range_memo();
        for &i in &self.routes.ranges[r][l] {
            self.ranges[i].0.fill(RangeEntry { tag: self.tag, ..e });
        }
    }

    /// Fill the clustered TLB after a walk of `va`'s 4KB page at frame `pfn`, from the frames
    /// of its cluster's 4KB pages (the page-table line [`cluster::cluster_line`] reads).
    #[inline(always)]
    pub fn fill_cluster(&mut self, va: u64, pfn: u64, line: &crate::os::pagetable::PteLine) {
        if let Some((c, _)) = &mut self.cluster {
            c.fill(va, self.tag, pfn, line);
        }
    }

    /// The clustered TLB, if configured.
    pub fn cluster_tlb(&self) -> Option<&ClusterTlb> {
        self.cluster.as_ref().map(|c| &c.0)
    }

    /// The direct segment, if configured.
    pub fn direct_segment(&self) -> Option<&DirectSegment> {
        self.segment.as_ref().map(|d| &d.0)
    }

    /// The direct segment's registers, to load them (the engine, off the access path).
    pub fn direct_segment_mut(&mut self) -> Option<&mut DirectSegment> {
        self.segment.as_mut().map(|d| &mut d.0)
    }

    /// Whether a walk fills or synchronises anything besides the page TLBs and range TLBs
    /// (the clustered TLB, the direct segment).
    #[inline(always)]
    pub fn has_baselines(&self) -> bool {
        self.cluster.is_some() || self.segment.is_some()
    }

    /// Whether range TLBs sit in the miss path.
    pub fn has_ranges(&self) -> bool {
        !self.ranges.is_empty()
    }

    // ------------------------------------------------------------------ memo, ranges

    /// Switch the memo on or off (off empties it). Off or on, results are the same: the memo
    /// only skips probes that change nothing.
    #[inline]
    pub fn set_memo(&mut self, on: bool) {
        if self.memo_on && !on {
            self.memo.clear(&mut self.tlbs);
            self.clear_range_memo();
        }
        self.memo_on = on;
    }

    #[inline(always)]
    pub fn memo_on(&self) -> bool {
        self.memo_on
    }

    /// First-level misses so far, both roles.
    #[inline(always)]
    pub fn first_misses(&self) -> u64 {
        self.l1_misses[0] + self.l1_misses[1]
    }

    /// Add the memo's pending hits to the TLBs' counts (at the end of every range).
    pub fn flush_memo(&mut self) {
        self.memo.flush(&mut self.tlbs);
        self.flush_range_memo();
    }

    /// Empty the memo (before any side event: it may change mappings or the address space).
    pub fn clear_memo(&mut self) {
        self.memo.clear(&mut self.tlbs);
        self.clear_range_memo();
    }

    // ------------------------------------------------------------------ invalidation

    /// Perform the TLB invalidations an OS operation asked for (the caller flushes the
    /// paging-structure caches: INVLPG and CR3 writes may drop every PSC entry, SDM 4.10.4.1).
    pub fn invalidate(&mut self, inval: &[Invalidation]) {
        self.shootdowns += 1;
        self.memo.clear(&mut self.tlbs);
        self.clear_range_memo();
        for i in inval {
            match *i {
                Invalidation::Range { asid, start, end } => {
                    let tag = self.asid_mode.then(|| asid_tag(asid));
                    for t in &mut self.tlbs {
                        t.invalidate(start, end, tag);
                    }
                    for (r, _) in &mut self.ranges {
                        r.invalidate(start, end, tag);
                    }
                    if let Some((c, _)) = &mut self.cluster {
                        c.invalidate(start, end, tag);
                    }
                    // (The segment holds the current space's range; a shootdown of any space
                    // overlapping it drops it, and the next synchronisation reloads it.)
                    if let Some((d, _)) = &mut self.segment {
                        d.invalidate(start, end);
                    }
                }
                Invalidation::All => self.flush_tlbs(),
                Invalidation::Page4K { asid, va } => {
                    let tag = self.asid_mode.then(|| asid_tag(asid));
                    for t in &mut self.tlbs {
                        t.invalidate_4k(va, tag);
                    }
                }
            }
        }
        self.live_probes();
    }

    fn flush_tlbs(&mut self) {
        for t in &mut self.tlbs {
            t.flush();
        }
        for (r, _) in &mut self.ranges {
            r.flush();
        }
        if let Some((c, _)) = &mut self.cluster {
            c.flush();
        }
    }

    /// The current address space became `asid`: with ASIDs, a new tag; without, every TLB is
    /// flushed (returns true: the caller flushes the PSCs and counts it).
    pub fn switch_to(&mut self, asid: u32) -> bool {
        self.memo.clear(&mut self.tlbs);
        self.clear_range_memo();
        if self.asid_mode {
            self.tag = asid_tag(asid);
            return false;
        }
        self.flush_tlbs();
        self.live_probes();
        true
    }

    /// Use `ways` ways of TLB `name` from now on (way-disabling controllers); returns the
    /// entries invalidated.
    pub fn set_active_ways(&mut self, name: &str, ways: usize) -> Result<u64, String> {
        let i = self.tlbs.iter().position(|t| t.name == name).ok_or_else(|| format!("no TLB named '{name}'"))?;
        let max = self.tlbs[i].ways_max();
        if !(1..=max).contains(&ways) {
            return Err(format!("TLB '{name}' has {max} ways; {ways} cannot be active"));
        }
        self.memo.clear(&mut self.tlbs);
        self.clear_range_memo();
        let n = self.tlbs[i].set_active_ways(ways);
        self.live_probes();
        Ok(n)
    }

    /// Invalidation requests performed so far (one per OS operation that invalidated anything).
    pub fn shootdowns(&self) -> u64 {
        self.shootdowns
    }

    /// The TLBs (reports, controllers, tests).
    pub fn tlbs(&self) -> &[Tlb] {
        &self.tlbs
    }

    /// The range TLBs.
    pub fn range_tlbs(&self) -> impl Iterator<Item = &RangeTlb> {
        self.ranges.iter().map(|r| &r.0)
    }

    // ------------------------------------------------------------------ counting

    /// Count `per_role` accesses of each role as first-level lookups, and derive the lookups of
    /// the levels below (every miss of a level is a lookup of the next).
    pub fn count_lookups(&mut self, per_role: [u64; 2]) {
        for (r, n) in per_role.into_iter().enumerate() {
            let (lookups, hits) = (&mut self.lookups[r], &mut self.level_hits[r]);
            if !lookups.is_empty() {
                lookups[0] += n + std::mem::take(&mut self.nested_lookups[r]);
                hits[0] = lookups[0] - self.l1_misses[r];
                for l in 1..lookups.len() {
                    lookups[l] = lookups[l - 1] - hits[l - 1];
                }
            }
        }
    }

    /// Lookups of the route level that structure `is_here(role, level)` sits at, over roles.
    fn accesses_of(&self, is_here: impl Fn(usize, usize) -> bool) -> u64 {
        let mut accesses = 0;
        for r in 0..2 {
            for l in 0..self.routes.levels(r) {
                if is_here(r, l) {
                    accesses += self.lookups[r][l];
                }
            }
        }
        accesses
    }

    /// TLB `i`'s counters (every TLB of a level is probed on each lookup of that level for the
    /// roles it serves).
    pub fn tlb_stats(&self, i: usize) -> StructStats {
        let accesses = self.accesses_of(|r, l| self.routes.tlbs[r][l].contains(&i));
        let t = self.tlbs[i].stats;
        StructStats { accesses, misses: accesses - t.hits, ..t }
    }

    /// The clustered TLB's counters (`i` = 0) or the direct segment's (hits; `i` = 1).
    fn extra_stats(&self, i: usize) -> StructStats {
        let accesses = self.accesses_of(|r, l| self.routes.extras[r][l].contains(&i));
        let t = match i {
            0 => self.cluster.as_ref().map_or(StructStats::default(), |c| c.0.stats),
            _ => self.segment.as_ref().map_or(StructStats::default(), |d| StructStats {
                hits: d.0.hits,
                invalidations: d.0.invalidations,
                ..StructStats::default()
            }),
        };
        StructStats { accesses, misses: accesses - t.hits, ..t }
    }

    fn range_stats(&self, i: usize) -> StructStats {
        let accesses = self.accesses_of(|r, l| self.routes.ranges[r][l].contains(&i));
        let t = self.ranges[i].0.stats;
        StructStats { accesses, misses: accesses - t.hits, ..t }
    }

    /// The hit latency of level index `l` (the slowest structure's; 0 past the last level).
    pub fn level_latency(&self, l: usize) -> u64 {
        self.level_latency.get(l).copied().unwrap_or(0)
    }

    /// Per level index over both roles: (lookups, hits, slowest hit latency), for the derived
    /// figures (MPKI per level, H and the TLB-hit cycles).
    pub fn level_summary(&self) -> Vec<(u64, u64, u64)> {
        let nlev = self.routes.levels(0).max(self.routes.levels(1));
        (0..nlev)
            .map(|l| {
                let (mut n, mut hit) = (0, 0);
                for r in 0..2 {
                    if l < self.lookups[r].len() {
                        n += self.lookups[r][l];
                        hit += self.level_hits[r][l];
                    }
                }
                (n, hit, self.level_latency.get(l).copied().unwrap_or(0))
            })
            .collect()
    }

    /// Misses of the last level of each role's route, summed: the misses the handler served.
    pub fn last_level_misses(&self) -> u64 {
        (0..2)
            .filter(|&r| !self.lookups[r].is_empty())
            .map(|r| {
                let l = self.lookups[r].len() - 1;
                self.lookups[r][l] - self.level_hits[r][l]
            })
            .sum()
    }

    /// The invariants of the TLB counts; the first violated one.
    pub fn check(&self) -> Result<(), String> {
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
        for i in 0..self.tlbs.len() {
            let s = self.tlb_stats(i);
            if s.hits + s.misses != s.accesses {
                return Err(format!("tlb {}: hits + misses != accesses", self.tlbs[i].name));
            }
        }
        let extra_hits = [self.cluster.as_ref().map(|c| c.0.stats.hits), self.segment.as_ref().map(|d| d.0.hits)];
        for (i, what) in ["cluster_tlb", "direct_segment"].into_iter().enumerate() {
            let accesses = self.accesses_of(|r, l| self.routes.extras[r][l].contains(&i));
            if extra_hits[i].is_some_and(|h| h > accesses) {
                return Err(format!("{what}: hits exceed accesses"));
            }
        }
        Ok(())
    }
}

impl Counters for Mmu {
    fn counters(&self, out: &mut dyn Sink) {
        for (i, t) in self.tlbs.iter().enumerate() {
            self.tlb_stats(i).report("tlb", &t.name, out);
        }
        for (i, (t, _)) in self.ranges.iter().enumerate() {
            self.range_stats(i).report("range_tlb", &t.name, out);
            if t.mru {
                out.put(format_args!("range_tlb.{}.mru_hits", t.name), t.mru_hits);
            }
        }
        if self.cluster.is_some() {
            self.extra_stats(0).report_as("cluster_tlb", out);
        }
        if let Some((d, _)) = &self.segment {
            let s = self.extra_stats(1);
            for (k, v) in [
                ("accesses", s.accesses),
                ("hits", s.hits),
                ("misses", s.misses),
                ("loads", d.loads),
                ("invalidations", d.invalidations),
            ] {
                out.put(format_args!("direct_segment.{k}"), v);
            }
        }
        for (r, role) in ["data", "instruction"].iter().enumerate() {
            for (l, &n) in self.lookups[r].iter().enumerate() {
                let h = self.level_hits[r][l];
                out.put(format_args!("tlb_level{}.{role}.lookups", l + 1), n);
                out.put(format_args!("tlb_level{}.{role}.hits", l + 1), h);
                out.put(format_args!("tlb_level{}.{role}.misses", l + 1), n - h);
            }
        }
    }
}

/// [`Mmu::clear_range_memo`] over the fields it needs (for callers that hold other borrows).
#[inline(always)]
fn clear_range_memo(rm: &mut RangeMemo, ranges: &mut [(RangeTlb, u32)], first: &[Vec<usize>; 2]) {
    if rm.live {
        if rm.hits != 0 {
            rm.flush_into(&mut ranges[first[0][0]].0);
        }
        *rm = RangeMemo::EMPTY;
    }
}

/// The memo of L1-range hits ([`Mmu::range_memo_hit`]): up to 4 pages (page | role bit), each
/// with the index of its range TLB entry and its frame; round robin. The data side's hits are
/// deferred: counted here (how many, how many on the entry used just before, the order in which
/// entries became the most recent) and given to the range TLB ([`RangeTlb::absorb`]) before
/// anything else uses it, when the memo is emptied and at the end of every range.
#[derive(Clone, Copy)]
struct RangeMemo {
    key: [u64; 4],
    entry: [u32; 4],
    pfn: [u64; 4],
    next: usize,
    /// Whether any entry is set (clearing an empty memo costs a test: the copies without
    /// range TLBs never fill it).
    live: bool,
    /// Deferred hits; the entry of the first and of the last; hits (after the first) on the
    /// entry hit just before; per slot, when its entry last became the most recent (0: not
    /// since the last flush), counted in deferred hits.
    hits: u64,
    first: u32,
    last: u32,
    mru: u64,
    since: [u64; 4],
}

impl RangeMemo {
    const EMPTY: RangeMemo = RangeMemo {
        key: [u64::MAX; 4],
        entry: [0; 4],
        pfn: [0; 4],
        next: 0,
        live: false,
        hits: 0,
        first: 0,
        last: 0,
        mru: 0,
        since: [0; 4],
    };

    #[inline(always)]
    fn find(&self, va: u64, rbit: u64) -> Option<(usize, u64)> {
        let key = (va & !0xFFF) | rbit;
        (0..4).find(|&j| self.key[j] == key).map(|j| (j, self.pfn[j]))
    }

    /// A deferred hit on slot `j`'s entry.
    #[inline(always)]
    fn defer(&mut self, j: usize) {
        let k = self.entry[j];
        if self.hits == 0 {
            self.first = k;
        } else if k == self.last {
            self.mru += 1;
            self.hits += 1;
            return;
        }
        // The entry becomes the most recent (the count of hits serves as the clock).
        self.hits += 1;
        self.last = k;
        self.since[j] = self.hits;
    }

    fn flush_into(&mut self, t: &mut RangeTlb) {
        // The slots' entries in the order they last became the most recent (an entry held by
        // two slots: its later use wins, applied last).
        let mut slots = [0usize, 1, 2, 3];
        slots.sort_unstable_by_key(|&j| self.since[j]);
        let used = slots.into_iter().filter(|&j| self.since[j] != 0).map(|j| self.entry[j] as usize);
        t.absorb(self.hits, self.first as usize, self.mru, used, self.last as usize);
        self.hits = 0;
        self.mru = 0;
        self.since = [0; 4];
    }

    #[inline(always)]
    fn insert(&mut self, va: u64, rbit: u64, entry: u32, pfn: u64) {
        let key = (va & !0xFFF) | rbit;
        if (0..4).any(|j| self.key[j] == key) {
            return;
        }
        let j = self.next;
        self.key[j] = key;
        self.entry[j] = entry;
        self.pfn[j] = pfn;
        self.next = (j + 1) & 3;
        self.live = true;
    }
}
