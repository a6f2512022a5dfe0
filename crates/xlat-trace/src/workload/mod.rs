//! Synthetic workloads generated in-process, deterministic per seed.
//!
//! Each workload behaves like a small C program linked with glibc: it grows the heap with `brk`,
//! allocates its large arrays with `malloc` (which glibc serves with an anonymous `mmap` for
//! requests of 128 KiB and more, returning the mapping plus a 16-byte chunk header), and then
//! accesses them. The emitted syscalls make the trace's address space what a real run's would be.
//! Nothing of the virtual footprint is allocated here: addresses are computed, so a 64 GiB table
//! costs nothing.

mod bfs;
mod kernels;
pub mod params;
pub mod perm;

use crate::error::{Error, Result};
use crate::event::{Access, AccessKind, Batch, SideBody, Syscall, SyscallKind};
use crate::format::Header;
use crate::source::EventSource;
pub use params::{parse_size, ParamKind, ParamSpec, Params};

/// Thread id of the single thread of a synthetic workload.
pub const TID: u32 = 1;
/// Accesses per batch produced by workloads.
pub const BATCH: usize = 16384;

/// A workload's name, description and parameters (besides `accesses` and `seed`).
#[derive(Debug, Clone, Copy)]
pub struct WorkloadInfo {
    pub name: &'static str,
    pub help: &'static str,
    pub params: &'static [ParamSpec],
}

pub use params::COMMON as COMMON_PARAMS;

/// Every workload, in the order `xlat workloads` lists them.
pub fn catalog() -> &'static [WorkloadInfo] {
    &[kernels::GUPS, kernels::CHASE, kernels::STREAM, kernels::STRIDE, kernels::ZIPF, bfs::BFS]
}

/// Where the emulated process puts things (x86-64 Linux without ASLR).
const BRK_BASE: u64 = 0x5555_5556_0000;
const MMAP_TOP: u64 = 0x7fff_f7a0_0000;
/// glibc's default M_MMAP_THRESHOLD.
const MMAP_THRESHOLD: u64 = 128 << 10;

/// The emulated process: a heap grown with brk and anonymous mappings placed top-down.
pub struct Proc {
    brk: u64,
    heap_top: u64,
    mmap_next: u64,
    pub icount: u64,
    pub syscalls: Vec<(u64, Syscall)>,
    pub mapped: u64,
}

impl Proc {
    fn new() -> Proc {
        let mut p =
            Proc { brk: BRK_BASE, heap_top: BRK_BASE, mmap_next: MMAP_TOP, icount: 0, syscalls: Vec::new(), mapped: 0 };
        // glibc's first malloc: brk(0), then grow the main arena by 132 KiB.
        p.sys(SyscallKind::Brk, &[0], BRK_BASE as i64);
        p.grow_heap(0x21000);
        p
    }

    fn sys(&mut self, kind: SyscallKind, a: &[u64], ret: i64) {
        let mut args = [0u64; 6];
        args[..a.len()].copy_from_slice(a);
        self.icount += 150; // a syscall and its libc wrapper
        self.syscalls.push((self.icount, Syscall { kind, args, ret }));
    }

    fn grow_heap(&mut self, by: u64) {
        let new = self.heap_top + by;
        self.sys(SyscallKind::Brk, &[new], new as i64);
        self.heap_top = new;
    }

    /// `malloc(len)` as glibc serves it; returns the user pointer.
    pub fn malloc(&mut self, len: u64) -> u64 {
        if len >= MMAP_THRESHOLD {
            let map_len = (len + 16 + 4095) & !4095;
            let addr = self.mmap_next - map_len;
            self.mmap_next = addr;
            self.mapped += map_len;
            // PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, fd -1.
            self.sys(SyscallKind::Mmap, &[0, map_len, 3, 0x22, u64::MAX, 0], addr as i64);
            addr + 16
        } else {
            let p = (self.brk + 16 + 15) & !15;
            self.brk = p + len;
            if self.brk > self.heap_top {
                let need = (self.brk - self.heap_top + 0x20fff) & !0xfff;
                self.grow_heap(need);
            }
            p
        }
    }
}

/// Appends accesses to a batch, keeping the instruction count.
pub struct Emit<'a> {
    batch: &'a mut Batch,
    icount: &'a mut u64,
}

impl Emit<'_> {
    /// One access, `insns` instructions after the previous one.
    #[inline(always)]
    pub fn access(&mut self, insns: u64, kind: AccessKind, addr: u64, size: u16) {
        *self.icount += insns;
        self.batch.push_access(Access { addr, icount: *self.icount, tid: TID, size, kind });
    }
    #[inline(always)]
    pub fn load(&mut self, insns: u64, addr: u64) {
        self.access(insns, AccessKind::Load, addr, 8)
    }
    #[inline(always)]
    pub fn store(&mut self, insns: u64, addr: u64) {
        self.access(insns, AccessKind::Store, addr, 8)
    }
    pub fn len(&self) -> usize {
        self.batch.len()
    }
    pub fn is_empty(&self) -> bool {
        self.batch.len() == 0
    }
}

