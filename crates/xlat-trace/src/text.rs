//! The plain text form of a trace, one event per line (see `docs/trace-format.md`):
//!
//! ```text
//! #xlat-text 3
//! #header {"format":"xlat-trace","producer":...}
//! A <tid> <icount> <L|S|I> <hex addr> <size>
//! S <tid> <icount> <syscall> <hex args...> <hex ret>
//! M <tid> <icount> ctx <asid> | ipc-send <peer> <bytes> | ipc-recv <peer> <bytes> | phase <id> <name>
//! #end {"accesses":...,"side_events":...,"threads":[...]}
//! ```
//!
//! Version 2 ends with the `#end` line (the totals, as the binary end record's), so that a cut
//! file is reported as truncated; version 1 files, without it, are still read. Version 3 writes
//! a syscall's result in hex like its arguments (`0x7f..`, an error `-0xc`), where versions 1
//! and 2 wrote it in decimal; every version's reader takes either form.
//!
//! Numbers: addresses, syscall arguments and results are hex (`0x` prefix); thread ids,
//! instruction counts, sizes, and the markers' asid, peer, bytes and phase id are decimal (a
//! reader also takes `0x` for instruction counts and marker numbers).

use crate::error::{Error, Result};
use crate::event::{Access, Batch, Event, Marker, SideBody, Syscall, SyscallKind};
use crate::event_source::{EventSource, WORKLOAD_BATCH};
use crate::format::{kind_from_letter, threads_disagreement, Header, ThreadTotals, FORMAT_NAME};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};

/// The first line of a text trace this xlat writes.
pub const TEXT_MAGIC: &str = "#xlat-text 3";
/// The first line of a version 2 text trace (decimal syscall results; still read).
pub const TEXT_MAGIC_V2: &str = "#xlat-text 2";
/// The first line of a version 1 text trace (no end line; still read).
pub const TEXT_MAGIC_V1: &str = "#xlat-text 1";
/// The prefix of version 2's last line.
pub const END_PREFIX: &str = "#end ";

/// The totals on a version 2 text trace's end line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextEnd {
    pub accesses: u64,
    pub side_events: u64,
    /// Per thread (by thread id): accesses, and the largest instruction count seen.
    pub threads: Vec<ThreadTotals>,
}

/// Running totals of a text trace, kept by the writer and checked by the reader.
#[derive(Default)]
struct Totals {
    accesses: u64,
    side_events: u64,
    threads: HashMap<u32, ThreadTotals>,
    /// Per thread, the instruction count of its last access.
    last_access: HashMap<u32, u64>,
}

impl Totals {
    /// Count `e`; an access whose instruction count is below its thread's previous access's
    /// is refused (the rule the binary writer enforces).
    fn add(&mut self, e: &Event) -> std::result::Result<(), String> {
        let (tid, icount) = match e {
            Event::Access(a) => {
                if let Some(&prev) = self.last_access.get(&a.tid) {
                    if a.icount < prev {
                        return Err(format!(
                            "instruction count of thread {} went backwards from {prev} to {}",
                            a.tid, a.icount
                        ));
                    }
                }
                self.last_access.insert(a.tid, a.icount);
                self.accesses += 1;
                (a.tid, a.icount)
            }
            Event::Side { tid, icount, .. } => {
                self.side_events += 1;
                (*tid, *icount)
            }
        };
        let t = self.threads.entry(tid).or_insert_with(|| ThreadTotals { tid, ..ThreadTotals::default() });
        t.accesses += matches!(e, Event::Access(_)) as u64;
        t.instructions = t.instructions.max(icount);
        Ok(())
    }

    fn end(&self) -> TextEnd {
        let mut threads: Vec<ThreadTotals> = self.threads.values().cloned().collect();
        threads.sort_by_key(|t| t.tid);
        TextEnd { accesses: self.accesses, side_events: self.side_events, threads }
    }
}

/// Writes the text form: the header lines, events, and at [`TextWriter::finish`] the end line.
pub struct TextWriter<W: Write> {
    out: W,
    totals: Totals,
}

