//! The first-level probe of the Lite loop (seed 000 section 5.4.2): as [`Mmu::probe_first`],
//! each hit counted in its TLB's LRU-distance counters
//! ([`Mmu::lru_distance`]). Only the Lite variant of the engine compiles it in.

use super::memo::MemoHit;
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

    /// Probe role `r`'s first-level TLBs for `va`, counting the LRU distance of a hit if
    /// `utility` (not when an L1-range TLB looked up in parallel hit too: disabling the page
    /// TLB's ways would have cost no miss, seed 000 section 5.4.3); returns (frame, page size
    /// index). With `MEMO`, a hit enters the memo of MRU hits as in [`Mmu::probe_first`]: an
    /// access through the memo re-hits its set's MRU entry (distance 0, counter `[0]`, which
    /// Lite never reads), so the memo loses no count Lite uses.
    #[inline(always)]
    pub fn probe_first_lru<const MEMO: bool>(&mut self, r: usize, va: u64, utility: bool) -> Option<(u64, u8)> {
        let (tag, rbit) = (self.tag, (r as u64) << 63);
        for k in 0..self.fast_live[r].len() {
            let p = self.fast_live[r][k];
            if let Some((pfn, w, set)) = self.tlbs[p.tlb as usize].probe_way::<MEMO>(va, p.shift, p.size_bits, tag) {
                self.lru_dist[p.tlb as usize][lru_counter(w)] += utility as u64;
                if MEMO {
                    let h = MemoHit { tlb: p.tlb, set: set as u32, size: p.size, pfn };
                    self.memo.insert(&mut self.tlbs, va, rbit, p.shift, h);
                }
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
