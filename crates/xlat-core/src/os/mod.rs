//! The OS model: address spaces with VMAs built from the trace's syscalls, physical memory with
//! a buddy allocator, radix page tables in that memory, demand paging, and the page-size
//! policies (4KB, THP, hugetlb VMAs, mosaic layouts). See `docs/simulator.md` for exactly what
//! is and is not modelled.

pub mod buddy;
pub mod pagetable;
pub mod policy;

use crate::config::layout::Layout;
use crate::config::{Config, Policy};
use crate::units::PageSize;
use buddy::Buddy;
use pagetable::PageTables;
use policy::{PageSizePolicy, PoolKind};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use xlat_trace::{Syscall, SyscallKind};

pub use policy::{AllocationTiming, DemandPaging, MetadataGranularity, NoRanges, RangeCreation, SingleTier, Tiering};

/// Where the mosaic pools are placed in the simulated address space: 1GiB-aligned, as the real
/// allocator places them, far from where Linux puts brk (0x55..) and mmap (0x7f..) regions.
pub const HEAP_POOL_BASE: u64 = 0x1000_0000_0000;
pub const ANON_POOL_BASE: u64 = 0x2000_0000_0000;
pub const FILE_POOL_BASE: u64 = 0x3000_0000_0000;
/// Largest pool the simulator places (pools are 16TiB apart).
pub const MAX_POOL: u64 = 0x1000_0000_0000;

const PAGE: u64 = 4096;
const MAP_SHARED: u64 = 0x01;
const MAP_FIXED: u64 = 0x10;
const MAP_ANONYMOUS: u64 = 0x20;
const MAP_HUGETLB: u64 = 0x40000;
const MADV_DONTNEED: u64 = 4;
const MADV_FREE: u64 = 8;
const MADV_REMOVE: u64 = 9;
const MADV_HUGEPAGE: u64 = 14;
const MADV_NOHUGEPAGE: u64 = 15;

#[inline]
fn page_up(x: u64) -> u64 {
    x.saturating_add(PAGE - 1) & !(PAGE - 1)
}
#[inline]
fn page_down(x: u64) -> u64 {
    x & !(PAGE - 1)
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

/// First-fit allocator of pool offsets (the mosaic allocator's anon and file pools).
#[derive(Debug, Clone, Default)]
struct FirstFit {
    /// Free ranges: start -> end.
    free: BTreeMap<u64, u64>,
}

impl FirstFit {
    fn new(size: u64) -> FirstFit {
        let mut free = BTreeMap::new();
        free.insert(0, size);
        FirstFit { free }
    }
    fn alloc(&mut self, len: u64) -> Option<u64> {
        let (&s, &e) = self.free.iter().find(|(&s, &e)| e - s >= len)?;
        self.free.remove(&s);
        if s + len < e {
            self.free.insert(s + len, e);
        }
        Some(s)
    }
    fn release(&mut self, mut s: u64, mut e: u64) {
        if let Some((&ps, &pe)) = self.free.range(..s).next_back() {
            if pe == s {
                self.free.remove(&ps);
                s = ps;
            }
        }
        if let Some(&ne) = self.free.get(&e) {
            self.free.remove(&e);
            e = ne;
        }
        self.free.insert(s, e);
    }
}

/// A relocated range of trace addresses (mosaic): trace [start, end) -> sim [sim, ...).
#[derive(Debug, Clone, Copy)]
struct Chunk {
    end: u64,
    sim: u64,
    pool: PoolKind,
}

/// One process: page tables, VMAs, brk, and (mosaic) the relocation of trace addresses.
#[derive(Debug, Clone)]
pub struct AddressSpace {
    pub asid: u32,
    pub root: u32,
    vmas: BTreeMap<u64, Vma>,
    initial_brk: Option<u64>,
    brk: u64,
    chunks: BTreeMap<u64, Chunk>,
    /// Most recently used relocation: trace [lo, hi) -> + delta (wrapping).
    mru: (u64, u64, u64),
    anon_pool: FirstFit,
    file_pool: FirstFit,
}

/// A TLB/PSC invalidation the MMU must perform (addresses in the simulated address space).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalidation {
    Range {
        asid: u32,
        start: u64,
        end: u64,
    },
    /// Everything (context switch without ASIDs).
    All,
}

/// Counters of the OS model.
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
}

impl crate::stats::Counters for Os {
    fn counters(&self, out: &mut dyn crate::stats::Sink) {
        self.stats.counters(out)
    }
}

impl crate::stats::Counters for OsStats {
    fn counters(&self, out: &mut dyn crate::stats::Sink) {
        crate::report_fields!(
            out,
            "os",
            self,
            page_faults,
            faults_4k,
            faults_2m,
            faults_1g,
            huge_fallbacks,
            page_table_pages,
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
            frames_in_use,
        );
    }
}

/// A user error while simulating (one sentence).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("physical memory ({0} MiB) is exhausted at virtual address {1:#x}; raise memory.size")]
    OutOfMemory(u64, u64),
    #[error("{0}")]
    Invalid(String),
}

