//! The memory model: set-associative caches (L1D, L2, LLC, ...) that page-walk loads (and, if
//! configured, data accesses) go through, ending in DRAM. Every level allocates on a miss
//! (non-inclusive, non-exclusive); write-backs are not modelled (they do not delay loads).
//!
//! The per-access work is one probe per level and one counter: accesses are counted in a
//! histogram by (walk or not, first level, level that hit), from which [`Caches::stats`] derives
//! every level's accesses, hits, misses and fills. Levels are never invalidated, so every fill
//! either takes an empty way or evicts a line, and the evictions of a level in compact rows are
//! its fills minus the valid lines it holds (counted when the statistics are asked for).

use crate::config::CacheConfig;
use crate::host::prefetch_ptr;
use crate::setassoc::{Replacement, SetAssoc};
use serde::Serialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    pub accesses: u64,
    pub hits: u64,
    pub misses: u64,
    pub fills: u64,
    pub evictions: u64,
    /// Of the accesses, page-walk loads.
    pub walk_accesses: u64,
    pub walk_hits: u64,
}

#[derive(Debug, Clone)]
pub struct Cache {
    pub name: String,
    pub latency: u64,
    /// Lanes per compact row (4, 8 or 16) when a probe locates its row with a shift and a mask
    /// (compact rows, a power-of-two set count, a line at least as large as a row); 0 sends
    /// probes to [`Cache::probe_slow`].
    fast: u32,
    /// The byte offset of `pa`'s row in `rows` is `(pa >> off_shift) & off_mask` and its tag
    /// `pa >> tag_shift` (fast levels).
    off_shift: u32,
    tag_shift: u32,
    off_mask: u64,
    rows: Rows,
    line_shift: u32,
    sets: u64,
    /// The tags when compact rows do not apply (then `rows` is empty), with its evictions.
    general: Option<SetAssoc>,
    general_evictions: u64,
}

#[derive(Debug, Clone)]
pub struct Caches {
    pub levels: Vec<Cache>,
    pub dram_latency: u64,
    /// Accesses by (walk, first level, level that hit with `levels.len()` = DRAM), at
    /// `(walk * (n + 1) + from) * (n + 1) + hit` for `n` levels.
    hist: Vec<u64>,
    /// The first level whose tags take more than [`PREFETCH_BYTES`] of host memory (the levels
    /// below it are larger still: sizes grow down the hierarchy in every preset; a smaller
    /// level after a larger one is only prefetched needlessly).
    prefetch_from: usize,
    /// The level walk loads start at, and the offset of their row in `hist`.
    walk_from: usize,
    walk_row: usize,
    /// The lanes of the three levels walk loads go through, packed by [`pack_classes`], when
    /// walks start at the first of exactly three levels, all fast; else 0. What
    /// [`Caches::access_walk_as`] checks its constant against.
    walk_classes: u32,
}

/// Three fast levels' lanes (4, 8 or 16 each) in one word (never 0).
pub const fn pack_classes(lanes: [u32; 3]) -> u32 {
    lanes[0] | lanes[1] << 8 | lanes[2] << 16
}

/// Host bytes of a level's tags above which its rows are prefetched before walks.
const PREFETCH_BYTES: u64 = 256 << 10;

impl Caches {
    /// `memory` is the physical memory size in bytes (every address accessed is below it).
    pub fn new(cfg: &[CacheConfig], memory: u64, dram_latency: u64, seed: u64) -> Caches {
        let levels: Vec<Cache> =
            cfg.iter().enumerate().map(|(i, c)| Cache::new(c, memory, seed ^ (0x100 + i as u64))).collect();
        let n = levels.len();
        let prefetch_from = cfg.iter().position(|c| (c.size.0 / c.line) * 4 > PREFETCH_BYTES).unwrap_or(n);
        let mut c = Caches {
            levels,
            dram_latency,
            hist: vec![0; 2 * (n + 1) * (n + 1)],
            prefetch_from,
            walk_from: 0,
            walk_row: 0,
            walk_classes: 0,
        };
        c.set_walk_first(0);
        c
    }

