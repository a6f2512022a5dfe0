//! A TLB prefetcher (`[tlb_prefetch]`): after each page walk it looks up the translations of
//! the pages it predicts in the OS model's page table (no fault: an unmapped page is skipped)
//! and fills them into one TLB, the STLB, as any fill (they take the replacement's place of a
//! demand fill; invalidations drop them as any entry).
//!
//! - sequential: a walk of page `p` (of the walked size) prefetches `p + 1 ..= p + degree`;
//! - distance (Kandiraju and Sivasubramaniam, "Going the distance for TLB prefetching", ISCA
//!   2002): with pages in 4KB units, a walk of `p` after a walk of `q` has distance
//!   `d = p - q`; the table row of `d` (direct-mapped, tagged) holds the distances that
//!   followed `d` before, each prefetched as `p + d'`; then `d` is recorded (most recent first)
//!   in the row of the previous distance.
//!
//! Counters (`tlb_prefetch.*`): `walks` seen, `candidates` predicted, `unmapped` (no
//! translation yet), `not_held` (the TLB holds no entry of that size), `held` (already there),
//! `filled`; distance: `table_hits`. Whether a prefetch was useful shows in the TLB's misses
//! and the walks against a run without the prefetcher.

use super::hook::WalkHook;
use super::{Mmu, PrefetchFill};
use crate::config::{PrefetchKind, TlbPrefetchConfig};
use crate::os::Os;
use crate::stats::{Counters, Sink};
use crate::units::PageSize;

/// One row of the distance table: its distance (the tag) and the distances that followed it,
/// most recent first (`None`: empty).
#[derive(Debug, Clone)]
struct Row {
    tag: Option<i64>,
    next: Vec<i64>,
}

pub struct TlbPrefetcher {
    kind: PrefetchKind,
    /// The index of the TLB filled.
    tlb: usize,
    degree: u64,
    slots: usize,
    rows: Vec<Row>,
    /// The last walked page (4KB units) and the distance that led to it.
    last: Option<u64>,
    last_distance: Option<i64>,
    candidates_buf: Vec<u64>,
    pub walks: u64,
    pub candidates: u64,
    pub unmapped: u64,
    pub not_held: u64,
    pub held: u64,
    pub filled: u64,
    pub table_hits: u64,
}

impl TlbPrefetcher {
    /// The prefetcher of `cfg` into TLB `tlb` (an index of the MMU's TLBs).
    pub fn new(cfg: &TlbPrefetchConfig, tlb: usize) -> TlbPrefetcher {
        let rows = match cfg.kind {
            PrefetchKind::Sequential => Vec::new(),
            PrefetchKind::Distance => vec![Row { tag: None, next: Vec::new() }; cfg.entries as usize],
        };
        TlbPrefetcher {
            kind: cfg.kind,
            tlb,
            degree: cfg.degree as u64,
            slots: cfg.slots as usize,
            rows,
            last: None,
            last_distance: None,
            candidates_buf: Vec::new(),
            walks: 0,
            candidates: 0,
            unmapped: 0,
            not_held: 0,
            held: 0,
            filled: 0,
            table_hits: 0,
        }
    }

    fn row(&self, d: i64) -> usize {
        (d.rem_euclid(self.rows.len() as i64)) as usize
    }

    /// The addresses a walk of `va` (a `size` page) predicts, into `out`.
    fn predict(&mut self, va: u64, size: PageSize, out: &mut Vec<u64>) {
        out.clear();
        match self.kind {
            PrefetchKind::Sequential => {
                let page = va >> size.shift();
                for k in 1..=self.degree {
                    out.push((page + k) << size.shift());
                }
            }
            PrefetchKind::Distance => {
                let page = va >> 12;
                if let Some(last) = self.last {
                    let d = page.wrapping_sub(last) as i64;
                    let i = self.row(d);
                    if self.rows[i].tag == Some(d) {
                        self.table_hits += 1;
                        for &n in &self.rows[i].next {
                            out.push(page.wrapping_add(n as u64) << 12);
                        }
                    }
                    if let Some(prev) = self.last_distance {
                        let j = self.row(prev);
                        let slots = self.slots;
                        let row = &mut self.rows[j];
                        if row.tag != Some(prev) {
                            *row = Row { tag: Some(prev), next: Vec::new() };
                        }
                        row.next.retain(|&n| n != d);
                        row.next.insert(0, d);
                        row.next.truncate(slots);
                    }
                    self.last_distance = Some(d);
                }
                self.last = Some(page);
            }
        }
    }
}

impl WalkHook for TlbPrefetcher {
    fn walked(&mut self, _r: usize, va: u64, _pfn: u64, size: PageSize, mmu: &mut Mmu, os: &Os) {
        self.walks += 1;
        let mut out = std::mem::take(&mut self.candidates_buf);
        self.predict(va, size, &mut out);
        // The lower half of the address space (a distance may run off it).
        let top = 1u64 << (12 + 9 * os.levels() - 1);
        for &c in &out {
            if c >= top {
                continue;
            }
            self.candidates += 1;
            let Some((pfn, s)) = os.lookup(c) else {
                self.unmapped += 1;
                continue;
            };
            match mmu.prefetch_fill(self.tlb, c, s, pfn) {
                PrefetchFill::Filled => self.filled += 1,
                PrefetchFill::Held => self.held += 1,
                PrefetchFill::NotHeld => self.not_held += 1,
            }
        }
        self.candidates_buf = out;
    }
}

impl Counters for TlbPrefetcher {
    fn counters(&self, out: &mut dyn Sink) {
        for (k, v) in [
            ("walks", self.walks),
            ("candidates", self.candidates),
            ("unmapped", self.unmapped),
            ("not_held", self.not_held),
            ("held", self.held),
            ("filled", self.filled),
        ] {
            out.put(format_args!("tlb_prefetch.{k}"), v);
        }
        if self.kind == PrefetchKind::Distance {
            out.put(format_args!("tlb_prefetch.table_hits"), self.table_hits);
        }
    }
}
