//! One cache level: compact tag rows probed with a shift and a mask where the geometry allows,
//! else the general set-associative array.

use crate::array::rows::{CacheRows, EMPTY};
use crate::array::{Replacement, SetAssoc};
use crate::config::CacheConfig;

#[derive(Debug, Clone)]
pub struct Cache {
    pub name: String,
    pub latency: u64,
    /// Lanes per compact row (1, 4, 8 or 16) when a probe locates its row with a shift and a mask
    /// (compact rows, a power-of-two set count, a line at least as large as a row); 0 sends
    /// probes to [`Cache::probe_slow`].
    fast: u32,
    /// The byte offset of `pa`'s row in `rows` is `(pa >> off_shift) & off_mask` and its tag
    /// `pa >> tag_shift` (fast levels).
    off_shift: u32,
    tag_shift: u32,
    off_mask: u64,
    rows: CacheRows,
    line_shift: u32,
    sets: u64,
    /// The tags when compact rows do not apply (then `rows` is empty), with its evictions.
    general: Option<SetAssoc>,
    general_evictions: u64,
}

impl Cache {
    pub(super) fn new(c: &CacheConfig, memory: u64, seed: u64) -> Cache {
        let lines = c.size.0 / c.line;
        let ways = c.ways as usize;
        let sets = lines / c.ways;
        let line_shift = c.line.trailing_zeros();
        // Every line number below `memory / line` must give a quotient below `EMPTY`.
        let max_quotient = (memory.div_ceil(c.line)).saturating_sub(1) / sets;
        let lru = c.replacement == Replacement::Lru;
        let mut cache = Cache {
            name: c.name.clone(),
            latency: c.latency,
            fast: 0,
            off_shift: 0,
            tag_shift: 0,
            off_mask: 0,
            rows: CacheRows::empty(),
            line_shift,
            sets,
            general: None,
            general_evictions: 0,
        };
        if (lru || c.replacement == Replacement::Fifo) && ways <= 16 && max_quotient < EMPTY as u64 {
            cache.rows = CacheRows::new(sets as usize, ways, lru);
            let row_shift = (4 * cache.rows.lanes()).trailing_zeros();
            if sets.is_power_of_two() && line_shift >= row_shift {
                cache.fast = cache.rows.lanes() as u32;
                cache.off_shift = line_shift - row_shift;
                cache.off_mask = (sets - 1) << row_shift;
                cache.tag_shift = line_shift + sets.trailing_zeros();
            }
        } else {
            cache.general = Some(SetAssoc::new_tags_only(lines as usize, ways, c.replacement, seed));
        }
        cache
    }

    /// Look `pa`'s line up and allocate it on a miss; returns whether it hit.
    #[inline(always)]
    pub(super) fn probe(&mut self, pa: u64) -> bool {
        // Compiled for each row width, so that the tag compare and the update are a few vector
        // instructions. (Bit tests, most frequent first: LLVM turns `==` chains and `match`
        // into a compare tree in its own order, or a jump table, an indirect branch.)
        // SAFETY (all four): the level is fast with that many lanes (`fast` is 0, 1, 4, 8 or 16).
        if self.fast & 8 != 0 {
            unsafe { self.probe_as(8, pa) }
        } else if self.fast & 16 != 0 {
            unsafe { self.probe_as(16, pa) }
        } else if self.fast & 4 != 0 {
            unsafe { self.probe_as(4, pa) }
        } else if self.fast & 1 != 0 {
            unsafe { self.probe_as(1, pa) }
        } else {
            self.probe_slow(pa)
        }
    }

    /// Whether the level holds `pa`'s line; no update.
    pub(super) fn contains(&self, pa: u64) -> bool {
        if self.fast != 0 {
            let off = ((pa >> self.off_shift) & self.off_mask) as usize;
            return self.rows.contains(off, (pa >> self.tag_shift) as u32);
        }
        let line = pa >> self.line_shift;
        if let Some(g) = &self.general {
            return g.contains(g.set_of(line), line);
        }
        let (set, tag) = (line % self.sets, line / self.sets);
        self.rows.contains(set as usize * 4 * self.rows.lanes(), tag as u32)
    }

    /// For a fast level: the tags of the row of `pa`'s set and the shift that turns an address
    /// of that set into its tag (`(addr >> shift) as u32`), to ask about several lines of one set
    /// at once ([`Cache::contains`] each); None for other levels.
    pub(super) fn row_of(&self, pa: u64) -> Option<(&[u32], u32)> {
        if self.fast == 0 {
            return None;
        }
        let off = ((pa >> self.off_shift) & self.off_mask) as usize;
        Some((self.rows.row(off), self.tag_shift))
    }

