//! Unit tests of the engine: the shaped and general loops agree.

use super::simulator::Simulator;
use crate::config::Config;
use crate::presets;
use xlat_trace::Batch;
use xlat_trace::{Access, AccessKind, SideBody, Syscall, SyscallKind};

fn skylake(sets: &[&str]) -> Config {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Config::from_toml("skylake", presets::get("skylake").expect("preset"), &sets).expect("valid")
}

fn mmap(b: &mut Batch, addr: u64, len: u64, flags: u64) {
    let s = Syscall { kind: SyscallKind::Mmap, args: [0, len, 3, flags, u64::MAX, 0], ret: addr as i64 };
    b.push_side(1, 0, SideBody::Syscall(s));
}

#[test]
fn the_skylake_shaped_loop_counts_what_the_generic_one_counts() {
    // Loads, stores and instruction fetches over 4KB pages (2 GiB anonymous), 2MB pages (64
    // MiB hugetlb) and 1GB pages (24 GiB hugetlb), half of them near a recent address (TLB
    // and memo hits), the rest anywhere (walks through every cache level): the Skylake
    // preset's shaped loop and the general loop give every counter alike.
    const G: u64 = 1 << 30;
    let (anon, huge2m, huge1g) = (0x7000_0000_0000u64, 0x7100_0000_0000u64, 0x7200_0000_0000u64);
    let regions = [(anon, 2 * G), (huge2m, 64 << 20), (huge1g, 24 * G)];
    let mut batches = vec![Batch::default()];
    mmap(&mut batches[0], anon, 2 * G, 0x22);
    mmap(&mut batches[0], huge2m, 64 << 20, 0x22 | 0x40000 | (21 << 26));
    mmap(&mut batches[0], huge1g, 24 * G, 0x22 | 0x40000 | (30 << 26));
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut recent = anon;
    for i in 0..200_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let addr = if x & 1 == 0 {
            recent ^ ((x >> 8) & 0x3fff)
        } else {
            let (base, len) = regions[(x >> 1) as usize % 3];
            base + (x >> 16) % len
        };
        recent = addr;
        let kind = [AccessKind::Load, AccessKind::Store, AccessKind::IFetch][(x >> 4) as usize % 3];
        if i % 50_000 == 0 {
            batches.push(Batch::default());
        }
        let b = batches.last_mut().expect("a batch");
        b.push_access(Access { addr: addr & !7, icount: i + 1, tid: 1, size: 8, kind });
    }
    let run = |shaped: bool| {
        let mut s = Simulator::new(&skylake(&[])).expect("simulator");
        assert_eq!(s.shape(), "skylake", "the Skylake preset has the Skylake shape");
        s.set_shaped(shaped);
        for b in &batches {
            s.batch(b).expect("simulate");
        }
        s.check_invariants().expect("invariants");
        s.counters()
    };
    let (shaped, general) = (run(true), run(false));
    for k in [
        "tlb.l1d-4k.hits",
        "tlb.l1d-2m.hits",
        "tlb.l1d-1g.hits",
        "tlb.l1i-4k.hits",
        "tlb.l1i-2m.hits",
        "tlb.stlb.hits",
        "tlb.stlb-1g.hits",
        "psc.pde.hits",
        "walker.loads.pd.L1D",
        "walker.loads.pt.L2",
        "walker.loads.pt.LLC",
        "walker.loads.pt.DRAM",
    ] {
        assert!(shaped[k] > 100, "{k} = {} does not exercise the loop", shaped[k]);
    }
    assert_eq!(shaped, general);
}

#[test]
fn only_configurations_of_the_skylake_shape_take_its_loop() {
    let shaped = |sets: &[&str]| Simulator::new(&skylake(sets)).expect("simulator").shape() == "skylake";
    assert!(shaped(&[]));
    assert!(shaped(&["tlb.stlb.entries=3072"]), "256 sets of 12 ways: the same class");
    assert!(shaped(&["tlb.l1d-4k.replacement=\"fifo\""]), "FIFO keeps recency rows");
    assert!(!shaped(&["tlb.l1d-4k.replacement=\"tree-plru\""]));
    assert!(!shaped(&["tlb.l1d-4k.ways=8"]));
    assert!(!shaped(&["tlb.l1d-4k.entries=48"]), "12 sets: not a mask");
    assert!(!shaped(&["tlb.stlb.ways=16"]));
    assert!(!shaped(&["psc.pde.ways=8"]));
    assert!(!shaped(&["walker.first_cache=\"L2\""]));
    assert!(!shaped(&["cache.L2.ways=8"]));
    for other in ["haswell", "zen4"] {
        let cfg = Config::from_toml(other, presets::get(other).expect("preset"), &[]).expect("valid");
        assert_eq!(Simulator::new(&cfg).expect("simulator").shape(), "any", "{other}");
    }
}
