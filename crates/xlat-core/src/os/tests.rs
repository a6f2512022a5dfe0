//! Tests of the OS model through its interface.

use super::*;
use crate::config::layout::Layout;
use xlat_trace::SyscallKind;

fn os(policy: &str, layout: Option<&str>) -> Os {
    let p = if policy == "mosaic" { "4k" } else { policy };
    let text = format!(
        "name = \"t\"\n[os]\npolicy = \"{p}\"\n[memory]\nsize = \"4GiB\"\n[[tlb]]\nname = \"l1\"\nlevel = 1\nrole = \"data\"\nentries = 4\nways = 4\npage_sizes = [\"4KB\"]\n"
    );
    let mut cfg = Config::from_toml("t", &text, &[]).unwrap();
    cfg.layout = layout.map(|l| Layout::from_toml("l", l).unwrap());
    if policy == "mosaic" {
        cfg.os.policy = Policy::Mosaic;
    }
    Os::new(&cfg).unwrap()
}

fn sys(kind: SyscallKind, a: &[u64], ret: i64) -> Syscall {
    let mut args = [0; 6];
    args[..a.len()].copy_from_slice(a);
    Syscall { kind, args, ret }
}

#[test]
fn thp_backs_aligned_regions_inside_one_vma() {
    let mut o = os("thp", None);
    let mut inv = Vec::new();
    // 5MB anonymous mapping at 1MB past a 2MB boundary: [0x7000_0010_0000, +5MB).
    let a = 0x7000_0010_0000u64;
    o.syscall(&sys(SyscallKind::Mmap, &[0, 5 << 20, 3, 0x22, u64::MAX, 0], a as i64), &mut inv).unwrap();
    o.fault(a, &mut inv).unwrap(); // head: 2MB region sticks out of the VMA -> 4KB
    o.fault(a + (1 << 20), &mut inv).unwrap(); // [0x..20_0000, 0x..40_0000) fully inside -> 2MB
    assert_eq!(o.lookup(a), Some((o.lookup(a).unwrap().0, PageSize::Size4K)));
    assert_eq!(o.lookup(a + (2 << 20)).unwrap().1, PageSize::Size2M);
    assert_eq!((o.stats().faults_4k, o.stats().faults_2m, o.stats().huge_fallbacks), (1, 1, 1));
    // munmap of 4KB inside the 2MB page splits it and frees one frame.
    let (before, tables) = (o.stats().frames_in_use, o.stats().page_table_pages);
    o.syscall(&sys(SyscallKind::Munmap, &[a + (2 << 20), 4096], 0), &mut inv).unwrap();
    assert_eq!(o.stats().huge_splits, 1);
    // One frame freed, one page-table page allocated for the 511 remaining 4KB pages.
    assert_eq!(o.stats().page_table_pages, tables + 1);
    assert_eq!(o.stats().frames_in_use, before);
    assert_eq!(o.lookup(a + (2 << 20) + 4096).unwrap().1, PageSize::Size4K);
    assert_eq!(o.lookup(a + (2 << 20)), None);
}

#[test]
fn the_1g_policy_takes_1gb_pages_where_they_fit_then_2mb_then_4kb() {
    let mut o = os("1g", None);
    let mut inv = Vec::new();
    // 1GB + 3MB of anonymous memory from 1MB before a 1GB boundary: [B - 1MB, B + 1GB + 2MB).
    let b = 0x7000_4000_0000u64;
    let a = b - (1 << 20);
    o.syscall(&sys(SyscallKind::Mmap, &[0, (1 << 30) + (3 << 20), 3, 0x22, u64::MAX, 0], a as i64), &mut inv).unwrap();
    o.fault(a, &mut inv).unwrap(); // neither the 1GB nor the 2MB region around it fits -> 4KB
    o.fault(b + 12345, &mut inv).unwrap(); // [B, B + 1GB) inside -> 1GB
    o.fault(b + (1 << 30) + 4096, &mut inv).unwrap(); // past it: the 2MB region [B+1GB, +2MB) -> 2MB
    assert_eq!(o.lookup(a).unwrap().1, PageSize::Size4K);
    assert_eq!(o.lookup(b + (1 << 29)).unwrap().1, PageSize::Size1G);
    assert_eq!(o.lookup(b + (1 << 30)).unwrap().1, PageSize::Size2M);
    let st = o.stats();
    assert_eq!((st.faults_4k, st.faults_2m, st.faults_1g), (1, 1, 1));
    // Fallbacks: 1GB -> 2MB -> 4KB at the head (2), 1GB -> 2MB at the tail (1).
    assert_eq!(st.huge_fallbacks, 3);
    assert_eq!(o.policy_name(), "1g");
}

#[test]
fn brk_grows_and_shrinks_the_heap_vma() {
    let mut o = os("4k", None);
    let mut inv = Vec::new();
    o.syscall(&sys(SyscallKind::Brk, &[0], 0x5555_0000_0000), &mut inv).unwrap();
    o.syscall(&sys(SyscallKind::Brk, &[0x5555_0002_1000], 0x5555_0002_1000), &mut inv).unwrap();
    o.syscall(&sys(SyscallKind::Brk, &[0x5555_0004_0800], 0x5555_0004_0800), &mut inv).unwrap();
    let v = o.vmas();
    assert_eq!(v.len(), 1);
    assert_eq!((v[0].start, v[0].end, v[0].kind), (0x5555_0000_0000, 0x5555_0004_1000, VmaKind::Heap));
    o.fault(0x5555_0004_0000, &mut inv).unwrap();
    o.syscall(&sys(SyscallKind::Brk, &[0x5555_0001_0000], 0x5555_0001_0000), &mut inv).unwrap();
    assert_eq!(o.vmas()[0].end, 0x5555_0001_0000);
    assert_eq!(o.lookup(0x5555_0004_0000), None);
    assert_eq!(inv.last(), Some(&Invalidation::Range { asid: 0, start: 0x5555_0001_0000, end: 0x5555_0004_1000 }));
}

