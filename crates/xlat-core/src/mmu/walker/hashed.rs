//! Hashed page tables (`[hashed_pt]`, docs/hashed-page-tables.md): a TLB miss looks the page up
//! in a hash table instead of walking a radix tree.
//!
//! - **Elastic cuckoo** (Skarlatos et al., ASPLOS 2020): per page size, `d` ways, each a table
//!   of 64-byte entries indexed by its own hash of the page's cluster (8 consecutive pages share
//!   one entry, one line). A lookup probes one entry per way of every page size it must check,
//!   all in parallel: the miss costs the slowest probe. With a cuckoo walk cache, a hit names the
//!   one size to probe; a miss loads the 2MB region's cuckoo walk table entry first, in series.
//!   Inserts place an entry in a way chosen at random, displacing an occupant to another of its
//!   ways (cuckoo); past `resize_at` occupancy the table grows to twice the slots *gradually*:
//!   each insert migrates `rehash_per_insert` slots of every old way, and a lookup probes, per
//!   way, the new table where the migration has passed its old slot and the old table elsewhere
//!   (still one probe per way).
//! - **Chained**: per page size, a fixed array of buckets, each an entry; colliding entries chain
//!   from it through entries of an overflow area. A lookup loads the bucket, then the chain, one
//!   load after the other, size after size (4KB, 2MB, 1GB, the sizes the space has) until found.
//!
//! The tables live in simulated physical memory: their frames come from the OS model
//! (`Os::alloc_frame`; the OS's radix tables stay, as its own record of the mappings). The OS's
//! mapping is the truth: a page is inserted into the hashed table when it is first walked (as
//! the fault that mapped it would), its entry removed when the OS invalidates the range
//! (`MissHandler::invalidated`). Inserts, displacements and the rehash traffic are counted
//! (`hpt.*`); they are the OS's work, not the walk's loads.

use super::handler::{MissCx, MissHandler};
use crate::array::SetAssoc;
use crate::config::{Config, HashedConfig, HashedKind};
use crate::mem::backend::Backend;
use crate::mem::Caches;
use crate::mmu::Shape;
use crate::os::{Invalidation, Os, SimError};
use crate::stats::{Counters, Sink, StructStats};
use crate::units::PageSize;
use rustc_hash::FxHashMap;

/// Bytes of an entry (8 page entries of 8 bytes: one line).
const ENTRY: u64 = 64;
/// Entries per 4KB frame of a table.
const PER_FRAME: u64 = 4096 / ENTRY;
/// Pages per entry (the cluster).
const CLUSTER: u64 = 8;

/// A 64-bit finaliser (the mixing step of MurmurHash3's fmix64): way `w`'s hash of a key.
fn hash(key: u64, w: usize) -> u64 {
    let mut h = key ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(w as u64 + 1));
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// One way of a cuckoo table (or a chained table's buckets): its slots (key + 1, 0: empty) and
/// the frames they lie in.
struct Way {
    slots: Vec<u64>,
    frames: Vec<u64>,
}

impl Way {
    fn new(n: u64, os: &mut Os) -> Result<Way, SimError> {
        let frames = (0..n.div_ceil(PER_FRAME))
            .map(|_| os.alloc_frame(0).ok_or_else(|| out_of_memory(os)))
            .collect::<Result<Vec<u64>, SimError>>()?;
        Ok(Way { slots: vec![0; n as usize], frames })
    }

    fn pa(&self, i: u64) -> u64 {
        (self.frames[(i / PER_FRAME) as usize] << 12) + (i % PER_FRAME) * ENTRY
    }

    fn free(self, os: &mut Os) {
        for f in self.frames {
            os.free_frame(f);
        }
    }
}

fn out_of_memory(os: &Os) -> SimError {
    SimError::Invalid(format!(
        "the hashed page table needs another frame and physical memory has none free ({} frames in use); raise memory.size or lower hashed_pt.entries",
        os.stats().frames_in_use
    ))
}

