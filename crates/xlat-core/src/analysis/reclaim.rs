//! Eviction under memory pressure with access/dirty bits at G bits per 2MB page (PRISM, seed
//! 004 Section 6.5, Figure 10), driven by a trace's accesses like the fidelity analysis.
//!
//! The paper's study is GPU demand paging: device memory set to 90% of the application's
//! footprint, a page-replacement policy that reads the metadata at the configured granularity
//! (1, 8 or 32 bits per 2MB page, and 512 as the 4KB-mapping ideal), PCIe transfers. This module
//! replays the same policy on any trace (here: CPU traces):
//!
//! - **Memory.** The footprint is the 2MB regions the trace touches (per address space), as
//!   huge pages back them; physical memory holds `floor(fraction * regions * 512)` 4KB frames
//!   (default fraction 0.9, Section 5: "we configure the GPU memory to 90% of its application's
//!   memory footprint"). A first pass over the trace counts the regions.
//! - **Chunks.** With G bits per 2MB page the OS sees one accessed and one dirty bit per chunk of
//!   512/G 4KB pages (2MB/G bytes) and evicts whole chunks: a huge page can be partly evicted.
//! - **Faults.** The first access to a region faults the whole 2MB page in (every G alike: the
//!   page is mapped huge); later, an access to an evicted chunk faults that chunk alone back in
//!   (a *refault*). Every fault reads its bytes from the backing store (the host memory of the
//!   paper's unified memory; swap or file pages on a CPU), which keeps a copy of every page.
//! - **Bits.** Every access sets its chunk's accessed bit, a store its dirty bit. Accessed bits
//!   are cleared every `epoch` instructions (periodic clearing, the OS's LRU approximation);
//!   dirty bits only when the chunk is written back (evicted) or read in.
//! - **Victims: CLOCK.** Resident chunks sit in a ring in the order they were read in; to free
//!   memory the hand takes the chunk at the front: accessed bit set, the bit is cleared and the
//!   chunk goes to the back (a second chance); clear, the chunk is evicted. An evicted chunk with
//!   its dirty bit set is written back (its 2MB/G bytes); a clean one is dropped.
//! - **Time.** `faults * fault_us + bytes read / read bandwidth + bytes written / write
//!   bandwidth` (defaults in [`ReclaimConfig::default`], each cited): the paging time, not the
//!   program's.
//!
//! [`Reclaim`] is one granularity's engine, fed one access at a time (with an [`Observer`] that
//! tests use to audit every transfer); [`ReclaimRun`] feeds batches to one engine per G, and
//! [`analyze`] does both passes.

use std::collections::VecDeque;

use super::clock::InstrClock;
use rustc_hash::FxHashMap;
use serde::Serialize;
use xlat_trace::{Batch, EventSource, Marker, SideBody};

/// The memory pressure of Section 5: "we configure the GPU memory to 90% of its application's
/// memory footprint" (seed 004).
pub const DEFAULT_FRACTION: f64 = 0.9;
/// The metadata granularities of Figure 10: 1 bit (THP), PRISM's 8 and 32 bits, 512 (4KB
/// mappings) (seed 004 Section 6.5).
pub const DEFAULT_GRANULARITIES: [u32; 4] = [1, 8, 32, 512];
/// Accessed bits are cleared once per epoch: "access bits read once per 100 million
/// instructions retired" for huge-page hotness (seed 004 Section 2, Figure 1).
pub const DEFAULT_EPOCH: u64 = 100_000_000;
/// Cost of one fault, microseconds: the median swap-in fault Linux developers measured, "50% of
/// the swap fault is under 20us" (Chris Li, linux-mm, 2023-12-21, patch "mm: swap: async free
/// swap slot cache entries").
pub const DEFAULT_FAULT_US: f64 = 20.0;
/// Transfer bandwidth each way, bytes per second: the paper's GPU system is a GTX 1080 on
/// PCIe ("the system I/O bus (i.e., PCIe) latency based on measurements from NVIDIA GTX 1080
/// cards", seed 004 Section 5), PCIe 3.0 x16: 8 GT/s x 16 lanes x 128/130 encoding = 15.75 GB/s.
pub const DEFAULT_BANDWIDTH: f64 = 8e9 * 16.0 * 128.0 / 130.0 / 8.0;

