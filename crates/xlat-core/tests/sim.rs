//! End-to-end tests of the simulator: hand-computed walks, an independent LRU reference,
//! invariants on every preset and policy, determinism, mosaic layouts, context switches.

use rand::{Rng, SeedableRng};
use xlat_core::layout::Layout;
use xlat_core::{presets, sim, Config, Simulator};
use xlat_trace::{Access, AccessKind, Batch, Marker, SideBody, Syscall, SyscallKind};

/// One level of TLBs (a fully associative TLB per page size), all PSCs, no caches.
fn small(extra: &str, sets: &[&str]) -> Config {
    let text = format!(
        r#"
name = "small"
[memory]
size = "8GiB"
[[tlb]]
name = "l1-4k"
level = 1
role = "unified"
entries = 4
ways = 4
page_sizes = ["4KB"]
[[tlb]]
name = "l1-2m"
level = 1
role = "unified"
entries = 4
ways = 4
page_sizes = ["2MB"]
[[tlb]]
name = "l1-1g"
level = 1
role = "unified"
entries = 4
ways = 4
page_sizes = ["1GB"]
[[psc]]
name = "pml4e"
caches = "pml4e"
entries = 4
ways = 4
[[psc]]
name = "pdpte"
caches = "pdpte"
entries = 4
ways = 4
[[psc]]
name = "pde"
caches = "pde"
entries = 4
ways = 4
{extra}
"#
    );
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Config::from_toml("small", &text, &sets).unwrap()
}

fn mmap(b: &mut Batch, addr: u64, len: u64, flags: u64) {
    let s = Syscall { kind: SyscallKind::Mmap, args: [0, len, 3, flags, u64::MAX, 0], ret: addr as i64 };
    b.push_side(1, 0, SideBody::Syscall(s));
}

fn load(b: &mut Batch, addr: u64) {
    let ic = b.len() as u64 + 1;
    b.push_access(Access { addr, icount: ic, tid: 1, size: 8, kind: AccessKind::Load });
}

/// Walk loads of each access of `addrs`, one at a time (after `setup`).
fn loads_per_access(cfg: &Config, setup: &Batch, addrs: &[u64]) -> Vec<u64> {
    let mut s = Simulator::new(cfg).unwrap();
    s.batch(setup).unwrap();
    let mut out = Vec::new();
    for &a in addrs {
        let before = s.counters()["walker.loads"];
        let mut b = Batch::default();
        load(&mut b, a);
        s.batch(&b).unwrap();
        out.push(s.counters()["walker.loads"] - before);
    }
    s.check_invariants().unwrap();
    out
}

const ANON: u64 = 0x22;
const G: u64 = 1 << 30;
const M2: u64 = 2 << 20;

#[test]
fn walk_loads_are_4_3_2_minus_psc_hits() {
    let cfg = small("", &[]);
    // 4KB pages: 4 loads; then the PDE, PDPTE and PML4E caches each skip what they cover.
    let base = 0x7000_0000_0000u64; // 512GB-aligned
    let mut setup = Batch::default();
    mmap(&mut setup, base, 4 * G, ANON);
    let got = loads_per_access(
        &cfg,
        &setup,
        &[
            base,              // cold: PML4, PDPT, PD, PT
            base + 0x1000,     // same PT: PDE cache hit -> PT only
            base + M2,         // same PD: PDPTE cache hit -> PD, PT
            base + G,          // same PDPT: PML4E cache hit -> PDPT, PD, PT
            base + G + 0x5000, // PDE hit again
            base + 0x1008,     // TLB hit: no walk
        ],
    );
    assert_eq!(got, vec![4, 1, 2, 3, 1, 0]);

    // 2MB pages (hugetlb): leaf in the PD: 3 loads cold, 1 with a PDPTE hit, 2 with PML4E.
    let mut setup = Batch::default();
    mmap(&mut setup, base, 4 * G, ANON | 0x40000 | (21 << 26));
    let got = loads_per_access(&cfg, &setup, &[base + 5, base + M2, base + G, base + 7]);
    assert_eq!(got, vec![3, 1, 2, 0]);

    // 1GB pages: leaf in the PDPT: 2 loads cold, 1 with a PML4E hit.
    let mut setup = Batch::default();
    mmap(&mut setup, base, 4 * G, ANON | 0x40000 | (30 << 26));
    let got = loads_per_access(&cfg, &setup, &[base, base + G, base + 3 * G + 12345]);
    assert_eq!(got, vec![2, 1, 1]);

    // Without PSCs every walk loads all levels.
    let mut nopsc = cfg.clone();
    nopsc.psc.clear();
    let mut setup = Batch::default();
    mmap(&mut setup, base, 4 * G, ANON);
    assert_eq!(loads_per_access(&nopsc, &setup, &[base, base + 0x1000, base + G]), vec![4, 4, 4]);
}

