//! Section 4.8's baselines as configurations (seed 000): the Clustered TLB (`[cluster_tlb]`)
//! and the ideal direct segment (`[direct_segment]`), on small traces whose counts are worked
//! out by hand, and on the mixed trace (every translation the page table's, invariants hold).

use std::sync::{Arc, Mutex};
use xlat_core::sim::observer::{AccessObserver, Observed, Translated};
use xlat_core::stats::{Counters, Sink};
use xlat_core::Simulator;
use xlat_trace::{Access, AccessKind, Batch};

use crate::common;
use common::{mixed_trace, mmap, munmap, preset, run, ANON};

const BASE: u64 = 0x7000_0000_0000;
const PAGE: u64 = 4096;

fn load(b: &mut Batch, va: u64) {
    let ic = b.len() as u64 + 1;
    b.push_access(Access { addr: va, icount: ic, tid: 1, size: 8, kind: AccessKind::Load });
}

/// Every translation the observer saw, to check against the page table.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(u64, u64, Translated)>>>);

impl AccessObserver for Seen {
    fn access(&mut self, a: &Observed) {
        self.0.lock().unwrap().push((a.va, a.pfn(), a.at));
    }
}

impl Counters for Seen {
    fn counters(&self, _: &mut dyn Sink) {}
}

/// Run `batches` observed; check every translation against the OS's page table.
fn run_checked(cfg: &xlat_core::config::Config, batches: &[Batch]) -> std::collections::BTreeMap<String, u64> {
    let seen = Seen::default();
    let log = seen.0.clone();
    let (s, c) = run(Simulator::with_observer(cfg, seen).expect("simulator"), batches);
    for &(va, pfn, at) in log.lock().unwrap().iter() {
        if at == Translated::Untranslated {
            continue;
        }
        let (page, size) = s.os().lookup(va).expect("mapped");
        assert_eq!(pfn, page + ((va & (size.bytes() - 1)) >> 12), "{va:#x} at {at:?}");
    }
    c
}

#[test]
fn a_clustered_tlb_hits_the_other_pages_of_a_walked_cluster() {
    // 64 MiB eagerly paged with 4KB pages: contiguous frames from an aligned buddy block, so
    // each 8-page virtual cluster maps to one physical cluster, every page valid.
    let mut b = Batch::default();
    mmap(&mut b, BASE, 64 << 20, ANON);
    // Page 0 walks (fills cluster 0), 1 and 7 hit it, 8 walks (cluster 1), 2 hits cluster 0,
    // 0 again hits the L1, 9 hits cluster 1.
    for p in [0, 1, 7, 8, 2, 0, 9] {
        load(&mut b, BASE + p * PAGE + 0x10);
    }
    let cfg = preset("skylake", &["os.allocation=eager", "cluster_tlb.enabled=true"]);
    let c = run_checked(&cfg, std::slice::from_ref(&b));
    // (The staged loop, compiled for the plain walker and memory with the staged probe in.)
    let (s, staged) = run(Simulator::new(&cfg).expect("simulator"), std::slice::from_ref(&b));
    assert_eq!((s.variant(), s.shape()), ("staged", "skylake"));
    assert_eq!(staged, c);
    assert_eq!(c["walker.walks"], 2);
    assert_eq!(c["cluster_tlb.hits"], 4);
    assert_eq!(c["cluster_tlb.fills"], 2);
    // Probed with the STLB on every first-level miss: 6 of the 7 loads.
    assert_eq!(c["cluster_tlb.accesses"], 6);
    assert_eq!(c["tlb_level2.data.lookups"], 6);
    assert_eq!(c["tlb_level2.data.hits"], 4);
    assert_eq!(c["cluster_tlb.misses"], 2);
    // A hit fills the L1 only (pages 1, 7, 2, 9 are not in the STLB: 2 fills there, the walks).
    assert_eq!(c["tlb.stlb.fills"], 2);

    // munmap of page 12 drops cluster 1's entry (pages 8..15): page 3 still hits cluster 0,
    // page 10 walks and fills cluster 1 again.
    let mut b2 = Batch::default();
    munmap(&mut b2, BASE + 12 * PAGE, PAGE);
    load(&mut b2, BASE + 3 * PAGE);
    load(&mut b2, BASE + 10 * PAGE);
    let c = run_checked(&cfg, &[b.clone(), b2]);
    assert_eq!(c["cluster_tlb.invalidations"], 1);
    assert_eq!(c["cluster_tlb.hits"], 5, "page 3 hits cluster 0; page 10's cluster was dropped");
    assert_eq!(c["walker.walks"], 3);
    assert_eq!(c["cluster_tlb.fills"], 3);
}

