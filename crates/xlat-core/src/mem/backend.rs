//! The memory backend: what an access that missed every cache level costs. Today's single DRAM
//! ([`Dram`]: the constant `memory.dram_latency`, which the caches already return) or several
//! memory kinds ([`MemoryKinds`]: DRAM and NVM, say), each a zone of physical memory with its
//! own read and write latency and energy, chosen by the frame's address (the OS model allocates
//! frames from the same zones: `memory.kinds`).
//!
//! Write-backs from the caches are not modelled (the caches keep no dirty state): a store that
//! misses every level counts as a write of its memory kind.

use crate::mem::Caches;
use crate::stats::{Counters, Sink};
use crate::units::PageSize;
use std::collections::BTreeMap;
use xlat_trace::SideBody;

/// What an access that missed every cache level costs.
pub trait Backend: Counters + Send + 'static {
    /// Whether the loop calls [`Backend::data`] after every data access and
    /// [`Backend::walked`] after every walk (false: the calls are compiled out).
    const HOOKS: bool = false;
    /// The latency of an access at physical address `pa` that missed every cache level
    /// (`write`: a store; `walk`: a page-walk load); `dram` is the single DRAM latency the
    /// caches assume (`memory.dram_latency`).
    fn access(&mut self, pa: u64, write: bool, walk: bool, dram: u64) -> u64;
    /// Whether [`Backend::access`] is always `dram` and counts nothing: then a loop may count
    /// its misses and multiply (the Mach loop, mmu/mach/run.rs).
    const DRAM_ONLY: bool = false;
    /// A data access at `pa` went through the caches (`llc_miss`: it missed every level, after
    /// [`Backend::access`]); the caches as they are after it (the hybrid memory's dirty lines).
    #[inline(always)]
    fn data(&mut self, _pa: u64, _write: bool, _llc_miss: bool, _caches: &Caches) {}
    /// A walk translated `va` to the page of size `size` at frame `pfn`.
    #[inline(always)]
    fn walked(&mut self, _va: u64, _pfn: u64, _size: PageSize) {}
    /// Whether the loop asks [`Backend::remap`] about every translation before its data
    /// access (false: the call is compiled out).
    const REMAP: bool = false;
    /// A translation of `va` to its 4KB frame `pfn` in a page of size `size`, `via` a TLB or a
    /// walk, before the data access: the 4KB frame to use instead if the memory redirects it
    /// (Rainbow: a 4KB page of an NVM superpage cached in DRAM, found through the migration
    /// bitmap and the NVM page's first 8 bytes), which the loop enters in the TLBs as a 4KB page.
    #[inline(always)]
    fn remap(&mut self, _va: u64, _pfn: u64, _size: PageSize, _via: Via) -> Option<u64> {
        None
    }
    /// Whether the memory redirects the 4KB frame `pfn` (Rainbow: a cached NVM page), without
    /// counting anything: the loop then looks for the page's 4KB entry below the level where a
    /// superpage entry translated it (split TLBs probed in parallel).
    #[inline(always)]
    fn redirects(&self, _pfn: u64) -> bool {
        false
    }
    /// Figures derived from the counts (dynamic energy), added to the result's derived metrics.
    ///
    /// Derived figures are functions of the counters `c` (and the configuration), not of the
    /// state: a window of the run after a warm-up passes the window's counts.
    fn derived(&self, _c: &BTreeMap<String, u64>, _out: &mut BTreeMap<String, f64>) {}
    /// A time and energy model over the run's counters `c` and `instructions`, after
    /// [`Backend::derived`] (`out` holds the translation part of the time estimate, `time.*`).
    fn time_model(&self, _c: &BTreeMap<String, u64>, _instructions: u64, _out: &mut BTreeMap<String, f64>) {}
    fn side(&mut self, _body: &SideBody) {}
    /// The write-back cycles since the last call (dirty lines that left the last level), for
    /// the overlap model's write buffer; memories that track no dirty lines have none.
    #[inline(always)]
    fn take_writebacks(&mut self) -> u64 {
        0
    }
}

/// How an access was translated, for [`Backend::remap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// A TLB entry of the access's page size; for a 4KB entry, whether the TLBs of its level
    /// also hold the 2MB page around it (seed 003's cases 1 and 2; false for other sizes).
    Tlb { superpage_held: bool },
    /// A superpage entry hit at a level above the 4KB entry, which a deeper level held: as
    /// split 4KB and 2MB TLBs probed in parallel, the 4KB side's deeper hit translates it, at
    /// that level's latency (`cycles`).
    Below { cycles: u64 },
    /// A walk (every TLB missed).
    Walk,
}

/// One DRAM behind the caches: the caches' own latency; counted by the caches (`dram.*`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Dram;

impl Backend for Dram {
    const DRAM_ONLY: bool = true;
    #[inline(always)]
    fn access(&mut self, _: u64, _: bool, _: bool, dram: u64) -> u64 {
        dram
    }
}

impl Counters for Dram {
    fn counters(&self, _: &mut dyn Sink) {}
}

/// One memory kind: a zone of physical memory and its costs.
#[derive(Debug, Clone, PartialEq)]
pub struct KindSpec {
    pub name: String,
    pub bytes: u64,
    pub read_latency: u64,
    pub write_latency: u64,
    pub read_energy_pj: f64,
    pub write_energy_pj: f64,
    pub static_power_mw: f64,
}

impl KindSpec {
    /// The kind a configuration's `memory.kinds` entry describes.
    pub fn from_config(k: &crate::config::MemoryKind) -> KindSpec {
        KindSpec {
            name: k.name.clone(),
            bytes: k.size.0,
            read_latency: k.read_latency,
            write_latency: k.write_latency,
            read_energy_pj: k.read_energy_pj,
            write_energy_pj: k.write_energy_pj,
            static_power_mw: k.static_power_mw,
        }
    }
}