/// The OS of the simulated machine.
pub struct Os {
    levels: usize,
    pub pt: PageTables,
    buddy: Buddy,
    spaces: Vec<AddressSpace>,
    by_asid: HashMap<u32, usize>,
    cur: usize,
    policy: Box<dyn PageSizePolicy>,
    pub timing: Box<dyn AllocationTiming>,
    pub ranges: Box<dyn RangeCreation>,
    pub tiering: Box<dyn Tiering>,
    pub metadata: Box<dyn MetadataGranularity>,
    layout: Option<Layout>,
    mosaic: bool,
    /// Mosaic with pools placed by the simulator: trace addresses are relocated into them.
    /// False when `os.pools_at` says where the pools already are in the trace.
    reloc: bool,
    /// Pool start addresses in the simulated address space, indexed by `PoolKind as usize`.
    pool_base: [u64; 3],
    mem_mib: u64,
    pub stats: OsStats,
    /// Invalidations for the MMU, drained after every OS operation.
    pub inval: Vec<Invalidation>,
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Os {
    pub fn new(cfg: &Config) -> Result<Os, SimError> {
        let frames = cfg.memory.size.0 / PAGE;
        let frag = cfg.memory.fragmentation;
        let seed = cfg.sim.seed;
        let threshold = (frag * (u64::MAX as f64)) as u64;
        let buddy =
            Buddy::new(frames, cfg.memory.max_order, |i| frag > 0.0 && splitmix(seed ^ splitmix(i)) <= threshold);
        let layout = cfg.layout.clone();
        let mosaic = cfg.os.policy == Policy::Mosaic;
        if let Some(l) = &layout {
            if l.heap_size() > MAX_POOL || l.anon_size() > MAX_POOL || l.file_size() > MAX_POOL {
                return Err(SimError::Invalid(
                    "the simulator places mosaic pools of at most 16TiB each; shrink the layout's pools".into(),
                ));
            }
        }
        let policy = policy::make(cfg);
        let pool_base =
            cfg.os.pools_at.map_or([HEAP_POOL_BASE, ANON_POOL_BASE, FILE_POOL_BASE], |p| [p.heap, p.anon, p.file]);
        let reloc = mosaic && cfg.os.pools_at.is_none();
        let mut os = Os {
            levels: cfg.os.levels as usize,
            pt: PageTables::default(),
            buddy,
            spaces: Vec::new(),
            by_asid: HashMap::new(),
            cur: 0,
            policy,
            timing: Box::new(DemandPaging),
            ranges: Box::new(NoRanges),
            tiering: Box::new(SingleTier),
            metadata: Box::new(policy::PerPage),
            layout,
            mosaic,
            reloc,
            pool_base,
            mem_mib: cfg.memory.size.0 >> 20,
            stats: OsStats::default(),
            inval: Vec::new(),
        };
        os.switch_to(0)?;
        os.stats.context_switches = 0;
        Ok(os)
    }

    pub fn levels(&self) -> usize {
        self.levels
    }
    pub fn policy_name(&self) -> &'static str {
        self.policy.name()
    }
    pub fn current(&self) -> &AddressSpace {
        &self.spaces[self.cur]
    }
    pub fn asid(&self) -> u32 {
        self.spaces[self.cur].asid
    }
    pub fn root(&self) -> u32 {
        self.spaces[self.cur].root
    }
    pub fn fragmentation(&self) -> buddy::Fragmentation {
        self.buddy.fragmentation()
    }

    fn alloc_frames(&mut self, order: u32, va: u64) -> Result<u64, SimError> {
        let pfn = self.buddy.alloc(order).ok_or(SimError::OutOfMemory(self.mem_mib, va))?;
        self.stats.frames_in_use += 1 << order;
        Ok(pfn)
    }

    fn free_frames(&mut self, pfn: u64, order: u32) {
        self.buddy.free(pfn, order);
        self.stats.frames_in_use -= 1 << order;
    }

    /// Switch to address space `asid`, creating it on first use. Returns whether it changed.
    pub fn switch_to(&mut self, asid: u32) -> Result<bool, SimError> {
        if !self.spaces.is_empty() && self.spaces[self.cur].asid == asid {
            return Ok(false);
        }
        self.stats.context_switches += 1;
        if let Some(&i) = self.by_asid.get(&asid) {
            self.cur = i;
            return Ok(true);
        }
        let pfn = self.alloc_frames(0, 0)?;
        self.stats.page_table_pages += 1;
        let root = self.pt.new_table(pfn);
        let (anon, file) = match &self.layout {
            Some(l) => (l.anon_size(), l.file_size()),
            None => (0, 0),
        };
        let mut sp = AddressSpace {
            asid,
            root,
            vmas: BTreeMap::new(),
            initial_brk: None,
            brk: 0,
            chunks: BTreeMap::new(),
            mru: (0, 0, 0),
            anon_pool: FirstFit::new(anon),
            file_pool: FirstFit::new(file),
        };
        if self.mosaic {
            let l = self.layout.as_ref().expect("mosaic has a layout");
            let b = self.pool_base;
            for (kind, base, size) in [
                (PoolKind::Heap, b[0], l.heap_size()),
                (PoolKind::Anon, b[1], l.anon_size()),
                (PoolKind::File, b[2], l.file_size()),
            ] {
                sp.vmas.insert(
                    base,
                    Vma {
                        start: base,
                        end: base + size,
                        kind: VmaKind::Pool(kind),
                        thp_advised: false,
                        thp_disabled: true,
                    },
                );
            }
        }
        self.spaces.push(sp);
        self.cur = self.spaces.len() - 1;
        self.by_asid.insert(asid, self.cur);
        Ok(true)
    }

    // ------------------------------------------------------------------ mosaic relocation

    /// Whether trace addresses are relocated into simulator-placed mosaic pools (mosaic
    /// without `os.pools_at`); otherwise [`Os::relocate`] is the identity.
    pub fn relocates(&self) -> bool {
        self.reloc
    }

    /// Trace address -> simulated address (identity unless a mosaic pool relocates it).
    #[inline(always)]
    pub fn relocate(&mut self, va: u64) -> u64 {
        let sp = &mut self.spaces[self.cur];
        let (lo, hi, d) = sp.mru;
        if va.wrapping_sub(lo) < hi.wrapping_sub(lo) {
            return va.wrapping_add(d);
        }
        Self::relocate_slow(sp, va)
    }

    #[cold]
    fn relocate_slow(sp: &mut AddressSpace, va: u64) -> u64 {
        let prev = sp.chunks.range(..=va).next_back().map(|(&s, c)| (s, *c));
        if let Some((s, c)) = prev {
            if va < c.end {
                sp.mru = (s, c.end, c.sim.wrapping_sub(s));
                return va.wrapping_add(sp.mru.2);
            }
        }
        let lo = prev.map_or(0, |(_, c)| c.end);
        let hi = sp.chunks.range(va..).next().map_or(u64::MAX, |(&s, _)| s);
        sp.mru = (lo, hi, 0);
        va
    }

