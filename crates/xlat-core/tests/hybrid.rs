//! The hybrid DRAM/NVM memory (`[hybrid]`, docs/rainbow.md): its counts, write-backs and time
//! model on hand-made traces, utility-based migration (which page moves, when, at what cost),
//! conservation, determinism and bad input.

use xlat_core::config::Config;
use xlat_core::Simulator;
use xlat_trace::{Access, AccessKind, Batch};

use crate::common;
use common::{mmap, run, ANON};

const BASE: u64 = 0x7000_0000_0000;

/// One 16-entry L1 TLB of 4KB pages; one cache level of two 64-byte lines in one set (every
/// access in a cycle over more than two lines misses); 2MiB DRAM (latency 100) and 4MiB NVM
/// (read 200, write 500); `extra` appended (the `[hybrid]` table, `os.tiering`).
fn tiny_text(extra: &str) -> String {
    format!(
        r#"
name = "tiny-hybrid"
[[tlb]]
name = "l1"
level = 1
role = "data"
entries = 16
ways = 4
page_sizes = ["4KB"]
[[cache]]
name = "llc"
size = "128B"
ways = 2
latency = 10
[os]
policy = "4k"
{memory}{extra}
"#,
        memory = common::tiny_memory("4MiB")
    )
}

fn tiny(extra: &str) -> Config {
    Config::from_toml("tiny", &tiny_text(extra), &[]).expect("config")
}

/// `rounds` passes over the 64 lines of 4KB page `page` (from `BASE`), one instruction each.
fn pass(b: &mut Batch, ic: &mut u64, page: u64, rounds: u64, kind: AccessKind) {
    for _ in 0..rounds {
        for line in 0..64 {
            *ic += 1;
            let addr = BASE + (page << 12) + line * 64;
            b.push_access(Access { addr, icount: *ic, tid: 1, size: 8, kind });
        }
    }
}

const MIGRATE: &str = "[hybrid]\nmigration = \"utility\"\ninterval = 1\ncheck_instructions = 384\nclflush_cycles = 3\nshootdown_cycles = 1000\nremap_cycles = 7\n";

fn migrate_cfg(check: u64) -> Config {
    let text = tiny_text("").replace("[os]\n", "[os]\ntiering = \"highest-first\"\n")
        + &MIGRATE.replace("check_instructions = 384", &format!("check_instructions = {check}"));
    Config::from_toml("tiny", &text, &[]).expect("config")
}

#[test]
fn the_hot_page_moves_to_dram_at_the_interval_and_its_cost_is_charged() {
    // Pages P (5 passes: 320 line reads) and Q (1 pass: 64) start in NVM (highest-first). The
    // controller checks at instruction 384 (interval 1 cycle: due). Benefit (Equation 1), with
    // the copy 64 x (NVM read 200 + DRAM write 100) = 19,200 and the fixed costs 1,000 + 7 +
    // 64 x 3 = 1,199: P 320 x 100 - 20,399 = 11,601 > 0 moves; Q 6,400 - 20,399 < 0 stays.
    // Then 2 passes of P (128 reads) come from DRAM.
    let mut b = Batch::default();
    mmap(&mut b, BASE, 1 << 20, ANON);
    let mut ic = 0;
    pass(&mut b, &mut ic, 0, 5, AccessKind::Load);
    pass(&mut b, &mut ic, 1, 1, AccessKind::Load);
    pass(&mut b, &mut ic, 0, 2, AccessKind::Load);
    let sim = Simulator::new(&migrate_cfg(384)).expect("sim");
    assert_eq!(sim.variant(), "hybrid");
    let (s, c) = run(sim, &[b]);
    assert_eq!(c["epoch.migrate.intervals"], 1);
    assert_eq!(c["epoch.migrate.promotions"], 1);
    assert_eq!(c["epoch.migrate.candidates"], 1, "Q's benefit is below the threshold");
    assert_eq!(c["epoch.migrate.demotions_clean"] + c["epoch.migrate.demotions_dirty"], 0);
    assert_eq!(c["epoch.migrate.bytes_copied"], 4096);
    assert_eq!(c["epoch.migrate.shootdowns"], 1);
    assert_eq!(c["hybrid.nvm.reads"], 384);
    assert_eq!(c["hybrid.nvm.walk_reads"], 0, "page tables are in DRAM");
    assert_eq!(c["hybrid.dram.reads"] - c["hybrid.dram.walk_reads"], 128);
    assert_eq!(c["hybrid.nvm.copy_reads"], 64);
    assert_eq!(c["hybrid.dram.copy_writes"], 64);
    assert_eq!(c["hybrid.cycles.migration"], 19_200);
    assert_eq!(c["hybrid.cycles.clflush"], 64 * 3);
    assert_eq!(c["hybrid.cycles.shootdown"], 1000);
    assert_eq!(c["hybrid.cycles.remap"], 7);
    assert_eq!(c["hybrid.cycles.memory_reads"], 384 * 200 + 128 * 100);
    assert_eq!(c["hybrid.nvm.writebacks"] + c["hybrid.dram.writebacks"], 0, "loads only");
    // P is in DRAM now, Q in NVM.
    let zone = |page: u64| s.os().zone_of(s.os().lookup(BASE + (page << 12)).expect("mapped").0);
    assert_eq!((zone(0), zone(1)), (0, 1));
    // The shootdown reached the TLB: P was walked again (one walk per page, plus P's re-walk).
    assert_eq!(c["walker.walks"], 3);
}

