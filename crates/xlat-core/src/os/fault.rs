//! Faults and mapping: demand faults (page-size choice and fallback), eager population, the
//! mapping of pages (with the page tables and companion pages they need), release of pages,
//! huge-page splits, migration between zones, and the range-table upkeep that goes with each.

use super::kernel::{place, Kernel};
use super::pagetable::OutOfFrames;
use super::types::{page_down, Invalidation, Purpose, SimError, Vma, VmaKind, PAGE};
use crate::units::PageSize;

impl Kernel {
    /// Handle a page fault at simulated address `va`: find (or infer) the VMA, choose the page
    /// size, allocate and map.
    pub fn fault(&mut self, va: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        if va >> (12 + 9 * self.levels as u32 - 1) != 0 {
            return Err(SimError::Invalid(format!(
                "the trace accesses {va:#x}, outside the user address space of {}-level page tables (below 2^{}): a corrupt trace or a kernel address",
                self.levels,
                12 + 9 * self.levels - 1
            )));
        }
        self.stats.page_faults += 1;
        let vma = match self.space().vma_at(va) {
            Some(v) => v,
            None => self.infer_vma(va),
        };
        if !self.swapped.is_empty() && self.swapped.remove(&(self.cur, page_down(va))) {
            self.stats.major_faults += 1;
        }
        let root = self.root();
        let mut size = self.page_size_for(&vma, va);
        loop {
            if size == PageSize::Size4K {
                let pfn = self.alloc(0, Purpose::Data, va, inv)?;
                self.map_page(page_down(va), size, pfn, inv)?;
                self.resident(page_down(va), pfn);
                self.stats.faults_4k += 1;
                break;
            }
            let base = va & !(size.bytes() - 1);
            let fits = base >= vma.start
                && base + size.bytes() <= vma.end
                && !self.pt.region_used(root, self.levels, base, size);
            if fits {
                if let Some(pfn) = self.try_alloc(9 * size as u32, Purpose::Data) {
                    self.map_page(base, size, pfn, inv)?;
                    if size == PageSize::Size2M {
                        self.stats.faults_2m += 1;
                    } else {
                        self.stats.faults_1g += 1;
                    }
                    break;
                }
            }
            self.stats.huge_fallbacks += 1;
            size = PageSize::from_index(size as usize - 1);
        }
        let base = va & !(size.bytes() - 1);
        self.ranges_mapped(base, base + size.bytes());
        Ok(())
    }

    /// The page size the policy wants at `va` (hugetlb VMAs: always theirs).
    fn page_size_for(&self, vma: &Vma, va: u64) -> PageSize {
        match vma.kind {
            VmaKind::Hugetlb(s) => s,
            _ => self.policies.page_size.page_size(vma, va),
        }
    }

    fn infer_vma(&mut self, va: u64) -> Vma {
        self.stats.inferred_vmas += 1;
        let (s, e) = self.space().inferred_bounds(va);
        self.space_mut().insert(s, e, VmaKind::Inferred);
        self.space().vma_at(va).expect("just inserted")
    }

    /// Map the `size` page at `va` (aligned) of the current space to frame `pfn`, allocating
    /// the page tables (and companion pages) it needs, reclaiming if none is free.
    pub(super) fn map_page(
        &mut self,
        va: u64,
        size: PageSize,
        pfn: u64,
        inv: &mut Vec<Invalidation>,
    ) -> Result<(), SimError> {
        let (root, levels) = (self.root(), self.levels);
        self.mapped_huge |= size != PageSize::Size4K;
        loop {
            let (phys, policies, stats) = (&mut self.phys, &self.policies, &mut self.stats);
            let r = self.pt.map(root, levels, va, size, pfn, &mut |companion| {
                let t = place(phys, policies, 0, Purpose::Table)?;
                let c = if companion {
                    match place(phys, policies, 0, Purpose::Table) {
                        Some(c) => Some(c),
                        None => {
                            phys.free(t, 0);
                            return None;
                        }
                    }
                } else {
                    None
                };
                stats.frames_in_use += 1 + companion as u64;
                stats.page_table_pages += 1;
                stats.companion_pages += companion as u64;
                Some((t, c))
            });
            match r {
                Ok(_) => return Ok(()),
                Err(OutOfFrames) => {
                    if !self.reclaim_one(inv) {
                        return Err(self.oom(va));
                    }
                }
            }
        }
    }

