//! Compact tag rows of cache levels (LRU or FIFO, at most 16 ways, no payloads): the arrays a
//! page-walk load probes at every cache level, kept as small as a host cache line allows.

/// Tag of an empty way in a compact row.
pub const EMPTY: u32 = u32::MAX;

/// 64 bytes aligned to 64 (a host cache line): the unit of compact rows and mask tables.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Block([u32; 16]);

/// A cache level's tags with exact LRU or FIFO over at most 16 ways, in compact host rows: each
/// set is a row of `lanes` (1 for one way, else 4, 8 or 16, the next of these at or above
/// `ways`) u32 tags, the quotients `line / sets` (the set index is implied by the row), in
/// recency order: for LRU the most recently used way first, for FIFO the most recent fill first;
/// empty ways (`EMPTY`) follow the valid ones. Lanes past `ways` are not part of the set (they
/// hold what a miss pushed out of the last way, and a probe ignores them). A row is aligned to
/// its size, so an
/// 8 MiB 16-way LLC row is exactly one host cache line (64 bytes instead of 16 u64 tags and 16
/// u64 stamps, 256 bytes), and the 4-way rows of a 256 KiB L2 are 16 bytes.
///
/// A miss moves every lane one place down and puts the tag in lane 0 (the last way, empty or
/// the least recently used or filled line, drops out). An LRU hit at lane `p` moves lanes
/// `0..p` one place down and the tag to lane 0; a FIFO hit changes nothing. This is exact LRU
/// and FIFO, and the victims are those of [`super::SetAssoc`] with stamps (the first way with the
/// oldest stamp, empty ways having stamp 0): the way a line occupies is not observable, only
/// whether a probe hits and whether a fill evicts a valid line, and with stamps too every
/// empty way is filled before any valid line is evicted (levels are never invalidated). A unit
/// test checks this against the stamped rows for 1-16 ways.
///
/// A hit's move is a blend of the row with itself shifted by one lane under a mask of the lanes
/// `0..=p` from a per-level table (all zero for FIFO), so that no branch depends on where the
/// probe hit.
#[derive(Debug, Clone)]
pub struct CacheRows {
    lanes: usize,
    ways: usize,
    /// The compare-mask bits (`bits_per_lane::<L>()` per lane) of the lanes `0..ways`.
    way_bits: u32,
    /// The rows (`sets * lanes` u32, then `EMPTY` up to a whole block).
    mem: Vec<Block>,
    /// `lanes` masks of `lanes` u32 each (all ones in the lanes that move), entry `p` for a hit
    /// at lane `p`: LRU, the lanes `0..=p`; FIFO, none.
    masks: Vec<Block>,
}

/// [`CacheRows::probe_one_way`] of the rows whose first byte is `rows` ([`CacheRows::rows_ptr`]).
///
/// # Safety
/// `rows` is the [`CacheRows::rows_ptr`] of one-way rows, and `off` is 4 times a set index
/// below their set count.
#[inline(always)]
pub unsafe fn probe_one_way_at(rows: *mut u8, off: usize, tag: u32) -> bool {
    // SAFETY: by the contract the row lies in the rows.
    let lane0 = unsafe { &mut *(rows.add(off) as *mut u32) };
    // (Stored on a hit too, unchanged: no branch on the outcome.)
    let hit = *lane0 == tag;
    *lane0 = tag;
    hit
}

/// Compare-mask bits per lane of a row of `L` lanes (8 lanes: a mask of packed 16-bit lanes).
const fn bits_per_lane<const L: usize>() -> usize {
    if L == 8 {
        2
    } else {
        1
    }
}

impl CacheRows {
    pub fn empty() -> CacheRows {
        CacheRows { lanes: 4, ways: 0, way_bits: 0, mem: Vec::new(), masks: Vec::new() }
    }

