//! One-pass miss-ratio curves (`analysis::mrc`) against the simulator: for many sizes, set
//! counts and associativities, on synthetic workloads, real (QEMU-recorded) traces and random
//! event sequences (mmap, munmap, madvise, context switches with and without ASIDs), under the
//! 4KB, THP and mosaic policies, every point of the curve equals the misses of a separate
//! simulation of the single-level configuration it models (`single_level_toml` of the preset,
//! sized with `--set`), page size by page size.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use xlat_core::analysis::mrc::{self, MrcConfig, TLB_NAMES};
use xlat_core::config::Config;
use xlat_core::units::PageSize;
use xlat_core::{presets, Simulator};
use xlat_trace::{Access, AccessKind, Batch, Marker, SideBody, Syscall, SyscallKind};

/// Set counts of the curves and the (sets, ways) points simulated.
const SETS: [usize; 3] = [1, 4, 16];
const MAX: usize = 4096;
const POINTS: &[(usize, &[usize])] = &[
    (1, &[1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 24, 32, 48, 64, 100, 128, 256, 511, 1024, 4096]),
    (4, &[1, 2, 3, 4, 8, 16, 64, 1024]),
    (16, &[1, 2, 4, 8, 12, 16, 256]),
];

fn batches_of(spec: &str) -> Vec<Batch> {
    let mut src = xlat_core::sim::open_source(spec, false).expect("a trace");
    let mut out = Vec::new();
    let mut b = Batch::default();
    while src.next_batch(&mut b).expect("decodes") {
        out.push(std::mem::take(&mut b));
    }
    out
}

/// The curves of `batches` under preset `cpu` with `sets` (and `layout`), and every point of
/// [`POINTS`] simulated alone; returns the accesses per page size (to check the traces reach
/// the sizes they are meant to).
fn check(cpu: &str, sets: &[&str], layout: Option<&str>, batches: &[Batch]) -> [u64; 3] {
    let text = presets::get(cpu).expect("preset");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let lay = layout.map(|p| {
        let path = format!("{}/../../{p}", env!("CARGO_MANIFEST_DIR"));
        xlat_core::layout::Layout::from_toml(p, &std::fs::read_to_string(path).expect("layout")).expect("valid")
    });
    let base = Config::build(cpu, text, &sets, lay.clone()).expect("valid");
    let req = MrcConfig { sets: SETS.to_vec(), max_entries: MAX, page_sizes: PageSize::ALL.to_vec() };
    let mut m = mrc::Mrc::new(&base, &req).expect("valid");
    for b in batches {
        m.batch(b).expect("runs");
    }
    let r = m.result("t");
    let single = mrc::single_level_toml(text).expect("TOML");
    let mut by_size = [0u64; 3];
    for &(s, ways) in POINTS {
        for &w in ways {
            let mut over = sets.clone();
            for n in TLB_NAMES {
                over.push(format!("tlb.{n}.entries={}", s * w));
                over.push(format!("tlb.{n}.ways={w}"));
            }
            let cfg = Config::build("single", &single, &over, lay.clone()).expect("valid");
            let mut sim = Simulator::new(&cfg).expect("builds");
            for b in batches {
                sim.batch(b).expect("simulates");
            }
            let c = sim.counters();
            for (i, p) in PageSize::ALL.iter().enumerate() {
                let curve = r.curves.iter().find(|c| c.page_size == *p && c.sets == s).expect("curve");
                let walks = c[&format!("walker.walks_{}", ["4k", "2m", "1g"][i])];
                let hits = c[&format!("tlb.{}.hits", TLB_NAMES[i])];
                assert_eq!(curve.misses[w - 1], walks, "{cpu} {sets:?}: {} sets {s} ways {w}", p.name());
                assert_eq!(curve.accesses, hits + walks, "{cpu} {sets:?}: {} accesses", p.name());
                by_size[i] = curve.accesses;
            }
        }
    }
    assert_eq!(r.accesses, by_size.iter().sum::<u64>());
    // The fully associative curve never rises with more entries.
    for c in r.curves.iter().filter(|c| c.sets == 1) {
        assert!(c.misses.windows(2).all(|w| w[0] >= w[1]), "{} curve rises", c.page_size.name());
    }
    by_size
}

#[test]
fn workloads_4k_thp_and_mosaic() {
    let gups = batches_of("workload:gups?size=64MiB&accesses=60000&seed=2");
    let a = check("skylake", &["memory.size=4GiB"], None, &gups);
    assert_eq!(a, [60000, 0, 0], "4KB pages only");
    let zipf = batches_of("workload:zipf?size=256MiB&accesses=60000&s=0.8");
    let a = check("skylake", &["memory.size=4GiB", "os.policy=thp"], None, &zipf);
    assert!(a[0] > 0 && a[1] > 0, "THP: 4KB and 2MB pages ({a:?})");
    let bfs = batches_of("workload:bfs?scale=12&accesses=60000");
    let a = check("zen4", &["memory.size=8GiB"], Some("configs/layouts/mixed.toml"), &bfs);
    assert!(a[2] > 0, "the mixed layout's 1GB window ({a:?})");
}

#[test]
fn real_traces() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/trace/");
    for t in ["xz-200.xlat", "dict-lookups-300.xlat"] {
        let b = batches_of(&format!("{dir}{t}"));
        check("skylake", &[], None, &b);
        check("skylake", &["os.policy=thp"], None, &b);
    }
}

const BASE: u64 = 0x40_0000_0000;
const WINDOW: u64 = 32 << 20;

