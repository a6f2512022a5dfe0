//! The software-managed TLB of Mach 3.0 on a MIPS R3000 (seed 001, chapters 2 and 3;
//! docs/mach.md): one partitioned TLB ([`tlb`]), Mach's three-level mapped page tables, the miss
//! types L1U, L1K, L2, L3 and TLB-invalid with their handler costs, cascaded misses, the STLB
//! and the PTLB ([`table`]).
//!
//! It plugs in at the miss-handler seam: a configuration with `[mach]` has no page TLBs in the
//! MMU, so every access reaches [`MachHandler::handle`], which looks it up in its own TLB (tagged
//! with the address space; kernel entries global) and runs the miss handlers on a miss. The loop
//! is its own compiled copy (`mach`: `MissHandler::TRANSLATES_ALL`, `run_direct`).
//!
//! Addresses (the engine hands over the low 48 bits; docs/mach.md has the contract's layout):
//! user below 2^47 (per address space); kseg0 `[KSEG0, KSEG2)` unmapped, physical = va - KSEG0;
//! kseg2 `[KSEG2, 2^48)` mapped kernel data (L1K). The page tables live in internal kernel
//! virtual addresses above 2^48 that no trace reaches: the user page table of address space
//! `s` at `UPT_BASE + s * span` (its entries are L1U PTEs, its pages are mapped by L2 PTEs), the
//! kernel page table at `KPT_BASE` (one PTE per kernel page, L1K or L2), whose own pages are
//! mapped by the L3 PTEs of the pinned root at physical `ROOT_PA`.

mod frames;
mod run;
pub mod table;
pub mod tlb;

use crate::config::{Config, PtlbKernelIpc, StlbKind};
use crate::mem::backend::Backend;
use crate::mem::direct::Direct;
use crate::mmu::walker::{MissCx, MissHandler};
use crate::mmu::Shape;
use crate::os::SimError;
use crate::stats::{Counters, Sink};
use crate::units::PageSize;
use rustc_hash::FxHashMap;
use table::SoftTable;
use tlb::MachTlb;
use xlat_trace::{Marker, SideBody};

/// kseg0 (unmapped kernel), as the engine sees 0xFFFF_8000_0000_0000 (low 48 bits).
pub const KSEG0: u64 = 0x8000_0000_0000;
/// kseg2 (mapped kernel data), as the engine sees 0xFFFF_C000_0000_0000.
pub const KSEG2: u64 = 0xC000_0000_0000;
/// Internal kernel virtual addresses of the user page tables.
pub const UPT_BASE: u64 = 1 << 56;
/// Internal kernel virtual address of the kernel page table.
pub const KPT_BASE: u64 = 1 << 59;
/// Physical addresses (kseg0) of the pinned root of L3 PTEs, the STLB and the PTLB.
pub const ROOT_PA: u64 = 0x3E00_0000_0000;
pub const STLB_PA: u64 = 0x3F00_0000_0000;
pub const PTLB_PA: u64 = 0x3F80_0000_0000;
/// Frames of mapped kernel pages: `KMAP_PFN + (va >> 12)` (wired, never faulted).
const KMAP_PFN: u64 = 1 << 40;

/// Miss types, in counter order.
pub const L1U: usize = 0;
pub const L1K: usize = 1;
pub const L2: usize = 2;
pub const L3: usize = 3;
pub const INVALID: usize = 4;
pub const TYPES: [&str; 5] = ["l1u", "l1k", "l2", "l3", "invalid"];

/// What the next access must first do (side events are deferred to it: they need the caches).
#[derive(Debug, Clone, Copy)]
enum Pending {
    /// IPC send by the space of tag `from` (address space `sender`) to `to`: store the sender's
    /// L2 entries in the PTLB, prefetch the kernel IPC data's L1K entries and `to`'s L3 entries.
    Send { from: u64, sender: u32, to: u32 },
    /// The receiver (the current space, of tag `to`) resumes: prefetch its L2 entries.
    Recv { to: u64 },
}

/// The machine's costs, as cycles.
#[derive(Debug, Clone, Copy)]
struct Costs {
    l1u: u64,
    generic: [u64; 4],
    invalid: u64,
    stlb_hit: [u64; 4],
    stlb_hit_l2_kernel: u64,
    second_way: u64,
    stlb_miss: u64,
    prefetch: u64,
    probe: u64,
}

