//! The kernel of the OS model: physical memory (the zoned buddy allocator), the page tables of
//! every address space, the address spaces, the policies and the counters, with the frame
//! allocator every other part uses (placement by the tiering policy, reclaim when nothing is
//! free). Faults and mapping are in `fault.rs`, syscalls in `syscalls.rs`.

use super::buddy::Buddy;
use super::counters::OsStats;
use super::pagetable::PageTables;
use super::policy::Policies;
use super::space::AddressSpace;
use super::types::{Invalidation, Purpose, SimError, Vma, PAGE};
use crate::config::Config;
use crate::units::PageSize;
use std::collections::{BTreeSet, HashMap};

pub struct Kernel {
    pub(super) levels: usize,
    pub(super) pt: PageTables,
    pub(super) phys: Buddy,
    pub(super) spaces: Vec<AddressSpace>,
    by_asid: HashMap<u32, usize>,
    /// Index of the current address space.
    pub(super) cur: usize,
    /// Its root table (read on every walk).
    root: u32,
    pub(super) policies: Policies,
    mem_mib: u64,
    pub(super) stats: OsStats,
    /// Pages evicted by reclaim, as (space, va): a fault on one is a major fault.
    pub(super) swapped: BTreeSet<(usize, u64)>,
    /// Whether a page larger than 4KB was ever mapped (a range TLB hit then asks the page
    /// table for its page's size; `Os::maps_huge`).
    pub(super) mapped_huge: bool,
    /// What the policies decided once (read on every fault, so not asked through their
    /// trait objects each time): the range policy's threshold, and whether the reclaim policy
    /// tracks resident pages.
    pub(super) range_threshold: Option<u64>,
    tracks_resident: bool,
    /// Frames `memory.fragmentation` pinned at boot (never in use, never free).
    pub(super) pinned_frames: u64,
    /// Frames in use that no page table maps: the DRAM frames a memory-side cache holds
    /// (Rainbow's DRAM copies of NVM pages, [`Kernel::alloc_frame`]).
    pub(super) unmapped_frames: u64,
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Allocate `2^order` frames for `purpose` from the zones in the tiering policy's order (no
/// reclaim). A free function of the two fields so that page-table creation can call it while
/// the tables are borrowed.
pub(super) fn place(phys: &mut Buddy, policies: &Policies, order: u32, purpose: Purpose) -> Option<u64> {
    if phys.zones() == 1 {
        return phys.alloc_in(0, order);
    }
    policies.tiering.zone_order(phys.zones(), purpose).iter().find_map(|z| phys.alloc_in(z, order))
}

impl Kernel {
    /// Physical memory of `cfg.memory` (its kinds as zones, `memory.fragmentation` pinning
    /// frames in every zone), no address space yet.
    pub fn new(cfg: &Config, policies: Policies) -> Kernel {
        let m = &cfg.memory;
        let frag = m.fragmentation;
        let seed = cfg.sim.seed;
        let threshold = (frag * (u64::MAX as f64)) as u64;
        let pinned = |i: u64| frag > 0.0 && splitmix(seed ^ splitmix(i)) <= threshold;
        let phys = if m.kinds.is_empty() {
            Buddy::new(m.size.0 / PAGE, m.max_order, pinned)
        } else {
            let zones: Vec<(&str, u64)> = m.kinds.iter().map(|k| (k.name.as_str(), k.size.0 / PAGE)).collect();
            Buddy::zoned(&zones, m.max_order, pinned)
        };
        let pt = PageTables::with_companions(policies.metadata.companion_level());
        let (range_threshold, tracks_resident) = (policies.ranges.threshold(), !policies.reclaim.is_default());
        let f = phys.fragmentation();
        let pinned_frames = f.total_frames - f.free_frames;
        Kernel {
            levels: cfg.os.levels as usize,
            pt,
            phys,
            spaces: Vec::new(),
            by_asid: HashMap::new(),
            cur: 0,
            root: 0,
            policies,
            mem_mib: m.size.0 >> 20,
            stats: OsStats::default(),
            swapped: BTreeSet::new(),
            mapped_huge: false,
            range_threshold,
            tracks_resident,
            pinned_frames,
            unmapped_frames: 0,
        }
    }

    #[inline(always)]
    pub fn root(&self) -> u32 {
        self.root
    }
    pub fn asid(&self) -> u32 {
        self.spaces[self.cur].asid
    }
    #[inline]
    pub(super) fn space(&self) -> &AddressSpace {
        &self.spaces[self.cur]
    }
    #[inline]
    pub(super) fn space_mut(&mut self) -> &mut AddressSpace {
        &mut self.spaces[self.cur]
    }

