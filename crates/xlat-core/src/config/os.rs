//! The configuration of the OS model (`[os]`: page-size policy, allocation timing, ranges,
//! tiering, reclaim, metadata) and of physical memory (`[memory]`, its kinds).

use crate::units::Size;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// 4KB pages only (hugetlb VMAs still get their huge pages).
    #[serde(rename = "4k")]
    Base,
    /// Transparent huge pages (mode in `os.thp`).
    Thp,
    /// 1GB pages wherever one fits (seed 000 section 4.8's 1GB baseline), else 2MB, else 4KB:
    /// anonymous VMAs (the `os.thp` mode decides which, as for THP).
    #[serde(rename = "1g")]
    Huge1g,
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
    /// Eager paging: where a mapping's blocks start (`aligned`: virtual and physical addresses
    /// agree modulo the largest page the page-size policy maps there; `any`: wherever the buddy
    /// allocator has a block).
    #[serde(default, skip_serializing_if = "is_default")]
    pub eager_placement: EagerPlacement,
    /// Eager paging: also back file mappings when they are mapped (the whole file range, as if
    /// read ahead), so that ranges can cover them. Seed 000's Algorithm 4.1 backs anonymous
    /// memory (heap, stack, anonymous mmap); files fill through the page cache (default false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub eager_files: bool,
    /// Eager paging with `eager_placement = "aligned"`: a 2MB region that a later mmap, brk or
    /// mremap completes (adjacent requests merge into one mapping, each backed on its own)
    /// becomes one 2MB page where the page-size policy allows it: in place when its frames are
    /// one aligned 2MB block, else copied into one, as khugepaged would. Each request's partial
    /// 2MB regions are placed congruent modulo 2MB so that the completion can be in place.
    /// Default true: seed 000's chapter 5 gives RMM THP's page sizes ("the same TLB organization
    /// as THP"); false leaves such regions in 4KB pages, as backed at each request.
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub eager_promote: bool,
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
pub(crate) fn is_default_range_threshold(s: &Size) -> bool {
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

/// `os.eager_placement`: where eager paging starts a mapping's blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum EagerPlacement {
    /// At the same offset modulo the largest page the page-size policy maps in the region as
    /// the virtual address, so that huge pages fit (seed 000 section 4.4: ranges are redundant
    /// to paging, which keeps its huge pages; the block is taken larger and its head returned,
    /// the second enhancement of the section's algorithm).
    #[default]
    Aligned,
    /// Wherever the buddy allocator has the largest free block (Algorithm 4.1 as printed): a
    /// huge page fits only where the addresses happen to agree.
    Any,
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
    /// Program data spread over the zones in proportion to their sizes (seed 003's
    /// Flat-static: "evenly distributed in DRAM and NVM according to the ratio" 1:8), each
    /// allocation to the zone furthest below its share; page tables lowest first.
    Interleave,
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
fn is_true(b: &bool) -> bool {
    *b
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
            eager_placement: EagerPlacement::Aligned,
            eager_files: false,
            eager_promote: true,
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

impl MemoryConfig {
    /// The 4KB frames of the whole memory (every kind together).
    pub fn frames(&self) -> u64 {
        self.size.0 >> 12
    }
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

impl MemoryKind {
    /// The 4KB frames of this kind.
    pub fn frames(&self) -> u64 {
        self.size.0 >> 12
    }
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
