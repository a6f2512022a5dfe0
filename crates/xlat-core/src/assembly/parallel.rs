//! Several configurations over one trace, on several threads.

use super::simulator::{open_source, simulate, Error};
use crate::config::Config;
use crate::sim::result::SimResult;

/// Simulate `trace` (a path or workload spec) under each configuration, on up to `threads`
/// threads; results in configuration order, identical for any thread count. When there are at
/// least twice as many threads as configurations, each simulation also gets a decoding thread.
pub fn simulate_many(trace: &str, cfgs: &[Config], threads: usize) -> Vec<Result<SimResult, Error>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let out: Vec<Mutex<Option<Result<SimResult, Error>>>> = cfgs.iter().map(|_| Mutex::new(None)).collect();
    let pipeline = threads >= 2 * cfgs.len().max(1);
    let threads = threads.clamp(1, cfgs.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= cfgs.len() {
                    break;
                }
                let r =
                    open_source(trace, pipeline).and_then(|mut src| simulate(src.as_mut(), trace, &cfgs[i], |_| {}));
                *out[i].lock().expect("no poisoning") = Some(r);
            });
        }
    });
    out.into_iter().map(|m| m.into_inner().expect("no poisoning").expect("every config ran")).collect()
}
