//! HSCC's access counting in the TLB (`hybrid.counting = "tlb"`; seed 003 sections IV-A and
//! IV-D, after HSCC, ICS 2017): every reference to a page counts, before the caches filter it
//! (HSCC keeps the counter in the TLB entry and writes it back to the page-table entry when the
//! entry leaves the TLB; per interval the sum is the same, so the counts are kept per frame
//! here directly). An access observer of the hybrid loop; the migration controller
//! (`sim/hybrid.rs`) takes the counts at each interval.

use super::observer::{AccessObserver, Observed, Translated};
use crate::mem::hybrid::{FrameCounts, PageCount};
use crate::stats::{Counters, Sink};

/// Per-frame references of the current interval.
#[derive(Debug, Clone, Default)]
pub struct TlbCounts {
    counts: FrameCounts,
    /// Frames are counted at their page of the migration's size: `pfn & group`.
    group: u64,
    references: u64,
}

impl TlbCounts {
    /// Counts over `frames` 4KB frames of physical memory, by page of `page_frames` frames (1
    /// or 512).
    pub fn new(frames: usize, page_frames: u64) -> TlbCounts {
        TlbCounts { counts: FrameCounts::new(frames), group: !(page_frames - 1), references: 0 }
    }

    /// The interval's counts by page (its first frame), in first-touch order; they start again
    /// at zero.
    pub fn take(&mut self) -> Vec<(u64, PageCount)> {
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
        let c = self.counts.get(a.pfn() & self.group);
        if a.kind == 1 {
            c.writes += 1;
        } else {
            c.reads += 1;
        }
    }
}

impl Counters for TlbCounts {
    fn counters(&self, out: &mut dyn Sink) {
        out.put(format_args!("hybrid.tlb_counted_references"), self.references);
    }
}
