//! The R3000's TLB as Mach 3.0 uses it (seed 001 section 4.1): one fully associative array
//! split into partitions, each with its own replacement. The lower partition (entries
//! `0..lower`, the R3000's wired entries) holds L2 entries, FIFO; the upper one (`lower..`)
//! holds L1U, L1K and L3 entries, replaced at random (`tlbwr`).
//!
//! An entry's key is its virtual page number shifted left 16 bits, or'ed with its address-space
//! tag (0 for kernel pages: the MIPS global bit). Lookups go through an index from key to slot
//! (hash chains: 1024 buckets, at least four per entry, each slot linked to the next and
//! previous node of its bucket's chain, the bucket itself being the first slot's previous),
//! kept exact on every insert and eviction, so that a lookup is one or two probes however many
//! entries the TLB has, and an eviction a few stores with no branch. The arrays have room for
//! the largest TLB (256 entries) and are indexed through masks: no bounds checks.

use crate::config::PartitionPolicy;

/// No entry.
pub const EMPTY: u64 = u64::MAX;
/// Slots the arrays have room for (`mach.entries` is at most 256), so that a slot index masked
/// with `SLOTS - 1` needs no bounds check.
const SLOTS: usize = 256;
/// Hash buckets: at least four per entry.
const BUCKETS: usize = 1024;
/// The link nodes: slots `0..SLOTS`, then one per bucket (its chain's head: a bucket is the
/// `prev` of its first slot, so that unlinking needs no branch), then `NIL`.
const BUCKET0: usize = SLOTS;
const LINKS: usize = 2048;
/// The end of a chain: a node of its own, which absorbs the writes an unlink at a chain's end
/// makes (no slot or bucket reads it).
const NIL: u16 = (LINKS - 1) as u16;

/// A slot: its key and frame.
#[derive(Debug, Clone, Copy)]
struct Slot {
    key: u64,
    pfn: u64,
}

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
    slots: Box<[Slot; SLOTS]>,
    /// Each link node's next and previous node in its bucket's chain (a slot's are valid while
    /// it holds a key; a bucket's `next` is its first slot).
    next: Box<[u16; LINKS]>,
    prev: Box<[u16; LINKS]>,
    /// Slots in use: `0..n`.
    n: usize,
    upper: Partition,
    lower: Partition,
    rng: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: [u64; 2],
}

/// The bucket of `key`'s chain.
#[inline(always)]
fn bucket(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & (BUCKETS - 1)
}

/// The link node `e` (a slot, a bucket or `NIL`) as an index (no bounds check).
#[inline(always)]
fn node(e: u16) -> usize {
    e as usize & (LINKS - 1)
}

