//! A paging-structure cache (Intel SDM vol. 3 section 4.10.3; thesis chapter 2, "MMU caches").

use super::keys::VPN_MASK;
use crate::array::SetAssoc;
use crate::config::PscConfig;
use crate::stats::StructStats;

/// A paging-structure cache: entries of one page-table level, tagged by the VA bits that select
/// them, holding the table the entry points to.
#[derive(Debug, Clone)]
pub struct Psc {
    pub name: String,
    /// Page-table level whose entries it caches (2 = PDE ... 5 = PML5E).
    pub table_level: usize,
    /// VA bits below what selects an entry (`12 + 9 * (table_level - 1)`).
    shift: u32,
    pub arr: SetAssoc,
    pub stats: StructStats,
}

impl Psc {
    pub fn new(c: &PscConfig, seed: u64) -> Psc {
        Psc {
            name: c.name.clone(),
            table_level: c.caches.table_level(),
            shift: 12 + 9 * (c.caches.table_level() as u32 - 1),
            arr: SetAssoc::new(c.entries as usize, c.ways as usize, c.replacement, seed),
            stats: StructStats::default(),
        }
    }

    /// Key: the VA bits above what the entry's child table covers.
    #[inline(always)]
    pub fn key(&self, va: u64, tag: u64) -> u64 {
        (va >> self.shift) | tag
    }

    /// The table cached for `va`'s prefix, if any; `lanes` is 0 or the array's class (a
    /// constant after inlining: the row code of that width only).
    ///
    /// # Safety
    /// `lanes` is 0 or [`SetAssoc::class`] of `self.arr`.
    #[inline(always)]
    pub unsafe fn lookup(&mut self, lanes: usize, va: u64, tag: u64) -> Option<u32> {
        let k = self.key(va, tag);
        self.stats.accesses += 1;
        // SAFETY: by the contract.
        let r = unsafe { self.arr.probe_as::<true>(lanes, k & VPN_MASK, k) }.1.map(|t| t as u32);
        if r.is_some() {
            self.stats.hits += 1;
        }
        r
    }

    /// Cache `table` for `va`'s prefix (the caller knows it is absent).
    ///
    /// # Safety
    /// As [`Psc::lookup`].
    #[inline(always)]
    pub unsafe fn fill(&mut self, lanes: usize, va: u64, tag: u64, table: u32) {
        let k = self.key(va, tag);
        self.stats.fills += 1;
        // SAFETY: by the contract.
        if unsafe { self.arr.fill_as::<true>(lanes, k & VPN_MASK, k, table as u64) }.1.is_some() {
            self.stats.evictions += 1;
        }
    }

    pub fn flush(&mut self) {
        self.stats.invalidations += self.arr.clear();
    }
}
