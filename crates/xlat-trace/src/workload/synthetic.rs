//! A synthetic workload as an [`EventSource`]: the generator's events cut into batches, after
//! the emulated process's setup syscalls and before its `exit`.

use super::emit::{Emit, Generator, Threads, TID};
use super::process::Proc;
use crate::error::Result;
use crate::event::{Batch, SideBody, SideEvent, Syscall, SyscallKind};
use crate::event_source::{EventSource, WORKLOAD_BATCH};
use crate::format::Header;

/// Accesses per batch (see [`WORKLOAD_BATCH`] for why this many).
const BATCH: usize = WORKLOAD_BATCH;

/// A synthetic workload as an [`EventSource`].
pub struct Synthetic {
    header: Header,
    gen: Box<dyn Generator>,
    pending: Vec<(u64, Syscall)>,
    target: u64,
    emitted: u64,
    threads: Threads,
    finished: bool,
    /// Events the generator emitted beyond the last batch, which start the next one.
    spill: Batch,
}

impl Synthetic {
    /// `target` accesses of `gen`, after the syscalls `proc` made while the generator was set
    /// up; the generator starts as thread [`TID`], at the count those syscalls reached.
    pub(crate) fn new(header: Header, gen: Box<dyn Generator>, proc: Proc, target: u64) -> Synthetic {
        Synthetic {
            header,
            gen,
            pending: proc.syscalls,
            target,
            emitted: 0,
            threads: Threads::new(TID, proc.icount),
            finished: false,
            spill: Batch::default(),
        }
    }

    pub fn accesses(&self) -> u64 {
        self.target
    }

    /// Move what `batch` holds beyond its first `keep` accesses to the spill buffer, and drop
    /// what lies beyond the trace's last access (`total_left` accesses from the batch's start).
    /// Side events placed right after access `keep - 1` stay in the batch, at its end.
    fn split(&mut self, batch: &mut Batch, keep: usize, total_left: usize) {
        for i in keep..batch.len().min(total_left) {
            self.spill.push_access(batch.access(i));
        }
        let first_moved = batch.side.partition_point(|s| s.pos as usize <= keep);
        for s in batch.side.drain(first_moved..) {
            if s.pos as usize <= total_left {
                self.spill.side.push(SideEvent { pos: s.pos - keep as u32, ..s });
            }
        }
        batch.addr.truncate(keep);
        batch.icount.truncate(keep);
        batch.tid.truncate(keep);
        batch.size.truncate(keep);
        batch.kind.truncate(keep);
    }

    /// The emulated program's `exit`, by the thread of the trace's last access (or the running
    /// thread if `batch` has no access), 100 instructions after that thread's last event here.
    fn exit(&self, batch: &mut Batch) {
        let t = batch.tid.last().copied().unwrap_or(self.threads.tid());
        let last_access = batch.tid.iter().rposition(|&x| x == t).map(|i| batch.icount[i]);
        let last_side = batch.side.iter().filter(|s| s.tid == t).map(|s| s.icount).max();
        let ic = last_access.max(last_side).unwrap_or_else(|| self.threads.icount_of(t)) + 100;
        let exit = Syscall { kind: SyscallKind::Exit, args: [0; 6], ret: 0 };
        batch.push_side(t, ic, SideBody::Syscall(exit));
    }
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
        // Events left over from the previous call come first.
        batch.append(&self.spill);
        self.spill.clear();
        while batch.len() < BATCH && self.emitted + (batch.len() as u64) < self.target {
            let want = (BATCH - batch.len()).min((self.target - self.emitted) as usize - batch.len());
            let before = batch.len();
            self.gen.fill(&mut Emit::new(batch, &mut self.threads), want);
            assert!(batch.len() > before, "a workload generator emitted no access");
        }
        let total_left = (self.target - self.emitted) as usize;
        let keep = total_left.min(batch.len()).min(BATCH);
        if batch.len() > keep {
            self.split(batch, keep, total_left);
        }
        self.emitted += batch.len() as u64;
        if self.emitted >= self.target && self.spill.has_no_events() {
            self.exit(batch);
            self.finished = true;
        }
        Ok(true)
    }

    fn progress(&self) -> (u64, Option<u64>) {
        (self.emitted, Some(self.target))
    }
}
