//! Nested paging (`[virt]`, `mmu/walker/nested.rs`): walk loads worked out by hand from the
//! definition of the two-dimensional walk, per dimension and level, with and without each cache
//! that cuts it; the TLB entry's size from the guest's and the host's page sizes; VM exits;
//! and what is refused. (tests/test_virt.py checks the load sequence against an independent
//! reference in Python.)

use std::collections::BTreeMap;
use xlat_core::config::Config;
use xlat_core::Simulator;
use xlat_trace::{Access, AccessKind, Batch};

use crate::common::{mmap, run, walk_machine, ANON};

/// The hand-derivation machine (`common::walk_machine`: a 1-entry TLB holding every size, so
/// every access to a new page walks; no caches, each load costing `memory.dram_latency` = 100;
/// walker latency 0), guest `levels` and host `host_levels`; `extra` is more TOML (PSCs, the
/// nested TLB, policies).
fn machine(levels: u32, host_levels: u32, extra: &str) -> Config {
    // (`extra` may open tables of its own; the [virt.host] keys come first.)
    let virt =
        format!("[virt]\nhost_memory = \"16GiB\"\nvm_exit_cycles = 1000\n[virt.host]\nlevels = {host_levels}\n{extra}");
    walk_machine("virt-test", &format!("levels = {levels}"), &virt)
}

const BASE: u64 = 0x7000_0000_0000;

/// Loads at `addrs`, in a 2 GiB anonymous mapping at [`BASE`] (flags `flags`).
fn trace(addrs: &[u64], flags: u64) -> Vec<Batch> {
    let mut b = Batch::default();
    mmap(&mut b, BASE, 2 << 30, flags);
    for (i, &a) in addrs.iter().enumerate() {
        b.push_access(Access { addr: a, icount: i as u64 + 1, tid: 1, size: 8, kind: AccessKind::Load });
    }
    vec![b]
}

fn counts(cfg: &Config, addrs: &[u64]) -> BTreeMap<String, u64> {
    counts_with(cfg, addrs, ANON)
}

fn counts_with(cfg: &Config, addrs: &[u64], flags: u64) -> BTreeMap<String, u64> {
    run(Simulator::new(cfg).expect("simulator"), &trace(addrs, flags)).1
}

#[test]
fn a_cold_two_dimensional_walk_makes_g_plus_g_plus_one_times_h_loads() {
    for (g, h, loads) in [(4u64, 4u64, 24u64), (5, 5, 35), (4, 5, 29), (5, 4, 29)] {
        let c = counts(&machine(g as u32, h as u32, ""), &[BASE]);
        assert_eq!(c["walker.walks"], 1);
        assert_eq!(c["walker.loads"], loads, "{g} over {h}");
        assert_eq!(c["walker.loads.guest"], g);
        assert_eq!(c["walker.loads.host"], (g + 1) * h);
        // One guest load per guest level, g + 1 host loads per host level.
        for l in ["pml4", "pdpt", "pd", "pt"] {
            assert_eq!(c[&format!("walker.loads.guest.{l}")], 1, "guest {l}");
            assert_eq!(c[&format!("walker.loads.host.{l}")], g + 1, "host {l}");
        }
        assert_eq!(c["walker.cycles"], loads * 100, "every load at the memory's latency, in series");
        // The host maps the 4 (or 5) guest tables' pages and the data's: one VM exit each.
        assert_eq!(c["virt.vm_exits"], g + 1);
        assert_eq!(c["virt.vm_exit_cycles"], (g + 1) * 1000);
        assert_eq!(c["walker.walks_4k"], 1);
    }
}

#[test]
fn without_caches_every_walk_is_cold_and_each_cache_cuts_what_it_holds() {
    // Two pages side by side: the same guest tables, a new data page.
    let two = [BASE, BASE + 4096];
    let c = counts(&machine(4, 4, ""), &two);
    assert_eq!((c["walker.walks"], c["walker.loads"]), (2, 48));
    // One new VM exit: the second data page (the tables are mapped in the host already).
    assert_eq!(c["virt.vm_exits"], 6);

    // The nested TLB: the guest tables' four guest-physical pages hit the second time; the
    // new data page misses and is walked in the host: 4 guest loads + 4 host loads.
    let ntlb = "[virt.ntlb]\nentries = 64\nways = 64\n";
    let c = counts(&machine(4, 4, ntlb), &two);
    assert_eq!(c["walker.loads"], 24 + 8);
    assert_eq!(c["virt.ntlb.accesses"], 10);
    assert_eq!(c["virt.ntlb.hits"], 4);
    assert_eq!(c["virt.host_walks"], 6);

    // The guest's PDE cache as well: the second walk starts at the PT (its host-physical
    // address known), one guest load, its page in the nested TLB, the data page walked: 1 + 4.
    let pde = "[[psc]]\nname = \"pde\"\ncaches = \"pde\"\nentries = 4\nways = 4\n";
    let c = counts(&machine(4, 4, &format!("{ntlb}{pde}")), &two);
    assert_eq!(c["walker.loads"], 24 + 5);
    assert_eq!((c["walker.loads.guest.pt"], c["walker.loads.guest.pd"]), (2, 1));
    assert_eq!(c["psc.pde.hits"], 1);

    // The guest's PDE cache alone: 1 guest load, 2 host walks of 4.
    let c = counts(&machine(4, 4, pde), &two);
    assert_eq!(c["walker.loads"], 24 + 1 + 8);
}

