//! The one seam every consumer reads events through: trace files and synthetic workloads alike.

use crate::error::Result;
use crate::event::Batch;
use crate::format::{Footer, Header};
use crate::reader::TraceReader;
use std::fs::File;
use std::io::BufReader;

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
}

/// A trace file opened as an [`EventSource`].
pub struct FileSource {
    reader: TraceReader<BufReader<File>>,
    len: u64,
}

impl FileSource {
    pub fn open(path: &str) -> Result<FileSource> {
        let reader = TraceReader::open(path)?;
        let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        Ok(FileSource { reader, len })
    }
}

impl EventSource for FileSource {
    fn header(&self) -> &Header {
        self.reader.header()
    }
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool> {
        self.reader.next_batch(batch)
    }
    fn progress(&self) -> (u64, Option<u64>) {
        (self.reader.bytes_read(), Some(self.len))
    }
    fn footer(&self) -> Option<&Footer> {
        self.reader.footer()
    }
}

/// Open `spec`: `workload:NAME?k=v&...` for a synthetic workload, an imported foreign trace
/// (`lackey:PATH[?ifetch=1]`, `champsim:PATH` raw/.xz/.gz, `qemu-raw:PATH`; see
/// [`crate::import`]), a text trace (`.txt`), or otherwise an xlat trace file.
pub fn open(spec: &str) -> Result<Box<dyn EventSource>> {
    if spec.starts_with("workload:") {
        return Ok(Box::new(crate::workload::open(spec)?));
    }
    if let Some(src) = crate::import::open(spec) {
        return src;
    }
    if crate::text::is_text_path(spec) {
        return Ok(Box::new(crate::text::TextSource::open(spec)?));
    }
    Ok(Box::new(FileSource::open(spec)?))
}

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
