//! The two-dimensional walker of nested paging (AMD NPT, Intel EPT; Bhargava et al., ASPLOS
//! 2008). The guest's page tables map guest-virtual to guest-physical addresses and live in
//! guest-physical memory; the host's map the guest's physical memory (one mapping of the host's
//! at [`GUEST_BASE`]) to host-physical. Every guest page-table load is at a guest-physical
//! address, so it needs a host translation first, and so does the guest's final
//! guest-physical address: `g` guest levels over `h` host levels make `g + (g + 1) * h` loads
//! when nothing is cached (24 for 4 over 4, 35 for 5 over 5).
//!
//! What cuts the walk, each configurable:
//! - the guest's paging-structure caches (`[[psc]]`), keyed by guest-virtual address: a hit
//!   gives the guest table the walk continues from, at its host-physical address (Intel's
//!   "combined" paging-structure entries, SDM vol. 3 section 29.4.1), so the guest loads above
//!   it and their host translations are skipped;
//! - the nested TLB (`virt.ntlb`): guest-physical to host-physical translations of host pages;
//!   a hit skips a host walk;
//! - the host's paging-structure caches (`virt.host_psc`), keyed by guest-physical address.
//!
//! The TLB entry a walk fills maps the page the guest and the host pages have in common: the
//! smaller of the two (a 2MB guest page over 4KB host pages is a 4KB entry).
//!
//! The host maps the guest's memory on demand: a guest-physical page the host has not mapped
//! is an EPT violation, a VM exit (`virt.vm_exits`, `virt.vm_exit_cycles` each). When the host
//! invalidates mappings (reclaim), the combined translations are flushed: every TLB, both
//! dimensions' PSCs and the nested TLB (INVEPT).

use super::handler::{MissCx, MissHandler};
use super::hashed::HashedWalker;
use super::radix::TABLE_NAMES;
use crate::array::SetAssoc;
use crate::config::{Config, GUEST_BASE};
use crate::mem::backend::Backend;
use crate::mem::Caches;
use crate::mmu::{Psc, Shape};
use crate::os::pagetable::{index, Entry, PageTables};
use crate::os::{Invalidation, Os, SimError};
use crate::stats::{Counters, Sink, StructStats};
use crate::units::PageSize;

/// The guest dimension (0) and the host's (1), as the counters and the walk log name them.
const GUEST: usize = 0;
const HOST: usize = 1;
const DIMS: [&str; 2] = ["guest", "host"];

/// The nested TLB: guest-physical pages of each host page size, holding the host page's first
/// host-physical frame.
struct Ntlb {
    arr: SetAssoc,
    stats: StructStats,
    /// The sizes a lookup probes, most likely first (the host policy's page size).
    order: [PageSize; 3],
    /// Per size: whether an entry of that size was ever filled (a size never filled cannot
    /// hit, and a probe that misses changes nothing, so it is not made).
    filled: [bool; 3],
}

impl Ntlb {
    fn key(hva: u64, s: PageSize) -> (u64, u64) {
        let page = hva >> s.shift();
        (page, (page << 2) | s as u64)
    }

    /// The host page holding `hva` (first frame, size), probing the sizes the host has mapped
    /// (only 4KB until it maps a larger page), the host policy's size first.
    #[inline(always)]
    fn lookup(&mut self, hva: u64, huge: bool) -> Option<(u64, PageSize)> {
        self.stats.accesses += 1;
        let sizes: &[PageSize] = if huge { &self.order } else { &[PageSize::Size4K] };
        for &s in sizes {
            if !self.filled[s as usize] {
                continue;
            }
            let (i, tag) = Ntlb::key(hva, s);
            if let (_, Some(pfn)) = self.arr.probe(i, tag) {
                self.stats.hits += 1;
                return Some((pfn, s));
            }
        }
        None
    }

