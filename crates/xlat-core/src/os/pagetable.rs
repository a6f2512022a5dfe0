//! x86-64 radix page tables (thesis chapter 2, "Page tables"; Intel SDM vol. 3, 4.5): 4 or 5
//! levels of 512-entry tables, each table a 4KB page allocated from simulated physical memory,
//! leaves at level 1 (4KB), 2 (2MB, PS bit) or 3 (1GB).
//!
//! Tables of every address space live in one arena. An entry is stored in a simulator encoding
//! (present bit, leaf bit, and the child table's arena index or the leaf's frame number); the
//! physical address a walk load reads is `table_pa[table] + 8 * index`, exactly the address the
//! hardware would read.
//!
//! Tables of one chosen level may get a *companion page* (PRISM's metadata registry): a 4KB
//! frame allocated with the table, holding one metadata entry per entry of the table, at
//! `companion_pa(table) + 8 * index`.

use crate::host::HostVec;
use crate::units::PageSize;

const PRESENT: u32 = 1;
const LEAF: u32 = 2;

/// Index of `va` in a table of `level` (1 = PT ... 5 = PML5).
#[inline(always)]
pub fn index(va: u64, level: usize) -> usize {
    ((va >> (12 + 9 * (level as u32 - 1))) & 511) as usize
}

/// One 64-byte line of a PT: the raw entries of 8 consecutive 4KB pages (present entries of a
/// PT are leaves), read through [`PteLine::present`] and [`PteLine::frame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PteLine(pub [u32; 8]);

impl PteLine {
    /// A line of leaves at `frames` (None: no entry), for tests and tools.
    pub fn of_leaves(frames: &[Option<u32>]) -> PteLine {
        let mut line = [0; 8];
        for (e, f) in line.iter_mut().zip(frames) {
            *e = f.map_or(0, |f| (f << 2) | PRESENT | LEAF);
        }
        PteLine(line)
    }

    /// Whether entry `p` maps a page.
    #[inline(always)]
    pub fn present(&self, p: usize) -> bool {
        self.0[p] & PRESENT != 0
    }

    /// The frame of entry `p` (meaningful if present).
    #[inline(always)]
    pub fn frame(&self, p: usize) -> u32 {
        self.0[p] >> 2
    }

    /// For a clustered TLB's fill: the mask of the present entries whose frame lies in `pfn`'s
    /// aligned cluster of `1 << bits` frames (`bits` at most 3), and every entry's frame
    /// offset in its cluster, 3 bits per entry (entry `p` at bit `3p`).
    #[inline(always)]
    pub fn cluster_of(&self, pfn: u32, bits: u32) -> (u8, u32) {
        debug_assert!(bits <= 3);
        #[cfg(target_arch = "x86_64")]
        {
            self.cluster_of_sse2(pfn, bits)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self.cluster_of_scalar(pfn, bits)
        }
    }

    /// [`PteLine::cluster_of`], one entry at a time.
    pub fn cluster_of_scalar(&self, pfn: u32, bits: u32) -> (u8, u32) {
        let (mut same, mut offsets) = (0u8, 0u32);
        for p in 0..8 {
            let f = self.frame(p);
            same |= ((self.present(p) && (f ^ pfn) >> bits == 0) as u8) << p;
            offsets |= (f & ((1 << bits) - 1)) << (3 * p);
        }
        (same, offsets)
    }