#[test]
fn mosaic_relocates_pools_and_honours_windows() {
    let layout = "version = 1\n[heap]\nsize = \"2GiB\"\nwindows = [ { offset = \"1GiB\", length = \"1GiB\", page = \"1GB\" } ]\n[anon]\nsize = \"1GiB\"\nwindows = [ { offset = \"2MiB\", length = \"4MiB\", page = \"2MB\" } ]\n";
    let mut o = os("mosaic", Some(layout));
    let mut inv = Vec::new();
    o.syscall(&sys(SyscallKind::Brk, &[0], 0x5555_5556_0000), &mut inv).unwrap();
    assert_eq!(o.relocate(0x5555_5556_0010), HEAP_POOL_BASE + 0x10);
    let g = o.relocate(0x5555_5556_0000 + (1 << 30) + 5);
    o.fault(g, &mut inv).unwrap();
    assert_eq!(o.lookup(g).unwrap().1, PageSize::Size1G);
    // Two anonymous mappings: first fit gives offsets 0 and 3MiB.
    o.syscall(&sys(SyscallKind::Mmap, &[0, 3 << 20, 3, 0x22, u64::MAX, 0], 0x7f00_0000_0000), &mut inv).unwrap();
    o.syscall(&sys(SyscallKind::Mmap, &[0, 8 << 20, 3, 0x22, u64::MAX, 0], 0x7e00_0000_0000), &mut inv).unwrap();
    assert_eq!(o.relocate(0x7f00_0000_1000), ANON_POOL_BASE + 0x1000);
    assert_eq!(o.relocate(0x7e00_0000_0000), ANON_POOL_BASE + (3 << 20));
    let w = o.relocate(0x7f00_0000_0000 + (2 << 20)); // offset 2MiB: in the 2MB window
    o.fault(w, &mut inv).unwrap();
    assert_eq!(o.lookup(w).unwrap().1, PageSize::Size2M);
    let n = o.relocate(0x7e00_0000_0000 + (4 << 20)); // offset 7MiB: 4KB
    o.fault(n, &mut inv).unwrap();
    assert_eq!(o.lookup(n).unwrap().1, PageSize::Size4K);
    // Free the first mapping; a 1MiB mapping reuses offset 0.
    o.syscall(&sys(SyscallKind::Munmap, &[0x7f00_0000_0000, 3 << 20], 0), &mut inv).unwrap();
    assert_eq!(o.lookup(w).unwrap().1, PageSize::Size2M, "huge pages stay in the pool");
    o.syscall(&sys(SyscallKind::Mmap, &[0, 1 << 20, 3, 0x22, u64::MAX, 0], 0x7d00_0000_0000), &mut inv).unwrap();
    assert_eq!(o.relocate(0x7d00_0000_0000), ANON_POOL_BASE);
    assert_eq!(o.relocate(0x7f00_0000_0000), 0x7f00_0000_0000, "unmapped: identity");
}

#[test]
fn mosaic_pools_at_trace_addresses() {
    // A trace recorded under the allocator: the pools are where it put them; nothing moves.
    let layout = "version = 1\n[heap]\nsize = \"2GiB\"\nwindows = [ { offset = \"4MiB\", length = \"4MiB\", page = \"2MB\" }, { offset = \"1GiB\", length = \"1GiB\", page = \"1GB\" } ]\n[anon]\nsize = \"1GiB\"\n[file]\nsize = \"1GiB\"\n";
    let text = "name = \"t\"\n[memory]\nsize = \"8GiB\"\n[[tlb]]\nname = \"l1\"\nlevel = 1\nrole = \"data\"\nentries = 4\nways = 4\npage_sizes = [\"4KB\"]\n";
    let (heap, anon, file) = (0x40_0000_0000u64, 0x48_0000_0000u64, 0x50_0000_0000u64);
    let sets =
        [format!("os.pools_at.heap={heap}"), format!("os.pools_at.anon={anon}"), format!("os.pools_at.file={file}")];
    let cfg = Config::build("t", text, &sets, Some(Layout::from_toml("l", layout).unwrap())).unwrap();
    let mut o = Os::new(&cfg).unwrap();
    let mut inv = Vec::new();
    // The allocator's reservation of the heap pool: 1GiB of slack, then the slack trimmed.
    o.syscall(&sys(SyscallKind::Mmap, &[0, 3 << 30, 0, 0x4022, u64::MAX, 0], (heap - (1 << 29)) as i64), &mut inv)
        .unwrap();
    o.syscall(&sys(SyscallKind::Munmap, &[heap - (1 << 29), 1 << 29], 0), &mut inv).unwrap();
    o.syscall(&sys(SyscallKind::Brk, &[0], 0x5555_5556_0000), &mut inv).unwrap();
    assert_eq!(o.relocate(heap + 0x10), heap + 0x10, "no relocation");
    for (va, want) in [
        (heap + 0x1000, PageSize::Size4K),
        (heap + (5 << 20), PageSize::Size2M),
        (heap + (8 << 20), PageSize::Size4K),
        (heap + (1 << 30) + 77, PageSize::Size1G),
        (anon + (4 << 20), PageSize::Size4K),
        (0x5555_5556_0000, PageSize::Size4K),
    ] {
        o.fault(va, &mut inv).unwrap();
        assert_eq!(o.lookup(va).unwrap().1, want, "{va:#x}");
    }
    assert!(o.vmas().iter().any(|v| v.start == heap && v.end == heap + (2 << 30)), "the heap pool VMA is whole");
    // THP advice on pool memory (older allocators passed NumPy's through) frees nothing.
    o.syscall(&sys(SyscallKind::Madvise, &[heap, 16 << 20, 14], 0), &mut inv).unwrap();
    assert_eq!(o.lookup(heap + 0x1000).unwrap().1, PageSize::Size4K);
    // The allocator returns heap memory (DONTNEED): 4KB pages go, huge pages and the pool stay.
    o.syscall(&sys(SyscallKind::Madvise, &[heap, 16 << 20, 4], 0), &mut inv).unwrap();
    assert_eq!(o.lookup(heap + 0x1000), None);
    assert_eq!(o.lookup(heap + (5 << 20)).unwrap().1, PageSize::Size2M);
    // A file mapped into the file pool (MAP_FIXED) keeps the pool VMA.
    o.syscall(&sys(SyscallKind::Mmap, &[file, 1 << 20, 1, 0x12, 3, 0], file as i64), &mut inv).unwrap();
    o.fault(file + 4096, &mut inv).unwrap();
    assert!(o.vmas().iter().any(|v| v.start == file && v.end == file + (1 << 30)));
    assert_eq!(o.stats().pool_overflows, 0);
    // Outside the pools, mappings behave as without a layout.
    o.syscall(&sys(SyscallKind::Mmap, &[0, 1 << 20, 3, 0x22, u64::MAX, 0], 0x7f00_0000_0000), &mut inv).unwrap();
    o.fault(0x7f00_0000_1000, &mut inv).unwrap();
    o.syscall(&sys(SyscallKind::Munmap, &[0x7f00_0000_0000, 1 << 20], 0), &mut inv).unwrap();
    assert_eq!(o.lookup(0x7f00_0000_1000), None);
}

