//! The R3000's TLB as Mach 3.0 uses it (seed 001 section 4.1): one fully associative array
//! split into partitions, each with its own replacement. The lower partition (entries
//! `0..lower`, the R3000's wired entries) holds L2 entries, FIFO; the upper one (`lower..`)
//! holds L1U, L1K and L3 entries, replaced at random (`tlbwr`).
//!
//! An entry's key is its virtual page number shifted left 16 bits, or'ed with its address-space
//! tag (0 for kernel pages: the MIPS global bit). Lookups go through an index from key to slot
//! (hash chains: a head slot per bucket, at least four buckets per entry, each slot linked to
//! the next and previous of its bucket), kept exact on every insert and eviction, so that a
//! lookup is one or two probes however many entries the TLB has, and an eviction a few stores.

use crate::config::PartitionPolicy;

/// No entry.
pub const EMPTY: u64 = u64::MAX;
/// No slot (the end of a hash chain).
const NIL: u16 = u16::MAX;

/// One partition: slots `lo..hi`, its policy, its FIFO pointer.
#[derive(Debug, Clone)]
struct Partition {
    lo: usize,
    hi: usize,
    policy: PartitionPolicy,
    next: usize,
}

/// The TLB.
#[derive(Debug, Clone)]
pub struct MachTlb {
    keys: Vec<u64>,
    pfns: Vec<u64>,
    /// The first slot of each bucket's chain (`NIL`: none); `mask + 1` buckets.
    head: Vec<u16>,
    /// Each slot's next and previous slot in its bucket's chain (valid while it holds a key).
    next: Vec<u16>,
    prev: Vec<u16>,
    mask: usize,
    upper: Partition,
    lower: Partition,
    rng: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: [u64; 2],
}

#[inline(always)]
fn hash(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize
}

impl MachTlb {
    /// `upper` + `lower` entries; `seed` makes random replacement deterministic.
    pub fn new(upper: (usize, PartitionPolicy), lower: (usize, PartitionPolicy), seed: u64) -> MachTlb {
        let n = upper.0 + lower.0;
        MachTlb {
            keys: vec![EMPTY; n],
            pfns: vec![0; n],
            head: vec![NIL; (4 * n).next_power_of_two().max(16)],
            next: vec![NIL; n],
            prev: vec![NIL; n],
            mask: (4 * n).next_power_of_two().max(16) - 1,
            lower: Partition { lo: 0, hi: lower.0, policy: lower.1, next: 0 },
            upper: Partition { lo: lower.0, hi: n, policy: upper.1, next: lower.0 },
            // (xorshift needs a non-zero state)
            rng: seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1,
            hits: 0,
            misses: 0,
            evictions: [0; 2],
        }
    }

    /// The slot holding `key`, without counting.
    #[inline(always)]
    pub fn find(&self, key: u64) -> Option<usize> {
        let mut e = self.head[hash(key) & self.mask];
        while e != NIL {
            if self.keys[e as usize] == key {
                return Some(e as usize);
            }
            e = self.next[e as usize];
        }
        None
    }

    /// The frame in slot `s` (a slot [`MachTlb::find`] returned).
    #[inline(always)]
    pub fn pfn_at(&self, s: usize) -> u64 {
        self.pfns[s]
    }

    /// Enter slot `s` (holding its new key) at the head of its bucket's chain.
    #[inline(always)]
    fn index_insert(&mut self, s: usize) {
        let h = hash(self.keys[s]) & self.mask;
        let first = self.head[h];
        self.next[s] = first;
        self.prev[s] = NIL;
        if first != NIL {
            self.prev[first as usize] = s as u16;
        }
        self.head[h] = s as u16;
    }

    /// Unlink slot `s` (still holding its key) from its bucket's chain.
    #[inline(always)]
    fn index_remove(&mut self, s: usize) {
        let (p, n) = (self.prev[s], self.next[s]);
        if p == NIL {
            self.head[hash(self.keys[s]) & self.mask] = n;
        } else {
            self.next[p as usize] = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        }
    }

