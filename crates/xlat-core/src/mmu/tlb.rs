//! A TLB: any number of sets and ways, one or several page sizes (each indexed by its own VPN
//! bits), optional splintering of larger pages (thesis chapter 2; Table 5.1: split L1 TLBs per
//! page size, a unified L2 holding 4KB and 2MB entries).

use super::keys::{key_range, tlb_key, VPN_BITS, VPN_MASK};
use crate::array::SetAssoc;
use crate::config::{Role, TlbConfig};
use crate::stats::StructStats;
use crate::units::PageSize;

#[derive(Debug, Clone)]
pub struct Tlb {
    pub name: String,
    /// 0-based level.
    pub level: usize,
    pub role: Role,
    /// Page sizes held, smallest first.
    pub sizes: Vec<PageSize>,
    pub splinter: bool,
    pub latency: u64,
    pub arr: SetAssoc,
    /// Hits, fills, evictions and invalidations (accesses and misses follow from the lookups of
    /// the TLB's level, which the MMU counts).
    pub stats: StructStats,
    /// Valid entries of each page size. A size with none cannot hit, so its probe is skipped
    /// (exact: a miss changes no state). Like the mask of seed 000 section 5.3.1 that enables
    /// the 2MB and 1GB TLBs only once such an entry was fetched, minus its energy accounting.
    /// (Four slots: a key's size field is two bits, so indexing by it needs no bounds check.)
    pub present: [u32; 4],
}

impl Tlb {
    pub fn new(c: &TlbConfig, seed: u64) -> Tlb {
        let mut sizes = c.page_sizes.clone();
        sizes.sort();
        sizes.dedup();
        Tlb {
            name: c.name.clone(),
            level: c.level as usize - 1,
            role: c.role,
            sizes,
            splinter: c.splinter,
            latency: c.latency,
            arr: SetAssoc::new(c.entries as usize, c.ways as usize, c.replacement, seed),
            stats: StructStats::default(),
            present: [0; 4],
        }
    }

    /// Probe for `va` at every size held; returns (frame of the page start, size) on a hit.
    /// The set index of each size uses that size's VPN (so 2MB entries use VA bits 21 and up).
    #[inline(always)]
    pub fn lookup(&mut self, va: u64, tag: u64) -> Option<(u64, PageSize)> {
        for k in 0..self.sizes.len() {
            let s = self.sizes[k];
            if self.present[s as usize] == 0 {
                continue;
            }
            if let (_, Some(pfn)) = self.probe(va, s.shift(), (s as u64) << VPN_BITS, tag) {
                return Some((pfn, s));
            }
        }
        None
    }

    /// Probe for `va` at one page size, given as its shift and its key bits (`size << VPN_BITS`,
    /// precomputed by the simulator's probe lists); counts a hit. Returns the set probed and,
    /// on a hit, the frame of the page start. (The key is [`tlb_key`]'s.)
    #[inline(always)]
    pub fn probe(&mut self, va: u64, shift: u32, size_bits: u64, tag: u64) -> (usize, Option<u64>) {
        // SAFETY: lanes 0 and not KNOWN: the general lookup.
        unsafe { self.probe_as::<false>(0, va, shift, size_bits, tag) }
    }

    /// [`Tlb::probe`] compiled for an array of class `lanes` ([`SetAssoc::class`], a constant
    /// after inlining; 0: any array). `KNOWN`: the caller knows the array is of that class
    /// (no check); else an array of another class takes the general lookup out of line.
    ///
    /// # Safety
    /// If `KNOWN`, `lanes` is 0 or the class of `self.arr`.
    #[inline(always)]
    pub unsafe fn probe_as<const KNOWN: bool>(
        &mut self,
        lanes: usize,
        va: u64,
        shift: u32,
        size_bits: u64,
        tag: u64,
    ) -> (usize, Option<u64>) {
        let key = ((va >> shift) & VPN_MASK) | size_bits | tag;
        let r = if KNOWN {
            // SAFETY: by the contract.
            unsafe { self.arr.probe_as::<true>(lanes, key & VPN_MASK, key) }
        } else {
            // SAFETY: not KNOWN: any array.
            unsafe { self.arr.probe_as::<false>(lanes, key & VPN_MASK, key) }
        };
        if r.1.is_some() {
            self.stats.hits += 1;
        }
        r
    }

    /// [`Tlb::probe`] returning with the frame the way of the hit counted from the MRU position
    /// (the Lite loop's first-level probe, [`lru_counter`]) and, if `SET`, the set (for the
    /// memo; else 0).
    #[inline]
    pub fn probe_way<const SET: bool>(
        &mut self,
        va: u64,
        shift: u32,
        size_bits: u64,
        tag: u64,
    ) -> Option<(u64, usize, usize)> {
        let key = ((va >> shift) & VPN_MASK) | size_bits | tag;
        let (pfn, w) = self.arr.probe_way(key & VPN_MASK, key)?;
        self.stats.hits += 1;
        Some((pfn, w, if SET { self.arr.set_of(key & VPN_MASK) } else { 0 }))
    }