#[test]
fn pools_at_is_checked() {
    let text = "name = \"t\"\n[[tlb]]\nname = \"l1\"\nlevel = 1\nrole = \"data\"\nentries = 4\nways = 4\npage_sizes = [\"4KB\"]\n";
    let lay = Layout::from_toml("l", "version = 1\n[heap]\nsize = \"2GiB\"\n").unwrap();
    let g = 1u64 << 30;
    for (sets, want) in [
        (
            vec![
                format!("os.pools_at.heap={}", g + 4096),
                format!("os.pools_at.anon={}", 64 * g),
                format!("os.pools_at.file={}", 128 * g),
            ],
            "os.pools_at.heap = 0x40001000 is not a nonzero multiple of 1GiB",
        ),
        (
            vec![
                format!("os.pools_at.heap={g}"),
                format!("os.pools_at.anon={}", 2 * g),
                format!("os.pools_at.file={}", 128 * g),
            ],
            "the heap pool (0x40000000 + 2147483648 bytes) overlaps the anon pool",
        ),
        (vec![format!("os.pools_at.heap={g}")], "missing field `anon`"),
    ] {
        let e = Config::build("t", text, &sets, Some(lay.clone())).unwrap_err().0;
        assert!(e.contains(want), "{e}");
    }
    let sets = [
        format!("os.pools_at.heap={g}"),
        format!("os.pools_at.anon={}", 64 * g),
        format!("os.pools_at.file={}", 128 * g),
    ];
    let e = Config::from_toml("t", text, &sets).unwrap_err().0;
    assert!(e.contains("os.pools_at only applies to os.policy = \"mosaic\""), "{e}");
}

#[test]
fn hugetlb_mremap_and_dontneed() {
    let mut o = os("4k", None);
    let mut inv = Vec::new();
    let h = 0x7000_0000_0000u64;
    // MAP_HUGETLB | MAP_HUGE_1GB
    o.syscall(&sys(SyscallKind::Mmap, &[0, 1 << 30, 3, 0x22 | 0x40000 | (30 << 26), u64::MAX, 0], h as i64), &mut inv)
        .unwrap();
    o.fault(h + 12345, &mut inv).unwrap();
    assert_eq!(o.lookup(h).unwrap().1, PageSize::Size1G);
    let a = 0x7100_0000_0000u64;
    o.syscall(&sys(SyscallKind::Mmap, &[0, 1 << 20, 3, 0x22, u64::MAX, 0], a as i64), &mut inv).unwrap();
    o.fault(a, &mut inv).unwrap();
    let pfn = o.lookup(a).unwrap().0;
    o.syscall(&sys(SyscallKind::Mremap, &[a, 1 << 20, 2 << 20, 1, 0], 0x7200_0000_0000), &mut inv).unwrap();
    assert_eq!(o.lookup(a), None);
    assert_eq!(o.lookup(0x7200_0000_0000), Some((pfn, PageSize::Size4K)), "frames move with the mapping");
    o.syscall(&sys(SyscallKind::Madvise, &[0x7200_0000_0000, 4096, 4], 0), &mut inv).unwrap();
    assert_eq!(o.lookup(0x7200_0000_0000), None);
}

// ---------------------------------------------------------------------- new seams

const MIN: &str =
    "name = \"t\"\n[[tlb]]\nname = \"l1\"\nlevel = 1\nrole = \"data\"\nentries = 4\nways = 4\npage_sizes = [\"4KB\"]\n";

fn os_with(extra: &str, sets: &[&str]) -> Os {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Os::new(&Config::from_toml("t", &format!("{MIN}{extra}"), &sets).unwrap()).unwrap()
}

const MAP_ANON: u64 = 0x22;

fn mmap(o: &mut Os, inv: &mut Vec<Invalidation>, addr: u64, len: u64) {
    o.syscall(&sys(SyscallKind::Mmap, &[0, len, 3, MAP_ANON, u64::MAX, 0], addr as i64), inv).unwrap();
}

