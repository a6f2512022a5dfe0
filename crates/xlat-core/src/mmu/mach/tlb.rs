//! The R3000's TLB as Mach 3.0 uses it (seed 001 section 4.1): one fully associative array
//! split into partitions, each with its own replacement. The lower partition (entries
//! `0..lower`, the R3000's wired entries) holds L2 entries, FIFO; the upper one (`lower..`)
//! holds L1U, L1K and L3 entries, replaced at random (`tlbwr`).
//!
//! An entry's key is its virtual page number shifted left 16 bits, or'ed with its address-space
//! tag (0 for kernel pages: the MIPS global bit). Random and FIFO replacement change nothing on
//! a hit, so a lookup is a pure function of the entries held: it goes through a direct-mapped
//! index of them (4096 rows, keyed by a hash of the key), each row the slot of one of the
//! entries whose key falls in it, with the number of those entries. A lookup compares the key
//! of its row's slot (a hit: that slot's frame), else a row with fewer than two entries proves a
//! miss (with none, the row's slot holds some other key), and only a row shared by two or more
//! entries is answered by scanning the slots (rows are 64 times the entries: under 1% of
//! lookups). Every insert and eviction keeps the index exact, so the hits, victims and counts
//! are those of the fully associative array. The index takes 12 KB of host memory (a byte and a
//! count per row), so that it stays in the host's first-level cache. The slots have room for
//! the largest TLB (256 entries) and are indexed through masks: no bounds checks.

use crate::config::PartitionPolicy;

/// No entry.
pub const EMPTY: u64 = u64::MAX;
/// Slots the arrays have room for (`mach.entries` is at most 256), so that a slot index masked
/// with `SLOTS - 1` needs no bounds check.
const SLOTS: usize = 256;
/// Rows of the direct-mapped index (a power of two, 16 per slot of the largest TLB).
const ROWS: usize = 4096;

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
    /// (The arrays in place, not boxed: a lookup reads no pointer first.)
    slots: [Slot; SLOTS],
    /// Per row: the slot of one of the entries whose key falls in the row (any slot when none
    /// does).
    rows: [u8; ROWS],
    /// Per row: how many entries' keys fall in it.
    shared: [u16; ROWS],
    /// Slots in use: `0..n`.
    n: usize,
    upper: Partition,
    lower: Partition,
    rng: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: [u64; 2],
}

/// The row of `key` in the index.
#[inline(always)]
fn row(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize & (ROWS - 1)
}

