//! The Clustered TLB of Pham et al. ("Increasing TLB reach by exploiting clustering in page
//! translations", HPCA 2014), a baseline of seed 000 section 4.8 (512 fully associative
//! entries, 8-page clusters). An entry maps an aligned cluster of `n` virtual pages (`n` = 8 by
//! default) whose frames lie in one aligned cluster of `n` frames, in any order inside it: the
//! entry holds the physical cluster number, a valid bit per virtual page and each page's frame
//! offset inside the physical cluster.
//!
//! It is probed after a first-level miss (at its `stage`, in parallel with the L2 TLB by
//! default). A hit (the cluster's entry is present and the page's bit valid) yields the 4KB
//! translation, which fills the TLBs above. After a walk of a 4KB page, the cluster's `n` PTEs
//! (one 64-byte line of the page table, which the walk read: no extra load) fill an entry with
//! the pages whose frame lies in the same physical cluster as the missing page's frame. Pages
//! mapped by 2MB or 1GB entries are not clustered (their walks fill nothing here).
//!
//! Full associativity without a scan: a chained hash table from (address-space tag, virtual
//! cluster number) to the entry's slot, and LRU kept as a doubly linked list through the
//! slots (most recent at the head), so that probes, fills and evictions are O(1).

use super::keys::VPN_MASK;
use crate::config::ClusterTlbConfig;
use crate::os::pagetable::{index, PageTables, PteLine};
use crate::os::Os;
use crate::stats::StructStats;

const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Virtual cluster number | address-space tag.
    key: u64,
    /// Physical cluster number (frame >> log2 n; frames are 32-bit in the page tables).
    pcluster: u32,
    /// Frame offset inside the physical cluster, 3 bits per virtual page.
    offsets: u32,
    /// Valid bit per virtual page of the cluster.
    valid: u8,
    /// Recency list (towards the most / least recently used).
    prev: u32,
    next: u32,
    /// Next slot in the same hash bucket.
    chain: u32,
}

#[derive(Debug, Clone)]
pub struct ClusterTlb {
    pub latency: u64,
    /// log2 of the pages per cluster.
    bits: u32,
    capacity: usize,
    slots: Vec<Slot>,
    buckets: Vec<u32>,
    /// Most and least recently used slots.
    head: u32,
    tail: u32,
    /// The key the last probe looked up and the slot it found, until the table changes (a
    /// fill after a walk looks up the key its probe just did; u64::MAX: none, no key has
    /// bits 46-47 set).
    probed: (u64, Option<u32>),
    /// Hits, fills, evictions, invalidations (accesses follow from the lookups of its stage).
    pub stats: StructStats,
}

impl ClusterTlb {
    pub fn new(c: &ClusterTlbConfig) -> ClusterTlb {
        let capacity = c.entries as usize;
        ClusterTlb {
            latency: c.latency,
            bits: c.cluster.trailing_zeros(),
            capacity,
            slots: Vec::with_capacity(capacity),
            buckets: vec![NONE; (2 * capacity).next_power_of_two()],
            head: NONE,
            tail: NONE,
            probed: (u64::MAX, None),
            stats: StructStats::default(),
        }
    }

    /// Pages per cluster.
    pub fn cluster_pages(&self) -> u64 {
        1 << self.bits
    }

    #[inline(always)]
    fn key(&self, va: u64, tag: u64) -> u64 {
        ((va >> (12 + self.bits)) & VPN_MASK) | tag
    }

    #[inline(always)]
    fn bucket(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize & (self.buckets.len() - 1)
    }

    #[inline(always)]
    fn find(&self, key: u64) -> Option<u32> {
        let mut i = self.buckets[self.bucket(key)];
        while i != NONE {
            let s = &self.slots[i as usize];
            if s.key == key {
                return Some(i);
            }
            i = s.chain;
        }
        None
    }

