//! Mach 3.0's software-managed TLB (`[mach]`, mmu/mach/, docs/mach.md; seed 001 chapters 2-3),
//! on small hand-built traces whose every count and cycle is computed by hand below.
//!
//! The machine of these tests: a 64KB direct-mapped cache of 16-byte lines, hit latency 1; a
//! load that misses costs 25 (`dram_latency` is load-to-use: 1 + seed 001's T_C = 24); data
//! accesses do not go through the caches, so only the handlers' loads fill it.

use std::collections::BTreeMap;
use xlat_core::config::Config;
use xlat_core::Simulator;
use xlat_trace::{Access, AccessKind, Batch, Marker, SideBody};

use crate::common;
use common::run;

/// kseg2 (mapped kernel data) and kseg0 (unmapped), as a trace writes them.
const KSEG2: u64 = 0xFFFF_C000_0000_0000;
const KSEG0: u64 = 0xFFFF_8000_0000_0000;

fn mach(extra: &str) -> Config {
    let text = format!(
        r#"
name = "mach-test"
[mach]
{extra}
[[cache]]
name = "L1"
size = "64KiB"
ways = 1
line = 16
latency = 1
[memory]
size = "1GiB"
dram_latency = 25
"#
    );
    Config::from_toml("mach-test", &text, &[]).expect("valid")
}

/// A trace builder: accesses one instruction apart, markers before the next access.
#[derive(Default)]
struct T {
    b: Batch,
    ic: u64,
}

impl T {
    fn load(&mut self, va: u64) -> &mut Self {
        self.ic += 1;
        self.b.push_access(Access { addr: va, icount: self.ic, tid: 1, size: 8, kind: AccessKind::Load });
        self
    }
    fn mark(&mut self, m: Marker) -> &mut Self {
        self.b.push_side(1, self.ic, SideBody::Marker(m));
        self
    }
    fn run(&self, cfg: &Config) -> BTreeMap<String, u64> {
        let s = Simulator::new(cfg).expect("simulator");
        assert_eq!(s.variant(), "mach");
        run(s, std::slice::from_ref(&self.b)).1
    }
}

/// (misses, direct, cascaded, cycles) of miss type `t`.
fn of(k: &BTreeMap<String, u64>, t: &str) -> (u64, u64, u64, u64) {
    let g = |n: &str| k[&format!("mach.{n}.{t}")];
    (g("misses"), g("direct"), g("cascaded"), g("cycles"))
}

#[test]
fn each_miss_type_costs_its_table_2_1_cycles_and_a_cold_miss_cascades_l1u_l2_l3() {
    let a = 0x1000_0000u64;
    let k1 = KSEG2 + 0x2_0000;
    let mut t = T::default();
    // 1. A user page on a cold TLB: L1U miss; its PTE's page (the user page table) is not
    //    mapped: L2 miss (cascaded); the L2 handler's PTE page (the kernel page table) is not
    //    mapped either: L3 miss (cascaded), served from the pinned root. Three loads from
    //    DRAM (25 each); the page was never touched: TLB-invalid (the VM system faults it in).
    //    L1U: 9 + 25 = 34 (Table 2.1: 30-40 when the load misses the cache).
    // 2. The next page: L1U miss; its PTE is 4 bytes after the first one's, in the line just
    //    loaded: 9 + 1 = 10 (Table 2.1's 10 cycles); TLB-invalid again.
    // 3. The first page again: a TLB hit.
    // 4. A kseg2 page: L1K miss (512); its PTE lies in another page of the kernel page table:
    //    L3 miss (cascaded, 407).
    // 5. kseg0: unmapped, no lookup.
    // 6. The next kseg2 page: L1K miss, its PTE in the same kernel page-table page (TLB hit)
    //    and the same cache line as 4's (an L1 hit).
    t.load(a).load(a + 0x1000).load(a).load(k1).load(KSEG0 + 0x1000).load(k1 + 0x1000);
    let k = t.run(&mach(""));
    assert_eq!(of(&k, "l1u"), (2, 2, 0, 34 + 10));
    assert_eq!(of(&k, "l2"), (1, 0, 1, 555));
    assert_eq!(of(&k, "l3"), (2, 0, 2, 2 * 407));
    assert_eq!(of(&k, "l1k"), (2, 2, 0, 2 * 512));
    assert_eq!(of(&k, "invalid"), (2, 2, 0, 2 * 338));
    assert_eq!(k["mach.cycles"], 44 + 555 + 814 + 1024 + 676);
    assert_eq!(k["mach.kernel_misses"], 5);
    assert_eq!(k["mach.user_misses"], 4);
    assert_eq!(k["mach.cascaded"], 3);
    assert_eq!(k["mach.unmapped"], 1);
    // Lookups: 5 mapped accesses, and the handlers' 5 translated loads (2 L1U PTEs, 3 kernel
    // page-table entries); misses: 2 L1U, 2 L1K, 1 L2, 2 L3.
    assert_eq!((k["mach.tlb.lookups"], k["mach.tlb.misses"]), (10, 7));
    // Loads: 1 from the L1 (access 2's PTE, access 6's PTE), the rest from DRAM.
    assert_eq!((k["mach.loads_hit.L1"], k["mach.loads_hit.DRAM"]), (2, 5));
    assert_eq!(k["walker.cycles"], k["mach.cycles"]);
    assert_eq!(k["os.page_faults"], 2);
}