/// One page size's table.
struct Table {
    /// Cuckoo: the current ways; chained: one, the buckets.
    ways: Vec<Way>,
    /// Cuckoo, while growing: the old ways and, per way, the slots migrated so far.
    old: Option<(Vec<Way>, Vec<u64>)>,
    /// Chained: per bucket, the chain after its entry (keys and their overflow entries'
    /// addresses); cuckoo: empty.
    chains: Vec<Vec<(u64, u64)>>,
    /// Chained: the overflow area's frames and its free entries.
    overflow: Vec<u64>,
    free: Vec<u64>,
    /// Entries held (clusters).
    entries: u64,
}

impl Table {
    /// The way `p` lies in: the old ways' (while growing) or the current ones'.
    fn way(&self, p: Place) -> &Way {
        if p.old {
            &self.old.as_ref().expect("growing").0[p.way]
        } else {
            &self.ways[p.way]
        }
    }

    fn way_mut(&mut self, p: Place) -> &mut Way {
        if p.old {
            &mut self.old.as_mut().expect("growing").0[p.way]
        } else {
            &mut self.ways[p.way]
        }
    }

    /// Every way held: the current ones and, while growing, the old ones.
    fn all_ways(&self) -> impl Iterator<Item = &Way> {
        self.ways.iter().chain(self.old.iter().flat_map(|o| o.0.iter()))
    }

    /// Chained: the bucket of cluster `k`.
    fn bucket(&self, k: u64) -> u64 {
        hash(k, 0) & (self.ways[0].slots.len() as u64 - 1)
    }
}

/// Counters of the walker and of the tables' upkeep.
#[derive(Debug, Clone, Default)]
struct Stats {
    walks: u64,
    walks_by_size: [u64; 3],
    faulting_walks: u64,
    /// Per hit level (caches..., memory): the probe loads.
    loads_at: Vec<u64>,
    loads_counted: Vec<u64>,
    cycles: u64,
    cwt_loads: u64,
    inserts: u64,
    removes: u64,
    kicks: u64,
    resizes: u64,
    rehash_moves: u64,
    chain_loads: u64,
}

/// Where a key lies: the old ways (while growing) or the current ones, the way and the slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Place {
    old: bool,
    way: usize,
    slot: u64,
}

/// The hashed page tables and their walker.
pub struct HashedWalker {
    cfg: HashedConfig,
    tables: [Option<Table>; 3],
    /// Cluster key -> the page bits it holds (bit i: page 8k + i mapped and inserted).
    members: [FxHashMap<u64, u8>; 3],
    cwc: Option<(SetAssoc, StructStats)>,
    /// The cuckoo walk table's frames, one per 1GB of an address space (512 regions x 8 bytes).
    cwt: FxHashMap<u64, u64>,
    rng: u64,
    latency: u64,
    ws: Stats,
    hit_names: Vec<String>,
}

