//! Lite (seed 000 section 5.4, Algorithm 5.1): an epoch controller that resizes each L1 page
//! TLB by way-disabling. Every `lite.interval` instructions it reads the actual L1 misses of
//! the interval (first-level lookups that went on to the L2 TLB) and each TLB's LRU-distance
//! counters (counted by the Lite loop, [`Mmu::lru_distance`]), then:
//!
//! - with probability `lite.probability` (a generator seeded from `sim.seed`) it activates
//!   every way of every L1 TLB;
//! - else if the MPKI grew by at least the threshold from the reference (`lite.reference`: the
//!   previous interval's MPKI, as the section's prose says, by default; or the lowest seen, as
//!   the pseudocode's last lines read literally), it does the same;
//! - else, for each TLB, it adds to the potential misses the hits that halving its active ways
//!   would have lost (counter `log2(ways)`, then the next below...) and halves the ways while
//!   the potential MPKI stays within the threshold of the actual MPKI (the potential misses
//!   accumulate over the TLBs, as in the pseudocode).
//!
//! Two readings where the pseudocode is silent on zero MPKI: a TLB shrinks when the potential
//! MPKI exceeds the actual by at most the threshold (so a TLB with no hits at all shrinks
//! under a relative threshold with no misses), and growth triggers only if the MPKI grew.
//!
//! Its counters, per TLB: the active ways, and the lookups and fills made during the intervals
//! at each way count (`lookups_w4`, `lookups_w2`, `lookups_w1`: Table 5.5); a time series row
//! per interval (`epochs.lite`). Lookups after the last interval are not in them (the TLB's
//! own counters minus their sum, at the final way count). For the leakage of each interval at
//! its way count (xlat.energy), the run's `instructions` and translation cycles (`xlat_cycles`:
//! the TLB-hit cycles of the levels past the first plus the walk cycles, the additive time
//! estimate without its base) at the end of the interval.
//!
//! The design's entry in the wing ([`DESIGN`]) comes first, then its parts.

use super::design::{no_hooks, Claims, Design};
use crate::config::{Config, LiteConfig, LiteReference, LiteThreshold};
use crate::mmu::Mmu;
use crate::os::SimError;
use crate::sim::epoch::{EpochController, EpochCx, Period};
use crate::stats::{Counters, Sink};

pub const DESIGN: Design = Design {
    name: "[lite]",
    claim: "first-level hits counted by LRU distance",
    present: |c| c.lite.is_some(),
    claims: |_| Claims { lru_distance: true, ..Claims::default() },
    controllers: |c| {
        let l = c.lite.as_ref().expect("present");
        vec![Box::new(Lite::new(c, l)) as Box<dyn EpochController>]
    },
    walk_hooks: no_hooks,
};

/// One resized TLB.
#[derive(Debug, Clone)]
struct Resized {
    name: String,
    /// Index in the MMU's TLBs.
    index: usize,
    ways_max: usize,
    ways: usize,
    /// LRU-distance counters, lookups and fills at the start of the interval.
    dist0: [u64; 5],
    lookups0: u64,
    fills0: u64,
    /// Lookups and fills of the intervals run at `ways_max >> k` ways, by `k`.
    lookups: Vec<u64>,
    fills: Vec<u64>,
}