#[test]
fn pages_of_2mb_entries_are_not_clustered() {
    // THP with eager paging: 2MB pages only; their walks fill nothing in the clustered TLB.
    let mut b = Batch::default();
    mmap(&mut b, BASE, 64 << 20, ANON);
    for p in [0, 1, 600, 601] {
        load(&mut b, BASE + p * PAGE);
    }
    let cfg = preset("skylake", &["os.allocation=eager", "os.policy=thp", "cluster_tlb.enabled=true"]);
    let c = run_checked(&cfg, std::slice::from_ref(&b));
    assert_eq!((c["walker.walks"], c["cluster_tlb.fills"], c["cluster_tlb.hits"]), (2, 0, 0));
}

#[test]
fn the_direct_segment_translates_exactly_the_largest_range() {
    // Two eager mappings, each one range: 64 MiB at BASE (the largest) and 16 MiB at OTHER.
    const OTHER: u64 = 0x7100_0000_0000;
    let mut b = Batch::default();
    mmap(&mut b, BASE, 64 << 20, ANON);
    mmap(&mut b, OTHER, 16 << 20, ANON);
    // BASE pages 0, 100, 2000: segment hits (no walk); OTHER pages 0, 5: walks; BASE page 0
    // and OTHER page 0 again: L1 hits.
    for va in [BASE, BASE + 100 * PAGE, BASE + 2000 * PAGE, OTHER, OTHER + 5 * PAGE, BASE + 8, OTHER + 8] {
        load(&mut b, va);
    }
    let sets = ["os.allocation=eager", "os.ranges=contiguous", "direct_segment.enabled=true"];
    let cfg = preset("skylake", &sets);
    let c = run_checked(&cfg, std::slice::from_ref(&b));
    let (s, staged) = run(Simulator::new(&cfg).expect("simulator"), std::slice::from_ref(&b));
    assert_eq!((s.variant(), staged), ("staged", c.clone()));
    assert_eq!(c["os.ranges"], 2);
    assert_eq!(c["direct_segment.hits"], 3);
    assert_eq!(c["direct_segment.accesses"], 5);
    assert_eq!(c["direct_segment.misses"], 2);
    assert_eq!(c["walker.walks"], 2);
    // Loaded once: the second mapping's range is smaller.
    assert_eq!(c["direct_segment.loads"], 1);
    assert_eq!(c["tlb.stlb.fills"], 2, "a segment hit fills the L1 only");

    // munmap of BASE's last 4 MiB: the segment is dropped and reloaded with the 60 MiB left.
    let mut b2 = Batch::default();
    munmap(&mut b2, BASE + (60 << 20), 4 << 20);
    load(&mut b2, BASE + 3000 * PAGE);
    load(&mut b2, OTHER + 9 * PAGE);
    let c = run_checked(&cfg, &[b.clone(), b2]);
    assert_eq!((c["direct_segment.invalidations"], c["direct_segment.loads"]), (1, 2));
    assert_eq!((c["direct_segment.hits"], c["walker.walks"]), (4, 3));
}

