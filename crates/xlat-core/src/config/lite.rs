//! The `[lite]` table: Lite's way-disabling controller of the L1 page TLBs (seed 000 section
//! 5.4, Algorithm 5.1; designs/lite.rs).

use super::parse::{err, Result};
use super::structures::TlbConfig;
use crate::array::Replacement;
use serde::{Deserialize, Serialize};

/// How the threshold on MPKI growth is read (seed 000 section 5.4.2, "Threshold").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LiteThreshold {
    /// A fraction of the reference MPKI (TLB_Lite: 12.5%).
    #[default]
    Relative,
    /// MPKI (RMM_Lite: 0.1).
    Absolute,
}

/// The MPKI an interval's is compared with to detect degradation (seed 000 section 5.4.2,
/// "Activating ways").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LiteReference {
    /// The previous interval's actual MPKI (the section's prose: "Lite records the actual MPKI
    /// of the previous interval, and compares it to the actual MPKI of the current interval").
    #[default]
    Previous,
    /// The lowest actual MPKI of the run so far (Algorithm 5.1's last lines read literally:
    /// "if (previous mpki > actual mpki) then previous mpki = actual mpki"): one interval of
    /// near-zero MPKI makes every later one a degradation.
    Minimum,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiteConfig {
    /// The interval, in instructions.
    #[serde(default = "default_interval")]
    pub interval: u64,
    /// The threshold epsilon on MPKI growth (a fraction if `threshold_kind` is relative).
    #[serde(default = "default_threshold")]
    pub threshold: f64,
    #[serde(default)]
    pub threshold_kind: LiteThreshold,
    /// The probability of activating every way at the end of an interval (0: never, the
    /// ablation of random re-activation).
    #[serde(default = "default_probability")]
    pub probability: f64,
    /// What degradation is measured against.
    #[serde(default)]
    pub reference: LiteReference,
}

fn default_interval() -> u64 {
    1_000_000 // seed 000 section 5.6.2: 1M to 10M instructions tried, the shortest did best
}
fn default_threshold() -> f64 {
    0.125 // seed 000 section 5.5: 12.5% relative increase in MPKI for TLB_Lite
}
fn default_probability() -> f64 {
    1.0 / 128.0 // seed 000 section 5.6.2: 1/8 to 1/128 tried, the lowest did best
}

impl Default for LiteConfig {
    fn default() -> Self {
        LiteConfig {
            interval: default_interval(),
            threshold: default_threshold(),
            threshold_kind: LiteThreshold::Relative,
            probability: default_probability(),
            reference: LiteReference::Previous,
        }
    }
}

impl LiteConfig {
    /// The rules serde's types do not check, one sentence each (`c` the configuration's name,
    /// `radix` whether its walker is the radix one, `tlbs` its TLBs).
    pub fn validate(&self, c: &str, radix: bool, tlbs: &[TlbConfig]) -> Result<()> {
        if self.interval == 0 {
            return err(format!("config '{c}': lite.interval = 0 must be at least 1 instruction."));
        }
        if !(self.threshold >= 0.0 && self.threshold.is_finite()) {
            return err(format!("config '{c}': lite.threshold = {} must be a number >= 0.", self.threshold));
        }
        if !(self.probability >= 0.0 && self.probability <= 1.0) {
            return err(format!("config '{c}': lite.probability = {} must lie in [0, 1].", self.probability));
        }
        if !radix {
            return err(format!("config '{c}': [lite] needs walker.kind = \"radix\"."));
        }
        for t in tlbs.iter().filter(|t| t.level == 1 && t.ways > 1) {
            if !t.ways.is_power_of_two() || t.ways > 16 || t.replacement != Replacement::Lru {
                return err(format!(
                    "config '{c}': [lite] resizes the L1 TLBs by halving their ways under LRU; tlb '{}' has {} ways and {:?} replacement (needs a power of two up to 16 ways and LRU).",
                    t.name, t.ways, t.replacement
                ));
            }
        }
        Ok(())
    }
}
