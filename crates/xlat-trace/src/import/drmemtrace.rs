//! DynamoRIO drmemtrace offline traces in the final format, the one DynamoRIO's `raw2trace`
//! post-processor writes (the raw files the tracer itself writes are not read).
//!
//! A trace is a sequence of 12-byte `trace_entry_t` records, little-endian and packed:
//!
//! | offset | field |
//! |---|---|
//! | 0 | `unsigned short type`: a `trace_type_t` ([`ty`]) |
//! | 2 | `unsigned short size`: access size, instruction length, marker kind ([`marker`]), ... |
//! | 4 | `addr_t addr` (8 bytes on 64-bit): address, pc, thread or process id, marker value |
//!
//! `raw2trace` writes one file per thread into the `trace/` directory of a
//! `drmemtrace.APP.PID.NNNN.dir`: `drmemtrace.APP.TID.NNNN.trace.zip` (a zip archive whose
//! entries, `chunk.0000`, `chunk.0001`, ..., hold the thread's records in order),
//! `.trace.gz` (gzip) or `.trace` (uncompressed). This module reads one such file (the kind is
//! told by its first bytes, not its name), or a directory of them (or the `.dir` holding
//! `trace/`), whose threads it interleaves as DynamoRIO's own readers do: by the `TIMESTAMP`
//! markers, at each of which the thread with the earliest pending timestamp goes on.
//!
//! Which records mean what (the numbers are checked against DynamoRIO's
//! `clients/drcachesim/common/trace_entry.h` and `trace_entry.cpp` at commits
//! `4f0e90ba522f63393ed71bf82838401910d915f9` and `4016e95e8e5e0204ad43c37b74e39860cfa657fb`,
//! 2023, trace version 5; version 6 adds no record type):
//!
//! - `READ` a load, `WRITE` a store, of the record's size (a size of 0 is recorded as 1).
//! - Software prefetches (`PREFETCH`, the x86 `PREFETCHT0..2`/`NTA`, the ARM and the
//!   cache-level `PREFETCH_READ/WRITE/INSTR*` kinds) are loads: the program executed them and
//!   the MMU translates their address. Hardware prefetches (added by a cache simulator, not
//!   executed by the program) are skipped.
//! - Instruction fetches (`INSTR`, the jump, call and return kinds, `SYSENTER`,
//!   `TAKEN_JUMP`/`UNTAKEN_JUMP`) advance the thread's instruction count by one; with `ifetch`
//!   each also becomes an instruction fetch of the record's size. An instruction record of size
//!   0 only gives the pc of the data references after it (drmemtrace's L0 filter writes those)
//!   and counts nothing. `INSTR_NO_FETCH` (another iteration of an x86 `rep` string
//!   instruction) counts nothing either, as in DynamoRIO's reader; `INSTR_MAYBE_FETCH` is one or
//!   the other as DynamoRIO decides it (no fetch when it repeats the previous instruction's pc).
//!   `INSTR_BUNDLE` is `size` more instructions following the previous one, of the lengths in
//!   its address bytes.
//! - Data references carry the count of the instruction before them (from 1; 0 before any).
//! - `THREAD` sets the thread id of what follows (instruction counts are per thread); `PID`
//!   becomes the header's `metadata.pid`; `HEADER` (first record) and the `VERSION` marker give
//!   the trace version, the `FILETYPE` marker is checked (filtered traces and traces of 32-bit
//!   programs are refused, instruction-only ones without `ifetch` too), `PAGE_SIZE` becomes the
//!   header's `page_size_hint` (4096 when absent), `CACHE_LINE_SIZE` `metadata.cache_line_size`.
//!   `FOOTER` ends a thread's file: a file that ends without it is truncated.
//! - Skipped: instruction encodings, cache flushes, thread exits, and every other marker
//!   (cpu id, function arguments, syscall numbers, kernel events, ...).
//! - Any other type is an error naming its offset.

use crate::error::{Error, Result};
use crate::event::{Access, AccessKind, Batch};
use crate::event_source::{EventSource, IMPORT_BATCH};
use crate::format::Header;
use crate::input::read_full;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes per `trace_entry_t` record of a 64-bit trace.
pub const RECORD: usize = 12;

/// `trace_type_t`: the `type` field of a record.
pub mod ty {
    pub const READ: u16 = 0;
    pub const WRITE: u16 = 1;
    pub const PREFETCH: u16 = 2;
    /// Also `PREFETCH_READ_L1`.
    pub const PREFETCHT0: u16 = 3;
    /// Also `PREFETCH_READ_L2`.
    pub const PREFETCHT1: u16 = 4;
    /// Also `PREFETCH_READ_L3`.
    pub const PREFETCHT2: u16 = 5;
    pub const PREFETCHNTA: u16 = 6;
    pub const PREFETCH_READ: u16 = 7;
    pub const PREFETCH_WRITE: u16 = 8;
    pub const PREFETCH_INSTR: u16 = 9;
    pub const INSTR: u16 = 10;
    pub const INSTR_DIRECT_JUMP: u16 = 11;
    pub const INSTR_INDIRECT_JUMP: u16 = 12;
    pub const INSTR_CONDITIONAL_JUMP: u16 = 13;
    pub const INSTR_DIRECT_CALL: u16 = 14;
    pub const INSTR_INDIRECT_CALL: u16 = 15;
    pub const INSTR_RETURN: u16 = 16;
    pub const INSTR_BUNDLE: u16 = 17;
    pub const INSTR_FLUSH: u16 = 18;
    pub const INSTR_FLUSH_END: u16 = 19;
    pub const DATA_FLUSH: u16 = 20;
    pub const DATA_FLUSH_END: u16 = 21;
    pub const THREAD: u16 = 22;
    pub const THREAD_EXIT: u16 = 23;
    pub const PID: u16 = 24;
    pub const HEADER: u16 = 25;
    pub const FOOTER: u16 = 26;
    pub const HARDWARE_PREFETCH: u16 = 27;
    pub const MARKER: u16 = 28;
    pub const INSTR_NO_FETCH: u16 = 29;
    pub const INSTR_MAYBE_FETCH: u16 = 30;
    pub const INSTR_SYSENTER: u16 = 31;
    pub const PREFETCH_READ_L1_NT: u16 = 32;
    pub const PREFETCH_READ_L2_NT: u16 = 33;
    pub const PREFETCH_READ_L3_NT: u16 = 34;
    pub const PREFETCH_INSTR_L1: u16 = 35;
    pub const PREFETCH_INSTR_L1_NT: u16 = 36;
    pub const PREFETCH_INSTR_L2: u16 = 37;
    pub const PREFETCH_INSTR_L2_NT: u16 = 38;
    pub const PREFETCH_INSTR_L3: u16 = 39;
    pub const PREFETCH_INSTR_L3_NT: u16 = 40;
    pub const PREFETCH_WRITE_L1: u16 = 41;
    pub const PREFETCH_WRITE_L1_NT: u16 = 42;
    pub const PREFETCH_WRITE_L2: u16 = 43;
    pub const PREFETCH_WRITE_L2_NT: u16 = 44;
    pub const PREFETCH_WRITE_L3: u16 = 45;
    pub const PREFETCH_WRITE_L3_NT: u16 = 46;
    pub const ENCODING: u16 = 47;
    pub const INSTR_TAKEN_JUMP: u16 = 48;
    pub const INSTR_UNTAKEN_JUMP: u16 = 49;
    /// The highest type DynamoRIO defines.
    pub const LAST: u16 = INSTR_UNTAKEN_JUMP;
}

