//! Opening any source of events from a spec string: a synthetic workload, an imported foreign
//! trace, a text trace or an xlat trace file.
//!
//! This module depends on every source and no source depends on it: the [`EventSource`] trait
//! they implement lives in [`crate::event_source`] (re-exported here, as are [`collect`] and
//! [`FileSource`]).

use crate::error::Result;
pub use crate::event_source::{collect, EventSource};
pub use crate::reader::FileSource;

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
