//! `[tlb_prefetch]`: a TLB prefetcher that fills one TLB (the STLB) after each page walk
//! (`mmu/prefetch.rs`). Off unless the table is given.

use super::parse::{err, Result};
use super::structures::TlbConfig;
use serde::{Deserialize, Serialize};

/// What a walk of page `p` prefetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrefetchKind {
    /// Sequential: the `degree` pages after `p` (of the walked page's size).
    Sequential,
    /// Distance (Kandiraju and Sivasubramaniam, ISCA 2002): the distances (in 4KB pages) that
    /// followed the current distance between consecutive walked pages last time, from a table
    /// of `entries` rows of `slots` distances each.
    Distance,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbPrefetchConfig {
    pub kind: PrefetchKind,
    /// The TLB prefetched into (default: the first TLB of the deepest level that holds 4KB
    /// pages, the STLB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlb: Option<String>,
    /// Sequential: pages prefetched per walk.
    #[serde(default = "default_degree")]
    pub degree: u32,
    /// Distance: rows of the distance table (direct-mapped on the distance).
    #[serde(default = "default_entries")]
    pub entries: u32,
    /// Distance: predicted distances per row (LRU among them).
    #[serde(default = "default_slots")]
    pub slots: u32,
}

fn default_degree() -> u32 {
    1
}
fn default_entries() -> u32 {
    64
}
fn default_slots() -> u32 {
    2 // Kandiraju and Sivasubramaniam's distance prefetcher: two predictions per row
}

impl TlbPrefetchConfig {
    /// The index of the TLB prefetched into among `tlbs`.
    pub fn target(&self, tlbs: &[TlbConfig]) -> Option<usize> {
        match &self.tlb {
            Some(n) => tlbs.iter().position(|t| &t.name == n),
            None => {
                let deepest = tlbs.iter().map(|t| t.level).max()?;
                tlbs.iter().position(|t| t.level == deepest && t.page_sizes.contains(&crate::units::PageSize::Size4K))
            }
        }
    }

    pub(crate) fn validate(&self, c: &str, tlbs: &[TlbConfig]) -> Result<()> {
        let Some(t) = self.target(tlbs) else {
            return match &self.tlb {
                Some(n) => err(format!("config '{c}': tlb_prefetch.tlb = '{n}' names no [[tlb]].")),
                None => err(format!(
                    "config '{c}': tlb_prefetch found no TLB of the deepest level that holds 4KB pages; name one with tlb_prefetch.tlb."
                )),
            };
        };
        if tlbs[t].level < 2 {
            return err(format!(
                "config '{c}': tlb_prefetch.tlb = '{}' is a level-1 TLB; the prefetcher fills a TLB of level 2 or deeper (the STLB).",
                tlbs[t].name
            ));
        }
        if !(1..=16).contains(&self.degree) {
            return err(format!("config '{c}': tlb_prefetch.degree = {} must be between 1 and 16.", self.degree));
        }
        if !(1..=1 << 16).contains(&self.entries) {
            return err(format!("config '{c}': tlb_prefetch.entries = {} must be between 1 and 65536.", self.entries));
        }
        if !(1..=8).contains(&self.slots) {
            return err(format!("config '{c}': tlb_prefetch.slots = {} must be between 1 and 8.", self.slots));
        }
        Ok(())
    }
}
