//! Simulator configuration: strict TOML (unknown keys rejected), `--set key=value` overrides,
//! and validation that names the component, the field and the value in one sentence.
//!
//! The schema is documented in `docs/config.md`; presets live in `configs/cpus/*.toml`.

pub mod bounds;
pub mod footprint;
mod hashed;
mod hybrid;
pub mod layout;
mod lite;
mod mach;
mod os;
mod parse;
mod prefetch;
mod prism;
mod structures;
mod time;
mod virt;

pub use crate::units::{PageSize, Size};
pub use hashed::{CwcConfig, HashedConfig, HashedKind};
pub use hybrid::{Counting, Granularity, HybridConfig, MigrationPolicy};
use layout::Layout;
pub use lite::{LiteConfig, LiteReference, LiteThreshold};
pub use mach::{MachConfig, PartitionPolicy, PtlbKernelIpc, StlbKind};
use os::is_default_range_threshold;
pub use os::*;
pub use parse::{apply_set, ConfigError, Result};
pub(crate) use parse::{check_geometry, err, extend, from_value, parse_toml};
pub use prefetch::{PrefetchKind, TlbPrefetchConfig};
pub use prism::*;
use serde::{Deserialize, Serialize};
pub use structures::*;
pub use time::{TimeConfig, TimeModel, TimeVariant};
pub use virt::{NtlbConfig, VirtConfig, GUEST_BASE};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Send data accesses (loads, stores, fetches) through the caches too, so that walk loads
    /// compete with data (the thesis' interference study); off by default for speed.
    #[serde(default)]
    pub data_through_caches: bool,
    /// Seed of random replacement and of memory fragmentation.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Sample every counter each this many accesses (0: off).
    #[serde(default)]
    pub interval_accesses: u64,
    /// Count walks (last-level TLB misses) per 2MB region of the simulated address space and
    /// report them as `miss_profile` (the sliding-window heuristic's input).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub miss_profile: bool,
    /// At the end of the run, report the ranges the OS could form (maximal runs of virtually
    /// and physically contiguous pages per VMA) as `contiguity` (RMM, seed 000 Table 4.7).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub contiguity: bool,
    /// Measure the ranges the OS could form (as `contiguity`) every this many instructions,
    /// as the time series `epochs.contiguity` (0: off).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub contiguity_every: u64,
    /// The range threshold of those measurements, in 4KB pages (seed 000 section 4.4: 32 KB).
    #[serde(default = "default_contiguity_threshold", skip_serializing_if = "is_default_contiguity_threshold")]
    pub contiguity_threshold: u64,
    /// Sample every counter each this many instructions (0: off).
    #[serde(default)]
    pub interval_instructions: u64,
    /// Ideal cycles per instruction of the time estimate (translation cycles are added).
    #[serde(default = "default_cpi")]
    pub base_cpi: f64,
}

impl std::hash::Hash for SimConfig {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.data_through_caches.hash(h);
        self.seed.hash(h);
        self.interval_accesses.hash(h);
        self.interval_instructions.hash(h);
        self.base_cpi.to_bits().hash(h);
        self.miss_profile.hash(h);
        // Hashed only when on, so that the hash of every configuration without it is unchanged.
        if self.contiguity {
            "contiguity".hash(h);
        }
        if self.contiguity_every > 0 {
            ("contiguity_every", self.contiguity_every, self.contiguity_threshold).hash(h);
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn default_contiguity_threshold() -> u64 {
    8 // seed 000 section 4.4: 32 KB
}

fn is_default_contiguity_threshold(n: &u64) -> bool {
    *n == default_contiguity_threshold()
}

fn default_seed() -> u64 {
    1
}
fn default_cpi() -> f64 {
    1.0
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            data_through_caches: false,
            seed: 1,
            interval_accesses: 0,
            miss_profile: false,
            contiguity: false,
            contiguity_every: 0,
            contiguity_threshold: default_contiguity_threshold(),
            interval_instructions: 0,
            base_cpi: 1.0,
        }
    }
}

