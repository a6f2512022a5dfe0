//! HSCC's access counting in the TLB (`hybrid.counting = "tlb"`; seed 003 sections IV-A and
//! IV-D, after HSCC, ICS 2017): every reference to a page counts, before the caches filter it
//! (HSCC keeps the counter in the TLB entry and writes it back to the page-table entry when the
//! entry leaves the TLB; per interval the sum is the same, so the counts are kept per frame
//! here directly). An access observer of the hybrid loop; the migration controller
//! (`designs/hybrid.rs`) takes the counts at each interval.

use crate::config::{Granularity, HybridConfig};
use crate::mem::hybrid::{FrameCounts, PageCount};
use crate::mmu::observer::{AccessObserver, Observed, Translated};
use crate::stats::{Counters, Sink};

/// References waiting to be counted: each access's count is prefetched and applied this many
/// accesses later, so that the host's cache misses on the per-frame array (one per access of a
/// random-access program) overlap. The counts, and their first-touch order, are the same.
const LAG: usize = 16;

/// Per-frame references of the current interval.
#[derive(Debug, Clone)]
pub struct TlbCounts {
    counts: FrameCounts,
    /// Frames are counted at their page of the migration's size: `pfn & group`.
    group: u64,
    references: u64,
    /// The last references (page << 1 | write), oldest at `head`; `u64::MAX`: none.
    ring: [u64; LAG],
    head: usize,
}

impl TlbCounts {
    /// HSCC's counting in the TLB as `[hybrid]` configures it, over `frames` 4KB frames: by
    /// 4KB page, or by 2MB page with `hybrid.granularity = "2MB"`.
    pub fn for_hybrid(h: &HybridConfig, frames: u64) -> TlbCounts {
        let group = if h.granularity == Granularity::Page2M { 512 } else { 1 };
        TlbCounts::new(frames as usize, group)
    }

    /// Counts over `frames` 4KB frames of physical memory, by page of `page_frames` frames (1
    /// or 512).
    pub fn new(frames: usize, page_frames: u64) -> TlbCounts {
        TlbCounts {
            counts: FrameCounts::new(frames),
            group: !(page_frames - 1),
            references: 0,
            ring: [u64::MAX; LAG],
            head: 0,
        }
    }

    #[inline(always)]
    fn apply(&mut self, r: u64) {
        let c = self.counts.get(r >> 1);
        if r & 1 != 0 {
            c.writes += 1;
        } else {
            c.reads += 1;
        }
    }

    /// The interval's counts by page (its first frame), in first-touch order; they start again
    /// at zero.
    pub fn take(&mut self) -> Vec<(u64, PageCount)> {
        for k in 0..LAG {
            let i = (self.head + k) % LAG;
            let r = std::mem::replace(&mut self.ring[i], u64::MAX);
            if r != u64::MAX {
                self.apply(r);
            }
        }
        self.head = 0;
        self.counts.take()
    }
}

impl AccessObserver for TlbCounts {
    #[inline(always)]
    fn access(&mut self, a: &Observed) {
        if a.at == Translated::Untranslated {
            return;
        }
        self.references += 1;
        let page = a.pfn() & self.group;
        self.counts.prefetch(page);
        let r = std::mem::replace(&mut self.ring[self.head], page << 1 | (a.kind == 1) as u64);
        self.head = (self.head + 1) % LAG;
        if r != u64::MAX {
            self.apply(r);
        }
    }
}

impl Counters for TlbCounts {
    fn counters(&self, out: &mut dyn Sink) {
        out.put(format_args!("hybrid.tlb_counted_references"), self.references);
    }
}