/// `n` loads of line 0 of page `page` (the first misses, the rest hit the cache).
fn same_line(b: &mut Batch, ic: &mut u64, page: u64, n: u64) {
    for _ in 0..n {
        *ic += 1;
        b.push_access(Access { addr: BASE + (page << 12), icount: *ic, tid: 1, size: 8, kind: AccessKind::Load });
    }
}

#[test]
fn tlb_counting_sees_the_references_the_caches_filter() {
    // 400 loads of one line of P: one reaches the memory. Counted at the memory (1 read) P is
    // not worth moving; counted in the TLB as HSCC does (400 references: 400 x 100 - 20,399 =
    // 19,601 > 0) it moves.
    let mut b = Batch::default();
    mmap(&mut b, BASE, 1 << 20, ANON);
    let mut ic = 0;
    same_line(&mut b, &mut ic, 0, 400);
    pass(&mut b, &mut ic, 1, 1, AccessKind::Load);
    let (_, c) = run(Simulator::new(&migrate_cfg(400)).expect("sim"), std::slice::from_ref(&b));
    assert_eq!(c["epoch.migrate.promotions"], 0);
    let text = tiny_text("").replace("[os]\n", "[os]\ntiering = \"highest-first\"\n")
        + &MIGRATE.replace("check_instructions = 384", "check_instructions = 400")
        + "counting = \"tlb\"\n";
    let cfg = Config::from_toml("tlb", &text, &[]).expect("config");
    let (_, c) = run(Simulator::new(&cfg).expect("sim"), &[b]);
    assert_eq!(c["epoch.migrate.promotions"], 1);
    assert_eq!(c["hybrid.tlb_counted_references"], 464);
}

#[test]
fn a_2mb_page_moves_whole_at_512_times_the_cost() {
    // THP, 2MB granularity, TLB counting; DRAM 4MiB (its second 2MB block free: page tables
    // take frames of the first), NVM 8MiB. The cost of moving a 2MB page: 512 copies of
    // 64 x (200 + 100) = 9,830,400, clflush of 32,768 lines x 3 = 98,304, shootdown 1,000,
    // remap 7: 9,929,711. 110,000 references of P: 11,000,000 - 9,929,711 > 0: P moves.
    let mut b = Batch::default();
    mmap(&mut b, BASE, 4 << 20, ANON);
    let mut ic = 0;
    same_line(&mut b, &mut ic, 0, 110_000);
    same_line(&mut b, &mut ic, 512, 1000);
    let text = tiny_text("")
        .replace("policy = \"4k\"", "policy = \"thp\"\ntiering = \"highest-first\"")
        .replace("size = \"2MiB\"", "size = \"4MiB\"")
        .replace("size = \"4MiB\"\nread_latency = 200", "size = \"8MiB\"\nread_latency = 200")
        + &MIGRATE.replace("check_instructions = 384", "check_instructions = 111000")
        + "counting = \"tlb\"\ngranularity = \"2MB\"\n";
    let cfg = Config::from_toml("2mb", &text, &[]).expect("config");
    let (s, c) = run(Simulator::new(&cfg).expect("sim"), &[b]);
    assert_eq!(c["os.faults_2m"], 2);
    assert_eq!(c["epoch.migrate.promotions"], 1, "P, not the other 2MB page (1,000 references)");
    assert_eq!(c["epoch.migrate.bytes_copied"], 2 << 20);
    assert_eq!(c["hybrid.nvm.copy_reads"], 32_768);
    assert_eq!(c["hybrid.dram.copy_writes"], 32_768);
    assert_eq!(c["hybrid.cycles.migration"], 9_830_400);
    assert_eq!(c["hybrid.cycles.clflush"], 98_304);
    assert_eq!(c["hybrid.cycles.shootdown"], 1000);
    let (pfn, size) = s.os().lookup(BASE).expect("mapped");
    assert_eq!((s.os().zone_of(pfn), size), (0, xlat_core::config::PageSize::Size2M));
    let (pfn, _) = s.os().lookup(BASE + (2 << 20)).expect("mapped");
    assert_eq!(s.os().zone_of(pfn), 1);
}

