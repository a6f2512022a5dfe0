//! Counters of the OS model (`os.*`, documented in `docs/os-model.md`). The groups a
//! non-default policy adds are reported only when that policy is installed, so that the results
//! of default configurations keep exactly their counters.

use crate::stats::Sink;
use serde::Serialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct OsStats {
    pub page_faults: u64,
    pub faults_4k: u64,
    pub faults_2m: u64,
    pub faults_1g: u64,
    /// A huge page was wanted (THP, hugetlb, mosaic window) but 4KB (or 2MB) was used: the
    /// region was partly mapped, not inside the VMA, or no free block existed.
    pub huge_fallbacks: u64,
    pub page_table_pages: u64,
    pub vmas_created: u64,
    pub inferred_vmas: u64,
    pub syscalls: u64,
    pub mmaps: u64,
    pub munmaps: u64,
    pub brks: u64,
    pub mremaps: u64,
    pub madvises: u64,
    pub failed_syscalls: u64,
    /// Huge pages split into 4KB pages because an unmap/advice boundary fell inside them.
    pub huge_splits: u64,
    /// Mosaic: mappings that did not fit their pool and kept their trace address (4KB pages).
    pub pool_overflows: u64,
    pub context_switches: u64,
    pub frames_in_use: u64,
    // ---- reported only with os.allocation = "eager"
    /// Frames instantiated at map time (a huge page counts its frames).
    pub eager_frames: u64,
    /// Buddy blocks eager paging allocated.
    pub eager_blocks: u64,
    /// Leaves eager paging mapped, by page size.
    pub eager_4k: u64,
    pub eager_2m: u64,
    pub eager_1g: u64,
    /// `os.eager_promote`: 2MB regions completed by a later request and mapped by one 2MB page,
    /// in place (their frames were one aligned block) or copied.
    pub eager_promotions: u64,
    pub eager_collapses: u64,
    // ---- reported only with a range-creation policy: `os.ranges` and `os.range_frames`, the
    // range translations of every address space and the frames they cover, at the time of the
    // report, and `os.range_table_pages`, the pages their B-trees occupy (as of each table's
    // last range-table walk; computed from the range tables, not kept here).
    // ---- reported only with several memory kinds
    /// Pages (4KB or 2MB) moved to frames of another zone.
    pub migrations: u64,
    // ---- reported only with os.reclaim other than "none"
    /// 4KB pages evicted to free a frame.
    pub reclaimed_pages: u64,
    /// Faults on pages that were evicted (a swap-in).
    pub major_faults: u64,
    // ---- reported only with os.metadata = "registry"
    /// Companion (metadata) pages beside page-table pages.
    pub companion_pages: u64,
}

/// Which optional groups of counters a run reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Groups {
    pub eager: bool,
    /// Eager promotion with a page-size policy that maps huge pages (`os.eager_promote`).
    pub promote: bool,
    pub ranges: bool,
    pub zones: bool,
    pub reclaim: bool,
    pub metadata: bool,
}

impl OsStats {
    /// Report every counter as `os.NAME`: the always-present ones in their historical order,
    /// then the optional groups of `g` (`ranges`: the live range translations and the frames
    /// they cover).
    pub fn report(&self, g: Groups, ranges: (u64, u64, u64), out: &mut dyn Sink) {
        crate::report_fields!(
            out,
            "os",
            self,
            page_faults,
            faults_4k,
            faults_2m,
            faults_1g,
            huge_fallbacks,
            vmas_created,
            inferred_vmas,
            syscalls,
            mmaps,
            munmaps,
            brks,
            mremaps,
            madvises,
            failed_syscalls,
            huge_splits,
            pool_overflows,
            context_switches,
        );
        // Levels of the state at the end, not counts (a window reports them as they are).
        out.gauge(format_args!("os.page_table_pages"), self.page_table_pages);
        out.gauge(format_args!("os.frames_in_use"), self.frames_in_use);
        if g.eager {
            crate::report_fields!(out, "os", self, eager_frames, eager_blocks, eager_4k, eager_2m, eager_1g);
            if g.promote {
                crate::report_fields!(out, "os", self, eager_promotions, eager_collapses);
            }
        }
        if g.ranges {
            out.gauge(format_args!("os.ranges"), ranges.0);
            out.gauge(format_args!("os.range_frames"), ranges.1);
            out.gauge(format_args!("os.range_table_pages"), ranges.2);
        }
        if g.zones {
            crate::report_fields!(out, "os", self, migrations);
        }
        if g.reclaim {
            crate::report_fields!(out, "os", self, reclaimed_pages, major_faults);
        }
        if g.metadata {
            out.gauge(format_args!("os.companion_pages"), self.companion_pages);
        }
    }
}
