//! The map from TLB key to record of the miss-ratio curves: open addressing with linear probing
//! in one array of (key, record) slots, so that a lookup is one host cache line, and the slot of
//! an access a few ahead can be prefetched (as the simulator's loop prefetches page-table
//! entries). A general map (FxHashMap) keeps its control bytes and its entries in two arrays: two
//! host cache misses per lookup of a random page, which dominated the cost of random traces.

/// A free slot's key (no TLB key is all ones: the VPN field has 46 bits, the size two).
const FREE: u64 = u64::MAX;

#[derive(Debug, Clone)]
pub(crate) struct PageMap {
    slots: Vec<(u64, u32)>,
    mask: usize,
    len: usize,
}

#[inline(always)]
fn hash(key: u64) -> usize {
    // Fibonacci hashing: the high bits of the product mix every bit of the key.
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20) as usize
}

impl PageMap {
    pub(crate) fn new() -> PageMap {
        PageMap { slots: vec![(FREE, 0); 16], mask: 15, len: 0 }
    }

    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A hint: bring `key`'s first slot into the host's cache.
    #[inline(always)]
    pub(crate) fn prefetch(&self, key: u64) {
        let p = &self.slots[hash(key) & self.mask] as *const (u64, u32);
        crate::host::prefetch_ptr(p);
    }

    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<u32> {
        let mut i = hash(key) & self.mask;
        loop {
            let (k, v) = self.slots[i];
            if k == key {
                return Some(v);
            }
            if k == FREE {
                return None;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Insert `key` (not present) with `value`.
    pub(crate) fn insert(&mut self, key: u64, value: u32) {
        debug_assert!(key != FREE);
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        let mut i = hash(key) & self.mask;
        while self.slots[i].0 != FREE {
            debug_assert!(self.slots[i].0 != key, "inserted twice");
            i = (i + 1) & self.mask;
        }
        self.slots[i] = (key, value);
        self.len += 1;
    }

    fn grow(&mut self) {
        let n = 2 * self.slots.len();
        let old = std::mem::replace(&mut self.slots, vec![(FREE, 0); n]);
        self.mask = self.slots.len() - 1;
        self.len = 0;
        for (k, v) in old {
            if k != FREE {
                self.insert(k, v);
            }
        }
    }

    /// Remove `key` if present (backward-shift deletion: no tombstones).
    pub(crate) fn remove(&mut self, key: u64) {
        let mut i = hash(key) & self.mask;
        loop {
            let k = self.slots[i].0;
            if k == FREE {
                return;
            }
            if k == key {
                break;
            }
            i = (i + 1) & self.mask;
        }
        self.len -= 1;
        // Move later entries of the run back over the gap when their home is not in (gap, j].
        let mut gap = i;
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let k = self.slots[j].0;
            if k == FREE {
                break;
            }
            let home = hash(k) & self.mask;
            let between = if gap <= j { gap < home && home <= j } else { gap < home || home <= j };
            if !between {
                self.slots[gap] = self.slots[j];
                gap = j;
            }
        }
        self.slots[gap] = (FREE, 0);
    }

    pub(crate) fn clear(&mut self) {
        self.slots.fill((FREE, 0));
        self.len = 0;
    }

    /// Every (key, value).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.slots.iter().copied().filter(|&(k, _)| k != FREE)
    }
}

#[cfg(test)]
mod tests {
    use super::PageMap;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

    #[test]
    fn equals_a_hash_map_under_random_inserts_and_removes() {
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        let (mut m, mut want) = (PageMap::new(), HashMap::new());
        for n in 0..200_000u32 {
            // Few distinct keys, clustered: long probe runs, wrap-around, many removals.
            let k = r.gen_range(0..3000u64) * if r.gen_bool(0.5) { 1 } else { 1 << 40 };
            if r.gen_bool(0.4) {
                m.remove(k);
                want.remove(&k);
            } else if m.get(k).is_none() {
                m.insert(k, n);
                want.insert(k, n);
            }
            assert_eq!(m.get(k), want.get(&k).copied());
        }
        assert_eq!(m.len(), want.len());
        let mut got: Vec<_> = m.iter().collect();
        got.sort();
        let mut exp: Vec<_> = want.into_iter().collect();
        exp.sort();
        assert_eq!(got, exp);
        m.clear();
        assert!(m.is_empty() && m.get(0).is_none());
    }
}