    /// The size this TLB would hold a `size` page as (None: not held).
    #[inline]
    pub fn holds(&self, size: PageSize) -> Option<PageSize> {
        if self.sizes.contains(&size) {
            Some(size)
        } else if self.splinter {
            self.sizes.iter().rev().copied().find(|&s| s < size)
        } else {
            None
        }
    }

    /// Whether an entry for `va` held as size `s` of address-space `tag` is here (no
    /// replacement update, no count: a prefetcher's tag check).
    #[inline]
    pub fn has_entry(&self, va: u64, s: PageSize, tag: u64) -> bool {
        let key = tlb_key(va, s, tag);
        self.arr.contains(self.arr.set_of(key & VPN_MASK), key)
    }

    /// Fill the translation of `va` in a `size` page starting at frame `pfn`.
    pub fn fill(&mut self, va: u64, size: PageSize, pfn: u64, tag: u64) {
        if let Some(s) = self.holds(size) {
            self.fill_as(va, size, s, pfn, tag);
        }
    }

    /// `fill` when the caller knows the size the entry is held as (`s = holds(size)`); returns
    /// the set filled, the frame the entry holds, and whether a page size went from no entries
    /// to some or from some to none (see [`Tlb::present`]).
    #[inline]
    pub fn fill_as(&mut self, va: u64, size: PageSize, s: PageSize, pfn: u64, tag: u64) -> (usize, u64, bool) {
        // SAFETY: lanes 0 and not KNOWN: the general insert.
        unsafe { self.fill_shaped::<false>(0, va, size, s, pfn, tag) }
    }

    /// [`Tlb::fill_as`] compiled for an array of class `lanes`, as [`Tlb::probe_as`].
    ///
    /// # Safety
    /// As [`Tlb::probe_as`].
    #[inline(always)]
    pub unsafe fn fill_shaped<const KNOWN: bool>(
        &mut self,
        lanes: usize,
        va: u64,
        size: PageSize,
        s: PageSize,
        pfn: u64,
        tag: u64,
    ) -> (usize, u64, bool) {
        // A splintered entry covers the smaller page containing `va`.
        let pfn = if s == size { pfn } else { pfn + (((va & (size.bytes() - 1)) >> 12) & !((s.bytes() >> 12) - 1)) };
        let key = tlb_key(va, s, tag);
        self.stats.fills += 1;
        let mut flipped = self.present[s as usize] == 0;
        self.present[s as usize] += 1;
        let (set, evicted) = if KNOWN {
            // SAFETY: by the contract.
            unsafe { self.arr.fill_as::<true>(lanes, key & VPN_MASK, key, pfn) }
        } else {
            // SAFETY: not KNOWN: any array.
            unsafe { self.arr.fill_as::<false>(lanes, key & VPN_MASK, key, pfn) }
        };
        if let Some((old, _)) = evicted {
            self.stats.evictions += 1;
            let n = &mut self.present[((old >> VPN_BITS) & 3) as usize];
            *n -= 1;
            flipped |= *n == 0;
        }
        (set, pfn, flipped)
    }

    /// Invalidate entries overlapping [start, end) of address-space `tag` (any tag if `None`).
    pub fn invalidate(&mut self, start: u64, end: u64, tag: Option<u64>) {
        let present = &mut self.present;
        self.stats.invalidations += self.arr.invalidate_if(|k| {
            let (s, len, t) = key_range(k);
            let hit = s < end && start < s + len && tag.is_none_or(|x| x == t);
            if hit {
                present[((k >> VPN_BITS) & 3) as usize] -= 1;
            }
            hit
        });
    }

    /// Invalidate the 4KB entry of the page at `va` of address-space `tag` (any tag if `None`),
    /// and no larger page's entry.
    pub fn invalidate_4k(&mut self, va: u64, tag: Option<u64>) {
        let present = &mut self.present;
        let page = va & !0xfff;
        self.stats.invalidations += self.arr.invalidate_if(|k| {
            let (s, len, t) = key_range(k);
            let hit = s == page && len == 4096 && tag.is_none_or(|x| x == t);
            if hit {
                present[((k >> VPN_BITS) & 3) as usize] -= 1;
            }
            hit
        });
    }

    pub fn flush(&mut self) {
        self.stats.invalidations += self.arr.clear();
        self.present = [0; 4];
    }

    /// The configured ways.
    pub fn ways_max(&self) -> usize {
        self.arr.ways_max()
    }

    /// Use `ways` of the configured ways from now on (way-disabling designs); entries that no
    /// longer fit are invalidated (see [`SetAssoc::set_active_ways`]). Returns how many.
    pub fn set_active_ways(&mut self, ways: usize) -> u64 {
        let present = &mut self.present;
        let n = self.arr.set_active_ways(ways, |k| present[((k >> VPN_BITS) & 3) as usize] -= 1);
        self.stats.invalidations += n;
        n
    }
}

