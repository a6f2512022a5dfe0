//! Set-associative storage shared by TLBs, paging-structure caches and data caches (as ChampSim
//! shares its cache code): `sets x ways` slots of a 64-bit tag and a payload (below 2^32: TLB
//! frames, PSC table ids), with a replacement policy per set. Any set count works (the index is
//! `key % sets`, a mask when `sets` is a power of two), so 1536 entries / 12 ways = 128 sets and
//! 2048 / 12 work alike.
//!
//! Three layouts, chosen by policy and geometry: [`recency`] rows (LRU and FIFO arrays with
//! payloads of at most 16 ways: every TLB and PSC of the presets), [`stamped`] rows (the other
//! arrays), and the compact tag rows of cache levels ([`rows`]). The active way count of an
//! array can change at run time ([`SetAssoc::set_active_ways`], for way-disabling designs).
//!
//! The API is small: [`SetAssoc::lookup`] / [`SetAssoc::insert`] by set (checked),
//! [`SetAssoc::probe`] / [`SetAssoc::fill`] by index key (the array finds the set), and their
//! shape-compiled forms [`SetAssoc::probe_as`] / [`SetAssoc::fill_as`] for the simulator's hot
//! loop; [`SetAssoc::access`] (lookup, and insert on a miss) for cache levels.

mod recency;
mod replacement;
pub mod rows;
mod stamped;

use recency::RecencyRows;
pub use replacement::{Replacement, INVALID};
use stamped::StampedRows;

/// A set-associative array.
#[derive(Debug, Clone)]
pub struct SetAssoc {
    sets: usize,
    /// `sets - 1` when `sets` is a power of two, else 0 (and `%` is used).
    mask: u64,
    pow2: bool,
    /// Lanes of a recency row (4, 8, 12 or 16) when the array keeps recency rows, else 0 (then
    /// `stamped` holds it).
    lanes: usize,
    /// `lanes` when the set count is a power of two, else 0 (see [`SetAssoc::class`]).
    class: usize,
    recency: RecencyRows,
    /// (Boxed: the recency rows' fields, which every TLB probe reads, stay in a small struct.)
    stamped: Box<StampedRows>,
}

impl SetAssoc {
    /// `entries` must be a multiple of `ways` (checked by the configuration builder). Payloads
    /// must fit in 32 bits (TLB frames are below 2^30 as `memory.size` is at most 4 TiB; PSC
    /// payloads are table ids, u32): [`SetAssoc::insert`] panics otherwise.
    pub fn new(entries: usize, ways: usize, repl: Replacement, seed: u64) -> SetAssoc {
        Self::with_payload(entries, ways, repl, seed, true, true)
    }

    /// Without a payload (caches only need tags): less host memory touched per access.
    pub fn new_tags_only(entries: usize, ways: usize, repl: Replacement, seed: u64) -> SetAssoc {
        Self::with_payload(entries, ways, repl, seed, false, false)
    }

    /// `recency`: recency rows when the policy and way count allow (else stamped rows).
    fn with_payload(
        entries: usize,
        ways: usize,
        repl: Replacement,
        seed: u64,
        payload: bool,
        recency: bool,
    ) -> SetAssoc {
        assert!(ways > 0 && entries >= ways && entries.is_multiple_of(ways), "validated by config");
        let sets = entries / ways;
        let pow2 = sets.is_power_of_two();
        let rows = matches!(repl, Replacement::Lru | Replacement::Fifo) && payload && recency && ways <= 16;
        let (recency, stamped) = if rows {
            (RecencyRows::new(sets, ways, repl == Replacement::Lru), StampedRows::new(0, 1, repl, seed, false))
        } else {
            (RecencyRows::new(0, 1, false), StampedRows::new(sets, ways, repl, seed, payload))
        };
        let lanes = if rows { recency.lanes } else { 0 };
        SetAssoc {
            sets,
            mask: if pow2 { sets as u64 - 1 } else { 0 },
            pow2,
            lanes,
            class: if pow2 { lanes } else { 0 },
            recency,
            stamped: Box::new(stamped),
        }
    }

    #[inline(always)]
    pub fn sets(&self) -> usize {
        self.sets
    }

