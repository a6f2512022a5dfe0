//! The regression matrix: every preset x policy (4KB, THP, the mosaic layout
//! `configs/layouts/mixed.toml`) x workload x replacement policy (set on every TLB, PSC and
//! cache) x data accesses through the caches (off, on), 864 cases. Shared by the `regress`
//! example (`scripts/sim-regress.sh`: the full result JSON, to diff two commits) and the
//! `regress` test (the digests in `tests/data/regress-digests.txt`, in `make test`).
//!
//! The design matrix ([`design_cases`]): every configuration under `configs/{rmm,lite,mach,rainbow,virt,hashed}`
//! plus PRISM, HSCC counting at the memory controller, the software walker and the TLB
//! prefetcher, on the same six workloads, each
//! case's loop copy recorded beside its digest (`tests/data/design-digests.txt`): the designs'
//! whole results frozen, so that moving a design between loop copies or rooms shows.

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

/// The design directories under `configs/` whose every file is a case of the design matrix.
pub const DESIGN_DIRS: &[&str] = &["rmm", "lite", "mach", "rainbow", "virt", "hashed"];

/// A small MIPS-like machine with the software walker (the general loop's handler).
const SOFTWARE: &str = r#"
name = "software-walker"
[memory]
size = "16GiB"
dram_latency = 100
[[tlb]]
name = "tlb"
level = 1
role = "unified"
entries = 64
ways = 64
page_sizes = ["4KB"]
[[cache]]
name = "L1"
size = "64KiB"
ways = 4
latency = 2
[walker]
kind = "software"
"#;

/// The configurations of the design matrix: (label, what, TOML text, `--set` overrides).
pub fn design_configs() -> Vec<(String, String, String, Vec<String>)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for dir in DESIGN_DIRS {
        let mut files: Vec<_> = std::fs::read_dir(root.join("configs").join(dir))
            .expect("configs dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        for f in files {
            let label = format!("{dir}/{}", f.file_name().expect("name").to_string_lossy());
            let text = std::fs::read_to_string(&f).expect("config");
            out.push((label.clone(), label, text, Vec::new()));
        }
    }
    let file = |p: &str| std::fs::read_to_string(root.join(p)).expect("config");
    let prism = |more: &[&str]| -> Vec<String> {
        ["os.metadata=registry", "prism.enabled=true"].iter().chain(more).map(|s| s.to_string()).collect()
    };
    let skylake = xlat_core::presets::get("skylake").expect("preset").to_string();
    out.push(("prism/skylake-thp".into(), "skylake".into(), skylake.clone(), prism(&["os.policy=thp"])));
    out.push((
        "prism/skylake-thp-8-0".into(),
        "skylake".into(),
        skylake,
        prism(&["os.policy=thp", "prism.access_bits=8", "prism.dirty_bits=0"]),
    ));
    out.push(("prism/rmm".into(), "configs/rmm/rmm.toml".into(), file("configs/rmm/rmm.toml"), prism(&[])));
    out.push((
        "hscc/4kb-memory-counting".into(),
        "configs/rainbow/hscc-4kb.toml".into(),
        file("configs/rainbow/hscc-4kb.toml"),
        vec!["hybrid.counting=memory".into()],
    ));
    out.push(("software/walker".into(), "software".into(), SOFTWARE.into(), Vec::new()));
    out.push((
        "virt/skylake-guest-thp-host-4k".into(),
        "configs/virt/skylake.toml".into(),
        file("configs/virt/skylake.toml"),
        vec!["os.policy=thp".into(), "virt.host.policy=4k".into()],
    ));
    // A hashed guest table under nested paging: over the preset's THP host, and over a 4KB host
    // whose table is hashed too.
    let guest_cuckoo = ["psc=[]", "hashed_pt.kind=cuckoo", "hashed_pt.cwc={entries=16, ways=4}"];
    let host_cuckoo = ["virt.host.policy=4k", "virt.host_psc=[]", "virt.host_hashed.kind=cuckoo"];
    for (label, sets) in [
        ("virt/skylake-guest-cuckoo", guest_cuckoo.to_vec()),
        ("virt/skylake-guest-and-host-cuckoo", [&guest_cuckoo[..], &host_cuckoo[..]].concat()),
    ] {
        let sets = sets.iter().map(|s| s.to_string()).collect();
        out.push((label.into(), "configs/virt/skylake.toml".into(), file("configs/virt/skylake.toml"), sets));
    }
    let sky = xlat_core::presets::get("skylake").expect("preset").to_string();
    for (label, kind) in
        [("prefetch/skylake-sequential-eager", "sequential"), ("prefetch/skylake-distance-eager", "distance")]
    {
        let sets = vec!["os.allocation=eager".to_string(), format!("tlb_prefetch.kind={kind}")];
        out.push((label.into(), "skylake".into(), sky.clone(), sets));
    }
    out
}

/// Every case of the design matrix for the workloads whose spec contains `only`: the name is
/// `=== SPEC CONFIG`.
pub fn design_cases(only: &str) -> Vec<Case> {
    let configs = design_configs();
    let mut out = Vec::new();
    for (w, spec) in WORKLOADS.iter().enumerate() {
        if !spec.contains(only) {
            continue;
        }
        for (label, what, text, sets) in &configs {
            out.push(Case {
                name: format!("=== {spec} {label}"),
                workload: w,
                config: Config::build(what, text, sets, None).map_err(|e| e.to_string()),
            });
        }
    }
    out
}

/// What a design case gives: the loop copy it runs (`rejected` when the configuration or the
/// simulator refused it) and its result JSON (or the sentence that refused it).
pub fn run_design(case: &Case, batches: &[Batch]) -> (String, String) {
    let cfg = match &case.config {
        Ok(c) => c,
        Err(e) => return ("rejected".into(), format!("rejected: {e}")),
    };
    let mut s = match sim::Simulator::new(cfg) {
        Ok(s) => s,
        Err(e) => return ("rejected".into(), format!("rejected: {e}")),
    };
    for b in batches {
        if let Err(e) = s.batch(b) {
            return (s.variant().into(), format!("error: {e}"));
        }
    }
    s.check_invariants().expect("invariants");
    (s.variant().into(), s.result(WORKLOADS[case.workload]).to_json())
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
