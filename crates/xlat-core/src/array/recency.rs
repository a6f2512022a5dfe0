//! Recency rows: the sets of an LRU or FIFO array with payloads (TLBs, PSCs) of at most 16 ways,
//! each a row of 4, 8, 12 or 16 lanes (the way count rounded up) of 64-bit tags followed by as
//! many 32-bit payloads, in recency order (LRU: most recently used first; FIFO: most recently
//! filled first; empty slots after the valid ones), with no stamps and no clock.
//!
//! A miss-insert moves every slot one place down and writes slot 0 (the last active way, empty
//! or the least recently used or filled entry, drops out); an LRU hit at way `w` moves slots
//! `0..w` one place down and the entry to slot 0 (a hit on slot 0, the MRU entry, changes
//! nothing); a FIFO hit changes nothing; an invalidation closes the gap, keeping the others'
//! order. This is exact LRU and FIFO, and the victims are those of stamped rows (the oldest
//! stamp, an empty slot first): which way holds an entry is not observable (only hits, payloads
//! and evicted entries are). Tags are compared with SSE2 on x86-64, plain Rust elsewhere (and in
//! tests, to compare the two).

use super::replacement::INVALID;

/// The recency rows of one array.
#[derive(Debug, Clone)]
pub(super) struct RecencyRows {
    pub(super) sets: usize,
    /// Lanes of a row (4, 8, 12 or 16).
    pub(super) lanes: usize,
    /// Active ways (at most `ways_max`; see [`RecencyRows::set_active_ways`]).
    pub(super) ways: usize,
    pub(super) ways_max: usize,
    /// The hit-mask bits (`bits_per_way::<lanes>()` per lane) of the lanes `0..ways`.
    pub(super) way_bits: u32,
    pub(super) lru: bool,
    /// `row_bytes_of(lanes)` bytes per set.
    pub(super) rows: Vec<Line>,
    /// Rows take the plain-Rust row code (tests only: the one of other architectures).
    #[cfg(test)]
    pub(super) scalar: bool,
}

impl RecencyRows {
    pub(super) fn new(sets: usize, ways: usize, lru: bool) -> RecencyRows {
        let lanes = match ways {
            1..=4 => 4,
            5..=8 => 8,
            9..=12 => 12,
            _ => 16,
        };
        let mut r = RecencyRows {
            sets,
            lanes,
            ways,
            ways_max: ways,
            way_bits: way_bits_of(lanes, ways),
            lru,
            rows: vec![Line([0; 8]); (sets * row_bytes_of(lanes)).div_ceil(64)],
            #[cfg(test)]
            scalar: false,
        };
        for set in 0..sets {
            r.row_lanes_mut(set).0.fill(INVALID);
        }
        r
    }

    /// The start of row `set` of `L` lanes (`L == self.lanes`), after a bounds check if
    /// `CHECKED` (else the caller knows that `set` is below the set count).
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

    /// Whether the rows go through the plain-Rust row code instead of SSE2 (only tests switch
    /// it, to compare the two).
    #[inline(always)]
    fn scalar_rows(&self) -> bool {
        #[cfg(test)]
        return self.scalar;
        #[cfg(not(test))]
        false
    }

    /// Look `tag` up in row `set` (`L == self.lanes`); on a hit update the order (LRU) and
    /// return the payload.
    #[inline(always)]
    pub(super) fn lookup<const L: usize, const CHECKED: bool>(&mut self, set: usize, tag: u64) -> Option<u64> {
        let lru = self.lru;
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

    /// [`RecencyRows::lookup`] that also returns the way of the hit, counted from the MRU slot
    /// before the hit's promotion: for an LRU array, the hit's distance from the MRU position
    /// (Lite's LRU distance, seed 000 section 5.4.2, counted from the other end). A copy of
    /// `lookup` rather than its body, so that the plain loop's code stays as it was.
    #[inline(always)]
    pub(super) fn lookup_way<const L: usize, const CHECKED: bool>(
        &mut self,
        set: usize,
        tag: u64,
    ) -> Option<(u64, usize)> {
        let lru = self.lru;
        let way_bits = self.way_bits;
        let scalar = self.scalar_rows();
        let row = self.row_ptr::<L, CHECKED>(set);
        // SAFETY: as in `lookup`.
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
            Some((data as u64, w))
        }
    }

