//! PRISM in the simulator (seed 004 section 4): the MRE load appears exactly on 2MB TLB misses
//! whose PDE has an MRE, accesses set the sub-page access and dirty bits (each new bit written
//! back once), the rest of the simulation is unchanged, and results are deterministic.

use std::collections::HashSet;
use xlat_core::config::Config;
use xlat_core::mmu::prism::{Mre, PdeBits, Prism};
use xlat_core::Simulator;
use xlat_trace::{Access, AccessKind, Batch};

use crate::common;
use common::{mixed_trace, mmap, preset, run, ANON, G};

const HUGETLB_2M: u64 = ANON | 0x40000 | (21 << 26);
const BASE: u64 = 0x7100_0000_0000;

fn prism_cfg(extra: &[&str]) -> xlat_core::config::Config {
    let mut sets = vec!["os.metadata=registry", "prism.enabled=true"];
    sets.extend_from_slice(extra);
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Config::from_toml("tiny", TINY, &sets).expect("valid")
}

const TINY: &str = include_str!("../../../configs/examples/tiny.toml");

fn tiny_trace() -> Batch {
    let mut b = Batch::default();
    mmap(&mut b, BASE, 6 << 20, HUGETLB_2M);
    let (l, s) = (AccessKind::Load, AccessKind::Store);
    let accesses = [
        (BASE, l),                        // P0 page 0: walk, MRE load 1; A bit 0
        (BASE + 0x10000, s),              // P0 page 16: TLB hit; A bit 1, D bit 1 (one write-back)
        (BASE + 0x1000, l),               // P0 page 1: hit, A bit 0 already set
        (BASE + 0x1f000, s),              // P0 page 31: hit, A and D bit 1 already set
        (BASE + (2 << 20) + 0x100000, l), // P1 page 256: walk, MRE load 2; A bit 16
        (BASE + (4 << 20), l),            // P2 page 0: walk, MRE load 3; A bit 0
        (BASE + 8, s),                    // P0 page 0: hit; D bit 0
    ];
    for (i, (addr, kind)) in accesses.into_iter().enumerate() {
        b.push_access(Access { addr, icount: i as u64 + 1, tid: 1, size: 8, kind });
    }
    b
}

#[test]
fn the_mre_load_and_the_sub_page_bits_by_hand() {
    let s = Simulator::new(&prism_cfg(&[])).expect("simulator");
    assert_eq!(s.variant(), "prism");
    let (_, c) = run(s, &[tiny_trace()]);
    // Three 2MB pages, each walked once (their first touch), each walk loading its MRE.
    assert_eq!(c["walker.walks_2m"], 3);
    assert_eq!(c["prism.mre_loads"], 3);
    // The three MREs are PDE entries 0, 1, 2 of one page directory: one 64-byte line of its
    // companion page, cold at the first load (DRAM, 200 cycles), then in the LLC (40 cycles).
    assert_eq!(c["prism.mre_loads.DRAM"], 1);
    assert_eq!(c["prism.mre_loads.LLC"], 2);
    assert_eq!(c["prism.mre_load_cycles"], 200 + 2 * 40);
    assert_eq!(c["prism.registry_entries"], 3);
    // 7 accesses to 2MB pages with an MRE, 4 of them TLB hits.
    assert_eq!(c["prism.accesses"], 7);
    assert_eq!(c["prism.tlb_hits"], 4);
    // 32 access bits: 16 4KB pages per bit. A bits: P0 {0, 1}, P1 {16}, P2 {0}; D bits: P0 {1, 0}.
    assert_eq!(c["prism.access_bit_sets"], 4);
    assert_eq!(c["prism.dirty_bit_sets"], 2);
    assert_eq!(c["prism.access_bits_set"], 4);
    assert_eq!(c["prism.dirty_bits_set"], 2);
    // Write-backs: accesses 1, 2 (A and D at once), 5, 6, 7.
    assert_eq!(c["prism.mre_updates"], 5);
    // The MRE loads went through the caches as walk loads.
    assert_eq!(c["cache.LLC.accesses"], c["walker.loads"] + 3);
}

