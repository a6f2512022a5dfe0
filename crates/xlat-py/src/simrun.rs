//! Simulating one trace under several configurations for `xlat._native.simulate`: in parallel
//! (as `xlat_core::simulate_many`, whose scheduling this follows), with one progress bar over
//! all of them, and timing what each run spends opening and reading its input (decoding a trace,
//! generating a workload) apart from the simulation itself, so that the CLI can report both.

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
            *o = Some(match (s.window_error(), s.check_invariants()) {
                (Some(e), _) => Err(Error::Window(e).to_string()),
                (None, Ok(())) => Ok(s.result(spec).to_json()),
                (None, Err(e)) => Err(Error::Invariant(e).to_string()),
            });
        }
    }
    Ok(out.into_iter().map(|o| o.expect("every configuration has an outcome")).collect())
}
