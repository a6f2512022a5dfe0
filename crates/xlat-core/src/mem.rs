//! The memory model: set-associative caches (L1D, L2, LLC, ...) that page-walk loads (and, if
//! configured, data accesses) go through, ending in DRAM. Every level allocates on a miss
//! (non-inclusive, non-exclusive); write-backs are not modelled (they do not delay loads).

use crate::config::CacheConfig;
use crate::setassoc::{prefetch_ptr, Replacement, SetAssoc};
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
    arr: Tags,
    line_shift: u32,
    pub latency: u64,
    pub stats: CacheStats,
}

#[derive(Debug, Clone)]
pub struct Caches {
    pub levels: Vec<Cache>,
    pub dram_latency: u64,
    pub dram_accesses: u64,
    pub dram_walk_accesses: u64,
}

impl Caches {
    /// `memory` is the physical memory size in bytes (every address accessed is below it).
    pub fn new(cfg: &[CacheConfig], memory: u64, dram_latency: u64, seed: u64) -> Caches {
        let levels: Vec<Cache> = cfg
            .iter()
            .enumerate()
            .map(|(i, c)| Cache {
                name: c.name.clone(),
                arr: Tags::new(c, memory, seed ^ (0x100 + i as u64)),
                line_shift: c.line.trailing_zeros(),
                latency: c.latency,
                stats: CacheStats::default(),
            })
            .collect();
        Caches { levels, dram_latency, dram_accesses: 0, dram_walk_accesses: 0 }
    }

    /// Access physical address `pa` starting at level `from`; returns (level that hit, with
    /// `levels.len()` meaning DRAM, and the latency of that level).
    #[inline]
    pub fn access(&mut self, pa: u64, from: usize, walk: bool) -> (usize, u64) {
        let n = self.levels.len();
        // Every level that misses allocates the line (in the same pass: the order of fills
        // does not matter, each level is independent).
        for l in from..n {
            let c = &mut self.levels[l];
            let line = pa >> c.line_shift;
            c.stats.accesses += 1;
            c.stats.walk_accesses += walk as u64;
            let (hit, evicted) = c.arr.access(line);
            if hit {
                c.stats.hits += 1;
                c.stats.walk_hits += walk as u64;
                return (l, c.latency);
            }
            c.stats.fills += 1;
            c.stats.evictions += evicted as u64;
        }
        self.dram_accesses += 1;
        self.dram_walk_accesses += walk as u64;
        (n, self.dram_latency)
    }

    /// Host prefetch of the sets `pa` maps to from level `from` on (no simulated effect).
    #[inline]
    pub fn prefetch(&self, pa: u64, from: usize) {
        for c in &self.levels[from..] {
            c.arr.prefetch(pa >> c.line_shift);
        }
    }

    pub fn stats(&self) -> Vec<(String, CacheStats)> {
        self.levels
            .iter()
            .map(|c| {
                let mut s = c.stats;
                s.misses = s.accesses - s.hits;
                (c.name.clone(), s)
            })
            .collect()
    }
}

/// The tag array of a cache level: compact rows when the replacement allows, else the
/// general set-associative array.
#[derive(Debug, Clone)]
enum Tags {
    Compact(Compact),
    General(SetAssoc),
}

impl Tags {
    fn new(c: &CacheConfig, memory: u64, seed: u64) -> Tags {
        let lines = c.size.0 / c.line;
        let ways = c.ways as usize;
        let sets = lines / c.ways;
        // Every line number below `memory / line` must give a quotient below `EMPTY`.
        let max_quotient = (memory.div_ceil(c.line)).saturating_sub(1) / sets;
        let lru = c.replacement == Replacement::Lru;
        if (lru || c.replacement == Replacement::Fifo) && ways <= 16 && max_quotient < EMPTY as u64 {
            Tags::Compact(Compact::new(sets as usize, ways, lru))
        } else {
            Tags::General(SetAssoc::new_tags_only(lines as usize, ways, c.replacement, seed))
        }
    }

    /// Look `line` up and allocate it on a miss; returns (hit, evicted a valid line).
    #[inline(always)]
    fn access(&mut self, line: u64) -> (bool, bool) {
        match self {
            Tags::Compact(a) => a.access(line),
            Tags::General(a) => a.access(a.set_of(line), line),
        }
    }

    #[inline(always)]
    fn prefetch(&self, line: u64) {
        match self {
            Tags::Compact(a) => a.prefetch(line),
            Tags::General(a) => a.prefetch(a.set_of(line)),
        }
    }
}

