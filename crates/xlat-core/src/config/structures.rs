//! The configuration of the translation structures: TLBs, range TLBs, paging-structure caches,
//! the miss handler (`[walker]`) and the cache levels.

use crate::array::Replacement;
use crate::units::{PageSize, Size};
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

/// A small set-associative structure given by its geometry alone: the nested TLB
/// (`virt.ntlb`), the cuckoo walk cache (`hashed_pt.cwc`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssocConfig {
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
    /// The miss-path level it is probed at: 1 probes it with the first-level page TLBs (an L1
    /// range TLB, in parallel, its hits counted as level-1 hits); 2 with the level-2 page TLBs
    /// (in parallel); the level after the last page-TLB level after them (in sequence).
    pub stage: u32,
    /// Cycles of a hit (the time estimate, as a TLB level's `latency`).
    #[serde(default)]
    pub latency: u64,
    /// An MRU pointer checked before the associative search (seed 000 section 4.4.1): counts
    /// `mru_hits`, changes no hit or miss.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mru: bool,
    /// What a hit past the first level fills into the page TLBs above.
    #[serde(default, skip_serializing_if = "RangeFill::is_page")]
    pub fill: RangeFill,
}

/// What a range TLB hit fills into the page TLBs of the levels above (seed 000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RangeFill {
    /// The page-table entry of the page `va` lies in: a 2MB entry where the OS maps a 2MB page
    /// (section 5.4.3: "copying the corresponding page table entry in the L1-page TLBs as in
    /// RMM"; section 5.6.1 finds RMM's L1 TLB energy "similar to that with THP"). With 4KB
    /// pages, as in chapter 4, the same as `4k`.
    #[default]
    Page,
    /// Always the 4KB entry of `va` (section 4.3.1 read literally: "installs a 4 KB TLB entry
    /// in the previous-level TLB"; with THP its 2MB pages never reach the L1-2MB TLB through a
    /// range hit).
    #[serde(rename = "4k")]
    Size4K,
}

impl RangeFill {
    fn is_page(&self) -> bool {
        *self == RangeFill::Page
    }
}

fn default_true() -> bool {
    true
}
fn default_stage() -> u32 {
    2
}
fn default_cluster_entries() -> u64 {
    512 // seed 000 section 4.8: "configured with 512 fully-associative entries"
}
fn default_cluster_pages() -> u64 {
    8 // seed 000 section 4.8: "each entry indexes up to an 8-page cluster"
}

/// The Clustered TLB of Pham et al. (HPCA 2014), a baseline of seed 000 section 4.8: fully
/// associative, LRU; an entry maps an aligned cluster of `cluster` virtual pages whose frames
/// lie in one aligned cluster of as many frames, with a valid bit per page. Filled on walks
/// from the PTEs of the cluster (one 64-byte line of the page table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Hash)]
#[serde(deny_unknown_fields)]
pub struct ClusterTlbConfig {
    /// `false`: as if the table were absent.
    #[serde(default = "default_true")]
    pub enabled: bool,
    #[serde(default = "default_cluster_entries")]
    pub entries: u64,
    /// Pages per cluster: a power of two from 2 to 8 (the PTEs of a cluster share one
    /// 64-byte line, so a fill reads nothing more than the walk did).
    #[serde(default = "default_cluster_pages")]
    pub cluster: u64,
    /// The miss-path level it is probed at (as a range TLB's `stage`; 2: with the L2 TLB).
    #[serde(default = "default_stage")]
    pub stage: u32,
    /// Cycles of a hit (the time estimate, as a TLB level's `latency`).
    #[serde(default)]
    pub latency: u64,
}

/// A direct segment (Basu et al., ISCA 2013; seed 000 Table 4.1 and section 4.8): one BASE,
/// LIMIT, OFFSET register set per address space. As the thesis emulates the ideal direct
/// segment, it holds the largest range translation of the address space's range table
/// (needs `os.ranges = "contiguous"`) and is reloaded whenever that changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Hash)]
#[serde(deny_unknown_fields)]
pub struct DirectSegmentConfig {
    /// `false`: as if the table were absent.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// The miss-path level it is checked at (2: in parallel with the L2 TLB).
    #[serde(default = "default_stage")]
    pub stage: u32,
    /// Cycles of a hit (the time estimate).
    #[serde(default)]
    pub latency: u64,
}
