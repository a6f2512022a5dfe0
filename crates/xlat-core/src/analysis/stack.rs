//! LRU stack distances of one set-associative structure for every associativity at once
//! (Mattson et al. 1970), with invalidations: per set, the recency stack as live positions of a
//! Fenwick tree over the set's own access clock, so that the depth of an entry (the entries
//! used since it was, plus one) is one prefix sum, O(log n).
//!
//! - An access to an entry whose last use is at position `t` has depth `d` = live positions
//!   `>= t`: it hits in every LRU array of this set count with at least `d` ways, and misses in
//!   the others. The entry moves to a new position at the top.
//! - **Invalidations** (the OS unmapped or changed a page) leave a *hole* at the entry's
//!   position: an array of `w >= d` ways loses the entry and gains an empty way, which the
//!   simulator's arrays fill before evicting anything (`array/recency.rs`: "an empty slot
//!   first"). An access of depth `d` (or a new entry) with a hole above it (newer than its
//!   position) fills the shallowest such hole in every array that misses: the shallowest hole
//!   takes the accessed entry's old position (or leaves the stack, for a new entry) and the
//!   entry goes to the top. Every array of `w` ways then holds exactly the entries among the top
//!   `w` positions, as before; without holes this is Mattson's move-to-front.
//! - A **flush** (a switch of address space without ASIDs) empties the stack: an all-hole stack
//!   behaves as an empty one.
//! - Positions deeper than `cap` (the most ways reported) never matter to an array of at most
//!   `cap` ways; when a set's clock reaches `2 cap`, the set is compacted to its newest `cap`
//!   positions (O(cap), every `cap` accesses at least: O(1) amortised).
//! - The top [`MRU`] entries of each set are kept apart, as a small list in recency order above
//!   the tree (most accesses of real programs hit them): a hit there costs a scan of at most
//!   `MRU` ids and no tree operation; the list's last entry drops into the tree's top position
//!   when a new one comes in. Holes are only ever in the tree: an invalidation first moves its
//!   set's list into the tree.

/// An unused position (`owner`), or a record with no position in a set (`pos`).
pub(crate) const NONE: u32 = u32::MAX;
/// A position whose entry was invalidated.
const HOLE: u32 = u32::MAX - 1;
/// `pos` of a record in its set's list of most recent entries.
const IN_MRU: u32 = u32::MAX - 2;
/// Entries of a set's list of most recent entries.
const MRU: usize = 8;

/// The stacks of every set of one set count; records are the caller's dense ids.
#[derive(Debug, Clone)]
pub(crate) struct SetStacks {
    pub(crate) sets: usize,
    /// Most ways reported: depths above it count as misses of every array.
    pub(crate) cap: usize,
    /// Positions per set (`2 cap`).
    span: usize,
    /// Fenwick trees, `span` u32 per set (1-based within a set's slice).
    tree: Vec<u32>,
    /// Owner of each position: a record, [`HOLE`] or [`NONE`].
    owner: Vec<u32>,
    /// Per set: the next position, and the live positions (entries and holes).
    now: Vec<u32>,
    live: Vec<u32>,
    /// Per set: hole positions, ascending (rare: only invalidations make them).
    holes: Vec<Vec<u32>>,
    /// Per set: `MRU` slots of the most recent entries (most recent first), and how many are used.
    mru: Vec<u32>,
    mru_len: Vec<u8>,
    /// Per record: its position in its set, or [`NONE`].
    pub(crate) pos: Vec<u32>,
    /// `hist[d - 1]`: accesses of depth `d` (1..=cap).
    pub(crate) hist: Vec<u64>,
    /// Accesses deeper than `cap` or to entries not in the stack (misses of every array).
    pub(crate) beyond: u64,
}

impl SetStacks {
    pub(crate) fn new(sets: usize, cap: usize) -> SetStacks {
        let span = 2 * cap.max(1);
        SetStacks {
            sets,
            cap,
            span,
            tree: vec![0; sets * span],
            owner: vec![NONE; sets * span],
            now: vec![0; sets],
            live: vec![0; sets],
            holes: vec![Vec::new(); sets],
            mru: vec![NONE; sets * MRU],
            mru_len: vec![0; sets],
            pos: Vec::new(),
            hist: vec![0; cap],
            beyond: 0,
        }
    }

    /// Make room for records `0..n`.
    #[inline]
    pub(crate) fn grow(&mut self, n: usize) {
        if self.pos.len() < n {
            self.pos.resize(n, NONE);
        }
    }

    #[inline(always)]
    fn add(tree: &mut [u32], mut i: usize, v: u32) {
        i += 1;
        while i <= tree.len() {
            tree[i - 1] = tree[i - 1].wrapping_add(v);
            i += i & i.wrapping_neg();
        }
    }

