//! The set-associative array shared by TLBs, paging-structure caches and data caches (as
//! ChampSim shares its cache code): `sets x ways` slots of a 64-bit tag and a 64-bit payload,
//! with a replacement policy per set. Any set count works (the index is `key % sets`, a mask
//! when `sets` is a power of two), so 1536 entries / 12 ways = 128 sets and 2048 / 12 work alike.

use serde::{Deserialize, Serialize};
use std::hint::select_unpredictable;

/// Tag of an empty slot. Callers never use it as a real tag (TLB and cache keys leave the top
/// bits clear or are constructed so that they never equal it).
pub const INVALID: u64 = u64::MAX;

/// Which way of a full set is evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Replacement {
    /// True least-recently-used (per-slot last-use stamps).
    Lru,
    /// Tree pseudo-LRU: one bit per inner node of a binary tree over the ways pointing away
    /// from the most recently used half. Ways that are not a power of two use the tree over the
    /// next power of two and never choose a leaf that does not exist.
    TreePlru,
    /// First in, first out: the oldest fill is evicted; hits do not change the order.
    Fifo,
    /// A uniformly random way (xorshift64*, seeded from the configuration's seed).
    Random,
}

impl Replacement {
    pub fn name(self) -> &'static str {
        match self {
            Replacement::Lru => "lru",
            Replacement::TreePlru => "tree-plru",
            Replacement::Fifo => "fifo",
            Replacement::Random => "random",
        }
    }
}

/// Set-associative storage. Each set is one contiguous row of the host array: its tags, then
/// (LRU/FIFO) its stamps, then (if any) its payloads, so that a probe of a large structure (an
/// LLC) costs one host cache miss and the adjacent-line prefetch, not one miss per array.
#[derive(Debug, Clone)]
pub struct SetAssoc {
    sets: usize,
    ways: usize,
    /// `sets - 1` when `sets` is a power of two, else 0 (and `%` is used).
    mask: u64,
    pow2: bool,
    mem: Vec<u64>,
    /// u64 words per set.
    stride: usize,
    /// Offset of the stamps (LRU: last use; FIFO: fill time; 0 = empty slot) in a row, if any.
    stamp_at: Option<usize>,
    /// Offset of the payloads in a row, if any.
    data_at: Option<usize>,
    repl: Replacement,
    /// `ways` when the array is LRU or FIFO with payloads and `ways` is 4, 8 or 12 (the TLB
    /// and PSC shapes with code compiled for their way count), else 0.
    fast: usize,
    clock: u64,
    /// Tree-PLRU bits, one word per set (node `n` of the heap-ordered tree is bit `n`).
    plru: Vec<u64>,
    /// Leaves of the PLRU tree (ways rounded up to a power of two).
    plru_leaves: usize,
    rng: u64,
}

impl SetAssoc {
    /// `entries` must be a multiple of `ways` (checked by the configuration builder).
    pub fn new(entries: usize, ways: usize, repl: Replacement, seed: u64) -> SetAssoc {
        Self::with_payload(entries, ways, repl, seed, true)
    }

    /// Without a payload (caches only need tags): less host memory touched per access.
    pub fn new_tags_only(entries: usize, ways: usize, repl: Replacement, seed: u64) -> SetAssoc {
        Self::with_payload(entries, ways, repl, seed, false)
    }

    fn with_payload(entries: usize, ways: usize, repl: Replacement, seed: u64, payload: bool) -> SetAssoc {
        assert!(ways > 0 && entries >= ways && entries.is_multiple_of(ways), "validated by config");
        let sets = entries / ways;
        let pow2 = sets.is_power_of_two();
        let plru_leaves = ways.next_power_of_two();
        assert!(repl != Replacement::TreePlru || plru_leaves <= 64, "validated by config");
        let stamped = matches!(repl, Replacement::Lru | Replacement::Fifo);
        let stamp_at = stamped.then_some(ways);
        let data_at = payload.then_some(ways * (1 + stamped as usize));
        let stride = ways * (1 + stamped as usize + payload as usize);
        let n = sets * stride;
        let mut mem = Vec::with_capacity(n);
        if n >= 1 << 18 {
            crate::os::pagetable::advise_huge(mem.as_mut_ptr() as *mut u8, n * 8);
        }
        mem.resize(n, 0);
        for set in 0..sets {
            mem[set * stride..set * stride + ways].fill(INVALID);
        }
        SetAssoc {
            sets,
            ways,
            mask: if pow2 { sets as u64 - 1 } else { 0 },
            pow2,
            mem,
            stride,
            stamp_at,
            data_at,
            repl,
            fast: if stamped && payload && matches!(ways, 4 | 8 | 12) { ways } else { 0 },
            clock: 0,
            plru: if repl == Replacement::TreePlru { vec![0; sets] } else { Vec::new() },
            plru_leaves,
            rng: seed | 1,
        }
    }

