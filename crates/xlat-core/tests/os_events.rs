//! The OS model under any sequence of events (issue 24, item 1): random syscall sequences —
//! brk, mmap, munmap, mremap, madvise, shmat, shmdt (the trace format has no mprotect) with
//! random addresses and lengths (0, unaligned, huge, overlapping, unmapped), successful or
//! failed — interleaved with accesses and context switches, thrown at the simulator in several
//! configurations. No run may panic; a run may stop with one sentence (physical memory
//! exhausted, an access outside the user address space), and after every batch that did not,
//! the simulator's and the OS model's invariants hold (`Os::check`: frames in use = mapped
//! pages + table pages, buddy conservation, disjoint VMAs covering every mapped page).
//!
//! A seeded generator (xoshiro256++, as the other tests use): the same sequences every run,
//! about a second in all with `--release`. To debug a failing seed:
//! `XLAT_FUZZ_SEED=N XLAT_FUZZ_DEBUG=1` (one event per batch, printed).

use crate::common;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use xlat_core::config::Config;
use xlat_core::Simulator;
use xlat_trace::{Access, AccessKind, Batch, Marker, SideBody, Syscall, SyscallKind};

/// The window most addresses fall in (the reproducer's heap), so that events overlap.
const BASE: u64 = 0x40_0000_0000;
const WINDOW: u64 = 64 << 20;

fn addr(r: &mut Xoshiro256PlusPlus) -> u64 {
    match r.gen_range(0..100) {
        0 => 0,
        1 => u64::MAX - r.gen_range(0..(8u64 << 20)),
        2 => 1 << 47,
        3 => (1 << 47) - 4096,
        4 => 1 << 56,
        5 => r.gen(),
        6..=15 => BASE + r.gen_range(0..WINDOW), // unaligned
        16..=35 => BASE + (r.gen_range(0..WINDOW) & !((2 << 20) - 1)),
        _ => BASE + (r.gen_range(0..WINDOW) & !4095),
    }
}

fn len(r: &mut Xoshiro256PlusPlus) -> u64 {
    match r.gen_range(0..100) {
        0..=4 => 0,
        5..=9 => r.gen_range(1..4096),
        10 => u64::MAX,
        11 => u64::MAX - 4095,
        12 => 1 << 46,
        13..=29 => r.gen_range(1..8u64) << 21,
        30..=39 => r.gen_range(1..(4u64 << 20)),
        _ => r.gen_range(1..256u64) << 12,
    }
}

fn syscall(r: &mut Xoshiro256PlusPlus) -> Syscall {
    let a = addr(r);
    let l = len(r);
    let failed = r.gen_range(0..10) == 0;
    let (kind, args, ret) = match r.gen_range(0..7) {
        0 => (SyscallKind::Brk, [a, 0, 0, 0, 0, 0], a as i64),
        1 => {
            let flags = [0x22, 0x22 | 0x10, 0x01, 0x02, 0x22 | 0x40000 | (21 << 26), 0x22 | 0x40000 | (30 << 26)]
                [r.gen_range(0..6)];
            (SyscallKind::Mmap, [0, l, 3, flags, u64::MAX, 0], a as i64)
        }
        2 => (SyscallKind::Munmap, [a, l, 0, 0, 0, 0], 0),
        3 => {
            let (new_len, to) = (len(r), if r.gen() { a } else { addr(r) });
            (SyscallKind::Mremap, [a, l, new_len, 1, 0, 0], to as i64)
        }
        4 => {
            let advice = [4, 8, 9, 14, 15, 0, 100][r.gen_range(0..7)];
            (SyscallKind::Madvise, [a, l, advice, 0, 0, 0], 0)
        }
        5 => (SyscallKind::Shmat, [0, 0, 0, l, 0, 0], a as i64),
        _ => (SyscallKind::Shmdt, [a, 0, 0, 0, 0, 0], 0),
    };
    Syscall { kind, args, ret: if failed { -22 } else { ret } }
}

