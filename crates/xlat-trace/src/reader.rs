//! Streaming trace reader: one block in memory at a time.

use crate::error::{Error, Result};
use crate::event::Batch;
use crate::event_source::EventSource;
use crate::format::{self, Footer, Header};
use crate::input::read_full;
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
        let header: Header = serde_json::from_slice(&json).map_err(|e| Error::Corrupt {
            what: name.clone(),
            offset: 16,
            detail: format!("header JSON is invalid ({e})"),
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
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The footer, once the end record has been read.
    pub fn footer(&self) -> Option<&Footer> {
        self.footer.as_ref()
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
                let mut fr = [0u8; 20];
                if read_full(&mut self.input, &mut fr)? < 20 {
                    return Err(self.truncated());
                }
                let w = |k: usize| u32::from_le_bytes(fr[4 * k..4 * k + 4].try_into().unwrap()) as usize;
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
                if crc32fast::hash(&self.comp) != crc {
                    return Err(self.corrupt(at, "block checksum does not match"));
                }
                self.raw.clear();
                self.raw.reserve(raw_len);
                match self.decompressor.decompress_to_buffer(&self.comp, &mut self.raw) {
                    Ok(k) if k == raw_len => {}
                    Ok(_) => return Err(self.corrupt(at, "block decompresses to the wrong size")),
                    Err(e) => return Err(self.corrupt(at, format!("block does not decompress ({e})"))),
                }
                let (n, s) = format::decode_block(&self.raw, batch).map_err(|d| self.corrupt(at, d))?;
                if n != n_access || s != n_side {
                    return Err(self.corrupt(at, "block frame counts disagree with its contents"));
                }
                self.offset += 21 + comp_len as u64;
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
                if footer.accesses != self.accesses
                    || footer.side_events != self.side_events
                    || footer.blocks != self.blocks
                {
                    return Err(self.corrupt(at, "end record totals disagree with the blocks read"));
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
}