    #[inline(always)]
    pub fn sets(&self) -> usize {
        self.sets
    }
    #[inline(always)]
    pub fn ways(&self) -> usize {
        self.ways
    }

    /// The set that `index_key` maps to.
    #[inline(always)]
    pub fn set_of(&self, index_key: u64) -> usize {
        if self.pow2 {
            (index_key & self.mask) as usize
        } else {
            (index_key % self.sets as u64) as usize
        }
    }

    /// Look `tag` up in `set`; on a hit update the replacement state and return the payload
    /// (0 without payloads).
    #[inline(always)]
    pub fn lookup(&mut self, set: usize, tag: u64) -> Option<u64> {
        match self.fast {
            4 => self.lookup_fast::<4>(set, tag),
            12 => self.lookup_fast::<12>(set, tag),
            8 => self.lookup_fast::<8>(set, tag),
            _ => self.lookup_any(set, tag),
        }
    }

    /// `lookup` for an LRU or FIFO array with payloads and `W` ways (`fast == W`): one bounds
    /// check for the row, and its three parts at fixed offsets.
    #[inline(always)]
    fn lookup_fast<const W: usize>(&mut self, set: usize, tag: u64) -> Option<u64> {
        let (tags, stamps, data) = row_parts::<W>(&mut self.mem, set);
        let w = find_tag::<W>(tags, tag);
        if w >= W {
            return None;
        }
        if self.repl == Replacement::Lru {
            self.clock += 1;
            stamps[w] = self.clock;
        }
        Some(data[w])
    }

    /// `insert` for an LRU or FIFO array with payloads and `W` ways (`fast == W`): the oldest
    /// stamp is the victim (an empty slot has stamp 0), and the fill gets the next stamp.
    #[inline(always)]
    fn insert_fast<const W: usize>(&mut self, set: usize, tag: u64, payload: u64) -> Option<(u64, u64)> {
        let (tags, stamps, data) = row_parts::<W>(&mut self.mem, set);
        let w = oldest_w::<W>(stamps);
        let old = std::mem::replace(&mut tags[w], tag);
        let old_data = std::mem::replace(&mut data[w], payload);
        self.clock += 1;
        stamps[w] = self.clock;
        (old != INVALID).then_some((old, old_data))
    }

    #[inline(always)]
    fn lookup_any(&mut self, set: usize, tag: u64) -> Option<u64> {
        let base = set * self.stride;
        let row = &self.mem[base..base + self.ways];
        // Branch-free scan for small sets: which way matches varies from access to access, and
        // a compare-and-branch per way mispredicts; one branch on the result does not.
        let w = if self.ways <= 16 {
            by_ways!(row.len(), find_tag, row, tag)
        } else {
            row.iter().position(|&t| t == tag).unwrap_or(usize::MAX)
        };
        if w == usize::MAX {
            return None;
        }
        self.touch(set, w);
        Some(self.data_at.map_or(0, |d| self.mem[base + d + w]))
    }

    /// Ask the host to bring `set`'s row into its cache (no effect on the simulation).
    #[inline(always)]
    pub fn prefetch(&self, set: usize) {
        let row = self.mem.as_ptr().wrapping_add(set * self.stride);
        // Every host cache line of the row (tags, stamps, payloads).
        for off in (0..self.stride).step_by(8) {
            prefetch_ptr(row.wrapping_add(off));
        }
    }

