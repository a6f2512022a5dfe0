//! `make bench`: simulated accesses per second, one core, reading compressed trace files.
//!
//! Workloads (Skylake preset): a TLB-friendly stream, gups over 8 GiB with 4KB pages (nearly
//! every access walks) and the same with THP. Each is written once to a trace file under
//! `target/bench-traces/`, then simulated `XLAT_BENCH_REPS` times; the median is reported.
//! Finally two configurations run on two threads over the gups trace, to show the scaling.

mod common;
use common::{env, median, thread_cpu};
use std::time::Instant;
use xlat_core::{presets, sim, Config};
use xlat_trace::{source, Batch, TraceWriter};

/// Whether `path` reads to its end without error (a cached trace from an older format does not).
fn readable(path: &std::path::Path) -> bool {
    let Ok(mut src) = source::open(&path.to_string_lossy()) else {
        return false;
    };
    let mut b = Batch::default();
    loop {
        match src.next_batch(&mut b) {
            Ok(true) => {}
            Ok(false) => return true,
            Err(_) => return false,
        }
    }
}

/// Write the trace of `spec` to `path` (in `dir`, named `prefix...`) unless a readable one is
/// cached there; when writing, remove the cached traces of the same workload written by other
/// format versions or writer revisions.
fn write_trace(spec: &str, dir: &std::path::Path, prefix: &str, name: &str) {
    let path = dir.join(name);
    if path.exists() && readable(&path) {
        return;
    }
    for e in std::fs::read_dir(dir).expect("trace dir").flatten() {
        let f = e.file_name().to_string_lossy().to_string();
        if f.starts_with(prefix) && f.ends_with(".xlat") && f != name {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let mut src = source::open(spec).expect("workload");
    let f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create trace"));
    let mut w = TraceWriter::new(f, src.header()).expect("writer");
    let mut b = Batch::default();
    while src.next_batch(&mut b).expect("generate") {
        w.write_batch(&b).expect("write");
    }
    w.finish().expect("finish");
}

/// The cached trace file of a workload spec: a prefix naming the workload and its size, then
/// the format version and the writer's revision (so that a trace cached by an older xlat is
/// written again: it would read, but not as the current writer writes it).
fn trace_name(spec: &str, n: u64) -> (String, String) {
    let prefix = format!(
        "{}-{}-{n}-v",
        spec.split(['?', ':']).nth(1).unwrap_or("w"),
        if spec.contains("8GiB") { "8g" } else { "1g" },
    );
    let name = format!(
        "{prefix}{}.{}-w{}.xlat",
        xlat_trace::format::VERSION_MAJOR,
        xlat_trace::format::VERSION_MINOR,
        xlat_trace::writer::WRITER_REVISION
    );
    (prefix, name)
}

fn main() {
    let n = env("XLAT_BENCH_ACCESSES", 100_000_000);
    let reps = env("XLAT_BENCH_REPS", 3) as usize;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-traces");
    std::fs::create_dir_all(&dir).expect("trace dir");
    let sky = presets::get("skylake").expect("preset");
    let cfg = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Config::from_toml("skylake", sky, &sets).expect("valid")
    };
    // XLAT_BENCH_ONLY: comma-separated parts of case names ("stream,THP,scaling").
    let filter: Option<Vec<String>> =
        std::env::var("XLAT_BENCH_ONLY").ok().map(|o| o.split(',').map(str::to_string).collect());
    let wanted = |name: &str| filter.as_ref().is_none_or(|o| o.iter().any(|p| name.contains(p.as_str())));
    let cases = [
        ("stream (4KB)", format!("workload:stream?size=1GiB&accesses={n}"), cfg(&[])),
        ("gups 8GiB 4KB", format!("workload:gups?size=8GiB&accesses={n}"), cfg(&[])),
        ("gups 8GiB THP", format!("workload:gups?size=8GiB&accesses={n}"), cfg(&["os.policy=thp"])),
    ];
    println!("xlat-core simulation rate, Skylake preset, {n} accesses from a compressed trace file,");
    println!("median of {reps} runs, one core (the decode of the trace is included)");
    println!("(M acc/s per wall second and per CPU second of the simulating thread; 'sim only' runs");
    println!(" the first 20M accesses from batches already decoded in memory; '2 thr' decodes on a");
    println!(" second thread; 'seconds' is the median wall time of the one-thread run)");
    println!(
        "{:<16} {:>9} {:>9} {:>9} {:>9} {:>8} {:>11} {:>9} {:>9}",
        "case", "wall", "cpu", "sim only", "2 thr", "seconds", "walks", "faults", "walks/acc"
    );
    for (name, spec, c) in &cases {
        let (prefix, fname) = trace_name(spec, n);
        let file = dir.join(&fname);
        if !wanted(name) {
            continue;
        }
        write_trace(spec, &dir, &prefix, &fname);
        let path = file.to_string_lossy().to_string();
        let mut secs = Vec::new();
        let mut cpus = Vec::new();
        let mut last = None;
        for _ in 0..reps {
            let mut src = source::open(&path).expect("trace");
            let (t, c0) = (Instant::now(), thread_cpu());
            let r = sim::simulate(src.as_mut(), &path, c, |_| {}).expect("simulate");
            secs.push(t.elapsed().as_secs_f64());
            cpus.push(thread_cpu() - c0);
            last = Some(r);
        }
        let r = last.expect("ran");
        let (s, cpu) = (median(secs), median(cpus));
        let acc = r.counters["accesses"];
        // Simulation alone: decode up to 20M accesses first, then time the simulator.
        let mut batches = Vec::new();
        let mut src = source::open(&path).expect("trace");
        let mut b = Batch::default();
        let mut got = 0;
        while got < 20_000_000 && src.next_batch(&mut b).expect("decode") {
            got += b.len();
            batches.push(b.clone());
        }
        let mut only = Vec::new();
        for _ in 0..reps {
            let mut simr = sim::Simulator::new(c).expect("config");
            let t = Instant::now();
            for b in &batches {
                simr.batch(b).expect("simulate");
            }
            only.push(got as f64 / t.elapsed().as_secs_f64() / 1e6);
        }
        drop(batches);
        // Decoding on a second thread (what `xlat sim` does when a core is free).
        let mut piped = Vec::new();
        for _ in 0..reps {
            let mut src = sim::open_source(&path, true).expect("trace");
            let t = Instant::now();
            sim::simulate(src.as_mut(), &path, c, |_| {}).expect("simulate");
            piped.push(acc as f64 / t.elapsed().as_secs_f64() / 1e6);
        }
        println!(
            "{:<16} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>8.2} {:>11} {:>9} {:>9.3}",
            name,
            acc as f64 / s / 1e6,
            acc as f64 / cpu.max(1e-9) / 1e6,
            median(only),
            median(piped),
            s,
            r.counters["walker.walks"],
            r.counters["os.page_faults"],
            r.counters["walker.walks"] as f64 / acc as f64
        );
    }
    if !wanted("scaling") {
        return;
    }
    // Scaling: the gups trace under two configurations, sequentially and on two threads.
    let path = dir.join(trace_name(&cases[1].1, n).1).to_string_lossy().to_string();
    let cfgs = vec![cfg(&[]), cfg(&["os.policy=thp"])];
    let t = Instant::now();
    for r in sim::simulate_many(&path, &cfgs, 1) {
        r.expect("simulate");
    }
    let one = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for r in sim::simulate_many(&path, &cfgs, 2) {
        r.expect("simulate");
    }
    let two = t.elapsed().as_secs_f64();
    println!(
        "2 configurations over gups 8GiB: 1 thread {one:.3} s, 2 threads {two:.3} s, speed-up {:.2}x ({} cores)",
        one / two,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
}
