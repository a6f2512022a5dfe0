//! Tiering: where in a hybrid memory (DRAM, NVM, ...) allocations go. Migration between the
//! kinds is the OS's mechanism (`Os::migrate`); when to migrate is decided outside the OS (an
//! epoch controller).

use crate::config::MAX_MEMORY_KINDS;
use crate::os::types::Purpose;
use std::cell::Cell;

/// Zones to try, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneOrder {
    zones: [u8; MAX_MEMORY_KINDS],
    len: u8,
}

impl ZoneOrder {
    /// 0, 1, ..., n - 1.
    pub fn lowest_first(n: usize) -> ZoneOrder {
        let mut o = ZoneOrder { zones: [0; MAX_MEMORY_KINDS], len: n.min(MAX_MEMORY_KINDS) as u8 };
        for i in 0..o.len as usize {
            o.zones[i] = i as u8;
        }
        o
    }
    /// n - 1, ..., 1, 0.
    pub fn highest_first(n: usize) -> ZoneOrder {
        let mut o = ZoneOrder::lowest_first(n);
        o.zones[..o.len as usize].reverse();
        o
    }
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.zones[..self.len as usize].iter().map(|&z| z as usize)
    }
}

/// Placement of allocations over the memory kinds (zones, numbered from physical address 0).
pub trait Tiering: Send {
    fn name(&self) -> &'static str;
    /// The zones an allocation for `purpose` tries, in order.
    fn zone_order(&self, zones: usize, purpose: Purpose) -> ZoneOrder;
}

/// The default (`os.tiering = "lowest-first"`): the lowest zone with a free block (DRAM first,
/// then the next kind), for everything.
pub struct LowestFirst;

impl Tiering for LowestFirst {
    fn name(&self) -> &'static str {
        "lowest-first"
    }
    fn zone_order(&self, zones: usize, _: Purpose) -> ZoneOrder {
        ZoneOrder::lowest_first(zones)
    }
}

/// `os.tiering = "highest-first"`: program pages from the highest zone first (Rainbow places
/// new pages in NVM and migrates hot ones to DRAM); page tables lowest first (kernel memory
/// stays in DRAM).
pub struct HighestFirst;

impl Tiering for HighestFirst {
    fn name(&self) -> &'static str {
        "highest-first"
    }
    fn zone_order(&self, zones: usize, purpose: Purpose) -> ZoneOrder {
        match purpose {
            Purpose::Data => ZoneOrder::highest_first(zones),
            Purpose::Table => ZoneOrder::lowest_first(zones),
        }
    }
}

/// `os.tiering = "interleave"`: program data spread over the zones in proportion to their
/// frames (seed 003 section IV-A, Flat-static: data "evenly distributed in DRAM and NVM
/// according to the ratio of DRAM to NVM capacity (1:8)"): each allocation tries first the zone
/// furthest below its share of the allocations so far (of a 1:8 memory, every ninth allocation
/// goes to DRAM), then the others lowest first; page tables lowest first.
/// Allocations are counted, not frames (every allocation of a 4KB-page configuration is one).
pub struct Interleave {
    /// Frames per zone.
    weights: Vec<u64>,
    /// Allocations each zone was offered first so far.
    given: Cell<[u64; MAX_MEMORY_KINDS]>,
}

impl Interleave {
    pub fn new(weights: Vec<u64>) -> Interleave {
        Interleave { weights, given: Cell::new([0; MAX_MEMORY_KINDS]) }
    }
}

impl Tiering for Interleave {
    fn name(&self) -> &'static str {
        "interleave"
    }
    fn zone_order(&self, zones: usize, purpose: Purpose) -> ZoneOrder {
        let mut o = ZoneOrder::lowest_first(zones);
        let n = (o.len as usize).min(self.weights.len());
        if purpose == Purpose::Table || n < 2 {
            return o;
        }
        let mut given = self.given.get();
        // The zone whose share after this allocation is lowest: (given + 1) / weight, compared
        // as cross products (ties: the lower zone).
        let pick = (0..n)
            .filter(|&z| self.weights[z] > 0)
            .min_by(|&a, &b| {
                let (x, y) = (
                    (given[a] + 1) as u128 * self.weights[b] as u128,
                    (given[b] + 1) as u128 * self.weights[a] as u128,
                );
                x.cmp(&y).then(a.cmp(&b))
            })
            .unwrap_or(0);
        given[pick] += 1;
        self.given.set(given);
        o.zones[..=pick].rotate_right(1);
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_follows_the_zone_ratio() {
        // 1:8 (4 GB DRAM, 32 GB NVM): one allocation in nine goes to DRAM first. After 7 to NVM,
        // the 8th ties (1/1 = 8/8) and the tie goes to the lower zone.
        let t = Interleave::new(vec![1 << 20, 8 << 20]);
        let firsts: Vec<usize> = (0..27).map(|_| t.zone_order(2, Purpose::Data).iter().next().unwrap()).collect();
        let dram: Vec<usize> = (0..27).filter(|&i| firsts[i] == 0).collect();
        assert_eq!(dram, vec![7, 16, 25]);
        assert_eq!(t.zone_order(2, Purpose::Data).iter().collect::<Vec<_>>(), vec![1, 0]);
        assert_eq!(t.zone_order(2, Purpose::Table).iter().collect::<Vec<_>>(), vec![0, 1], "tables lowest first");
    }
}