/// The whole configuration of one simulated core.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Where the numbers come from.
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub os: OsConfig,
    #[serde(default)]
    pub memory: MemoryConfig,
    #[serde(default)]
    pub tlb: Vec<TlbConfig>,
    #[serde(default)]
    pub psc: Vec<PscConfig>,
    /// Range TLBs in the miss path (none by default).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub range_tlb: Vec<RangeTlbConfig>,
    /// The Clustered TLB baseline (none by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_tlb: Option<ClusterTlbConfig>,
    /// The direct-segment baseline (none by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_segment: Option<DirectSegmentConfig>,
    /// PRISM's variable-granularity access and dirty bits (none by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prism: Option<PrismConfig>,
    #[serde(default)]
    pub walker: WalkerConfig,
    #[serde(default)]
    pub cache: Vec<CacheConfig>,
    #[serde(default)]
    pub sim: SimConfig,
    /// Lite's way-disabling controller of the L1 page TLBs (none by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lite: Option<LiteConfig>,
    /// A TLB prefetcher filling the STLB after each walk (none by default; mmu/prefetch.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlb_prefetch: Option<TlbPrefetchConfig>,
    /// Mach 3.0's software-managed TLB (none by default; mmu/mach/, docs/mach.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mach: Option<MachConfig>,
    /// A hybrid DRAM/NVM memory's time model and migration (Rainbow's baselines; none by
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridConfig>,
    /// The core model of the time estimate (`docs/time-model.md`); the additive model when
    /// absent or `model = "additive"` (then not serialised).
    #[serde(default, skip_serializing_if = "TimeConfig::additive")]
    pub time: Option<TimeConfig>,
    /// Virtualised translation: the trace runs in a guest, walks are two-dimensional (none by
    /// default; `[virt]`, mmu/walker/nested.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virt: Option<VirtConfig>,
    /// A hashed page table in place of the radix walk (none by default; `[hashed_pt]`,
    /// mmu/walker/hashed.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hashed_pt: Option<HashedConfig>,
    /// The mosaic layout (set by `--layout`; required when `os.policy = "mosaic"`).
    #[serde(default)]
    pub layout: Option<Layout>,
}

impl Config {
    /// What `[mach]` cannot run with, one sentence each.
    fn validate_mach(&self) -> Result<()> {
        let c = &self.name;
        let others = [
            (!self.tlb.is_empty(), "[[tlb]] entries (the machine's TLB is mach.entries)"),
            (!self.psc.is_empty(), "[[psc]] entries"),
            (!self.os.asid, "os.asid = false (its TLB entries are tagged with address spaces)"),
            (self.os.levels != 4, "os.levels = 5 (user addresses lie below 2^47)"),
        ];
        if let Some((_, what)) = others.iter().find(|(bad, _)| *bad) {
            return err(format!("config '{c}': [mach] cannot run with {what}; remove it."));
        }
        Ok(())
    }

