//! The seams the designs plug into, each exercised by a test that fails if the seam breaks:
//! the miss path (page and range TLBs after a first-level miss), the miss handler (radix or
//! software), the memory backend, epoch controllers, access observers, side events reaching
//! components, and counters reported through one trait.

use xlat_core::config::Config;
use xlat_core::os::SimError;
use xlat_core::sim::epoch::{EpochController, EpochCx, Period};
use xlat_core::sim::observer::{AccessObserver, Observed, Translated};
use xlat_core::stats::{Counters, Sink};
use xlat_core::{presets, Simulator};
use xlat_trace::{Access, AccessKind, Batch, Marker, SideBody};

use crate::common;
use common::{mixed_trace, mmap, preset, run, ANON};

/// An observer that counts what it sees.
#[derive(Default)]
struct Census {
    by_kind: [u64; 3],
    by_level: [u64; 4],
    walks: u64,
    untranslated: u64,
    ipc: u64,
    phases: u64,
    /// The frames of 4KB pages seen, checked against the page size.
    misaligned: u64,
}

impl AccessObserver for Census {
    fn access(&mut self, a: &Observed) {
        self.by_kind[a.kind as usize] += 1;
        match a.at {
            Translated::Level(l) => self.by_level[l as usize] += 1,
            Translated::Walk => self.walks += 1,
            Translated::Untranslated => self.untranslated += 1,
        }
        if a.at != Translated::Untranslated
            && a.va >> 12 & ((a.size.bytes() >> 12) - 1) != a.pfn() & ((a.size.bytes() >> 12) - 1)
        {
            self.misaligned += 1;
        }
    }
    fn side(&mut self, body: &SideBody) {
        match body {
            SideBody::Marker(Marker::IpcSend { .. }) => self.ipc += 1,
            SideBody::Marker(Marker::Phase { .. }) => self.phases += 1,
            _ => {}
        }
    }
}

impl Counters for Census {
    fn counters(&self, out: &mut dyn Sink) {
        out.put(format_args!("census.walks"), self.walks);
    }
}

#[test]
fn an_observer_sees_every_access_where_it_was_translated() {
    let batches = mixed_trace(120_000, 4 * common::G, true);
    let (_, plain) = run(Simulator::new(&preset("skylake", &[])).expect("simulator"), &batches);
    let mut census = Census::default();
    let (s, c) = {
        // The observer is moved into the simulator; read it back through its counters and
        // through a second run that keeps a handle.
        let s = Simulator::with_observer(&preset("skylake", &[]), Census::default()).expect("simulator");
        run(s, &batches)
    };
    assert_eq!(s.variant(), "general");
    assert_eq!(c["census.walks"], c["walker.walks"]);
    // Every counter of the plain loop is the same with an observer (which only adds its own).
    for (k, v) in &plain {
        assert_eq!(c[k], *v, "{k}");
    }
    // A second run whose observer's counts are read from shared state.
    use std::sync::{Arc, Mutex};
    struct Shared(Arc<Mutex<Census>>);
    impl AccessObserver for Shared {
        fn access(&mut self, a: &Observed) {
            self.0.lock().unwrap().access(a)
        }
        fn side(&mut self, b: &SideBody) {
            self.0.lock().unwrap().side(b)
        }
    }
    impl Counters for Shared {
        fn counters(&self, _: &mut dyn Sink) {}
    }
    let shared = Arc::new(Mutex::new(Census::default()));
    let s = Simulator::with_observer(&preset("skylake", &[]), Shared(shared.clone())).expect("simulator");
    let (_, c) = run(s, &batches);
    std::mem::swap(&mut census, &mut shared.lock().unwrap());
    assert_eq!(census.by_kind, [c["loads"], c["stores"], c["ifetches"]]);
    let l1_hits = c["tlb_level1.data.hits"] + c["tlb_level1.instruction.hits"];
    let l2_hits = c["tlb_level2.data.hits"] + c["tlb_level2.instruction.hits"];
    assert_eq!(census.by_level[0], l1_hits);
    assert_eq!(census.by_level[1], l2_hits);
    assert_eq!(census.walks, c["walker.walks"]);
    assert_eq!(census.untranslated, c["untranslated"]);
    assert_eq!(census.misaligned, 0, "the frame seen is the page's frame of the address");
    assert!(census.walks > 1000 && census.by_level[1] > 1000 && census.by_level[0] > 10_000);
    // Side events reach the observer: every marker counted by the simulator.
    assert_eq!(census.ipc + census.phases, c["markers"]);
    assert_eq!(census.ipc, 121);
}