    /// Insert (`tag`, `data`) in row `set` (`L == self.lanes`; the caller knows `tag` is
    /// absent); returns the evicted valid entry, if any.
    #[inline(always)]
    pub(super) fn insert<const L: usize, const CHECKED: bool>(
        &mut self,
        set: usize,
        tag: u64,
        data: u64,
    ) -> Option<(u64, u64)> {
        let last = self.ways - 1;
        let scalar = self.scalar_rows();
        let row = self.row_ptr::<L, CHECKED>(set);
        // SAFETY: as in `lookup`; `last < ways <= L`.
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

    /// Every lane of row `set`: the tags and payloads.
    fn row_lanes_mut(&mut self, set: usize) -> (&mut [u64], &mut [u32]) {
        assert!(set < self.sets);
        // SAFETY: `rows` holds `sets` rows of `row_bytes_of(lanes)` bytes: the tags (`lanes`
        // u64), then the payloads.
        unsafe {
            let row = (self.rows.as_mut_ptr() as *mut u8).add(set * row_bytes_of(self.lanes));
            (
                std::slice::from_raw_parts_mut(row as *mut u64, self.lanes),
                std::slice::from_raw_parts_mut(row.add(8 * self.lanes) as *mut u32, self.lanes),
            )
        }
    }

    /// The tags and payloads of row `set` (its active ways).
    pub(super) fn slots_mut(&mut self, set: usize) -> (&mut [u64], &mut [u32]) {
        let ways = self.ways;
        let (t, d) = self.row_lanes_mut(set);
        (&mut t[..ways], &mut d[..ways])
    }

    /// The tags of row `set` (its active ways).
    pub(super) fn tags(&self, set: usize) -> &[u64] {
        assert!(set < self.sets);
        // SAFETY: as in `row_lanes_mut`; `ways <= lanes`.
        unsafe {
            let row = (self.rows.as_ptr() as *const u8).add(set * row_bytes_of(self.lanes));
            std::slice::from_raw_parts(row as *const u64, self.ways)
        }
    }

    /// Use `ways` ways of each row (1 ..= the configured ways). Shrinking keeps each set's
    /// `ways` most recent entries (the first slots) and drops the others (`dropped(tag)` for
    /// each valid one); ways that come into use start empty. The lane count (and so the
    /// array's class) does not change.
    pub(super) fn set_active_ways(&mut self, ways: usize, dropped: &mut dyn FnMut(u64)) {
        assert!((1..=self.ways_max).contains(&ways), "active ways {ways} outside 1..={}", self.ways_max);
        let old = self.ways;
        for set in 0..self.sets {
            let (tags, _) = self.row_lanes_mut(set);
            if ways < old {
                tags[ways..old].iter().filter(|&&t| t != INVALID).for_each(|&t| dropped(t));
            }
            // (Lanes past the old active ways hold what misses pushed out of the row.)
            tags[ways.min(old)..].fill(INVALID);
        }
        self.ways = ways;
        self.way_bits = way_bits_of(self.lanes, ways);
    }

    /// Ask the host to bring row `set` into its cache.
    #[inline(always)]
    pub(super) fn prefetch(&self, set: usize) {
        let bytes = row_bytes_of(self.lanes);
        let row = (self.rows.as_ptr() as *const u8).wrapping_add(set * bytes);
        for off in (0..bytes).step_by(64) {
            crate::host::prefetch_ptr(row.wrapping_add(off));
        }
        crate::host::prefetch_ptr(row.wrapping_add(bytes - 1));
    }
}

/// The hit-mask bits of the lanes `0..ways` of a row of `lanes` lanes.
fn way_bits_of(lanes: usize, ways: usize) -> u32 {
    let bits = if lanes == 4 { 4 } else { 2 };
    (0..ways).fold(0, |m, w| m | 1 << (bits * w))
}

/// 64 bytes aligned to 64 (a host cache line): the unit of the recency rows' storage.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct Line(pub(super) [u64; 8]);

/// Bytes of a recency row of `lanes` lanes: the tags (u64), then the payloads (u32). Rows of 4
/// lanes (48 bytes) are padded to a host line; the others are 96 (two host lines), 144 (three)
/// and 192 bytes. Every row is a multiple of 16 bytes, so rows and their payloads are 16-byte
/// aligned.
pub(super) const fn row_bytes_of(lanes: usize) -> usize {
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