    /// The frame of `va`'s 4KB page if the entry of its cluster (address space `tag`) holds
    /// it (a hit makes the entry the most recently used).
    #[inline(always)]
    pub fn probe(&mut self, va: u64, tag: u64) -> Option<u64> {
        let key = self.key(va, tag);
        let found = self.find(key);
        self.probed = (key, found);
        let i = found?;
        let page = ((va >> 12) & ((1 << self.bits) - 1)) as u32;
        let s = self.slots[i as usize];
        if s.valid >> page & 1 == 0 {
            return None;
        }
        self.touch(i);
        self.stats.hits += 1;
        Some(((s.pcluster as u64) << self.bits) | ((s.offsets >> (3 * page)) & 7) as u64)
    }

    /// After a walk of `va`'s 4KB page (at frame `pfn`): fill the entry of its cluster from
    /// `line`, the 64-byte line of the page table that holds the cluster's PTEs (see
    /// [`cluster_line`]). The pages whose frame lies in `pfn`'s physical cluster are valid. An
    /// entry of the cluster already present is replaced in place (it missed, or held another
    /// physical cluster); else the least recently used entry goes if the TLB is full.
    #[inline(never)]
    pub fn fill(&mut self, va: u64, tag: u64, pfn: u64, line: &PteLine) {
        let n = 1u32 << self.bits;
        let pcluster = (pfn >> self.bits) as u32;
        // The cluster's pages inside the line.
        let sub = ((va >> 12) & 7 & !(n as u64 - 1)) as usize;
        let (same, offsets) = line.cluster_of(pfn as u32, self.bits);
        let valid = same >> sub & ((1u16 << n) - 1) as u8;
        let offsets = offsets >> (3 * sub);
        let key = self.key(va, tag);
        self.stats.fills += 1;
        let found = if self.probed.0 == key { self.probed.1 } else { self.find(key) };
        self.probed.0 = u64::MAX;
        let i = match found {
            Some(i) => i,
            None => {
                let i = if self.slots.len() < self.capacity {
                    self.slots.push(Slot { key, pcluster, offsets, valid, prev: NONE, next: NONE, chain: NONE });
                    (self.slots.len() - 1) as u32
                } else {
                    let t = self.tail;
                    self.stats.evictions += 1;
                    self.remove(t);
                    t
                };
                let b = self.bucket(key);
                let mut lru = self.lru();
                lru.slots[i as usize].key = key;
                lru.slots[i as usize].chain = lru.buckets[b];
                lru.buckets[b] = i;
                lru.link_front(i);
                i
            }
        };
        let mut lru = self.lru();
        let s = &mut lru.slots[i as usize];
        (s.pcluster, s.offsets, s.valid) = (pcluster, offsets, valid);
        lru.touch(i);
    }

    /// Drop the entries whose cluster overlaps [start, end) in address space `tag` (any if
    /// `None`).
    pub fn invalidate(&mut self, start: u64, end: u64, tag: Option<u64>) {
        if start >= end {
            return;
        }
        let shift = 12 + self.bits;
        let (first, last) = (start >> shift, (end - 1) >> shift);
        match tag {
            // A few clusters of one address space: look each up.
            Some(t) if last - first < self.capacity as u64 => {
                for c in first..=last {
                    if let Some(i) = self.find((c & VPN_MASK) | t) {
                        self.drop_slot(i);
                    }
                }
            }
            _ => {
                // (Highest first: dropping a slot moves the last one into its place.)
                let hit: Vec<u32> = (0..self.slots.len() as u32)
                    .rev()
                    .filter(|&i| {
                        let s = &self.slots[i as usize];
                        let (c, t) = (s.key & VPN_MASK, s.key & !VPN_MASK);
                        first <= c && c <= last && tag.is_none_or(|x| x == t)
                    })
                    .collect();
                for i in hit {
                    self.drop_slot(i);
                }
            }
        }
    }

