//! A binary buddy allocator of physical frames (Knuth vol. 1, 2.5; Linux's zoned buddy without
//! per-CPU lists). Physical memory is one or more zones (one per memory kind), each a contiguous
//! range of frames with its own free lists; blocks never cross a zone boundary. Free blocks of
//! each order are kept in ordered sets so that allocation is deterministic: the lowest free
//! block of the smallest sufficient order of the zone asked.

use serde::Serialize;
use std::collections::BTreeSet;

#[derive(Debug, Clone)]
struct Zone {
    name: String,
    start: u64,
    end: u64,
    free: Vec<BTreeSet<u64>>,
    free_frames: u64,
}

#[derive(Debug, Clone)]
pub struct Buddy {
    max_order: u32,
    zones: Vec<Zone>,
}

/// Free memory by block order and how usable it is for large blocks.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Fragmentation {
    pub total_frames: u64,
    pub free_frames: u64,
    /// Free blocks of each order 0..=max_order.
    pub free_blocks: Vec<u64>,
    /// Unusable free space index for 2MB (order 9) and 1GB (order 18) allocations: the fraction
    /// of free memory in blocks too small for them (Gorman and Whitcroft, 2006). 0 when no
    /// memory is free.
    pub unusable_2m: f64,
    pub unusable_1g: f64,
    /// Each zone's frames and free blocks (only with several zones).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<ZoneFragmentation>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ZoneFragmentation {
    pub name: String,
    pub total_frames: u64,
    pub free_frames: u64,
    pub free_blocks: Vec<u64>,
}

impl Buddy {
    /// One zone ("dram") of `frames` 4KB frames, all free but for `pinned(i)` 2MB blocks (index
    /// i) holding one used frame.
    pub fn new(frames: u64, max_order: u32, pinned: impl FnMut(u64) -> bool) -> Buddy {
        Buddy::zoned(&[("dram", frames)], max_order, pinned)
    }

    /// Zones of the given names and frame counts, in address order from frame 0. Every zone but
    /// the last must be a whole number of 2MB blocks (`memory.kinds` sizes are multiples of
    /// 2MiB). `pinned(i)` is asked for every 2MB block i of every zone (i counts from frame 0,
    /// so the pinned blocks do not depend on the zones).
    pub fn zoned(zones: &[(&str, u64)], max_order: u32, mut pinned: impl FnMut(u64) -> bool) -> Buddy {
        let mut b = Buddy { max_order, zones: Vec::with_capacity(zones.len()) };
        let mut at = 0;
        for &(name, frames) in zones {
            b.zones.push(Zone {
                name: name.to_string(),
                start: at,
                end: at + frames,
                free: vec![BTreeSet::new(); max_order as usize + 1],
                free_frames: 0,
            });
            at += frames;
        }
        let k0 = max_order.min(9);
        let step = 1u64 << k0;
        for z in 0..b.zones.len() {
            let (mut pfn, end) = (b.zones[z].start, b.zones[z].end);
            debug_assert!(pfn.is_multiple_of(step), "zones start on a block boundary");
            while pfn + step <= end {
                if k0 == 9 && pinned(pfn >> 9) {
                    // Keep frame `pfn`; free its buddies of order 0..8, which never merge with it.
                    for o in 0..9 {
                        b.free(pfn + (1 << o), o);
                    }
                } else {
                    b.free(pfn, k0);
                }
                pfn += step;
            }
            while pfn < end {
                b.free(pfn, 0);
                pfn += 1;
            }
        }
        b
    }

    pub fn max_order(&self) -> u32 {
        self.max_order
    }
    pub fn free_frames(&self) -> u64 {
        self.zones.iter().map(|z| z.free_frames).sum()
    }
    pub fn zones(&self) -> usize {
        self.zones.len()
    }
    pub fn zone_name(&self, zone: usize) -> &str {
        &self.zones[zone].name
    }
    /// The frames [start, end) of `zone`.
    pub fn zone_frames(&self, zone: usize) -> (u64, u64) {
        (self.zones[zone].start, self.zones[zone].end)
    }
    pub fn zone_free_frames(&self, zone: usize) -> u64 {
        self.zones[zone].free_frames
    }