/// Every frame in use: data frames of the current space's leaves, table and companion frames.
fn frames_in_use(o: &Os) -> Vec<u64> {
    let pt = o.tables();
    let mut v: Vec<u64> = Vec::new();
    for (_, pfn, size) in pt.leaves(o.root(), o.levels(), 0, u64::MAX) {
        v.extend(pfn..pfn + size.bytes() / 4096);
    }
    for t in 0..pt.tables() as u32 {
        v.push(pt.table_pa(t) >> 12);
        v.extend(pt.companion_pa(t).map(|c| c >> 12));
    }
    v
}

#[test]
fn relocate_run_equals_relocate() {
    let layout = "version = 1\n[heap]\nsize = \"1GiB\"\n[anon]\nsize = \"64MiB\"\n[file]\nsize = \"16MiB\"\n";
    let mut o = os("mosaic", Some(layout));
    let mut inv = Vec::new();
    o.syscall(&sys(SyscallKind::Brk, &[0], 0x5555_0000_0000), &mut inv).unwrap();
    // Several mappings: anon and file chunks in the pools, one overflowing its pool (identity).
    let maps = [
        (0x7f00_0000_0000u64, 8u64 << 20, MAP_ANON),
        (0x7f10_0000_0000, 4 << 20, 0x01),
        (0x7f20_0000_0000, 100 << 20, MAP_ANON),
        (0x7f30_0000_0000, 2 << 20, MAP_ANON),
    ];
    for &(a, len, flags) in &maps {
        o.syscall(&sys(SyscallKind::Mmap, &[0, len, 3, flags, u64::MAX, 0], a as i64), &mut inv).unwrap();
    }
    o.syscall(&sys(SyscallKind::Munmap, &[0x7f00_0000_0000 + (2 << 20), 1 << 20], 0), &mut inv).unwrap();
    assert_eq!(o.stats().pool_overflows, 1);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::new();
    for _ in 0..200 {
        let n = (rnd() % 300) as usize;
        let run: Vec<u64> = (0..n)
            .map(|_| {
                let r = rnd();
                match r % 6 {
                    0 => 0x5555_0000_0000 + (r >> 8) % (1 << 31), // heap, past the pool too
                    5 => r >> 16,                                 // anywhere
                    k => maps[k as usize - 1].0 + (r >> 8) % (maps[k as usize - 1].1 + 4096),
                }
            })
            .collect();
        o.relocate_run(&run, &mut out);
        let want: Vec<u64> = run.iter().map(|&a| o.relocate(a)).collect();
        assert_eq!(out, want);
    }
    // Without mosaic: the identity.
    let mut p = os("4k", None);
    p.relocate_run(&[1, 2, 0x7f00_0000_0000], &mut out);
    assert_eq!(out, vec![1, 2, 0x7f00_0000_0000]);
}

#[test]
fn eager_paging_backs_mappings_with_large_contiguous_blocks() {
    // 64MiB of memory, 4KB pages: an 8MiB mapping is one 8MiB block (order 11), contiguous.
    let mut o = os_with("[memory]\nsize = \"64MiB\"\nmax_order = 12\n", &["os.allocation=eager"]);
    let mut inv = Vec::new();
    let a = 0x7000_0000_0000u64;
    mmap(&mut o, &mut inv, a, 8 << 20);
    let s = o.stats();
    assert_eq!((s.eager_blocks, s.eager_frames, s.eager_4k, s.page_faults), (1, 2048, 2048, 0));
    let first = o.lookup(a).unwrap().0;
    assert!((0..2048).all(|i| o.lookup(a + i * 4096) == Some((first + i, PageSize::Size4K))));
    // 3 pages plus 1: blocks of 4 (largest that fits 5 pages) and 1; with THP, 2MB pages where
    // both the address and the frame are 2MB-aligned.
    mmap(&mut o, &mut inv, a + (1 << 30), 5 * 4096);
    assert_eq!(o.stats().eager_blocks, 3);
    let mut t = os_with("[memory]\nsize = \"64MiB\"\nmax_order = 12\n", &["os.allocation=eager", "os.policy=thp"]);
    mmap(&mut t, &mut inv, a, (4 << 20) + 4096);
    let s = t.stats();
    assert_eq!((s.eager_2m, s.eager_4k, s.eager_blocks), (2, 1, 2), "a 4MiB block as two 2MB pages, one 4KB");
    assert_eq!(t.lookup(a + 5).unwrap().1, PageSize::Size2M);
    // The eager counters are reported only with eager paging.
    let mut named = crate::stats::Named::default();
    crate::stats::Counters::counters(&t, &mut named);
    assert_eq!(named.0["os.eager_2m"], 2);
    let mut named = crate::stats::Named::default();
    crate::stats::Counters::counters(&os("4k", None), &mut named);
    assert!(!named.0.keys().any(|k| k.starts_with("os.eager")), "no eager counters by default");
}