/// `x / d` and `x % d` (`d > 0`), a shift and a mask when `d` is a power of two (the usual
/// strides and spans: the handlers' hot path then runs no division).
#[inline(always)]
fn div_rem(x: u64, d: u64) -> (u64, u64) {
    if d.is_power_of_two() {
        (x >> d.trailing_zeros(), x & (d - 1))
    } else {
        (x / d, x % d)
    }
}

/// The software-managed TLB and its handlers.
pub struct MachHandler {
    tlb: MachTlb,
    c: Costs,
    pte: u64,
    upt_span: u64,
    stride: u64,
    /// The current address space's tag (its slot + 1), the address of its user page table, and
    /// its raw id.
    tag: u64,
    upt: u64,
    asid: u32,
    slots: FxHashMap<u32, u64>,
    /// Between an IPC send and the receiver's resumption: the IPC path runs in kernel mode.
    kernel_mode: bool,
    stlb: Option<SoftTable>,
    /// The PTLB (`None` with the STLB too: then the STLB's table is shared, section 3.3).
    ptlb: Option<SoftTable>,
    ptlb_on: bool,
    ptlb_l3: bool,
    /// Whether the sender's kernel IPC data is prefetched too (`mach.ptlb_kernel_ipc`).
    ptlb_both: bool,
    user_pages: Vec<u64>,
    ipc: (u64, u64, u64),
    msg: (u64, u64),
    pending: Vec<Pending>,
    // ---- counts
    direct: [u64; 5],
    cascaded: [u64; 5],
    cycles: [u64; 5],
    unmapped: u64,
    stlb_hits: u64,
    stlb_second: u64,
    stlb_misses: u64,
    ptlb_prefetches: u64,
    ptlb_present: u64,
    ptlb_absent: u64,
    ptlb_stores: u64,
    ptlb_cycles: u64,
    loads_at: Vec<u64>,
    hit_names: Vec<String>,
    /// The OS model's translations of user pages, remembered (frames.rs).
    frames: frames::Frames,
    /// The caches' level when they are one direct-mapped level (mem/direct.rs; set by `run`), and the
    /// loads through it not yet counted in the caches' histogram, by level (hit, DRAM).
    direct_level: Option<Direct>,
    direct_loads: [u64; 2],
}

impl MachHandler {
    pub fn new(cfg: &Config) -> MachHandler {
        let m = cfg.mach.clone().unwrap_or_default();
        let u = |v: i64| v.max(0) as u64;
        let mask = |a: u64| a & ((1 << 48) - 1);
        let mut hit_names: Vec<String> = cfg.cache.iter().map(|c| c.name.clone()).collect();
        hit_names.push("DRAM".into());
        let stlb = (m.stlb != StlbKind::None).then(|| SoftTable::new(m.stlb, m.stlb_entries, STLB_PA, m.pte_bytes));
        let ptlb =
            (m.ptlb && stlb.is_none()).then(|| SoftTable::new(StlbKind::Dm, m.ptlb_entries, PTLB_PA, m.pte_bytes));
        MachHandler {
            tlb: MachTlb::new(
                (m.upper as usize, m.upper_policy),
                (m.lower as usize, m.lower_policy),
                cfg.sim.seed ^ 0x6D61_6368,
            ),
            c: Costs {
                l1u: u(m.l1u_cycles),
                generic: [0, u(m.l1k_cycles), u(m.l2_cycles), u(m.l3_cycles)],
                invalid: u(m.invalid_cycles),
                stlb_hit: [0, u(m.stlb_hit_l1k_cycles), u(m.stlb_hit_l2_cycles), u(m.stlb_hit_l3_cycles)],
                stlb_hit_l2_kernel: u(m.stlb_hit_l2_kernel_cycles),
                second_way: u(m.stlb_second_way_cycles),
                stlb_miss: u(m.stlb_miss_cycles),
                prefetch: u(m.ptlb_prefetch_cycles),
                probe: u(m.ptlb_probe_cycles),
            },
            pte: m.pte_bytes,
            upt_span: m.pte_bytes << 35,
            stride: m.upt_stride_pages,
            tag: 1,
            upt: UPT_BASE,
            asid: 0,
            slots: FxHashMap::from_iter([(0, 0)]),
            kernel_mode: false,
            stlb,
            ptlb,
            ptlb_on: m.ptlb,
            ptlb_l3: m.ptlb_prefetches_l3(),
            ptlb_both: m.ptlb_kernel_ipc == PtlbKernelIpc::Both,
            user_pages: m.ptlb_user_pages.clone(),
            ipc: (mask(m.ptlb_ipc_base), m.ptlb_ipc_stride, m.ptlb_ipc_pages),
            msg: (mask(m.ptlb_msg_base), m.ptlb_msg_stride),
            pending: Vec::new(),
            direct: [0; 5],
            cascaded: [0; 5],
            cycles: [0; 5],
            unmapped: 0,
            stlb_hits: 0,
            stlb_second: 0,
            stlb_misses: 0,
            ptlb_prefetches: 0,
            ptlb_present: 0,
            ptlb_absent: 0,
            ptlb_stores: 0,
            ptlb_cycles: 0,
            loads_at: vec![0; hit_names.len()],
            hit_names,
            frames: frames::Frames::default(),
            direct_level: None,
            direct_loads: [0; 2],
        }
    }