#[test]
fn the_general_loop_counts_what_the_plain_one_counts_on_every_preset() {
    // The general copy (handler and backend chosen at run time, a staged miss path that
    // holds page TLBs only here) gives today's results: every counter, every preset.
    let batches = mixed_trace(60_000, 4 * common::G, true);
    for (name, _) in presets::ALL {
        for sets in [&[][..], &["os.policy=thp"][..], &["sim.data_through_caches=true"][..]] {
            let cfg = preset(name, sets);
            let (plain_sim, plain) = run(Simulator::new(&cfg).expect("simulator"), &batches);
            assert_eq!(plain_sim.variant(), "plain");
            let general = Simulator::with_observer(&cfg, xlat_core::sim::observer::NoObserver).expect("simulator");
            let (g, general) = run(general, &batches);
            assert_eq!(g.variant(), "general");
            assert_eq!(plain, general, "{name} {sets:?}");
            assert_eq!(plain_sim.result("t").to_json(), g.result("t").to_json(), "{name} {sets:?}");
        }
    }
}

/// A controller that counts its runs and, on even epochs, disables half the ways of a TLB
/// (restoring them on odd ones).
struct WayFlipper {
    every: Period,
    tlb: &'static str,
    runs: u64,
    seen_instructions: Vec<u64>,
    dropped: u64,
}

impl Counters for WayFlipper {
    fn counters(&self, out: &mut dyn Sink) {
        out.put(format_args!("dropped"), self.dropped);
    }
}

impl EpochController for WayFlipper {
    fn name(&self) -> &str {
        "flip"
    }
    fn period(&self) -> Period {
        self.every
    }
    fn run(&mut self, cx: &mut EpochCx<'_>) -> Result<(), SimError> {
        self.runs += 1;
        assert_eq!(cx.epoch, self.runs, "epochs are numbered from 1, each run once");
        self.seen_instructions.push(cx.instructions);
        let full = cx.mmu.tlbs().iter().find(|t| t.name == self.tlb).expect("tlb").ways_max();
        let ways = if self.runs.is_multiple_of(2) { full / 2 } else { full };
        self.dropped += cx.mmu.set_active_ways(self.tlb, ways).expect("resize");
        Ok(())
    }
}

