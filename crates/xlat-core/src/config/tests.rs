//! Tests of configuration parsing, overrides and validation.

use super::*;
use crate::array::Replacement;

const MIN: &str = r#"
name = "t"
[[tlb]]
name = "l1"
level = 1
role = "data"
entries = 64
ways = 4
page_sizes = ["4KB"]
"#;

fn bad(extra: &str, sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Config::from_toml("t.toml", &format!("{MIN}{extra}"), &sets).unwrap_err().0
}

#[test]
fn minimal_config_parses_with_defaults() {
    let c = Config::from_toml("t.toml", MIN, &[]).unwrap();
    assert_eq!(c.os.levels, 4);
    assert_eq!(c.memory.size.0, 64 << 30);
    assert_eq!(c.tlb[0].replacement, Replacement::Lru);
}

#[test]
fn bad_configurations_name_the_field() {
    let e = bad("", &["tlb.l1.ways=5"]);
    assert!(e.contains("tlb 'l1'") && e.contains("ways = 5 does not divide entries = 64"), "{e}");
    let e = bad("", &["tlb.l1.page_sizes=[\"8KB\"]"]);
    assert!(e.contains("tlb[0] ('l1').page_sizes[0]") && e.contains("8KB"), "{e}");
    let e = bad("", &["memory.size=-4"]);
    assert!(e.contains("memory.size") && e.contains("negative"), "{e}");
    let e = bad("", &["tlb.l1.entires=4"]);
    assert!(e.contains("tlb[0] ('l1')") && e.contains("unknown field `entires`"), "{e}");
    let e = bad("[os]\nlevel = 4\n", &[]);
    assert!(e.contains("os") && e.contains("unknown field `level`"), "{e}");
    let e = bad("", &["tlb.l9.ways=4"]);
    assert!(e.starts_with("--set 'tlb.l9.ways=4': there is no tlb named 'l9' (this configuration's: '"), "{e}");
    assert!(!e.contains('\n'));
}

#[test]
fn set_overrides_apply() {
    let c = Config::from_toml("t", MIN, &["tlb.l1.entries=128".into(), "os.policy=thp".into()]).unwrap();
    assert_eq!(c.tlb[0].entries, 128);
    assert_eq!(c.os.policy, Policy::Thp);
    assert_ne!(c.hash_hex(), Config::from_toml("t", MIN, &[]).unwrap().hash_hex());
}

