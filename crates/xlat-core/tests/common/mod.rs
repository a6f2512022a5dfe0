//! What the integration tests share: presets, syscalls, a mixed trace, a run to the end.
#![allow(dead_code)] // (each test binary uses its own part)

use xlat_core::config::Config;
use xlat_core::{presets, Simulator};
use xlat_trace::{Access, AccessKind, Batch, Marker, SideBody, Syscall, SyscallKind};

pub fn preset(name: &str, sets: &[&str]) -> Config {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Config::from_toml(name, presets::get(name).expect("preset"), &sets).expect("valid")
}

pub fn mmap(b: &mut Batch, addr: u64, len: u64, flags: u64) {
    let s = Syscall { kind: SyscallKind::Mmap, args: [0, len, 3, flags, u64::MAX, 0], ret: addr as i64 };
    b.push_side(1, 0, SideBody::Syscall(s));
}

/// A munmap before the batch's next access.
pub fn munmap(b: &mut Batch, addr: u64, len: u64) {
    let s = Syscall { kind: SyscallKind::Munmap, args: [addr, len, 0, 0, 0, 0], ret: 0 };
    b.push_side(1, b.len() as u64, SideBody::Syscall(s));
}

pub const G: u64 = 1 << 30;
pub const ANON: u64 = 0x22;

/// `n` loads, stores and fetches over 4KB pages (2 GiB anonymous), 2MB pages (64 MiB hugetlb)
/// and 1GB pages (`huge1g` bytes of hugetlb), half of them near a recent address (TLB and memo
/// hits), the rest anywhere (walks through every cache level), in several batches; with
/// `markers`, IPC and phase markers now and then. Instruction counts grow by 1-3.
pub fn mixed_trace(n: u64, huge1g_bytes: u64, markers: bool) -> Vec<Batch> {
    let (anon, huge2m, huge1g) = (0x7000_0000_0000u64, 0x7100_0000_0000u64, 0x7200_0000_0000u64);
    let regions = [(anon, 2 * G), (huge2m, 64 << 20), (huge1g, huge1g_bytes)];
    let mut batches = vec![Batch::default()];
    mmap(&mut batches[0], anon, 2 * G, ANON);
    mmap(&mut batches[0], huge2m, 64 << 20, ANON | 0x40000 | (21 << 26));
    mmap(&mut batches[0], huge1g, huge1g_bytes, ANON | 0x40000 | (30 << 26));
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let (mut recent, mut ic) = (anon, 0u64);
    for i in 0..n {
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
        if i % 25_000 == 0 {
            batches.push(Batch::default());
        }
        let b = batches.last_mut().expect("a batch");
        if markers && i % 997 == 0 {
            b.push_side(1, ic, SideBody::Marker(Marker::IpcSend { peer: 2, bytes: 64 }));
        }
        if markers && i % 4999 == 0 {
            b.push_side(1, ic, SideBody::Marker(Marker::Phase { id: 1, name: "p".into() }));
        }
        ic += 1 + (x >> 30) % 3;
        b.push_access(Access { addr: addr & !7, icount: ic, tid: 1, size: 8, kind });
    }
    batches
}

pub fn run(mut s: Simulator, batches: &[Batch]) -> (Simulator, std::collections::BTreeMap<String, u64>) {
    for b in batches {
        s.batch(b).expect("simulate");
    }
    s.check_invariants().expect("invariants");
    let c = s.counters();
    (s, c)
}

/// The hand-derivation machine of tests/hashed.rs and tests/virt.rs, named `name`: 4 GiB, a
/// 1-entry TLB for every page size (each access to a new page walks), no caches (each load costs
/// `memory.dram_latency` = 100 cycles), walker latency 0; `os` is more of the `[os]` table, and
/// `extra` more TOML after it (the design's tables).
pub fn walk_machine(name: &str, os: &str, extra: &str) -> Config {
    let text = format!(
        r#"
name = "{name}"
[os]
{os}
[memory]
size = "4GiB"
dram_latency = 100
[[tlb]]
name = "l1"
level = 1
role = "unified"
entries = 1
ways = 1
page_sizes = ["4KB", "2MB", "1GB"]
[walker]
latency = 0
{extra}
"#
    );
    Config::from_toml(name, &text, &[]).expect("valid")
}

/// The tiny hybrid memory of tests/hybrid.rs and tests/rainbow.rs: 2MiB of DRAM (latency 100,
/// 10/20 pJ, 1000 mW) and `nvm` of NVM (read 200, write 500, 30/100 pJ, no static power), data
/// through the caches.
pub fn tiny_memory(nvm: &str) -> String {
    format!(
        r#"[memory]
max_order = 9
[[memory.kinds]]
name = "dram"
size = "2MiB"
read_latency = 100
write_latency = 100
read_energy_pj = 10.0
write_energy_pj = 20.0
static_power_mw = 1000.0
[[memory.kinds]]
name = "nvm"
size = "{nvm}"
read_latency = 200
write_latency = 500
read_energy_pj = 30.0
write_energy_pj = 100.0
static_power_mw = 0.0
[sim]
data_through_caches = true
"#
    )
}