/// A workload's access generator: emits at least one access per call, roughly `want` of them
/// (the caller trims to the requested total).
pub trait Generator: Send {
    fn fill(&mut self, e: &mut Emit, want: usize);
}

/// A synthetic workload as an [`EventSource`].
pub struct Synthetic {
    header: Header,
    gen: Box<dyn Generator>,
    pending: Vec<(u64, Syscall)>,
    target: u64,
    emitted: u64,
    icount: u64,
    finished: bool,
    spill: Batch,
}

impl Synthetic {
    pub fn accesses(&self) -> u64 {
        self.target
    }
}

/// Parse a `workload:NAME?k=v` spec (the `workload:` prefix is optional).
pub fn open(spec: &str) -> Result<Synthetic> {
    let body = spec.strip_prefix("workload:").unwrap_or(spec);
    let (name, query) = body.split_once('?').unwrap_or((body, ""));
    let info = catalog().iter().find(|w| w.name == name).ok_or_else(|| Error::Workload {
        spec: spec.to_string(),
        detail: format!(
            "there is no workload named '{name}' (known: {})",
            catalog().iter().map(|w| w.name).collect::<Vec<_>>().join(", ")
        ),
    })?;
    let params = Params::parse(spec, name, info.params, query)?;
    let mut proc = Proc::new();
    let gen: Box<dyn Generator> = match name {
        "gups" => Box::new(kernels::Gups::new(&params, &mut proc)?),
        "chase" => Box::new(kernels::Chase::new(&params, &mut proc)?),
        "stream" => Box::new(kernels::Stream::new(&params, &mut proc)?),
        "stride" => Box::new(kernels::Stride::new(&params, &mut proc)?),
        "zipf" => Box::new(kernels::Zipf::new(&params, &mut proc)?),
        "bfs" => Box::new(bfs::Bfs::new(&params, &mut proc)?),
        _ => unreachable!("catalog and constructors agree"),
    };
    let canonical = params.canonical(name);
    let mut header = Header::new(format!("xlat {} workload", env!("CARGO_PKG_VERSION")));
    header.command = vec![canonical];
    header.page_size_hint = 4096;
    header.threads = vec![TID];
    header.metadata.insert("workload".into(), name.into());
    header.metadata.insert("params".into(), serde_json::Value::Object(params.to_json()));
    header.metadata.insert("mapped_bytes".into(), proc.mapped.into());
    Ok(Synthetic {
        header,
        gen,
        pending: proc.syscalls,
        target: params.int("accesses"),
        emitted: 0,
        icount: proc.icount,
        finished: false,
        spill: Batch::default(),
    })
}

impl EventSource for Synthetic {
    fn header(&self) -> &Header {
        &self.header
    }

    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool> {
        batch.clear();
        if self.finished {
            return Ok(false);
        }
        for (ic, sc) in self.pending.drain(..) {
            batch.push_side(TID, ic, SideBody::Syscall(sc));
        }
        // Accesses left over from the previous call come first.
        for i in 0..self.spill.len() {
            batch.push_access(self.spill.access(i));
        }
        self.spill.clear();
        while batch.len() < BATCH && self.emitted + (batch.len() as u64) < self.target {
            let want = (BATCH - batch.len()).min((self.target - self.emitted) as usize - batch.len());
            let before = batch.len();
            self.gen.fill(&mut Emit { batch, icount: &mut self.icount }, want);
            assert!(batch.len() > before, "a workload generator emitted nothing");
        }
        let keep = ((self.target - self.emitted) as usize).min(batch.len()).min(BATCH);
        // Move what overshoots this batch (or the total) to the spill buffer / drop it.
        if batch.len() > keep {
            let total_left = (self.target - self.emitted) as usize;
            for i in keep..batch.len().min(total_left) {
                self.spill.push_access(batch.access(i));
            }
            batch.addr.truncate(keep);
            batch.icount.truncate(keep);
            batch.tid.truncate(keep);
            batch.size.truncate(keep);
            batch.kind.truncate(keep);
        }
        self.emitted += batch.len() as u64;
        if self.emitted >= self.target && self.spill.is_empty() {
            let ic = batch.icount.last().copied().unwrap_or(self.icount) + 100;
            let exit = Syscall { kind: SyscallKind::Exit, args: [0; 6], ret: 0 };
            batch.push_side(TID, ic, SideBody::Syscall(exit));
            self.finished = true;
        }
        Ok(true)
    }

    fn progress(&self) -> (u64, Option<u64>) {
        (self.emitted, Some(self.target))
    }
}

/// Random number generator used by all workloads.
pub type Rng = rand_xoshiro::Xoshiro256PlusPlus;

pub fn rng(seed: u64, stream: u64) -> Rng {
    use rand::SeedableRng;
    Rng::seed_from_u64(seed ^ stream.wrapping_mul(0x9e3779b97f4a7c15))
}

/// Uniform integer in `[0, n)` (Lemire's multiply-shift, no division).
#[inline(always)]
pub fn below(r: u64, n: u64) -> u64 {
    ((r as u128 * n as u128) >> 64) as u64
}