/// `trace_marker_type_t`: the `size` field of a `MARKER` record (the ones this reader uses).
pub mod marker {
    pub const TIMESTAMP: u16 = 2;
    pub const CPU_ID: u16 = 3;
    pub const FILETYPE: u16 = 9;
    pub const CACHE_LINE_SIZE: u16 = 10;
    pub const VERSION: u16 = 12;
    pub const PAGE_SIZE: u16 = 18;
    pub const CHUNK_INSTR_COUNT: u16 = 20;
    pub const CHUNK_FOOTER: u16 = 21;
    pub const RECORD_ORDINAL: u16 = 22;
}

/// `offline_file_type_t` bits: the value of a `FILETYPE` marker.
pub mod file_type {
    /// Addresses filtered online (deprecated form of `IFILTERED | DFILTERED`).
    pub const FILTERED: u64 = 0x01;
    pub const NO_OPTIMIZATIONS: u64 = 0x02;
    /// No data references.
    pub const INSTRUCTION_ONLY: u64 = 0x04;
    pub const ARCH_AARCH64: u64 = 0x08;
    pub const ARCH_ARM32: u64 = 0x10;
    pub const ARCH_X86_32: u64 = 0x20;
    pub const ARCH_X86_64: u64 = 0x40;
    /// Instruction addresses filtered online (only the L0 cache's misses are recorded).
    pub const IFILTERED: u64 = 0x80;
    /// Data addresses filtered online.
    pub const DFILTERED: u64 = 0x100;
    pub const ENCODINGS: u64 = 0x200;
    pub const SYSCALL_NUMBERS: u64 = 0x400;
    pub const BLOCKING_SYSCALLS: u64 = 0x800;
    pub const KERNEL_SYSCALLS: u64 = 0x1000;
    pub const BIMODAL_FILTERED_WARMUP: u64 = 0x2000;
}

/// One decoded record.
#[derive(Debug, Clone, Copy)]
struct Rec {
    ty: u16,
    size: u16,
    addr: u64,
    /// The address bytes as they are (an instruction bundle's lengths).
    bytes: [u8; 8],
}

impl Rec {
    fn parse(b: &[u8]) -> Rec {
        let bytes: [u8; 8] = b[4..12].try_into().unwrap();
        Rec {
            ty: u16::from_le_bytes([b[0], b[1]]),
            size: u16::from_le_bytes([b[2], b[3]]),
            addr: u64::from_le_bytes(bytes),
            bytes,
        }
    }
}

/// How a file's bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Plain,
    Gzip,
    Zip,
}

impl Container {
    fn name(self) -> &'static str {
        match self {
            Container::Plain => "none",
            Container::Gzip => "gzip",
            Container::Zip => "zip",
        }
    }
}

/// A zip entry's place in its archive, read from the central directory.
struct ZipEntry {
    name: String,
    data_start: u64,
    compressed: u64,
    size: u64,
    crc: u32,
    deflated: bool,
}

/// A reader that counts the (compressed) bytes it passes on, for progress.
struct Counted<R> {
    inner: R,
    n: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(b)?;
        self.n.fetch_add(k as u64, Ordering::Relaxed);
        Ok(k)
    }
}

/// The records of one file, in order: a plain or gzip stream, or the entries of a zip archive
/// one after the other (each entry opened on its own file handle, so nothing borrows).
struct Records {
    path: String,
    container: Container,
    input: Box<dyn Read + Send>,
    /// The archive's entries (zip only) and the index of the next one to open.
    entries: Vec<ZipEntry>,
    next_entry: usize,
    /// The entry being read (zip only): its index in `entries`.
    part: Option<usize>,
    /// Offset of `buf[pos]` in the decompressed bytes of the stream (zip: of the entry).
    offset: u64,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// CRC-32 and length of the zip entry's bytes read so far.
    crc: crc32fast::Hasher,
    part_len: u64,
    /// Records returned so far, over all entries.
    count: u64,
    read: Arc<AtomicU64>,
}

impl Records {
    fn new(path: &str, container: Container, input: Box<dyn Read + Send>, read: Arc<AtomicU64>) -> Records {
        Records {
            path: path.to_string(),
            container,
            input,
            entries: Vec::new(),
            next_entry: 0,
            part: None,
            offset: 0,
            buf: vec![0u8; RECORD * 4096],
            pos: 0,
            end: 0,
            crc: crc32fast::Hasher::new(),
            part_len: 0,
            count: 0,
            read,
        }
    }

    /// Open one trace file, telling plain, gzip and zip apart by the first bytes. Returns the
    /// records and the file's length.
    fn open(path: &Path, read: Arc<AtomicU64>) -> Result<(Records, u64)> {
        let name = path.display().to_string();
        let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len == 0 {
            return Err(Error::Empty(name));
        }
        let mut magic = [0u8; 8];
        let k = read_full(&mut f, &mut magic).map_err(|e| Error::io(path, e))?;
        f.seek(SeekFrom::Start(0)).map_err(|e| Error::io(path, e))?;
        let magic = &magic[..k];
        if magic.starts_with(b"PK\x03\x04") || magic.starts_with(b"PK\x05\x06") {
            let entries = zip_entries(&name, f)?;
            let mut r = Records::new(&name, Container::Zip, Box::new(std::io::empty()), read);
            r.entries = entries;
            return Ok((r, len));
        }
        if magic.starts_with(&[0x04, 0x22, 0x4d, 0x18]) || magic.starts_with(b"\xff\x06\x00\x00sNaPpY") {
            let kind = if magic[0] == 0x04 { "lz4" } else { "snappy" };
            return Err(Error::Import(format!(
                "{name} is {kind}-compressed, which xlat does not read: decompress it, or have raw2trace write zip or gzip"
            )));
        }
        let counted = Counted { inner: f, n: read.clone() };
        let buffered = BufReader::with_capacity(1 << 16, counted);
        let (input, container): (Box<dyn Read + Send>, _) = if magic.starts_with(&[0x1f, 0x8b]) {
            (Box::new(flate2::read::MultiGzDecoder::new(buffered)), Container::Gzip)
        } else {
            (Box::new(buffered), Container::Plain)
        };
        Ok((Records::new(&name, container, input, read), len))
    }

    /// What error messages call the stream, with how offsets count.
    fn what(&self) -> String {
        match (self.container, self.part) {
            (Container::Zip, Some(i)) => format!(
                "drmemtrace trace {} (zip entry {}; offsets count its decompressed bytes)",
                self.path, self.entries[i].name
            ),
            (Container::Gzip, _) => format!("drmemtrace trace {} (offsets count decompressed bytes)", self.path),
            _ => format!("drmemtrace trace {}", self.path),
        }
    }

