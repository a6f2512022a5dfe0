//! The Mach machine's counts are frozen (as the regression matrix's are, tests/regress.rs): every
//! configuration of `configs/mach/` (and tlb-only without data through the caches) on three
//! client/server traces of `workload:clientserver` must give exactly the counters checked in at
//! `tests/data/mach-counts.txt`. It pins the counts while the Mach loop is made faster; a change
//! that alters a count on purpose says why in its commit and blesses:
//!
//! ```sh
//! XLAT_MACH_BLESS=1 cargo test --release -p xlat-core --test integration mach_frozen::
//! ```

use xlat_core::config::Config;
use xlat_core::Simulator;
use xlat_trace::Batch;

const COUNTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/mach-counts.txt");
const CONFIGS: [&str; 6] = ["tlb-only", "stlb-1k", "stlb-4k", "stlb-2way", "ptlb", "ptlb+stlb"];
/// Two servers (the lower partition just overflows), nine servers with more data and two
/// clients (STLB conflicts, context switches without IPC), coarse granularity (long turns).
const TRACES: [&str; 3] = [
    "workload:clientserver?servers=2&words=30&accesses=200000&seed=3",
    "workload:clientserver?clients=2&quantum=3&servers=9&words=50&accesses=300000&seed=5",
    "workload:clientserver?servers=5&words=20&granularity=coarse&accesses=200000&seed=7",
];

fn batches(spec: &str) -> Vec<Batch> {
    let mut src = xlat_trace::source::open(spec).expect("workload");
    let mut out = Vec::new();
    let mut b = Batch::default();
    while src.next_batch(&mut b).expect("generate") {
        out.push(std::mem::take(&mut b));
    }
    out
}

/// Every counter of every case, one `case counter value` line each.
fn counts() -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/mach");
    let mut text = String::new();
    for spec in TRACES {
        let trace = batches(spec);
        let mut cases: Vec<(String, Vec<String>)> = CONFIGS.iter().map(|c| (c.to_string(), vec![])).collect();
        cases.push(("tlb-only".into(), vec!["sim.data_through_caches=false".into()]));
        for (name, sets) in cases {
            let toml = std::fs::read_to_string(dir.join(format!("{name}.toml"))).expect("config");
            let cfg = Config::from_toml(&name, &toml, &sets).expect("valid");
            let mut s = Simulator::new(&cfg).expect("simulator");
            assert_eq!(s.variant(), "mach");
            for b in &trace {
                s.batch(b).expect("simulate");
            }
            s.check_invariants().expect("invariants");
            let case = format!("{name}{} {spec}", if sets.is_empty() { "" } else { ",no-data" });
            for (k, v) in s.counters() {
                text.push_str(&format!("{case} {k} {v}\n"));
            }
        }
    }
    text
}

#[test]
fn the_mach_machine_gives_the_checked_in_counts() {
    let got = counts();
    if std::env::var_os("XLAT_MACH_BLESS").is_some() {
        std::fs::write(COUNTS, &got).expect("write the counts");
        return;
    }
    let want = std::fs::read_to_string(COUNTS).expect("tests/data/mach-counts.txt");
    let differ: Vec<String> = got
        .lines()
        .zip(want.lines())
        .filter(|(g, w)| g != w)
        .take(10)
        .map(|(g, w)| format!("got {g}\n   want {w}"))
        .collect();
    assert!(
        differ.is_empty() && got.lines().count() == want.lines().count(),
        "the Mach machine's counts moved ({} lines, {} checked in); first differences:\n{}\n\
         If the change is meant, say why in the commit and bless: XLAT_MACH_BLESS=1 cargo test --release \
         -p xlat-core --test integration mach_frozen::",
        got.lines().count(),
        want.lines().count(),
        differ.join("\n")
    );
}