/// How a lookup's probe at a table address is made: (where it hit, its latency).
pub(super) trait Load<B: Backend>: FnMut(&mut MissCx<'_, B>, u64) -> Result<(usize, u64), SimError> {}
impl<B: Backend, F: FnMut(&mut MissCx<'_, B>, u64) -> Result<(usize, u64), SimError>> Load<B> for F {}

/// A probe load at `pa` made by `load`, counted in `loads_at` by where it hit: its latency.
#[inline(always)]
fn load_at<B: Backend, L: Load<B>>(
    loads_at: &mut [u64],
    cx: &mut MissCx<'_, B>,
    load: &mut L,
    pa: u64,
) -> Result<u64, SimError> {
    let (hit, lat) = load(cx, pa)?;
    loads_at[hit] += 1;
    Ok(lat)
}

/// The key of the cluster of `va`'s page of size `s` in address space `asid`.
fn key(asid: u32, va: u64, s: PageSize) -> u64 {
    ((asid as u64) << 48) | ((va >> s.shift()) / CLUSTER)
}

impl HashedWalker {
    pub fn new(cfg: &Config) -> HashedWalker {
        let h = cfg.hashed_pt.clone().expect("a hashed walker needs [hashed_pt]");
        let ncache = cfg.cache.len();
        let mut hit_names: Vec<String> = cfg.cache.iter().map(|c| c.name.clone()).collect();
        hit_names.push("DRAM".into());
        let cwc = h.cwc.as_ref().map(|c| {
            (
                SetAssoc::new(c.entries as usize, c.ways as usize, c.replacement, cfg.sim.seed ^ 0xc3c),
                StructStats::default(),
            )
        });
        HashedWalker {
            tables: [None, None, None],
            members: Default::default(),
            cwc,
            cwt: FxHashMap::default(),
            rng: cfg.sim.seed | 1,
            latency: cfg.walker.latency,
            ws: Stats { loads_at: vec![0; ncache + 1], loads_counted: vec![0; ncache + 1], ..Default::default() },
            hit_names,
            cfg: h,
        }
    }

    /// Probe loads so far, by where they hit (the caches' levels, then memory).
    pub fn loads_at(&self) -> &[u64] {
        &self.ws.loads_at
    }

    /// Lookups that faulted their page in first.
    pub fn faulting_walks(&self) -> u64 {
        self.ws.faulting_walks
    }

    fn random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    fn table(&mut self, s: PageSize, os: &mut Os) -> Result<&mut Table, SimError> {
        if self.tables[s as usize].is_none() {
            let n = self.cfg.entries;
            let ways = match self.cfg.kind {
                HashedKind::Cuckoo => self.cfg.ways as usize,
                HashedKind::Chained => 1,
            };
            let ways = (0..ways).map(|_| Way::new(n, os)).collect::<Result<Vec<Way>, SimError>>()?;
            let buckets = if self.cfg.kind == HashedKind::Chained { n as usize } else { 0 };
            self.tables[s as usize] = Some(Table {
                ways,
                old: None,
                chains: vec![Vec::new(); buckets],
                overflow: Vec::new(),
                free: Vec::new(),
                entries: 0,
            });
        }
        Ok(self.tables[s as usize].as_mut().expect("made above"))
    }

    /// Cuckoo: where `k` goes in way `w`: the new ways where the migration passed its old slot.
    fn place_of(t: &Table, k: u64, w: usize) -> Place {
        let h = hash(k, w);
        if let Some((old, done)) = &t.old {
            let i = h & (old[w].slots.len() as u64 - 1);
            if i >= done[w] {
                return Place { old: true, way: w, slot: i };
            }
        }
        Place { old: false, way: w, slot: h & (t.ways[w].slots.len() as u64 - 1) }
    }

    fn slot(t: &mut Table, p: Place) -> &mut u64 {
        &mut t.way_mut(p).slots[p.slot as usize]
    }

    fn slot_of(t: &Table, p: Place) -> u64 {
        t.way(p).slots[p.slot as usize]
    }

    /// Whether table `s` holds cluster `k` (the slots a lookup probes, or the bucket's chain).
    fn holds(&self, k: u64, s: PageSize) -> bool {
        let Some(t) = &self.tables[s as usize] else { return false };
        match self.cfg.kind {
            HashedKind::Cuckoo => (0..t.ways.len()).any(|w| Self::slot_of(t, Self::place_of(t, k, w)) == k + 1),
            HashedKind::Chained => {
                let b = t.bucket(k);
                t.ways[0].slots[b as usize] == k + 1 || t.chains[b as usize].iter().any(|x| x.0 == k)
            }
        }
    }

    /// The OS mapped `va`'s page (size `s`): make sure its cluster's entry holds it.
    fn insert(&mut self, asid: u32, va: u64, s: PageSize, os: &mut Os) -> Result<(), SimError> {
        let k = key(asid, va, s);
        let bit = 1u8 << ((va >> s.shift()) % CLUSTER);
        let m = self.members[s as usize].entry(k).or_insert(0);
        let new = *m == 0;
        *m |= bit;
        if !new {
            return Ok(());
        }
        self.ws.inserts += 1;
        match self.cfg.kind {
            HashedKind::Cuckoo => self.cuckoo_insert(k, s, os),
            HashedKind::Chained => self.chained_insert(k, s, os),
        }
    }

    fn cuckoo_insert(&mut self, k: u64, s: PageSize, os: &mut Os) -> Result<(), SimError> {
        self.table(s, os)?;
        self.replace(k, s, os)?;
        self.migrate(s, os)?;
        let t = self.tables[s as usize].as_ref().expect("made");
        let slots: u64 = t.ways.iter().map(|w| w.slots.len() as u64).sum();
        if t.entries as f64 > self.cfg.resize_at * slots as f64 {
            self.grow(s, os, false)?;
        }
        Ok(())
    }

    /// Start growing table `s` to twice its slots (finishing a growth under way first; at once
    /// when `now`).
    fn grow(&mut self, s: PageSize, os: &mut Os, now: bool) -> Result<(), SimError> {
        if self.tables[s as usize].as_ref().is_some_and(|t| t.old.is_some()) {
            self.finish(s, os)?;
        }
        let n = self.tables[s as usize].as_ref().expect("made").ways[0].slots.len() as u64 * 2;
        let ways = (0..self.cfg.ways).map(|_| Way::new(n, os)).collect::<Result<Vec<Way>, SimError>>()?;
        let t = self.tables[s as usize].as_mut().expect("made");
        let old = std::mem::replace(&mut t.ways, ways);
        t.old = Some((old, vec![0; self.cfg.ways as usize]));
        self.ws.resizes += 1;
        if now {
            self.finish(s, os)?;
        }
        Ok(())
    }

    /// Migrate every remaining old slot of table `s`.
    fn finish(&mut self, s: PageSize, os: &mut Os) -> Result<(), SimError> {
        while self.tables[s as usize].as_ref().is_some_and(|t| t.old.is_some()) {
            self.migrate_step(s, os, u64::MAX)?;
        }
        Ok(())
    }

    /// One insert's share of a growth under way.
    fn migrate(&mut self, s: PageSize, os: &mut Os) -> Result<(), SimError> {
        if self.tables[s as usize].as_ref().is_some_and(|t| t.old.is_some()) {
            self.migrate_step(s, os, self.cfg.rehash_per_insert)?;
        }
        Ok(())
    }

    /// Move up to `n` old slots of every way into the new ways; free the old ways when done.
    fn migrate_step(&mut self, s: PageSize, os: &mut Os, n: u64) -> Result<(), SimError> {
        let t = self.tables[s as usize].as_mut().expect("made");
        let (old, done) = t.old.as_mut().expect("growing");
        let mut moving = Vec::new();
        for (w, way) in old.iter_mut().enumerate() {
            let end = (done[w].saturating_add(n)).min(way.slots.len() as u64);
            for i in done[w]..end {
                let v = std::mem::take(&mut way.slots[i as usize]);
                if v != 0 {
                    moving.push(v - 1);
                }
            }
            done[w] = end;
        }
        let finished = old.iter().zip(done.iter()).all(|(w, &d)| d == w.slots.len() as u64);
        t.entries -= moving.len() as u64;
        self.ws.rehash_moves += moving.len() as u64;
        if finished {
            let (old, _) = t.old.take().expect("growing");
            for w in old {
                w.free(os);
            }
        }
        for k in moving {
            // (Re-placed as an insert that is not a new entry: no second migration step.)
            self.replace(k, s, os)?;
        }
        Ok(())
    }

    /// Place `k` (new, or migrated): an empty slot of its ways, else displace the occupant of a
    /// random way and place that one likewise; when `max_kicks` displacements find no empty
    /// slot, the table grows at once and the last one displaced is placed there.
    fn replace(&mut self, k: u64, s: PageSize, os: &mut Os) -> Result<(), SimError> {
        let d = self.cfg.ways as usize;
        let mut key = k;
        let mut w = (self.random() % d as u64) as usize;
        for _ in 0..=self.cfg.max_kicks {
            let t = self.tables[s as usize].as_mut().expect("made");
            let empty = (0..d).map(|x| Self::place_of(t, key, x)).find(|&p| Self::slot_of(t, p) == 0);
            if let Some(p) = empty {
                *Self::slot(t, p) = key + 1;
                t.entries += 1;
                return Ok(());
            }
            let p = Self::place_of(t, key, w);
            let victim = *Self::slot(t, p) - 1;
            *Self::slot(t, p) = key + 1;
            self.ws.kicks += 1;
            key = victim;
            w = (w + 1 + (self.random() % (d as u64 - 1).max(1)) as usize) % d;
        }
        self.grow(s, os, true)?;
        self.replace(key, s, os)
    }

    fn chained_insert(&mut self, k: u64, s: PageSize, os: &mut Os) -> Result<(), SimError> {
        let t = self.table(s, os)?;
        let b = t.bucket(k);
        t.entries += 1;
        if t.ways[0].slots[b as usize] == 0 {
            t.ways[0].slots[b as usize] = k + 1;
            return Ok(());
        }
        let pa = match t.free.pop() {
            Some(pa) => pa,
            None => {
                let f = os.alloc_frame(0).ok_or_else(|| out_of_memory(os))?;
                let t = self.tables[s as usize].as_mut().expect("made");
                t.overflow.push(f);
                t.free.extend((1..PER_FRAME).rev().map(|i| (f << 12) + i * ENTRY));
                f << 12
            }
        };
        let t = self.tables[s as usize].as_mut().expect("made");
        t.chains[b as usize].push((k, pa));
        Ok(())
    }

    /// The OS unmapped or changed the pages of [start, end) of space `asid`: their bits go, and
    /// an entry whose pages are all gone leaves its table.
    fn remove_range(&mut self, asid: u32, start: u64, end: u64) {
        for s in PageSize::ALL {
            let lo = key(asid, start, s);
            let hi = key(asid, end.saturating_sub(1), s);
            let clusters: Vec<u64> = if hi - lo < self.members[s as usize].len() as u64 {
                (lo..=hi).filter(|k| self.members[s as usize].contains_key(k)).collect()
            } else {
                self.members[s as usize].keys().copied().filter(|k| (lo..=hi).contains(k)).collect()
            };
            for k in clusters {
                let m = self.members[s as usize].get_mut(&k).expect("listed");
                for p in 0..CLUSTER {
                    let page = ((k & ((1 << 48) - 1)) * CLUSTER + p) << s.shift();
                    if page < end && page + s.bytes() > start {
                        *m &= !(1u8 << p);
                    }
                }
                if *m == 0 {
                    self.members[s as usize].remove(&k);
                    self.remove_entry(k, s);
                }
            }
        }
    }

    fn remove_entry(&mut self, k: u64, s: PageSize) {
        let Some(t) = self.tables[s as usize].as_mut() else { return };
        self.ws.removes += 1;
        t.entries -= 1;
        match self.cfg.kind {
            HashedKind::Cuckoo => {
                for w in 0..t.ways.len() {
                    let p = Self::place_of(t, k, w);
                    if *Self::slot(t, p) == k + 1 {
                        *Self::slot(t, p) = 0;
                        return;
                    }
                }
                unreachable!("a cuckoo entry lies in one of its ways")
            }
            HashedKind::Chained => {
                let b = t.bucket(k);
                let chain = &mut t.chains[b as usize];
                if t.ways[0].slots[b as usize] == k + 1 {
                    // The first of the chain moves into the bucket.
                    t.ways[0].slots[b as usize] = match chain.first().copied() {
                        Some((k2, pa)) => {
                            chain.remove(0);
                            t.free.push(pa);
                            k2 + 1
                        }
                        None => 0,
                    };
                } else {
                    let i = chain.iter().position(|x| x.0 == k).expect("a chained entry lies in its chain");
                    let (_, pa) = chain.remove(i);
                    t.free.push(pa);
                }
            }
        }
    }

    /// The sizes a lookup of `va` (whose page is of size `s`) probes, and the cycles spent
    /// finding out (the cuckoo walk table's load on a walk cache miss).
    fn sizes_to_probe<B: Backend, L: Load<B>>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        va: u64,
        s: PageSize,
        load: &mut L,
    ) -> Result<(u8, u64), SimError> {
        let present: u8 =
            (0..3).filter(|&i| self.tables[i].as_ref().is_some_and(|t| t.entries > 0)).map(|i| 1u8 << i).sum();
        let Some((arr, st)) = &mut self.cwc else { return Ok((present, 0)) };
        let region = ((cx.os.asid() as u64) << 40) | (va >> 21);
        st.accesses += 1;
        if arr.probe(region, region).1.is_some() {
            st.hits += 1;
            return Ok((1 << s as u8, 0));
        }
        st.fills += 1;
        if arr.fill(region, region, 1).1.is_some() {
            st.evictions += 1;
        }
        // The region's cuckoo walk table entry: one 8-byte entry per 2MB region, a frame per GB.
        let gb = region >> 9;
        let frame = match self.cwt.get(&gb) {
            Some(&f) => f,
            None => match cx.os.alloc_frame(0) {
                Some(f) => {
                    self.cwt.insert(gb, f);
                    f
                }
                None => return Ok((present, 0)), // (no frame: probe every size, as without the cache)
            },
        };
        self.ws.cwt_loads += 1;
        let lat = load_at(&mut self.ws.loads_at, cx, load, (frame << 12) + (region & 511) * 8)?;
        Ok((1 << s as u8, lat))
    }

    /// The lookup of `va` (the miss handler's, and the guest's under nested paging): the OS's
    /// mapping (faulting the page in first), the page's entry made sure of, then the probes,
    /// each made by `load` (a load through the caches, natively; a host translation and a load
    /// under nested paging), which gives where it hit and its latency. Returns the OS's (first
    /// frame, page size); the walk's cycles are added to `walker.cycles`.
    #[inline(always)]
    pub(super) fn lookup<B: Backend, L: Load<B>>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        va: u64,
        load: &mut L,
    ) -> Result<(u64, PageSize), SimError> {
        self.ws.walks += 1;
        let mut faulted = false;
        let (pfn, size, _) = cx.mapping(va, || {
            self.ws.faulting_walks += 1;
            faulted = true;
        })?;
        self.ws.walks_by_size[size as usize] += 1;
        let asid = cx.os.asid();
        // The fault that mapped the page inserts it; a page mapped otherwise (eagerly, or its
        // entry gone with its cluster's other pages) joins at its first walk that misses it.
        if faulted || !self.holds(key(asid, va, size), size) {
            self.insert(asid, va, size, cx.os)?;
        }
        let mut cycles = self.latency;
        match self.cfg.kind {
            HashedKind::Cuckoo => {
                let (sizes, before) = self.sizes_to_probe(cx, va, size, load)?;
                cycles += before;
                let mut slowest = 0;
                for s in PageSize::ALL.into_iter().filter(|&s| sizes & (1 << s as u8) != 0) {
                    let k = key(asid, va, s);
                    let t = self.tables[s as usize].as_ref().expect("a size with entries has a table");
                    for w in 0..t.ways.len() {
                        let p = Self::place_of(t, k, w);
                        let pa = t.way(p).pa(p.slot);
                        slowest = slowest.max(load_at(&mut self.ws.loads_at, cx, load, pa)?);
                    }
                }
                cycles += slowest;
            }
            HashedKind::Chained => {
                for s in PageSize::ALL {
                    let Some(t) = self.tables[s as usize].as_ref().filter(|t| t.entries > 0) else { continue };
                    let k = key(asid, va, s);
                    let b = t.bucket(k);
                    cycles += load_at(&mut self.ws.loads_at, cx, load, t.ways[0].pa(b))?;
                    let mut found = t.ways[0].slots[b as usize] == k + 1;
                    if !found {
                        for &(k2, pa) in &t.chains[b as usize] {
                            self.ws.chain_loads += 1;
                            cycles += load_at(&mut self.ws.loads_at, cx, load, pa)?;
                            if k2 == k {
                                found = true;
                                break;
                            }
                        }
                    }
                    if found {
                        break;
                    }
                }
            }
        }
        self.ws.cycles += cycles;
        Ok((pfn, size))
    }
}