#[test]
fn granularity_from_mmdconfig_regions() {
    // 1 access bit for P1 only (the others keep 32) and 4 dirty bits for P0; with no call for
    // all pages, only P0 and P1 have an MRE.
    let cfg = prism_cfg(&[
        "prism.access_bits=0",
        "prism.dirty_bits=0",
        &format!("prism.mmdconfig=[{{addr={}, len={}, mdtype=\"access\", bits=1}}, {{addr={}, len=1, mdtype=\"dirty\", bits=4}}]", BASE + (2 << 20), 1 << 20, BASE + 5),
    ]);
    let p = Prism::new(&cfg);
    assert_eq!(p.pde_bits(BASE), PdeBits::new(1, 4));
    assert_eq!(p.pde_bits(BASE + (2 << 20) + 0x1f_ffff), PdeBits::new(1, 1));
    assert_eq!(p.pde_bits(BASE + (4 << 20)), PdeBits(0));
    let (_, c) = run(Simulator::new(&cfg).expect("simulator"), &[tiny_trace()]);
    assert_eq!(c["walker.walks_2m"], 3);
    assert_eq!(c["prism.mre_loads"], 2);
    assert_eq!(c["prism.walks_2m_without_mre"], 1);
    // P0: 1 A bit (set by access 1), 4 D bits of 128 pages (page 16 and page 0 share bit 0).
    // P1: 1 A bit. P2: none.
    assert_eq!(c["prism.access_bits_set"], 2);
    assert_eq!(c["prism.dirty_bits_set"], 1);
    assert_eq!(c["prism.mre_updates"], 3); // accesses 1, 2, 5
    assert_eq!(c["prism.accesses"], 6);
}

#[test]
fn pde_bits_encode_table_3() {
    // Bit 0 the present flag, bits 1-3 log2 of the access bits, 4-6 of the dirty bits (Table 3).
    assert_eq!(PdeBits::new(1, 1).0, 0b000_0001);
    assert_eq!(PdeBits::new(32, 1).0, 0b000_1011);
    assert_eq!(PdeBits::new(2, 16).0, 0b100_0011);
    let b = PdeBits::new(8, 32);
    assert!(b.present() && b.access_bits() == 8 && b.dirty_bits() == 32);
    assert!(!PdeBits(0).present());
    assert_eq!(Mre { access: 0b11, dirty: 1 << 31 }.word(), 0x8000_0000_0000_0003);
}

/// The accesses of `batches` to 4KB pages of the 64 MiB hugetlb region (`mixed_trace`): the
/// 32-bit access and dirty vectors a reference computes (each bit: 16 4KB pages).
fn reference_bits(batches: &[Batch]) -> (usize, usize) {
    let huge2m = 0x7100_0000_0000u64;
    let (mut a, mut d) = (HashSet::new(), HashSet::new());
    for b in batches {
        for (&addr, &k) in b.addr.iter().zip(&b.kind) {
            if (huge2m..huge2m + (64 << 20)).contains(&addr) {
                let key = (addr >> 21, (addr >> 12 & 511) >> 4);
                a.insert(key);
                if k == 1 {
                    d.insert(key);
                }
            }
        }
    }
    (a.len(), d.len())
}

#[test]
fn mre_loads_exactly_on_2mb_walks() {
    // THP backs most of the 2 GiB anonymous region with 2MB pages: many 2MB TLB misses.
    let batches = mixed_trace(150_000, G, true);
    let thp = ["os.metadata=registry", "os.policy=thp", "os.thp=always"];
    let (_, plain) = run(Simulator::new(&preset("skylake", &thp)).expect("simulator"), &batches);
    let cfg = preset("skylake", &[&thp[..], &["prism.enabled=true"]].concat());
    let (_, c) = run(Simulator::new(&cfg).expect("simulator"), &batches);
    assert!(c["walker.walks_2m"] > 1000, "the trace walks to 2MB pages: {}", c["walker.walks_2m"]);
    assert_eq!(c["prism.mre_loads"], c["walker.walks_2m"]);
    assert_eq!(c["prism.walks_2m_without_mre"], 0);
    let by_level: u64 = ["L1D", "L2", "LLC", "DRAM"].iter().map(|l| c[&format!("prism.mre_loads.{l}")]).sum();
    assert_eq!(by_level, c["prism.mre_loads"]);
    // The TLBs, walks and the OS are those of the same configuration without PRISM.
    for (k, v) in &plain {
        if k.starts_with("tlb.") || k.starts_with("walker.walks") || k.starts_with("os.") {
            assert_eq!(c[k], *v, "{k}");
        }
    }
    // Deterministic: a second run gives the same counters.
    let (_, again) = run(Simulator::new(&cfg).expect("simulator"), &batches);
    assert_eq!(c, again);
}

