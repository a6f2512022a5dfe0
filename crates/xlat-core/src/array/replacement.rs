//! What every array layout shares: the replacement policies and the tag of an empty slot.

use serde::{Deserialize, Serialize};

/// Tag of an empty slot. Callers never use it as a real tag (TLB and cache keys leave the top
/// bits clear or are constructed so that they never equal it).
pub const INVALID: u64 = u64::MAX;

/// Which way of a full set is evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Replacement {
    /// True least-recently-used (per-slot last-use stamps).
    Lru,
    /// Tree pseudo-LRU: one bit per inner node of a binary tree over the ways pointing away
    /// from the most recently used half. Ways that are not a power of two use the tree over the
    /// next power of two and never choose a leaf that does not exist.
    TreePlru,
    /// First in, first out: the oldest fill is evicted; hits do not change the order.
    Fifo,
    /// A uniformly random way (xorshift64*, seeded from the configuration's seed).
    Random,
}

impl Replacement {
    pub fn name(self) -> &'static str {
        match self {
            Replacement::Lru => "lru",
            Replacement::TreePlru => "tree-plru",
            Replacement::Fifo => "fifo",
            Replacement::Random => "random",
        }
    }
}
