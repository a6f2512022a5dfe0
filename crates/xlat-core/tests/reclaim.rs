//! Eviction under memory pressure at G bits per 2MB page (`analysis::reclaim`): a crafted
//! sequence counted by hand, the driver's footprint, capacity and epoch clearing, and a property
//! test over random access sequences that no write is ever lost.

use std::collections::HashMap;

use proptest::prelude::*;
use xlat_core::analysis::reclaim::{
    analyze, Footprint, GranularityReclaim, Observer, Reclaim, ReclaimConfig, ReclaimRun,
};
use xlat_trace::{Access, AccessKind, Batch};

const MB2: u64 = 2 << 20;
const KB4: u64 = 4096;

/// Regions A, B, C, memory for two 2MB pages: A stored, B and C loaded, then A read again.
fn crafted(g: u32) -> GranularityReclaim {
    let mut e = Reclaim::new(g, 1024).unwrap();
    e.access(0, 0, true); // A: first touch, dirty
    e.access(1, 0, false); // B: first touch; memory full
    e.access(2, 0, false); // C: first touch, evicts
    e.access(0, 5, false); // A page 5
    e.access(0, 0, false); // A page 0
    e.counters(&ReclaimConfig::default())
}

#[test]
fn one_bit_per_2mb_writes_back_and_refaults_whole_pages() {
    let c = crafted(1);
    // C's fault: the hand gives A and B (both accessed) a second chance, then evicts A (dirty:
    // 2MB written back). A's refault: B (its bit cleared by the hand) is evicted clean.
    // A page 0 is then resident.
    assert_eq!((c.faults, c.first_touch_faults, c.refaults), (4, 3, 1));
    assert_eq!((c.evictions, c.dirty_evictions, c.second_chances), (2, 1, 2));
    assert_eq!((c.bytes_written_back, c.bytes_dropped), (MB2, MB2));
    assert_eq!((c.bytes_read, c.bytes_read_refault), (4 * MB2, MB2));
    assert_eq!((c.chunk_bytes, c.resident_bytes), (MB2, 2 * MB2));
    // Time: 4 faults of 20 us, 8MB in and 2MB out at PCIe 3.0 x16's 15.75 GB/s.
    let bw = 15.753846153846155e9;
    assert!((c.time_s - (4.0 * 20e-6 + (8.0 * 1048576.0) / bw + (2.0 * 1048576.0) / bw)).abs() < 1e-12);
}

#[test]
fn per_4kb_bits_evict_the_untouched_pages_and_keep_the_dirty_one() {
    let c = crafted(512);
    // C's fault needs 512 frames: A0 (accessed) gets a second chance, A1..A511 (never touched)
    // are dropped, then B0 a second chance and B1 dropped. A page 5's refault reads 4KB and
    // drops B2. Page A0, the only dirty page, is never evicted: nothing is written back.
    assert_eq!((c.faults, c.first_touch_faults, c.refaults), (4, 3, 1));
    assert_eq!((c.evictions, c.dirty_evictions, c.second_chances), (513, 0, 2));
    assert_eq!((c.bytes_written_back, c.bytes_dropped), (0, 513 * KB4));
    assert_eq!((c.bytes_read, c.bytes_read_refault), (3 * MB2 + KB4, KB4));
    assert_eq!((c.chunk_bytes, c.resident_bytes), (KB4, 1024 * KB4));
}

#[test]
fn eight_bits_evict_256kb_chunks() {
    let c = crafted(8);
    // Chunks of 64 pages. C's fault: A0 second chance, A1..A7 dropped (448 pages), then B0
    // second chance, B1 dropped (64 pages: 512 free). A page 5 is in chunk A0: resident.
    assert_eq!((c.faults, c.first_touch_faults, c.refaults), (3, 3, 0));
    assert_eq!((c.evictions, c.dirty_evictions, c.second_chances), (8, 0, 2));
    assert_eq!((c.bytes_dropped, c.bytes_read), (8 * 64 * KB4, 3 * MB2));
}

fn access(b: &mut Batch, addr: u64, icount: u64, store: bool) {
    let kind = if store { AccessKind::Store } else { AccessKind::Load };
    b.push_access(Access { addr, icount, tid: 1, size: 8, kind });
}

