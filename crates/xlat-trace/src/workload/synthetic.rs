//! A synthetic workload as an [`EventSource`]: the generator's accesses cut into batches, after
//! the emulated process's setup syscalls and before its `exit`.

use super::emit::{Emit, Generator, TID};
use super::process::Proc;
use crate::error::Result;
use crate::event::{Batch, SideBody, Syscall, SyscallKind};
use crate::event_source::{EventSource, WORKLOAD_BATCH};
use crate::format::Header;

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
    /// `target` accesses of `gen`, after the syscalls `proc` made while the generator was set up.
    pub(crate) fn new(header: Header, gen: Box<dyn Generator>, proc: Proc, target: u64) -> Synthetic {
        Synthetic {
            header,
            gen,
            pending: proc.syscalls,
            target,
            emitted: 0,
            icount: proc.icount,
            finished: false,
            spill: Batch::default(),
        }
    }

    pub fn accesses(&self) -> u64 {
        self.target
    }
}

impl EventSource for Synthetic {
    fn header(&self) -> &Header {
        &self.header
    }

    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool> {
        const BATCH: usize = WORKLOAD_BATCH;
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
        if self.emitted >= self.target && self.spill.has_no_events() {
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