impl MissHandler for HashedWalker {
    #[inline(always)]
    fn handle<S: Shape, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        _r: usize,
        va: u64,
    ) -> Result<(u64, PageSize), SimError> {
        self.lookup(cx, va, &mut |cx: &mut MissCx<'_, B>, pa| Ok(cx.walk_load_as::<S>(pa)))
    }

    fn misses(&self) -> u64 {
        self.ws.walks
    }

    /// The PTE of `va` the OS's translation reads, and the 4KB table's slots a lookup of it
    /// probes (no simulated effect).
    #[inline(always)]
    fn prefetch(&self, os: &Os, _caches: &Caches, va: u64) {
        let pt = os.tables();
        if let Some(t) = pt.pt_of(os.root(), os.levels(), va) {
            pt.prefetch(t, crate::os::pagetable::index(va, 1));
        }
        if let Some(t) = &self.tables[0] {
            let k = key(os.asid(), va, PageSize::Size4K);
            for w in 0..t.ways.len() {
                let p = Self::place_of(t, k, w);
                crate::host::prefetch_ptr(t.way(p).slots.as_ptr().wrapping_add(p.slot as usize));
            }
        }
    }

    fn prefetches(&self) -> bool {
        true
    }

    fn invalidated(&mut self, inval: &[Invalidation]) {
        for i in inval {
            match *i {
                Invalidation::Range { asid, start, end } => self.remove_range(asid, start, end),
                Invalidation::Page4K { asid, va } => self.remove_range(asid, va, va + 4096),
                Invalidation::All => {}
            }
        }
    }

    fn settle(&mut self, caches: &mut Caches) {
        if caches.levels.is_empty() {
            return;
        }
        for (hit, counted) in self.ws.loads_counted.iter_mut().enumerate() {
            caches.add_walk_loads(hit, self.ws.loads_at[hit] - *counted);
            *counted = self.ws.loads_at[hit];
        }
    }

    fn check(&self) -> Result<(), String> {
        for (s, t) in self.tables.iter().enumerate() {
            let Some(t) = t else { continue };
            let held = t.all_ways().map(|w| w.slots.iter().filter(|&&v| v != 0).count() as u64).sum::<u64>()
                + t.chains.iter().map(|c| c.len() as u64).sum::<u64>();
            if held != t.entries || held != self.members[s].len() as u64 {
                return Err(format!(
                    "hashed table {s}: {held} entries held, {} counted, {} clusters mapped",
                    t.entries,
                    self.members[s].len()
                ));
            }
        }
        Ok(())
    }

    fn cycles(&self) -> u64 {
        self.ws.cycles
    }
}

