//! The first-level probe of the Lite loop (seed 000 section 5.4.2): as [`Mmu::probe_first`]
//! without the memo, and each hit counted in its TLB's LRU-distance counters
//! ([`Mmu::lru_distance`]). Only the Lite variant of the engine compiles it in.

use super::tlb::lru_counter;
use super::Mmu;

impl Mmu {
    /// Count LRU distances from now on (the Lite loop, before its first access).
    pub fn count_lru_distance(&mut self) {
        self.lru_dist = vec![[0; 5]; self.tlbs.len()];
    }

    /// TLB `i`'s LRU-distance counters (seed 000 section 5.4.2, Figure 5.7): hits by way
    /// counted from the MRU position, `[0]` the MRU way, `[i]` ways `2^(i-1) .. 2^i - 1` (the
    /// hits that would miss with fewer than `2^i` ways active). Zero outside the Lite loop.
    pub fn lru_distance(&self, i: usize) -> [u64; 5] {
        self.lru_dist.get(i).copied().unwrap_or_default()
    }

    /// Probe role `r`'s first-level TLBs for `va`, counting the LRU distance of a hit; returns
    /// (frame, page size index).
    #[inline(always)]
    pub fn probe_first_lru(&mut self, r: usize, va: u64) -> Option<(u64, u8)> {
        let tag = self.tag;
        for k in 0..self.fast_live[r].len() {
            let p = self.fast_live[r][k];
            if let Some((pfn, w)) = self.tlbs[p.tlb as usize].probe_way(va, p.shift, p.size_bits, tag) {
                self.lru_dist[p.tlb as usize][lru_counter(w)] += 1;
                return Some((pfn, p.size));
            }
        }
        None
    }

    /// The L1 misses so far: first-level lookups (both roles) that went on to the second level
    /// (Lite's actual-misses counter, seed 000 section 5.4.2; an L1-range TLB hit is a hit).
    pub fn first_level_misses(&self) -> u64 {
        self.level_summary().first().map_or(0, |&(lookups, hits, _)| lookups - hits)
    }
}
