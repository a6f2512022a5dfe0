//! The `[hybrid]` table: a hybrid DRAM/NVM memory (Rainbow, seed 003, and its baselines; see
//! `docs/rainbow.md`). The memory kinds themselves (sizes, latencies, energies, static power) are
//! `[[memory.kinds]]`, the first DRAM and the second NVM; this table holds the time model's
//! costs and the migration policy (`mem/hybrid.rs`, `mem/migrate/`, `designs/hybrid.rs`).

use super::parse::{err, Result};
use serde::{Deserialize, Serialize};

/// `hybrid.migration`: what moves pages between the kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum MigrationPolicy {
    /// Pages stay where they were first placed (Flat-static, DRAM-only).
    #[default]
    None,
    /// Utility-based migration of hot NVM pages to DRAM every interval (seed 003 section III-C;
    /// HSCC), pages counted at the memory controller (last-level-cache misses and write-backs).
    Utility,
    /// Rainbow (seed 003 section III): NVM as 2MB superpages, DRAM caching their hot 4KB pages
    /// without splintering them: two-stage counting at the memory controller, utility-based
    /// migration of 4KB pages, the migration bitmap and its cache, the remap through the NVM
    /// page's first 8 bytes (`mem/rainbow.rs`, `designs/rainbow.rs`).
    Rainbow,
}

/// `hybrid.counting`: where the migration policy's per-page accesses are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Counting {
    /// At the memory controller: last-level-cache misses (reads) and write-backs (writes).
    #[default]
    Memory,
    /// In the TLB entries, as HSCC (seed 003 section IV-D: "implemented in TLB and does not
    /// filter the memory references in on-chip caches"): every load, fetch (reads) and store
    /// (writes) to the page.
    Tlb,
}

/// `hybrid.granularity`: the size of the pages migration moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Granularity {
    /// 4KB pages (HSCC-4KB-mig).
    #[default]
    #[serde(rename = "4KB")]
    Page4K,
    /// 2MB pages (HSCC-2MB-mig).
    #[serde(rename = "2MB")]
    Page2M,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HybridConfig {
    /// The core clock (GHz) that turns the time model's cycles into seconds for static energy.
    #[serde(default = "default_clock")]
    pub clock_ghz: f64,
    #[serde(default)]
    pub migration: MigrationPolicy,
    #[serde(default)]
    pub counting: Counting,
    #[serde(default)]
    pub granularity: Granularity,
    /// The migration interval in cycles of the time model (checked every `check_instructions`).
    #[serde(default = "default_interval")]
    pub interval: u64,
    /// How often (instructions) the controller compares the time model's cycles with the next
    /// interval boundary: the interval ends at the first check past it.
    #[serde(default = "default_check")]
    pub check_instructions: u64,
    /// The utility threshold (cycles) a page's benefit must exceed at the start.
    #[serde(default)]
    pub threshold_cycles: u64,
    /// How much (cycles) the threshold rises after an interval in which migrations ran both ways
    /// (a dirty DRAM page written back to NVM), and falls after one in which they did not.
    #[serde(default = "default_step")]
    pub threshold_step_cycles: u64,
    /// Cycles of one `clflush` of a 64-byte line (64 per 4KB page migrated).
    #[serde(default = "default_clflush")]
    pub clflush_cycles: u64,
    /// Cycles of one TLB shootdown (page-table update and remote invalidation) per page moved.
    #[serde(default = "default_shootdown")]
    pub shootdown_cycles: u64,
    /// Cycles of the OS's per-page bookkeeping of a migration (lists, page-table update).
    #[serde(default = "default_remap")]
    pub remap_cycles: u64,
    /// Rainbow: the hot superpages monitored at 4KB granularity in the next interval (N).
    #[serde(default = "default_top")]
    pub top_superpages: u64,
    /// Rainbow: how much an NVM write adds to a superpage's stage-1 counter (a read adds 1).
    #[serde(default = "default_write_weight")]
    pub write_weight: u64,
    /// Rainbow: entries and ways of the migration-bitmap cache in the memory controller.
    #[serde(default = "default_bitmap_entries")]
    pub bitmap_cache_entries: u64,
    #[serde(default = "default_bitmap_ways")]
    pub bitmap_cache_ways: u64,
    /// Rainbow: cycles of one lookup in the migration-bitmap cache.
    #[serde(default = "default_bitmap_cycles")]
    pub bitmap_cache_cycles: u64,
}

