//! The `[mach]` table: the software-managed TLB of Mach 3.0 on a MIPS R3000 (seed 001, chapters
//! 2 and 3; mmu/mach/, docs/mach.md). Every number is a default taken from the document.

use super::parse::{err, Result};
use serde::{Deserialize, Serialize};

/// Replacement in one partition of the TLB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PartitionPolicy {
    /// The R3000's `Random` register (`tlbwr`): any entry of the partition, deterministic per
    /// `sim.seed`.
    Random,
    /// First in, first out (Mach's policy for L2 entries in the lower partition).
    Fifo,
}

/// Whose kernel IPC data the PTLB prefetches on an IPC send (seed 001 section 3.1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PtlbKernelIpc {
    /// The L1K entries of the sender's and the receiver's kernel IPC structures: the section
    /// prefetches kernel IPC data before each access the IPC path makes ("On subsequent
    /// accesses to the data, the PTE is prefetched and then the data is accessed"), and the
    /// path touches both parties' structures. (Kernel message buffers are not in section
    /// 3.1.4's list of L1K prefetches; only the L3 entries of their page-table pages are.)
    #[default]
    Both,
    /// The receiver's kernel IPC structures only (the machine before issue 34; the ablation).
    Receiver,
}

/// The organisation of the STLB (seed 001 sections 3.2.1-3.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum StlbKind {
    /// No STLB.
    #[default]
    None,
    /// Direct-mapped (DM 1K, DM 4K).
    Dm,
    /// 2-way set-associative, the two ways checked one after the other.
    #[serde(rename = "2way")]
    TwoWay,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachConfig {
    /// Entries of the TLB (fully associative).
    #[serde(default = "d_entries")]
    pub entries: u64,
    /// The upper partition: L1U, L1K and L3 entries.
    #[serde(default = "d_upper")]
    pub upper: u64,
    #[serde(default = "d_random")]
    pub upper_policy: PartitionPolicy,
    /// The lower partition: L2 entries (0: L2 entries share the upper partition).
    #[serde(default = "d_lower")]
    pub lower: u64,
    #[serde(default = "d_fifo")]
    pub lower_policy: PartitionPolicy,
    /// Bytes per page-table entry (1024 per 4KB page on the R3000).
    #[serde(default = "d_pte")]
    pub pte_bytes: u64,
    /// Page-table pages between two processes' user page tables, for the index of the STLB and
    /// PTLB (Mach allocates each 2GB space's 2MB user page table in kernel virtual memory).
    #[serde(default = "d_stride")]
    pub upt_stride_pages: u64,
    /// The fast L1U handler's cycles besides its one load (whose latency the caches give).
    #[serde(default = "d_l1u")]
    pub l1u_cycles: i64,
    #[serde(default = "d_l1k")]
    pub l1k_cycles: i64,
    #[serde(default = "d_l2")]
    pub l2_cycles: i64,
    #[serde(default = "d_l3")]
    pub l3_cycles: i64,
    #[serde(default = "d_invalid")]
    pub invalid_cycles: i64,
    /// The STLB (a software cache of L1K, L2 and L3 entries in unmapped memory).
    #[serde(default)]
    pub stlb: StlbKind,
    #[serde(default = "d_table")]
    pub stlb_entries: u64,
    #[serde(default = "d_hit_l1k")]
    pub stlb_hit_l1k_cycles: i64,
    #[serde(default = "d_hit_l2")]
    pub stlb_hit_l2_cycles: i64,
    /// An L2 STLB hit taken in kernel mode (Table 3.2's "L2, Path 2").
    #[serde(default = "d_hit_l2k")]
    pub stlb_hit_l2_kernel_cycles: i64,
    #[serde(default = "d_hit_l3")]
    pub stlb_hit_l3_cycles: i64,
    /// A hit in the second way of a 2-way STLB.
    #[serde(default = "d_second")]
    pub stlb_second_way_cycles: i64,
    /// What an STLB miss adds to the generic handler.
    #[serde(default = "d_stlb_miss")]
    pub stlb_miss_cycles: i64,
    /// The PTLB: prefetch on each IPC the receiver's entries into the TLB.
    #[serde(default)]
    pub ptlb: bool,
    #[serde(default = "d_table")]
    pub ptlb_entries: u64,
    #[serde(default = "d_prefetch")]
    pub ptlb_prefetch_cycles: i64,
    #[serde(default = "d_probe")]
    pub ptlb_probe_cycles: i64,
    /// Whether the PTLB prefetches L3 entries (default: only without the STLB, section 3.3).
    #[serde(default)]
    pub ptlb_l3: Option<bool>,
    /// Whose kernel IPC data (L1K) is prefetched on an IPC send.
    #[serde(default)]
    pub ptlb_kernel_ipc: PtlbKernelIpc,
    /// The receiver's user pages whose L2 entries are prefetched: code, message buffer, stack
    /// (the contract's layout, docs/mach.md).
    #[serde(default = "d_user_pages")]
    pub ptlb_user_pages: Vec<u64>,
    /// The receiver's kernel IPC structures: `base + asid * stride`, `pages` pages (L1K).
    #[serde(default = "d_ipc_base")]
    pub ptlb_ipc_base: u64,
    #[serde(default = "d_ipc_stride")]
    pub ptlb_ipc_stride: u64,
    #[serde(default = "d_ipc_pages")]
    pub ptlb_ipc_pages: u64,
    /// The kernel message buffers: `base + asid * stride` (L3 of their page-table page).
    #[serde(default = "d_msg_base")]
    pub ptlb_msg_base: u64,
    #[serde(default = "d_msg_stride")]
    pub ptlb_msg_stride: u64,
}