    /// Split huge pages that straddle `at` into 4KB pages (Linux splits THPs on partial unmap).
    pub(super) fn split_huge_at(&mut self, at: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        let root = self.root();
        if at.is_multiple_of(2 << 20) && at.is_multiple_of(1 << 30) {
            return Ok(());
        }
        let Some((pfn, size)) = self.pt.lookup(root, self.levels, at) else {
            return Ok(());
        };
        if size == PageSize::Size4K || at.is_multiple_of(size.bytes()) {
            return Ok(());
        }
        let base = at & !(size.bytes() - 1);
        self.stats.huge_splits += 1;
        self.pt.unmap_range(root, self.levels, base, base + 1, &mut |_, _, _| {});
        inv.push(Invalidation::Range { asid: self.asid(), start: base, end: base + size.bytes() });
        for i in 0..size.bytes() / PAGE {
            self.map_page(base + i * PAGE, PageSize::Size4K, pfn + i, inv)?;
            self.resident(base + i * PAGE, pfn + i);
        }
        Ok(())
    }

    /// Free the pages of [start, end) (after splitting huge pages at the ends); queue the
    /// invalidation. `only_4k` keeps huge pages (mosaic pools: hugetlb windows stay mapped).
    pub(super) fn release(
        &mut self,
        start: u64,
        end: u64,
        only_4k: bool,
        inv: &mut Vec<Invalidation>,
    ) -> Result<(), SimError> {
        if start >= end {
            return Ok(());
        }
        let root = self.root();
        if !only_4k {
            self.split_huge_at(start, inv)?;
            self.split_huge_at(end, inv)?;
        }
        let mut freed: Vec<(u64, u64, PageSize)> = Vec::new();
        if only_4k {
            for (va, pfn, size) in self.pt.leaves(root, self.levels, start, end) {
                if size == PageSize::Size4K {
                    self.pt.unmap_range(root, self.levels, va, va + PAGE, &mut |_, _, _| {});
                    freed.push((va, pfn, size));
                }
            }
        } else {
            self.pt.unmap_range(root, self.levels, start, end, &mut |va, pfn, s| freed.push((va, pfn, s)));
        }
        for &(_, pfn, s) in &freed {
            self.free_frames(pfn, 9 * s as u32);
        }
        inv.push(Invalidation::Range { asid: self.asid(), start, end });
        self.forget_swapped(start, end);
        if self.ranges_unmapped(start, end) && only_4k {
            self.ranges_mapped(start, end); // the huge pages that stayed
        }
        Ok(())
    }

    /// munmap of simulated [start, end): VMAs removed, pages freed.
    pub(super) fn unmap_sim(&mut self, start: u64, end: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        let ids = self.space_mut().isolate(start, end);
        self.release(start, end, false, inv)?;
        let sp = self.space_mut();
        for s in ids {
            sp.remove(s);
        }
        Ok(())
    }

    /// Eager paging (seed 000 Algorithm 4.1): if the allocation-timing policy says so, back the
    /// unmapped pages of [start, end) of `vma` now, with the largest free buddy blocks that fit
    /// (up to the policy's order; smaller ones when memory is fragmented), each mapped with the
    /// page sizes the page-size policy chooses where the block's frames and the addresses are
    /// both aligned, 4KB pages elsewhere. To keep the region physically contiguous, a block is
    /// taken right after the previous one (or after the frame of the page before `start`) when
    /// that memory is free (the coalescing enhancement the text suggests); otherwise the lowest
    /// largest free block.
    ///
    /// With aligned placement (the timing policy's default), a fresh block is placed so that
    /// virtual and physical addresses agree modulo the largest page the page-size policy would
    /// map in the rest of the region (2MB under THP, 1GB under the 1GB policy): the block is
    /// taken at least that large and the region starts at the same offset inside it, the frames
    /// before that offset go back to the buddy allocator (the thesis's second enhancement:
    /// "request a block from a larger size free-list, assign the necessary pages, and return the
    /// remaining blocks"). Ranges stay redundant to paging, which keeps its huge pages (section
    /// 4.4). Without it, a block starts wherever the buddy allocator has one, and a huge page fits
    /// only where the two addresses happen to agree.
    pub(super) fn populate(&mut self, start: u64, end: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        let Some(vma) = self.space().vma_at(start) else {
            return Ok(());
        };
        let Some(max_order) = self.policies.timing.populate(&vma, start, end) else {
            return Ok(());
        };
        let aligned = self.policies.timing.aligned();
        let promotes = self.policies.timing.promotes();
        let end = end.min(vma.end);
        let mut va = start;
        let mut next = match start > vma.start {
            true => self.lookup(start - PAGE).map(|(pfn, s)| pfn + (((start - PAGE) & (s.bytes() - 1)) >> 12) + 1),
            false => None,
        };
        while va < end {
            let pages = (end - va) / PAGE;
            let want = max_order.min(63 - pages.leading_zeros());
            // The congruence a huge page in the rest of the region needs (0: none fits). With
            // promotion, a 2MB region only partly inside the request is placed congruent modulo
            // 2MB too, so that the request that completes it can map it in place.
            let mut align = if aligned { self.eager_alignment(&vma, va, end, want) } else { 0 };
            if promotes && align == 0 && max_order >= 9 && self.policy_maps_2m(&vma, va) {
                align = 9;
            }
            let mask = (1u64 << align) - 1;
            let vpn = va / PAGE;
            let congruent = |pfn: u64| (pfn ^ vpn) & mask == 0;
            let (pfn, frames) = match next.filter(|&n| congruent(n)).and_then(|n| self.alloc_after(n, want)) {
                Some((pfn, order)) => (pfn, 1u64 << order),
                None => {
                    let (block, order) = self.alloc_largest(want.max(align), va, inv)?;
                    // A block smaller than the alignment cannot hold the huge page: use it whole.
                    let skip = if order >= align { vpn & mask } else { 0 };
                    self.free_span(block, block + skip);
                    // (A block taken larger than the request for its alignment: the rest back.)
                    let frames = ((1u64 << order) - skip).min(pages);
                    self.free_span(block + skip + frames, block + (1u64 << order));
                    (block + skip, frames)
                }
            };
            self.stats.eager_blocks += 1;
            let block_end = va + frames * PAGE;
            self.map_block(&vma, va, block_end, pfn, inv)?;
            next = Some(pfn + frames);
            va = block_end;
        }
        if promotes {
            // The 2MB regions at the request's two ends may now lie wholly inside the mapping.
            let h = PageSize::Size2M.bytes();
            let (first, last) = (start & !(h - 1), (end - 1) & !(h - 1));
            self.promote(&vma, first, inv)?;
            if last != first {
                self.promote(&vma, last, inv)?;
            }
        }
        self.ranges_mapped(start, end);
        Ok(())
    }

