//! Lite (seed 000 section 5.4, Algorithm 5.1): the controller's decisions on a trace crafted by
//! hand, its determinism per seed, the Lite loop against the plain one, and bad `[lite]` input.

use xlat_core::config::Config;
use xlat_core::Simulator;
use xlat_trace::{Access, AccessKind, Batch};

use crate::common;
use common::{mixed_trace, mmap, preset, run, ANON};

const BASE: u64 = 0x7000_0000_0000;

/// One 4-entry 4-way (one set) L1 data TLB of 4KB pages over a 64-entry L2, 4KB pages, and
/// `lite` as the `[lite]` table.
fn tiny(lite: &str) -> Result<Config, xlat_core::config::ConfigError> {
    Config::from_toml("tiny", &tiny_text(lite), &[])
}

fn tiny_text(lite: &str) -> String {
    format!(
        r#"
name = "tiny"
[[tlb]]
name = "l1"
level = 1
role = "data"
entries = 4
ways = 4
page_sizes = ["4KB"]
[[tlb]]
name = "l2"
level = 2
role = "data"
entries = 64
ways = 4
page_sizes = ["4KB"]
latency = 7
[memory]
size = "1GiB"
[lite]
{lite}
"#
    )
}

/// Loads of the 4KB pages `pages[i % len]` (page numbers from `BASE`), one instruction each,
/// after `*ic`.
fn loads(b: &mut Batch, ic: &mut u64, pages: &[u64], n: usize) {
    for i in 0..n {
        *ic += 1;
        let addr = BASE + (pages[i % pages.len()] << 12);
        b.push_access(Access { addr, icount: *ic, tid: 1, size: 8, kind: AccessKind::Load });
    }
}

/// Interval 1: page 0 a thousand times; intervals 2 and 3: pages 1, 0, 1, 0, ...
fn crafted() -> Batch {
    let mut b = Batch::default();
    mmap(&mut b, BASE, 1 << 20, ANON);
    let mut ic = 0;
    loads(&mut b, &mut ic, &[0], 1000);
    loads(&mut b, &mut ic, &[1, 0], 2000);
    b
}

#[test]
fn lite_disables_ways_when_they_are_useless_and_reactivates_them_when_mpki_grows() {
    // Threshold 12.5% relative, a probability no draw falls below.
    let cfg = tiny("interval = 1000\nprobability = 1e-30").expect("valid");
    let mut s = Simulator::new(&cfg).expect("simulator");
    assert_eq!(s.variant(), "lite");
    s.batch(&crafted()).expect("run");
    s.check_invariants().expect("invariants");
    let c = s.counters();
    // Interval 1 (4 ways): 1 miss (the first touch), 999 hits on the MRU entry: 1 MPKI, and
    // the LRU-distance counters of ways 1 and 2-3 are 0: halving twice adds no miss, so the
    // TLB ends with 1 way. Interval 2 (1 way): pages 1 and 0 evict each other, 1000 misses:
    // 1000 MPKI, more than 1.125 x the lowest (1): every way back. Interval 3 (4 ways, page 0
    // kept): 1 miss (page 1), then 999 hits at way 1 (distance 1 from the MRU). Halving to 2
    // ways loses nothing (counter 2 is 0); to 1 way would lose the 999 (counter 1): 2 ways.
    let r = s.result("t");
    let e = &r.epochs["lite"];
    let col = |name: &str| e.columns.iter().position(|c| c == name).unwrap_or_else(|| panic!("{name}"));
    let ways: Vec<u64> = e.rows.iter().map(|row| row[col("l1.ways")]).collect();
    assert_eq!(ways, vec![1, 4, 2]);
    assert_eq!((c["epoch.lite.runs"], c["epoch.lite.halvings"], c["epoch.lite.growth_enables"]), (3, 3, 1));
    assert_eq!(c["epoch.lite.random_enables"], 0);
    // Table 5.5: lookups per active way count (intervals 1 and 3 at 4 ways, 2 at 1 way).
    assert_eq!(
        (c["epoch.lite.l1.lookups_w4"], c["epoch.lite.l1.lookups_w2"], c["epoch.lite.l1.lookups_w1"]),
        (2000, 0, 1000)
    );
    // Fills: interval 1 one, interval 2 a thousand, interval 3 one.
    assert_eq!((c["epoch.lite.l1.fills_w4"], c["epoch.lite.l1.fills_w1"]), (2, 1000));
    assert_eq!((c["tlb.l1.hits"], c["tlb.l1.fills"]), (999 + 999, 1002));
    // Shrinking to 1 way dropped 0 entries (1 valid: page 0, the MRU); shrinking to 2 kept
    // pages 1 and 0.
    assert_eq!(c["tlb.l1.invalidations"], 0);
    // The time of each interval (for its leakage at its way count): instructions and the
    // translation cycles at its end. L2 hits cost 7 cycles: interval 1 none, interval 2 999
    // (every miss but page 1's first), interval 3 one (page 1); page 0's walk is in interval
    // 1, page 1's in interval 2. Each walk is 4 loads from memory (no cache, no PSC) at the
    // default 200-cycle latency: 800 cycles.
    let at = |name: &str| e.rows.iter().map(|row| row[col(name)]).collect::<Vec<u64>>();
    assert_eq!(at("instructions"), vec![1000, 2000, 3000]);
    assert_eq!(c["walker.cycles"], 1600);
    assert_eq!(at("xlat_cycles"), vec![800, 800 + 999 * 7 + 800, 800 + 999 * 7 + 800 + 7]);
    // The run ends on an interval's end: the last row is the whole run's time estimate.
    assert_eq!(r.derived["time.total_cycles"], 3000.0 + 8600.0);
}

