//! Simulator configuration: strict TOML (unknown keys rejected), `--set key=value` overrides,
//! and validation that names the component, the field and the value in one sentence.
//!
//! The schema is documented in `docs/config.md`; presets live in `configs/cpus/*.toml`.

pub mod layout;
mod parse;

use crate::array::Replacement;
pub use crate::units::{PageSize, Size};
use layout::Layout;
pub use parse::{apply_set, ConfigError, Result};
pub(crate) use parse::{err, from_value, parse_toml};
use serde::{Deserialize, Serialize};

/// Which accesses a TLB serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Loads and stores.
    Data,
    /// Instruction fetches.
    Instruction,
    /// Both.
    Unified,
}

impl Role {
    #[inline(always)]
    pub fn serves(self, ifetch: bool) -> bool {
        match self {
            Role::Data => !ifetch,
            Role::Instruction => ifetch,
            Role::Unified => true,
        }
    }
}

/// One TLB.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Hash)]
#[serde(deny_unknown_fields)]
pub struct TlbConfig {
    pub name: String,
    /// 1 = first level probed; a miss at every TLB of level k goes to level k+1.
    pub level: u32,
    pub role: Role,
    pub entries: u64,
    /// `ways = entries` makes it fully associative.
    pub ways: u64,
    pub page_sizes: Vec<PageSize>,
    #[serde(default = "default_repl")]
    pub replacement: Replacement,
    /// Cycles of a hit at this level (used by the time estimate; level 1 is usually 0 extra).
    #[serde(default)]
    pub latency: u64,
    /// Fill entries of page sizes this TLB does not hold as entries of the largest size it
    /// holds that is smaller ("splintering", as AMD's L2 TLB does for 1GB pages).
    #[serde(default)]
    pub splinter: bool,
}

fn default_repl() -> Replacement {
    Replacement::Lru
}

/// Which paging-structure entries a PSC caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PscLevel {
    /// Entries of the PML5 table (5-level paging only), tagged by VA[56:48].
    Pml5e,
    /// PML4 entries, tagged by VA[47:39]: a hit skips one load.
    Pml4e,
    /// PDPT entries, tagged by VA[47:30]: a hit skips two loads.
    Pdpte,
    /// PD entries that point to page tables, tagged by VA[47:21]: a hit skips three loads.
    Pde,
}

impl PscLevel {
    /// Page-table level whose entries this caches (4 = PML4, 3 = PDPT, 2 = PD; 5 = PML5).
    pub fn table_level(self) -> usize {
        match self {
            PscLevel::Pml5e => 5,
            PscLevel::Pml4e => 4,
            PscLevel::Pdpte => 3,
            PscLevel::Pde => 2,
        }
    }
}

/// A paging-structure cache (Intel SDM vol. 3 section 4.10.3; thesis chapter 2, "MMU caches").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Hash)]
#[serde(deny_unknown_fields)]
pub struct PscConfig {
    pub name: String,
    pub caches: PscLevel,
    pub entries: u64,
    pub ways: u64,
    #[serde(default = "default_repl")]
    pub replacement: Replacement,
}

/// A data/unified cache level that walk loads (and optionally data accesses) go through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Hash)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    pub name: String,
    pub size: Size,
    pub ways: u64,
    #[serde(default = "default_line")]
    pub line: u64,
    /// Load-to-use cycles of a hit here.
    pub latency: u64,
    #[serde(default = "default_repl")]
    pub replacement: Replacement,
}

fn default_line() -> u64 {
    64
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// 4KB pages only (hugetlb VMAs still get their huge pages).
    #[serde(rename = "4k")]
    Base,
    /// Transparent huge pages (mode in `os.thp`).
    Thp,
    /// A mosaic layout (`--layout`).
    Mosaic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum ThpMode {
    /// Every anonymous VMA is eligible.
    Always,
    /// Only ranges given `madvise(MADV_HUGEPAGE)`.
    Madvise,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Hash)]