    /// Check every section's rules that serde's types do not; one sentence naming the
    /// component and field. (`Config::validate`, in the assembly room, checks these and then
    /// that the designs run together.)
    pub fn validate_sections(&self) -> Result<()> {
        let c = &self.name;
        if !(4..=5).contains(&self.os.levels) {
            return err(format!("config '{c}': os.levels = {} must be 4 or 5.", self.os.levels));
        }
        if c.trim().is_empty() {
            return err("config: name is empty; give the configuration a name (it labels every result).");
        }
        let m = &self.memory;
        // At least 9: a 2MB block (2MB pages need one, and the buddy allocator keeps its free
        // memory in blocks of up to this order: below 9, 64GiB is millions of 4KB free blocks).
        if !(MIN_MAX_ORDER..=20).contains(&m.max_order) {
            return err(format!(
                "config '{c}': memory.max_order = {} must be between {MIN_MAX_ORDER} (2MB blocks) and 20 (4GB blocks).",
                m.max_order
            ));
        }
        if m.size.0 < (1 << 21) || !m.size.0.is_multiple_of(4096) || m.size.0 > (1u64 << 42) {
            return err(format!(
                "config '{c}': memory.size = {} must be a multiple of 4KiB between 2MiB and 4TiB.",
                m.size.0
            ));
        }
        self.validate_kinds_and_policies()?;
        if !(0.0..=1.0).contains(&m.fragmentation) {
            return err(format!("config '{c}': memory.fragmentation = {} must be between 0 and 1.", m.fragmentation));
        }
        if m.fragmentation > 0.0 && m.max_order < 9 {
            return err(format!(
                "config '{c}': memory.fragmentation needs memory.max_order >= 9, not {}.",
                m.max_order
            ));
        }
        if let Some(m) = &self.mach {
            m.validate(c)?;
            self.validate_mach()?;
        } else if self.tlb.is_empty() {
            return err(format!("config '{c}': at least one [[tlb]] is needed."));
        }
        let mut names = std::collections::HashSet::new();
        let max_level = self.validate_tlbs(&mut names)?;
        self.validate_baselines(max_level)?;
        if let Some(p) = self.prism() {
            p.validate(&self.name)?;
            if self.os.metadata != MetadataPolicy::Registry {
                return err(format!(
                    "config '{}': prism needs os.metadata = \"registry\" (the MREs live in the metadata registry's pages).",
                    self.name
                ));
            }
        }
        self.validate_pscs_and_caches(&mut names)?;
        self.validate_walker()?;
        self.validate_virt()?;
        self.validate_hashed()?;
        if let Some(l) = &self.lite {
            l.validate(c, self.walker.kind == WalkerKind::Radix, &self.tlb)?;
        }
        if let Some(p) = &self.tlb_prefetch {
            p.validate(c, &self.tlb)?;
        }
        if let Some(t) = &self.time {
            let software = self.mach.is_some() || self.walker.kind != WalkerKind::Radix;
            t.validate(c, self.sim.data_through_caches, software)?;
        }
        if let Some(h) = &self.hybrid {
            h.validate(c, self.memory.kinds.len(), self.sim.data_through_caches, self.os.policy == Policy::Thp)?;
            if self.cache.last().is_none_or(|l| l.line != 64) {
                return err(format!(
                    "config '{c}': [hybrid] needs at least one [[cache]] level, the last with 64-byte lines (its dirty lines are tracked by 64-byte line)."
                ));
            }
        }
        if self.sim.contiguity_threshold == 0 {
            return err(format!("config '{c}': sim.contiguity_threshold = 0 must be at least 1 page."));
        }
        if !(0.0..=bounds::MAX_CPI).contains(&self.sim.base_cpi) {
            let (v, max) = (self.sim.base_cpi, bounds::MAX_CPI);
            return err(format!("config '{c}': sim.base_cpi = {v:?} must be between 0 and {max}."));
        }
        let v = serde_json::to_value(self).map_err(|e| ConfigError(format!("config '{c}': {e}")))?;
        if let Err(e) = bounds::check(&v, "") {
            return err(format!("config '{c}': {e}."));
        }
        if self.sim.interval_accesses > 0 && self.sim.interval_instructions > 0 {
            return err(format!("config '{c}': set only one of sim.interval_accesses and sim.interval_instructions."));
        }
        self.validate_layout()
    }

    /// `[[tlb]]` and `[[range_tlb]]`: names (into `names`), geometry, levels; the deepest level.
    fn validate_tlbs(&self, names: &mut std::collections::HashSet<String>) -> Result<u32> {
        let c = &self.name;
        for (i, t) in self.tlb.iter().enumerate() {
            let w = format!("config '{c}': tlb '{}' (tlb[{i}])", t.name);
            if !names.insert(format!("tlb.{}", t.name)) {
                return err(format!("{w}: the name is used twice."));
            }
            check_geometry(&w, t.entries, t.ways, t.replacement)?;
            if t.level == 0 {
                return err(format!("{w}: level = 0; levels count from 1."));
            }
            if t.page_sizes.is_empty() {
                return err(format!("{w}: page_sizes is empty."));
            }
        }
        let max_level = self.tlb.iter().map(|t| t.level).max().unwrap_or(0);
        for l in 1..=max_level {
            if !self.tlb.iter().any(|t| t.level == l) {
                return err(format!("config '{c}': no TLB has level {l}, but level {max_level} exists."));
            }
        }
        for (i, r) in self.range_tlb.iter().enumerate() {
            let w = format!("config '{c}': range_tlb '{}' (range_tlb[{i}])", r.name);
            if !names.insert(format!("tlb.{}", r.name)) {
                return err(format!("{w}: the name is used twice (TLB and range TLB names share one space)."));
            }
            if !(1..=1024).contains(&r.entries) {
                return err(format!("{w}: entries = {} must be between 1 and 1024.", r.entries));
            }
            if r.stage < 1 || r.stage > max_level + 1 {
                return err(format!(
                    "{w}: stage = {} must be between 1 and {} (a TLB level, or one past the last TLB level).",
                    r.stage,
                    max_level + 1
                ));
            }
        }
        Ok(max_level)
    }