    /// Access physical address `pa` starting at level `from`; returns (level that hit, with
    /// `levels.len()` meaning DRAM, and the latency of that level).
    #[inline(always)]
    pub fn access(&mut self, pa: u64, from: usize, walk: bool) -> (usize, u64) {
        let n = self.levels.len();
        let from = from.min(n); // (past the last level: DRAM, as no level to probe)
        let (l, latency) = self.probe_from(pa, from);
        self.hist[(walk as usize * (n + 1) + from) * (n + 1) + l] += 1;
        (l, latency)
    }

    /// A page-walk load: [`Caches::access`] from the walker's first level (set by
    /// [`Caches::set_walk_first`]), uncounted. The walker counts its loads by hit level anyway
    /// (per table level) and hands the totals over with [`Caches::add_walk_loads`], which saves
    /// a second count per load.
    #[inline(always)]
    pub fn access_walk(&mut self, pa: u64) -> (usize, u64) {
        self.probe_from(pa, self.walk_from)
    }

    /// [`Caches::access_walk`] compiled for three levels of `lanes` lanes (constants after
    /// inlining; all 0: any levels): when walks go through exactly such levels (see
    /// [`Caches::walk_classes`]), three inline probes of those widths, else the general probe
    /// out of line.
    #[inline(always)]
    pub fn access_walk_as(&mut self, lanes: [u32; 3], pa: u64) -> (usize, u64) {
        if lanes == [0; 3] {
            return self.access_walk(pa);
        }
        if self.walk_classes != pack_classes(lanes) {
            return self.access_walk_other(pa);
        }
        let dram = self.dram_latency;
        let [a, b, c] = &mut self.levels[..] else { unreachable!("walk classes are set for three levels") };
        // SAFETY: `walk_classes` says the three levels are fast with these lanes.
        unsafe {
            if a.probe_as(lanes[0], pa) {
                (0, a.latency)
            } else if b.probe_as(lanes[1], pa) {
                (1, b.latency)
            } else if c.probe_as(lanes[2], pa) {
                (2, c.latency)
            } else {
                (3, dram)
            }
        }
    }

    #[inline(never)]
    fn access_walk_other(&mut self, pa: u64) -> (usize, u64) {
        self.access_walk(pa)
    }

    /// The lanes of the levels walk loads go through when [`Caches::access_walk_as`] can take
    /// them as constants (walks from the first of three fast levels), else zeros.
    pub fn walk_classes(&self) -> [u32; 3] {
        let w = self.walk_classes;
        [w & 0xff, (w >> 8) & 0xff, w >> 16]
    }

    /// Count `n` walk loads (made by [`Caches::access_walk`]) that hit level `hit` (the level
    /// count: DRAM).
    pub fn add_walk_loads(&mut self, hit: usize, n: u64) {
        self.hist[self.walk_row + hit] += n;
    }

    /// The level page-walk loads start at (clamped past the last level: DRAM).
    pub fn set_walk_first(&mut self, from: usize) {
        let n = self.levels.len();
        self.walk_from = from.min(n);
        self.walk_row = ((n + 1) + self.walk_from) * (n + 1);
        self.walk_classes = match &self.levels[..] {
            [a, b, c] if self.walk_from == 0 && a.fast != 0 && b.fast != 0 && c.fast != 0 => {
                pack_classes([a.fast, b.fast, c.fast])
            }
            _ => 0,
        };
    }

    /// Probe the levels from `from` (at most the level count) down; uncounted.
    #[inline(always)]
    fn probe_from(&mut self, pa: u64, from: usize) -> (usize, u64) {
        let n = self.levels.len();
        // Every level that misses allocates the line (in the same pass: the order of fills
        // does not matter, each level is independent).
        let dram = (n, self.dram_latency);
        // Straight-line code for the usual three levels below `from` (no loop to run).
        match &mut self.levels[from..] {
            [a, b, c] => {
                if a.probe(pa) {
                    (from, a.latency)
                } else if b.probe(pa) {
                    (from + 1, b.latency)
                } else if c.probe(pa) {
                    (from + 2, c.latency)
                } else {
                    dram
                }
            }
            levels => {
                let mut hit = dram;
                for (i, c) in levels.iter_mut().enumerate() {
                    if c.probe(pa) {
                        hit = (from + i, c.latency);
                        break;
                    }
                }
                hit
            }
        }
    }

