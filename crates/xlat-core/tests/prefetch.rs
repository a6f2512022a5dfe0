//! The TLB prefetcher (`[tlb_prefetch]`, mmu/prefetch.rs, designs/prefetch.rs): sequential and
//! distance prefetching into the STLB, counted by hand on short page sequences.

use crate::common::{self, mmap, run, ANON};
use xlat_core::{Config, Simulator};
use xlat_trace::{Access, AccessKind, Batch};

const BASE: u64 = 0x7f00_0000_0000;

/// A 1-entry L1 TLB over a 64-entry fully associative STLB, eager paging (every page of an
/// mmap mapped at once, so a prefetch finds its translation), and `prefetch` as the
/// `[tlb_prefetch]` table (none if empty).
fn machine(prefetch: &str) -> Config {
    let text = format!(
        r#"
name = "prefetch"
[memory]
size = "1GiB"
dram_latency = 100
[os]
allocation = "eager"
[[tlb]]
name = "l1"
level = 1
role = "unified"
entries = 1
ways = 1
page_sizes = ["4KB"]
[[tlb]]
name = "stlb"
level = 2
role = "unified"
entries = 64
ways = 64
page_sizes = ["4KB"]
[[cache]]
name = "L1"
size = "32KiB"
ways = 8
latency = 4
{prefetch}
"#
    );
    Config::from_toml("prefetch", &text, &[]).expect("valid")
}

/// Loads of the 4KB pages `pages` (page numbers from BASE) of a 64-page mapping.
fn loads(pages: &[u64]) -> Vec<Batch> {
    let mut b = Batch::default();
    mmap(&mut b, BASE, 64 << 12, ANON);
    for (i, p) in pages.iter().enumerate() {
        let addr = BASE + (p << 12) + 8;
        b.push_access(Access { addr, icount: i as u64 + 1, tid: 1, size: 8, kind: AccessKind::Load });
    }
    vec![b]
}

fn counts(prefetch: &str, pages: &[u64]) -> (String, std::collections::BTreeMap<String, u64>) {
    let s = Simulator::new(&machine(prefetch)).expect("simulator");
    let (s, c) = run(s, &loads(pages));
    (s.variant().to_string(), c)
}

#[test]
fn sequential_prefetching_by_hand() {
    let seq = "[tlb_prefetch]\nkind = \"sequential\"\ndegree = 2\n";
    // Walk p0 -> prefetch p1 p2; p1, p2 hit the STLB; walk p3 -> p4 p5; p4, p5 hit.
    let (copy, c) = counts(seq, &[0, 1, 2, 3, 4, 5]);
    assert_eq!(copy, "staged");
    assert_eq!(c["walker.walks"], 2);
    assert_eq!(c["tlb.stlb.hits"], 4);
    assert_eq!((c["tlb_prefetch.walks"], c["tlb_prefetch.candidates"], c["tlb_prefetch.filled"]), (2, 4, 4));
    assert_eq!((c["tlb_prefetch.held"], c["tlb_prefetch.unmapped"]), (0, 0));
    // Without the prefetcher every page walks, on the plain copy.
    let (copy, c) = counts("", &[0, 1, 2, 3, 4, 5]);
    assert_eq!((copy.as_str(), c["walker.walks"], c["tlb.stlb.hits"]), ("plain", 6, 0));
    assert!(!c.contains_key("tlb_prefetch.walks"));
    // Walk p1 -> p2 p3 filled; walk p0 -> p1 (demand-filled) and p2 (prefetched) held; walk
    // p63 -> p64 p65 lie past the mapping: unmapped (no fault is taken for them).
    let (_, c) = counts(seq, &[1, 0, 63]);
    assert_eq!(c["walker.walks"], 3);
    assert_eq!((c["tlb_prefetch.filled"], c["tlb_prefetch.held"], c["tlb_prefetch.unmapped"]), (2, 2, 2));
    assert_eq!(c["os.page_faults"], 0, "eager paging maps at mmap; a prefetch takes no fault");
}

