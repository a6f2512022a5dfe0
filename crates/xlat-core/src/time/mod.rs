//! Time: the overlap-aware core model (`time.model = "overlap"`), an interval model in the
//! tradition of Karkhanis & Smith (ISCA 2004) and Eyerman et al.'s interval analysis (TOCS 2009),
//! beside the additive estimate (`sim/result.rs`). The definition and every assumption are in
//! `docs/time-model.md`; this module is the model alone, fed one event per access by the engine
//! and testable by hand.
//!
//! Time advances at `cpi` cycles per instruction. A *miss event* is an access whose latency
//! beyond an L1 hit is not zero: its translation (an STLB hit's latency or a walk's cycles) plus
//! its data access beyond the L1D (with `sim.data_through_caches`). A load's event opens an
//! *interval*; the events of the next `rob` instructions issue while the first is outstanding
//! (the reorder window) and overlap it. Each event would have retired at its issue without
//! misses; the interval's stall is the most any of its events completes after that, minus `hide`
//! cycles (an isolated miss costs its latency, Eyerman et al.). Within an interval:
//! - a walk needs one of `walkers` page walkers, and waits for the first one free; a load's
//!   data access beyond the L1D needs one of `mshrs` miss-status holding registers (the L1D's
//!   fill buffers) likewise;
//! - a fraction `dep` of each load event's latency serialises after the interval's events so far
//!   (pointer chasing: the address comes from an earlier load's value), the rest overlaps;
//! - a store's data latency goes to the store buffer (`store_buffer` entries), which stalls the
//!   core only when full; its translation is on the critical path like a load's;
//! - an instruction fetch's latency stalls the front end in series (no overlap);
//! - a write-back to memory (a dirty line leaving the last level) takes a write-buffer entry
//!   (`write_buffer`) for the memory's write latency, and stalls only when the buffer is full.

use crate::config::{TimeConfig, TimeVariant};
use std::collections::BTreeMap;

/// What one access costs the overlap model: its position and its latencies beyond an L1 hit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Event {
    /// Instructions retired before the access (the stream's position).
    pub pos: f64,
    /// Translation cycles: an STLB hit's latency, or the walk's cycles.
    pub xlat: u64,
    /// Whether the translation was a walk (it needs a page walker).
    pub walk: bool,
    /// Data cycles beyond an L1D hit.
    pub data: u64,
    /// 0 load, 1 store, 2 instruction fetch.
    pub kind: u8,
}

/// Units that serve one request at a time each (walkers, miss registers, buffer entries): when
/// each is busy until. Units not used since the last reset are free without looking.
#[derive(Debug, Clone)]
struct Units {
    busy: Vec<f64>,
    used: usize,
}

impl Units {
    fn new(n: u32) -> Units {
        Units { busy: vec![f64::NEG_INFINITY; n.max(1) as usize], used: 0 }
    }

    fn reset(&mut self) {
        self.used = 0;
    }

    /// Take the first free unit at time `at` for `cycles`: the wait, and when it starts.
    #[inline]
    fn take(&mut self, at: f64, cycles: f64) -> (f64, f64) {
        if self.used < self.busy.len() {
            self.busy[self.used] = at + cycles;
            self.used += 1;
            return (0.0, at);
        }
        let (i, free) =
            self.busy.iter().enumerate().fold((0, f64::INFINITY), |m, (i, &w)| if w < m.1 { (i, w) } else { m });
        let start = at.max(free);
        self.busy[i] = start + cycles;
        (start - at, start)
    }
}