#[test]
fn eager_paging_places_blocks_so_that_huge_pages_fit() {
    // seed 000 section 4.4: ranges are redundant to paging, which keeps its huge pages. A 1GiB
    // mapping on a fresh buddy allocator, 2MB-aligned: 512 2MB pages, one range.
    let leaves = |sets: &[&str], a: u64, len: u64| {
        let mut sets = sets.to_vec();
        sets.extend(["os.allocation=eager", "os.ranges=contiguous"]);
        let mut o = os_with("[memory]\nsize = \"8GiB\"\nmax_order = 20\n", &sets);
        let mut inv = Vec::new();
        mmap(&mut o, &mut inv, a, len);
        let s = o.stats();
        // Physically contiguous: every page's frame follows from the first.
        let first = o.lookup(a).map(|(pfn, size)| pfn + ((a & (size.bytes() - 1)) >> 12)).unwrap();
        assert!((0..len >> 21).all(|i| {
            let va = a + (i << 21);
            o.lookup(va).map(|(pfn, size)| pfn + ((va & (size.bytes() - 1)) >> 12)) == Some(first + (i << 9))
        }));
        (s.eager_4k, s.eager_2m, s.eager_1g, o.ranges().len())
    };
    let base = 0x7000_0000_0000u64;
    assert_eq!(leaves(&["os.policy=thp"], base, 1 << 30), (0, 512, 0, 1));
    // 291 pages past a 2MB boundary: 511 2MB pages between 221 4KB pages at the head and 291 at
    // the tail, still one range (the block is taken whole and its first 291 frames returned).
    let a = base + 291 * 4096;
    assert_eq!(leaves(&["os.policy=thp"], a, 1 << 30), (512, 511, 0, 1));
    // Algorithm 4.1 as printed (`any`): the 1GiB block starts 1GiB-aligned, the addresses 291
    // pages past one, so no 2MB page fits.
    assert_eq!(leaves(&["os.policy=thp", "os.eager_placement=any"], a, 1 << 30), (1 << 18, 0, 0, 1));
    // The 1GB policy: a 2GiB mapping 3 2MB pages past a 1GB boundary holds one 1GB page,
    // 2MB pages around it.
    let a = base + (3 << 21);
    assert_eq!(leaves(&["os.policy=1g"], a, 2 << 30), (0, 509 + 3, 1, 1));
    // 4KB pages only: nothing to align, the block is used from its first frame.
    assert_eq!(leaves(&[], a, 1 << 30), (1 << 18, 0, 0, 1));
}

#[test]
fn eager_promotion_maps_a_2mb_region_two_requests_complete() {
    // Two adjacent anonymous mmaps merge into one mapping, each backed at its own syscall. The
    // 2MB region at 0x...20_0000 is half in each: neither request holds it whole, so each backs
    // its half with 4KB pages. The second request completes it: with os.eager_promote (default)
    // it becomes one 2MB page, as THP demand paging would map it on a first touch after both.
    let base = 0x7000_0010_0000u64; // 1MiB past a 2MB boundary
    let run = |sets: &[&str], upward: bool| {
        let mut sets = sets.to_vec();
        sets.extend(["os.allocation=eager", "os.policy=thp", "os.ranges=contiguous"]);
        let mut o = os_with("[memory]\nsize = \"256MiB\"\nmax_order = 12\n", &sets);
        let mut inv = Vec::new();
        let (lo, hi) = (base, base + (2 << 20)); // [1MiB, 3MiB) and [3MiB, 5MiB) past the boundary
        let order: [u64; 2] = if upward { [lo, hi] } else { [hi, lo] };
        for a in order {
            mmap(&mut o, &mut inv, a, 2 << 20);
        }
        let s = o.stats();
        let region = base + (1 << 20); // the 2MB region both requests share
        let leaf = o.lookup(region).unwrap();
        o.check().expect("OS invariants");
        (
            leaf.1,
            s.eager_promotions,
            s.eager_collapses,
            s.eager_4k,
            s.eager_2m,
            frames_in_use(&o).len() as u64 - o.tables().tables() as u64,
        )
    };
    // Growing upward: the second request continues the first's frames, which were placed
    // congruent modulo 2MB: promoted in place. 512 + 256 + 256 pages: two 1MiB halves at the
    // ends stay 4KB (their regions are not wholly mapped).
    let (size, promoted, collapsed, k4, m2, frames) = run(&[], true);
    assert_eq!((size, promoted, collapsed), (PageSize::Size2M, 1, 0));
    assert_eq!((k4, m2, frames), (512, 1, 1024), "4KB pages of the two outer halves; frames = pages");
    // Growing downward (mmap below mmap, as glibc's and QEMU's allocations often do): the two
    // halves' frames are not one block: copied into a new 2MB block, the old frames freed.
    let (size, promoted, collapsed, _, m2, frames) = run(&[], false);
    assert_eq!((size, promoted, collapsed, m2), (PageSize::Size2M, 0, 1, 1));
    assert_eq!(frames, 1024, "the 512 frames copied from were freed");
    // os.eager_promote = false: the region stays as backed, in 4KB pages (the machine before).
    let (size, promoted, collapsed, k4, m2, _) = run(&["os.eager_promote=false"], true);
    assert_eq!((size, promoted, collapsed, k4, m2), (PageSize::Size4K, 0, 0, 1024, 0));
    // With 4KB pages only, nothing is promoted.
    let mut o = os_with("[memory]\nsize = \"256MiB\"\n", &["os.allocation=eager"]);
    let mut inv = Vec::new();
    mmap(&mut o, &mut inv, base, 2 << 20);
    mmap(&mut o, &mut inv, base + (2 << 20), 2 << 20);
    assert_eq!(o.lookup(base + (1 << 20)).unwrap().1, PageSize::Size4K);
    assert_eq!(o.stats().eager_promotions + o.stats().eager_collapses, 0);
}

#[test]
fn eager_paging_gets_smaller_blocks_from_fragmented_memory() {
    let blocks = |frag: &str| {
        let mut o = os_with(
            "[memory]\nsize = \"64MiB\"\nmax_order = 12\n",
            &["os.allocation=eager", &format!("memory.fragmentation={frag}")],
        );
        let mut inv = Vec::new();
        mmap(&mut o, &mut inv, 0x7000_0000_0000, 16 << 20);
        assert_eq!(o.stats().eager_frames, 4096);
        o.stats().eager_blocks
    };
    assert_eq!(blocks("0.0"), 1);
    // Every 2MB block pinned: the largest free blocks are 1MB (order 8), 16 of them.
    assert_eq!(blocks("1.0"), 16);
    let half = blocks("0.5");
    assert!(half > 1 && half < 16, "{half}");
}