/// The controller.
pub struct Lite {
    cfg: LiteConfig,
    tlbs: Vec<Resized>,
    rng: u64,
    instructions0: u64,
    misses0: u64,
    /// Translation cycles at the end of the last interval (the time estimate's TLB-hit and
    /// walk cycles).
    xlat_cycles: u64,
    /// Algorithm 5.1's previous MPKI: the last interval's, or the lowest seen
    /// (`lite.reference`).
    previous: f64,
    /// Intervals that ended with every way activated at random, for MPKI growth, and ways
    /// halved.
    random_enables: u64,
    growth_enables: u64,
    halvings: u64,
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Lite {
    /// The controller of `cfg.lite` over the level-1 page TLBs with more than one way.
    pub fn new(cfg: &Config, lite: &LiteConfig) -> Lite {
        let tlbs = cfg
            .tlb
            .iter()
            .enumerate()
            .filter(|(_, t)| t.level == 1 && t.ways > 1)
            .map(|(index, t)| {
                let steps = t.ways.trailing_zeros() as usize + 1;
                Resized {
                    name: t.name.clone(),
                    index,
                    ways_max: t.ways as usize,
                    ways: t.ways as usize,
                    dist0: [0; 5],
                    lookups0: 0,
                    fills0: 0,
                    lookups: vec![0; steps],
                    fills: vec![0; steps],
                }
            })
            .collect();
        Lite {
            cfg: lite.clone(),
            tlbs,
            rng: cfg.sim.seed ^ 0x4c69_7465, // "Lite"
            instructions0: 0,
            misses0: 0,
            xlat_cycles: 0,
            previous: f64::INFINITY,
            random_enables: 0,
            growth_enables: 0,
            halvings: 0,
        }
    }

    /// The threshold epsilon over MPKI `reference`.
    fn eps(&self, reference: f64) -> f64 {
        match self.cfg.threshold_kind {
            LiteThreshold::Relative => self.cfg.threshold * reference,
            LiteThreshold::Absolute => self.cfg.threshold,
        }
    }

    fn set_ways(mmu: &mut Mmu, t: &mut Resized, ways: usize) -> Result<(), SimError> {
        if ways != t.ways {
            mmu.set_active_ways(&t.name, ways).map_err(SimError::Invalid)?;
            t.ways = ways;
        }
        Ok(())
    }

    /// The decision at the end of an interval (Algorithm 5.1).
    fn decide(&mut self, mmu: &mut Mmu, interval_instructions: u64, misses: u64) -> Result<(), SimError> {
        let kilo = interval_instructions.max(1) as f64 / 1000.0;
        let actual = misses as f64 / kilo;
        let draw = (splitmix(&mut self.rng) >> 11) as f64 / (1u64 << 53) as f64;
        let all = if draw < self.cfg.probability {
            self.random_enables += 1;
            true
        } else if actual > self.previous && actual - self.previous >= self.eps(self.previous) {
            self.growth_enables += 1;
            true
        } else {
            false
        };
        let mut potential = misses;
        let eps = self.eps(actual);
        for t in &mut self.tlbs {
            let dist = mmu.lru_distance(t.index);
            if all {
                let max = t.ways_max;
                Self::set_ways(mmu, t, max)?;
                continue;
            }
            let mut ways = t.ways;
            for i in (1..=t.ways.trailing_zeros() as usize).rev() {
                potential += dist[i] - t.dist0[i];
                if potential as f64 / kilo - actual <= eps {
                    ways /= 2;
                    self.halvings += 1;
                } else {
                    potential -= dist[i] - t.dist0[i];
                    break;
                }
            }
            Self::set_ways(mmu, t, ways)?;
        }
        if self.cfg.reference == LiteReference::Previous || self.previous > actual {
            self.previous = actual;
        }
        Ok(())
    }
}

impl Counters for Lite {
    fn counters(&self, out: &mut dyn Sink) {
        out.put(format_args!("random_enables"), self.random_enables);
        out.put(format_args!("growth_enables"), self.growth_enables);
        out.put(format_args!("halvings"), self.halvings);
        out.put(format_args!("instructions"), self.instructions0);
        out.put(format_args!("xlat_cycles"), self.xlat_cycles);
        for t in &self.tlbs {
            out.gauge(format_args!("{}.ways", t.name), t.ways as u64);
            for (k, (&l, &f)) in t.lookups.iter().zip(&t.fills).enumerate() {
                out.put(format_args!("{}.lookups_w{}", t.name, t.ways_max >> k), l);
                out.put(format_args!("{}.fills_w{}", t.name, t.ways_max >> k), f);
            }
        }
    }
}

impl EpochController for Lite {
    fn name(&self) -> &str {
        "lite"
    }

    fn period(&self) -> Period {
        Period::Instructions(self.cfg.interval)
    }

    fn run(&mut self, cx: &mut EpochCx<'_>) -> Result<(), SimError> {
        // The interval's lookups and fills, at the ways it ran with.
        for t in &mut self.tlbs {
            let s = cx.mmu.tlb_stats(t.index);
            let k = (t.ways_max / t.ways).trailing_zeros() as usize;
            t.lookups[k] += s.accesses - t.lookups0;
            t.fills[k] += s.fills - t.fills0;
        }
        let misses = cx.mmu.first_level_misses();
        self.decide(cx.mmu, cx.instructions - self.instructions0, misses - self.misses0)?;
        // The next interval starts here (after the resizing's invalidations).
        for t in &mut self.tlbs {
            t.dist0 = cx.mmu.lru_distance(t.index);
            let s = cx.mmu.tlb_stats(t.index);
            (t.lookups0, t.fills0) = (s.accesses, s.fills);
        }
        (self.instructions0, self.misses0) = (cx.instructions, misses);
        // As the time estimate counts them (sim/result.rs): hits past the first level at their
        // level's latency, plus the walks.
        let hits: u64 = cx.mmu.level_summary().iter().skip(1).map(|&(_, hit, lat)| hit * lat).sum();
        self.xlat_cycles = hits + cx.walk_cycles;
        Ok(())
    }
}
