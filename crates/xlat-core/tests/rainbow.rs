//! Rainbow (`hybrid.migration = "rainbow"`, seed 003 section III; docs/rainbow.md): two-stage
//! counting, which 4KB pages are cached in DRAM, when and at what cost; the four translation
//! cases; bitmap-cache hits and misses; evictions; conservation; determinism; bad input.

use std::collections::BTreeMap;
use xlat_core::config::Config;
use xlat_core::Simulator;
use xlat_trace::{Access, AccessKind, Batch, SideBody, Syscall, SyscallKind};

use crate::common;
use common::{mmap, ANON};

const BASE: u64 = 0x7000_0000_0000;
const SP: u64 = 512; // 4KB pages per superpage

/// Split L1 TLBs of one entry each (4KB, 2MB), no L2; one cache level of two 64-byte lines;
/// THP with data in NVM (highest-first); 2MiB DRAM (latency 100), 8MiB NVM (read 200, write
/// 500); Rainbow with intervals of one cycle (every check ends one), N = 1, and small costs;
/// `extra` replaces keys (`key = value` lines appended to [hybrid]).
fn text(check: u64, extra: &str) -> String {
    format!(
        r#"
name = "tiny-rainbow"
[[tlb]]
name = "l1-4k"
level = 1
role = "data"
entries = 1
ways = 1
page_sizes = ["4KB"]
[[tlb]]
name = "l1-2m"
level = 1
role = "data"
entries = 1
ways = 1
page_sizes = ["2MB"]
[[cache]]
name = "llc"
size = "128B"
ways = 2
latency = 10
[os]
policy = "thp"
tiering = "highest-first"
{memory}[hybrid]
migration = "rainbow"
interval = 1
check_instructions = {check}
clflush_cycles = 3
shootdown_cycles = 1000
remap_cycles = 7
top_superpages = 1
write_weight = 3
bitmap_cache_entries = 2
bitmap_cache_ways = 2
bitmap_cache_cycles = 9
{extra}
"#,
        memory = common::tiny_memory("8MiB")
    )
}

fn cfg(check: u64, extra: &str) -> Config {
    Config::from_toml("tiny-rainbow", &text(check, extra), &[]).expect("config")
}

/// The 4KB page `page` (counted from `BASE`: superpage `page / 512`).
fn addr(page: u64, line: u64) -> u64 {
    BASE + (page << 12) + line * 64
}

struct Trace {
    b: Batch,
    ic: u64,
}

impl Trace {
    fn new() -> Trace {
        let mut b = Batch::default();
        mmap(&mut b, BASE, 8 << 20, ANON);
        Trace { b, ic: 0 }
    }
    fn one(&mut self, page: u64, line: u64, kind: AccessKind) {
        self.ic += 1;
        self.b.push_access(Access { addr: addr(page, line), icount: self.ic, tid: 1, size: 8, kind });
    }
    /// `rounds` passes over the 64 lines of `page` (each line misses the two-line cache).
    fn passes(&mut self, page: u64, rounds: u64, kind: AccessKind) {
        for _ in 0..rounds {
            for line in 0..64 {
                self.one(page, line, kind);
            }
        }
    }
    /// Loads of one line of superpage 3 (the first misses, the rest hit the cache) up to the
    /// next multiple of `every` instructions.
    fn pad(&mut self, every: u64) {
        while !self.ic.is_multiple_of(every) {
            self.one(3 * SP + 100, 0, AccessKind::Load);
        }
    }
    fn take(&mut self) -> Batch {
        std::mem::take(&mut self.b)
    }
}

fn delta(after: &BTreeMap<String, u64>, before: &BTreeMap<String, u64>, k: &str) -> u64 {
    after[k] - before.get(k).copied().unwrap_or(0)
}

const P1: u64 = 0; // superpage S0's first page
const P2: u64 = 1;
const Q: u64 = SP; // superpage S1's first page

/// Two intervals: S0 becomes the hot superpage (interval 1), P1 and P2's counts (interval 2)
/// make them worth caching.
fn warm(t: &mut Trace) {
    for _ in 0..2 {
        t.passes(P1, 5, AccessKind::Load);
        t.passes(P2, 4, AccessKind::Load);
        t.passes(Q, 1, AccessKind::Load);
    }
}

