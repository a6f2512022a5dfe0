//! ChampSim binary traces: a sequence of 64-byte `input_instr` records, raw or compressed with
//! xz or gzip (detected from the first bytes), as in the DPC-3, CRC-2 and CloudSuite trace sets.
//!
//! ```c
//! struct input_instr {                        // ChampSim inc/trace_instruction.h
//!     unsigned long long ip;                  // offset 0
//!     unsigned char is_branch;                // 8
//!     unsigned char branch_taken;             // 9
//!     unsigned char destination_registers[2]; // 10
//!     unsigned char source_registers[4];      // 12
//!     unsigned long long destination_memory[2]; // 16
//!     unsigned long long source_memory[4];    // 32
//! };                                          // 64 bytes, little-endian
//! ```
//!
//! Every record is one instruction (instruction count = record number, from 1); every non-zero
//! source operand becomes a load and every non-zero destination operand a store, loads first.
//! Records carry no access sizes: xlat records 8 bytes. The records have no thread: tid 0.
//! With `ifetch`, each record's non-zero `ip` also becomes an instruction fetch of
//! [`IFETCH_SIZE`] bytes, before the record's data accesses.

use crate::error::{Error, Result};
use crate::event::{Access, AccessKind, Batch};
use crate::event_source::{EventSource, IMPORT_BATCH};
use crate::format::Header;
use crate::input::read_full;
use std::fs::File;
use std::io::{BufReader, Read};

/// Bytes per `input_instr` record.
pub const RECORD: usize = 64;
/// The size xlat gives ChampSim accesses, which have none.
pub const ACCESS_SIZE: u16 = 8;
/// The size xlat gives the instruction fetches of `ifetch` (records carry no instruction
/// length; 4 is a typical x86-64 one; the simulator translates and caches by address alone).
pub const IFETCH_SIZE: u16 = 4;

/// A ChampSim trace opened as an [`EventSource`].
pub struct ChampSimSource {
    r: Box<dyn Read + Send>,
    name: String,
    header: Header,
    compression: &'static str,
    /// Each record's `ip` also becomes an instruction fetch.
    ifetch: bool,
    /// Offset in the (decompressed) record stream.
    offset: u64,
    icount: u64,
    done: bool,
    buf: Vec<u8>,
    /// Compressed bytes read so far and the file's length, for progress.
    progress_src: Option<(std::sync::Arc<std::sync::atomic::AtomicU64>, u64)>,
}

/// A reader that counts the compressed bytes it passes on, for progress.
struct Counted<R> {
    inner: R,
    n: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(b)?;
        self.n.fetch_add(k as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(k)
    }
}

impl ChampSimSource {
    /// Open `path` (raw, xz or gzip). With `ifetch`, every record's `ip` also becomes an
    /// instruction-fetch access.
    pub fn open(path: &str, ifetch: bool) -> Result<ChampSimSource> {
        let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len == 0 {
            return Err(Error::Empty(path.to_string()));
        }
        let mut magic = [0u8; 6];
        let k = read_full(&mut f, &mut magic).map_err(|e| Error::io(path, e))?;
        use std::io::Seek;
        f.seek(std::io::SeekFrom::Start(0)).map_err(|e| Error::io(path, e))?;
        let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = Counted { inner: BufReader::with_capacity(1 << 20, f), n: read.clone() };
        let (r, compression): (Box<dyn Read + Send>, _) = if k == 6 && magic == *b"\xfd7zXZ\0" {
            (Box::new(xz2::read::XzDecoder::new_multi_decoder(counted)), "xz")
        } else if k >= 2 && magic[..2] == [0x1f, 0x8b] {
            (Box::new(flate2::read::MultiGzDecoder::new(counted)), "gzip")
        } else {
            (Box::new(counted), "none")
        };
        let mut s = Self::from_reader(r, path, compression, ifetch);
        s.progress_src = Some((read, len));
        Ok(s)
    }

    /// Read records from any reader (already decompressed); `name` appears in errors.
    pub fn from_reader(r: Box<dyn Read + Send>, name: &str, compression: &'static str, ifetch: bool) -> Self {
        let mut header = Header::new(format!("xlat {} champsim import", env!("CARGO_PKG_VERSION")));
        header.page_size_hint = 4096;
        header.threads = vec![0];
        header.metadata.insert("imported_from".into(), name.into());
        header.metadata.insert("importer".into(), "champsim".into());
        header.metadata.insert("compression".into(), compression.into());
        header.metadata.insert("access_size_assumed".into(), ACCESS_SIZE.into());
        if ifetch {
            // Only with the option, so that a default import's header is what it always was.
            header.metadata.insert("ifetch".into(), true.into());
            header.metadata.insert("ifetch_size_assumed".into(), IFETCH_SIZE.into());
        }
        ChampSimSource {
            r,
            name: name.to_string(),
            header,
            compression,
            ifetch,
            offset: 0,
            icount: 0,
            done: false,
            buf: vec![0u8; RECORD * 4096],
            progress_src: None,
        }
    }

    fn malformed(&self, at: u64, detail: String) -> Error {
        let what = if self.compression == "none" {
            format!("ChampSim trace {}", self.name)
        } else {
            format!("ChampSim trace {} (offsets count decompressed bytes)", self.name)
        };
        Error::Corrupt { what, offset: at, detail }
    }
}