impl Counters for HashedWalker {
    fn counters(&self, out: &mut dyn Sink) {
        let w = &self.ws;
        out.put(format_args!("walker.walks"), w.walks);
        out.put(format_args!("walker.walks_4k"), w.walks_by_size[0]);
        out.put(format_args!("walker.walks_2m"), w.walks_by_size[1]);
        out.put(format_args!("walker.walks_1g"), w.walks_by_size[2]);
        out.put(format_args!("walker.faulting_walks"), w.faulting_walks);
        out.put(format_args!("walker.loads"), w.loads_at.iter().sum());
        out.put(format_args!("walker.cycles"), w.cycles);
        for (h, name) in self.hit_names.iter().enumerate() {
            out.put(format_args!("walker.loads_hit.{name}"), w.loads_at[h]);
        }
        self.table_counters(out);
    }
}

impl HashedWalker {
    /// The tables' counters (`hpt.*`), without the walker's (a guest's table under nested
    /// paging: the nested walker reports the walks).
    pub fn table_counters(&self, out: &mut dyn Sink) {
        let w = &self.ws;
        out.put(format_args!("hpt.cwt_loads"), w.cwt_loads);
        out.put(format_args!("hpt.chain_loads"), w.chain_loads);
        out.put(format_args!("hpt.inserts"), w.inserts);
        out.put(format_args!("hpt.removes"), w.removes);
        out.put(format_args!("hpt.kicks"), w.kicks);
        out.put(format_args!("hpt.resizes"), w.resizes);
        out.put(format_args!("hpt.rehash_moves"), w.rehash_moves);
        // Each move reads the old entry's line and writes the new one's.
        out.put(format_args!("hpt.rehash_bytes"), w.rehash_moves * 2 * ENTRY);
        let mut frames = self.cwt.len() as u64;
        for (s, t) in self.tables.iter().enumerate() {
            let name = PageSize::from_index(s).name().to_lowercase();
            let (entries, slots) =
                t.as_ref().map_or((0, 0), |t| (t.entries, t.ways.iter().map(|w| w.slots.len() as u64).sum::<u64>()));
            if let Some(t) = t {
                frames += t.all_ways().map(|w| w.frames.len() as u64).sum::<u64>() + t.overflow.len() as u64;
            }
            out.gauge(format_args!("hpt.{name}.entries"), entries);
            out.gauge(format_args!("hpt.{name}.slots"), slots);
        }
        out.gauge(format_args!("hpt.frames"), frames);
        if let Some((_, st)) = &self.cwc {
            let mut s = *st;
            s.misses = s.accesses - s.hits;
            s.report_as("hpt.cwc", out);
        }
    }
}