#[test]
fn the_hot_pages_of_the_hot_superpage_are_cached_at_the_second_interval_at_their_cost() {
    // Checks every 640 instructions (each ends an interval). Interval 1: stage 1 counts S0 576
    // line reads, S1 64: S0 is the top-1 superpage. Interval 2: its pages are counted: P1 320
    // reads, P2 256. Caching a page costs the copy 64 x (NVM read 200 + DRAM write 100) =
    // 19,200, the pointer write 500, clflush 64 x 3 and the remap 7: 19,899. Benefit
    // (Equation 1): P1 320 x 100 - 19,899 = 12,101 > 0, P2 25,600 - 19,899 = 5,701 > 0: both.
    let mut t = Trace::new();
    warm(&mut t);
    let sim = Simulator::new(&cfg(640, "")).expect("sim");
    assert_eq!(sim.variant(), "rainbow");
    let (s, c) = common::run(sim, &[t.take()]);
    assert_eq!(c["epoch.rainbow.intervals"], 2);
    assert_eq!(c["epoch.rainbow.candidates"], 2);
    assert_eq!(c["epoch.rainbow.promotions"], 2);
    assert_eq!(c["epoch.rainbow.shootdowns"], 0, "caching needs no shootdown");
    assert_eq!(c["epoch.rainbow.bytes_copied"], 2 * 4096);
    assert_eq!(c["rainbow.stage2_pages_counted"], 2, "P1 and P2; S1's Q was not monitored");
    assert_eq!(c["rainbow.cached_pages"], 2);
    // Copied at the end of interval 2, never read since: 2 made, 0 used.
    assert_eq!((c["rainbow.copies_made"], c["rainbow.copies_used"]), (2, 0));
    assert_eq!(c["hybrid.nvm.copy_reads"], 128);
    assert_eq!(c["hybrid.dram.copy_writes"], 128);
    assert_eq!(c["hybrid.nvm.meta_writes"], 2, "the pointers");
    assert_eq!(c["hybrid.cycles.migration"], 2 * 19_200 + 2 * 500);
    assert_eq!(c["hybrid.cycles.clflush"], 2 * 192);
    assert_eq!(c["hybrid.cycles.remap"], 14);
    assert_eq!(c["hybrid.cycles.shootdown"], 0);
    assert_eq!(c["hybrid.nvm.reads"], 2 * 640, "every access an NVM line read");
    // The pages stay in their superpage: the page table still maps S0 in NVM, whole.
    let (pfn, size) = s.os().lookup(BASE).expect("mapped");
    assert_eq!((s.os().zone_of(pfn), size), (1, xlat_core::config::PageSize::Size2M));
    assert_eq!(c["os.migrations"], 0);
    s.os().check().expect("OS invariants: the two DRAM copies are frames in use");
}