#[test]
fn the_lower_partition_replaces_l2_entries_first_in_first_out() {
    // Both partitions FIFO (deterministic): 8 upper entries, `lower` for L2 entries. Pages in
    // three 4MB regions (three pages of the user page table: three L2 entries), then a second
    // page in the first two regions. With 2 lower entries, the third region's L2 entry evicts
    // the first's, whose second page then misses again, evicting the second's: 5 L2 misses.
    // With 3, they all stay: 3. The kernel page-table page holding the three L2 PTEs is one
    // L3 entry in the upper partition (one L3 miss).
    let r = |i: u64| 0x1000_0000 + (i << 22);
    let mut t = T::default();
    t.load(r(0)).load(r(1)).load(r(2)).load(r(0) + 0x1000).load(r(1) + 0x1000);
    for (lower, l2, evicted) in [(2, 5, 3), (3, 3, 0)] {
        let cfg = mach(&format!("entries = {}\nupper = 8\nlower = {lower}\nupper_policy = \"fifo\"", 8 + lower));
        let k = t.run(&cfg);
        assert_eq!(of(&k, "l2").0, l2, "lower = {lower}");
        assert_eq!(of(&k, "l3").0, 1);
        assert_eq!(of(&k, "l1u").0, 5);
        assert_eq!(k["mach.tlb.evictions_lower"], evicted);
        assert_eq!(k["mach.tlb.evictions_upper"], 0);
    }
}

#[test]
fn random_replacement_in_the_upper_partition_is_deterministic_per_seed() {
    // Six kernel pages in a cycle, 50 times, through 4 upper entries (which also hold the
    // entry of their page-table page). FIFO evicts the oldest entry, which in a cycle longer
    // than the partition is always the next one needed: every access misses (300 L1K). Random
    // replacement keeps some: fewer misses, the same for a seed, different across seeds.
    let mut t = T::default();
    for i in 0..300u64 {
        t.load(KSEG2 + (i % 6) * 0x1000);
    }
    let misses = |seed: u64, policy: &str| {
        let mut cfg = mach(&format!("entries = 6\nupper = 4\nlower = 2\nupper_policy = \"{policy}\""));
        cfg.sim.seed = seed;
        let k = t.run(&cfg);
        (of(&k, "l1k").0, of(&k, "l3").0)
    };
    assert_eq!(misses(1, "fifo").0, 300);
    let (a, b, c) = (misses(1, "random"), misses(1, "random"), misses(2, "random"));
    assert_eq!(a, b, "the same seed, the same victims");
    assert_ne!(a, c, "another seed, other victims");
    assert!(a.0 < 300 && c.0 < 300, "random keeps some entries: {a:?} {c:?}");
}