#[test]
fn an_epoch_controller_runs_every_n_instructions_and_acts_on_the_tlbs() {
    let batches = mixed_trace(100_000, 4 * common::G, true);
    let n = 10_007;
    let flipper =
        WayFlipper { every: Period::Instructions(n), tlb: "l1d-4k", runs: 0, seen_instructions: vec![], dropped: 0 };
    let mut s = Simulator::new(&preset("skylake", &[])).expect("simulator");
    s.add_controller(Box::new(flipper)).expect("controller");
    let (s, c) = run(s, &batches);
    assert_eq!(c["epoch.flip.runs"], c["instructions"] / n, "floor(instructions / N) epochs");
    assert!(c["epoch.flip.dropped"] > 100, "disabling ways drops entries");
    let r = s.result("t");
    let e = &r.epochs["flip"];
    assert_eq!((e.unit.as_str(), e.every, e.rows.len() as u64), ("instructions", n, c["instructions"] / n));
    assert_eq!(e.columns, vec!["dropped".to_string()]);
    assert!(e.rows.windows(2).all(|w| w[0][0] <= w[1][0]), "cumulative");
    // Fewer ways half the time: fewer first-level data hits than without the controller.
    let (_, base) = run(Simulator::new(&preset("skylake", &[])).expect("simulator"), &batches);
    assert!(c["tlb.l1d-4k.hits"] < base["tlb.l1d-4k.hits"]);
    assert_eq!(c["accesses"], base["accesses"]);

    // By accesses: exactly floor(accesses / N), also when the sampling of every counter runs
    // at another period in the same run.
    let by_acc =
        WayFlipper { every: Period::Accesses(3001), tlb: "stlb", runs: 0, seen_instructions: vec![], dropped: 0 };
    let mut s = Simulator::new(&preset("skylake", &["sim.interval_accesses=7000"])).expect("simulator");
    s.add_controller(Box::new(by_acc)).expect("controller");
    let (s, c) = run(s, &batches);
    assert_eq!(c["epoch.flip.runs"], c["accesses"] / 3001);
    // The samples every 7000 accesses, and the run's end when it is past the last one.
    let partial = (c["accesses"] % 7000 != 0) as u64;
    assert_eq!(s.result("t").series.expect("series").rows.len() as u64, c["accesses"] / 7000 + partial);
}

#[test]
fn a_controller_with_a_bad_period_or_name_is_refused() {
    let mut s = Simulator::new(&preset("skylake", &[])).expect("simulator");
    let f = |every| WayFlipper { every, tlb: "stlb", runs: 0, seen_instructions: vec![], dropped: 0 };
    assert!(s.add_controller(Box::new(f(Period::Accesses(0)))).unwrap_err().contains("period of 0"));
    s.add_controller(Box::new(f(Period::Accesses(5)))).expect("first");
    assert!(s.add_controller(Box::new(f(Period::Accesses(5)))).unwrap_err().contains("two epoch controllers"));
}

/// A small machine: one 8-entry fully associative unified TLB, no PSCs, one cache level.
fn software(extra: &str) -> Config {
    let text = format!(
        r#"
name = "mips"
[memory]
size = "1GiB"
dram_latency = 100
[[tlb]]
name = "tlb"
level = 1
role = "unified"
entries = 8
ways = 8
page_sizes = ["4KB"]
[[cache]]
name = "L1"
size = "4KiB"
ways = 4
latency = 2
[walker]
kind = "software"
trap_cycles = 9
nested_trap_cycles = 500
{extra}
"#
    );
    Config::from_toml("mips", &text, &[]).expect("valid")
}

#[test]
fn a_software_handler_translates_its_own_page_table_loads() {
    // Pages A and B share a 2MB region (one page-table page), C is in another region.
    let base = 0x4000_0000u64;
    let (a, b, c) = (base, base + 0x5000, base + (2 << 20));
    let mut batch = Batch::default();
    mmap(&mut batch, base, 64 << 20, ANON);
    for (i, &va) in [a, b, c, a, b].iter().enumerate() {
        batch.push_access(Access { addr: va, icount: i as u64 + 1, tid: 1, size: 8, kind: AccessKind::Load });
    }
    let s = Simulator::new(&software("")).expect("simulator");
    assert_eq!(s.variant(), "general");
    let (_, k) = run(s, &[batch]);
    // A: a user miss, whose PTE load misses too (nested: the PT page's translation is not in
    // the TLB). B: a user miss whose PTE page is now in the TLB. C: a user miss and a nested
    // one (another PT page). A and B again: TLB hits.
    assert_eq!(k["walker.walks"], 3);
    assert_eq!(k["walker.nested_misses"], 2);
    assert_eq!(k["walker.loads"], 5, "a PTE load per miss, a root-entry load per nested miss");
    assert_eq!(k["walker.faulting_walks"], 3);
    // The TLB saw 5 user lookups and 3 nested ones (the handler's PTE loads), 2 + 1 hits.
    assert_eq!(k["tlb.tlb.accesses"], 8);
    assert_eq!(k["tlb.tlb.hits"], 3);
    assert_eq!(k["tlb.tlb.fills"], 5, "3 user pages, 2 page-table pages");
    // Cycles: 3 traps of 9 and 2 nested traps of 500, plus each load's latency. From memory
    // (100): A's nested load (its PD entry), A's PTE and C's PTE (each in a new page-table
    // page). From the L1 (2): B's PTE (in the line A's PTE load brought in: entries 0 and 5 of
    // one PT) and C's nested load (PD entries 0 and 1 share a line).
    assert_eq!((k["walker.loads_hit.L1"], k["walker.loads_hit.DRAM"]), (2, 3));
    assert_eq!(k["walker.cycles"], 3 * 9 + 2 * 500 + 2 * 2 + 3 * 100);
}