    /// The TLB (tests).
    pub fn tlb(&self) -> &MachTlb {
        &self.tlb
    }

    /// The key of user page `va` of the space with tag `tag`, or of kernel page `kva` (tag 0).
    #[inline(always)]
    pub fn key(va: u64, tag: u64) -> u64 {
        ((va >> 12) << 16) | tag
    }

    /// The tag of address space `asid` (slots are given in order of first appearance).
    fn tag_of(&mut self, asid: u32) -> u64 {
        let n = self.slots.len() as u64;
        *self.slots.entry(asid).or_insert(n) + 1
    }

    /// The internal kernel address of the L1U PTE of user `va` in the space of tag `tag`.
    pub fn upte_va(&self, va: u64, tag: u64) -> u64 {
        UPT_BASE + (tag - 1) * self.upt_span + (va >> 12) * self.pte
    }

    /// The internal kernel address of the PTE (L1K or L2) of kernel page `kva`.
    fn kpte_va(&self, kva: u64) -> u64 {
        KPT_BASE + (kva >> 12) * self.pte
    }

    /// The number whose low bits index the STLB and PTLB for kernel page `kva`: its page number,
    /// except for user page-table pages, which are numbered as on the R3000 (each space's table
    /// `upt_stride_pages` pages after the previous one's, seed 001 section 3.1.4).
    fn index_of(&self, kva: u64) -> u64 {
        if (UPT_BASE..KPT_BASE).contains(&kva) {
            let off = kva - UPT_BASE;
            let (slot, page) = div_rem(off, self.upt_span);
            slot * self.stride + div_rem(page >> 12, self.stride).1
        } else {
            kva >> 12
        }
    }

    /// The physical address of kernel address `kva` as a handler's load sees it: translated by
    /// the TLB, a miss of type `kind` (cascaded) when absent.
    fn kernel_pa<B: Backend>(&mut self, cx: &mut MissCx<'_, B>, kva: u64, kind: usize) -> u64 {
        let pfn = match self.tlb.lookup(Self::key(kva, 0)) {
            Some(p) => p,
            None => self.generic(cx, kind, kva, true),
        };
        (pfn << 12) | (kva & 0xFFF)
    }