#[test]
fn contiguous_ranges_follow_mappings() {
    let mut o = os_with("[memory]\nsize = \"256MiB\"\n", &["os.allocation=eager", "os.ranges=contiguous"]);
    let mut inv = Vec::new();
    let (a, b) = (0x7000_0000_0000u64, 0x7100_0000_0000u64);
    mmap(&mut o, &mut inv, a, 8 << 20);
    mmap(&mut o, &mut inv, b, 3 << 20);
    // One range per mapping on a fresh machine (3MiB: a 2MiB block, then the 1MiB block after
    // it).
    let r = o.ranges();
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!((r[0].base, r[0].limit), (a, a + (8 << 20)));
    assert_eq!((r[1].base, r[1].limit), (b, b + (3 << 20)));
    assert_eq!(o.range_of(a + 12345).map(|r| r.frame_of(a + 12345)), o.lookup(a + 12345).map(|x| x.0));
    // munmap of the middle splits the range, and the invalidation covers the hole.
    inv.clear();
    o.syscall(&sys(SyscallKind::Munmap, &[a + (4 << 20), 1 << 20], 0), &mut inv).unwrap();
    assert_eq!(inv, vec![Invalidation::Range { asid: 0, start: a + (4 << 20), end: a + (5 << 20) }]);
    let r = o.ranges();
    assert_eq!(
        r.iter().map(|r| (r.base, r.limit)).collect::<Vec<_>>()[..2],
        [(a, a + (4 << 20)), (a + (5 << 20), a + (8 << 20))]
    );
    assert_eq!(o.range_of(a + (4 << 20)), None);
    // DONTNEED of all but a few pages of a piece drops it (shorter than 32KiB).
    o.syscall(&sys(SyscallKind::Madvise, &[a + (5 << 20), (3 << 20) - 4 * 4096, 4], 0), &mut inv).unwrap();
    assert_eq!(o.ranges().len(), 2);
    // Demand faults that happen to get contiguous frames form a range once 8 pages long.
    let mut d = os_with("[memory]\nsize = \"256MiB\"\n", &["os.ranges=contiguous"]);
    mmap(&mut d, &mut inv, a, 1 << 20);
    // (Page 0 gets frame 1, then three tables take frames 2, 3 and 4, and pages 1.. get 5..)
    for i in 0..8 {
        d.fault(a + i * 4096, &mut inv).unwrap();
    }
    assert!(d.ranges().is_empty());
    d.fault(a + 8 * 4096, &mut inv).unwrap();
    assert_eq!(d.ranges(), vec![Range { base: a + 4096, limit: a + 9 * 4096, pfn: 5 }]);
    // brk shrink trims the heap's range.
    let mut h = os_with("[memory]\nsize = \"256MiB\"\n", &["os.allocation=eager", "os.ranges=contiguous"]);
    h.syscall(&sys(SyscallKind::Brk, &[0], 0x5555_0000_0000), &mut inv).unwrap();
    h.syscall(&sys(SyscallKind::Brk, &[0], 0x5555_0010_0000), &mut inv).unwrap();
    h.syscall(&sys(SyscallKind::Brk, &[0], 0x5555_0020_0000), &mut inv).unwrap();
    assert_eq!(
        h.ranges().iter().map(|r| (r.base, r.limit)).collect::<Vec<_>>(),
        vec![(0x5555_0000_0000, 0x5555_0020_0000)]
    );
    h.syscall(&sys(SyscallKind::Brk, &[0], 0x5555_0008_0000), &mut inv).unwrap();
    assert_eq!(
        h.ranges().iter().map(|r| (r.base, r.limit)).collect::<Vec<_>>(),
        vec![(0x5555_0000_0000, 0x5555_0008_0000)]
    );
    let mut named = crate::stats::Named::default();
    crate::stats::Counters::counters(&h, &mut named);
    assert_eq!((named.0["os.ranges"], named.0["os.range_frames"]), (1, 128));
}

#[test]
fn eager_paging_backs_file_mappings_only_when_asked() {
    // A 4MiB private file mapping (fd 3, no MAP_ANONYMOUS): Algorithm 4.1 backs anonymous memory
    // only, so it stays demand-paged, outside every range; os.eager_files backs it whole at mmap
    // time (4KB pages: the page cache's) and one range covers it.
    let a = 0x7000_0000_0000u64;
    let file = |o: &mut Os, inv: &mut Vec<Invalidation>| {
        o.syscall(&sys(SyscallKind::Mmap, &[0, 4 << 20, 1, 2, 3, 0], a as i64), inv).unwrap();
    };
    let mut inv = Vec::new();
    let base = ["os.allocation=eager", "os.ranges=contiguous"];
    let mut o = os_with("[memory]\nsize = \"256MiB\"\n", &base);
    file(&mut o, &mut inv);
    assert_eq!(o.lookup(a), None);
    assert!(o.ranges().is_empty());
    let mut f = os_with("[memory]\nsize = \"256MiB\"\n", &[base[0], base[1], "os.eager_files=true"]);
    file(&mut f, &mut inv);
    assert_eq!(f.lookup(a + (4 << 20) - 4096).map(|x| x.1), Some(PageSize::Size4K));
    assert_eq!(f.ranges().iter().map(|r| (r.base, r.limit)).collect::<Vec<_>>(), vec![(a, a + (4 << 20))]);
}

const TWO_KINDS: &str = "[memory]\nmax_order = 10\n[[memory.kinds]]\nname = \"dram\"\nsize = \"8MiB\"\n[[memory.kinds]]\nname = \"nvm\"\nsize = \"16MiB\"\nread_latency = 600\nwrite_latency = 1500\n";