fn sys(kind: SyscallKind, args: [u64; 6], ret: u64) -> SideBody {
    SideBody::Syscall(Syscall { kind, args, ret: ret as i64 })
}

/// Accesses mostly to a hot part of a 32 MiB window, with munmaps and mmaps of pieces of it
/// (4KB or 2MB aligned), madvise(HUGEPAGE / DONTNEED), and switches among three address
/// spaces.
fn events(seed: u64, n: usize) -> Vec<Batch> {
    let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut b = Batch::default();
    let (mut ic, mut hot) = (0u64, BASE);
    let map_all = |b: &mut Batch| b.push_side(1, 0, sys(SyscallKind::Mmap, [0, WINDOW, 3, 0x22, u64::MAX, 0], BASE));
    map_all(&mut b);
    for asid in [1, 2, 0] {
        b.push_side(1, 0, SideBody::Marker(Marker::ContextSwitch { asid }));
        map_all(&mut b);
    }
    for _ in 0..n {
        match r.gen_range(0..1000) {
            0..=3 => {
                let (a, l) = piece(&mut r);
                b.push_side(1, ic, sys(SyscallKind::Munmap, [a, l, 0, 0, 0, 0], 0));
                b.push_side(1, ic, sys(SyscallKind::Mmap, [a, l, 3, 0x22 | 0x10, u64::MAX, 0], a));
            }
            4..=5 => {
                let (a, l) = piece(&mut r);
                let advice = [4, 14][r.gen_range(0..2)];
                b.push_side(1, ic, sys(SyscallKind::Madvise, [a, l, advice, 0, 0, 0], 0));
            }
            6..=8 => b.push_side(1, ic, SideBody::Marker(Marker::ContextSwitch { asid: r.gen_range(0..3) })),
            9..=30 => hot = BASE + (r.gen_range(0..WINDOW) & !0xfff),
            _ => {
                ic += 1;
                let a = if r.gen_range(0..4) == 0 {
                    BASE + r.gen_range(0..WINDOW)
                } else {
                    (hot + r.gen_range(0..(1u64 << 18))).min(BASE + WINDOW - 8)
                };
                let kind = [AccessKind::Load, AccessKind::Store, AccessKind::IFetch][r.gen_range(0..3)];
                b.push_access(Access { addr: a, icount: ic, tid: 1, size: 8, kind });
            }
        }
    }
    vec![b]
}

/// A piece of the window: 4KB-aligned (up to 256 KiB) or 2MB-aligned (up to 4 MiB).
fn piece(r: &mut Xoshiro256PlusPlus) -> (u64, u64) {
    if r.gen() {
        (BASE + (r.gen_range(0..WINDOW) & !0xfff), r.gen_range(1..64u64) << 12)
    } else {
        (BASE + (r.gen_range(0..WINDOW) & !0x1f_ffff), r.gen_range(1..3u64) << 21)
    }
}

#[test]
fn munmap_madvise_and_context_switches_with_and_without_asids() {
    let e = events(1, 60_000);
    check("skylake", &["os.asid=true"], None, &e);
    check("skylake", &["os.asid=false"], None, &e);
    let a = check("skylake", &["os.asid=true", "os.policy=thp"], None, &events(2, 60_000));
    assert!(a[1] > 0, "THP pages ({a:?})");
}

#[test]
fn the_single_level_configuration_has_one_lru_tlb_per_size_and_nothing_else() {
    let text = mrc::single_level_toml(presets::get("skylake").unwrap()).unwrap();
    let c =
        Config::build("single", &text, &["tlb.mrc-2m.entries=32".into(), "tlb.mrc-2m.ways=8".into()], None).unwrap();
    let tlbs: Vec<_> =
        c.tlb.iter().map(|t| (t.name.as_str(), t.level, t.entries, t.ways, t.page_sizes.clone())).collect();
    assert_eq!(
        tlbs,
        vec![
            ("mrc-4k", 1, 64, 64, vec![PageSize::Size4K]),
            ("mrc-2m", 1, 32, 8, vec![PageSize::Size2M]),
            ("mrc-1g", 1, 64, 64, vec![PageSize::Size1G]),
        ]
    );
    assert_eq!(c.memory, presets_memory("skylake"));
}

fn presets_memory(cpu: &str) -> xlat_core::config::MemoryConfig {
    Config::from_toml(cpu, presets::get(cpu).unwrap(), &[]).unwrap().memory
}

#[test]
fn bad_requests_are_one_sentence() {
    let cfg = Config::from_toml("skylake", presets::get("skylake").unwrap(), &[]).unwrap();
    let bad = |sets: Vec<usize>, max: usize, sizes: Vec<PageSize>| {
        let req = MrcConfig { sets, max_entries: max, page_sizes: sizes };
        mrc::Mrc::new(&cfg, &req).err().expect("refused").to_string()
    };
    assert_eq!(
        bad(vec![1, 12], 64, PageSize::ALL.to_vec()),
        "set count 12 is not a power of two (1, 2, 4, ...; 1 is fully associative)"
    );
    assert_eq!(
        bad(vec![128], 64, PageSize::ALL.to_vec()),
        "set count 128 is larger than --max-entries 64 (a TLB has at least one way per set)"
    );
    assert_eq!(bad(vec![1], 0, PageSize::ALL.to_vec()), "--max-entries 0 must be from 1 to 16777216");
    assert_eq!(bad(vec![1], 64, vec![]), "give at least one page size (4KB, 2MB, 1GB)");
}