    /// Split a trace range into (trace_start, trace_end, sim_start, pool) pieces inside chunks
    /// and identity pieces (pool None).
    fn reloc_pieces(&self, start: u64, end: u64) -> Vec<(u64, u64, u64, Option<PoolKind>)> {
        let sp = &self.spaces[self.cur];
        let mut out = Vec::new();
        let mut at = start;
        let first = sp.chunks.range(..=start).next_back().map(|(&s, _)| s).unwrap_or(start);
        for (&s, c) in sp.chunks.range(first..) {
            if s >= end {
                break;
            }
            if c.end <= at {
                continue;
            }
            if s > at {
                out.push((at, s, at, None));
                at = s;
            }
            let e = c.end.min(end);
            out.push((at, e, c.sim + (at - s), Some(c.pool)));
            at = e;
        }
        if at < end {
            out.push((at, end, at, None));
        }
        out
    }

    /// Remove [start, end) of the trace address space from the chunks, releasing pool offsets.
    fn unchunk(&mut self, start: u64, end: u64) {
        let pool_base = self.pool_base;
        let sp = &mut self.spaces[self.cur];
        sp.mru = (0, 0, 0);
        let keys: Vec<u64> = sp.chunks.range(..end).filter(|(_, c)| c.end > start).map(|(&s, _)| s).collect();
        for s in keys {
            let c = sp.chunks.remove(&s).expect("listed");
            let (cs, ce) = (s.max(start), c.end.min(end));
            let base = pool_base[c.pool as usize];
            let off = c.sim - base + (cs - s);
            match c.pool {
                PoolKind::Anon => sp.anon_pool.release(off, off + (ce - cs)),
                PoolKind::File => sp.file_pool.release(off, off + (ce - cs)),
                PoolKind::Heap => {}
            }
            if s < cs {
                sp.chunks.insert(s, Chunk { end: cs, ..c });
            }
            if ce < c.end {
                sp.chunks.insert(ce, Chunk { end: c.end, sim: c.sim + (ce - s), pool: c.pool });
            }
        }
    }

    // ------------------------------------------------------------------ VMAs

    fn vma_at(&self, va: u64) -> Option<Vma> {
        let sp = &self.spaces[self.cur];
        sp.vmas.range(..=va).next_back().map(|(_, v)| *v).filter(|v| va < v.end)
    }

    /// Split the VMA containing `at` (strictly inside) into two.
    fn split_vma(&mut self, at: u64) {
        let sp = &mut self.spaces[self.cur];
        if let Some((&s, v)) = sp.vmas.range_mut(..at).next_back() {
            if at < v.end && s < at {
                let tail = Vma { start: at, ..*v };
                v.end = at;
                sp.vmas.insert(at, tail);
            }
        }
    }

    fn insert_vma(&mut self, start: u64, end: u64, kind: VmaKind) {
        self.stats.vmas_created += 1;
        let sp = &mut self.spaces[self.cur];
        let mut v = Vma { start, end, kind, thp_advised: false, thp_disabled: false };
        // Merge with an adjacent anonymous VMA of the same kind and advice (Linux's vma_merge).
        if matches!(kind, VmaKind::Anon | VmaKind::Heap) {
            if let Some((&ps, p)) = sp.vmas.range(..start).next_back() {
                if p.end == start && p.kind == kind && !p.thp_advised && !p.thp_disabled {
                    v.start = ps;
                    sp.vmas.remove(&ps);
                }
            }
            if let Some(n) = sp.vmas.get(&end).copied() {
                if n.kind == kind && !n.thp_advised && !n.thp_disabled {
                    v.end = n.end;
                    sp.vmas.remove(&end);
                }
            }
        }
        sp.vmas.insert(v.start, v);
    }

    /// VMAs overlapping [start, end) after splitting at both ends.
    fn isolate(&mut self, start: u64, end: u64) -> Vec<u64> {
        self.split_vma(start);
        self.split_vma(end);
        let sp = &self.spaces[self.cur];
        sp.vmas.range(start..end).map(|(&s, _)| s).collect()
    }

    /// Split huge pages that straddle `at` into 4KB pages (Linux splits THPs on partial unmap).
    fn split_huge_at(&mut self, at: u64) -> Result<(), SimError> {
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
        self.inval.push(Invalidation::Range { asid: self.asid(), start: base, end: base + size.bytes() });
        for i in 0..size.bytes() / PAGE {
            self.map_page(base + i * PAGE, PageSize::Size4K, pfn + i)?;
        }
        Ok(())
    }

    fn map_page(&mut self, va: u64, size: PageSize, pfn: u64) -> Result<(), SimError> {
        let root = self.root();
        let levels = self.levels;
        let buddy = &mut self.buddy;
        let mut created = 0u64;
        let r = self.pt.map(root, levels, va, size, pfn, &mut || {
            let p = buddy.alloc(0);
            created += p.is_some() as u64;
            p
        });
        self.stats.frames_in_use += created;
        self.stats.page_table_pages += created;
        r.map(|_| ()).map_err(|_| SimError::OutOfMemory(self.mem_mib, va))
    }

