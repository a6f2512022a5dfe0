//! Metadata fidelity (PRISM, seed 004 Section 3): per epoch of N instructions and per 2MB region
//! touched, the 512 accessed and 512 dirty bits at 4KB granularity, and how well G bits per 2MB
//! page (each the OR of 512/G consecutive 4KB bits) approximate them.
//!
//! - **Fidelity loss** of a (region, epoch) sample at granularity G: the fraction of its 512 4KB
//!   bits that the G coarse bits get wrong. A set coarse bit makes all its 4KB bits read as set,
//!   so the wrong bits are `512/G * popcount(coarse) - popcount(fine)` (seed 004 Section 3).
//! - Per G, over all samples: the mean and the (population) standard deviation of the loss, and
//!   the **entropy**, log2 of the number of distinct G-bit vectors seen (at G = 512 the paper's
//!   Table 2 column: the bits needed to name every 4KB pattern the run produced).
//! - **Spatial and temporal fidelity over longer time scales** (Section 3.1, Figure 3): for a
//!   window of k base epochs, the bits accumulated (OR) over the window. *Spatial* loss at G:
//!   the fidelity loss of the window's accumulated bits, as above. *Temporal* loss: the fraction
//!   of (4KB bit, base epoch) pairs of the window in which the window's 4KB bit is wrong about
//!   that epoch's bit (set over the window, clear in that epoch), i.e.
//!   `(k * popcount(OR) - sum of the epochs' popcounts) / (512 k)`, summed over the samples
//!   of all windows and divided by their pairs; *temporal per set bit* is the mean over samples
//!   with a set bit of the same count divided by `k * popcount(OR)` (the share of epochs a set
//!   bit misdescribes). The last window stops at the run's last epoch (a window longer than the
//!   run is the run), and its k is the epochs it covers.
//!
//! Samples are the (region, epoch) pairs with at least one access; dirty statistics use the same
//! samples (a region read but not written has an all-clear dirty vector, which one bit describes
//! exactly). Regions are 2MB-aligned virtual regions of an address space (context-switch markers
//! change it). Instructions and epoch ends are counted as the simulator counts them
//! (`sim::engine`): per thread from its first access (which counts one), all threads summed.
//! The access at which the count is n belongs to epoch (n - 1) / N (0-based): an epoch holds
//! instructions 1..=N, N+1..=2N, ... (The simulator's epoch controllers run at the access that
//! reaches a stop, which puts an access that jumps over a stop into the epoch before; here it
//! goes to the epoch of its own instruction.) Every access sets the accessed bit of its first byte's 4KB page (as the
//! simulator translates its first byte); stores also set the dirty bit.
//!
//! The hot path is a few instructions an access: the last region's slot is kept, others are
//! found through an FxHash map from region to a dense slot of two `[u64; 8]` bitmaps; all the
//! per-G work is popcounts at epoch ends.

use super::clock::InstrClock;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use xlat_trace::{Batch, EventSource, Marker, SideBody};

/// Instructions per epoch: "An epoch is a period of 100 million retired instructions" (seed 004
/// Section 3.1, Table 2).
pub const DEFAULT_EPOCH: u64 = 100_000_000;

/// Time scales of the spatial/temporal study, in base epochs: Figure 3's 100 ms base and 200 ms
/// to 12.8 s (seed 004 Section 3.1), doubling.
pub const DEFAULT_SCALES: [u64; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

/// Every granularity a 2MB page can have: 1, 2, 4, ..., 512 bits (Section 3's "2 to 256
/// additional bits", 1 bit as THP and 512 as 4KB pages, Section 6.1).
pub const GRANULARITIES: [u32; 10] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

const WORDS: usize = 8;
const BITS: u64 = 512;
/// Virtual addresses are taken modulo 2^57 (5-level paging's reach).
const VA_MASK: u64 = (1 << 57) - 1;
/// The dense address-space index goes above the region number (2^57 / 2MB = 2^36 regions).
const ASID_SHIFT: u32 = 36;
const NO_KEY: u64 = u64::MAX;

/// A 512-bit vector: bit `i` is 4KB page `i` of a 2MB region (or coarse bit `i` at lower G).
pub type Bits = [u64; WORDS];

/// What to compute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FidelityConfig {
    /// Instructions per epoch (the bits are cleared at each epoch's end).
    pub epoch: u64,
    /// Granularities reported: bits per 2MB page, powers of two from 1 to 512.
    pub granularities: Vec<u32>,
    /// Lengths of the spatial/temporal windows, in instructions: multiples of `epoch`.
    pub scales: Vec<u64>,
}