impl<W: Write> TextWriter<W> {
    pub fn new(mut out: W, header: &Header) -> Result<Self> {
        write_header(&mut out, header)?;
        Ok(TextWriter { out, totals: Totals::default() })
    }

    /// Write every event of `batch` (instruction counts must not go backwards in a thread).
    pub fn write_batch(&mut self, batch: &Batch) -> Result<()> {
        for e in batch.events() {
            self.totals.add(&e).map_err(Error::InvalidEvent)?;
            write_event(&mut self.out, &e)?;
        }
        Ok(())
    }

    /// Accesses written so far.
    pub fn accesses(&self) -> u64 {
        self.totals.accesses
    }

    /// Write the end line and return the output (not flushed).
    pub fn finish(mut self) -> Result<W> {
        let end = serde_json::to_string(&self.totals.end()).expect("totals serialise");
        writeln!(self.out, "{END_PREFIX}{end}")?;
        Ok(self.out)
    }
}

/// Whether a path names the text form (by its extension).
pub fn is_text_path(p: &str) -> bool {
    p.ends_with(".txt") || p.ends_with(".xlat.txt") || p == "-"
}

/// Write the first two lines. The header's `format` is written as [`FORMAT_NAME`], whatever
/// `h` holds (readers refuse any other).
pub fn write_header<W: Write>(out: &mut W, h: &Header) -> std::io::Result<()> {
    writeln!(out, "{TEXT_MAGIC}")?;
    let h = Header { format: FORMAT_NAME.to_string(), ..h.clone() };
    writeln!(out, "#header {}", serde_json::to_string(&h).expect("header serialises"))
}

pub fn write_event<W: Write>(out: &mut W, e: &Event) -> std::io::Result<()> {
    match e {
        Event::Access(a) => writeln!(out, "A {} {} {} {:#x} {}", a.tid, a.icount, a.kind.letter(), a.addr, a.size),
        Event::Side { tid, icount, body: SideBody::Syscall(s) } => {
            write!(out, "S {tid} {icount} {}", s.kind.name())?;
            for a in &s.args[..s.kind.nargs()] {
                write!(out, " {a:#x}")?;
            }
            if s.ret < 0 {
                writeln!(out, " -{:#x}", s.ret.unsigned_abs())
            } else {
                writeln!(out, " {:#x}", s.ret)
            }
        }
        Event::Side { tid, icount, body: SideBody::Marker(m) } => {
            write!(out, "M {tid} {icount} {}", m.name())?;
            match m {
                Marker::ContextSwitch { asid } => writeln!(out, " {asid}"),
                Marker::IpcSend { peer, bytes } | Marker::IpcRecv { peer, bytes } => {
                    writeln!(out, " {peer} {bytes}")
                }
                Marker::Phase { id, name } => writeln!(out, " {id} {name}"),
            }
        }
    }
}

fn num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// A signed number, hex (`0x..`, `-0x..`: version 3) or decimal (versions 1 and 2).
fn signed(s: &str) -> Option<i64> {
    let (neg, mag) = match s.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, s),
    };
    match mag.strip_prefix("0x") {
        Some(h) => {
            let v = u64::from_str_radix(h, 16).ok()?;
            if neg {
                0i64.checked_sub_unsigned(v)
            } else {
                i64::try_from(v).ok()
            }
        }
        None => s.parse().ok(),
    }
}

