//! Reclaim: which resident page gives up its frame when an allocation finds no free block.

use std::collections::VecDeque;

/// Page replacement under memory pressure. The OS tells the policy of every 4KB page that
/// becomes resident and asks it for victims; it skips a candidate that is no longer mapped to
/// that frame (unmapped, moved or already evicted since), so the policy may keep stale entries.
/// Huge pages and page tables are never reclaimed.
pub trait Reclaim: Send {
    fn name(&self) -> &'static str;
    /// Whether this is the default (its counters are then not reported).
    fn is_default(&self) -> bool {
        false
    }
    /// A 4KB page of address space `space` (the OS's index) at `va` is now backed by `pfn`.
    fn resident(&mut self, space: usize, va: u64, pfn: u64);
    /// The next candidate to evict, as (space, va, pfn); None: nothing left to try.
    fn victim(&mut self) -> Option<(usize, u64, u64)>;
}

/// No reclaim (`os.reclaim = "none"`, the default): running out of memory ends the run with an
/// error.
pub struct NoReclaim;

impl Reclaim for NoReclaim {
    fn name(&self) -> &'static str {
        "none"
    }
    fn is_default(&self) -> bool {
        true
    }
    fn resident(&mut self, _: usize, _: u64, _: u64) {}
    fn victim(&mut self) -> Option<(usize, u64, u64)> {
        None
    }
}

/// FIFO (`os.reclaim = "fifo"`): evict 4KB pages in the order they became resident.
#[derive(Default)]
pub struct FifoReclaim {
    queue: VecDeque<(usize, u64, u64)>,
}

impl Reclaim for FifoReclaim {
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn resident(&mut self, space: usize, va: u64, pfn: u64) {
        self.queue.push_back((space, va, pfn));
    }
    fn victim(&mut self) -> Option<(usize, u64, u64)> {
        self.queue.pop_front()
    }
}
