//! `cargo bench -p xlat-core --bench mach`: simulated references per second of the Mach 3.0
//! software-managed TLB (`[mach]`, configs/mach/) on a synthetic client/server trace with
//! address-space switches, built in memory after the contract of docs/mach.md: a client and
//! `XLAT_MACH_SERVERS` servers (default 4) in the chain client -> server_i -> ... -> server_N,
//! 30 random words of a 4MB table per process per IPC, code and stack accesses, the kernel's IPC
//! path (IPC structures and message buffers in kseg2, handler code in kseg0), and the
//! IpcSend / ContextSwitch / IpcRecv markers. The figure is the median of `XLAT_BENCH_REPS` runs
//! (default 5) over batches already built (simulation alone). `XLAT_MACH_CONFIGS=tlb-only,ptlb`
//! runs only those rows (`tlb-only/no-data`: tlb-only without data through the caches);
//! `XLAT_BENCH_ACCESSES` sets the trace's length (default 20M).

mod common;
use common::{env, median, thread_cpu};
use std::time::Instant;
use xlat_core::{sim, Config};
use xlat_trace::{Access, AccessKind, Batch, Marker, SideBody};

const KSEG0: u64 = 0xFFFF_8000_0000_0000;
const KSEG2: u64 = 0xFFFF_C000_0000_0000;
const CODE: u64 = 0x40_0000;
const TABLE: u64 = 0x1000_0000;
const MSG: u64 = 0x2000_0000;
const STACK: u64 = 0x7FFF_FFFF_0000;

struct Gen {
    batches: Vec<Batch>,
    ic: u64,
    x: u64,
    n: u64,
}

impl Gen {
    fn rand(&mut self) -> u64 {
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        self.x
    }
    fn batch(&mut self) -> &mut Batch {
        if self.batches.last().is_none_or(|b| b.len() >= 1 << 16) {
            self.batches.push(Batch::default());
        }
        self.batches.last_mut().expect("a batch")
    }
    fn acc(&mut self, va: u64, kind: AccessKind) {
        self.ic += 1;
        self.n += 1;
        let ic = self.ic;
        self.batch().push_access(Access { addr: va, icount: ic, tid: 1, size: 8, kind });
    }
    fn mark(&mut self, m: Marker) {
        let ic = self.ic;
        self.batch().push_side(1, ic, SideBody::Marker(m));
    }
    /// A process's work between IPCs: code, stack, 30 random words of its table, the message.
    fn user(&mut self) {
        for w in 0..30 {
            let off = (self.rand() % (4 << 20)) & !7;
            self.acc(CODE + (w % 4) * 0x1000 + (w * 64) % 4096, AccessKind::IFetch);
            self.acc(TABLE + off, AccessKind::Load);
            self.acc(STACK - 0x100 - (w % 2) * 0x1000, AccessKind::Store);
        }
        for w in 0..8 {
            self.acc(MSG + w * 8, AccessKind::Store);
        }
    }
    /// The IPC from `from` to `to`: the kernel path, then the switch.
    fn ipc(&mut self, from: u32, to: u32) {
        self.mark(Marker::IpcSend { peer: to, bytes: 64 });
        for i in 0..16 {
            self.acc(KSEG0 + 0x10_0000 + i * 64, AccessKind::IFetch);
        }
        for a in [from, to] {
            let s = KSEG2 + a as u64 * 0x1_0000;
            self.acc(s, AccessKind::Load);
            self.acc(s + 0x1000 + 8, AccessKind::Store);
        }
        for w in 0..8 {
            self.acc(KSEG2 + 0x1000_0000 + to as u64 * 0x2000 + w * 8, AccessKind::Store);
        }
        self.mark(Marker::ContextSwitch { asid: to });
        self.mark(Marker::IpcRecv { peer: from, bytes: 64 });
    }
}

fn trace(servers: u32, target: u64) -> Vec<Batch> {
    let mut g = Gen { batches: Vec::new(), ic: 0, x: 0x9E37_79B9_7F4A_7C15, n: 0 };
    g.mark(Marker::ContextSwitch { asid: 1 });
    while g.n < target {
        // The client picks server i; the chain runs to server N and replies back down it.
        let i = 2 + (g.rand() % servers as u64) as u32;
        let chain: Vec<u32> = std::iter::once(1).chain(i..=servers + 1).collect();
        for w in chain.windows(2) {
            g.user();
            g.ipc(w[0], w[1]);
        }
        for w in chain.windows(2).rev() {
            g.user();
            g.ipc(w[1], w[0]);
        }
    }
    g.batches
}

fn main() {
    let n = env("XLAT_BENCH_ACCESSES", 20_000_000);
    let reps = env("XLAT_BENCH_REPS", 5) as usize;
    let servers = env("XLAT_MACH_SERVERS", 4) as u32;
    let batches = trace(servers, n);
    let refs: u64 = batches.iter().map(|b| b.len() as u64).sum();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/mach");
    println!("Mach 3.0 software TLB: client + {servers} servers, {refs} references, median of {reps} runs");
    println!(
        "{:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "config", "wall", "cpu", "L1U", "kernel", "cascaded", "stlb hits", "prefetch"
    );
    println!("(M refs/s per wall second and per CPU second of the simulating thread)");
    let names = ["tlb-only", "stlb-1k", "stlb-4k", "stlb-2way", "ptlb", "ptlb+stlb", "tlb-only/no-data"];
    // XLAT_MACH_CONFIGS=a,b: only those rows (e.g. one configuration under callgrind).
    let only = std::env::var("XLAT_MACH_CONFIGS").unwrap_or_default();
    let only: Vec<&str> = only.split(',').filter(|s| !s.is_empty()).collect();
    for name in names.into_iter().filter(|n| only.is_empty() || only.contains(n)) {
        let file = name.split('/').next().expect("a name");
        let path = dir.join(format!("{file}.toml"));
        let text = std::fs::read_to_string(&path).expect("config");
        // "no-data": the data accesses do not go through the caches (only the handlers' loads).
        let sets = if name.ends_with("/no-data") { vec!["sim.data_through_caches=false".to_string()] } else { vec![] };
        let cfg = Config::from_toml(name, &text, &sets).expect("valid");
        let mut rates = Vec::new();
        let mut cpus = Vec::new();
        let mut last = None;
        for _ in 0..reps {
            let mut s = sim::Simulator::new(&cfg).expect("simulator");
            let (t, c0) = (Instant::now(), thread_cpu());
            for b in &batches {
                s.batch(b).expect("simulate");
            }
            rates.push(refs as f64 / t.elapsed().as_secs_f64() / 1e6);
            cpus.push(refs as f64 / (thread_cpu() - c0).max(1e-9) / 1e6);
            last = Some(s.counters());
        }
        let k = last.expect("ran");
        let g = |c: &str| k.get(c).copied().unwrap_or(0);
        println!(
            "{:<22} {:>9.1} {:>9.1} {:>9} {:>9} {:>9} {:>9} {:>9}",
            name,
            median(rates),
            median(cpus),
            g("mach.misses.l1u"),
            g("mach.kernel_misses"),
            g("mach.cascaded"),
            g("mach.stlb.hits"),
            g("mach.ptlb.prefetches")
        );
    }
}