#[test]
fn stores_are_written_back_when_evicted_and_flushed_when_their_page_moves() {
    // 5 passes of stores to P: each misses (a read: the line is allocated), and is written back
    // when a later fill evicts it; the last two lines stay dirty in the two-line cache.
    let mut b = Batch::default();
    mmap(&mut b, BASE, 1 << 20, ANON);
    let mut ic = 0;
    pass(&mut b, &mut ic, 0, 5, AccessKind::Store);
    let (_, c) = run(Simulator::new(&tiny("")).expect("sim"), std::slice::from_ref(&b));
    // No [hybrid] table: plain memory kinds, which count store misses as writes.
    assert_eq!(c["memory.dram.writes"], 320);
    let cfg = Config::from_toml("t", &(tiny_text("") + "[hybrid]\n"), &[]).expect("config");
    let (_, c) = run(Simulator::new(&cfg).expect("sim"), std::slice::from_ref(&b));
    // Lowest-first: P is in DRAM.
    assert_eq!(c["hybrid.dram.reads"] - c["hybrid.dram.walk_reads"], 320);
    assert_eq!(c["hybrid.dram.writebacks"], 318);
    assert_eq!(c["hybrid.dirty_lines"], 2);
    assert_eq!(c["hybrid.cycles.writebacks"], 318 * 100);
    // With migration, checked after the 320 stores: P (320 reads, 318 write-backs in NVM:
    // benefit 32,000 + 127,200 - 20,399 > 0) moves, and its two dirty lines are flushed to NVM
    // first.
    let (_, c) = run(Simulator::new(&migrate_cfg(320)).expect("sim"), &[b]);
    assert_eq!(c["epoch.migrate.promotions"], 1);
    assert_eq!(c["epoch.migrate.dirty_lines_flushed"], 2);
    assert_eq!(c["hybrid.nvm.writebacks"], 320);
    assert_eq!(c["hybrid.dirty_lines"], 0);
}

#[test]
fn the_time_and_energy_model_add_up_by_hand() {
    // Lowest-first, no migration: 3 passes of loads over P in DRAM (192 reads of 100 cycles).
    let mut b = Batch::default();
    mmap(&mut b, BASE, 1 << 20, ANON);
    let mut ic = 0;
    pass(&mut b, &mut ic, 0, 3, AccessKind::Load);
    let cfg = Config::from_toml("t", &(tiny_text("") + "[hybrid]\nclock_ghz = 2.0\n"), &[]).expect("config");
    let (s, c) = run(Simulator::new(&cfg).expect("sim"), &[b]);
    let d = s.derived(&c);
    let walk = d["time.walk_cycles"];
    assert_eq!(d["time.base_cycles"], 192.0);
    assert_eq!(d["hybrid.time.memory_reads_cycles"], 192.0 * 100.0);
    let total = 192.0 + walk + 19_200.0;
    assert_eq!(d["hybrid.time.total_cycles"], total);
    assert_eq!(d["hybrid.ipc"], 192.0 / total);
    // Energy: DRAM reads (data and walk loads) x 10 pJ; static 1000 mW over total / 2 GHz.
    let reads = c["hybrid.dram.reads"] as f64;
    assert_eq!(d["hybrid.energy.dram.dynamic_nj"], reads * 10.0 / 1e3);
    let static_nj = 1000.0 * (total / 2e9) * 1e6;
    assert!((d["hybrid.energy.dram.static_nj"] - static_nj).abs() < 1e-9 * static_nj);
    assert_eq!(d["hybrid.energy.nvm.dynamic_nj"], 0.0);
    assert_eq!(d["hybrid.energy.nvm.static_nj"], 0.0);
}

