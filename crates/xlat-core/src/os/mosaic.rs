//! Mosaic layouts: the pools of the mosaic allocator, in one module with one interface.
//!
//! Under the allocator, a program's heap, anonymous and file mappings come from three pools
//! (`docs/os-model.md`). Either the simulator places the pools and **relocates** trace
//! addresses into them (the heap from the first `brk` result on, anonymous and file mappings
//! first-fit in trace order), or the trace was recorded under the allocator and the pools are
//! at their traced addresses (`os.pools_at`). Either way, [`Mosaic::syscall`] turns a trace
//! syscall into operations on the simulated address space ([`SpaceOps`]: map a VMA, unmap,
//! release 4KB pages only, advise, or nothing) and [`Mosaic::relocate`] /
//! [`Mosaic::relocate_run`] turn trace addresses into simulated ones. The kernel's syscall
//! handlers know nothing of mosaic.

use super::types::{
    page_down, page_up, Invalidation, PoolKind, SimError, SpaceOps, Vma, VmaKind, MADV_DONTNEED, MADV_FREE,
    MADV_REMOVE, MAP_ANONYMOUS, MAP_FIXED, MAP_HUGETLB, MAP_SHARED, PAGE,
};
use crate::config::layout::Layout;
use crate::config::PoolsAt;
use crate::units::PageSize;
use std::collections::BTreeMap;
use xlat_trace::{Syscall, SyscallKind};

/// Where the mosaic pools are placed in the simulated address space: 1GiB-aligned, as the real
/// allocator places them, far from where Linux puts brk (0x55..) and mmap (0x7f..) regions.
pub const HEAP_POOL_BASE: u64 = 0x1000_0000_0000;
pub const ANON_POOL_BASE: u64 = 0x2000_0000_0000;
pub const FILE_POOL_BASE: u64 = 0x3000_0000_0000;
/// Largest pool the simulator places: the layout format's limit, which the three layout parsers
/// enforce (`config::layout::MAX_POOL_SIZE`); the pools are that far apart.
pub const MAX_POOL: u64 = crate::config::layout::MAX_POOL_SIZE;
const _: () = assert!(ANON_POOL_BASE - HEAP_POOL_BASE >= MAX_POOL && FILE_POOL_BASE - ANON_POOL_BASE >= MAX_POOL);

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

/// An operation on a range [start, end) of the simulated address space.
type RangeOp<'a> = dyn FnMut(&mut dyn SpaceOps, u64, u64, &mut Vec<Invalidation>) -> Result<(), SimError> + 'a;

/// A relocated range of trace addresses: trace [start, end) -> sim [sim, ...).
#[derive(Debug, Clone, Copy)]
struct Chunk {
    end: u64,
    sim: u64,
    pool: PoolKind,
}

/// The relocation state of one address space.
#[derive(Debug, Clone)]
struct Space {
    heap_placed: bool,
    chunks: BTreeMap<u64, Chunk>,
    /// Most recently used relocation: trace [lo, hi) -> + delta (wrapping).
    mru: (u64, u64, u64),
    anon_pool: FirstFit,
    file_pool: FirstFit,
}

/// The mosaic pools of every address space.
#[derive(Debug, Clone)]
pub struct Mosaic {
    /// Pool start addresses in the simulated address space, indexed by `PoolKind as usize`.
    base: [u64; 3],
    /// Pool sizes (the layout's), likewise.
    size: [u64; 3],
    /// The simulator places the pools and relocates (false: `os.pools_at`).
    reloc: bool,
    spaces: Vec<Space>,
    cur: usize,
    /// Mappings that did not fit their pool and kept their trace address (4KB pages).
    pool_overflows: u64,
}

impl Mosaic {
    /// The pools of `layout`, placed by the simulator or at `pools_at`.
    pub fn new(layout: &Layout, pools_at: Option<PoolsAt>) -> Result<Mosaic, SimError> {
        let size = [layout.heap_size(), layout.anon_size(), layout.file_size()];
        if size.iter().any(|&s| s > MAX_POOL) {
            return Err(SimError::Invalid(
                "the simulator places mosaic pools of at most 16TiB each; shrink the layout's pools".into(),
            ));
        }
        let base = pools_at.map_or([HEAP_POOL_BASE, ANON_POOL_BASE, FILE_POOL_BASE], |p| [p.heap, p.anon, p.file]);
        Ok(Mosaic { base, size, reloc: pools_at.is_none(), spaces: Vec::new(), cur: 0, pool_overflows: 0 })
    }