    /// Switch to address space `asid`, creating it (with `initial` VMAs) on first use. Returns
    /// whether it changed. A new space's root table is allocated without reclaim (a switch
    /// carries no invalidations).
    pub fn switch_to(&mut self, asid: u32, initial: &[Vma]) -> Result<bool, SimError> {
        if !self.spaces.is_empty() && self.spaces[self.cur].asid == asid {
            return Ok(false);
        }
        self.stats.context_switches += 1;
        if let Some(&i) = self.by_asid.get(&asid) {
            self.cur = i;
            self.root = self.spaces[i].root;
            return Ok(true);
        }
        let oom = SimError::OutOfMemory(self.mem_mib, 0);
        let pfn = place(&mut self.phys, &self.policies, 0, Purpose::Table).ok_or(oom.clone())?;
        self.stats.frames_in_use += 1;
        self.stats.page_table_pages += 1;
        let companion = if self.pt.needs_companion(self.levels) {
            let c = place(&mut self.phys, &self.policies, 0, Purpose::Table).ok_or(oom)?;
            self.stats.frames_in_use += 1;
            self.stats.companion_pages += 1;
            Some(c)
        } else {
            None
        };
        let root = self.pt.new_table(self.levels, pfn, companion);
        let mut sp = AddressSpace::new(asid, root);
        for &v in initial {
            sp.insert_raw(v);
        }
        self.spaces.push(sp);
        self.cur = self.spaces.len() - 1;
        self.root = root;
        self.by_asid.insert(asid, self.cur);
        Ok(true)
    }

    /// Software lookup of the current space's mapping of `va` through the region memo (the
    /// walker's path: the same answer as a plain walk).
    #[inline(always)]
    pub fn translate(&mut self, va: u64) -> Option<(u64, PageSize)> {
        self.pt.lookup_memo(self.root, self.levels, va)
    }

    /// Plain software walk of the current space (no memo).
    pub fn lookup(&self, va: u64) -> Option<(u64, PageSize)> {
        self.pt.lookup(self.root, self.levels, va)
    }

    pub(super) fn oom(&self, va: u64) -> SimError {
        SimError::OutOfMemory(self.mem_mib, va)
    }

    /// Allocate `2^order` frames for `purpose` at the placement the tiering policy chooses
    /// (no reclaim: None when no zone has a block).
    pub(super) fn try_alloc(&mut self, order: u32, purpose: Purpose) -> Option<u64> {
        let pfn = place(&mut self.phys, &self.policies, order, purpose)?;
        self.stats.frames_in_use += 1 << order;
        Some(pfn)
    }

    /// Allocate `2^order` frames for `purpose`, reclaiming pages while none is free (the
    /// invalidations of evicted pages go to `inv`); out of memory (at `va`) when nothing is
    /// left to reclaim.
    pub(super) fn alloc(
        &mut self,
        order: u32,
        purpose: Purpose,
        va: u64,
        inv: &mut Vec<Invalidation>,
    ) -> Result<u64, SimError> {
        loop {
            if let Some(pfn) = self.try_alloc(order, purpose) {
                return Ok(pfn);
            }
            if !self.reclaim_one(inv) {
                return Err(self.oom(va));
            }
        }
    }

    /// Largest-block allocation for eager paging: the largest free block of at most
    /// `2^max_order` frames of the first zone (in the tiering policy's order) with any free
    /// frame, reclaiming pages while none is free.
    pub(super) fn alloc_largest(
        &mut self,
        max_order: u32,
        va: u64,
        inv: &mut Vec<Invalidation>,
    ) -> Result<(u64, u32), SimError> {
        loop {
            let zones = self.policies.tiering.zone_order(self.phys.zones(), Purpose::Data);
            if let Some((pfn, order)) = self.phys.alloc_largest(max_order, zones.iter()) {
                self.stats.frames_in_use += 1 << order;
                return Ok((pfn, order));
            }
            if !self.reclaim_one(inv) {
                return Err(self.oom(va));
            }
        }
    }

    /// For eager paging: the largest free block of at most `2^max_order` frames that starts at
    /// frame `next` (aligned there), in the same zone as frame `next - 1`; None if `next` is in
    /// use or in another zone.
    pub(super) fn alloc_after(&mut self, next: u64, max_order: u32) -> Option<(u64, u32)> {
        let (_, end) = self.phys.zone_frames(self.phys.zones() - 1);
        if next == 0 || next >= end || self.phys.zone_of(next) != self.phys.zone_of(next - 1) {
            return None;
        }
        let order = (0..=max_order.min(next.trailing_zeros())).rev().find(|&k| self.phys.alloc_at(next, k))?;
        self.stats.frames_in_use += 1 << order;
        Some((next, order))
    }

