//! The one seam every consumer reads events through ([`EventSource`]), and how many accesses the
//! sources put in a batch.
//!
//! This module depends on no source: every source (trace files, text traces, importers,
//! workloads) implements the trait from here, and [`crate::source::open`], which picks a source
//! from a spec, depends on all of them.

use crate::error::Result;
use crate::event::Batch;
use crate::format::{Footer, Header};

/// A stream of events delivered in batches.
pub trait EventSource: Send {
    fn header(&self) -> &Header;
    /// Clear `batch` and fill it with the next events; `false` once the source is exhausted.
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool>;
    /// Work done and total work, in the source's own unit (bytes for files, accesses for
    /// workloads), for progress bars.
    fn progress(&self) -> (u64, Option<u64>);
    /// Totals of a finished file trace (workloads: none).
    fn footer(&self) -> Option<&Footer> {
        None
    }
    /// The file format and version read, with what it cannot verify (workloads: none), e.g.
    /// `"xlat 1.2"`, or `"text 1 (no end line: ...)"`.
    fn format(&self) -> Option<String> {
        None
    }
}

/// Accesses per batch of the synthetic workloads and of the text-trace reader.
///
/// The writer writes each batch as one block, so this size decides where a workload's blocks
/// end, and with it the bytes of its trace: a workload spec must give the same bytes on every
/// version (`docs/workloads.md`), so this stays 16,384. The text reader uses the same size so
/// that converting a workload to text and back writes the same blocks (and bytes) again.
pub const WORKLOAD_BATCH: usize = 16384;

/// Accesses per batch the importers (lackey, ChampSim, the QEMU raw stream) aim for.
///
/// Larger than [`WORKLOAD_BATCH`] because each batch becomes one block of the converted trace
/// and larger blocks compress better (zstd finds more matches in them), while one batch of 64 K
/// accesses still bounds an import's memory to a few MiB. (The QEMU recorder raises its own
/// target to nearly [`crate::format::MAX_BLOCK_ACCESSES`].)
pub const IMPORT_BATCH: usize = 1 << 16;

/// Read every batch that `next` yields into one batch, in order (side-event positions follow the
/// accesses): for tests and small traces. `next` is e.g. `|b| src.next_batch(b)`.
pub fn collect(mut next: impl FnMut(&mut Batch) -> Result<bool>) -> Result<Batch> {
    let mut all = Batch::default();
    let mut b = Batch::default();
    while next(&mut b)? {
        all.append(&b);
    }
    Ok(all)
}