impl Default for FidelityConfig {
    fn default() -> Self {
        FidelityConfig {
            epoch: DEFAULT_EPOCH,
            granularities: GRANULARITIES.to_vec(),
            scales: DEFAULT_SCALES.iter().map(|k| k * DEFAULT_EPOCH).collect(),
        }
    }
}

pub use super::AnalysisError as FidelityError;

impl FidelityConfig {
    /// Check every field; the error is one sentence naming the value and what is allowed.
    pub fn validate(&self) -> Result<(), FidelityError> {
        let bad = |m: String| Err(FidelityError::Config(m));
        super::check_epoch_and_granularities(self.epoch, &self.granularities).or_else(bad)?;
        for &s in &self.scales {
            if s == 0 || s % self.epoch != 0 {
                return bad(format!(
                    "epoch length {s} is not a positive multiple of the epoch ({} instructions)",
                    self.epoch
                ));
            }
        }
        Ok(())
    }
}

/// Loss statistics of one granularity over the samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GranularityStats {
    /// Bits per 2MB page.
    pub g: u32,
    /// Mean fidelity loss (fraction of 4KB bits wrong, 0..1).
    pub mean: f64,
    /// Population standard deviation of the loss.
    pub std: f64,
    /// Distinct G-bit vectors seen.
    pub distinct: u64,
    /// log2 of `distinct` (0 when none).
    pub entropy: f64,
    /// Wrong 4KB bits summed over the samples (exact).
    pub wrong_bits: u64,
}

/// Spatial and temporal loss at one time scale.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleStats {
    /// Window length in instructions.
    pub epoch: u64,
    /// Base epochs per window.
    pub k: u64,
    /// (region, window) samples.
    pub samples: u64,
    /// Mean spatial loss per reported granularity (same order as `granularities`).
    pub spatial_accessed: Vec<f64>,
    pub spatial_dirty: Vec<f64>,
    /// Mean temporal loss over all 512 bits of a region (see the module's docs).
    pub temporal_accessed: f64,
    pub temporal_dirty: f64,
    /// Mean temporal loss per set bit (samples with no set bit left out).
    pub temporal_accessed_per_set_bit: f64,
    pub temporal_dirty_per_set_bit: f64,
}

/// The analysis of one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FidelityResult {
    pub epoch: u64,
    pub granularities: Vec<u32>,
    pub accesses: u64,
    pub stores: u64,
    pub instructions: u64,
    /// Base epochs (the last one may be partial).
    pub epochs: u64,
    /// Base epochs with at least one access.
    pub active_epochs: u64,
    /// Distinct 2MB regions touched over the run.
    pub regions: u64,
    /// (region, epoch) samples: pairs with at least one access.
    pub samples: u64,
    /// Samples with at least one dirty bit.
    pub dirty_samples: u64,
    pub accessed: Vec<GranularityStats>,
    pub dirty: Vec<GranularityStats>,
    pub scales: Vec<ScaleStats>,
}

// ---------------------------------------------------------------------------- bit arithmetic