#[test]
fn walk_loads_hit_in_the_caches_they_went_through() {
    let cfg = small(
        "[[cache]]\nname = \"L1D\"\nsize = \"32KiB\"\nways = 8\nlatency = 4\n[[cache]]\nname = \"LLC\"\nsize = \"1MiB\"\nways = 16\nlatency = 40\n",
        &[],
    );
    let mut cfg = cfg;
    cfg.psc.clear();
    let base = 0x7000_0000_0000u64;
    let mut b = Batch::default();
    mmap(&mut b, base, G, ANON);
    load(&mut b, base); // 4 cold loads: DRAM
    load(&mut b, base + 0x1000); // PTE in the same line as the first: all 4 hit the L1D
    load(&mut b, base + M2); // a new PT (DRAM); its PDE shares the PD line: 3 L1D + 1 DRAM
    let mut s = Simulator::new(&cfg).unwrap();
    s.batch(&b).unwrap();
    let c = s.counters();
    assert_eq!(c["walker.loads"], 12);
    assert_eq!(c["walker.loads_hit.DRAM"], 5);
    assert_eq!(c["walker.loads_hit.L1D"], 7);
    assert_eq!(c["walker.loads.pt.DRAM"], 2);
    // 4 cold loads x 200 + 4 x 4 + (3 x 4 + 200)
    assert_eq!(c["walker.cycles"], 800 + 16 + 212);
    s.check_invariants().unwrap();
}

/// Misses of a fully associative LRU cache of `n` entries: accesses whose reuse (stack)
/// distance is at least `n`, plus first touches. Computed with an explicit stack, independent
/// of the simulator's set-associative code.
fn lru_misses(pages: &[u64], n: usize) -> u64 {
    let mut stack: Vec<u64> = Vec::new();
    let mut misses = 0;
    for &p in pages {
        match stack.iter().position(|&q| q == p) {
            Some(d) => {
                if d >= n {
                    misses += 1;
                }
                stack.remove(d);
            }
            None => misses += 1,
        }
        stack.insert(0, p);
    }
    misses
}

#[test]
fn fully_associative_lru_matches_stack_distances() {
    for seed in 0..8u64 {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let entries = [8usize, 16, 32, 64][seed as usize % 4];
        let cfg = small(
            "",
            &["tlb.l1-4k.entries=".to_owned() + &entries.to_string(), format!("tlb.l1-4k.ways={entries}")]
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>(),
        );
        let base = 0x6000_0000_0000u64;
        let npages = 2 * entries as u64 + rng.gen_range(0..50);
        // A skewed page stream: a hot set and uniform noise.
        let pages: Vec<u64> = (0..5000)
            .map(|_| if rng.gen_bool(0.6) { rng.gen_range(0..entries as u64 / 2) } else { rng.gen_range(0..npages) })
            .collect();
        let mut b = Batch::default();
        mmap(&mut b, base, npages * 4096, ANON);
        for &p in &pages {
            load(&mut b, base + p * 4096 + rng.gen_range(0..4096));
        }
        let mut s = Simulator::new(&cfg).unwrap();
        s.batch(&b).unwrap();
        let c = s.counters();
        assert_eq!(c["tlb.l1-4k.misses"], lru_misses(&pages, entries), "seed {seed}, {entries} entries");
        assert_eq!(c["walker.walks"], c["tlb.l1-4k.misses"]);
        s.check_invariants().unwrap();
    }
}