    /// The ways in use (see [`SetAssoc::set_active_ways`]).
    #[inline(always)]
    pub fn ways(&self) -> usize {
        if self.lanes != 0 {
            self.recency.ways
        } else {
            self.stamped.ways
        }
    }

    /// The configured ways (the most [`SetAssoc::set_active_ways`] accepts).
    pub fn ways_max(&self) -> usize {
        if self.lanes != 0 {
            self.recency.ways_max
        } else {
            self.stamped.ways_max
        }
    }

    /// The shape class: the lanes of a recency row (4, 8, 12 or 16) when the array keeps recency
    /// rows and its set count is a power of two (the set is `index_key & mask`), else 0. Arrays
    /// of one class are probed by the same code with [`SetAssoc::probe_as`] and
    /// [`SetAssoc::fill_as`], the lane count a constant of the caller. It never changes.
    #[inline(always)]
    pub fn class(&self) -> usize {
        self.class
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
        self.lookup_in::<true>(set, tag)
    }

    /// [`SetAssoc::lookup`] in the set that `index_key` maps to, which it returns too (without
    /// the bounds check `lookup` makes: `set_of` is below the set count).
    #[inline(always)]
    pub fn probe(&mut self, index_key: u64, tag: u64) -> (usize, Option<u64>) {
        let set = self.set_of(index_key);
        (set, self.lookup_in::<false>(set, tag))
    }

    /// [`SetAssoc::probe`] compiled for arrays of class `lanes` (a constant after inlining; 0:
    /// any array). `KNOWN`: the caller knows the array is of that class, so no check is made
    /// and only the row code of that width is compiled in; otherwise an array of another class
    /// takes the general probe out of line.
    ///
    /// # Safety
    /// If `KNOWN`, `lanes` is 0 or [`SetAssoc::class`] (else the set may lie past the rows).
    #[inline(always)]
    pub unsafe fn probe_as<const KNOWN: bool>(
        &mut self,
        lanes: usize,
        index_key: u64,
        tag: u64,
    ) -> (usize, Option<u64>) {
        if !KNOWN && lanes != 0 && self.class != lanes {
            return self.probe_other(index_key, tag);
        }
        debug_assert!(lanes == 0 || lanes == self.class);
        let set = (index_key & self.mask) as usize;
        match lanes {
            4 => (set, self.recency.lookup::<4, false>(set, tag)),
            8 => (set, self.recency.lookup::<8, false>(set, tag)),
            12 => (set, self.recency.lookup::<12, false>(set, tag)),
            16 => (set, self.recency.lookup::<16, false>(set, tag)),
            _ => self.probe(index_key, tag),
        }
    }

    /// [`SetAssoc::probe`] that also returns the way of a hit counted from the MRU position
    /// (recency rows; stamped rows, which keep no order, report 0). For Lite's LRU-distance
    /// counters (seed 000 section 5.4.2), off the plain configuration's path.
    #[inline]
    pub fn probe_way(&mut self, index_key: u64, tag: u64) -> Option<(u64, usize)> {
        let set = self.set_of(index_key);
        match self.lanes {
            4 => self.recency.lookup_way::<4, false>(set, tag),
            8 => self.recency.lookup_way::<8, false>(set, tag),
            12 => self.recency.lookup_way::<12, false>(set, tag),
            16 => self.recency.lookup_way::<16, false>(set, tag),
            _ => self.stamped.lookup(set, tag).map(|d| (d, 0)),
        }
    }

    #[inline(never)]
    fn probe_other(&mut self, index_key: u64, tag: u64) -> (usize, Option<u64>) {
        self.probe(index_key, tag)
    }

    /// `lookup`; `CHECKED`: check `set` (else the caller knows it is below the set count).
    #[inline(always)]
    fn lookup_in<const CHECKED: bool>(&mut self, set: usize, tag: u64) -> Option<u64> {
        // (Three cases inline: with more, LLVM makes the chain a jump table, an indirect branch
        // that mispredicts when consecutive calls are for arrays of different way counts.)
        let l = self.lanes;
        if l == 4 {
            self.recency.lookup::<4, CHECKED>(set, tag)
        } else if l == 12 {
            self.recency.lookup::<12, CHECKED>(set, tag)
        } else if l == 8 {
            self.recency.lookup::<8, CHECKED>(set, tag)
        } else {
            self.lookup_other(set, tag)
        }
    }

