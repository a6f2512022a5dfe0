//! One simulation of a trace file or workload spec, for profiling the simulator alone
//! (`perf record`, `valgrind --tool=cachegrind`): the batches are decoded first, then simulated
//! and timed. With `XLAT_SIMFILE_WARM=1` they are simulated once untimed first (the timed pass
//! then runs warm: every page mapped), and the figures are those of the timed pass.
//!
//! `cargo run --release -p xlat-core --example simfile -- TRACE [PRESET|CONFIG.toml [KEY=VALUE ...]]`
//!
//! The timed pass is one function, `timed_pass`, so that cachegrind can count it alone:
//! `valgrind --tool=cachegrind --cache-sim=no --toggle-collect='*timed_pass*' simfile ...`.

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
    // (A path ending in .toml is a configuration file: configs/rainbow/flat-static.toml.)
    let file = preset.ends_with(".toml").then(|| std::fs::read_to_string(preset));
    let text = match &file {
        Some(Ok(t)) => t.as_str(),
        Some(Err(e)) => {
            eprintln!("simfile: cannot read {preset}: {e}");
            std::process::exit(2);
        }
        None => presets::get(preset).unwrap_or_else(|| {
            eprintln!("simfile: no preset named {preset:?}");
            std::process::exit(2);
        }),
    };
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
    // XLAT_SIMFILE_WARM=1: simulate the batches once untimed first, so that the timed pass
    // sees a warm state (pages mapped, no faults): the steady state of a long run.
    // (The timed pass leaves out the side events: a workload's opening mmap would unmap
    // everything again.)
    if std::env::var_os("XLAT_SIMFILE_WARM").is_some() {
        for b in &batches {
            s.batch(b).expect("simulate");
        }
        for b in &mut batches {
            b.side.clear();
        }
    }
    let c0 = s.counters();
    let t = Instant::now();
    timed_pass(&mut s, &batches);
    let secs = t.elapsed().as_secs_f64();
    let c1 = s.counters();
    let c: std::collections::BTreeMap<&str, u64> =
        c1.iter().map(|(k, v)| (k.as_str(), v - c0.get(k).copied().unwrap_or(0))).collect();
    let n = c["accesses"];
    println!(
        "{n} accesses, {} walks, {} faults, {:.3} s, {:.2} M acc/s",
        c["walker.walks"],
        c["os.page_faults"],
        secs,
        n as f64 / secs / 1e6
    );
}

/// The timed pass (a function of its own for `--toggle-collect`).
#[inline(never)]
fn timed_pass(s: &mut sim::Simulator, batches: &[Batch]) {
    for b in batches {
        s.batch(b).expect("simulate");
    }
}
