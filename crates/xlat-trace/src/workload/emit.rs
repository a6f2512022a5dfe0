//! What a workload's generator writes into: [`Emit`], and the [`Generator`] trait.

use crate::event::{Access, AccessKind, Batch};

/// Thread id of the single thread of a synthetic workload.
pub const TID: u32 = 1;

/// Appends accesses to a batch, keeping the instruction count.
pub struct Emit<'a> {
    pub(crate) batch: &'a mut Batch,
    pub(crate) icount: &'a mut u64,
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
