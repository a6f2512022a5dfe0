//! Stamped rows: the arrays that recency rows do not cover (tree-PLRU, random, more than 16 ways,
//! and LRU/FIFO arrays without payloads: the general cache levels). Each set is one contiguous
//! row of the host array: its tags, then (LRU/FIFO) its stamps (LRU: last use; FIFO: fill time;
//! 0 = empty slot), then (if any) its payloads, so that a probe of a large structure (an LLC)
//! costs one host cache miss and the adjacent-line prefetch, not one miss per array.

use super::replacement::{Replacement, INVALID};
use std::hint::select_unpredictable;

#[derive(Debug, Clone)]
pub(super) struct StampedRows {
    pub(super) sets: usize,
    /// Active ways (at most `ways_max`; see [`StampedRows::set_active_ways`]).
    pub(super) ways: usize,
    pub(super) ways_max: usize,
    pub(super) mem: Vec<u64>,
    /// u64 words per set.
    stride: usize,
    /// Offset of the stamps in a row, if any.
    stamp_at: Option<usize>,
    /// Offset of the payloads in a row, if any.
    data_at: Option<usize>,
    repl: Replacement,
    clock: u64,
    /// Tree-PLRU bits, one word per set (node `n` of the heap-ordered tree is bit `n`).
    plru: Vec<u64>,
    /// Leaves of the PLRU tree (ways rounded up to a power of two).
    plru_leaves: usize,
    rng: u64,
}

impl StampedRows {
    pub(super) fn new(sets: usize, ways: usize, repl: Replacement, seed: u64, payload: bool) -> StampedRows {
        let plru_leaves = ways.next_power_of_two();
        assert!(repl != Replacement::TreePlru || plru_leaves <= 64, "validated by config");
        let stamped = matches!(repl, Replacement::Lru | Replacement::Fifo);
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
        StampedRows {
            sets,
            ways,
            ways_max: ways,
            mem,
            stride,
            stamp_at,
            data_at,
            repl,
            clock: 0,
            plru: if repl == Replacement::TreePlru { vec![0; sets] } else { Vec::new() },
            plru_leaves,
            rng: seed | 1,
        }
    }

    /// Look `tag` up in `set` (below the set count); on a hit update the replacement state and
    /// return the payload (0 without payloads).
    #[inline(always)]
    pub(super) fn lookup(&mut self, set: usize, tag: u64) -> Option<u64> {
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

    /// Look `tag` up and insert it on a miss (allocate on miss, as a cache level does).
    /// Returns (hit, evicted a valid line).
    #[inline]
    pub(super) fn access(&mut self, set: usize, tag: u64) -> (bool, bool) {
        if let (Some(sa), None, true) = (self.stamp_at, self.data_at, self.ways <= 16) {
            // LRU or FIFO without payloads (a cache level): one pass over the row finds the
            // tag and the victim a miss would evict, both without branches.
            let base = set * self.stride;
            let (row, stamps) = self.mem[base..base + sa + self.ways].split_at_mut(sa);
            let tags = &mut row[..self.ways];
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

    #[inline(always)]
    fn touch(&mut self, set: usize, way: usize) {
        // An `if` chain, not a `match`: LLVM makes a match over the policies a jump table.
        if self.repl == Replacement::Lru {
            self.clock += 1;
            let at = set * self.stride + self.ways_max + way;
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

    pub(super) fn plru_victim(&self, set: usize) -> usize {
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

    /// Insert `tag` into `set` (the caller knows it is absent); returns the evicted valid tag
    /// and payload, if any.
    #[inline]
    pub(super) fn insert(&mut self, set: usize, tag: u64, data: u64) -> Option<(u64, u64)> {
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
                self.mem[base + self.ways_max + w] = self.clock;
            }
            Replacement::TreePlru => self.plru_touch(set, w),
            Replacement::Random => {}
        }
        evicted
    }

    /// Invalidate every slot whose tag satisfies `pred`; returns how many.
    pub(super) fn invalidate_if(&mut self, pred: &mut dyn FnMut(u64) -> bool) -> u64 {
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

    /// The tags of `set`'s active ways.
    pub(super) fn tags(&self, set: usize) -> &[u64] {
        let base = set * self.stride;
        &self.mem[base..base + self.ways]
    }

    /// Use `ways` ways of each set (1 ..= the configured ways). Shrinking keeps, under LRU and
    /// FIFO, each set's `ways` most recently used or filled entries (as recency rows do), and
    /// under tree-PLRU and random the entries of the ways that stay in use; the others are
    /// dropped (`dropped(tag)` for each valid one). Ways that come into use start empty.
    pub(super) fn set_active_ways(&mut self, ways: usize, dropped: &mut dyn FnMut(u64)) {
        assert!((1..=self.ways_max).contains(&ways), "active ways {ways} outside 1..={}", self.ways_max);
        let old = self.ways;
        if ways < old {
            for set in 0..self.sets {
                let base = set * self.stride;
                let mut slots: Vec<(u64, u64, u64)> = (0..old)
                    .map(|w| {
                        let stamp = self.stamp_at.map_or(0, |sa| self.mem[base + sa + w]);
                        (stamp, self.mem[base + w], self.data_at.map_or(0, |d| self.mem[base + d + w]))
                    })
                    .collect();
                if self.stamp_at.is_some() {
                    // Most recent first; empty slots (stamp 0, tag INVALID) last.
                    slots.sort_by_key(|&(stamp, tag, _)| (tag == INVALID, std::cmp::Reverse(stamp)));
                }
                for (w, &(stamp, tag, data)) in slots.iter().enumerate() {
                    let (stamp, tag, data) = if w < ways {
                        (stamp, tag, data)
                    } else {
                        if tag != INVALID {
                            dropped(tag);
                        }
                        (0, INVALID, 0)
                    };
                    self.mem[base + w] = tag;
                    if let Some(sa) = self.stamp_at {
                        self.mem[base + sa + w] = stamp;
                    }
                    if let Some(d) = self.data_at {
                        self.mem[base + d + w] = data;
                    }
                }
            }
        }
        self.ways = ways;
    }

    /// Ask the host to bring every host cache line of `set`'s row into its cache.
    #[inline(always)]
    pub(super) fn prefetch(&self, set: usize) {
        let row = self.mem.as_ptr().wrapping_add(set * self.stride);
        for off in (0..self.stride).step_by(8) {
            crate::host::prefetch_ptr(row.wrapping_add(off));
        }
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