impl EventSource for ChampSimSource {
    fn header(&self) -> &Header {
        &self.header
    }
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool> {
        batch.clear();
        let word = |r: &[u8], i: usize| u64::from_le_bytes(r[i..i + 8].try_into().unwrap());
        while !self.done && batch.len() < IMPORT_BATCH {
            let n = read_full(&mut self.r, &mut self.buf).map_err(|e| {
                // xz/gzip report damage as InvalidData/InvalidInput: say where the records were.
                self.malformed(self.offset, format!("cannot read on: {e}"))
            })?;
            if n < self.buf.len() {
                self.done = true;
            }
            let whole = n / RECORD * RECORD;
            for (k, rec) in self.buf[..whole].chunks_exact(RECORD).enumerate() {
                let at = self.offset + (k * RECORD) as u64;
                if rec[8] > 1 || rec[9] > 1 {
                    return Err(self.malformed(
                        at,
                        format!(
                            "record {} has is_branch={} and branch_taken={}, which must be 0 or 1 (not a ChampSim input_instr record?)",
                            at / RECORD as u64,
                            rec[8],
                            rec[9]
                        ),
                    ));
                }
                self.icount += 1;
                if self.ifetch {
                    let ip = word(rec, 0);
                    if ip != 0 {
                        let a = Access {
                            addr: ip,
                            icount: self.icount,
                            tid: 0,
                            size: IFETCH_SIZE,
                            kind: AccessKind::IFetch,
                        };
                        batch.push_access(a);
                    }
                }
                for (slots, kind) in [(32..64, AccessKind::Load), (16..32, AccessKind::Store)] {
                    for i in slots.step_by(8) {
                        let addr = word(rec, i);
                        if addr != 0 {
                            batch.push_access(Access { addr, icount: self.icount, tid: 0, size: ACCESS_SIZE, kind });
                        }
                    }
                }
            }
            if whole < n {
                let at = self.offset + whole as u64;
                return Err(self.malformed(
                    at,
                    format!("the trace ends with a partial record of {} bytes (records are {RECORD} bytes)", n - whole),
                ));
            }
            self.offset += n as u64;
        }
        Ok(!batch.has_no_events() || !self.done)
    }
    fn progress(&self) -> (u64, Option<u64>) {
        match &self.progress_src {
            Some((n, len)) => (n.load(std::sync::atomic::Ordering::Relaxed), Some(*len)),
            None => (self.offset, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ip: u64, dst: [u64; 2], src: [u64; 4], branch: u8) -> Vec<u8> {
        let mut v = ip.to_le_bytes().to_vec();
        v.extend_from_slice(&[branch, 0, 1, 2, 3, 4, 5, 6]);
        for a in dst.iter().chain(src.iter()) {
            v.extend_from_slice(&a.to_le_bytes());
        }
        assert_eq!(v.len(), RECORD);
        v
    }

    fn read(bytes: Vec<u8>) -> Result<Batch> {
        read_with(bytes, false)
    }

    fn read_with(bytes: Vec<u8>, ifetch: bool) -> Result<Batch> {
        let mut s = ChampSimSource::from_reader(Box::new(std::io::Cursor::new(bytes)), "t", "none", ifetch);
        crate::event_source::collect(|b| s.next_batch(b))
    }

    #[test]
    fn every_operand_is_an_access_every_record_an_instruction() {
        let mut v = rec(0x400000, [0x9000, 0], [0x1000, 0, 0x2000, 0], 0);
        v.extend(rec(0x400004, [0, 0], [0, 0, 0, 0], 1));
        v.extend(rec(0x400008, [0, 0x7000], [0, 0, 0, 0x3000], 0));
        let b = read(v).unwrap();
        assert_eq!(b.addr, vec![0x1000, 0x2000, 0x9000, 0x3000, 0x7000]);
        assert_eq!(b.kind, vec![0, 0, 1, 0, 1]);
        assert_eq!(b.icount, vec![1, 1, 1, 3, 3]);
    }

    #[test]
    fn ifetch_puts_each_ip_before_its_records_accesses() {
        let mut v = rec(0x400000, [0x9000, 0], [0x1000, 0, 0, 0], 0);
        v.extend(rec(0x400004, [0, 0], [0, 0, 0, 0], 1));
        v.extend(rec(0, [0, 0], [0x3000, 0, 0, 0], 0)); // ip 0: no fetch
        let b = read_with(v, true).unwrap();
        assert_eq!(b.addr, vec![0x400000, 0x1000, 0x9000, 0x400004, 0x3000]);
        assert_eq!(b.kind, vec![2, 0, 1, 2, 0]);
        assert_eq!(b.icount, vec![1, 1, 1, 2, 3]);
        assert_eq!(b.size, vec![IFETCH_SIZE, 8, 8, IFETCH_SIZE, 8]);
    }

    #[test]
    fn malformed_input_names_the_offset() {
        let mut v = rec(1, [0, 0], [8, 0, 0, 0], 0);
        v.extend(rec(2, [0, 0], [8, 0, 0, 0], 7));
        let e = read(v).unwrap_err().to_string();
        assert!(e.contains("offset 64") && e.contains("is_branch=7"), "{e}");
        let mut v = rec(1, [0, 0], [8, 0, 0, 0], 0);
        v.extend_from_slice(&[0; 10]);
        let e = read(v).unwrap_err().to_string();
        assert!(e.contains("offset 64") && e.contains("partial record of 10 bytes"), "{e}");
    }
}
