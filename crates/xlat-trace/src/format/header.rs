//! The file around the blocks: magic, versions, record tags and limits, the JSON header and
//! footer; and the access-kind letters of the text form.

use crate::event::AccessKind;
use serde::{Deserialize, Serialize};

pub const MAGIC: &[u8; 8] = b"XLATTRC\0";
pub const END_MAGIC: &[u8; 8] = b"XLATEND\0";
pub const VERSION_MAJOR: u16 = 1;
/// 1.1 added repeat records (side tag 3), which a 1.0 reader cannot skip; 1.2 numbers the
/// blocks (a u64 sequence number in each block record, covered by its checksum), so that blocks
/// reordered, repeated or dropped are reported as corruption.
pub const VERSION_MINOR: u16 = 2;
/// The first minor version whose block records carry a sequence number.
pub const SEQ_MINOR: u16 = 2;
pub const TAG_BLOCK: u8 = b'B';
pub const TAG_END: u8 = b'E';
/// Largest number of accesses in one block; writers split larger batches.
pub const MAX_BLOCK_ACCESSES: usize = 1 << 20;
/// Largest uncompressed block a reader accepts (guards against corrupt lengths).
pub const MAX_BLOCK_RAW: usize = 256 << 20;

/// Self-describing header, stored as JSON after the magic and version.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Always "xlat-trace".
    #[serde(default = "format_name")]
    pub format: String,
    /// Tool and version that wrote the trace, e.g. "xlat 0.1.0 workload".
    pub producer: String,
    /// The command line that produced the events (the traced program, or the workload spec).
    #[serde(default)]
    pub command: Vec<String>,
    /// The base page size the traced system used, in bytes (0 when unknown).
    #[serde(default)]
    pub page_size_hint: u64,
    /// Thread ids known when the trace started (the footer lists all threads seen).
    #[serde(default)]
    pub threads: Vec<u32>,
    /// Free-form producer metadata (workload parameters, tool versions, skip/max, ...).
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

fn format_name() -> String {
    "xlat-trace".to_string()
}

impl Header {
    pub fn new(producer: impl Into<String>) -> Header {
        Header { format: format_name(), producer: producer.into(), ..Header::default() }
    }
}

/// Per-thread totals kept in the footer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadTotals {
    pub tid: u32,
    pub accesses: u64,
    /// Largest instruction count seen on this thread (its duration in instructions).
    pub instructions: u64,
}

/// Totals written at the end of a complete trace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Footer {
    pub accesses: u64,
    pub side_events: u64,
    pub blocks: u64,
    pub threads: Vec<ThreadTotals>,
}

/// Parse an [`AccessKind`] letter of the text form.
pub fn kind_from_letter(c: &str) -> Option<AccessKind> {
    match c {
        "L" => Some(AccessKind::Load),
        "S" => Some(AccessKind::Store),
        "I" => Some(AccessKind::IFetch),
        _ => None,
    }
}