#[serde(deny_unknown_fields)]
pub struct OsConfig {
    /// Page-table levels: 4 (48-bit VA) or 5 (57-bit VA).
    #[serde(default = "default_levels")]
    pub levels: u32,
    #[serde(default = "default_policy")]
    pub policy: Policy,
    #[serde(default = "default_thp")]
    pub thp: ThpMode,
    /// TLB entries tagged with an address-space id (PCID): no flush on context switch.
    #[serde(default = "default_true")]
    pub asid: bool,
    /// Mosaic pools at the trace's own addresses: for a trace recorded under the mosaic
    /// allocator, the pool start addresses it reported. Unset: the simulator places the pools
    /// and relocates trace addresses into them (`docs/simulator.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pools_at: Option<PoolsAt>,
    /// When memory is allocated: on the first touch (`demand`) or when mapped (`eager`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub allocation: Allocation,
    /// Eager paging: the largest buddy order a mapping is populated with (default
    /// `memory.max_order`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eager_max_order: Option<u32>,
    /// Range translations kept in a per-process range table (RMM): `none` or `contiguous`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub ranges: RangePolicy,
    /// Smallest range translation (`ranges = "contiguous"`), a multiple of 4KiB.
    #[serde(default = "default_range_threshold", skip_serializing_if = "is_default_range_threshold")]
    pub range_threshold: Size,
    /// Which memory kind (zone) an allocation tries first.
    #[serde(default, skip_serializing_if = "is_default")]
    pub tiering: TieringPolicy,
    /// What an allocation that finds no free block does.
    #[serde(default, skip_serializing_if = "is_default")]
    pub reclaim: ReclaimPolicy,
    /// Access/dirty metadata: in the page-table entries (`page`) or also in a companion page
    /// beside each page-directory page (`registry`, PRISM).
    #[serde(default, skip_serializing_if = "is_default")]
    pub metadata: MetadataPolicy,
}

fn is_default<T: Default + PartialEq>(x: &T) -> bool {
    *x == T::default()
}
fn default_range_threshold() -> Size {
    Size(32 << 10)
}
fn is_default_range_threshold(s: &Size) -> bool {
    *s == default_range_threshold()
}

/// `os.allocation`: when the OS backs a mapping with frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Allocation {
    /// On the first touch of each page (Linux).
    #[default]
    Demand,
    /// The whole region at mmap/brk/mremap growth, with the largest free buddy blocks (RMM's
    /// eager paging, seed 000 Algorithm 4.1).
    Eager,
}

/// `os.ranges`: how range translations are created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum RangePolicy {
    /// No range table.
    #[default]
    None,
    /// A range for each maximal run of a VMA's pages backed by contiguous frames of at least
    /// `os.range_threshold` bytes.
    Contiguous,
}

/// `os.tiering`: the order in which allocations try the memory kinds (zones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum TieringPolicy {
    /// The lowest zone with a free block first (the first kind, DRAM, then the next).
    #[default]
    LowestFirst,
    /// Program data from the highest zone first (Rainbow places new pages in NVM); page tables
    /// still lowest first.
    HighestFirst,
}

/// `os.reclaim`: what happens when no free block is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum ReclaimPolicy {
    /// The run fails ("physical memory is exhausted").
    #[default]
    None,
    /// Evict resident 4KB pages in the order they were mapped.
    Fifo,
}

/// `os.metadata`: where access/dirty metadata is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum MetadataPolicy {
    /// One accessed and one dirty bit per page-table entry (x86-64).
    #[default]
    Page,
    /// A companion 4KB page beside each page-directory (level-2) page, 512 metadata entries
    /// (PRISM's metadata registry).
    Registry,
}

/// Start addresses of the mosaic pools in the trace's address space (`os.pools_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(deny_unknown_fields)]
pub struct PoolsAt {
    pub heap: u64,
    pub anon: u64,
    pub file: u64,
}

fn default_levels() -> u32 {
    4
}
fn default_policy() -> Policy {
    Policy::Base
}
fn default_thp() -> ThpMode {
    ThpMode::Always
}
fn default_true() -> bool {
    true
}

