//! What a simulation reports: every counter (each component reports its own through
//! [`Counters`]), the derived figures, the invariants that must hold after every run, and the
//! result object (JSON schema `xlat-sim-result`, `docs/simulator.md`).

use super::engine::{Core, Variant};
use super::epoch;
use crate::mmu::walker::MissHandler;
use crate::stats::{Counters, Named, Sink};
use serde::Serialize;
use std::collections::BTreeMap;

pub const SCHEMA: &str = "xlat-sim-result";
pub const SCHEMA_VERSION: u32 = 1;

/// Counters sampled during the run (cumulative values, one row per sample).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Series {
    pub unit: String,
    pub every: u64,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<u64>>,
}

/// What one simulation produces (`docs/simulator.md` documents every field).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SimResult {
    pub schema: String,
    pub schema_version: u32,
    pub xlat_version: String,
    pub trace: String,
    pub config_name: String,
    pub config_hash: String,
    pub policy: String,
    pub counters: BTreeMap<String, u64>,
    pub derived: BTreeMap<String, f64>,
    pub fragmentation: serde_json::Value,
    pub series: Option<Series>,
    /// Per epoch controller: its counters after each epoch (none without controllers).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub epochs: BTreeMap<String, Series>,
    /// `sim.miss_profile`: (2MB region start address, walks in it), by address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub miss_profile: Option<Vec<(u64, u64)>>,
    /// `sim.contiguity`: the ranges the OS could form at the end of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contiguity: Option<crate::os::Contiguity>,
    pub config: serde_json::Value,
}

impl SimResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("result serialises")
    }
}

impl<V: Variant> Counters for Core<V> {
    /// Every counter, flat, named as a tree (`tlb.l2.hits`, `walker.loads.pd.L2`).
    fn counters(&self, out: &mut dyn Sink) {
        self.report(out)
    }
}

impl<V: Variant> Core<V> {
    pub(crate) fn report(&self, out: &mut dyn Sink) {
        out.put(format_args!("accesses"), self.accesses);
        out.put(format_args!("loads"), self.by_kind[0]);
        out.put(format_args!("stores"), self.by_kind[1]);
        out.put(format_args!("ifetches"), self.by_kind[2]);
        out.put(format_args!("instructions"), self.instructions);
        out.put(format_args!("untranslated"), self.untranslated);
        out.put(format_args!("markers"), self.markers);
        self.mmu.counters(out);
        if self.mmu.has_ranges() {
            self.rwalk.counters(out);
        }
        self.handler.counters(out);
        self.caches.counters(out);
        self.backend.counters(out);
        out.put(format_args!("data.cycles"), self.data_cycles);
        let range = self.mmu.shootdowns();
        out.put(format_args!("shootdowns"), range + self.context_flushes);
        out.put(format_args!("shootdowns.range"), range);
        out.put(format_args!("shootdowns.context_switch"), self.context_flushes);
        crate::stats::Counters::counters(&self.os, out);
        self.obs.counters(out);
        for h in &self.walk_hooks {
            h.counters(out);
        }
        epoch::report(&self.epochs.slots, out);
    }

    /// Every counter, sorted by name.
    pub(crate) fn counter_map(&self) -> BTreeMap<String, u64> {
        let mut n = Named::default();
        self.report(&mut n);
        n.0
    }