#[test]
fn with_both_baselines_every_translation_is_the_page_tables_and_invariants_hold() {
    // (1 GiB of 1GB pages: the 2 GiB of 4KB pages are the largest range, so the segment's
    // 4KB fills of the L1 are the ones walks would make.)
    let batches = mixed_trace(60_000, common::G, false);
    let plain = preset("skylake", &["os.allocation=eager", "os.ranges=contiguous"]);
    let (_, p) = run(Simulator::new(&plain).expect("simulator"), &batches);
    // Each alone, then both (the segment covers the 4KB pages, so the clustered TLB is left
    // nothing to do: 2MB and 1GB pages are not clustered).
    let base = ["os.allocation=eager", "os.ranges=contiguous"];
    for (extra, name) in [
        (&["cluster_tlb.enabled=true"][..], "cluster"),
        (&["direct_segment.enabled=true"][..], "segment"),
        (&["cluster_tlb.enabled=true", "direct_segment.enabled=true"][..], "both"),
    ] {
        let sets: Vec<&str> = base.iter().chain(extra).copied().collect();
        let c = run_checked(&preset("skylake", &sets), &batches);
        // Level 2 is probed as often as before: the baselines turn some of its misses into hits.
        for role in ["data", "instruction"] {
            let k = format!("tlb_level2.{role}.lookups");
            assert_eq!(c[&k], p[&k], "{name} {role}");
        }
        assert!(c["walker.walks"] < p["walker.walks"], "{name}");
        let cl = c.get("cluster_tlb.hits").copied();
        let ds = c.get("direct_segment.hits").copied();
        match name {
            "cluster" => assert!(cl > Some(0) && ds.is_none()),
            "segment" => assert!(ds > Some(0) && cl.is_none() && c["direct_segment.loads"] >= 1),
            _ => assert_eq!(cl, Some(0)),
        }
    }
}

#[test]
fn disabled_baselines_run_the_plain_loop_with_todays_counters() {
    let batches = mixed_trace(30_000, common::G, true);
    let (s0, a) = run(Simulator::new(&preset("skylake", &[])).expect("simulator"), &batches);
    let off = preset("skylake", &["cluster_tlb.enabled=false", "direct_segment.enabled=false"]);
    let s = Simulator::new(&off).expect("simulator");
    assert_eq!(s.variant(), "plain");
    let (_, b) = run(s, &batches);
    assert_eq!(a, b);
    assert_eq!(s0.variant(), "plain");
}

#[test]
fn the_baseline_configs_are_the_sandybridge_preset_with_their_keys() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/rmm");
    let rtlb = "range_tlb=[{name = \"range\", entries = 32, stage = 2, latency = 7}]";
    for (file, sets) in [
        ("4k", &["os.policy=4k"][..]),
        ("thp", &["os.policy=thp", "os.thp=always"][..]),
        ("1g", &["os.policy=1g", "os.thp=always"][..]),
        (
            "ctlb",
            &[
                "os.allocation=eager",
                "cluster_tlb.entries=512",
                "cluster_tlb.cluster=8",
                "cluster_tlb.stage=2",
                "cluster_tlb.latency=7",
            ][..],
        ),
        (
            "ds",
            &["os.allocation=eager", "os.ranges=contiguous", "direct_segment.stage=2", "direct_segment.latency=7"][..],
        ),
        ("rmm", &["os.allocation=eager", "os.ranges=contiguous", rtlb][..]),
    ] {
        let path = format!("{dir}/{file}.toml");
        let text = std::fs::read_to_string(&path).expect("config file");
        let cfg = xlat_core::config::Config::from_toml(&path, &text, &[]).expect("valid");
        let mut got = cfg.to_json();
        let mut want = preset("sandybridge", sets).to_json();
        for k in ["name", "description", "source"] {
            got.as_object_mut().unwrap().remove(k);
            want.as_object_mut().unwrap().remove(k);
        }
        assert_eq!(got, want, "{file}");
    }
}