/// The replacement parameters of a compact array (copied out of it while a row is borrowed).
#[derive(Debug, Clone, Copy)]
struct Order {
    ways: usize,
    lru: bool,
    /// 0x80 in the bytes that hold the ranks of real ways, after the ranks are split into the
    /// even nibbles and the odd ones (one per byte).
    even_ways: u64,
    odd_ways: u64,
}

impl Order {
    /// The replacement update after the tag compare (`hits`: bit w set if way w holds `tag`,
    /// at most one is).
    #[inline(always)]
    fn finish(self, tags: &mut [u32], rank_words: &mut [u32], tag: u32, hits: u32) -> (bool, bool) {
        let hit = hits != 0;
        if hit && !self.lru {
            return (true, false); // FIFO: a hit changes nothing
        }
        let rank_words: &mut [u32; RANK_WORDS] = rank_words.try_into().expect("rank words");
        let ranks = rank_words[0] as u64 | (rank_words[1] as u64) << 32;
        let way = if hit {
            hits.trailing_zeros() as usize
        } else {
            // The nibble holding rank 0 (exactly one does): the lowest zero nibble.
            let zero = ranks.wrapping_sub(NIBBLES_1) & !ranks & NIBBLES_8;
            (zero.trailing_zeros() / 4) as usize
        };
        // Move `way` to the top: every real way ranked above it moves down one. The ranks are
        // spread one per byte (even ways, then odd ways), where a byte above `r` gets its 0x80
        // bit from `byte + 0x7f - r` (at most 0x8e: no carry into the next byte).
        let r = (ranks >> (4 * way)) & 0xf;
        let add = BYTES_1 * (0x7f - r);
        let even = ((ranks & LO_NIBBLES) + add) & self.even_ways;
        let odd = (((ranks >> 4) & LO_NIBBLES) + add) & self.odd_ways;
        let mut moved = ranks - ((even >> 7) | (odd >> 3));
        moved = (moved & !(0xf << (4 * way))) | ((self.ways as u64 - 1) << (4 * way));
        rank_words[0] = moved as u32;
        rank_words[1] = (moved >> 32) as u32;
        if hit {
            return (true, false);
        }
        let old = std::mem::replace(&mut tags[way], tag);
        (false, old != EMPTY)
    }
}

/// Tag of an empty way in a compact row.
const EMPTY: u32 = u32::MAX;
/// u32 words of recency ranks at the end of each compact row (16 four-bit ranks).
const RANK_WORDS: usize = 2;
/// Each byte's low nibble.
const LO_NIBBLES: u64 = 0x0f0f_0f0f_0f0f_0f0f;
const NIBBLES_1: u64 = 0x1111_1111_1111_1111;
const NIBBLES_8: u64 = 0x8888_8888_8888_8888;
const BYTES_1: u64 = 0x0101_0101_0101_0101;

/// A cache level's tags with exact LRU or FIFO over at most 16 ways, in compact host rows: the
/// set's tags as u32 quotients (`line / sets`: the set index is implied by the row), then one
/// nibble per way (a u64) giving its recency rank (0 = the next victim, `ways - 1` = most
/// recent). An 8 MiB 16-way LLC row is 72 bytes (2 host lines) instead of 16 u64 tags and 16
/// u64 stamps (256 bytes, 4 lines), and the whole array (576 KiB instead of 2 MiB) fits a host
/// L2.
///
/// The victims are exactly those of [`SetAssoc`] with stamps (the first way with the oldest
/// stamp, empty ways having stamp 0): ranks start as the way numbers, so empty ways are the
/// lowest ranks in way order; a fill takes rank 0 (the first empty way, or the least recently
/// used or filled way when the set is full) and a touch moves a way to the top, shifting the
/// ways above it down by one, which keeps empty ways below valid ones and in way order. LRU
/// touches on hits and fills, FIFO on fills only, as the stamps were. Cache levels are never
/// invalidated, so no other operation needs to keep that order.
#[derive(Debug, Clone)]
struct Compact {
    sets: u64,
    ways: usize,
    /// `sets - 1` and `log2(sets)` when `sets` is a power of two (else `%` and `/`).
    pow2: bool,
    mask: u64,
    set_bits: u32,
    /// u32 words per row: `ways` tags, then `RANK_WORDS` of ranks.
    stride: usize,
    order: Order,
    mem: Vec<u32>,
}

