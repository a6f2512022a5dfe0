//! The set-associative array shared by TLBs, paging-structure caches and data caches (as
//! ChampSim shares its cache code): `sets x ways` slots of a 64-bit tag and a payload (below
//! 2^32: TLB frames, PSC table ids), with a replacement policy per set. Any set count works (the index is `key % sets`, a mask
//! when `sets` is a power of two), so 1536 entries / 12 ways = 128 sets and 2048 / 12 work alike.

use crate::host::prefetch_ptr;
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

/// Set-associative storage. LRU and FIFO arrays with payloads (TLBs, PSCs) of at most 16 ways
/// keep each set as a recency row (see [`SetAssoc::lookup`]): 64-bit tags then 32-bit payloads,
/// no stamps. The others keep each set as one contiguous row of the host array: its tags, then
/// (LRU/FIFO) its stamps, then (if any) its payloads, so that a probe of a large structure (an
/// LLC) costs one host cache miss and the adjacent-line prefetch, not one miss per array.
#[derive(Debug, Clone)]
pub struct SetAssoc {
    sets: usize,
    ways: usize,
    /// `sets - 1` when `sets` is a power of two, else 0 (and `%` is used).
    mask: u64,
    pow2: bool,
    /// The stamped rows (empty for an array of recency rows).
    mem: Vec<u64>,
    /// u64 words per set.
    stride: usize,
    /// Offset of the stamps (LRU: last use; FIFO: fill time; 0 = empty slot) in a row, if any.
    stamp_at: Option<usize>,
    /// Offset of the payloads in a row, if any.
    data_at: Option<usize>,
    repl: Replacement,
    /// Lanes of a recency row (4, 8, 12 or 16: `ways` rounded up to one of these) when the
    /// array keeps recency rows, else 0.
    lanes: usize,
    /// The recency rows, `row_bytes::<lanes>()` bytes per set (empty for stamped rows).
    rows: Vec<Line>,
    /// `lanes` when the set count is a power of two, else 0: the arrays that the simulator's
    /// shape-compiled loop may probe with the lane count as a constant (see [`SetAssoc::class`]).
    class: usize,
    /// The hit-mask bits (`bits_per_way::<lanes>()` per lane) of the lanes `0..ways`.
    way_bits: u32,
    /// Rows take the plain-Rust row code (tests only: the one of other architectures).
    #[cfg(test)]
    scalar: bool,
    clock: u64,
    /// Tree-PLRU bits, one word per set (node `n` of the heap-ordered tree is bit `n`).
    plru: Vec<u64>,
    /// Leaves of the PLRU tree (ways rounded up to a power of two).
    plru_leaves: usize,
    rng: u64,
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
        let plru_leaves = ways.next_power_of_two();
        assert!(repl != Replacement::TreePlru || plru_leaves <= 64, "validated by config");
        let stamped = matches!(repl, Replacement::Lru | Replacement::Fifo);
        let mut s = SetAssoc {
            sets,
            ways,
            mask: if pow2 { sets as u64 - 1 } else { 0 },
            pow2,
            mem: Vec::new(),
            stride: 0,
            stamp_at: None,
            data_at: None,
            repl,
            lanes: 0,
            rows: Vec::new(),
            class: 0,
            way_bits: 0,
            #[cfg(test)]
            scalar: false,
            clock: 0,
            plru: if repl == Replacement::TreePlru { vec![0; sets] } else { Vec::new() },
            plru_leaves,
            rng: seed | 1,
        };
        if stamped && payload && recency && ways <= 16 {
            let lanes = match ways {
                1..=4 => 4,
                5..=8 => 8,
                9..=12 => 12,
                _ => 16,
            };
            let bytes = row_bytes_of(lanes);
            s.lanes = lanes;
            s.class = if pow2 { lanes } else { 0 };
            s.rows = vec![Line([0; 8]); (sets * bytes).div_ceil(64)];
            let bits = if lanes == 4 { 4 } else { 2 };
            s.way_bits = (0..ways).fold(0, |m, w| m | 1 << (bits * w));
            for set in 0..sets {
                s.row_slots_mut(set).0.fill(INVALID);
            }
            return s;
        }
        let stamp_at = stamped.then_some(ways);
        let data_at = payload.then_some(ways * (1 + stamped as usize));
        let stride = ways * (1 + stamped as usize + payload as usize);
        let n = sets * stride;
        let mut mem = Vec::with_capacity(n);
        if n >= 1 << 18 {
            crate::host::advise_huge(mem.as_mut_ptr() as *mut u8, n * 8);
        }
        mem.resize(n, 0);
        for set in 0..sets {
            mem[set * stride..set * stride + ways].fill(INVALID);
        }
        s.mem = mem;
        s.stride = stride;
        s.stamp_at = stamp_at;
        s.data_at = data_at;
        s
    }

    #[inline(always)]
    pub fn sets(&self) -> usize {
        self.sets
    }
    #[inline(always)]
    pub fn ways(&self) -> usize {
        self.ways
    }

    /// The shape class: the lanes of a recency row (4, 8, 12 or 16) when the array keeps recency
    /// rows and its set count is a power of two (the set is `index_key & mask`), else 0. Arrays
    /// of one class are probed by the same code with [`SetAssoc::lookup_key_of`] and
    /// [`SetAssoc::insert_key_of`], the lane count a constant of the caller.
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
    ///
    /// Recency rows hold a set's entries in recency order: LRU, the most recently used first;
    /// FIFO, the most recently filled first; empty slots (`INVALID`) after the valid ones. A
    /// miss-insert moves every slot one place down and writes slot 0 (the last way, empty or the
    /// least recently used or filled entry, drops out); an LRU hit at way `w` moves slots `0..w`
    /// one place down and the entry to slot 0 (a hit on slot 0, the MRU entry, changes nothing);
    /// a FIFO hit changes nothing; an invalidation closes the gap, keeping the others' order.
    /// This is exact LRU and FIFO, and the victims are those of stamped rows (the oldest stamp,
    /// an empty slot first): which way holds an entry is not observable (only hits, payloads
    /// and evicted entries are). A unit test runs both over random lookups, fills and
    /// invalidations for 1-16 ways.
    #[inline(always)]
    pub fn lookup(&mut self, set: usize, tag: u64) -> Option<u64> {
        self.lookup_in::<true>(set, tag)
    }

    /// `lookup` in the set that `index_key` maps to, which it returns too (without the bounds
    /// check `lookup` makes: `set_of` is below the set count).
    #[inline(always)]
    pub fn lookup_key(&mut self, index_key: u64, tag: u64) -> (usize, Option<u64>) {
        let set = self.set_of(index_key);
        (set, self.lookup_in::<false>(set, tag))
    }

    /// [`SetAssoc::lookup_key`] compiled for arrays of class `lanes` (a constant after inlining;
    /// 0: any array): the row code of that width, inline, when the array is of that class, else
    /// the general lookup out of line.
    #[inline(always)]
    pub fn lookup_key_as(&mut self, lanes: usize, index_key: u64, tag: u64) -> (usize, Option<u64>) {
        if lanes != 0 && self.class != lanes {
            return self.lookup_key_other(index_key, tag);
        }
        // SAFETY: the array is of class `lanes` (or `lanes` is 0).
        unsafe { self.lookup_key_of(lanes, index_key, tag) }
    }

    #[inline(never)]
    fn lookup_key_other(&mut self, index_key: u64, tag: u64) -> (usize, Option<u64>) {
        self.lookup_key(index_key, tag)
    }

    /// [`SetAssoc::lookup_key`] of an array of class `lanes` (a constant after inlining), with
    /// no check of the class: the row code of that width only. `lanes` 0 is `lookup_key`.
    ///
    /// # Safety
    /// `lanes` is 0 or [`SetAssoc::class`] (else the set may lie past the rows).
    #[inline(always)]
    pub unsafe fn lookup_key_of(&mut self, lanes: usize, index_key: u64, tag: u64) -> (usize, Option<u64>) {
        debug_assert!(lanes == 0 || lanes == self.class);
        let set = (index_key & self.mask) as usize;
        match lanes {
            4 => (set, self.lookup_rows::<4, false>(set, tag)),
            8 => (set, self.lookup_rows::<8, false>(set, tag)),
            12 => (set, self.lookup_rows::<12, false>(set, tag)),
            16 => (set, self.lookup_rows::<16, false>(set, tag)),
            _ => self.lookup_key(index_key, tag),
        }
    }

    /// `lookup`; `CHECKED`: check `set` (else the caller knows it is below the set count).
    #[inline(always)]
    fn lookup_in<const CHECKED: bool>(&mut self, set: usize, tag: u64) -> Option<u64> {
        // (Three cases inline: with more, LLVM makes the chain a jump table, an indirect branch
        // that mispredicts when consecutive calls are for arrays of different way counts.)
        let l = self.lanes;
        if l == 4 {
            self.lookup_rows::<4, CHECKED>(set, tag)
        } else if l == 12 {
            self.lookup_rows::<12, CHECKED>(set, tag)
        } else if l == 8 {
            self.lookup_rows::<8, CHECKED>(set, tag)
        } else {
            self.lookup_other(set, tag)
        }
    }

    /// `lookup` of the arrays of other shapes.
    #[inline(never)]
    fn lookup_other(&mut self, set: usize, tag: u64) -> Option<u64> {
        match self.lanes {
            16 => self.lookup_rows::<16, true>(set, tag),
            _ => self.lookup_any(set, tag),
        }
    }

    /// The start of recency row `set` of `L` lanes (`L == self.lanes`), after a bounds check
    /// if `CHECKED` (else the caller knows that `set` is below the set count).
    #[inline(always)]
    fn row_ptr<const L: usize, const CHECKED: bool>(&mut self, set: usize) -> *mut u8 {
        debug_assert_eq!(L, self.lanes);
        if CHECKED {
            assert!(set < self.sets, "set {set} out of range");
        }
        debug_assert!(set < self.sets);
        // SAFETY: `rows` holds `sets` rows of `row_bytes::<L>()` bytes.
        unsafe { (self.rows.as_mut_ptr() as *mut u8).add(set * row_bytes::<L>()) }
    }

    /// Whether the recency rows go through the plain-Rust row code instead of SSE2 (only tests
    /// switch it, to compare the two).
    #[inline(always)]
    fn scalar_rows(&self) -> bool {
        #[cfg(test)]
        return self.scalar;
        #[cfg(not(test))]
        false
    }

    /// `lookup` of recency rows of `L` lanes (`L == self.lanes`).
    #[inline(always)]
    fn lookup_rows<const L: usize, const CHECKED: bool>(&mut self, set: usize, tag: u64) -> Option<u64> {
        let lru = self.repl == Replacement::Lru;
        let way_bits = self.way_bits;
        let scalar = self.scalar_rows();
        let row = self.row_ptr::<L, CHECKED>(set);
        // SAFETY: `row` is a row of `L` lanes (16-byte aligned: rows are multiples of 16 bytes
        // in an array of 64-byte lines); a hit is a way below `ways <= L`.
        unsafe {
            let hits = if scalar { find_scalar::<L>(row, tag) } else { find_row::<L>(row, tag) } & way_bits;
            if hits == 0 {
                return None;
            }
            let w = (hits.trailing_zeros() / bits_per_way::<L>()) as usize;
            let data = *(row.add(8 * L) as *const u32).add(w);
            if lru && w != 0 {
                if scalar {
                    promote_scalar::<L>(row, w, tag, data)
                } else {
                    promote_row::<L>(row, w, tag, data)
                }
            }
            Some(data as u64)
        }
    }

    /// `insert` of recency rows of `L` lanes (`L == self.lanes`).
    #[inline(always)]
    fn insert_rows<const L: usize, const CHECKED: bool>(
        &mut self,
        set: usize,
        tag: u64,
        data: u64,
    ) -> Option<(u64, u64)> {
        let last = self.ways - 1;
        let scalar = self.scalar_rows();
        let row = self.row_ptr::<L, CHECKED>(set);
        // SAFETY: as in `lookup_rows`; `last < ways <= L`.
        unsafe {
            let old = *(row as *const u64).add(last);
            let old_data = *(row.add(8 * L) as *const u32).add(last);
            if scalar {
                push_scalar::<L>(row, tag, data as u32)
            } else {
                push_row::<L>(row, tag, data as u32)
            }
            (old != INVALID).then_some((old, old_data as u64))
        }
    }

    /// The tags and payloads of recency row `set` (its `ways` slots).
    fn row_slots_mut(&mut self, set: usize) -> (&mut [u64], &mut [u32]) {
        assert!(self.lanes != 0 && set < self.sets);
        // SAFETY: `rows` holds `sets` rows of `row_bytes_of(lanes)` bytes: the tags (`lanes`
        // u64), then the payloads; `ways <= lanes`.
        unsafe {
            let row = (self.rows.as_mut_ptr() as *mut u8).add(set * row_bytes_of(self.lanes));
            (
                std::slice::from_raw_parts_mut(row as *mut u64, self.ways),
                std::slice::from_raw_parts_mut(row.add(8 * self.lanes) as *mut u32, self.ways),
            )
        }
    }

    /// The tags of recency row `set` (its `ways` slots).
    fn row_tags(&self, set: usize) -> &[u64] {
        assert!(self.lanes != 0 && set < self.sets);
        // SAFETY: as in `row_slots_mut`.
        unsafe {
            let row = (self.rows.as_ptr() as *const u8).add(set * row_bytes_of(self.lanes));
            std::slice::from_raw_parts(row as *const u64, self.ways)
        }
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
        if self.lanes != 0 {
            let bytes = row_bytes_of(self.lanes);
            let row = (self.rows.as_ptr() as *const u8).wrapping_add(set * bytes);
            for off in (0..bytes).step_by(64) {
                prefetch_ptr(row.wrapping_add(off));
            }
            return prefetch_ptr(row.wrapping_add(bytes - 1));
        }
        let row = self.mem.as_ptr().wrapping_add(set * self.stride);
        // Every host cache line of the row (tags, stamps, payloads).
        for off in (0..self.stride).step_by(8) {
            prefetch_ptr(row.wrapping_add(off));
        }
    }

    /// Whether `tag` is in `set`, without changing any state.
    pub fn contains(&self, set: usize, tag: u64) -> bool {
        if self.lanes != 0 {
            return self.row_tags(set).contains(&tag);
        }
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
        self.insert_in::<true>(set, tag, data)
    }

    /// `insert` into the set that `index_key` maps to, which it returns too (without the
    /// bounds check `insert` makes).
    #[inline(always)]
    pub fn insert_key(&mut self, index_key: u64, tag: u64, data: u64) -> (usize, Option<(u64, u64)>) {
        let set = self.set_of(index_key);
        (set, self.insert_in::<false>(set, tag, data))
    }

    /// [`SetAssoc::insert_key`] compiled for arrays of class `lanes`, as
    /// [`SetAssoc::lookup_key_as`].
    #[inline(always)]
    pub fn insert_key_as(&mut self, lanes: usize, index_key: u64, tag: u64, data: u64) -> (usize, Option<(u64, u64)>) {
        if lanes != 0 && self.class != lanes {
            return self.insert_key_other(index_key, tag, data);
        }
        // SAFETY: the array is of class `lanes` (or `lanes` is 0).
        unsafe { self.insert_key_of(lanes, index_key, tag, data) }
    }

    #[inline(never)]
    fn insert_key_other(&mut self, index_key: u64, tag: u64, data: u64) -> (usize, Option<(u64, u64)>) {
        self.insert_key(index_key, tag, data)
    }

    /// [`SetAssoc::insert_key`] of an array of class `lanes`, as [`SetAssoc::lookup_key_of`].
    ///
    /// # Safety
    /// As [`SetAssoc::lookup_key_of`].
    #[inline(always)]
    pub unsafe fn insert_key_of(
        &mut self,
        lanes: usize,
        index_key: u64,
        tag: u64,
        data: u64,
    ) -> (usize, Option<(u64, u64)>) {
        debug_assert!(lanes == 0 || lanes == self.class);
        assert!(data >> 32 == 0, "payload {data:#x} wider than 32 bits");
        let set = (index_key & self.mask) as usize;
        match lanes {
            4 => (set, self.insert_rows::<4, false>(set, tag, data)),
            8 => (set, self.insert_rows::<8, false>(set, tag, data)),
            12 => (set, self.insert_rows::<12, false>(set, tag, data)),
            16 => (set, self.insert_rows::<16, false>(set, tag, data)),
            _ => self.insert_key(index_key, tag, data),
        }
    }

    /// `insert`; `CHECKED` as in `lookup_in`.
    #[inline(always)]
    fn insert_in<const CHECKED: bool>(&mut self, set: usize, tag: u64, data: u64) -> Option<(u64, u64)> {
        assert!(data >> 32 == 0, "payload {data:#x} wider than 32 bits");
        let l = self.lanes;
        if l == 4 {
            self.insert_rows::<4, CHECKED>(set, tag, data)
        } else if l == 12 {
            self.insert_rows::<12, CHECKED>(set, tag, data)
        } else if l == 8 {
            self.insert_rows::<8, CHECKED>(set, tag, data)
        } else {
            self.insert_other(set, tag, data)
        }
    }

    /// `insert` of the arrays of other shapes.
    #[inline(never)]
    fn insert_other(&mut self, set: usize, tag: u64, data: u64) -> Option<(u64, u64)> {
        match self.lanes {
            16 => self.insert_rows::<16, true>(set, tag, data),
            _ => self.insert_any(set, tag, data),
        }
    }

    /// `insert` into stamped rows (the other policies, way counts and arrays without payloads).
    #[inline]
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
        if self.lanes != 0 {
            // Keep the others in order, closing the gaps: the empty slots go last.
            for set in 0..self.sets {
                let (tags, data) = self.row_slots_mut(set);
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
            return n;
        }
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

    /// Valid tags of one set, in way order (recency rows: most recent first; for tests).
    pub fn set_tags(&self, set: usize) -> Vec<u64> {
        if self.lanes != 0 {
            return self.row_tags(set).iter().copied().filter(|&t| t != INVALID).collect();
        }
        let base = set * self.stride;
        self.mem[base..base + self.ways].iter().copied().filter(|&t| t != INVALID).collect()
    }
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

/// 64 bytes aligned to 64 (a host cache line): the unit of the recency rows' storage.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Line([u64; 8]);

/// Bytes of a recency row of `lanes` lanes: the tags (u64), then the payloads (u32). Rows of 4
/// lanes (48 bytes) are padded to a host line; the others are 96 (two host lines), 144 (three)
/// and 192 bytes. Every row is a multiple of 16 bytes, so rows and their payloads are 16-byte
/// aligned.
const fn row_bytes_of(lanes: usize) -> usize {
    if lanes == 4 {
        64
    } else {
        12 * lanes
    }
}

const fn row_bytes<const L: usize>() -> usize {
    row_bytes_of(L)
}

/// Hit-mask bits per way of a recency row of `L` lanes (the way's bit is the lowest).
const fn bits_per_way<const L: usize>() -> u32 {
    if L == 4 {
        4
    } else {
        2
    }
}

#[cfg(not(target_arch = "x86_64"))]
use self::{find_scalar as find_row, promote_scalar as promote_row, push_scalar as push_row};

/// The tags and payloads of the recency row at `row`, `L` lanes.
///
/// # Safety
/// `row` points to a recency row of `L` lanes, borrowed for `'a`.
#[inline(always)]
unsafe fn row_arrays<'a, const L: usize>(row: *mut u8) -> (&'a mut [u64; L], &'a mut [u32]) {
    // SAFETY: the tags are the first `8 * L` bytes, the payloads the `L` u32 after.
    unsafe { (&mut *(row as *mut [u64; L]), std::slice::from_raw_parts_mut(row.add(8 * L) as *mut u32, L)) }
}