/// The 32 bits `(x >> 2j | x >> 2j+1) & 1` for j = 0..32: adjacent pairs ORed and packed.
#[inline]
fn compress_pairs(x: u64) -> u64 {
    let mut y = (x | (x >> 1)) & 0x5555_5555_5555_5555;
    y = (y | (y >> 1)) & 0x3333_3333_3333_3333;
    y = (y | (y >> 2)) & 0x0f0f_0f0f_0f0f_0f0f;
    y = (y | (y >> 4)) & 0x00ff_00ff_00ff_00ff;
    y = (y | (y >> 8)) & 0x0000_ffff_0000_ffff;
    (y | (y >> 16)) & 0x0000_0000_ffff_ffff
}

/// Half the granularity: coarse bit j = bit 2j OR bit 2j+1 (bits above the vector's length are
/// zero and stay zero).
pub fn halve(v: &Bits) -> Bits {
    let mut out = [0; WORDS];
    for (i, &w) in v.iter().enumerate() {
        out[i / 2] |= compress_pairs(w) << (32 * (i & 1));
    }
    out
}

pub fn popcount(v: &Bits) -> u32 {
    v.iter().map(|w| w.count_ones()).sum()
}

/// The G-bit approximation of a 512-bit vector, for G = 512 >> i at index i (0..=9).
pub fn coarse_all(v: &Bits) -> [Bits; 10] {
    let mut out = [[0; WORDS]; 10];
    out[0] = *v;
    for i in 1..10 {
        out[i] = halve(&out[i - 1]);
    }
    out
}

/// 4KB bits that G coarse bits get wrong: each set coarse bit stands for 512/G set bits.
pub fn wrong_bits(fine: &Bits, coarse: &Bits, g: u32) -> u64 {
    (BITS / g as u64) * popcount(coarse) as u64 - popcount(fine) as u64
}

/// Index of G in `coarse_all`'s output.
#[inline]
fn level(g: u32) -> usize {
    (9 - g.trailing_zeros()) as usize
}

/// Distinct vectors of one granularity, stored in as many words as it has.
enum Distinct {
    W1(FxHashSet<u64>),
    W2(FxHashSet<[u64; 2]>),
    W4(FxHashSet<[u64; 4]>),
    W8(FxHashSet<Bits>),
}

impl Distinct {
    fn new(g: u32) -> Distinct {
        match g {
            0..=64 => Distinct::W1(FxHashSet::default()),
            128 => Distinct::W2(FxHashSet::default()),
            256 => Distinct::W4(FxHashSet::default()),
            _ => Distinct::W8(FxHashSet::default()),
        }
    }
    fn insert(&mut self, v: &Bits) {
        match self {
            Distinct::W1(s) => s.insert(v[0]),
            Distinct::W2(s) => s.insert([v[0], v[1]]),
            Distinct::W4(s) => s.insert([v[0], v[1], v[2], v[3]]),
            Distinct::W8(s) => s.insert(*v),
        };
    }
    fn len(&self) -> u64 {
        (match self {
            Distinct::W1(s) => s.len(),
            Distinct::W2(s) => s.len(),
            Distinct::W4(s) => s.len(),
            Distinct::W8(s) => s.len(),
        }) as u64
    }
}

/// Loss sums and distinct vectors of one metadata type (accessed or dirty).
struct TypeAcc {
    wrong: Vec<u64>,
    wrong_sq: Vec<u64>,
    distinct: Vec<Distinct>,
}

