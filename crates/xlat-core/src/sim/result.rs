//! What a simulation reports: every counter (each component reports its own through
//! [`Counters`]), the derived figures, the invariants that must hold after every run, and the
//! result object (JSON schema `xlat-sim-result`, `docs/simulator.md`).

use super::engine::{Core, Variant};
use super::epoch;
use super::warm::Warm;
use crate::mmu::walker::MissHandler;
use crate::stats::{Counters, GaugeNames, Named, Sink};
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
    /// `sim.interval_*`'s series: where each row was taken, in `unit`s since the counting
    /// started; the last row is the run's end (a partial interval), so the last row is the
    /// totals. (Epoch controllers' series leave it empty: their rows are at `every` steps.)
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub at: Vec<u64>,
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
    /// `virt.walk_log`: the first walks' loads, one record each ([kind, ...]: see
    /// `mmu/walker/nested.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub walk_log: Option<Vec<[u64; 5]>>,
    /// `sim.contiguity`: the ranges the OS could form at the end of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contiguity: Option<crate::os::Contiguity>,
    /// The accesses of the trace read and counted (absent: the whole trace, all counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<xlat_trace::Window>,
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

    /// Every counter, sorted by name: since the warm-up's end if there was one (gauges as
    /// they are).
    pub(crate) fn counter_map(&self) -> BTreeMap<String, u64> {
        let mut n = Named::default();
        self.report(&mut n);
        let Some(w) = &self.warm else { return n.0 };
        n.0.into_iter()
            .map(|(k, v)| {
                let v = match w.gauges.contains(&k) {
                    true => v,
                    false => v - w.counters.get(&k).copied().unwrap_or(0),
                };
                (k, v)
            })
            .collect()
    }

    /// End the warm-up here: the counts reported from now on start at zero (the state stays).
    pub(crate) fn mark_warmup(&mut self) {
        let mut n = Named::default();
        self.report(&mut n);
        let mut g = GaugeNames::default();
        self.report(&mut g);
        self.warm = Some(Box::new(Warm {
            counters: n.0,
            gauges: g.0,
            levels: self.mmu.level_summary(),
            timing: self.timing.as_ref().map(|t| t.model.clone()),
            miss_profile: self.handler.miss_profile(),
            samples: self.series.len(),
            position: self.series_position(),
        }));
    }

    /// Walks per 2MB region (`sim.miss_profile`), since the warm-up.
    fn miss_profile(&self) -> Option<Vec<(u64, u64)>> {
        let now = self.handler.miss_profile()?;
        let Some(before) = self.warm.as_ref().and_then(|w| w.miss_profile.as_ref()) else { return Some(now) };
        let before: BTreeMap<u64, u64> = before.iter().copied().collect();
        Some(
            now.into_iter()
                .map(|(r, n)| (r, n - before.get(&r).copied().unwrap_or(0)))
                .filter(|&(_, n)| n > 0)
                .collect(),
        )
    }

    /// Derived metrics: MPKI per level, H/M/C, the additive time estimate.
    pub(crate) fn derived(&self, c: &BTreeMap<String, u64>) -> BTreeMap<String, f64> {
        let mut d = BTreeMap::new();
        let instructions = c["instructions"];
        let instr = instructions as f64;
        let per_k = |x: u64| {
            if instr > 0.0 {
                x as f64 * 1000.0 / instr
            } else {
                0.0
            }
        };
        let mut stlb_cycles = 0u64;
        let mut h = 0u64;
        let before = self.warm.as_ref().map(|w| &w.levels);
        for (l, (n, hit, latency)) in self.mmu.level_summary().into_iter().enumerate() {
            let (n0, hit0, _) = before.and_then(|b| b.get(l)).copied().unwrap_or_default();
            let (n, hit) = (n - n0, hit - hit0);
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
        // Nested paging's VM exits (host faults) stall the guest: in the total, apart from C.
        let exits = c.get("virt.vm_exit_cycles").copied().unwrap_or(0);
        if c.contains_key("virt.vm_exit_cycles") {
            d.insert("time.vm_exit_cycles".into(), exits as f64);
        }
        let xlat = (stlb_cycles + cyc + exits) as f64;
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
            match self.warm.as_ref().and_then(|w| w.timing.as_ref()) {
                Some(before) => t.model.since(before).report(instructions, &mut d),
                None => t.model.report(instructions, &mut d),
            }
        }
        self.backend_derived(c, &mut d);
        if let (Some(&p), Some(&h)) = (c.get("mach.stlb.probes"), c.get("mach.stlb.hits")) {
            d.insert("mach.stlb.hit_rate".into(), if p > 0 { h as f64 / p as f64 } else { 0.0 });
        }
        d
    }

    fn backend_derived(&self, c: &BTreeMap<String, u64>, d: &mut BTreeMap<String, f64>) {
        crate::mem::backend::Backend::derived(&self.backend, c, d);
        crate::mem::backend::Backend::time_model(&self.backend, c, c["instructions"], d);
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
        let sampling = self.cfg.sim.interval_accesses > 0 || self.cfg.sim.interval_instructions > 0;
        let series = sampling.then(|| {
            let (unit, every) = if self.cfg.sim.interval_accesses > 0 {
                ("accesses", self.cfg.sim.interval_accesses)
            } else {
                ("instructions", self.cfg.sim.interval_instructions)
            };
            // The samples taken, and the run's end when it is past the last one (the final,
            // partial interval), so that the last row is the totals.
            let mut raw = self.series.clone();
            let mut at = self.series_at.clone();
            let now = self.series_position();
            if at.last().is_none_or(|&last| now > last) {
                raw.push(self.row(&self.name_order()));
                at.push(now);
            }
            let start = self.warm.as_ref().map_or(0, |w| w.position);
            let skip = self.warm.as_ref().map_or(0, |w| w.samples);
            let at = at[skip..].iter().map(|&p| p - start).collect();
            let rows = match &self.warm {
                None => raw,
                // Samples after the warm-up, as counts since it (gauges as they are).
                Some(w) => {
                    let base: Vec<Option<u64>> = counters
                        .keys()
                        .map(|k| (!w.gauges.contains(k)).then(|| w.counters.get(k).copied().unwrap_or(0)))
                        .collect();
                    raw[w.samples..]
                        .iter()
                        .map(|row| row.iter().zip(&base).map(|(&v, b)| v - b.unwrap_or(0)).collect())
                        .collect()
                }
            };
            Series { unit: unit.into(), every, columns: counters.keys().cloned().collect(), rows, at }
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
                let series = Series {
                    unit: unit.into(),
                    every,
                    columns: s.columns.clone(),
                    rows: s.rows.clone(),
                    at: Vec::new(),
                };
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
            miss_profile: self.miss_profile(),
            walk_log: self.handler.walk_log(),
            contiguity: self.cfg.sim.contiguity.then(|| self.os.contiguity()),
            window: None,
            config: self.cfg.to_json(),
        }
    }
}