/// The overlap model's state and its tallies (cycles are fractional: `dep` blends).
#[derive(Debug, Clone)]
pub struct Overlap {
    rob: f64,
    cpi: f64,
    walk_scale: f64,
    walk_extra: f64,
    hide: f64,
    dep: f64,
    /// Busy-until times of the page walkers and of the L1D's miss registers, relative to the
    /// open interval's start.
    walkers: Units,
    mshrs: Units,
    /// Busy-until times (absolute) of the store-buffer and write-buffer entries.
    stores: Units,
    writes: Units,
    /// The open interval: its first event's position, when its last event completes (cycles
    /// from the first's issue), and its stall: the most any of its events completes after the
    /// time it would have retired without misses (its issue); `open` false when none is.
    open: bool,
    p0: f64,
    end: f64,
    pen: f64,
    /// Stall cycles so far, by cause.
    stall_intervals: f64,
    stall_fetch: f64,
    stall_stores: f64,
    stall_writes: f64,
    walker_wait: f64,
    mshr_wait: f64,
    /// Counts: intervals closed, events, events in intervals (those that did not open one
    /// overlapped an open one).
    intervals: u64,
    events: u64,
    in_intervals: u64,
}

/// The main setting and the grid's, fed the same events (`time.overlap.*` and
/// `time.overlap.grid.N.*`).
#[derive(Debug, Clone)]
pub struct Models {
    pub main: Overlap,
    pub grid: Vec<Overlap>,
}

impl Models {
    pub fn new(t: &TimeConfig, cpi: f64) -> Models {
        Models { main: Overlap::new(t, &t.main(cpi)), grid: t.grid.iter().map(|g| Overlap::new(t, g)).collect() }
    }

    /// The tallies since `before` (the same models earlier): [`Overlap::since`] of each.
    pub fn since(&self, before: &Models) -> Models {
        Models {
            main: self.main.since(&before.main),
            grid: self.grid.iter().zip(&before.grid).map(|(m, b)| m.since(b)).collect(),
        }
    }

    #[inline]
    pub fn event(&mut self, e: Event) {
        self.main.event(e);
        for m in &mut self.grid {
            m.event(e);
        }
    }

    pub fn writeback(&mut self, pos: f64, cycles: u64) {
        self.main.writeback(pos, cycles);
        for m in &mut self.grid {
            m.writeback(pos, cycles);
        }
    }

    pub fn report(&self, instructions: u64, out: &mut BTreeMap<String, f64>) {
        self.main.report(instructions, out);
        for (i, m) in self.grid.iter().enumerate() {
            out.insert(format!("time.overlap.grid.{i}.total_cycles"), m.total(instructions));
        }
    }
}

impl Overlap {
    /// The model of core `t` with the free parameters of setting `v`.
    pub fn new(t: &TimeConfig, v: &TimeVariant) -> Overlap {
        Overlap {
            rob: t.rob as f64,
            cpi: v.cpi,
            walk_scale: v.walk_scale,
            walk_extra: v.walk_extra,
            hide: v.hide,
            dep: v.dep,
            walkers: Units::new(v.walkers.unwrap_or(t.walkers)),
            mshrs: Units::new(t.mshrs),
            stores: Units::new(t.store_buffer),
            writes: Units::new(t.write_buffer),
            open: false,
            p0: 0.0,
            end: 0.0,
            pen: 0.0,
            stall_intervals: 0.0,
            stall_fetch: 0.0,
            stall_stores: 0.0,
            stall_writes: 0.0,
            walker_wait: 0.0,
            mshr_wait: 0.0,
            intervals: 0,
            events: 0,
            in_intervals: 0,
        }
    }

    /// Stall cycles so far (closed intervals, fetches, full buffers).
    fn stalls(&self) -> f64 {
        self.stall_intervals + self.stall_fetch + self.stall_stores + self.stall_writes
    }

    /// The absolute time at position `pos` with the stalls so far.
    fn now(&self, pos: f64) -> f64 {
        pos * self.cpi + self.stalls()
    }

    /// The open interval's stall: its penalty beyond `hide` (0 when none is open).
    fn pending(&self) -> f64 {
        if self.open {
            (self.pen - self.hide).max(0.0)
        } else {
            0.0
        }
    }

    /// Close the open interval: the core stalls for its penalty beyond `hide`.
    fn close(&mut self) {
        if self.open {
            self.stall_intervals += self.pending();
            self.intervals += 1;
            self.open = false;
        }
    }