const PAGE: u64 = 4096;
const FRAMES_PER_REGION: u64 = 512;
/// Virtual addresses are taken modulo 2^57 (5-level paging's reach), as in the fidelity analysis.
const VA_MASK: u64 = (1 << 57) - 1;
const ASID_SHIFT: u32 = 36;
const NO_KEY: u64 = u64::MAX;

type Bits = [u64; 8];

#[inline]
fn get(b: &Bits, i: u32) -> bool {
    b[(i >> 6) as usize] >> (i & 63) & 1 == 1
}
#[inline]
fn set(b: &mut Bits, i: u32) {
    b[(i >> 6) as usize] |= 1 << (i & 63);
}
#[inline]
fn clear(b: &mut Bits, i: u32) {
    b[(i >> 6) as usize] &= !(1 << (i & 63));
}

/// What to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct ReclaimConfig {
    /// Physical memory as a fraction of the footprint (the 2MB regions touched): (0, 1].
    pub fraction: f64,
    /// Bits per 2MB page (one engine each): powers of two from 1 to 512.
    pub granularities: Vec<u32>,
    /// Instructions between clearings of the accessed bits.
    pub epoch: u64,
    /// Cost of a fault (microseconds), on top of its transfer.
    pub fault_us: f64,
    /// Bytes per second read in (backing store to memory) and written back.
    pub read_bandwidth: f64,
    pub write_bandwidth: f64,
}

impl Default for ReclaimConfig {
    fn default() -> Self {
        ReclaimConfig {
            fraction: DEFAULT_FRACTION,
            granularities: DEFAULT_GRANULARITIES.to_vec(),
            epoch: DEFAULT_EPOCH,
            fault_us: DEFAULT_FAULT_US,
            read_bandwidth: DEFAULT_BANDWIDTH,
            write_bandwidth: DEFAULT_BANDWIDTH,
        }
    }
}

pub use super::AnalysisError as ReclaimError;

impl ReclaimConfig {
    /// Check every field; the error is one sentence naming the value and what is allowed.
    pub fn validate(&self) -> Result<(), ReclaimError> {
        let bad = |m: String| Err(ReclaimError::Config(m));
        if !(self.fraction > 0.0 && self.fraction <= 1.0) {
            return bad(format!(
                "the memory fraction must be above 0 and at most 1 (physical memory as a share of the footprint), not {}",
                self.fraction
            ));
        }
        super::check_epoch_and_granularities(self.epoch, &self.granularities).or_else(bad)?;
        if !(self.fault_us.is_finite() && self.fault_us >= 0.0) {
            return bad(format!("the fault cost must be a number of microseconds >= 0, not {}", self.fault_us));
        }
        for (what, v) in [("read", self.read_bandwidth), ("write", self.write_bandwidth)] {
            if !(v.is_finite() && v > 0.0) {
                return bad(format!("the {what} bandwidth must be a positive number of bytes per second, not {v}"));
            }
        }
        Ok(())
    }
}

/// Sees every transfer of an engine (tests audit them); `()` sees nothing and costs nothing.
/// Pages are 4KB page numbers inside the region (`first .. first + pages`).
pub trait Observer {
    /// The pages are read in from the backing store.
    fn read_in(&mut self, _region: u64, _first: u32, _pages: u32) {}
    /// The pages leave memory, written back or dropped.
    fn evict(&mut self, _region: u64, _first: u32, _pages: u32, _written_back: bool) {}
}

impl Observer for () {}