/// Parse one event line.
pub fn parse_event(line: &str) -> std::result::Result<Event, String> {
    let mut it = line.split(' ');
    let tag = it.next().unwrap_or("");
    let mut field = |what: &str| it.next().ok_or_else(|| format!("missing {what}"));
    let tid = field("thread id")?;
    let tid: u32 = tid.parse().map_err(|_| format!("thread id '{tid}' is not a number"))?;
    let ic = field("instruction count")?;
    let icount = num(ic).ok_or_else(|| format!("instruction count '{ic}' is not a number"))?;
    match tag {
        "A" => {
            let k = field("access kind")?;
            let kind = kind_from_letter(k).ok_or_else(|| format!("access kind '{k}' is not L, S or I"))?;
            let a = field("address")?;
            let addr = num(a).ok_or_else(|| format!("address '{a}' is not a number"))?;
            let s = field("size")?;
            let size = s.parse::<u16>().map_err(|_| format!("size '{s}' is not a number from 0 to 65535"))?;
            if it.next().is_some() {
                return Err("extra fields after the size".into());
            }
            Ok(Event::Access(Access { addr, icount, tid, size, kind }))
        }
        "S" => {
            let name = field("syscall name")?;
            let kind = SyscallKind::from_name(name).ok_or_else(|| format!("unknown syscall '{name}'"))?;
            let mut args = [0u64; 6];
            for a in args.iter_mut().take(kind.nargs()) {
                let f = field("syscall argument")?;
                *a = num(f).ok_or_else(|| format!("syscall argument '{f}' is not a number"))?;
            }
            let r = field("syscall result")?;
            let ret = signed(r).ok_or_else(|| format!("syscall result '{r}' is not a signed number"))?;
            if it.next().is_some() {
                return Err(format!("{name} takes {} arguments and a result; extra fields follow", kind.nargs()));
            }
            Ok(Event::Side { tid, icount, body: SideBody::Syscall(Syscall { kind, args, ret }) })
        }
        "M" => {
            let name = field("marker name")?;
            let mut int = |what: &str| -> std::result::Result<u64, String> {
                let f = it.next().ok_or_else(|| format!("missing {what}"))?;
                num(f).ok_or_else(|| format!("{what} '{f}' is not a number"))
            };
            let u32of =
                |v: u64, what: &str| u32::try_from(v).map_err(|_| format!("{what} {v} does not fit in 32 bits"));
            let m = match name {
                "ctx" => Marker::ContextSwitch { asid: u32of(int("asid")?, "asid")? },
                "ipc-send" => Marker::IpcSend { peer: u32of(int("peer")?, "peer")?, bytes: int("bytes")? },
                "ipc-recv" => Marker::IpcRecv { peer: u32of(int("peer")?, "peer")?, bytes: int("bytes")? },
                "phase" => {
                    let id = u32of(int("phase id")?, "phase id")?;
                    let rest: Vec<&str> = it.collect();
                    Marker::Phase { id, name: rest.join(" ") }
                }
                _ => return Err(format!("unknown marker '{name}'")),
            };
            Ok(Event::Side { tid, icount, body: SideBody::Marker(m) })
        }
        _ => Err(format!("line starts with '{tag}', not A, S or M")),
    }
}

/// A text trace read as an [`EventSource`].
pub struct TextSource {
    lines: Box<dyn BufRead + Send>,
    name: String,
    header: Header,
    line_no: u64,
    bytes: u64,
    len: Option<u64>,
    done: bool,
    buf: String,
    /// Version 2 and 3 files must end with the end line; version 1 files have none.
    needs_end: bool,
    /// The file's version (its first line).
    version: u8,
    ended: bool,
    totals: Totals,
}

impl TextSource {
    pub fn open(path: &str) -> Result<TextSource> {
        let (lines, len): (Box<dyn BufRead + Send>, Option<u64>) = if path == "-" {
            (Box::new(BufReader::new(std::io::stdin())), None)
        } else {
            let f = File::open(path).map_err(|e| Error::io(path, e))?;
            let len = f.metadata().ok().map(|m| m.len());
            (Box::new(BufReader::with_capacity(1 << 20, f)), len)
        };
        Self::from_reader(lines, path, len)
    }