    #[inline(always)]
    fn fill(&mut self, hva: u64, pfn: u64, s: PageSize) {
        let (i, tag) = Ntlb::key(hva, s);
        self.filled[s as usize] = true;
        self.stats.fills += 1;
        if self.arr.fill(i, tag, pfn).1.is_some() {
            self.stats.evictions += 1;
        }
    }
}

/// One dimension's paging-structure caches, by the table level they cache.
struct Pscs {
    pscs: Vec<Psc>,
    for_level: [usize; 8],
    /// Per leaf page size: the PSCs a walk to such a leaf probes, lowest table level first.
    probe: [Vec<usize>; 3],
}

impl Pscs {
    fn new(cfgs: &[crate::config::PscConfig], levels: usize, seed: u64) -> Pscs {
        let mut pscs: Vec<Psc> = cfgs.iter().enumerate().map(|(i, c)| Psc::new(c, seed ^ (0x50 + i as u64))).collect();
        pscs.sort_by_key(|p| p.table_level);
        let mut for_level = [usize::MAX; 8];
        for (i, p) in pscs.iter().enumerate() {
            for_level[p.table_level] = i;
        }
        let probe = std::array::from_fn(|s| {
            let leaf = PageSize::from_index(s).leaf_level();
            (0..pscs.len()).filter(|&p| pscs[p].table_level > leaf && pscs[p].table_level <= levels).collect()
        });
        Pscs { pscs, for_level, probe }
    }

    /// The longest cached prefix of a walk of `va` to a leaf of size `s`: (the level the walk
    /// goes on at, its table), or None.
    #[inline(always)]
    fn longest(&mut self, lanes: usize, va: u64, tag: u64, s: PageSize) -> Option<(usize, u32)> {
        for &p in &self.probe[s as usize] {
            let p = &mut self.pscs[p];
            // SAFETY: `lanes` is 0 or every PSC's class (`has_shape` for the guest's; 0 for the host's).
            if let Some(t) = unsafe { p.lookup(lanes, va, tag) } {
                return Some((p.table_level - 1, t));
            }
        }
        None
    }

    #[inline(always)]
    fn fill(&mut self, lanes: usize, level: usize, va: u64, tag: u64, child: u32) {
        if let Some(p) = self.pscs.get_mut(self.for_level[level & 7]) {
            // SAFETY: as in `longest`.
            unsafe { p.fill(lanes, va, tag, child) };
        }
    }

    fn flush(&mut self) {
        for p in &mut self.pscs {
            p.flush();
        }
    }

    fn report(&self, out: &mut dyn Sink) {
        for p in &self.pscs {
            let mut s = p.stats;
            s.misses = s.accesses - s.hits;
            s.report("psc", &p.name, out);
        }
    }
}

/// Loads and cycles, per dimension, table level and where each load hit.
#[derive(Debug, Clone, Default)]
struct Stats {
    walks: u64,
    walks_by_size: [u64; 3],
    guest_faults: u64,
    /// Host walks made (a guest-physical address the nested TLB did not hold).
    host_walks: u64,
    vm_exits: u64,
    host_flushes: u64,
    /// [dim][table level * (caches + 1) + hit level]
    loads_at: [Vec<u64>; 2],
    /// Per hit level: the loads already added to the caches' counts.
    loads_counted: Vec<u64>,
    cycles: u64,
}

/// The nested walker: the guest's page tables (the simulator's OS model), the host's (an OS
/// model of its own) and the caches of both dimensions.
pub struct NestedWalker {
    host: Os,
    /// `virt.host_hashed`: the host's page table is a hashed table, looked up by this walker.
    host_hashed: Option<Box<HashedWalker>>,
    /// `[hashed_pt]` with `[virt]`: the guest's page table is a hashed table in guest-physical
    /// memory, each probe's address translated by the host first.
    guest_hashed: Option<Box<HashedWalker>>,
    guest_pscs: Pscs,
    host_pscs: Pscs,
    ntlb: Option<Ntlb>,
    latency: u64,
    exit_cycles: u64,
    guest_levels: usize,
    host_levels: usize,
    ws: Stats,
    /// The cache levels' names, then "DRAM".
    hit_names: Vec<String>,
    inval: Vec<Invalidation>,
    /// `virt.walk_log`: the walks still to record, and the records.
    log_left: u64,
    log: Vec<[u64; 5]>,
}