    /// [`PteLine::cluster_of`] four entries at a time (SSE2, which every x86-64 has).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn cluster_of_sse2(&self, pfn: u32, bits: u32) -> (u8, u32) {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64; the loads read the 32 bytes of the line.
        unsafe {
            let lo = _mm_loadu_si128(self.0.as_ptr().cast());
            let hi = _mm_loadu_si128(self.0.as_ptr().add(4).cast());
            let present = _mm_set1_epi32(PRESENT as i32);
            let high = _mm_set1_epi32(!((1u32 << bits) - 1) as i32);
            let target = _mm_set1_epi32(pfn as i32);
            let zero = _mm_setzero_si128();
            let same = |e: __m128i| {
                let other = _mm_and_si128(_mm_xor_si128(_mm_srli_epi32(e, 2), target), high);
                let ok =
                    _mm_and_si128(_mm_cmpeq_epi32(other, zero), _mm_cmpeq_epi32(_mm_and_si128(e, present), present));
                _mm_movemask_ps(_mm_castsi128_ps(ok)) as u8
            };
            let mask = same(lo) | same(hi) << 4;
            // The offsets (below 8) as 8 bytes, then packed 3 bits apart.
            let low = _mm_set1_epi32(((1u32 << bits) - 1) as i32);
            let off = |e: __m128i| _mm_and_si128(_mm_srli_epi32(e, 2), low);
            let words = _mm_packs_epi32(off(lo), off(hi));
            let bytes = _mm_cvtsi128_si64(_mm_packus_epi16(words, words)) as u64;
            let x = (bytes & 0x0007_0007_0007_0007) | ((bytes >> 5) & 0x0038_0038_0038_0038);
            let x = (x & 0x0000_003f_0000_003f) | ((x >> 10) & 0x0000_0fc0_0000_0fc0);
            let x = (x & 0xfff) | ((x >> 20) & 0xff_f000);
            (mask, x as u32)
        }
    }
}

/// No frame was left for a page table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfFrames;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Empty,
    Table(u32),
    /// A leaf: frame number of the page's first 4KB frame.
    Leaf(u64),
}

#[inline(always)]
fn decode(e: u32) -> Entry {
    if e & PRESENT == 0 {
        Entry::Empty
    } else if e & LEAF != 0 {
        Entry::Leaf((e >> 2) as u64)
    } else {
        Entry::Table(e >> 2)
    }
}

/// Entries are 32 bits (a 30-bit frame or table number and two flags): half the host memory
/// of 64-bit entries, which matters because a walk's entry load is the simulator's own cache
/// miss. Physical memory is therefore limited to 2^30 frames (4 TiB).
#[derive(Debug, Clone, Default)]
pub struct PageTables {
    /// Physical address of each table.
    pa: Vec<u64>,
    /// Level of each table (1 = PT).
    level: Vec<u8>,
    /// Physical address of each table's companion page (`NO_COMPANION`: none).
    companion: Vec<u64>,
    /// The level whose tables get a companion page.
    companion_level: Option<usize>,
    /// 512 entries per table.
    entries: HostVec,
    /// Present entries per table.
    present: Vec<u16>,
    regions: RegionMemo,
}

/// A host-side memo of level-2 entries (PDEs) by 2MB region and root, so that the simulator's
/// own software walks (`lookup_memo`, and the walker's host prefetches) skip the upper levels.
/// It is not a simulated structure: it changes no count. A slot is valid while its generation
/// is current; the generation moves on whenever a present entry at level 2 or above is
/// overwritten or removed (an empty table replaced by a huge page, a huge page unmapped), the
/// only changes that can make a remembered entry wrong (tables are never freed, and a new
/// entry fills a slot that no valid memo holds).
#[derive(Debug, Clone)]
struct RegionMemo {
    slots: Vec<RegionSlot>,
    generation: u32,
    /// Invalidations so far (never wraps, unlike `generation`): see [`PageTables::upper_changes`].
    changes: u64,
}

#[derive(Debug, Clone, Copy)]
struct RegionSlot {
    /// `va >> 21` (u64::MAX: never valid, no VA reaches it).
    region: u64,
    root: u32,
    generation: u32,
    /// The raw level-2 entry (present: a table or a 2MB leaf).
    pde: u32,
}

const REGION_SLOTS: usize = 4096;
const NO_REGION: RegionSlot = RegionSlot { region: u64::MAX, root: 0, generation: 0, pde: 0 };

impl Default for RegionMemo {
    fn default() -> RegionMemo {
        RegionMemo { slots: vec![NO_REGION; REGION_SLOTS], generation: 0, changes: 0 }
    }
}

impl RegionMemo {
    #[inline(always)]
    fn get(&self, root: u32, va: u64) -> Option<u32> {
        let s = &self.slots[(va >> 21) as usize % REGION_SLOTS];
        (s.region == va >> 21 && s.root == root && s.generation == self.generation).then_some(s.pde)
    }