#[test]
fn the_host_pde_cache_skips_the_upper_host_levels_of_a_known_region() {
    // Host 2MB pages (THP): each host walk is PML4, PDPT, PD (the leaf). With a host PDPTE
    // cache, a guest-physical address in a 1GB region walked before loads only the PD entry.
    let thp = "policy = \"thp\"\n";
    let c = counts(&machine(4, 4, thp), &[BASE]);
    assert_eq!(c["walker.loads"], 4 + 5 * 3, "a host walk to a 2MB leaf is 3 loads");
    let pdpte = "[[virt.host_psc]]\nname = \"host-pdpte\"\ncaches = \"pdpte\"\nentries = 4\nways = 4\n";
    let c = counts(&machine(4, 4, &format!("{thp}{pdpte}")), &[BASE]);
    // The guest's memory is below 4GiB: every guest-physical address is in the first 4 1GB
    // regions, the first walk of each fills it. The first host walk loads 3; the others, in
    // the same region (the guest's frames are allocated from the bottom), 1.
    assert_eq!(c["psc.host-pdpte.accesses"], 5);
    let misses = c["psc.host-pdpte.misses"];
    assert_eq!(c["walker.loads.host"], 3 * misses + (5 - misses));
    assert_eq!(c["walker.loads.host.pd"], 5);
}

#[test]
fn the_entry_maps_the_smaller_of_the_guest_and_host_pages() {
    // Guest 2MB (THP) over host 4KB: the guest walk ends at the PD (3 loads), each of the 4
    // guest-physical addresses walked in 4 host levels: 3 + 16; a 4KB entry, so another 4KB
    // page of the same 2MB guest page walks again.
    let guest_thp = machine(4, 4, "");
    let mut guest_thp = guest_thp;
    guest_thp.os.policy = xlat_core::config::Policy::Thp;
    let c = counts(&guest_thp, &[BASE, BASE + 4096]);
    assert_eq!(c["walker.walks"], 2);
    assert_eq!(c["walker.walks_4k"], 2);
    assert_eq!(c["walker.loads"], 2 * (3 + 4 * 4));
    assert_eq!(c["os.faults_2m"], 1);

    // Guest 2MB over host 2MB: 3 + 4 x 3 loads, a 2MB entry: the second access hits the TLB.
    let mut both = machine(4, 4, "policy = \"thp\"\n");
    both.os.policy = xlat_core::config::Policy::Thp;
    let c = counts(&both, &[BASE, BASE + 4096]);
    assert_eq!((c["walker.walks"], c["walker.walks_2m"]), (1, 1));
    assert_eq!(c["walker.loads"], 3 + 4 * 3);

    // Guest 4KB over host 1GB: host walks end at the PDPT (2 loads): 4 + 5 x 2, a 4KB entry.
    let c = counts(&machine(4, 4, "policy = \"1g\"\n"), &[BASE]);
    assert_eq!((c["walker.walks_4k"], c["walker.loads"]), (1, 4 + 5 * 2));
    assert_eq!(c["virt.host.os.faults_1g"], 1, "the guest's tables and data in the first 1GB");

    // Guest 1GB over host 1GB: 2 + 3 x 2, a 1GB entry.
    let mut huge = machine(4, 4, "policy = \"1g\"\n");
    huge.os.policy = xlat_core::config::Policy::Huge1g;
    let c = counts(&huge, &[BASE, BASE + (512 << 20)]);
    assert_eq!((c["walker.walks"], c["walker.walks_1g"]), (1, 1));
    assert_eq!(c["walker.loads"], 2 + 3 * 2);
}