#[test]
fn a_direct_mapped_stlb_loses_entries_to_conflicts_a_two_way_one_keeps_them() {
    // A 1-entry TLB: every access to another page than the last misses. Kernel pages K1 and
    // K2 (page numbers 2 and 6 past kseg2's start) share set 2 of a 4-entry STLB, K3 is in set
    // 3, and the kernel page-table page mapping all three (page number = 0 mod 4) in set 0.
    let (k1, k2, k3) = (KSEG2 + 0x2000, KSEG2 + 0x6000, KSEG2 + 0x3000);
    let mut t = T::default();
    t.load(k1).load(k2).load(k1).load(k3).load(k1);
    let k = t.run(&mach("entries = 1\nupper = 1\nlower = 0\nstlb = \"dm\"\nstlb_entries = 4"));
    // K1: STLB miss (+70), L1K handler (512), its PTE page's L3 miss also an STLB miss (70 +
    //     407). K2: STLB miss (set 2 holds K1), 582; L3 miss, STLB hit (105). K1: STLB miss
    //     (K2 replaced it: the conflict), 582; L3 hit 105. K3: STLB miss (cold), 582; L3 105.
    // K1: STLB hit, 105, no L3 miss.
    assert_eq!(of(&k, "l1k"), (5, 5, 0, 4 * 582 + 105));
    assert_eq!(of(&k, "l3"), (4, 0, 4, 477 + 3 * 105));
    assert_eq!((k["mach.stlb.probes"], k["mach.stlb.hits"], k["mach.stlb.misses"]), (9, 4, 5));
    // 2-way, 8 entries (4 sets of 2): K1 and K2 both fit set 2. K1, K2, K3, then K2 (found in
    // the second way: 170, section 3.2.2).
    let mut t = T::default();
    t.load(k1).load(k2).load(k3).load(k2);
    let k = t.run(&mach("entries = 1\nupper = 1\nlower = 0\nstlb = \"2way\"\nstlb_entries = 8"));
    assert_eq!(of(&k, "l1k"), (4, 4, 0, 3 * 582 + 170));
    assert_eq!(of(&k, "l3"), (3, 0, 3, 477 + 2 * 105));
    assert_eq!(k["mach.stlb.second_way_hits"], 1);
    // Probes: 4 L1K + 3 L3; a 2-way miss reads both ways of its set.
    assert_eq!((k["mach.stlb.probes"], k["mach.stlb.hits"]), (7, 3));
}

#[test]
fn ptlb_prefetches_remove_exactly_the_l2_misses_they_cover() {
    // Client (asid 1) and server (asid 2), one lower entry (one L2 entry at a time), a large
    // FIFO upper partition; the PTLB prefetches only the receiver's code page's L2 entry.
    let code = 0x40_0000u64;
    let mut t = T::default();
    t.mark(Marker::ContextSwitch { asid: 1 }).load(code);
    // Client -> server: the client's L2 entry (in the TLB) is stored in the PTLB; the server's
    // is not there yet (a probe, 25 cycles).
    t.mark(Marker::IpcSend { peer: 2, bytes: 8 }).mark(Marker::ContextSwitch { asid: 2 });
    t.mark(Marker::IpcRecv { peer: 1, bytes: 8 }).load(code);
    // Server -> client: the server's L2 entry is stored; the client's prefetched (60) ...
    t.mark(Marker::IpcSend { peer: 1, bytes: 8 }).mark(Marker::ContextSwitch { asid: 1 });
    t.mark(Marker::IpcRecv { peer: 2, bytes: 8 }).load(code + 0x1000);
    // ... and back: the server's prefetched (60).
    t.mark(Marker::IpcSend { peer: 2, bytes: 8 }).mark(Marker::ContextSwitch { asid: 2 });
    t.mark(Marker::IpcRecv { peer: 1, bytes: 8 }).load(code + 0x1000);
    let base = "entries = 17\nupper = 16\nlower = 1\nupper_policy = \"fifo\"";
    let without = t.run(&mach(base));
    let prefetch = "ptlb = true\nptlb_user_pages = [0x400000]\nptlb_ipc_pages = 0\nptlb_l3 = false\nptlb_kernel_ipc = \"receiver\"";
    let with = t.run(&mach(&format!("{base}\n{prefetch}")));
    // Without: every first page of a process after the other ran misses its L2 entry (4), and
    // each process's user page table has its own kernel page-table page (2 L3).
    assert_eq!(of(&without, "l2"), (4, 0, 4, 4 * 555));
    assert_eq!(of(&with, "l2"), (2, 0, 2, 2 * 555));
    assert_eq!(of(&without, "l3").0, 2);
    assert_eq!(of(&with, "l3").0, 2);
    assert_eq!(of(&with, "l1u"), of(&without, "l1u"));
    assert_eq!(with["mach.ptlb.prefetches"], 2);
    assert_eq!(with["mach.ptlb.absent"], 1);
    assert_eq!(with["mach.ptlb.present"], 0);
    assert_eq!(with["mach.ptlb.stores"], 3);
    assert_eq!(with["mach.ptlb.cycles"], 25 + 60 + 60);
    assert_eq!(with["mach.cycles"], without["mach.cycles"] - 2 * 555 + 145);
}