    /// The generic trap handler for a miss of type `kind` (L1K, L2, L3) on kernel page `kva`:
    /// the STLB first if any, else the page tables (whose load may cascade); enters the entry in
    /// the TLB and returns its frame.
    #[inline(never)]
    fn generic<B: Backend>(&mut self, cx: &mut MissCx<'_, B>, kind: usize, kva: u64, cascaded: bool) -> u64 {
        if cascaded {
            self.cascaded[kind] += 1;
        } else {
            self.direct[kind] += 1;
        }
        let (key, index, pfn) = (Self::key(kva, 0), self.index_of(kva), KMAP_PFN + (kva >> 12));
        let lower = kind == L2;
        if let Some(st) = &self.stlb {
            let p = st.probe(key, index);
            for &pa in &p.loads[..p.nloads] {
                self.load(cx, pa);
            }
            if let Some(w) = p.way {
                self.stlb_hits += 1;
                let cost = if w > 0 {
                    self.stlb_second += 1;
                    self.c.second_way
                } else if kind == L2 && self.kernel_mode {
                    self.c.stlb_hit_l2_kernel
                } else {
                    self.c.stlb_hit[kind]
                };
                self.cycles[kind] += cost;
                self.tlb.insert_absent(key, p.pfn, lower);
                return p.pfn;
            }
            self.stlb_misses += 1;
            self.cycles[kind] += self.c.stlb_miss;
        }
        self.cycles[kind] += self.c.generic[kind];
        let entry_pa = if kind == L3 {
            ROOT_PA + ((kva - KPT_BASE) >> 12) * self.pte
        } else {
            let kpte = self.kpte_va(kva);
            self.kernel_pa(cx, kpte, L3)
        };
        self.load(cx, entry_pa);
        self.tlb.insert_absent(key, pfn, lower);
        if let Some(st) = &mut self.stlb {
            let pa = st.store(key, index, pfn);
            self.load(cx, pa);
        }
        if self.ptlb.is_some() && (kind == L3 && self.ptlb_l3 || kind == L1K && self.ipc_data(kva)) {
            self.ptlb_store(cx, key, index, pfn);
        }
        pfn
    }

    /// Whether kernel page `kva` holds IPC structures or message buffers (the PTLB keeps those
    /// after the generic handler entered them, section 3.1.5).
    fn ipc_data(&self, kva: u64) -> bool {
        let (base, stride, pages) = self.ipc;
        let ipc = kva >= base && stride > 0 && {
            let (n, off) = div_rem(kva - base, stride);
            n < 1 << 16 && off < pages << 12
        };
        let (mbase, mstride) = self.msg;
        ipc || (kva >= mbase && (kva - mbase) < mstride << 16)
    }

    fn ptlb_store<B: Backend>(&mut self, cx: &mut MissCx<'_, B>, key: u64, index: u64, pfn: u64) {
        let t = self.ptlb.as_mut().or(self.stlb.as_mut()).expect("a PTLB");
        let pa = t.store(key, index, pfn);
        self.ptlb_stores += 1;
        self.load(cx, pa);
    }

