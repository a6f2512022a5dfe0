//! `[virt]`: virtualised translation with nested paging (AMD NPT, Intel EPT). The trace's
//! program runs in a guest: the configuration's `[os]` and `[memory]` are the guest's (its page
//! tables, page-size policy and guest-physical memory), `[virt.host]` is the host's OS model,
//! which maps the guest's physical memory as one anonymous mapping of its own. A TLB miss walks
//! in two dimensions (`mmu/walker/nested.rs`, docs/virtualisation.md).

use super::os::{OsConfig, Policy};
use super::parse::{err, Result};
use super::structures::PscConfig;
use super::{Config, Replacement, Size};
use serde::{Deserialize, Serialize};

/// Where the guest's physical memory starts in the host's virtual address space (1GB-aligned,
/// so that guest-physical and host-virtual addresses agree modulo every page size).
pub const GUEST_BASE: u64 = 0x4000_0000_0000;

/// The nested TLB: guest-physical to host-physical translations of host pages (Bhargava et
/// al. 2008's NTLB), probed before a host walk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NtlbConfig {
    pub entries: u64,
    pub ways: u64,
    #[serde(default = "default_repl")]
    pub replacement: Replacement,
}

fn default_repl() -> Replacement {
    Replacement::Lru
}

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
    pub host_hashed: Option<super::HashedConfig>,
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
            super::check_geometry(&w, p.entries, p.ways, p.replacement)?;
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
            super::check_geometry(&format!("config '{c}': virt.ntlb"), n.entries, n.ways, n.replacement)?;
        }
        let host = self.virt_host().expect("[virt] is present");
        host.validate_kinds_and_policies().map_err(|e| super::ConfigError(format!("{e} (in [virt.host])")))
    }
}