    /// The zone frame `pfn` is in.
    #[inline]
    pub fn zone_of(&self, pfn: u64) -> usize {
        if self.zones.len() == 1 {
            return 0;
        }
        self.zones.partition_point(|z| z.end <= pfn).min(self.zones.len() - 1)
    }

    /// Allocate a block of `2^order` frames from the lowest zone that has one; its first frame.
    pub fn alloc(&mut self, order: u32) -> Option<u64> {
        (0..self.zones.len()).find_map(|z| self.alloc_in(z, order))
    }

    /// Allocate a block of `2^order` frames from `zone`: the lowest free block of the smallest
    /// sufficient order, split down.
    pub fn alloc_in(&mut self, zone: usize, order: u32) -> Option<u64> {
        if order > self.max_order {
            return None;
        }
        let z = &mut self.zones[zone];
        let k = (order..=self.max_order).find(|&k| !z.free[k as usize].is_empty())?;
        let pfn = z.free[k as usize].pop_first().expect("non-empty");
        // Split down, returning the upper halves.
        for o in (order..k).rev() {
            z.free[o as usize].insert(pfn + (1 << o));
        }
        z.free_frames -= 1 << order;
        Some(pfn)
    }

    /// Largest-block allocation (eager paging, seed 000 Algorithm 4.1): the largest free block
    /// of `zone` of at most `2^max_order` frames, as (first frame, order). A block of exactly
    /// `max_order` is split from a larger one if need be; when memory is too fragmented for it,
    /// the lowest block of the largest smaller order that has one is taken whole.
    pub fn alloc_largest_in(&mut self, zone: usize, max_order: u32) -> Option<(u64, u32)> {
        let max = max_order.min(self.max_order);
        let z = &mut self.zones[zone];
        if (max..=self.max_order).any(|k| !z.free[k as usize].is_empty()) {
            return self.alloc_in(zone, max).map(|p| (p, max));
        }
        let k = (0..max).rev().find(|&k| !z.free[k as usize].is_empty())?;
        let pfn = z.free[k as usize].pop_first().expect("non-empty");
        z.free_frames -= 1 << k;
        Some((pfn, k))
    }

    /// Allocate exactly the block of `2^order` frames at `pfn` (aligned) if it is free: the free
    /// block containing it is split down to it. False (nothing changes) if any of it is in use.
    pub fn alloc_at(&mut self, pfn: u64, order: u32) -> bool {
        debug_assert_eq!(pfn & ((1 << order) - 1), 0, "misaligned block");
        if order > self.max_order || pfn >= self.zones.last().map_or(0, |z| z.end) {
            return false;
        }
        let zone = self.zone_of(pfn);
        let z = &mut self.zones[zone];
        let Some((mut k, mut base)) = (order..=self.max_order)
            .map(|k| (k, pfn & !((1u64 << k) - 1)))
            .find(|&(k, b)| z.free[k as usize].contains(&b))
        else {
            return false;
        };
        z.free[k as usize].remove(&base);
        // Split down, returning the halves that do not hold `pfn`.
        while k > order {
            k -= 1;
            let upper = base + (1 << k);
            if pfn >= upper {
                z.free[k as usize].insert(base);
                base = upper;
            } else {
                z.free[k as usize].insert(upper);
            }
        }
        z.free_frames -= 1 << order;
        true
    }

    /// Largest-block allocation over `zones`, tried in order: the largest block of the first
    /// zone with any free frame.
    pub fn alloc_largest(&mut self, max_order: u32, zones: impl IntoIterator<Item = usize>) -> Option<(u64, u32)> {
        zones.into_iter().find_map(|z| self.alloc_largest_in(z, max_order))
    }

    /// Return a block, merging with free buddies of its zone.
    pub fn free(&mut self, mut pfn: u64, mut order: u32) {
        debug_assert_eq!(pfn & ((1 << order) - 1), 0, "misaligned block");
        let max = self.max_order;
        let zone = self.zone_of(pfn);
        let z = &mut self.zones[zone];
        debug_assert!(z.start <= pfn && pfn + (1 << order) <= z.end, "a block inside its zone");
        z.free_frames += 1 << order;
        while order < max {
            let buddy = pfn ^ (1 << order);
            if buddy < z.start || buddy + (1 << order) > z.end || !z.free[order as usize].remove(&buddy) {
                break;
            }
            pfn = pfn.min(buddy);
            order += 1;
        }
        z.free[order as usize].insert(pfn);
    }

