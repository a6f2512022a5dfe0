//! Simulating one trace under several configurations for `xlat._native.simulate`: reading the
//! input once for all of them ([`simulate_broadcast`]) or, when their simulators do not fit in
//! memory together, each reading it itself in parallel ([`simulate_timed`], as
//! `xlat_core::simulate_many`, whose scheduling it follows); with one progress bar, and timing
//! what the input costs (decoding a trace, generating a workload) apart from the simulation
//! itself, so that the CLI can report both.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use xlat_core::sim::SimResult;
use xlat_core::sim::{open_window, Error};
use xlat_core::Config;
use xlat_trace::{Batch, EventSource, Footer, Header, Window};

/// Seconds one run spent: opening its input, waiting for its batches (the input's own work
/// that no other thread hid), and in all.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timing {
    pub open_s: f64,
    pub input_s: f64,
    pub total_s: f64,
}

/// A source that adds up the time its `next_batch` takes.
struct Timed {
    inner: Box<dyn EventSource>,
    secs: f64,
}

impl EventSource for Timed {
    fn header(&self) -> &Header {
        self.inner.header()
    }
    fn next_batch(&mut self, batch: &mut Batch) -> xlat_trace::Result<bool> {
        let t = Instant::now();
        let r = self.inner.next_batch(batch);
        self.secs += t.elapsed().as_secs_f64();
        r
    }
    fn progress(&self) -> (u64, Option<u64>) {
        self.inner.progress()
    }
    fn footer(&self) -> Option<&Footer> {
        self.inner.footer()
    }
}

/// One run's outcome.
type Outcome = Result<(SimResult, Timing), Error>;

/// Simulate `spec` (through `window`) under `cfgs` on up to `threads` threads; with `progress`,
/// one bar over the work of every run. Results (and timings) in configuration order.
pub fn simulate_timed(spec: &str, cfgs: &[Config], threads: usize, progress: bool, window: Window) -> Vec<Outcome> {
    let n = cfgs.len().max(1);
    let pipeline = threads >= 2 * n;
    let threads = threads.clamp(1, n);
    let bar = progress.then(|| {
        let b = crate::progress::bar(1, crate::progress::BAR); // sized when the first run opens its input
        b.set_message(if cfgs.len() == 1 { "simulating".to_string() } else { format!("simulating 0/{n} done") });
        // Drawn every second from the start, also while a workload builds its data on opening.
        b.enable_steady_tick(std::time::Duration::from_secs(1));
        b
    });
    let positions: Vec<AtomicU64> = cfgs.iter().map(|_| AtomicU64::new(0)).collect();
    let done = AtomicUsize::new(0);
    let next = AtomicUsize::new(0);
    let sized = std::sync::atomic::AtomicBool::new(false);
    let out: Vec<Mutex<Option<Outcome>>> = cfgs.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= cfgs.len() {
                    break;
                }
                let t0 = Instant::now();
                let r = open_window(spec, pipeline, window).and_then(|src| {
                    let open_s = t0.elapsed().as_secs_f64();
                    // Every run reads the same input: the bar's length is the first run's total times
                    // the runs, set once (adding each run's total as it opened made the bar go back,
                    // 86% -> 76%, when a run opened after others had progressed).
                    if let (Some(b), Some(total)) = (&bar, src.progress().1) {
                        if !sized.swap(true, Ordering::Relaxed) {
                            b.set_length(total.saturating_mul(cfgs.len() as u64));
                        }
                    }
                    let mut timed = Timed { inner: src, secs: 0.0 };
                    let mut sim = xlat_core::Simulator::new(&cfgs[i])?;
                    sim.set_window(window);
                    let r = xlat_core::sim::run(sim, &mut timed, spec, |src| {
                        if let Some(b) = &bar {
                            positions[i].store(src.progress().0, Ordering::Relaxed);
                            b.set_position(positions.iter().map(|p| p.load(Ordering::Relaxed)).sum());
                        }
                    })?;
                    let timing = Timing { open_s, input_s: open_s + timed.secs, total_s: t0.elapsed().as_secs_f64() };
                    Ok((r, timing))
                });
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                if let (Some(b), true) = (&bar, cfgs.len() > 1) {
                    b.set_message(format!("simulating {d}/{n} done"));
                }
                *out[i].lock().expect("no poisoning") = Some(r);
            });
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    out.into_iter().map(|m| m.into_inner().expect("no poisoning").expect("every config ran")).collect()
}