    fn corrupt(&self, offset: u64, detail: String) -> Error {
        Error::Corrupt { what: self.what(), offset, detail }
    }

    /// The next record and its offset, or `None` at the end of the file.
    fn next(&mut self) -> Result<Option<(u64, Rec)>> {
        loop {
            if self.end - self.pos >= RECORD {
                let rec = Rec::parse(&self.buf[self.pos..self.pos + RECORD]);
                let at = self.offset;
                self.pos += RECORD;
                self.offset += RECORD as u64;
                self.count += 1;
                return Ok(Some((at, rec)));
            }
            let left = self.end - self.pos;
            self.buf.copy_within(self.pos..self.end, 0);
            self.pos = 0;
            self.end = left;
            let n = read_full(&mut self.input, &mut self.buf[left..])
                .map_err(|e| self.corrupt(self.offset + left as u64, format!("cannot read on: {e}")))?;
            if self.part.is_some() {
                self.crc.update(&self.buf[left..left + n]);
                self.part_len += n as u64;
            }
            self.end += n;
            if n == 0 {
                if left > 0 {
                    return Err(self.corrupt(
                        self.offset,
                        format!("the records end with a partial record of {left} bytes (records are {RECORD} bytes)"),
                    ));
                }
                if !self.next_part()? {
                    return Ok(None);
                }
            }
        }
    }

    /// At the end of a zip entry: check it, and open the next one (`false`: there is none, or
    /// the file is not a zip archive).
    fn next_part(&mut self) -> Result<bool> {
        if let Some(i) = self.part {
            let e = &self.entries[i];
            let crc = std::mem::take(&mut self.crc).finalize();
            if self.part_len != e.size || crc != e.crc {
                return Err(self.corrupt(
                    self.part_len,
                    format!(
                        "the entry holds {} bytes with CRC-32 {crc:08x}, but the archive's directory says {} bytes with CRC-32 {:08x} (the archive is damaged)",
                        self.part_len, e.size, e.crc
                    ),
                ));
            }
        }
        if self.container != Container::Zip || self.next_entry >= self.entries.len() {
            return Ok(false);
        }
        let i = self.next_entry;
        self.next_entry += 1;
        let e = &self.entries[i];
        let mut f = File::open(&self.path).map_err(|err| Error::io(&self.path, err))?;
        f.seek(SeekFrom::Start(e.data_start)).map_err(|err| Error::io(&self.path, err))?;
        // The limit inside the counter: progress counts the entry's bytes only.
        let raw = BufReader::with_capacity(1 << 16, Counted { inner: f.take(e.compressed), n: self.read.clone() });
        self.input = if e.deflated { Box::new(flate2::read::DeflateDecoder::new(raw)) } else { Box::new(raw) };
        self.part = Some(i);
        self.offset = 0;
        self.crc = crc32fast::Hasher::new();
        self.part_len = 0;
        Ok(true)
    }
}

/// The entries of a zip archive holding a thread's chunks, in the archive's order (the order
/// `raw2trace` wrote them and DynamoRIO reads them).
fn zip_entries(name: &str, f: File) -> Result<Vec<ZipEntry>> {
    let bad = |e: zip::result::ZipError| {
        Error::Import(format!("{name} starts like a zip archive but is not a readable one ({e})"))
    };
    let mut archive = zip::ZipArchive::new(BufReader::new(f)).map_err(bad)?;
    let mut entries = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let z = archive.by_index_raw(i).map_err(bad)?;
        if z.is_dir() {
            continue;
        }
        let entry = z.name().to_string();
        if z.encrypted() {
            return Err(Error::Import(format!("{name}: zip entry {entry} is encrypted, which xlat does not read")));
        }
        let method = z.compression();
        let deflated = if method == zip::CompressionMethod::DEFLATE {
            true
        } else if method == zip::CompressionMethod::STORE {
            false
        } else {
            return Err(Error::Import(format!(
                "{name}: zip entry {entry} is compressed with {method:?}, but xlat reads stored and deflated entries only"
            )));
        };
        let Some(data_start) = z.data_start() else {
            return Err(Error::Import(format!("{name}: the data of zip entry {entry} cannot be located")));
        };
        entries.push(ZipEntry {
            name: entry,
            data_start,
            compressed: z.compressed_size(),
            size: z.size(),
            crc: z.crc32(),
            deflated,
        });
    }
    if entries.is_empty() {
        return Err(Error::Empty(name.to_string()));
    }
    Ok(entries)
}

/// Per-thread decoding state.
#[derive(Debug, Clone, Copy, Default)]
struct Ctx {
    /// Instructions fetched so far.
    icount: u64,
    /// pc of the last instruction record (for `INSTR_MAYBE_FETCH`).
    prev_pc: Option<u64>,
    /// The address after the last instruction (where a bundle's instructions start).
    next_pc: Option<u64>,
}

/// What decoding one record asks of the caller.
enum Step {
    Next,
    /// A `TIMESTAMP` marker: the records after it happened at the thread's new `ts`.
    Timestamp,
}

/// Why [`ThreadFile::run`] stopped.
enum Stop {
    /// The batch is full.
    Full,
    /// A timestamp: another thread may go first now.
    Timestamp,
    /// The file has ended.
    End,
}

/// One trace file (in a `raw2trace` directory: one thread) being decoded.
struct ThreadFile {
    rr: Records,
    /// The first record that is not metadata, read when the file was opened.
    peeked: Option<(u64, Rec)>,
    /// The timestamp of the records about to be decoded (0 before the first one).
    ts: u64,
    /// The next `TIMESTAMP` repeats the previous one (it follows a chunk footer).
    dup_ts: bool,
    done: bool,
    footer: bool,
    tid: Option<u32>,
    ctx: Ctx,
    /// The state of other threads of the same file (old `raw2trace` wrote one file for all).
    others: HashMap<u32, Ctx>,
    accesses: u64,
    /// What the file says about itself (the first of each).
    version: Option<u64>,
    file_type: Option<u64>,
    page_size: Option<u64>,
    cache_line: Option<u64>,
    pid: Option<u64>,
}

fn is_instr(t: u16) -> bool {
    (ty::INSTR..=ty::INSTR_RETURN).contains(&t)
        || matches!(t, ty::INSTR_SYSENTER | ty::INSTR_TAKEN_JUMP | ty::INSTR_UNTAKEN_JUMP)
}

fn is_prefetch(t: u16) -> bool {
    (ty::PREFETCH..=ty::PREFETCH_INSTR).contains(&t)
        || (ty::PREFETCH_READ_L1_NT..=ty::PREFETCH_WRITE_L3_NT).contains(&t)
}