    /// Whether trace addresses are relocated (otherwise [`Mosaic::relocate`] is the identity).
    pub fn relocates(&self) -> bool {
        self.reloc
    }

    pub fn pool_overflows(&self) -> u64 {
        self.pool_overflows
    }

    /// The pool VMAs every address space starts with.
    pub fn pool_vmas(&self) -> [Vma; 3] {
        [PoolKind::Heap, PoolKind::Anon, PoolKind::File].map(|kind| {
            let (start, size) = (self.base[kind as usize], self.size[kind as usize]);
            Vma { start, end: start + size, kind: VmaKind::Pool(kind), thp_advised: false, thp_disabled: true }
        })
    }

    /// The kernel switched to its address space number `space` (a new one is the next number).
    pub fn switch_to(&mut self, space: usize) {
        if space == self.spaces.len() {
            self.spaces.push(Space {
                heap_placed: false,
                chunks: BTreeMap::new(),
                mru: (0, 0, 0),
                anon_pool: FirstFit::new(self.size[PoolKind::Anon as usize]),
                file_pool: FirstFit::new(self.size[PoolKind::File as usize]),
            });
        }
        self.cur = space;
    }

    // ------------------------------------------------------------------ relocation

    /// Trace address -> simulated address (identity outside the relocated pools).
    #[inline(always)]
    pub fn relocate(&mut self, va: u64) -> u64 {
        let sp = &mut self.spaces[self.cur];
        let (lo, hi, d) = sp.mru;
        if va.wrapping_sub(lo) < hi.wrapping_sub(lo) {
            return va.wrapping_add(d);
        }
        relocate_slow(sp, va)
    }

