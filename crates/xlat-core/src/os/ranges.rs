//! The range table of an address space (RMM, seed 000 section 4.4): range translations
//! (BASE, LIMIT, OFFSET) kept in a B-tree by base, redundant to the page table. Each range is a
//! maximal run of one VMA's pages backed by physically contiguous frames, of at least the
//! range-creation policy's threshold. The table is refreshed where pages are mapped (eager
//! population, faults, migration) and trimmed where they are unmapped; the invalidation of the
//! unmapped addresses covers every range that changed (a range TLB drops entries that overlap
//! an invalidated range).

use super::pagetable::PageTables;
use super::rangetree::RangeTree;
use super::types::{Range, PAGE};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default)]
pub struct RangeTable {
    ranges: BTreeMap<u64, Range>,
    frames: u64,
    /// The table's B-tree in simulated physical memory (rebuilt before a walk when the ranges
    /// changed since the last).
    pub(super) tree: RangeTree,
    /// Moves on at every change (the direct segment reloads when it moved).
    generation: u64,
}

impl RangeTable {
    pub fn len(&self) -> usize {
        self.ranges.len()
    }
    /// 4KB frames covered by the ranges.
    pub fn frames(&self) -> u64 {
        self.frames
    }
    pub fn iter(&self) -> impl Iterator<Item = &Range> {
        self.ranges.values()
    }
    /// Changes so far (any insertion or removal).
    pub fn generation(&self) -> u64 {
        self.generation
    }
    /// The largest range (the lowest of equal ones).
    pub fn largest(&self) -> Option<Range> {
        self.ranges.values().fold(None, |best: Option<Range>, r| match best {
            Some(b) if b.bytes() >= r.bytes() => Some(b),
            _ => Some(*r),
        })
    }

    /// The range containing `va`.
    #[inline]
    pub fn containing(&self, va: u64) -> Option<Range> {
        self.ranges.range(..=va).next_back().map(|(_, r)| *r).filter(|r| va < r.limit)
    }

    fn insert(&mut self, r: Range) {
        debug_assert!(r.base < r.limit);
        self.frames += r.bytes() / PAGE;
        self.generation += 1;
        self.ranges.insert(r.base, r);
        self.tree.touch();
    }

    fn remove(&mut self, base: u64) -> Range {
        let r = self.ranges.remove(&base).expect("a range of the table");
        self.frames -= r.bytes() / PAGE;
        self.tree.touch();
        self.generation += 1;
        r
    }

    /// Rebuild the B-tree from the ranges if they changed since the last build; returns the
    /// pages it needs.
    pub(super) fn build_tree(&mut self) -> usize {
        let keys: Vec<(u64, u64)> = self.ranges.values().map(|r| (r.base, r.limit)).collect();
        self.tree.build(&keys)
    }

    /// Bases of the ranges overlapping [lo, hi).
    fn overlapping(&self, lo: u64, hi: u64) -> Vec<u64> {
        let mut v: Vec<u64> =
            self.ranges.range(..hi).rev().take_while(|(_, r)| r.limit > lo).map(|(&b, _)| b).collect();
        v.reverse();
        v
    }

    /// [start, end) is no longer mapped as it was: ranges lose that part, and the pieces left
    /// shorter than `threshold` bytes go. Returns whether any range changed.
    pub fn trim(&mut self, start: u64, end: u64, threshold: u64) -> bool {
        let over = self.overlapping(start, end);
        for &b in &over {
            let r = self.remove(b);
            for piece in
                [Range { limit: start, ..r }, Range { base: end, limit: r.limit, pfn: r.frame_of_clamped(end) }]
            {
                if piece.base < piece.limit && piece.bytes() >= threshold {
                    self.insert(piece);
                }
            }
        }
        !over.is_empty()
    }

