//! Contiguity of the simulated memory at a point in time (RMM, seed 000 Tables 4.2 and 4.7):
//! the ranges the OS could form, i.e. the maximal runs of one VMA's virtually contiguous pages
//! backed by physically contiguous frames, whatever the range-creation policy (none, or a
//! threshold) keeps. Counted over every address space; reported as a histogram of run sizes
//! so that a run of 4KB pages, the common case under demand paging, costs one pair, not one
//! entry per run. Not on any simulated path: `sim.contiguity` computes it once, at the end.

use super::pagetable::PageTables;
use super::space::AddressSpace;
use crate::units::PageSize;
use serde::Serialize;
use std::collections::BTreeMap;

/// The contiguity report (`contiguity` in the result; `docs/simulator.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Contiguity {
    /// Address spaces scanned.
    pub spaces: u64,
    /// VMAs scanned (with at least one mapped page or not).
    pub vmas: u64,
    /// Mapped 4KB pages (a huge page counts all its 4KB pages).
    pub pages: u64,
    /// Translation entries with pages: leaf entries by page size (Table 4.2 column "THP").
    pub entries_4k: u64,
    pub entries_2m: u64,
    pub entries_1g: u64,
    /// (run size in 4KB pages, number of runs of that size), largest first.
    pub runs: Vec<(u64, u64)>,
}

impl Contiguity {
    /// Number of runs (ranges with no threshold).
    pub fn ranges(&self) -> u64 {
        self.runs.iter().map(|r| r.1).sum()
    }
}

/// The runs of every VMA of `spaces` (page tables `pt` with `levels` levels).
pub fn measure(pt: &PageTables, levels: usize, spaces: &[AddressSpace]) -> Contiguity {
    let mut c = Contiguity { spaces: spaces.len() as u64, ..Contiguity::default() };
    let mut hist: BTreeMap<u64, u64> = BTreeMap::new();
    for sp in spaces {
        for v in sp.vmas() {
            c.vmas += 1;
            // The run being extended: (its next virtual page, its next frame, its pages).
            let mut cur: Option<(u64, u64, u64)> = None;
            for (va, pfn, size) in pt.leaves(sp.root, levels, v.start, v.end) {
                match size {
                    PageSize::Size4K => c.entries_4k += 1,
                    PageSize::Size2M => c.entries_2m += 1,
                    PageSize::Size1G => c.entries_1g += 1,
                }
                // A huge page reaching outside the VMA counts only its part inside.
                let (s, e) = (va.max(v.start), (va + size.bytes()).min(v.end));
                let (n, f) = ((e - s) >> 12, pfn + ((s - va) >> 12));
                c.pages += n;
                cur = match cur {
                    Some((next_va, next_f, len)) if next_va == s && next_f == f => Some((e, f + n, len + n)),
                    other => {
                        if let Some((_, _, len)) = other {
                            *hist.entry(len).or_default() += 1;
                        }
                        Some((e, f + n, n))
                    }
                };
            }
            if let Some((_, _, len)) = cur {
                *hist.entry(len).or_default() += 1;
            }
        }
    }
    c.runs = hist.into_iter().rev().collect();
    c
}