    #[inline(always)]
    fn put(&mut self, root: u32, va: u64, pde: u32) {
        let generation = self.generation;
        self.slots[(va >> 21) as usize % REGION_SLOTS] = RegionSlot { region: va >> 21, root, generation, pde };
    }

    // (Rare, and out of line so that `map`, inlined in the fault path, stays small.)
    #[cold]
    #[inline(never)]
    fn invalidate(&mut self) {
        self.changes += 1;
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Slots of the generation that wrapped around would look valid again.
            self.slots.fill(NO_REGION);
        }
    }
}

const NO_COMPANION: u64 = u64::MAX;

impl PageTables {
    /// Tables whose tables of `companion_level` (if any) get a companion page.
    pub fn with_companions(companion_level: Option<usize>) -> PageTables {
        PageTables { companion_level, ..PageTables::default() }
    }

    /// How many times a present entry at level 2 or above was overwritten or removed. While it
    /// does not change, the table that holds the level-2 entry of an address under a root stays
    /// the same (tables are never freed), and so does a 2MB leaf's entry (PRISM's memo of MRE
    /// addresses, mmu/prism.rs).
    #[inline]
    pub fn upper_changes(&self) -> u64 {
        self.regions.changes
    }

    pub fn tables(&self) -> usize {
        self.pa.len()
    }

    /// Whether a new table of `level` needs a companion page.
    pub fn needs_companion(&self, level: usize) -> bool {
        self.companion_level == Some(level)
    }

    /// A new empty table of `level` at physical frame `pfn`, with its companion page at frame
    /// `companion` (given exactly when [`PageTables::needs_companion`] says so).
    pub fn new_table(&mut self, level: usize, pfn: u64, companion: Option<u64>) -> u32 {
        debug_assert_eq!(companion.is_some(), self.needs_companion(level), "a companion exactly where wanted");
        self.pa.push(pfn << 12);
        self.level.push(level as u8);
        self.companion.push(companion.map_or(NO_COMPANION, |c| c << 12));
        self.entries.grow(512);
        self.present.push(0);
        (self.pa.len() - 1) as u32
    }

    #[inline(always)]
    pub fn table_pa(&self, t: u32) -> u64 {
        self.pa[t as usize]
    }

    /// Physical address of the companion (metadata) page of table `t`, if it has one: the
    /// metadata of entry `i` is at `companion_pa(t) + 8 * i`.
    #[inline(always)]
    pub fn companion_pa(&self, t: u32) -> Option<u64> {
        let c = self.companion[t as usize];
        (c != NO_COMPANION).then_some(c)
    }

    /// Level of table `t` (1 = PT).
    pub fn level_of(&self, t: u32) -> usize {
        self.level[t as usize] as usize
    }

    #[inline(always)]
    pub fn entry(&self, t: u32, i: usize) -> Entry {
        decode(self.entries[t as usize * 512 + i])
    }

    /// The 8 entries of PT `t` from `first` (a multiple of 8: one 64-byte line of the table; a
    /// clustered TLB's fill reads the line).
    #[inline(always)]
    pub fn leaf_line(&self, t: u32, first: usize) -> PteLine {
        debug_assert!(first.is_multiple_of(8) && self.level_of(t) == 1);
        let line: &[u32; 8] = self.entries[t as usize * 512 + first..][..8].try_into().expect("8 entries");
        PteLine(*line)
    }

    /// Host prefetch of an entry (no effect on the simulation).
    #[inline(always)]
    pub fn prefetch(&self, t: u32, i: usize) {
        crate::host::prefetch_ptr(self.entries.as_ptr().wrapping_add(t as usize * 512 + i));
    }

    fn set(&mut self, t: u32, i: usize, v: u32) {
        let slot = &mut self.entries[t as usize * 512 + i];
        let was = *slot & PRESENT != 0;
        let now = v & PRESENT != 0;
        *slot = v;
        let p = &mut self.present[t as usize];
        match (was, now) {
            (false, true) => *p += 1,
            (true, false) => *p -= 1,
            _ => {}
        }
    }

    pub fn present(&self, t: u32) -> u16 {
        self.present[t as usize]
    }

