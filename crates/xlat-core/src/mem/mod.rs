//! The memory model: set-associative caches (L1D, L2, LLC, ...) that page-walk loads (and, if
//! configured, data accesses) go through, ending in DRAM. Every level allocates on a miss
//! (non-inclusive, non-exclusive); write-backs are not modelled (they do not delay loads).
//!
//! The per-access work is one probe per level and one counter: accesses are counted in a
//! histogram by (walk or not, first level, level that hit), from which [`Caches::stats`] derives
//! every level's accesses, hits, misses and fills. Levels are never invalidated, so every fill
//! either takes an empty way or evicts a line, and the evictions of a level in compact rows are
//! its fills minus the valid lines it holds (counted when the statistics are asked for).

pub mod backend;
mod cache;
pub mod direct;
pub mod hybrid;
pub mod migrate;
pub mod rainbow;
pub mod twostage;

use crate::config::{CacheConfig, Config};
use cache::Cache;
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

/// Three fast levels' lanes (1, 4, 8 or 16 each) in one word (never 0).
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

    /// The caches of `cfg`, walk loads starting at `walker.first_cache`.
    pub fn from_config(cfg: &Config) -> Caches {
        let mut c = Caches::new(&cfg.cache, cfg.memory.size.0, cfg.memory.dram_latency, cfg.sim.seed);
        if let Some(n) = &cfg.walker.first_cache {
            c.set_walk_first(cfg.cache.iter().position(|k| &k.name == n).expect("validated"));
        }
        c
    }

    /// Whether the last level holds `pa`'s line (no update; false with no level).
    pub fn llc_contains(&self, pa: u64) -> bool {
        self.levels.last().is_some_and(|c| c.contains(pa))
    }

    /// The last level's row of `pa`'s set (its tags) and the shift from an address of that set
    /// to its tag, when the last level keeps compact rows (see `Cache::row_of`).
    pub fn llc_row(&self, pa: u64) -> Option<(&[u32], u32)> {
        self.levels.last().and_then(|c| c.row_of(pa))
    }

    /// The last level's set of `pa`'s line, and its set count (0 and 1 with no level).
    pub fn llc_set(&self, pa: u64) -> (usize, usize) {
        self.levels.last().map_or((0, 1), |c| (c.set_of(pa), c.sets()))
    }

    /// The level page-walk loads start at.
    pub fn walk_first(&self) -> usize {
        self.walk_from
    }

    /// The level page-walk loads start at (clamped past the last level: DRAM).
    pub fn set_walk_first(&mut self, from: usize) {
        let n = self.levels.len();
        self.walk_from = from.min(n);
        self.walk_row = ((n + 1) + self.walk_from) * (n + 1);
        self.walk_classes = match &self.levels[..] {
            [a, b, c] if self.walk_from == 0 && a.fast() != 0 && b.fast() != 0 && c.fast() != 0 => {
                pack_classes([a.fast(), b.fast(), c.fast()])
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
    #[inline(always)]
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
                s.evictions = c.evictions(s.fills);
                (c.name.clone(), s)
            })
            .collect()
    }
}

impl crate::stats::Counters for Caches {
    fn counters(&self, out: &mut dyn crate::stats::Sink) {
        for (name, s) in self.stats() {
            crate::report_fields!(out, "cache", s, name; accesses, hits, misses, fills, evictions, walk_accesses, walk_hits);
        }
        out.put(format_args!("dram.accesses"), self.dram_accesses());
        out.put(format_args!("dram.walk_accesses"), self.dram_walk_accesses());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::{Replacement, SetAssoc};
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
        assert_eq!(c.levels.iter().map(|l| l.fast()).collect::<Vec<_>>(), [0, 0, 8, 4, 16, 16, 0, 0]);
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