impl NestedWalker {
    /// The walker of `cfg` (which has `[virt]`), its host OS mapping the guest's memory.
    pub fn new(cfg: &Config) -> Result<NestedWalker, SimError> {
        let v = cfg.virt.as_ref().expect("a nested walker needs [virt]");
        let hcfg = cfg.virt_host().expect("[virt] is present");
        let mut host = Os::new(&hcfg)?;
        // The guest's physical memory: one anonymous mapping of the host's (mmap, MAP_FIXED).
        let mmap = xlat_trace::Syscall {
            kind: xlat_trace::SyscallKind::Mmap,
            args: [GUEST_BASE, cfg.memory.size.0, 3, 0x32, u64::MAX, 0],
            ret: GUEST_BASE as i64,
        };
        let mut inval = Vec::new();
        host.syscall(&mmap, &mut inval)?;
        inval.clear(); // (MAP_FIXED releases the range first: nothing is mapped there yet)
        let seed = cfg.sim.seed;
        let ncache = cfg.cache.len();
        let mut hit_names: Vec<String> = cfg.cache.iter().map(|c| c.name.clone()).collect();
        hit_names.push("DRAM".into());
        let (gl, hl) = (cfg.os.levels as usize, v.host.levels as usize);
        Ok(NestedWalker {
            host_hashed: hcfg.hashed_pt.is_some().then(|| Box::new(HashedWalker::new(&hcfg))),
            guest_hashed: cfg.hashed_pt.is_some().then(|| Box::new(HashedWalker::new(cfg))),
            host,
            guest_pscs: Pscs::new(&cfg.psc, gl, seed),
            host_pscs: Pscs::new(&v.host_psc, hl, seed ^ 0x4057),
            ntlb: v.ntlb.as_ref().map(|n| Ntlb {
                arr: SetAssoc::new(n.entries as usize, n.ways as usize, n.replacement, seed ^ 0x7715),
                stats: StructStats::default(),
                order: match v.host.policy {
                    crate::config::Policy::Huge1g => [PageSize::Size1G, PageSize::Size2M, PageSize::Size4K],
                    crate::config::Policy::Thp => [PageSize::Size2M, PageSize::Size4K, PageSize::Size1G],
                    _ => PageSize::ALL,
                },
                filled: [false; 3],
            }),
            latency: cfg.walker.latency,
            exit_cycles: v.vm_exit_cycles,
            guest_levels: gl,
            host_levels: hl,
            ws: Stats {
                loads_at: [vec![0; 6 * (ncache + 1)], vec![0; 6 * (ncache + 1)]],
                loads_counted: vec![0; ncache + 1],
                ..Default::default()
            },
            hit_names,
            inval,
            log_left: v.walk_log,
            log: Vec::new(),
        })
    }

    #[inline(always)]
    fn logging(&self) -> bool {
        self.log_left > 0
    }

