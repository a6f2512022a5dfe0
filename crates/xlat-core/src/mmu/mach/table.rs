//! A software table of TLB entries in unmapped memory: the STLB (seed 001 section 3.2) and the
//! PTLB (section 3.1.5), direct-mapped or 2-way set-associative (the ways checked one after the
//! other, section 3.2.2). Each entry is a tag word and a PTE word (2 x `pte_bytes`); the set of
//! an entry is the low bits of its index number (its virtual page number, or for user page-table
//! pages the number they would have on the R3000, see `MachHandler::upt_index`).

use crate::config::StlbKind;

/// The table; `pa` is the physical address of its first entry.
#[derive(Debug, Clone)]
pub struct SoftTable {
    keys: Vec<u64>,
    pfns: Vec<u64>,
    /// Per set of a 2-way table: the way to replace next (the older one).
    older: Vec<u8>,
    ways: usize,
    sets: usize,
    pub pa: u64,
    entry_bytes: u64,
}

/// Where a probe found the key: the way (0 first), and the entry's physical addresses probed.
pub struct Probe {
    pub way: Option<usize>,
    pub pfn: u64,
    /// Physical addresses of the entries read (one per way checked).
    pub loads: [u64; 2],
    pub nloads: usize,
}

impl SoftTable {
    pub fn new(kind: StlbKind, entries: u64, pa: u64, pte_bytes: u64) -> SoftTable {
        let ways = if kind == StlbKind::TwoWay { 2 } else { 1 };
        let sets = (entries as usize / ways).max(1);
        SoftTable {
            keys: vec![u64::MAX; sets * ways],
            pfns: vec![0; sets * ways],
            older: vec![0; sets],
            ways,
            sets,
            pa,
            entry_bytes: 2 * pte_bytes,
        }
    }

    fn set(&self, index: u64) -> usize {
        index as usize & (self.sets - 1)
    }

    fn entry_pa(&self, slot: usize) -> u64 {
        self.pa + slot as u64 * self.entry_bytes
    }

    /// Probe for `key` (set from `index`): the ways in order until a match.
    #[inline]
    pub fn probe(&self, key: u64, index: u64) -> Probe {
        let set = self.set(index);
        let mut p = Probe { way: None, pfn: 0, loads: [0; 2], nloads: 0 };
        for w in 0..self.ways {
            let slot = set * self.ways + w;
            p.loads[w] = self.entry_pa(slot);
            p.nloads += 1;
            if self.keys[slot] == key {
                p.way = Some(w);
                p.pfn = self.pfns[slot];
                break;
            }
        }
        p
    }

    /// Store `key` -> `pfn` (in place if present; else over the set's older way); returns the
    /// physical address written.
    #[inline]
    pub fn store(&mut self, key: u64, index: u64, pfn: u64) -> u64 {
        let set = self.set(index);
        let base = set * self.ways;
        let way = (0..self.ways).find(|&w| self.keys[base + w] == key).unwrap_or_else(|| {
            // (`ways` is 1 or 2: masks, no division.)
            let w = self.older[set] as usize & (self.ways - 1);
            self.older[set] = ((w + 1) & (self.ways - 1)) as u8;
            w
        });
        self.keys[base + way] = key;
        self.pfns[base + way] = pfn;
        self.entry_pa(base + way)
    }

    /// Whether `key` is held (tests).
    pub fn holds(&self, key: u64, index: u64) -> bool {
        self.probe(key, index).way.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_mapped_entries_of_one_set_conflict() {
        let mut t = SoftTable::new(StlbKind::Dm, 4, 0x1000, 4);
        t.store(10, 1, 100);
        t.store(20, 5, 200); // 5 & 3 == 1: the same set
        assert!(!t.holds(10, 1));
        assert!(t.holds(20, 5));
        assert_eq!(t.probe(20, 5).loads[0], 0x1000 + 8);
    }

    #[test]
    fn two_way_keeps_two_and_checks_in_order() {
        let mut t = SoftTable::new(StlbKind::TwoWay, 4, 0, 4);
        t.store(10, 1, 100);
        t.store(20, 3, 200);
        assert_eq!(t.probe(10, 1).way, Some(0));
        let p = t.probe(20, 3);
        assert_eq!((p.way, p.nloads), (Some(1), 2));
        t.store(30, 1, 300); // replaces the older (10)
        assert!(!t.holds(10, 1));
        assert!(t.holds(20, 3));
    }
}