    /// Relocate a run of trace addresses that no side event separates into `out` (cleared
    /// first): `out[i] = relocate(trace_addrs[i])`.
    pub fn relocate_run(&mut self, trace_addrs: &[u64], out: &mut Vec<u64>) {
        out.clear();
        out.reserve(trace_addrs.len());
        let sp = &mut self.spaces[self.cur];
        let (mut lo, mut hi, mut d) = sp.mru;
        for &va in trace_addrs {
            if va.wrapping_sub(lo) < hi.wrapping_sub(lo) {
                out.push(va.wrapping_add(d));
            } else {
                out.push(relocate_slow(sp, va));
                (lo, hi, d) = sp.mru;
            }
        }
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
        let base = self.base;
        let sp = &mut self.spaces[self.cur];
        sp.mru = (0, 0, 0);
        let keys: Vec<u64> = sp.chunks.range(..end).filter(|(_, c)| c.end > start).map(|(&s, _)| s).collect();
        for s in keys {
            let c = sp.chunks.remove(&s).expect("listed");
            let (cs, ce) = (s.max(start), c.end.min(end));
            let off = c.sim - base[c.pool as usize] + (cs - s);
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

    // ------------------------------------------------------------------ syscalls

    /// Apply a successful syscall (already counted) of the current address space, as the
    /// operations `os` performs. None: not the pools' business; the kernel handles it as
    /// without a layout.
    pub fn syscall(
        &mut self,
        s: &Syscall,
        os: &mut dyn SpaceOps,
        inv: &mut Vec<Invalidation>,
    ) -> Option<Result<(), SimError>> {
        if self.reloc {
            self.syscall_reloc(s, os, inv)
        } else {
            self.syscall_pools_at(s, os, inv)
        }
    }

    fn syscall_reloc(
        &mut self,
        s: &Syscall,
        os: &mut dyn SpaceOps,
        inv: &mut Vec<Invalidation>,
    ) -> Option<Result<(), SimError>> {
        let a = s.args;
        Some(match s.kind {
            SyscallKind::Mmap => self.mmap(os, s.ret as u64, a[1], a[3], inv),
            SyscallKind::Munmap => self.munmap(os, a[0], page_up(a[0].saturating_add(a[1])), inv),
            SyscallKind::Brk => {
                self.brk(s.ret as u64);
                Ok(())
            }
            SyscallKind::Mremap => self.mremap(os, a[0], a[1], a[2], s.ret as u64, inv),
            SyscallKind::Madvise => self.madvise(os, a[0], page_up(a[0].saturating_add(a[1])), a[2], inv),
            SyscallKind::Shmat => self.mmap(os, s.ret as u64, a[3], MAP_SHARED, inv),
            SyscallKind::Shmdt => {
                let start = a[0];
                let end = os.vma_at(start).map_or(start, |v| v.end);
                self.munmap(os, start, end, inv)
            }
            SyscallKind::Exit => return None,
        })
    }

    fn mmap(
        &mut self,
        os: &mut dyn SpaceOps,
        addr: u64,
        len: u64,
        flags: u64,
        inv: &mut Vec<Invalidation>,
    ) -> Result<(), SimError> {
        let huge = if flags & MAP_HUGETLB != 0 {
            Some(if (flags >> 26) & 0x3f == 30 { PageSize::Size1G } else { PageSize::Size2M })
        } else {
            None
        };
        let unit = huge.map_or(PAGE, |h| h.bytes());
        let end = addr.saturating_add(len).saturating_add(unit - 1) & !(unit - 1);
        // A mapping replaces whatever was there (MAP_FIXED, or a range reused after munmap).
        if flags & MAP_FIXED != 0 || os.vma_at(addr).is_some() {
            self.munmap(os, addr, end, inv)?;
        }
        let anon = flags & MAP_ANONYMOUS != 0 && flags & MAP_SHARED == 0;
        let kind = match huge {
            Some(h) => VmaKind::Hugetlb(h),
            None if anon => VmaKind::Anon,
            None => VmaKind::File,
        };
        if huge.is_none() {
            let pool = if anon { PoolKind::Anon } else { PoolKind::File };
            let base = self.base[pool as usize];
            let sp = &mut self.spaces[self.cur];
            let ff = if anon { &mut sp.anon_pool } else { &mut sp.file_pool };
            if let Some(off) = ff.alloc(end - addr) {
                sp.chunks.insert(addr, Chunk { end, sim: base + off, pool });
                sp.mru = (0, 0, 0);
                return Ok(());
            }
            self.pool_overflows += 1;
        }
        os.map(addr, end, kind, inv)
    }

    fn munmap(
        &mut self,
        os: &mut dyn SpaceOps,
        start: u64,
        end: u64,
        inv: &mut Vec<Invalidation>,
    ) -> Result<(), SimError> {
        let start = page_down(start);
        for (s, e, sim, pool) in self.reloc_pieces(start, end) {
            match pool {
                // Returned to the pool: 4KB pages are DONTNEED'ed, huge pages stay (the
                // allocator zeroes them in place).
                Some(_) => os.release_4k(sim, sim + (e - s), inv)?,
                None => os.munmap(s, e, inv)?,
            }
        }
        self.unchunk(start, end);
        Ok(())
    }

    /// The first `brk` result starts the heap pool; later ones only move a pointer in it (the
    /// pool is reserved whole).
    fn brk(&mut self, new: u64) {
        let (base, size) = (self.base[PoolKind::Heap as usize], self.size[PoolKind::Heap as usize]);
        let sp = &mut self.spaces[self.cur];
        if !sp.heap_placed {
            sp.heap_placed = true;
            let s = page_down(new);
            sp.chunks.insert(s, Chunk { end: s + size, sim: base, pool: PoolKind::Heap });
            sp.mru = (0, 0, 0);
        }
    }

    /// The allocator serves mremap by allocate + copy + free; the copy is not in the trace, so
    /// the new range starts unpopulated (documented approximation).
    fn mremap(
        &mut self,
        os: &mut dyn SpaceOps,
        old: u64,
        old_len: u64,
        new_len: u64,
        ret: u64,
        inv: &mut Vec<Invalidation>,
    ) -> Result<(), SimError> {
        let old = page_down(old);
        let (old_end, new_end) = (page_up(old + old_len), page_up(ret + new_len));
        let kind = os.vma_at(old).map(|v| v.kind);
        let pieces = self.reloc_pieces(old, old_end);
        let anon = pieces.iter().any(|p| p.3 == Some(PoolKind::Anon) || p.3 == Some(PoolKind::Heap))
            || matches!(kind, Some(VmaKind::Anon | VmaKind::Heap | VmaKind::Inferred));
        self.munmap(os, old, old_end, inv)?;
        let flags = if anon { MAP_ANONYMOUS } else { 0 };
        self.mmap(os, ret, new_end - ret, flags, inv)
    }

    fn madvise(
        &mut self,
        os: &mut dyn SpaceOps,
        start: u64,
        end: u64,
        advice: u64,
        inv: &mut Vec<Invalidation>,
    ) -> Result<(), SimError> {
        let start = page_down(start);
        for (s, e, sim, pool) in self.reloc_pieces(start, end) {
            match pool {
                None => os.madvise(s, e, advice, inv)?,
                Some(_) if matches!(advice, MADV_DONTNEED | MADV_FREE | MADV_REMOVE) => {
                    os.release_4k(sim, sim + (e - s), inv)?
                }
                // THP advice on pool memory changes nothing: the layout decides.
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// `os.pools_at`: the trace was recorded under the mosaic allocator, so the pools are at
    /// their trace addresses and the program's own mappings never reach the kernel. Syscalls
    /// on pool memory are the allocator's: mapping over it or returning it (munmap, DONTNEED)
    /// frees its 4KB pages (huge pages stay, as in the allocator); other advice on pool memory
    /// changes nothing (the allocator ignores THP advice there); the rest is handled as usual.
    /// Returns None for the syscalls it leaves to the usual handling (brk, shm, exit).
    fn syscall_pools_at(
        &mut self,
        s: &Syscall,
        os: &mut dyn SpaceOps,
        inv: &mut Vec<Invalidation>,
    ) -> Option<Result<(), SimError>> {
        let a = s.args;
        let (start, end) = match s.kind {
            SyscallKind::Mmap => (s.ret as u64, page_up((s.ret as u64).saturating_add(a[1]))),
            SyscallKind::Munmap | SyscallKind::Madvise => (a[0], page_up(a[0].saturating_add(a[1]))),
            SyscallKind::Mremap => {
                // Only the allocator's own (trimming) mremaps can reach the kernel; model the
                // parts outside pools and return pool parts.
                let old = page_down(a[0]);
                let (old_end, ret) = (page_up(old + a[1]), s.ret as u64);
                let new_end = page_up(ret + a[2]);
                let inside = |x: u64, y: u64| self.pool_pieces(x, y).iter().any(|p| p.2);
                if !inside(old, old_end) && !inside(ret, new_end) {
                    return Some(os.mremap(a[0], a[1], a[2], ret, inv));
                }
                let r = self.pools_at_op(os, old, old_end, inv, &mut |o, s, e, inv| o.munmap(s, e, inv));
                return Some(r.and_then(|_| {
                    self.pools_at_op(os, ret, new_end, inv, &mut |o, s, e, inv| o.mmap(s, e - s, MAP_ANONYMOUS, inv))
                }));
            }
            _ => return None,
        };
        let start = page_down(start);
        Some(match s.kind {
            SyscallKind::Mmap => self.pools_at_op(os, start, end, inv, &mut |o, s, e, inv| o.mmap(s, e - s, a[3], inv)),
            SyscallKind::Munmap => self.pools_at_op(os, start, end, inv, &mut |o, s, e, inv| o.munmap(s, e, inv)),
            // Only returning memory frees pool pages; THP advice there is the program's, and the
            // allocator ignores it (the layout decides).
            _ if matches!(a[2], MADV_DONTNEED | MADV_FREE | MADV_REMOVE) => {
                self.pools_at_op(os, start, end, inv, &mut |o, s, e, inv| o.madvise(s, e, a[2], inv))
            }
            _ => self
                .pool_pieces(start, end)
                .into_iter()
                .filter(|p| !p.2)
                .try_for_each(|(s, e, _)| os.madvise(s, e, a[2], inv)),
        })
    }

    /// Apply `outside` to the parts of [start, end) outside every pool; free the 4KB pages of
    /// the parts inside.
    fn pools_at_op(
        &self,
        os: &mut dyn SpaceOps,
        start: u64,
        end: u64,
        inv: &mut Vec<Invalidation>,
        outside: &mut RangeOp<'_>,
    ) -> Result<(), SimError> {
        for (s, e, in_pool) in self.pool_pieces(start, end) {
            if in_pool {
                os.release_4k(s, e, inv)?;
            } else {
                outside(os, s, e, inv)?;
            }
        }
        Ok(())
    }

    /// [start, end) cut at pool boundaries: (start, end, inside a pool).
    fn pool_pieces(&self, start: u64, end: u64) -> Vec<(u64, u64, bool)> {
        let mut cuts: Vec<(u64, u64)> = (0..3)
            .map(|i| (self.base[i], self.base[i] + self.size[i]))
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
}

#[cold]
fn relocate_slow(sp: &mut Space, va: u64) -> u64 {
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