#[test]
fn a_guest_that_does_not_fit_in_the_host_and_other_nonsense_is_one_sentence() {
    let bad = |toml_extra: &str, sets: &[&str]| {
        let text = format!(
            "name = \"v\"\n[memory]\nsize = \"8GiB\"\n[[tlb]]\nname = \"l1\"\nlevel = 1\nrole = \"unified\"\nentries = 4\nways = 4\npage_sizes = [\"4KB\"]\n{toml_extra}"
        );
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Config::from_toml("v", &text, &sets).expect_err("refused").to_string()
    };
    let e = bad("[virt]\nhost_memory = \"4GiB\"\n", &[]);
    assert!(e.contains("the guest's memory (memory.size = 8589934592 bytes) does not fit in the host's"), "{e}");
    let e = bad("[virt]\n[virt.host]\nlevels = 3\n", &[]);
    assert!(e.contains("virt.host.levels = 3 must be 4 or 5"), "{e}");
    let e = bad("[virt]\n[virt.ntlb]\nentries = 0\nways = 1\n", &[]);
    assert!(e.contains("virt.ntlb: entries must be positive"), "{e}");
    let e = bad("[virt]\n", &["walker.kind=software"]);
    assert!(e.contains("[virt] cannot run together yet") || e.contains("and [virt] cannot run together yet"), "{e}");
    let e = bad("[virt]\n", &["os.ranges=contiguous", "os.allocation=eager"]);
    assert!(e.contains("[virt] does not run with range translations (os.ranges) yet"), "{e}");
    let e = bad("[virt]\n[virt.host]\npolicy = \"mosaic\"\n", &[]);
    assert!(e.contains("virt.host.policy = \"mosaic\" is not modelled"), "{e}");
}

#[test]
fn the_shipped_virtualised_presets_run_and_count_both_dimensions() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/xlat/configs/virt");
    for cpu in ["skylake", "zen4"] {
        let text = std::fs::read_to_string(root.join(format!("{cpu}.toml"))).expect("preset file");
        let cfg = Config::from_toml(cpu, &text, &[]).expect("valid");
        let addrs: Vec<u64> = (0..20_000u64).map(|i| (BASE + (i.wrapping_mul(0x9e37_79b9) % (1 << 31))) & !7).collect();
        let c = counts(&cfg, &addrs);
        let (g, h) = (c["walker.loads.guest"], c["walker.loads.host"]);
        assert_eq!(c["walker.loads"], g + h);
        assert!(g >= c["walker.walks"] && h > 0, "{cpu}: guest {g}, host {h}");
        assert!(c["virt.ntlb.hits"] > 0 && c["virt.host.os.faults_2m"] > 0, "{cpu}");
    }
}

#[test]
fn a_hashed_host_table_makes_each_host_translation_one_lookup() {
    // Elastic cuckoo in the host (3 ways, only 4KB host pages: one size probed): the four guest
    // loads and the data's guest-physical address each take one lookup of 3 parallel probes:
    // 4 + 5 x 3 loads, 4 + 5 latencies.
    let cuckoo = "[virt.host_hashed]\nkind = \"cuckoo\"\nways = 3\n";
    let c = counts(&machine(4, 4, cuckoo), &[BASE]);
    assert_eq!((c["walker.loads"], c["walker.loads.guest"], c["walker.loads.host"]), (19, 4, 15));
    assert_eq!(c["walker.cycles"], 9 * 100);
    assert_eq!((c["virt.host_walks"], c["virt.vm_exits"]), (5, 5));
    // The five host pages are the guest's first five frames: one cluster of 8, one entry.
    assert_eq!((c["virt.host.hpt.inserts"], c["virt.host.hpt.4kb.entries"]), (1, 1));
    // Chained: one bucket load each (five entries in 16384 buckets, none chained).
    let chained = "[virt.host_hashed]\nkind = \"chained\"\n";
    let c = counts(&machine(4, 4, chained), &[BASE]);
    assert_eq!(c["virt.host.hpt.chain_loads"], 0);
    assert_eq!((c["walker.loads"], c["walker.cycles"]), (9, 9 * 100));
    let text = "name = \"v\"\n[[tlb]]\nname = \"l1\"\nlevel = 1\nrole = \"unified\"\nentries = 4\nways = 4\npage_sizes = [\"4KB\"]\n[virt]\n[virt.host_hashed]\nkind = \"cuckoo\"\nways = 0\n";
    let e = Config::from_toml("v", text, &[]).expect_err("refused").to_string();
    assert!(e.contains("virt.host_hashed.ways = 0 must be between 2 and 8"), "{e}");
}

#[test]
fn vm_exits_are_in_the_estimated_total_not_in_the_walk_cycles() {
    let (s, c) = run(Simulator::new(&machine(4, 4, "")).expect("simulator"), &trace(&[BASE], ANON));
    let d = s.derived(&c);
    assert_eq!(d["C"], 24.0 * 100.0);
    assert_eq!(d["time.vm_exit_cycles"], 5.0 * 1000.0);
    assert_eq!(d["time.total_cycles"], d["time.base_cycles"] + d["time.stlb_hit_cycles"] + 2400.0 + 5000.0);
}

