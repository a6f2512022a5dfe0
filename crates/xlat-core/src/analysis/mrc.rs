//! One-pass miss-ratio curves (`xlat mrc`): in one pass over a trace, with the OS model
//! choosing each access's page size, the misses of a single-level LRU TLB of every size, per
//! page size, fully associative and with given set counts (every associativity at once).
//!
//! **What a curve models** (and [`single_level_toml`] builds as a simulator configuration): one
//! level of TLBs, one per page size (4KB, 2MB, 1GB), each `unified` (loads, stores and
//! instruction fetches), LRU, holding only its size, filled on every miss; the radix walker (its
//! loads are not translated); no range TLBs, clustered TLB, direct segment, PRISM or Lite. The
//! OS model, its policy (4KB, THP, mosaic layouts...), memory and ASIDs are the configuration's.
//! A point (page size P, S sets, W ways) is the miss count of the P TLB of `W * S` entries and
//! W ways; `walker.walks_4k` (`_2m`, `_1g`) of the simulation of that configuration equals it.
//!
//! **Exactness.** Page sizes come from the OS model, asked as the simulator's walker asks it:
//! translate, and fault first if unmapped, the first time a page is seen after any
//! invalidation of it; until then the page's size is remembered (a TLB of any size holds no page
//! the OS changed without an invalidation, so a remembered page is one every TLB could hold).
//! Faults therefore happen in the simulator's order, and the OS evolves identically.
//! Invalidations (munmap, THP promotion, reclaim...) become holes in the stacks
//! ([`super::stack`]); a switch of address space flushes everything without ASIDs, and changes
//! the keys' tag with them (`os.asid`), as `Mmu::switch_to` does. Keys and set indices are the
//! simulator's (`mmu::tlb_key`: the page's VPN, size and ASID tag; set = VPN mod sets).

use super::clock::InstrClock;
use super::pagemap::PageMap;
use super::stack::SetStacks;
use crate::config::Config;
use crate::mmu::{asid_tag, key_range, tlb_key, VPN_MASK};
use crate::os::{Invalidation, Os, SimError};
use crate::units::PageSize;
use serde::Serialize;
use xlat_trace::{Batch, EventSource, Marker, SideBody};

/// The most entries reported by default: 64K (the "every size up to 64K entries").
pub const DEFAULT_MAX_ENTRIES: usize = 65536;

/// What to compute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MrcConfig {
    /// Set counts (powers of two); 1 is fully associative.
    pub sets: Vec<usize>,
    /// Most entries reported (per set count: ways up to `max_entries / sets`).
    pub max_entries: usize,
    /// Page sizes reported (every size is tracked: the OS decides which ones occur).
    pub page_sizes: Vec<PageSize>,
}

impl Default for MrcConfig {
    fn default() -> Self {
        MrcConfig { sets: vec![1], max_entries: DEFAULT_MAX_ENTRIES, page_sizes: PageSize::ALL.to_vec() }
    }
}