impl MachTlb {
    /// `upper` + `lower` entries (at most 256 together); `seed` makes random replacement
    /// deterministic.
    pub fn new(upper: (usize, PartitionPolicy), lower: (usize, PartitionPolicy), seed: u64) -> MachTlb {
        let n = upper.0 + lower.0;
        assert!(n <= SLOTS, "mach.entries is at most {SLOTS} (validated)");
        MachTlb {
            slots: [Slot { key: EMPTY, pfn: 0 }; SLOTS],
            rows: [0; ROWS],
            shared: [0; ROWS],
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

    /// The frame of `key`, without counting.
    #[inline(always)]
    pub fn get(&self, key: u64) -> Option<u64> {
        let r = row(key);
        let e = self.slots[self.rows[r] as usize];
        if e.key == key {
            return Some(e.pfn);
        }
        if self.shared[r] < 2 {
            return None;
        }
        self.find(key).map(|s| self.pfn_at(s))
    }

    /// The slot holding `key`, without counting (a scan: the index answers [`MachTlb::get`]).
    #[inline(never)]
    pub fn find(&self, key: u64) -> Option<usize> {
        self.slots[..self.n].iter().position(|e| e.key == key)
    }

    /// The frame in slot `s` (a slot [`MachTlb::find`] returned).
    #[inline(always)]
    pub fn pfn_at(&self, s: usize) -> u64 {
        self.slots[s & (SLOTS - 1)].pfn
    }

    /// Enter slot `s` (holding its new key) in the index: its row now shows it.
    #[inline(always)]
    fn index_insert(&mut self, s: usize) {
        let r = row(self.slots[s].key);
        self.shared[r] += 1;
        self.rows[r] = s as u8;
    }

    /// Drop slot `s`, which held `key` (and now holds another key or none), from the index: if
    /// its row showed it, the row shows another entry of the row if any (found by a scan: rows
    /// are rarely shared).
    #[inline(always)]
    fn index_remove(&mut self, s: usize, key: u64) {
        let r = row(key);
        self.shared[r] -= 1;
        if self.rows[r] as usize == s && self.shared[r] > 0 {
            self.rows[r] = self.other_of_row(r);
        }
    }

    /// The slot of an entry whose key falls in row `r` (one does).
    #[cold]
    #[inline(never)]
    fn other_of_row(&self, r: usize) -> u8 {
        self.slots[..self.n].iter().position(|e| e.key != EMPTY && row(e.key) == r).expect("the row's count") as u8
    }

    /// Look `key` up (counted): its frame.
    #[inline(always)]
    pub fn lookup(&mut self, key: u64) -> Option<u64> {
        let p = self.get(key);
        if p.is_some() {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
        p
    }

    /// Whether `key` is present (a `tlbp` probe: not counted as a lookup).
    pub fn contains(&self, key: u64) -> bool {
        self.get(key).is_some()
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
        let old = self.slots[s].key;
        self.slots[s] = Slot { key, pfn };
        if old != EMPTY {
            self.evictions[lower as usize] += 1;
            self.index_remove(s, old);
        }
        self.index_insert(s);
        s
    }

    /// Drop every entry whose tag is not 0 (not global): after the OS invalidated pages.
    pub fn flush_user(&mut self) {
        for s in 0..self.n {
            let k = self.slots[s].key;
            if k != EMPTY && k & 0xFFFF != 0 {
                self.slots[s].key = EMPTY;
                self.index_remove(s, k);
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

    /// Whether no key appears twice, and the index matches the slots.
    pub fn check(&self) -> Result<(), String> {
        let mut seen: Vec<u64> = self.slots[..self.n].iter().map(|e| e.key).filter(|&k| k != EMPTY).collect();
        seen.sort_unstable();
        if seen.windows(2).any(|w| w[0] == w[1]) {
            return Err("mach TLB: a key held twice".into());
        }
        if self.slots[self.n..].iter().any(|e| e.key != EMPTY) {
            return Err("mach TLB: a key past the last entry".into());
        }
        // Every row: its count is the number of entries in it, and it shows one of them (any
        // slot when none).
        let mut count = vec![0u16; ROWS];
        for e in self.slots[..self.n].iter().filter(|e| e.key != EMPTY) {
            count[row(e.key)] += 1;
        }
        for (r, &c) in count.iter().enumerate() {
            let shown = self.slots[self.rows[r] as usize].key;
            let ok = c == 0 || (shown != EMPTY && row(shown) == r);
            if self.shared[r] != c || !ok {
                return Err("mach TLB: the index does not match the entries".into());
            }
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

    #[test]
    fn shared_rows_answer_exactly_as_a_scan() {
        // Keys crowded into three rows of the index (eight in each) and spread ones: after
        // every insert, eviction and flush, each key's lookup is what scanning the slots says.
        let mut crowded: Vec<Vec<u64>> = vec![Vec::new(); 3];
        for k in 0u64.. {
            let key = k << 16 | (k % 4);
            if let Some(c) = (0..3).find(|&c| row(key) == c && crowded[c].len() < 8) {
                crowded[c].push(key);
            }
            if crowded.iter().all(|c| c.len() == 8) {
                break;
            }
        }
        let universe: Vec<u64> = crowded.concat().into_iter().chain((1..40).map(|k| (k * 977) << 16 | 1)).collect();
        let mut t = MachTlb::new((12, Random), (4, Fifo), 5);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut shared = 0;
        for i in 0..5000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = universe[(x % universe.len() as u64) as usize];
            if t.get(key).is_none() {
                t.insert_absent(key, i, x >> 63 == 0);
            } else if x >> 62 == 0 {
                t.insert(key, i, false);
            }
            if i % 997 == 0 {
                t.flush_user();
            }
            t.check().unwrap();
            for &k in &universe {
                let scan = (0..16).find(|&s| t.key_at(s) == k).map(|s| t.pfn_at(s));
                assert_eq!(t.get(k), scan);
            }
            shared += (0..3).filter(|&r| t.shared[r] >= 2).count();
        }
        assert!(shared > 1000, "the crowded rows were shared ({shared})");
    }
}
