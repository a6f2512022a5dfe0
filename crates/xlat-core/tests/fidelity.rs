//! The fidelity analysis (PRISM, seed 004 Section 3) on crafted bit patterns, every figure
//! computed by hand.

use xlat_core::analysis::fidelity::{
    analyze, coarse_all, halve, wrong_bits, Bits, Fidelity, FidelityConfig, FidelityError, FidelityResult,
};
use xlat_trace::{Access, AccessKind, Batch, Marker, SideBody};

const BASE: u64 = 0x7000_0000_0000; // 2MB-aligned
const REGION: u64 = 2 << 20;

fn cfg(epoch: u64, scales: &[u64]) -> FidelityConfig {
    FidelityConfig { epoch, scales: scales.iter().map(|k| k * epoch).collect(), ..FidelityConfig::default() }
}

fn acc(b: &mut Batch, addr: u64, icount: u64, kind: AccessKind) {
    b.push_access(Access { addr, icount, tid: 1, size: 8, kind });
}

fn run(c: FidelityConfig, b: &Batch) -> FidelityResult {
    let mut f = Fidelity::new(c).unwrap();
    f.add(b);
    f.finish()
}

/// Statistics at G (granularities 1..512 in order: index log2 G).
fn at(
    r: &[xlat_core::analysis::fidelity::GranularityStats],
    g: u32,
) -> &xlat_core::analysis::fidelity::GranularityStats {
    r.iter().find(|s| s.g == g).unwrap()
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-12, "{a} != {b}");
}

#[test]
fn one_page_accessed_loses_511_of_512_bits_at_one_bit() {
    let mut b = Batch::default();
    acc(&mut b, BASE + 100, 1, AccessKind::Load); // page 0 only
    let r = run(cfg(1000, &[1]), &b);
    assert_eq!((r.samples, r.regions, r.epochs, r.active_epochs), (1, 1, 1, 1));
    // G bits: the set coarse bit covers 512/G pages, of which one was accessed.
    for g in [1u32, 2, 4, 8, 16, 32, 64, 128, 256, 512] {
        let s = at(&r.accessed, g);
        close(s.mean, (512 / g - 1) as f64 / 512.0);
        assert_eq!((s.std, s.distinct, s.entropy), (0.0, 1, 0.0));
    }
    close(at(&r.accessed, 1).mean, 511.0 / 512.0);
    assert_eq!(at(&r.accessed, 512).mean, 0.0);
    // No store: the dirty vector is all clear, exact at every G.
    assert_eq!(r.dirty_samples, 0);
    assert!(r.dirty.iter().all(|s| s.mean == 0.0 && s.distinct == 1));
}

#[test]
fn dirty_bits_come_from_stores_only() {
    let mut b = Batch::default();
    // Pages 0..4 loaded (and fetched), page 2 stored; page 300 stored.
    for p in 0..4 {
        acc(&mut b, BASE + p * 4096, 1 + p, AccessKind::Load);
    }
    acc(&mut b, BASE + 3 * 4096 + 8, 5, AccessKind::IFetch);
    acc(&mut b, BASE + 2 * 4096, 6, AccessKind::Store);
    acc(&mut b, BASE + 300 * 4096, 7, AccessKind::Store);
    let r = run(cfg(1000, &[1]), &b);
    assert_eq!((r.samples, r.dirty_samples, r.stores), (1, 1, 2));
    // Accessed {0,1,2,3,300}: one bit reads 512 set, 5 are.
    close(at(&r.accessed, 1).mean, 507.0 / 512.0);
    // G=2: both halves set (0..256 and 256..512): 512 - 5 wrong.
    close(at(&r.accessed, 2).mean, 507.0 / 512.0);
    // G=4: quarters 0 and 2 set: 256 - 5.
    close(at(&r.accessed, 4).mean, 251.0 / 512.0);
    // G=128 (4 pages a bit): bits 0 (pages 0..4) and 75 (300..304): 8 - 5.
    close(at(&r.accessed, 128).mean, 3.0 / 512.0);
    // Dirty {2, 300}: 510 wrong at one bit, 256 - 2 at G=4, 8 - 2 at G=128.
    close(at(&r.dirty, 1).mean, 510.0 / 512.0);
    close(at(&r.dirty, 4).mean, 254.0 / 512.0);
    close(at(&r.dirty, 128).mean, 6.0 / 512.0);
    assert_eq!(at(&r.dirty, 512).mean, 0.0);
}

