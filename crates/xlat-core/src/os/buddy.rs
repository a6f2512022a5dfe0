//! A binary buddy allocator of physical frames (Knuth vol. 1, 2.5; Linux's zoned buddy without
//! zones or per-CPU lists). Free blocks of each order are kept in ordered sets so that
//! allocation is deterministic: the lowest free block of the smallest sufficient order.

use serde::Serialize;
use std::collections::BTreeSet;

#[derive(Debug, Clone)]
pub struct Buddy {
    max_order: u32,
    free: Vec<BTreeSet<u64>>,
    total_frames: u64,
    free_frames: u64,
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
}

impl Buddy {
    /// `frames` 4KB frames, all free, `pinned(i)` 2MB blocks (index i) holding one used frame.
    pub fn new(frames: u64, max_order: u32, mut pinned: impl FnMut(u64) -> bool) -> Buddy {
        let mut b = Buddy {
            max_order,
            free: vec![BTreeSet::new(); max_order as usize + 1],
            total_frames: frames,
            free_frames: 0,
        };
        let k0 = max_order.min(9);
        let step = 1u64 << k0;
        let mut pfn = 0;
        while pfn + step <= frames {
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
        while pfn < frames {
            b.free(pfn, 0);
            pfn += 1;
        }
        b
    }

    pub fn max_order(&self) -> u32 {
        self.max_order
    }
    pub fn free_frames(&self) -> u64 {
        self.free_frames
    }

    /// Allocate a block of `2^order` frames; its first frame number, or None.
    pub fn alloc(&mut self, order: u32) -> Option<u64> {
        if order > self.max_order {
            return None;
        }
        let k = (order..=self.max_order).find(|&k| !self.free[k as usize].is_empty())?;
        let pfn = self.free[k as usize].pop_first().expect("non-empty");
        // Split down, returning the upper halves.
        for o in (order..k).rev() {
            self.free[o as usize].insert(pfn + (1 << o));
        }
        self.free_frames -= 1 << order;
        Some(pfn)
    }

    /// Return a block, merging with free buddies.
    pub fn free(&mut self, mut pfn: u64, mut order: u32) {
        debug_assert_eq!(pfn & ((1 << order) - 1), 0, "misaligned block");
        self.free_frames += 1 << order;
        while order < self.max_order {
            let buddy = pfn ^ (1 << order);
            if buddy + (1 << order) > self.total_frames || !self.free[order as usize].remove(&buddy) {
                break;
            }
            pfn = pfn.min(buddy);
            order += 1;
        }
        self.free[order as usize].insert(pfn);
    }

    pub fn fragmentation(&self) -> Fragmentation {
        let free_blocks: Vec<u64> = self.free.iter().map(|s| s.len() as u64).collect();
        let unusable = |order: u32| {
            if self.free_frames == 0 {
                return 0.0;
            }
            let usable: u64 =
                free_blocks.iter().enumerate().filter(|&(k, _)| k as u32 >= order).map(|(k, &n)| n << k).sum();
            1.0 - usable as f64 / self.free_frames as f64
        };
        Fragmentation {
            total_frames: self.total_frames,
            free_frames: self.free_frames,
            unusable_2m: unusable(9),
            unusable_1g: unusable(18),
            free_blocks,
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
}