/// One granularity's counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GranularityReclaim {
    /// Bits per 2MB page.
    pub g: u32,
    /// Bytes per chunk (2MB / G): the unit of eviction and of refaults.
    pub chunk_bytes: u64,
    /// All faults: first touches of a 2MB page plus refaults.
    pub faults: u64,
    pub first_touch_faults: u64,
    /// Faults on an evicted chunk.
    pub refaults: u64,
    /// Chunks evicted, and of those, written back (dirty).
    pub evictions: u64,
    pub dirty_evictions: u64,
    /// Bytes read in (all faults), and of those by refaults.
    pub bytes_read: u64,
    pub bytes_read_refault: u64,
    pub bytes_written_back: u64,
    /// Bytes evicted clean (dropped: the backing store has them).
    pub bytes_dropped: u64,
    /// Chunks the CLOCK hand passed over (accessed: second chance).
    pub second_chances: u64,
    /// Resident bytes at the end.
    pub resident_bytes: u64,
    /// Paging time estimate, seconds: faults, transfers in, transfers out, total.
    pub fault_s: f64,
    pub read_s: f64,
    pub write_s: f64,
    pub time_s: f64,
}

/// A region's chunks: bit c of each vector is chunk c (G bits used).
#[derive(Clone, Copy)]
struct Region {
    key: u64,
    /// Faulted in before (a region whose chunks were all evicted refaults chunk by chunk).
    faulted: bool,
    resident: Bits,
    accessed: Bits,
    dirty: Bits,
}

/// One granularity's memory: the resident chunks, their bits and the CLOCK ring.
pub struct Reclaim<O: Observer = ()> {
    g: u32,
    /// 4KB page in region >> shift = chunk.
    shift: u32,
    chunk_pages: u64,
    capacity: u64,
    used: u64,
    cur_key: u64,
    cur: usize,
    slots: FxHashMap<u64, u32>,
    regions: Vec<Region>,
    /// (slot << 16 | chunk) of every resident chunk, front = the hand.
    ring: VecDeque<u64>,
    c: GranularityReclaim,
    obs: O,
}

impl Reclaim<()> {
    /// An engine at `g` bits per 2MB page with `capacity` 4KB frames (at least 512).
    pub fn new(g: u32, capacity: u64) -> Result<Self, ReclaimError> {
        Reclaim::with_observer(g, capacity, ())
    }
}

impl<O: Observer> Reclaim<O> {
    pub fn with_observer(g: u32, capacity: u64, obs: O) -> Result<Self, ReclaimError> {
        if !g.is_power_of_two() || g > 512 {
            return Err(ReclaimError::Config(format!(
                "granularity {g} is not a power of two from 1 to 512 (bits per 2MB page: 1, 2, 4, ..., 512)"
            )));
        }
        if capacity < FRAMES_PER_REGION {
            return Err(ReclaimError::Config(format!(
                "physical memory of {capacity} 4KB frames cannot hold one 2MB page (512 frames): raise the memory fraction or use a larger footprint"
            )));
        }
        let shift = 9 - g.trailing_zeros();
        Ok(Reclaim {
            g,
            shift,
            chunk_pages: 1 << shift,
            capacity,
            used: 0,
            cur_key: NO_KEY,
            cur: 0,
            slots: FxHashMap::default(),
            regions: Vec::new(),
            ring: VecDeque::new(),
            c: GranularityReclaim { g, chunk_bytes: (1u64 << shift) * PAGE, ..Default::default() },
            obs,
        })
    }

    /// One access to 4KB page `page` (0..512) of region `key` (any u64 naming a 2MB region).
    #[inline]
    pub fn access(&mut self, key: u64, page: u32, store: bool) {
        if key != self.cur_key {
            self.cur = self.slot(key);
            self.cur_key = key;
        }
        let chunk = page >> self.shift;
        if !get(&self.regions[self.cur].resident, chunk) {
            self.fault(chunk);
        }
        let r = &mut self.regions[self.cur];
        set(&mut r.accessed, chunk);
        if store {
            set(&mut r.dirty, chunk);
        }
    }