#[test]
fn the_driver_sizes_memory_from_the_footprint_and_clears_every_epoch() {
    const BASE: u64 = 0x7000_0000_0000;
    let mut b = Batch::default();
    // Four regions touched (one page of each, two of the first): footprint 8MB, 5 pages.
    for (i, r) in [0u64, 1, 2, 3, 0].iter().enumerate() {
        access(&mut b, BASE + r * MB2 + 4096 * i as u64, 10 * (i as u64 + 1), i == 0);
    }
    let mut fp = Footprint::default();
    fp.add(&b);
    assert_eq!((fp.regions(), fp.pages()), (4, 5));
    let cfg = ReclaimConfig { fraction: 0.5, epoch: 15, granularities: vec![1, 512], ..Default::default() };
    let mut run = ReclaimRun::new(cfg, &fp).unwrap();
    run.add(&b);
    let r = run.finish();
    assert_eq!((r.footprint_bytes, r.touched_bytes, r.capacity_bytes), (4 * MB2, 5 * KB4, 2 * MB2));
    // Instructions 1, 11, 21, 31, 41 (the first access counts one): epochs of 15 end before
    // the accesses at 21 and 31 (each past a new multiple of 15; 41 is not past 45).
    assert_eq!((r.accesses, r.stores, r.instructions, r.clears), (5, 1, 41, 2));
    // G = 1: two regions fit. Region 2's fault: region 0's bit was cleared at instruction 21,
    // so it goes at once (dirty: written back); region 3's fault evicts region 1 (cleared at
    // 31); region 0's second access refaults it, evicting region 2.
    let g1 = &r.granularities[0];
    assert_eq!((g1.faults, g1.refaults, g1.evictions, g1.dirty_evictions, g1.second_chances), (5, 1, 3, 1, 0));
    // G = 512: the same order page by page: region 2's fault evicts region 0's 512 pages (its
    // dirty page 0, not accessed since the clear, written back: 4KB, not 2MB), region 3's
    // region 1's, and region 0's second access refaults 4KB, evicting region 2's page 0.
    let g512 = &r.granularities[1];
    assert_eq!((g512.faults, g512.refaults, g512.evictions, g512.bytes_read_refault), (5, 1, 1025, KB4));
    assert_eq!((g512.dirty_evictions, g512.bytes_written_back), (1, KB4));
}

#[test]
fn bad_configurations_are_one_sentence() {
    let fp = Footprint::default();
    let msg = |cfg: ReclaimConfig| ReclaimRun::new(cfg, &fp).err().unwrap().to_string();
    assert_eq!(
        msg(ReclaimConfig { fraction: 1.5, ..Default::default() }),
        "the memory fraction must be above 0 and at most 1 (physical memory as a share of the footprint), not 1.5"
    );
    assert!(msg(ReclaimConfig { fraction: 0.0, ..Default::default() }).ends_with("not 0"));
    assert!(msg(ReclaimConfig { fraction: f64::NAN, ..Default::default() }).ends_with("not NaN"));
    assert_eq!(
        msg(ReclaimConfig { granularities: vec![1, 24], ..Default::default() }),
        "granularity 24 is not a power of two from 1 to 512 (bits per 2MB page: 1, 2, 4, ..., 512)"
    );
    assert!(msg(ReclaimConfig { granularities: vec![1024], ..Default::default() }).starts_with("granularity 1024 "));
    assert_eq!(
        msg(ReclaimConfig { epoch: 0, ..Default::default() }),
        "the epoch must be at least 1 instruction, not 0"
    );
    assert!(Reclaim::new(1, 511).err().unwrap().to_string().contains("cannot hold one 2MB page"));
    // One region at 0.5: 256 frames cannot hold its 2MB page.
    let mut b = Batch::default();
    access(&mut b, 0x40_0000, 1, false);
    let mut fp = Footprint::default();
    fp.add(&b);
    let e = ReclaimRun::new(ReclaimConfig { fraction: 0.5, ..Default::default() }, &fp).err().unwrap();
    assert!(e.to_string().starts_with("physical memory of 256 4KB frames cannot hold one 2MB page"));
}

/// Every byte's data, as versions: what memory holds for resident pages, what the backing store
/// holds, and the last version written. The engine's transfers are checked against them.
#[derive(Default)]
struct Shadow {
    memory: HashMap<(u64, u32), u64>,
    store: HashMap<(u64, u32), u64>,
    latest: HashMap<(u64, u32), u64>,
    next: u64,
    resident_pages: u64,
}

