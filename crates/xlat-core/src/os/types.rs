//! Types every part of the OS model shares: VMAs, the invalidations the MMU must perform,
//! range translations, the errors of a run, and the operations on the simulated address space
//! that a syscall becomes (the interface between the mosaic relocator and the kernel).

use crate::units::PageSize;
use serde::Serialize;

pub const PAGE: u64 = 4096;
pub const MAP_SHARED: u64 = 0x01;
pub const MAP_FIXED: u64 = 0x10;
pub const MAP_ANONYMOUS: u64 = 0x20;
pub const MAP_HUGETLB: u64 = 0x40000;
pub const MADV_DONTNEED: u64 = 4;
pub const MADV_FREE: u64 = 8;
pub const MADV_REMOVE: u64 = 9;
pub const MADV_HUGEPAGE: u64 = 14;
pub const MADV_NOHUGEPAGE: u64 = 15;

#[inline]
pub fn page_up(x: u64) -> u64 {
    x.saturating_add(PAGE - 1) & !(PAGE - 1)
}
#[inline]
pub fn page_down(x: u64) -> u64 {
    x & !(PAGE - 1)
}

/// Which mosaic pool a VMA is (`as usize` indexes per-pool arrays: heap, anon, file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PoolKind {
    Heap = 0,
    Anon = 1,
    File = 2,
}

/// What a VMA maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum VmaKind {
    /// The brk heap.
    Heap,
    /// Private anonymous mmap.
    Anon,
    /// File-backed or shared mmap (4KB pages: the page cache).
    File,
    /// `MAP_HUGETLB` of the given size.
    Hugetlb(PageSize),
    /// Created on the first touch of an address no syscall mapped (traces without syscalls,
    /// or memory mapped before tracing began: stack, binary, libraries). Anonymous for THP.
    Inferred,
    /// A mosaic pool (simulated address space).
    Pool(PoolKind),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    pub kind: VmaKind,
    /// `madvise(MADV_HUGEPAGE)`.
    pub thp_advised: bool,
    /// `madvise(MADV_NOHUGEPAGE)`.
    pub thp_disabled: bool,
}

/// A TLB/PSC invalidation the MMU must perform (addresses in the simulated address space).
/// A range TLB drops every entry that overlaps an invalidated range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalidation {
    Range {
        asid: u32,
        start: u64,
        end: u64,
    },
    /// Everything (context switch without ASIDs).
    All,
    /// The 4KB entries of the 4KB page at `va` only, not a larger page's entry covering it
    /// (Rainbow's shootdown of a DRAM copy going back to NVM, seed 003 section III-F: the
    /// superpage's entries stay).
    Page4K {
        asid: u32,
        va: u64,
    },
}

/// A range translation (RMM, seed 000 section 4.4): virtual [base, limit) maps to the
/// physically contiguous frames from `pfn` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Range {
    pub base: u64,
    /// Exclusive end.
    pub limit: u64,
    /// Frame of `base` (the range's OFFSET, as a frame number).
    pub pfn: u64,
}

impl Range {
    #[inline]
    pub fn contains(&self, va: u64) -> bool {
        self.base <= va && va < self.limit
    }
    /// The frame `va` (inside the range) maps to.
    #[inline]
    pub fn frame_of(&self, va: u64) -> u64 {
        self.pfn + ((va - self.base) >> 12)
    }
    pub fn bytes(&self) -> u64 {
        self.limit - self.base
    }
}

/// Which allocations a frame serves (the tiering policy may place them differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Program pages.
    Data,
    /// Page-table pages and their companion pages.
    Table,
}

/// A user error while simulating (one sentence).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("physical memory ({0} MiB) is exhausted at virtual address {1:#x}; raise memory.size")]
    OutOfMemory(u64, u64),
    #[error("{0}")]
    Invalid(String),
}

/// The operations on the current simulated address space that a trace syscall becomes: what
/// the mosaic relocator ([`super::mosaic`]) asks of the kernel, which knows nothing of mosaic.
/// Every address is in the simulated address space; invalidations go to `inv`.
pub trait SpaceOps {
    /// The VMA containing `va`.
    fn vma_at(&self, va: u64) -> Option<Vma>;
    /// `mmap` as the kernel serves it at `addr`: whatever was there is unmapped first
    /// (`MAP_FIXED`, or a range reused), then a VMA of the kind the flags say is created.
    fn mmap(&mut self, addr: u64, len: u64, flags: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError>;
    /// Create a VMA over the free range [start, end) (nothing is unmapped first).
    fn map(&mut self, start: u64, end: u64, kind: VmaKind, inv: &mut Vec<Invalidation>) -> Result<(), SimError>;
    /// `munmap`: the VMAs and pages of [start, end) go.
    fn munmap(&mut self, start: u64, end: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError>;
    /// Free the 4KB pages of [start, end), keep huge pages and VMAs (memory returned to a pool).
    fn release_4k(&mut self, start: u64, end: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError>;
    /// `madvise(advice)` of [start, end).
    fn madvise(&mut self, start: u64, end: u64, advice: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError>;
    /// `mremap` as the kernel serves it (arguments and result as traced).
    fn mremap(
        &mut self,
        old: u64,
        old_len: u64,
        new_len: u64,
        ret: u64,
        inv: &mut Vec<Invalidation>,
    ) -> Result<(), SimError>;
}