    pub fn new(sets: usize, ways: usize, lru: bool) -> CacheRows {
        assert!((1..=16).contains(&ways) && sets > 0);
        // (A direct-mapped level's rows are one tag each: a 64 KiB level's 4096 sets take
        // 16 KiB, which stays in the host's first-level cache, instead of 64 KiB of rows.)
        let lanes = if ways == 1 {
            1
        } else if ways <= 4 {
            4
        } else if ways <= 8 {
            8
        } else {
            16
        };
        let blocks = (sets * lanes).div_ceil(16);
        let mut mem = Vec::with_capacity(blocks);
        if blocks * 64 >= 2 << 20 {
            crate::host::advise_huge(mem.as_mut_ptr() as *mut u8, blocks * 64);
        }
        mem.resize(blocks, Block([EMPTY; 16]));
        let mut flat = vec![0u32; lanes * lanes];
        for (entry, mask) in flat.chunks_mut(lanes).enumerate() {
            for (lane, m) in mask.iter_mut().enumerate() {
                *m = if lru && entry < ways && lane <= entry { u32::MAX } else { 0 };
            }
        }
        let mut masks = vec![Block([0; 16]); flat.len().div_ceil(16)];
        for (i, m) in flat.into_iter().enumerate() {
            masks[i / 16].0[i % 16] = m;
        }
        let bits = if lanes == 8 { 2 } else { 1 };
        let way_bits = ((1u64 << (bits * ways)) - 1) as u32;
        CacheRows { lanes, ways, way_bits, mem, masks }
    }

    /// Lanes per row (1, 4, 8 or 16).
    #[inline(always)]
    pub fn lanes(&self) -> usize {
        self.lanes
    }

    /// Ask the host to bring the row at byte offset `off` into its cache (a row lies within one
    /// aligned 64-byte block: one host line).
    #[inline(always)]
    pub fn prefetch(&self, off: usize) {
        crate::host::prefetch_ptr((self.mem.as_ptr() as *const u8).wrapping_add(off));
    }

    /// Valid lines held. (Every time-series sample asks: rows never straddle a block, so this is
    /// a plain scan, about 50 us for an 8 MiB LLC.)
    pub fn valid(&self) -> u64 {
        let rows = self.mem.iter().flat_map(|b| b.0.chunks_exact(self.lanes));
        rows.map(|r| r[..self.ways].iter().filter(|&&t| t != EMPTY).count() as u64).sum()
    }

    /// Whether the row at byte offset `off` (`4 * lanes` times a set index) holds `tag`; no
    /// update (the hybrid memory's dirty-line tracking asks after a fill).
    pub fn contains(&self, off: usize, tag: u32) -> bool {
        self.row(off).contains(&tag)
    }

    /// The tags of the row at byte offset `off` (`4 * lanes` times a set index), its ways only.
    pub fn row(&self, off: usize) -> &[u32] {
        let i = off / 4;
        // (A row never straddles a block.)
        &self.mem[i / 16].0[i % 16..i % 16 + self.ways]
    }

    /// Ways per set.
    #[inline(always)]
    pub fn ways(&self) -> usize {
        self.ways
    }

    /// The probe of a one-way row (a direct-mapped level, whose rows have one lane): a hit if
    /// the row holds `tag`; a miss puts `tag` there.
    ///
    /// # Safety
    /// `self.ways == 1`, and `off` is `4 * lanes` times a set index below the set count.
    #[inline(always)]
    pub unsafe fn probe_one_way(&mut self, off: usize, tag: u32) -> bool {
        debug_assert!(
            self.ways == 1 && off.is_multiple_of(4 * self.lanes) && off + 4 * self.lanes <= self.mem.len() * 64
        );
        // SAFETY: by the contract the row lies in the rows, `rows_ptr`.
        unsafe { probe_one_way_at(self.rows_ptr(), off, tag) }
    }

