//! The syscalls of the current address space as the kernel serves them: `mmap`, `munmap`,
//! `brk`, `mremap`, `madvise`, `shmat`/`shmdt`. Failed syscalls are counted and ignored. These
//! handlers know nothing of mosaic layouts: the mosaic module translates a trace syscall into
//! the [`SpaceOps`] operations implemented here.

use super::kernel::Kernel;
use super::types::{
    page_down, page_up, Invalidation, SimError, SpaceOps, Vma, VmaKind, MADV_DONTNEED, MADV_FREE, MADV_HUGEPAGE,
    MADV_NOHUGEPAGE, MADV_REMOVE, MAP_ANONYMOUS, MAP_FIXED, MAP_HUGETLB, MAP_SHARED, PAGE,
};
use crate::units::PageSize;
use xlat_trace::{Syscall, SyscallKind};

impl Kernel {
    /// Count syscall `s` (`os.syscalls`, and `os.mmaps` ... by kind); false if it failed, or if
    /// Linux would have refused it ([`Kernel::admissible`]: a corrupt or reordered trace); it is
    /// then counted in `os.failed_syscalls` and changes nothing.
    pub fn count_syscall(&mut self, s: &Syscall) -> bool {
        self.stats.syscalls += 1;
        let failed = s.ret < 0 && s.ret > -4096;
        let ok = match s.kind {
            SyscallKind::Mmap | SyscallKind::Mremap | SyscallKind::Shmat => !failed,
            SyscallKind::Munmap | SyscallKind::Madvise | SyscallKind::Shmdt => s.ret == 0,
            SyscallKind::Brk | SyscallKind::Exit => true,
        };
        if !ok || !self.admissible(s) {
            self.stats.failed_syscalls += 1;
            return false;
        }
        match s.kind {
            SyscallKind::Mmap => self.stats.mmaps += 1,
            SyscallKind::Munmap => self.stats.munmaps += 1,
            SyscallKind::Brk => self.stats.brks += 1,
            SyscallKind::Mremap => self.stats.mremaps += 1,
            SyscallKind::Madvise => self.stats.madvises += 1,
            SyscallKind::Shmat | SyscallKind::Shmdt | SyscallKind::Exit => {}
        }
        true
    }

    /// Whether Linux could have returned what the trace says `s` returned, as far as the
    /// arguments and the break tell: page-aligned starts (`EINVAL`), no empty munmap or mremap
    /// and no empty mapping (`EINVAL`), ranges that end inside the user address space of the
    /// page tables (`ENOMEM`; half of what they map: 2^47 with 4 levels, 2^56 with 5), hugetlb
    /// mappings aligned to their page, a moved mremap whose new range does not overlap the old
    /// one (`EINVAL`), no break below the first one seen (Linux refuses to go below the heap's
    /// start) and no heap growth over another mapping (`ENOMEM`). A trace of a real program
    /// passes; a corrupt or reordered one may not, and what fails is ignored.
    fn admissible(&self, s: &Syscall) -> bool {
        let top = 1u64 << (12 + 9 * self.levels as u32 - 1);
        let a = s.args;
        let aligned = |x: u64| x.is_multiple_of(PAGE);
        // [start, start + len) non-empty and inside the user address space.
        let fits = |start: u64, len: u64| len > 0 && start.checked_add(len).is_some_and(|e| e <= top);
        match s.kind {
            SyscallKind::Mmap | SyscallKind::Shmat => {
                let (at, len) = (s.ret as u64, if s.kind == SyscallKind::Mmap { a[1] } else { a[3] });
                let unit = match (s.kind, a[3] & MAP_HUGETLB != 0) {
                    (SyscallKind::Mmap, true) if (a[3] >> 26) & 0x3f == 30 => PageSize::Size1G.bytes(),
                    (SyscallKind::Mmap, true) => PageSize::Size2M.bytes(),
                    _ => PAGE,
                };
                at.is_multiple_of(unit) && fits(at, len) && fits(at, page_up(len).next_multiple_of(unit))
            }
            SyscallKind::Munmap => aligned(a[0]) && fits(a[0], a[1]),
            SyscallKind::Madvise => aligned(a[0]) && (a[1] == 0 || fits(a[0], a[1])),
            SyscallKind::Shmdt => aligned(a[0]) && a[0] < top,
            SyscallKind::Mremap => {
                let (old, ret) = (a[0], s.ret as u64);
                let disjoint = ret == old || ret.saturating_add(a[2]) <= old || old.saturating_add(a[1]) <= ret;
                aligned(old) && aligned(ret) && fits(old, a[1]) && fits(ret, a[2]) && disjoint
            }
            SyscallKind::Brk => {
                let new = s.ret as u64;
                let sp = self.space();
                let Some(initial) = sp.initial_brk else {
                    return new < top;
                };
                let (old_top, new_top) = (page_up(sp.brk).max(page_down(initial)), page_up(new));
                new >= initial && new < top && (new_top <= old_top || sp.vmas_in(old_top, new_top).next().is_none())
            }
            SyscallKind::Exit => true,
        }
    }