    #[inline(never)]
    fn slot(&mut self, key: u64) -> usize {
        let n = self.regions.len() as u32;
        let s = *self.slots.entry(key).or_insert(n) as usize;
        if s == self.regions.len() {
            self.regions.push(Region { key, faulted: false, resident: [0; 8], accessed: [0; 8], dirty: [0; 8] });
        }
        s
    }

    /// Chunk `chunk` of the current region is not resident: read it (or on a first touch the
    /// whole 2MB page) in, evicting as needed.
    #[cold]
    fn fault(&mut self, chunk: u32) {
        let first = !self.regions[self.cur].faulted;
        self.regions[self.cur].faulted = true;
        let (from, count) = if first { (0, self.g) } else { (chunk, 1) };
        let pages = count as u64 * self.chunk_pages;
        while self.used + pages > self.capacity {
            self.evict_one();
        }
        self.used += pages;
        self.c.faults += 1;
        self.c.bytes_read += pages * PAGE;
        if first {
            self.c.first_touch_faults += 1;
        } else {
            self.c.refaults += 1;
            self.c.bytes_read_refault += pages * PAGE;
        }
        let (slot, shift) = (self.cur, self.shift);
        let r = &mut self.regions[slot];
        for c in from..from + count {
            set(&mut r.resident, c);
            clear(&mut r.dirty, c);
            clear(&mut r.accessed, c);
            self.ring.push_back((slot as u64) << 16 | c as u64);
        }
        self.obs.read_in(r.key, from << shift, count << shift);
    }

    /// The CLOCK hand: evict the first chunk whose accessed bit is clear, giving every chunk it
    /// passes with the bit set a second chance.
    fn evict_one(&mut self) {
        loop {
            let e = self.ring.pop_front().expect("memory over capacity holds a resident chunk");
            let (slot, c) = ((e >> 16) as usize, (e & 0xffff) as u32);
            let r = &mut self.regions[slot];
            debug_assert!(get(&r.resident, c));
            if get(&r.accessed, c) {
                clear(&mut r.accessed, c);
                self.ring.push_back(e);
                self.c.second_chances += 1;
                continue;
            }
            clear(&mut r.resident, c);
            let dirty = get(&r.dirty, c);
            clear(&mut r.dirty, c);
            let bytes = self.chunk_pages * PAGE;
            self.used -= self.chunk_pages;
            self.c.evictions += 1;
            if dirty {
                self.c.dirty_evictions += 1;
                self.c.bytes_written_back += bytes;
            } else {
                self.c.bytes_dropped += bytes;
            }
            let key = r.key;
            self.obs.evict(key, c << self.shift, self.chunk_pages as u32, dirty);
            return;
        }
    }

    /// Clear every accessed bit (the OS's periodic scan).
    pub fn clear_accessed(&mut self) {
        for r in &mut self.regions {
            r.accessed = [0; 8];
        }
    }

    /// 4KB frames in use.
    pub fn used_frames(&self) -> u64 {
        self.used
    }

    /// The counters so far, with the time estimate under `cfg`'s costs.
    pub fn counters(&self, cfg: &ReclaimConfig) -> GranularityReclaim {
        let mut c = self.c.clone();
        c.resident_bytes = self.used * PAGE;
        c.fault_s = c.faults as f64 * cfg.fault_us * 1e-6;
        c.read_s = c.bytes_read as f64 / cfg.read_bandwidth;
        c.write_s = c.bytes_written_back as f64 / cfg.write_bandwidth;
        c.time_s = c.fault_s + c.read_s + c.write_s;
        c
    }

    pub fn observer(&self) -> &O {
        &self.obs
    }

    pub fn observer_mut(&mut self) -> &mut O {
        &mut self.obs
    }
}

// ------------------------------------------------------------------------------ the driver

