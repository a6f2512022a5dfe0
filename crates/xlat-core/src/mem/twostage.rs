//! Rainbow's two-stage hot-page identification at the memory controller (seed 003 section
//! III-B, Figure 3): in each interval,
//!
//! 1. every NVM reference (a last-level miss read or a write-back) adds to its 2MB superpage's
//!    2-byte counter, a write `write_weight` times more than a read (saturating at 65,535);
//! 2. the 4KB pages of the N superpages that were hottest in the *previous* interval (stage 1's
//!    top N) are counted one by one, in counters of 15 bits and an overflow flag (history-based:
//!    a superpage's pages are watched in the interval after it was hot).
//!
//! At the end of an interval, [`TwoStage::take`] hands the stage-2 counts to the migration
//! controller (`designs/rainbow.rs`), picks the next top N from stage 1 and starts both again. The
//! paper keeps one 2-byte counter per 4KB page; here each page has two (reads and writes), so
//! that Equation 1's terms apply as written (`docs/rainbow.md`). Write-backs to DRAM frames are
//! remembered too: they make a cached page dirty (the DRAM lists).

/// A 15-bit counter with an overflow flag in the top bit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counter15(u16);

impl Counter15 {
    const MAX: u16 = 0x7fff;
    const OVERFLOW: u16 = 0x8000;

    /// One more; at 32,767 the flag is set and the count stays.
    #[inline]
    pub fn bump(&mut self) {
        if self.0 & Self::MAX == Self::MAX {
            self.0 |= Self::OVERFLOW;
        } else {
            self.0 += 1;
        }
    }
    pub fn count(self) -> u64 {
        (self.0 & Self::MAX) as u64
    }
    pub fn overflowed(self) -> bool {
        self.0 & Self::OVERFLOW != 0
    }
}

/// One 4KB page's stage-2 count: (reads, writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmallCount {
    /// The NVM frame.
    pub pfn: u64,
    pub reads: u64,
    pub writes: u64,
    /// Either counter overflowed (the page is certainly hot).
    pub overflow: bool,
}

/// The counters.
#[derive(Debug, Clone)]
pub struct TwoStage {
    /// First NVM frame and the number of NVM superpages.
    nvm_base: u64,
    write_weight: u16,
    /// Stage 1: per NVM superpage; the superpages counted this interval.
    superpages: Vec<u16>,
    touched: Vec<u32>,
    /// Stage 2: per NVM superpage, 1 + its slot among the monitored ones (0: not monitored).
    slot_of: Vec<u32>,
    /// Per slot: the superpage and its 512 (reads, writes) counters.
    monitored: Vec<u32>,
    small: Vec<[Counter15; 2]>,
    /// Per DRAM frame (below `nvm_base`): written back this interval; and their list.
    dram_bits: Vec<u64>,
    dram_written: Vec<u64>,
    /// Counters that overflowed, over the run.
    pub overflows: u64,
    /// 4KB pages with a stage-2 count, over the run.
    pub pages_counted: u64,
}

impl TwoStage {
    /// Counters for NVM frames `nvm_base..frames` (DRAM below), writes weighted `write_weight`.
    pub fn new(nvm_base: u64, frames: u64, write_weight: u64) -> TwoStage {
        let sps = (frames.saturating_sub(nvm_base)).div_ceil(512) as usize;
        TwoStage {
            nvm_base,
            write_weight: write_weight.min(u16::MAX as u64) as u16,
            superpages: vec![0; sps],
            touched: Vec::new(),
            slot_of: vec![0; sps],
            monitored: Vec::new(),
            small: Vec::new(),
            dram_bits: vec![0; (nvm_base as usize).div_ceil(64)],
            dram_written: Vec::new(),
            overflows: 0,
            pages_counted: 0,
        }
    }

    /// An NVM reference to frame `pfn` (`write`: a write-back), or a write-back to a DRAM frame.
    #[inline]
    pub fn count(&mut self, pfn: u64, write: bool) {
        if pfn < self.nvm_base {
            if write {
                let (w, b) = ((pfn / 64) as usize, pfn % 64);
                if self.dram_bits[w] >> b & 1 == 0 {
                    self.dram_bits[w] |= 1 << b;
                    self.dram_written.push(pfn);
                }
            }
            return;
        }
        let sp = ((pfn - self.nvm_base) >> 9) as usize;
        let c = &mut self.superpages[sp];
        if *c == 0 {
            self.touched.push(sp as u32);
        }
        *c = c.saturating_add(if write { self.write_weight } else { 1 });
        let slot = self.slot_of[sp];
        if slot != 0 {
            let k = (slot as usize - 1) * 512 + (pfn & 511) as usize;
            let c = &mut self.small[k][write as usize];
            let before = c.overflowed();
            c.bump();
            self.overflows += (!before && c.overflowed()) as u64;
        }
    }