/// The hit mask of `tag` in the row at `row` (`L` lanes): bit `bits_per_way::<L>() * w` is set
/// if lane `w` holds `tag` (other bits may be set too; lanes past the ways are for the caller
/// to mask off). Plain Rust.
///
/// # Safety
/// `row` points to a recency row of `L` lanes.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
unsafe fn find_scalar<const L: usize>(row: *mut u8, tag: u64) -> u32 {
    // SAFETY: by the contract.
    let (tags, _) = unsafe { row_arrays::<L>(row) };
    let b = bits_per_way::<L>();
    tags.iter().enumerate().fold(0u32, |m, (i, &t)| m | ((t == tag) as u32) << (b * i as u32))
}

/// Move every lane of the row one place down and put (`tag`, `data`) in lane 0. Plain Rust.
///
/// # Safety
/// As [`find_scalar`].
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
unsafe fn push_scalar<const L: usize>(row: *mut u8, tag: u64, data: u32) {
    // SAFETY: by the contract.
    let (tags, d) = unsafe { row_arrays::<L>(row) };
    tags.copy_within(0..L - 1, 1);
    tags[0] = tag;
    d.copy_within(0..d.len() - 1, 1);
    d[0] = data;
}

/// An LRU hit at lane `w` (`1 <= w < L`) of (`tag`, `data`): lanes `0..w` move one place down
/// and the entry to lane 0. Plain Rust.
///
/// # Safety
/// As [`find_scalar`].
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
unsafe fn promote_scalar<const L: usize>(row: *mut u8, w: usize, tag: u64, data: u32) {
    // SAFETY: by the contract.
    let (tags, d) = unsafe { row_arrays::<L>(row) };
    tags.copy_within(0..w, 1);
    tags[0] = tag;
    d.copy_within(0..w, 1);
    d[0] = data;
}

