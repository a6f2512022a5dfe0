//! One simulation of a trace file or workload spec, for profiling the simulator alone
//! (`perf record`, `valgrind --tool=cachegrind`): the batches are decoded first, then simulated
//! and timed.
//!
//! `cargo run --release -p xlat-core --example simfile -- TRACE [PRESET [KEY=VALUE ...]]`

use std::time::Instant;
use xlat_core::{presets, sim, Config};
use xlat_trace::{source, Batch};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(trace) = args.first() else {
        eprintln!("usage: simfile TRACE [PRESET [KEY=VALUE ...]]");
        std::process::exit(2);
    };
    let preset = args.get(1).map_or("skylake", String::as_str);
    let sets: Vec<String> = args.iter().skip(2).cloned().collect();
    let text = presets::get(preset).unwrap_or_else(|| {
        eprintln!("simfile: no preset named {preset:?}");
        std::process::exit(2);
    });
    let cfg = Config::from_toml(preset, text, &sets).unwrap_or_else(|e| {
        eprintln!("simfile: {e}");
        std::process::exit(2);
    });
    let mut src = source::open(trace).unwrap_or_else(|e| {
        eprintln!("simfile: {e}");
        std::process::exit(2);
    });
    let mut batches = Vec::new();
    let mut b = Batch::default();
    while src.next_batch(&mut b).expect("decode") {
        batches.push(b.clone());
    }
    let mut s = sim::Simulator::new(&cfg).expect("config");
    let t = Instant::now();
    for b in &batches {
        s.batch(b).expect("simulate");
    }
    let secs = t.elapsed().as_secs_f64();
    let c = s.counters();
    let n = c["accesses"];
    println!(
        "{n} accesses, {} walks, {} faults, {:.3} s, {:.2} M acc/s",
        c["walker.walks"],
        c["os.page_faults"],
        secs,
        n as f64 / secs / 1e6
    );
}