    /// Read a text trace from `lines` (`len`: its size in bytes, if known); `path` names it in
    /// errors.
    pub fn from_reader(lines: Box<dyn BufRead + Send>, path: &str, len: Option<u64>) -> Result<TextSource> {
        let mut s = TextSource {
            lines,
            name: path.to_string(),
            header: Header::default(),
            line_no: 0,
            bytes: 0,
            len,
            done: false,
            buf: String::new(),
            needs_end: true,
            version: 3,
            ended: false,
            totals: Totals::default(),
        };
        if len == Some(0) {
            return Err(Error::Empty(path.to_string()));
        }
        let first = s.read_line()?.unwrap_or_default();
        if first == TEXT_MAGIC_V1 {
            // Version 1: no end line, so a file cut at a line boundary reads as complete.
            s.needs_end = false;
            s.version = 1;
        } else if first == TEXT_MAGIC_V2 {
            s.version = 2;
        } else if first != TEXT_MAGIC && first != TEXT_MAGIC_V2 {
            return Err(
                s.err(format!("the first line must be '{TEXT_MAGIC}' (or '{TEXT_MAGIC_V2}', '{TEXT_MAGIC_V1}')"))
            );
        }
        let second = s.read_line()?.unwrap_or_default();
        let json =
            second.strip_prefix("#header ").ok_or_else(|| s.err("the second line must be '#header {...}'".into()))?;
        // A hand-written header may leave `format` out; if it names one, it is ours.
        s.header = Header::from_json(json.as_bytes(), false).map_err(|detail| s.err(detail))?;
        Ok(s)
    }

    /// Whether the file declares its totals at its end (version 2), so that a cut file is
    /// detected.
    pub fn has_end_line(&self) -> bool {
        self.needs_end
    }

    /// Check the end line's totals against the events read.
    fn end_line(&mut self, json: &str) -> Result<()> {
        let end: TextEnd =
            serde_json::from_str(json).map_err(|e| self.err(format!("end line JSON is invalid ({e})")))?;
        let got = self.totals.end();
        if end.accesses != got.accesses || end.side_events != got.side_events {
            return Err(self.err(format!(
                "the end line counts {} accesses and {} side events, but {} and {} precede it (lines were dropped or repeated)",
                end.accesses, end.side_events, got.accesses, got.side_events
            )));
        }
        if let Some(detail) = threads_disagreement("the end line", &end.threads, &got.threads) {
            return Err(self.err(detail));
        }
        self.ended = true;
        Ok(())
    }

    fn err(&self, detail: String) -> Error {
        Error::Text { what: self.name.clone(), line: self.line_no, detail }
    }

    fn read_line(&mut self) -> Result<Option<String>> {
        self.buf.clear();
        let k = self.lines.read_line(&mut self.buf).map_err(|e| Error::io(&self.name, e))?;
        if k == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        self.bytes += k as u64;
        Ok(Some(self.buf.trim_end_matches(['\n', '\r']).to_string()))
    }
}

impl EventSource for TextSource {
    fn header(&self) -> &Header {
        &self.header
    }
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool> {
        batch.clear();
        if self.done {
            return Ok(false);
        }
        while batch.len() < WORKLOAD_BATCH {
            let Some(line) = self.read_line()? else {
                if self.needs_end && !self.ended {
                    return Err(Error::Truncated { what: self.name.clone(), accesses: self.totals.accesses });
                }
                self.done = true;
                break;
            };
            // Blank and whitespace-only lines, and comments, are ignored.
            if line.trim().is_empty() {
                continue;
            }
            if let Some(json) = line.strip_prefix(END_PREFIX).filter(|_| self.needs_end) {
                if self.ended {
                    return Err(self.err("a second end line".into()));
                }
                self.end_line(json)?;
                continue;
            }
            if line.starts_with('#') {
                continue;
            }
            if self.ended {
                return Err(self.err("an event follows the end line".into()));
            }
            let e = parse_event(&line).map_err(|d| self.err(d))?;
            self.totals.add(&e).map_err(|d| self.err(d))?;
            batch.push_event(e);
        }
        Ok(!batch.has_no_events() || !self.done)
    }
    fn progress(&self) -> (u64, Option<u64>) {
        (self.bytes, self.len)
    }
    fn format(&self) -> Option<String> {
        Some(if self.needs_end {
            format!("text {}", self.version)
        } else {
            "text 1 (no end line: a file cut at a line boundary reads as complete; `xlat convert` upgrades it to text 3)"
                .into()
        })
    }
}
