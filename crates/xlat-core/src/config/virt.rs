//! `[virt]`: virtualised translation with nested paging (AMD NPT, Intel EPT). The trace's
//! program runs in a guest: the configuration's `[os]` and `[memory]` are the guest's (its page
//! tables, page-size policy and guest-physical memory), `[virt.host]` is the host's OS model,
//! which maps the guest's physical memory as one anonymous mapping of its own. A TLB miss walks
//! in two dimensions (`mmu/walker/nested.rs`, docs/virtualisation.md).

use super::hashed::HashedConfig;
use super::os::OsConfig;
use super::structures::{AssocConfig, PscConfig};
use crate::units::Size;
use serde::{Deserialize, Serialize};

/// Where the guest's physical memory starts in the host's virtual address space (1GB-aligned,
/// so that guest-physical and host-virtual addresses agree modulo every page size).
pub const GUEST_BASE: u64 = 0x4000_0000_0000;

/// The nested TLB: guest-physical to host-physical translations of host pages (Bhargava et
/// al. 2008's NTLB), probed before a host walk.
pub type NtlbConfig = AssocConfig;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VirtConfig {
    /// The host's OS model: its page-table levels, page-size policy (`4k`, `thp`, `1g`) and
    /// allocation, as `[os]` gives the guest's.
    #[serde(default)]
    pub host: OsConfig,
    /// The host's physical memory (default: twice the guest's `memory.size`, at most 4TiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_memory: Option<Size>,
    /// The host's paging-structure caches, keyed by guest-physical address (none by default).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_psc: Vec<PscConfig>,
    /// The nested TLB (none by default: every guest-physical address is walked in the host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ntlb: Option<NtlbConfig>,
    /// Cycles of a VM exit and the entry back (an EPT violation: the host's first touch of a
    /// guest-physical page), added to the miss's cycles. The host's fault handling itself is not
    /// timed, as the guest's is not.
    #[serde(default = "default_exit_cycles")]
    pub vm_exit_cycles: u64,
    /// The host's page table as a hashed table (`[hashed_pt]`'s keys) instead of a radix tree:
    /// each host translation is a hashed lookup (none by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_hashed: Option<HashedConfig>,
    /// Record the first this-many walks' loads in the result's `walk_log` (for the reference
    /// check in tests/test_virt.py; 0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub walk_log: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// A VMRUN round trip on an AMD host, measured by KVM's developers (LKML, December 2020: 1,344
/// to 1,376 cycles from before VMRUN to after it returns).
fn default_exit_cycles() -> u64 {
    1_400
}

impl VirtConfig {
    /// The host's physical memory for a guest of `guest` bytes.
    pub fn host_memory(&self, guest: u64) -> u64 {
        self.host_memory.map_or_else(|| guest.saturating_mul(2).min(1 << 42), |s| s.0)
    }
}
