//! Seed 003's Observation 1 (section II-B, Figure 1): how many 4KB pages of each 2MB superpage
//! a program touches per interval. One pass over a trace: per interval of `interval`
//! instructions (counted as the simulator counts them), a 512-bit map of the touched 4KB pages
//! of every 2MB-aligned region of the (virtual) address space touched; at the interval's end
//! each region adds one to the histogram at its number of touched pages (1..=512). The CDF over
//! all (superpage, interval) pairs is the figure's curve. Address spaces are not told apart
//! (a multi-process trace's regions of one address mix): for single-process traces.

use super::clock::InstrClock;
use rustc_hash::FxHashMap;
use serde::Serialize;
use xlat_trace::{Batch, EventSource};

/// The histogram of touched 4KB pages per 2MB superpage per interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TouchResult {
    pub interval: u64,
    pub intervals: u64,
    /// `histogram[n]`: (superpage, interval) pairs with `n` touched 4KB pages (`histogram[0]`
    /// is always 0).
    pub histogram: Vec<u64>,
}

impl TouchResult {
    /// (superpage, interval) pairs counted.
    pub fn samples(&self) -> u64 {
        self.histogram.iter().sum()
    }

    /// The CDF: `cdf()[n]` = fraction of pairs with at most `n` touched pages.
    pub fn cdf(&self) -> Vec<f64> {
        let total = self.samples().max(1) as f64;
        let mut acc = 0;
        self.histogram
            .iter()
            .map(|&h| {
                acc += h;
                acc as f64 / total
            })
            .collect()
    }
}

/// The analysis, fed batch by batch.
pub struct Touch {
    interval: u64,
    next: u64,
    clock: InstrClock,
    regions: FxHashMap<u64, [u64; 8]>,
    result: TouchResult,
}

impl Touch {
    /// Intervals of `interval` instructions (at least 1).
    pub fn new(interval: u64) -> Result<Touch, String> {
        if interval == 0 {
            return Err("the interval must be at least 1 instruction, not 0".into());
        }
        Ok(Touch {
            interval,
            next: interval,
            clock: InstrClock::new(),
            regions: FxHashMap::default(),
            result: TouchResult { interval, intervals: 0, histogram: vec![0; 513] },
        })
    }

    fn close(&mut self) {
        if self.regions.is_empty() {
            return;
        }
        for (_, bits) in self.regions.drain() {
            let n: u32 = bits.iter().map(|w| w.count_ones()).sum();
            self.result.histogram[n as usize] += 1;
        }
        self.result.intervals += 1;
    }

    pub fn add(&mut self, b: &Batch) {
        for i in 0..b.len() {
            self.clock.advance(b.tid[i], b.icount[i]);
            if self.clock.instructions > self.next {
                self.close();
                while self.next < self.clock.instructions {
                    self.next += self.interval;
                }
            }
            let va = b.addr[i];
            let page = (va >> 12) & 511;
            self.regions.entry(va >> 21).or_default()[(page >> 6) as usize] |= 1 << (page & 63);
        }
    }

    /// The histogram (the last, partial interval included).
    pub fn finish(mut self) -> TouchResult {
        self.close();
        self.result
    }
}

/// Read a whole source and analyse it; `on_batch` after each batch (progress).
pub fn analyze(
    src: &mut dyn EventSource,
    interval: u64,
    mut on_batch: impl FnMut(&dyn EventSource),
) -> Result<TouchResult, super::AnalysisError> {
    let mut t = Touch::new(interval).map_err(super::AnalysisError::Config)?;
    let mut b = Batch::default();
    while src.next_batch(&mut b)? {
        t.add(&b);
        on_batch(src);
    }
    Ok(t.finish())
}

impl TouchResult {
    /// The result as a JSON object (the histogram and the CDF).
    pub fn to_json(&self) -> String {
        let mut v = serde_json::to_value(self).expect("serialises");
        v["samples"] = self.samples().into();
        v["cdf"] = self.cdf().into();
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xlat_trace::{Access, AccessKind};

    fn load(b: &mut Batch, ic: u64, addr: u64) {
        b.push_access(Access { addr, icount: ic, tid: 1, size: 8, kind: AccessKind::Load });
    }

    #[test]
    fn touched_pages_per_superpage_per_interval_by_hand() {
        // Interval of 4 instructions. Instructions 1-4: superpage A pages 0, 0, 5 and superpage
        // B page 511 -> A: 2 pages, B: 1. Instructions 5-8: A pages 1, 2, 3, 4 -> A: 4.
        // Instruction 9 (the last, partial interval): B page 0 -> B: 1.
        let (a, bb) = (0x4000_0000u64, 0x4020_0000u64);
        let mut b = Batch::default();
        for (ic, addr) in [
            (1, a),
            (2, a + 8),
            (3, a + 5 * 4096),
            (4, bb + 511 * 4096),
            (5, a + 4096),
            (6, a + 2 * 4096),
            (7, a + 3 * 4096),
            (8, a + 4 * 4096),
            (9, bb),
        ] {
            load(&mut b, ic, addr);
        }
        let mut t = Touch::new(4).unwrap();
        t.add(&b);
        let r = t.finish();
        assert_eq!(r.intervals, 3);
        assert_eq!((r.histogram[1], r.histogram[2], r.histogram[4]), (2, 1, 1));
        assert_eq!(r.samples(), 4);
        let cdf = r.cdf();
        assert_eq!((cdf[0], cdf[1], cdf[3], cdf[4], cdf[512]), (0.0, 0.5, 0.75, 1.0, 1.0));
        assert!(Touch::new(0).is_err());
    }
}