#[test]
fn set_adds_changes_and_removes_a_whole_structure() {
    let sets = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // add an L2 TLB that the configuration does not have
    let add =
        r#"tlb.l2={level = 2, role = "unified", entries = 1024, ways = 8, page_sizes = ["4KB", "2MB"], latency = 7}"#;
    let c = Config::from_toml("t", MIN, &sets(&[add])).unwrap();
    assert_eq!(c.tlb.len(), 2);
    let l2 = c.tlb.iter().find(|t| t.name == "l2").unwrap();
    assert_eq!((l2.level, l2.entries, l2.ways, l2.latency), (2, 1024, 8, 7));
    // the same as writing it in the file
    let file = format!(
        "{MIN}[[tlb]]\nname = \"l2\"\nlevel = 2\nrole = \"unified\"\nentries = 1024\nways = 8\npage_sizes = [\"4KB\", \"2MB\"]\nlatency = 7\n"
    );
    assert_eq!(c.hash_hex(), Config::from_toml("t", &file, &[]).unwrap().hash_hex());
    // then a field of it, several fields of an existing one, and a removal
    let c =
        Config::from_toml("t", MIN, &sets(&[add, "tlb.l2.entries=2048", "tlb.l1={entries = 32, ways = 2}"])).unwrap();
    assert_eq!((c.tlb[1].entries, c.tlb[0].entries, c.tlb[0].ways), (2048, 32, 2));
    let l1b = r#"tlb.l1b={level = 1, role = "data", entries = 32, ways = 4, page_sizes = ["4KB"]}"#;
    let c = Config::from_toml("t", MIN, &sets(&[add, l1b, "tlb.l1={remove = true}"])).unwrap();
    assert_eq!(c.tlb.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["l2", "l1b"]);
    // a structure kind the configuration has none of yet
    let c = Config::from_toml("t", MIN, &sets(&[r#"psc.pde={caches = "pde", entries = 32, ways = 4}"#])).unwrap();
    assert_eq!((c.psc.len(), c.psc[0].name.as_str(), c.psc[0].entries), (1, "pde", 32));
    // mistakes are one sentence
    let e = bad("", &["tlb.l2={level = 2, entries = 64}"]);
    assert!(e.contains("tlb[1] ('l2')") && e.contains("missing field"), "{e}");
    let e = bad("", &["tlb.l9={remove = true}"]);
    assert!(e.contains("there is no tlb named 'l9' to remove (this configuration's: 'l1')"), "{e}");
    let e = bad("", &["tlb.l1=64"]);
    assert!(e.contains("give a field (tlb.l1.FIELD=VALUE), or a table of fields"), "{e}");
    let e = bad("", &[r#"tlb.l2={name = "l3", level = 2}"#]);
    assert!(e.contains("the table names tlb \"l3\", not 'l2'"), "{e}");
    let e = bad("", &["tlb.l1={remove = true, entries = 4}"]);
    assert!(e.contains("remove = true takes no other field"), "{e}");
    for e in [bad("", &["tlb.l2={level = 2, entries = 64}"]), bad("", &["tlb.l1=64"])] {
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn memory_kinds_and_os_policies() {
    let kinds = "[memory]\n[[memory.kinds]]\nname = \"dram\"\nsize = \"4GiB\"\nread_latency = 150\n[[memory.kinds]]\nname = \"nvm\"\nsize = \"8GiB\"\nread_latency = 600\n";
    let c = Config::from_toml("t", &format!("{MIN}{kinds}"), &["memory.kinds.nvm.write_latency=2000".into()]).unwrap();
    assert_eq!(c.memory.size.0, 12 << 30, "memory.size left out: the sum");
    assert_eq!(c.memory.dram_latency, 150, "the first kind's read latency");
    assert_eq!(c.memory.kinds[1].write_latency, 2000);
    assert!(c.to_json()["memory"].get("kinds").is_some());
    let d = Config::from_toml("t", MIN, &[]).unwrap();
    assert!(d.to_json()["memory"].get("kinds").is_none(), "absent by default: results unchanged");
    assert!(d.to_json()["os"].get("allocation").is_none());
    let e = bad(kinds, &["memory.size=8GiB"]);
    assert!(e.contains("memory.size = 8589934592 must equal the sum of the memory.kinds sizes (12884901888)"), "{e}");
    let e = bad(kinds, &["memory.dram_latency=100"]);
    assert!(e.contains("give memory.dram_latency or memory.kinds, not both"), "{e}");
    let e = bad(kinds, &["memory.kinds.nvm.size=3MiB"]);
    assert!(
        e.contains("memory kind 'nvm' (memory.kinds[1]): size = 3145728 must be a positive multiple of 2MiB"),
        "{e}"
    );
    let e = bad(kinds, &["memory.kinds.nvm.name=\"dram\""]);
    assert!(e.contains("memory kind 'dram' (memory.kinds[1]): the name is used twice"), "{e}");
    let e = bad(kinds, &["memory.kinds.nvm.read_energy_pj=-1.0"]);
    assert!(e.contains("read_energy_pj = -1 must be a finite number >= 0"), "{e}");
    let c = Config::from_toml(
        "t",
        &format!("{MIN}{kinds}"),
        &[
            "os.tiering=highest-first",
            "os.allocation=eager",
            "os.eager_max_order=10",
            "os.ranges=contiguous",
            "os.range_threshold=64KiB",
            "os.reclaim=fifo",
            "os.metadata=registry",
        ]
        .map(String::from),
    )
    .unwrap();
    assert_eq!(
        (c.os.tiering, c.os.allocation, c.os.eager_max_order),
        (TieringPolicy::HighestFirst, Allocation::Eager, Some(10))
    );
    assert_eq!(
        (c.os.ranges, c.os.range_threshold.0, c.os.reclaim, c.os.metadata),
        (RangePolicy::Contiguous, 64 << 10, ReclaimPolicy::Fifo, MetadataPolicy::Registry)
    );
    for (sets, want) in [
        (&["os.tiering=highest-first"][..], "os.tiering = \"highest-first\" needs at least two memory.kinds"),
        (&["os.eager_max_order=3"][..], "os.eager_max_order only applies to os.allocation = \"eager\""),
        (&["os.eager_placement=any"][..], "os.eager_placement only applies to os.allocation = \"eager\""),
        (&["os.eager_files=true"][..], "os.eager_files only applies to os.allocation = \"eager\""),
        (&["os.eager_promote=false"][..], "os.eager_promote only applies to os.allocation = \"eager\""),
        (
            &["os.allocation=eager", "os.eager_max_order=19"][..],
            "os.eager_max_order = 19 must be at most memory.max_order = 18",
        ),
        (&["os.range_threshold=64KiB"][..], "os.range_threshold only applies to os.ranges = \"contiguous\""),
        (
            &["os.ranges=contiguous", "os.range_threshold=1000"][..],
            "os.range_threshold = 1000 must be a positive multiple of 4KiB",
        ),
        (&["os.reclaim=lru"][..], "unknown variant `lru`, expected `none` or `fifo`"),
    ] {
        let e = bad("", sets);
        assert!(e.contains(want), "{e}");
    }
}

#[test]
fn walker_kinds_and_range_tlbs_are_checked() {
    let e = bad("[walker]\ntrap_cycles = 5\n", &[]);
    assert!(e.contains("apply to walker.kind = \"software\" only"), "{e}");
    let psc = "[[psc]]\nname = \"pde\"\ncaches = \"pde\"\nentries = 4\nways = 4\n";
    let e = bad(&format!("{psc}[walker]\nkind = \"software\"\n"), &[]);
    assert!(e.contains("uses no paging-structure caches"), "{e}");
    let e = bad("[walker]\nkind = \"software\"\n", &["os.levels=5"]);
    assert!(e.contains("needs os.levels = 4"), "{e}");
    let c = Config::from_toml("t.toml", &format!("{MIN}[walker]\nkind = \"software\"\n"), &[]).unwrap();
    assert_eq!(c.walker.kind, WalkerKind::Software);
    let r = "[[range_tlb]]\nname = \"r\"\nentries = 32\nstage = 2\n";
    let c = Config::from_toml("t.toml", &format!("{MIN}{r}"), &["range_tlb.r.entries=16".into()]).unwrap();
    assert_eq!(c.range_tlb[0].entries, 16);
    // An L1 range TLB (stage 1) with an MRU pointer; without `mru` the JSON has no key for it.
    let sets = ["range_tlb.r.stage=1".into(), "range_tlb.r.mru=true".into()];
    let c = Config::from_toml("t.toml", &format!("{MIN}{r}"), &sets).unwrap();
    assert_eq!((c.range_tlb[0].stage, c.range_tlb[0].mru), (1, true));
    let c = Config::from_toml("t.toml", &format!("{MIN}{r}"), &[]).unwrap();
    assert!(c.to_json()["range_tlb"][0].get("mru").is_none());
    for (set, want) in [
        ("range_tlb.r.stage=0", "stage = 0 must be between 1 and 2"),
        ("range_tlb.r.stage=3", "stage = 3 must be between 1 and 2"),
        ("range_tlb.r.entries=0", "entries = 0 must be between 1 and 1024"),
        ("range_tlb.r.name=\"l1\"", "the name is used twice"),
    ] {
        let e = bad(r, &[set]);
        assert!(e.contains(want), "{set}: {e}");
    }
    // Absent by default: the configuration's JSON (and its hash) are today's.
    let plain = Config::from_toml("t.toml", MIN, &[]).unwrap().to_json();
    assert!(plain.get("range_tlb").is_none() && plain["walker"].get("kind").is_none());
}

#[test]
fn the_clustered_tlb_and_the_direct_segment_are_checked() {
    // Defaults: section 4.8's 512 entries of 8-page clusters, with the L2 TLB (stage 2).
    let c = Config::from_toml("t.toml", &format!("{MIN}[cluster_tlb]\n"), &["tlb.l1.level=2".into()]);
    assert!(c.is_err(), "no level 1 left");
    let two = "[[tlb]]\nname = \"l2\"\nlevel = 2\nrole = \"unified\"\nentries = 64\nways = 4\npage_sizes = [\"4KB\"]\n";
    let c = Config::from_toml("t.toml", &format!("{MIN}{two}[cluster_tlb]\n"), &[]).unwrap();
    let t = c.cluster_tlb().expect("enabled by default");
    assert_eq!((t.entries, t.cluster, t.stage, t.latency), (512, 8, 2, 0));
    // Enabled from an overlay alone.
    let c = Config::from_toml("t.toml", MIN, &["direct_segment.enabled=true".into(), "os.ranges=contiguous".into()])
        .unwrap();
    assert_eq!(c.direct_segment().map(|d| d.stage), Some(2));
    let c = Config::from_toml("t.toml", MIN, &["cluster_tlb.enabled=false".into()]).unwrap();
    assert!(c.cluster_tlb().is_none());
    for (set, want) in [
        ("cluster_tlb.entries=0", "cluster_tlb.entries = 0 must be between 1 and 65536."),
        ("cluster_tlb.cluster=6", "cluster_tlb.cluster = 6 must be 2, 4 or 8 pages"),
        ("cluster_tlb.cluster=16", "cluster_tlb.cluster = 16 must be 2, 4 or 8 pages"),
        ("cluster_tlb.stage=1", "cluster_tlb.stage = 1 must be between 2 and 2"),
        (
            "direct_segment.enabled=true",
            "direct_segment holds the largest range translation, so it needs os.ranges = \"contiguous\".",
        ),
    ] {
        let e = bad("", &[set]);
        assert!(e.contains(want), "{set}: {e}");
    }
    let e = bad("", &["os.ranges=contiguous", "direct_segment.stage=4"]);
    assert!(e.contains("direct_segment.stage = 4 must be between 2 and 2"), "{e}");
    // Absent by default: the configuration's JSON (and its hash) are today's.
    let plain = Config::from_toml("t.toml", MIN, &[]).unwrap().to_json();
    assert!(plain.get("cluster_tlb").is_none() && plain.get("direct_segment").is_none());
}

#[test]
fn latencies_cycles_energies_and_the_cpi_are_bounded() {
    // Issue 24 item 3: an infinite or huge CPI made the time estimate inf (null in JSON, a
    // traceback in the table printer).
    for v in ["inf", "1e308", "nan", "-1"] {
        let e = bad("", &[&format!("sim.base_cpi={v}")]);
        assert!(e.contains("sim.base_cpi") && e.contains("must be between 0 and 10000"), "{v}: {e}");
    }
    assert_eq!(Config::from_toml("t", MIN, &["sim.base_cpi=10000".into()]).unwrap().sim.base_cpi, 10_000.0);
    // Item 4: a memory latency of 2^62 wrapped walker.cycles around 2^64.
    let e = bad("", &["memory.dram_latency=4611686018427387904"]);
    assert_eq!(
        e,
        "config 't': memory.dram_latency = 4611686018427387904 must be a whole number of cycles of at most 100000."
    );
    assert!(Config::from_toml("t", MIN, &["memory.dram_latency=100000".into()]).is_ok());
    let e = bad("", &["memory.dram_latency=100001"]);
    assert!(e.contains("memory.dram_latency = 100001"), "{e}");
    // Any latency or cycle count, wherever it is: a TLB level's, the walker's trap.
    let e = bad("", &["tlb.l1.latency=1000000"]);
    assert!(e.contains("tlb[0].latency = 1000000 must be a whole number of cycles"), "{e}");
    let e = bad("[walker]\nkind = \"software\"\n", &["walker.trap_cycles=200000"]);
    assert!(e.contains("walker.trap_cycles = 200000"), "{e}");
    // Energies per access at most a microjoule.
    let kinds = "[[memory.kinds]]\nname = \"dram\"\nsize = \"1GiB\"\nread_latency = 100\nwrite_latency = 100\nread_energy_pj = 1e300\nwrite_energy_pj = 1.0\nstatic_power_mw = 0.0\n";
    let e = bad(kinds, &[]);
    assert!(e.contains("read_energy_pj = 1e+300 must be between 0 and 1000000"), "{e}");
}

#[test]
fn empty_names_low_max_orders_and_multi_line_sets_are_refused() {
    let e = Config::from_toml("t.toml", &MIN.replace("name = \"t\"", "name = \"\""), &[]).unwrap_err().0;
    assert_eq!(e, "config: name is empty; give the configuration a name (it labels every result).");
    let e = bad("", &["name=\"  \""]);
    assert!(e.starts_with("config: name is empty"), "{e}");
    for k in [0, 8, 21] {
        let e = bad("", &[&format!("memory.max_order={k}")]);
        assert_eq!(
            e,
            format!("config 't': memory.max_order = {k} must be between 9 (2MB blocks) and 20 (4GB blocks).")
        );
    }
    assert!(Config::from_toml("t.toml", MIN, &["memory.max_order=9".into()]).is_ok());
    // The value "32" then a second line: refused as a whole, not read as 32.
    let e = bad("", &["tlb.l1.entries=32\nmemory.max_order=0"]);
    assert_eq!(e, "--set 'tlb.l1.entries=32\\nmemory.max_order=0' holds a line break; give one key=value on one line.");
    assert_eq!(e.lines().count(), 1);
}

#[test]
fn a_configuration_extends_a_preset_merging_structures_by_name() {
    let sky = Config::from_toml("skylake", crate::presets::get("skylake").unwrap(), &[]).unwrap();
    let text = r#"
extends = "skylake"
name = "sky-big"
[[tlb]]
name = "stlb"
entries = 3072
[[psc]]
name = "pml4e"
remove = true
[[psc]]
name = "pml4e-big"
caches = "pml4e"
entries = 8
ways = 8
[memory]
dram_latency = 300
"#;
    let c = Config::from_toml("sky-big.toml", text, &[]).unwrap();
    assert_eq!(c.name, "sky-big");
    assert_eq!(c.description, sky.description, "what the file does not give is the preset's");
    let stlb = c.tlb.iter().find(|t| t.name == "stlb").unwrap();
    let stlb0 = sky.tlb.iter().find(|t| t.name == "stlb").unwrap();
    assert_eq!((stlb.entries, stlb.ways), (3072, stlb0.ways), "a named entry changes only the fields given");
    assert_eq!(c.tlb.len(), sky.tlb.len());
    let pscs: Vec<&str> = c.psc.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(pscs, ["pdpte", "pde", "pml4e-big"], "removed, kept in order, appended");
    assert_eq!(c.memory.dram_latency, 300);
    assert_eq!(c.memory.size, sky.memory.size);
    // The same file without its changes is the preset itself (but for the name).
    let same = Config::from_toml("same.toml", "extends = \"skylake\"\n", &[]).unwrap();
    assert_eq!(same.to_json(), sky.to_json());
}

#[test]
fn a_bad_extends_is_one_sentence() {
    for (text, want) in [
        ("extends = \"pentium\"\n", "f.toml: extends = \"pentium\" names no preset (known: sandybridge, "),
        ("extends = 3\n", "f.toml: extends must name a preset"),
        ("extends = \"zen4\"\n[[tlb]]\nentries = 8\n", "needs a name"),
        ("extends = \"zen4\"\n[[tlb]]\nname = \"nope\"\nremove = true\n", "the preset has no tlb named 'nope'"),
        ("extends = \"zen4\"\n[[tlb]]\nname = \"l1d\"\nremove = 1\n", "remove must be true or false"),
    ] {
        let e = Config::from_toml("f.toml", text, &[]).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
        assert!(!e.contains('\n'));
    }
}
