//! Hashed page tables (`[hashed_pt]`, `mmu/walker/hashed.rs`) by hand: a cuckoo lookup probes
//! one entry per way of each page size it checks, in parallel; the cuckoo walk cache narrows it
//! to one size; a growth migrates every old entry once; a chained lookup walks its chain in
//! series; unmapped pages leave the table.

use std::collections::BTreeMap;
use xlat_core::config::Config;
use xlat_core::Simulator;
use xlat_trace::{Access, AccessKind, Batch};

use crate::common::{mmap, munmap, run, walk_machine, ANON};

/// The hand-derivation machine (`common::walk_machine`) with `[hashed_pt]` `hashed` (TOML
/// key = value lines) and the OS policy `policy`.
fn machine(hashed: &str, policy: &str) -> Config {
    walk_machine("hashed-test", &format!("policy = \"{policy}\""), &format!("[hashed_pt]\n{hashed}"))
}

const BASE: u64 = 0x7000_0000_0000;

fn load(b: &mut Batch, i: usize, addr: u64) {
    b.push_access(Access { addr, icount: i as u64 + 1, tid: 1, size: 8, kind: AccessKind::Load });
}

/// Loads at `addrs` in a 1 GiB anonymous mapping at BASE.
fn counts(cfg: &Config, addrs: &[u64]) -> BTreeMap<String, u64> {
    let mut b = Batch::default();
    mmap(&mut b, BASE, 1 << 30, ANON);
    for (i, &a) in addrs.iter().enumerate() {
        load(&mut b, i, a);
    }
    run(Simulator::new(cfg).expect("simulator"), &[b]).1
}

/// `n` pages 8 pages apart: each its own cluster (a new entry).
fn clusters(n: u64) -> Vec<u64> {
    (0..n).map(|i| BASE + i * 8 * 4096).collect()
}

#[test]
fn a_cuckoo_lookup_probes_each_way_once_in_parallel_at_any_occupancy() {
    for d in [2u64, 3, 4, 8] {
        let cfg = machine(&format!("kind = \"cuckoo\"\nways = {d}\nentries = 1024\n"), "4k");
        let c = counts(&cfg, &clusters(500));
        assert_eq!(c["walker.walks"], 500);
        assert_eq!(c["walker.loads"], 500 * d, "{d} ways: one probe each");
        assert_eq!(c["walker.cycles"], 500 * 100, "{d} ways: parallel probes cost one latency");
        assert_eq!(c["hpt.inserts"], 500);
        assert_eq!(c["hpt.4kb.entries"], 500);
        assert_eq!(c["hpt.4kb.slots"], 1024 * d);
    }
    // Eight pages of one cluster: one entry, one insert.
    let cfg = machine("kind = \"cuckoo\"\nways = 3\n", "4k");
    let c = counts(&cfg, &(0..8).map(|i| BASE + i * 4096).collect::<Vec<_>>());
    assert_eq!((c["hpt.inserts"], c["hpt.4kb.entries"], c["walker.loads"]), (1, 1, 8 * 3));
    // 90% full with 3 ways: still 3 probes per lookup; the inserts displaced entries to get there.
    let cfg = machine("kind = \"cuckoo\"\nways = 3\nentries = 64\nresize_at = 0.95\nmax_kicks = 500\n", "4k");
    let c = counts(&cfg, &clusters(172));
    assert_eq!((c["hpt.4kb.entries"], c["hpt.4kb.slots"], c["hpt.resizes"]), (172, 192, 0));
    assert_eq!(c["walker.loads"], 172 * 3);
    assert!(c["hpt.kicks"] > 0, "at 90% occupancy some inserts displace");
}

#[test]
fn every_page_size_the_space_has_is_probed_unless_the_walk_cache_says_which() {
    // 2MB pages (THP) for the first 512 MiB, 4KB pages above (madvise is not needed: thp
    // "always"; the second mapping is hugetlb-free 4KB because its VMA is not 2MB-aligned).
    let mut b = Batch::default();
    mmap(&mut b, BASE, 1 << 30, ANON);
    let small = 0x7100_0000_1000u64;
    mmap(&mut b, small, 1 << 20, ANON);
    let addrs = [BASE, small, BASE + (2 << 20), small + 8 * 4096];
    for (i, &a) in addrs.iter().enumerate() {
        load(&mut b, i, a);
    }
    let no_cwc = machine("kind = \"cuckoo\"\nways = 3\n", "thp");
    let c = run(Simulator::new(&no_cwc).expect("simulator"), std::slice::from_ref(&b)).1;
    assert_eq!((c["walker.walks_2m"], c["walker.walks_4k"]), (2, 2));
    // Walk 1: only the 2MB table has an entry (3); walk 2: both sizes (6); walks 3, 4: 6 each.
    assert_eq!(c["walker.loads"], 3 + 6 + 6 + 6);
    assert_eq!(c["walker.cycles"], 4 * 100);
    // With the walk cache: one size's ways, after the walk table's load on a miss (in series).
    let cwc = machine("kind = \"cuckoo\"\nways = 3\ncwc = { entries = 16, ways = 16 }\n", "thp");
    let c = run(Simulator::new(&cwc).expect("simulator"), &[b]).1;
    // Three 2MB regions: the last access is in the second's (a hit).
    assert_eq!((c["hpt.cwc.accesses"], c["hpt.cwc.hits"]), (4, 1));
    assert_eq!(c["hpt.cwt_loads"], 3);
    assert_eq!(c["walker.loads"], 3 * (1 + 3) + 3);
    assert_eq!(c["walker.cycles"], 3 * (100 + 100) + 100);
}