    /// Translate guest-physical `gpa` to host-physical: the nested TLB, else a host walk (its
    /// PSCs, then one load per remaining host level), faulting the host page in first (a VM
    /// exit). Returns the host-physical address and the host page's size; adds the loads'
    /// cycles to `cycles`.
    fn host_translate<S: Shape, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        gpa: u64,
        cycles: &mut u64,
    ) -> Result<(u64, PageSize), SimError> {
        let hva = GUEST_BASE + gpa;
        let huge = self.host.maps_huge();
        if let Some(n) = &mut self.ntlb {
            if let Some((pfn, s)) = n.lookup(hva, huge) {
                return Ok((host_pa(pfn, s, hva), s));
            }
        }
        self.ws.host_walks += 1;
        if self.host_hashed.is_some() {
            return self.host_hashed_lookup::<S, B>(cx, hva, cycles);
        }
        let (pfn, size) = match self.host.translate(hva) {
            Some(x) => x,
            None => self.host_fault(cx, hva)?,
        };
        let (mut level, mut t) = (self.host_levels, self.host.root());
        if let Some(x) = self.host_pscs.longest(0, hva, 0, size) {
            (level, t) = x;
        }
        let ncache = cx.caches.levels.len();
        let tables = self.host.tables();
        loop {
            let i = index(hva, level);
            let pa = tables.table_pa(t) + 8 * i as u64;
            let (hit, lat) = cx.walk_load_as::<S>(pa);
            *cycles += lat;
            self.ws.loads_at[HOST][level * (ncache + 1) + hit] += 1;
            let e = tables.entry(t, i);
            if self.log_left > 0 {
                self.log.push(log_load(HOST, level, pa, e, tables));
            }
            match e {
                Entry::Leaf(_) => break,
                Entry::Table(c) => {
                    self.host_pscs.fill(0, level, hva, 0, c);
                    t = c;
                    level -= 1;
                }
                Entry::Empty => unreachable!("the host mapped the page before the walk"),
            }
        }
        if let Some(n) = &mut self.ntlb {
            n.fill(hva, pfn, size);
        }
        Ok((host_pa(pfn, size, hva), size))
    }

    /// A host translation through the host's hashed page table (`virt.host_hashed`): its lookup
    /// (probes through the caches, its own counters), a VM exit first if the host has not mapped
    /// the page, then the nested TLB's fill.
    fn host_hashed_lookup<S: Shape, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        hva: u64,
        cycles: &mut u64,
    ) -> Result<(u64, PageSize), SimError> {
        if self.host.translate(hva).is_none() {
            // The EPT violation first, as with a radix host (the VM exit, and INVEPT if the host
            // invalidated mappings to make room); the lookup then finds the page mapped.
            self.host_fault(cx, hva)?;
        }
        let hw = self.host_hashed.as_mut().expect("a hashed host");
        let before = hw.cycles();
        let mut hcx =
            MissCx { os: &mut self.host, caches: cx.caches, backend: cx.backend, mmu: cx.mmu, inval: &mut self.inval };
        let (pfn, size) = hw.handle::<S, B>(&mut hcx, 0, hva)?;
        *cycles += hw.cycles() - before;
        if let Some(n) = &mut self.ntlb {
            n.fill(hva, pfn, size);
        }
        Ok((host_pa(pfn, size, hva), size))
    }

    /// An EPT violation at `hva`: a VM exit (its cycles are counted apart from the walk's), the
    /// host maps the page; if the host invalidated mappings to make room, every combined
    /// translation goes (INVEPT), and a hashed host table drops the entries of the pages that
    /// went.
    #[cold]
    #[inline(never)]
    fn host_fault<B>(&mut self, cx: &mut MissCx<'_, B>, hva: u64) -> Result<(u64, PageSize), SimError> {
        self.ws.vm_exits += 1;
        self.host.fault(hva, &mut self.inval)?;
        if !self.inval.is_empty() {
            if let Some(h) = &mut self.host_hashed {
                h.invalidated(&self.inval);
            }
            self.inval.clear();
            self.ws.host_flushes += 1;
            cx.mmu.invalidate(&[Invalidation::All]);
            self.guest_pscs.flush();
            self.host_pscs.flush();
            if let Some(n) = &mut self.ntlb {
                n.stats.invalidations += n.arr.clear();
            }
        }
        Ok(self.host.translate(hva).expect("the host's fault mapped the page"))
    }
}