#[test]
fn lite_compares_with_the_previous_interval_by_default_and_with_the_lowest_on_request() {
    // Interval 1: page 0 a thousand times (1 MPKI). Intervals 2 to 4: ten new pages each, a
    // hundred loads in a row per page (10 MPKI; every hit on the MRU entry, so one way holds
    // the working set). Seed 000 section 5.4.2's prose compares with the previous interval:
    // interval 2 degrades (10 > 1.125 x 1), every way back; intervals 3 and 4 do not (10 vs
    // 10), so Lite halves down to one way and stays there. Algorithm 5.1's last lines read
    // literally keep the lowest MPKI (1): every later interval is a degradation, and Lite never
    // disables a way again.
    let mut b = Batch::default();
    mmap(&mut b, BASE, 1 << 20, ANON);
    let mut ic = 0;
    loads(&mut b, &mut ic, &[0], 1000);
    for interval in 0..3u64 {
        for p in 0..10 {
            loads(&mut b, &mut ic, &[1 + interval * 10 + p], 100);
        }
    }
    for (reference, ways, growth) in [("", vec![1, 4, 1, 1], 1), ("reference = \"minimum\"", vec![1, 4, 4, 4], 3)] {
        // No random re-activation (probability 0, the ablation the section's text allows).
        let cfg = tiny(&format!("interval = 1000\nprobability = 0\n{reference}")).expect("valid");
        let mut s = Simulator::new(&cfg).expect("simulator");
        s.batch(&b).expect("run");
        let (c, r) = (s.counters(), s.result("t"));
        let e = &r.epochs["lite"];
        let col = e.columns.iter().position(|c| c == "l1.ways").expect("ways column");
        assert_eq!(e.rows.iter().map(|row| row[col]).collect::<Vec<u64>>(), ways, "{reference}");
        assert_eq!((c["epoch.lite.growth_enables"], c["epoch.lite.random_enables"]), (growth, 0), "{reference}");
    }
}

#[test]
fn an_absolute_threshold_keeps_ways_that_a_relative_one_gives_up() {
    // Interval 3 with 8 ways' worth of reuse: pages 0..4 in turn over 4 ways: every access
    // after the first four hits at way 3 (counter 2). With an absolute 0.1 MPKI nothing is
    // disabled (+996 MPKI); with a relative threshold of 1000 x (+99,600% allowed) both halvings
    // pass.
    let mut b = Batch::default();
    mmap(&mut b, BASE, 1 << 20, ANON);
    let mut ic = 0;
    loads(&mut b, &mut ic, &[0, 1, 2, 3], 1000);
    for (lite, ways) in [
        ("interval = 1000\nprobability = 1e-30\nthreshold = 0.1\nthreshold_kind = \"absolute\"", 4),
        ("interval = 1000\nprobability = 1e-30\nthreshold = 1000.0", 1),
    ] {
        let mut s = Simulator::new(&tiny(lite).expect("valid")).expect("simulator");
        s.batch(&b).expect("run");
        assert_eq!(s.counters()["epoch.lite.l1.ways"], ways, "{lite}");
    }
}

