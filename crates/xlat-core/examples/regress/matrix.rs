//! The regression matrix: every preset x policy (4KB, THP, the mosaic layout
//! `configs/layouts/mixed.toml`) x workload x replacement policy (set on every TLB, PSC and
//! cache) x data accesses through the caches (off, on), 864 cases. Shared by the `regress`
//! example (`scripts/sim-regress.sh`: the full result JSON, to diff two commits) and the
//! `regress` test (the digests in `tests/data/regress-digests.txt`, in `make test`).

use xlat_core::layout::Layout;
use xlat_core::{presets, sim, Config};
use xlat_trace::{source, Batch};

pub const WORKLOADS: &[&str] = &[
    "workload:stream?size=256MiB&accesses=2000000",
    "workload:stream?size=64MiB&kernel=copy&accesses=1000000",
    "workload:gups?size=8GiB&accesses=5000000",
    "workload:chase?size=256MiB&accesses=1000000",
    "workload:zipf?size=1GiB&accesses=1000000",
    "workload:bfs?scale=14&accesses=1000000",
];

/// One case: its name (`=== SPEC PRESET POLICY REPL data=BOOL`), the workload's index in
/// [`WORKLOADS`], and its configuration, or the sentence that rejected it (some geometries do
/// not support a policy: tree-PLRU over 72 ways).
pub struct Case {
    pub name: String,
    pub workload: usize,
    pub config: Result<Config, String>,
}

/// Every case of the workloads whose spec contains `only`, in the matrix's order.
pub fn cases(only: &str) -> Vec<Case> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let layout_text = std::fs::read_to_string(root.join("configs/layouts/mixed.toml")).expect("layout");
    let layout = Layout::from_toml("mixed", &layout_text).expect("layout parses");
    let mut out = Vec::new();
    for (w, spec) in WORKLOADS.iter().enumerate() {
        if !spec.contains(only) {
            continue;
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
                        out.push(Case {
                            name: format!("=== {spec} {preset} {policy} {repl} data={data}"),
                            workload: w,
                            config: Config::build(preset, text, &sets, lay).map_err(|e| e.to_string()),
                        });
                    }
                }
            }
        }
    }
    out
}

/// The batches of workload `spec`, decoded once (every configuration simulates the same ones).
pub fn batches(spec: &str) -> Vec<Batch> {
    let mut src = source::open(spec).expect("workload");
    let mut batches = Vec::new();
    let mut b = Batch::default();
    while src.next_batch(&mut b).expect("generate") {
        batches.push(b.clone());
    }
    batches
}

/// What a case prints after its name: the result JSON, or `invalid: SENTENCE`.
pub fn run(case: &Case, batches: &[Batch]) -> String {
    let cfg = match &case.config {
        Ok(c) => c,
        Err(e) => return format!("invalid: {e}"),
    };
    let mut s = sim::Simulator::new(cfg).expect("simulator");
    for b in batches {
        s.batch(b).expect("simulate");
    }
    s.check_invariants().expect("invariants");
    s.result(WORKLOADS[case.workload]).to_json()
}
