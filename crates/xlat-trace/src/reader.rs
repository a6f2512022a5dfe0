//! Streaming trace reader: one block in memory at a time.

use crate::error::{Error, Result};
use crate::event::Batch;
use crate::event::SideEvent;
use crate::event_source::EventSource;
use crate::format::{self, Footer, Header, ThreadSpan, ThreadTotals};
use crate::input::read_full;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

/// Capacity of the file reader's buffer (see [`TraceReader::open`]).
const READ_BUFFER: usize = 4 << 10;

/// Reads an xlat trace from any `Read`, validating every block.
pub struct TraceReader<R: Read> {
    input: R,
    name: String,
    header: Header,
    footer: Option<Footer>,
    decompressor: zstd::bulk::Decompressor<'static>,
    comp: Vec<u8>,
    raw: Vec<u8>,
    offset: u64,
    accesses: u64,
    side_events: u64,
    blocks: u64,
    /// The file's format version is 1.`minor`; from 1.2 on its blocks are numbered.
    minor: u16,
    /// Each thread's instruction count at the end of the blocks read so far, and the spans of
    /// the block just decoded (instruction counts must not go back from block to block).
    last_icount: HashMap<u32, u64>,
    spans: Vec<ThreadSpan>,
    /// Per thread with an access or a side event in the blocks read so far: its accesses and
    /// largest instruction count, the end record's per-thread figures.
    held: HashMap<u32, ThreadTotals>,
}

impl TraceReader<BufReader<File>> {
    /// Open a trace file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let f = File::open(path).map_err(|e| Error::io(path, e))?;
        if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            return Err(Error::io(path, std::io::Error::other("is a directory, not a trace file")));
        }
        // A small buffer: the records' few-byte headers come from it, and a block's frame
        // longer than the buffer is read mostly straight into `comp` (BufReader passes a read
        // at least its capacity long to the file when it holds nothing), where a 1 MiB buffer
        // copied every frame once more (about 2 instructions a byte under cachegrind).
        TraceReader::new(BufReader::with_capacity(READ_BUFFER, f), path.display().to_string())
    }
}