    /// `[[psc]]` and `[[cache]]`: names (beside the TLBs' in `names`), geometry.
    fn validate_pscs_and_caches(&self, names: &mut std::collections::HashSet<String>) -> Result<()> {
        let c = &self.name;
        for (i, p) in self.psc.iter().enumerate() {
            let w = format!("config '{c}': psc '{}' (psc[{i}])", p.name);
            if !names.insert(format!("psc.{}", p.name)) {
                return err(format!("{w}: the name is used twice."));
            }
            check_geometry(&w, p.entries, p.ways, p.replacement)?;
            if p.caches == PscLevel::Pml5e && self.os.levels != 5 {
                return err(format!("{w}: caches = \"pml5e\" needs os.levels = 5."));
            }
            if self.psc[..i].iter().any(|q| q.caches == p.caches) {
                return err(format!("{w}: a second PSC for the same level ({:?}).", p.caches));
            }
        }
        for (i, k) in self.cache.iter().enumerate() {
            let w = format!("config '{c}': cache '{}' (cache[{i}])", k.name);
            if !names.insert(format!("cache.{}", k.name)) {
                return err(format!("{w}: the name is used twice."));
            }
            if !k.line.is_power_of_two() || k.line < 8 {
                return err(format!("{w}: line = {} must be a power of two of at least 8.", k.line));
            }
            if k.size.0 == 0 || k.size.0 % k.line != 0 {
                return err(format!("{w}: size = {} must be a positive multiple of line = {}.", k.size.0, k.line));
            }
            check_geometry(&w, k.size.0 / k.line, k.ways, k.replacement)?;
        }
        Ok(())
    }

    /// `[walker]`: the first cache it names, and what each kind needs.
    fn validate_walker(&self) -> Result<()> {
        let c = &self.name;
        if let Some(f) = &self.walker.first_cache {
            if !self.cache.iter().any(|k| &k.name == f) {
                return err(format!("config '{c}': walker.first_cache = '{f}' names no [[cache]]."));
            }
        }
        match self.walker.kind {
            WalkerKind::Radix => {
                if self.walker.trap_cycles.is_some() || self.walker.nested_trap_cycles.is_some() {
                    return err(format!(
                        "config '{c}': walker.trap_cycles and walker.nested_trap_cycles apply to walker.kind = \"software\" only."
                    ));
                }
            }
            WalkerKind::Software => {
                if !self.psc.is_empty() {
                    return err(format!(
                        "config '{c}': walker.kind = \"software\" uses no paging-structure caches; remove the [[psc]] entries."
                    ));
                }
                if self.os.levels != 4 {
                    return err(format!(
                        "config '{c}': walker.kind = \"software\" needs os.levels = 4 (its linear page table lies above the 47-bit user addresses)."
                    ));
                }
            }
        }
        Ok(())
    }