fn default_clock() -> f64 {
    3.2 // seed 003 Table IV: 8 cores, 3.2 GHz
}
fn default_interval() -> u64 {
    100_000_000 // seed 003 section III-C: an interval of 10^8 cycles
}
fn default_check() -> u64 {
    1_000_000 // 1% of an interval at one cycle per instruction (xlat's choice)
}
fn default_step() -> u64 {
    32_768 // one 4KB page copy NVM -> DRAM at the default latencies (xlat's choice; the paper gives no step)
}
fn default_clflush() -> u64 {
    10 // assumption (no figure in seed 003's surviving text); docs/rainbow.md
}
fn default_shootdown() -> u64 {
    4_000 // about 1.25 us at 3.2 GHz; order of the shootdown costs of Villavieja et al., PACT 2011 (docs/rainbow.md)
}
fn default_remap() -> u64 {
    500 // assumption: a page-table update and list operations in the kernel (docs/rainbow.md)
}
fn default_top() -> u64 {
    100 // seed 003 section IV-F: "we prudently set N to be 100"
}
fn default_write_weight() -> u64 {
    3 // the default NVM write / read latency ratio, 1000 / 306 (the paper's weight was lost; docs/rainbow.md)
}
fn default_bitmap_entries() -> u64 {
    4000 // seed 003 section III-D: 4000 entries
}
fn default_bitmap_ways() -> u64 {
    8 // seed 003 section III-D: 8-way set-associative
}
fn default_bitmap_cycles() -> u64 {
    9 // seed 003 section III-D: 9 cycles (CACTI 3.0)
}

impl Default for HybridConfig {
    fn default() -> Self {
        HybridConfig {
            clock_ghz: default_clock(),
            migration: MigrationPolicy::None,
            counting: Counting::Memory,
            granularity: Granularity::Page4K,
            interval: default_interval(),
            check_instructions: default_check(),
            threshold_cycles: 0,
            threshold_step_cycles: default_step(),
            clflush_cycles: default_clflush(),
            shootdown_cycles: default_shootdown(),
            remap_cycles: default_remap(),
            top_superpages: default_top(),
            write_weight: default_write_weight(),
            bitmap_cache_entries: default_bitmap_entries(),
            bitmap_cache_ways: default_bitmap_ways(),
            bitmap_cache_cycles: default_bitmap_cycles(),
        }
    }
}

impl HybridConfig {
    /// The rules serde's types do not check, one sentence each (`c` the configuration's name;
    /// `kinds` the number of memory kinds; `data` whether data go through
    /// the caches; `thp` whether the OS model maps 2MB pages, `os.policy = "thp"`).
    pub fn validate(&self, c: &str, kinds: usize, data: bool, thp: bool) -> Result<()> {
        if !(1..=2).contains(&kinds) {
            return err(format!(
                "config '{c}': [hybrid] needs one or two memory.kinds (DRAM first, then NVM), not {kinds}."
            ));
        }
        if kinds != 2 && self.migration != MigrationPolicy::None {
            return err(format!("config '{c}': hybrid.migration needs two memory.kinds (DRAM, then NVM)."));
        }
        if !data {
            return err(format!(
                "config '{c}': [hybrid] needs sim.data_through_caches = true (only last-level-cache misses reach the memory kinds)."
            ));
        }
        if !(self.clock_ghz > 0.0 && self.clock_ghz <= 100.0) {
            return err(format!("config '{c}': hybrid.clock_ghz = {} must lie in (0, 100].", self.clock_ghz));
        }
        if self.interval == 0 {
            return err(format!("config '{c}': hybrid.interval = 0 must be at least 1 cycle."));
        }
        if self.check_instructions == 0 {
            return err(format!("config '{c}': hybrid.check_instructions = 0 must be at least 1 instruction."));
        }
        if self.migration == MigrationPolicy::Rainbow {
            self.validate_rainbow(c, thp)?;
        }
        Ok(())
    }

    /// Rainbow's own keys (`hybrid.migration = "rainbow"`).
    fn validate_rainbow(&self, c: &str, thp: bool) -> Result<()> {
        if self.top_superpages == 0 {
            return err(format!(
                "config '{c}': hybrid.top_superpages = 0 must be at least 1 (Rainbow monitors the 4KB pages of the N hottest superpages)."
            ));
        }
        if self.write_weight == 0 {
            return err(format!(
                "config '{c}': hybrid.write_weight = 0 must be at least 1 (an NVM write counts at least as a read)."
            ));
        }
        let (e, w) = (self.bitmap_cache_entries, self.bitmap_cache_ways);
        if w == 0 || e == 0 || !e.is_multiple_of(w) {
            return err(format!(
                "config '{c}': hybrid.bitmap_cache_entries = {e} must be a positive multiple of hybrid.bitmap_cache_ways = {w}."
            ));
        }
        if self.counting != Counting::Memory || self.granularity != Granularity::Page4K {
            return err(format!(
                "config '{c}': hybrid.migration = \"rainbow\" counts at the memory controller and moves 4KB pages: leave hybrid.counting and hybrid.granularity at their defaults."
            ));
        }
        if !thp {
            return err(format!(
                "config '{c}': hybrid.migration = \"rainbow\" needs os.policy = \"thp\" (Rainbow manages NVM as 2MB superpages)."
            ));
        }
        Ok(())
    }
}
