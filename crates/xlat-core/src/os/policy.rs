//! Policies of the OS model behind small traits. Page-size choice is implemented (4KB, THP,
//! mosaic); the other traits are the seams later work plugs into (eager paging and range
//! creation for RMM, tiering for hybrid memories, metadata granularity for PRISM-like studies),
//! each with the default that models today's Linux.

use super::{Vma, VmaKind};
use crate::config::layout::Layout;
use crate::config::{Config, Policy, ThpMode};
use crate::units::PageSize;
use serde::Serialize;

/// Which mosaic pool a VMA is (`as usize` indexes per-pool arrays: heap, anon, file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PoolKind {
    Heap = 0,
    Anon = 1,
    File = 2,
}

/// Chooses the page size a fault at `va` in `vma` should get. The OS checks feasibility (the
/// aligned region inside the VMA, not partly mapped, a free block) and falls back to smaller
/// pages. Called only on faults, never per access.
pub trait PageSizePolicy: Send {
    fn name(&self) -> &'static str;
    fn page_size(&self, vma: &Vma, va: u64, layout: Option<&Layout>) -> PageSize;
}

/// 4KB pages only.
pub struct BasePages;

impl PageSizePolicy for BasePages {
    fn name(&self) -> &'static str {
        "4k"
    }
    fn page_size(&self, _: &Vma, _: u64, _: Option<&Layout>) -> PageSize {
        PageSize::Size4K
    }
}

/// Transparent huge pages at fault time (Linux `do_huge_pmd_anonymous_page`): anonymous VMAs
/// (heap, anonymous mmap, inferred) get a 2MB page when eligible. khugepaged's later collapse of
/// 4KB regions and compaction are not modelled.
pub struct Thp(pub ThpMode);

impl PageSizePolicy for Thp {
    fn name(&self) -> &'static str {
        match self.0 {
            ThpMode::Always => "thp-always",
            ThpMode::Madvise => "thp-madvise",
        }
    }
    fn page_size(&self, vma: &Vma, _: u64, _: Option<&Layout>) -> PageSize {
        let anon = matches!(vma.kind, VmaKind::Heap | VmaKind::Anon | VmaKind::Inferred);
        let eligible = match self.0 {
            ThpMode::Always => !vma.thp_disabled,
            ThpMode::Madvise => vma.thp_advised,
        };
        if anon && eligible {
            PageSize::Size2M
        } else {
            PageSize::Size4K
        }
    }
}

/// A mosaic layout: windows of the heap and anon pools get their page size, the rest 4KB.
pub struct Mosaic;

impl PageSizePolicy for Mosaic {
    fn name(&self) -> &'static str {
        "mosaic"
    }
    fn page_size(&self, vma: &Vma, va: u64, layout: Option<&Layout>) -> PageSize {
        let Some(l) = layout else {
            return PageSize::Size4K;
        };
        match vma.kind {
            VmaKind::Pool(PoolKind::Heap) => l.page_at(false, va - vma.start),
            VmaKind::Pool(PoolKind::Anon) => l.page_at(true, va - vma.start),
            _ => PageSize::Size4K,
        }
    }
}

pub fn make(cfg: &Config) -> Box<dyn PageSizePolicy> {
    match cfg.os.policy {
        Policy::Base => Box::new(BasePages),
        Policy::Thp => Box::new(Thp(cfg.os.thp)),
        Policy::Mosaic => Box::new(Mosaic),
    }
}

/// When memory is allocated: at first touch (demand) or when mapped (eager paging, RMM).
pub trait AllocationTiming: Send {
    fn name(&self) -> &'static str;
    /// Whether a new mapping of `len` bytes should be populated at once.
    fn populate_on_map(&self, _kind: VmaKind, _len: u64) -> bool {
        false
    }
}

/// Linux's default: pages are allocated on the first touch.
pub struct DemandPaging;
impl AllocationTiming for DemandPaging {
    fn name(&self) -> &'static str {
        "demand"
    }
}

/// Creation of range translations (RMM's range table); none by default.
pub trait RangeCreation: Send {
    fn name(&self) -> &'static str;
}
pub struct NoRanges;
impl RangeCreation for NoRanges {
    fn name(&self) -> &'static str {
        "none"
    }
}

/// Which memory kind (DRAM, NVM, ...) a frame is in, and migrations between kinds.
pub trait Tiering: Send {
    fn name(&self) -> &'static str;
    /// Memory kind of frame `pfn` (0 = DRAM).
    fn kind_of(&self, _pfn: u64) -> u8 {
        0
    }
}
pub struct SingleTier;
impl Tiering for SingleTier {
    fn name(&self) -> &'static str {
        "dram"
    }
}

/// Granularity of access/dirty metadata (bytes covered by one bit).
pub trait MetadataGranularity: Send {
    fn name(&self) -> &'static str;
    fn bytes_for(&self, page: PageSize) -> u64 {
        page.bytes()
    }
}
/// One accessed and one dirty bit per page-table leaf, as x86-64.
pub struct PerPage;
impl MetadataGranularity for PerPage {
    fn name(&self) -> &'static str {
        "page"
    }
}
