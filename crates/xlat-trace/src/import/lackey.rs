//! Valgrind lackey text (`valgrind --tool=lackey --trace-mem=yes`).
//!
//! Lackey prints one line per event: `I  ADDR,SIZE` for an instruction, ` L ADDR,SIZE` for a
//! load, ` S ADDR,SIZE` for a store and ` M ADDR,SIZE` for a modify (a load and a store of the
//! same bytes), with ADDR in hex and SIZE in decimal. Valgrind's own messages (`==PID== ...`,
//! `--PID-- ...`) are skipped; the first one names the process, used as the thread id (lackey
//! does not say which thread ran an instruction). Each `I` line advances the instruction count;
//! a data access carries the count of the instruction it belongs to.
//!
//! The messages before the first event (Valgrind's preamble) are read when the log is opened:
//! `==PID== Command: PROG ARGS` (arguments joined by spaces, a space or backslash inside one
//! escaped by a backslash) becomes the header's `command`, as `xlat trace` records the traced
//! program's, and `Using Valgrind-VERSION` the metadata's `valgrind`.

use crate::error::{Error, Result};
use crate::event::{Access, AccessKind, Batch};
use crate::event_source::{EventSource, IMPORT_BATCH};
use crate::format::Header;
use std::fs::File;
use std::io::{BufRead, BufReader};

/// A lackey log opened as an [`EventSource`].
pub struct LackeySource {
    r: Box<dyn BufRead + Send>,
    name: String,
    header: Header,
    ifetch: bool,
    offset: u64,
    line_no: u64,
    icount: u64,
    tid: Option<u32>,
    len: Option<u64>,
    done: bool,
    line: Vec<u8>,
    /// The first event line, read with the preamble: (its offset, its bytes).
    pending: Option<(u64, Vec<u8>)>,
}

impl LackeySource {
    /// Open `path` (`-` for stdin). With `ifetch`, every `I` line also becomes an instruction
    /// fetch access.
    pub fn open(path: &str, ifetch: bool) -> Result<LackeySource> {
        let (r, len): (Box<dyn BufRead + Send>, Option<u64>) = if path == "-" {
            (Box::new(BufReader::new(std::io::stdin())), None)
        } else {
            let f = File::open(path).map_err(|e| Error::io(path, e))?;
            let len = f.metadata().ok().map(|m| m.len());
            (Box::new(BufReader::with_capacity(1 << 20, f)), len)
        };
        if len == Some(0) {
            return Err(Error::Empty(path.to_string()));
        }
        Self::from_reader(r, path, len, ifetch)
    }

    /// Read lackey text from any reader; `name` appears in error messages. Reads the preamble
    /// (the Valgrind messages before the first event) for the header.
    pub fn from_reader(r: Box<dyn BufRead + Send>, name: &str, len: Option<u64>, ifetch: bool) -> Result<Self> {
        let mut header = Header::new(format!("xlat {} lackey import", env!("CARGO_PKG_VERSION")));
        header.command = vec!["valgrind".into(), "--tool=lackey".into(), "--trace-mem=yes".into()];
        header.page_size_hint = 4096;
        header.metadata.insert("imported_from".into(), name.into());
        header.metadata.insert("importer".into(), "lackey".into());
        header.metadata.insert("ifetch".into(), ifetch.into());
        let mut s = LackeySource {
            r,
            name: name.to_string(),
            header,
            ifetch,
            offset: 0,
            line_no: 0,
            icount: 0,
            tid: None,
            len,
            done: false,
            line: Vec::with_capacity(128),
            pending: None,
        };
        s.read_preamble()?;
        Ok(s)
    }

    /// Read the lines up to the first one that is neither a Valgrind message nor empty (kept in
    /// `pending`), taking the thread id, the program's command line and Valgrind's version.
    fn read_preamble(&mut self) -> Result<()> {
        loop {
            self.line.clear();
            let n = self.r.read_until(b'\n', &mut self.line).map_err(|e| Error::io(&self.name, e))?;
            if n == 0 {
                self.done = true;
                return Ok(());
            }
            let line = trim_eol(&self.line);
            if !(line.is_empty() || line.starts_with(b"==") || line.starts_with(b"--")) {
                self.pending = Some((self.offset, std::mem::take(&mut self.line)));
                return Ok(());
            }
            self.offset += n as u64;
            self.line_no += 1;
            let text = message_text(line);
            if let Some(cmd) = text.strip_prefix(b"Command: ") {
                if self.header.metadata.get("tracer").is_none() {
                    let argv = split_valgrind_command(cmd);
                    let tracer = std::mem::replace(&mut self.header.command, argv);
                    self.header.metadata.insert("tracer".into(), tracer.join(" ").into());
                }
            } else if let Some(v) = text.strip_prefix(b"Using Valgrind-") {
                let v: Vec<u8> = v.iter().copied().take_while(|&c| c != b' ').collect();
                self.header.metadata.insert("valgrind".into(), String::from_utf8_lossy(&v).into_owned().into());
            }
            if self.tid.is_none() {
                self.tid = pid_of(line);
            }
        }
    }