/// Region keys of a batch's accesses, as both passes see them: 2MB region number with the
/// address space's dense index above it (context-switch markers change it).
struct Keys {
    asids: Vec<u32>,
    asid_key: u64,
}

impl Keys {
    fn new() -> Keys {
        Keys { asids: vec![0], asid_key: 0 }
    }

    fn switch_space(&mut self, asid: u32) {
        let idx = match self.asids.iter().position(|&a| a == asid) {
            Some(i) => i,
            None => {
                self.asids.push(asid);
                self.asids.len() - 1
            }
        };
        self.asid_key = (idx as u64) << ASID_SHIFT;
    }

    /// Calls `f(i)` for each access index, having applied the side events before it.
    fn each(&mut self, b: &Batch, mut f: impl FnMut(&mut Keys, usize)) {
        let mut si = 0;
        for i in 0..b.len() {
            while si < b.side.len() && b.side[si].pos as usize <= i {
                if let SideBody::Marker(Marker::ContextSwitch { asid }) = b.side[si].body {
                    self.switch_space(asid);
                }
                si += 1;
            }
            f(self, i);
        }
        // Side events after the last access (a context switch ending the batch).
        for s in &b.side[si..] {
            if let SideBody::Marker(Marker::ContextSwitch { asid }) = s.body {
                self.switch_space(asid);
            }
        }
    }

    #[inline]
    fn key_page(&self, addr: u64) -> (u64, u32) {
        let page = (addr & VA_MASK) >> 12;
        ((page >> 9) | self.asid_key, (page & 511) as u32)
    }
}

/// The first pass: the 2MB regions (and 4KB pages) a trace touches.
pub struct Footprint {
    keys: Keys,
    regions: FxHashMap<u64, Bits>,
}

impl Default for Footprint {
    fn default() -> Self {
        Footprint { keys: Keys::new(), regions: FxHashMap::default() }
    }
}

impl Footprint {
    pub fn add(&mut self, b: &Batch) {
        let regions = &mut self.regions;
        let (mut last, mut bits): (u64, Bits) = (NO_KEY, [0; 8]);
        self.keys.each(b, |k, i| {
            let (key, page) = k.key_page(b.addr[i]);
            if key != last {
                if last != NO_KEY {
                    let e = regions.entry(last).or_insert([0; 8]);
                    (0..8).for_each(|w| e[w] |= bits[w]);
                }
                (last, bits) = (key, [0; 8]);
            }
            set(&mut bits, page);
        });
        if last != NO_KEY {
            let e = regions.entry(last).or_insert([0; 8]);
            (0..8).for_each(|w| e[w] |= bits[w]);
        }
    }

    /// 2MB regions touched.
    pub fn regions(&self) -> u64 {
        self.regions.len() as u64
    }

    /// 4KB pages touched.
    pub fn pages(&self) -> u64 {
        self.regions.values().map(|b| b.iter().map(|w| w.count_ones() as u64).sum::<u64>()).sum()
    }
}

/// The whole study of one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReclaimResult {
    pub fraction: f64,
    pub epoch: u64,
    pub fault_us: f64,
    pub read_bandwidth: f64,
    pub write_bandwidth: f64,
    pub accesses: u64,
    pub stores: u64,
    pub instructions: u64,
    /// Clearings of the accessed bits (epoch ends passed).
    pub clears: u64,
    /// 2MB regions touched, their bytes (the footprint), and the 4KB pages touched in them.
    pub regions: u64,
    pub footprint_bytes: u64,
    pub touched_bytes: u64,
    /// Physical memory: `floor(fraction * regions * 512)` 4KB frames.
    pub capacity_bytes: u64,
    pub granularities: Vec<GranularityReclaim>,
}

impl ReclaimResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("the result serialises")
    }
}

