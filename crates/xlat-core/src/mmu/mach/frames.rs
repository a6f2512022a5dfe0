//! A memo of the OS model's translations of user pages, for the L1U handler (the Mach loop's
//! own structure: docs/mach.md, "Speed"). The handler asks the OS model for the frame of every
//! user page that misses the TLB (a third of the bench's references); the memo answers the
//! pages it has seen with one probe instead of the OS model's walk.
//!
//! Direct-mapped, keyed by the TLB's key (page number and address-space tag), holding the 4KB
//! frame the OS model gave. It is exact: the OS model changes a present translation only with
//! an invalidation (unmaps, migrations, reclaim; a fault only maps what was absent, address
//! spaces are never torn down), and every invalidation reaching the handler clears the memo
//! (`MachHandler::flush_user`). A conflict just asks the OS model again.

/// Entries (a power of two): room for the user pages of a few dozen address spaces' hot sets.
const ENTRIES: usize = 1 << 13;
/// Keys are page numbers shifted left 16 bits and or'ed with a tag: below 2^52. The bits above
/// hold the generation an entry was put in, so that forgetting everything is a new generation
/// (a flush at every context switch, without ASIDs, costs nothing), and a real clear only every
/// `GENERATIONS` flushes.
const GEN_SHIFT: u32 = 52;
const GENERATIONS: u64 = (1 << (64 - GEN_SHIFT)) - 1;
/// No key (in no generation: the last one is never used).
const NONE: u64 = u64::MAX;

#[derive(Debug, Clone)]
pub struct Frames {
    /// Per entry: the key (with its generation) and the frame (a fixed array: the index, masked,
    /// needs no bounds check).
    slots: Box<[(u64, u64); ENTRIES]>,
    /// The current generation, shifted to its place in a key.
    stamp: u64,
}

impl Default for Frames {
    fn default() -> Frames {
        let slots = vec![(NONE, 0); ENTRIES].into_boxed_slice().try_into().expect("ENTRIES entries");
        Frames { slots, stamp: 0 }
    }
}

#[inline(always)]
fn index(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 51) as usize & (ENTRIES - 1)
}

impl Frames {
    /// The frame remembered for `key`.
    #[inline(always)]
    pub fn get(&self, key: u64) -> Option<u64> {
        debug_assert!(key >> GEN_SHIFT == 0);
        let (k, pfn) = self.slots[index(key)];
        (k == key | self.stamp).then_some(pfn)
    }

    /// Remember `key` -> `pfn` (over whatever its entry held).
    #[inline(always)]
    pub fn put(&mut self, key: u64, pfn: u64) {
        self.slots[index(key)] = (key | self.stamp, pfn);
    }

    /// Forget everything (the OS model invalidated translations).
    pub fn clear(&mut self) {
        self.stamp += 1 << GEN_SHIFT;
        if self.stamp >> GEN_SHIFT == GENERATIONS {
            self.slots.fill((NONE, 0));
            self.stamp = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_last_frame_of_each_entry_and_forgets_on_clear() {
        let mut f = Frames::default();
        let keys: Vec<u64> = (0..3 * ENTRIES as u64).map(|p| (p << 16) | (p % 3 + 1)).collect();
        for (i, &k) in keys.iter().enumerate() {
            f.put(k, i as u64);
        }
        // Each entry holds the last key put there, with its frame; the others are forgotten.
        let mut last = vec![None; ENTRIES];
        for (i, &k) in keys.iter().enumerate() {
            last[index(k)] = Some((k, i as u64));
        }
        for (i, &k) in keys.iter().enumerate() {
            let want = (last[index(k)] == Some((k, i as u64))).then_some(i as u64);
            assert_eq!(f.get(k), want);
        }
        assert!(keys.iter().filter(|&&k| f.get(k).is_some()).count() > ENTRIES / 2);
        f.clear();
        assert!(keys.iter().all(|&k| f.get(k).is_none()));
        // Through every generation and the real clear after the last: a key put is found until
        // the next clear.
        for g in 0..2 * GENERATIONS {
            let k = keys[g as usize % keys.len()];
            f.put(k, g);
            assert_eq!(f.get(k), Some(g));
            f.clear();
            assert_eq!(f.get(k), None);
        }
    }
}