    /// Host prefetch of the rows a page-walk load of `pa` reaches (from the walker's first
    /// level on; no simulated effect), for levels whose tags are large enough to miss in the
    /// host's caches (smaller ones stay resident; prefetching them costs instructions and saves
    /// nothing).
    #[inline]
    pub fn prefetch_walk(&self, pa: u64) {
        for c in &self.levels[self.walk_from.max(self.prefetch_from)..] {
            c.prefetch(pa);
        }
    }

    /// Accesses counted with `walk` (false: every access) that hit level `hit` (`levels.len()`:
    /// DRAM), starting at any level.
    fn hits_at(&self, hit: usize, walk_only: bool) -> u64 {
        let n = self.levels.len();
        let walks = if walk_only { 1..2 } else { 0..2 };
        walks.flat_map(|w| (0..=n).map(move |from| self.hist[(w * (n + 1) + from) * (n + 1) + hit])).sum()
    }

    /// Accesses that reached DRAM.
    pub fn dram_accesses(&self) -> u64 {
        self.hits_at(self.levels.len(), false)
    }

    /// Page-walk loads that reached DRAM.
    pub fn dram_walk_accesses(&self) -> u64 {
        self.hits_at(self.levels.len(), true)
    }

    pub fn stats(&self) -> Vec<(String, CacheStats)> {
        let n = self.levels.len();
        self.levels
            .iter()
            .enumerate()
            .map(|(l, c)| {
                let mut s = CacheStats::default();
                // An access reaches level l if it started at or above it and hit at or below it.
                for w in 0..2 {
                    for from in 0..=l {
                        for hit in l..=n {
                            let v = self.hist[(w * (n + 1) + from) * (n + 1) + hit];
                            s.accesses += v;
                            s.walk_accesses += w as u64 * v;
                        }
                    }
                }
                s.hits = self.hits_at(l, false);
                s.walk_hits = self.hits_at(l, true);
                s.misses = s.accesses - s.hits;
                s.fills = s.misses;
                s.evictions = match &c.general {
                    Some(_) => c.general_evictions,
                    None => s.fills - c.rows.valid(),
                };
                (c.name.clone(), s)
            })
            .collect()
    }
}

impl Cache {
    fn new(c: &CacheConfig, memory: u64, seed: u64) -> Cache {
        let lines = c.size.0 / c.line;
        let ways = c.ways as usize;
        let sets = lines / c.ways;
        let line_shift = c.line.trailing_zeros();
        // Every line number below `memory / line` must give a quotient below `EMPTY`.
        let max_quotient = (memory.div_ceil(c.line)).saturating_sub(1) / sets;
        let lru = c.replacement == Replacement::Lru;
        let mut cache = Cache {
            name: c.name.clone(),
            latency: c.latency,
            fast: 0,
            off_shift: 0,
            tag_shift: 0,
            off_mask: 0,
            rows: Rows::empty(),
            line_shift,
            sets,
            general: None,
            general_evictions: 0,
        };
        if (lru || c.replacement == Replacement::Fifo) && ways <= 16 && max_quotient < EMPTY as u64 {
            cache.rows = Rows::new(sets as usize, ways, lru);
            let row_shift = (4 * cache.rows.lanes).trailing_zeros();
            if sets.is_power_of_two() && line_shift >= row_shift {
                cache.fast = cache.rows.lanes as u32;
                cache.off_shift = line_shift - row_shift;
                cache.off_mask = (sets - 1) << row_shift;
                cache.tag_shift = line_shift + sets.trailing_zeros();
            }
        } else {
            cache.general = Some(SetAssoc::new_tags_only(lines as usize, ways, c.replacement, seed));
        }
        cache
    }