    /// Pages of [lo, hi) inside the VMA [vma.0, vma.1) were mapped: recompute the ranges there,
    /// joining runs that continue on either side (a range, or contiguous pages not yet long
    /// enough for one, at most `threshold` bytes away).
    #[allow(clippy::too_many_arguments)]
    pub fn refresh(
        &mut self,
        pt: &PageTables,
        root: u32,
        levels: usize,
        vma: (u64, u64),
        lo: u64,
        hi: u64,
        threshold: u64,
    ) {
        let (vlo, vhi) = vma;
        let (mut lo, mut hi) = (lo.max(vlo), hi.min(vhi));
        if lo >= hi {
            return;
        }
        for b in self.overlapping(lo, hi) {
            let r = self.remove(b);
            lo = lo.min(r.base);
            hi = hi.max(r.limit);
        }
        let frame = |va: u64| pt.lookup(root, levels, va).map(|(pfn, s)| pfn + ((va & (s.bytes() - 1)) >> 12));
        let mut runs: Vec<Range> = Vec::new();
        // The run that reaches `lo` from the left: a range ending there, or unranged pages.
        let mut cur: Option<Range> = None;
        if lo > vlo {
            match self.containing(lo - PAGE) {
                Some(r) if r.base >= vlo => cur = Some(self.remove(r.base)),
                Some(_) => {}
                None => {
                    let (mut x, mut next) = (lo, None::<u64>);
                    let stop = lo.saturating_sub(threshold).max(vlo);
                    while x > stop && self.containing(x - PAGE).is_none() {
                        match frame(x - PAGE) {
                            Some(f) if next.is_none_or(|n| f + 1 == n) => {
                                next = Some(f);
                                x -= PAGE;
                            }
                            _ => break,
                        }
                    }
                    if let Some(f) = next {
                        cur = Some(Range { base: x, limit: lo, pfn: f });
                    }
                }
            }
        }
        for (va, pfn, size) in pt.leaves(root, levels, lo, hi) {
            let (s, e) = (va.max(lo), (va + size.bytes()).min(hi));
            let f = pfn + ((s - va) >> 12);
            match &mut cur {
                Some(c) if c.limit == s && c.frame_of_clamped(s) == f => c.limit = e,
                _ => {
                    runs.extend(cur.take());
                    cur = Some(Range { base: s, limit: e, pfn: f });
                }
            }
        }
        // The run that continues right of `hi`.
        if let Some(c) = &mut cur {
            if c.limit == hi && hi < vhi {
                match self.containing(hi) {
                    Some(r) if r.base == hi && r.pfn == c.frame_of_clamped(hi) && r.limit <= vhi => {
                        c.limit = self.remove(r.base).limit;
                    }
                    Some(_) => {}
                    None => {
                        let stop = hi.saturating_add(threshold).min(vhi);
                        while c.limit < stop
                            && self.containing(c.limit).is_none()
                            && frame(c.limit) == Some(c.frame_of_clamped(c.limit))
                        {
                            c.limit += PAGE;
                        }
                    }
                }
            }
        }
        runs.extend(cur);
        for r in runs {
            if r.bytes() >= threshold {
                self.insert(r);
            }
        }
    }
}

impl Range {
    /// The frame `va` maps to if the range's run continued to it (`va` may be `limit`).
    #[inline]
    fn frame_of_clamped(&self, va: u64) -> u64 {
        self.pfn + ((va - self.base) >> 12)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::pagetable::numbered_table_frames;
    use crate::units::PageSize;

    #[test]
    fn runs_grow_join_and_trim() {
        let mut pt = PageTables::default();
        let root = pt.new_table(4, 1, None);
        let mut alloc = numbered_table_frames(10_000);
        let base = 0x7000_0000_0000u64;
        let vma = (base, base + (64 << 20));
        let mut t = RangeTable::default();
        let thr = 8 * PAGE;
        // Pages 0..7 at frames 100..107, one at a time: a range once 8 are contiguous.
        for i in 0..8 {
            pt.map(root, 4, base + i * PAGE, PageSize::Size4K, 100 + i, &mut alloc).unwrap();
            t.refresh(&pt, root, 4, vma, base + i * PAGE, base + (i + 1) * PAGE, thr);
            assert_eq!(t.len(), (i == 7) as usize, "page {i}");
        }
        assert_eq!(t.containing(base + 3 * PAGE), Some(Range { base, limit: base + 8 * PAGE, pfn: 100 }));
        // Page 8 at a frame that does not continue the run: no change.
        pt.map(root, 4, base + 8 * PAGE, PageSize::Size4K, 500, &mut alloc).unwrap();
        t.refresh(&pt, root, 4, vma, base + 8 * PAGE, base + 9 * PAGE, thr);
        assert_eq!((t.len(), t.frames()), (1, 8));
        // A 2MB page at frames 512.. right after a 4KB run ending at frame 511 joins it.
        let r2 = base + (2 << 20);
        for i in 0..8 {
            let va = r2 - (8 - i) * PAGE;
            pt.map(root, 4, va, PageSize::Size4K, 504 + i, &mut alloc).unwrap();
        }
        t.refresh(&pt, root, 4, vma, r2 - 8 * PAGE, r2, thr);
        pt.map(root, 4, r2, PageSize::Size2M, 512, &mut alloc).unwrap();
        t.refresh(&pt, root, 4, vma, r2, r2 + (2 << 20), thr);
        assert_eq!(t.containing(r2 + 5), Some(Range { base: r2 - 8 * PAGE, limit: r2 + (2 << 20), pfn: 504 }));
        assert_eq!(t.len(), 2);
        // Trimming the middle of a range splits it; short pieces go.
        assert!(t.trim(r2 + (1 << 20), r2 + (1 << 20) + PAGE, thr));
        assert_eq!(t.len(), 3);
        assert_eq!(t.containing(r2 + (1 << 20) + PAGE).unwrap().pfn, 512 + 257);
        assert!(t.trim(base + 2 * PAGE, base + 3 * PAGE, thr), "leaves 2 and 5 pages: both too short");
        assert_eq!(t.len(), 2);
        assert!(!t.trim(base, base + 8 * PAGE, thr));
        assert_eq!(t.frames(), 8 + 256 + 255);
        // A range never leaves its VMA.
        let mut t = RangeTable::default();
        t.refresh(&pt, root, 4, (base + 2 * PAGE, base + 7 * PAGE), base, base + 8 * PAGE, 4 * PAGE);
        assert_eq!(
            t.iter().copied().collect::<Vec<_>>(),
            vec![Range { base: base + 2 * PAGE, limit: base + 7 * PAGE, pfn: 102 }]
        );
    }
}