/// 700 pages, each read in passes, in several rounds: more hot pages than DRAM holds.
fn pressure_trace(seed: u64, stores: bool) -> Batch {
    let mut b = Batch::default();
    mmap(&mut b, BASE, 64 << 20, ANON);
    let mut ic = 0;
    let mut x = seed;
    for r in 0..3 {
        for p in 0..700u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let kind = if stores || x >> 62 == 0 { AccessKind::Store } else { AccessKind::Load };
            pass(&mut b, &mut ic, (p * 3 + r) % 700, 4, kind);
        }
    }
    b
}

#[test]
fn pressure_conserves_pages_respects_dram_and_is_deterministic() {
    let b = pressure_trace(3, false);
    let cfg = migrate_cfg(50_000);
    let (s1, c1) = run(Simulator::new(&cfg).expect("sim"), std::slice::from_ref(&b));
    let (s2, c2) = run(Simulator::new(&cfg).expect("sim"), std::slice::from_ref(&b));
    assert_eq!(c1, c2, "deterministic");
    assert_eq!(s1.derived(&c1), s2.derived(&c2));
    assert!(c1["epoch.migrate.promotions"] > 400, "DRAM fills up: {}", c1["epoch.migrate.promotions"]);
    assert!(c1["epoch.migrate.demotions_clean"] + c1["epoch.migrate.demotions_dirty"] > 0, "and pages go back");
    s1.os().check().expect("OS invariants (frames in use = mapped pages + tables; buddy)");
    // Every page maps to one frame, no two pages to the same one; DRAM holds at most its 512.
    let mut frames = std::collections::BTreeSet::new();
    let mut in_dram = 0;
    for p in 0..700u64 {
        let (pfn, _) = s1.os().lookup(BASE + (p << 12)).expect("touched pages stay mapped");
        assert!(frames.insert(pfn), "page {p} shares frame {pfn}");
        in_dram += (s1.os().zone_of(pfn) == 0) as u64;
    }
    assert!(in_dram <= 512 && in_dram > 0, "{in_dram} pages in DRAM");
    assert_eq!(c1["epoch.migrate.dram_clean_pages"] + c1["epoch.migrate.dram_dirty_pages"], in_dram);
}

#[test]
fn dirty_victims_go_back_at_their_cost_and_raise_the_threshold() {
    // Every page stored to: DRAM's pages are all dirty, so making room writes one back (Equation
    // 2: the candidate's 256 reads and about 254 write-backs in NVM are worth 25,600 + 101,600
    // - 20,399, more than the write-back's 64 x (100 + 500) + 1,199); migration runs both ways
    // and the threshold rises by its step (32,768) each such interval.
    let b = pressure_trace(5, true);
    let (_, c) = run(Simulator::new(&migrate_cfg(50_000)).expect("sim"), &[b]);
    let dirty = c["epoch.migrate.demotions_dirty"];
    // (A page not stored to since it arrived is clean: its NVM copy was made current then.)
    assert!(dirty > 0, "{dirty}");
    assert!(c["epoch.migrate.threshold_changes"] > 0);
    assert_eq!(c["epoch.migrate.threshold_cycles"] % 32_768, 0);
    // Copies: each promotion NVM -> DRAM, each dirty demotion DRAM -> NVM, 64 lines each.
    let p = c["epoch.migrate.promotions"];
    assert_eq!(c["hybrid.nvm.copy_reads"], 64 * p);
    assert_eq!(c["hybrid.dram.copy_reads"], 64 * dirty);
    assert_eq!(c["hybrid.cycles.migration"], p * 64 * 300 + dirty * 64 * 600);
    assert_eq!(c["epoch.migrate.bytes_copied"], (p + dirty) * 4096);
}