impl TypeAcc {
    fn new(gs: &[u32]) -> TypeAcc {
        TypeAcc {
            wrong: vec![0; gs.len()],
            wrong_sq: vec![0; gs.len()],
            distinct: gs.iter().map(|&g| Distinct::new(g)).collect(),
        }
    }
    fn add(&mut self, gs: &[u32], v: &Bits) {
        let c = coarse_all(v);
        for (j, &g) in gs.iter().enumerate() {
            let cv = &c[level(g)];
            let w = wrong_bits(v, cv, g);
            self.wrong[j] += w;
            self.wrong_sq[j] += w * w;
            self.distinct[j].insert(cv);
        }
    }
    fn stats(&self, gs: &[u32], n: u64) -> Vec<GranularityStats> {
        gs.iter()
            .enumerate()
            .map(|(j, &g)| {
                let (s, sq) = (self.wrong[j] as u128, self.wrong_sq[j] as u128);
                let (mean, std) = if n == 0 {
                    (0.0, 0.0)
                } else {
                    let n = n as u128;
                    // Exact variance numerator n*sum(w^2) - sum(w)^2, in 4KB bits squared.
                    let var = (n * sq - s * s) as f64 / (n * n) as f64;
                    (s as f64 / n as f64 / BITS as f64, var.sqrt() / BITS as f64)
                };
                let distinct = self.distinct[j].len();
                let entropy = if distinct == 0 { 0.0 } else { (distinct as f64).log2() };
                GranularityStats { g, mean, std, distinct, entropy, wrong_bits: self.wrong[j] }
            })
            .collect()
    }
}

/// A region's bits in one window of a time scale.
#[derive(Clone, Copy)]
struct WindowRegion {
    key: u64,
    a: Bits,
    d: Bits,
    /// Sums over the window's epochs of the popcounts of that epoch's bits.
    a_pops: u64,
    d_pops: u64,
}

/// One time scale: the window being accumulated and the sums over finished windows.
struct Scale {
    k: u64,
    window: u64,
    slots: FxHashMap<u64, u32>,
    regions: Vec<WindowRegion>,
    samples: u64,
    spatial_a: Vec<u64>,
    spatial_d: Vec<u64>,
    temporal_a: u64,
    temporal_d: u64,
    /// (4KB bit, base epoch) pairs of the finished windows' samples: 512 k each.
    pairs: u64,
    per_set_a: (f64, u64),
    per_set_d: (f64, u64),
}

impl Scale {
    fn new(k: u64, ng: usize) -> Scale {
        Scale {
            k,
            window: 0,
            slots: FxHashMap::default(),
            regions: Vec::new(),
            samples: 0,
            spatial_a: vec![0; ng],
            spatial_d: vec![0; ng],
            temporal_a: 0,
            temporal_d: 0,
            pairs: 0,
            per_set_a: (0.0, 0),
            per_set_d: (0.0, 0),
        }
    }

    /// Fold base epoch `e`'s region into its window (finishing the previous window first).
    fn add(&mut self, gs: &[u32], e: u64, key: u64, a: &Bits, d: &Bits) {
        if e / self.k != self.window {
            self.finish_window(gs, self.k);
            self.window = e / self.k;
        }
        let n = self.regions.len() as u32;
        let slot = *self.slots.entry(key).or_insert(n) as usize;
        if slot == self.regions.len() {
            self.regions.push(WindowRegion { key, a: [0; WORDS], d: [0; WORDS], a_pops: 0, d_pops: 0 });
        }
        let r = &mut self.regions[slot];
        for i in 0..WORDS {
            r.a[i] |= a[i];
            r.d[i] |= d[i];
        }
        r.a_pops += popcount(a) as u64;
        r.d_pops += popcount(d) as u64;
    }

    /// Add the current window's samples; it covered `k` base epochs.
    fn finish_window(&mut self, gs: &[u32], k: u64) {
        for r in &self.regions {
            debug_assert!(r.key != NO_KEY);
            self.samples += 1;
            self.pairs += BITS * k;
            let (ca, cd) = (coarse_all(&r.a), coarse_all(&r.d));
            for (j, &g) in gs.iter().enumerate() {
                self.spatial_a[j] += wrong_bits(&r.a, &ca[level(g)], g);
                self.spatial_d[j] += wrong_bits(&r.d, &cd[level(g)], g);
            }
            for (or, pops, total, per_set) in [
                (&r.a, r.a_pops, &mut self.temporal_a, &mut self.per_set_a),
                (&r.d, r.d_pops, &mut self.temporal_d, &mut self.per_set_d),
            ] {
                let set = popcount(or) as u64;
                let wrong = k * set - pops;
                *total += wrong;
                if set > 0 {
                    per_set.0 += wrong as f64 / (k * set) as f64;
                    per_set.1 += 1;
                }
            }
        }
        self.slots.clear();
        self.regions.clear();
    }