    fn malformed(&self, at: u64, detail: String) -> Error {
        Error::Corrupt { what: format!("lackey trace {} (line {})", self.name, self.line_no), offset: at, detail }
    }

    /// Parse one line into `batch`.
    fn parse_line(&mut self, at: u64, batch: &mut Batch) -> Result<()> {
        let line = trim_eol(&self.line);
        if line.is_empty() {
            return Ok(());
        }
        if line.starts_with(b"==") || line.starts_with(b"--") {
            if self.tid.is_none() {
                self.tid = pid_of(line);
            }
            return Ok(());
        }
        let (kind, rest) = match line {
            [b'I', b' ', b' ', rest @ ..] => (None, rest),
            [b' ', b'L', b' ', rest @ ..] => (Some(AccessKind::Load), rest),
            [b' ', b'S', b' ', rest @ ..] => (Some(AccessKind::Store), rest),
            [b' ', b'M', b' ', rest @ ..] => (Some(AccessKind::Store), rest),
            _ => {
                let shown = String::from_utf8_lossy(&line[..line.len().min(40)]).into_owned();
                return Err(
                    self.malformed(at, format!("expected 'I  ADDR,SIZE', ' L ', ' S ' or ' M ' but found '{shown}'"))
                );
            }
        };
        let (addr, size) = parse_addr_size(rest).ok_or_else(|| {
            let shown = String::from_utf8_lossy(&line[..line.len().min(40)]).into_owned();
            self.malformed(at, format!("expected hex ADDR,decimal SIZE (1..65535) in '{shown}'"))
        })?;
        let tid = self.tid.unwrap_or(0);
        match kind {
            None => {
                self.icount += 1;
                if self.ifetch {
                    batch.push_access(Access { addr, icount: self.icount, tid, size, kind: AccessKind::IFetch });
                }
            }
            Some(k) => {
                if line[1] == b'M' {
                    // A modify reads and then writes the same bytes.
                    batch.push_access(Access { addr, icount: self.icount, tid, size, kind: AccessKind::Load });
                }
                batch.push_access(Access { addr, icount: self.icount, tid, size, kind: k });
            }
        }
        Ok(())
    }
}

/// The process id a Valgrind message ("==1234== ...") names, used as the thread id.
fn pid_of(line: &[u8]) -> Option<u32> {
    let digits: Vec<u8> = line.get(2..)?.iter().copied().take_while(u8::is_ascii_digit).collect();
    std::str::from_utf8(&digits).ok().and_then(|s| s.parse().ok())
}

fn trim_eol(mut l: &[u8]) -> &[u8] {
    while let [rest @ .., b'\n' | b'\r'] = l {
        l = rest;
    }
    l
}

/// The text of a Valgrind message: what follows `==PID== ` (or `--PID-- `).
fn message_text(line: &[u8]) -> &[u8] {
    let body = &line[2.min(line.len())..];
    let digits = body.iter().take_while(|c| c.is_ascii_digit()).count();
    let rest = &body[digits..];
    let rest = rest.strip_prefix(b"==").or_else(|| rest.strip_prefix(b"--")).unwrap_or(rest);
    rest.strip_prefix(b" ").unwrap_or(rest)
}

/// Valgrind's `Command:` text back into arguments: they are joined by single spaces, with a
/// space or a backslash inside an argument escaped by a backslash.
fn split_valgrind_command(cmd: &[u8]) -> Vec<String> {
    let mut argv = Vec::new();
    let mut cur = Vec::new();
    let mut it = cmd.iter().copied();
    while let Some(c) = it.next() {
        match c {
            b'\\' => cur.push(it.next().unwrap_or(b'\\')),
            b' ' => argv.push(String::from_utf8_lossy(&std::mem::take(&mut cur)).into_owned()),
            c => cur.push(c),
        }
    }
    argv.push(String::from_utf8_lossy(&cur).into_owned());
    argv
}

