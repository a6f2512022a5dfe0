//! Valgrind lackey text (`valgrind --tool=lackey --trace-mem=yes`).
//!
//! Lackey prints one line per event: `I  ADDR,SIZE` for an instruction, ` L ADDR,SIZE` for a
//! load, ` S ADDR,SIZE` for a store and ` M ADDR,SIZE` for a modify (a load and a store of the
//! same bytes), with ADDR in hex and SIZE in decimal. Valgrind's own messages (`==PID== ...`,
//! `--PID-- ...`) are skipped; the first one names the process, used as the thread id (lackey
//! does not say which thread ran an instruction). Each `I` line advances the instruction count;
//! a data access carries the count of the instruction it belongs to.

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
        Ok(Self::from_reader(r, path, len, ifetch))
    }

    /// Read lackey text from any reader; `name` appears in error messages.
    pub fn from_reader(r: Box<dyn BufRead + Send>, name: &str, len: Option<u64>, ifetch: bool) -> Self {
        let mut header = Header::new(format!("xlat {} lackey import", env!("CARGO_PKG_VERSION")));
        header.command = vec!["valgrind".into(), "--tool=lackey".into(), "--trace-mem=yes".into()];
        header.page_size_hint = 4096;
        header.metadata.insert("imported_from".into(), name.into());
        header.metadata.insert("importer".into(), "lackey".into());
        header.metadata.insert("ifetch".into(), ifetch.into());
        LackeySource {
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
        }
    }

    fn malformed(&self, at: u64, detail: String) -> Error {
        Error::Corrupt { what: format!("lackey trace {} (line {})", self.name, self.line_no), offset: at, detail }
    }

    /// Parse one line into `batch`.
    fn parse_line(&mut self, at: u64, batch: &mut Batch) -> Result<()> {
        let line = {
            let mut l = &self.line[..];
            while let [rest @ .., b'\n' | b'\r'] = l {
                l = rest;
            }
            l
        };
        if line.is_empty() {
            return Ok(());
        }
        if line.starts_with(b"==") || line.starts_with(b"--") {
            if self.tid.is_none() {
                // "==1234== ..." names the process.
                let digits: Vec<u8> = line[2..].iter().copied().take_while(u8::is_ascii_digit).collect();
                self.tid = std::str::from_utf8(&digits).ok().and_then(|s| s.parse().ok());
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
        let mut s = LackeySource::from_reader(r, "t", None, ifetch);
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
