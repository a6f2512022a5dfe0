//! The `[time]` table: which core model turns counts into cycles (`docs/time-model.md`), and the
//! core's parameters the overlap model reads. The presets give each core's window, walkers and
//! buffers; `sim.base_cpi` is the cycles per instruction of both models.

use super::parse::{err, Result};
use serde::{Deserialize, Serialize};

/// The time model of `time.total_cycles`' companion figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TimeModel {
    /// Every latency in series (`time.*`; always reported).
    #[default]
    Additive,
    /// The interval model (`time.overlap.*`, besides the additive figures): needs
    /// `sim.data_through_caches`.
    Overlap,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeConfig {
    #[serde(default)]
    pub model: TimeModel,
    /// Reorder-buffer entries: the instructions that issue while the oldest miss is outstanding.
    #[serde(default = "default_rob")]
    pub rob: u32,
    /// Page walks that can be in flight at once.
    #[serde(default = "default_walkers")]
    pub walkers: u32,
    /// Miss-status holding registers of the L1D (fill buffers): data misses in flight at once.
    #[serde(default = "default_mshrs")]
    pub mshrs: u32,
    /// Store-buffer entries (stores wait there for their data access; full: the core stalls).
    #[serde(default = "default_store_buffer")]
    pub store_buffer: u32,
    /// Write-buffer entries of the memory controller (write-backs; full: the core stalls).
    #[serde(default = "default_write_buffer")]
    pub write_buffer: u32,
    /// Fraction of a load's latency that serialises after the loads outstanding before it
    /// (dependent loads, pointer chasing); 0: every load independent.
    #[serde(default)]
    pub dep: f64,
    /// Cycles of each interval's span the window hides (0: Eyerman et al.'s approximation, an
    /// isolated miss costs its latency).
    #[serde(default)]
    pub hide: f64,
    /// Multiplies each walk's cycles (1: as simulated). A machine that runs in a virtual machine
    /// walks two dimensions (the guest's tables through the host's) where the simulator walks one;
    /// calibration on such a host fits this factor (`docs/time-model.md`).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub walk_scale: f64,
    /// Cycles added to each walk (after `walk_scale`): the host dimension of a walk in a virtual
    /// machine, whose loads the guest's simulated walk does not make; fitted by calibration.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub walk_extra: f64,
    /// More settings of the free parameters (cpi, dep, hide, walkers, walk_scale, walk_extra)
    /// the same run evaluates beside the main one, on the same events (calibration fits them
    /// without simulating again): `time.overlap.grid.N.*`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grid: Vec<TimeVariant>,
}

/// One setting of the overlap model's free parameters (`[[time.grid]]`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeVariant {
    pub cpi: f64,
    #[serde(default)]
    pub dep: f64,
    #[serde(default)]
    pub hide: f64,
    /// (default: the table's `walkers`)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walkers: Option<u32>,
    #[serde(default = "one")]
    pub walk_scale: f64,
    #[serde(default)]
    pub walk_extra: f64,
}

fn one() -> f64 {
    1.0
}
fn is_zero(x: &f64) -> bool {
    *x == 0.0
}
fn is_one(x: &f64) -> bool {
    *x == 1.0
}

fn default_rob() -> u32 {
    224 // Skylake
}
fn default_walkers() -> u32 {
    2 // Skylake: two page walks in flight
}
fn default_mshrs() -> u32 {
    12 // Skylake: 12 L1D fill buffers
}
fn default_store_buffer() -> u32 {
    56 // Skylake
}
fn default_write_buffer() -> u32 {
    32
}

impl Default for TimeConfig {
    fn default() -> Self {
        TimeConfig {
            model: TimeModel::Additive,
            rob: default_rob(),
            walkers: default_walkers(),
            mshrs: default_mshrs(),
            store_buffer: default_store_buffer(),
            write_buffer: default_write_buffer(),
            dep: 0.0,
            hide: 0.0,
            walk_scale: 1.0,
            walk_extra: 0.0,
            grid: Vec::new(),
        }
    }
}

impl TimeConfig {
    /// Whether only the additive model runs (then the table is not serialised: results and
    /// digests of every configuration before the overlap model are unchanged).
    pub fn additive(t: &Option<TimeConfig>) -> bool {
        t.as_ref().is_none_or(|t| t.model == TimeModel::Additive)
    }

    /// The main setting of the free parameters, with base CPI `cpi` (`sim.base_cpi`).
    pub fn main(&self, cpi: f64) -> TimeVariant {
        TimeVariant {
            cpi,
            dep: self.dep,
            hide: self.hide,
            walkers: None,
            walk_scale: self.walk_scale,
            walk_extra: self.walk_extra,
        }
    }

    /// One setting's rules; `at` names it (`time`, or `time.grid[i]`). The main setting's CPI is
    /// `sim.base_cpi`, checked with the `[sim]` table.
    fn check_free(c: &str, at: &str, v: &TimeVariant) -> Result<()> {
        let TimeVariant { dep, hide, walk_scale, walk_extra, .. } = *v;
        if !(0.0..=100_000.0).contains(&walk_extra) {
            return err(format!("config '{c}': {at}.walk_extra = {walk_extra} must be between 0 and 100000 cycles."));
        }
        if !(1.0..=100.0).contains(&walk_scale) {
            return err(format!("config '{c}': {at}.walk_scale = {walk_scale} must be between 1 and 100."));
        }
        if !(0.0..=1.0).contains(&dep) {
            return err(format!("config '{c}': {at}.dep = {dep} must be between 0 and 1."));
        }
        if !(0.0..=100_000.0).contains(&hide) {
            return err(format!("config '{c}': {at}.hide = {hide} must be between 0 and 100000 cycles."));
        }
        Ok(())
    }

    pub fn validate(&self, c: &str, data_through_caches: bool, software: bool) -> Result<()> {
        let counts = [
            ("rob", self.rob, 4096),
            ("walkers", self.walkers, 64),
            ("mshrs", self.mshrs, 1024),
            ("store_buffer", self.store_buffer, 4096),
            ("write_buffer", self.write_buffer, 4096),
        ];
        for (k, v, max) in counts {
            if v == 0 || v > max {
                return err(format!("config '{c}': time.{k} = {v} must be between 1 and {max}."));
            }
        }
        Self::check_free(c, "time", &self.main(0.0))?;
        if self.grid.len() > 256 {
            return err(format!("config '{c}': time.grid has {} settings; at most 256.", self.grid.len()));
        }
        for (i, g) in self.grid.iter().enumerate() {
            Self::check_free(c, &format!("time.grid[{i}]"), g)?;
            if let Some(w) = g.walkers.filter(|w| !(1..=64).contains(w)) {
                return err(format!("config '{c}': time.grid[{i}].walkers = {w} must be between 1 and 64."));
            }
            if !(0.0..=super::bounds::MAX_CPI).contains(&g.cpi) {
                return err(format!(
                    "config '{c}': time.grid[{i}].cpi = {} must be between 0 and {}.",
                    g.cpi,
                    super::bounds::MAX_CPI
                ));
            }
        }
        if self.model == TimeModel::Overlap {
            if !data_through_caches {
                return err(format!(
                    "config '{c}': time.model = \"overlap\" times data misses too; set sim.data_through_caches = true."
                ));
            }
            if software {
                return err(format!(
                    "config '{c}': time.model = \"overlap\" models a hardware walker's overlap; a software-managed TLB (walker.kind = \"software\" or [mach]) runs its handler in series, which the additive model times."
                ));
            }
        }
        Ok(())
    }
}
