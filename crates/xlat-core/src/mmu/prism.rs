//! PRISM (seed 004, section 4): variable-granularity access and dirty bits for 2MB pages.
//!
//! * The **metadata registry**: the companion page of each page directory (`os.metadata =
//!   "registry"`, [`crate::os::pagetable::PageTables::companion_pa`]); the MRE of PDE `i` is the
//!   64-bit word at `companion_pa(pd) + 8 * i`.
//! * The **PDE's spare bits** ([`PdeBits`], section 4.1, Figure 4): a present flag and the 3-bit
//!   encodings of the access and dirty granularities (Table 3: 1 .. 32 bits). The OS sets them
//!   from `mmdconfig` calls ([`crate::config::PrismConfig`]) when it maps a 2MB page.
//! * **2MB TLB entries carry the MRE**: on a 2MB TLB miss whose PDE has the present flag, the
//!   walker loads the MRE (one load through the caches from the walker's first level, counted
//!   per hit level); on every access to such a page, a sub-page bit not yet set is set in the
//!   TLB's copy and written back to the registry (an MRE update, counted; section 4.1, "TLB
//!   Support"). Every set bit reaches both copies at once, and nothing else writes the registry
//!   here, so the TLB's copy always equals the registry's and one copy is kept.
//!
//! A structure of the general loop, installed as its access observer (see
//! [`crate::sim::observer`]): the plain loop compiles none of it.

use crate::config::{Config, MdType, PrismConfig};
use crate::mem::backend::Backend;
use crate::mem::Caches;
use crate::mmu::observer::{AccessObserver, Observed, MEMO_HINTS};
use crate::os::pagetable::index;
use crate::os::Os;
use crate::stats::{Counters, Sink};
use crate::units::PageSize;
use rustc_hash::FxHashMap;
use xlat_trace::SideBody;

/// The 9 spare bits of a 2MB PDE (x86-64 bits 52..=60 are free in a 2MB leaf; section 4.1):
/// bit 0 the MRE present flag, bits 1..=3 the access granularity, bits 4..=6 the dirty
/// granularity (Table 3: `log2(bits)`, 000 = 1 bit .. 101 = 32 bits; 11X not allowed), bits 7
/// and 8 unused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PdeBits(pub u16);

impl PdeBits {
    /// The bits of a PDE with an MRE of `access` and `dirty` bits (powers of two up to 32).
    pub fn new(access: u32, dirty: u32) -> PdeBits {
        debug_assert!(crate::config::valid_bits(access) && crate::config::valid_bits(dirty));
        PdeBits(1 | (access.trailing_zeros() as u16) << 1 | (dirty.trailing_zeros() as u16) << 4)
    }
    pub fn present(self) -> bool {
        self.0 & 1 != 0
    }
    /// Access bits per 2MB page (decoded from the 3-bit encoding).
    pub fn access_bits(self) -> u32 {
        1 << ((self.0 >> 1) & 7)
    }
    /// Dirty bits per 2MB page.
    pub fn dirty_bits(self) -> u32 {
        1 << ((self.0 >> 4) & 7)
    }
}

/// A metadata registry entry: up to 32 access bits (low word) and 32 dirty bits (high word);
/// bit `k` of a `g`-bit vector covers the 4KB pages `k * 512/g .. (k+1) * 512/g` of the 2MB page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mre {
    pub access: u32,
    pub dirty: u32,
}

impl Mre {
    /// The 64-bit word in the registry.
    pub fn word(self) -> u64 {
        self.access as u64 | (self.dirty as u64) << 32
    }
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    pde: PdeBits,
    mre: Mre,
    /// `9 - log2(bits)` of the access and dirty vectors: the bit of a 4KB page is
    /// `1 << (page >> shift)` (decoded once from `pde`).
    a_shift: u8,
    d_shift: u8,
    /// The last walk that loaded this MRE: its root, 2MB region and the page tables'
    /// [`upper_changes`] then. A walk of the same region under the same root, to the same
    /// frame, while `upper_changes` has not moved, finds the same PD (tables are never freed),
    /// hence the same MRE address, PDE bits and slot: it skips the software walk and the hash
    /// lookups (host work only; the simulated MRE load is made either way).
    ///
    /// [`upper_changes`]: crate::os::pagetable::PageTables::upper_changes
    root: u32,
    region: u64,
    changes: u64,
    /// The MRE's physical address.
    pa: u64,
}