impl NestedWalker {
    /// The end of every nested walk: the data's guest-physical address (of the guest page
    /// `gpfn`, `gsize`), then its host page; the TLB entry maps what both share. `cycles`: the
    /// walk's so far.
    #[inline(always)]
    fn finish_walk<S: Shape, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        va: u64,
        gpfn: u64,
        gsize: PageSize,
        mut cycles: u64,
    ) -> Result<(u64, PageSize), SimError> {
        let gpa = (gpfn << 12) + (va & (gsize.bytes() - 1));
        let (hpa, hsize) = self.host_translate::<S, B>(cx, gpa, &mut cycles)?;
        let size = gsize.min(hsize);
        let frame = (hpa & !(size.bytes() - 1)) >> 12;
        self.ws.walks_by_size[size as usize] += 1;
        self.ws.cycles += cycles;
        if self.logging() {
            self.log.push([3, frame, size as u64, 0, 0]);
            self.log_left -= 1;
        }
        Ok((frame, size))
    }

    /// A nested walk over a hashed guest table (`[hashed_pt]` with `[virt]`; the guest table
    /// of Stojkovic et al., ASPLOS 2022): the guest's lookup, each of whose probes is at a
    /// guest-physical address the host translates first (a nested TLB hit, or a host walk), the
    /// probe's cost being that translation's and the load's; parallel probes cost the slowest.
    /// The guest's probes are counted by the hashed table (`walker.loads.guest`), its upkeep in
    /// `hpt.*`.
    #[inline(never)]
    fn hashed_guest_walk<S: Shape, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        va: u64,
    ) -> Result<(u64, PageSize), SimError> {
        let mut gh = self.guest_hashed.take().expect("a hashed guest");
        let before = gh.cycles();
        let res = gh.lookup(cx, va, &mut |cx: &mut MissCx<'_, B>, gpa| {
            let mut c = 0;
            let (hpa, _) = self.host_translate::<S, B>(cx, gpa, &mut c)?;
            let (hit, lat) = cx.walk_load_as::<S>(hpa);
            Ok((hit, c + lat))
        });
        let cycles = gh.cycles() - before;
        let faulted = gh.faulting_walks();
        self.guest_hashed = Some(gh);
        let (gpfn, gsize) = res?;
        self.ws.guest_faults = faulted;
        self.finish_walk::<S, B>(cx, va, gpfn, gsize, cycles)
    }
}

/// The host-physical address of `hva`, in the host page of size `s` whose first frame is `pfn`.
fn host_pa(pfn: u64, s: PageSize, hva: u64) -> u64 {
    (pfn << 12) | (hva & (s.bytes() - 1))
}

/// A walk-log record of a load: [1 + dim, level, physical address, what the entry holds (the
/// child table's physical address in its dimension, or the leaf's first frame's address), 1 if
/// a leaf].
fn log_load(dim: usize, level: usize, pa: u64, e: Entry, tables: &PageTables) -> [u64; 5] {
    match e {
        Entry::Leaf(f) => [1 + dim as u64, level as u64, pa, f << 12, 1],
        Entry::Table(c) => [1 + dim as u64, level as u64, pa, tables.table_pa(c), 0],
        Entry::Empty => [1 + dim as u64, level as u64, pa, 0, 0],
    }
}