#[test]
fn ptlb_prefetches_of_kernel_ipc_structures_remove_their_l1k_and_l3_misses() {
    // 4 upper entries, FIFO; the PTLB prefetches only the receiver's kernel IPC page
    // (KSEG2 + asid * 0x10000). Each process touches 4 pages of its own between IPCs, which
    // pushes the kernel entries out of the upper partition.
    let port = |asid: u64| KSEG2 + asid * 0x1_0000;
    let pages = |t: &mut T| {
        for i in 0..4u64 {
            t.load(0x1000_0000 + i * 0x1000);
        }
    };
    let mut t = T::default();
    t.mark(Marker::ContextSwitch { asid: 1 });
    // 1 -> 2: the server's port is not in the PTLB yet (a probe, 25); the kernel touches it:
    // L1K miss, L3 miss (the kernel page-table page); the generic handler stores it in the PTLB.
    t.mark(Marker::IpcSend { peer: 2, bytes: 8 }).load(port(2));
    t.mark(Marker::ContextSwitch { asid: 2 }).mark(Marker::IpcRecv { peer: 1, bytes: 8 });
    pages(&mut t);
    // 2 -> 1: the client's port, likewise (25; L1K and L3 misses: the server's pages evicted
    // both kernel entries).
    t.mark(Marker::IpcSend { peer: 1, bytes: 8 }).load(port(1));
    t.mark(Marker::ContextSwitch { asid: 1 }).mark(Marker::IpcRecv { peer: 2, bytes: 8 });
    pages(&mut t);
    // 1 -> 2 again: the server's port is in the PTLB, not in the TLB: prefetched (60), and the
    // kernel's access hits. Without the PTLB: an L1K miss and an L3 miss.
    t.mark(Marker::IpcSend { peer: 2, bytes: 8 }).load(port(2));
    let base = "entries = 8\nupper = 4\nlower = 4\nupper_policy = \"fifo\"";
    let without = t.run(&mach(base));
    let prefetch =
        "ptlb = true\nptlb_user_pages = []\nptlb_ipc_pages = 1\nptlb_l3 = false\nptlb_kernel_ipc = \"receiver\"";
    let with = t.run(&mach(&format!("{base}\n{prefetch}")));
    assert_eq!(of(&without, "l1k"), (3, 3, 0, 3 * 512));
    assert_eq!(of(&with, "l1k"), (2, 2, 0, 2 * 512));
    // L3: the kernel page-table page of kseg2 (3 times without, twice with) and of each user
    // page table (server, client).
    assert_eq!(of(&without, "l3").0, 5);
    assert_eq!(of(&with, "l3").0, 4);
    assert_eq!(of(&with, "l2"), of(&without, "l2"));
    assert_eq!(of(&with, "l1u"), of(&without, "l1u"));
    assert_eq!((with["mach.ptlb.prefetches"], with["mach.ptlb.absent"], with["mach.ptlb.stores"]), (1, 2, 2));
    assert_eq!(with["mach.ptlb.cycles"], 25 + 25 + 60);
}