    /// An L1U miss on user `va` (key `key`): the fast handler's one load of the PTE from the
    /// user page table, whose page may miss (a cascaded L2 miss); a TLB-invalid miss if the page
    /// is not mapped yet (the VM system faults it in).
    #[inline(always)]
    fn l1u<const DIRECT: bool, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        d: Direct,
        va: u64,
        key: u64,
    ) -> Result<u64, SimError> {
        self.direct[L1U] += 1;
        debug_assert_eq!(self.upt, self.upte_va(0, self.tag));
        let upte = self.upt + (va >> 12) * self.pte;
        // (kernel_pa, inline: it is recursive through `generic`, so never inlined itself.)
        let pfn = match self.tlb.lookup(Self::key(upte, 0)) {
            Some(p) => p,
            None => self.generic(cx, L2, upte, true),
        };
        let pa = (pfn << 12) | (upte & 0xFFF);
        let lat = self.load_in::<DIRECT, B>(cx, d, pa);
        self.cycles[L1U] += self.c.l1u + lat;
        let pfn = match self.frames.get(key) {
            Some(pfn) => pfn,
            None => self.os_frame(cx, va, key)?,
        };
        self.tlb.insert_absent(key, pfn, false);
        Ok(pfn)
    }

    /// The frame of user `va` (key `key`) from the OS model, remembered; a TLB-invalid miss if
    /// the page is not mapped yet (the VM system faults it in).
    #[inline(never)]
    fn os_frame<B: Backend>(&mut self, cx: &mut MissCx<'_, B>, va: u64, key: u64) -> Result<u64, SimError> {
        let (pfn, size, invalidated) = cx.mapping(va, || {
            self.direct[INVALID] += 1;
            self.cycles[INVALID] += self.c.invalid;
        })?;
        if invalidated {
            self.flush_user();
        }
        let pfn = pfn + ((va >> 12) & (size.bytes() / 4096 - 1));
        self.frames.put(key, pfn);
        Ok(pfn)
    }

    /// The OS model invalidated translations: drop the user entries and the remembered frames.
    fn flush_user(&mut self) {
        self.tlb.flush_user();
        self.frames.clear();
    }

    /// The deferred side events.
    #[cold]
    fn run_pending<B: Backend>(&mut self, cx: &mut MissCx<'_, B>) {
        let pending = std::mem::take(&mut self.pending);
        for p in &pending {
            match *p {
                Pending::Send { from: tag, sender, to } => {
                    // The sender's L2 entries, probed in the TLB (tlbp), go to the PTLB.
                    for i in 0..self.user_pages.len() {
                        let kva = self.upte_va(self.user_pages[i], tag);
                        let key = Self::key(kva, 0);
                        if self.tlb.contains(key) {
                            let pfn = KMAP_PFN + (kva >> 12);
                            self.ptlb_store(cx, key, self.index_of(kva), pfn);
                        }
                    }
                    // The L1K entries of the kernel IPC structures: the receiver's, and with
                    // `ptlb_kernel_ipc = "both"` the sender's first (section 3.1.5: the PTE is
                    // prefetched before each access the IPC path makes to them). Then the L3
                    // entries of the receiver's message buffers' page-table pages.
                    let (base, stride, pages) = self.ipc;
                    let parties = if self.ptlb_both { &[sender, to][..] } else { &[to][..] };
                    for &asid in parties {
                        for pg in 0..pages {
                            self.prefetch(cx, base + asid as u64 * stride + (pg << 12), false);
                        }
                    }
                    if self.ptlb_l3 {
                        let totag = self.tag_of(to);
                        let user_buf = self.upte_va(self.user_pages.get(1).copied().unwrap_or(0), totag);
                        let kbuf = self.msg.0 + to as u64 * self.msg.1;
                        for kva in [self.kpte_va(user_buf), self.kpte_va(kbuf)] {
                            self.prefetch(cx, kva, false);
                        }
                    }
                }
                Pending::Recv { to: tag } => {
                    for i in 0..self.user_pages.len() {
                        let kva = self.upte_va(self.user_pages[i], tag);
                        self.prefetch(cx, kva, true);
                    }
                }
            }
        }
        self.pending = pending;
        self.pending.clear();
    }

    /// Prefetch the entry of kernel page `kva` into the TLB from the PTLB (section 3.1.5).
    fn prefetch<B: Backend>(&mut self, cx: &mut MissCx<'_, B>, kva: u64, lower: bool) {
        let key = Self::key(kva & !0xFFF, 0);
        if self.tlb.contains(key) {
            self.ptlb_present += 1;
            self.ptlb_cycles += self.c.probe;
            return;
        }
        let index = self.index_of(kva);
        let t = self.ptlb.as_ref().or(self.stlb.as_ref()).expect("a PTLB");
        let p = t.probe(key, index);
        let (loads, nloads) = (p.loads, p.nloads);
        for &pa in &loads[..nloads] {
            self.load(cx, pa);
        }
        match p.way {
            Some(_) => {
                self.tlb.insert_absent(key, p.pfn, lower);
                self.ptlb_prefetches += 1;
                self.ptlb_cycles += self.c.prefetch;
            }
            None => {
                self.ptlb_absent += 1;
                self.ptlb_cycles += self.c.probe;
            }
        }
    }

    fn kernel_misses(&self) -> u64 {
        (L1K..=L3).map(|k| self.direct[k] + self.cascaded[k]).sum()
    }
}

impl MissHandler for MachHandler {
    const TRANSLATES_ALL: bool = true;