    /// Whether `tag` is in `set`, without changing any state.
    pub fn contains(&self, set: usize, tag: u64) -> bool {
        let base = set * self.stride;
        self.mem[base..base + self.ways].contains(&tag)
    }

    #[inline(always)]
    fn touch(&mut self, set: usize, way: usize) {
        // An `if` chain, not a `match`: LLVM makes a match over the policies a jump table.
        if self.repl == Replacement::Lru {
            self.clock += 1;
            let at = set * self.stride + self.ways + way;
            self.mem[at] = self.clock;
        } else if self.repl == Replacement::TreePlru {
            self.plru_touch(set, way);
        }
    }

    fn plru_touch(&mut self, set: usize, way: usize) {
        // Walk from the root to the leaf `way`, pointing every node away from the path taken.
        let mut bits = self.plru[set];
        let mut node = 1usize;
        let mut span = self.plru_leaves;
        let mut lo = 0usize;
        while span > 1 {
            span /= 2;
            let right = way >= lo + span;
            if right {
                bits &= !(1u64 << node); // next victim on the left
                lo += span;
                node = 2 * node + 1;
            } else {
                bits |= 1u64 << node; // next victim on the right
                node *= 2;
            }
        }
        self.plru[set] = bits;
    }

    fn plru_victim(&self, set: usize) -> usize {
        let bits = self.plru[set];
        let mut node = 1usize;
        let mut span = self.plru_leaves;
        let mut lo = 0usize;
        while span > 1 {
            span /= 2;
            // Go right when the bit says so and the right half holds at least one real way.
            let right = (bits >> node) & 1 == 1 && lo + span < self.ways;
            if right {
                lo += span;
                node = 2 * node + 1;
            } else {
                node *= 2;
            }
        }
        lo
    }

    fn victim(&mut self, set: usize) -> usize {
        let base = set * self.stride;
        if let Some(sa) = self.stamp_at {
            return oldest(&self.mem[base + sa..base + sa + self.ways]);
        }
        if let Some(w) = self.mem[base..base + self.ways].iter().position(|&t| t == INVALID) {
            return w;
        }
        if self.repl == Replacement::TreePlru {
            return self.plru_victim(set);
        }
        // xorshift64*: deterministic per seed.
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        ((r as u128 * self.ways as u128) >> 64) as usize
    }

    /// Look `tag` up and insert it on a miss (allocate on miss, as a cache level does).
    /// Returns (hit, evicted a valid line).
    #[inline]
    pub fn access(&mut self, set: usize, tag: u64) -> (bool, bool) {
        if let (Some(_), None, true) = (self.stamp_at, self.data_at, self.ways <= 16) {
            // LRU or FIFO without payloads (a cache level): one pass over the row finds the
            // tag and the victim a miss would evict, both without branches. (The stamps follow
            // the tags in the row.)
            let base = set * self.stride;
            let (tags, stamps) = self.mem[base..base + 2 * self.ways].split_at_mut(self.ways);
            let mut found = usize::MAX;
            let victim = oldest(stamps);
            for (w, &t) in tags.iter().enumerate() {
                found = select_unpredictable(t == tag, w, found);
            }
            self.clock += 1;
            if found != usize::MAX {
                if self.repl == Replacement::Lru {
                    stamps[found] = self.clock;
                } else {
                    self.clock -= 1; // FIFO: a hit changes nothing
                }
                return (true, false);
            }
            let w = victim;
            let old = std::mem::replace(&mut tags[w], tag);
            stamps[w] = self.clock;
            return (false, old != INVALID);
        }
        if self.lookup(set, tag).is_some() {
            return (true, false);
        }
        (false, self.insert(set, tag, 0).is_some())
    }

    /// Insert `tag` into `set` (the caller knows it is absent); returns the evicted valid tag
    /// and payload, if any.
    #[inline(always)]
    pub fn insert(&mut self, set: usize, tag: u64, data: u64) -> Option<(u64, u64)> {
        match self.fast {
            4 => return self.insert_fast::<4>(set, tag, data),
            12 => return self.insert_fast::<12>(set, tag, data),
            8 => return self.insert_fast::<8>(set, tag, data),
            _ => {}
        }
        self.insert_any(set, tag, data)
    }