impl Default for OsConfig {
    fn default() -> Self {
        OsConfig {
            levels: 4,
            policy: Policy::Base,
            thp: ThpMode::Always,
            asid: true,
            pools_at: None,
            allocation: Allocation::Demand,
            eager_max_order: None,
            ranges: RangePolicy::None,
            range_threshold: default_range_threshold(),
            tiering: TieringPolicy::LowestFirst,
            reclaim: ReclaimPolicy::None,
            metadata: MetadataPolicy::Page,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// Physical memory size.
    #[serde(default = "default_phys")]
    pub size: Size,
    /// Largest buddy block order (order 9 = 2MB, 18 = 1GB, 20 = 4GB blocks).
    #[serde(default = "default_order")]
    pub max_order: u32,
    /// Fraction (0..1) of 2MB blocks that hold one pinned 4KB frame before the run starts, so
    /// that only the rest can back 2MB pages.
    #[serde(default)]
    pub fragmentation: f64,
    /// Cycles of a DRAM access (a load that misses every cache). With `kinds`, the first
    /// kind's `read_latency` (giving both is rejected).
    #[serde(default = "default_dram")]
    pub dram_latency: u64,
    /// The kinds of physical memory, in address order from physical address 0 (each one a
    /// zone of the buddy allocator). Empty: one DRAM kind of `size`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<MemoryKind>,
}

/// One kind of physical memory (`[[memory.kinds]]`): a contiguous range of frames.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryKind {
    /// Unique among the kinds ("dram", "nvm").
    pub name: String,
    /// A positive multiple of 2MiB.
    pub size: Size,
    /// Cycles of a read that misses every cache.
    #[serde(default = "default_dram")]
    pub read_latency: u64,
    /// Cycles of a write that misses every cache.
    #[serde(default = "default_dram")]
    pub write_latency: u64,
    /// Energy per read access (picojoules).
    #[serde(default)]
    pub read_energy_pj: f64,
    /// Energy per write access (picojoules).
    #[serde(default)]
    pub write_energy_pj: f64,
    /// Static (leakage and refresh) power (milliwatts).
    #[serde(default)]
    pub static_power_mw: f64,
}

impl std::hash::Hash for MemoryKind {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name.hash(h);
        self.size.hash(h);
        self.read_latency.hash(h);
        self.write_latency.hash(h);
        self.read_energy_pj.to_bits().hash(h);
        self.write_energy_pj.to_bits().hash(h);
        self.static_power_mw.to_bits().hash(h);
    }
}

impl std::hash::Hash for MemoryConfig {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.size.hash(h);
        self.max_order.hash(h);
        self.fragmentation.to_bits().hash(h);
        self.dram_latency.hash(h);
        self.kinds.hash(h);
    }
}

/// At most this many memory kinds (zones).
pub const MAX_MEMORY_KINDS: usize = 8;

fn default_phys() -> Size {
    Size(64 << 30)
}
fn default_order() -> u32 {
    18
}
fn default_dram() -> u64 {
    200
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig { size: default_phys(), max_order: 18, fragmentation: 0.0, dram_latency: 200, kinds: Vec::new() }
    }
}

/// Who handles a miss of every TLB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WalkerKind {
    /// The x86-64 hardware walker: paging-structure caches, then one load per remaining level.
    #[default]
    Radix,
    /// A software handler (a MIPS-style software-managed TLB): a trap, then one load of the
    /// leaf entry from a linear page table in kernel virtual space, whose own translation is
    /// looked up in the TLBs and may miss in turn (a nested miss, handled from the unmapped
    /// root).
    Software,
}

impl WalkerKind {
    fn is_radix(&self) -> bool {
        *self == WalkerKind::Radix
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Hash)]
#[serde(deny_unknown_fields)]
#[derive(Default)]
pub struct WalkerConfig {
    /// Name of the cache walk loads are sent to first (default: the first cache).
    #[serde(default)]
    pub first_cache: Option<String>,
    /// Fixed cycles per walk besides its loads (PSC lookup, walker start).
    #[serde(default)]
    pub latency: u64,
    /// `radix` (default) or `software`.
    #[serde(default, skip_serializing_if = "WalkerKind::is_radix")]
    pub kind: WalkerKind,
    /// `software`: cycles of the trap and handler of a miss besides its PTE load (default 9:
    /// the R3000's fast user-miss handler executes 9 instructions and one load, 10 cycles when
    /// the load hits the cache; seed 001 section 2.2, Table 2.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trap_cycles: Option<u64>,
    /// `software`: cycles of the handler of a nested miss (the PTE's page was not in the TLB)
    /// besides its load (default 555: Table 2.1's L2 miss through the generic trap handler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested_trap_cycles: Option<u64>,
}