fn parse_addr_size(s: &[u8]) -> Option<(u64, u16)> {
    let comma = s.iter().position(|&c| c == b',')?;
    let (a, z) = (&s[..comma], &s[comma + 1..]);
    if a.is_empty() || a.len() > 16 || z.is_empty() || z.len() > 5 {
        return None;
    }
    let mut addr = 0u64;
    for &c in a {
        addr = addr << 4 | (c as char).to_digit(16)? as u64;
    }
    let mut size = 0u32;
    for &c in z {
        size = size * 10 + (c as char).to_digit(10)?;
    }
    if size == 0 || size > u16::MAX as u32 {
        return None;
    }
    Some((addr, size as u16))
}

impl EventSource for LackeySource {
    fn header(&self) -> &Header {
        &self.header
    }
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool> {
        batch.clear();
        if let Some((at, line)) = self.pending.take() {
            self.line = line;
            self.offset += self.line.len() as u64;
            self.line_no += 1;
            self.parse_line(at, batch)?;
        }
        while !self.done && batch.len() < IMPORT_BATCH {
            self.line.clear();
            let at = self.offset;
            let n = self.r.read_until(b'\n', &mut self.line).map_err(|e| Error::io(&self.name, e))?;
            if n == 0 {
                self.done = true;
                break;
            }
            self.offset += n as u64;
            self.line_no += 1;
            self.parse_line(at, batch)?;
        }
        Ok(!batch.has_no_events() || !self.done)
    }
    fn progress(&self) -> (u64, Option<u64>) {
        (self.offset, self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, ifetch: bool) -> Result<Batch> {
        let r = Box::new(std::io::Cursor::new(text.as_bytes().to_vec()));
        let mut s = LackeySource::from_reader(r, "t", None, ifetch)?;
        crate::event_source::collect(|b| s.next_batch(b))
    }

    #[test]
    fn parses_every_line_kind() {
        let t = "==42== Lackey, an example Valgrind tool\nI  04001e30,3\n S 1ffefffd38,8\nI  04001e33,5\n L 04011f80,8\n M 0421a0b8,4\n==42== done\n";
        let b = read(t, false).unwrap();
        assert_eq!(b.addr, vec![0x1ffefffd38, 0x04011f80, 0x0421a0b8, 0x0421a0b8]);
        assert_eq!(b.kind, vec![1, 0, 0, 1]);
        assert_eq!(b.icount, vec![1, 2, 2, 2]);
        assert_eq!(b.size, vec![8, 8, 4, 4]);
        assert_eq!(b.tid, vec![42; 4]);
        let b = read(t, true).unwrap();
        assert_eq!(b.kind, vec![2, 1, 2, 0, 0, 1]);
        assert_eq!(b.size[0], 3);
    }

    #[test]
    fn the_preamble_gives_the_command_line() {
        let t = "==7== Lackey, an example Valgrind tool\n==7== Using Valgrind-3.19.0 and LibVEX; rerun with -h for copyright info\n==7== Command: /bin/echo a\\ b x\\\\y  c\n==7== Parent PID: 6\n==7== \nI  1000,4\n L 2000,8\n";
        let r = Box::new(std::io::Cursor::new(t.as_bytes().to_vec()));
        let mut s = LackeySource::from_reader(r, "t", None, false).unwrap();
        assert_eq!(s.header().command, vec!["/bin/echo", "a b", "x\\y", "", "c"]);
        assert_eq!(s.header().metadata["tracer"], "valgrind --tool=lackey --trace-mem=yes");
        assert_eq!(s.header().metadata["valgrind"], "3.19.0");
        let b = crate::event_source::collect(|b| s.next_batch(b)).unwrap();
        assert_eq!((b.addr.clone(), b.tid.clone(), b.icount.clone()), (vec![0x2000], vec![7], vec![1]));
        // Without a preamble the command stays Valgrind's, and offsets still count every byte.
        let b = read("I  1000,4\n L 2000,8\n", false).unwrap();
        assert_eq!(b.addr, vec![0x2000]);
        let e = read("==7== Command: x\n\nI  1000,4\n Q 2000,8\n", false).unwrap_err().to_string();
        assert!(e.contains("offset 28") && e.contains("line 4"), "{e}");
    }

    #[test]
    fn malformed_lines_name_the_offset() {
        let e = read("I  1000,4\n X 12,3\n", false).unwrap_err().to_string();
        assert!(e.contains("offset 10") && e.contains("line 2"), "{e}");
        let e = read("I  1000,4\n L 12zz,3\n", false).unwrap_err().to_string();
        assert!(e.contains("offset 10"), "{e}");
        let e = read(" L 12,0\n", false).unwrap_err().to_string();
        assert!(e.contains("offset 0"), "{e}");
        let e = read(" L 12,70000\n", false).unwrap_err().to_string();
        assert!(e.contains("offset 0"), "{e}");
    }
}
