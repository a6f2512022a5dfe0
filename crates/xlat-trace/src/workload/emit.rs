//! What a workload's generator writes into: [`Emit`], and the [`Generator`] trait.
//!
//! A generator emits accesses, and may emit side events (syscalls, context switches, IPC
//! messages, phases) between them and run several threads, each with its own instruction count:
//! enough for, say, a client and a server in two address spaces that take turns, with an IPC
//! send, a context switch and an IPC receive at every turn.

use crate::event::{Access, AccessKind, Batch, Marker, SideBody, Syscall};

/// Thread id of a synthetic workload's first thread (the only one of the built-in workloads).
pub const TID: u32 = 1;

/// The threads of the emulated program, kept across batches: which one runs, and each one's
/// instruction count (retired instructions so far; it never decreases).
#[derive(Debug, Clone)]
pub struct Threads {
    tid: u32,
    icount: u64,
    /// The threads not running: (tid, instruction count), in order of first appearance.
    parked: Vec<(u32, u64)>,
}

impl Threads {
    /// Thread `tid` runs, at instruction count `icount`.
    pub fn new(tid: u32, icount: u64) -> Threads {
        Threads { tid, icount, parked: Vec::new() }
    }

    /// The running thread.
    pub fn tid(&self) -> u32 {
        self.tid
    }

    /// The running thread's instruction count.
    pub fn icount(&self) -> u64 {
        self.icount
    }

    /// Thread `tid`'s instruction count (0 for a thread that has not run yet).
    pub fn icount_of(&self, tid: u32) -> u64 {
        if tid == self.tid {
            return self.icount;
        }
        self.parked.iter().find(|t| t.0 == tid).map_or(0, |t| t.1)
    }

    /// Run thread `tid` from now on, from its own instruction count (0 if it is new).
    pub fn switch_to(&mut self, tid: u32) {
        if tid == self.tid {
            return;
        }
        let resumed = match self.parked.iter().position(|t| t.0 == tid) {
            Some(i) => std::mem::replace(&mut self.parked[i], (self.tid, self.icount)),
            None => {
                self.parked.push((self.tid, self.icount));
                (tid, 0)
            }
        };
        (self.tid, self.icount) = resumed;
    }
}

/// Appends events to a batch on behalf of the running thread, advancing its instruction count.
///
/// Every event carries the running thread's id and its count after the event's `insns`
/// instructions; a side event is placed at the current position, before the next access.
pub struct Emit<'a> {
    batch: &'a mut Batch,
    threads: &'a mut Threads,
}

impl<'a> Emit<'a> {
    pub(crate) fn new(batch: &'a mut Batch, threads: &'a mut Threads) -> Emit<'a> {
        Emit { batch, threads }
    }

    /// One access, `insns` instructions after the thread's previous event.
    #[inline(always)]
    pub fn access(&mut self, insns: u64, kind: AccessKind, addr: u64, size: u16) {
        self.threads.icount += insns;
        let (tid, icount) = (self.threads.tid, self.threads.icount);
        self.batch.push_access(Access { addr, icount, tid, size, kind });
    }
    #[inline(always)]
    pub fn load(&mut self, insns: u64, addr: u64) {
        self.access(insns, AccessKind::Load, addr, 8)
    }
    #[inline(always)]
    pub fn store(&mut self, insns: u64, addr: u64) {
        self.access(insns, AccessKind::Store, addr, 8)
    }

    /// `insns` instructions without an access or other event.
    pub fn advance(&mut self, insns: u64) {
        self.threads.icount += insns;
    }

    /// A side event `insns` instructions after the thread's previous event, before the next
    /// access.
    pub fn side(&mut self, insns: u64, body: SideBody) {
        self.threads.icount += insns;
        self.batch.push_side(self.threads.tid, self.threads.icount, body);
    }
    pub fn syscall(&mut self, insns: u64, s: Syscall) {
        self.side(insns, SideBody::Syscall(s))
    }
    pub fn marker(&mut self, insns: u64, m: Marker) {
        self.side(insns, SideBody::Marker(m))
    }
    /// The CPU switches to address space `asid` ([`Marker::ContextSwitch`]).
    pub fn context_switch(&mut self, insns: u64, asid: u32) {
        self.marker(insns, Marker::ContextSwitch { asid })
    }
    pub fn ipc_send(&mut self, insns: u64, peer: u32, bytes: u64) {
        self.marker(insns, Marker::IpcSend { peer, bytes })
    }
    pub fn ipc_recv(&mut self, insns: u64, peer: u32, bytes: u64) {
        self.marker(insns, Marker::IpcRecv { peer, bytes })
    }
    pub fn phase(&mut self, insns: u64, id: u32, name: &str) {
        self.marker(insns, Marker::Phase { id, name: name.to_string() })
    }

    /// Run thread `tid` from now on (see [`Threads::switch_to`]): the following events are its.
    pub fn switch_thread(&mut self, tid: u32) {
        self.threads.switch_to(tid);
    }
    /// The running thread.
    pub fn tid(&self) -> u32 {
        self.threads.tid
    }
    /// The running thread's instruction count.
    pub fn icount(&self) -> u64 {
        self.threads.icount
    }

    /// Accesses in the batch so far (those of earlier calls included).
    pub fn len(&self) -> usize {
        self.batch.len()
    }
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }
}

/// A workload's generator: emits at least one access per call, roughly `want` of them, and any
/// side events between them (the caller cuts the result into batches and trims it to the
/// requested total of accesses).
pub trait Generator: Send {
    fn fill(&mut self, e: &mut Emit, want: usize);
}