#[test]
fn tiering_places_and_migrates_between_zones() {
    let mut o = os_with(TWO_KINDS, &["os.tiering=highest-first"]);
    let mut inv = Vec::new();
    let a = 0x7000_0000_0000u64;
    mmap(&mut o, &mut inv, a, 1 << 20);
    for i in 0..16 {
        o.fault(a + i * 4096, &mut inv).unwrap();
    }
    // Data in the NVM zone, page tables in DRAM.
    assert!((0..16).all(|i| o.zone_of(o.lookup(a + i * 4096).unwrap().0) == 1));
    let pt = o.tables();
    assert!((0..pt.tables() as u32).all(|t| o.zone_of(pt.table_pa(t) >> 12) == 0));
    // Migrate four pages to DRAM: new frames there, the old ones free, one invalidation each.
    let free_before = o.fragmentation().zones[1].free_frames;
    for i in 0..4 {
        let va = a + i * 4096;
        let old = o.translate(va).unwrap().0;
        inv.clear();
        assert!(o.migrate(va + 17, 0, &mut inv).unwrap());
        let (new, size) = o.translate(va).unwrap();
        assert_eq!((o.zone_of(new), size), (0, PageSize::Size4K));
        assert_ne!(new, old);
        assert_eq!(inv, vec![Invalidation::Range { asid: 0, start: va, end: va + 4096 }]);
    }
    assert_eq!(o.fragmentation().zones[1].free_frames, free_before + 4);
    assert!(!o.migrate(a, 0, &mut inv).unwrap(), "already in DRAM");
    assert!(!o.migrate(a + (2 << 20), 0, &mut inv).unwrap(), "not mapped");
    assert!(o.migrate(a, 5, &mut inv).is_err());
    assert_eq!(o.stats().migrations, 4);
    let mut named = crate::stats::Named::default();
    crate::stats::Counters::counters(&o, &mut named);
    assert_eq!(named.0["os.migrations"], 4);
    // Lowest-first: DRAM until it is full, then NVM.
    let mut l = os_with(TWO_KINDS, &[]);
    mmap(&mut l, &mut inv, a, 16 << 20);
    for i in 0..(12 << 20) / 4096 {
        l.fault(a + i * 4096, &mut inv).unwrap();
    }
    assert_eq!(l.zone_of(l.lookup(a).unwrap().0), 0);
    assert_eq!(l.zone_of(l.lookup(a + (12 << 20) - 4096).unwrap().0), 1);
    assert_eq!(l.fragmentation().zones[0].free_frames, 0);
}

#[test]
fn zones_change_nothing_while_the_first_holds_everything() {
    // The same faults with one 24MiB kind and with 8MiB + 16MiB kinds: the same frames.
    let one = "[memory]\nmax_order = 10\nsize = \"24MiB\"\n";
    let (mut p, mut q) = (os_with(one, &["os.policy=thp"]), os_with(TWO_KINDS, &["os.policy=thp"]));
    let mut inv = Vec::new();
    for o in [&mut p, &mut q] {
        mmap(o, &mut inv, 0x7000_0010_0000, 5 << 20);
        for va in [0x7000_0010_0000u64, 0x7000_0030_0000, 0x7000_0011_3000, 0x7000_0050_8000] {
            o.fault(va, &mut inv).unwrap();
        }
    }
    for va in [0x7000_0010_0000u64, 0x7000_0030_0000, 0x7000_0011_3000, 0x7000_0050_8000] {
        assert_eq!(p.lookup(va), q.lookup(va));
    }
    assert_eq!(p.stats(), q.stats());
}

#[test]
fn fifo_reclaim_evicts_the_oldest_pages() {
    // 2MiB of memory: 512 frames, a few of them page tables.
    let mut o = os_with("[memory]\nsize = \"2MiB\"\n", &["os.reclaim=fifo"]);
    let mut inv = Vec::new();
    let a = 0x7000_0000_0000u64;
    mmap(&mut o, &mut inv, a, 4 << 20);
    let mut evicted = Vec::new();
    for i in 0..1024 {
        inv.clear();
        o.fault(a + i * 4096, &mut inv).unwrap();
        evicted.extend(inv.iter().copied());
    }
    let s = o.stats();
    assert!(s.reclaimed_pages > 500, "{s:?}");
    assert_eq!(evicted.len() as u64, s.reclaimed_pages);
    // In the order they were faulted in.
    assert_eq!(evicted[0], Invalidation::Range { asid: 0, start: a, end: a + 4096 });
    assert_eq!(evicted[1], Invalidation::Range { asid: 0, start: a + 4096, end: a + 8192 });
    assert_eq!(o.lookup(a), None);
    assert!(o.lookup(a + 1023 * 4096).is_some());
    // A touch of an evicted page is a major fault.
    o.fault(a, &mut inv).unwrap();
    assert_eq!(o.stats().major_faults, 1);
    // Without reclaim, the same faults fail with the one-sentence error.
    let mut n = os_with("[memory]\nsize = \"2MiB\"\n", &[]);
    mmap(&mut n, &mut inv, a, 4 << 20);
    // (4 frames hold page tables: pages 0..507 fit.)
    let e = (0..1024).find_map(|i| n.fault(a + i * 4096, &mut inv).err()).unwrap();
    let want =
        format!("physical memory (2 MiB) is exhausted at virtual address {:#x}; raise memory.size", a + 508 * 4096);
    assert_eq!(e.to_string(), want);
}