#[test]
fn entropy_counts_distinct_vectors_at_each_granularity() {
    let mut b = Batch::default();
    // Four regions in one epoch: {0}, {0}, {1}, {511}.
    for (i, page) in [0u64, 0, 1, 511].into_iter().enumerate() {
        acc(&mut b, BASE + i as u64 * REGION + page * 4096, 1 + i as u64, AccessKind::Load);
    }
    let r = run(cfg(1000, &[1]), &b);
    assert_eq!((r.samples, r.regions), (4, 4));
    // 512 bits: {0}, {1}, {511}: 3 vectors. 256 bits: {0}, {0}, {0}, {255}: 2. 1 bit: 1.
    assert_eq!(at(&r.accessed, 512).distinct, 3);
    close(at(&r.accessed, 512).entropy, 3f64.log2());
    assert_eq!((at(&r.accessed, 256).distinct, at(&r.accessed, 256).entropy), (2, 1.0));
    assert_eq!((at(&r.accessed, 2).distinct, at(&r.accessed, 2).entropy), (2, 1.0));
    assert_eq!((at(&r.accessed, 1).distinct, at(&r.accessed, 1).entropy), (1, 0.0));
    // Every sample loses 511 bits at G=1: mean 511/512, no spread.
    close(at(&r.accessed, 1).mean, 511.0 / 512.0);
    assert_eq!(at(&r.accessed, 1).std, 0.0);
}

#[test]
fn mean_and_standard_deviation_over_samples() {
    let mut b = Batch::default();
    // Region 0: page 0 only (loss 511/512 at G=1). Region 1: every page (loss 0).
    acc(&mut b, BASE, 1, AccessKind::Load);
    for p in 0..512 {
        acc(&mut b, BASE + REGION + p * 4096, 2 + p, AccessKind::Store);
    }
    let r = run(cfg(100_000, &[1]), &b);
    let s = at(&r.accessed, 1);
    // Two values, 511/512 and 0: mean and population standard deviation are both half of it.
    close(s.mean, 511.0 / 1024.0);
    close(s.std, 511.0 / 1024.0);
    assert_eq!(s.wrong_bits, 511);
    // Dirty: region 0 all clear (loss 0), region 1 all set (loss 0).
    assert_eq!((at(&r.dirty, 1).mean, r.dirty_samples), (0.0, 1));
}

#[test]
fn epochs_are_counted_in_instructions() {
    let mut b = Batch::default();
    // Epochs of 10 instructions. The first access counts 1, so icount 0..=9 are instructions
    // 1..=10: epoch 0; icount 10 (instruction 11) starts epoch 1.
    for ic in 0..10 {
        acc(&mut b, BASE + (ic % 2) * 4096, ic, AccessKind::Load); // pages 0, 1
    }
    acc(&mut b, BASE + 7 * 4096, 10, AccessKind::Load); // epoch 2: page 7
                                                        // A jump over two empty epochs (instructions 21..=40), then page 9 at instruction 46: epoch 4.
    acc(&mut b, BASE + 9 * 4096, 45, AccessKind::Load);
    let r = run(cfg(10, &[1]), &b);
    assert_eq!(r.instructions, 46);
    assert_eq!((r.epochs, r.active_epochs, r.samples), (5, 3, 3));
    // Samples {0,1}, {7}, {9}: at G=512 three vectors; at G=1 losses 510, 511, 511.
    assert_eq!(at(&r.accessed, 512).distinct, 3);
    assert_eq!(at(&r.accessed, 1).wrong_bits, 510 + 511 + 511);
    // With epochs of 11 instructions, instruction 11 stays in epoch 0: {0,1,7} is one sample.
    assert_eq!(run(cfg(11, &[1]), &b).samples, 2);
}

#[test]
fn threads_count_instructions_from_their_first_access() {
    let mut b = Batch::default();
    // Thread 1 at icount 1000..1004, thread 2 at 5000..5004: 5 + 5 instructions, not 4000.
    for i in 0..5 {
        b.push_access(Access { addr: BASE, icount: 1000 + i, tid: 1, size: 8, kind: AccessKind::Load });
        b.push_access(Access { addr: BASE + REGION, icount: 5000 + i, tid: 2, size: 8, kind: AccessKind::Load });
    }
    let r = run(cfg(6, &[1]), &b);
    assert_eq!(r.instructions, 10);
    // Alternating, the accesses are instructions 1, 2, ..., 10: epoch 0 (1..=6) holds both
    // regions, epoch 1 (7..=10) both again.
    assert_eq!((r.epochs, r.samples, r.regions), (2, 4, 2));
}

