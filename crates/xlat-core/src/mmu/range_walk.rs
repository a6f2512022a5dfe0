//! The range-table walker (RMM, seed 000 section 4.4.3): after a page walk whose page lies in a
//! range (the PTE's range bit: the OS has a range containing it), it walks the range table's
//! B-tree in the background, from the root down to the node holding the range, and the range
//! TLBs are filled. Every node visited loads its 2 cache lines through the caches (from the
//! walker's first cache level; the memory backend on a miss of the last level), counted by the
//! level that hit; the walk adds no cycles to the time estimate (it is off the critical path:
//! its loads' latency is counted apart, for reference).

use crate::mem::backend::Backend;
use crate::mem::Caches;
use crate::os::rangetree::NODE_LINES;
use crate::stats::{Counters, Sink};

const LINE: u64 = 64;

/// The range-table walker's counters and its path buffer.
#[derive(Debug, Clone, Default)]
pub struct RangeWalker {
    /// Physical addresses of the nodes the current walk visits (filled by the OS model).
    pub path: Vec<u64>,
    walks: u64,
    nodes: u64,
    /// Loads by the level that hit (cache levels, then memory).
    loads_at: Vec<u64>,
    /// Latency of the loads (background: not in the time estimate).
    cycles: u64,
    /// The cache levels' names, then "DRAM".
    hit_names: Vec<String>,
}

impl RangeWalker {
    /// A walker for the caches named `caches` (in order).
    pub fn new<'a>(caches: impl Iterator<Item = &'a str>) -> RangeWalker {
        let mut hit_names: Vec<String> = caches.map(str::to_string).collect();
        hit_names.push("DRAM".into());
        RangeWalker { loads_at: vec![0; hit_names.len()], hit_names, ..Default::default() }
    }

    /// Load every line of the nodes in `self.path` (one walk).
    pub fn walk<B: Backend>(&mut self, caches: &mut Caches, backend: &mut B) {
        self.walks += 1;
        let n = caches.levels.len();
        let from = caches.walk_first();
        for &node in &self.path {
            self.nodes += 1;
            for line in 0..NODE_LINES {
                let pa = node + line * LINE;
                let (hit, lat) = caches.access(pa, from, true);
                let lat = if hit == n { backend.access(pa, false, true, lat) } else { lat };
                self.cycles += lat;
                self.loads_at[hit] += 1;
            }
        }
    }

    /// Walks so far.
    pub fn walks(&self) -> u64 {
        self.walks
    }

    /// The invariants of its counts.
    pub fn check(&self) -> Result<(), String> {
        if self.loads_at.iter().sum::<u64>() != self.nodes * NODE_LINES {
            return Err("range walk loads != nodes x lines per node".into());
        }
        if self.nodes < self.walks {
            return Err("a range walk visited no node".into());
        }
        Ok(())
    }
}

impl Counters for RangeWalker {
    fn counters(&self, out: &mut dyn Sink) {
        out.put(format_args!("range_walk.walks"), self.walks);
        out.put(format_args!("range_walk.nodes"), self.nodes);
        out.put(format_args!("range_walk.loads"), self.nodes * NODE_LINES);
        for (h, name) in self.hit_names.iter().enumerate() {
            out.put(format_args!("range_walk.loads_hit.{name}"), self.loads_at[h]);
        }
        out.put(format_args!("range_walk.cycles"), self.cycles);
    }
}
