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
/// The `format` every header names.
pub const FORMAT_NAME: &str = "xlat-trace";

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
    FORMAT_NAME.to_string()
}

impl Header {
    pub fn new(producer: impl Into<String>) -> Header {
        Header { format: format_name(), producer: producer.into(), ..Header::default() }
    }

    /// Parse a header's JSON: unknown fields are refused, and `format` must be
    /// [`FORMAT_NAME`]. `format_required`: whether the JSON must name it (a binary trace's
    /// header must; a text trace's may leave it out, as hand-written ones do). Errors are one
    /// sentence without the file's name.
    pub fn from_json(json: &[u8], format_required: bool) -> Result<Header, String> {
        let header: Header = serde_json::from_slice(json).map_err(|e| format!("header JSON is invalid ({e})"))?;
        if format_required {
            /// Only whether the field is there (the header parsed, so it is a string).
            #[derive(Deserialize)]
            struct Probe {
                format: Option<serde::de::IgnoredAny>,
            }
            let probe: Probe = serde_json::from_slice(json).map_err(|e| format!("header JSON is invalid ({e})"))?;
            if probe.format.is_none() {
                return Err(format!("the header names no format (it must hold \"format\": \"{FORMAT_NAME}\")"));
            }
        }
        if header.format != FORMAT_NAME {
            // Quoted with its escapes (one line whatever it holds), and cut if long.
            let shown: String = header.format.chars().take(64).collect();
            let more = if shown.len() < header.format.len() { "..." } else { "" };
            return Err(format!("the header names the format {shown:?}{more}, not \"{FORMAT_NAME}\""));
        }
        Ok(header)
    }
}

/// Per-thread totals kept in the footer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadTotals {
    pub tid: u32,
    pub accesses: u64,
    /// Largest instruction count seen on this thread (its duration in instructions).
    pub instructions: u64,
}

/// Totals written at the end of a complete trace. A reader checks every field against the
/// blocks it read (fields it does not know are refused).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Footer {
    pub accesses: u64,
    pub side_events: u64,
    pub blocks: u64,
    pub threads: Vec<ThreadTotals>,
}

/// Where the per-thread totals an end record (or text end line) states, `said`, first differ
/// from those of the events read, `held` (sorted by thread id, one entry per thread with an
/// access or a side event): one sentence naming the thread, the figure and both values, or
/// `None` if they are equal. `who` names the record ("the end record").
pub(crate) fn threads_disagreement(who: &str, said: &[ThreadTotals], held: &[ThreadTotals]) -> Option<String> {
    let mut said: Vec<&ThreadTotals> = said.iter().collect();
    said.sort_by_key(|t| t.tid);
    if let Some(w) = said.windows(2).find(|w| w[0].tid == w[1].tid) {
        return Some(format!("{who} lists thread {} twice", w[0].tid));
    }
    let (mut s, mut h) = (said.into_iter().peekable(), held.iter().peekable());
    loop {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let order = match (s.peek(), h.peek()) {
            (None, None) => return None,
            (Some(_), None) => Less,
            (None, Some(_)) => Greater,
            (Some(a), Some(b)) => a.tid.cmp(&b.tid),
        };
        match order {
            Less => {
                let a = s.next()?;
                return Some(format!("{who} lists thread {}, which has no events in the trace", a.tid));
            }
            Greater => {
                let b = h.next()?;
                let what = if b.accesses > 0 {
                    format!("which made {} accesses in the trace", b.accesses)
                } else {
                    "which has side events in the trace".to_string()
                };
                return Some(format!("{who} does not list thread {}, {what}", b.tid));
            }
            Equal => {
                let (a, b) = (s.next()?, h.next()?);
                if a.accesses != b.accesses {
                    return Some(format!(
                        "{who} says thread {} made {} accesses but the trace holds {}",
                        a.tid, a.accesses, b.accesses
                    ));
                }
                if a.instructions != b.instructions {
                    return Some(format!(
                        "{who} says thread {}'s largest instruction count is {} but the trace's is {}",
                        a.tid, a.instructions, b.instructions
                    ));
                }
            }
        }
    }
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