    /// The mosaic layout and `os.pools_at`.
    fn validate_layout(&self) -> Result<()> {
        let c = &self.name;
        if self.os.policy == Policy::Mosaic && self.layout.is_none() {
            return err(format!("config '{c}': os.policy = \"mosaic\" needs a layout (--layout FILE)."));
        }
        if let Some(l) = &self.layout {
            l.validate(&format!("config '{c}': layout"))?;
        }
        if let Some(p) = &self.os.pools_at {
            if self.os.policy != Policy::Mosaic {
                return err(format!(
                    "config '{c}': os.pools_at only applies to os.policy = \"mosaic\" (--layout FILE)."
                ));
            }
            let l = self.layout.as_ref().expect("mosaic has a layout");
            let mut pools =
                [("heap", p.heap, l.heap_size()), ("anon", p.anon, l.anon_size()), ("file", p.file, l.file_size())];
            for (name, at, _) in pools {
                if at % (1 << 30) != 0 || at == 0 {
                    return err(format!("config '{c}': os.pools_at.{name} = {at:#x} is not a nonzero multiple of 1GiB (the allocator aligns pools to 1GiB)."));
                }
            }
            pools.sort_by_key(|x| x.1);
            for w in pools.windows(2) {
                if w[0].1.saturating_add(w[0].2) > w[1].1 {
                    return err(format!(
                        "config '{c}': os.pools_at: the {} pool ({:#x} + {} bytes) overlaps the {} pool at {:#x}.",
                        w[0].0, w[0].1, w[0].2, w[1].0, w[1].1
                    ));
                }
            }
        }
        Ok(())
    }

    /// The clustered TLB (in use if enabled).
    pub fn cluster_tlb(&self) -> Option<&ClusterTlbConfig> {
        self.cluster_tlb.as_ref().filter(|c| c.enabled)
    }

    /// PRISM (in use if enabled).
    pub fn prism(&self) -> Option<&PrismConfig> {
        self.prism.as_ref().filter(|p| p.enabled)
    }

    /// The direct segment (in use if enabled).
    pub fn direct_segment(&self) -> Option<&DirectSegmentConfig> {
        self.direct_segment.as_ref().filter(|d| d.enabled)
    }

    /// `[cluster_tlb]` and `[direct_segment]` (section 4.8's baselines).
    fn validate_baselines(&self, max_level: u32) -> Result<()> {
        let c = &self.name;
        let stage_ok = |w: &str, stage: u32| {
            if stage < 2 || stage > max_level + 1 {
                return err(format!(
                    "config '{c}': {w}.stage = {stage} must be between 2 and {} (a level of the miss path: 2 .. one past the last TLB level).",
                    max_level + 1
                ));
            }
            Ok(())
        };
        if let Some(t) = self.cluster_tlb() {
            if !(1..=1 << 16).contains(&t.entries) {
                return err(format!("config '{c}': cluster_tlb.entries = {} must be between 1 and 65536.", t.entries));
            }
            if !t.cluster.is_power_of_two() || !(2..=8).contains(&t.cluster) {
                return err(format!(
                    "config '{c}': cluster_tlb.cluster = {} must be 2, 4 or 8 pages (a power of two whose PTEs fit in one 64-byte line).",
                    t.cluster
                ));
            }
            stage_ok("cluster_tlb", t.stage)?;
        }
        if let Some(d) = self.direct_segment() {
            if self.os.ranges == RangePolicy::None {
                return err(format!(
                    "config '{c}': direct_segment holds the largest range translation, so it needs os.ranges = \"contiguous\"."
                ));
            }
            stage_ok("direct_segment", d.stage)?;
        }
        Ok(())
    }