#[test]
fn address_spaces_keep_separate_regions() {
    let mut b = Batch::default();
    acc(&mut b, BASE, 1, AccessKind::Load);
    b.push_side(1, 1, SideBody::Marker(Marker::ContextSwitch { asid: 7 }));
    acc(&mut b, BASE + 4096, 2, AccessKind::Load);
    let r = run(cfg(1000, &[1]), &b);
    // Same 2MB virtual region, two address spaces: two samples with one page each.
    assert_eq!((r.samples, r.regions), (2, 2));
    close(at(&r.accessed, 1).mean, 511.0 / 512.0);
}

#[test]
fn spatial_and_temporal_loss_over_windows_by_hand() {
    let mut b = Batch::default();
    // Epochs of 10 instructions. Epoch 0: pages 0 and 1. Epoch 1: page 1 only (dirty).
    acc(&mut b, BASE, 1, AccessKind::Load);
    acc(&mut b, BASE + 4096, 9, AccessKind::Load); // instruction 9
    acc(&mut b, BASE + 4096, 20, AccessKind::Store); // instruction 20: epoch 1 (11..=20)
    let r = run(cfg(10, &[1, 2]), &b);
    assert_eq!((r.epochs, r.samples), (2, 2));
    let (s1, s2) = (&r.scales[0], &r.scales[1]);
    assert_eq!((s1.k, s1.epoch, s1.samples), (1, 10, 2));
    assert_eq!((s2.k, s2.epoch, s2.samples), (2, 20, 1));
    // k=1: spatial equals the base loss; temporal is 0 by definition.
    close(s1.spatial_accessed[0], (510.0 + 511.0) / 2.0 / 512.0);
    assert_eq!((s1.temporal_accessed, s1.temporal_dirty), (0.0, 0.0));
    // k=2: accumulated {0,1}: spatial at G=1 510/512, at G=512 0. Temporal: 2 epochs x 2 set
    // bits = 4 readings, 3 true (page 0 in epoch 0, page 1 in both): 1 wrong of 512 x 2.
    close(s2.spatial_accessed[0], 510.0 / 512.0);
    assert_eq!(s2.spatial_accessed[9], 0.0);
    close(s2.temporal_accessed, 1.0 / 1024.0);
    close(s2.temporal_accessed_per_set_bit, 1.0 / 4.0);
    // Dirty {1} in epoch 1 only: 2 readings, 1 true.
    close(s2.temporal_dirty, 1.0 / 1024.0);
    close(s2.temporal_dirty_per_set_bit, 1.0 / 2.0);
    close(s2.spatial_dirty[0], 511.0 / 512.0);
}

#[test]
fn a_last_partial_window_counts_its_own_epochs() {
    let mut b = Batch::default();
    // Three epochs of 10 instructions, page 0 in each, page 1 in the first only.
    acc(&mut b, BASE + 4096, 0, AccessKind::Load); // instruction 1
    for e in 0..3 {
        acc(&mut b, BASE, 1 + 10 * e, AccessKind::Load); // instructions 2, 12, 22
    }
    let r = run(cfg(10, &[2, 8]), &b);
    assert_eq!((r.epochs, r.scales[0].samples, r.scales[1].samples), (3, 2, 1));
    // Windows of 2: [0, 1] has {0,1} over 2 epochs with 2 + 1 bits set: 1 wrong pair; [2] has
    // {0} over its one epoch: none. Pairs: 512 x 2 + 512 x 1.
    close(r.scales[0].temporal_accessed, 1.0 / 1536.0);
    // A window of 8 is the whole run, 3 epochs: {0,1} x 3 - (2 + 1 + 1) = 2 wrong of 512 x 3.
    close(r.scales[1].temporal_accessed, 2.0 / 1536.0);
    close(r.scales[1].temporal_accessed_per_set_bit, 2.0 / 6.0);
    close(r.scales[1].spatial_accessed[0], 510.0 / 512.0);
}