    /// Whether the page-size policy maps a 2MB page (or larger) in the 2MB region around `va` of
    /// `vma` if the region lay wholly inside it.
    fn policy_maps_2m(&self, vma: &Vma, va: u64) -> bool {
        let r = va & !(PageSize::Size2M.bytes() - 1);
        let whole = Vma { start: vma.start.min(r), end: vma.end.max(r + PageSize::Size2M.bytes()), ..*vma };
        self.page_size_for(&whole, r) as usize >= PageSize::Size2M as usize
    }

    /// Eager promotion (`os.eager_promote`): the 2MB region at `r`, wholly inside `vma` and
    /// wholly mapped by 4KB pages (backed by two requests, the one that completed it last),
    /// becomes one 2MB page where the page-size policy maps one: in place when its frames are
    /// one aligned 2MB block, else copied into a new block (the old frames freed), as khugepaged
    /// would collapse it, but at once. Counted in `os.eager_promotions` / `os.eager_collapses`.
    fn promote(&mut self, vma: &Vma, r: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        let h = PageSize::Size2M.bytes();
        if r < vma.start || r + h > vma.end || (self.page_size_for(vma, r) as usize) < PageSize::Size2M as usize {
            return Ok(());
        }
        let (root, levels) = (self.root(), self.levels);
        let leaves = self.pt.leaves(root, levels, r, r + h);
        if leaves.len() != 512 || leaves.iter().any(|l| l.2 != PageSize::Size4K) {
            return Ok(());
        }
        let p0 = leaves[0].1;
        let in_place = p0.is_multiple_of(512) && leaves.iter().enumerate().all(|(i, l)| l.1 == p0 + i as u64);
        let pfn = if in_place {
            self.stats.eager_promotions += 1;
            p0
        } else {
            let Some(new) = self.try_alloc(9, Purpose::Data) else {
                return Ok(()); // no free 2MB block: the region stays in 4KB pages
            };
            for l in &leaves {
                self.free_frames(l.1, 0);
            }
            self.stats.eager_collapses += 1;
            new
        };
        self.pt.unmap_range(root, levels, r, r + h, &mut |_, _, _| {});
        self.map_page(r, PageSize::Size2M, pfn, inv)?;
        inv.push(Invalidation::Range { asid: self.asid(), start: r, end: r + h });
        self.stats.eager_4k -= 512;
        self.stats.eager_2m += 1;
        self.ranges_unmapped(r, r + h);
        self.ranges_mapped(r, r + h);
        Ok(())
    }

    /// log2 of the frames of the largest page the page-size policy would map in [va, end) of
    /// `vma` (a page of that size aligned inside it, at most `2^max_order` frames), 0 if only
    /// 4KB pages would.
    fn eager_alignment(&self, vma: &Vma, va: u64, end: u64, max_order: u32) -> u32 {
        let end = end.min(vma.end);
        [PageSize::Size1G, PageSize::Size2M]
            .into_iter()
            .find(|&size| {
                let b = size.bytes();
                let base = va.next_multiple_of(b);
                (b / PAGE).trailing_zeros() <= max_order
                    && base + b <= end
                    && self.page_size_for(vma, base) as usize >= size as usize
            })
            .map_or(0, |size| (size.bytes() / PAGE).trailing_zeros())
    }