    fn stats(&self, epoch: u64) -> ScaleStats {
        let n = self.samples.max(1) as f64;
        let mean = |w: u64| w as f64 / n / BITS as f64;
        let pairs = |w: u64| w as f64 / self.pairs.max(1) as f64;
        let per = |(s, c): (f64, u64)| if c == 0 { 0.0 } else { s / c as f64 };
        ScaleStats {
            epoch: epoch * self.k,
            k: self.k,
            samples: self.samples,
            spatial_accessed: self.spatial_a.iter().map(|&w| mean(w)).collect(),
            spatial_dirty: self.spatial_d.iter().map(|&w| mean(w)).collect(),
            // (Over all pairs: a last, shorter window counts its own epochs only.)
            temporal_accessed: pairs(self.temporal_a),
            temporal_dirty: pairs(self.temporal_d),
            temporal_accessed_per_set_bit: per(self.per_set_a),
            temporal_dirty_per_set_bit: per(self.per_set_d),
        }
    }
}

/// A 2MB region's bits in the current base epoch.
#[derive(Clone, Copy)]
struct Region {
    key: u64,
    a: Bits,
    d: Bits,
}

/// The analysis, fed batch by batch ([`Fidelity::add`]) and finished once ([`Fidelity::finish`]).
pub struct Fidelity {
    cfg: FidelityConfig,
    // ---- the hot path
    cur_key: u64,
    cur: usize,
    asid_key: u64,
    slots: FxHashMap<u64, u32>,
    regions: Vec<Region>,
    clock: InstrClock,
    next_stop: u64,
    // ---- the rest
    asids: Vec<u32>,
    /// The current base epoch (0-based).
    epoch: u64,
    active_epochs: u64,
    accesses: u64,
    stores: u64,
    samples: u64,
    dirty_samples: u64,
    all_regions: FxHashSet<u64>,
    acc_a: TypeAcc,
    acc_d: TypeAcc,
    scales: Vec<Scale>,
}

impl Fidelity {
    pub fn new(cfg: FidelityConfig) -> Result<Fidelity, FidelityError> {
        cfg.validate()?;
        let gs = &cfg.granularities;
        let scales = cfg.scales.iter().map(|&s| Scale::new(s / cfg.epoch, gs.len())).collect();
        Ok(Fidelity {
            cur_key: NO_KEY,
            cur: 0,
            asid_key: 0,
            slots: FxHashMap::default(),
            regions: Vec::new(),
            clock: InstrClock::new(),
            next_stop: cfg.epoch,
            asids: vec![0],
            epoch: 0,
            active_epochs: 0,
            accesses: 0,
            stores: 0,
            samples: 0,
            dirty_samples: 0,
            all_regions: FxHashSet::default(),
            acc_a: TypeAcc::new(gs),
            acc_d: TypeAcc::new(gs),
            scales,
            cfg,
        })
    }

    /// Instructions counted so far (as the simulator counts them).
    pub fn instructions(&self) -> u64 {
        self.clock.instructions
    }

    /// Feed one batch: side events before the accesses they precede.
    pub fn add(&mut self, b: &Batch) {
        let n = b.len();
        let mut i = 0;
        let mut si = 0;
        loop {
            while si < b.side.len() && b.side[si].pos as usize <= i {
                if let SideBody::Marker(Marker::ContextSwitch { asid }) = b.side[si].body {
                    self.switch_space(asid);
                }
                si += 1;
            }
            if i >= n {
                break;
            }
            let end = b.side.get(si).map_or(n, |s| (s.pos as usize).min(n));
            self.run(&b.addr[i..end], &b.icount[i..end], &b.tid[i..end], &b.kind[i..end]);
            i = end;
        }
    }

