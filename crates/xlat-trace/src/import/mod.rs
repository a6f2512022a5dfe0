//! Events from other tools: the xlat QEMU plugin's raw stream (and the recorder that runs a
//! program under QEMU with it), Valgrind lackey text, ChampSim binary traces, and DynamoRIO
//! drmemtrace offline traces.
//!
//! Each importer is an [`EventSource`](crate::event_source::EventSource) that streams in bounded memory and
//! rejects malformed input with an error naming the byte offset. [`crate::source::open`] accepts
//! them as `lackey:PATH`, `champsim:PATH`, `drmemtrace:PATH` and `qemu-raw:PATH`.

pub mod champsim;
pub mod drmemtrace;
pub mod lackey;
pub mod qemu;
mod qemu_paths;

use crate::error::{Error, Result};
use crate::event_source::EventSource;

/// Open an importer spec (`lackey:PATH[?ifetch=1]`, `champsim:PATH[?ifetch=1]`,
/// `drmemtrace:PATH[?ifetch=1]`, `qemu-raw:PATH`), or `None` when `spec` names no importer.
pub fn open(spec: &str) -> Option<Result<Box<dyn EventSource>>> {
    let (kind, rest) = spec.split_once(':')?;
    let src: Result<Box<dyn EventSource>> = match kind {
        "lackey" => {
            let (path, opts) = split_options(rest);
            ifetch_option("lackey", opts, spec)
                .and_then(|i| lackey::LackeySource::open(path, i).map(|s| Box::new(s) as Box<dyn EventSource>))
        }
        "champsim" => {
            let (path, opts) = split_options(rest);
            ifetch_option("champsim", opts, spec)
                .and_then(|i| champsim::ChampSimSource::open(path, i).map(|s| Box::new(s) as Box<dyn EventSource>))
        }
        "drmemtrace" => {
            let (path, opts) = split_options(rest);
            ifetch_option("drmemtrace", opts, spec)
                .and_then(|i| drmemtrace::DrMemtraceSource::open(path, i).map(|s| Box::new(s) as Box<dyn EventSource>))
        }
        "qemu-raw" => qemu::RawSource::open(rest).map(|s| Box::new(s) as _),
        _ => return None,
    };
    Some(src)
}

/// The importer option `ifetch=0|1` (the only one lackey, ChampSim and drmemtrace know); none:
/// off.
fn ifetch_option(kind: &str, opts: Option<&str>, spec: &str) -> Result<bool> {
    match opts {
        None => Ok(false),
        Some("ifetch=1") | Some("ifetch=on") | Some("ifetch=true") => Ok(true),
        Some("ifetch=0") | Some("ifetch=off") | Some("ifetch=false") => Ok(false),
        Some(o) => Err(Error::Import(format!("unknown option '{o}' in '{spec}' ({kind} knows ifetch=0|1)"))),
    }
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