#[test]
fn an_unmap_drops_the_copies_at_once_so_a_reused_frame_is_not_sent_to_them() {
    // P1 and P2 cached; then S0 is unmapped and a new region mapped, and two of its pages
    // touched, all before the next interval's end. The OS frees S0's frame and hands it to the
    // new region: a migration bit left set would send the new pages to S0's dead copies (the
    // hardware follows any set bit, section III-E). The copies go at the unmap: bits cleared,
    // DRAM frames freed, the bookkeeping (remap, 7 cycles) each; no copy back.
    let mut t = Trace::new();
    warm(&mut t);
    let mut sim = Simulator::new(&cfg(640, "")).expect("sim");
    sim.batch(&t.take()).expect("run");
    let before = sim.counters();
    assert_eq!(before["rainbow.cached_pages"], 2);
    let (s0, _) = sim.os().lookup(BASE).expect("mapped");
    const OTHER: u64 = 0x7100_0000_0000;
    let mut b = Batch::default();
    common::munmap(&mut b, BASE, 2 << 20);
    let s = Syscall { kind: SyscallKind::Mmap, args: [0, 2 << 20, 3, ANON, u64::MAX, 0], ret: OTHER as i64 };
    b.push_side(1, 0, SideBody::Syscall(s));
    for (i, page) in [P1, P2].into_iter().enumerate() {
        let a = OTHER + (page << 12);
        b.push_access(Access { addr: a, icount: t.ic + 1 + i as u64, tid: 1, size: 8, kind: AccessKind::Load });
    }
    sim.batch(&b).expect("run");
    let c = sim.counters();
    let d = |k: &str| delta(&c, &before, k);
    assert_eq!(sim.os().lookup(OTHER).map(|(p, _)| p), Some(s0), "the new region reuses S0's frame");
    assert_eq!(d("epoch.rainbow.intervals"), 0, "no interval ended");
    assert_eq!(d("epoch.rainbow.dropped_unmapped"), 2);
    assert_eq!(c["rainbow.cached_pages"], 0);
    assert_eq!(d("rainbow.stale_remaps") + d("rainbow.remaps"), 0, "no bit set on the new pages");
    assert_eq!(d("hybrid.nvm.reads"), 2, "both from NVM");
    assert_eq!(d("hybrid.cycles.remap"), 2 * 7);
    assert_eq!(d("hybrid.nvm.copy_writes") + d("hybrid.nvm.meta_writes"), 0, "nothing written back");
    sim.check_invariants().expect("invariants");
    sim.os().check().expect("OS invariants: the copies' DRAM frames are free");
}

#[test]
fn the_four_translation_cases_and_their_costs() {
    let mut t = Trace::new();
    warm(&mut t);
    let mut sim = Simulator::new(&cfg(640, "")).expect("sim");
    sim.batch(&t.take()).expect("run");
    let before = sim.counters();
    // After the warm-up the 4KB TLB is empty and the 2MB TLB holds S1 (Q came last).
    t.one(P1, 0, AccessKind::Load); // a: both miss: walk (case 4); bit set: pointer; 4KB TLB = P1
    t.one(P1, 1, AccessKind::Load); // b: 4KB hit, S0 held too (case 1)
    t.one(Q, 0, AccessKind::Load); //  c: both miss (case 4), not cached: NVM; 2MB TLB = S1
    t.one(P1, 2, AccessKind::Load); // d: 4KB hit, S0 not held (case 2)
    t.one(P2, 0, AccessKind::Load); // e: both miss (case 4), cached: pointer; 4KB TLB = P2
    t.one(P1, 3, AccessKind::Load); // f: 4KB miss, 2MB hit (case 3), cached: pointer
    t.one(5, 0, AccessKind::Load); //  g: 4KB miss, 2MB hit (case 3), not cached: NVM
    sim.batch(&t.take()).expect("run");
    let c = sim.counters();
    let d = |k: &str| delta(&c, &before, k);
    assert_eq!(d("rainbow.case1_4k_hit_2m_hit"), 1);
    assert_eq!(d("rainbow.case2_4k_hit_2m_miss"), 1);
    assert_eq!(d("rainbow.case3_4k_miss_2m_hit"), 2);
    assert_eq!(d("rainbow.case4_4k_miss_2m_miss"), 3);
    assert_eq!(d("rainbow.remaps"), 3, "a, e, f follow the pointer");
    // Both copies (P1 and P2) reached by a translation at last.
    assert_eq!((c["rainbow.copies_made"], c["rainbow.copies_used"]), (2, 2));
    assert_eq!(d("walker.walks"), 3);
    // Costs: 3 pointer reads at the NVM read latency; bitmap lookups (all hits: S0 and S1 fill
    // the two entries) for the 3 pointers and the 2 NVM reads (c, g), 9 cycles each.
    assert_eq!(d("hybrid.cycles.pointer"), 3 * 200);
    assert_eq!(d("hybrid.nvm.meta_reads"), 3);
    assert_eq!(d("hybrid.cycles.bitmap"), 5 * 9);
    assert_eq!(d("rainbow.bitmap_cache.lookups"), 5);
    assert_eq!(d("rainbow.bitmap_cache.misses") + d("rainbow.bitmap_cache.walk_fill_misses"), 0);
    // Data: a, b, d, e, f from the DRAM copies, c and g from NVM.
    assert_eq!(d("hybrid.dram.reads") - d("hybrid.dram.walk_reads"), 5);
    assert_eq!(d("hybrid.nvm.reads"), 2);
    assert_eq!(d("hybrid.cycles.memory_reads"), 5 * 100 + 2 * 200);
    assert_eq!(d("tlb.l1-4k.fills"), 3, "each pointer followed builds a 4KB entry");
    sim.check_invariants().expect("invariants");
}