    /// Give the frames [first, end) back to the buddy allocator as aligned blocks.
    fn free_span(&mut self, mut first: u64, end: u64) {
        while first < end {
            let order = first.trailing_zeros().min(63 - (end - first).leading_zeros());
            self.free_frames(first, order);
            first += 1 << order;
        }
    }

    /// Map the frames from `pfn0` on at [va0, vend) of `vma`: the largest page the policy allows
    /// where it fits, frames of pages already mapped given back.
    fn map_block(
        &mut self,
        vma: &Vma,
        va0: u64,
        vend: u64,
        pfn0: u64,
        inv: &mut Vec<Invalidation>,
    ) -> Result<(), SimError> {
        let root = self.root();
        let mut va = va0;
        while va < vend {
            let pfn = pfn0 + (va - va0) / PAGE;
            if self.pt.lookup(root, self.levels, va).is_some() {
                self.free_frames(pfn, 0);
                va += PAGE;
                continue;
            }
            let mut size = self.page_size_for(vma, va);
            while size != PageSize::Size4K {
                let (b, frames) = (size.bytes(), size.bytes() / PAGE);
                let fits = va.is_multiple_of(b)
                    && pfn.is_multiple_of(frames)
                    && va + b <= vend
                    && va >= vma.start
                    && va + b <= vma.end
                    && !self.pt.region_used(root, self.levels, va, size);
                if fits {
                    break;
                }
                size = PageSize::from_index(size as usize - 1);
            }
            self.map_page(va, size, pfn, inv)?;
            match size {
                PageSize::Size4K => {
                    self.stats.eager_4k += 1;
                    self.resident(va, pfn);
                }
                PageSize::Size2M => self.stats.eager_2m += 1,
                PageSize::Size1G => self.stats.eager_1g += 1,
            }
            self.stats.eager_frames += size.bytes() / PAGE;
            va += size.bytes();
        }
        Ok(())
    }

    /// Move the 4KB or 2MB page at `va` of the current space to frames of `zone`: allocate there
    /// (a 2MB block for a 2MB page), remap, free the old frames, queue the invalidation. False
    /// (nothing done) when `va` is not mapped by a 4KB or 2MB page, is in `zone` already, or
    /// `zone` has no free block of the page's size.
    pub fn migrate(&mut self, va: u64, zone: usize, inv: &mut Vec<Invalidation>) -> Result<bool, SimError> {
        if zone >= self.phys.zones() {
            return Err(SimError::Invalid(format!("there is no memory zone {zone} (of {})", self.phys.zones())));
        }
        let root = self.root();
        let (old, size) = match self.pt.lookup(root, self.levels, va) {
            Some((f, s @ (PageSize::Size4K | PageSize::Size2M))) => (f, s),
            _ => return Ok(false),
        };
        let (bytes, order) = (size.bytes(), if size == PageSize::Size2M { 9 } else { 0 });
        let va = va & !(bytes - 1);
        if self.phys.zone_of(old) == zone {
            return Ok(false);
        }
        let Some(new) = self.phys.alloc_in(zone, order) else {
            return Ok(false);
        };
        self.stats.frames_in_use += 1 << order;
        self.pt.unmap_range(root, self.levels, va, va + bytes, &mut |_, _, _| {});
        self.map_page(va, size, new, inv)?;
        self.free_frames(old, order);
        inv.push(Invalidation::Range { asid: self.asid(), start: va, end: va + bytes });
        self.stats.migrations += 1;
        if size == PageSize::Size4K {
            self.resident(va, new);
        }
        self.ranges_unmapped(va, va + bytes);
        self.ranges_mapped(va, va + bytes);
        Ok(true)
    }

    /// Pages of [start, end) of the current space were mapped: refresh its range table.
    #[inline(always)]
    pub(super) fn ranges_mapped(&mut self, start: u64, end: u64) {
        if let Some(t) = self.range_threshold {
            self.refresh_ranges(start, end, t);
        }
    }

    #[inline(never)]
    fn refresh_ranges(&mut self, start: u64, end: u64, t: u64) {
        let Some(v) = self.space().vma_at(start) else {
            return;
        };
        let (root, levels) = (self.root(), self.levels);
        let sp = &mut self.spaces[self.cur];
        sp.ranges.refresh(&self.pt, root, levels, (v.start, v.end), start, end, t);
    }

    /// [start, end) of the current space is no longer mapped as it was: trim its ranges.
    /// Returns whether any range changed.
    pub(super) fn ranges_unmapped(&mut self, start: u64, end: u64) -> bool {
        match self.range_threshold {
            Some(t) => self.space_mut().ranges.trim(start, end, t),
            None => false,
        }
    }
}
