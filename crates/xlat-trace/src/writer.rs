//! Streaming trace writer: batches in, compressed blocks out, footer at `finish`.

use crate::error::{Error, Result};
use crate::event::{Batch, SideEvent};
use crate::format::{self, BlockEncoder, Footer, Header, ThreadTotals};
use std::io::Write;

/// Writes an xlat trace to any `Write` (a file, a pipe, a `Vec<u8>`) in bounded memory.
pub struct TraceWriter<W: Write> {
    out: W,
    encoder: BlockEncoder,
    compressor: zstd::bulk::Compressor<'static>,
    raw: Vec<u8>,
    comp: Vec<u8>,
    side_scratch: Vec<SideEvent>,
    footer: Footer,
    bytes: u64,
}

impl<W: Write> TraceWriter<W> {
    /// Start a trace with zstd level 3.
    pub fn new(out: W, header: &Header) -> Result<Self> {
        Self::with_level(out, header, 3)
    }

    /// Start a trace with the given zstd level (1 = fastest, 19 = smallest).
    pub fn with_level(out: W, header: &Header, level: i32) -> Result<Self> {
        Self::with_options(out, header, level, format::VERSION_MINOR)
    }

    /// Start a trace with the given zstd level, in format version 1.`minor`: 1 (the current
    /// version) writes repeat records where the accesses repeat a short pattern; 0 writes
    /// none, for readers of version 1.0.
    pub fn with_options(mut out: W, header: &Header, level: i32, minor: u16) -> Result<Self> {
        if minor > format::VERSION_MINOR {
            return Err(Error::InvalidEvent(format!(
                "trace format version 1.{minor} is newer than this xlat writes (1.0 to 1.{})",
                format::VERSION_MINOR
            )));
        }
        let mut h = header.clone();
        if h.format.is_empty() {
            h.format = "xlat-trace".into();
        }
        let json = serde_json::to_vec(&h).expect("header serialises");
        let mut head = Vec::with_capacity(json.len() + 24);
        head.extend_from_slice(format::MAGIC);
        head.extend_from_slice(&format::VERSION_MAJOR.to_le_bytes());
        head.extend_from_slice(&minor.to_le_bytes());
        head.extend_from_slice(&(json.len() as u32).to_le_bytes());
        head.extend_from_slice(&json);
        head.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
        out.write_all(&head)?;
        let mut compressor = zstd::bulk::Compressor::new(level)?;
        compressor.include_checksum(true)?;
        compressor.include_contentsize(true)?;
        Ok(TraceWriter {
            out,
            encoder: BlockEncoder::new(minor >= 1),
            compressor,
            raw: Vec::new(),
            comp: Vec::new(),
            side_scratch: Vec::new(),
            footer: Footer::default(),
            bytes: head.len() as u64,
        })
    }

    /// Append a batch (split into blocks of at most [`format::MAX_BLOCK_ACCESSES`] accesses).
    pub fn write_batch(&mut self, batch: &Batch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let n = batch.len();
        if batch.icount.len() != n || batch.tid.len() != n || batch.size.len() != n || batch.kind.len() != n {
            return Err(Error::InvalidEvent("batch columns have different lengths".into()));
        }
        if batch.side.windows(2).any(|w| w[0].pos > w[1].pos) {
            return Err(Error::InvalidEvent("side events are not sorted by position".into()));
        }
        let mut start = 0;
        let mut si = 0;
        loop {
            let end = (start + format::MAX_BLOCK_ACCESSES).min(n);
            // Side events up to and including position `end` belong to this block, except that
            // events at `end` go to the next block when there is one (so they stay before its
            // first access).
            let last = end == n;
            self.side_scratch.clear();
            while si < batch.side.len() {
                let s = &batch.side[si];
                let p = s.pos as usize;
                if p < end || (last && p == end) {
                    let mut s = s.clone();
                    s.pos = (p - start) as u32;
                    self.side_scratch.push(s);
                    si += 1;
                } else {
                    break;
                }
            }
            if si == batch.side.len() && self.side_scratch.is_empty() && start == end {
                break;
            }
            let mut totals = std::mem::take(&mut self.footer.threads);
            let res = self.encoder.encode(batch, start..end, &self.side_scratch, &mut totals, &mut self.raw);
            self.footer.threads = totals;
            res.map_err(Error::InvalidEvent)?;
            self.emit_block(end - start)?;
            start = end;
            if last {
                break;
            }
        }
        Ok(())
    }

    fn emit_block(&mut self, n_access: usize) -> Result<()> {
        let n_side = self.side_scratch.len();
        let bound = zstd::zstd_safe::compress_bound(self.raw.len());
        self.comp.clear();
        self.comp.reserve(bound);
        self.compressor.compress_to_buffer(&self.raw, &mut self.comp)?;
        let mut frame = [0u8; 21];
        frame[0] = format::TAG_BLOCK;
        frame[1..5].copy_from_slice(&(n_access as u32).to_le_bytes());
        frame[5..9].copy_from_slice(&(n_side as u32).to_le_bytes());
        frame[9..13].copy_from_slice(&(self.raw.len() as u32).to_le_bytes());
        frame[13..17].copy_from_slice(&(self.comp.len() as u32).to_le_bytes());
        // zstd's own checksum covers the content, not every bit of the frame (its header has an
        // unused bit a decoder ignores), so the compressed bytes get a checksum of their own.
        frame[17..21].copy_from_slice(&crc32fast::hash(&self.comp).to_le_bytes());
        self.out.write_all(&frame)?;
        self.out.write_all(&self.comp)?;
        self.bytes += (frame.len() + self.comp.len()) as u64;
        self.footer.accesses += n_access as u64;
        self.footer.side_events += n_side as u64;
        self.footer.blocks += 1;
        Ok(())
    }

    /// Totals so far.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    /// Write the end record and return the underlying writer and the footer.
    pub fn finish(mut self) -> Result<(W, Footer)> {
        self.footer.threads.sort_by_key(|t: &ThreadTotals| t.tid);
        let json = serde_json::to_vec(&self.footer).expect("footer serialises");
        let mut tail = Vec::with_capacity(json.len() + 17);
        tail.push(format::TAG_END);
        tail.extend_from_slice(&(json.len() as u32).to_le_bytes());
        tail.extend_from_slice(&json);
        tail.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
        tail.extend_from_slice(format::END_MAGIC);
        self.out.write_all(&tail)?;
        self.out.flush()?;
        Ok((self.out, self.footer))
    }
}