    /// One 4KB frame of `zone` that no page maps (a memory-side cache's frame: Rainbow's DRAM
    /// manager takes its frames from the buddy allocator, seed 003 section III-A), or None when
    /// the zone has none free.
    pub fn alloc_frame(&mut self, zone: usize) -> Option<u64> {
        let pfn = self.phys.alloc_in(zone, 0)?;
        self.stats.frames_in_use += 1;
        self.unmapped_frames += 1;
        Some(pfn)
    }

    /// Give back a frame of [`Kernel::alloc_frame`].
    pub fn free_frame(&mut self, pfn: u64) {
        self.unmapped_frames -= 1;
        self.free_frames(pfn, 0);
    }

    pub(super) fn free_frames(&mut self, pfn: u64, order: u32) {
        self.phys.free(pfn, order);
        self.stats.frames_in_use -= 1 << order;
    }

    /// A 4KB page of the current space at `va` became resident in `pfn` (reclaim candidates).
    pub(super) fn resident(&mut self, va: u64, pfn: u64) {
        if self.tracks_resident {
            self.policies.reclaim.resident(self.cur, va, pfn);
        }
    }

    /// Evict one resident 4KB page (the reclaim policy's next victim still mapped to its
    /// frame): unmap it, free its frame, queue its invalidation. False: nothing to evict.
    pub(super) fn reclaim_one(&mut self, inv: &mut Vec<Invalidation>) -> bool {
        while let Some((space, va, pfn)) = self.policies.reclaim.victim() {
            let (root, asid) = (self.spaces[space].root, self.spaces[space].asid);
            if self.pt.lookup(root, self.levels, va) != Some((pfn, PageSize::Size4K)) {
                continue; // unmapped, moved or migrated since
            }
            self.pt.unmap_range(root, self.levels, va, va + PAGE, &mut |_, _, _| {});
            self.free_frames(pfn, 0);
            inv.push(Invalidation::Range { asid, start: va, end: va + PAGE });
            if let Some(t) = self.range_threshold {
                self.spaces[space].ranges.trim(va, va + PAGE, t);
            }
            self.swapped.insert((space, va));
            self.stats.reclaimed_pages += 1;
            return true;
        }
        false
    }

    /// Forget the evicted pages of [start, end) of the current space (the range was unmapped:
    /// a later fault there is a first touch, not a major fault).
    pub(super) fn forget_swapped(&mut self, start: u64, end: u64) {
        if self.swapped.is_empty() || start >= end {
            return;
        }
        let gone: Vec<(usize, u64)> = self.swapped.range((self.cur, start)..(self.cur, end)).copied().collect();
        for k in gone {
            self.swapped.remove(&k);
        }
    }

    /// Range translations of every address space, the frames they cover, and the pages their
    /// range tables' B-trees occupy (as of the last walk of each).
    pub fn range_totals(&self) -> (u64, u64, u64) {
        self.spaces.iter().fold((0, 0, 0), |(n, f, p), s| {
            (n + s.ranges.len() as u64, f + s.ranges.frames(), p + s.ranges.tree.pages.len() as u64)
        })
    }

    /// The nodes a range-table walk of `va` in the current space visits (physical addresses,
    /// root first, into `out`); whether it found a range. The B-tree is rebuilt first if the
    /// ranges changed since the last walk, its pages allocated from (or returned to) the buddy
    /// allocator as page-table pages are (no reclaim: a walk carries no invalidations).
    pub fn range_walk(&mut self, va: u64, out: &mut Vec<u64>) -> Result<bool, SimError> {
        let sp = &mut self.spaces[self.cur];
        if sp.ranges.tree.dirty() {
            let need = sp.ranges.build_tree();
            let pages = &mut sp.ranges.tree.pages;
            while pages.len() > need {
                self.phys.free(pages.pop().expect("a page"), 0);
                self.stats.frames_in_use -= 1;
            }
            while pages.len() < need {
                let pfn = place(&mut self.phys, &self.policies, 0, Purpose::Table)
                    .ok_or(SimError::OutOfMemory(self.mem_mib, va))?;
                pages.push(pfn);
                self.stats.frames_in_use += 1;
            }
        }
        Ok(sp.ranges.tree.lookup_path(va, out))
    }
}