/// The second pass: one engine per granularity, the instruction count and epoch clearing.
pub struct ReclaimRun {
    cfg: ReclaimConfig,
    keys: Keys,
    engines: Vec<Reclaim>,
    regions: u64,
    touched_pages: u64,
    capacity: u64,
    clock: InstrClock,
    next_stop: u64,
    clears: u64,
    accesses: u64,
    stores: u64,
}

impl ReclaimRun {
    /// Engines for a footprint of `fp` (the first pass over the same trace).
    pub fn new(cfg: ReclaimConfig, fp: &Footprint) -> Result<ReclaimRun, ReclaimError> {
        cfg.validate()?;
        let regions = fp.regions();
        let capacity = (cfg.fraction * (regions * FRAMES_PER_REGION) as f64).floor() as u64;
        let engines = if regions == 0 {
            Vec::new()
        } else {
            cfg.granularities.iter().map(|&g| Reclaim::new(g, capacity)).collect::<Result<_, _>>()?
        };
        Ok(ReclaimRun {
            next_stop: cfg.epoch,
            cfg,
            keys: Keys::new(),
            engines,
            regions,
            touched_pages: fp.pages(),
            capacity,
            clock: InstrClock::new(),
            clears: 0,
            accesses: 0,
            stores: 0,
        })
    }

    /// Feed one batch (the same batches, in the same order, as the footprint saw).
    pub fn add(&mut self, b: &Batch) {
        let mut keys = std::mem::replace(&mut self.keys, Keys::new());
        keys.each(b, |k, i| {
            self.count_instructions(b.tid[i], b.icount[i]);
            let (key, page) = k.key_page(b.addr[i]);
            let store = b.kind[i] == 1;
            self.stores += store as u64;
            for e in &mut self.engines {
                e.access(key, page, store);
            }
        });
        self.accesses += b.len() as u64;
        self.keys = keys;
    }

    /// Instructions as the simulator counts them (per thread from its first access, which
    /// counts one; all threads summed), and the epoch ends they pass: an access whose count
    /// goes past a multiple of the epoch clears the accessed bits first.
    #[inline]
    fn count_instructions(&mut self, tid: u32, ic: u64) {
        self.clock.advance(tid, ic);
        if self.clock.instructions > self.next_stop {
            self.clears += 1;
            for e in &mut self.engines {
                e.clear_accessed();
            }
            self.next_stop = (self.clock.instructions - 1) / self.cfg.epoch * self.cfg.epoch + self.cfg.epoch;
        }
    }

    pub fn finish(self) -> ReclaimResult {
        ReclaimResult {
            fraction: self.cfg.fraction,
            epoch: self.cfg.epoch,
            fault_us: self.cfg.fault_us,
            read_bandwidth: self.cfg.read_bandwidth,
            write_bandwidth: self.cfg.write_bandwidth,
            accesses: self.accesses,
            stores: self.stores,
            instructions: self.clock.instructions,
            clears: self.clears,
            regions: self.regions,
            footprint_bytes: self.regions * FRAMES_PER_REGION * PAGE,
            touched_bytes: self.touched_pages * PAGE,
            capacity_bytes: self.capacity * PAGE,
            granularities: self.engines.iter().map(|e| e.counters(&self.cfg)).collect(),
        }
    }
}

/// Both passes: `first` and `second` must yield the same events (the same trace opened twice).
/// `on_batch` sees each batch of both passes (for progress reporting).
pub fn analyze(
    first: &mut dyn EventSource,
    second: &mut dyn EventSource,
    cfg: &ReclaimConfig,
    mut on_batch: impl FnMut(&dyn EventSource),
) -> Result<ReclaimResult, ReclaimError> {
    cfg.validate()?;
    let mut fp = Footprint::default();
    let mut b = Batch::default();
    while first.next_batch(&mut b)? {
        fp.add(&b);
        on_batch(first);
    }
    let mut run = ReclaimRun::new(cfg.clone(), &fp)?;
    while second.next_batch(&mut b)? {
        run.add(&b);
        on_batch(second);
    }
    Ok(run.finish())
}