/// Simulate `spec` under every configuration of `cfgs` at once, decoding the input once: the
/// calling thread reads each batch and hands it (shared, not copied) to up to `threads` worker
/// threads, each feeding it to its share of the simulators (configurations dealt round-robin).
/// Every simulator sees the same batches in the same order as a run of its own, so the results
/// are identical to [`simulate_timed`]'s; what changes is that a trace is decoded (or a workload
/// generated) once instead of once per configuration, and that every simulator is alive for the
/// whole run (the caller checks that they fit in memory together).
///
/// Timing: the input's time (opening and reading) is shared, so each configuration's `open_s`
/// and `input_s` are that time divided by the number of configurations (their sum is the
/// input's time, as the CLI's time line adds them up); `total_s - input_s` is the time its
/// worker spent in its simulator. An input that cannot be opened or read is `Err`; a
/// configuration whose simulator fails is that configuration's `Err`, and the others go on.
pub fn simulate_broadcast(
    spec: &str,
    cfgs: &[Config],
    threads: usize,
    progress: bool,
    window: Window,
) -> Result<Vec<Outcome>, Error> {
    use std::sync::mpsc::sync_channel;
    use std::sync::Arc;

    let n = cfgs.len();
    let workers = threads.clamp(1, n.max(1));
    let bar = progress.then(|| {
        let b = crate::progress::bar(1, crate::progress::BAR);
        b.set_message(format!("simulating {n} configurations, input read once"));
        b.enable_steady_tick(std::time::Duration::from_secs(1));
        b
    });
    let t0 = Instant::now();
    // Each simulator with the seconds spent in it; each configuration's outcome (a result with
    // its simulation's seconds, or why it failed), filled in as the run ends.
    let mut sims: Vec<Slot> = Vec::with_capacity(n);
    let mut out: Vec<Option<Result<(SimResult, f64), Error>>> = Vec::with_capacity(n);
    for c in cfgs {
        match xlat_core::Simulator::new(c) {
            Ok(mut s) => {
                s.set_window(window);
                sims.push(Some((s, 0.0)));
                out.push(None);
            }
            Err(e) => {
                sims.push(None);
                out.push(Some(Err(e)));
            }
        }
    }
    let mut src = open_window(spec, false, window)?;
    if let (Some(b), Some(total)) = (&bar, src.progress().1) {
        b.set_length(total);
    }
    let open_s = t0.elapsed().as_secs_f64();
    // Deal the simulators to the workers: worker w gets configurations w, w + workers, ...
    let mut groups: Vec<Vec<(usize, Slot)>> = (0..workers).map(|_| Vec::new()).collect();
    for (i, s) in sims.into_iter().enumerate() {
        groups[i % workers].push((i, s));
    }
    let mut input_s = open_s;
    let read: Result<(), xlat_trace::Error> = std::thread::scope(|scope| {
        let mut txs = Vec::with_capacity(workers);
        let mut handles = Vec::with_capacity(workers);
        for group in groups.drain(..) {
            let (tx, rx) = sync_channel::<Arc<Batch>>(4);
            txs.push(tx);
            handles.push(scope.spawn(move || {
                let mut group = group;
                let mut failed: Vec<(usize, Error)> = Vec::new();
                for b in rx {
                    for (i, slot) in group.iter_mut() {
                        if let Some((sim, secs)) = slot {
                            let t = Instant::now();
                            let r = sim.batch(&b);
                            *secs += t.elapsed().as_secs_f64();
                            if let Err(e) = r {
                                failed.push((*i, Error::from(e)));
                                *slot = None;
                            }
                        }
                    }
                }
                (group, failed)
            }));
        }
        // Batches go round: one is reused once every worker has let go of it.
        let mut pool: Vec<Arc<Batch>> = Vec::new();
        let r = loop {
            let mut b = match pool.iter().position(|a| Arc::strong_count(a) == 1) {
                Some(k) => pool.swap_remove(k),
                None => Arc::new(Batch::default()),
            };
            let t = Instant::now();
            let more = src.next_batch(Arc::get_mut(&mut b).expect("a pooled batch is unshared"));
            input_s += t.elapsed().as_secs_f64();
            match more {
                Ok(true) => {}
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            }
            if let Some(bar) = &bar {
                bar.set_position(src.progress().0);
            }
            for tx in &txs {
                // A worker only stops receiving when it panicked; its join below reports that.
                let _ = tx.send(b.clone());
            }
            pool.push(b);
        };
        drop(txs);
        for h in handles {
            let (group, failed) = h.join().expect("a simulation worker panicked");
            for (i, e) in failed {
                out[i] = Some(Err(e));
            }
            for (i, slot) in group {
                if let Some((sim, secs)) = slot {
                    out[i] = Some(sim.finish(spec).map(|r| (r, secs)));
                }
            }
        }
        r
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    read?;
    let share = 1.0 / n.max(1) as f64;
    Ok(out
        .into_iter()
        .map(|o| {
            let o = o.expect("every configuration has an outcome");
            o.map(|(r, secs)| {
                let t = Timing { open_s: open_s * share, input_s: input_s * share, total_s: input_s * share + secs };
                (r, t)
            })
        })
        .collect())
}

/// A simulator of [`simulate_broadcast`] and the seconds spent in it; None once it failed.
type Slot = Option<(xlat_core::Simulator, f64)>;

/// One configuration's outcome in [`simulate_shared`]: the result as JSON, or why it failed.
pub type SharedOutcome = Result<String, String>;

/// Simulate `spec` under every configuration of `cfgs` on this thread, decoding the input once:
/// each batch is fed to every simulator in turn (for `xlat sweep`, whose parallelism is one
/// process per worker; with `pipeline`, decoding runs on a thread of its own). A configuration that fails (it cannot be built, memory runs out) is
/// dropped with its error; the others go on. An input that cannot be read fails them all.
/// Results are identical to separate runs: each simulator sees the same batches in the same order.
pub fn simulate_shared(
    spec: &str,
    cfgs: &[Config],
    pipeline: bool,
    window: Window,
) -> Result<Vec<SharedOutcome>, Error> {
    let mut sims: Vec<Option<xlat_core::Simulator>> = Vec::with_capacity(cfgs.len());
    let mut out: Vec<Option<SharedOutcome>> = Vec::with_capacity(cfgs.len());
    for c in cfgs {
        match xlat_core::Simulator::new(c) {
            Ok(mut s) => {
                s.set_window(window);
                sims.push(Some(s));
                out.push(None);
            }
            Err(e) => {
                sims.push(None);
                out.push(Some(Err(e.to_string())));
            }
        }
    }
    let mut src = open_window(spec, pipeline, window)?;
    let mut b = Batch::default();
    while src.next_batch(&mut b)? {
        for (sim, o) in sims.iter_mut().zip(out.iter_mut()) {
            if let Some(s) = sim {
                if let Err(e) = s.batch(&b) {
                    *o = Some(Err(Error::from(e).to_string()));
                    *sim = None;
                }
            }
        }
    }
    for (sim, o) in sims.iter().zip(out.iter_mut()) {
        if let Some(s) = sim {
            *o = Some(s.finish(spec).map(|r| r.to_json()).map_err(|e| e.to_string()));
        }
    }
    Ok(out.into_iter().map(|o| o.expect("every configuration has an outcome")).collect())
}
