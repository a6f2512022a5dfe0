//! The memo of first-level TLB hits that are each the most recently used entry of their set.

use super::tlb::Tlb;

/// The last first-level TLB hits that are each the most recently used entry of their set.
///
/// Re-hitting an entry that is already the most recently used of its set changes no replacement
/// state (LRU: every set's order is kept, stamps come from one clock; tree-PLRU: the same bits;
/// FIFO and random: nothing on hits). Such an access only counts a hit, so it skips the probe.
/// A memo of a few such entries, not only the last one, catches kernels that interleave a few
/// arrays (STREAM triad: three pages in turn).
///
/// An entry stays valid while its entry is its set's most recently used: a probe that hits
/// another entry of the same set drops it, and so does a fill of that set (the fill becomes the
/// set's most recently used entry and may evict any other); every side event (invalidations,
/// context switches) drops them all. A first-level fill after a miss enters the memo, so the
/// next access to the page (a store after a load, the next element) skips the probe. Keys (page
/// and role) are kept apart from the translations so that the check of all entries is a few
/// compares over two small arrays.
///
/// Hits through the memo are counted per entry and added to the TLB's count when the entry is
/// replaced or the memo is flushed (at the end of each range): one counter incremented by
/// every access would chain every access to the last through memory.
#[derive(Clone, Copy)]
pub(crate) struct Memo {
    /// The page's first address `| role << 63`, or `u64::MAX` when empty (no 57-bit address
    /// with the role bit reaches it).
    pub(crate) key: [u64; MEMO],
    /// The bits of an address that select its page, and the role bit: `key[j]` holds the
    /// page of `va` iff `(va | role << 63) & mask[j] == key[j]` (an AND, not a variable shift).
    mask: [u64; MEMO],
    pub(crate) hit: [MemoHit; MEMO],
    /// `tlb << 32 | set` of each entry's `hit` (one compare per entry when a set is dropped).
    slot: [u64; MEMO],
    /// Hits through each entry not yet added to its TLB's count.
    pub(crate) hits: [u64; MEMO],
    /// Entry replaced by the next insertion (round robin).
    next: usize,
}

pub(crate) const MEMO: usize = 4;

/// The translation of a memo entry and where it sits.
#[derive(Clone, Copy)]
pub(crate) struct MemoHit {
    pub(crate) tlb: u32,
    pub(crate) set: u32,
    pub(crate) size: u8,
    pub(crate) pfn: u64,
}

impl Memo {
    pub(crate) const EMPTY: Memo = Memo {
        key: [u64::MAX; MEMO],
        mask: [0; MEMO],
        hit: [MemoHit { tlb: 0, set: u32::MAX, size: 0, pfn: 0 }; MEMO],
        slot: [u32::MAX as u64; MEMO],
        hits: [0; MEMO],
        next: 0,
    };

    /// The entry holding the page of `va` for role bit `rbit`, if any.
    #[inline(always)]
    pub(crate) fn find(&self, va: u64, rbit: u64) -> Option<usize> {
        // Branch-free over the entries: which one matches varies from access to access.
        let va = va | rbit;
        let mut found = usize::MAX;
        for j in 0..MEMO {
            found = if va & self.mask[j] == self.key[j] { j } else { found };
        }
        (found != usize::MAX).then_some(found)
    }

    /// Record a hit on (or a fill of) `h.tlb`'s set `h.set`: it becomes that set's most
    /// recently used entry, so other entries of the set are dropped.
    #[inline(always)]
    pub(crate) fn insert(&mut self, tlbs: &mut [Tlb], va: u64, rbit: u64, shift: u32, h: MemoHit) {
        self.drop_set(h.tlb, h.set);
        let j = self.next;
        tlbs[self.hit[j].tlb as usize].stats.hits += std::mem::take(&mut self.hits[j]);
        self.mask[j] = !((1u64 << shift) - 1);
        self.key[j] = (va & self.mask[j]) | rbit;
        self.hit[j] = h;
        self.slot[j] = (h.tlb as u64) << 32 | h.set as u64;
        self.next = (j + 1) % MEMO;
    }

    /// Drop the entries of `tlb`'s set `set` (their hits stay pending until the entry is
    /// replaced or flushed).
    #[inline(always)]
    pub(crate) fn drop_set(&mut self, tlb: u32, set: u32) {
        let slot = (tlb as u64) << 32 | set as u64;
        for j in 0..MEMO {
            if self.slot[j] == slot {
                self.key[j] = u64::MAX;
            }
        }
    }

    /// Add the pending hits to the TLBs' counts.
    pub(crate) fn flush(&mut self, tlbs: &mut [Tlb]) {
        for j in 0..MEMO {
            if self.hits[j] > 0 {
                tlbs[self.hit[j].tlb as usize].stats.hits += std::mem::take(&mut self.hits[j]);
            }
        }
    }

    /// Flush, then drop every entry.
    pub(crate) fn clear(&mut self, tlbs: &mut [Tlb]) {
        self.flush(tlbs);
        *self = Memo::EMPTY;
    }
}