    pub fn fragmentation(&self) -> Fragmentation {
        let mut free_blocks = vec![0u64; self.max_order as usize + 1];
        for z in &self.zones {
            for (k, s) in z.free.iter().enumerate() {
                free_blocks[k] += s.len() as u64;
            }
        }
        let free_frames = self.free_frames();
        let unusable = |order: u32| {
            if free_frames == 0 {
                return 0.0;
            }
            let usable: u64 =
                free_blocks.iter().enumerate().filter(|&(k, _)| k as u32 >= order).map(|(k, &n)| n << k).sum();
            1.0 - usable as f64 / free_frames as f64
        };
        let zones = if self.zones.len() > 1 {
            self.zones
                .iter()
                .map(|z| ZoneFragmentation {
                    name: z.name.clone(),
                    total_frames: z.end - z.start,
                    free_frames: z.free_frames,
                    free_blocks: z.free.iter().map(|s| s.len() as u64).collect(),
                })
                .collect()
        } else {
            Vec::new()
        };
        Fragmentation {
            total_frames: self.zones.last().map_or(0, |z| z.end),
            free_frames,
            unusable_2m: unusable(9),
            unusable_1g: unusable(18),
            free_blocks,
            zones,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_merges_by_hand() {
        // 16 frames, max order 4: one free block of 16.
        let mut b = Buddy::new(16, 4, |_| false);
        assert_eq!(b.fragmentation().free_blocks, vec![0, 0, 0, 0, 1]);
        assert_eq!(b.alloc(0), Some(0)); // split 16 -> 8+4+2+1+1
        assert_eq!(b.fragmentation().free_blocks, vec![1, 1, 1, 1, 0]);
        assert_eq!(b.alloc(1), Some(2));
        assert_eq!(b.alloc(0), Some(1));
        assert_eq!(b.free_frames(), 12);
        b.free(1, 0);
        b.free(0, 0); // 0+1 merge to order 1 at 0, with 2 (allocated) no further
        assert_eq!(b.fragmentation().free_blocks, vec![0, 1, 1, 1, 0]);
        b.free(2, 1); // now everything merges back
        assert_eq!(b.fragmentation().free_blocks, vec![0, 0, 0, 0, 1]);
        assert_eq!(b.alloc(5), None);
    }

    #[test]
    fn pinned_blocks_fragment_2m() {
        // 8 blocks of 2MB, every other one pinned: half the 2MB blocks can be allocated.
        let mut b = Buddy::new(8 * 512, 12, |i| i % 2 == 1);
        let f = b.fragmentation();
        assert_eq!(f.free_frames, 8 * 512 - 4);
        assert!((f.unusable_2m - (4.0 * 511.0) / (8.0 * 512.0 - 4.0)).abs() < 1e-12);
        let got: Vec<_> = (0..5).map(|_| b.alloc(9)).collect();
        assert_eq!(got, vec![Some(0), Some(1024), Some(2048), Some(3072), None]);
    }

    #[test]
    fn zones_allocate_and_merge_apart() {
        // Two zones of 3 and 2 blocks of 2MB, max order 10 (4MB): blocks never cross zones.
        let mut b = Buddy::zoned(&[("dram", 3 * 512), ("nvm", 2 * 512)], 10, |_| false);
        assert_eq!(b.zones(), 2);
        assert_eq!((b.zone_frames(0), b.zone_frames(1)), ((0, 1536), (1536, 2560)));
        assert_eq!((b.zone_of(0), b.zone_of(1535), b.zone_of(1536), b.zone_of(2559)), (0, 0, 1, 1));
        // Zone 0: one 4MB block at 0 and a 2MB block at 1024. Frames 1024..1536 cannot merge
        // with 1536..2048 (another zone), although they are buddies at order 10 by address.
        assert_eq!(b.fragmentation().free_blocks, vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 1]);
        assert_eq!(b.fragmentation().zones[1].free_blocks, vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0]);
        assert_eq!(b.alloc_in(1, 0), Some(1536));
        assert_eq!(b.alloc_in(1, 10), None, "zone 1 has no 4MB block");
        assert_eq!(b.alloc(10), Some(0), "the lowest zone first");
        assert_eq!(b.alloc(10), None);
        assert_eq!(b.alloc(9), Some(1024));
        assert_eq!(b.alloc(9), Some(2048), "then the next zone");
        b.free(1024, 9);
        b.free(1536, 0);
        assert_eq!(b.zone_free_frames(0), 512);
        assert_eq!(b.zone_free_frames(1), 512);
        // Nothing merged across the boundary at frame 1536.
        assert_eq!(b.fragmentation().free_blocks[9], 2);
        assert_eq!(b.fragmentation().zones[0].name, "dram");
        assert_eq!(b.free_frames(), 1024);
    }