#[test]
fn distance_prefetching_by_hand() {
    let dist = "[tlb_prefetch]\nkind = \"distance\"\nentries = 64\nslots = 2\n";
    // Stride 3, with walked pages in 4KB units:
    //   p0  walk: no previous walk.
    //   p3  walk: d = 3, row 3 empty; no previous distance to record.
    //   p6  walk: d = 3, row 3 empty (miss); row 3 records 3.
    //   p9  walk: d = 3, row 3 hits: prefetch p12 (filled); row 3 records 3 again.
    //   p12 STLB hit (no walk).
    //   p15 walk: d = 6, row 6 empty; row 3 records 6: [6, 3].
    //   p18 walk: d = 3, row 3 hits: prefetch p24 and p21 (filled); row 6 records 3.
    //   p21, p24 STLB hits.
    //   p27 walk: d = 9, row 9 empty; row 3 records 9: [9, 6].
    let pages: Vec<u64> = (0..10).map(|i| 3 * i).collect();
    let (copy, c) = counts(dist, &pages);
    assert_eq!(copy, "staged");
    assert_eq!(c["walker.walks"], 7);
    assert_eq!(c["tlb.stlb.hits"], 3);
    assert_eq!(c["tlb_prefetch.table_hits"], 2);
    assert_eq!((c["tlb_prefetch.candidates"], c["tlb_prefetch.filled"]), (3, 3));
}

#[test]
fn the_prefetcher_plugs_into_the_copies_with_the_staged_probe_and_is_checked() {
    let sky = |sets: &[&str]| common::preset("skylake", sets);
    let p = ["tlb_prefetch.kind=sequential"];
    assert_eq!(Simulator::new(&sky(&p)).unwrap().variant(), "staged");
    let with_prism = ["tlb_prefetch.kind=sequential", "os.metadata=registry", "prism.enabled=true"];
    assert_eq!(Simulator::new(&sky(&with_prism)).unwrap().variant(), "general");
    // Its own rules, one sentence each.
    let bad = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let text = xlat_core::presets::get("skylake").unwrap();
        Config::from_toml("skylake", text, &sets).unwrap_err().to_string()
    };
    let e = bad(&["tlb_prefetch.kind=sequential", "tlb_prefetch.tlb=l1d-4k"]);
    assert!(e.contains("is a level-1 TLB; the prefetcher fills a TLB of level 2 or deeper"), "{e}");
    let e = bad(&["tlb_prefetch.kind=sequential", "tlb_prefetch.tlb=nope"]);
    assert!(e.contains("tlb_prefetch.tlb = 'nope' names no [[tlb]]"), "{e}");
    let e = bad(&["tlb_prefetch.kind=sequential", "tlb_prefetch.degree=0"]);
    assert!(e.contains("tlb_prefetch.degree = 0 must be between 1 and 16"), "{e}");
    let e = bad(&["tlb_prefetch.kind=stride"]);
    assert!(e.contains("unknown variant `stride`"), "{e}");
}

#[test]
fn prefetching_a_stream_removes_walks_once_its_pages_are_mapped() {
    // A stream's first pass over 3.2MB: with eager paging (every page mapped at mmap),
    // sequential prefetching of degree 1 halves the walks (each walk prefetches the next page);
    // the accesses, faults and first-level misses are what they are without it. Under demand
    // paging every walk is a first touch whose next page is not mapped yet: nothing to prefetch.
    let run_with = |sets: &[&str]| {
        let cfg = common::preset("skylake", sets);
        let mut src = xlat_trace::source::open("workload:stream?size=64MiB&accesses=400000").unwrap();
        xlat_core::sim::simulate(src.as_mut(), "stream", &cfg, |_| {}).unwrap().counters
    };
    let off = run_with(&["os.allocation=eager"]);
    let on = run_with(&["os.allocation=eager", "tlb_prefetch.kind=sequential"]);
    for k in ["accesses", "os.page_faults", "tlb_level1.data.misses"] {
        assert_eq!(on[k], off[k], "{k}");
    }
    let (w_on, w_off) = (on["walker.walks"], off["walker.walks"]);
    assert!(w_on * 10 < w_off * 6 && w_on * 10 > w_off * 4, "{w_on} walks with, {w_off} without");
    assert_eq!(on["tlb_prefetch.walks"], w_on);
    let demand = run_with(&["tlb_prefetch.kind=sequential"]);
    assert_eq!(demand["walker.walks"], run_with(&[])["walker.walks"]);
    assert_eq!(demand["tlb_prefetch.unmapped"], demand["tlb_prefetch.candidates"]);
}