    /// `lookup` through the region memo, which it fills: the same answer, with the levels
    /// above the PT skipped when the region's PDE is remembered.
    #[inline(always)]
    pub fn lookup_memo(&mut self, root: u32, levels: usize, va: u64) -> Option<(u64, PageSize)> {
        if let Some(pde) = self.regions.get(root, va) {
            return self.below_pde(pde, va);
        }
        let mut t = root;
        for level in (2..=levels).rev() {
            let e = self.entries[t as usize * 512 + index(va, level)];
            if level == 2 && e & PRESENT != 0 {
                self.regions.put(root, va, e);
                return self.below_pde(e, va);
            }
            match decode(e) {
                Entry::Empty => return None,
                Entry::Leaf(pfn) => return Some((pfn, PageSize::from_index(level - 1))),
                Entry::Table(c) => t = c,
            }
        }
        unreachable!("level-2 entries end the loop")
    }

    /// The leaf under a present PDE `pde` for `va`.
    #[inline(always)]
    fn below_pde(&self, pde: u32, va: u64) -> Option<(u64, PageSize)> {
        match decode(pde) {
            Entry::Leaf(pfn) => Some((pfn, PageSize::Size2M)),
            Entry::Table(c) => match self.entry(c, index(va, 1)) {
                Entry::Leaf(pfn) => Some((pfn, PageSize::Size4K)),
                _ => None,
            },
            Entry::Empty => unreachable!("only present PDEs are remembered"),
        }
    }

    /// The PT (level-1 table) that maps `va`, if one does, from the region memo or a walk of
    /// the upper levels (for host prefetches: it does not fill the memo).
    #[inline(always)]
    pub fn pt_of(&self, root: u32, levels: usize, va: u64) -> Option<u32> {
        let pde = match self.regions.get(root, va) {
            Some(pde) => pde,
            None => {
                let mut t = root;
                for level in (3..=levels).rev() {
                    match self.entry(t, index(va, level)) {
                        Entry::Table(c) => t = c,
                        _ => return None,
                    }
                }
                self.entries[t as usize * 512 + index(va, 2)]
            }
        };
        match decode(pde) {
            Entry::Table(c) => Some(c),
            _ => None,
        }
    }

    /// The page directory (level-2 table) holding the PDE of `va`, if the upper levels reach one
    /// (PRISM's walker reads the MRE beside that PDE).
    pub fn pd_of(&self, root: u32, levels: usize, va: u64) -> Option<u32> {
        let mut t = root;
        for level in (3..=levels).rev() {
            match self.entry(t, index(va, level)) {
                Entry::Table(c) => t = c,
                _ => return None,
            }
        }
        Some(t)
    }

    /// Software walk: the leaf mapping `va`, as (first frame, page size).
    pub fn lookup(&self, root: u32, levels: usize, va: u64) -> Option<(u64, PageSize)> {
        let mut t = root;
        for level in (1..=levels).rev() {
            match self.entry(t, index(va, level)) {
                Entry::Empty => return None,
                Entry::Leaf(pfn) => return Some((pfn, PageSize::from_index(level - 1))),
                Entry::Table(c) => t = c,
            }
        }
        unreachable!("level-1 entries are leaves")
    }

    /// Whether anything is mapped in the `size`-aligned region at `va` (a non-empty table
    /// under it counts; empty tables left behind by unmapping do not).
    pub fn region_used(&self, root: u32, levels: usize, va: u64, size: PageSize) -> bool {
        let leaf_level = size.leaf_level();
        let mut t = root;
        for level in (leaf_level..=levels).rev() {
            match self.entry(t, index(va, level)) {
                Entry::Empty => return false,
                Entry::Leaf(_) => return true,
                Entry::Table(c) => {
                    if level == leaf_level {
                        return self.subtree_used(c, level - 1);
                    }
                    t = c
                }
            }
        }
        false
    }

    fn subtree_used(&self, t: u32, level: usize) -> bool {
        if self.present(t) == 0 {
            return false;
        }
        if level == 1 {
            return true;
        }
        (0..512).any(|i| match self.entry(t, i) {
            Entry::Empty => false,
            Entry::Leaf(_) => true,
            Entry::Table(c) => self.subtree_used(c, level - 1),
        })
    }