    /// The rows' first byte, for a loop that probes a one-way level many times without going
    /// through the level ([`probe_one_way_at`]); valid as long as the rows are (they are never
    /// reallocated).
    pub fn rows_ptr(&mut self) -> *mut u8 {
        self.mem.as_mut_ptr() as *mut u8
    }

    /// Look `tag` up in the row at byte offset `off` and update the row; returns whether it hit.
    ///
    /// # Safety
    /// `L == self.lanes`, and `off` is `4 * L` times a set index below the set count.
    #[inline(always)]
    pub unsafe fn probe<const L: usize>(&mut self, off: usize, tag: u32) -> bool {
        debug_assert!(L == self.lanes && off.is_multiple_of(4 * L) && off + 4 * L <= self.mem.len() * 64);
        let masks = self.masks.as_ptr() as *const u32;
        // SAFETY: by the contract the row lies in `mem`, aligned to its size; `masks` is the
        // table of `L + 1` masks of `L` lanes.
        unsafe { probe_row::<L>((self.mem.as_mut_ptr() as *mut u8).add(off) as *mut u32, masks, self.way_bits, tag) }
    }
}

#[cfg(not(target_arch = "x86_64"))]
use self::probe_scalar as probe_row;
#[cfg(target_arch = "x86_64")]
use self::probe_sse2 as probe_row;

/// Byte offset of the mask entry for the lowest set bit `bit` of a compare mask of a row of `L`
/// lanes (with two bits per lane, `bit` is even).
#[inline(always)]
fn mask_offset<const L: usize>(bit: u32) -> usize {
    bit as usize * (4 * L / bits_per_lane::<L>())
}

/// [`CacheRows::probe`] of the row `row` with the mask table `masks`, in plain Rust.
///
/// # Safety
/// `row` points to `L` u32 aligned to 4 * L bytes, `masks` to `L * L` u32.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
unsafe fn probe_scalar<const L: usize>(row: *mut u32, masks: *const u32, way_bits: u32, tag: u32) -> bool {
    // SAFETY: by the contract.
    let (row, masks) = unsafe { (&mut *(row as *mut [u32; L]), std::slice::from_raw_parts(masks, L * L)) };
    let b = bits_per_lane::<L>();
    let hits = row.iter().enumerate().fold(0u32, |m, (i, &t)| m | ((t == tag) as u32) << (b * i)) & way_bits;
    if hits == 0 {
        row.copy_within(0..L - 1, 1);
        row[0] = tag;
        return false;
    }
    let entry = mask_offset::<L>(hits.trailing_zeros()) / 4;
    let mask = &masks[entry..entry + L];
    for i in (1..L).rev() {
        row[i] = (row[i] & !mask[i]) | (row[i - 1] & mask[i]);
    }
    row[0] = (row[0] & !mask[0]) | (tag & mask[0]);
    true
}