/// [`find_scalar`] with SSE2 (every x86-64 has it): each pair of tags is compared as four
/// 32-bit lanes, the results packed to one byte (8 lanes and more) or one 16-bit lane (4
/// lanes) per half, and a way matches if both of its halves do.
///
/// # Safety
/// As [`find_scalar`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(clippy::needless_range_loop)] // vector k of the row and of the arrays
unsafe fn find_row<const L: usize>(row: *mut u8, tag: u64) -> u32 {
    use std::arch::x86_64::*;
    const { assert!(matches!(L, 4 | 8 | 12 | 16)) };
    let v = row as *const __m128i;
    // SAFETY: the row's tags are `L / 2` aligned vectors.
    unsafe {
        let t = _mm_set1_epi64x(tag as i64);
        let mut e = [_mm_setzero_si128(); 8];
        for k in 0..L / 2 {
            e[k] = _mm_cmpeq_epi32(_mm_load_si128(v.add(k)), t);
        }
        let m = if L == 4 {
            _mm_movemask_epi8(_mm_packs_epi32(e[0], e[1])) as u32
        } else {
            let lo = _mm_packs_epi16(_mm_packs_epi32(e[0], e[1]), _mm_packs_epi32(e[2], e[3]));
            let mut m = _mm_movemask_epi8(lo) as u32;
            if L > 8 {
                let p45 = _mm_packs_epi32(e[4], e[5]);
                let p67 = if L == 16 { _mm_packs_epi32(e[6], e[7]) } else { p45 };
                m |= (_mm_movemask_epi8(_mm_packs_epi16(p45, p67)) as u32) << 16;
            }
            m
        };
        m & (m >> (bits_per_way::<L>() / 2))
    }
}