#[test]
fn a_growth_migrates_every_old_entry_once() {
    // 3 ways of 64 slots: past 0.5 x 192 = 96 entries the table grows (the 97th insert); the
    // 98th insert migrates 64 slots of each way, all of them: the 98 entries move once.
    let cfg = machine("kind = \"cuckoo\"\nways = 3\nentries = 64\nresize_at = 0.5\nrehash_per_insert = 64\n", "4k");
    let c = counts(&cfg, &clusters(98));
    assert_eq!(c["hpt.resizes"], 1);
    assert_eq!(c["hpt.rehash_moves"], 98);
    assert_eq!(c["hpt.rehash_bytes"], 98 * 128, "a 64-byte read and a 64-byte write each");
    assert_eq!((c["hpt.4kb.entries"], c["hpt.4kb.slots"]), (98, 3 * 128));
    assert_eq!(c["hpt.frames"], 3 * 2, "the old ways' frames freed: 128 slots are 2 frames a way");
    assert_eq!(c["walker.loads"], 98 * 3, "still one probe per way during and after the growth");
    // One slot a way per insert: the growth is still under way after one more insert.
    let cfg = machine("kind = \"cuckoo\"\nways = 3\nentries = 64\nresize_at = 0.5\nrehash_per_insert = 1\n", "4k");
    let c = counts(&cfg, &clusters(98));
    assert_eq!(c["hpt.resizes"], 1);
    assert!(c["hpt.rehash_moves"] <= 3, "one slot per way migrated: {}", c["hpt.rehash_moves"]);
    assert_eq!(c["hpt.frames"], 3 * 2 + 3, "both tables held while it grows");
}

#[test]
fn a_chained_lookup_loads_the_bucket_then_its_chain_in_series() {
    // 10 clusters in 64 buckets: a walk loads its bucket, then the chain up to its entry.
    let cfg = machine("kind = \"chained\"\nentries = 64\n", "4k");
    let c = counts(&cfg, &clusters(10));
    assert_eq!(c["walker.loads"], c["walker.walks"] + c["hpt.chain_loads"]);
    assert!(c["walker.loads"] >= 10 && c["walker.loads"] <= (1..=10).sum::<u64>());
    assert_eq!(c["walker.cycles"], c["walker.loads"] * 100, "loads in series");
    // 64 buckets and 64 clusters: no chain is longer than the clusters in its bucket.
    let c = counts(&cfg, &clusters(64));
    assert_eq!(c["hpt.4kb.entries"], 64);
    assert_eq!(c["walker.loads"], 64 + c["hpt.chain_loads"]);
}

#[test]
fn unmapped_pages_leave_the_table() {
    let cfg = machine("kind = \"cuckoo\"\nways = 2\n", "4k");
    let mut b = Batch::default();
    mmap(&mut b, BASE, 1 << 30, ANON);
    for (i, a) in clusters(100).into_iter().enumerate() {
        load(&mut b, i, a);
    }
    munmap(&mut b, BASE, 50 * 8 * 4096);
    let (s, c) = run(Simulator::new(&cfg).expect("simulator"), &[b]);
    assert_eq!((c["hpt.inserts"], c["hpt.removes"], c["hpt.4kb.entries"]), (100, 50, 50));
    s.check_invariants().expect("entries held = entries counted = clusters mapped");
}

#[test]
fn nonsense_is_one_sentence() {
    let bad = |hashed: &str| {
        let text = format!(
            "name = \"h\"\n[[tlb]]\nname = \"l1\"\nlevel = 1\nrole = \"unified\"\nentries = 4\nways = 4\npage_sizes = [\"4KB\"]\n[hashed_pt]\n{hashed}"
        );
        Config::from_toml("h", &text, &[]).expect_err("refused").to_string()
    };
    assert!(bad("kind = \"cuckoo\"\nways = 0\n").contains("hashed_pt.ways = 0 must be between 2 and 8"));
    assert!(bad("kind = \"cuckoo\"\nentries = 100\n").contains("must be a power of two"));
    assert!(
        bad("kind = \"chained\"\ncwc = { entries = 4, ways = 4 }\n").contains("cwc applies to kind = \"cuckoo\" only")
    );
    assert!(bad("kind = \"cuckoo\"\nresize_at = 0\n").contains("resize_at = 0 must be above 0"));
    assert!(bad("kind = \"linear\"\n").contains("unknown variant"));
    let text = "name = \"h\"\n[[tlb]]\nname = \"l1\"\nlevel = 1\nrole = \"unified\"\nentries = 4\nways = 4\npage_sizes = [\"4KB\"]\n[[psc]]\nname = \"pde\"\ncaches = \"pde\"\nentries = 4\nways = 4\n[hashed_pt]\nkind = \"cuckoo\"\n";
    let e = Config::from_toml("h", text, &[]).expect_err("refused").to_string();
    assert!(e.contains("no page-table levels for [[psc]] to cache"), "{e}");
}