    /// Apply a successful syscall (counted by [`Kernel::count_syscall`]).
    pub fn syscall(&mut self, s: &Syscall, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        let a = s.args;
        match s.kind {
            SyscallKind::Mmap => self.mmap(s.ret as u64, a[1], a[3], inv),
            SyscallKind::Munmap => self.munmap(a[0], page_up(a[0].saturating_add(a[1])), inv),
            SyscallKind::Brk => self.brk(s.ret as u64, inv),
            SyscallKind::Mremap => self.mremap(a[0], a[1], a[2], s.ret as u64, inv),
            SyscallKind::Madvise => self.madvise(a[0], page_up(a[0].saturating_add(a[1])), a[2], inv),
            SyscallKind::Shmat => self.mmap(s.ret as u64, a[3], MAP_SHARED, inv),
            SyscallKind::Shmdt => {
                let start = a[0];
                let end = self.space().vma_at(start).map_or(start, |v| v.end);
                self.munmap(start, end, inv)
            }
            SyscallKind::Exit => Ok(()),
        }
    }

    fn brk(&mut self, new: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        let sp = self.space_mut();
        let Some(initial) = sp.initial_brk else {
            sp.initial_brk = Some(new);
            sp.brk = new;
            return Ok(());
        };
        let old = sp.brk;
        sp.brk = new;
        let (h0, old_top, new_top) = (page_down(initial), page_up(old), page_up(new));
        if new_top > old_top {
            let start = old_top.max(h0);
            match self.space().heap_ending_at(start) {
                Some(s) => self.space_mut().vma_mut(s).end = new_top,
                None => {
                    self.stats.vmas_created += 1;
                    self.space_mut().insert(start, new_top, VmaKind::Heap);
                }
            }
            self.populate(start, new_top, inv)?;
        } else if new_top < old_top {
            self.unmap_sim(new_top.max(h0), old_top, inv)?;
        }
        Ok(())
    }
}

impl SpaceOps for Kernel {
    fn vma_at(&self, va: u64) -> Option<Vma> {
        self.space().vma_at(va)
    }

    fn mmap(&mut self, addr: u64, len: u64, flags: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        let huge = if flags & MAP_HUGETLB != 0 {
            Some(if (flags >> 26) & 0x3f == 30 { PageSize::Size1G } else { PageSize::Size2M })
        } else {
            None
        };
        let unit = huge.map_or(PAGE, |h| h.bytes());
        let end = addr.saturating_add(len).saturating_add(unit - 1) & !(unit - 1);
        // A mapping replaces whatever was there (MAP_FIXED, a range reused after munmap, or
        // VMAs the model inferred from accesses to memory mapped before tracing began).
        if flags & MAP_FIXED != 0 || self.space().vmas_in(addr, end).next().is_some() {
            self.munmap(addr, end, inv)?;
        }
        let anon = flags & MAP_ANONYMOUS != 0 && flags & MAP_SHARED == 0;
        let kind = match huge {
            Some(h) => VmaKind::Hugetlb(h),
            None if anon => VmaKind::Anon,
            None => VmaKind::File,
        };
        self.map(addr, end, kind, inv)
    }