/// The architecture a `FILETYPE` value names.
fn arch(ft: u64) -> &'static str {
    if ft & file_type::ARCH_AARCH64 != 0 {
        "aarch64"
    } else if ft & file_type::ARCH_ARM32 != 0 {
        "arm"
    } else if ft & file_type::ARCH_X86_32 != 0 {
        "i386"
    } else if ft & file_type::ARCH_X86_64 != 0 {
        "x86_64"
    } else {
        "unspecified"
    }
}

impl ThreadFile {
    fn new(rr: Records) -> ThreadFile {
        ThreadFile {
            rr,
            peeked: None,
            ts: 0,
            dup_ts: false,
            done: false,
            footer: false,
            tid: None,
            ctx: Ctx::default(),
            others: HashMap::new(),
            accesses: 0,
            version: None,
            file_type: None,
            page_size: None,
            cache_line: None,
            pid: None,
        }
    }

    fn corrupt(&self, at: u64, detail: String) -> Error {
        self.rr.corrupt(at, detail)
    }

    /// Read the metadata records at the start (header, version, file type, thread, pid, page
    /// size, ...) up to the first timestamp or the first other record.
    fn preamble(&mut self, ifetch: bool) -> Result<()> {
        let mut scratch = Batch::default();
        loop {
            let Some((at, r)) = self.rr.next()? else {
                if self.rr.count == 0 {
                    return Err(Error::Empty(self.rr.path.clone()));
                }
                return Ok(());
            };
            if !matches!(r.ty, ty::HEADER | ty::THREAD | ty::PID | ty::MARKER) {
                self.peeked = Some((at, r));
                return Ok(());
            }
            if let Step::Timestamp = self.decode(at, r, &mut scratch, ifetch)? {
                return Ok(());
            }
        }
    }

    /// Decode records into `batch` until it is full, a timestamp comes, or the file ends.
    fn run(&mut self, batch: &mut Batch, ifetch: bool) -> Result<Stop> {
        loop {
            if batch.len() >= IMPORT_BATCH {
                return Ok(Stop::Full);
            }
            let (at, r) = match self.peeked.take() {
                Some(x) => x,
                None => match self.rr.next()? {
                    Some(x) => x,
                    None => {
                        self.done = true;
                        if !self.footer {
                            return Err(Error::Truncated {
                                what: format!("drmemtrace trace {}", self.rr.path),
                                accesses: self.accesses,
                            });
                        }
                        return Ok(Stop::End);
                    }
                },
            };
            if let Step::Timestamp = self.decode(at, r, batch, ifetch)? {
                return Ok(Stop::Timestamp);
            }
        }
    }

    /// The thread of a memory reference or instruction.
    fn need_tid(&self, at: u64, r: &Rec) -> Result<u32> {
        self.tid.ok_or_else(|| self.corrupt(at, format!("a record of type {} comes before any thread record", r.ty)))
    }

    fn push(&mut self, batch: &mut Batch, tid: u32, addr: u64, size: u16, kind: AccessKind) {
        batch.push_access(Access { addr, icount: self.ctx.icount, tid, size: size.max(1), kind });
        self.accesses += 1;
    }

    /// Decode one record (at byte offset `at`).
    fn decode(&mut self, at: u64, r: Rec, batch: &mut Batch, ifetch: bool) -> Result<Step> {
        if self.footer {
            return Err(self.corrupt(
                at,
                format!("a record of type {} follows the footer record, which ends a thread's trace", r.ty),
            ));
        }
        let first = self.rr.count == 1;
        if first && r.ty != ty::HEADER {
            return Err(self.corrupt(
                at,
                format!(
                    "the first record has type {}, not {} (the header), so this is not a drmemtrace trace in the final format raw2trace writes",
                    r.ty,
                    ty::HEADER
                ),
            ));
        }
        match r.ty {
            ty::READ => {
                let tid = self.need_tid(at, &r)?;
                self.push(batch, tid, r.addr, r.size, AccessKind::Load);
            }
            ty::WRITE => {
                let tid = self.need_tid(at, &r)?;
                self.push(batch, tid, r.addr, r.size, AccessKind::Store);
            }
            t if is_prefetch(t) => {
                let tid = self.need_tid(at, &r)?;
                self.push(batch, tid, r.addr, r.size, AccessKind::Load);
            }
            t if is_instr(t) || t == ty::INSTR_NO_FETCH || t == ty::INSTR_MAYBE_FETCH => {
                let tid = self.need_tid(at, &r)?;
                if r.size == 0 {
                    // Only the pc of the data references that follow.
                    return Ok(Step::Next);
                }
                let fetched = match t {
                    ty::INSTR_NO_FETCH => false,
                    ty::INSTR_MAYBE_FETCH => self.ctx.prev_pc != Some(r.addr),
                    _ => true,
                };
                self.ctx.prev_pc = Some(r.addr);
                self.ctx.next_pc = Some(r.addr.wrapping_add(r.size as u64));
                if fetched {
                    self.ctx.icount += 1;
                    if ifetch {
                        self.push(batch, tid, r.addr, r.size, AccessKind::IFetch);
                    }
                }
            }
            ty::INSTR_BUNDLE => {
                let tid = self.need_tid(at, &r)?;
                let n = r.size as usize;
                if n > r.bytes.len() {
                    return Err(self.corrupt(
                        at,
                        format!(
                            "an instruction bundle of {n} instructions, but a bundle holds at most {}",
                            r.bytes.len()
                        ),
                    ));
                }
                let Some(mut pc) = self.ctx.next_pc else {
                    return Err(self.corrupt(at, "an instruction bundle with no instruction before it".into()));
                };
                for &len in &r.bytes[..n] {
                    self.ctx.icount += 1;
                    if ifetch {
                        self.push(batch, tid, pc, len as u16, AccessKind::IFetch);
                    }
                    pc = pc.wrapping_add(len as u64);
                }
                self.ctx.next_pc = Some(pc);
            }
            ty::INSTR_FLUSH
            | ty::INSTR_FLUSH_END
            | ty::DATA_FLUSH
            | ty::DATA_FLUSH_END
            | ty::HARDWARE_PREFETCH
            | ty::ENCODING
            | ty::THREAD_EXIT => {}
            ty::THREAD => {
                let Ok(tid) = u32::try_from(r.addr) else {
                    return Err(self.corrupt(at, format!("thread id {} does not fit in 32 bits", r.addr)));
                };
                if self.tid != Some(tid) {
                    if let Some(old) = self.tid {
                        self.others.insert(old, self.ctx);
                    }
                    self.ctx = self.others.remove(&tid).unwrap_or_default();
                    self.tid = Some(tid);
                }
            }
            ty::PID => {
                self.pid.get_or_insert(r.addr);
            }
            ty::HEADER => {
                if !first {
                    return Err(self.corrupt(at, "a second header record (a header starts the file only)".into()));
                }
                self.check_version(at, r.addr, true)?;
            }
            ty::FOOTER => self.footer = true,
            ty::MARKER => match r.size {
                marker::TIMESTAMP => {
                    if self.dup_ts {
                        // A new chunk repeats the last timestamp: not a new point in time.
                        self.dup_ts = false;
                    } else {
                        self.ts = r.addr;
                        return Ok(Step::Timestamp);
                    }
                }
                marker::CHUNK_FOOTER => self.dup_ts = true,
                marker::VERSION => self.check_version(at, r.addr, false)?,
                marker::FILETYPE => {
                    self.check_file_type(at, r.addr, ifetch)?;
                    self.file_type.get_or_insert(r.addr);
                }
                marker::PAGE_SIZE => {
                    if !r.addr.is_power_of_two() {
                        return Err(
                            self.corrupt(at, format!("the page-size marker says {}, not a power of two", r.addr))
                        );
                    }
                    self.page_size.get_or_insert(r.addr);
                }
                marker::CACHE_LINE_SIZE => {
                    self.cache_line.get_or_insert(r.addr);
                }
                _ => {}
            },
            t => {
                return Err(self.corrupt(
                    at,
                    format!(
                        "record type {t} is unknown (DynamoRIO's trace_entry.h defines 0 to {}): a trace of a newer DynamoRIO, or not a drmemtrace trace",
                        ty::LAST
                    ),
                ));
            }
        }
        Ok(Step::Next)
    }

