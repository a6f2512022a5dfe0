//! The overlap time model in the engine (`time.model = "overlap"`): what it is fed per access,
//! checked against the counters the additive model reads, and what it refuses.

use xlat_core::Simulator;
use xlat_trace::{Access, AccessKind, Batch};

use crate::common::{mixed_trace, mmap, preset, run, ANON};

/// `n` loads one instruction apart over 256 MiB of 4KB pages, a third near the last (hits).
fn loads(n: u64) -> Vec<Batch> {
    let base = 0x7000_0000_0000u64;
    let mut b = Batch::default();
    mmap(&mut b, base, 256 << 20, ANON);
    let (mut x, mut last) = (0x2545_f491_4f6c_dd1du64, base);
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let addr = if x % 3 == 0 { last + (x >> 40) % 512 } else { base + (x >> 8) % (256 << 20) };
        last = addr;
        b.push_access(Access { addr: addr & !7, icount: i + 1, tid: 1, size: 8, kind: AccessKind::Load });
    }
    vec![b]
}

fn derived(
    cpu: &str,
    sets: &[&str],
    batches: &[Batch],
) -> (std::collections::BTreeMap<String, u64>, std::collections::BTreeMap<String, f64>) {
    let (s, c) = run(Simulator::new(&preset(cpu, sets)).expect("simulator"), batches);
    let d = s.derived(&c);
    (c, d)
}

#[test]
fn with_a_one_instruction_window_the_overlap_model_adds_every_latency() {
    // rob = 1: no two loads (one instruction apart) overlap, so each costs its translation plus
    // its data cycles beyond the L1D: the additive estimate plus the data part.
    let on = ["sim.data_through_caches=true", "time.model=overlap", "time.rob=1"];
    let (c, d) = derived("skylake", &on, &loads(20_000));
    let l1 = preset("skylake", &[]).cache[0].latency;
    let beyond_l1 = (c["data.cycles"] - c["accesses"] * l1) as f64;
    assert!(c["walker.walks"] > 5_000, "the loads walk: {}", c["walker.walks"]);
    assert_eq!(d["time.overlap.total_cycles"], d["time.total_cycles"] + beyond_l1);
    assert_eq!(d["time.overlap.walker_wait_cycles"], 0.0);
}

#[test]
fn a_window_overlaps_misses_and_changes_no_count() {
    let batches = loads(20_000);
    let on = ["sim.data_through_caches=true", "time.model=overlap"];
    let (c, d) = derived("skylake", &on, &batches);
    let (c_add, d_add) = derived("skylake", &["sim.data_through_caches=true"], &batches);
    assert_eq!(c, c_add, "the model observes; it changes no counter");
    assert!(!d_add.contains_key("time.overlap.total_cycles"));
    let l1 = preset("skylake", &[]).cache[0].latency;
    let serial = d["time.total_cycles"] + (c["data.cycles"] - c["accesses"] * l1) as f64;
    let t = d["time.overlap.total_cycles"];
    assert!(t < 0.6 * serial && t > d["time.base_cycles"], "overlap {t} vs in series {serial}");
    assert!(d["time.overlap.events_per_interval"] > 1.5, "{d:?}");
    // Two walkers: walks queue.
    assert!(d["time.overlap.walker_wait_cycles"] > 0.0);
}

#[test]
fn every_access_kind_and_page_size_runs_through_the_model() {
    // Loads, stores and fetches over 4KB, 2MB and 1GB pages, on every preset.
    let batches = mixed_trace(30_000, 1 << 30, true);
    for cpu in ["skylake", "zen4", "haswell"] {
        let (_, d) = derived(cpu, &["sim.data_through_caches=true", "time.model=overlap"], &batches);
        let t = d["time.overlap.total_cycles"];
        assert!(t.is_finite() && t >= d["time.base_cycles"], "{cpu}: {t}");
        assert!(d["time.overlap.fetch_stall_cycles"] > 0.0, "{cpu}: fetches stall the front end");
    }
}

#[test]
fn the_overlap_model_needs_the_data_caches_and_a_hardware_walker() {
    let bad = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let text = xlat_core::presets::get("skylake").expect("preset");
        xlat_core::Config::from_toml("skylake", text, &sets).err().map(|e| e.to_string())
    };
    let e = bad(&["time.model=overlap"]).expect("refused");
    assert!(e.contains("sim.data_through_caches = true"), "{e}");
    for (set, what) in
        [("time.rob=0", "time.rob = 0"), ("time.dep=2", "time.dep = 2"), ("time.walkers=100", "time.walkers = 100")]
    {
        let e = bad(&[set]).expect("refused");
        assert!(e.contains(what), "{e}");
    }
    assert!(bad(&["time.model=overlap", "sim.data_through_caches=true"]).is_none());
}