    /// Map the `size` page at `va` (aligned) to frame `pfn`, creating tables with
    /// `new_frames(companion)`, which gives a table's frame and, when `companion` is true, its
    /// companion page's frame (`None` from it means physical memory ran out:
    /// `Err(OutOfFrames)`; the tables created until then stay, so a retry continues).
    /// An empty table where the leaf goes is replaced (it stays allocated; see docs). Returns
    /// the number of tables created.
    pub fn map(
        &mut self,
        root: u32,
        levels: usize,
        va: u64,
        size: PageSize,
        pfn: u64,
        new_frames: &mut dyn FnMut(bool) -> Option<(u64, Option<u64>)>,
    ) -> Result<u32, OutOfFrames> {
        let leaf_level = size.leaf_level();
        let mut t = root;
        let mut created = 0;
        for level in (leaf_level + 1..=levels).rev() {
            let i = index(va, level);
            t = match self.entry(t, i) {
                Entry::Table(c) => c,
                Entry::Empty => {
                    let (f, companion) = new_frames(self.needs_companion(level - 1)).ok_or(OutOfFrames)?;
                    let c = self.new_table(level - 1, f, companion);
                    created += 1;
                    self.set(t, i, (c << 2) | PRESENT);
                    c
                }
                Entry::Leaf(_) => panic!("mapping {va:#x} under an existing larger page"),
            };
        }
        let i = index(va, leaf_level);
        debug_assert!(!matches!(self.entry(t, i), Entry::Leaf(_)), "mapping {va:#x} twice");
        if leaf_level >= 2 && self.entries[t as usize * 512 + i] & PRESENT != 0 {
            self.regions.invalidate(); // an empty table replaced by a huge page
        }
        debug_assert!(pfn < 1 << 30, "validated: memory.size <= 4TiB");
        self.set(t, i, ((pfn as u32) << 2) | PRESENT | LEAF);
        Ok(created)
    }

    /// Remove every leaf inside [start, end) (page-aligned; huge pages that straddle an end are
    /// removed whole — callers split them first). Calls `freed(va, pfn, size)` for each.
    pub fn unmap_range(
        &mut self,
        root: u32,
        levels: usize,
        start: u64,
        end: u64,
        freed: &mut dyn FnMut(u64, u64, PageSize),
    ) {
        self.unmap_rec(root, levels, 0, start, end, freed);
    }

    fn unmap_rec(
        &mut self,
        t: u32,
        level: usize,
        base: u64,
        start: u64,
        end: u64,
        freed: &mut dyn FnMut(u64, u64, PageSize),
    ) {
        let span = 1u64 << (12 + 9 * (level as u32 - 1));
        let lo = if start > base { ((start - base) / span) as usize } else { 0 };
        for i in lo..512 {
            let va = base + i as u64 * span;
            if va >= end {
                break;
            }
            if self.present(t) == 0 {
                break;
            }
            match self.entry(t, i) {
                Entry::Empty => {}
                Entry::Leaf(pfn) => {
                    self.set(t, i, 0);
                    if level >= 2 {
                        self.regions.invalidate();
                    }
                    freed(va, pfn, PageSize::from_index(level - 1));
                }
                Entry::Table(c) => self.unmap_rec(c, level - 1, va, start, end, freed),
            }
        }
    }

    /// Leaves inside [start, end), as (va, pfn, size), in address order.
    pub fn leaves(&self, root: u32, levels: usize, start: u64, end: u64) -> Vec<(u64, u64, PageSize)> {
        let mut out = Vec::new();
        self.leaves_rec(root, levels, 0, start, end, &mut out);
        out
    }

    fn leaves_rec(&self, t: u32, level: usize, base: u64, start: u64, end: u64, out: &mut Vec<(u64, u64, PageSize)>) {
        let span = 1u64 << (12 + 9 * (level as u32 - 1));
        if self.present(t) == 0 {
            return;
        }
        for i in 0..512 {
            let va = base + i as u64 * span;
            if va >= end {
                break;
            }
            if va + span <= start {
                continue;
            }
            match self.entry(t, i) {
                Entry::Empty => {}
                Entry::Leaf(pfn) => out.push((va, pfn, PageSize::from_index(level - 1))),
                Entry::Table(c) => self.leaves_rec(c, level - 1, va, start, end, out),
            }
        }
    }
}