    /// The set `pa`'s line maps to.
    pub(super) fn set_of(&self, pa: u64) -> usize {
        let line = pa >> self.line_shift;
        // (A power-of-two set count, every preset's, needs no division.)
        (if self.sets.is_power_of_two() { line & (self.sets - 1) } else { line % self.sets }) as usize
    }

    /// The set count.
    pub(super) fn sets(&self) -> usize {
        self.sets as usize
    }

    /// [`Cache::probe`] of a fast level of `lanes` lanes (a constant after inlining).
    ///
    /// # Safety
    /// The level is fast with `lanes` lanes (`self.fast == lanes`).
    #[inline(always)]
    pub(super) unsafe fn probe_as(&mut self, lanes: u32, pa: u64) -> bool {
        debug_assert_eq!(self.fast, lanes);
        let off = ((pa >> self.off_shift) & self.off_mask) as usize;
        let tag = (pa >> self.tag_shift) as u32;
        debug_assert!(tag != EMPTY, "line beyond physical memory");
        // SAFETY (all three): a fast level's `off_mask` is `(sets - 1) << row_shift`, so `off`
        // is the start of one of the `sets` rows of `rows` (`Rows::probe`'s contract).
        unsafe {
            match lanes {
                1 => self.rows.probe_one_way(off, tag),
                4 => self.rows.probe::<4>(off, tag),
                8 => self.rows.probe::<8>(off, tag),
                16 => self.rows.probe::<16>(off, tag),
                _ => unreachable!("fast levels have 1, 4, 8 or 16 lanes"),
            }
        }
    }

    /// Whether the level is direct-mapped and fast (its rows are one lane: a loop may probe them
    /// with [`crate::array::rows::probe_one_way_at`], mem/direct.rs).
    pub(super) fn one_way(&self) -> bool {
        self.fast != 0 && self.rows.ways() == 1
    }

    /// A fast level's probe geometry: `(off_shift, tag_shift, off_mask)` (a loop that probes
    /// many times keeps them in registers: mem/direct.rs).
    pub(super) fn geometry(&self) -> (u32, u32, u64) {
        (self.off_shift, self.tag_shift, self.off_mask)
    }

    /// The first byte of a fast level's rows ([`CacheRows::rows_ptr`]).
    pub(super) fn rows_ptr(&mut self) -> *mut u8 {
        self.rows.rows_ptr()
    }

    /// [`Cache::probe`] of the general array, or of compact rows with any set count.
    #[inline(never)]
    fn probe_slow(&mut self, pa: u64) -> bool {
        let line = pa >> self.line_shift;
        if let Some(g) = &mut self.general {
            let (hit, evicted) = g.access(g.set_of(line), line);
            self.general_evictions += evicted as u64;
            return hit;
        }
        let (set, tag) = (line % self.sets, line / self.sets);
        debug_assert!(tag < EMPTY as u64, "line beyond physical memory");
        let off = set as usize * 4 * self.rows.lanes();
        // SAFETY (all three): `off` is the start of row `set < sets`.
        match self.rows.lanes() {
            1 => unsafe { self.rows.probe_one_way(off, tag as u32) },
            16 => unsafe { self.rows.probe::<16>(off, tag as u32) },
            8 => unsafe { self.rows.probe::<8>(off, tag as u32) },
            _ => unsafe { self.rows.probe::<4>(off, tag as u32) },
        }
    }

    /// The fast class (lanes) of a level probed with a shift and a mask, else 0.
    #[inline(always)]
    pub(super) fn fast(&self) -> u32 {
        self.fast
    }

    /// Evictions so far, given the fills: a compact level's are its fills minus the valid
    /// lines it holds (levels are never invalidated).
    pub(super) fn evictions(&self, fills: u64) -> u64 {
        match &self.general {
            Some(_) => self.general_evictions,
            None => fills - self.rows.valid(),
        }
    }

    /// Ask the host to bring `pa`'s row into its cache (no effect on the simulation).
    #[inline(always)]
    pub(super) fn prefetch(&self, pa: u64) {
        let off = if self.fast != 0 {
            ((pa >> self.off_shift) & self.off_mask) as usize
        } else {
            let line = pa >> self.line_shift;
            if let Some(g) = &self.general {
                return g.prefetch(g.set_of(line));
            }
            (line % self.sets) as usize * 4 * self.rows.lanes()
        };
        self.rows.prefetch(off);
    }
}