impl Compact {
    fn new(sets: usize, ways: usize, lru: bool) -> Compact {
        assert!((1..=16).contains(&ways) && sets > 0);
        let stride = ways + RANK_WORDS;
        let n = sets * stride;
        let mut mem = Vec::with_capacity(n);
        if n >= 1 << 19 {
            crate::os::pagetable::advise_huge(mem.as_mut_ptr() as *mut u8, n * 4);
        }
        // Way w starts at rank w; nibbles of missing ways are 0xf (never 0: never the victim;
        // the masks below keep them from being decremented).
        let mut ranks = u64::MAX;
        let (mut even_ways, mut odd_ways) = (0u64, 0u64);
        for w in 0..ways {
            ranks = (ranks & !(0xf << (4 * w))) | ((w as u64) << (4 * w));
            let byte = 0x80u64 << (8 * (w / 2));
            if w % 2 == 0 {
                even_ways |= byte;
            } else {
                odd_ways |= byte;
            }
        }
        let mut row = vec![EMPTY; ways];
        row.extend([ranks as u32, (ranks >> 32) as u32]);
        for _ in 0..sets {
            mem.extend_from_slice(&row);
        }
        Compact {
            sets: sets as u64,
            ways,
            pow2: sets.is_power_of_two(),
            mask: sets as u64 - 1,
            set_bits: sets.trailing_zeros(),
            stride,
            order: Order { ways, lru, even_ways, odd_ways },
            mem,
        }
    }

    /// Row start and tag of `line` (the same set as `SetAssoc::set_of`: `line % sets`).
    #[inline(always)]
    fn locate(&self, line: u64) -> (usize, u32) {
        let (set, q) =
            if self.pow2 { (line & self.mask, line >> self.set_bits) } else { (line % self.sets, line / self.sets) };
        debug_assert!(q < EMPTY as u64, "line beyond physical memory");
        (set as usize * self.stride, q as u32)
    }

    #[inline(always)]
    fn access(&mut self, line: u64) -> (bool, bool) {
        // Compiled for the usual way counts, so that the tag compare is a few vector
        // instructions. (An `if` chain, not a `match`: a jump table is an indirect branch.)
        if self.ways == 16 {
            self.access_w::<16>(line)
        } else if self.ways == 8 {
            self.access_w::<8>(line)
        } else if self.ways == 4 {
            self.access_w::<4>(line)
        } else {
            self.access_any(line)
        }
    }

    #[inline(always)]
    fn access_w<const W: usize>(&mut self, line: u64) -> (bool, bool) {
        let (base, tag) = self.locate(line);
        let order = self.order;
        let row = &mut self.mem[base..base + W + RANK_WORDS];
        let (tags, rank_words) = row.split_at_mut(W);
        let tags: &mut [u32; W] = tags.try_into().expect("W ways");
        let mut hits = 0u32;
        for (w, &t) in tags.iter().enumerate() {
            hits |= ((t == tag) as u32) << w;
        }
        order.finish(tags, rank_words, tag, hits)
    }

    fn access_any(&mut self, line: u64) -> (bool, bool) {
        let (base, tag) = self.locate(line);
        let order = self.order;
        let row = &mut self.mem[base..base + self.stride];
        let (tags, rank_words) = row.split_at_mut(self.ways);
        let hits = tags.iter().enumerate().fold(0, |m, (w, &t)| m | ((t == tag) as u32) << w);
        order.finish(tags, rank_words, tag, hits)
    }

    /// Ask the host to bring `line`'s row into its cache (no effect on the simulation).
    #[inline(always)]
    fn prefetch(&self, line: u64) {
        let (base, _) = self.locate(line);
        let row = self.mem.as_ptr().wrapping_add(base);
        // A row is at most 72 bytes: its first and last words cover every host line of it.
        prefetch_ptr(row);
        prefetch_ptr(row.wrapping_add(self.stride - 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Size;
    use crate::setassoc::Replacement;

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
        assert_eq!(s[0].1.evictions, 2);
        assert_eq!(s[1].1.accesses, 3);
        assert_eq!(s[1].1.hits, 1);
        assert_eq!(c.dram_accesses, 2);
        assert_eq!(c.dram_walk_accesses, 1);
    }

    #[test]
    fn compact_rows_evict_exactly_as_stamps() {
        // Against the general array (u64 stamps), for every way count, power-of-two and other
        // set counts, LRU and FIFO, over random lines with many repeats.
        for lru in [true, false] {
            let repl = if lru { Replacement::Lru } else { Replacement::Fifo };
            for ways in 1..=16 {
                for sets in [1, 3, 4] {
                    let mut a = Compact::new(sets, ways, lru);
                    let mut b = SetAssoc::new_tags_only(sets * ways, ways, repl, 1);
                    let mut x = 0x9e37_79b9_7f4a_7c15u64;
                    for _ in 0..20_000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let line = x % (3 * (sets * ways) as u64);
                        assert_eq!(a.access(line), b.access(b.set_of(line), line), "{repl:?} {ways} ways {sets} sets");
                    }
                }
            }
        }
    }
}