/// One random sequence: `batches` batches of accesses, syscalls and context switches.
fn sequence(seed: u64, batches: usize) -> Vec<Batch> {
    let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut out = Vec::new();
    let mut ic = 0u64;
    for _ in 0..batches {
        let mut b = Batch::default();
        for _ in 0..r.gen_range(1..40) {
            match r.gen_range(0..10) {
                0..=3 => b.push_side(1, ic, SideBody::Syscall(syscall(&mut r))),
                4 if r.gen_range(0..8) == 0 => {
                    b.push_side(1, ic, SideBody::Marker(Marker::ContextSwitch { asid: r.gen_range(0..3) }))
                }
                _ => {
                    ic += 1;
                    let kind = [AccessKind::Load, AccessKind::Store, AccessKind::IFetch][r.gen_range(0..3)];
                    // Mostly inside the window (extreme addresses stop a run with an error).
                    let a = if r.gen_range(0..50) == 0 { addr(&mut r) } else { BASE + r.gen_range(0..WINDOW) };
                    b.push_access(Access { addr: a, icount: ic, tid: 1, size: 8, kind });
                }
            }
            if std::env::var_os("XLAT_FUZZ_DEBUG").is_some() {
                out.push(std::mem::take(&mut b));
            }
        }
        out.push(b);
    }
    out
}

/// Run `seeds` random sequences through `cfg`: no panic, invariants after every batch.
fn fuzz(cfg: &Config, seeds: std::ops::Range<u64>) {
    for seed in seeds {
        if std::env::var("XLAT_FUZZ_SEED").is_ok_and(|s| s != seed.to_string()) {
            continue;
        }
        let mut sim = Simulator::new(cfg).expect("a valid configuration");
        for (i, b) in sequence(seed, 30).iter().filter(|b| b.len() + b.side.len() > 0).enumerate() {
            if std::env::var_os("XLAT_FUZZ_DEBUG").is_some() {
                eprintln!("batch {i}: {:?} {:x?}", b.side.iter().map(|s| (s.pos, &s.body)).collect::<Vec<_>>(), b.addr);
            }
            if let Err(e) = sim.batch(b) {
                let e = e.to_string();
                let expected = e.contains("exhausted") || e.contains("outside the user address space");
                assert!(expected, "seed {seed} batch {i}: unexpected error {e}");
                break;
            }
            sim.check_invariants().unwrap_or_else(|e| panic!("{}, seed {seed} batch {i}: {e}", cfg.name));
            sim.os().check().unwrap_or_else(|e| panic!("{}, seed {seed} batch {i}: {e}", cfg.name));
        }
    }
}

const SMALL: &str = "memory.size=1GiB";

#[test]
fn the_issue_reproducer_brk_below_the_first_break_does_not_panic() {
    // Shrunk from a block-swapped trace (issue 24): brk to 0x4000092000, an mmap, brk to
    // 0x400007b000, brk to 0x4000071000 (below the first break: Linux never returns it).
    let cfg = common::preset("skylake", &[SMALL]);
    let mut sim = Simulator::new(&cfg).unwrap();
    let mut b = Batch::default();
    let brk = |to: u64| Syscall { kind: SyscallKind::Brk, args: [to, 0, 0, 0, 0, 0], ret: to as i64 };
    b.push_side(1, 0, SideBody::Syscall(brk(0x40_0009_2000)));
    common::mmap(&mut b, 0x7f00_0000_0000, 1 << 20, common::ANON);
    b.push_side(1, 0, SideBody::Syscall(brk(0x40_0007_b000)));
    b.push_side(1, 0, SideBody::Syscall(brk(0x40_0007_1000)));
    b.push_access(Access { addr: 0x40_0009_1000, icount: 1, tid: 1, size: 8, kind: AccessKind::Load });
    sim.batch(&b).unwrap();
    sim.check_invariants().unwrap();
    sim.os().check().unwrap();
    let c = sim.counters();
    // The first brk sets the break; the two below it are refused as Linux refuses them
    // (counted as failed); the mmap maps 1 MiB; the access faults in an inferred VMA.
    assert_eq!((c["os.syscalls"], c["os.brks"], c["os.failed_syscalls"], c["os.mmaps"]), (4, 1, 2, 1));
    assert_eq!(c["os.page_faults"], 1);
}

#[test]
fn random_event_sequences_skylake() {
    fuzz(&common::preset("skylake", &[SMALL]), 0..60);
}

#[test]
fn random_event_sequences_thp() {
    fuzz(&common::preset("skylake", &[SMALL, "os.policy=thp"]), 100..160);
}

#[test]
fn random_event_sequences_eager_ranges_range_tlb() {
    let rtlb = "range_tlb=[{name=\"range\", entries=32, stage=2, latency=7}]";
    let cfg = common::preset("sandybridge", &[SMALL, "os.allocation=eager", "os.ranges=contiguous", rtlb]);
    fuzz(&cfg, 200..260);
}