/// The LRU-distance counter of a hit at way `w` from the MRU position: 0 for the MRU way, else
/// the bit length of `w` (ways 1, 2-3, 4-7, 8-15: counters 1, 2, 3, 4), as Figure 5.7 of seed
/// 000 groups an 8-way TLB's distances from the LRU position 7, 6, 4-5, 0-3.
#[inline(always)]
pub fn lru_counter(w: usize) -> usize {
    (usize::BITS - w.leading_zeros()) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::Replacement;
    use crate::mmu::keys::asid_tag;

    fn tlb(entries: u64, ways: u64, sizes: &[PageSize]) -> Tlb {
        Tlb::new(
            &TlbConfig {
                name: "t".into(),
                level: 1,
                role: Role::Data,
                entries,
                ways,
                page_sizes: sizes.to_vec(),
                replacement: Replacement::Lru,
                latency: 0,
                splinter: false,
            },
            1,
        )
    }

    #[test]
    fn set_index_uses_each_page_sizes_vpn() {
        // Unified 16 entries, 4 ways -> 4 sets, holding 4KB and 2MB.
        let mut t = tlb(16, 4, &[PageSize::Size4K, PageSize::Size2M]);
        // 4KB page 0x5000: VPN 5 -> set 1.  2MB page at 0x60_0000: VPN 3 -> set 3.
        t.fill(0x5123, PageSize::Size4K, 77, 0);
        t.fill(0x61_2345, PageSize::Size2M, 1024, 0);
        assert_eq!(t.arr.set_tags(1), vec![tlb_key(0x5000, PageSize::Size4K, 0)]);
        assert_eq!(t.arr.set_tags(3), vec![tlb_key(0x60_0000, PageSize::Size2M, 0)]);
        assert_eq!(t.lookup(0x5fff, 0), Some((77, PageSize::Size4K)));
        assert_eq!(t.lookup(0x7f_ffff, 0), Some((1024, PageSize::Size2M)));
        assert_eq!(t.lookup(0x80_0000, 0), None);
        // Five 4KB pages of set 1 (VPN 1, 5, 9, 13, 17) in a 4-way set: VPN 5 (LRU) goes.
        for v in [1u64, 9, 13, 17] {
            t.fill(v << 12, PageSize::Size4K, v, 0);
        }
        assert_eq!(t.lookup(0x5000, 0), None);
        assert_eq!(t.stats.evictions, 1);
        // A different ASID tag does not hit.
        assert_eq!(t.lookup(0x9000, asid_tag(3)), None);
    }

    #[test]
    fn non_power_of_two_sets_and_splintering() {
        let mut t = tlb(1536, 16, &[PageSize::Size4K, PageSize::Size2M]); // 96 sets
        for v in 0..96 * 16u64 {
            t.fill(v << 12, PageSize::Size4K, v, 0);
        }
        assert_eq!(t.stats.evictions, 0, "1536 consecutive pages fill 96 sets of 16 exactly");
        t.fill((96 * 16) << 12, PageSize::Size4K, 0, 0);
        assert_eq!(t.stats.evictions, 1);
        let mut s = tlb(8, 8, &[PageSize::Size2M]);
        s.splinter = true;
        // A 1GB page at frame 0x40000 seen at VA 1GB+6MB+5: a 2MB entry for 1GB+6MB.
        s.fill((1 << 30) + (6 << 20) + 5, PageSize::Size1G, 0x40000, 0);
        assert_eq!(s.lookup((1 << 30) + (7 << 20), 0), Some((0x40000 + 3 * 512, PageSize::Size2M)));
        assert_eq!(s.lookup((1 << 30) + (8 << 20), 0), None);
    }

    #[test]
    fn invalidation_by_range() {
        let mut t = tlb(64, 64, &[PageSize::Size4K, PageSize::Size2M]);
        t.fill(0x20_0000, PageSize::Size2M, 512, 0);
        t.fill(0x40_1000, PageSize::Size4K, 9, 0);
        t.fill(0x40_2000, PageSize::Size4K, 9, 0);
        t.invalidate(0x3f_f000, 0x40_2000, None); // overlaps the 2MB page and 0x40_1000
        assert_eq!(t.stats.invalidations, 2);
        assert_eq!(t.lookup(0x40_2000, 0), Some((9, PageSize::Size4K)));
    }

    #[test]
    fn a_4kb_invalidation_leaves_the_superpage_around_it() {
        // Rainbow's shootdown of a DRAM copy: the 4KB entry goes, the 2MB entry covering it stays.
        let mut t = tlb(64, 64, &[PageSize::Size4K, PageSize::Size2M]);
        t.fill(0x20_0000, PageSize::Size2M, 512, 0);
        t.fill(0x20_3000, PageSize::Size4K, 7, 0);
        t.fill(0x20_4000, PageSize::Size4K, 8, 0);
        t.invalidate_4k(0x20_3abc, None);
        assert_eq!(t.stats.invalidations, 1);
        assert_eq!(t.lookup(0x20_3000, 0), Some((512, PageSize::Size2M)), "the superpage translates it now");
        assert_eq!(t.lookup(0x20_4000, 0), Some((8, PageSize::Size4K)));
        assert_eq!(t.present[PageSize::Size4K as usize], 1);
    }
}
