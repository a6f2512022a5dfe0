//! `sim.contiguity`: the ranges the OS could form at the end of a run (RMM, seed 000 Tables
//! 4.2 and 4.7), on mappings whose frames follow from the order of the faults.

use crate::common;
use common::{mmap, preset, run, ANON};
use xlat_core::config::Config;
use xlat_core::os::Contiguity;
use xlat_core::{presets, Simulator};
use xlat_trace::{Access, AccessKind, Batch};

const BASE: u64 = 0x7000_0000_0000;

/// Touch the 4KB pages `order` (page numbers from BASE) of one `len`-byte anonymous mapping.
fn contiguity(sets: &[&str], len: u64, order: &[u64]) -> Contiguity {
    let mut b = Batch::default();
    mmap(&mut b, BASE, len, ANON);
    for (i, &p) in order.iter().enumerate() {
        b.push_access(Access { addr: BASE + p * 4096, icount: i as u64 + 1, tid: 1, size: 8, kind: AccessKind::Store });
    }
    let mut sets = sets.to_vec();
    sets.push("sim.contiguity=true");
    let (s, _) = run(Simulator::new(&preset("skylake", &sets)).expect("simulator"), &[b]);
    s.result("t").contiguity.expect("reported")
}

#[test]
fn demand_paging_gives_frames_in_fault_order() {
    // The buddy hands out free frames in ascending order, and a fault takes its data frame
    // before the page tables it needs: page 0 gets frame f, the new tables f+1.., and the
    // pages faulted after it the frames after those. In address order: page 0 alone, then
    // one run of 63 pages.
    let c = contiguity(&[], 64 * 4096, &(0..64).collect::<Vec<_>>());
    assert_eq!((c.spaces, c.vmas, c.pages, c.entries_4k, c.entries_2m), (1, 1, 64, 64, 0));
    assert_eq!(c.runs, vec![(63, 1), (1, 1)]);
    // Even pages first, then odd ones: page 2k and 2k+1 are 32 frames apart (page 0 and 1
    // further), so no two neighbours are contiguous: 64 runs of one page.
    let order: Vec<u64> = (0..64).step_by(2).chain((1..64).step_by(2)).collect();
    assert_eq!(contiguity(&[], 64 * 4096, &order).runs, vec![(1, 64)]);
    // Pages 0..32 in order, then 63 down to 32 (page 63 gets the frame after page 31's, page
    // 32 the 32nd after it): pages 1..32 are one run, every other page a run of its own.
    let order: Vec<u64> = (0..32).chain((32..64).rev()).collect();
    let c = contiguity(&[], 64 * 4096, &order);
    assert_eq!(c.runs, vec![(31, 1), (1, 33)]);
    assert_eq!(c.ranges(), 34);
    // Untouched pages are not mapped: a run stops at a hole (page 3).
    assert_eq!(contiguity(&[], 64 * 4096, &[0, 1, 2, 4, 5]).runs, vec![(2, 2), (1, 1)]);
}

#[test]
fn huge_pages_and_eager_paging_count_their_entries_and_join_their_runs() {
    // THP: two touched 2MB regions of a 4 MiB mapping at a 2MB-aligned address become two
    // 2MB pages, taken one after the other from the buddy: one run of 1024 pages.
    let c = contiguity(&["os.policy=thp"], 4 << 20, &[0, 512]);
    assert_eq!((c.pages, c.entries_4k, c.entries_2m), (1024, 0, 2));
    assert_eq!(c.runs, vec![(1024, 1)]);
    // Eager paging maps the whole mapping at mmap time from the largest free blocks: every
    // page is mapped, touched or not, in one run.
    let c = contiguity(&["os.allocation=eager"], 64 << 20, &[3]);
    assert_eq!((c.pages, c.runs.clone()), (16384, vec![(16384, 1)]));
    assert_eq!(c.entries_4k + 512 * c.entries_2m, 16384);
}

#[test]
fn without_the_key_nothing_is_reported_and_the_config_hash_is_unchanged() {
    let plain = preset("skylake", &[]);
    let on = preset("skylake", &["sim.contiguity=true"]);
    assert_ne!(plain.hash_hex(), on.hash_hex());
    assert_eq!(plain.hash_hex(), preset("skylake", &["sim.contiguity=false"]).hash_hex());
    let (s, _) = run(Simulator::new(&plain).expect("simulator"), &[Batch::default()]);
    assert!(s.result("t").contiguity.is_none());
}

#[test]
fn contiguity_every_n_instructions_is_a_time_series_of_the_same_measure() {
    // Pages 0..64 in order, one per instruction; a measurement every 16 instructions. After
    // 16 pages: page 0 alone + a run of 15 (the page tables took the frames after page 0's);
    // after 32: 1 + 31; after 48: 1 + 47; after 64: 1 + 63 (the end's measure, above).
    let mut b = Batch::default();
    mmap(&mut b, BASE, 64 * 4096, ANON);
    for p in 0..64u64 {
        b.push_access(Access { addr: BASE + p * 4096, icount: p + 1, tid: 1, size: 8, kind: AccessKind::Store });
    }
    let sets = ["sim.contiguity=true", "sim.contiguity_every=16", "sim.contiguity_threshold=16"];
    let (s, _) = run(Simulator::new(&preset("skylake", &sets)).expect("simulator"), &[b]);
    let r = s.result("t");
    let series = &r.epochs["contiguity"];
    assert_eq!((series.unit.as_str(), series.every), ("instructions", 16));
    let col = |name: &str| series.columns.iter().position(|c| c == name).expect(name);
    let rows: Vec<(u64, u64, u64, u64, u64, u64)> = series
        .rows
        .iter()
        .map(|row| {
            let v = |n| row[col(n)];
            (v("pages"), v("runs"), v("largest"), v("ranges"), v("range_pages"), v("runs_99"))
        })
        .collect();
    // (pages, runs, largest, ranges of >= 16 pages, their pages, runs for 99%)
    assert_eq!(rows, vec![(16, 2, 15, 0, 0, 2), (32, 2, 31, 1, 31, 2), (48, 2, 47, 1, 47, 2), (64, 2, 63, 1, 63, 2)]);
    assert_eq!(r.contiguity.expect("reported").runs, vec![(63, 1), (1, 1)]);
    // A threshold of 0 pages is refused.
    let sets = ["sim.contiguity_every=16".to_string(), "sim.contiguity_threshold=0".to_string()];
    let e = Config::from_toml("skylake", presets::get("skylake").expect("preset"), &sets);
    assert!(e.expect_err("refused").to_string().contains("sim.contiguity_threshold = 0 must be at least 1 page"));
}