/// A bad request, an unreadable trace, or an error of the OS model.
#[derive(Debug, thiserror::Error)]
pub enum MrcError {
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Trace(#[from] xlat_trace::Error),
    #[error(transparent)]
    Sim(#[from] SimError),
}

impl MrcConfig {
    /// Check every field; the error is one sentence naming the value and what is allowed.
    pub fn validate(&self) -> Result<(), MrcError> {
        let bad = |m: String| Err(MrcError::Config(m));
        if self.max_entries == 0 || self.max_entries > 1 << 24 {
            return bad(format!("--max-entries {} must be from 1 to 16777216", self.max_entries));
        }
        if self.sets.is_empty() {
            return bad("give at least one set count (1 is fully associative)".into());
        }
        for &s in &self.sets {
            if !s.is_power_of_two() {
                return bad(format!("set count {s} is not a power of two (1, 2, 4, ...; 1 is fully associative)"));
            }
            if s > self.max_entries {
                return bad(format!(
                    "set count {s} is larger than --max-entries {} (a TLB has at least one way per set)",
                    self.max_entries
                ));
            }
        }
        if self.page_sizes.is_empty() {
            return bad("give at least one page size (4KB, 2MB, 1GB)".into());
        }
        Ok(())
    }
}

/// The curve of one page size and set count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Curve {
    pub page_size: PageSize,
    pub sets: usize,
    /// Accesses to pages of this size.
    pub accesses: u64,
    /// `misses[w - 1]`: misses of the TLB of `w` ways (`w * sets` entries), w = 1..=max/sets.
    pub misses: Vec<u64>,
}

/// The curves of one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MrcResult {
    pub trace: String,
    /// The configuration whose OS model chose the page sizes.
    pub config: String,
    pub policy: String,
    pub accesses: u64,
    pub instructions: u64,
    pub max_entries: usize,
    /// Invalidations the OS asked for (one per operation), and switches that flushed.
    pub shootdowns: u64,
    pub flushes: u64,
    /// Per reported page size, per set count in the given order.
    pub curves: Vec<Curve>,
}

impl MrcResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("the result serialises")
    }
}

/// The pages of one size: records (dense ids) and the stacks of every set count.
struct SizeCurves {
    size: PageSize,
    /// Key -> record.
    map: PageMap,
    /// Record -> key (`u64::MAX`: free).
    keys: Vec<u64>,
    free: Vec<u32>,
    /// Made at the first page of this size (a size the OS never uses costs no memory).
    stacks: Vec<SetStacks>,
    /// (sets, ways tracked) of each stack.
    shapes: Vec<(usize, usize)>,
    /// Accesses to the page of the access before (depth 1 in every stack).
    repeats: u64,
    accesses: u64,
}

impl SizeCurves {
    fn record(&mut self, key: u64) -> u32 {
        let r = match self.free.pop() {
            Some(r) => {
                self.keys[r as usize] = key;
                r
            }
            None => {
                if self.stacks.is_empty() {
                    self.stacks = self.shapes.iter().map(|&(s, w)| SetStacks::new(s, w)).collect();
                }
                self.keys.push(key);
                let n = self.keys.len();
                self.stacks.iter_mut().for_each(|s| s.grow(n));
                (n - 1) as u32
            }
        };
        self.map.insert(key, r);
        r
    }

    #[inline]
    fn access(&mut self, key: u64, rec: u32) {
        self.accesses += 1;
        let vpn = (key & VPN_MASK) as usize;
        for s in &mut self.stacks {
            s.access(vpn & (s.sets - 1), rec);
        }
    }

    /// Drop every record whose page overlaps [start, end) with tag `tag` (any if `None`).
    fn invalidate(&mut self, start: u64, end: u64, tag: Option<u64>) {
        if self.map.is_empty() || start >= end {
            return;
        }
        let shift = self.size.shift();
        let (first, last) = (start >> shift, (end - 1) >> shift);
        let mut gone = Vec::new();
        match tag {
            // Few pages in the range: look each up (the key's tag is the one given).
            Some(t) if last - first < self.map.len() as u64 => {
                for vpn in first..=last {
                    let key = tlb_key(vpn << shift, self.size, t);
                    if let Some(r) = self.map.get(key) {
                        gone.push((key, r));
                    }
                }
            }
            _ => {
                for (k, r) in self.map.iter() {
                    let (s, len, t) = key_range(k);
                    if s < end && start < s + len && tag.is_none_or(|x| x == t) {
                        gone.push((k, r));
                    }
                }
            }
        }
        for (k, r) in gone {
            self.map.remove(k);
            let vpn = (k & VPN_MASK) as usize;
            for s in &mut self.stacks {
                s.invalidate(vpn & (s.sets - 1), r);
            }
            self.keys[r as usize] = u64::MAX;
            self.free.push(r);
        }
    }

    fn flush(&mut self) {
        self.map.clear();
        self.keys.clear();
        self.free.clear();
        self.stacks.iter_mut().for_each(|s| s.flush());
    }
}