/// `walker.trap_cycles` by default (seed 001, Table 2.1).
pub const DEFAULT_TRAP_CYCLES: u64 = 9;
/// `walker.nested_trap_cycles` by default (seed 001, Table 2.1, L2 misses).
pub const DEFAULT_NESTED_TRAP_CYCLES: u64 = 555;

/// A range TLB in the miss path: fully associative, LRU, serving loads, stores and fetches
/// (RMM's L2 range TLB, seed 000 section 4.3: 32 entries probed in parallel with the L2 TLB).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Hash)]
#[serde(deny_unknown_fields)]
pub struct RangeTlbConfig {
    pub name: String,
    pub entries: u64,
    /// The miss-path level it is probed at: 2 probes it with the level-2 page TLBs (in
    /// parallel); the level after the last page-TLB level probes it after them (in sequence).
    pub stage: u32,
    /// Cycles of a hit (the time estimate, as a TLB level's `latency`).
    #[serde(default)]
    pub latency: u64,
}

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
    }
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
    #[serde(default)]
    pub walker: WalkerConfig,
    #[serde(default)]
    pub cache: Vec<CacheConfig>,
    #[serde(default)]
    pub sim: SimConfig,
    /// The mosaic layout (set by `--layout`; required when `os.policy = "mosaic"`).
    #[serde(default)]
    pub layout: Option<Layout>,
}

impl Config {
    /// Parse and validate configuration text; `what` names it in errors (a path or preset).
    pub fn from_toml(what: &str, text: &str, sets: &[String]) -> Result<Config> {
        Self::build(what, text, sets, None)
    }

    /// Parse `text`, apply the `--set` overrides, attach a mosaic `layout` (which selects
    /// `os.policy = "mosaic"`), then validate.
    pub fn build(what: &str, text: &str, sets: &[String], layout: Option<Layout>) -> Result<Config> {
        let mut table = parse_toml(what, text)?;
        for s in sets {
            apply_set(&mut table, s)?;
        }
        // A [layout] table goes through the layout parser, not serde: the same rules and sentences.
        let inline = match table.remove("layout") {
            None => None,
            Some(toml::Value::Table(t)) => Some(Layout::from_table(&format!("{what} [layout]"), &t)?),
            Some(_) => return err(format!("{what}: layout must be a table (a mosaic layout).")),
        };
        let memory = table.get("memory").and_then(|m| m.as_table());
        let has = |k: &str| memory.is_some_and(|m| m.contains_key(k));
        let (both, size_given) = (has("kinds") && has("dram_latency"), has("size"));
        let mut cfg: Config = from_value(what, toml::Value::Table(table))?;
        cfg.layout = inline;
        if both {
            return err(format!(
                "config '{}': give memory.dram_latency or memory.kinds, not both (with kinds, each kind's read_latency applies).",
                cfg.name
            ));
        }
        if let Some(first) = cfg.memory.kinds.first() {
            cfg.memory.dram_latency = first.read_latency;
            if !size_given {
                cfg.memory.size = Size(cfg.memory.kinds.iter().fold(0u64, |a, k| a.saturating_add(k.size.0)));
            }
        }
        if let Some(l) = layout {
            cfg.layout = Some(l);
            cfg.os.policy = Policy::Mosaic;
        }
        cfg.validate()?;
        Ok(cfg)
    }