    /// Free the pages of [start, end) (after splitting huge pages at the ends); queue the
    /// invalidation. `only_4k` keeps huge pages (mosaic pools: hugetlb windows stay mapped).
    fn release(&mut self, start: u64, end: u64, only_4k: bool) -> Result<(), SimError> {
        if start >= end {
            return Ok(());
        }
        let root = self.root();
        if !only_4k {
            self.split_huge_at(start)?;
            self.split_huge_at(end)?;
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
        self.inval.push(Invalidation::Range { asid: self.asid(), start, end });
        Ok(())
    }

    /// munmap of simulated [start, end): VMAs removed, pages freed.
    fn unmap_sim(&mut self, start: u64, end: u64) -> Result<(), SimError> {
        let ids = self.isolate(start, end);
        self.release(start, end, false)?;
        let sp = &mut self.spaces[self.cur];
        for s in ids {
            sp.vmas.remove(&s);
        }
        Ok(())
    }

    // ------------------------------------------------------------------ faults

    /// Handle a page fault at simulated address `va`: find (or infer) the VMA, choose the page
    /// size, allocate and map.
    pub fn fault(&mut self, va: u64, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        let r = self.fault_page(va);
        inv.append(&mut self.inval);
        r
    }

    fn fault_page(&mut self, va: u64) -> Result<(), SimError> {
        self.stats.page_faults += 1;
        let vma = match self.vma_at(va) {
            Some(v) => v,
            None => self.infer_vma(va),
        };
        let want = match vma.kind {
            VmaKind::Hugetlb(s) => s,
            _ => self.policy.page_size(&vma, va, self.layout.as_ref()),
        };
        let root = self.root();
        let mut size = want;
        loop {
            if size == PageSize::Size4K {
                let pfn = self.alloc_frames(0, va)?;
                self.map_page(page_down(va), size, pfn)?;
                self.stats.faults_4k += 1;
                break;
            }
            let base = va & !(size.bytes() - 1);
            let fits = base >= vma.start
                && base + size.bytes() <= vma.end
                && !self.pt.region_used(root, self.levels, base, size);
            if fits {
                if let Some(pfn) = self.buddy.alloc(9 * size as u32) {
                    self.stats.frames_in_use += 1 << (9 * size as u32);
                    self.map_page(base, size, pfn)?;
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
        Ok(())
    }

    fn infer_vma(&mut self, va: u64) -> Vma {
        self.stats.inferred_vmas += 1;
        let sp = &self.spaces[self.cur];
        let lo = va & !((2 << 20) - 1);
        let hi = lo + (2 << 20);
        let prev_end = sp.vmas.range(..=va).next_back().map_or(0, |(_, v)| v.end);
        let next_start = sp.vmas.range(va..).next().map_or(u64::MAX, |(&s, _)| s);
        let (s, e) = (lo.max(prev_end), hi.min(next_start));
        self.insert_vma(s, e, VmaKind::Inferred);
        self.stats.vmas_created -= 1;
        self.vma_at(va).expect("just inserted")
    }

    // ------------------------------------------------------------------ syscalls

    /// Apply one syscall of the current address space.
    pub fn syscall(&mut self, s: &Syscall, inv: &mut Vec<Invalidation>) -> Result<(), SimError> {
        let r = self.syscall_any(s);
        inv.append(&mut self.inval);
        r
    }

    fn syscall_any(&mut self, s: &Syscall) -> Result<(), SimError> {
        self.stats.syscalls += 1;
        let a = s.args;
        let failed = s.ret < 0 && s.ret > -4096;
        if self.mosaic && !self.reloc {
            if let Some(r) = self.syscall_pools_at(s, failed) {
                return r;
            }
        }
        match s.kind {
            SyscallKind::Mmap if !failed => {
                self.stats.mmaps += 1;
                self.mmap(s.ret as u64, a[1], a[3])
            }
            SyscallKind::Munmap if s.ret == 0 => {
                self.stats.munmaps += 1;
                self.munmap(a[0], page_up(a[0].saturating_add(a[1])))
            }
            SyscallKind::Brk => {
                self.stats.brks += 1;
                self.brk(s.ret as u64)
            }
            SyscallKind::Mremap if !failed => {
                self.stats.mremaps += 1;
                self.mremap(a[0], a[1], a[2], s.ret as u64)
            }
            SyscallKind::Madvise if s.ret == 0 => {
                self.stats.madvises += 1;
                self.madvise(a[0], page_up(a[0].saturating_add(a[1])), a[2])
            }
            SyscallKind::Shmat if !failed => self.mmap(s.ret as u64, a[3], MAP_SHARED),
            SyscallKind::Shmdt if s.ret == 0 => {
                let start = a[0];
                let end = self.vma_at(start).map_or(start, |v| v.end);
                self.munmap(start, end)
            }
            SyscallKind::Exit => Ok(()),
            _ => {
                self.stats.failed_syscalls += 1;
                Ok(())
            }
        }
    }

    /// `os.pools_at`: the trace was recorded under the mosaic allocator, so the pools are at
    /// their trace addresses and the program's own mappings never reach the kernel. Syscalls
    /// on pool memory are the allocator's: mapping over it or returning it (munmap, DONTNEED)
    /// frees its 4KB pages (huge pages stay, as in the allocator); other advice on pool memory
    /// changes nothing (the allocator ignores THP advice there); the rest is handled as usual.
    /// Returns None for the syscalls it leaves to the usual handling (brk, shm, failures).
    fn syscall_pools_at(&mut self, s: &Syscall, failed: bool) -> Option<Result<(), SimError>> {
        let a = s.args;
        let (start, end) = match s.kind {
            SyscallKind::Mmap if !failed => {
                self.stats.mmaps += 1;
                (s.ret as u64, page_up((s.ret as u64).saturating_add(a[1])))
            }
            SyscallKind::Munmap if s.ret == 0 => {
                self.stats.munmaps += 1;
                (a[0], page_up(a[0].saturating_add(a[1])))
            }
            SyscallKind::Madvise if s.ret == 0 => {
                self.stats.madvises += 1;
                (a[0], page_up(a[0].saturating_add(a[1])))
            }
            SyscallKind::Mremap if !failed => {
                // Only the allocator's own (trimming) mremaps can reach the kernel; model the
                // parts outside pools and return pool parts.
                self.stats.mremaps += 1;
                let old = page_down(a[0]);
                let (old_end, ret) = (page_up(old + a[1]), s.ret as u64);
                let new_end = page_up(ret + a[2]);
                let inside = |o: &Os, x: u64, y: u64| o.pool_pieces(x, y).iter().any(|p| p.2);
                if !inside(self, old, old_end) && !inside(self, ret, new_end) {
                    return Some(self.mremap(a[0], a[1], a[2], ret));
                }
                let r = self.pools_at_op(old, old_end, |o, s, e| o.munmap(s, e));
                return Some(r.and_then(|_| self.pools_at_op(ret, new_end, |o, s, e| o.mmap(s, e - s, MAP_ANONYMOUS))));
            }
            _ => return None,
        };
        let start = page_down(start);
        Some(match s.kind {
            SyscallKind::Mmap => self.pools_at_op(start, end, |o, s, e| o.mmap(s, e - s, a[3])),
            SyscallKind::Munmap => self.pools_at_op(start, end, |o, s, e| o.munmap(s, e)),
            // Only returning memory frees pool pages; THP advice there is the program's, and the
            // allocator ignores it (the layout decides).
            _ if matches!(a[2], MADV_DONTNEED | MADV_FREE | MADV_REMOVE) => {
                self.pools_at_op(start, end, |o, s, e| o.madvise(s, e, a[2]))
            }
            _ => self
                .pool_pieces(start, end)
                .into_iter()
                .filter(|p| !p.2)
                .try_for_each(|(s, e, _)| self.madvise(s, e, a[2])),
        })
    }

    /// Apply `outside` to the parts of [start, end) outside every pool; free the 4KB pages of
    /// the parts inside.
    fn pools_at_op(
        &mut self,
        start: u64,
        end: u64,
        outside: impl Fn(&mut Os, u64, u64) -> Result<(), SimError>,
    ) -> Result<(), SimError> {
        for (s, e, in_pool) in self.pool_pieces(start, end) {
            if in_pool {
                self.release(s, e, true)?;
            } else {
                outside(self, s, e)?;
            }
        }
        Ok(())
    }

    /// [start, end) cut at pool boundaries: (start, end, inside a pool).
    fn pool_pieces(&self, start: u64, end: u64) -> Vec<(u64, u64, bool)> {
        let l = self.layout.as_ref().expect("mosaic has a layout");
        let sizes = [l.heap_size(), l.anon_size(), l.file_size()];
        let mut cuts: Vec<(u64, u64)> = (0..3)
            .map(|i| (self.pool_base[i], self.pool_base[i] + sizes[i]))
            .filter(|&(s, e)| s < end && start < e)
            .map(|(s, e)| (s.max(start), e.min(end)))
            .collect();
        cuts.sort_unstable();
        let mut out = Vec::new();
        let mut at = start;
        for (s, e) in cuts {
            if s > at {
                out.push((at, s, false));
            }
            out.push((s, e, true));
            at = e;
        }
        if at < end {
            out.push((at, end, false));
        }
        out
    }

    fn mmap(&mut self, addr: u64, len: u64, flags: u64) -> Result<(), SimError> {
        let huge = if flags & MAP_HUGETLB != 0 {
            Some(if (flags >> 26) & 0x3f == 30 { PageSize::Size1G } else { PageSize::Size2M })
        } else {
            None
        };
        let unit = huge.map_or(PAGE, |h| h.bytes());
        let end = addr.saturating_add(len).saturating_add(unit - 1) & !(unit - 1);
        // A mapping replaces whatever was there (MAP_FIXED, or a range reused after munmap).
        if flags & MAP_FIXED != 0 || self.vma_at(addr).is_some() {
            self.munmap(addr, end)?;
        }
        let anon = flags & MAP_ANONYMOUS != 0 && flags & MAP_SHARED == 0;
        let kind = match huge {
            Some(h) => VmaKind::Hugetlb(h),
            None if anon => VmaKind::Anon,
            None => VmaKind::File,
        };
        if self.reloc && huge.is_none() {
            let pool = if anon { PoolKind::Anon } else { PoolKind::File };
            let base = self.pool_base[pool as usize];
            let sp = &mut self.spaces[self.cur];
            let ff = if anon { &mut sp.anon_pool } else { &mut sp.file_pool };
            if let Some(off) = ff.alloc(end - addr) {
                sp.chunks.insert(addr, Chunk { end, sim: base + off, pool });
                sp.mru = (0, 0, 0);
                return Ok(());
            }
            self.stats.pool_overflows += 1;
        }
        self.insert_vma(addr, end, kind);
        // Eager allocation (a later policy) populates the mapping now; demand paging does not.
        if self.timing.populate_on_map(kind, end - addr) {
            let mut va = addr;
            while va < end {
                if self.lookup(va).is_none() {
                    self.fault_page(va)?;
                }
                va += PAGE;
            }
        }
        Ok(())
    }

    fn munmap(&mut self, start: u64, end: u64) -> Result<(), SimError> {
        let start = page_down(start);
        if !self.reloc {
            return self.unmap_sim(start, end);
        }
        for (s, e, sim, pool) in self.reloc_pieces(start, end) {
            match pool {
                // Returned to the pool: 4KB pages are DONTNEED'ed, huge pages stay (the
                // allocator zeroes them in place).
                Some(PoolKind::Heap) | Some(PoolKind::Anon) | Some(PoolKind::File) => {
                    self.release(sim, sim + (e - s), true)?;
                }
                None => self.unmap_sim(s, e)?,
            }
        }
        self.unchunk(start, end);
        Ok(())
    }

    fn brk(&mut self, new: u64) -> Result<(), SimError> {
        let heap_base = self.pool_base[PoolKind::Heap as usize];
        let sp = &mut self.spaces[self.cur];
        let Some(initial) = sp.initial_brk else {
            sp.initial_brk = Some(new);
            sp.brk = new;
            if self.reloc {
                let size = self.layout.as_ref().map_or(0, |l| l.heap_size());
                let s = page_down(new);
                sp.chunks.insert(s, Chunk { end: s + size, sim: heap_base, pool: PoolKind::Heap });
                sp.mru = (0, 0, 0);
            }
            return Ok(());
        };
        let old = sp.brk;
        sp.brk = new;
        if self.reloc {
            // The heap pool is reserved whole; the break only moves a pointer inside it.
            return Ok(());
        }
        let (h0, old_top, new_top) = (page_down(initial), page_up(old), page_up(new));
        if new_top > old_top {
            let start = old_top.max(h0);
            let sp = &mut self.spaces[self.cur];
            match sp.vmas.range(..start).next_back() {
                Some((_, v)) if v.end == start && v.kind == VmaKind::Heap => {
                    let s = v.start;
                    sp.vmas.get_mut(&s).expect("exists").end = new_top;
                }
                _ => self.insert_vma(start, new_top, VmaKind::Heap),
            }
        } else if new_top < old_top {
            self.unmap_sim(new_top.max(h0), old_top)?;
        }
        Ok(())
    }

    fn mremap(&mut self, old: u64, old_len: u64, new_len: u64, ret: u64) -> Result<(), SimError> {
        let old = page_down(old);
        let (old_end, new_end) = (page_up(old + old_len), page_up(ret + new_len));
        if self.reloc {
            // The allocator serves mremap by allocate + copy + free; the copy is not in the
            // trace, so the new range starts unpopulated (documented approximation).
            let kind = self.vma_at(old).map(|v| v.kind);
            let pieces = self.reloc_pieces(old, old_end);
            let anon = pieces.iter().any(|p| p.3 == Some(PoolKind::Anon) || p.3 == Some(PoolKind::Heap))
                || matches!(kind, Some(VmaKind::Anon | VmaKind::Heap | VmaKind::Inferred));
            self.munmap(old, old_end)?;
            let flags = if anon { MAP_ANONYMOUS } else { 0 };
            return self.mmap(ret, new_end - ret, flags);
        }
        let Some(v) = self.vma_at(old) else {
            self.stats.failed_syscalls += 1;
            return Ok(());
        };
        if ret == old {
            if new_end > old_end {
                self.isolate(old, old_end);
                let sp = &mut self.spaces[self.cur];
                let s = sp.vmas.range(..old_end).next_back().map(|(&s, _)| s).expect("isolated");
                sp.vmas.get_mut(&s).expect("exists").end = new_end;
            } else if new_end < old_end {
                self.unmap_sim(new_end, old_end)?;
            }
            return Ok(());
        }
        // Moved: the kernel moves the page-table entries; the frames stay.
        self.split_huge_at(old)?;
        self.split_huge_at(old_end)?;
        let root = self.root();
        let moved = self.pt.leaves(root, self.levels, old, old_end);
        self.pt.unmap_range(root, self.levels, old, old_end, &mut |_, _, _| {});
        self.inval.push(Invalidation::Range { asid: self.asid(), start: old, end: old_end });
        let ids = self.isolate(old, old_end);
        for s in ids {
            self.spaces[self.cur].vmas.remove(&s);
        }
        self.unmap_sim(ret, new_end)?;
        self.insert_vma(ret, new_end, v.kind);
        for (va, pfn, size) in moved {
            let nva = ret + (va - old);
            if nva >= new_end {
                self.free_frames(pfn, 9 * size as u32);
                continue;
            }
            if nva.is_multiple_of(size.bytes()) && nva + size.bytes() <= new_end {
                self.map_page(nva, size, pfn)?;
            } else {
                self.stats.huge_splits += 1;
                for i in 0..size.bytes() / PAGE {
                    self.map_page(nva + i * PAGE, PageSize::Size4K, pfn + i)?;
                }
            }
        }
        Ok(())
    }

    fn madvise(&mut self, start: u64, end: u64, advice: u64) -> Result<(), SimError> {
        let start = page_down(start);
        let pieces = if self.reloc { self.reloc_pieces(start, end) } else { vec![(start, end, start, None)] };
        for (s, e, sim, pool) in pieces {
            let (ss, se) = (sim, sim + (e - s));
            match advice {
                MADV_DONTNEED | MADV_FREE | MADV_REMOVE => self.release(ss, se, pool.is_some())?,
                MADV_HUGEPAGE | MADV_NOHUGEPAGE if pool.is_none() => {
                    for id in self.isolate(ss, se) {
                        let v = self.spaces[self.cur].vmas.get_mut(&id).expect("isolated");
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
        }
        Ok(())
    }

    /// VMAs of the current address space (for tests and reports).
    pub fn vmas(&self) -> Vec<Vma> {
        self.spaces[self.cur].vmas.values().copied().collect()
    }

    /// The page tables (read-only: for walkers).
    #[inline(always)]
    pub fn tables(&self) -> &PageTables {
        &self.pt
    }

    /// The translation of `va` in the current space, through the region memo (the walkers'
    /// software lookup).
    #[inline(always)]
    pub fn translate(&mut self, va: u64) -> Option<(u64, PageSize)> {
        let root = self.root();
        self.pt.lookup_memo(root, self.levels, va)
    }

    /// Relocate a run of trace addresses (no side event among them) into `out`.
    pub fn relocate_run(&mut self, addrs: &[u64], out: &mut Vec<u64>) {
        out.clear();
        out.extend(addrs.iter().map(|&a| self.relocate(a)));
    }

    /// The range translation of the current space covering `va` (none: no range policy yet).
    pub fn range_of(&self, _va: u64) -> Option<crate::mmu::RangeEntry> {
        None
    }

    /// Software lookup of the current space's mapping of simulated `va`.
    pub fn lookup(&self, va: u64) -> Option<(u64, PageSize)> {
        self.pt.lookup(self.root(), self.levels, va)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(policy: &str, layout: Option<&str>) -> Os {
        let p = if policy == "mosaic" { "4k" } else { policy };
        let text = format!(
            "name = \"t\"\n[os]\npolicy = \"{p}\"\n[memory]\nsize = \"4GiB\"\n[[tlb]]\nname = \"l1\"\nlevel = 1\nrole = \"data\"\nentries = 4\nways = 4\npage_sizes = [\"4KB\"]\n"
        );
        let mut cfg = Config::from_toml("t", &text, &[]).unwrap();
        cfg.layout = layout.map(|l| Layout::from_toml("l", l).unwrap());
        if policy == "mosaic" {
            cfg.os.policy = Policy::Mosaic;
        }
        Os::new(&cfg).unwrap()
    }

    fn sys(kind: SyscallKind, a: &[u64], ret: i64) -> Syscall {
        let mut args = [0; 6];
        args[..a.len()].copy_from_slice(a);
        Syscall { kind, args, ret }
    }

    #[test]
    fn thp_backs_aligned_regions_inside_one_vma() {
        let mut o = os("thp", None);
        // 5MB anonymous mapping at 1MB past a 2MB boundary: [0x7000_0010_0000, +5MB).
        let a = 0x7000_0010_0000u64;
        o.syscall_any(&sys(SyscallKind::Mmap, &[0, 5 << 20, 3, 0x22, u64::MAX, 0], a as i64)).unwrap();
        o.fault_page(a).unwrap(); // head: 2MB region sticks out of the VMA -> 4KB
        o.fault_page(a + (1 << 20)).unwrap(); // [0x..20_0000, 0x..40_0000) fully inside -> 2MB
        assert_eq!(o.lookup(a), Some((o.lookup(a).unwrap().0, PageSize::Size4K)));
        assert_eq!(o.lookup(a + (2 << 20)).unwrap().1, PageSize::Size2M);
        assert_eq!((o.stats.faults_4k, o.stats.faults_2m, o.stats.huge_fallbacks), (1, 1, 1));
        // munmap of 4KB inside the 2MB page splits it and frees one frame.
        let (before, tables) = (o.stats.frames_in_use, o.stats.page_table_pages);
        o.syscall_any(&sys(SyscallKind::Munmap, &[a + (2 << 20), 4096], 0)).unwrap();
        assert_eq!(o.stats.huge_splits, 1);
        // One frame freed, one page-table page allocated for the 511 remaining 4KB pages.
        assert_eq!(o.stats.page_table_pages, tables + 1);
        assert_eq!(o.stats.frames_in_use, before);
        assert_eq!(o.lookup(a + (2 << 20) + 4096).unwrap().1, PageSize::Size4K);
        assert_eq!(o.lookup(a + (2 << 20)), None);
    }

    #[test]
    fn allocation_timing_seam_can_populate_eagerly() {
        struct Eager;
        impl AllocationTiming for Eager {
            fn name(&self) -> &'static str {
                "eager"
            }
            fn populate_on_map(&self, _: VmaKind, _: u64) -> bool {
                true
            }
        }
        let mut o = os("4k", None);
        o.timing = Box::new(Eager);
        let a = 0x7000_0000_0000u64;
        o.syscall_any(&sys(SyscallKind::Mmap, &[0, 3 * 4096, 3, 0x22, u64::MAX, 0], a as i64)).unwrap();
        assert_eq!(o.stats.page_faults, 3);
        assert!(o.lookup(a + 2 * 4096).is_some());
    }

    #[test]
    fn brk_grows_and_shrinks_the_heap_vma() {
        let mut o = os("4k", None);
        o.syscall_any(&sys(SyscallKind::Brk, &[0], 0x5555_0000_0000)).unwrap();
        o.syscall_any(&sys(SyscallKind::Brk, &[0x5555_0002_1000], 0x5555_0002_1000)).unwrap();
        o.syscall_any(&sys(SyscallKind::Brk, &[0x5555_0004_0800], 0x5555_0004_0800)).unwrap();
        let v = o.vmas();
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].start, v[0].end, v[0].kind), (0x5555_0000_0000, 0x5555_0004_1000, VmaKind::Heap));
        o.fault_page(0x5555_0004_0000).unwrap();
        o.syscall_any(&sys(SyscallKind::Brk, &[0x5555_0001_0000], 0x5555_0001_0000)).unwrap();
        assert_eq!(o.vmas()[0].end, 0x5555_0001_0000);
        assert_eq!(o.lookup(0x5555_0004_0000), None);
        assert_eq!(
            o.inval.last(),
            Some(&Invalidation::Range { asid: 0, start: 0x5555_0001_0000, end: 0x5555_0004_1000 })
        );
    }

    #[test]
    fn mosaic_relocates_pools_and_honours_windows() {
        let layout = "version = 1\n[heap]\nsize = \"2GiB\"\nwindows = [ { offset = \"1GiB\", length = \"1GiB\", page = \"1GB\" } ]\n[anon]\nsize = \"1GiB\"\nwindows = [ { offset = \"2MiB\", length = \"4MiB\", page = \"2MB\" } ]\n";
        let mut o = os("mosaic", Some(layout));
        o.syscall_any(&sys(SyscallKind::Brk, &[0], 0x5555_5556_0000)).unwrap();
        assert_eq!(o.relocate(0x5555_5556_0010), HEAP_POOL_BASE + 0x10);
        let g = o.relocate(0x5555_5556_0000 + (1 << 30) + 5);
        o.fault_page(g).unwrap();
        assert_eq!(o.lookup(g).unwrap().1, PageSize::Size1G);
        // Two anonymous mappings: first fit gives offsets 0 and 3MiB.
        o.syscall_any(&sys(SyscallKind::Mmap, &[0, 3 << 20, 3, 0x22, u64::MAX, 0], 0x7f00_0000_0000)).unwrap();
        o.syscall_any(&sys(SyscallKind::Mmap, &[0, 8 << 20, 3, 0x22, u64::MAX, 0], 0x7e00_0000_0000)).unwrap();
        assert_eq!(o.relocate(0x7f00_0000_1000), ANON_POOL_BASE + 0x1000);
        assert_eq!(o.relocate(0x7e00_0000_0000), ANON_POOL_BASE + (3 << 20));
        let w = o.relocate(0x7f00_0000_0000 + (2 << 20)); // offset 2MiB: in the 2MB window
        o.fault_page(w).unwrap();
        assert_eq!(o.lookup(w).unwrap().1, PageSize::Size2M);
        let n = o.relocate(0x7e00_0000_0000 + (4 << 20)); // offset 7MiB: 4KB
        o.fault_page(n).unwrap();
        assert_eq!(o.lookup(n).unwrap().1, PageSize::Size4K);
        // Free the first mapping; a 1MiB mapping reuses offset 0.
        o.syscall_any(&sys(SyscallKind::Munmap, &[0x7f00_0000_0000, 3 << 20], 0)).unwrap();
        assert_eq!(o.lookup(w).unwrap().1, PageSize::Size2M, "huge pages stay in the pool");
        o.syscall_any(&sys(SyscallKind::Mmap, &[0, 1 << 20, 3, 0x22, u64::MAX, 0], 0x7d00_0000_0000)).unwrap();
        assert_eq!(o.relocate(0x7d00_0000_0000), ANON_POOL_BASE);
        assert_eq!(o.relocate(0x7f00_0000_0000), 0x7f00_0000_0000, "unmapped: identity");
    }

    #[test]
    fn mosaic_pools_at_trace_addresses() {
        // A trace recorded under the allocator: the pools are where it put them; nothing moves.
        let layout = "version = 1\n[heap]\nsize = \"2GiB\"\nwindows = [ { offset = \"4MiB\", length = \"4MiB\", page = \"2MB\" }, { offset = \"1GiB\", length = \"1GiB\", page = \"1GB\" } ]\n[anon]\nsize = \"1GiB\"\n[file]\nsize = \"1GiB\"\n";
        let text = "name = \"t\"\n[memory]\nsize = \"8GiB\"\n[[tlb]]\nname = \"l1\"\nlevel = 1\nrole = \"data\"\nentries = 4\nways = 4\npage_sizes = [\"4KB\"]\n";
        let (heap, anon, file) = (0x40_0000_0000u64, 0x48_0000_0000u64, 0x50_0000_0000u64);
        let sets = [
            format!("os.pools_at.heap={heap}"),
            format!("os.pools_at.anon={anon}"),
            format!("os.pools_at.file={file}"),
        ];
        let cfg = Config::build("t", text, &sets, Some(Layout::from_toml("l", layout).unwrap())).unwrap();
        let mut o = Os::new(&cfg).unwrap();
        // The allocator's reservation of the heap pool: 1GiB of slack, then the slack trimmed.
        o.syscall_any(&sys(SyscallKind::Mmap, &[0, 3 << 30, 0, 0x4022, u64::MAX, 0], (heap - (1 << 29)) as i64))
            .unwrap();
        o.syscall_any(&sys(SyscallKind::Munmap, &[heap - (1 << 29), 1 << 29], 0)).unwrap();
        o.syscall_any(&sys(SyscallKind::Brk, &[0], 0x5555_5556_0000)).unwrap();
        assert_eq!(o.relocate(heap + 0x10), heap + 0x10, "no relocation");
        for (va, want) in [
            (heap + 0x1000, PageSize::Size4K),
            (heap + (5 << 20), PageSize::Size2M),
            (heap + (8 << 20), PageSize::Size4K),
            (heap + (1 << 30) + 77, PageSize::Size1G),
            (anon + (4 << 20), PageSize::Size4K),
            (0x5555_5556_0000, PageSize::Size4K),
        ] {
            o.fault_page(va).unwrap();
            assert_eq!(o.lookup(va).unwrap().1, want, "{va:#x}");
        }
        assert!(o.vmas().iter().any(|v| v.start == heap && v.end == heap + (2 << 30)), "the heap pool VMA is whole");
        // THP advice on pool memory (older allocators passed NumPy's through) frees nothing.
        o.syscall_any(&sys(SyscallKind::Madvise, &[heap, 16 << 20, 14], 0)).unwrap();
        assert_eq!(o.lookup(heap + 0x1000).unwrap().1, PageSize::Size4K);
        // The allocator returns heap memory (DONTNEED): 4KB pages go, huge pages and the pool stay.
        o.syscall_any(&sys(SyscallKind::Madvise, &[heap, 16 << 20, 4], 0)).unwrap();
        assert_eq!(o.lookup(heap + 0x1000), None);
        assert_eq!(o.lookup(heap + (5 << 20)).unwrap().1, PageSize::Size2M);
        // A file mapped into the file pool (MAP_FIXED) keeps the pool VMA.
        o.syscall_any(&sys(SyscallKind::Mmap, &[file, 1 << 20, 1, 0x12, 3, 0], file as i64)).unwrap();
        o.fault_page(file + 4096).unwrap();
        assert!(o.vmas().iter().any(|v| v.start == file && v.end == file + (1 << 30)));
        assert_eq!(o.stats.pool_overflows, 0);
        // Outside the pools, mappings behave as without a layout.
        o.syscall_any(&sys(SyscallKind::Mmap, &[0, 1 << 20, 3, 0x22, u64::MAX, 0], 0x7f00_0000_0000)).unwrap();
        o.fault_page(0x7f00_0000_1000).unwrap();
        o.syscall_any(&sys(SyscallKind::Munmap, &[0x7f00_0000_0000, 1 << 20], 0)).unwrap();
        assert_eq!(o.lookup(0x7f00_0000_1000), None);
    }

    #[test]
    fn pools_at_is_checked() {
        let text = "name = \"t\"\n[[tlb]]\nname = \"l1\"\nlevel = 1\nrole = \"data\"\nentries = 4\nways = 4\npage_sizes = [\"4KB\"]\n";
        let lay = Layout::from_toml("l", "version = 1\n[heap]\nsize = \"2GiB\"\n").unwrap();
        let g = 1u64 << 30;
        for (sets, want) in [
            (
                vec![
                    format!("os.pools_at.heap={}", g + 4096),
                    format!("os.pools_at.anon={}", 64 * g),
                    format!("os.pools_at.file={}", 128 * g),
                ],
                "os.pools_at.heap = 0x40001000 is not a nonzero multiple of 1GiB",
            ),
            (
                vec![
                    format!("os.pools_at.heap={g}"),
                    format!("os.pools_at.anon={}", 2 * g),
                    format!("os.pools_at.file={}", 128 * g),
                ],
                "the heap pool (0x40000000 + 2147483648 bytes) overlaps the anon pool",
            ),
            (vec![format!("os.pools_at.heap={g}")], "missing field `anon`"),
        ] {
            let e = Config::build("t", text, &sets, Some(lay.clone())).unwrap_err().0;
            assert!(e.contains(want), "{e}");
        }
        let sets = [
            format!("os.pools_at.heap={g}"),
            format!("os.pools_at.anon={}", 64 * g),
            format!("os.pools_at.file={}", 128 * g),
        ];
        let e = Config::from_toml("t", text, &sets).unwrap_err().0;
        assert!(e.contains("os.pools_at only applies to os.policy = \"mosaic\""), "{e}");
    }

    #[test]
    fn hugetlb_mremap_and_dontneed() {
        let mut o = os("4k", None);
        let h = 0x7000_0000_0000u64;
        // MAP_HUGETLB | MAP_HUGE_1GB
        o.syscall_any(&sys(SyscallKind::Mmap, &[0, 1 << 30, 3, 0x22 | 0x40000 | (30 << 26), u64::MAX, 0], h as i64))
            .unwrap();
        o.fault_page(h + 12345).unwrap();
        assert_eq!(o.lookup(h).unwrap().1, PageSize::Size1G);
        let a = 0x7100_0000_0000u64;
        o.syscall_any(&sys(SyscallKind::Mmap, &[0, 1 << 20, 3, 0x22, u64::MAX, 0], a as i64)).unwrap();
        o.fault_page(a).unwrap();
        let pfn = o.lookup(a).unwrap().0;
        o.syscall_any(&sys(SyscallKind::Mremap, &[a, 1 << 20, 2 << 20, 1, 0], 0x7200_0000_0000)).unwrap();
        assert_eq!(o.lookup(a), None);
        assert_eq!(o.lookup(0x7200_0000_0000), Some((pfn, PageSize::Size4K)), "frames move with the mapping");
        o.syscall_any(&sys(SyscallKind::Madvise, &[0x7200_0000_0000, 4096, 4], 0)).unwrap();
        assert_eq!(o.lookup(0x7200_0000_0000), None);
    }
}