impl MissHandler for NestedWalker {
    /// The two-dimensional walk of guest-virtual `va` (faulting the page in the guest first if
    /// the guest has not mapped it).
    #[inline(always)]
    fn handle<S: Shape, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        _r: usize,
        va: u64,
    ) -> Result<(u64, PageSize), SimError> {
        self.ws.walks += 1;
        if self.guest_hashed.is_some() {
            return self.hashed_guest_walk::<S, B>(cx, va);
        }
        let (gpfn, gsize, invalidated) = cx.mapping(va, || self.ws.guest_faults += 1)?;
        if invalidated {
            self.flush();
        }
        let logging = self.logging();
        if logging {
            let host_root = self.host.tables().table_pa(self.host.root());
            self.log.push([0, va, cx.os.tables().table_pa(cx.os.root()), host_root, 0]);
        }
        let tag = cx.mmu.tag();
        let (mut level, mut t) = (self.guest_levels, cx.os.root());
        if let Some(x) = self.guest_pscs.longest(S::LANES.psc, va, tag, gsize) {
            (level, t) = x;
        }
        let mut cycles = self.latency;
        let ncache = cx.caches.levels.len();
        loop {
            let i = index(va, level);
            let gpa = cx.os.tables().table_pa(t) + 8 * i as u64;
            let (pa, _) = self.host_translate::<S, B>(cx, gpa, &mut cycles)?;
            let (hit, lat) = cx.walk_load_as::<S>(pa);
            cycles += lat;
            self.ws.loads_at[GUEST][level * (ncache + 1) + hit] += 1;
            let tables = cx.os.tables();
            let e = tables.entry(t, i);
            if logging {
                self.log.push(log_load(GUEST, level, pa, e, tables));
            }
            match e {
                Entry::Leaf(_) => break,
                Entry::Table(c) => {
                    self.guest_pscs.fill(S::LANES.psc, level, va, tag, c);
                    t = c;
                    level -= 1;
                }
                Entry::Empty => unreachable!("the page was mapped before the walk"),
            }
        }
        self.finish_walk::<S, B>(cx, va, gpfn, gsize, cycles)
    }

    fn misses(&self) -> u64 {
        self.ws.walks
    }

    /// The guest changed its mappings or address space: its PSCs go (the nested TLB and the
    /// host's PSCs map guest-physical memory, which did not change).
    fn flush(&mut self) {
        self.guest_pscs.flush();
    }

    /// The guest's mappings `inval` changed: a hashed guest table loses their entries.
    fn invalidated(&mut self, inval: &[Invalidation]) {
        if let Some(h) = &mut self.guest_hashed {
            h.invalidated(inval);
        }
        self.flush();
    }

    /// The guest PTE of `va` (its PT found through the OS's region memo): the host cache line
    /// the walk reads first and misses most (no simulated effect). (A second stage that also
    /// prefetched the host PTE of an earlier address's data page, and prefetching the rows of
    /// the simulated caches the guest PTE's load reaches, measured no gain on gups.)
    #[inline(always)]
    fn prefetch(&self, os: &Os, _caches: &Caches, va: u64) {
        let pt = os.tables();
        if let Some(t) = pt.pt_of(os.root(), self.guest_levels, va) {
            pt.prefetch(t, index(va, 1));
        }
    }

    fn prefetches(&self) -> bool {
        true
    }

    fn settle(&mut self, caches: &mut Caches) {
        for h in [&mut self.host_hashed, &mut self.guest_hashed].into_iter().flatten() {
            h.settle(caches);
        }
        let n = caches.levels.len();
        if n == 0 {
            return;
        }
        for (hit, counted) in self.ws.loads_counted.iter_mut().enumerate() {
            let total: u64 = self.ws.loads_at.iter().map(|d| d.iter().skip(hit).step_by(n + 1).sum::<u64>()).sum();
            caches.add_walk_loads(hit, total - *counted);
            *counted = total;
        }
    }

    fn has_shape<S: Shape>(&self) -> bool {
        self.guest_pscs.pscs.iter().all(|p| p.arr.class() == S::LANES.psc)
    }

    fn check(&self) -> Result<(), String> {
        let w = &self.ws;
        let loads: u64 = w.loads_at.iter().flatten().sum();
        let (g, h) = (self.guest_levels as u64, self.host_levels as u64);
        if self.host_hashed.is_none() && self.guest_hashed.is_none() && loads > w.walks * (g + (g + 1) * h) {
            return Err("more nested walk loads than walks x (g + (g + 1) x h)".into());
        }
        let guest_loads = w.loads_at[GUEST].iter().sum::<u64>()
            + self.guest_hashed.as_ref().map_or(0, |h| h.loads_at().iter().sum::<u64>());
        if guest_loads < w.walks {
            return Err("a nested walk made no guest load".into());
        }
        for h in [&self.host_hashed, &self.guest_hashed].into_iter().flatten() {
            h.check()?;
        }
        Ok(())
    }

    /// Walk cycles and the VM exits' (the overlap model's translation latency; the additive
    /// estimate adds `virt.vm_exit_cycles` to its total itself, and `C` is `walker.cycles`).
    fn cycles(&self) -> u64 {
        self.ws.cycles + self.ws.vm_exits * self.exit_cycles
    }

    fn walk_log(&self) -> Option<Vec<[u64; 5]>> {
        (!self.log.is_empty()).then(|| self.log.clone())
    }
}