/// Slots of [`Mrc::seen`].
const SEEN: usize = 256;
const EMPTY_SEEN: (u64, usize, u32, u64) = (u64::MAX, 0, 0, 0);

/// The pass: the OS model and the stacks of every page size.
pub struct Mrc {
    os: Os,
    cfg: Config,
    req: MrcConfig,
    asid_mode: bool,
    tag: u64,
    va_mask: u64,
    sizes: Vec<SizeCurves>,
    /// The page of the last access: its first address, the mask of its size, its size index
    /// (`last_base` is `u64::MAX`, which no masked address equals, after any side event).
    last_base: u64,
    last_mask: u64,
    last_size: usize,
    /// The pages of recent accesses, direct-mapped by 4KB page number: (4KB page number, size
    /// index, record, key); emptied with `last_base`. Spares most accesses the maps.
    seen: Vec<(u64, usize, u32, u64)>,
    inval: Vec<Invalidation>,
    reloc: Vec<u64>,
    clock: InstrClock,
    accesses: u64,
    shootdowns: u64,
    flushes: u64,
}

impl Mrc {
    /// The pass over `cfg`'s OS model (its TLBs are not used: see the module's docs).
    pub fn new(cfg: &Config, req: &MrcConfig) -> Result<Mrc, MrcError> {
        req.validate()?;
        let os = Os::new(cfg)?;
        let sizes = PageSize::ALL
            .iter()
            .map(|&size| SizeCurves {
                size,
                map: PageMap::new(),
                keys: Vec::new(),
                free: Vec::new(),
                stacks: Vec::new(),
                shapes: req.sets.iter().map(|&s| (s, req.max_entries / s)).collect(),
                repeats: 0,
                accesses: 0,
            })
            .collect();
        Ok(Mrc {
            os,
            cfg: cfg.clone(),
            req: req.clone(),
            asid_mode: cfg.os.asid,
            tag: 0,
            va_mask: if cfg.os.levels == 5 { (1 << 57) - 1 } else { (1 << 48) - 1 },
            sizes,
            last_base: u64::MAX,
            last_mask: 0,
            last_size: 0,
            seen: vec![EMPTY_SEEN; SEEN],
            inval: Vec::new(),
            reloc: Vec::new(),
            clock: InstrClock::new(),
            accesses: 0,
            shootdowns: 0,
            flushes: 0,
        })
    }

    /// One batch: side events before the accesses they precede, as the simulator applies them.
    pub fn batch(&mut self, b: &Batch) -> Result<(), SimError> {
        let n = b.len();
        let (mut i, mut si) = (0, 0);
        loop {
            while si < b.side.len() && b.side[si].pos as usize <= i {
                self.side(&b.side[si].body)?;
                si += 1;
            }
            if i >= n {
                break;
            }
            let end = b.side.get(si).map_or(n, |s| (s.pos as usize).min(n));
            if self.os.relocates() {
                let mut reloc = std::mem::take(&mut self.reloc);
                self.os.relocate_run(&b.addr[i..end], &mut reloc);
                let r = self.run(&reloc);
                self.reloc = reloc;
                r?;
            } else {
                self.run(&b.addr[i..end])?;
            }
            self.count(b, i, end);
            i = end;
        }
        Ok(())
    }

    /// Instructions as the simulator counts them (its `count_range`: a range of one thread
    /// counts its first and last access).
    fn count(&mut self, b: &Batch, lo: usize, hi: usize) {
        self.accesses += (hi - lo) as u64;
        let t0 = b.tid[lo];
        if b.tid[lo..hi].iter().all(|&t| t == t0) {
            self.clock.advance(t0, b.icount[lo]);
            self.clock.advance(t0, b.icount[hi - 1]);
        } else {
            for k in lo..hi {
                self.clock.advance(b.tid[k], b.icount[k]);
            }
        }
    }