/// [`push_scalar`] with SSE2: from the last vector to the first, each vector is stored as read
/// one lane back with an unaligned load (which reads only lanes not yet stored), and lane 0
/// takes the new entry.
///
/// # Safety
/// As [`find_scalar`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn push_row<const L: usize>(row: *mut u8, tag: u64, data: u32) {
    use std::arch::x86_64::*;
    const { assert!(matches!(L, 4 | 8 | 12 | 16)) };
    let (v, t64) = (row as *mut __m128i, row as *const u64);
    let (dv, d32) = (row.wrapping_add(8 * L) as *mut __m128i, row.wrapping_add(8 * L) as *const u32);
    // SAFETY: the tags are `L / 2` aligned vectors, the payloads `L / 4`; the unaligned loads
    // one lane back (vector `k >= 1`) lie inside the row.
    unsafe {
        for k in (1..L / 2).rev() {
            _mm_store_si128(v.add(k), _mm_loadu_si128(t64.add(2 * k - 1) as *const __m128i));
        }
        _mm_store_si128(v, _mm_unpacklo_epi64(_mm_cvtsi64_si128(tag as i64), _mm_load_si128(v)));
        for k in (1..L / 4).rev() {
            _mm_store_si128(dv.add(k), _mm_loadu_si128(d32.add(4 * k - 1) as *const __m128i));
        }
        let d0 = _mm_or_si128(_mm_slli_si128::<4>(_mm_load_si128(dv)), _mm_cvtsi32_si128(data as i32));
        _mm_store_si128(dv, d0);
    }
}