#[test]
fn a_superpage_hit_above_yields_to_the_4kb_entry_below() {
    // An L2 TLB (8 entries, 4KB and 2MB, 5 cycles) below the split L1s: the 4KB side and the
    // 2MB side are probed in parallel level by level, so a superpage hit at L1 for a cached
    // page whose 4KB entry is in L2 takes the 4KB entry (case 1, 5 cycles), not the pointer.
    let l2 = "[[tlb]]\nname = \"l2\"\nlevel = 2\nrole = \"data\"\nentries = 8\nways = 8\npage_sizes = [\"4KB\", \"2MB\"]\nlatency = 5\n[[cache]]";
    let text = text(640, "").replacen("[[cache]]", l2, 1);
    let mut sim = Simulator::new(&Config::from_toml("l2", &text, &[]).expect("config")).expect("sim");
    let mut t = Trace::new();
    warm(&mut t);
    sim.batch(&t.take()).expect("run");
    let before = sim.counters();
    // L1: 4KB empty, 2MB = S1; L2 holds S0 and S1.
    t.one(P1, 0, AccessKind::Load); // a: L2's S0 (case 3): pointer; P1's 4KB entry to L1 and L2
    t.one(P2, 0, AccessKind::Load); // b: L1's S0 (case 3), P2 not in L2 either: pointer
    t.one(P1, 1, AccessKind::Load); // c: L1's S0, P1's 4KB entry in L2: case 1, 5 cycles
    t.one(P1, 2, AccessKind::Load); // d: L1's 4KB entry (case 1)
    sim.batch(&t.take()).expect("run");
    let c = sim.counters();
    let d = |k: &str| delta(&c, &before, k);
    assert_eq!(d("rainbow.case1_4k_hit_2m_hit"), 2);
    assert_eq!(d("rainbow.case3_4k_miss_2m_hit"), 2);
    assert_eq!(d("rainbow.remaps"), 2);
    assert_eq!(d("rainbow.4k_hits_below_superpage"), 1);
    assert_eq!(d("hybrid.cycles.tlb4k"), 5);
    assert_eq!(d("hybrid.cycles.pointer"), 2 * 200);
    assert_eq!(d("walker.walks"), 0);
    sim.check_invariants().expect("invariants: the hit below is not counted as an L2 lookup");
}

#[test]
fn bitmap_cache_hits_and_misses() {
    // One bitmap entry, a 2MB TLB of two entries; no migration (checks far apart).
    let text = text(1 << 40, "")
        .replace("bitmap_cache_entries = 2", "bitmap_cache_entries = 1")
        .replace("bitmap_cache_ways = 2", "bitmap_cache_ways = 1");
    let text = text.replacen(
        "entries = 1\nways = 1\npage_sizes = [\"2MB\"]",
        "entries = 2\nways = 2\npage_sizes = [\"2MB\"]",
        1,
    );
    let cfg = Config::from_toml("bitmap", &text, &[]).expect("config");
    let mut t = Trace::new();
    t.one(P1, 0, AccessKind::Load); // walk S0: fill misses (a bitmap load); NVM read: lookup hits
    t.one(Q, 0, AccessKind::Load); //  walk S1: fill misses, evicts S0; lookup hits
    t.one(P1, 1, AccessKind::Load); // 2MB hit on S0: NVM read: lookup misses (S1 held)
    t.one(P1, 1, AccessKind::Load); // a cache hit: no memory access, no lookup
    t.one(Q, 1, AccessKind::Load); //  2MB hit on S1: lookup misses
    let (s, c) = common::run(Simulator::new(&cfg).expect("sim"), &[t.take()]);
    assert_eq!(c["rainbow.bitmap_cache.walk_fills"], 2);
    assert_eq!(c["rainbow.bitmap_cache.walk_fill_misses"], 2);
    assert_eq!(c["rainbow.bitmap_cache.lookups"], 4);
    assert_eq!(c["rainbow.bitmap_cache.misses"], 2);
    // Every miss loads a 64-byte bitmap from DRAM (100 cycles); every lookup costs 9.
    assert_eq!(c["hybrid.dram.meta_reads"], 4);
    assert_eq!(c["hybrid.cycles.bitmap"], 4 * 100 + 4 * 9);
    let d = s.derived(&c);
    // Energy: the bitmap loads are DRAM reads (10 pJ each) besides the data and walk reads.
    let dram_reads = (c["hybrid.dram.reads"] + 4) as f64;
    assert_eq!(d["hybrid.energy.dram.dynamic_nj"], dram_reads * 10.0 / 1e3);
}