    fn run(&mut self, addr: &[u64]) -> Result<(), SimError> {
        // The map slots of the page AHEAD accesses on are prefetched (random pages make each
        // lookup a host cache miss), once per change of 4KB page, for the sizes in use, unless
        // the recent-page cache holds it.
        const AHEAD: usize = 8;
        for (j, &a) in addr.iter().enumerate() {
            if let (Some(&p), Some(&q)) = (addr.get(j + AHEAD - 1), addr.get(j + AHEAD)) {
                let q = q & self.va_mask;
                if (p ^ q) >> 12 != 0 && self.seen[(q >> 12) as usize % SEEN].0 != q >> 12 {
                    self.prefetch(q);
                }
            }
            let va = a & self.va_mask;
            if va & self.last_mask == self.last_base {
                self.sizes[self.last_size].repeats += 1;
                continue;
            }
            self.slow(va)?;
        }
        Ok(())
    }

    #[inline(always)]
    fn prefetch(&self, va: u64) {
        for c in &self.sizes {
            if !c.map.is_empty() {
                c.map.prefetch(tlb_key(va, c.size, self.tag));
            }
        }
    }

    /// An access to another page than the last one.
    #[inline(never)]
    fn slow(&mut self, va: u64) -> Result<(), SimError> {
        let slot = (va >> 12) as usize % SEEN;
        let (p, i, r, key) = self.seen[slot];
        if p == va >> 12 {
            self.touch(i, key, r, va);
            return Ok(());
        }
        let tag = self.tag;
        let mut found = None;
        for (i, c) in self.sizes.iter().enumerate() {
            if c.map.is_empty() {
                continue;
            }
            let key = tlb_key(va, c.size, tag);
            if let Some(r) = c.map.get(key) {
                found = Some((i, key, r));
                break;
            }
        }
        let (i, key, r) = match found {
            Some(x) => x,
            None => {
                let (_, size) = self.translate(va)?;
                let i = size as usize;
                let key = tlb_key(va, size, tag);
                (i, key, self.sizes[i].record(key))
            }
        };
        self.seen[slot] = (va >> 12, i, r, key);
        self.touch(i, key, r, va);
        Ok(())
    }

    #[inline(always)]
    fn touch(&mut self, i: usize, key: u64, r: u32, va: u64) {
        self.sizes[i].access(key, r);
        self.last_size = i;
        self.last_mask = !(self.sizes[i].size.bytes() - 1);
        self.last_base = va & self.last_mask;
    }

    /// Forget the last pages seen (their records may be gone, or the tag changed).
    fn forget(&mut self) {
        self.last_base = u64::MAX;
        self.seen.fill(EMPTY_SEEN);
    }

    /// What the walker asks the OS: the translation, after a fault if unmapped.
    #[cold]
    fn translate(&mut self, va: u64) -> Result<(u64, PageSize), SimError> {
        if let Some(t) = self.os.translate(va) {
            return Ok(t);
        }
        self.os.fault(va, &mut self.inval)?;
        self.apply_invalidations();
        Ok(self.os.translate(va).expect("the fault mapped the page"))
    }

    fn apply_invalidations(&mut self) {
        if self.inval.is_empty() {
            return;
        }
        self.shootdowns += 1;
        self.forget();
        for inv in std::mem::take(&mut self.inval) {
            match inv {
                Invalidation::Range { asid, start, end } => {
                    let tag = self.asid_mode.then(|| asid_tag(asid));
                    self.sizes.iter_mut().for_each(|c| c.invalidate(start, end, tag));
                }
                Invalidation::All => self.sizes.iter_mut().for_each(|c| c.flush()),
                Invalidation::Page4K { asid, va } => {
                    // (Only the 4KB page's stacks hold it; a larger page's entry stays.)
                    let tag = self.asid_mode.then(|| asid_tag(asid));
                    let page = va & !0xfff;
                    for c in self.sizes.iter_mut().filter(|c| c.size == PageSize::Size4K) {
                        c.invalidate(page, page + 4096, tag);
                    }
                }
            }
        }
    }