/// [`CacheRows::probe`] with SSE2 (every x86-64 has it).
///
/// # Safety
/// As [`probe_scalar`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(clippy::needless_range_loop)] // vector k of the row, of the mask and of the arrays
unsafe fn probe_sse2<const L: usize>(row: *mut u32, masks: *const u32, way_bits: u32, tag: u32) -> bool {
    use std::arch::x86_64::*;
    const { assert!(L == 4 || L == 8 || L == 16) };
    let v = row as *mut __m128i;
    let t = _mm_set1_epi32(tag as i32);
    // SAFETY (every load and store below): the row is `L / 4` aligned vectors; the unaligned
    // loads at `row + 4k - 1` (k >= 1) lie inside it; the mask entry is `L / 4` aligned
    // vectors of the table (an entry index is a lane below `L`).
    unsafe {
        let mut a = [_mm_setzero_si128(); 4];
        for k in 0..L / 4 {
            a[k] = _mm_load_si128(v.add(k));
        }
        // The compare mask: one bit per lane (4 and 16 lanes), two (8 lanes).
        let eq = a.map(|x| _mm_cmpeq_epi32(x, t));
        let hits = if L == 4 {
            _mm_movemask_ps(_mm_castsi128_ps(eq[0]))
        } else if L == 8 {
            _mm_movemask_epi8(_mm_packs_epi32(eq[0], eq[1]))
        } else {
            _mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(eq[0], eq[1]), _mm_packs_epi32(eq[2], eq[3])))
        } as u32
            & way_bits;
        // The row shifted down one lane, the tag in lane 0 (all loaded before any store).
        let mut s = [_mm_or_si128(_mm_slli_si128::<4>(a[0]), _mm_cvtsi32_si128(tag as i32)); 4];
        for k in 1..L / 4 {
            s[k] = _mm_loadu_si128(row.add(4 * k - 1) as *const __m128i);
        }
        if hits == 0 {
            for k in 0..L / 4 {
                _mm_store_si128(v.add(k), s[k]);
            }
            return false;
        }
        let m = masks.byte_add(mask_offset::<L>(hits.trailing_zeros())) as *const __m128i;
        for k in 0..L / 4 {
            let blend = _mm_xor_si128(a[k], _mm_and_si128(_mm_xor_si128(a[k], s[k]), _mm_load_si128(m.add(k))));
            _mm_store_si128(v.add(k), blend);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::{Replacement, SetAssoc};

    /// Probe `line` in compact rows of `sets` sets (SSE2 or scalar); returns (hit, evicted a
    /// valid line).
    fn rows_access(r: &mut CacheRows, sets: usize, line: u64, scalar: bool) -> (bool, bool) {
        let before = r.valid();
        let off = (line % sets as u64) as usize * 4 * r.lanes;
        let tag = (line / sets as u64) as u32;
        let (masks, way_bits) = (r.masks.as_ptr() as *const u32, r.way_bits);
        // SAFETY: `off` is the start of a row below `sets`, `masks` the table of these rows.
        let hit = unsafe {
            let row = (r.mem.as_mut_ptr() as *mut u8).add(off) as *mut u32;
            match (r.lanes, scalar) {
                (1, _) => r.probe_one_way(off, tag),
                (16, false) => r.probe::<16>(off, tag),
                (8, false) => r.probe::<8>(off, tag),
                (4, false) => r.probe::<4>(off, tag),
                (16, true) => probe_scalar::<16>(row, masks, way_bits, tag),
                (8, true) => probe_scalar::<8>(row, masks, way_bits, tag),
                _ => probe_scalar::<4>(row, masks, way_bits, tag),
            }
        };
        (hit, !hit && r.valid() == before)
    }

    #[test]
    fn compact_rows_evict_exactly_as_stamps() {
        // Against the general array (u64 stamps), for every way count, power-of-two and other
        // set counts, LRU and FIFO, over random lines with many repeats; with the SIMD probe
        // and the scalar one (the other arches'), which must also leave the same rows.
        for lru in [true, false] {
            let repl = if lru { Replacement::Lru } else { Replacement::Fifo };
            for ways in 1..=16 {
                for sets in [1, 3, 4] {
                    let mut a = CacheRows::new(sets, ways, lru);
                    let mut s = CacheRows::new(sets, ways, lru);
                    let mut b = SetAssoc::new_tags_only(sets * ways, ways, repl, 1);
                    let mut x = 0x9e37_79b9_7f4a_7c15u64;
                    for _ in 0..20_000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let line = x % (3 * (sets * ways) as u64);
                        let want = b.access(b.set_of(line), line);
                        assert_eq!(rows_access(&mut a, sets, line, false), want, "{repl:?} {ways} ways {sets} sets");
                        assert_eq!(
                            rows_access(&mut s, sets, line, true),
                            want,
                            "scalar {repl:?} {ways} ways {sets} sets"
                        );
                    }
                    assert!(a.mem.iter().zip(&s.mem).all(|(p, q)| p.0 == q.0));
                }
            }
        }
    }
}