    /// Look `key` up (counted): its frame.
    #[inline(always)]
    pub fn lookup(&mut self, key: u64) -> Option<u64> {
        match self.find(key) {
            Some(s) => {
                self.hits += 1;
                Some(self.pfns[s])
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    /// Whether `key` is present (a `tlbp` probe: not counted as a lookup).
    pub fn contains(&self, key: u64) -> bool {
        self.find(key).is_some()
    }

    fn random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// Enter `key` -> `pfn` in the lower partition (`lower`, if it has entries) or the upper
    /// one, replacing by the partition's policy; returns the slot written.
    pub fn insert(&mut self, key: u64, pfn: u64, lower: bool) -> usize {
        if let Some(s) = self.find(key) {
            self.pfns[s] = pfn;
            return s;
        }
        self.insert_absent(key, pfn, lower)
    }

    /// [`MachTlb::insert`] of a key the TLB does not hold (the handlers enter only entries
    /// that just missed): no lookup first.
    #[inline]
    pub fn insert_absent(&mut self, key: u64, pfn: u64, lower: bool) -> usize {
        debug_assert!(self.find(key).is_none(), "insert_absent of a key held");
        let lower = lower && self.lower.hi > self.lower.lo;
        let pick = {
            let p = if lower { &self.lower } else { &self.upper };
            (p.lo, p.hi, p.policy, p.next)
        };
        let (lo, hi, policy, next) = pick;
        let s = match policy {
            PartitionPolicy::Random => lo + (((self.random() >> 32) * (hi - lo) as u64) >> 32) as usize,
            PartitionPolicy::Fifo => {
                let p = if lower { &mut self.lower } else { &mut self.upper };
                p.next = if next + 1 >= hi { lo } else { next + 1 };
                next
            }
        };
        if self.keys[s] != EMPTY {
            self.evictions[lower as usize] += 1;
            self.index_remove(s);
        }
        self.keys[s] = key;
        self.pfns[s] = pfn;
        self.index_insert(s);
        s
    }

    /// Drop every entry whose tag is not 0 (not global): after the OS invalidated pages.
    pub fn flush_user(&mut self) {
        for s in 0..self.keys.len() {
            if self.keys[s] != EMPTY && self.keys[s] & 0xFFFF != 0 {
                self.index_remove(s);
                self.keys[s] = EMPTY;
            }
        }
    }

    /// The key in slot `s` (tests, invariants).
    pub fn key_at(&self, s: usize) -> u64 {
        self.keys[s]
    }

    /// Valid entries.
    pub fn valid(&self) -> usize {
        self.keys.iter().filter(|&&k| k != EMPTY).count()
    }

    /// Whether no key appears twice.
    pub fn check(&self) -> Result<(), String> {
        let mut seen: Vec<u64> = self.keys.iter().copied().filter(|&k| k != EMPTY).collect();
        seen.sort_unstable();
        if seen.windows(2).any(|w| w[0] == w[1]) {
            return Err("mach TLB: a key held twice".into());
        }
        // Every chain: slots of its bucket, linked both ways; together, every entry once.
        let mut chained = 0;
        for (h, &first) in self.head.iter().enumerate() {
            let (mut e, mut before) = (first, NIL);
            while e != NIL {
                let k = self.keys[e as usize];
                if k == EMPTY || hash(k) & self.mask != h || self.prev[e as usize] != before || chained > seen.len() {
                    return Err("mach TLB: a hash chain does not match the entries".into());
                }
                chained += 1;
                (before, e) = (e, self.next[e as usize]);
            }
        }
        if chained != seen.len() || seen.iter().any(|&k| self.find(k).is_none()) {
            return Err("mach TLB: the index does not match the entries".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PartitionPolicy::*;

    #[test]
    fn fifo_lower_cycles_through_its_slots() {
        let mut t = MachTlb::new((4, Random), (2, Fifo), 1);
        assert_eq!(t.insert(1 << 16, 1, true), 0);
        assert_eq!(t.insert(2 << 16, 2, true), 1);
        assert_eq!(t.insert(3 << 16, 3, true), 0);
        assert_eq!(t.lookup(1 << 16), None);
        assert_eq!(t.lookup(2 << 16), Some(2));
        assert_eq!(t.evictions, [0, 1]);
    }

    #[test]
    fn random_upper_stays_in_its_partition() {
        let mut t = MachTlb::new((4, Random), (2, Fifo), 7);
        for k in 0..100u64 {
            let s = t.insert((k + 10) << 16, k, false);
            assert!((2..6).contains(&s));
        }
        assert_eq!(t.key_at(0), EMPTY);
        t.check().unwrap();
    }

    #[test]
    fn the_index_stays_exact_through_evictions_and_flushes() {
        // 3 upper entries, many keys (some colliding in the index): after each insert the
        // index finds exactly the keys held.
        let mut t = MachTlb::new((3, Random), (1, Fifo), 3);
        for k in 0..2000u64 {
            let key = ((k * 37) % 101) << 16 | (k % 3);
            t.insert(key, k, k % 5 == 0);
            t.check().unwrap();
            assert_eq!(t.find(key), Some((0..4).find(|&s| t.key_at(s) == key).unwrap()));
        }
        t.flush_user();
        t.check().unwrap();
        assert!((0..4).all(|s| t.key_at(s) == EMPTY || t.key_at(s) & 0xFFFF == 0));
    }
}