#[test]
fn random_reactivation_is_deterministic_per_seed() {
    // Page 0 only: Lite halves to 1 way whenever it can; a draw below 1/2 brings 4 back.
    let mut b = Batch::default();
    mmap(&mut b, BASE, 1 << 20, ANON);
    let mut ic = 0;
    loads(&mut b, &mut ic, &[0], 64_000);
    let ways = |seed: u64, p: &str| {
        let mut cfg = tiny(&format!("interval = 1000\nprobability = {p}")).expect("valid");
        cfg.sim.seed = seed;
        let mut s = Simulator::new(&cfg).expect("simulator");
        s.batch(&b).expect("run");
        let r = s.result("t");
        let e = &r.epochs["lite"];
        let w = e.columns.iter().position(|c| c == "l1.ways").expect("ways");
        let c = s.counters();
        (e.rows.iter().map(|row| row[w]).collect::<Vec<u64>>(), c["epoch.lite.random_enables"])
    };
    let (a, na) = ways(1, "0.5");
    assert_eq!(a.len(), 64);
    assert_eq!(ways(1, "0.5"), (a.clone(), na), "same seed, same decisions");
    // Each interval ends at 4 ways iff its draw fell below 1/2, else at 1 way.
    assert_eq!(a.iter().filter(|&&w| w == 4).count() as u64, na);
    assert!(a.iter().all(|&w| w == 1 || w == 4));
    assert!(na > 10 && na < 54, "about half of 64 draws: {na}");
    let (b2, _) = ways(2, "0.5");
    assert_ne!(a, b2, "another seed, other draws");
    // Probability 1: every interval activates every way.
    let (all, n) = ways(1, "1.0");
    assert_eq!((all, n), (vec![4; 64], 64));
}

#[test]
fn the_lite_loop_counts_what_the_plain_loop_counts_when_no_way_is_disabled() {
    // Probability 1: every way stays active, so every counter but Lite's own is the plain one's.
    let batches = mixed_trace(60_000, 2 * common::G, true);
    let (_, plain) = run(Simulator::new(&preset("skylake", &[])).expect("simulator"), &batches);
    let text = format!("{}\n[lite]\ninterval = 5000\nprobability = 1.0\n", xlat_core::presets::get("skylake").unwrap());
    let cfg = Config::from_toml("skylake", &text, &[]).expect("valid");
    let s = Simulator::new(&cfg).expect("simulator");
    assert_eq!(s.variant(), "lite");
    let (_, lite) = run(s, &batches);
    let ours: std::collections::BTreeMap<_, _> =
        lite.iter().filter(|(k, _)| !k.starts_with("epoch.")).map(|(k, v)| (k.clone(), *v)).collect();
    assert_eq!(ours, plain);
    assert_eq!(lite["epoch.lite.runs"], lite["instructions"] / 5000);
    assert_eq!(lite["epoch.lite.halvings"], 0);
}

#[test]
fn bad_lite_settings_are_one_sentence_each() {
    for (lite, want) in [
        ("interval = 0", "lite.interval = 0 must be at least 1 instruction."),
        ("probability = -0.5", "lite.probability = -0.5 must lie in [0, 1]."),
        ("probability = 1.5", "lite.probability = 1.5 must lie in [0, 1]."),
        ("reference = \"mean\"", "reference"),
        ("threshold = -0.1", "lite.threshold = -0.1 must be a number >= 0."),
        ("threshold_kind = \"percent\"", "threshold_kind"),
        ("window = 3", "window"),
    ] {
        let e = tiny(lite).unwrap_err().to_string();
        assert!(e.contains(want), "{lite}: {e}");
    }
    let text = tiny_text("").replacen("entries = 4\nways = 4", "entries = 6\nways = 3", 1);
    let e = Config::from_toml("tiny", &text, &[]).unwrap_err().to_string();
    assert!(e.contains("tlb 'l1' has 3 ways"), "{e}");
}

#[test]
fn the_tlb_lite_and_rmm_lite_configurations_run_the_lite_loop() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/lite/");
    let batches = mixed_trace(20_000, 2 * common::G, false);
    for (file, kind) in [("tlb-lite.toml", "Relative"), ("rmm-lite.toml", "Absolute")] {
        let text = std::fs::read_to_string(format!("{dir}{file}")).expect("config");
        let cfg = Config::from_toml(file, &text, &["lite.interval=1000".to_string()]).expect("valid");
        let lite = cfg.lite.clone().expect("[lite]");
        assert_eq!((format!("{:?}", lite.threshold_kind), lite.probability), (kind.to_string(), 1.0 / 128.0));
        let s = Simulator::new(&cfg).expect("simulator");
        assert_eq!(s.variant(), "lite");
        let (_, c) = run(s, &batches);
        assert_eq!(c["epoch.lite.runs"], c["instructions"] / 1000, "{file}");
        // The data L1 TLBs' Table 5.5 lookups cover every complete interval's lookups.
        let at = |n: u64| c[&format!("epoch.lite.l1d-4k.lookups_w{n}")];
        assert!(at(4) + at(2) + at(1) <= c["tlb.l1d-4k.accesses"]);
        assert!(at(4) + at(2) + at(1) > 0);
    }
}
