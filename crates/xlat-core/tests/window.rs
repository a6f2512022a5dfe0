//! A trace recorded after skipping instructions (`xlat trace --skip N`) starts at instruction N;
//! the simulator counts instructions from each thread's first access, so MPKI describes the
//! simulated window only.

use xlat_core::{config::Config, presets, sim};

fn instructions(first: u64, n: u64) -> (u64, f64) {
    let path = std::env::temp_dir().join(format!("xlat-window-{first}-{}.txt", std::process::id()));
    let mut text = String::from("#xlat-text 1\n#header {\"producer\":\"test\"}\n");
    for i in 0..n {
        // Two threads, each one instruction per access, 4 KiB apart (every access a new page).
        let tid = 1 + i % 2;
        text += &format!("A {tid} {} L {:#x} 8\n", first + i / 2, 0x10_0000_0000u64 + i * 4096);
    }
    std::fs::write(&path, text).unwrap();
    let cfg = Config::from_toml("skylake", presets::get("skylake").unwrap(), &[]).unwrap();
    let mut src = xlat_trace::source::open(path.to_str().unwrap()).unwrap();
    let r = sim::simulate(src.as_mut(), "window", &cfg, |_| {}).unwrap();
    std::fs::remove_file(&path).unwrap();
    let walks = r.counters["walker.walks"];
    (r.counters["instructions"], walks as f64 * 1000.0 / r.counters["instructions"] as f64)
}

#[test]
fn instructions_count_from_the_first_access() {
    // 1000 accesses per thread, one instruction apart: 1000 instructions each.
    let (from_zero, mpki0) = instructions(0, 2000);
    let (skipped, mpki1) = instructions(84_000_000_000, 2000);
    assert_eq!(from_zero, 2 * 1000);
    assert_eq!(skipped, 2 * 1000);
    assert_eq!(mpki0, mpki1);
}