    /// `insert` for the other policies, way counts and arrays without payloads.
    #[inline(never)]
    fn insert_any(&mut self, set: usize, tag: u64, data: u64) -> Option<(u64, u64)> {
        let w = self.victim(set);
        let base = set * self.stride;
        let old = self.mem[base + w];
        let evicted = (old != INVALID).then(|| (old, self.data_at.map_or(0, |d| self.mem[base + d + w])));
        self.mem[base + w] = tag;
        if let Some(d) = self.data_at {
            self.mem[base + d + w] = data;
        }
        match self.repl {
            Replacement::Lru | Replacement::Fifo => {
                self.clock += 1;
                self.mem[base + self.ways + w] = self.clock;
            }
            Replacement::TreePlru => self.plru_touch(set, w),
            Replacement::Random => {}
        }
        evicted
    }

    /// Invalidate every slot whose tag satisfies `pred`; returns how many.
    pub fn invalidate_if(&mut self, mut pred: impl FnMut(u64) -> bool) -> u64 {
        let mut n = 0;
        for set in 0..self.sets {
            let base = set * self.stride;
            for w in 0..self.ways {
                let t = self.mem[base + w];
                if t != INVALID && pred(t) {
                    self.mem[base + w] = INVALID;
                    if let Some(sa) = self.stamp_at {
                        self.mem[base + sa + w] = 0;
                    }
                    n += 1;
                }
            }
        }
        n
    }

    /// Invalidate everything; returns how many valid slots there were.
    pub fn clear(&mut self) -> u64 {
        self.invalidate_if(|_| true)
    }

    /// Valid tags of one set, in way order (for tests).
    pub fn set_tags(&self, set: usize) -> Vec<u64> {
        let base = set * self.stride;
        self.mem[base..base + self.ways].iter().copied().filter(|&t| t != INVALID).collect()
    }
}

/// The tags, stamps and payloads of row `set` of an LRU or FIFO array with payloads and `W`
/// ways (rows of `3 * W` words): one bounds check for the row.
#[inline(always)]
fn row_parts<const W: usize>(mem: &mut [u64], set: usize) -> (&mut [u64], &mut [u64], &mut [u64]) {
    let row = &mut mem[set * 3 * W..(set + 1) * 3 * W];
    let (tags, rest) = row.split_at_mut(W);
    let (stamps, data) = rest.split_at_mut(W);
    (tags, stamps, data)
}

/// `$f::<W>($args)` with `W = $ways` for the usual TLB and PSC way counts (fully unrolled
/// there), else `$f::<0>`, which takes the slices' own length. Three cases only: with more,
/// LLVM makes the chain a jump table, an indirect branch that mispredicts when consecutive
/// calls are for arrays of different way counts.
macro_rules! by_ways {
    ($ways:expr, $f:ident, $($arg:expr),*) => {{
        let ways = $ways;
        if ways == 4 {
            $f::<4>($($arg),*)
        } else if ways == 12 {
            $f::<12>($($arg),*)
        } else if ways == 8 {
            $f::<8>($($arg),*)
        } else {
            $f::<0>($($arg),*)
        }
    }};
}
use by_ways;

/// The way holding `tag` in `row` (`W` ways, or `row.len()` if `W` is 0), or `usize::MAX`.
/// Branch-free: which way matches varies from access to access, and a compare-and-branch per
/// way mispredicts; one branch on the result does not.
#[inline(always)]
fn find_tag<const W: usize>(row: &[u64], tag: u64) -> usize {
    let row = if W > 0 { &row[..W] } else { row };
    let mut found = usize::MAX;
    for (w, &t) in row.iter().enumerate() {
        found = if t == tag { w } else { found };
    }
    found
}

/// The way of the oldest stamp (the first such way on a tie: the first empty slot, whose stamp
/// is 0, before any valid one). Conditional moves, not branches: which way is oldest is
/// unpredictable (and a vectorised minimum of u64 words is slow without SSE4.2).
#[inline(always)]
fn oldest(stamps: &[u64]) -> usize {
    by_ways!(stamps.len(), oldest_w, stamps)
}

