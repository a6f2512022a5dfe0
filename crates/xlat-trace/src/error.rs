//! Errors a user can cause (bad trace, bad workload spec, I/O). Each displays as one sentence.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("I/O error: {0}")]
    RawIo(#[from] std::io::Error),
    #[error("{0} is empty (0 bytes), not an xlat trace")]
    Empty(String),
    #[error("{0} is not an xlat trace (its first bytes are not the xlat magic)")]
    BadMagic(String),
    #[error("{what} uses trace format version {major}.{minor}, but this xlat reads versions {supported}.0 to {supported}.{supported_minor}; convert it with a matching xlat or upgrade xlat")]
    Version { what: String, major: u16, minor: u16, supported: u16, supported_minor: u16 },
    #[error("{what} is truncated: it ends after {accesses} accesses without the end-of-trace record (was the writer interrupted?)")]
    Truncated { what: String, accesses: u64 },
    #[error("{what} is corrupt at byte offset {offset}: {detail}")]
    Corrupt { what: String, offset: u64, detail: String },
    #[error("invalid workload '{spec}': {detail}")]
    Workload { spec: String, detail: String },
    #[error("invalid event: {0}")]
    InvalidEvent(String),
    /// Importing or recording failed for a reason stated in one sentence (bad importer option,
    /// QEMU could not be started, ...).
    #[error("{0}")]
    Import(String),
    #[error("{what} line {line}: {detail}")]
    Text { what: String, line: u64, detail: String },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source }
    }
}