    /// Check every rule that serde's types do not; one sentence naming the component and field.
    pub fn validate(&self) -> Result<()> {
        let c = &self.name;
        if !(4..=5).contains(&self.os.levels) {
            return err(format!("config '{c}': os.levels = {} must be 4 or 5.", self.os.levels));
        }
        let m = &self.memory;
        if m.max_order > 20 {
            return err(format!("config '{c}': memory.max_order = {} must be at most 20.", m.max_order));
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
        if self.tlb.is_empty() {
            return err(format!("config '{c}': at least one [[tlb]] is needed."));
        }
        let mut names = std::collections::HashSet::new();
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
        let max_level = self.tlb.iter().map(|t| t.level).max().unwrap_or(1);
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
            if r.stage < 2 || r.stage > max_level + 1 {
                return err(format!(
                    "{w}: stage = {} must be between 2 and {} (a level of the miss path: 2 .. one past the last TLB level).",
                    r.stage,
                    max_level + 1
                ));
            }
        }
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
        if let Some(f) = &self.walker.first_cache {
            if !self.cache.iter().any(|k| &k.name == f) {
                return err(format!("config '{c}': walker.first_cache = '{f}' names no [[cache]]."));
            }
        }
        if self.sim.base_cpi.is_nan() || self.sim.base_cpi < 0.0 {
            return err(format!("config '{c}': sim.base_cpi = {} must be >= 0.", self.sim.base_cpi));
        }
        if self.sim.interval_accesses > 0 && self.sim.interval_instructions > 0 {
            return err(format!("config '{c}': set only one of sim.interval_accesses and sim.interval_instructions."));
        }
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

fn check_geometry(w: &str, entries: u64, ways: u64, repl: Replacement) -> Result<()> {
    if entries == 0 {
        return err(format!("{w}: entries must be positive, not 0."));
    }
    if entries > (1 << 28) {
        return err(format!("{w}: entries = {entries} is larger than 2^28."));
    }
    if ways == 0 {
        return err(format!("{w}: ways must be positive, not 0."));
    }
    if ways > entries || !entries.is_multiple_of(ways) {
        return err(format!("{w}: ways = {ways} does not divide entries = {entries}."));
    }
    if repl == Replacement::TreePlru && ways > 64 {
        return err(format!("{w}: tree-plru supports at most 64 ways, not {ways}."));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = r#"
name = "t"
[[tlb]]
name = "l1"
level = 1
role = "data"
entries = 64
ways = 4
page_sizes = ["4KB"]
"#;

    fn bad(extra: &str, sets: &[&str]) -> String {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Config::from_toml("t.toml", &format!("{MIN}{extra}"), &sets).unwrap_err().0
    }

    #[test]
    fn minimal_config_parses_with_defaults() {
        let c = Config::from_toml("t.toml", MIN, &[]).unwrap();
        assert_eq!(c.os.levels, 4);
        assert_eq!(c.memory.size.0, 64 << 30);
        assert_eq!(c.tlb[0].replacement, Replacement::Lru);
    }

    #[test]
    fn bad_configurations_name_the_field() {
        let e = bad("", &["tlb.l1.ways=5"]);
        assert!(e.contains("tlb 'l1'") && e.contains("ways = 5 does not divide entries = 64"), "{e}");
        let e = bad("", &["tlb.l1.page_sizes=[\"8KB\"]"]);
        assert!(e.contains("tlb[0] ('l1').page_sizes[0]") && e.contains("8KB"), "{e}");
        let e = bad("", &["memory.size=-4"]);
        assert!(e.contains("memory.size") && e.contains("negative"), "{e}");
        let e = bad("", &["tlb.l1.entires=4"]);
        assert!(e.contains("tlb[0] ('l1')") && e.contains("unknown field `entires`"), "{e}");
        let e = bad("[os]\nlevel = 4\n", &[]);
        assert!(e.contains("os") && e.contains("unknown field `level`"), "{e}");
        let e = bad("", &["tlb.l9.ways=4"]);
        assert_eq!(e, "--set 'tlb.l9.ways=4': there is no tlb named 'l9'.");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn set_overrides_apply() {
        let c = Config::from_toml("t", MIN, &["tlb.l1.entries=128".into(), "os.policy=thp".into()]).unwrap();
        assert_eq!(c.tlb[0].entries, 128);
        assert_eq!(c.os.policy, Policy::Thp);
        assert_ne!(c.hash_hex(), Config::from_toml("t", MIN, &[]).unwrap().hash_hex());
    }

    #[test]
    fn memory_kinds_and_os_policies() {
        let kinds = "[memory]\n[[memory.kinds]]\nname = \"dram\"\nsize = \"4GiB\"\nread_latency = 150\n[[memory.kinds]]\nname = \"nvm\"\nsize = \"8GiB\"\nread_latency = 600\n";
        let c =
            Config::from_toml("t", &format!("{MIN}{kinds}"), &["memory.kinds.nvm.write_latency=2000".into()]).unwrap();
        assert_eq!(c.memory.size.0, 12 << 30, "memory.size left out: the sum");
        assert_eq!(c.memory.dram_latency, 150, "the first kind's read latency");
        assert_eq!(c.memory.kinds[1].write_latency, 2000);
        assert!(c.to_json()["memory"].get("kinds").is_some());
        let d = Config::from_toml("t", MIN, &[]).unwrap();
        assert!(d.to_json()["memory"].get("kinds").is_none(), "absent by default: results unchanged");
        assert!(d.to_json()["os"].get("allocation").is_none());
        let e = bad(kinds, &["memory.size=8GiB"]);
        assert!(
            e.contains("memory.size = 8589934592 must equal the sum of the memory.kinds sizes (12884901888)"),
            "{e}"
        );
        let e = bad(kinds, &["memory.dram_latency=100"]);
        assert!(e.contains("give memory.dram_latency or memory.kinds, not both"), "{e}");
        let e = bad(kinds, &["memory.kinds.nvm.size=3MiB"]);
        assert!(
            e.contains("memory kind 'nvm' (memory.kinds[1]): size = 3145728 must be a positive multiple of 2MiB"),
            "{e}"
        );
        let e = bad(kinds, &["memory.kinds.nvm.name=\"dram\""]);
        assert!(e.contains("memory kind 'dram' (memory.kinds[1]): the name is used twice"), "{e}");
        let e = bad(kinds, &["memory.kinds.nvm.read_energy_pj=-1.0"]);
        assert!(e.contains("read_energy_pj = -1 must be a finite number >= 0"), "{e}");
        let c = Config::from_toml(
            "t",
            &format!("{MIN}{kinds}"),
            &[
                "os.tiering=highest-first",
                "os.allocation=eager",
                "os.eager_max_order=10",
                "os.ranges=contiguous",
                "os.range_threshold=64KiB",
                "os.reclaim=fifo",
                "os.metadata=registry",
            ]
            .map(String::from),
        )
        .unwrap();
        assert_eq!(
            (c.os.tiering, c.os.allocation, c.os.eager_max_order),
            (TieringPolicy::HighestFirst, Allocation::Eager, Some(10))
        );
        assert_eq!(
            (c.os.ranges, c.os.range_threshold.0, c.os.reclaim, c.os.metadata),
            (RangePolicy::Contiguous, 64 << 10, ReclaimPolicy::Fifo, MetadataPolicy::Registry)
        );
        for (sets, want) in [
            (&["os.tiering=highest-first"][..], "os.tiering = \"highest-first\" needs at least two memory.kinds"),
            (&["os.eager_max_order=3"][..], "os.eager_max_order only applies to os.allocation = \"eager\""),
            (
                &["os.allocation=eager", "os.eager_max_order=19"][..],
                "os.eager_max_order = 19 must be at most memory.max_order = 18",
            ),
            (&["os.range_threshold=64KiB"][..], "os.range_threshold only applies to os.ranges = \"contiguous\""),
            (
                &["os.ranges=contiguous", "os.range_threshold=1000"][..],
                "os.range_threshold = 1000 must be a positive multiple of 4KiB",
            ),
            (&["os.reclaim=lru"][..], "unknown variant `lru`, expected `none` or `fifo`"),
        ] {
            let e = bad("", sets);
            assert!(e.contains(want), "{e}");
        }
    }
}