fn d_entries() -> u64 {
    64 // seed 001 section 4.1: the R3000's 64-entry fully associative TLB
}
fn d_upper() -> u64 {
    56 // seed 001 section 4.1: upper partition of 56 entries, random replacement
}
fn d_lower() -> u64 {
    8 // seed 001 section 4.1: lower partition of 8 entries for L2 entries, FIFO
}
fn d_random() -> PartitionPolicy {
    PartitionPolicy::Random // seed 001 section 4.1
}
fn d_fifo() -> PartitionPolicy {
    PartitionPolicy::Fifo // seed 001 section 4.1
}
fn d_pte() -> u64 {
    4 // seed 001 section 3.1.4: 4-byte entries, 1024 per 4KB page
}
fn d_stride() -> u64 {
    512 // seed 001 section 3.1.4: a 2GB space has 512 pages of L1U entries (2MB)
}
fn d_l1u() -> i64 {
    9 // seed 001 section 2.2: 9 instructions and one load (10 cycles when the load hits)
}
fn d_l1k() -> i64 {
    512 // seed 001 Table 2.1
}
fn d_l2() -> i64 {
    555 // seed 001 Table 2.1
}
fn d_l3() -> i64 {
    407 // seed 001 Table 2.1 (Table 3.2 gives 338)
}
fn d_invalid() -> i64 {
    338 // seed 001 Table 2.1
}
fn d_table() -> u64 {
    4096 // seed 001 sections 3.2.1 and 3.3: DM 4K
}
fn d_hit_l1k() -> i64 {
    105 // seed 001 Table 3.2
}
fn d_hit_l2() -> i64 {
    114 // seed 001 Table 3.2, L2 path 1
}
fn d_hit_l2k() -> i64 {
    160 // seed 001 Table 3.2, L2 path 2
}
fn d_hit_l3() -> i64 {
    105 // seed 001 Table 3.2
}
fn d_second() -> i64 {
    170 // seed 001 section 3.2.2: second level of associativity
}
fn d_stlb_miss() -> i64 {
    70 // seed 001 Table 3.2: an STLB miss adds about 70 cycles
}
fn d_prefetch() -> i64 {
    60 // seed 001 section 4.3.1: prefetching an entry takes about 60 cycles
}
fn d_probe() -> i64 {
    25 // seed 001 section 4.3.1: a probe that does not prefetch takes about 25 cycles
}
fn d_user_pages() -> Vec<u64> {
    vec![0x40_0000, 0x2000_0000, 0x7FFF_FFFE_F000] // the contract: code, message buffer, stack
}
fn d_ipc_base() -> u64 {
    0xFFFF_C000_0000_0000 // the contract: KSEG2 + asid * 0x10000, 2 pages
}
fn d_ipc_stride() -> u64 {
    0x1_0000
}
fn d_ipc_pages() -> u64 {
    2
}
fn d_msg_base() -> u64 {
    0xFFFF_C000_1000_0000 // the contract: KSEG2 + 0x1000_0000 + asid * 0x2000
}
fn d_msg_stride() -> u64 {
    0x2000
}

