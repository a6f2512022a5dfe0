//! The shape-compiled loop: which configurations take it, and that it counts what the general
//! loop counts.

use xlat_core::config::Config;
use xlat_core::{presets, Simulator};

use crate::common;
use common::{mixed_trace, preset, G};

#[test]
fn the_skylake_shaped_loop_counts_what_the_generic_one_counts() {
    // Loads, stores and instruction fetches over 4KB pages (2 GiB anonymous), 2MB pages (64
    // MiB hugetlb) and 1GB pages (24 GiB hugetlb), half of them near a recent address (TLB
    // and memo hits), the rest anywhere (walks through every cache level): the Skylake
    // preset's shaped loop and the general loop give every counter alike.
    let batches = mixed_trace(200_000, 24 * G, false);
    let run = |shaped: bool| {
        let mut s = Simulator::new(&preset("skylake", &[])).expect("simulator");
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
    let shaped = |sets: &[&str]| Simulator::new(&preset("skylake", sets)).expect("simulator").shape() == "skylake";
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
