//! Streaming trace writer: batches in, compressed blocks out, footer at `finish`.

use crate::error::{Error, Result};
use crate::event::{Batch, SideEvent};
use crate::format::{self, BlockEncoder, Footer, Header, ThreadTotals};
use std::io::Write;
use zstd::zstd_safe::{CParameter, ParamSwitch};

/// Revision of how this writer encodes events into the current format version: the same events
/// may be written to different bytes by another revision (every revision's files read the
/// same). Caches of written traces (the simulation bench's) name their files by it, so that a
/// new revision writes them again. 2: blocks whose literals Huffman coding barely shrinks store
/// them raw ([`MIN_LITERAL_SAVING`]).
pub const WRITER_REVISION: u32 = 2;

/// A block keeps zstd's Huffman-coded literals only where they are at least
/// 1/`MIN_LITERAL_SAVING` smaller than the literal bytes they code; otherwise its literals are
/// stored raw (see [`TraceWriter`]'s block compression).
const MIN_LITERAL_SAVING: u64 = 12;

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

    /// Compress the block payload `raw` into one zstd frame in `comp`.
    ///
    /// zstd codes a block's literals (the bytes no match covers) with a Huffman table when that
    /// saves at least about 1/64 of them. Decoding Huffman literals costs about 8 instructions
    /// a byte, where raw literals are copied: on random addresses (gups), whose literals are
    /// nearly every address byte and shrink by only about 6%, that was 20 of the 67
    /// instructions an access of reading the trace. So a frame whose Huffman literals save less
    /// than 1/[`MIN_LITERAL_SAVING`] of their bytes is compressed again with literal
    /// compression off: such a block grows by less than that fraction of its literals (gups:
    /// 6%) and decodes about 30% faster. Real programs' literals shrink by 8-20% (most of their
    /// delta bytes are matches), so their blocks keep the Huffman table. The second
    /// compression happens only for the blocks that end up raw (encoding gups takes about 10%
    /// longer).
    fn compress(&mut self) -> Result<()> {
        self.comp.clear();
        self.comp.reserve(zstd::zstd_safe::compress_bound(self.raw.len()));
        self.compressor.compress_to_buffer(&self.raw, &mut self.comp)?;
        match huffman_literals(&self.comp) {
            Some((coded, saved)) if coded > 0 && saved * MIN_LITERAL_SAVING < coded => {}
            _ => return Ok(()),
        }
        self.compressor.set_parameter(CParameter::LiteralCompressionMode(ParamSwitch::Disable))?;
        self.comp.clear();
        let res = self.compressor.compress_to_buffer(&self.raw, &mut self.comp);
        self.compressor.set_parameter(CParameter::LiteralCompressionMode(ParamSwitch::Auto))?;
        res?;
        Ok(())
    }

    fn emit_block(&mut self, n_access: usize) -> Result<()> {
        let n_side = self.side_scratch.len();
        self.compress()?;
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

/// The literal bytes a zstd frame codes with Huffman tables and how many bytes that saves:
/// `(regenerated, regenerated - compressed)` summed over the literal sections of its blocks
/// that are Huffman-coded (types compressed and treeless; raw and RLE sections cost nothing to
/// decode). `None` if the frame is not one this parser follows (the caller then keeps it).
fn huffman_literals(frame: &[u8]) -> Option<(u64, u64)> {
    let le = |k: usize, len: usize| -> Option<u64> {
        let b = frame.get(k..k.checked_add(len)?)?;
        Some(b.iter().rev().fold(0u64, |acc, &x| acc << 8 | x as u64))
    };
    if le(0, 4)? != 0xFD2F_B528 {
        return None;
    }
    // Frame header: descriptor; window descriptor unless single-segment; dictionary id;
    // content size.
    let fhd = le(4, 1)? as usize;
    let single = fhd >> 5 & 1 == 1;
    let mut p = 5 + usize::from(!single) + [0, 1, 2, 4][fhd & 3] + [usize::from(single), 2, 4, 8][fhd >> 6];
    let (mut coded, mut saved) = (0u64, 0u64);
    loop {
        let h = le(p, 3)?;
        p += 3;
        let size = (h >> 3) as usize;
        match h >> 1 & 3 {
            0 => p += size,
            1 => p += 1,
            2 => {
                // A compressed block starts with its literal section's header: type (bits
                // 0-1), size format (bits 2-3), then the regenerated and compressed sizes.
                let b0 = le(p, 1)?;
                if b0 & 3 >= 2 {
                    let (len, bits) = match b0 >> 2 & 3 {
                        0 | 1 => (3, 10),
                        2 => (4, 14),
                        _ => (5, 18),
                    };
                    let v = le(p, len)? >> 4;
                    let (regen, comp) = (v & ((1 << bits) - 1), v >> bits);
                    coded += regen;
                    saved += regen.saturating_sub(comp);
                }
                p += size;
            }
            _ => return None,
        }
        if h & 1 == 1 {
            return Some((coded, saved));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn frame(data: &[u8], literals: ParamSwitch) -> Vec<u8> {
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        c.include_checksum(true).unwrap();
        c.set_parameter(CParameter::LiteralCompressionMode(literals)).unwrap();
        c.compress(data).unwrap()
    }

    #[test]
    fn huffman_literals_reads_literal_sections() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        // 16 random bytes, then 8 that repeat (so that zstd finds matches and does not take
        // the data for incompressible before trying a Huffman table).
        let data = |byte: &mut dyn FnMut() -> u8| -> Vec<u8> {
            (0..300_000).map(|i| if i % 24 < 16 { byte() } else { b"ABCDEFGH"[i % 8] }).collect()
        };
        // Half any byte, half below 64: about 7.55 bits of entropy, a saving of about 5%
        // (zstd does not try a table where no byte is more frequent than 1/128).
        let flat = data(&mut || rng.gen::<u8>() >> (2 * rng.gen_range(0..2)));
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(2);
        // Mostly small bytes: Huffman saves most of them.
        let skewed = data(&mut || rng.gen_range(0..200u8) >> rng.gen_range(0..8));
        // (data, fewest literals in 1/100 of the random bytes, saving range)
        for (data, least, lo, hi) in [(&flat, 95, 0.02, 0.07), (&skewed, 50, 0.15, 0.9)] {
            let (huff, raw) = (frame(data, ParamSwitch::Auto), frame(data, ParamSwitch::Disable));
            let (coded, saved) = huffman_literals(&huff).unwrap();
            // The same matches either way: the frames differ by what the tables saved (and a
            // few bytes of literal section headers).
            assert!((raw.len() as i64 - huff.len() as i64 - saved as i64).abs() < 64, "{saved}");
            // The literals are the random bytes (two thirds of the data), less those that
            // happen to extend or form a match.
            let n = data.len() as u64 * 2 / 3;
            assert!(coded > n * least / 100 && coded <= n, "{coded}");
            let f = saved as f64 / coded as f64;
            assert!(f > lo && f < hi, "saving {f}");
            assert_eq!(huffman_literals(&raw), Some((0, 0)));
        }
        assert_eq!(huffman_literals(b"not a frame"), None);
        let f = frame(&flat, ParamSwitch::Auto);
        assert_eq!(huffman_literals(&f[..f.len() / 2]), None);
    }

    #[test]
    fn random_addresses_get_raw_literals() {
        let write = |spec: &str| {
            let mut src = crate::source::open(spec).unwrap();
            let mut w = TraceWriter::new(Vec::new(), src.header()).unwrap();
            let mut b = Batch::default();
            let mut huffman = (0, 0);
            while src.next_batch(&mut b).unwrap() {
                w.write_batch(&b).unwrap();
                let (coded, _) = huffman_literals(&w.comp).unwrap();
                huffman = (huffman.0 + (coded > 0) as u32, huffman.1 + 1);
            }
            huffman
        };
        // gups: no block keeps a Huffman table; a thread's loop over a small array does.
        assert_eq!(write("workload:gups?size=8GiB&accesses=200000").0, 0);
        let (huff, blocks) = write("workload:zipf?size=64MiB&accesses=200000");
        assert_eq!(huff, blocks, "zipf blocks keep Huffman literals");
    }
}