    /// Live positions below `p`.
    #[inline(always)]
    fn below(tree: &[u32], mut i: usize) -> u32 {
        let mut s = 0u32;
        while i > 0 {
            s = s.wrapping_add(tree[i - 1]);
            i &= i - 1;
        }
        s
    }

    /// Record `rec` (of set `set`) is accessed: count its depth and move it to the top.
    #[inline]
    pub(crate) fn access(&mut self, set: usize, rec: u32) {
        let t = self.pos[rec as usize];
        let m = &mut self.mru[set * MRU..set * MRU + MRU];
        if t == IN_MRU {
            let j = m.iter().position(|&r| r == rec).expect("in the list");
            if j < self.cap {
                self.hist[j] += 1;
            } else {
                self.beyond += 1;
            }
            m.copy_within(0..j, 1);
            m[0] = rec;
            return;
        }
        let len = self.mru_len[set] as usize;
        self.tree_access(set, t, len);
        // To the list's front; its last entry, if full, to the tree's top.
        let m = &mut self.mru[set * MRU..set * MRU + MRU];
        let out = m[MRU - 1];
        m.copy_within(0..MRU - 1, 1);
        m[0] = rec;
        self.pos[rec as usize] = IN_MRU;
        if len == MRU {
            self.push(set, out);
        } else {
            self.mru_len[set] += 1;
        }
    }

    /// An access to a record at tree position `t` (or none), below `above` list entries:
    /// count its depth, and take it out of the tree (the hole rule of the module's docs).
    #[inline]
    fn tree_access(&mut self, set: usize, t: u32, above: usize) {
        let base = set * self.span;
        let tree = &mut self.tree[base..base + self.span];
        let holes = &mut self.holes[set];
        if t == NONE {
            self.beyond += 1;
        } else {
            let d = above + (self.live[set] - Self::below(tree, t as usize)) as usize;
            if d <= self.cap {
                self.hist[d - 1] += 1;
            } else {
                self.beyond += 1;
            }
        }
        match holes.last() {
            // The shallowest hole newer than the entry takes its position (or leaves).
            Some(&h) if t == NONE || h > t => {
                holes.pop();
                Self::add(tree, h as usize, u32::MAX);
                self.owner[base + h as usize] = NONE;
                self.live[set] -= 1;
                if t != NONE {
                    self.owner[base + t as usize] = HOLE;
                    let i = holes.partition_point(|&x| x < t);
                    holes.insert(i, t);
                }
            }
            _ => {
                if t != NONE {
                    Self::add(tree, t as usize, u32::MAX);
                    self.owner[base + t as usize] = NONE;
                    self.live[set] -= 1;
                }
            }
        }
    }

    /// `rec` goes to the top position of `set`'s tree.
    #[inline]
    fn push(&mut self, set: usize, rec: u32) {
        if self.now[set] as usize == self.span {
            self.compact(set);
        }
        let base = set * self.span;
        let now = self.now[set];
        Self::add(&mut self.tree[base..base + self.span], now as usize, 1);
        self.owner[base + now as usize] = rec;
        self.pos[rec as usize] = now;
        self.now[set] = now + 1;
        self.live[set] += 1;
    }

    /// Move `set`'s list into the tree, its oldest entry first.
    fn spill(&mut self, set: usize) {
        let len = self.mru_len[set] as usize;
        for j in (0..len).rev() {
            let r = self.mru[set * MRU + j];
            self.push(set, r);
        }
        self.mru_len[set] = 0;
        self.mru[set * MRU..set * MRU + MRU].fill(NONE);
    }

    /// Keep the newest `cap` positions of `set`, renumbered from 0 in order; drop the rest.
    #[cold]
    fn compact(&mut self, set: usize) {
        let base = set * self.span;
        let mut kept: Vec<u32> = Vec::with_capacity(self.cap);
        for p in (0..self.now[set] as usize).rev() {
            let o = self.owner[base + p];
            if o == NONE {
                continue;
            }
            if kept.len() < self.cap {
                kept.push(o);
            } else if o != HOLE {
                self.pos[o as usize] = NONE;
            }
            self.owner[base + p] = NONE;
        }
        kept.reverse();
        let holes = &mut self.holes[set];
        holes.clear();
        for (p, &o) in kept.iter().enumerate() {
            self.owner[base + p] = o;
            if o == HOLE {
                holes.push(p as u32);
            } else {
                self.pos[o as usize] = p as u32;
            }
        }
        // A Fenwick tree of ones at 0..n, built in O(span): node i covers (i - lowbit(i), i].
        let n = kept.len();
        let tree = &mut self.tree[base..base + self.span];
        for (i, v) in tree.iter_mut().enumerate() {
            let hi = i + 1;
            let lo = hi - (hi & hi.wrapping_neg());
            *v = (hi.min(n).saturating_sub(lo)) as u32;
        }
        self.now[set] = n as u32;
        self.live[set] = n as u32;
    }

