//! The x86-64 hardware page walker: paging-structure caches give the longest cached prefix of
//! the walk (Intel SDM vol. 3 4.10.3; thesis chapter 2, "MMU caches"), then one load per
//! remaining level goes through the caches at the entry's real physical address
//! (`table_pa + 8 * index`), and every non-leaf entry read is filled into the PSC of its level.
//! A page that is not mapped is faulted in by the OS model first (demand paging).

use super::handler::{MissCx, MissHandler};
use crate::config::Config;
use crate::mem::backend::Backend;
use crate::mem::Caches;
use crate::mmu::{Psc, Shape};
use crate::os::pagetable::{index, Entry};
use crate::os::{Os, SimError};
use crate::stats::{Counters, Sink};
use crate::units::PageSize;
use rustc_hash::FxHashMap;

/// Names of page-table levels by level number (1 = PT).
pub const TABLE_NAMES: [&str; 6] = ["", "pt", "pd", "pdpt", "pml4", "pml5"];

#[derive(Debug, Clone, Default)]
struct WalkStats {
    walks: u64,
    walks_by_size: [u64; 3],
    faulting_walks: u64,
    /// [table level * (caches + 1) + hit level (caches..., memory)]
    loads_at: Vec<u64>,
    /// Per hit level: the walk loads already added to the caches' counts.
    loads_counted: Vec<u64>,
    cycles: u64,
}

impl WalkStats {
    /// Walk loads (each is counted once in `loads_at`).
    fn loads(&self) -> u64 {
        self.loads_at.iter().sum()
    }
}

/// The radix walker and its paging-structure caches.
pub struct RadixWalker {
    pscs: Vec<Psc>,
    /// The PSC caching entries of each table level (`usize::MAX`: none, past every index).
    psc_for_level: [usize; 8],
    /// Per leaf page size: the PSCs a walk to such a leaf probes (above the leaf's level, within
    /// the page table's levels), lowest table level first.
    psc_probe: [Vec<usize>; 3],
    /// Fixed cycles per walk besides its loads.
    latency: u64,
    /// Page-table levels (4 or 5).
    levels: usize,
    ws: WalkStats,
    /// `sim.miss_profile`: walks per 2MB region (`va >> 21`).
    miss_profile: Option<FxHashMap<u64, u64>>,
    /// The cache levels' names, then "DRAM": where walk loads hit, for the counters.
    hit_names: Vec<String>,
}

impl RadixWalker {
    pub fn new(cfg: &Config) -> RadixWalker {
        let seed = cfg.sim.seed;
        let mut pscs: Vec<Psc> =
            cfg.psc.iter().enumerate().map(|(i, c)| Psc::new(c, seed ^ (0x50 + i as u64))).collect();
        pscs.sort_by_key(|p| p.table_level);
        let mut psc_for_level = [usize::MAX; 8];
        for (i, p) in pscs.iter().enumerate() {
            psc_for_level[p.table_level] = i;
        }
        let levels = cfg.os.levels as usize;
        let psc_probe = std::array::from_fn(|s| {
            let leaf = PageSize::from_index(s).leaf_level();
            (0..pscs.len()).filter(|&p| pscs[p].table_level > leaf && pscs[p].table_level <= levels).collect()
        });
        let ncache = cfg.cache.len();
        let mut hit_names: Vec<String> = cfg.cache.iter().map(|c| c.name.clone()).collect();
        hit_names.push("DRAM".into());
        RadixWalker {
            pscs,
            psc_for_level,
            psc_probe,
            latency: cfg.walker.latency,
            levels,
            ws: WalkStats {
                loads_at: vec![0; 6 * (ncache + 1)],
                loads_counted: vec![0; ncache + 1],
                ..Default::default()
            },
            miss_profile: cfg.sim.miss_profile.then(FxHashMap::default),
            hit_names,
        }
    }
}