    /// Forget that DRAM frame `pfn` was written back this interval (its copy left DRAM).
    pub fn forget_dram(&mut self, pfn: u64) {
        let (w, b) = ((pfn / 64) as usize, pfn % 64);
        if self.dram_bits[w] >> b & 1 != 0 {
            self.dram_bits[w] &= !(1 << b);
            self.dram_written.retain(|&f| f != pfn);
        }
    }

    /// The superpages monitored at 4KB granularity now (their first NVM frames).
    pub fn monitored(&self) -> Vec<u64> {
        self.monitored.iter().map(|&sp| self.nvm_base + ((sp as u64) << 9)).collect()
    }

    /// The end of an interval: the stage-2 counts of the 4KB pages counted (by frame), and the
    /// DRAM frames written back; the next `top` superpages to monitor are the interval's
    /// hottest by stage-1 count (ties: the lower superpage); every counter starts again at zero.
    pub fn take(&mut self, top: usize) -> (Vec<SmallCount>, Vec<u64>) {
        let mut small = Vec::new();
        for (i, &sp) in self.monitored.iter().enumerate() {
            for p in 0..512 {
                let [r, w] = self.small[i * 512 + p];
                if r.count() + w.count() > 0 {
                    let pfn = self.nvm_base + ((sp as u64) << 9) + p as u64;
                    let overflow = r.overflowed() || w.overflowed();
                    small.push(SmallCount { pfn, reads: r.count(), writes: w.count(), overflow });
                }
            }
            self.slot_of[sp as usize] = 0;
        }
        self.pages_counted += small.len() as u64;
        let mut hot: Vec<(u16, u32)> = self.touched.iter().map(|&sp| (self.superpages[sp as usize], sp)).collect();
        hot.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        hot.truncate(top);
        for &sp in &self.touched {
            self.superpages[sp as usize] = 0;
        }
        self.touched.clear();
        self.monitored = hot.iter().map(|h| h.1).collect();
        for (i, &sp) in self.monitored.iter().enumerate() {
            self.slot_of[sp as usize] = i as u32 + 1;
        }
        self.small.clear();
        self.small.resize(self.monitored.len() * 512, [Counter15::default(); 2]);
        let dram = std::mem::take(&mut self.dram_written);
        for &f in &dram {
            self.dram_bits[(f / 64) as usize] &= !(1 << (f % 64));
        }
        (small, dram)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_of_15_bits_overflows_once_and_stays() {
        let mut c = Counter15::default();
        for _ in 0..32_767 {
            c.bump();
        }
        assert_eq!((c.count(), c.overflowed()), (32_767, false));
        c.bump();
        c.bump();
        assert_eq!((c.count(), c.overflowed()), (32_767, true));
    }

    #[test]
    fn two_stages_by_hand() {
        // DRAM frames 0..1024, NVM 1024..1024 + 4 superpages; writes weigh 3.
        let mut t = TwoStage::new(1024, 1024 + 4 * 512, 3);
        // Interval 1: superpage 0 (frames 1024..) 5 reads; superpage 2: 1 read + 2 writes (7);
        // superpage 1: 2 reads. Nothing is monitored yet: no stage-2 counts.
        for _ in 0..5 {
            t.count(1024 + 7, false);
        }
        t.count(1024 + 1024 + 3, false);
        t.count(1024 + 1024 + 3, true);
        t.count(1024 + 1024 + 4, true);
        t.count(1024 + 512, false);
        t.count(1024 + 512, false);
        t.count(5, true);
        t.count(5, true);
        t.count(6, false);
        let (small, dram) = t.take(2);
        assert!(small.is_empty());
        assert_eq!(dram, vec![5], "DRAM frame 5 was written back (once listed); 6 only read");
        // Top 2: superpage 2 (7), superpage 0 (5).
        assert_eq!(t.monitored(), vec![1024 + 1024, 1024]);
        // Interval 2: their pages are counted one by one; superpage 1's are not.
        t.count(1024 + 1024 + 3, true);
        t.count(1024 + 9, false);
        t.count(1024 + 9, false);
        t.count(1024 + 512 + 1, false);
        let (small, _) = t.take(1);
        let want = [
            SmallCount { pfn: 1024 + 1024 + 3, reads: 0, writes: 1, overflow: false },
            SmallCount { pfn: 1024 + 9, reads: 2, writes: 0, overflow: false },
        ];
        assert_eq!(small, want);
        // Interval 2's stage 1: superpage 0 (2), 2 (3), 1 (1): the top one is superpage 2.
        assert_eq!(t.monitored(), vec![1024 + 1024]);
        assert_eq!(t.pages_counted, 2);
    }
}