#[test]
fn a_hashed_guest_table_translates_each_probe_through_the_host() {
    // Elastic cuckoo in the guest (3 ways; only 4KB pages, one size probed), a radix host of
    // 4KB pages, nothing cached: each of the 3 parallel probes lies in another guest frame, so
    // it needs a host walk of 4 loads (and a VM exit: the host maps the frame) before its own
    // load, 500 cycles; the probes cost the slowest, 500; then the data's host walk, 400.
    let cuckoo = "[hashed_pt]\nkind = \"cuckoo\"\nways = 3\n";
    let c = counts(&machine(4, 4, cuckoo), &[BASE]);
    assert_eq!((c["walker.loads"], c["walker.loads.guest"], c["walker.loads.host"]), (19, 3, 16));
    assert_eq!(c["walker.cycles"], 500 + 400);
    assert_eq!((c["virt.host_walks"], c["virt.vm_exits"]), (4, 4));
    assert_eq!((c["walker.walks"], c["walker.faulting_walks"]), (1, 1));
    assert_eq!((c["hpt.inserts"], c["hpt.4kb.entries"]), (1, 1));
    // A second page of the same cluster: the same three probe lines, whose host pages the host
    // has mapped (no VM exit), walked again (no nested TLB, no host PSCs).
    let c = counts(&machine(4, 4, cuckoo), &[BASE, BASE + 4096]);
    assert_eq!((c["walker.loads.guest"], c["walker.loads.host"], c["virt.vm_exits"]), (6, 32, 5));
    // Chained: the bucket's one load, after its host walk.
    let chained = "[hashed_pt]\nkind = \"chained\"\n";
    let c = counts(&machine(4, 4, chained), &[BASE]);
    assert_eq!((c["walker.loads"], c["walker.loads.guest"], c["walker.loads.host"]), (9, 1, 8));
    assert_eq!((c["walker.cycles"], c["virt.vm_exits"]), (900, 2));
    // Hashed in both dimensions (nested elastic cuckoo): each guest probe's host translation is
    // one host lookup of 3 parallel probes: 3 + (3 + 1) x 3 loads, 2 + 1 latencies.
    let both = "[virt.host_hashed]\nkind = \"cuckoo\"\nways = 3\n[hashed_pt]\nkind = \"cuckoo\"\nways = 3\n";
    let c = counts(&machine(4, 4, both), &[BASE]);
    assert_eq!((c["walker.loads"], c["walker.loads.guest"], c["walker.loads.host"]), (15, 3, 12));
    assert_eq!((c["walker.cycles"], c["virt.vm_exits"]), (300, 4));
    // The walk log records radix walks only: refused with a hashed guest, in one sentence.
    let mut cfg = machine(4, 4, cuckoo);
    cfg.virt.as_mut().expect("virt").walk_log = 5;
    let e = cfg.validate().expect_err("refused").to_string();
    assert!(e.contains("virt.walk_log records radix guest walks"), "{e}");
}

#[test]
fn a_host_that_reclaims_flushes_the_combined_translations_under_a_hashed_host_too() {
    // 64 MiB of guest memory in 66 MiB of host memory, the host reclaiming (FIFO) when full: a
    // cuckoo host table takes 3 MiB of it, so a guest touching 63 MiB twice makes the host evict
    // guest pages, each eviction an INVEPT (every combined translation flushed), counted as with
    // a radix host. (Before the hashed host's faults went through the nested walker's EPT
    // violation, the host's invalidation ranges were applied to the guest's TLBs as guest
    // addresses and nothing was counted.)
    let text = |host_table: &str| {
        format!(
            "name = \"v\"\n[memory]\nsize = \"64MiB\"\ndram_latency = 100\n[[tlb]]\nname = \"l1\"\nlevel = 1\nrole = \"unified\"\nentries = 1\nways = 1\npage_sizes = [\"4KB\"]\n[walker]\nlatency = 0\n[virt]\nhost_memory = \"66MiB\"\n[virt.host]\nlevels = 4\nreclaim = \"fifo\"\n{host_table}"
        )
    };
    let pages: Vec<u64> = (0..16_200u64).map(|i| BASE + i * 4096).collect();
    let addrs: Vec<u64> = pages.iter().chain(&pages).copied().collect();
    let cfg = Config::from_toml("v", &text("[virt.host_hashed]\nkind = \"cuckoo\"\nways = 3\n"), &[]).expect("valid");
    let c = counts(&cfg, &addrs);
    assert!(c["virt.host.os.reclaimed_pages"] > 0, "the host reclaimed: {}", c["virt.host.os.reclaimed_pages"]);
    assert!(c["virt.host_flushes"] > 0, "each reclaim is an INVEPT");
    // Every reclaimed page that the guest touches again is another VM exit.
    assert!(c["virt.vm_exits"] > 16_200, "{}", c["virt.vm_exits"]);
    assert_eq!(c["walker.walks"], 2 * 16_200);
}