    fn map(&mut self, start: u64, end: u64, kind: VmaKind, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        self.stats.vmas_created += 1;
        self.space_mut().insert(start, end, kind);
        self.populate(start, end, inv)
    }

    fn munmap(&mut self, start: u64, end: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        self.unmap_sim(page_down(start), end, inv)
    }

    fn release_4k(&mut self, start: u64, end: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        self.release(start, end, true, inv)
    }

    fn madvise(&mut self, start: u64, end: u64, advice: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        let start = page_down(start);
        match advice {
            MADV_DONTNEED | MADV_FREE | MADV_REMOVE => self.release(start, end, false, inv)?,
            MADV_HUGEPAGE | MADV_NOHUGEPAGE => {
                for id in self.space_mut().isolate(start, end) {
                    let v = self.space_mut().vma_mut(id);
                    if advice == MADV_HUGEPAGE {
                        v.thp_advised = true;
                        v.thp_disabled = false;
                    } else {
                        v.thp_disabled = true;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn mremap(
        &mut self,
        old: u64,
        old_len: u64,
        new_len: u64,
        ret: u64,
        inv: &mut Vec<Invalidation>,
    ) -> Result<(), SimError> {
        let old = page_down(old);
        let (old_end, new_end) = (page_up(old + old_len), page_up(ret + new_len));
        let Some(v) = self.space().vma_at(old) else {
            self.stats.failed_syscalls += 1;
            return Ok(());
        };
        if ret == old {
            if new_end > old_end && self.space().vmas_in(old_end, new_end).next().is_some() {
                // Grown in place over another mapping: Linux would have moved it or failed.
                self.stats.failed_syscalls += 1;
                return Ok(());
            }
            if new_end > old_end {
                self.space_mut().isolate(old, old_end);
                let sp = self.space_mut();
                let s = sp.last_start_before(old_end).expect("isolated");
                sp.vma_mut(s).end = new_end;
                self.populate(old_end, new_end, inv)?;
            } else if new_end < old_end {
                self.unmap_sim(new_end, old_end, inv)?;
            }
            return Ok(());
        }
        // Moved: the kernel moves the page-table entries; the frames stay.
        self.split_huge_at(old, inv)?;
        self.split_huge_at(old_end, inv)?;
        let (root, levels) = (self.root(), self.levels);
        let moved = self.pt.leaves(root, levels, old, old_end);
        self.pt.unmap_range(root, levels, old, old_end, &mut |_, _, _| {});
        inv.push(Invalidation::Range { asid: self.asid(), start: old, end: old_end });
        self.ranges_unmapped(old, old_end);
        self.forget_swapped(old, old_end);
        let ids = self.space_mut().isolate(old, old_end);
        for s in ids {
            self.space_mut().remove(s);
        }
        self.unmap_sim(ret, new_end, inv)?;
        self.stats.vmas_created += 1;
        self.space_mut().insert(ret, new_end, v.kind);
        for (va, pfn, size) in moved {
            let nva = ret + (va - old);
            if nva >= new_end {
                self.free_frames(pfn, 9 * size as u32);
                continue;
            }
            if nva.is_multiple_of(size.bytes()) && nva + size.bytes() <= new_end {
                self.map_page(nva, size, pfn, inv)?;
                if size == PageSize::Size4K {
                    self.resident(nva, pfn);
                }
            } else {
                // Split; the part past the new end (a shrinking move) is freed.
                self.stats.huge_splits += 1;
                for i in 0..size.bytes() / PAGE {
                    if nva + i * PAGE >= new_end {
                        self.free_frames(pfn + i, 0);
                        continue;
                    }
                    self.map_page(nva + i * PAGE, PageSize::Size4K, pfn + i, inv)?;
                    self.resident(nva + i * PAGE, pfn + i);
                }
            }
        }
        self.ranges_mapped(ret, new_end);
        self.populate(ret, new_end, inv)
    }
}
