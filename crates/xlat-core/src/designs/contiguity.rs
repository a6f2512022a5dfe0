//! Contiguity per interval (RMM, seed 000 Tables 4.2 and 4.7 over time): an epoch controller
//! that measures, every `sim.contiguity_every` instructions, the ranges the OS could form
//! ([`crate::os::Contiguity`], as `sim.contiguity` does once at the end) and keeps the summary
//! of each measurement as a row of `epochs.contiguity`. It only reads the OS model.
//!
//! The design's entry in the wing ([`DESIGN`]) comes first, then its parts.

use super::design::{no_hooks, Claims, Design};
use crate::os::{Contiguity, SimError};
use crate::sim::epoch::{EpochController, EpochCx, Period};
use crate::stats::{Counters, Sink};

pub const DESIGN: Design = Design {
    name: "sim.contiguity_every",
    claim: "contiguity epochs",
    present: |c| c.sim.contiguity_every > 0,
    claims: |_| Claims::default(),
    controllers: |c| {
        let s = &c.sim;
        let e = ContiguityEpochs::new(s.contiguity_every, s.contiguity_threshold);
        vec![Box::new(e) as Box<dyn EpochController>]
    },
    walk_hooks: no_hooks,
};

/// The figures of one measurement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContiguitySummary {
    /// Mapped 4KB pages (a huge page counts all its 4KB pages).
    pub pages: u64,
    /// Leaf translation entries by page size.
    pub entries_4k: u64,
    pub entries_2m: u64,
    pub entries_1g: u64,
    /// Maximal runs of virtually and physically contiguous pages (ranges with no threshold).
    pub runs: u64,
    /// Runs of at least the threshold, and the pages they map.
    pub ranges: u64,
    pub range_pages: u64,
    /// The largest run (pages).
    pub largest: u64,
    /// The fewest runs, largest first, that map at least 99% of the pages (Table 4.7's "ranges
    /// to cover 99%").
    pub runs_99: u64,
}

impl ContiguitySummary {
    /// The summary of `c` with ranges of at least `threshold` pages.
    pub fn of(c: &Contiguity, threshold: u64) -> ContiguitySummary {
        let mut s = ContiguitySummary {
            pages: c.pages,
            entries_4k: c.entries_4k,
            entries_2m: c.entries_2m,
            entries_1g: c.entries_1g,
            runs: c.ranges(),
            largest: c.runs.first().map_or(0, |r| r.0),
            ..ContiguitySummary::default()
        };
        // (`runs` is largest first.) The goal is ceil(0.99 x pages).
        let goal = (99 * c.pages).div_ceil(100);
        let mut covered = 0;
        for &(size, n) in &c.runs {
            if size >= threshold {
                s.ranges += n;
                s.range_pages += size * n;
            }
            if covered < goal {
                let need = (goal - covered).div_ceil(size).min(n);
                s.runs_99 += need;
                covered += need * size;
            }
        }
        s
    }
}

/// The controller.
pub struct ContiguityEpochs {
    every: u64,
    /// Range threshold in pages.
    threshold: u64,
    last: ContiguitySummary,
}

impl ContiguityEpochs {
    /// Every `every` instructions, ranges of at least `threshold` pages.
    pub fn new(every: u64, threshold: u64) -> ContiguityEpochs {
        ContiguityEpochs { every, threshold, last: ContiguitySummary::default() }
    }
}

impl Counters for ContiguityEpochs {
    fn counters(&self, out: &mut dyn Sink) {
        let s = &self.last;
        out.gauge(format_args!("pages"), s.pages);
        out.gauge(format_args!("entries_4k"), s.entries_4k);
        out.gauge(format_args!("entries_2m"), s.entries_2m);
        out.gauge(format_args!("entries_1g"), s.entries_1g);
        out.gauge(format_args!("runs"), s.runs);
        out.gauge(format_args!("ranges"), s.ranges);
        out.gauge(format_args!("range_pages"), s.range_pages);
        out.gauge(format_args!("largest"), s.largest);
        out.gauge(format_args!("runs_99"), s.runs_99);
    }
}

impl EpochController for ContiguityEpochs {
    fn name(&self) -> &str {
        "contiguity"
    }

    fn period(&self) -> Period {
        Period::Instructions(self.every)
    }

    fn run(&mut self, cx: &mut EpochCx<'_>) -> Result<(), SimError> {
        self.last = ContiguitySummary::of(&cx.os.contiguity(), self.threshold);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_ranges_above_the_threshold_and_the_runs_that_map_99_percent() {
        // Runs: one of 1000 pages, two of 500, 30 of 1 (2030 pages). 99% = ceil(2009.7) = 2010
        // pages: 1000 + 500 + 500 + 10 single pages = 13 runs.
        let c = Contiguity {
            spaces: 1,
            vmas: 3,
            pages: 2030,
            entries_4k: 2030,
            runs: vec![(1000, 1), (500, 2), (1, 30)],
            ..Contiguity::default()
        };
        let s = ContiguitySummary::of(&c, 8);
        assert_eq!(
            s,
            ContiguitySummary {
                pages: 2030,
                entries_4k: 2030,
                entries_2m: 0,
                entries_1g: 0,
                runs: 33,
                ranges: 3,
                range_pages: 2000,
                largest: 1000,
                runs_99: 13,
            }
        );
        // A threshold of 501 keeps the largest only; nothing mapped: all zero.
        assert_eq!((ContiguitySummary::of(&c, 501).ranges, ContiguitySummary::of(&c, 501).range_pages), (1, 1000));
        assert_eq!(ContiguitySummary::of(&Contiguity::default(), 8), ContiguitySummary::default());
    }
}