    /// `[[memory.kinds]]` and the OS policies' keys.
    fn validate_kinds_and_policies(&self) -> Result<()> {
        let (c, m) = (&self.name, &self.memory);
        if m.kinds.len() > MAX_MEMORY_KINDS {
            return err(format!("config '{c}': memory.kinds has {} kinds, at most {MAX_MEMORY_KINDS}.", m.kinds.len()));
        }
        for (i, k) in m.kinds.iter().enumerate() {
            let w = format!("config '{c}': memory kind '{}' (memory.kinds[{i}])", k.name);
            if k.name.is_empty() {
                return err(format!("config '{c}': memory.kinds[{i}].name is empty."));
            }
            if m.kinds[..i].iter().any(|o| o.name == k.name) {
                return err(format!("{w}: the name is used twice."));
            }
            if k.size.0 == 0 || !k.size.0.is_multiple_of(2 << 20) {
                return err(format!("{w}: size = {} must be a positive multiple of 2MiB.", k.size.0));
            }
            for (f, v) in [
                ("read_energy_pj", k.read_energy_pj),
                ("write_energy_pj", k.write_energy_pj),
                ("static_power_mw", k.static_power_mw),
            ] {
                if !v.is_finite() || v < 0.0 {
                    return err(format!("{w}: {f} = {v} must be a finite number >= 0."));
                }
            }
        }
        if let Some(k) = m.kinds.iter().find(|k| k.size.0 > m.size.0) {
            return err(format!(
                "config '{c}': memory kind '{}' ({} bytes) is larger than the whole memory (memory.size = {} bytes).",
                k.name, k.size.0, m.size.0
            ));
        }
        let sum = m.kinds.iter().fold(0u64, |a, k| a.saturating_add(k.size.0));
        if !m.kinds.is_empty() && sum != m.size.0 {
            return err(format!(
                "config '{c}': memory.size = {} must equal the sum of the memory.kinds sizes ({sum}); leave memory.size out to take the sum.",
                m.size.0
            ));
        }
        let o = &self.os;
        if let Some(k) = o.eager_max_order {
            if o.allocation != Allocation::Eager {
                return err(format!("config '{c}': os.eager_max_order only applies to os.allocation = \"eager\"."));
            }
            if k > m.max_order {
                return err(format!(
                    "config '{c}': os.eager_max_order = {k} must be at most memory.max_order = {}.",
                    m.max_order
                ));
            }
        }
        if o.eager_placement != EagerPlacement::default() && o.allocation != Allocation::Eager {
            return err(format!("config '{c}': os.eager_placement only applies to os.allocation = \"eager\"."));
        }
        if !o.eager_promote && o.allocation != Allocation::Eager {
            return err(format!("config '{c}': os.eager_promote only applies to os.allocation = \"eager\"."));
        }
        if o.eager_files && o.allocation != Allocation::Eager {
            return err(format!("config '{c}': os.eager_files only applies to os.allocation = \"eager\"."));
        }
        if !is_default_range_threshold(&o.range_threshold) && o.ranges == RangePolicy::None {
            return err(format!("config '{c}': os.range_threshold only applies to os.ranges = \"contiguous\"."));
        }
        if o.range_threshold.0 == 0 || !o.range_threshold.0.is_multiple_of(4096) {
            return err(format!(
                "config '{c}': os.range_threshold = {} must be a positive multiple of 4KiB.",
                o.range_threshold.0
            ));
        }
        if o.tiering != TieringPolicy::LowestFirst && m.kinds.len() < 2 {
            return err(format!("config '{c}': os.tiering = \"highest-first\" needs at least two memory.kinds."));
        }
        Ok(())
    }

    /// Canonical JSON of the effective configuration (defaults filled in).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("config serialises")
    }

    /// FNV-1a of the canonical JSON: stamps results so that runs of one configuration match.
    pub fn hash_hex(&self) -> String {
        let s = self.to_json().to_string();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in s.bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        format!("{h:016x}")
    }
}

/// The smallest `memory.max_order`: order 9, a 2MB block.
pub const MIN_MAX_ORDER: u32 = 9;

// ---- [virt] and [hashed_pt]: what they need of the whole configuration (their own tables'
// rules are in virt.rs and hashed.rs).

impl Config {
    /// The host's configuration: this one with `[virt.host]` as its OS and the host's memory,
    /// one kind of memory, no layout.
    pub fn virt_host(&self) -> Option<Config> {
        let v = self.virt.as_ref()?;
        let mut h = self.clone();
        h.name = format!("{} [virt.host]", self.name);
        h.os = v.host.clone();
        h.memory.size = Size(v.host_memory(self.memory.size.0));
        h.memory.kinds.clear();
        h.memory.fragmentation = 0.0;
        h.layout = None;
        h.hashed_pt = v.host_hashed.clone();
        h.virt = None;
        Some(h)
    }