#[test]
fn every_preset_and_policy_keeps_the_invariants() {
    let specs = [
        "workload:gups?size=2GiB&accesses=200000&seed=3",
        "workload:bfs?scale=14&accesses=200000",
        "workload:stream?size=64MiB&accesses=100000",
    ];
    let layout = Layout::from_toml(
        "l",
        "version = 1\n[heap]\nsize = \"4GiB\"\n[anon]\nsize = \"8GiB\"\nwindows = [ { offset = \"0\", length = \"1GiB\", page = \"1GB\" }, { offset = \"1GiB\", length = \"64MiB\", page = \"2MB\" } ]\n",
    )
    .unwrap();
    for (name, text) in presets::ALL {
        for policy in ["4k", "thp", "mosaic"] {
            let mut cfg = Config::from_toml(name, text, &["memory.size=16GiB".into()]).unwrap();
            if policy == "mosaic" {
                cfg.layout = Some(layout.clone());
                cfg.os.policy = xlat_core::config::Policy::Mosaic;
            } else {
                cfg = Config::from_toml(name, text, &["memory.size=16GiB".into(), format!("os.policy={policy}")])
                    .unwrap();
            }
            for spec in specs {
                let mut src = xlat_trace::source::open(spec).unwrap();
                // `simulate` checks the invariants and panics if one fails.
                let r = sim::simulate(src.as_mut(), spec, &cfg, |_| {}).unwrap();
                let c = &r.counters;
                assert_eq!(c["accesses"], c["loads"] + c["stores"] + c["ifetches"]);
                if spec.contains("gups") && policy == "mosaic" {
                    assert!(c["walker.walks_1g"] > 0, "{name}: the 1GB window backs gups' table");
                }
                if spec.contains("gups") && policy == "thp" {
                    assert!(c["os.faults_2m"] > 0 && c["walker.walks_2m"] > 0, "{name}");
                }
            }
        }
    }
}

#[test]
fn results_are_byte_identical_across_runs_and_thread_counts() {
    let sky = presets::get("skylake").unwrap();
    let cfgs: Vec<Config> = ["4k", "thp"]
        .iter()
        .map(|p| {
            Config::from_toml("skylake", sky, &[format!("os.policy={p}"), "sim.interval_accesses=50000".into()])
                .unwrap()
        })
        .collect();
    let spec = "workload:zipf?size=1GiB&accesses=300000";
    let one: Vec<String> = sim::simulate_many(spec, &cfgs, 1).into_iter().map(|r| r.unwrap().to_json()).collect();
    let two: Vec<String> = sim::simulate_many(spec, &cfgs, 2).into_iter().map(|r| r.unwrap().to_json()).collect();
    assert_eq!(one, two);
    assert_ne!(one[0], one[1]);
    let v: serde_json::Value = serde_json::from_str(&one[0]).unwrap();
    assert_eq!(v["schema"], "xlat-sim-result");
    assert_eq!(v["series"]["rows"].as_array().unwrap().len(), 6);
}

