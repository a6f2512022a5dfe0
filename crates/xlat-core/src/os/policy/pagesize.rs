//! Page-size policies: which page size a fault (or an eager population) at an address of a VMA
//! should get. The OS checks feasibility (the aligned region inside the VMA, not partly mapped,
//! a free block) and falls back to smaller pages.

use crate::config::layout::Layout;
use crate::config::ThpMode;
use crate::os::types::{PoolKind, Vma, VmaKind};
use crate::units::PageSize;

/// Chooses the page size a fault at `va` in `vma` should get (hugetlb VMAs always get their
/// own size; this is not asked). Called on faults and eager population, never per access.
pub trait PageSizePolicy: Send {
    fn name(&self) -> &'static str;
    fn page_size(&self, vma: &Vma, va: u64) -> PageSize;
}

/// 4KB pages only (`os.policy = "4k"`).
pub struct BasePages;

impl PageSizePolicy for BasePages {
    fn name(&self) -> &'static str {
        "4k"
    }
    fn page_size(&self, _: &Vma, _: u64) -> PageSize {
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
    fn page_size(&self, vma: &Vma, _: u64) -> PageSize {
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

/// The largest pages (`os.policy = "1g"`, seed 000 section 4.8's 1GB-page baseline): an
/// anonymous VMA eligible for THP asks for a 1GB page at every fault; the OS falls back to 2MB,
/// then 4KB, where the aligned region does not fit in the VMA, is partly mapped, or no block is
/// free. (The thesis backs the primary region with 1GB pages through libhugetlbfs; this applies
/// the same to every anonymous mapping.)
pub struct Huge1g(pub ThpMode);

impl PageSizePolicy for Huge1g {
    fn name(&self) -> &'static str {
        "1g"
    }
    fn page_size(&self, vma: &Vma, va: u64) -> PageSize {
        match Thp(self.0).page_size(vma, va) {
            PageSize::Size2M => PageSize::Size1G,
            s => s,
        }
    }
}

/// A mosaic layout: windows of the heap and anon pools get their page size, the rest 4KB.
pub struct MosaicLayout(pub Layout);

impl PageSizePolicy for MosaicLayout {
    fn name(&self) -> &'static str {
        "mosaic"
    }
    fn page_size(&self, vma: &Vma, va: u64) -> PageSize {
        match vma.kind {
            VmaKind::Pool(PoolKind::Heap) => self.0.page_at(false, va - vma.start),
            VmaKind::Pool(PoolKind::Anon) => self.0.page_at(true, va - vma.start),
            _ => PageSize::Size4K,
        }
    }
}