impl MachTlb {
    /// `upper` + `lower` entries (at most 256 together); `seed` makes random replacement
    /// deterministic.
    pub fn new(upper: (usize, PartitionPolicy), lower: (usize, PartitionPolicy), seed: u64) -> MachTlb {
        let n = upper.0 + lower.0;
        assert!(n <= SLOTS, "mach.entries is at most {SLOTS} (validated)");
        MachTlb {
            slots: Box::new([Slot { key: EMPTY, pfn: 0 }; SLOTS]),
            next: Box::new([NIL; LINKS]),
            prev: Box::new([NIL; LINKS]),
            n,
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
        let mut e = self.next[BUCKET0 + bucket(key)];
        while e != NIL {
            // (Past a bucket's head every node is a slot.)
            let s = e as usize & (SLOTS - 1);
            if self.slots[s].key == key {
                return Some(s);
            }
            e = self.next[s];
        }
        None
    }

    /// The frame in slot `s` (a slot [`MachTlb::find`] returned).
    #[inline(always)]
    pub fn pfn_at(&self, s: usize) -> u64 {
        self.slots[s & (SLOTS - 1)].pfn
    }

    /// Enter slot `s` (holding its new key) at the head of its bucket's chain.
    #[inline(always)]
    fn index_insert(&mut self, s: usize) {
        let b = BUCKET0 + bucket(self.slots[s].key);
        let first = self.next[b];
        self.next[s] = first;
        self.prev[s] = b as u16;
        self.prev[node(first)] = s as u16;
        self.next[b] = s as u16;
    }

    /// Unlink slot `s` (holding a key) from its bucket's chain.
    #[inline(always)]
    fn index_remove(&mut self, s: usize) {
        let (p, n) = (self.prev[s], self.next[s]);
        self.next[node(p)] = n;
        self.prev[node(n)] = p;
    }

    /// Look `key` up (counted): its frame.
    #[inline(always)]
    pub fn lookup(&mut self, key: u64) -> Option<u64> {
        match self.find(key) {
            Some(s) => {
                self.hits += 1;
                Some(self.pfn_at(s))
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

    #[inline(always)]
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
            self.slots[s].pfn = pfn;
            return s;
        }
        self.insert_absent(key, pfn, lower)
    }

    /// [`MachTlb::insert`] of a key the TLB does not hold (the handlers enter only entries
    /// that just missed): no lookup first.
    #[inline(always)]
    pub fn insert_absent(&mut self, key: u64, pfn: u64, lower: bool) -> usize {
        debug_assert!(self.find(key).is_none(), "insert_absent of a key held");
        let lower = lower && self.lower.hi > self.lower.lo;
        let r = if (if lower { &self.lower } else { &self.upper }).policy == PartitionPolicy::Random {
            self.random()
        } else {
            0
        };
        let p = if lower { &mut self.lower } else { &mut self.upper };
        let s = match p.policy {
            PartitionPolicy::Random => p.lo + (((r >> 32) * (p.hi - p.lo) as u64) >> 32) as usize,
            PartitionPolicy::Fifo => {
                let s = p.next;
                p.next = if s + 1 >= p.hi { p.lo } else { s + 1 };
                s
            }
        };
        // (`s < n <= SLOTS`: the mask only spares the bounds checks.)
        let s = s & (SLOTS - 1);
        if self.slots[s].key != EMPTY {
            self.evictions[lower as usize] += 1;
            self.index_remove(s);
        }
        self.slots[s] = Slot { key, pfn };
        self.index_insert(s);
        s
    }

    /// Drop every entry whose tag is not 0 (not global): after the OS invalidated pages.
    pub fn flush_user(&mut self) {
        for s in 0..self.n {
            let k = self.slots[s].key;
            if k != EMPTY && k & 0xFFFF != 0 {
                self.index_remove(s);
                self.slots[s].key = EMPTY;
            }
        }
    }

    /// The key in slot `s` (tests, invariants).
    pub fn key_at(&self, s: usize) -> u64 {
        self.slots[s].key
    }

    /// Valid entries.
    pub fn valid(&self) -> usize {
        self.slots[..self.n].iter().filter(|e| e.key != EMPTY).count()
    }

    /// Whether no key appears twice.
    pub fn check(&self) -> Result<(), String> {
        let mut seen: Vec<u64> = self.slots[..self.n].iter().map(|e| e.key).filter(|&k| k != EMPTY).collect();
        seen.sort_unstable();
        if seen.windows(2).any(|w| w[0] == w[1]) {
            return Err("mach TLB: a key held twice".into());
        }
        if self.slots[self.n..].iter().any(|e| e.key != EMPTY) {
            return Err("mach TLB: a key past the last entry".into());
        }
        // Every chain: slots of its bucket, linked both ways; together, every entry once.
        let mut chained = 0;
        for b in 0..BUCKETS {
            let (mut e, mut before) = (self.next[BUCKET0 + b], (BUCKET0 + b) as u16);
            while e != NIL {
                let s = e as usize;
                if s >= self.n || chained > seen.len() {
                    return Err("mach TLB: a hash chain does not match the entries".into());
                }
                let k = self.slots[s].key;
                if k == EMPTY || bucket(k) != b || self.prev[s] != before {
                    return Err("mach TLB: a hash chain does not match the entries".into());
                }
                chained += 1;
                (before, e) = (e, self.next[s]);
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
