//! The regression matrix of `scripts/sim-regress.sh`: every preset x policy (4KB, THP, the
//! mosaic layout `configs/layouts/mixed.toml`) x workload x replacement policy (set on every
//! TLB, PSC and cache) x data accesses through the caches (off, on), each simulated and printed
//! as its result JSON. Two builds of the simulator must print the same bytes.
//!
//! `cargo run --release -p xlat-core --example regress > out.txt` (uses only the public API, so
//! that the script can run the same file against an older commit).

use std::io::Write;
use xlat_core::layout::Layout;
use xlat_core::{presets, sim, Config};
use xlat_trace::{source, Batch};

const WORKLOADS: &[&str] = &[
    "workload:stream?size=256MiB&accesses=2000000",
    "workload:stream?size=64MiB&kernel=copy&accesses=1000000",
    "workload:gups?size=8GiB&accesses=5000000",
    "workload:chase?size=256MiB&accesses=1000000",
    "workload:zipf?size=1GiB&accesses=1000000",
    "workload:bfs?scale=14&accesses=1000000",
];

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let layout_text = std::fs::read_to_string(root.join("configs/layouts/mixed.toml")).expect("layout");
    let layout = Layout::from_toml("mixed", &layout_text).expect("layout parses");
    let only = std::env::var("XLAT_REGRESS_ONLY").unwrap_or_default();
    let out = std::io::stdout();
    let mut out = out.lock();
    for spec in WORKLOADS {
        if !spec.contains(only.as_str()) {
            continue;
        }
        // Decode once; every configuration simulates the same batches.
        let mut src = source::open(spec).expect("workload");
        let mut batches = Vec::new();
        let mut b = Batch::default();
        while src.next_batch(&mut b).expect("generate") {
            batches.push(b.clone());
        }
        for (preset, text) in presets::ALL {
            let base = Config::from_toml(preset, text, &[]).expect("preset");
            for policy in ["4k", "thp", "mosaic"] {
                for repl in ["lru", "tree-plru", "fifo", "random"] {
                    for data in [false, true] {
                        let mut sets = Vec::new();
                        if policy == "thp" {
                            sets.push("os.policy=thp".to_string());
                        }
                        for t in &base.tlb {
                            sets.push(format!("tlb.{}.replacement={repl}", t.name));
                        }
                        for p in &base.psc {
                            sets.push(format!("psc.{}.replacement={repl}", p.name));
                        }
                        for c in &base.cache {
                            sets.push(format!("cache.{}.replacement={repl}", c.name));
                        }
                        if data {
                            sets.push("sim.data_through_caches=true".to_string());
                        }
                        // One sampled series per preset and workload (ranges split at samples).
                        if repl == "lru" && !data {
                            sets.push("sim.interval_accesses=100003".to_string());
                        }
                        let lay = (policy == "mosaic").then(|| layout.clone());
                        writeln!(out, "=== {spec} {preset} {policy} {repl} data={data}").expect("write");
                        // Some geometries do not support a policy (tree-PLRU over 72 ways).
                        let cfg = match Config::build(preset, text, &sets, lay) {
                            Ok(c) => c,
                            Err(e) => {
                                writeln!(out, "invalid: {e}").expect("write");
                                continue;
                            }
                        };
                        let mut s = sim::Simulator::new(&cfg).expect("simulator");
                        for b in &batches {
                            s.batch(b).expect("simulate");
                        }
                        s.check_invariants().expect("invariants");
                        let r = s.result(spec);
                        writeln!(out, "{}", r.to_json()).expect("write");
                    }
                }
            }
        }
    }
}