    #[inline(always)]
    fn run_direct<const DATA: bool, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        addr: &[u64],
        kind: &[u8],
        va_mask: u64,
        data_cycles: &mut u64,
    ) -> Result<(), SimError> {
        self.run::<DATA, B>(cx, addr, kind, va_mask, data_cycles)
    }

    #[inline(always)]
    fn handle<S: Shape, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        _r: usize,
        va: u64,
    ) -> Result<(u64, PageSize), SimError> {
        Ok((self.handle_one(cx, va)?, PageSize::Size4K))
    }

    /// The MMU has no page TLBs under `[mach]`: no last-level miss reaches the handler as such.
    fn misses(&self) -> u64 {
        0
    }

    fn flush(&mut self) {
        self.flush_user();
    }

    fn side(&mut self, body: &SideBody) {
        match body {
            SideBody::Marker(Marker::ContextSwitch { asid }) => {
                self.asid = *asid;
                self.tag = self.tag_of(*asid);
                self.upt = self.upte_va(0, self.tag);
            }
            SideBody::Marker(Marker::IpcSend { peer, .. }) => {
                self.kernel_mode = true;
                if self.ptlb_on {
                    // (The current space's tag: `tag` is always `tag_of(asid)`.)
                    self.pending.push(Pending::Send { from: self.tag, sender: self.asid, to: *peer });
                }
            }
            SideBody::Marker(Marker::IpcRecv { .. }) => {
                self.kernel_mode = false;
                if self.ptlb_on {
                    self.pending.push(Pending::Recv { to: self.tag });
                }
            }
            _ => {}
        }
    }

    fn check(&self) -> Result<(), String> {
        self.tlb.check()
    }

    fn cycles(&self) -> u64 {
        self.cycles.iter().sum::<u64>() + self.ptlb_cycles
    }
}

impl Counters for MachHandler {
    fn counters(&self, out: &mut dyn Sink) {
        let misses: u64 = (0..5).map(|k| self.direct[k] + self.cascaded[k]).sum();
        // What the time estimate and the derived metrics read of every handler.
        out.put(format_args!("walker.walks"), misses);
        out.put(format_args!("walker.walks_4k"), misses);
        out.put(format_args!("walker.walks_2m"), 0);
        out.put(format_args!("walker.walks_1g"), 0);
        out.put(format_args!("walker.loads"), self.loads_at.iter().sum());
        out.put(format_args!("walker.cycles"), self.cycles());
        for (h, name) in self.hit_names.iter().enumerate() {
            out.put(format_args!("mach.loads_hit.{name}"), self.loads_at[h]);
        }
        out.put(format_args!("mach.tlb.lookups"), self.tlb.hits + self.tlb.misses);
        out.put(format_args!("mach.tlb.hits"), self.tlb.hits);
        out.put(format_args!("mach.tlb.misses"), self.tlb.misses);
        out.put(format_args!("mach.tlb.evictions_upper"), self.tlb.evictions[0]);
        out.put(format_args!("mach.tlb.evictions_lower"), self.tlb.evictions[1]);
        out.put(format_args!("mach.unmapped"), self.unmapped);
        for (k, name) in TYPES.iter().enumerate() {
            out.put(format_args!("mach.misses.{name}"), self.direct[k] + self.cascaded[k]);
            out.put(format_args!("mach.direct.{name}"), self.direct[k]);
            out.put(format_args!("mach.cascaded.{name}"), self.cascaded[k]);
            out.put(format_args!("mach.cycles.{name}"), self.cycles[k]);
        }
        out.put(format_args!("mach.misses"), misses);
        out.put(format_args!("mach.cascaded"), self.cascaded.iter().sum());
        out.put(format_args!("mach.kernel_misses"), self.kernel_misses());
        out.put(format_args!("mach.user_misses"), self.direct[L1U] + self.direct[INVALID]);
        out.put(format_args!("mach.kernel_cycles"), self.cycles[L1K..=L3].iter().sum::<u64>());
        out.put(format_args!("mach.cycles"), self.cycles());
        if self.stlb.is_some() {
            out.put(format_args!("mach.stlb.probes"), self.stlb_hits + self.stlb_misses);
            out.put(format_args!("mach.stlb.hits"), self.stlb_hits);
            out.put(format_args!("mach.stlb.second_way_hits"), self.stlb_second);
            out.put(format_args!("mach.stlb.misses"), self.stlb_misses);
        }
        if self.ptlb_on {
            out.put(format_args!("mach.ptlb.prefetches"), self.ptlb_prefetches);
            out.put(format_args!("mach.ptlb.present"), self.ptlb_present);
            out.put(format_args!("mach.ptlb.absent"), self.ptlb_absent);
            out.put(format_args!("mach.ptlb.stores"), self.ptlb_stores);
            out.put(format_args!("mach.ptlb.cycles"), self.ptlb_cycles);
        }
    }
}