impl Default for MachConfig {
    fn default() -> Self {
        toml::from_str("").expect("every field has a default")
    }
}

impl MachConfig {
    /// Whether the PTLB prefetches L3 entries.
    pub fn ptlb_prefetches_l3(&self) -> bool {
        self.ptlb_l3.unwrap_or(self.stlb == StlbKind::None)
    }

    /// The rules serde's types do not check, one sentence each.
    pub fn validate(&self, c: &str) -> Result<()> {
        if self.entries == 0 || self.entries > 256 {
            return err(format!("config '{c}': mach.entries = {} must be between 1 and 256.", self.entries));
        }
        if self.upper + self.lower != self.entries {
            return err(format!(
                "config '{c}': mach.upper = {} and mach.lower = {} must add up to mach.entries = {}.",
                self.upper, self.lower, self.entries
            ));
        }
        if self.upper == 0 {
            return err(format!("config '{c}': mach.upper = 0; the upper partition needs at least one entry."));
        }
        if !matches!(self.pte_bytes, 4 | 8) {
            return err(format!("config '{c}': mach.pte_bytes = {} must be 4 or 8.", self.pte_bytes));
        }
        let costs = [
            ("l1u_cycles", self.l1u_cycles),
            ("l1k_cycles", self.l1k_cycles),
            ("l2_cycles", self.l2_cycles),
            ("l3_cycles", self.l3_cycles),
            ("invalid_cycles", self.invalid_cycles),
            ("stlb_hit_l1k_cycles", self.stlb_hit_l1k_cycles),
            ("stlb_hit_l2_cycles", self.stlb_hit_l2_cycles),
            ("stlb_hit_l2_kernel_cycles", self.stlb_hit_l2_kernel_cycles),
            ("stlb_hit_l3_cycles", self.stlb_hit_l3_cycles),
            ("stlb_second_way_cycles", self.stlb_second_way_cycles),
            ("stlb_miss_cycles", self.stlb_miss_cycles),
            ("ptlb_prefetch_cycles", self.ptlb_prefetch_cycles),
            ("ptlb_probe_cycles", self.ptlb_probe_cycles),
        ];
        for (name, v) in costs {
            if v < 0 {
                return err(format!("config '{c}': mach.{name} = {v} is a cost below zero; costs are cycles >= 0."));
            }
        }
        let table = |what: &str, n: u64, ways: u64| -> Result<()> {
            if n == 0 || !n.is_power_of_two() || n < ways || n > (1 << 24) {
                return err(format!(
                    "config '{c}': mach.{what} = {n} must be a power of two between {ways} and 16M (its index is the page number's low bits)."
                ));
            }
            Ok(())
        };
        match self.stlb {
            StlbKind::None => {}
            StlbKind::Dm => table("stlb_entries", self.stlb_entries, 1)?,
            StlbKind::TwoWay => table("stlb_entries", self.stlb_entries, 2)?,
        }
        if self.ptlb {
            table("ptlb_entries", self.ptlb_entries, 1)?;
        }
        if self.upt_stride_pages == 0 {
            return err(format!("config '{c}': mach.upt_stride_pages = 0 must be at least 1."));
        }
        Ok(())
    }
}