impl Slot {
    fn new(pde: PdeBits, pa: u64) -> Slot {
        let shift = |bits: u32| (9 - bits.trailing_zeros()) as u8;
        Slot {
            pde,
            mre: Mre::default(),
            a_shift: shift(pde.access_bits()),
            d_shift: shift(pde.dirty_bits()),
            root: u32::MAX,
            region: u64::MAX,
            changes: u64::MAX,
            pa,
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Stats {
    /// MRE loads by hit level (the caches' levels, then DRAM).
    mre_loads_at: Vec<u64>,
    mre_load_cycles: u64,
    /// Walks to a 2MB page whose PDE has no MRE (no MRE load).
    walks_2m_without_mre: u64,
    /// Accesses to 2MB pages with an MRE (those translated by a TLB, not a walk, are these less
    /// the MRE loads: each load is the walk of one such access).
    accesses: u64,
    access_bit_sets: u64,
    dirty_bit_sets: u64,
    /// MRE writes back to the registry (an access that sets an access and a dirty bit writes once).
    mre_updates: u64,
}

/// PRISM's registry, PDE bits and TLB-side MRE handling (see the module documentation).
pub struct Prism {
    cfg: PrismConfig,
    /// Registry entries in use, and their index by physical address of the MRE.
    slots: Vec<Slot>,
    slot_of: FxHashMap<u64, u32>,
    /// By 2MB frame number: 1 + the slot of the MRE of the 2MB page in that frame (0: none).
    /// A frame holds one page at a time, and a page is walked (filling this) before any TLB
    /// hit on it, so the access path needs no hash.
    by_frame: Vec<u32>,
    /// (address space, 2MB region) -> slot, for [`Prism::mre_of`].
    regions: FxHashMap<u64, u32>,
    hit_names: Vec<String>,
    s: Stats,
    /// Whether walks may use the slots' memo of MRE addresses (see [`Slot`]); off only to test
    /// that it changes nothing.
    memo: bool,
    /// Per [`Observed::hint`], the 4KB page last seen whose bits are set (host-side, no
    /// simulated state): `va >> 12 << 1 | dirty`, where `dirty` says the dirty bit covering the
    /// page is set too. An access to that page (a load, or a store if `dirty`) sets nothing new
    /// and only counts, which is most accesses (at most 64 bits are ever set per MRE; a
    /// stream's accesses keep their page for hundreds of accesses). Emptied at every walk and
    /// side event (the only places mappings change) and whenever an MRE starts over.
    seen: [u64; SEEN],
}

/// A power of two at least [`MEMO_HINTS`] (so that indexing by hint needs no bounds check).
const SEEN: usize = MEMO_HINTS.next_power_of_two();
const NOT_SEEN: u64 = u64::MAX;

#[inline(always)]
fn seen_index(hint: u8) -> usize {
    hint as usize & (SEEN - 1)
}

#[inline(always)]
fn region_key(asid: u32, va: u64) -> u64 {
    (asid as u64) << 40 | va >> 21
}

impl Prism {
    /// PRISM as `cfg.prism` configures it (the defaults if absent).
    pub fn new(cfg: &Config) -> Prism {
        let p = cfg.prism.clone().unwrap_or(PrismConfig {
            enabled: true,
            access_bits: 32,
            dirty_bits: 32,
            mmdconfig: Vec::new(),
        });
        let mut hit_names: Vec<String> = cfg.cache.iter().map(|c| c.name.clone()).collect();
        hit_names.push("DRAM".into());
        Prism {
            cfg: p,
            slots: Vec::new(),
            slot_of: FxHashMap::default(),
            by_frame: vec![0; (cfg.memory.frames() >> 9) as usize + 1],
            regions: FxHashMap::default(),
            s: Stats { mre_loads_at: vec![0; hit_names.len()], ..Default::default() },
            hit_names,
            memo: true,
            seen: [NOT_SEEN; SEEN],
        }
    }

    /// This structure with every walk taking the slow path (the software walk and hash
    /// lookups): the same counts, for tests of the memo.
    pub fn without_memo(mut self) -> Prism {
        self.memo = false;
        self
    }

    /// The PDE bits the OS gives the 2MB page at `va`: the `mmdconfig` calls in order (section
    /// 4.3), the first call for all pages; a page no call covers has no MRE, and a type no call
    /// covers gets 1 bit.
    pub fn pde_bits(&self, va: u64) -> PdeBits {
        let (lo, hi) = (va & !((1 << 21) - 1), (va | ((1 << 21) - 1)) + 1);
        let nz = |b: u32| (b != 0).then_some(b);
        let (mut a, mut d) = (nz(self.cfg.access_bits), nz(self.cfg.dirty_bits));
        for m in &self.cfg.mmdconfig {
            if m.addr < hi && m.addr + m.len > lo {
                match m.mdtype {
                    MdType::Access => a = Some(m.bits),
                    MdType::Dirty => d = Some(m.bits),
                }
            }
        }
        if a.is_none() && d.is_none() {
            return PdeBits(0);
        }
        PdeBits::new(a.unwrap_or(1), d.unwrap_or(1))
    }

    /// The PDE bits and MRE of the 2MB page at `va` in address space `asid`, if it has an MRE
    /// (and was walked).
    pub fn mre_of(&self, asid: u32, va: u64) -> Option<(PdeBits, Mre)> {
        let i = *self.regions.get(&region_key(asid, va))?;
        let s = self.slots[i as usize];
        Some((s.pde, s.mre))
    }

    /// The MRE load of a walk that found the 2MB page at `va`, frame `pfn` (if its PDE has an MRE).
    #[inline(always)]
    fn load<B: Backend>(&mut self, va: u64, pfn: u64, os: &Os, caches: &mut Caches, backend: &mut B) {
        let frame = (pfn >> 9) as usize;
        if let (true, Some(&i)) = (self.memo, self.by_frame.get(frame)) {
            if i != 0 {
                let s = &self.slots[i as usize - 1];
                if s.region == va >> 21 && s.root == os.root() && s.changes == os.tables().upper_changes() {
                    let pa = s.pa;
                    self.mre_load(pa, caches, backend);
                    return;
                }
            }
        }
        self.load_slow(va, pfn, os, caches, backend);
    }

    /// The MRE load at `pa` through the caches from the walker's first level, counted.
    #[inline(always)]
    fn mre_load<B: Backend>(&mut self, pa: u64, caches: &mut Caches, backend: &mut B) {
        let (hit, lat) = caches.access(pa, caches.walk_first(), true);
        let lat = if hit == caches.levels.len() { backend.access(pa, false, true, lat) } else { lat };
        self.s.mre_loads_at[hit] += 1;
        self.s.mre_load_cycles += lat;
    }

    /// [`Prism::load`] without its memo: the PD by a software walk, the PDE bits from the
    /// `mmdconfig` calls, the slot by the MRE's address.
    #[inline(never)]
    fn load_slow<B: Backend>(&mut self, va: u64, pfn: u64, os: &Os, caches: &mut Caches, backend: &mut B) {
        let key = region_key(os.asid(), va);
        let frame = (pfn >> 9) as usize;
        if frame >= self.by_frame.len() {
            self.by_frame.resize(frame + 1, 0);
        }
        let pde = self.pde_bits(va);
        let pt = os.tables();
        let companion = pt.pd_of(os.root(), os.levels(), va).and_then(|t| pt.companion_pa(t));
        let (true, Some(c)) = (pde.present(), companion) else {
            self.s.walks_2m_without_mre += 1;
            self.regions.remove(&key);
            self.by_frame[frame] = 0;
            return;
        };
        let pa = c + 8 * index(va, 2) as u64;
        self.mre_load(pa, caches, backend);
        let n = self.slots.len() as u32;
        let i = *self.slot_of.entry(pa).or_insert(n);
        if i == n {
            self.slots.push(Slot::new(pde, pa));
        }
        let slot = &mut self.slots[i as usize];
        if slot.pde != pde {
            // The OS changed the page's granularity: the entry starts over.
            *slot = Slot::new(pde, pa);
            self.seen = [NOT_SEEN; SEEN];
        }
        (slot.root, slot.region, slot.changes) = (os.root(), va >> 21, os.tables().upper_changes());
        self.regions.insert(key, i);
        self.by_frame[frame] = i + 1;
    }

    /// Set the sub-page bits of an access to a 2MB page (the MRE in the TLB entry, written back).
    #[inline(always)]
    fn touch(&mut self, a: &Observed) {
        let Some(&i) = self.by_frame.get((a.page >> 9) as usize) else {
            return;
        };
        if i == 0 {
            return;
        }
        let slot = &self.slots[i as usize - 1];
        self.s.accesses += 1;
        let page = ((a.va >> 12) & 511) as u32;
        let ab = 1 << (page >> slot.a_shift);
        let dbit = 1 << (page >> slot.d_shift);
        let db = if a.kind == 1 { dbit } else { 0 };
        if slot.mre.access & ab == 0 || slot.mre.dirty & db != db {
            self.set_bits(i as usize - 1, ab, db);
        }
        let dirty = self.slots[i as usize - 1].mre.dirty & dbit != 0;
        self.seen[seen_index(a.hint)] = (a.va >> 12) << 1 | dirty as u64;
    }

    /// Set access bit `ab` and dirty bits `db` (0 or one bit) of slot `i`, at least one new:
    /// an MRE update.
    #[cold]
    fn set_bits(&mut self, i: usize, ab: u32, db: u32) {
        let mre = &mut self.slots[i].mre;
        self.s.access_bit_sets += (mre.access & ab == 0) as u64;
        self.s.dirty_bit_sets += (mre.dirty & db != db) as u64;
        self.s.mre_updates += 1;
        mre.access |= ab;
        mre.dirty |= db;
    }
}

impl AccessObserver for Prism {
    #[inline(always)]
    fn access(&mut self, a: &Observed) {
        if a.size == PageSize::Size2M {
            let vpn = a.va >> 12;
            let e = self.seen[seen_index(a.hint)];
            if e >> 1 == vpn && (e & 1 != 0 || a.kind != 1) {
                self.s.accesses += 1;
                return;
            }
            self.touch(a);
        }
    }

    #[inline]
    fn walked<B: Backend>(&mut self, va: u64, pfn: u64, size: PageSize, os: &Os, caches: &mut Caches, backend: &mut B) {
        self.seen = [NOT_SEEN; SEEN];
        if size == PageSize::Size2M {
            self.load(va, pfn, os, caches, backend);
        }
    }

    fn side(&mut self, _body: &SideBody) {
        self.seen = [NOT_SEEN; SEEN];
    }
}

impl Counters for Prism {
    fn counters(&self, out: &mut dyn Sink) {
        let s = &self.s;
        out.put(format_args!("prism.mre_loads"), s.mre_loads_at.iter().sum());
        for (name, &n) in self.hit_names.iter().zip(&s.mre_loads_at) {
            out.put(format_args!("prism.mre_loads.{name}"), n);
        }
        crate::report_fields!(
            out,
            "prism",
            s,
            mre_load_cycles,
            walks_2m_without_mre,
            accesses,
            access_bit_sets,
            dirty_bit_sets,
            mre_updates
        );
        out.put(format_args!("prism.tlb_hits"), s.accesses - s.mre_loads_at.iter().sum::<u64>());
        out.gauge(format_args!("prism.registry_entries"), self.slots.len() as u64);
        let (a, d) = self.slots.iter().fold((0u64, 0u64), |(a, d), x| {
            (a + x.mre.access.count_ones() as u64, d + x.mre.dirty.count_ones() as u64)
        });
        out.gauge(format_args!("prism.access_bits_set"), a);
        out.gauge(format_args!("prism.dirty_bits_set"), d);
    }
}