    /// Look `pa`'s line up and allocate it on a miss; returns whether it hit.
    #[inline(always)]
    fn probe(&mut self, pa: u64) -> bool {
        // Compiled for each row width, so that the tag compare and the update are a few vector
        // instructions. (Bit tests, most frequent first: LLVM turns `==` chains and `match`
        // into a compare tree in its own order, or a jump table, an indirect branch.)
        // SAFETY (all three): the level is fast with that many lanes (`fast` is 0, 4, 8 or 16).
        if self.fast & 8 != 0 {
            unsafe { self.probe_as(8, pa) }
        } else if self.fast & 16 != 0 {
            unsafe { self.probe_as(16, pa) }
        } else if self.fast & 4 != 0 {
            unsafe { self.probe_as(4, pa) }
        } else {
            self.probe_slow(pa)
        }
    }

    /// [`Cache::probe`] of a fast level of `lanes` lanes (a constant after inlining).
    ///
    /// # Safety
    /// The level is fast with `lanes` lanes (`self.fast == lanes`).
    #[inline(always)]
    unsafe fn probe_as(&mut self, lanes: u32, pa: u64) -> bool {
        debug_assert_eq!(self.fast, lanes);
        let off = ((pa >> self.off_shift) & self.off_mask) as usize;
        let tag = (pa >> self.tag_shift) as u32;
        debug_assert!(tag != EMPTY, "line beyond physical memory");
        // SAFETY (all three): a fast level's `off_mask` is `(sets - 1) << row_shift`, so `off`
        // is the start of one of the `sets` rows of `rows` (`Rows::probe`'s contract).
        unsafe {
            match lanes {
                4 => self.rows.probe::<4>(off, tag),
                8 => self.rows.probe::<8>(off, tag),
                16 => self.rows.probe::<16>(off, tag),
                _ => unreachable!("fast levels have 4, 8 or 16 lanes"),
            }
        }
    }

    /// [`Cache::probe`] of the general array, or of compact rows with any set count.
    #[inline(never)]
    fn probe_slow(&mut self, pa: u64) -> bool {
        let line = pa >> self.line_shift;
        if let Some(g) = &mut self.general {
            let (hit, evicted) = g.access(g.set_of(line), line);
            self.general_evictions += evicted as u64;
            return hit;
        }
        let (set, tag) = (line % self.sets, line / self.sets);
        debug_assert!(tag < EMPTY as u64, "line beyond physical memory");
        let off = set as usize * 4 * self.rows.lanes;
        // SAFETY (all three): `off` is the start of row `set < sets`.
        match self.rows.lanes {
            16 => unsafe { self.rows.probe::<16>(off, tag as u32) },
            8 => unsafe { self.rows.probe::<8>(off, tag as u32) },
            _ => unsafe { self.rows.probe::<4>(off, tag as u32) },
        }
    }

    /// Ask the host to bring `pa`'s row into its cache (no effect on the simulation).
    #[inline(always)]
    fn prefetch(&self, pa: u64) {
        let off = if self.fast != 0 {
            ((pa >> self.off_shift) & self.off_mask) as usize
        } else {
            let line = pa >> self.line_shift;
            if let Some(g) = &self.general {
                return g.prefetch(g.set_of(line));
            }
            (line % self.sets) as usize * 4 * self.rows.lanes
        };
        // A row lies within one aligned 64-byte block: one host line.
        prefetch_ptr((self.rows.mem.as_ptr() as *const u8).wrapping_add(off));
    }
}

/// Tag of an empty way in a compact row.
const EMPTY: u32 = u32::MAX;

/// 64 bytes aligned to 64 (a host cache line): the unit of compact rows and mask tables.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Block([u32; 16]);