#[test]
fn results_do_not_depend_on_batch_boundaries() {
    // Phases that turn the hit memo and host prefetching on and off (runs through the same few
    // pages, then random pages that evict them: a load and a store each), simulated as one batch and as batches of 1
    // to 5000 accesses (the memo's and the prefetcher's on/off decisions then change per batch).
    let base = 0x7000_0000_0000u64;
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
    // First, loads one per batch: page 0 (set 0 of Skylake's 16-set L1), five more pages of
    // set 0 (page 0 leaves it), one of them again (no miss: the memo goes on), then page 0 (a
    // memo that kept its entries while off would hit it).
    let mut accesses: Vec<(u64, AccessKind)> =
        [0u64, 16, 32, 48, 64, 80, 80, 0].iter().map(|p| (base + p * 4096, AccessKind::Load)).collect();
    for phase in 0..8u64 {
        for k in 0..6000u64 {
            let a = if phase % 2 == 0 {
                base + k * 8 // (the same 12 pages each time)
            } else {
                base + rng.gen_range(0..G / 4096) * 4096 + 8 * (k % 512)
            };
            accesses.push((a, AccessKind::Load));
            accesses.push((a, AccessKind::Store));
        }
    }
    let push = |b: &mut Batch, i: usize| {
        let (addr, kind) = accesses[i];
        b.push_access(Access { addr, icount: i as u64 + 1, tid: 1, size: 8, kind });
    };
    let mut whole = Batch::default();
    mmap(&mut whole, base, G, ANON);
    (0..accesses.len()).for_each(|i| push(&mut whole, i));
    let mut pieces = Vec::new();
    let (mut i, mut cut) = (0, 0);
    while i < accesses.len() {
        let mut b = Batch::default();
        if i == 0 {
            mmap(&mut b, base, G, ANON);
        }
        let n = if cut < 8 { 1 } else { [1, 3, 5000, 2, 777, 1, 4099][cut % 7] };
        (i..(i + n).min(accesses.len())).for_each(|k| push(&mut b, k));
        pieces.push(b);
        i += n;
        cut += 1;
    }
    let sky = presets::get("skylake").unwrap();
    for sets in [&[][..], &["sim.data_through_caches=true"][..], &["os.policy=thp"][..]] {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let cfg = Config::from_toml("skylake", sky, &sets).unwrap();
        let mut one = Simulator::new(&cfg).unwrap();
        one.batch(&whole).unwrap();
        let mut many = Simulator::new(&cfg).unwrap();
        for b in &pieces {
            many.batch(b).unwrap();
        }
        one.check_invariants().unwrap();
        let c = one.counters();
        assert_eq!(c["accesses"], 96_008, "{sets:?}");
        // (With 4KB pages the random phases walk on nearly every load; 2MB pages cover them.)
        let thp = sets.iter().any(|s| s.contains("thp"));
        assert!(c["walker.walks"] > if thp { 500 } else { 20_000 }, "{sets:?}: {}", c["walker.walks"]);
        assert_eq!(c, many.counters(), "{sets:?}");
    }
}

#[test]
fn context_switch_flushes_without_asids_only() {
    let base = 0x7000_0000_0000u64;
    let run = |asid: bool| {
        let cfg = small("", &[if asid { "os.asid=true" } else { "os.asid=false" }]);
        let mut b = Batch::default();
        mmap(&mut b, base, G, ANON);
        load(&mut b, base);
        b.push_side(1, 0, SideBody::Marker(Marker::ContextSwitch { asid: 7 }));
        mmap(&mut b, base, G, ANON);
        load(&mut b, base);
        b.push_side(1, 0, SideBody::Marker(Marker::ContextSwitch { asid: 0 }));
        load(&mut b, base);
        let mut s = Simulator::new(&cfg).unwrap();
        s.batch(&b).unwrap();
        s.check_invariants().unwrap();
        let c = s.counters();
        (c["walker.walks"], c["shootdowns.context_switch"], c["os.page_faults"])
    };
    // With ASIDs the third access hits the first address space's entry; without, it walks.
    assert_eq!(run(true), (2, 0, 2));
    assert_eq!(run(false), (3, 2, 2));
}