    fn side(&mut self, body: &SideBody) -> Result<(), SimError> {
        self.forget();
        match body {
            SideBody::Syscall(s) => {
                self.os.syscall(s, &mut self.inval)?;
                self.apply_invalidations();
            }
            SideBody::Marker(Marker::ContextSwitch { asid }) => {
                if self.os.switch_to(*asid)? {
                    if self.asid_mode {
                        self.tag = asid_tag(*asid);
                    } else {
                        self.sizes.iter_mut().for_each(|c| c.flush());
                        self.flushes += 1;
                    }
                }
            }
            SideBody::Marker(_) => {}
        }
        Ok(())
    }

    /// The curves so far.
    pub fn result(&self, trace: &str) -> MrcResult {
        let mut curves = Vec::new();
        for &p in &self.req.page_sizes {
            let c = &self.sizes[p as usize];
            for (k, &(sets, ways)) in c.shapes.iter().enumerate() {
                // (Repeats are depth 1 in every stack: hits of every TLB, no misses.)
                let misses = c.stacks.get(k).map_or_else(|| vec![0; ways], |s| s.misses_by_ways());
                curves.push(Curve { page_size: p, sets, accesses: c.accesses + c.repeats, misses });
            }
        }
        MrcResult {
            trace: trace.to_string(),
            config: self.cfg.name.clone(),
            policy: self.os.policy_name().to_string(),
            accesses: self.accesses,
            instructions: self.clock.instructions,
            max_entries: self.req.max_entries,
            shootdowns: self.shootdowns,
            flushes: self.flushes,
            curves,
        }
    }
}

/// The curves of `src` under `cfg`'s OS model; `on_batch` after each batch (progress).
pub fn analyze(
    src: &mut dyn EventSource,
    trace: &str,
    cfg: &Config,
    req: &MrcConfig,
    mut on_batch: impl FnMut(&dyn EventSource),
) -> Result<MrcResult, MrcError> {
    let mut m = Mrc::new(cfg, req)?;
    let mut b = Batch::default();
    while src.next_batch(&mut b)? {
        m.batch(&b)?;
        on_batch(src);
    }
    Ok(m.result(trace))
}

/// Names of the TLBs of [`single_level_toml`], by page size.
pub const TLB_NAMES: [&str; 3] = ["mrc-4k", "mrc-2m", "mrc-1g"];

/// The configuration a curve models, from a configuration's TOML text: its TLBs replaced by one
/// unified level-1 LRU TLB per page size (named [`TLB_NAMES`], 64 entries fully associative
/// until `--set tlb.mrc-4k.entries=N --set tlb.mrc-4k.ways=W` sizes them), and without the
/// structures a curve does not model (range TLBs, clustered TLB, direct segment, PRISM, Lite,
/// a software walker). Everything else (OS, memory, caches, PSCs) is kept.
pub fn single_level_toml(text: &str) -> Result<String, String> {
    let mut t: toml::Table = text.parse().map_err(|e: toml::de::Error| e.message().to_string())?;
    for k in ["tlb", "range_tlb", "cluster_tlb", "direct_segment", "prism", "lite"] {
        t.remove(k);
    }
    if let Some(toml::Value::Table(w)) = t.get_mut("walker") {
        w.remove("kind");
    }
    let tlbs = PageSize::ALL
        .iter()
        .zip(TLB_NAMES)
        .map(|(p, name)| {
            let mut e = toml::Table::new();
            e.insert("name".into(), name.into());
            e.insert("level".into(), 1.into());
            e.insert("role".into(), "unified".into());
            e.insert("entries".into(), 64.into());
            e.insert("ways".into(), 64.into());
            e.insert("page_sizes".into(), toml::Value::Array(vec![p.name().into()]));
            e.insert("replacement".into(), "lru".into());
            toml::Value::Table(e)
        })
        .collect();
    t.insert("tlb".into(), toml::Value::Array(tlbs));
    Ok(toml::to_string(&t).expect("a TOML table serialises"))
}
