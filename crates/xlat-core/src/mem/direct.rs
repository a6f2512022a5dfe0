//! The caches of the configs/mach machines, resolved at configuration time: one direct-mapped
//! level (the DECstation 5000/240's 64 KB data cache) in front of DRAM. A probe is a shift, a
//! mask and one compare against the level's own tag rows (no row shuffle, no histogram index),
//! and the loop that uses it counts its accesses in batches ([`Caches::add_accesses`]): the
//! same hits, the same rows and the same counters as [`Caches::access`], which the unit test
//! checks. The Mach loop (mmu/mach/run.rs) takes this path when [`Caches::is_direct`]; other
//! geometries go through the general model.

use super::Caches;

/// A direct-mapped first level as a loop probes it ([`Caches::direct`]): its geometry, its
/// rows' first byte and its latencies, copied out so that they stay in registers across the
/// loop's probes (a probe reads no pointer of the caches first).
/// (`Default`: a stand-in for loops compiled for other caches, which never probe with it.)
#[derive(Debug, Clone, Copy)]
pub struct Direct {
    geometry: (u32, u32, u64),
    rows: *mut u8,
    /// The latencies of a hit and of a miss.
    pub hit: u64,
    pub dram: u64,
}

impl Default for Direct {
    fn default() -> Direct {
        Direct { geometry: (0, 0, 0), rows: std::ptr::null_mut(), hit: 0, dram: 0 }
    }
}

// SAFETY: `rows` points into the rows of the caches it was taken from, which move (and are
// sent to another thread) only with the simulator that owns both them and the handler keeping
// this copy; the rows are never reallocated.
unsafe impl Send for Direct {}

impl Caches {
    /// Whether the caches are exactly one direct-mapped level probed with a shift and a mask,
    /// with walk loads starting at it: then [`Caches::probe_direct`] stands for
    /// [`Caches::access`] and [`Caches::access_walk`].
    pub fn is_direct(&self) -> bool {
        matches!(&self.levels[..], [c] if c.one_way()) && self.walk_from == 0
    }

    /// The level of caches that [`Caches::is_direct`], else `None`.
    pub fn direct(&mut self) -> Option<Direct> {
        if !self.is_direct() {
            return None;
        }
        let dram = self.dram_latency;
        let c = &mut self.levels[0];
        Some(Direct { geometry: c.geometry(), rows: c.rows_ptr(), hit: c.latency, dram })
    }

    /// [`Caches::access`] of `pa` from the first level, `d` being [`Caches::direct`]: uncounted
    /// (the caller counts with [`Caches::add_accesses`]): whether the level held the line (it
    /// does now).
    ///
    /// # Safety
    /// `d` is what [`Caches::direct`] of these caches returned.
    #[inline(always)]
    pub unsafe fn probe_direct(&mut self, d: &Direct, pa: u64) -> bool {
        debug_assert!(self.is_direct());
        debug_assert!(d.rows == self.levels[0].rows_ptr() && d.geometry == self.levels[0].geometry());
        let g = d.geometry;
        let off = ((pa >> g.0) & g.2) as usize;
        let tag = (pa >> g.1) as u32;
        debug_assert!(tag != crate::array::rows::EMPTY, "line beyond physical memory");
        // SAFETY: the caller's contract: the one level is direct-mapped and fast, of geometry
        // `d.geometry` and rows `d.rows`, so `off` is a set's row.
        unsafe { crate::array::rows::probe_one_way_at(d.rows, off, tag) }
    }

    /// Count `n` accesses (page-walk loads if `walk`) made from level `from` that hit level
    /// `hit` (`levels.len()`: DRAM), as [`Caches::access`] counts each.
    pub fn add_accesses(&mut self, walk: bool, from: usize, hit: usize, n: u64) {
        let k = self.levels.len() + 1;
        self.hist[(walk as usize * k + from) * k + hit] += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::Replacement;
    use crate::config::CacheConfig;
    use crate::units::Size;

    fn level(size: u64, ways: u64, line: u64, replacement: Replacement) -> CacheConfig {
        CacheConfig { name: "L1".into(), size: Size(size), ways, line, latency: 1, replacement }
    }

    #[test]
    fn only_one_direct_mapped_fast_level_is_direct() {
        let memory = 1 << 30;
        let dm = level(64 << 10, 1, 16, Replacement::Lru);
        assert!(Caches::new(std::slice::from_ref(&dm), memory, 25, 1).is_direct());
        assert!(Caches::new(&[level(64 << 10, 1, 64, Replacement::Fifo)], memory, 25, 1).is_direct());
        assert!(!Caches::new(&[level(64 << 10, 2, 16, Replacement::Lru)], memory, 25, 1).is_direct());
        assert!(!Caches::new(&[level(48 << 10, 1, 16, Replacement::Lru)], memory, 25, 1).is_direct());
        assert!(!Caches::new(&[level(64 << 10, 1, 16, Replacement::Random)], memory, 25, 1).is_direct());
        assert!(!Caches::new(&[dm.clone(), dm.clone()], memory, 25, 1).is_direct());
        assert!(!Caches::new(&[], memory, 25, 1).is_direct());
        let mut c = Caches::new(&[dm], memory, 25, 1);
        c.set_walk_first(1);
        assert!(!c.is_direct());
        let d = Caches::new(&[level(64 << 10, 1, 16, Replacement::Lru)], memory, 25, 1).direct().unwrap();
        assert_eq!((d.hit, d.dram), (1, 25));
        assert!(Caches::new(&[], memory, 25, 1).direct().is_none());
    }

    #[test]
    fn probes_and_counts_exactly_as_the_general_model() {
        // Two copies of the DECstation's cache (and of one with 64-byte lines): one probed by
        // `access`, one by `probe_direct` with the counts added in batches. Every probe hits
        // alike, and the statistics (accesses, hits, fills, evictions from the rows' valid
        // lines, walk counts) are the same at every batch's end.
        for line in [16, 64] {
            let cfg = [level(64 << 10, 1, line, Replacement::Lru)];
            let (mut general, mut direct) = (Caches::new(&cfg, 1 << 30, 25, 1), Caches::new(&cfg, 1 << 30, 25, 1));
            let dl = direct.direct().expect("direct");
            let mut x = 0x2545_f491_4f6c_dd1du64;
            for batch in 0..200 {
                let mut counts = [[0u64; 2]; 2];
                for _ in 0..1000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Footprints around the cache's size: hits, conflicts and cold misses.
                    let pa = (x % (256 << (batch % 12))) & !7;
                    let walk = x >> 60 == 0;
                    let (hit, lat) = general.access(pa, 0, walk);
                    // SAFETY: `dl` from `direct` above.
                    let d = unsafe { direct.probe_direct(&dl, pa) };
                    assert_eq!((hit == 0, lat), (d, if d { 1 } else { 25 }), "{pa:#x}");
                    counts[walk as usize][!d as usize] += 1;
                }
                for (walk, c) in counts.iter().enumerate() {
                    for (hit, &n) in c.iter().enumerate() {
                        direct.add_accesses(walk == 1, 0, hit, n);
                    }
                }
                assert_eq!(general.stats(), direct.stats());
                assert_eq!(general.dram_walk_accesses(), direct.dram_walk_accesses());
            }
            assert!(general.stats()[0].1.evictions > 0 && general.stats()[0].1.hits > 0);
        }
    }
}
