//! A direct segment (Basu et al., ISCA 2013; seed 000 Table 4.1 and section 4.8): one BASE,
//! LIMIT, OFFSET register set for the primary region of the current address space. An address
//! in [BASE, LIMIT) translates to `va + OFFSET` without the TLBs; the rest uses paging.
//!
//! As the thesis emulates *ideal* direct segments (section 4.8: the long-lived regions coalesced
//! into one contiguous range), the registers hold the largest range translation of the address
//! space's range table (`os.ranges = "contiguous"`, typically with eager paging). They are
//! reloaded, off the access path, whenever that table changed since the last load (faults,
//! syscalls, migrations, a switch of address space) and dropped when an invalidation overlaps
//! them. The check sits after a first-level miss, at its `stage` (in parallel with the L2 TLB
//! by default), and a hit fills the TLBs above with the 4KB translation.

use crate::os::Range;

#[derive(Debug, Clone, Default)]
pub struct DirectSegment {
    pub latency: u64,
    /// BASE and LIMIT (empty: BASE = LIMIT = 0) and the frame of BASE (OFFSET).
    base: u64,
    limit: u64,
    pfn: u64,
    /// The (address space, range-table generation) the registers were last synchronised with.
    synced: Option<(u32, u64)>,
    pub hits: u64,
    /// Register loads that changed the segment.
    pub loads: u64,
    /// Segments dropped by invalidations.
    pub invalidations: u64,
}

impl DirectSegment {
    pub fn new(latency: u64) -> DirectSegment {
        DirectSegment { latency, ..Default::default() }
    }

    /// The frame of `va`'s 4KB page if the segment covers it.
    #[inline(always)]
    pub fn probe(&mut self, va: u64) -> Option<u64> {
        if self.base <= va && va < self.limit {
            self.hits += 1;
            return Some(self.pfn + ((va - self.base) >> 12));
        }
        None
    }

    /// Whether the registers were synchronised with address space `asid`'s range table at
    /// generation `generation`.
    #[inline(always)]
    pub fn is_synced(&self, asid: u32, generation: u64) -> bool {
        self.synced == Some((asid, generation))
    }

    /// Load the registers with `largest` (the range table's largest range of address space
    /// `asid` at `generation`; none: an empty segment). Counted as a load if it changes them.
    pub fn load(&mut self, asid: u32, generation: u64, largest: Option<Range>) {
        self.synced = Some((asid, generation));
        let (base, limit, pfn) = largest.map_or((0, 0, 0), |r| (r.base, r.limit, r.pfn));
        if (base, limit, pfn) != (self.base, self.limit, self.pfn) {
            (self.base, self.limit, self.pfn) = (base, limit, pfn);
            self.loads += (base < limit) as u64;
        }
    }

    /// Drop the segment if it overlaps [start, end) (the next synchronisation reloads it).
    pub fn invalidate(&mut self, start: u64, end: u64) {
        if self.base < end && start < self.limit {
            self.flush();
        }
    }

    /// Drop the segment.
    pub fn flush(&mut self) {
        if self.base < self.limit {
            self.invalidations += 1;
        }
        (self.base, self.limit, self.pfn) = (0, 0, 0);
        self.synced = None;
    }

    /// The segment as (BASE, LIMIT, frame of BASE), if any.
    pub fn registers(&self) -> Option<(u64, u64, u64)> {
        (self.base < self.limit).then_some((self.base, self.limit, self.pfn))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_inside_loads_on_change_and_drops_on_overlap() {
        let mut d = DirectSegment::new(0);
        assert_eq!(d.probe(0), None, "empty");
        let r = Range { base: 0x10_0000, limit: 0x30_0000, pfn: 5000 };
        d.load(1, 7, Some(r));
        assert!(d.is_synced(1, 7) && !d.is_synced(1, 8) && !d.is_synced(2, 7));
        assert_eq!(d.probe(0x10_0000), Some(5000));
        assert_eq!(d.probe(0x2f_ffff), Some(5000 + 0x1ff));
        assert_eq!(d.probe(0x30_0000), None, "LIMIT is exclusive");
        assert_eq!(d.probe(0x0f_ffff), None);
        // The same range at a new generation is no load; another range is.
        d.load(1, 8, Some(r));
        assert_eq!(d.loads, 1);
        d.load(1, 9, Some(Range { limit: 0x40_0000, ..r }));
        assert_eq!(d.loads, 2);
        d.invalidate(0x40_0000, 0x50_0000);
        assert_eq!(d.registers(), Some((0x10_0000, 0x40_0000, 5000)), "no overlap");
        d.invalidate(0x3f_f000, 0x40_0000);
        assert_eq!((d.registers(), d.invalidations, d.is_synced(1, 9)), (None, 1, false));
        assert_eq!(d.probe(0x10_0000), None);
        d.load(1, 9, None);
        assert_eq!((d.hits, d.loads), (2, 2));
    }
}