impl Observer for Shadow {
    fn read_in(&mut self, region: u64, first: u32, pages: u32) {
        for p in first..first + pages {
            let v = self.store.get(&(region, p)).copied().unwrap_or(0);
            assert!(self.memory.insert((region, p), v).is_none(), "page read in twice");
        }
        self.resident_pages += pages as u64;
    }
    fn evict(&mut self, region: u64, first: u32, pages: u32, written_back: bool) {
        for p in first..first + pages {
            let v = self.memory.remove(&(region, p)).expect("evicted page was resident");
            if written_back {
                self.store.insert((region, p), v);
            } else {
                // A dropped page must hold nothing newer than the backing store.
                assert_eq!(v, self.store.get(&(region, p)).copied().unwrap_or(0), "a write was lost");
            }
        }
        self.resident_pages -= pages as u64;
    }
}

/// (region, page, store, clear the accessed bits before it)
type Op = (u64, u32, bool, bool);

fn run_shadow(g: u32, capacity: u64, ops: &[Op]) -> (GranularityReclaim, Shadow) {
    let mut e = Reclaim::with_observer(g, capacity, Shadow::default()).unwrap();
    for &(r, p, st, clear) in ops {
        if clear {
            e.clear_accessed();
        }
        e.access(r, p, st);
        let sh = e.observer_mut();
        assert!(sh.memory.contains_key(&(r, p)), "accessed page not resident");
        if st {
            sh.next += 1;
            let v = sh.next;
            sh.memory.insert((r, p), v);
            sh.latest.insert((r, p), v);
        }
        assert!(e.used_frames() <= capacity);
        assert_eq!(e.used_frames(), e.observer().resident_pages);
    }
    let c = e.counters(&ReclaimConfig::default());
    (c, e.observer_mut().take())
}

impl Shadow {
    fn take(&mut self) -> Shadow {
        std::mem::take(self)
    }
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    // Few regions and pages clustered at a few spots, so chunks are shared and refaults happen.
    let op = (0u64..5, 0u32..8, 0u32..64, any::<bool>(), 0u8..20)
        .prop_map(|(r, spot, off, st, c)| (r, spot * 64 + off, st, c == 0));
    proptest::collection::vec(op, 1..400)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn reclaim_never_loses_a_write(
        gi in 0usize..6,
        cap_regions in 1u64..5,
        extra in 0u64..512,
        ops in ops(),
    ) {
        let g = [1u32, 2, 8, 32, 64, 512][gi];
        let capacity = cap_regions * 512 + extra;
        let (c, sh) = run_shadow(g, capacity, &ops);
        // Every page's last write is where the page is: in memory if resident, else in the
        // backing store (written back when its dirty chunk was evicted; a refault read it).
        for (k, v) in &sh.latest {
            let held = sh.memory.get(k).or(sh.store.get(k)).copied();
            prop_assert_eq!(held, Some(*v));
        }
        // The counters agree with the transfers.
        let chunk = (512 / g) as u64 * KB4;
        prop_assert_eq!(c.faults, c.first_touch_faults + c.refaults);
        prop_assert_eq!(c.bytes_read, c.first_touch_faults * MB2 + c.refaults * chunk);
        prop_assert_eq!(c.bytes_read_refault, c.refaults * chunk);
        prop_assert_eq!(c.bytes_written_back, c.dirty_evictions * chunk);
        prop_assert_eq!(c.bytes_written_back + c.bytes_dropped, c.evictions * chunk);
        prop_assert_eq!(c.bytes_read - c.bytes_written_back - c.bytes_dropped, c.resident_bytes);
        prop_assert_eq!(c.resident_bytes, sh.memory.len() as u64 * KB4);
        // Deterministic: the same sequence gives the same counters.
        let (c2, _) = run_shadow(g, capacity, &ops);
        prop_assert_eq!(c, c2);
    }
}

#[test]
fn analyze_reads_both_passes_and_is_deterministic() {
    let spec = "workload:zipf?size=64MiB&writes=0.3&accesses=200000&seed=3";
    let run = || {
        let mut a = xlat_core::sim::open_source(spec, false).unwrap();
        let mut b = xlat_core::sim::open_source(spec, false).unwrap();
        let cfg = ReclaimConfig { epoch: 100_000, ..Default::default() };
        analyze(a.as_mut(), b.as_mut(), &cfg, |_| {}).unwrap()
    };
    let r = run();
    assert_eq!(r.regions, 33);
    assert_eq!(r.capacity_bytes, (0.9f64 * 33.0 * 512.0).floor() as u64 * KB4);
    assert_eq!(r.granularities.iter().map(|g| g.g).collect::<Vec<_>>(), vec![1, 8, 32, 512]);
    assert!(r.granularities.iter().all(|g| g.first_touch_faults == 33));
    assert_eq!(r, run());
}