    pub fn flush(&mut self) {
        self.stats.invalidations += self.len() as u64;
        self.probed.0 = u64::MAX;
        self.slots.clear();
        self.buckets.fill(NONE);
        (self.head, self.tail) = (NONE, NONE);
    }

    /// Valid entries.
    pub fn len(&self) -> usize {
        let mut n = 0;
        let mut i = self.head;
        while i != NONE {
            n += 1;
            i = self.slots[i as usize].next;
        }
        n
    }

    pub fn is_empty(&self) -> bool {
        self.head == NONE
    }

    /// The entries from the most to the least recently used, as (first virtual address of the
    /// cluster, physical cluster number, valid bits) (tests and reports; without the tag).
    pub fn entries(&self) -> Vec<(u64, u64, u8)> {
        let mut v = Vec::new();
        let mut i = self.head;
        while i != NONE {
            let s = &self.slots[i as usize];
            v.push(((s.key & VPN_MASK) << (12 + self.bits), s.pcluster as u64, s.valid));
            i = s.next;
        }
        v
    }

    /// Remove slot `i` from its hash chain and the recency list (it stays allocated).
    #[inline(always)]
    fn remove(&mut self, i: u32) {
        let b = self.bucket(self.slots[i as usize].key);
        let lru = self.lru();
        let mut at = lru.buckets[b];
        if at == i {
            lru.buckets[b] = lru.slots[i as usize].chain;
        } else {
            while lru.slots[at as usize].chain != i {
                at = lru.slots[at as usize].chain;
            }
            lru.slots[at as usize].chain = lru.slots[i as usize].chain;
        }
        let mut lru = lru;
        lru.unlink(i);
        lru.slots[i as usize].key = u64::MAX;
    }

    /// The slots, hash buckets and recency list, borrowed together.
    #[inline(always)]
    fn lru(&mut self) -> Lru<'_> {
        Lru { slots: &mut self.slots, buckets: &mut self.buckets, head: &mut self.head, tail: &mut self.tail }
    }

    /// Invalidate slot `i`: it leaves the table; the last slot moves into its place so that
    /// the slots stay dense.
    fn drop_slot(&mut self, i: u32) {
        self.stats.invalidations += 1;
        self.probed.0 = u64::MAX;
        self.remove(i);
        let last = (self.slots.len() - 1) as u32;
        if i != last {
            // Relink the last slot at index `i`.
            let s = self.slots[last as usize];
            let b = self.bucket(s.key);
            if self.buckets[b] == last {
                self.buckets[b] = i;
            } else {
                let mut at = self.buckets[b];
                while self.slots[at as usize].chain != last {
                    at = self.slots[at as usize].chain;
                }
                self.slots[at as usize].chain = i;
            }
            match s.prev {
                NONE => self.head = i,
                p => self.slots[p as usize].next = i,
            }
            match s.next {
                NONE => self.tail = i,
                n => self.slots[n as usize].prev = i,
            }
            self.slots[i as usize] = s;
        }
        self.slots.pop();
    }

    /// Make slot `i` the most recently used.
    #[inline(always)]
    fn touch(&mut self, i: u32) {
        self.lru().touch(i);
    }
}

/// A clustered TLB's slots, hash buckets and recency list, borrowed for one operation (as plain
/// slices, whose bounds the compiler keeps in registers across the operation's stores).
struct Lru<'a> {
    slots: &'a mut [Slot],
    buckets: &'a mut [u32],
    head: &'a mut u32,
    tail: &'a mut u32,
}