/// Report the host OS model's counters under `virt.host.`.
struct Prefixed<'a> {
    out: &'a mut dyn Sink,
}

impl Sink for Prefixed<'_> {
    fn put(&mut self, name: std::fmt::Arguments<'_>, value: u64) {
        self.out.put(format_args!("virt.host.{name}"), value)
    }
    fn gauge(&mut self, name: std::fmt::Arguments<'_>, value: u64) {
        self.out.gauge(format_args!("virt.host.{name}"), value)
    }
}

impl Counters for NestedWalker {
    fn counters(&self, out: &mut dyn Sink) {
        self.guest_pscs.report(out);
        self.host_pscs.report(out);
        let w = &self.ws;
        out.put(format_args!("walker.walks"), w.walks);
        out.put(format_args!("walker.walks_4k"), w.walks_by_size[0]);
        out.put(format_args!("walker.walks_2m"), w.walks_by_size[1]);
        out.put(format_args!("walker.walks_1g"), w.walks_by_size[2]);
        out.put(format_args!("walker.faulting_walks"), w.guest_faults);
        // A hashed table's probes are its dimension's loads, by where they hit (no table levels).
        let hashed_loads = |h: &Option<Box<HashedWalker>>| h.as_ref().map_or_else(Vec::new, |h| h.loads_at().to_vec());
        let hashed = [hashed_loads(&self.guest_hashed), hashed_loads(&self.host_hashed)];
        let per_dim: [u64; 2] =
            std::array::from_fn(|d| w.loads_at[d].iter().sum::<u64>() + hashed[d].iter().sum::<u64>());
        out.put(format_args!("walker.loads"), per_dim[0] + per_dim[1]);
        out.put(format_args!("walker.cycles"), w.cycles);
        let names = &self.hit_names;
        let levels = [self.guest_levels, self.host_levels];
        for (d, dim) in DIMS.iter().enumerate() {
            out.put(format_args!("walker.loads.{dim}"), per_dim[d]);
            for (lvl, row) in w.loads_at[d].chunks(names.len()).enumerate().skip(1) {
                if lvl > levels[d] {
                    continue;
                }
                let t = TABLE_NAMES[lvl];
                out.put(format_args!("walker.loads.{dim}.{t}"), row.iter().sum());
                for (h, &v) in row.iter().enumerate() {
                    out.put(format_args!("walker.loads.{dim}.{t}.{}", names[h]), v);
                }
            }
        }
        for (h, name) in names.iter().enumerate() {
            let n: u64 = w.loads_at.iter().map(|d| d.iter().skip(h).step_by(names.len()).sum::<u64>()).sum::<u64>()
                + hashed.iter().map(|d| d.get(h).copied().unwrap_or(0)).sum::<u64>();
            out.put(format_args!("walker.loads_hit.{name}"), n);
        }
        out.put(format_args!("virt.host_walks"), w.host_walks);
        out.put(format_args!("virt.vm_exits"), w.vm_exits);
        out.put(format_args!("virt.vm_exit_cycles"), w.vm_exits * self.exit_cycles);
        out.put(format_args!("virt.host_flushes"), w.host_flushes);
        if let Some(n) = &self.ntlb {
            let mut s = n.stats;
            s.misses = s.accesses - s.hits;
            s.report_as("virt.ntlb", out);
        }
        self.host.counters(&mut Prefixed { out });
        if let Some(h) = &self.host_hashed {
            h.counters(&mut Prefixed { out });
        }
        if let Some(h) = &self.guest_hashed {
            h.table_counters(out);
        }
    }
}
