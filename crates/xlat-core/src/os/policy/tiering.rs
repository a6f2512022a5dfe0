//! Tiering: where in a hybrid memory (DRAM, NVM, ...) allocations go. Migration between the
//! kinds is the OS's mechanism (`Os::migrate`); when to migrate is decided outside the OS (an
//! epoch controller).

use crate::config::MAX_MEMORY_KINDS;
use crate::os::types::Purpose;

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