    /// A trace version (of the header record or a version marker) must be a small number; a
    /// 32-bit trace's 8-byte records read as 12-byte ones show as the header running into the
    /// next record.
    fn check_version(&mut self, at: u64, v: u64, header: bool) -> Result<()> {
        if (1..=0xffff).contains(&v) {
            self.version.get_or_insert(v);
            return Ok(());
        }
        let next_type = ((v >> 32) & 0xffff) as u16;
        if header && matches!(next_type, ty::MARKER | ty::THREAD) {
            return Err(Error::Import(format!(
                "{} looks like a trace of a 32-bit program (its header record at byte offset {at} runs into the next record, as 8-byte records do), but xlat reads the 12-byte records of 64-bit traces only",
                self.rr.what()
            )));
        }
        let what = if header { "header record" } else { "version marker" };
        Err(self.corrupt(at, format!("the {what} holds version {v}, which is no drmemtrace trace version")))
    }

    /// Refuse the kinds of trace whose accesses would mislead a translation simulator.
    fn check_file_type(&self, at: u64, ft: u64, ifetch: bool) -> Result<()> {
        use file_type::*;
        let why = if ft & (FILTERED | IFILTERED | DFILTERED) != 0 {
            "a filtered trace (it holds only the accesses that missed drmemtrace's L0 cache filter, so most translations would be missing); trace again without -L0I_filter and -L0D_filter"
        } else if ft & (ARCH_X86_32 | ARCH_ARM32) != 0 {
            "a trace of a 32-bit program, whose 8-byte records xlat does not read"
        } else if ft & INSTRUCTION_ONLY != 0 && !ifetch {
            "an instruction-only trace without data references; read it with ?ifetch=1 (xlat import --ifetch) to get its instruction fetches"
        } else {
            return Ok(());
        };
        Err(Error::Import(format!("{}: the file-type marker at byte offset {at} says 0x{ft:x}, {why}", self.rr.what())))
    }
}

/// A drmemtrace trace (one file, or a directory of per-thread files) as an [`EventSource`].
pub struct DrMemtraceSource {
    header: Header,
    threads: Vec<ThreadFile>,
    /// The thread being decoded, until its next timestamp.
    cur: Option<usize>,
    ifetch: bool,
    /// Bytes read from the files so far, and their total size.
    read: Arc<AtomicU64>,
    total: Option<u64>,
}

impl DrMemtraceSource {
    /// Open `path`: a `.trace.zip`, `.trace.gz` or uncompressed trace file, or a directory of
    /// them (a `drmemtrace.*.dir` is read through its `trace/` subdirectory). With `ifetch`,
    /// every fetched instruction also becomes an instruction-fetch access.
    pub fn open(path: &str, ifetch: bool) -> Result<DrMemtraceSource> {
        let files = trace_files(path)?;
        let read = Arc::new(AtomicU64::new(0));
        let mut total = 0;
        let mut threads = Vec::with_capacity(files.len());
        for f in &files {
            let (rr, len) = Records::open(f, read.clone())?;
            total += len;
            threads.push(ThreadFile::new(rr));
        }
        let mut s = Self::from_records(path, threads, files.len() > 1, ifetch)?;
        s.read = read;
        s.total = Some(total);
        Ok(s)
    }

    /// Read uncompressed record streams (one per thread file); `names` appear in errors.
    pub fn from_readers(streams: Vec<(String, Box<dyn Read + Send>)>, ifetch: bool) -> Result<DrMemtraceSource> {
        let read = Arc::new(AtomicU64::new(0));
        let several = streams.len() > 1;
        let name = streams.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(",");
        let threads = streams
            .into_iter()
            .map(|(n, r)| ThreadFile::new(Records::new(&n, Container::Plain, r, read.clone())))
            .collect();
        Self::from_records(&name, threads, several, ifetch)
    }