    /// The hot loop over accesses with no side event among them.
    fn run(&mut self, addr: &[u64], icount: &[u64], tid: &[u32], kind: &[u8]) {
        self.accesses += addr.len() as u64;
        for i in 0..addr.len() {
            self.clock.advance(tid[i], icount[i]);
            if self.clock.instructions > self.next_stop {
                self.end_epochs();
            }
            let page = (addr[i] & VA_MASK) >> 12;
            let key = (page >> 9) | self.asid_key;
            if key != self.cur_key {
                self.cur = self.slot(key);
                self.cur_key = key;
            }
            let store = (kind[i] == 1) as u64;
            self.stores += store;
            let r = &mut self.regions[self.cur];
            let (w, bit) = (((page >> 6) & 7) as usize, page & 63);
            r.a[w] |= 1 << bit;
            r.d[w] |= store << bit;
        }
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

    #[inline(never)]
    fn slot(&mut self, key: u64) -> usize {
        let n = self.regions.len() as u32;
        let s = *self.slots.entry(key).or_insert(n) as usize;
        if s == self.regions.len() {
            self.regions.push(Region { key, a: [0; WORDS], d: [0; WORDS] });
        }
        s
    }

    /// An access went past the current epoch's last instruction: the epoch ends, and the
    /// access starts epoch (n - 1) / N (any epochs in between had no access).
    #[cold]
    fn end_epochs(&mut self) {
        self.end_epoch();
        self.epoch = (self.clock.instructions - 1) / self.cfg.epoch;
        self.next_stop = (self.epoch + 1) * self.cfg.epoch;
    }

    /// Close the current base epoch's regions: their samples, their share of every window.
    fn end_epoch(&mut self) {
        if self.regions.is_empty() {
            return;
        }
        self.active_epochs += 1;
        let gs = &self.cfg.granularities;
        for r in &self.regions {
            self.samples += 1;
            self.dirty_samples += (popcount(&r.d) > 0) as u64;
            self.all_regions.insert(r.key);
            self.acc_a.add(gs, &r.a);
            self.acc_d.add(gs, &r.d);
            for s in &mut self.scales {
                s.add(gs, self.epoch, r.key, &r.a, &r.d);
            }
        }
        self.slots.clear();
        self.regions.clear();
        self.cur_key = NO_KEY;
    }

    /// The statistics of everything fed so far; the last epoch counts even if partial.
    pub fn finish(mut self) -> FidelityResult {
        self.end_epoch();
        // Base epochs the run spans: ceil(instructions / epoch).
        let epochs = self.clock.instructions.div_ceil(self.cfg.epoch);
        let gs = self.cfg.granularities.clone();
        for s in &mut self.scales {
            let start = s.window * s.k;
            let k = s.k.min(epochs.saturating_sub(start)).max(1);
            s.finish_window(&gs, k);
        }
        FidelityResult {
            epoch: self.cfg.epoch,
            granularities: gs.clone(),
            accesses: self.accesses,
            stores: self.stores,
            instructions: self.clock.instructions,
            epochs,
            active_epochs: self.active_epochs,
            regions: self.all_regions.len() as u64,
            samples: self.samples,
            dirty_samples: self.dirty_samples,
            accessed: self.acc_a.stats(&gs, self.samples),
            dirty: self.acc_d.stats(&gs, self.samples),
            scales: self.scales.iter().map(|s| s.stats(self.cfg.epoch)).collect(),
        }
    }
}

/// Read a whole source and analyse it. `on_batch` sees each batch (for progress reporting).
pub fn analyze(
    src: &mut dyn EventSource,
    cfg: &FidelityConfig,
    mut on_batch: impl FnMut(&dyn EventSource),
) -> Result<FidelityResult, FidelityError> {
    let mut f = Fidelity::new(cfg.clone())?;
    let mut b = Batch::default();
    while src.next_batch(&mut b)? {
        f.add(&b);
        on_batch(src);
    }
    Ok(f.finish())
}

impl FidelityResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("the result serialises")
    }
}