    /// Record `rec` was invalidated: its position becomes a hole.
    pub(crate) fn invalidate(&mut self, set: usize, rec: u32) {
        if self.pos[rec as usize] == IN_MRU {
            self.spill(set);
        }
        // (Spilling may have compacted it away, with fewer positions kept than listed.)
        let t = self.pos[rec as usize];
        if t == NONE {
            return;
        }
        self.pos[rec as usize] = NONE;
        self.owner[set * self.span + t as usize] = HOLE;
        let holes = &mut self.holes[set];
        let i = holes.partition_point(|&x| x < t);
        holes.insert(i, t);
    }

    /// Every entry gone (the caller forgets its records).
    pub(crate) fn flush(&mut self) {
        for set in 0..self.sets {
            if self.now[set] == 0 {
                continue;
            }
            let base = set * self.span;
            self.tree[base..base + self.span].fill(0);
            self.owner[base..base + self.span].fill(NONE);
            self.now[set] = 0;
            self.live[set] = 0;
            self.holes[set].clear();
        }
        self.mru.fill(NONE);
        self.mru_len.fill(0);
        self.pos.fill(NONE);
    }

    /// Misses of the array of `w` ways (1..=cap) of this set count.
    pub(crate) fn misses_by_ways(&self) -> Vec<u64> {
        let total: u64 = self.hist.iter().sum::<u64>() + self.beyond;
        let mut hits = 0;
        self.hist
            .iter()
            .map(|h| {
                hits += h;
                total - hits
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::SetStacks;
    use rand::{Rng, SeedableRng};

    /// A plain LRU array of `ways` ways per set, empty ways filled first.
    struct Naive {
        sets: Vec<Vec<u32>>,
        ways: usize,
        misses: u64,
    }

    impl Naive {
        fn access(&mut self, set: usize, rec: u32) {
            let s = &mut self.sets[set];
            if let Some(i) = s.iter().position(|&r| r == rec) {
                s.remove(i);
            } else {
                self.misses += 1;
                if s.len() == self.ways {
                    s.pop();
                }
            }
            s.insert(0, rec);
        }
        fn invalidate(&mut self, set: usize, rec: u32) {
            self.sets[set].retain(|&r| r != rec);
        }
    }

    #[test]
    fn hand_counted_depths() {
        // One set, 4 ways: a b c a (depth 3) b (3) b (1) d c (4).
        let mut s = SetStacks::new(1, 4);
        s.grow(4);
        for r in [0, 1, 2, 0, 1, 1, 3, 2] {
            s.access(0, r);
        }
        assert_eq!(s.hist, vec![1, 0, 2, 1]);
        assert_eq!(s.beyond, 4);
        // 1 way: all but the repeat miss (7); 3 ways: 8 - 1 - 2 = 5; 4 ways: 4.
        assert_eq!(s.misses_by_ways(), vec![7, 7, 5, 4]);
    }

    #[test]
    fn a_hole_is_filled_before_anything_is_evicted() {
        // 2 ways: a b, invalidate a, c (fills the hole: b stays), b hits at depth 2.
        let mut s = SetStacks::new(1, 2);
        s.grow(3);
        s.access(0, 0);
        s.access(0, 1);
        s.invalidate(0, 0);
        s.access(0, 2);
        s.access(0, 1);
        assert_eq!(s.hist, vec![0, 1]);
        assert_eq!(s.misses_by_ways(), vec![4, 3]);
    }

    #[test]
    fn equals_naive_lru_with_invalidations_flushes_and_compaction() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        for (sets, cap) in [(1usize, 8usize), (1, 33), (4, 5), (8, 16)] {
            let mut s = SetStacks::new(sets, cap);
            let recs = 120u32;
            s.grow(recs as usize);
            let mut naive: Vec<Naive> =
                (1..=cap).map(|w| Naive { sets: vec![Vec::new(); sets], ways: w, misses: 0 }).collect();
            for _ in 0..30_000 {
                // Skewed: most accesses to few records, so depths vary.
                let r = if rng.gen_bool(0.7) { rng.gen_range(0..12) } else { rng.gen_range(0..recs) };
                let set = r as usize % sets;
                match rng.gen_range(0..1000) {
                    0..=19 => {
                        s.invalidate(set, r);
                        naive.iter_mut().for_each(|n| n.invalidate(set, r));
                    }
                    20 => {
                        s.flush();
                        naive.iter_mut().for_each(|n| n.sets.iter_mut().for_each(|x| x.clear()));
                    }
                    _ => {
                        s.access(set, r);
                        naive.iter_mut().for_each(|n| n.access(set, r));
                    }
                }
            }
            let want: Vec<u64> = naive.iter().map(|n| n.misses).collect();
            assert_eq!(s.misses_by_ways(), want, "sets {sets} cap {cap}");
        }
    }
}