    /// `[virt]`: the host's memory holds the guest's, its policies are the OS model's, and the
    /// designs that read the guest's frames as machine frames are refused.
    pub(super) fn validate_virt(&self) -> Result<()> {
        let Some(v) = &self.virt else { return Ok(()) };
        let c = &self.name;
        let (guest, host) = (self.memory.size.0, v.host_memory(self.memory.size.0));
        if host < guest.saturating_add(1 << 21) {
            return err(format!(
                "config '{c}': the guest's memory (memory.size = {guest} bytes) does not fit in the host's (virt.host_memory = {host} bytes): the guest's physical memory is one mapping of the host's, which also holds the host's page tables; give the host at least 2MiB more than the guest."
            ));
        }
        if !(4..=5).contains(&v.host.levels) {
            return err(format!("config '{c}': virt.host.levels = {} must be 4 or 5.", v.host.levels));
        }
        if v.host.policy == Policy::Mosaic {
            return err(format!(
                "config '{c}': virt.host.policy = \"mosaic\" is not modelled: the host maps the guest's memory with 4k, thp or 1g pages."
            ));
        }
        let others = [
            (self.memory.kinds.len() > 1, "several memory kinds (memory.kinds)"),
            (self.hybrid.is_some(), "a hybrid memory ([hybrid])"),
            (self.os.ranges != Default::default(), "range translations (os.ranges)"),
            (!self.range_tlb.is_empty(), "range TLBs ([[range_tlb]])"),
            (self.cluster_tlb().is_some(), "a clustered TLB ([cluster_tlb])"),
            (self.direct_segment().is_some(), "a direct segment ([direct_segment])"),
            (self.prism().is_some(), "PRISM ([prism])"),
            (self.tlb_prefetch.is_some(), "a TLB prefetcher ([tlb_prefetch])"),
        ];
        if let Some((_, what)) = others.iter().find(|o| o.0) {
            return err(format!(
                "config '{c}': [virt] does not run with {what} yet: they read the guest's frames as the machine's; remove one."
            ));
        }
        let mut seen = Vec::new();
        for (i, p) in v.host_psc.iter().enumerate() {
            let w = format!("config '{c}': virt.host_psc '{}' (virt.host_psc[{i}])", p.name);
            check_geometry(&w, p.entries, p.ways, p.replacement)?;
            if p.caches.table_level() > v.host.levels as usize {
                return err(format!("{w}: caches = \"pml5e\" needs virt.host.levels = 5."));
            }
            if seen.contains(&p.caches) {
                return err(format!("{w}: a second host PSC for the same level ({:?}).", p.caches));
            }
            if self.psc.iter().any(|g| g.name == p.name) {
                return err(format!("{w}: the name is a guest PSC's too; give it another."));
            }
            seen.push(p.caches);
        }
        if let Some(h) = &v.host_hashed {
            h.validate(c, "virt.host_hashed")?;
            if !v.host_psc.is_empty() {
                return err(format!(
                    "config '{c}': virt.host_hashed has no page-table levels for virt.host_psc to cache; remove one."
                ));
            }
        }
        if let Some(n) = &v.ntlb {
            check_geometry(&format!("config '{c}': virt.ntlb"), n.entries, n.ways, n.replacement)?;
        }
        if self.hashed_pt.is_some() && v.walk_log > 0 {
            return err(format!(
                "config '{c}': virt.walk_log records radix guest walks; with a hashed guest table ([hashed_pt]) set it to 0."
            ));
        }
        let host = self.virt_host().expect("[virt] is present");
        host.validate_kinds_and_policies().map_err(|e| ConfigError(format!("{e} (in [virt.host])")))
    }
}

impl Config {
    pub(super) fn validate_hashed(&self) -> Result<()> {
        let Some(h) = &self.hashed_pt else { return Ok(()) };
        let c = &self.name;
        h.validate(c, "hashed_pt")?;
        if !self.psc.is_empty() {
            return err(format!(
                "config '{c}': [hashed_pt] has no page-table levels for [[psc]] to cache; remove the PSCs (--set psc=[])."
            ));
        }
        if self.prism().is_some() || self.os.metadata != Default::default() {
            return err(format!(
                "config '{c}': [hashed_pt] does not run with PRISM's metadata registry yet (it sits beside radix page-directory pages)."
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