/// A cache level's tags with exact LRU or FIFO over at most 16 ways, in compact host rows: each
/// set is a row of `lanes` (4, 8 or 16, the next of these at or above `ways`) u32 tags, the
/// quotients `line / sets` (the set index is implied by the row), in recency order: for LRU the
/// most recently used way first, for FIFO the most recent fill first; empty ways (`EMPTY`)
/// follow the valid ones. Lanes past `ways` are not part of the set (they hold what a miss
/// pushed out of the last way, and a probe ignores them). A row is aligned to its size, so an
/// 8 MiB 16-way LLC row is exactly one host cache line (64 bytes instead of 16 u64 tags and 16
/// u64 stamps, 256 bytes), and the 4-way rows of a 256 KiB L2 are 16 bytes.
///
/// A miss moves every lane one place down and puts the tag in lane 0 (the last way, empty or
/// the least recently used or filled line, drops out). An LRU hit at lane `p` moves lanes
/// `0..p` one place down and the tag to lane 0; a FIFO hit changes nothing. This is exact LRU
/// and FIFO, and the victims are those of [`SetAssoc`] with stamps (the first way with the
/// oldest stamp, empty ways having stamp 0): the way a line occupies is not observable, only
/// whether a probe hits and whether a fill evicts a valid line, and with stamps too every
/// empty way is filled before any valid line is evicted (levels are never invalidated). A unit
/// test checks this against the stamped rows for 1-16 ways.
///
/// A hit's move is a blend of the row with itself shifted by one lane under a mask of the lanes
/// `0..=p` from a per-level table (all zero for FIFO), so that no branch depends on where the
/// probe hit.
#[derive(Debug, Clone)]
struct Rows {
    lanes: usize,
    ways: usize,
    /// The compare-mask bits (`bits_per_lane::<L>()` per lane) of the lanes `0..ways`.
    way_bits: u32,
    /// The rows (`sets * lanes` u32, then `EMPTY` up to a whole block).
    mem: Vec<Block>,
    /// `lanes` masks of `lanes` u32 each (all ones in the lanes that move), entry `p` for a hit
    /// at lane `p`: LRU, the lanes `0..=p`; FIFO, none.
    masks: Vec<Block>,
}

/// Compare-mask bits per lane of a row of `L` lanes (8 lanes: a mask of packed 16-bit lanes).
const fn bits_per_lane<const L: usize>() -> usize {
    if L == 8 {
        2
    } else {
        1
    }
}

impl Rows {
    fn empty() -> Rows {
        Rows { lanes: 4, ways: 0, way_bits: 0, mem: Vec::new(), masks: Vec::new() }
    }

    fn new(sets: usize, ways: usize, lru: bool) -> Rows {
        assert!((1..=16).contains(&ways) && sets > 0);
        let lanes = if ways <= 4 {
            4
        } else if ways <= 8 {
            8
        } else {
            16
        };
        let blocks = (sets * lanes).div_ceil(16);
        let mut mem = Vec::with_capacity(blocks);
        if blocks * 64 >= 2 << 20 {
            crate::host::advise_huge(mem.as_mut_ptr() as *mut u8, blocks * 64);
        }
        mem.resize(blocks, Block([EMPTY; 16]));
        let mut flat = vec![0u32; lanes * lanes];
        for (entry, mask) in flat.chunks_mut(lanes).enumerate() {
            for (lane, m) in mask.iter_mut().enumerate() {
                *m = if lru && entry < ways && lane <= entry { u32::MAX } else { 0 };
            }
        }
        let mut masks = vec![Block([0; 16]); flat.len().div_ceil(16)];
        for (i, m) in flat.into_iter().enumerate() {
            masks[i / 16].0[i % 16] = m;
        }
        let bits = if lanes == 8 { 2 } else { 1 };
        let way_bits = ((1u64 << (bits * ways)) - 1) as u32;
        Rows { lanes, ways, way_bits, mem, masks }
    }

    /// Valid lines held. (Every time-series sample asks: rows never straddle a block, so this is
    /// a plain scan, about 50 us for an 8 MiB LLC.)
    fn valid(&self) -> u64 {
        let rows = self.mem.iter().flat_map(|b| b.0.chunks_exact(self.lanes));
        rows.map(|r| r[..self.ways].iter().filter(|&&t| t != EMPTY).count() as u64).sum()
    }