#[test]
fn munmap_shoots_down_and_refaults() {
    let cfg = small("", &[]);
    let base = 0x7000_0000_0000u64;
    let mut b = Batch::default();
    mmap(&mut b, base, 16 * 4096, ANON);
    load(&mut b, base);
    load(&mut b, base + 4096);
    b.push_side(1, 0, SideBody::Syscall(Syscall { kind: SyscallKind::Munmap, args: [base, 4096, 0, 0, 0, 0], ret: 0 }));
    load(&mut b, base + 4096); // still mapped and cached: TLB hit
    mmap(&mut b, base, 4096, ANON);
    load(&mut b, base); // a new page: fault again
    let mut s = Simulator::new(&cfg).unwrap();
    s.batch(&b).unwrap();
    let c = s.counters();
    assert_eq!(c["os.page_faults"], 3);
    assert_eq!(c["tlb.l1-4k.invalidations"], 1);
    assert_eq!(c["shootdowns.range"], 1);
    assert_eq!(c["walker.walks"], 3);
    assert_eq!(c["os.frames_in_use"] - c["os.page_table_pages"], 2);
}

#[test]
fn five_level_paging_walks_five_levels() {
    let cfg = small("[[psc]]\nname = \"pml5e\"\ncaches = \"pml5e\"\nentries = 2\nways = 2\n", &["os.levels=5"]);
    let base = 0x0080_0000_0000_0000u64; // above 2^48, below 5-level paging's 2^56 user limit
    let mut setup = Batch::default();
    mmap(&mut setup, base, 4 * G, ANON);
    let got = loads_per_access(&cfg, &setup, &[base, base + 0x1000, base + G]);
    assert_eq!(got, vec![5, 1, 3]);
}

#[test]
fn example_config_parses() {
    let text = include_str!("../../../configs/examples/tiny.toml");
    let c = Config::from_toml("tiny", text, &[]).unwrap();
    assert_eq!(c.tlb.len(), 2);
}

#[test]
fn data_accesses_go_through_the_caches_when_asked() {
    let extra = "[[cache]]\nname = \"L1D\"\nsize = \"32KiB\"\nways = 8\nlatency = 4\n";
    let base = 0x7000_0000_0000u64;
    let mut b = Batch::default();
    mmap(&mut b, base, G, ANON);
    for i in 0..100 {
        load(&mut b, base + 8 * i); // 100 words: 13 lines of one page
    }
    let run = |on: &str| {
        let mut s = Simulator::new(&small(extra, &[on])).unwrap();
        s.batch(&b).unwrap();
        s.counters()
    };
    let off = run("sim.data_through_caches=false");
    let on = run("sim.data_through_caches=true");
    assert_eq!(off["cache.L1D.accesses"], 4, "only the walk's 4 loads");
    assert_eq!(on["cache.L1D.accesses"], 104);
    assert_eq!(on["cache.L1D.misses"], 4 + 13);
    assert_eq!(on["data.cycles"], 13 * 200 + 87 * 4);
}

#[test]
fn fragmented_memory_defeats_thp_and_traces_without_syscalls_infer_vmas() {
    let base = 0x7000_0000_0000u64;
    let mut b = Batch::default();
    for i in 0..4 {
        load(&mut b, base + i * M2 + 64); // no mmap: each touch infers a 2MB-region VMA
    }
    let run = |frag: &str| {
        let mut s = Simulator::new(&small("", &["os.policy=thp", frag])).unwrap();
        s.batch(&b).unwrap();
        s.check_invariants().unwrap();
        s.counters()
    };
    let clean = run("memory.fragmentation=0.0");
    assert_eq!(clean["os.inferred_vmas"], 4, "one 2MB-region VMA per first touch");
    assert_eq!((clean["os.faults_2m"], clean["os.faults_4k"]), (4, 0));
    let full = run("memory.fragmentation=1.0");
    assert_eq!((full["os.faults_2m"], full["os.faults_4k"], full["os.huge_fallbacks"]), (0, 4, 4));
}