    fn from_records(name: &str, mut threads: Vec<ThreadFile>, dir: bool, ifetch: bool) -> Result<DrMemtraceSource> {
        for t in &mut threads {
            t.preamble(ifetch)?;
        }
        let mut header = Header::new(format!("xlat {} drmemtrace import", env!("CARGO_PKG_VERSION")));
        let page = threads.iter().find_map(|t| t.page_size);
        header.page_size_hint = page.unwrap_or(4096);
        for tid in threads.iter().filter_map(|t| t.tid) {
            if !header.threads.contains(&tid) {
                header.threads.push(tid);
            }
        }
        let m = &mut header.metadata;
        m.insert("imported_from".into(), name.into());
        m.insert("importer".into(), "drmemtrace".into());
        let mut containers: Vec<&str> = threads.iter().map(|t| t.rr.container.name()).collect();
        containers.sort_unstable();
        containers.dedup();
        m.insert("compression".into(), containers.join(",").into());
        if dir {
            m.insert("files".into(), threads.len().into());
            m.insert("threads_interleaved_by".into(), "timestamp".into());
        }
        if let Some(v) = threads.iter().find_map(|t| t.version) {
            m.insert("drmemtrace_version".into(), v.into());
        }
        if let Some(ft) = threads.iter().find_map(|t| t.file_type) {
            m.insert("drmemtrace_file_type".into(), ft.into());
            m.insert("arch".into(), arch(ft).into());
        }
        let mut pids: Vec<u64> = threads.iter().filter_map(|t| t.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        match pids.as_slice() {
            [] => {}
            [pid] => {
                m.insert("pid".into(), (*pid).into());
            }
            _ => {
                m.insert("pids".into(), pids.into());
            }
        }
        if let Some(c) = threads.iter().find_map(|t| t.cache_line) {
            m.insert("cache_line_size".into(), c.into());
        }
        if page.is_none() {
            m.insert("page_size_assumed".into(), true.into());
        }
        if ifetch {
            m.insert("ifetch".into(), true.into());
        }
        Ok(DrMemtraceSource { header, threads, cur: None, ifetch, read: Arc::new(AtomicU64::new(0)), total: None })
    }

    /// The unfinished thread whose pending records are the earliest (ties: the first file).
    fn pick(&self) -> Option<usize> {
        self.threads.iter().enumerate().filter(|(_, t)| !t.done).min_by_key(|&(i, t)| (t.ts, i)).map(|(i, _)| i)
    }
}

impl EventSource for DrMemtraceSource {
    fn header(&self) -> &Header {
        &self.header
    }
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool> {
        batch.clear();
        while batch.len() < IMPORT_BATCH {
            let i = match self.cur.or_else(|| self.pick()) {
                Some(i) => i,
                None => break,
            };
            self.cur = Some(i);
            match self.threads[i].run(batch, self.ifetch)? {
                Stop::Full => break,
                Stop::Timestamp | Stop::End => self.cur = None,
            }
        }
        Ok(!batch.has_no_events() || self.threads.iter().any(|t| !t.done))
    }
    fn progress(&self) -> (u64, Option<u64>) {
        (self.read.load(Ordering::Relaxed), self.total)
    }
}

/// The trace files `path` names: itself, or the per-thread files of a directory (of its
/// `trace/` subdirectory when it has one), sorted by name.
fn trace_files(path: &str) -> Result<Vec<PathBuf>> {
    let p = Path::new(path);
    let md = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
    if !md.is_dir() {
        return Ok(vec![p.to_path_buf()]);
    }
    let dir = if p.join("trace").is_dir() { p.join("trace") } else { p.to_path_buf() };
    let mut files = Vec::new();
    let mut unreadable = None;
    for e in std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))? {
        let e = e.map_err(|e| Error::io(&dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".trace") || name.ends_with(".trace.gz") || name.ends_with(".trace.zip") {
            files.push(e.path());
        } else if [".trace.lz4", ".trace.sz", ".trace.zlib"].iter().any(|s| name.ends_with(s)) {
            unreadable.get_or_insert(name);
        }
    }
    files.sort();
    if let Some(name) = unreadable {
        return Err(Error::Import(format!(
            "{} holds {name}, compressed in a way xlat does not read (it reads .trace, .trace.gz and .trace.zip files): decompress it, or have raw2trace write zip or gzip",
            dir.display()
        )));
    }
    if files.is_empty() {
        if p.join("raw").is_dir() {
            return Err(Error::Import(format!(
                "{path} holds the raw files of a drmemtrace run but no trace/ directory: convert them with DynamoRIO's raw2trace first (xlat reads the final format it writes)"
            )));
        }
        return Err(Error::Import(format!(
            "{} holds no drmemtrace trace files (named *.trace, *.trace.gz or *.trace.zip, as in the trace/ directory of a drmemtrace.*.dir)",
            dir.display()
        )));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn rec(t: u16, size: u16, addr: u64) -> Vec<u8> {
        let mut v = t.to_le_bytes().to_vec();
        v.extend_from_slice(&size.to_le_bytes());
        v.extend_from_slice(&addr.to_le_bytes());
        assert_eq!(v.len(), RECORD);
        v
    }

    fn mark(m: u16, value: u64) -> Vec<u8> {
        rec(ty::MARKER, m, value)
    }

    /// The start of a file as raw2trace writes it, for thread `tid` of process 1000.
    fn preamble(tid: u64, file_type: u64) -> Vec<u8> {
        [
            rec(ty::HEADER, 0, 6),
            mark(marker::VERSION, 6),
            mark(marker::FILETYPE, file_type),
            rec(ty::THREAD, 4, tid),
            rec(ty::PID, 4, 1000),
            mark(marker::CACHE_LINE_SIZE, 64),
            mark(marker::CHUNK_INSTR_COUNT, 10_000_000),
            mark(marker::PAGE_SIZE, 16384),
        ]
        .concat()
    }

    const X86_64: u64 = file_type::ARCH_X86_64 | file_type::ENCODINGS;

    /// A thread exercising every kind of record: (bytes, expected with ifetch off, with it on),
    /// each expected access as (addr, kind, icount, size).
    #[allow(clippy::type_complexity)]
    fn every_kind() -> (Vec<u8>, Vec<(u64, u8, u64, u16)>, Vec<(u64, u8, u64, u16)>) {
        let mut v = preamble(77, X86_64);
        let body = [
            mark(marker::TIMESTAMP, 13_300_000_000_000_000),
            mark(marker::CPU_ID, 3),
            rec(ty::ENCODING, 4, 0x0000_0000_1122_3344),
            rec(ty::INSTR, 4, 0x40_0000),
            rec(ty::READ, 8, 0x1000),
            rec(ty::INSTR_DIRECT_CALL, 5, 0x40_0004),
            rec(ty::WRITE, 8, 0x7ff0),
            rec(ty::INSTR_NO_FETCH, 2, 0x40_0009), // a rep iteration: no new instruction
            rec(ty::READ, 0, 0x2000),              // size 0 is recorded as 1
            rec(ty::INSTR_MAYBE_FETCH, 2, 0x40_0009), // same pc: not fetched
            rec(ty::INSTR_MAYBE_FETCH, 3, 0x40_000b), // new pc: fetched
            rec(ty::PREFETCHT0, 64, 0x3000),
            rec(ty::PREFETCH_WRITE_L2_NT, 64, 0x3040),
            rec(ty::HARDWARE_PREFETCH, 64, 0x9999_0000),
            rec(ty::INSTR_BUNDLE, 2, u64::from_le_bytes([3, 2, 0, 0, 0, 0, 0, 0])),
            rec(ty::INSTR, 0, 0x40_1000), // size 0: only the pc of the next data reference
            rec(ty::WRITE, 4, 0x4000),
            rec(ty::DATA_FLUSH, 64, 0x5000),
            rec(ty::INSTR_FLUSH, 0, 0x6000),
            rec(ty::INSTR_FLUSH_END, 0, 0x7000),
            mark(marker::CHUNK_FOOTER, 0),
            mark(99, 5),   // an unused marker kind
            mark(1000, 5), // a user marker
            rec(ty::INSTR_UNTAKEN_JUMP, 2, 0x40_0100),
            rec(ty::INSTR_SYSENTER, 2, 0x40_0102),
            rec(ty::THREAD_EXIT, 4, 77),
            rec(ty::FOOTER, 0, 0),
        ];
        v.extend(body.concat());
        let data = vec![
            (0x1000, 0, 1, 8),
            (0x7ff0, 1, 2, 8),
            (0x2000, 0, 2, 1),
            (0x3000, 0, 3, 64),
            (0x3040, 0, 3, 64),
            (0x4000, 1, 5, 4),
        ];
        let all = vec![
            (0x40_0000, 2, 1, 4),
            (0x1000, 0, 1, 8),
            (0x40_0004, 2, 2, 5),
            (0x7ff0, 1, 2, 8),
            (0x2000, 0, 2, 1),
            (0x40_000b, 2, 3, 3),
            (0x3000, 0, 3, 64),
            (0x3040, 0, 3, 64),
            (0x40_000e, 2, 4, 3), // the bundle continues after the last instruction
            (0x40_0011, 2, 5, 2),
            (0x4000, 1, 5, 4),
            (0x40_0100, 2, 6, 2),
            (0x40_0102, 2, 7, 2),
        ];
        (v, data, all)
    }

    fn source(files: Vec<Vec<u8>>, ifetch: bool) -> Result<DrMemtraceSource> {
        let streams = files
            .into_iter()
            .enumerate()
            .map(|(i, b)| (format!("t{i}"), Box::new(std::io::Cursor::new(b)) as Box<dyn Read + Send>))
            .collect();
        DrMemtraceSource::from_readers(streams, ifetch)
    }

    fn read(files: Vec<Vec<u8>>, ifetch: bool) -> Result<Batch> {
        let mut s = source(files, ifetch)?;
        crate::event_source::collect(|b| s.next_batch(b))
    }

    fn rows(b: &Batch) -> Vec<(u64, u8, u64, u16)> {
        (0..b.len()).map(|i| (b.addr[i], b.kind[i], b.icount[i], b.size[i])).collect()
    }

    #[test]
    fn decodes_every_record_kind() {
        let (v, data, all) = every_kind();
        let s = source(vec![v.clone()], false).unwrap();
        let h = s.header();
        assert_eq!(h.page_size_hint, 16384);
        assert_eq!(h.threads, vec![77]);
        assert_eq!(h.metadata["pid"], 1000);
        assert_eq!(h.metadata["drmemtrace_version"], 6);
        assert_eq!(h.metadata["arch"], "x86_64");
        assert_eq!(h.metadata["cache_line_size"], 64);
        assert!(h.metadata.get("ifetch").is_none() && h.metadata.get("page_size_assumed").is_none());
        let b = read(vec![v.clone()], false).unwrap();
        assert_eq!(rows(&b), data);
        assert!(b.tid.iter().all(|&t| t == 77) && b.side.is_empty());
        let b = read(vec![v], true).unwrap();
        assert_eq!(rows(&b), all);
    }

    #[test]
    fn threads_interleave_by_timestamp() {
        // Thread 1 at times 10 and 30, thread 2 at 20 and 40: the segments alternate. Thread 1's
        // chunk footer repeats time 10, which is no new point in time.
        let mut a = preamble(1, X86_64);
        a.extend(
            [
                mark(marker::TIMESTAMP, 10),
                rec(ty::INSTR, 4, 0x100),
                rec(ty::READ, 8, 0xa1),
                mark(marker::CHUNK_FOOTER, 0),
                mark(marker::RECORD_ORDINAL, 9),
                mark(marker::TIMESTAMP, 10),
                rec(ty::READ, 8, 0xa2),
                mark(marker::TIMESTAMP, 30),
                rec(ty::INSTR, 4, 0x104),
                rec(ty::WRITE, 8, 0xa3),
                rec(ty::FOOTER, 0, 0),
            ]
            .concat(),
        );
        let mut b = preamble(2, X86_64);
        b.extend(
            [
                mark(marker::TIMESTAMP, 20),
                rec(ty::INSTR, 4, 0x200),
                rec(ty::READ, 8, 0xb1),
                mark(marker::TIMESTAMP, 40),
                rec(ty::INSTR, 4, 0x204),
                rec(ty::READ, 8, 0xb2),
                rec(ty::FOOTER, 0, 0),
            ]
            .concat(),
        );
        let s = source(vec![b.clone(), a.clone()], false).unwrap();
        assert_eq!(s.header().threads, vec![2, 1]);
        assert_eq!(s.header().metadata["threads_interleaved_by"], "timestamp");
        let got = read(vec![b, a], false).unwrap();
        assert_eq!(got.addr, vec![0xa1, 0xa2, 0xb1, 0xa3, 0xb2]);
        assert_eq!(got.tid, vec![1, 1, 2, 1, 2]);
        assert_eq!(got.icount, vec![1, 1, 1, 2, 2]); // per thread
    }

    #[test]
    fn one_file_may_switch_threads() {
        // Old raw2trace wrote all threads into one file, switching with THREAD records.
        let mut v = preamble(5, X86_64);
        v.extend(
            [
                rec(ty::INSTR, 4, 0x100),
                rec(ty::READ, 8, 0x10),
                rec(ty::THREAD, 4, 6),
                rec(ty::INSTR, 4, 0x200),
                rec(ty::READ, 8, 0x20),
                rec(ty::THREAD, 4, 5),
                rec(ty::INSTR, 4, 0x104),
                rec(ty::READ, 8, 0x30),
                rec(ty::FOOTER, 0, 0),
            ]
            .concat(),
        );
        let b = read(vec![v], false).unwrap();
        assert_eq!((b.tid.clone(), b.icount.clone()), (vec![5, 6, 5], vec![1, 1, 2]));
    }

    fn err(files: Vec<Vec<u8>>, ifetch: bool) -> String {
        match read(files, ifetch) {
            Ok(b) => panic!("read {} accesses", b.len()),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn malformed_input_names_the_offset() {
        let head = preamble(1, X86_64);
        let n = head.len() as u64;
        // An unknown type.
        let v = [head.clone(), rec(ty::INSTR, 4, 0x100), rec(50, 8, 0x10)].concat();
        let e = err(vec![v], false);
        assert!(e.contains(&format!("byte offset {}:", n + 12)) && e.contains("record type 50 is unknown"), "{e}");
        // A partial record at the end.
        let mut v = [head.clone(), rec(ty::INSTR, 4, 0x100)].concat();
        v.extend_from_slice(&[0; 5]);
        let e = err(vec![v], false);
        assert!(e.contains(&format!("byte offset {}:", n + 12)) && e.contains("partial record of 5 bytes"), "{e}");
        // A filtered trace, or an instruction-only one without ifetch, is refused at its marker.
        let e = err(vec![preamble(1, X86_64 | file_type::DFILTERED)], false);
        assert!(e.contains("marker at byte offset 24") && e.contains("filtered trace"), "{e}");
        let only = [preamble(1, X86_64 | file_type::INSTRUCTION_ONLY), rec(ty::INSTR, 4, 0x100), rec(ty::FOOTER, 0, 0)];
        let e = err(vec![only.concat()], false);
        assert!(e.contains("marker at byte offset 24") && e.contains("ifetch=1"), "{e}");
        assert_eq!(read(vec![only.concat()], true).unwrap().len(), 1);
        // Not starting with the header: not a final-format trace (a raw file, say).
        let e = err(vec![[rec(ty::INSTR, 4, 0x100), head.clone()].concat()], false);
        assert!(e.contains("byte offset 0:") && e.contains("not a drmemtrace trace"), "{e}");
        // A second header, a record after the footer, a data record before any thread.
        let v = [head.clone(), rec(ty::HEADER, 0, 6)].concat();
        assert!(err(vec![v], false).contains(&format!("byte offset {n}: a second header")));
        let v = [head.clone(), rec(ty::FOOTER, 0, 0), rec(ty::READ, 8, 0x10)].concat();
        assert!(err(vec![v], false).contains(&format!("byte offset {}: a record of type 0 follows the footer", n + 12)));
        let v = [rec(ty::HEADER, 0, 6), rec(ty::READ, 8, 0x10)].concat();
        assert!(err(vec![v], false).contains("byte offset 12: a record of type 0 comes before any thread record"));
        // An ending without the footer is a truncated trace.
        let v = [head.clone(), rec(ty::INSTR, 4, 0x100), rec(ty::READ, 8, 0x10)].concat();
        let e = err(vec![v], false);
        assert!(e.contains("is truncated: it ends after 1 accesses"), "{e}");
        // A bad version; a 32-bit trace (8-byte records) runs its header into the next record.
        let e = err(vec![[rec(ty::HEADER, 0, 0), head.clone()].concat()], false);
        assert!(e.contains("byte offset 0: the header record holds version 0"), "{e}");
        let mut v32 = ty::HEADER.to_le_bytes().to_vec();
        v32.extend_from_slice(&[0, 0, 6, 0, 0, 0]);
        v32.extend_from_slice(&ty::MARKER.to_le_bytes());
        v32.extend_from_slice(&marker::VERSION.to_le_bytes());
        v32.extend_from_slice(&[6, 0, 0, 0]);
        let e = err(vec![v32], false);
        assert!(e.contains("32-bit program") && e.contains("byte offset 0"), "{e}");
        // A bundle with nothing before it; a bad page size.
        let v = [head.clone(), rec(ty::INSTR_BUNDLE, 1, 3)].concat();
        assert!(err(vec![v], false).contains(&format!("byte offset {n}: an instruction bundle with no instruction")));
        let v = [rec(ty::HEADER, 0, 6), mark(marker::PAGE_SIZE, 4095)].concat();
        assert!(err(vec![v], false).contains("byte offset 12: the page-size marker says 4095"));
        // No records at all.
        assert!(matches!(read(vec![Vec::new()], false), Err(Error::Empty(_))));
    }

    /// A fresh directory under the system's temporary directory.
    fn temp_dir(tag: &str) -> PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        let d = std::env::temp_dir().join(format!(
            "xlat-drmemtrace-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A zip archive of stored entries.
    fn write_zip(path: &Path, entries: &[(&str, &[u8])]) {
        let mut w = zip::ZipWriter::new(File::create(path).unwrap());
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        for (name, data) in entries {
            w.start_file(*name, opts).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap();
    }

    fn read_path(path: &Path, ifetch: bool) -> Result<Batch> {
        let mut s = DrMemtraceSource::open(path.to_str().unwrap(), ifetch)?;
        let b = crate::event_source::collect(|b| s.next_batch(b))?;
        let (done, total) = s.progress();
        assert!(done > 0 && done <= total.unwrap(), "{done} of {total:?}");
        Ok(b)
    }

    #[test]
    fn reads_zip_chunks_gzip_and_directories() {
        let (v, data, all) = every_kind();
        let d = temp_dir("files");
        // The records split into two chunks at a record boundary, as raw2trace writes them.
        let cut = 12 * 14;
        let zipped = d.join("drmemtrace.app.77.0000.trace.zip");
        write_zip(&zipped, &[("chunk.0000", &v[..cut]), ("chunk.0001", &v[cut..])]);
        assert_eq!(rows(&read_path(&zipped, false).unwrap()), data);
        assert_eq!(rows(&read_path(&zipped, true).unwrap()), all);
        let gz = d.join("t.trace.gz");
        let mut enc = flate2::write::GzEncoder::new(File::create(&gz).unwrap(), flate2::Compression::fast());
        enc.write_all(&v).unwrap();
        enc.finish().unwrap();
        assert_eq!(rows(&read_path(&gz, false).unwrap()), data);
        let plain = d.join("plain.trace");
        std::fs::write(&plain, &v).unwrap();
        assert_eq!(rows(&read_path(&plain, false).unwrap()), data);

        // A .dir holding trace/: its per-thread files, whatever their compression; other files
        // (the schedule files, modules.log) are left alone.
        let run = temp_dir("run");
        let tdir = run.join("trace");
        std::fs::create_dir(&tdir).unwrap();
        std::fs::copy(&zipped, tdir.join("drmemtrace.app.77.0000.trace.zip")).unwrap();
        let mut other = preamble(78, X86_64);
        other.extend(
            [mark(marker::TIMESTAMP, 1), rec(ty::INSTR, 4, 0x10), rec(ty::READ, 2, 0xbeef), rec(ty::FOOTER, 0, 0)]
                .concat(),
        );
        std::fs::write(tdir.join("drmemtrace.app.78.0000.trace"), &other).unwrap();
        std::fs::write(tdir.join("modules.log"), b"not a trace").unwrap();
        write_zip(&tdir.join("cpu_schedule.bin.zip"), &[("0", b"x")]);
        let b = read_path(&run, false).unwrap();
        // Thread 78's only timestamp (1) is earlier than thread 77's.
        assert_eq!(b.addr[0], 0xbeef);
        assert_eq!(b.tid[0], 78);
        assert_eq!(rows(&b)[1..], data[..]);

        // Damage: a CRC mismatch, a partial record inside a chunk, an lz4 file, a raw-only run.
        let mut bytes = std::fs::read(&zipped).unwrap();
        let instr = rec(ty::INSTR, 4, 0x40_0000);
        let at = bytes.windows(RECORD).position(|w| w == instr).unwrap();
        bytes[at + 5] ^= 1; // the address: the records still decode, the CRC tells
        let damaged = d.join("damaged.trace.zip");
        std::fs::write(&damaged, &bytes).unwrap();
        let e = read_path(&damaged, false).unwrap_err().to_string();
        assert!(
            e.contains("zip entry chunk.0000") && e.contains("CRC-32") && e.contains(&format!("offset {cut}")),
            "{e}"
        );
        let odd = d.join("odd.trace.zip");
        write_zip(&odd, &[("chunk.0000", &v[..cut - 3]), ("chunk.0001", &v[cut - 3..])]);
        let e = read_path(&odd, false).unwrap_err().to_string();
        assert!(e.contains("zip entry chunk.0000") && e.contains(&format!("offset {}", cut - 12)), "{e}");
        let lz4 = temp_dir("lz4");
        std::fs::write(lz4.join("drmemtrace.app.1.0000.trace.lz4"), b"\x04\x22\x4d\x18").unwrap();
        let e = read_path(&lz4, false).unwrap_err().to_string();
        assert!(e.contains("compressed in a way xlat does not read"), "{e}");
        let raw = temp_dir("raw");
        std::fs::create_dir(raw.join("raw")).unwrap();
        let e = read_path(&raw, false).unwrap_err().to_string();
        assert!(e.contains("raw2trace first"), "{e}");
        let empty = d.join("empty.trace");
        std::fs::write(&empty, b"").unwrap();
        assert!(matches!(read_path(&empty, false), Err(Error::Empty(_))));
        for dir in [d, run, lz4, raw] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}