    /// `lookup` of the arrays of other shapes.
    #[inline(never)]
    fn lookup_other(&mut self, set: usize, tag: u64) -> Option<u64> {
        match self.lanes {
            16 => self.recency.lookup::<16, true>(set, tag),
            _ => {
                assert!(set < self.sets, "set {set} out of range");
                self.stamped.lookup(set, tag)
            }
        }
    }

    /// Look `tag` up and insert it on a miss (allocate on miss, as a cache level does).
    /// Returns (hit, evicted a valid line).
    #[inline]
    pub fn access(&mut self, set: usize, tag: u64) -> (bool, bool) {
        if self.lanes == 0 {
            return self.stamped.access(set, tag);
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
        self.insert_in::<true>(set, tag, data)
    }

    /// [`SetAssoc::insert`] into the set that `index_key` maps to, which it returns too
    /// (without the bounds check `insert` makes).
    #[inline(always)]
    pub fn fill(&mut self, index_key: u64, tag: u64, data: u64) -> (usize, Option<(u64, u64)>) {
        let set = self.set_of(index_key);
        (set, self.insert_in::<false>(set, tag, data))
    }

    /// [`SetAssoc::fill`] compiled for arrays of class `lanes`, as [`SetAssoc::probe_as`].
    ///
    /// # Safety
    /// As [`SetAssoc::probe_as`].
    #[inline(always)]
    pub unsafe fn fill_as<const KNOWN: bool>(
        &mut self,
        lanes: usize,
        index_key: u64,
        tag: u64,
        data: u64,
    ) -> (usize, Option<(u64, u64)>) {
        if !KNOWN && lanes != 0 && self.class != lanes {
            return self.fill_other(index_key, tag, data);
        }
        debug_assert!(lanes == 0 || lanes == self.class);
        assert!(data >> 32 == 0, "payload {data:#x} wider than 32 bits");
        let set = (index_key & self.mask) as usize;
        match lanes {
            4 => (set, self.recency.insert::<4, false>(set, tag, data)),
            8 => (set, self.recency.insert::<8, false>(set, tag, data)),
            12 => (set, self.recency.insert::<12, false>(set, tag, data)),
            16 => (set, self.recency.insert::<16, false>(set, tag, data)),
            _ => self.fill(index_key, tag, data),
        }
    }

    #[inline(never)]
    fn fill_other(&mut self, index_key: u64, tag: u64, data: u64) -> (usize, Option<(u64, u64)>) {
        self.fill(index_key, tag, data)
    }

    /// `insert`; `CHECKED` as in `lookup_in`.
    #[inline(always)]
    fn insert_in<const CHECKED: bool>(&mut self, set: usize, tag: u64, data: u64) -> Option<(u64, u64)> {
        assert!(data >> 32 == 0, "payload {data:#x} wider than 32 bits");
        let l = self.lanes;
        if l == 4 {
            self.recency.insert::<4, CHECKED>(set, tag, data)
        } else if l == 12 {
            self.recency.insert::<12, CHECKED>(set, tag, data)
        } else if l == 8 {
            self.recency.insert::<8, CHECKED>(set, tag, data)
        } else {
            self.insert_other(set, tag, data)
        }
    }

    /// `insert` of the arrays of other shapes.
    #[inline(never)]
    fn insert_other(&mut self, set: usize, tag: u64, data: u64) -> Option<(u64, u64)> {
        match self.lanes {
            16 => self.recency.insert::<16, true>(set, tag, data),
            _ => {
                assert!(set < self.sets, "set {set} out of range");
                self.stamped.insert(set, tag, data)
            }
        }
    }

    /// Invalidate every slot whose tag satisfies `pred`; returns how many.
    pub fn invalidate_if(&mut self, mut pred: impl FnMut(u64) -> bool) -> u64 {
        if self.lanes == 0 {
            return self.stamped.invalidate_if(&mut pred);
        }
        let mut n = 0;
        // Keep the others in order, closing the gaps: the empty slots go last.
        for set in 0..self.sets {
            let (tags, data) = self.recency.slots_mut(set);
            let mut k = 0;
            for w in 0..tags.len() {
                let t = tags[w];
                if t != INVALID && pred(t) {
                    n += 1;
                } else {
                    (tags[k], data[k]) = (t, data[w]);
                    k += 1;
                }
            }
            tags[k..].fill(INVALID);
        }
        n
    }

    /// Invalidate everything; returns how many valid slots there were.
    pub fn clear(&mut self) -> u64 {
        self.invalidate_if(|_| true)
    }

    /// Use `ways` of the configured ways of every set from now on (1 ..= the configured ways),
    /// as a way-disabling design does: each set keeps its `ways` most recently used (LRU) or
    /// filled (FIFO) entries — under tree-PLRU and random, the entries of its first `ways`
    /// ways — and the others are invalidated, `dropped(tag)` called for each; ways that come
    /// back into use start empty. Returns the number of entries dropped. The class does not
    /// change, so shape-compiled probes stay valid.
    pub fn set_active_ways(&mut self, ways: usize, mut dropped: impl FnMut(u64)) -> u64 {
        let mut n = 0;
        let mut count = |t: u64| {
            n += 1;
            dropped(t)
        };
        if self.lanes != 0 {
            self.recency.set_active_ways(ways, &mut count);
        } else {
            self.stamped.set_active_ways(ways, &mut count);
        }
        n
    }

    /// Valid tags of one set (recency rows: most recent first; stamped rows: way order).
    pub fn set_tags(&self, set: usize) -> Vec<u64> {
        let tags = if self.lanes != 0 { self.recency.tags(set) } else { self.stamped.tags(set) };
        tags.iter().copied().filter(|&t| t != INVALID).collect()
    }

    /// Whether `tag` is in `set`, without changing any state.
    pub fn contains(&self, set: usize, tag: u64) -> bool {
        if self.lanes != 0 {
            self.recency.tags(set).contains(&tag)
        } else {
            self.stamped.tags(set).contains(&tag)
        }
    }

    /// Ask the host to bring `set`'s row into its cache (no effect on the simulation).
    #[inline(always)]
    pub fn prefetch(&self, set: usize) {
        if self.lanes != 0 {
            self.recency.prefetch(set)
        } else {
            self.stamped.prefetch(set)
        }
    }
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

    /// The recency rows' bytes (to compare the SSE2 and plain-Rust row code).
    fn row_bytes_all(s: &SetAssoc) -> Vec<u64> {
        s.recency.rows.iter().flat_map(|l| l.0).collect()
    }

    #[test]
    fn recency_rows_match_the_stamped_rows() {
        // Lookups, inserts on misses and invalidations over random tags: recency rows (with the
        // SSE2 row code and with the plain-Rust one of other architectures) answer and evict
        // exactly as stamped rows, for LRU and FIFO, 1-16 ways, one and several sets. Tags
        // share their high or their low 32 bits (the SSE2 code compares halves), payloads use
        // all 32 bits.
        for repl in [Replacement::Lru, Replacement::Fifo] {
            for ways in 1..=16 {
                for sets in [1, 3, 4] {
                    let entries = sets * ways;
                    let mut rows = SetAssoc::new(entries, ways, repl, 1);
                    let mut scalar = SetAssoc::new(entries, ways, repl, 1);
                    scalar.recency.scalar = true;
                    let mut any = SetAssoc::with_payload(entries, ways, repl, 1, true, false);
                    assert!(rows.lanes >= ways && any.lanes == 0);
                    let tag_of =
                        |i: u64| ((i / 4) << 32 | (i % 4)) ^ if i.is_multiple_of(5) { 0xffff << 48 } else { 0 };
                    let mut x = 0x9e37_79b9_7f4a_7c15u64;
                    let (mut hits, mut evictions, mut active_changes) = (0, 0, 0);
                    for step in 0..6_000u64 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let i = x % (3 * entries as u64 + 2);
                        let (set, tag) = ((i % sets as u64) as usize, tag_of(i));
                        let what = format!("{repl:?} {ways} ways {sets} sets, step {step}");
                        if step % 397 == 0 {
                            let m = step % 3 + 2;
                            let n = rows.invalidate_if(|t| t % m == 0);
                            assert_eq!(n, scalar.invalidate_if(|t| t % m == 0), "{what}");
                            assert_eq!(n, any.invalidate_if(|t| t % m == 0), "{what}");
                        }
                        if step % 1009 == 500 {
                            // Way disabling: every set keeps its most recent entries alike.
                            let k = 1 + (x >> 20) as usize % ways;
                            let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
                            let n = rows.set_active_ways(k, |t| a.push(t));
                            assert_eq!(n, scalar.set_active_ways(k, |t| b.push(t)), "{what}");
                            assert_eq!(n, any.set_active_ways(k, |t| c.push(t)), "{what}");
                            a.sort_unstable();
                            b.sort_unstable();
                            c.sort_unstable();
                            assert!(a == b && a == c && a.len() as u64 == n, "{what}: {a:?} {c:?}");
                            assert_eq!(rows.ways(), k);
                            active_changes += 1;
                        }
                        // (Every other step through `probe` and `fill`, which find
                        // the set themselves: any index key congruent to `set`.)
                        let index_key = set as u64 + sets as u64 * (x >> 50);
                        let hit = if step % 2 == 0 {
                            rows.lookup(set, tag)
                        } else {
                            let (q, hit) = rows.probe(index_key, tag);
                            assert_eq!(q, set);
                            hit
                        };
                        assert_eq!(hit, any.lookup(set, tag), "{what}");
                        assert_eq!(hit, scalar.lookup(set, tag), "{what}");
                        assert_eq!(rows.contains(set, tag), hit.is_some(), "{what}");
                        hits += hit.is_some() as u32;
                        if hit.is_none() {
                            let data = x >> 32;
                            let ev = if step % 2 == 0 {
                                rows.insert(set, tag, data)
                            } else {
                                let (q, ev) = rows.fill(index_key, tag, data);
                                assert_eq!(q, set);
                                ev
                            };
                            assert_eq!(ev, any.insert(set, tag, data), "{what}");
                            assert_eq!(ev, scalar.insert(set, tag, data), "{what}");
                            evictions += ev.is_some() as u32;
                        }
                        if step % 101 == 0 {
                            for q in 0..sets {
                                let (mut a, mut b) = (rows.set_tags(q), any.set_tags(q));
                                a.sort_unstable();
                                b.sort_unstable();
                                assert_eq!(a, b, "{what}");
                            }
                            assert_eq!(row_bytes_all(&rows), row_bytes_all(&scalar), "{what}");
                        }
                    }
                    assert!(hits > 100 && evictions > 100, "{repl:?} {ways} ways {sets} sets");
                    assert!(active_changes >= 5);
                    assert_eq!(rows.clear(), any.clear());
                    assert!(rows.set_tags(0).is_empty());
                }
            }
        }
    }