    /// Look `tag` up in the row at byte offset `off` and update the row; returns whether it hit.
    ///
    /// # Safety
    /// `L == self.lanes`, and `off` is `4 * L` times a set index below the set count.
    #[inline(always)]
    unsafe fn probe<const L: usize>(&mut self, off: usize, tag: u32) -> bool {
        debug_assert!(L == self.lanes && off.is_multiple_of(4 * L) && off + 4 * L <= self.mem.len() * 64);
        let masks = self.masks.as_ptr() as *const u32;
        // SAFETY: by the contract the row lies in `mem`, aligned to its size; `masks` is the
        // table of `L + 1` masks of `L` lanes.
        unsafe { probe_row::<L>((self.mem.as_mut_ptr() as *mut u8).add(off) as *mut u32, masks, self.way_bits, tag) }
    }
}

#[cfg(not(target_arch = "x86_64"))]
use self::probe_scalar as probe_row;
#[cfg(target_arch = "x86_64")]
use self::probe_sse2 as probe_row;

/// Byte offset of the mask entry for the lowest set bit `bit` of a compare mask of a row of `L`
/// lanes (with two bits per lane, `bit` is even).
#[inline(always)]
fn mask_offset<const L: usize>(bit: u32) -> usize {
    bit as usize * (4 * L / bits_per_lane::<L>())
}

/// [`Rows::probe`] of the row `row` with the mask table `masks`, in plain Rust.
///
/// # Safety
/// `row` points to `L` u32 aligned to 4 * L bytes, `masks` to `L * L` u32.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
unsafe fn probe_scalar<const L: usize>(row: *mut u32, masks: *const u32, way_bits: u32, tag: u32) -> bool {
    // SAFETY: by the contract.
    let (row, masks) = unsafe { (&mut *(row as *mut [u32; L]), std::slice::from_raw_parts(masks, L * L)) };
    let b = bits_per_lane::<L>();
    let hits = row.iter().enumerate().fold(0u32, |m, (i, &t)| m | ((t == tag) as u32) << (b * i)) & way_bits;
    if hits == 0 {
        row.copy_within(0..L - 1, 1);
        row[0] = tag;
        return false;
    }
    let entry = mask_offset::<L>(hits.trailing_zeros()) / 4;
    let mask = &masks[entry..entry + L];
    for i in (1..L).rev() {
        row[i] = (row[i] & !mask[i]) | (row[i - 1] & mask[i]);
    }
    row[0] = (row[0] & !mask[0]) | (tag & mask[0]);
    true
}

