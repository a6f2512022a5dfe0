//! Address spaces: the VMAs of one process (built from its syscalls), its brk, its page-table
//! root and its range table, and the operations on VMAs (split, merge, isolate, infer).

use super::ranges::RangeTable;
use super::types::{Vma, VmaKind};
use std::collections::BTreeMap;

/// One process.
#[derive(Debug, Clone)]
pub struct AddressSpace {
    pub asid: u32,
    /// Arena index of the root page table.
    pub root: u32,
    vmas: BTreeMap<u64, Vma>,
    /// The first `brk` result (the heap start), once seen.
    pub initial_brk: Option<u64>,
    pub brk: u64,
    pub ranges: RangeTable,
}

impl AddressSpace {
    pub fn new(asid: u32, root: u32) -> AddressSpace {
        AddressSpace { asid, root, vmas: BTreeMap::new(), initial_brk: None, brk: 0, ranges: RangeTable::default() }
    }

    /// The VMA containing `va`.
    #[inline]
    pub fn vma_at(&self, va: u64) -> Option<Vma> {
        self.vmas.range(..=va).next_back().map(|(_, v)| *v).filter(|v| va < v.end)
    }

    /// The VMA starting at `start`.
    pub fn vma_mut(&mut self, start: u64) -> &mut Vma {
        self.vmas.get_mut(&start).expect("a VMA starts there")
    }

    pub fn vmas(&self) -> impl Iterator<Item = &Vma> {
        self.vmas.values()
    }

    /// Insert `v` as it is (no merge): the mosaic pools.
    pub fn insert_raw(&mut self, v: Vma) {
        self.vmas.insert(v.start, v);
    }

    pub fn remove(&mut self, start: u64) {
        self.vmas.remove(&start);
    }

    /// Split the VMA containing `at` (strictly inside) into two.
    pub fn split(&mut self, at: u64) {
        if let Some((&s, v)) = self.vmas.range_mut(..at).next_back() {
            if at < v.end && s < at {
                let tail = Vma { start: at, ..*v };
                v.end = at;
                self.vmas.insert(at, tail);
            }
        }
    }

    /// A new VMA [start, end) of `kind`, merged with an adjacent anonymous VMA of the same kind
    /// and advice (Linux's `vma_merge`).
    pub fn insert(&mut self, start: u64, end: u64, kind: VmaKind) {
        let mut v = Vma { start, end, kind, thp_advised: false, thp_disabled: false };
        if matches!(kind, VmaKind::Anon | VmaKind::Heap) {
            if let Some((&ps, p)) = self.vmas.range(..start).next_back() {
                if p.end == start && p.kind == kind && !p.thp_advised && !p.thp_disabled {
                    v.start = ps;
                    self.vmas.remove(&ps);
                }
            }
            if let Some(n) = self.vmas.get(&end).copied() {
                if n.kind == kind && !n.thp_advised && !n.thp_disabled {
                    v.end = n.end;
                    self.vmas.remove(&end);
                }
            }
        }
        self.vmas.insert(v.start, v);
    }

    /// The VMAs overlapping [start, end).
    pub fn vmas_in(&self, start: u64, end: u64) -> impl Iterator<Item = &Vma> {
        let first = self.vmas.range(..start.min(end)).next_back().filter(|(_, v)| v.end > start).map(|(_, v)| v);
        first.into_iter().chain(self.vmas.range(start.min(end)..end.max(start)).map(|(_, v)| v))
    }

    /// Starts of the VMAs overlapping [start, end), after splitting at both ends (none if the
    /// range is empty).
    pub fn isolate(&mut self, start: u64, end: u64) -> Vec<u64> {
        if start >= end {
            return Vec::new();
        }
        self.split(start);
        self.split(end);
        self.vmas.range(start..end).map(|(&s, _)| s).collect()
    }

    /// Start of the last VMA that starts before `at`.
    pub fn last_start_before(&self, at: u64) -> Option<u64> {
        self.vmas.range(..at).next_back().map(|(&s, _)| s)
    }

    /// The heap VMA ending exactly at `at`, by its start.
    pub fn heap_ending_at(&self, at: u64) -> Option<u64> {
        match self.vmas.range(..at).next_back() {
            Some((&s, v)) if v.end == at && v.kind == VmaKind::Heap => Some(s),
            _ => None,
        }
    }

    /// The range an inferred VMA around `va` (outside every VMA) covers: its 2MB-aligned
    /// region, clipped to the neighbouring VMAs.
    pub fn inferred_bounds(&self, va: u64) -> (u64, u64) {
        let lo = va & !((2 << 20) - 1);
        let hi = lo.saturating_add(2 << 20);
        let prev_end = self.vmas.range(..=va).next_back().map_or(0, |(_, v)| v.end);
        let next_start = self.vmas.range(va..).next().map_or(u64::MAX, |(&s, _)| s);
        (lo.max(prev_end), hi.min(next_start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmas_split_merge_and_isolate() {
        let mut sp = AddressSpace::new(0, 0);
        sp.insert(0x1000, 0x5000, VmaKind::Anon);
        sp.insert(0x5000, 0x8000, VmaKind::Anon); // merges
        sp.insert(0x8000, 0x9000, VmaKind::File); // does not
        assert_eq!(sp.vmas().map(|v| (v.start, v.end)).collect::<Vec<_>>(), vec![(0x1000, 0x8000), (0x8000, 0x9000)]);
        assert_eq!(sp.isolate(0x3000, 0x4000), vec![0x3000]);
        assert_eq!(sp.vmas().count(), 4);
        sp.vma_mut(0x3000).thp_advised = true;
        sp.remove(0x1000);
        sp.insert(0x1000, 0x3000, VmaKind::Anon); // the advised neighbour does not merge
        assert_eq!(sp.vma_at(0x2fff).map(|v| (v.start, v.end)), Some((0x1000, 0x3000)));
        assert_eq!(sp.heap_ending_at(0x3000), None);
        assert_eq!(sp.inferred_bounds(0x20_0000), (0x20_0000, 0x40_0000));
        assert_eq!(sp.inferred_bounds(0x9000), (0x9000, 0x20_0000));
    }
}
