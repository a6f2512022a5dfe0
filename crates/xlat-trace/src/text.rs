//! The plain text form of a trace, one event per line (see `docs/trace-format.md`):
//!
//! ```text
//! #xlat-text 1
//! #header {"format":"xlat-trace","producer":...}
//! A <tid> <icount> <L|S|I> <hex addr> <size>
//! S <tid> <icount> <syscall> <hex args...> <decimal ret>
//! M <tid> <icount> ctx <asid> | ipc-send <peer> <bytes> | ipc-recv <peer> <bytes> | phase <id> <name>
//! ```

use crate::error::{Error, Result};
use crate::event::{Access, Batch, Event, Marker, SideBody, Syscall, SyscallKind};
use crate::event_source::{EventSource, WORKLOAD_BATCH};
use crate::format::{kind_from_letter, Header};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};

pub const TEXT_MAGIC: &str = "#xlat-text 1";

/// Whether a path names the text form (by its extension).
pub fn is_text_path(p: &str) -> bool {
    p.ends_with(".txt") || p.ends_with(".xlat.txt") || p == "-"
}

pub fn write_header<W: Write>(out: &mut W, h: &Header) -> std::io::Result<()> {
    writeln!(out, "{TEXT_MAGIC}")?;
    writeln!(out, "#header {}", serde_json::to_string(h).expect("header serialises"))
}

pub fn write_event<W: Write>(out: &mut W, e: &Event) -> std::io::Result<()> {
    match e {
        Event::Access(a) => writeln!(out, "A {} {} {} {:#x} {}", a.tid, a.icount, a.kind.letter(), a.addr, a.size),
        Event::Side { tid, icount, body: SideBody::Syscall(s) } => {
            write!(out, "S {tid} {icount} {}", s.kind.name())?;
            for a in &s.args[..s.kind.nargs()] {
                write!(out, " {a:#x}")?;
            }
            writeln!(out, " {}", s.ret)
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
            let ret = r.parse::<i64>().map_err(|_| format!("syscall result '{r}' is not a signed number"))?;
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
        let mut s = TextSource {
            lines,
            name: path.to_string(),
            header: Header::default(),
            line_no: 0,
            bytes: 0,
            len,
            done: false,
            buf: String::new(),
        };
        if len == Some(0) {
            return Err(Error::Empty(path.to_string()));
        }
        let first = s.read_line()?.unwrap_or_default();
        if first != TEXT_MAGIC {
            return Err(s.err(format!("the first line must be '{TEXT_MAGIC}'")));
        }
        let second = s.read_line()?.unwrap_or_default();
        let json =
            second.strip_prefix("#header ").ok_or_else(|| s.err("the second line must be '#header {...}'".into()))?;
        s.header = serde_json::from_str(json).map_err(|e| s.err(format!("header JSON is invalid ({e})")))?;
        Ok(s)
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
                self.done = true;
                break;
            };
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let e = parse_event(&line).map_err(|d| self.err(d))?;
            batch.push_event(e);
        }
        Ok(!batch.has_no_events() || !self.done)
    }
    fn progress(&self) -> (u64, Option<u64>) {
        (self.bytes, self.len)
    }
}