#[derive(Debug, Clone)]
struct Kind {
    spec: KindSpec,
    /// First physical address past the zone.
    end: u64,
    reads: u64,
    writes: u64,
    walk_reads: u64,
}

/// Several memory kinds, each a zone in address order from physical address 0.
#[derive(Debug, Clone)]
pub struct MemoryKinds {
    kinds: Vec<Kind>,
}

impl MemoryKinds {
    pub fn new(specs: &[KindSpec]) -> MemoryKinds {
        let mut end = 0;
        let kinds = specs
            .iter()
            .map(|s| {
                end += s.bytes;
                Kind { spec: s.clone(), end, reads: 0, writes: 0, walk_reads: 0 }
            })
            .collect();
        MemoryKinds { kinds }
    }

    /// The kind of physical address `pa` (the last kind for addresses past every zone).
    #[inline]
    fn kind_of(&self, pa: u64) -> usize {
        self.kinds.iter().position(|k| pa < k.end).unwrap_or(self.kinds.len() - 1)
    }
}

impl Backend for MemoryKinds {
    #[inline]
    fn access(&mut self, pa: u64, write: bool, walk: bool, _: u64) -> u64 {
        let i = self.kind_of(pa);
        let k = &mut self.kinds[i];
        if write {
            k.writes += 1;
            k.spec.write_latency
        } else {
            k.reads += 1;
            k.walk_reads += walk as u64;
            k.spec.read_latency
        }
    }

    /// Dynamic energy per kind (static energy needs a run time in seconds, which the additive
    /// time estimate in cycles does not give without a clock: left to the energy model).
    fn derived(&self, c: &BTreeMap<String, u64>, out: &mut BTreeMap<String, f64>) {
        for k in &self.kinds {
            let s = &k.spec;
            let n = |what: &str| c.get(&format!("memory.{}.{what}", s.name)).copied().unwrap_or(0) as f64;
            let dynamic = n("reads") * s.read_energy_pj + n("writes") * s.write_energy_pj;
            out.insert(format!("memory.{}.dynamic_energy_nj", s.name), dynamic / 1e3);
        }
    }
}

impl Counters for MemoryKinds {
    fn counters(&self, out: &mut dyn Sink) {
        for k in &self.kinds {
            let n = &k.spec.name;
            out.put(format_args!("memory.{n}.reads"), k.reads);
            out.put(format_args!("memory.{n}.writes"), k.writes);
            out.put(format_args!("memory.{n}.walk_reads"), k.walk_reads);
        }
    }
}

/// The backend `cfg` describes: one DRAM unless `memory.kinds` lists the memory kinds.
pub fn from_config(cfg: &crate::config::Config) -> AnyBackend {
    if cfg.memory.kinds.is_empty() {
        return AnyBackend::Dram(Dram);
    }
    let specs: Vec<KindSpec> = cfg.memory.kinds.iter().map(KindSpec::from_config).collect();
    AnyBackend::Kinds(MemoryKinds::new(&specs))
}

/// The backend of a configuration, chosen at run time (the general loop).
#[derive(Debug, Clone)]
pub enum AnyBackend {
    Dram(Dram),
    Kinds(MemoryKinds),
}

impl Backend for AnyBackend {
    #[inline]
    fn access(&mut self, pa: u64, write: bool, walk: bool, dram: u64) -> u64 {
        match self {
            AnyBackend::Dram(d) => d.access(pa, write, walk, dram),
            AnyBackend::Kinds(k) => k.access(pa, write, walk, dram),
        }
    }
    fn derived(&self, c: &BTreeMap<String, u64>, out: &mut BTreeMap<String, f64>) {
        if let AnyBackend::Kinds(k) = self {
            k.derived(c, out)
        }
    }
}

impl Counters for AnyBackend {
    fn counters(&self, out: &mut dyn Sink) {
        if let AnyBackend::Kinds(k) = self {
            k.counters(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, bytes: u64, r: u64, w: u64) -> KindSpec {
        KindSpec {
            name: name.into(),
            bytes,
            read_latency: r,
            write_latency: w,
            read_energy_pj: 10.0,
            write_energy_pj: 20.0,
            static_power_mw: 1.0,
        }
    }

    #[test]
    fn each_address_costs_its_kind() {
        let mut m = MemoryKinds::new(&[spec("dram", 1 << 30, 200, 200), spec("nvm", 8 << 30, 600, 1200)]);
        assert_eq!(m.access(0, false, true, 1), 200);
        assert_eq!(m.access((1 << 30) - 64, true, false, 1), 200);
        assert_eq!(m.access(1 << 30, false, false, 1), 600);
        assert_eq!(m.access(5 << 30, true, false, 1), 1200);
        let mut c = crate::stats::Named::default();
        m.counters(&mut c);
        let want = [("dram", 1, 1, 1), ("nvm", 1, 1, 0)];
        for (n, r, w, wr) in want {
            assert_eq!(c.0[&format!("memory.{n}.reads")], r);
            assert_eq!(c.0[&format!("memory.{n}.writes")], w);
            assert_eq!(c.0[&format!("memory.{n}.walk_reads")], wr);
        }
        let mut d = BTreeMap::new();
        m.derived(&c.0, &mut d);
        assert_eq!(d["memory.nvm.dynamic_energy_nj"], 0.03);
        assert_eq!(d["memory.dram.dynamic_energy_nj"], 0.03);
        assert_eq!(Dram.access(123, true, true, 77), 77);
    }
}