/// Every access of the batches after a first pass, translated by the observer: (va, pfn).
#[derive(Default)]
struct Frames(std::sync::Arc<std::sync::Mutex<Vec<(u64, u64, Translated)>>>);

impl AccessObserver for Frames {
    fn access(&mut self, a: &Observed) {
        self.0.lock().unwrap().push((a.va, a.pfn(), a.at));
    }
}

impl Counters for Frames {
    fn counters(&self, _: &mut dyn Sink) {}
}

#[test]
fn a_range_tlb_in_the_miss_path_translates_in_parallel_or_in_sequence() {
    // One 64 MiB mapping, eagerly paged into physically contiguous memory: one range. Three
    // distinct 4KB pages of it, then the first again.
    let base = 0x7000_0000_0000u64;
    let mut b = Batch::default();
    mmap(&mut b, base, 64 << 20, ANON);
    let pages = [base + 0x1000, base + (40 << 20), base + (7 << 20) + 0x123, base + 0x1008];
    for (i, &va) in pages.iter().enumerate() {
        b.push_access(Access { addr: va, icount: i as u64 + 1, tid: 1, size: 8, kind: AccessKind::Load });
    }
    let eager = ["os.allocation=eager", "os.ranges=contiguous"];
    for (stage, level) in [(2, 2), (3, 3)] {
        let mut sets: Vec<&str> = eager.to_vec();
        let extra = format!("[[range_tlb]]\nname = \"r\"\nentries = 32\nstage = {stage}\nlatency = 7\n");
        let text = format!("{}{extra}", presets::get("skylake").expect("preset"));
        sets.push("tlb.stlb.entries=1536");
        let cfg = Config::from_toml("skylake", &text, &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .expect("valid");
        let seen = Frames::default();
        let log = seen.0.clone();
        let s = Simulator::with_observer(&cfg, seen).expect("simulator");
        let (s, c) = run(s, std::slice::from_ref(&b));
        assert_eq!(s.os().ranges().len(), 1, "one range: the mapping is contiguous");
        // The first page walks (and fills the range TLB from the OS's range table); the next
        // two miss the L1 and the STLB and hit the range TLB; the last hits the L1.
        assert_eq!(c["walker.walks"], 1, "stage {stage}");
        assert_eq!(c["range_tlb.r.hits"], 2);
        assert_eq!(c["range_tlb.r.fills"], 1);
        assert_eq!(c[&format!("tlb_level{level}.data.hits")], 2);
        assert_eq!(c["range_tlb.r.accesses"], c[&format!("tlb_level{level}.data.lookups")]);
        // The walk's page lies in the range: one range-table walk of the one-node table (2
        // cache-line loads, the first from memory, the second line too), on one page of its own.
        assert_eq!((c["range_walk.walks"], c["range_walk.nodes"], c["range_walk.loads"]), (1, 1, 2));
        assert_eq!(c["range_walk.loads_hit.DRAM"], 2);
        assert_eq!(c["os.range_table_pages"], 1);
        if stage == 3 {
            // In sequence: probed only after the STLB missed.
            assert_eq!(c["tlb_level3.data.lookups"], c["tlb_level2.data.misses"]);
        }
        // The translation a range gives is the page table's.
        for &(va, pfn, at) in log.lock().unwrap().iter() {
            let (page, size) = s.os().lookup(va).expect("mapped");
            assert_eq!(pfn, page + ((va & (size.bytes() - 1)) >> 12), "{va:#x} at {at:?}");
        }
        assert!(log.lock().unwrap().iter().any(|&(_, _, at)| at == Translated::Level(1) || at == Translated::Level(2)));
    }
}

#[test]
fn two_memory_kinds_with_every_frame_in_dram_count_what_one_dram_counts() {
    let batches = mixed_trace(60_000, 4 * common::G, true);
    let plain = preset("skylake", &[]);
    let (_, one) = run(Simulator::new(&plain).expect("simulator"), &batches);
    // 64 GiB of DRAM (at the plain latency) and 32 GiB of NVM after it: the lowest-first
    // tiering never reaches the NVM.
    let kinds = "\n[[memory.kinds]]\nname = \"dram\"\nsize = \"64GiB\"\nread_latency = 200\nwrite_latency = 200\nread_energy_pj = 20.0\n[[memory.kinds]]\nname = \"nvm\"\nsize = \"32GiB\"\nread_latency = 600\nwrite_latency = 1500\n";
    let text = strip_memory(presets::get("skylake").expect("preset")) + kinds;
    let two = Config::from_toml("skylake", &text, &[]).expect("valid");
    let s = Simulator::new(&two).expect("simulator");
    assert_eq!(s.variant(), "general");
    let (_, k) = run(s, &batches);
    for (name, v) in &one {
        assert_eq!(k[name], *v, "{name}");
    }
    assert_eq!(k["memory.dram.walk_reads"], one["dram.walk_accesses"]);
    assert_eq!(k["memory.nvm.reads"] + k["memory.nvm.writes"], 0);

    // With 16 MiB of DRAM the page tables and data spill into the NVM, whose latency the walk
    // loads that reach memory then pay.
    let small = text.replace("size = \"64GiB\"", "size = \"16MiB\"");
    let cfg = Config::from_toml("skylake", &small, &[]).expect("valid");
    let (_, k) = run(Simulator::new(&cfg).expect("simulator"), &batches);
    assert!(k["memory.nvm.walk_reads"] > 1000, "{}", k["memory.nvm.walk_reads"]);
    let memory_loads = k["memory.dram.walk_reads"] + k["memory.nvm.walk_reads"];
    assert_eq!(memory_loads, k["dram.walk_accesses"]);
    assert!(k["walker.cycles"] > one["walker.cycles"]);
}

/// A preset's text without its `[memory]` table (the tests add their own).
fn strip_memory(text: &str) -> String {
    let mut out = String::new();
    let mut skip = false;
    for line in text.lines() {
        if line.starts_with('[') {
            skip = line.trim() == "[memory]";
        }
        if !skip {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The Skylake preset with eager paging, contiguous ranges and the range TLBs of `extra`.
fn rmm(extra: &str) -> Config {
    let text = format!("{}{extra}", presets::get("skylake").expect("preset"));
    let sets = ["os.allocation=eager".to_string(), "os.ranges=contiguous".to_string()];
    Config::from_toml("skylake", &text, &sets).expect("valid")
}

/// `n` mappings of 1 MiB, 16 MiB apart (one range each: eager paging backs each with one
/// contiguous block, and ranges never leave their VMA).
fn mappings(n: u64) -> (Batch, Vec<u64>) {
    let base = 0x7000_0000_0000u64;
    let mut b = Batch::default();
    let starts: Vec<u64> = (0..n).map(|i| base + i * (16 << 20)).collect();
    for &s in &starts {
        mmap(&mut b, s, 1 << 20, ANON);
    }
    (b, starts)
}

fn load(va: u64, ic: u64) -> Batch {
    let mut b = Batch::default();
    b.push_access(Access { addr: va, icount: ic, tid: 1, size: 8, kind: AccessKind::Load });
    b
}

#[test]
fn a_range_table_walk_loads_the_nodes_down_to_its_range_and_adds_no_cycles() {
    // 24 ranges: a two-level B-tree, the root holding the ranges of sorted index 4, 9, 14 and
    // 19 and five leaves of 4 (os/rangetree.rs). The first page of each mapping walks the
    // page table and then the range table: 1 node (2 loads) for a range in the root, 2 nodes
    // (4 loads) for the others; 44 nodes, 88 loads in all.
    let (b, starts) = mappings(24);
    let cfg = rmm("[[range_tlb]]\nname = \"r\"\nentries = 32\nstage = 2\nlatency = 7\nmru = true\n");
    let mut s = Simulator::new(&cfg).expect("simulator");
    s.batch(&b).expect("mmap");
    assert_eq!(s.os().ranges().len(), 24);
    let mut ic = 0;
    for (i, &va) in starts.iter().enumerate() {
        let before = s.counters()["range_walk.nodes"];
        ic += 1;
        s.batch(&load(va, ic)).expect("load");
        let c = s.counters();
        assert_eq!(c["range_walk.nodes"] - before, if i % 5 == 4 { 1 } else { 2 }, "range {i}");
    }
    let c = s.counters();
    assert_eq!((c["walker.walks"], c["range_walk.walks"]), (24, 24));
    assert_eq!((c["range_walk.nodes"], c["range_walk.loads"]), (44, 88));
    let by_level: u64 = ["L1D", "L2", "LLC", "DRAM"].iter().map(|l| c[&format!("range_walk.loads_hit.{l}")]).sum();
    assert_eq!(by_level, 88);
    // 6 nodes, 12 lines: every line's first load reaches memory, the rest (the root's, loaded
    // by every walk) hit the L1D.
    assert_eq!((c["range_walk.loads_hit.DRAM"], c["range_walk.loads_hit.L1D"]), (12, 76));
    assert_eq!(c["os.range_table_pages"], 1);
    assert!(c["range_walk.cycles"] > 0);
    // No cycles in the time estimate: the run without range TLBs (the same walks, the range
    // walks' 12 lines in no set a page walk needs) estimates the same time.
    let plain = preset("skylake", &["os.allocation=eager", "os.ranges=contiguous"]);
    let mut p = Simulator::new(&plain).expect("simulator");
    p.batch(&b).expect("mmap");
    for (i, &va) in starts.iter().enumerate() {
        p.batch(&load(va, i as u64 + 1)).expect("load");
    }
    let pc = p.counters();
    assert_eq!(pc["walker.cycles"], c["walker.cycles"]);
    assert_eq!(p.derived(&pc)["time.total_cycles"], s.derived(&c)["time.total_cycles"]);
    // Another page of each range: the range TLB translates (no walk); the least recently used
    // range is never at the front, so the MRU pointer serves none of these. Two more pages of
    // the last range: both at the front.
    let again: Vec<u64> =
        starts.iter().map(|&v| v + 0x5000).chain([starts[23] + 0x6000, starts[23] + 0x7000]).collect();
    for va in again {
        ic += 1;
        s.batch(&load(va, ic)).expect("load");
    }
    s.check_invariants().expect("invariants");
    let c = s.counters();
    assert_eq!((c["walker.walks"], c["range_walk.walks"], c["range_tlb.r.hits"]), (24, 24, 26));
    assert_eq!(c["range_tlb.r.mru_hits"], 2);
    assert_eq!(c["tlb_level2.data.hits"], 26);
}

#[test]
fn an_l1_range_tlb_is_looked_up_with_the_l1_page_tlbs_and_fills_nothing() {
    // 6 ranges; a 4-entry L1 range TLB (stage 1) and a 32-entry one beside the STLB.
    let (b, starts) = mappings(6);
    let r1 = "[[range_tlb]]\nname = \"r1\"\nentries = 4\nstage = 1\n";
    let r2 = "[[range_tlb]]\nname = \"r2\"\nentries = 32\nstage = 2\nlatency = 7\n";
    let cfg = rmm(&format!("{r1}{r2}"));
    let seen = Frames::default();
    let log = seen.0.clone();
    let mut s = Simulator::with_observer(&cfg, seen).expect("simulator");
    s.batch(&b).expect("mmap");
    let mut ic = 0;
    let mut go = |s: &mut Simulator, va: u64| {
        ic += 1;
        s.batch(&load(va, ic)).expect("load");
    };
    // The first page of each: 6 walks, 6 range walks, both range TLBs filled (r1 keeps the
    // last 4: ranges 2..5).
    for &va in &starts {
        go(&mut s, va);
    }
    // Range 5, another page: an L1 range hit (a first-level hit, no STLB lookup; seed 000
    // section 5.4.3: the L1-range TLB is looked up in parallel with the L1 page TLBs), which
    // fills nothing: the same page again hits r1, not the L1 page TLB.
    go(&mut s, starts[5] + 0x3000);
    go(&mut s, starts[5] + 0x3008);
    // Range 0, another page: r1 misses, the STLB misses, r2 hits and fills r1 and the L1 page
    // TLB with the 4KB entry (as in RMM); then a third page of range 0 hits r1.
    go(&mut s, starts[0] + 0x7000);
    go(&mut s, starts[0] + 0x9000);
    s.check_invariants().expect("invariants");
    let c = s.counters();
    assert_eq!((c["walker.walks"], c["range_walk.walks"]), (6, 6));
    assert_eq!((c["range_tlb.r1.hits"], c["range_tlb.r1.fills"], c["range_tlb.r1.evictions"]), (3, 7, 3));
    assert_eq!((c["range_tlb.r2.hits"], c["range_tlb.r2.fills"]), (1, 6));
    // Level 1: 10 lookups, 3 hits (all in r1); level 2: the 7 others, 1 hit (r2).
    assert_eq!((c["tlb_level1.data.lookups"], c["tlb_level1.data.hits"]), (10, 3));
    assert_eq!((c["tlb_level2.data.lookups"], c["tlb_level2.data.hits"]), (7, 1));
    assert_eq!((c["tlb.l1d-4k.hits"], c["tlb.l1d-4k.fills"]), (0, 7));
    // r1 is probed with the first-level page TLBs: its lookups are theirs.
    assert_eq!((c["range_tlb.r1.accesses"], c["range_tlb.r2.accesses"]), (10, 7));
    // An L1 range hit costs no cycle: the level-2 hit cycles are the one r2 hit's.
    assert_eq!(s.derived(&c)["time.stlb_hit_cycles"], 9.0);
    let at: Vec<Translated> = log.lock().unwrap().iter().map(|&(_, _, at)| at).collect();
    assert_eq!(&at[6..], &[Translated::Level(0), Translated::Level(0), Translated::Level(1), Translated::Level(0)]);
    for &(va, pfn, _) in log.lock().unwrap().iter() {
        let (page, size) = s.os().lookup(va).expect("mapped");
        assert_eq!(pfn, page + ((va & (size.bytes() - 1)) >> 12), "{va:#x}");
    }
}

#[test]
fn the_memo_of_l1_range_hits_counts_what_probing_every_access_counts() {
    // The memo of L1-range hits defers the L1 range TLB's hits, MRU hits and recency to its
    // flushes. A marker before every access empties the memo (every side event does), so that
    // run probes the L1 range TLB on every access: the counts must be the same. 10 ranges and a
    // 4-entry L1 range TLB with the MRU pointer (evictions), accesses in runs over a few pages
    // of a few ranges at a time, loads and stores, as pseudo-random as a small LCG makes them.
    let (maps, starts) = mappings(10);
    let r1 = "[[range_tlb]]\nname = \"r1\"\nentries = 4\nstage = 1\nmru = true\n";
    let r2 = "[[range_tlb]]\nname = \"r2\"\nentries = 32\nstage = 2\nlatency = 7\n";
    let cfg = rmm(&format!("{r1}{r2}"));
    let mut x = 12345u64;
    let mut next = |n: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    let mut accesses = Vec::new();
    for _ in 0..400 {
        let spread = if next(4) == 0 { 10 } else { 5 };
        let range = starts[next(spread) as usize];
        let page = range + (next(256) << 12);
        for _ in 0..next(12) + 1 {
            let kind = if next(3) == 0 { AccessKind::Store } else { AccessKind::Load };
            accesses.push((page + next(64) * 64, kind));
        }
    }
    let run = |markers: bool| {
        let mut s = Simulator::new(&cfg).expect("simulator");
        s.batch(&maps).expect("mmap");
        let mut b = Batch::default();
        for (i, &(addr, kind)) in accesses.iter().enumerate() {
            if markers {
                b.push_side(1, b.len() as u64, SideBody::Marker(Marker::Phase { id: 0, name: String::new() }));
            }
            b.push_access(Access { addr, icount: i as u64 + 1, tid: 1, size: 8, kind });
        }
        s.batch(&b).expect("run");
        s.check_invariants().expect("invariants");
        s.counters()
    };
    let (memo, probed) = (run(false), run(true));
    assert!(memo["range_tlb.r1.evictions"] > 50 && memo["range_tlb.r1.mru_hits"] > 1000, "{memo:?}");
    let differ: Vec<&String> =
        memo.keys().filter(|k| !k.starts_with("markers") && memo[*k] != probed.get(*k).copied().unwrap_or(0)).collect();
    assert!(differ.is_empty(), "the memo changed {differ:?}");
}

#[test]
fn a_range_hit_fills_the_entry_of_the_page_the_os_maps() {
    // configs/lite/rmm.toml: THP, eager paging, ranges, an L2-range TLB beside a Sandy Bridge L2
    // TLB that holds no 2MB entries. One 4 MiB mapping, 2MB-aligned: eager paging maps it with
    // two 2MB pages and one range. Load page 0 (a walk: the L1-2MB TLB gets its 2MB entry, the
    // range walk fills the L2-range TLB), then two 4KB pages of the second 2MB page: its first
    // load misses the L1 TLBs and the L2 TLB and hits the L2-range TLB.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/lite/rmm.toml");
    let text = std::fs::read_to_string(path).expect("configs/lite/rmm.toml");
    let base = 0x7000_0000_0000u64;
    let mut b = Batch::default();
    mmap(&mut b, base, 4 << 20, ANON);
    for (i, va) in [base, base + (2 << 20), base + (2 << 20) + 0x5000].into_iter().enumerate() {
        b.push_access(Access { addr: va, icount: i as u64 + 1, tid: 1, size: 8, kind: AccessKind::Load });
    }
    let counts = |fill: &[String]| {
        let cfg = Config::from_toml("rmm", &text, fill).expect("valid");
        let mut s = Simulator::new(&cfg).expect("simulator");
        s.batch(&b).expect("run");
        let c = s.counters();
        assert_eq!((c["os.eager_2m"], c["walker.walks"]), (2, 1));
        ["tlb.l1d-2m.fills", "tlb.l1d-2m.hits", "tlb.l1d-4k.fills", "range_tlb.range-l2.hits"].map(|k| c[k])
    };
    // fill = "page" (default; section 5.4.3: "copying the corresponding page table entry in the
    // L1-page TLBs"): the range hit fills the second page's 2MB entry, which the third load hits.
    assert_eq!(counts(&[]), [2, 1, 0, 1]);
    // fill = "4k" (section 4.3.1 read literally): a 4KB entry; the third load, another 4KB page,
    // misses the L1 TLBs and hits the range TLB again.
    assert_eq!(counts(&["range_tlb.range-l2.fill=\"4k\"".to_string()]), [1, 0, 2, 2]);
}