    /// One access's latencies (an access with none only moves the position).
    #[inline]
    pub fn event(&mut self, e: Event) {
        if self.open && e.pos >= self.p0 + self.rob {
            self.close();
        }
        if e.xlat == 0 && e.data == 0 {
            return;
        }
        self.events += 1;
        let xlat = if e.walk { e.xlat as f64 * self.walk_scale + self.walk_extra } else { e.xlat as f64 };
        let data = e.data as f64;
        if e.kind == 2 {
            // The front end waits for the fetch: in series, after what is outstanding.
            self.close();
            self.stall_fetch += xlat + data;
            return;
        }
        let (store_data, crit_data) = if e.kind == 1 { (data, 0.0) } else { (0.0, data) };
        if xlat + crit_data > 0.0 {
            self.in_intervals += 1;
            if !self.open {
                self.open = true;
                self.p0 = e.pos;
                self.end = 0.0;
                self.pen = 0.0;
                self.walkers.reset();
                self.mshrs.reset();
            }
            let issue = (e.pos - self.p0) * self.cpi;
            let mut start = issue;
            if e.walk {
                let (wait, at) = self.walkers.take(start, xlat);
                self.walker_wait += wait;
                start = at;
            }
            // The data access after the translation; beyond the L1D it needs a miss register.
            let mut data_at = start + xlat;
            if crit_data > 0.0 {
                let (wait, at) = self.mshrs.take(data_at, crit_data);
                self.mshr_wait += wait;
                data_at = at;
            }
            let independent = data_at + crit_data;
            let chained = self.end + xlat + crit_data;
            let done = if e.kind == 0 { (1.0 - self.dep) * independent + self.dep * chained } else { independent };
            self.end = self.end.max(done);
            // Without misses it would have retired at its issue (base time, counted already).
            self.pen = self.pen.max(done - issue);
        }
        if store_data > 0.0 {
            let at = self.now(e.pos);
            let (stall, _) = self.stores.take(at, store_data);
            self.stall_stores += stall;
        }
    }

    /// A write-back of `cycles` to memory at position `pos` (a dirty line left the last level).
    pub fn writeback(&mut self, pos: f64, cycles: u64) {
        let at = self.now(pos);
        let (stall, _) = self.writes.take(at, cycles as f64);
        self.stall_writes += stall;
    }

    /// The model's figures for `instructions` instructions (`time.overlap.*`).
    pub fn report(&self, instructions: u64, out: &mut BTreeMap<String, f64>) {
        let mut s = self.clone();
        s.close();
        let base = instructions as f64 * self.cpi;
        let total = self.total(instructions);
        let mut put = |k: &str, v: f64| {
            out.insert(format!("time.overlap.{k}"), v);
        };
        put("base_cycles", base);
        put("interval_stall_cycles", s.stall_intervals);
        put("fetch_stall_cycles", s.stall_fetch);
        put("store_buffer_stall_cycles", s.stall_stores);
        put("write_buffer_stall_cycles", s.stall_writes);
        put("walker_wait_cycles", s.walker_wait);
        put("mshr_wait_cycles", s.mshr_wait);
        put("total_cycles", total);
        put("intervals", s.intervals as f64);
        put("events", s.events as f64);
        put("overlapped_events", s.in_intervals.saturating_sub(s.intervals) as f64);
        put("events_per_interval", if s.intervals > 0 { s.in_intervals as f64 / s.intervals as f64 } else { 0.0 });
    }

    /// This model's tallies since `before`, the same model earlier (a window after a warm-up);
    /// the state (the open interval, busy units) is now's.
    pub fn since(&self, before: &Overlap) -> Overlap {
        let mut s = self.clone();
        s.stall_intervals -= before.stall_intervals;
        s.stall_fetch -= before.stall_fetch;
        s.stall_stores -= before.stall_stores;
        s.stall_writes -= before.stall_writes;
        s.walker_wait -= before.walker_wait;
        s.mshr_wait -= before.mshr_wait;
        s.intervals -= before.intervals;
        s.events -= before.events;
        s.in_intervals -= before.in_intervals;
        s
    }

    /// The total cycles of `instructions` instructions (the open interval's stall included).
    pub fn total(&self, instructions: u64) -> f64 {
        instructions as f64 * self.cpi + self.stalls() + self.pending()
    }
}

#[cfg(test)]
mod tests;