/// `oldest` over `W` ways (`stamps.len()` if `W` is 0).
#[inline(always)]
fn oldest_w<const W: usize>(stamps: &[u64]) -> usize {
    let stamps = if W > 0 { &stamps[..W] } else { stamps };
    let (mut best, mut min) = (0, stamps[0]);
    for (w, &st) in stamps.iter().enumerate().skip(1) {
        let older = st < min;
        best = select_unpredictable(older, w, best);
        min = select_unpredictable(older, st, min);
    }
    best
}

/// A host prefetch hint (x86-64 only; elsewhere nothing).
#[inline(always)]
pub fn prefetch_ptr<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fill a 1-set, 4-way array with tags 10..14, hit 10, insert 20: returns the evicted tag.
    fn evict_after_hit(r: Replacement) -> u64 {
        let mut s = SetAssoc::new(4, 4, r, 1);
        for t in 10..14 {
            assert!(s.insert(0, t, t).is_none());
        }
        assert_eq!(s.lookup(0, 10), Some(10));
        s.insert(0, 20, 0).unwrap().0
    }

    #[test]
    fn lru_plru_fifo_orders_by_hand() {
        // LRU order after A B C D A: B is least recently used.
        assert_eq!(evict_after_hit(Replacement::Lru), 11);
        // Tree-PLRU: after touches 0,1,2,3 the root points left, node 2 to way 0; the hit on
        // way 0 flips the root right and node 3 points at way 2 (it was last set by way 3).
        assert_eq!(evict_after_hit(Replacement::TreePlru), 12);
        // FIFO ignores the hit: the first filled (A) goes.
        assert_eq!(evict_after_hit(Replacement::Fifo), 10);
    }

    #[test]
    fn code_for_fixed_way_counts_matches_the_general_code() {
        // Lookups, inserts on misses and invalidations over random tags: the arrays compiled
        // for 4, 8 and 12 ways answer and evict exactly as the general code.
        for repl in [Replacement::Lru, Replacement::Fifo] {
            for ways in [4, 8, 12] {
                let mut fast = SetAssoc::new(ways * 3, ways, repl, 1);
                let mut any = SetAssoc::new(ways * 3, ways, repl, 1);
                assert_eq!(fast.fast, ways);
                any.fast = 0;
                let mut x = 0x9e37_79b9_7f4a_7c15u64;
                for step in 0..30_000u64 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let tag = x % (5 * ways as u64);
                    let set = fast.set_of(tag);
                    if step % 997 == 0 {
                        let n = fast.invalidate_if(|t| t % 3 == 0);
                        assert_eq!(n, any.invalidate_if(|t| t % 3 == 0));
                    }
                    let hit = fast.lookup(set, tag);
                    assert_eq!(hit, any.lookup(set, tag), "{repl:?} {ways} ways, step {step}");
                    if hit.is_none() {
                        assert_eq!(fast.insert(set, tag, step), any.insert(set, tag, step));
                    }
                }
            }
        }
    }

    #[test]
    fn plru_with_twelve_ways_never_picks_a_missing_leaf() {
        let mut s = SetAssoc::new(12, 12, Replacement::TreePlru, 1);
        for t in 0..1000u64 {
            if s.lookup(0, t % 17).is_none() {
                s.insert(0, t % 17, 0);
            }
            assert!(s.plru_victim(0) < 12);
        }
        assert_eq!(s.set_tags(0).len(), 12);
    }

    #[test]
    fn non_power_of_two_sets_index_by_modulo() {
        let s = SetAssoc::new(1536, 12, Replacement::Lru, 1); // 128 sets: a mask
        assert_eq!(s.set_of(130), 2);
        let s = SetAssoc::new(2048, 16, Replacement::Lru, 1);
        assert_eq!(s.sets(), 128);
        let s = SetAssoc::new(1536, 16, Replacement::Lru, 1); // 96 sets
        assert_eq!(s.sets(), 96);
        assert_eq!(s.set_of(96 + 5), 5);
        assert_eq!(s.set_of(1000), 1000 % 96);
    }

    #[test]
    fn random_is_deterministic_per_seed() {
        let run = |seed| {
            let mut s = SetAssoc::new(8, 8, Replacement::Random, seed);
            (0..100u64).filter_map(|t| s.insert(0, t, 0).map(|e| e.0)).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }
}
