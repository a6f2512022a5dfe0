//! A software miss handler, as on a MIPS R3000 under Mach 3.0 (seed 001, chapter 2): a miss of
//! every TLB traps to a handler that loads the leaf entry of the page from a *linear page
//! table* mapped in kernel virtual space. That load's address is virtual, so it is translated
//! by the same TLBs: when the page-table page's own translation is not there, the load misses
//! in turn (a nested, "cascaded" miss), which a second handler serves from the root of the
//! page tables (pinned, unmapped: a physical load), filling the TLBs with the page-table
//! page's translation before the first handler's load is retried.
//!
//! The linear page table: the leaf entry of `va` for a 4KB page is at `VPT + (va >> 12) * 8`,
//! so the 4KB virtual page holding it is the page-table page (PT) that maps `va`'s 2MB region,
//! and its translation is that table's frame. Leaves of 2MB and 1GB pages (PD and PDPT entries)
//! have linear tables of their own above it. The addresses lie in the upper half of the 48-bit
//! space (`VPT` = 2^47), which user addresses do not reach.
//!
//! Costs: `walker.trap_cycles` per miss plus its load's latency, `walker.nested_trap_cycles`
//! per nested miss plus its load's latency (cache model).

use super::handler::{MissCx, MissHandler};
use crate::config::{Config, DEFAULT_NESTED_TRAP_CYCLES, DEFAULT_TRAP_CYCLES};
use crate::mem::backend::Backend;
use crate::mmu::Shape;
use crate::os::pagetable::{index, Entry};
use crate::os::SimError;
use crate::stats::{Counters, Sink};
use crate::units::PageSize;

/// The linear page table of 4KB leaves starts here (2^47: above every user address).
pub const VPT: u64 = 1 << 47;

/// The virtual address of the leaf entry of `va` when the leaf is a `size` page: the linear
/// table of each page size lies above the previous one.
pub fn leaf_entry_va(va: u64, size: PageSize) -> u64 {
    let va = va & ((1 << 47) - 1);
    let base = match size {
        PageSize::Size4K => VPT,
        PageSize::Size2M => VPT + (1 << 38),
        PageSize::Size1G => VPT + (1 << 38) + (1 << 29),
    };
    base + (va >> size.shift()) * 8
}

/// The software handler's counts.
pub struct SoftwareHandler {
    trap_cycles: u64,
    nested_trap_cycles: u64,
    levels: usize,
    /// Misses of user addresses (walks) and of page-table pages (nested misses).
    walks: u64,
    walks_by_size: [u64; 3],
    faulting_walks: u64,
    nested: u64,
    /// Loads by hit level (cache levels, then memory): the leaf-entry loads and the nested
    /// handlers' loads.
    loads_at: Vec<u64>,
    nested_loads: u64,
    cycles: u64,
    hit_names: Vec<String>,
}

impl SoftwareHandler {
    pub fn new(cfg: &Config) -> SoftwareHandler {
        let mut hit_names: Vec<String> = cfg.cache.iter().map(|c| c.name.clone()).collect();
        hit_names.push("DRAM".into());
        SoftwareHandler {
            trap_cycles: cfg.walker.trap_cycles.unwrap_or(DEFAULT_TRAP_CYCLES),
            nested_trap_cycles: cfg.walker.nested_trap_cycles.unwrap_or(DEFAULT_NESTED_TRAP_CYCLES),
            levels: cfg.os.levels as usize,
            walks: 0,
            walks_by_size: [0; 3],
            faulting_walks: 0,
            nested: 0,
            loads_at: vec![0; hit_names.len()],
            nested_loads: 0,
            cycles: 0,
            hit_names,
        }
    }

    /// A load of physical address `pa` by a handler: through the caches from the walker's
    /// first level, then memory; returns its latency.
    fn load<B: Backend>(&mut self, cx: &mut MissCx<'_, B>, pa: u64) -> u64 {
        let (hit, lat) = cx.walk_load(pa);
        self.loads_at[hit] += 1;
        lat
    }
}

impl MissHandler for SoftwareHandler {
    fn handle<S: Shape, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        r: usize,
        va: u64,
    ) -> Result<(u64, PageSize), SimError> {
        self.walks += 1;
        let (pfn, size, _) = cx.mapping(va, || self.faulting_walks += 1)?;
        self.walks_by_size[size as usize] += 1;
        // The table holding the leaf entry and the table above it (software walk, no cost).
        let tables = cx.os.tables();
        let (mut t, mut parent) = (cx.os.root(), (u32::MAX, 0));
        let leaf = size.leaf_level();
        for level in (leaf + 1..=self.levels).rev() {
            match tables.entry(t, index(va, level)) {
                Entry::Table(c) => {
                    parent = (t, index(va, level));
                    t = c;
                }
                _ => unreachable!("the page is mapped at level {leaf}"),
            }
        }
        let (leaf_pa, table_frame) = (tables.table_pa(t) + 8 * index(va, leaf) as u64, tables.table_pa(t) >> 12);
        let parent_pa = tables.table_pa(parent.0) + 8 * parent.1 as u64;
        let mut cycles = self.trap_cycles;
        // The leaf entry's virtual address, translated by the TLBs (a data load).
        let vpte = leaf_entry_va(va, size);
        if cx.mmu.translate_nested::<S>(0, vpte).is_none() {
            // Nested miss: served from the page tables' root (unmapped), then the page-table
            // page's translation fills the TLBs.
            self.nested += 1;
            self.nested_loads += 1;
            cycles += self.nested_trap_cycles + self.load(cx, parent_pa);
            let upto = cx.mmu.levels(0);
            cx.mmu.fill_above::<S>(0, upto, vpte, PageSize::Size4K, table_frame);
        }
        cycles += self.load(cx, leaf_pa);
        self.cycles += cycles;
        let _ = r;
        Ok((pfn, size))
    }

    fn misses(&self) -> u64 {
        self.walks + self.nested
    }

    fn cycles(&self) -> u64 {
        self.cycles
    }

    fn check(&self) -> Result<(), String> {
        let loads: u64 = self.loads_at.iter().sum();
        if loads != self.walks + self.nested_loads {
            return Err("software handler: loads != misses + nested loads".into());
        }
        Ok(())
    }
}

impl Counters for SoftwareHandler {
    fn counters(&self, out: &mut dyn Sink) {
        out.put(format_args!("walker.walks"), self.walks);
        out.put(format_args!("walker.walks_4k"), self.walks_by_size[0]);
        out.put(format_args!("walker.walks_2m"), self.walks_by_size[1]);
        out.put(format_args!("walker.walks_1g"), self.walks_by_size[2]);
        out.put(format_args!("walker.faulting_walks"), self.faulting_walks);
        out.put(format_args!("walker.nested_misses"), self.nested);
        out.put(format_args!("walker.loads"), self.loads_at.iter().sum());
        out.put(format_args!("walker.nested_loads"), self.nested_loads);
        out.put(format_args!("walker.cycles"), self.cycles);
        for (h, name) in self.hit_names.iter().enumerate() {
            out.put(format_args!("walker.loads_hit.{name}"), self.loads_at[h]);
        }
    }
}