#[test]
fn bad_configurations_are_one_sentence() {
    let bad = |c: FidelityConfig| match Fidelity::new(c) {
        Err(FidelityError::Config(m)) => m,
        _ => panic!("accepted"),
    };
    let gs = |g: Vec<u32>| FidelityConfig { granularities: g, ..FidelityConfig::default() };
    assert_eq!(
        bad(gs(vec![1, 3])),
        "granularity 3 is not a power of two from 1 to 512 (bits per 2MB page: 1, 2, 4, ..., 512)"
    );
    assert!(bad(gs(vec![1024])).starts_with("granularity 1024 is not a power of two from 1 to 512"));
    assert!(bad(gs(vec![0])).starts_with("granularity 0 is not"));
    let c = FidelityConfig { epoch: 0, ..FidelityConfig::default() };
    assert_eq!(bad(c), "the epoch must be at least 1 instruction, not 0");
    let c = FidelityConfig { scales: vec![150_000_000], ..FidelityConfig::default() };
    assert_eq!(bad(c), "epoch length 150000000 is not a positive multiple of the epoch (100000000 instructions)");
}

#[test]
fn coarsening_matches_a_naive_or() {
    // A pseudo-random vector: each G's coarse bit i must be the OR of bits i*512/G ..
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..50 {
        let mut v: Bits = [0; 8];
        for w in &mut v {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *w = x & (x >> 3) & (x >> 5); // sparse
        }
        let c = coarse_all(&v);
        for (lvl, cv) in c.iter().enumerate() {
            let g = 512u32 >> lvl;
            let s = 512 / g as usize;
            let bit = |v: &Bits, i: usize| v[i / 64] >> (i % 64) & 1 == 1;
            let mut wrong = 0;
            for i in 0..512usize {
                let expect = (i / s * s..(i / s + 1) * s).any(|j| bit(&v, j));
                if i < g as usize {
                    let group = (i * s..(i + 1) * s).any(|j| bit(&v, j));
                    assert_eq!(bit(cv, i), group, "G={g} bit {i}");
                } else {
                    assert!(!bit(cv, i), "G={g} bit {i} beyond the vector");
                }
                wrong += (expect && !bit(&v, i)) as u64;
            }
            assert_eq!(wrong_bits(&v, cv, g), wrong, "G={g}");
        }
        assert_eq!(halve(&c[8]), c[9]);
    }
}

#[test]
fn a_trace_file_gives_what_its_batches_give() {
    // The workload written to a trace file and read back through the source the CLI opens.
    let spec = "workload:zipf?size=256MiB&accesses=200000&writes=0.3";
    let c = cfg(50_000, &[1, 4]);
    let mut src = xlat_trace::source::open(spec).unwrap();
    let direct = analyze(src.as_mut(), &c, |_| {}).unwrap();
    let path = std::env::temp_dir().join(format!("xlat-fidelity-{}.xlat", std::process::id()));
    {
        let mut src = xlat_trace::source::open(spec).unwrap();
        let f = std::fs::File::create(&path).unwrap();
        let mut w = xlat_trace::TraceWriter::new(std::io::BufWriter::new(f), src.header()).unwrap();
        let mut b = Batch::default();
        while src.next_batch(&mut b).unwrap() {
            w.write_batch(&b).unwrap();
        }
        w.finish().unwrap();
    }
    let mut src = xlat_trace::source::open(path.to_str().unwrap()).unwrap();
    let from_file = analyze(src.as_mut(), &c, |_| {}).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(direct, from_file);
    // zipf: 6 instructions an access (the first counts 1), 200,000 accesses.
    assert_eq!(direct.instructions, 6 * 199_999 + 1);
    assert_eq!(direct.epochs, direct.instructions.div_ceil(50_000));
    // The same 2MB regions trace-info counts.
    let mut src = xlat_trace::source::open(spec).unwrap();
    let info = xlat_trace::info::trace_info(src.as_mut(), |_| {}).unwrap();
    assert_eq!(direct.regions, info.touched_2m_regions);
    assert_eq!((direct.accesses, direct.stores), (info.accesses, info.stores));
    // Loss falls (never rises) as G grows, and is 0 at 512 bits.
    for s in [&direct.accessed, &direct.dirty] {
        assert!(s.windows(2).all(|w| w[1].mean <= w[0].mean));
        assert_eq!(s[9].mean, 0.0);
    }
}
