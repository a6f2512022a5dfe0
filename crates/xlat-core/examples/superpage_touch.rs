//! Seed 003's Observation 1 on any trace: the CDF of touched 4KB pages per 2MB superpage per
//! interval (`xlat_core::analysis::touch`; docs/rainbow.md).
//!
//! `cargo run --release -p xlat-core --example superpage_touch -- TRACE [INTERVAL_INSTRUCTIONS]`
//! (default 10^8: seed 003 section III-C's interval of 10^8 cycles at one cycle per instruction).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(trace) = args.first() else {
        eprintln!("usage: superpage_touch TRACE [INTERVAL_INSTRUCTIONS]");
        std::process::exit(2);
    };
    let interval = match args.get(1).map(|s| s.parse::<u64>()) {
        None => 100_000_000,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("superpage_touch: the interval must be a whole number of instructions.");
            std::process::exit(2);
        }
    };
    let result = xlat_trace::source::open(trace).map_err(|e| e.to_string()).and_then(|mut src| {
        xlat_core::analysis::touch::analyze(&mut *src, interval, |_| {}).map_err(|e| e.to_string())
    });
    let r = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("superpage_touch: {e}.");
            std::process::exit(1);
        }
    };
    let cdf = r.cdf();
    println!("{} intervals of {} instructions, {} (superpage, interval) pairs", r.intervals, interval, r.samples());
    println!("touched 4KB pages <= n: fraction of superpages");
    for n in [1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 511, 512] {
        println!("{n:>4} {:.4}", cdf[n]);
    }
}