    #[test]
    fn one_zone_is_the_plain_allocator() {
        // The zoned constructor with one zone gives the same blocks in the same order.
        let pin = |i: u64| i % 3 == 1;
        let mut a = Buddy::new(7 * 512 + 5, 12, pin);
        let mut z = Buddy::zoned(&[("dram", 7 * 512 + 5)], 12, pin);
        assert_eq!(a.fragmentation(), z.fragmentation());
        for order in [0, 3, 9, 0, 1, 9, 9, 2, 0, 12] {
            assert_eq!(a.alloc(order), z.alloc_in(0, order));
        }
        assert!(a.fragmentation().zones.is_empty(), "one zone: no per-zone report");
    }

    #[test]
    fn largest_block_allocation_by_hand() {
        // 16 frames, max order 4.
        let mut b = Buddy::new(16, 4, |_| false);
        assert_eq!(b.alloc_largest(2, [0]), Some((0, 2)), "split from the 16-frame block");
        assert_eq!(b.alloc_largest(4, [0]), Some((8, 3)), "no 16 left: the largest, 8 at 8");
        assert_eq!(b.alloc_largest(4, [0]), Some((4, 2)));
        assert_eq!(b.alloc(0), None, "all 16 frames are taken");
        assert_eq!(b.alloc_largest(4, [0]), None);
        // Fragmented: every other frame taken; the largest left are single frames.
        let mut b = Buddy::new(16, 4, |_| false);
        let all: Vec<u64> = (0..16).map(|_| b.alloc(0).unwrap()).collect();
        for &p in all.iter().filter(|&&p| p % 2 == 1) {
            b.free(p, 0);
        }
        assert_eq!(b.alloc_largest(3, [0]), Some((1, 0)));
        b.free(0, 0); // its buddy 1 was just allocated: no merge
        b.free(1, 0); // merges with 0 into a block of order 1
        assert_eq!(b.alloc_largest(3, [0]), Some((0, 1)));
        // Zones in order: the first zone with a free frame gives its largest block.
        let mut b = Buddy::zoned(&[("a", 512), ("b", 1024)], 10, |_| false);
        assert_eq!(b.alloc_largest(10, [1, 0]), Some((512, 9)), "zone b holds two 2MB blocks, no 4MB one");
        assert_eq!(b.alloc_largest(10, [0, 1]), Some((0, 9)));
        assert_eq!(b.alloc_largest(10, [0, 1]), Some((1024, 9)));
        assert_eq!(b.alloc_largest(10, [0, 1]), None);
    }

    #[test]
    fn allocation_at_a_given_frame() {
        let mut b = Buddy::new(16, 4, |_| false);
        assert!(b.alloc_at(6, 1)); // 16 -> 8 (free at 8), 4 (free at 0), 2 at 4 free, 2 at 6 taken
        assert_eq!(b.fragmentation().free_blocks, vec![0, 1, 1, 1, 0]);
        assert!(!b.alloc_at(6, 0), "in use");
        assert!(!b.alloc_at(4, 2), "partly in use");
        assert!(b.alloc_at(5, 0));
        assert!(b.alloc_at(12, 2));
        assert_eq!(b.free_frames(), 16 - 2 - 1 - 4);
        assert_eq!(b.alloc(0), Some(4));
        assert_eq!(b.alloc(3), None);
        assert!(!b.alloc_at(16, 0), "past the end");
        for (p, o) in [(4, 0), (5, 0), (6, 1), (12, 2)] {
            b.free(p, o);
        }
        assert_eq!(b.fragmentation().free_blocks, vec![0, 0, 0, 0, 1], "everything merged back");
    }
}