    #[test]
    fn shaped_probes_match_the_general_ones() {
        // Arrays of every recency-row width, power-of-two set counts or not, other policies:
        // `class` is the lane count exactly when the set is a mask of the key, and lookups and
        // inserts compiled for a class (right or wrong: a wrong one falls back) answer, evict
        // and leave the rows as the general ones.
        let cases = [(64, 4, 4), (8, 8, 8), (1536, 12, 12), (256, 16, 16), (24, 4, 0), (1536, 16, 0), (2, 2, 4)];
        for (entries, ways, class) in cases {
            for repl in [Replacement::Lru, Replacement::Fifo, Replacement::TreePlru] {
                let mut a = SetAssoc::new(entries, ways, repl, 3);
                let mut b = SetAssoc::new(entries, ways, repl, 3);
                let want_class = if repl == Replacement::TreePlru { 0 } else { class };
                assert_eq!(a.class(), want_class, "{entries}/{ways} {repl:?}");
                let mut x = 0x9e37_79b9_7f4a_7c15u64;
                for step in 0..4_000u64 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let key = x % (3 * entries as u64);
                    let (tag, data) = (key | 1 << 40, x >> 40);
                    let got = match step % 3 {
                        0 => unsafe { a.probe_as::<false>(a.class(), key, tag) },
                        1 => unsafe { a.probe_as::<false>(4, key, tag) },
                        _ => unsafe { a.probe_as::<false>(12, key, tag) },
                    };
                    let want = b.probe(key, tag);
                    assert_eq!(got, want, "{entries}/{ways} {repl:?} step {step}");
                    if want.1.is_none() {
                        let got = if step % 2 == 0 {
                            unsafe { a.fill_as::<false>(a.class(), key, tag, data) }
                        } else {
                            unsafe { a.fill_as::<false>(8, key, tag, data) }
                        };
                        assert_eq!(got, b.fill(key, tag, data), "{entries}/{ways} {repl:?} step {step}");
                    }
                }
                for set in 0..a.sets() {
                    assert_eq!(a.set_tags(set), b.set_tags(set));
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "wider than 32 bits")]
    fn payloads_wider_than_32_bits_are_refused() {
        SetAssoc::new(8, 4, Replacement::Lru, 1).insert(0, 1, 1 << 32);
    }

    #[test]
    fn lru_hit_on_the_most_recent_entry_changes_nothing() {
        // (The simulator's memo of first-level hits relies on it.)
        let mut s = SetAssoc::new(12, 12, Replacement::Lru, 1);
        for t in 0..12 {
            s.insert(0, t, t as u32 as u64);
        }
        let before = row_bytes_all(&s);
        assert_eq!(s.lookup(0, 11), Some(11));
        assert_eq!(row_bytes_all(&s), before);
        assert_eq!(s.set_tags(0), (0..12).rev().collect::<Vec<u64>>());
    }

    #[test]
    fn disabled_ways_drop_the_least_recent_entries_and_come_back_empty() {
        for lru in [true, false] {
            // Recency rows and stamped rows alike.
            let (mut r, mut s) = if lru {
                (
                    SetAssoc::new(8, 8, Replacement::Lru, 1),
                    SetAssoc::with_payload(8, 8, Replacement::Lru, 1, true, false),
                )
            } else {
                (
                    SetAssoc::new(8, 8, Replacement::Fifo, 1),
                    SetAssoc::with_payload(8, 8, Replacement::Fifo, 1, true, false),
                )
            };
            for a in [&mut r, &mut s] {
                for t in 0..8 {
                    a.insert(0, t, t);
                }
                assert_eq!(a.lookup(0, 0), Some(0)); // LRU: 0 is now the most recent
                let mut dropped = Vec::new();
                assert_eq!(a.set_active_ways(3, |t| dropped.push(t)), 5);
                dropped.sort_unstable();
                let want = if lru { vec![1, 2, 3, 4, 5] } else { vec![0, 1, 2, 3, 4] };
                assert_eq!(dropped, want);
                // Three ways: a fourth entry evicts the least recent of the three.
                let evicted = a.insert(0, 100, 100).unwrap().0;
                assert_eq!(evicted, if lru { 6 } else { 5 });
                assert_eq!(a.set_active_ways(8, |_| panic!("growing drops nothing")), 0);
                assert_eq!(a.set_tags(0).len(), 3, "the returned ways are empty");
            }
        }
        // Tree-PLRU keeps the entries of the ways that stay in use.
        let mut p = SetAssoc::new(4, 4, Replacement::TreePlru, 1);
        for t in 0..4 {
            p.insert(0, t, 0);
        }
        let mut d = Vec::new();
        assert_eq!(p.set_active_ways(2, |t| d.push(t)), 2);
        assert_eq!(p.set_tags(0), vec![0, 1]);
        assert!(p.insert(0, 9, 0).is_some(), "two ways: full");
    }

    #[test]
    fn plru_with_twelve_ways_never_picks_a_missing_leaf() {
        let mut s = SetAssoc::new(12, 12, Replacement::TreePlru, 1);
        for t in 0..1000u64 {
            if s.lookup(0, t % 17).is_none() {
                s.insert(0, t % 17, 0);
            }
            assert!(s.stamped.plru_victim(0) < 12);
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