#[test]
fn sub_page_bits_match_a_reference() {
    // 2MB pages only in the hugetlb region: every access to it sets its bits.
    let batches = mixed_trace(150_000, G, true);
    let cfg = preset("skylake", &["os.metadata=registry", "prism.enabled=true"]);
    let (_, c) = run(Simulator::new(&cfg).expect("simulator"), &batches);
    let (a, d) = reference_bits(&batches);
    assert!(a > 500 && d > 300, "{a} {d}");
    assert_eq!(c["prism.access_bits_set"] as usize, a);
    assert_eq!(c["prism.dirty_bits_set"] as usize, d);
    assert_eq!(c["prism.access_bit_sets"] as usize, a);
    assert_eq!(c["prism.dirty_bit_sets"] as usize, d);
}

#[test]
fn bad_prism_configuration_is_one_sentence() {
    let text = TINY;
    let e = Config::from_toml("tiny", text, &["prism.enabled=true".into()]).expect_err("needs the registry");
    assert!(e.to_string().contains("prism needs os.metadata = \"registry\""), "{e}");
    let sets = ["os.metadata=registry".to_string(), "prism.access_bits=64".to_string()];
    let e = Config::from_toml("tiny", text, &sets).expect_err("64 bits");
    assert!(e.to_string().contains("prism.access_bits = 64 must be 0 (none) or 1, 2, 4, 8, 16 or 32"), "{e}");
}

/// A trace that unmaps its THP region and maps it again, at the same and at other addresses
/// (frames change hands between 2MB regions).
fn remapping_trace() -> Vec<Batch> {
    use xlat_trace::{SideBody, Syscall, SyscallKind};
    let base = 0x7000_0000_0000u64;
    let mut batches = Vec::new();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut ic = 0u64;
    for round in 0..6u64 {
        let mut b = Batch::default();
        let at = base + (round % 3) * (1 << 30);
        mmap(&mut b, at, 256 << 20, ANON);
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ic += 1;
            let kind = if x & 1 == 0 { AccessKind::Load } else { AccessKind::Store };
            b.push_access(Access { addr: at + (x >> 8) % (256 << 20), icount: ic, tid: 1, size: 8, kind });
        }
        let s = Syscall { kind: SyscallKind::Munmap, args: [at, 256 << 20, 0, 0, 0, 0], ret: 0 };
        b.push_side(1, ic, SideBody::Syscall(s));
        batches.push(b);
    }
    batches
}

#[test]
fn the_prism_loop_and_the_mre_memo_change_no_count() {
    let thp = ["os.metadata=registry", "os.policy=thp", "os.thp=always", "prism.enabled=true"];
    for (batches, sets) in [
        (remapping_trace(), &thp[..]),
        (mixed_trace(120_000, G, true), &thp[..]),
        (mixed_trace(120_000, G, true), &["os.metadata=registry", "prism.enabled=true"][..]),
    ] {
        let cfg = preset("skylake", sets);
        let fast = Simulator::new(&cfg).expect("simulator");
        assert_eq!(fast.variant(), "prism");
        let (_, fast) = run(fast, &batches);
        assert!(fast["prism.mre_loads"] >= 32, "{}", fast["prism.mre_loads"]);
        // The general loop, with the memo, and without it (every walk's MRE found the slow way):
        // PRISM passed as the caller's observer, so not also the configuration's (the observer
        // seam takes one; the two together are refused).
        let e = Simulator::with_observer(&cfg, Prism::new(&cfg)).err().expect("two observers");
        assert!(e.to_string().contains("[prism] and an access observer cannot run together"), "{e}");
        let mut without = cfg.clone();
        without.prism.as_mut().expect("prism").enabled = false;
        let general = Simulator::with_observer(&without, Prism::new(&cfg)).expect("simulator");
        assert_eq!(general.variant(), "general");
        let (_, general) = run(general, &batches);
        assert_eq!(fast, general, "{sets:?}");
        let slow = Simulator::with_observer(&without, Prism::new(&cfg).without_memo()).expect("simulator");
        let (_, slow) = run(slow, &batches);
        assert_eq!(fast, slow, "{sets:?}");
    }
}
