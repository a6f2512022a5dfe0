//! Windows of a trace. A trace recorded after skipping instructions (`xlat trace --skip N`)
//! starts at instruction N; the simulator counts instructions from each thread's first access, so
//! MPKI describes the simulated window only. A warm-up (`Simulator::set_window`) runs the
//! structures and the OS model and counts from its end: every counter of the window equals the
//! whole run's minus the warm-up's alone (a gauge: the whole run's), for every design.

use std::collections::BTreeMap;
use xlat_core::{config::Config, presets, sim};
use xlat_trace::{Batch, Window};

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

/// Counters and derived figures of `cfg` over `batches`, with a warm-up of `warmup` accesses
/// (0: none), or over the first `stop` accesses only.
fn run(cfg: &Config, batches: &[Batch], warmup: u64, stop: Option<u64>) -> Result<sim::SimResult, String> {
    let mut s = sim::Simulator::new(cfg).map_err(|e| e.to_string())?;
    s.set_window(Window { skip: 0, warmup, limit: None });
    let mut seen = 0u64;
    for b in batches {
        match stop {
            Some(n) if seen + b.len() as u64 >= n => {
                let mut first = b.clone();
                let _ = first.split_off((n - seen) as usize);
                s.batch(&first).map_err(|e| e.to_string())?;
                break;
            }
            _ => s.batch(b).map_err(|e| e.to_string())?,
        }
        seen += b.len() as u64;
    }
    assert!(s.window_error().is_none());
    s.check_invariants().expect("invariants");
    Ok(s.result("w"))
}

/// Derived figures that are sums over the run (the rest are ratios of counts).
const ADDITIVE: &[&str] =
    &["H", "M", "C", "time.base_cycles", "time.stlb_hit_cycles", "time.walk_cycles", "time.total_cycles"];

#[test]
fn a_warm_up_counts_the_rest_of_the_run_exactly_for_every_design() {
    let workloads = [
        "workload:gups?size=8GiB&accesses=120000",
        "workload:stream?size=256MiB&accesses=120000",
        "workload:bfs?scale=14&accesses=120000",
        "workload:clientserver?servers=3&rounds=40",
    ];
    let mut configs = crate::regress::matrix::design_configs();
    for p in ["skylake", "zen4"] {
        for sets in [vec![], vec!["os.policy=thp".to_string()], vec!["sim.data_through_caches=true".to_string()]] {
            configs.push((format!("{p} {sets:?}"), p.into(), presets::get(p).unwrap().into(), sets));
        }
    }
    configs.push((
        "skylake overlap".into(),
        "skylake".into(),
        presets::get("skylake").unwrap().into(),
        vec!["sim.data_through_caches=true".into(), "time.model=overlap".into()],
    ));
    let mut ran = 0;
    for spec in workloads {
        let batches = crate::regress::matrix::batches(spec);
        let n: u64 = batches.iter().map(|b| b.len() as u64).sum();
        // A warm-up ending inside a batch, after side events (the client/server's switches).
        let w = n / 3 + 7;
        for (label, what, text, sets) in &configs {
            let Ok(cfg) = Config::build(what, text, sets, None) else { continue };
            let Ok(whole) = run(&cfg, &batches, 0, None) else { continue };
            let prefix = run(&cfg, &batches, 0, Some(w)).expect("a prefix runs where the whole does");
            let window = run(&cfg, &batches, w, None).expect("a window runs where the whole does");
            ran += 1;
            let gauges = gauge_names(&cfg);
            assert_eq!(window.counters.keys().collect::<Vec<_>>(), whole.counters.keys().collect::<Vec<_>>());
            for (k, &v) in &whole.counters {
                let want = if gauges.contains(k) {
                    v
                } else {
                    let before = prefix.counters[k];
                    assert!(
                        v >= before,
                        "{spec} {label}: counter {k} fell from {before} to {v}: it is a gauge (Sink::gauge)"
                    );
                    v - before
                };
                assert_eq!(window.counters[k], want, "{spec} {label}: {k}");
            }
            assert_eq!(window.counters["accesses"], n - w, "{spec} {label}");
            for k in ADDITIVE {
                let want = whole.derived[*k] - prefix.derived[*k];
                let got = window.derived[*k];
                assert!((got - want).abs() <= 1e-6 * want.abs().max(1.0), "{spec} {label}: {k} {got} != {want}");
            }
            // MPKI from the window's own counts.
            let i = window.counters["instructions"] as f64;
            let misses: u64 = window
                .counters
                .iter()
                .filter(|(k, _)| k.starts_with("tlb_level1.") && k.ends_with(".misses"))
                .map(|(_, v)| v)
                .sum();
            if let Some(mpki) = window.derived.get("tlb_level1.mpki") {
                assert!((mpki - misses as f64 * 1000.0 / i).abs() < 1e-9, "{spec} {label}");
            }
        }
    }
    assert!(ran > 100, "{ran} cases ran");
}

/// The names `cfg`'s simulator reports as gauges.
fn gauge_names(cfg: &Config) -> std::collections::BTreeSet<String> {
    let s = sim::Simulator::new(cfg).unwrap();
    s.gauges()
}

#[test]
fn a_warm_up_longer_than_the_trace_is_one_sentence() {
    let cfg = Config::from_toml("skylake", presets::get("skylake").unwrap(), &[]).unwrap();
    let mut src = xlat_trace::source::open("workload:stream?size=64MiB&accesses=1000").unwrap();
    let mut s = sim::Simulator::new(&cfg).unwrap();
    s.set_window(Window { skip: 0, warmup: 5000, limit: None });
    let e = sim::run(s, src.as_mut(), "w", |_| {}).unwrap_err().to_string();
    assert_eq!(
        e,
        "the warm-up of 5000 accesses is longer than the trace (1000 accesses): nothing would be counted; give a shorter warm-up"
    );
}

#[test]
fn skip_and_limit_read_the_window_and_the_result_names_it() {
    let cfg = Config::from_toml("skylake", presets::get("skylake").unwrap(), &[]).unwrap();
    let w = Window { skip: 10_000, warmup: 20_000, limit: Some(30_000) };
    let mut src = sim::open_window("workload:gups?size=1GiB&accesses=100000", false, w).unwrap();
    let mut s = sim::Simulator::new(&cfg).unwrap();
    s.set_window(w);
    let r = sim::run(s, src.as_mut(), "w", |_| {}).unwrap();
    assert_eq!(r.counters["accesses"], 30_000);
    assert_eq!(r.window, Some(w));
    let _: BTreeMap<String, u64> = r.counters;
}
