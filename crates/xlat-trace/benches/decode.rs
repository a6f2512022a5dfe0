//! `make bench` part 1: trace decode rate and size for synthetic workloads.
//!
//! For each workload: generate N accesses into a compressed trace in memory, then decode it
//! several times and report the median rate (accesses/s, one core) and bytes per access.

use xlat_trace::{source, Batch, TraceReader, TraceWriter};

/// CPU time of this thread in seconds: on a shared machine it is far steadier than wall time
/// (time slices lost to other processes do not count).
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec, which we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn main() {
    let n: u64 = std::env::var("XLAT_BENCH_ACCESSES").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000_000);
    let reps: usize = std::env::var("XLAT_BENCH_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let specs = [
        format!("workload:stream?size=1GiB&accesses={n}"),
        format!("workload:gups?size=8GiB&accesses={n}"),
        format!("workload:bfs?scale=20&accesses={n}"),
        format!("workload:chase?size=8GiB&accesses={n}"),
        format!("workload:zipf?size=8GiB&accesses={n}"),
    ];
    println!("trace decode, {n} accesses per workload, median of {reps} runs, one core, rates per CPU-second");
    println!(
        "{:<18} {:>14} {:>12} {:>14} {:>12}",
        "workload", "decode Macc/s", "bytes/acc", "encode Macc/s", "trace MiB"
    );
    let only = std::env::var("XLAT_BENCH_ONLY").unwrap_or_default();
    for spec in specs.iter().filter(|s| s.contains(only.as_str())) {
        let mut src = source::open(spec).expect("workload");
        // Generate first (not timed), then time encoding alone.
        let mut batches = Vec::new();
        let mut b = Batch::default();
        while src.next_batch(&mut b).unwrap() {
            batches.push(b.clone());
        }
        let name = spec.trim_start_matches("workload:").split('?').next().unwrap();
        both_versions(name, &batches, src.header(), reps);
    }
    // Real traces (e.g. written by `xlat trace` in benches/trace_bench.py), comma-separated,
    // their first N accesses (whole blocks) re-encoded in memory in both format versions.
    for path in std::env::var("XLAT_BENCH_FILES").unwrap_or_default().split(',').filter(|p| !p.is_empty()) {
        let mut r = match TraceReader::open(path) {
            Ok(r) => r,
            Err(e) => {
                println!("{path}: {e}");
                continue;
            }
        };
        let header = r.header().clone();
        let (mut batches, mut b) = (Vec::new(), Batch::default());
        let mut got = 0;
        while got < n && r.next_batch(&mut b).expect("readable trace") {
            got += b.len() as u64;
            batches.push(b.clone());
        }
        let name = std::path::Path::new(path).file_name().unwrap().to_string_lossy().to_string();
        both_versions(&name, &batches, &header, reps);
    }
}

/// Encode `batches` in format 1.1 (repeat records) and 1.0 (none) and report both.
fn both_versions(name: &str, batches: &[Batch], header: &xlat_trace::Header, reps: usize) {
    let n: usize = batches.iter().map(|b| b.len()).sum();
    for minor in [1u16, 0] {
        let t = cpu_seconds();
        let mut w = TraceWriter::with_options(Vec::with_capacity(n * 4), header, 3, minor).unwrap();
        for b in batches {
            w.write_batch(b).unwrap();
        }
        let (bytes, _) = w.finish().unwrap();
        let enc = n as f64 / (cpu_seconds() - t) / 1e6;
        report(&format!("{name} (1.{minor})"), &bytes, Some(enc), reps);
    }
}

/// Decode `bytes` `reps` times and print the median rate and the size per access.
fn report(name: &str, bytes: &[u8], enc: Option<f64>, reps: usize) {
    {
        let mut b = Batch::default();
        let footer_accesses = {
            let mut r = TraceReader::new(bytes, name).unwrap();
            while r.next_batch(&mut b).unwrap() {}
            r.footer().unwrap().accesses
        };
        let mut rates = Vec::new();
        for _ in 0..reps {
            let t = cpu_seconds();
            let mut r = TraceReader::new(bytes, name).unwrap();
            let mut got = 0u64;
            let mut sum = 0u64;
            while r.next_batch(&mut b).unwrap() {
                got += b.len() as u64;
                sum = sum.wrapping_add(b.addr.last().copied().unwrap_or(0));
            }
            std::hint::black_box(sum);
            assert_eq!(got, footer_accesses);
            rates.push(got as f64 / (cpu_seconds() - t) / 1e6);
        }
        rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let enc = enc.map_or("-".to_string(), |e| format!("{e:.1}"));
        println!(
            "{:<18} {:>14.1} {:>12.2} {:>14} {:>12.1}",
            name,
            rates[reps / 2],
            bytes.len() as f64 / footer_accesses as f64,
            enc,
            bytes.len() as f64 / (1 << 20) as f64
        );
    }
}