#[test]
fn the_registry_gives_each_page_directory_a_companion_page() {
    let mut o = os_with("[memory]\nsize = \"1GiB\"\n", &["os.metadata=registry", "os.policy=thp"]);
    let mut inv = Vec::new();
    for (i, base) in [0x7000_0000_0000u64, 0x7000_4000_0000, 0x5555_0000_0000].into_iter().enumerate() {
        mmap(&mut o, &mut inv, base, 8 << 20);
        for j in 0..4 {
            o.fault(base + j * (2 << 20) + i as u64 * 4096, &mut inv).unwrap();
        }
    }
    let pt = o.tables();
    let pds: Vec<u32> = (0..pt.tables() as u32).filter(|&t| pt.level_of(t) == 2).collect();
    assert_eq!(pds.len(), 3, "0x7000_0.. and 0x7000_4.. share a PDPT but not a PD; 0x5555.. has its own");
    assert!(pds.iter().all(|&t| pt.companion_pa(t).is_some()));
    assert!((0..pt.tables() as u32).filter(|&t| pt.level_of(t) != 2).all(|t| pt.companion_pa(t).is_none()));
    let mut all = frames_in_use(&o);
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "every frame in use is distinct");
    let s = o.stats();
    assert_eq!(s.companion_pages, 3);
    assert_eq!(s.frames_in_use, n as u64);
    assert_eq!(s.page_table_pages, pt.tables() as u64);
    let mut named = crate::stats::Named::default();
    crate::stats::Counters::counters(&o, &mut named);
    assert_eq!(named.0["os.companion_pages"], 3);
    // Without the registry: no companions, and the counter is not reported.
    let d = os("thp", None);
    assert!(d.tables().companion_pa(d.root()).is_none());
    let mut named = crate::stats::Named::default();
    crate::stats::Counters::counters(&d, &mut named);
    assert!(!named.0.contains_key("os.companion_pages"));
}

#[test]
fn policies_can_be_installed_from_rust() {
    /// Ranges of any contiguous run of at least 2 pages.
    struct Pairs;
    impl policy::RangeCreation for Pairs {
        fn name(&self) -> &'static str {
            "pairs"
        }
        fn threshold(&self) -> Option<u64> {
            Some(8192)
        }
    }
    let cfg = Config::from_toml("t", &format!("{MIN}[memory]\nsize = \"64MiB\"\n"), &[]).unwrap();
    let mut p = Policies::from_config(&cfg);
    p.ranges = Box::new(Pairs);
    p.metadata = Box::new(policy::Registry);
    let mut o = Os::with_policies(&cfg, p).unwrap();
    let mut inv = Vec::new();
    mmap(&mut o, &mut inv, 0x7000_0000_0000, 1 << 20);
    // Page 0 gets frame 1; the tables and the PD's companion take 2..5; pages 1 and 2 get 6, 7.
    for i in 0..3 {
        o.fault(0x7000_0000_0000 + i * 4096, &mut inv).unwrap();
    }
    assert_eq!(o.ranges(), vec![Range { base: 0x7000_0000_1000, limit: 0x7000_0000_3000, pfn: 6 }]);
    assert_eq!(o.stats().companion_pages, 1);
}

#[test]
fn the_range_table_b_tree_takes_pages_from_the_buddy_and_gives_them_back() {
    let mut o = os_with("[memory]\nsize = \"256MiB\"\n", &["os.allocation=eager", "os.ranges=contiguous"]);
    let mut inv = Vec::new();
    let a = 0x7000_0000_0000u64;
    // 200 mappings of 64KiB, 1MiB apart: 200 ranges, a B-tree of height 4 (124 < 200 <= 624):
    // the root (1 range) over subtrees of 100 and 99 ranges: 100 = 4 ranges over 5 subtrees of
    // 20, 19, 19, 19, 19 (6, 5, 5, 5, 5 nodes), 99 = 3 over 4 of 24 (6 nodes each): 1 + 27 + 25
    // = 53 nodes, two pages of 32. The first walk builds it.
    for i in 0..200 {
        mmap(&mut o, &mut inv, a + i * (1 << 20), 64 << 10);
    }
    assert_eq!(o.ranges().len(), 200);
    let pages = |o: &Os| {
        let mut n = crate::stats::Named::default();
        crate::stats::Counters::counters(o, &mut n);
        n.0["os.range_table_pages"]
    };
    assert_eq!(pages(&o), 0, "not built before a walk");
    let before = o.stats().frames_in_use;
    let mut path = Vec::new();
    assert!(o.range_walk(a + 5, &mut path).unwrap());
    assert_eq!((pages(&o), o.stats().frames_in_use), (2, before + 2));
    // The first range is in the leftmost leaf: 4 nodes, the root in the first page.
    assert_eq!(path.len(), 4);
    let root = path[0];
    // No change, no rebuild: the same nodes.
    let mut again = Vec::new();
    assert!(o.range_walk(a + 0x3000, &mut again).unwrap());
    assert_eq!(again, path);
    // munmap of 150 mappings: 50 ranges, height 3 (2 ranges over 3 subtrees of 16, each 3
    // ranges over 4 leaves: 1 + 3 x 5 = 16 nodes): one page goes back.
    for i in 50..200 {
        o.syscall(&sys(SyscallKind::Munmap, &[a + i * (1 << 20), 64 << 10], 0), &mut inv).unwrap();
    }
    let before = o.stats().frames_in_use;
    assert!(o.range_walk(a + 5, &mut path).unwrap());
    assert_eq!((pages(&o), o.stats().frames_in_use), (1, before - 1));
    assert_eq!((path.len(), path[0]), (3, root), "the first page is kept");
    // An address in no range: down to a leaf, nothing found.
    assert!(!o.range_walk(a + (64 << 10), &mut path).unwrap());
    assert_eq!(path.len(), 3);
}
