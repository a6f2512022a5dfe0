//! Events from other tools: the xlat QEMU plugin's raw stream (and the recorder that runs a
//! program under QEMU with it), Valgrind lackey text, and ChampSim binary traces.
//!
//! Each importer is an [`EventSource`](crate::event_source::EventSource) that streams in bounded memory and
//! rejects malformed input with an error naming the byte offset. [`crate::source::open`] accepts
//! them as `lackey:PATH`, `champsim:PATH` and `qemu-raw:PATH`.

pub mod champsim;
pub mod lackey;
pub mod qemu;
mod qemu_paths;

use crate::error::{Error, Result};
use crate::event_source::EventSource;

/// Open an importer spec (`lackey:PATH[?ifetch=1]`, `champsim:PATH`, `qemu-raw:PATH`), or `None`
/// when `spec` names no importer.
pub fn open(spec: &str) -> Option<Result<Box<dyn EventSource>>> {
    let (kind, rest) = spec.split_once(':')?;
    let src: Result<Box<dyn EventSource>> = match kind {
        "lackey" => {
            let (path, opts) = split_options(rest);
            let ifetch = match opts {
                None => Ok(false),
                Some("ifetch=1") | Some("ifetch=on") | Some("ifetch=true") => Ok(true),
                Some("ifetch=0") | Some("ifetch=off") | Some("ifetch=false") => Ok(false),
                Some(o) => Err(Error::Import(format!("unknown option '{o}' in '{spec}' (lackey knows ifetch=0|1)"))),
            };
            ifetch.and_then(|i| lackey::LackeySource::open(path, i).map(|s| Box::new(s) as Box<dyn EventSource>))
        }
        "champsim" => champsim::ChampSimSource::open(rest).map(|s| Box::new(s) as _),
        "qemu-raw" => qemu::RawSource::open(rest).map(|s| Box::new(s) as _),
        _ => return None,
    };
    Some(src)
}

/// `PATH?opts` -> (PATH, opts), unless the whole string is an existing path.
fn split_options(rest: &str) -> (&str, Option<&str>) {
    if std::path::Path::new(rest).exists() {
        return (rest, None);
    }
    match rest.rsplit_once('?') {
        Some((p, o)) => (p, Some(o)),
        None => (rest, None),
    }
}