impl Lru<'_> {
    #[inline(always)]
    fn unlink(&mut self, i: u32) {
        let (p, n) = (self.slots[i as usize].prev, self.slots[i as usize].next);
        match p {
            NONE => *self.head = n,
            p => self.slots[p as usize].next = n,
        }
        match n {
            NONE => *self.tail = p,
            n => self.slots[n as usize].prev = p,
        }
    }

    #[inline(always)]
    fn link_front(&mut self, i: u32) {
        let h = *self.head;
        self.slots[i as usize].prev = NONE;
        self.slots[i as usize].next = h;
        match h {
            NONE => *self.tail = i,
            h => self.slots[h as usize].prev = i,
        }
        *self.head = i;
    }

    /// Make slot `i` the most recently used.
    #[inline(always)]
    fn touch(&mut self, i: u32) {
        if *self.head != i {
            self.unlink(i);
            self.link_front(i);
        }
    }
}

/// The line of the current page table of `os` that holds the PTEs of `va`'s cluster (no entries:
/// `va` is not under a PT).
#[inline(always)]
pub fn cluster_line(os: &Os, va: u64) -> PteLine {
    cluster_line_in(os.tables(), os.root(), os.levels(), va)
}

/// [`cluster_line`] in the page tables `pt` of root `root` (`levels` levels).
#[inline(always)]
pub fn cluster_line_in(pt: &PageTables, root: u32, levels: usize, va: u64) -> PteLine {
    match pt.pt_of(root, levels, va) {
        Some(t) => pt.leaf_line(t, index(va, 1) & !7),
        None => PteLine::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::pagetable::numbered_table_frames;

    fn ctlb(entries: u64, cluster: u64) -> ClusterTlb {
        ClusterTlb::new(&ClusterTlbConfig { enabled: true, entries, cluster, stage: 2, latency: 0 })
    }

    const C: u64 = 0x8000; // one 8-page cluster of virtual addresses

    /// A page-table line from the frames of its 8 entries (`None`: no leaf).
    fn line(frames: &[Option<u32>]) -> PteLine {
        PteLine::of_leaves(frames)
    }

    #[test]
    fn a_fill_keeps_the_pages_whose_frames_share_the_missing_pages_physical_cluster() {
        let mut t = ctlb(4, 8);
        // The cluster at 0x10_0000 (pages 0..7): frames 803, 801, none, 2000, 806, 807, 800,
        // 815. The walk was for page 1 (frame 801: physical cluster 100 = frames 800..807).
        let frames = [Some(803), Some(801), None, Some(2000), Some(806), Some(807), Some(800), Some(815)];
        t.fill(0x10_1000, 0, 801, &line(&frames));
        assert_eq!(t.entries(), vec![(0x10_0000, 100, 0b0111_0011)]);
        assert_eq!(t.probe(0x10_0abc, 0), Some(803));
        assert_eq!(t.probe(0x10_6fff, 0), Some(800));
        assert_eq!(t.probe(0x10_5000, 0), Some(807));
        assert_eq!(t.probe(0x10_2000, 0), None, "not mapped");
        assert_eq!(t.probe(0x10_3000, 0), None, "another physical cluster");
        assert_eq!(t.probe(0x10_7000, 0), None, "frame 815: cluster 101");
        assert_eq!(t.probe(0x10_8000, 0), None, "the next virtual cluster");
        assert_eq!(t.probe(0x10_1000, 1 << 48), None, "another address space");
        assert_eq!(t.stats.hits, 3);
        // A walk of page 7 (frame 815) replaces the entry in place with cluster 101.
        t.fill(0x10_7000, 0, 815, &line(&frames));
        assert_eq!(t.entries(), vec![(0x10_0000, 101, 0b1000_0000)]);
        assert_eq!((t.stats.fills, t.stats.evictions), (2, 0));
        assert_eq!(t.probe(0x10_7000, 0), Some(815));
        assert_eq!(t.probe(0x10_1000, 0), None);
    }

    #[test]
    fn a_fill_from_a_page_table_takes_the_4kb_leaves_of_the_cluster() {
        use crate::units::PageSize;
        let mut pt = PageTables::default();
        let root = pt.new_table(4, 1, None);
        let mut alloc = numbered_table_frames(10_000);
        // Cluster 0x40_0000..0x40_8000: pages 0, 1, 3, 6 at frames 1602, 1600, 1607, 1603
        // (physical cluster 200) and page 5 at frame 1609 (cluster 201); pages 2, 4, 7 unmapped.
        let base = 0x40_0000u64;
        for (p, f) in [(0, 1602), (1, 1600), (3, 1607), (6, 1603), (5, 1609)] {
            pt.map(root, 4, base + p * 0x1000, PageSize::Size4K, f, &mut alloc).unwrap();
        }
        // A 2MB page right after: no PT under it, so no frames.
        pt.map(root, 4, 0x60_0000, PageSize::Size2M, 4096, &mut alloc).unwrap();
        let frames = cluster_line_in(&pt, root, 4, base + 0x3abc);
        let want = [Some(1602), Some(1600), None, Some(1607), None, Some(1609), Some(1603), None];
        assert_eq!(frames, line(&want));
        assert_eq!(cluster_line_in(&pt, root, 4, 0x60_1000), PteLine::default());
        // A walk of page 3 (frame 1607): pages 0, 1, 3, 6 are valid; 5 is in cluster 201.
        let mut t = ctlb(512, 8);
        t.fill(base + 0x3000, 0, 1607, &frames);
        assert_eq!(t.entries(), vec![(base, 200, 0b0100_1011)]);
        assert_eq!(t.probe(base + 0x6008, 0), Some(1603));
        assert_eq!(t.probe(base + 0x5000, 0), None);
        // A walk of page 5 instead: only page 5.
        t.fill(base + 0x5000, 0, 1609, &frames);
        assert_eq!(t.entries(), vec![(base, 201, 0b0010_0000)]);
        // Clusters of 4 pages: the second half of the line is another cluster (pages 4..7:
        // frames none, 1609, 1603, none). A walk of page 6 (1603, cluster 400 of 4 frames)
        // keeps page 6 only; one of page 5 (1609: cluster 402) keeps page 5 only.
        let mut t = ctlb(512, 4);
        t.fill(base + 0x6000, 0, 1603, &frames);
        assert_eq!(t.entries(), vec![(base + 0x4000, 400, 0b0100)]);
        assert_eq!(t.probe(base + 0x6000, 0), Some(1603));
        t.fill(base + 0x5000, 0, 1609, &frames);
        assert_eq!(t.entries(), vec![(base + 0x4000, 402, 0b0010)]);
        // The first half (pages 0..3: 1602, 1600, none, 1607) from a walk of page 0: 1607 is
        // in cluster 401.
        t.fill(base, 0, 1602, &frames);
        assert_eq!(t.entries()[0], (base, 400, 0b0011));
        assert_eq!(t.probe(base + 0x1000, 0), Some(1600));
        assert_eq!(t.probe(base + 0x3000, 0), None);
    }

    #[test]
    fn clusters_of_two_pages() {
        let mut t = ctlb(2, 2);
        // Pages 2 and 3 of the line (the cluster of 0x10_3000) at frames 40 and 41.
        t.fill(0x10_3000, 0, 41, &line(&[None, None, Some(40), Some(41)]));
        assert_eq!(t.entries(), vec![(0x10_2000, 20, 0b11)]);
        assert_eq!(t.probe(0x10_2000, 0), Some(40));
        assert_eq!(t.probe(0x10_4000, 0), None);
    }

    #[test]
    fn lru_eviction_and_invalidation() {
        let mut t = ctlb(3, 8);
        let one = |f: u64| line(&[Some(f as u32)]);
        for k in 0..3 {
            t.fill(k * C, 0, 8 * k, &one(8 * k));
        }
        // Recency: 2, 1, 0. Touch 0: 0, 2, 1; the next fill evicts 1.
        assert_eq!(t.probe(0, 0), Some(0));
        t.fill(3 * C, 0, 24, &one(24));
        assert_eq!(t.stats.evictions, 1);
        assert_eq!(t.probe(C, 0), None);
        let order: Vec<u64> = t.entries().iter().map(|e| e.0 / C).collect();
        assert_eq!(order, vec![3, 0, 2]);
        // Invalidating one byte of cluster 2 drops it; the rest stay and still hit.
        t.invalidate(2 * C + 0x10, 2 * C + 0x11, Some(0));
        assert_eq!(t.probe(2 * C, 0), None);
        assert_eq!((t.stats.invalidations, t.len()), (1, 2));
        assert_eq!(t.probe(3 * C, 0), Some(24));
        assert_eq!(t.probe(0, 0), Some(0));
        // Two more fills: one free slot, then an eviction of the least recent (3).
        t.fill(5 * C, 0, 40, &one(40));
        t.fill(6 * C, 0, 48, &one(48));
        let order: Vec<u64> = t.entries().iter().map(|e| e.0 / C).collect();
        assert_eq!(order, vec![6, 5, 0]);
        // A range over every address space (no tag) drops overlapping clusters 5 and 6.
        t.invalidate(5 * C + 0x7000, 6 * C + 1, None);
        assert_eq!(t.entries().iter().map(|e| e.0 / C).collect::<Vec<_>>(), vec![0]);
        t.flush();
        assert!(t.is_empty());
        assert_eq!(t.stats.invalidations, 4);
    }

    #[test]
    fn five_hundred_twelve_entries_evict_in_lru_order() {
        let mut t = ctlb(512, 8);
        let one = |f: u64| line(&[Some(f as u32)]);
        for k in 0..512 {
            t.fill(k * C, 0, 8 * k, &one(8 * k));
        }
        // Touch the even clusters (oldest first): the odd ones are now the least recent, in
        // fill order. 256 new clusters evict exactly the odd ones, from 1 up.
        for k in (0..512).step_by(2) {
            assert_eq!(t.probe(k * C, 0), Some(8 * k));
        }
        for j in 0..256 {
            t.fill((1000 + j) * C, 0, 8 * (1000 + j), &one(8 * (1000 + j)));
            assert_eq!(t.probe((2 * j + 1) * C, 0), None, "odd cluster {} evicted", 2 * j + 1);
            if j < 255 {
                assert!(t.find(t.key((2 * j + 3) * C, 0)).is_some(), "the next odd one stays");
            }
        }
        assert_eq!((t.stats.evictions, t.len()), (256, 512));
        for k in (0..512).step_by(2) {
            assert_eq!(t.probe(k * C, 0), Some(8 * k));
        }
        // The next eviction takes the least recent new cluster (1000).
        t.fill(2000 * C, 0, 0, &one(0));
        assert_eq!(t.probe(1000 * C, 0), None);
        assert_eq!(t.probe(1001 * C, 0), Some(8 * 1001));
    }

    #[test]
    fn a_fill_after_its_probe_finds_the_entry_even_if_an_invalidation_moved_it() {
        let mut t = ctlb(4, 8);
        for k in 0..3 {
            t.fill(k * C, 0, 8 * k, &line(&[Some(8 * k as u32)]));
        }
        // The probe of cluster 2's page 1 finds its entry (page 1 not valid: a miss) ...
        assert_eq!(t.probe(2 * C + 0x1000, 0), None);
        // ... the walk's fault drops cluster 0 (cluster 2's slot moves into its place) ...
        t.invalidate(0, C, Some(0));
        // ... and the fill replaces cluster 2's entry in place.
        t.fill(2 * C + 0x1000, 0, 17, &line(&[Some(16), Some(17)]));
        assert_eq!(t.entries(), vec![(2 * C, 2, 0b11), (C, 1, 0b1)]);
        assert_eq!((t.stats.fills, t.stats.evictions, t.stats.invalidations), (4, 0, 1));
        assert_eq!(t.probe(2 * C + 0x1000, 0), Some(17));
    }
}