    /// Derived metrics: MPKI per level, H/M/C, the additive time estimate.
    pub(crate) fn derived(&self, c: &BTreeMap<String, u64>) -> BTreeMap<String, f64> {
        let mut d = BTreeMap::new();
        let instr = self.instructions as f64;
        let per_k = |x: u64| {
            if instr > 0.0 {
                x as f64 * 1000.0 / instr
            } else {
                0.0
            }
        };
        let mut stlb_cycles = 0u64;
        let mut h = 0u64;
        for (l, (n, hit, latency)) in self.mmu.level_summary().into_iter().enumerate() {
            d.insert(format!("tlb_level{}.mpki", l + 1), per_k(n - hit));
            d.insert(format!("tlb_level{}.hit_rate", l + 1), if n > 0 { hit as f64 / n as f64 } else { 0.0 });
            if l >= 1 {
                h += hit;
                stlb_cycles += hit * latency;
            }
        }
        let walks = c["walker.walks"];
        let cyc = c["walker.cycles"];
        d.insert("H".into(), h as f64);
        d.insert("M".into(), walks as f64);
        d.insert("C".into(), cyc as f64);
        d.insert("walks_pki".into(), per_k(walks));
        d.insert("loads_per_walk".into(), if walks > 0 { c["walker.loads"] as f64 / walks as f64 } else { 0.0 });
        d.insert("cycles_per_walk".into(), if walks > 0 { cyc as f64 / walks as f64 } else { 0.0 });
        let base = instr * self.cfg.sim.base_cpi;
        let xlat = (stlb_cycles + cyc) as f64;
        let total = base + xlat;
        d.insert("time.base_cycles".into(), base);
        d.insert("time.stlb_hit_cycles".into(), stlb_cycles as f64);
        d.insert("time.walk_cycles".into(), cyc as f64);
        d.insert("time.total_cycles".into(), total);
        let share = |x: f64| if total > 0.0 { x / total } else { 0.0 };
        d.insert("time.translation_fraction".into(), share(xlat));
        d.insert("time.walk_share".into(), share(cyc as f64));
        d.insert("time.tlb_hit_share".into(), share(stlb_cycles as f64));
        if let Some(t) = &self.timing {
            t.model.report(self.instructions, &mut d);
        }
        self.backend_derived(&mut d);
        if let (Some(&p), Some(&h)) = (c.get("mach.stlb.probes"), c.get("mach.stlb.hits")) {
            d.insert("mach.stlb.hit_rate".into(), if p > 0 { h as f64 / p as f64 } else { 0.0 });
        }
        d
    }

    fn backend_derived(&self, d: &mut BTreeMap<String, f64>) {
        crate::mem::backend::Backend::derived(&self.backend, d);
        crate::mem::backend::Backend::time_model(&self.backend, self.instructions, d);
    }

    /// Check the invariants that hold after every run; returns the first violated one.
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        self.mmu.check()?;
        let last_misses = self.mmu.last_level_misses();
        if last_misses != self.handler.misses() {
            return Err(format!("walks {} != last-level misses {last_misses}", self.handler.misses()));
        }
        self.handler.check()?;
        self.rwalk.check()?;
        if self.accesses != self.by_kind.iter().sum::<u64>() {
            return Err("accesses != loads + stores + ifetches".into());
        }
        Ok(())
    }

    /// The result of the run so far.
    pub(crate) fn result(&self, trace: &str) -> SimResult {
        let counters = self.counter_map();
        let derived = self.derived(&counters);
        let series = (!self.series.is_empty()).then(|| {
            let (unit, every) = if self.cfg.sim.interval_accesses > 0 {
                ("accesses", self.cfg.sim.interval_accesses)
            } else {
                ("instructions", self.cfg.sim.interval_instructions)
            };
            Series { unit: unit.into(), every, columns: counters.keys().cloned().collect(), rows: self.series.clone() }
        });
        let epochs = self
            .epochs
            .slots
            .iter()
            .map(|s| {
                let (unit, every) = match s.c.period() {
                    super::epoch::Period::Accesses(n) => ("accesses", n),
                    super::epoch::Period::Instructions(n) => ("instructions", n),
                };
                let series = Series { unit: unit.into(), every, columns: s.columns.clone(), rows: s.rows.clone() };
                (s.c.name().to_string(), series)
            })
            .collect();
        SimResult {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            xlat_version: env!("CARGO_PKG_VERSION").into(),
            trace: trace.into(),
            config_name: self.cfg.name.clone(),
            config_hash: self.cfg.hash_hex(),
            policy: self.os.policy_name().into(),
            counters,
            derived,
            fragmentation: serde_json::to_value(self.os.fragmentation()).expect("serialises"),
            series,
            epochs,
            miss_profile: self.handler.miss_profile(),
            contiguity: self.cfg.sim.contiguity.then(|| self.os.contiguity()),
            config: self.cfg.to_json(),
        }
    }
}
