//! The memory model: set-associative caches (L1D, L2, LLC, ...) that page-walk loads (and, if
//! configured, data accesses) go through, ending in DRAM. Every level allocates on a miss
//! (non-inclusive, non-exclusive); write-backs are not modelled (they do not delay loads).

use crate::config::CacheConfig;
use crate::setassoc::SetAssoc;
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
    arr: SetAssoc,
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
    pub fn new(cfg: &[CacheConfig], dram_latency: u64, seed: u64) -> Caches {
        Caches {
            levels: cfg
                .iter()
                .enumerate()
                .map(|(i, c)| Cache {
                    name: c.name.clone(),
                    arr: SetAssoc::new_tags_only(
                        (c.size.0 / c.line) as usize,
                        c.ways as usize,
                        c.replacement,
                        seed ^ (0x100 + i as u64),
                    ),
                    line_shift: c.line.trailing_zeros(),
                    latency: c.latency,
                    stats: CacheStats::default(),
                })
                .collect(),
            dram_latency,
            dram_accesses: 0,
            dram_walk_accesses: 0,
        }
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
            let set = c.arr.set_of(line);
            c.stats.accesses += 1;
            c.stats.walk_accesses += walk as u64;
            let (hit, evicted) = c.arr.access(set, line);
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
            let line = pa >> c.line_shift;
            c.arr.prefetch(c.arr.set_of(line));
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
        let mut c = Caches::new(&[cfg("L1D", 128, 1, 4), cfg("L2", 256, 4, 12)], 200, 1);
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
}