#[test]
fn a_clean_copy_goes_back_for_a_hotter_page_with_a_4kb_shootdown() {
    // Intervals 2 to 4 cache S1's pages, 170 or so at a time (4 passes: 256 reads each,
    // benefit 25,600 - 19,899 = 5,701; S1's stage-1 count stays below the 2-byte counter's
    // 65,535, so S1 stays the hot superpage); interval 4 fills DRAM, and S0 (5 passes over 250
    // pages: 80,000, saturated at 65,535) is hotter. Interval 5: 10 pages of S0 (5 passes:
    // 32,000 - 19,899 = 12,101) each evict the oldest clean copy: a remap only (the first 8
    // bytes written back, one NVM line) and a shootdown of its 4KB entries.
    let check = 1 << 17;
    let mut t = Trace::new();
    t.passes(SP, 1, AccessKind::Load);
    t.pad(check);
    for (lo, hi) in [(0, 170), (170, 340), (340, 512)] {
        for p in lo..hi {
            t.passes(SP + p, 4, AccessKind::Load);
        }
        if hi == 512 {
            for p in 0..250 {
                t.passes(p, 5, AccessKind::Load);
            }
        }
        t.pad(check);
    }
    let mut sim = Simulator::new(&cfg(check, "")).expect("sim");
    sim.batch(&t.take()).expect("run");
    let before = sim.counters();
    assert_eq!(before["epoch.rainbow.intervals"], 4);
    assert_eq!(before["rainbow.monitored_superpages"], 1);
    let full = before["rainbow.cached_pages"];
    assert!(full > 500 && full < 512, "every DRAM frame the page tables left: {full}");
    assert_eq!(full + before["epoch.rainbow.demotions_clean"], before["epoch.rainbow.promotions"]);
    for p in 0..10 {
        t.passes(p, 5, AccessKind::Load);
    }
    t.pad(check);
    sim.batch(&t.take()).expect("run");
    let c = sim.counters();
    let d = |k: &str| delta(&c, &before, k);
    assert_eq!(d("epoch.rainbow.promotions"), 10);
    assert_eq!(d("epoch.rainbow.demotions_clean"), 10);
    assert_eq!(d("epoch.rainbow.demotions_dirty"), 0);
    assert_eq!(d("epoch.rainbow.shootdowns"), 10);
    assert_eq!(d("hybrid.cycles.shootdown"), 10 * 1000);
    // 10 pointers written, 10 first-8-bytes restored; 10 copies in, none out.
    assert_eq!(d("hybrid.nvm.meta_writes"), 20);
    assert_eq!(d("hybrid.nvm.copy_reads"), 10 * 64);
    assert_eq!(d("hybrid.dram.copy_reads"), 0);
    assert_eq!(c["rainbow.cached_pages"], full, "DRAM stays full");
    assert_eq!(c["epoch.rainbow.threshold_cycles"], 0, "one way only: the threshold stays");
    sim.check_invariants().expect("invariants");
    sim.os().check().expect("OS invariants");
}