/// For tests: the frames a map call takes for new tables, numbered `after + 1`, `after + 2`, ...
/// (no companions).
#[cfg(test)]
pub(crate) fn numbered_table_frames(after: u64) -> impl FnMut(bool) -> Option<(u64, Option<u64>)> {
    let mut next = after;
    move |_| {
        next += 1;
        Some((next, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_each_size_and_walks_back() {
        let mut pt = PageTables::default();
        let root = pt.new_table(4, 100, None);
        let mut alloc = numbered_table_frames(200);
        // 4KB: creates PDPT, PD, PT.
        assert_eq!(pt.map(root, 4, 0x7000_1234_5000, PageSize::Size4K, 7, &mut alloc), Ok(3));
        // 2MB in a new 1GB region of the same 512GB: PD only.
        assert_eq!(pt.map(root, 4, 0x7000_4000_0000, PageSize::Size2M, 512, &mut alloc), Ok(1));
        // 1GB in the same PML4 slot: no new table.
        assert_eq!(pt.map(root, 4, 0x7000_8000_0000, PageSize::Size1G, 1 << 18, &mut alloc), Ok(0));
        assert_eq!(pt.lookup(root, 4, 0x7000_1234_5fff), Some((7, PageSize::Size4K)));
        assert_eq!(pt.lookup(root, 4, 0x7000_401f_ffff), Some((512, PageSize::Size2M)));
        assert_eq!(pt.lookup(root, 4, 0x7000_bfff_ffff), Some((1 << 18, PageSize::Size1G)));
        assert_eq!(pt.lookup(root, 4, 0x7000_1234_6000), None);
        assert_eq!(pt.table_pa(root), 100 << 12);
        assert!(pt.region_used(root, 4, 0x7000_1220_0000, PageSize::Size2M));
        assert!(!pt.region_used(root, 4, 0x7000_1240_0000, PageSize::Size2M));
        let mut got = Vec::new();
        pt.unmap_range(root, 4, 0x7000_0000_0000, 0x7000_8000_0000, &mut |va, pfn, s| got.push((va, pfn, s)));
        assert_eq!(got, vec![(0x7000_1234_5000, 7, PageSize::Size4K), (0x7000_4000_0000, 512, PageSize::Size2M)]);
        assert!(!pt.region_used(root, 4, 0x7000_1220_0000, PageSize::Size2M));
        assert_eq!(pt.leaves(root, 4, 0, u64::MAX).len(), 1);
    }

    #[test]
    fn region_memo_answers_as_the_walk_does() {
        let mut pt = PageTables::default();
        let (a, b) = (pt.new_table(4, 100, None), pt.new_table(4, 101, None));
        let mut next = 200;
        let mut alloc = |_| {
            next += 1;
            Some((next, None))
        };
        let va = 0x7000_1220_0000u64;
        pt.map(a, 4, va + 0x5000, PageSize::Size4K, 7, &mut alloc).unwrap();
        assert_eq!(pt.lookup_memo(a, 4, va + 0x5fff), Some((7, PageSize::Size4K))); // fills the memo
        assert_eq!(pt.lookup_memo(a, 4, va + 0x6000), None);
        assert!(pt.pt_of(a, 4, va + 0x6000).is_some());
        assert_eq!(pt.pt_of(b, 4, va), None);
        // Another root, same region: not the memo's answer.
        assert_eq!(pt.lookup_memo(b, 4, va + 0x5000), None);
        // The region's table emptied, then replaced by a 2MB page: the memo must not answer
        // from the old table.
        pt.unmap_range(a, 4, va, va + (2 << 20), &mut |_, _, _| {});
        assert_eq!(pt.lookup_memo(a, 4, va + 0x5000), None);
        pt.map(a, 4, va, PageSize::Size2M, 1024, &mut alloc).unwrap();
        assert_eq!(pt.lookup_memo(a, 4, va + 0x5000), Some((1024, PageSize::Size2M)));
        assert_eq!(pt.pt_of(a, 4, va), None);
        // Unmapping the 2MB page forgets it too.
        pt.unmap_range(a, 4, va, va + (2 << 20), &mut |_, _, _| {});
        assert_eq!(pt.lookup_memo(a, 4, va + 0x5000), None);
        // Random maps and unmaps of 4KB and 2MB pages over 64 regions of two roots: the memo's
        // answers equal the plain walk's.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let base = 0x5555_0000_0000u64;
        for step in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let root = if x & 1 == 0 { a } else { b };
            let region = base + ((x >> 8) % 64) * (2 << 20);
            let at = region + ((x >> 20) % 512) * 4096;
            match (x >> 40) % 8 {
                0 => pt.unmap_range(root, 4, region, region + (2 << 20), &mut |_, _, _| {}),
                1 if !pt.region_used(root, 4, region, PageSize::Size2M) => {
                    pt.map(root, 4, region, PageSize::Size2M, 4096 + step, &mut alloc).unwrap();
                }
                2 | 3 if pt.lookup(root, 4, at).is_none() => {
                    pt.map(root, 4, at, PageSize::Size4K, step, &mut alloc).unwrap();
                }
                _ => {}
            }
            assert_eq!(pt.lookup_memo(root, 4, at), pt.lookup(root, 4, at), "step {step}");
        }
    }

    #[test]
    fn companion_pages_go_with_tables_of_their_level() {
        let mut pt = PageTables::with_companions(Some(2));
        let root = pt.new_table(4, 100, None);
        let mut next = 200;
        let mut asked = Vec::new();
        let mut alloc = |companion: bool| {
            asked.push(companion);
            next += 2;
            Some((next, companion.then_some(next + 1)))
        };
        // A 4KB page creates a PDPT, a PD (with its companion) and a PT.
        assert_eq!(pt.map(root, 4, 0x7000_1234_5000, PageSize::Size4K, 7, &mut alloc), Ok(3));
        assert_eq!(asked, vec![false, true, false]);
        let pd = (0..pt.tables() as u32).find(|&t| pt.level_of(t) == 2).unwrap();
        assert_eq!(pt.companion_pa(pd), Some(205 << 12));
        assert_eq!(pt.table_pa(pd), 204 << 12);
        assert!((0..pt.tables() as u32).filter(|&t| t != pd).all(|t| pt.companion_pa(t).is_none()));
        // Out of frames for the companion's table: nothing half-made, and a retry continues.
        let mut fail = |_: bool| None;
        assert_eq!(pt.map(root, 4, 0x7000_4000_0000, PageSize::Size4K, 8, &mut fail), Err(OutOfFrames));
        assert_eq!(pt.tables(), 4);
    }

    #[test]
    fn a_lines_cluster_mask_and_offsets_are_the_same_four_entries_at_a_time() {
        // By hand: frames 803, 801, none, 2000, 806, 807, 800, 815 against frame 801's cluster
        // of 8 (800..807): entries 0, 1, 4, 5, 6; offsets 3, 1, 0, 0, 6, 7, 0, 7.
        let frames = [Some(803), Some(801), None, Some(2000), Some(806), Some(807), Some(800), Some(815)];
        let line = PteLine::of_leaves(&frames);
        let offsets = [3u32, 1, 0, 0, 6, 7, 0, 7].iter().enumerate().fold(0, |a, (p, o)| a | o << (3 * p));
        assert_eq!(line.cluster_of(801, 3), (0b0111_0011, offsets));
        assert_eq!(line.cluster_of_scalar(801, 3), (0b0111_0011, offsets));
        // Random lines (a quarter of the entries empty, frames near each other) at every
        // cluster size: both ways agree.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..10_000 {
            let base = (next() % (1 << 29)) as u32;
            let frames: Vec<Option<u32>> = (0..8)
                .map(|_| (next() % 4 != 0).then(|| base.wrapping_add((next() % 24) as u32) % (1 << 30)))
                .collect();
            let line = PteLine::of_leaves(&frames);
            let pfn = base.wrapping_add((next() % 24) as u32) % (1 << 30);
            for bits in 1..=3 {
                assert_eq!(line.cluster_of(pfn, bits), line.cluster_of_scalar(pfn, bits), "{frames:?} {pfn} {bits}");
            }
        }
    }
}