#[test]
fn miss_profile_counts_every_walk_in_its_2mb_region() {
    // Random loads over 3 regions with known shares; tiny TLBs so nearly every access walks.
    let cfg = small("", &["sim.miss_profile=true"]);
    let base = 0x7000_0000_0000u64;
    let mut b = Batch::default();
    mmap(&mut b, base, 8 * M2, ANON);
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
    for i in 0..30_000u64 {
        let region = [0u64, 3, 3, 5][(i % 4) as usize];
        load(&mut b, base + region * M2 + rng.gen_range(0..512u64) * 4096);
    }
    let mut s = Simulator::new(&cfg).unwrap();
    s.batch(&b).unwrap();
    let r = s.result("t");
    let walks = r.counters["walker.walks"];
    let prof = r.miss_profile.clone().expect("asked for");
    assert_eq!(prof.iter().map(|p| p.1).sum::<u64>(), walks, "every walk is in the profile");
    let keys: Vec<u64> = prof.iter().map(|p| (p.0 - base) / M2).collect();
    assert_eq!(keys, vec![0, 3, 5], "regions in address order");
    let share3 = prof[1].1 as f64 / walks as f64;
    assert!((share3 - 0.5).abs() < 0.02, "region 3 got half the loads and so about half the walks: {share3}");
    // Off by default, and then absent from the JSON.
    let mut s = Simulator::new(&small("", &[])).unwrap();
    s.batch(&b).unwrap();
    assert!(s.result("t").miss_profile.is_none() && !s.result("t").to_json().contains("miss_profile"));
}

#[test]
fn reclaim_lets_a_workload_larger_than_memory_run() {
    // 1024 pages touched twice over 2MiB of memory (512 frames): with FIFO reclaim the run ends,
    // evicted pages are shot down from the TLB (1024 entries, so nothing else evicts them) and
    // fault again as major faults; without reclaim it fails with the one-sentence error.
    let base = 0x7000_0000_0000u64;
    let mut b = Batch::default();
    mmap(&mut b, base, 4 << 20, ANON);
    for _ in 0..2 {
        for i in 0..1024 {
            load(&mut b, base + i * 4096);
        }
    }
    let sets = ["memory.size=2MiB", "tlb.l1-4k.entries=1024", "tlb.l1-4k.ways=1024"];
    let mut s = Simulator::new(&small("", &[&sets[..], &["os.reclaim=fifo"]].concat())).unwrap();
    s.batch(&b).unwrap();
    let c = s.counters();
    assert!(c["os.reclaimed_pages"] > 500, "{}", c["os.reclaimed_pages"]);
    assert!(c["os.major_faults"] > 0);
    assert_eq!(c["os.page_faults"], 1024 + c["os.major_faults"]);
    assert!(c["tlb.l1-4k.invalidations"] >= c["os.major_faults"]);
    assert!(c["shootdowns.range"] > 0);
    let mut s = Simulator::new(&small("", &sets)).unwrap();
    let e = s.batch(&b).unwrap_err().to_string();
    assert_eq!(
        e,
        format!("physical memory (2 MiB) is exhausted at virtual address {:#x}; raise memory.size", base + 508 * 4096)
    );
}

#[test]
fn the_time_series_ends_with_the_totals() {
    // Issue 37, item 15: the final, partial interval was dropped, so the rows did not add up to
    // the totals. Samples every 7,000 accesses of 30,000: rows at 7k, 14k, 21k, 28k and 30k.
    let sky = presets::get("skylake").unwrap();
    for warmup in [0u64, 5000] {
        let cfg = Config::from_toml("skylake", sky, &["sim.interval_accesses=7000".into()]).unwrap();
        let mut src = xlat_trace::source::open("workload:gups?size=1GiB&accesses=30000").unwrap();
        let mut s = sim::Simulator::new(&cfg).unwrap();
        s.set_window(xlat_trace::Window { skip: 0, warmup, limit: None });
        let r = sim::run(s, src.as_mut(), "t", |_| {}).unwrap();
        let series = r.series.expect("series");
        let want: Vec<u64> =
            if warmup == 0 { vec![7000, 14000, 21000, 28000, 30000] } else { vec![2000, 9000, 16000, 23000, 25000] };
        assert_eq!(series.at, want);
        let last = series.rows.last().unwrap();
        for (k, v) in series.columns.iter().zip(last) {
            assert_eq!(*v, r.counters[k], "{k} (warm-up {warmup})");
        }
    }
}