#[test]
fn the_ptlb_prefetches_the_senders_kernel_ipc_data_too_by_default() {
    // Seed 001 section 3.1.5: "On subsequent accesses to the data, the PTE is prefetched and then
    // the data is accessed": the IPC path touches the sender's kernel IPC structures as well as
    // the receiver's. 4 upper entries, FIFO; each IPC's kernel path touches both ports.
    let port = |asid: u64| KSEG2 + asid * 0x1_0000;
    let mut t = T::default();
    t.mark(Marker::ContextSwitch { asid: 1 });
    // 1 -> 2: nothing in the PTLB yet; both ports miss (L1K) and are stored.
    t.mark(Marker::IpcSend { peer: 2, bytes: 8 }).load(port(1)).load(port(2));
    t.mark(Marker::ContextSwitch { asid: 2 }).mark(Marker::IpcRecv { peer: 1, bytes: 8 });
    // The server's 4 pages push both kernel entries out of the upper partition.
    for i in 0..4u64 {
        t.load(0x1000_0000 + i * 0x1000);
    }
    // 2 -> 1: both ports are in the PTLB. "both" prefetches the sender's (2) and the
    // receiver's (1): no L1K miss; "receiver" prefetches port 1 only: port 2 misses.
    t.mark(Marker::IpcSend { peer: 1, bytes: 8 }).load(port(2)).load(port(1));
    let base = "entries = 8\nupper = 4\nlower = 4\nupper_policy = \"fifo\"";
    let ptlb = "ptlb = true\nptlb_user_pages = []\nptlb_ipc_pages = 1\nptlb_l3 = false";
    let without = t.run(&mach(base));
    let both = t.run(&mach(&format!("{base}\n{ptlb}")));
    let receiver = t.run(&mach(&format!("{base}\n{ptlb}\nptlb_kernel_ipc = \"receiver\"")));
    assert_eq!(of(&without, "l1k"), (4, 4, 0, 4 * 512));
    assert_eq!(of(&receiver, "l1k"), (3, 3, 0, 3 * 512));
    assert_eq!(of(&both, "l1k"), (2, 2, 0, 2 * 512));
    // Send 1 probes both ports, absent (25 each); send 2 prefetches both (60 each).
    let ptlb_counts = |c: &BTreeMap<String, u64>| {
        ["prefetches", "absent", "present", "stores", "cycles"].map(|k| c[&format!("mach.ptlb.{k}")])
    };
    assert_eq!(ptlb_counts(&both), [2, 2, 0, 2, 2 * 25 + 2 * 60]);
    // (Under "receiver", port 2's second miss stores it again: 3 stores.)
    assert_eq!(ptlb_counts(&receiver), [1, 1, 0, 3, 25 + 60]);
    for c in [&both, &receiver] {
        assert_eq!(of(c, "l1u"), of(&without, "l1u"));
        assert_eq!(of(c, "l2"), of(&without, "l2"));
    }
}

#[test]
fn bad_mach_configurations_get_one_sentence() {
    let bad = |extra: &str| {
        let text = format!("name = \"m\"\n[mach]\n{extra}\n");
        Config::from_toml("m", &text, &[]).expect_err("invalid").to_string()
    };
    let e = bad("entries = 64\nupper = 50\nlower = 8");
    assert!(e.contains("mach.upper = 50 and mach.lower = 8 must add up to mach.entries = 64"), "{e}");
    let e = bad("stlb = \"dm\"\nstlb_entries = 1000");
    assert!(e.contains("mach.stlb_entries = 1000 must be a power of two"), "{e}");
    let e = bad("l2_cycles = -5");
    assert!(e.contains("mach.l2_cycles = -5 is a cost below zero"), "{e}");
    let e = Config::from_toml(
        "m",
        "name = \"m\"\n[mach]\n[[tlb]]\nname = \"t\"\nlevel = 1\nrole = \"data\"\nentries = 4\nways = 4\npage_sizes = [\"4KB\"]\n",
        &[],
    )
    .expect_err("invalid")
    .to_string();
    assert!(e.contains("[mach] cannot run with [[tlb]] entries"), "{e}");
}