/// [`Rows::probe`] with SSE2 (every x86-64 has it).
///
/// # Safety
/// As [`probe_scalar`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(clippy::needless_range_loop)] // vector k of the row, of the mask and of the arrays
unsafe fn probe_sse2<const L: usize>(row: *mut u32, masks: *const u32, way_bits: u32, tag: u32) -> bool {
    use std::arch::x86_64::*;
    const { assert!(L == 4 || L == 8 || L == 16) };
    let v = row as *mut __m128i;
    let t = _mm_set1_epi32(tag as i32);
    // SAFETY (every load and store below): the row is `L / 4` aligned vectors; the unaligned
    // loads at `row + 4k - 1` (k >= 1) lie inside it; the mask entry is `L / 4` aligned
    // vectors of the table (an entry index is a lane below `L`).
    unsafe {
        let mut a = [_mm_setzero_si128(); 4];
        for k in 0..L / 4 {
            a[k] = _mm_load_si128(v.add(k));
        }
        // The compare mask: one bit per lane (4 and 16 lanes), two (8 lanes).
        let eq = a.map(|x| _mm_cmpeq_epi32(x, t));
        let hits = if L == 4 {
            _mm_movemask_ps(_mm_castsi128_ps(eq[0]))
        } else if L == 8 {
            _mm_movemask_epi8(_mm_packs_epi32(eq[0], eq[1]))
        } else {
            _mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(eq[0], eq[1]), _mm_packs_epi32(eq[2], eq[3])))
        } as u32
            & way_bits;
        // The row shifted down one lane, the tag in lane 0 (all loaded before any store).
        let mut s = [_mm_or_si128(_mm_slli_si128::<4>(a[0]), _mm_cvtsi32_si128(tag as i32)); 4];
        for k in 1..L / 4 {
            s[k] = _mm_loadu_si128(row.add(4 * k - 1) as *const __m128i);
        }
        if hits == 0 {
            for k in 0..L / 4 {
                _mm_store_si128(v.add(k), s[k]);
            }
            return false;
        }
        let m = masks.byte_add(mask_offset::<L>(hits.trailing_zeros())) as *const __m128i;
        for k in 0..L / 4 {
            let blend = _mm_xor_si128(a[k], _mm_and_si128(_mm_xor_si128(a[k], s[k]), _mm_load_si128(m.add(k))));
            _mm_store_si128(v.add(k), blend);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setassoc::Replacement;
    use crate::units::Size;

    fn cfg(name: &str, size: u64, ways: u64, lat: u64) -> CacheConfig {
        CacheConfig { name: name.into(), size: Size(size), ways, line: 64, latency: lat, replacement: Replacement::Lru }
    }

    #[test]
    fn loads_fill_every_level_and_hit_where_expected() {
        // L1: 2 sets x 1 way; L2: 1 set x 4 ways.
        let mut c = Caches::new(&[cfg("L1D", 128, 1, 4), cfg("L2", 256, 4, 12)], 1 << 30, 200, 1);
        assert_eq!(c.access(0x1000, 0, true), (2, 200));
        assert_eq!(c.access(0x1008, 0, true), (0, 4)); // same line
        assert_eq!(c.access(0x1080, 0, false), (2, 200)); // same L1 set (line 0x42 even) evicts 0x1000
        assert_eq!(c.access(0x1000, 0, true), (1, 12));
        let s = c.stats();
        assert_eq!(s[0].1.accesses, 4);
        assert_eq!(s[0].1.hits, 1);
        assert_eq!(s[0].1.fills, 3);
        assert_eq!(s[0].1.evictions, 2);
        assert_eq!(s[0].1.walk_accesses, 3);
        assert_eq!(s[0].1.walk_hits, 1);
        assert_eq!(s[1].1.accesses, 3);
        assert_eq!(s[1].1.hits, 1);
        assert_eq!(s[1].1.evictions, 0);
        assert_eq!(c.dram_accesses(), 2);
        assert_eq!(c.dram_walk_accesses(), 1);
        // Starting past the last level: DRAM, no level counts it.
        assert_eq!(c.access(0x1000, 5, false), (2, 200));
        assert_eq!(c.dram_accesses(), 3);
        assert_eq!(c.stats(), s);
    }

    /// Probe `line` in compact rows of `sets` sets (SSE2 or scalar); returns (hit, evicted a
    /// valid line).
    fn rows_access(r: &mut Rows, sets: usize, line: u64, scalar: bool) -> (bool, bool) {
        let before = r.valid();
        let off = (line % sets as u64) as usize * 4 * r.lanes;
        let tag = (line / sets as u64) as u32;
        let (masks, way_bits) = (r.masks.as_ptr() as *const u32, r.way_bits);
        // SAFETY: `off` is the start of a row below `sets`, `masks` the table of these rows.
        let hit = unsafe {
            let row = (r.mem.as_mut_ptr() as *mut u8).add(off) as *mut u32;
            match (r.lanes, scalar) {
                (16, false) => r.probe::<16>(off, tag),
                (8, false) => r.probe::<8>(off, tag),
                (4, false) => r.probe::<4>(off, tag),
                (16, true) => probe_scalar::<16>(row, masks, way_bits, tag),
                (8, true) => probe_scalar::<8>(row, masks, way_bits, tag),
                _ => probe_scalar::<4>(row, masks, way_bits, tag),
            }
        };
        (hit, !hit && r.valid() == before)
    }

    #[test]
    fn compact_rows_evict_exactly_as_stamps() {
        // Against the general array (u64 stamps), for every way count, power-of-two and other
        // set counts, LRU and FIFO, over random lines with many repeats; with the SIMD probe
        // and the scalar one (the other arches'), which must also leave the same rows.
        for lru in [true, false] {
            let repl = if lru { Replacement::Lru } else { Replacement::Fifo };
            for ways in 1..=16 {
                for sets in [1, 3, 4] {
                    let mut a = Rows::new(sets, ways, lru);
                    let mut s = Rows::new(sets, ways, lru);
                    let mut b = SetAssoc::new_tags_only(sets * ways, ways, repl, 1);
                    let mut x = 0x9e37_79b9_7f4a_7c15u64;
                    for _ in 0..20_000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let line = x % (3 * (sets * ways) as u64);
                        let want = b.access(b.set_of(line), line);
                        assert_eq!(rows_access(&mut a, sets, line, false), want, "{repl:?} {ways} ways {sets} sets");
                        assert_eq!(
                            rows_access(&mut s, sets, line, true),
                            want,
                            "scalar {repl:?} {ways} ways {sets} sets"
                        );
                    }
                    assert!(a.mem.iter().zip(&s.mem).all(|(p, q)| p.0 == q.0));
                }
            }
        }
    }

    #[test]
    fn derived_counters_match_counting_every_level() {
        // The histogram and the valid-line count give every counter that per-level counting
        // gives, for fast and slow levels (power-of-two sets or not, rows wider than a line,
        // the general array), any first level, walks and other loads.
        let mk = |name: &str, size, ways, line, repl| CacheConfig {
            name: String::from(name),
            size: Size(size),
            ways,
            line,
            latency: 1,
            replacement: repl,
        };
        let cfgs = [
            mk("A", 16 * 16 * 32, 16, 32, Replacement::Lru),
            mk("B", 24 * 64, 8, 64, Replacement::Fifo),
            mk("C", 16 * 8 * 64, 8, 64, Replacement::Lru),
            mk("D", 16 * 4 * 64, 4, 64, Replacement::Fifo),
            mk("E", 4 * 16 * 64, 16, 64, Replacement::Lru),
            mk("F", 8 * 12 * 64, 12, 64, Replacement::Fifo),
            mk("G", 128 * 64, 4, 64, Replacement::TreePlru),
            mk("H", 20 * 64 * 4, 20, 64, Replacement::Lru),
        ];
        let memory = 1 << 24;
        let mut c = Caches::new(&cfgs, memory, 100, 7);
        assert_eq!(c.levels.iter().map(|l| l.fast).collect::<Vec<_>>(), [0, 0, 8, 4, 16, 16, 0, 0]);
        let mut refs: Vec<SetAssoc> = cfgs
            .iter()
            .enumerate()
            .map(|(i, k)| {
                SetAssoc::new_tags_only(
                    (k.size.0 / k.line) as usize,
                    k.ways as usize,
                    k.replacement,
                    7 ^ (0x100 + i as u64),
                )
            })
            .collect();
        let mut want = vec![CacheStats::default(); cfgs.len()];
        let (mut dram, mut dram_walk) = (0, 0);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for i in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let pa = x % (memory / 64) * 64 % (1 << (8 + i % 10)); // small footprints too
            let (from, walk) = ((x >> 40) as usize % 7, x >> 50 & 1 == 1);
            let mut hit = cfgs.len();
            for (l, r) in refs.iter_mut().enumerate().skip(from) {
                let line = pa >> cfgs[l].line.trailing_zeros();
                let (h, ev) = r.access(r.set_of(line), line);
                let s = &mut want[l];
                s.accesses += 1;
                s.walk_accesses += walk as u64;
                if h {
                    s.hits += 1;
                    s.walk_hits += walk as u64;
                    hit = l;
                    break;
                }
                s.misses += 1;
                s.fills += 1;
                s.evictions += ev as u64;
            }
            if hit == cfgs.len() {
                dram += 1;
                dram_walk += walk as u64;
            }
            assert_eq!(c.access(pa, from, walk).0, hit);
        }
        let got: Vec<CacheStats> = c.stats().into_iter().map(|(_, s)| s).collect();
        assert_eq!(got, want);
        assert!(want.iter().all(|s| s.evictions > 0 && s.hits > 0 && s.walk_hits > 0));
        assert_eq!((c.dram_accesses(), c.dram_walk_accesses()), (dram, dram_walk));
    }
}