impl MissHandler for RadixWalker {
    /// Walk the page tables for `va` (faulting the page in first if it is not mapped).
    #[inline(always)]
    fn handle<S: Shape, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        _r: usize,
        va: u64,
    ) -> Result<(u64, PageSize), SimError> {
        self.ws.walks += 1;
        if let Some(p) = &mut self.miss_profile {
            *p.entry(va >> 21).or_default() += 1;
        }
        let levels = self.levels;
        let (pfn, size, invalidated) = cx.mapping(va, || self.ws.faulting_walks += 1)?;
        if invalidated {
            self.flush();
        }
        self.ws.walks_by_size[size as usize] += 1;
        let tag = cx.mmu.tag();
        let root = cx.os.root();
        // Longest cached prefix: PSCs are sorted from the lowest table level (PDE) up.
        let (mut level, mut t) = (levels, root);
        for &p in &self.psc_probe[size as usize] {
            let p = &mut self.pscs[p];
            // SAFETY: `S::LANES.psc` is 0 or every PSC's class (`has_shape`).
            if let Some(tab) = unsafe { p.lookup(S::LANES.psc, va, tag) } {
                level = p.table_level - 1;
                t = tab;
                break;
            }
        }
        let mut cycles = self.latency;
        let ncache = cx.caches.levels.len();
        let tables = cx.os.tables();
        loop {
            let i = index(va, level);
            let pa = tables.table_pa(t) + 8 * i as u64;
            let (hit, lat) =
                if ncache == 0 { (0, cx.caches.dram_latency) } else { cx.caches.access_walk_as(S::LANES.caches, pa) };
            let lat = if hit == ncache { cx.backend.access(pa, false, true, lat) } else { lat };
            cycles += lat;
            self.ws.loads_at[level * (ncache + 1) + hit] += 1;
            match tables.entry(t, i) {
                Entry::Leaf(_) => break,
                Entry::Table(c) => {
                    if let Some(p) = self.pscs.get_mut(self.psc_for_level[level & 7]) {
                        // SAFETY: as for the lookup above.
                        unsafe { p.fill(S::LANES.psc, va, tag, c) };
                    }
                    t = c;
                    level -= 1;
                }
                Entry::Empty => unreachable!("the page was mapped before the walk"),
            }
        }
        self.ws.cycles += cycles;
        Ok((pfn, size))
    }

    fn misses(&self) -> u64 {
        self.ws.walks
    }

    fn flush(&mut self) {
        for p in &mut self.pscs {
            p.flush();
        }
    }

    /// The PTE of `va` (its PT found through the OS's region memo) and the cache rows its load
    /// would read.
    #[inline(always)]
    fn prefetch(&self, os: &Os, caches: &Caches, va: u64) {
        let pt = os.tables();
        let Some(t) = pt.pt_of(os.root(), self.levels, va) else {
            return;
        };
        let i = index(va, 1);
        pt.prefetch(t, i);
        if !caches.levels.is_empty() {
            caches.prefetch_walk(pt.table_pa(t) + 8 * i as u64);
        }
    }

    fn prefetches(&self) -> bool {
        true
    }

    /// Add the walk loads since the last call to the caches' counts, by hit level (walk loads
    /// are counted once per load, in `loads_at`).
    fn settle(&mut self, caches: &mut Caches) {
        let n = caches.levels.len();
        if n == 0 {
            return; // (walk loads go straight to DRAM, outside the caches' counts)
        }
        for (hit, counted) in self.ws.loads_counted.iter_mut().enumerate() {
            let total: u64 = self.ws.loads_at.iter().skip(hit).step_by(n + 1).sum();
            caches.add_walk_loads(hit, total - *counted);
            *counted = total;
        }
    }

    fn has_shape<S: Shape>(&self) -> bool {
        self.pscs.iter().all(|p| p.arr.class() == S::LANES.psc)
    }

    fn check(&self) -> Result<(), String> {
        let w = &self.ws;
        if w.loads() > w.walks * self.levels as u64 {
            return Err("more walk loads than walks x levels".into());
        }
        let min_loads = w.walks_by_size.iter().sum::<u64>();
        if w.loads() < min_loads {
            return Err("a walk issued no load".into());
        }
        Ok(())
    }

    fn cycles(&self) -> u64 {
        self.ws.cycles
    }

    fn miss_profile(&self) -> Option<Vec<(u64, u64)>> {
        self.miss_profile.as_ref().map(|p| {
            let mut v: Vec<(u64, u64)> = p.iter().map(|(&k, &n)| (k << 21, n)).collect();
            v.sort_unstable();
            v
        })
    }
}

impl Counters for RadixWalker {
    fn counters(&self, out: &mut dyn Sink) {
        for p in &self.pscs {
            let mut s = p.stats;
            s.misses = s.accesses - s.hits;
            s.report("psc", &p.name, out);
        }
        let w = &self.ws;
        out.put(format_args!("walker.walks"), w.walks);
        out.put(format_args!("walker.walks_4k"), w.walks_by_size[0]);
        out.put(format_args!("walker.walks_2m"), w.walks_by_size[1]);
        out.put(format_args!("walker.walks_1g"), w.walks_by_size[2]);
        out.put(format_args!("walker.faulting_walks"), w.faulting_walks);
        out.put(format_args!("walker.loads"), w.loads());
        out.put(format_args!("walker.cycles"), w.cycles);
        let hit_names = &self.hit_names;
        for (lvl, row) in w.loads_at.chunks(hit_names.len()).enumerate().skip(1) {
            if lvl > self.levels {
                continue;
            }
            let t = TABLE_NAMES[lvl];
            out.put(format_args!("walker.loads.{t}"), row.iter().sum());
            for (h, &v) in row.iter().enumerate() {
                out.put(format_args!("walker.loads.{t}.{}", hit_names[h]), v);
            }
        }
        for (h, name) in hit_names.iter().enumerate() {
            out.put(format_args!("walker.loads_hit.{name}"), w.loads_at.iter().skip(h).step_by(hit_names.len()).sum());
        }
    }
}
