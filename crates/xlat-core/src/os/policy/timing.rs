//! Allocation timing: when a mapping gets its frames.

use crate::os::types::{Vma, VmaKind};

/// When memory is allocated: at first touch (demand paging) or when mapped (eager paging).
pub trait AllocationTiming: Send {
    fn name(&self) -> &'static str;
    /// Whether this is Linux's default (its counters are then not reported).
    fn is_default(&self) -> bool {
        false
    }
    /// Whether the new or grown part [start, end) of `vma` (after mmap, brk or mremap) is
    /// populated at once, and with buddy blocks of at most which order; None: on demand.
    fn populate(&self, vma: &Vma, start: u64, end: u64) -> Option<u32>;
    /// Whether a populated region's blocks are placed so that virtual and physical addresses
    /// agree modulo the largest page the page-size policy maps there (`os.eager_placement`).
    fn aligned(&self) -> bool {
        true
    }
    /// Whether a 2MB region a later request completes becomes a 2MB page (`os.eager_promote`).
    fn promotes(&self) -> bool {
        false
    }
}

/// Linux's default (`os.allocation = "demand"`): pages are allocated on the first touch.
pub struct DemandPaging;

impl AllocationTiming for DemandPaging {
    fn name(&self) -> &'static str {
        "demand"
    }
    fn is_default(&self) -> bool {
        true
    }
    fn populate(&self, _: &Vma, _: u64, _: u64) -> Option<u32> {
        None
    }
}

/// RMM's eager paging (`os.allocation = "eager"`; seed 000 section 4.4, Algorithm 4.1): an
/// anonymous mapping (heap, anonymous mmap, hugetlb) is backed whole when it is mapped or
/// grows, with the largest free buddy blocks of at most `max_order`. File-backed and shared
/// mappings stay demand-paged (the page cache fills them as the file is read), unless `files`
/// (`os.eager_files`): then they are backed whole when mapped too.
pub struct EagerPaging {
    pub max_order: u32,
    /// `os.eager_placement = "aligned"` (true) or `"any"`.
    pub aligned: bool,
    /// `os.eager_files`.
    pub files: bool,
    /// `os.eager_promote`.
    pub promote: bool,
}

impl AllocationTiming for EagerPaging {
    fn name(&self) -> &'static str {
        "eager"
    }
    fn populate(&self, vma: &Vma, _: u64, _: u64) -> Option<u32> {
        let eligible = match vma.kind {
            VmaKind::Heap | VmaKind::Anon | VmaKind::Hugetlb(_) => true,
            VmaKind::File => self.files,
            _ => false,
        };
        eligible.then_some(self.max_order)
    }
    fn aligned(&self) -> bool {
        self.aligned
    }
    fn promotes(&self) -> bool {
        self.promote
    }
}