#[test]
fn bad_hybrid_input_is_one_sentence_each() {
    let e = |t: String| Config::from_toml("bad", &t, &[]).expect_err("must fail").0;
    let big = tiny_text("").replace("[memory]\n", "[memory]\nsize = \"1MiB\"\n");
    let m = e(big);
    assert!(m.contains("must be a multiple of 4KiB between 2MiB") || m.contains("larger than the whole memory"), "{m}");
    let big = tiny_text("")
        .replace("[memory]\n", "[memory]\nsize = \"4MiB\"\n")
        .replace("size = \"2MiB\"", "size = \"6MiB\"");
    assert!(e(big).contains("memory kind 'dram' (6291456 bytes) is larger than the whole memory"));
    let zero = tiny_text("").replace("size = \"2MiB\"", "size = \"0B\"");
    assert!(e(zero).contains("size = 0 must be a positive multiple of 2MiB"));
    let neg = tiny_text("").replace("read_latency = 200", "read_latency = -5");
    let m = e(neg);
    assert!(m.contains("read_latency") && !m.contains('\n'), "{m}");
    let neg = tiny_text("").replace("write_energy_pj = 100.0", "write_energy_pj = -1.0");
    assert!(e(neg).contains("write_energy_pj = -1 must be a finite number >= 0"));
    let one = tiny_text("[hybrid]\n").replace(
        "[[memory.kinds]]\nname = \"nvm\"\nsize = \"4MiB\"\nread_latency = 200\nwrite_latency = 500\nread_energy_pj = 30.0\nwrite_energy_pj = 100.0\nstatic_power_mw = 0.0\n",
        "",
    );
    assert!(e(one.clone() + "migration = \"utility\"\n").contains("hybrid.migration needs two memory.kinds"));
    let none = one.replace("[[memory.kinds]]\nname = \"dram\"\nsize = \"2MiB\"\nread_latency = 100\nwrite_latency = 100\nread_energy_pj = 10.0\nwrite_energy_pj = 20.0\nstatic_power_mw = 1000.0\n", "");
    assert!(e(none).contains("[hybrid] needs one or two memory.kinds"), "no kinds");
    let no_data = tiny_text("[hybrid]\n").replace("data_through_caches = true", "data_through_caches = false");
    assert!(e(no_data).contains("[hybrid] needs sim.data_through_caches = true"));
    assert!(e(tiny_text("[hybrid]\ninterval = 0\n")).contains("hybrid.interval = 0 must be at least 1 cycle"));
    let wide = tiny_text("[hybrid]\n").replace("size = \"128B\"", "size = \"256B\"\nline = 128");
    assert!(e(wide).contains("the last with 64-byte lines"));
}

#[test]
fn the_rainbow_configurations_run_the_hybrid_loop() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/rainbow/");
    let batches = common::mixed_trace(20_000, common::G, false);
    for (file, kinds) in
        [("flat-static.toml", 2), ("dram-only-2mb.toml", 1), ("hscc-4kb.toml", 2), ("hscc-2mb.toml", 2)]
    {
        let text = std::fs::read_to_string(format!("{dir}{file}")).expect("config");
        let cfg = Config::from_toml(file, &text, &[]).expect("valid");
        assert_eq!(cfg.memory.kinds.len(), kinds, "{file}");
        let s = Simulator::new(&cfg).expect("simulator");
        assert_eq!(s.variant(), "hybrid", "{file}");
        let (s, c) = run(s, &batches);
        let d = s.derived(&c);
        // Every data access that missed the caches is a read of one kind.
        let sum =
            |what: &str| -> u64 { ["dram", "nvm"].iter().filter_map(|k| c.get(&format!("hybrid.{k}.{what}"))).sum() };
        assert_eq!(sum("reads"), c["dram.accesses"], "{file}");
        assert_eq!(sum("walk_reads"), c["dram.walk_accesses"], "{file}");
        assert!(d["hybrid.ipc"] > 0.0 && d["hybrid.energy.total_nj"] > 0.0, "{file}");
    }
}