impl<R: Read> TraceReader<R> {
    /// Read and check the header. `name` is used in error messages (usually the path).
    pub fn new(mut input: R, name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        let mut fixed = [0u8; 16];
        let got = read_full(&mut input, &mut fixed)?;
        if got == 0 {
            return Err(Error::Empty(name));
        }
        if got < 8 || &fixed[..8] != format::MAGIC {
            return Err(Error::BadMagic(name));
        }
        if got < 16 {
            return Err(Error::Truncated { what: name, accesses: 0 });
        }
        let major = u16::from_le_bytes([fixed[8], fixed[9]]);
        let minor = u16::from_le_bytes([fixed[10], fixed[11]]);
        // A newer minor version may hold records this reader does not know.
        if major != format::VERSION_MAJOR || minor > format::VERSION_MINOR {
            return Err(Error::Version {
                what: name,
                major,
                minor,
                supported: format::VERSION_MAJOR,
                supported_minor: format::VERSION_MINOR,
            });
        }
        let len = u32::from_le_bytes(fixed[12..16].try_into().unwrap()) as usize;
        if len > 64 << 20 {
            return Err(Error::Corrupt {
                what: name,
                offset: 12,
                detail: format!("header length {len} is implausible"),
            });
        }
        let mut json = vec![0u8; len + 4];
        if read_full(&mut input, &mut json)? < json.len() {
            return Err(Error::Truncated { what: name, accesses: 0 });
        }
        let crc = u32::from_le_bytes(json[len..].try_into().unwrap());
        json.truncate(len);
        if crc32fast::hash(&json) != crc {
            return Err(Error::Corrupt { what: name, offset: 16, detail: "header checksum does not match".into() });
        }
        let header = Header::from_json(&json, true).map_err(|detail| Error::Corrupt {
            what: name.clone(),
            offset: 16,
            detail,
        })?;
        Ok(TraceReader {
            input,
            name,
            header,
            footer: None,
            decompressor: zstd::bulk::Decompressor::new()?,
            comp: Vec::new(),
            raw: Vec::new(),
            offset: 16 + len as u64 + 4,
            accesses: 0,
            side_events: 0,
            blocks: 0,
            minor,
            last_icount: HashMap::new(),
            spans: Vec::new(),
            held: HashMap::new(),
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The footer, once the end record has been read.
    pub fn footer(&self) -> Option<&Footer> {
        self.footer.as_ref()
    }

    /// The file's format version, (major, minor).
    pub fn version(&self) -> (u16, u16) {
        (format::VERSION_MAJOR, self.minor)
    }

    /// Whether the file's blocks carry sequence numbers (format 1.2 on), so that blocks
    /// reordered, repeated or dropped are detected. Older files are read with their block
    /// order unverified (`xlat convert` upgrades them).
    pub fn order_verified(&self) -> bool {
        self.minor >= format::SEQ_MINOR
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Accesses read so far.
    pub fn accesses_read(&self) -> u64 {
        self.accesses
    }

    /// Compressed bytes consumed so far.
    pub fn bytes_read(&self) -> u64 {
        self.offset
    }

    fn corrupt(&self, offset: u64, detail: impl Into<String>) -> Error {
        Error::Corrupt { what: self.name.clone(), offset, detail: detail.into() }
    }

    /// Instruction counts never go back within a thread, also from one block to the next (the
    /// rule the writer and the text reader enforce).
    fn check_spans(&mut self, at: u64) -> Result<()> {
        for k in 0..self.spans.len() {
            let ThreadSpan { tid, first, last, .. } = self.spans[k];
            let prev = self.last_icount.get(&tid).copied();
            if last < first || prev.is_some_and(|p| first < p) {
                let from = if last < first { first } else { prev.unwrap_or(0) };
                return Err(self.corrupt(
                    at,
                    format!("instruction count of thread {tid} goes back from {from} to {}", last.min(first)),
                ));
            }
            self.last_icount.insert(tid, last);
        }
        Ok(())
    }

    /// Add a block's threads (its spans and side events `side`) to the per-thread totals: a
    /// lookup per thread and per run of side events of one thread, not per access. A thread's
    /// accesses do not go back in instruction count (checked), so its largest access count is
    /// its last.
    fn tally(&mut self, side: &[SideEvent]) {
        let held = &mut self.held;
        let mut add = |tid: u32, accesses: u64, icount: u64| {
            let t = held.entry(tid).or_insert_with(|| ThreadTotals { tid, ..ThreadTotals::default() });
            t.accesses += accesses;
            t.instructions = t.instructions.max(icount);
        };
        for s in self.spans.iter().filter(|s| s.accesses > 0) {
            add(s.tid, s.accesses, s.last);
        }
        for run in side.chunk_by(|a, b| a.tid == b.tid) {
            add(run[0].tid, 0, run.iter().map(|s| s.icount).max().unwrap_or(0));
        }
    }

    /// Check every figure of the end record against the blocks read: why it disagrees, in one
    /// sentence, or `None`.
    fn footer_disagreement(&self, footer: &Footer) -> Option<String> {
        if footer.blocks != self.blocks {
            return Some(format!(
                "the end record counts {} blocks but {} precede it (blocks were dropped or repeated)",
                footer.blocks, self.blocks
            ));
        }
        if footer.accesses != self.accesses {
            return Some(format!(
                "the end record counts {} accesses but the blocks before it hold {}",
                footer.accesses, self.accesses
            ));
        }
        if footer.side_events != self.side_events {
            return Some(format!(
                "the end record counts {} side events but the blocks before it hold {}",
                footer.side_events, self.side_events
            ));
        }
        let mut held: Vec<ThreadTotals> = self.held.values().cloned().collect();
        held.sort_by_key(|t| t.tid);
        format::threads_disagreement("the end record", &footer.threads, &held)
    }

    fn truncated(&self) -> Error {
        Error::Truncated { what: self.name.clone(), accesses: self.accesses }
    }

    /// Clear `batch` and fill it with the next block. Returns `false` at the end of the trace.
    pub fn next_batch(&mut self, batch: &mut Batch) -> Result<bool> {
        batch.clear();
        self.append_block(batch)
    }

    /// Append the next block to `batch` (positions of side events are relative to the batch).
    pub fn append_block(&mut self, batch: &mut Batch) -> Result<bool> {
        if self.footer.is_some() {
            return Ok(false);
        }
        let at = self.offset;
        let mut tag = [0u8; 1];
        if read_full(&mut self.input, &mut tag)? == 0 {
            return Err(self.truncated());
        }
        match tag[0] {
            format::TAG_BLOCK => {
                // 1.2 on: u64 sequence number, then the counts (see docs/trace-format.md).
                let head = if self.order_verified() { 28 } else { 20 };
                let mut fr = [0u8; 28];
                if read_full(&mut self.input, &mut fr[..head])? < head {
                    return Err(self.truncated());
                }
                let (seq, counts) = fr[..head].split_at(head - 20);
                let w = |k: usize| u32::from_le_bytes(counts[4 * k..4 * k + 4].try_into().unwrap()) as usize;
                let (n_access, n_side, raw_len, comp_len, crc) = (w(0), w(1), w(2), w(3), w(4) as u32);
                if raw_len > format::MAX_BLOCK_RAW
                    || comp_len > format::MAX_BLOCK_RAW
                    || n_access > format::MAX_BLOCK_ACCESSES
                {
                    return Err(self.corrupt(at, "block lengths are implausible"));
                }
                self.comp.resize(comp_len, 0);
                if read_full(&mut self.input, &mut self.comp)? < comp_len {
                    return Err(self.truncated());
                }
                let mut hasher = crc32fast::Hasher::new();
                hasher.update(seq);
                hasher.update(&self.comp);
                if hasher.finalize() != crc {
                    return Err(self.corrupt(at, "block checksum does not match"));
                }
                if !seq.is_empty() {
                    let seq = u64::from_le_bytes(seq.try_into().unwrap());
                    if seq != self.blocks {
                        return Err(self.corrupt(
                            at,
                            format!(
                                "block {seq} stands where block {} belongs (blocks were reordered, repeated or dropped)",
                                self.blocks
                            ),
                        ));
                    }
                }
                self.raw.clear();
                self.raw.reserve(raw_len);
                let side_from = batch.side.len();
                match self.decompressor.decompress_to_buffer(&self.comp, &mut self.raw) {
                    Ok(k) if k == raw_len => {}
                    Ok(_) => return Err(self.corrupt(at, "block decompresses to the wrong size")),
                    Err(e) => return Err(self.corrupt(at, format!("block does not decompress ({e})"))),
                }
                let (n, s) =
                    format::decode_block_spans(&self.raw, batch, &mut self.spans).map_err(|d| self.corrupt(at, d))?;
                if n != n_access || s != n_side {
                    return Err(self.corrupt(at, "block frame counts disagree with its contents"));
                }
                self.check_spans(at)?;
                self.tally(&batch.side[side_from..]);
                self.offset += 1 + head as u64 + comp_len as u64;
                self.accesses += n as u64;
                self.side_events += s as u64;
                self.blocks += 1;
                Ok(true)
            }
            format::TAG_END => {
                let mut l = [0u8; 4];
                if read_full(&mut self.input, &mut l)? < 4 {
                    return Err(self.truncated());
                }
                let len = u32::from_le_bytes(l) as usize;
                if len > 64 << 20 {
                    return Err(self.corrupt(at, "end record length is implausible"));
                }
                let mut json = vec![0u8; len + 12];
                if read_full(&mut self.input, &mut json)? < json.len() {
                    return Err(self.truncated());
                }
                let crc = u32::from_le_bytes(json[len..len + 4].try_into().unwrap());
                if &json[len + 4..] != format::END_MAGIC {
                    return Err(self.corrupt(at, "end record lacks its closing magic"));
                }
                json.truncate(len);
                if crc32fast::hash(&json) != crc {
                    return Err(self.corrupt(at, "end record checksum does not match"));
                }
                let footer: Footer = serde_json::from_slice(&json)
                    .map_err(|e| self.corrupt(at, format!("end record JSON is invalid ({e})")))?;
                if let Some(detail) = self.footer_disagreement(&footer) {
                    return Err(self.corrupt(at, detail));
                }
                self.offset += 1 + 4 + len as u64 + 12;
                let mut extra = [0u8; 1];
                if read_full(&mut self.input, &mut extra)? != 0 {
                    return Err(self.corrupt(self.offset, "bytes follow the end record"));
                }
                self.footer = Some(footer);
                Ok(false)
            }
            t => Err(self.corrupt(at, format!("unknown record tag 0x{t:02x}"))),
        }
    }
}

/// A trace file opened as an [`EventSource`].
pub struct FileSource {
    reader: TraceReader<BufReader<File>>,
    len: u64,
}

impl FileSource {
    pub fn open(path: &str) -> Result<FileSource> {
        let reader = TraceReader::open(path)?;
        let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        Ok(FileSource { reader, len })
    }
}

impl EventSource for FileSource {
    fn header(&self) -> &Header {
        self.reader.header()
    }
    fn next_batch(&mut self, batch: &mut Batch) -> Result<bool> {
        self.reader.next_batch(batch)
    }
    fn progress(&self) -> (u64, Option<u64>) {
        (self.reader.bytes_read(), Some(self.len))
    }
    fn footer(&self) -> Option<&Footer> {
        self.reader.footer()
    }
    fn format(&self) -> Option<String> {
        let (major, minor) = self.reader.version();
        Some(if self.reader.order_verified() {
            format!("xlat {major}.{minor}")
        } else {
            format!(
                "xlat {major}.{minor} (blocks not numbered, so some reorderings go undetected; `xlat convert` upgrades it to {major}.{})",
                format::VERSION_MINOR
            )
        })
    }
}