/// Rounds over 400 pages of 3 superpages, the set shifting from round to round, most stored
/// to: more hot pages than DRAM holds.
fn pressure(seed: u64) -> Batch {
    let mut t = Trace::new();
    let mut x = seed;
    for r in 0..8u64 {
        for i in 0..400u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let page = (i % 3) * SP + (i / 3 + r * 30) % SP;
            let kind = if x >> 62 != 0 { AccessKind::Store } else { AccessKind::Load };
            t.passes(page, 4, kind);
        }
    }
    t.take()
}

#[test]
fn pressure_conserves_pages_respects_dram_and_is_deterministic() {
    let b = pressure(7);
    let cfg = Config::from_toml("p", &text(400 * 4 * 64, "").replace("top_superpages = 1", "top_superpages = 3"), &[])
        .expect("config");
    let (s1, c1) = common::run(Simulator::new(&cfg).expect("sim"), std::slice::from_ref(&b));
    let (s2, c2) = common::run(Simulator::new(&cfg).expect("sim"), std::slice::from_ref(&b));
    assert_eq!(c1, c2, "deterministic");
    assert_eq!(s1.derived(&c1), s2.derived(&c2));
    let p = c1["epoch.rainbow.promotions"];
    let (clean, dirty) = (c1["epoch.rainbow.demotions_clean"], c1["epoch.rainbow.demotions_dirty"]);
    assert!(p > 512 && clean + dirty > 0, "DRAM fills and copies go back: {p} in, {clean} + {dirty} out");
    assert!(dirty > 0, "stored-to copies are written back");
    // Every page is in exactly one kind: cached pages in DRAM (their copy), the rest in NVM;
    // DRAM never holds more copies than its frames; the OS counts the copies' frames in use.
    assert_eq!(c1["rainbow.cached_pages"], p - clean - dirty);
    assert!(c1["rainbow.cached_pages"] <= 512);
    assert_eq!(c1["epoch.rainbow.dram_clean_pages"] + c1["epoch.rainbow.dram_dirty_pages"], c1["rainbow.cached_pages"]);
    s1.os().check().expect("OS invariants: mapped + tables + copies = frames in use");
    // Copies: each caching NVM -> DRAM, each dirty uncaching DRAM -> NVM, 64 lines each.
    assert_eq!(c1["hybrid.nvm.copy_reads"], 64 * p);
    assert_eq!(c1["hybrid.dram.copy_reads"], 64 * dirty);
    assert_eq!(c1["hybrid.nvm.meta_writes"], p + clean, "pointers, and the clean restores");
    // The superpages were never splintered nor moved.
    for sp in 0..3u64 {
        let (pfn, size) = s1.os().lookup(BASE + (sp << 21)).expect("mapped");
        assert_eq!((s1.os().zone_of(pfn), size), (1, xlat_core::config::PageSize::Size2M));
    }
    assert_eq!(c1["os.faults_4k"], 0);
    assert!(c1["epoch.rainbow.threshold_changes"] > 0, "two-way traffic raises the threshold");
}

#[test]
fn bad_rainbow_input_is_one_sentence_each() {
    let e = |t: String| Config::from_toml("bad", &t, &[]).expect_err("must fail").0;
    let m = e(text(640, "").replace("top_superpages = 1", "top_superpages = 0"));
    assert!(m.contains("hybrid.top_superpages = 0 must be at least 1") && !m.contains('\n'), "{m}");
    let m = e(text(640, "").replace("bitmap_cache_entries = 2", "bitmap_cache_entries = 3"));
    assert!(m.contains("bitmap_cache_entries = 3 must be a positive multiple of hybrid.bitmap_cache_ways = 2"), "{m}");
    let m = e(text(640, "").replace("policy = \"thp\"", "policy = \"4k\""));
    assert!(m.contains("needs os.policy = \"thp\""), "{m}");
    let m = e(text(640, "counting = \"tlb\""));
    assert!(m.contains("counts at the memory controller"), "{m}");
    let m = e(text(640, "").replace("write_weight = 3", "write_weight = 0"));
    assert!(m.contains("hybrid.write_weight = 0 must be at least 1"), "{m}");
    let m = e(text(640, "").replace("read_latency = 200", "read_latency = -1"));
    assert!(m.contains("read_latency") && !m.contains('\n'), "{m}");
}
