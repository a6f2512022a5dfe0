//! `[hashed_pt]`: a hashed page table in place of the radix walk (`mmu/walker/hashed.rs`,
//! docs/hashed-page-tables.md): elastic cuckoo hashing (Skarlatos et al., ASPLOS 2020) or a
//! chained hash table, one table per page size, each entry a cluster of 8 consecutive pages'
//! entries in one 64-byte line.

use super::parse::check_geometry;
use super::parse::{err, Result};
use super::structures::AssocConfig;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HashedKind {
    /// d-ary elastic cuckoo hashing: `ways` probes in parallel per page size looked up, gradual
    /// rehashing into a table twice the size when the occupancy passes `resize_at`.
    Cuckoo,
    /// Open hashing with collision chains: the bucket's entry, then the chain, one load after the
    /// other; a fixed number of buckets.
    Chained,
}

/// The cuckoo walk cache: which page sizes a 2MB region holds, so that a lookup probes one
/// size's ways instead of every size's (a miss loads the region's cuckoo walk table entry).
pub type CwcConfig = AssocConfig;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HashedConfig {
    pub kind: HashedKind,
    /// Cuckoo: the number of ways (hash functions), each a table of its own.
    #[serde(default = "default_ways")]
    pub ways: u32,
    /// Slots per way (cuckoo; the initial size) or buckets (chained), a power of two; each a
    /// 64-byte entry.
    #[serde(default = "default_entries")]
    pub entries: u64,
    /// Cuckoo: the occupancy (entries / slots) past which the table starts growing to twice its
    /// size.
    #[serde(default = "default_resize_at")]
    pub resize_at: f64,
    /// Cuckoo: slots of the old table each way migrates per insert while the table grows.
    #[serde(default = "default_rehash")]
    pub rehash_per_insert: u64,
    /// Cuckoo: displacements an insert tries before the table grows at once.
    #[serde(default = "default_kicks")]
    pub max_kicks: u32,
    /// Cuckoo: the cuckoo walk cache (none by default: every lookup probes every page size the
    /// address space has).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwc: Option<CwcConfig>,
}

fn default_ways() -> u32 {
    3
}
fn default_entries() -> u64 {
    16384
}
fn default_resize_at() -> f64 {
    0.6
}
fn default_rehash() -> u64 {
    4
}
fn default_kicks() -> u32 {
    32
}

impl HashedConfig {
    /// This table's own rules; `key` names it in sentences (`hashed_pt`, `virt.host_hashed`).
    pub(super) fn validate(&self, c: &str, key: &str) -> Result<()> {
        let h = self;
        if h.kind == HashedKind::Cuckoo && !(2..=8).contains(&h.ways) {
            return err(format!(
                "config '{c}': {key}.ways = {} must be between 2 and 8 (cuckoo hashing moves an entry to another of its ways).",
                h.ways
            ));
        }
        if !h.entries.is_power_of_two() || !(64..=1 << 30).contains(&h.entries) {
            return err(format!(
                "config '{c}': {key}.entries = {} must be a power of two between 64 and 2^30.",
                h.entries
            ));
        }
        if !(h.resize_at > 0.0 && h.resize_at <= 1.0) {
            return err(format!("config '{c}': {key}.resize_at = {} must be above 0 and at most 1.", h.resize_at));
        }
        if h.rehash_per_insert == 0 {
            return err(format!("config '{c}': {key}.rehash_per_insert must be at least 1."));
        }
        if let Some(w) = &h.cwc {
            check_geometry(&format!("config '{c}': {key}.cwc"), w.entries, w.ways, w.replacement)?;
            if h.kind != HashedKind::Cuckoo {
                return err(format!("config '{c}': {key}.cwc applies to kind = \"cuckoo\" only."));
            }
        }
        Ok(())
    }
}
