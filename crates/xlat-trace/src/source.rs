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
/// (`lackey:PATH[?ifetch=1]`, `champsim:PATH` raw/.xz/.gz, `drmemtrace:PATH`, `qemu-raw:PATH`; see
/// [`crate::import`]), a text trace (`.txt`), or otherwise an xlat trace file.
pub fn open(spec: &str) -> Result<Box<dyn EventSource>> {
    if spec.starts_with("workload:") {
        return Ok(Box::new(crate::workload::open(spec)?));
    }
    if let Some(src) = crate::import::open(spec) {
        return src;
    }
    if let Some(prefix) = unknown_prefix(spec) {
        return Err(crate::error::Error::Import(format!(
            "'{spec}' starts with '{prefix}:', which is no input kind xlat reads (workload:, lackey:, champsim:, drmemtrace:, qemu-raw:, or a trace file's path; a file whose name holds a colon is read when it exists)"
        )));
    }
    if crate::text::is_text_path(spec) {
        return Ok(Box::new(crate::text::TextSource::open(spec)?));
    }
    Ok(Box::new(FileSource::open(spec)?))
}

/// The `NAME` of a spec `NAME:REST` that looks like a prefix (letters, digits, `-`, `+`, `.`,
/// starting with a letter) and is not an existing file's path: `pin:foo.out` would be read as
/// a path and fail with "No such file or directory" instead of naming the prefix.
fn unknown_prefix(spec: &str) -> Option<&str> {
    let (name, _) = spec.split_once(':')?;
    let scheme = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.'));
    (scheme && name.len() > 1 && !std::path::Path::new(spec).exists()).then_some(name)
}