/// [`promote_scalar`] with SSE2: [`push_row`]'s shifted row blended into lanes `0..=w` under
/// masks from comparing the lane indexes with `w` (no branch on `w`), from the last vector to
/// the first as there.
///
/// # Safety
/// As [`find_scalar`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn promote_row<const L: usize>(row: *mut u8, w: usize, tag: u64, data: u32) {
    use std::arch::x86_64::*;
    const { assert!(matches!(L, 4 | 8 | 12 | 16)) };
    let (v, t64) = (row as *mut __m128i, row as *const u64);
    let (dv, d32) = (row.wrapping_add(8 * L) as *mut __m128i, row.wrapping_add(8 * L) as *const u32);
    // SAFETY: as in `push_row`.
    unsafe {
        let lim = _mm_set1_epi32(w as i32 + 1);
        // `a` where the mask is clear, `s` where it is set.
        let blend = |a: __m128i, s: __m128i, m: __m128i| _mm_xor_si128(a, _mm_and_si128(_mm_xor_si128(a, s), m));
        for k in (0..L / 2).rev() {
            let i = 2 * k as i32;
            let m = _mm_cmpgt_epi32(lim, _mm_setr_epi32(i, i, i + 1, i + 1));
            // (A volatile load: otherwise LLVM keeps the row's vectors from `find_row` in
            // registers for this rare path, and `find_row` copies them instead of comparing
            // from memory.)
            let a = std::ptr::read_volatile(v.add(k));
            let s = if k == 0 {
                _mm_unpacklo_epi64(_mm_cvtsi64_si128(tag as i64), a)
            } else {
                _mm_loadu_si128(t64.add(2 * k - 1) as *const __m128i)
            };
            _mm_store_si128(v.add(k), blend(a, s, m));
        }
        for k in (0..L / 4).rev() {
            let i = 4 * k as i32;
            let m = _mm_cmpgt_epi32(lim, _mm_setr_epi32(i, i + 1, i + 2, i + 3));
            let b = std::ptr::read_volatile(dv.add(k));
            let e = if k == 0 {
                _mm_or_si128(_mm_slli_si128::<4>(b), _mm_cvtsi32_si128(data as i32))
            } else {
                _mm_loadu_si128(d32.add(4 * k - 1) as *const __m128i)
            };
            _mm_store_si128(dv.add(k), blend(b, e, m));
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
        s.rows.iter().flat_map(|l| l.0).collect()
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
                    scalar.scalar = true;
                    let mut any = SetAssoc::with_payload(entries, ways, repl, 1, true, false);
                    assert!(rows.lanes >= ways && any.lanes == 0);
                    let tag_of =
                        |i: u64| ((i / 4) << 32 | (i % 4)) ^ if i.is_multiple_of(5) { 0xffff << 48 } else { 0 };
                    let mut x = 0x9e37_79b9_7f4a_7c15u64;
                    let (mut hits, mut evictions) = (0, 0);
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
                        // (Every other step through `lookup_key` and `insert_key`, which find
                        // the set themselves: any index key congruent to `set`.)
                        let index_key = set as u64 + sets as u64 * (x >> 50);
                        let hit = if step % 2 == 0 {
                            rows.lookup(set, tag)
                        } else {
                            let (q, hit) = rows.lookup_key(index_key, tag);
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
                                let (q, ev) = rows.insert_key(index_key, tag, data);
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
                        0 => a.lookup_key_as(a.class(), key, tag),
                        1 => a.lookup_key_as(4, key, tag),
                        _ => a.lookup_key_as(12, key, tag),
                    };
                    let want = b.lookup_key(key, tag);
                    assert_eq!(got, want, "{entries}/{ways} {repl:?} step {step}");
                    if want.1.is_none() {
                        let got = if step % 2 == 0 {
                            a.insert_key_as(a.class(), key, tag, data)
                        } else {
                            a.insert_key_as(8, key, tag, data)
                        };
                        assert_eq!(got, b.insert_key(key, tag, data), "{entries}/{ways} {repl:?} step {step}");
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
