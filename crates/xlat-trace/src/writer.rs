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

/// While blocks store their literals raw, every `LITERAL_PROBE`-th block is also compressed with
/// Huffman literals, to see whether they pay again.
const LITERAL_PROBE: u32 = 8;

/// Writes an xlat trace to any `Write` (a file, a pipe, a `Vec<u8>`) in bounded memory.
pub struct TraceWriter<W: Write> {
    out: W,
    encoder: BlockEncoder,
    compressor: zstd::bulk::Compressor<'static>,
    raw: Vec<u8>,
    comp: Vec<u8>,
    /// The other candidate frame, while choosing between raw and Huffman literals.
    alt: Vec<u8>,
    /// Whether the compressor stores literals raw (the last block's choice), and the blocks
    /// compressed so since the last probe of Huffman literals.
    raw_literals: bool,
    since_probe: u32,
    side_scratch: Vec<SideEvent>,
    footer: Footer,
    bytes: u64,
    /// Whether block records carry their sequence number (version 1.2 on).
    numbered: bool,
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
        // The format this writer writes, whatever the caller's header says (readers refuse
        // any other).
        let h = Header { format: format::FORMAT_NAME.to_string(), ..header.clone() };
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
            alt: Vec::new(),
            raw_literals: false,
            since_probe: 0,
            side_scratch: Vec::new(),
            footer: Footer::default(),
            bytes: head.len() as u64,
            numbered: minor >= format::SEQ_MINOR,
        })
    }

    /// Append a batch (split into blocks of at most [`format::MAX_BLOCK_ACCESSES`] accesses).
    pub fn write_batch(&mut self, batch: &Batch) -> Result<()> {
        if batch.has_no_events() {
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
    /// delta bytes are matches), so their blocks keep the Huffman table.
    ///
    /// The choice sticks: after a raw block the next is compressed raw at once, and is also
    /// compressed with Huffman literals (kept if they pay) every [`LITERAL_PROBE`]-th block, or
    /// as soon as its raw literals look compressible enough (their byte entropy, a bound on what
    /// a table could save, passes the threshold). So a trace of random addresses costs about one
    /// compression a block, not two.
    fn compress(&mut self) -> Result<()> {
        let bound = zstd::zstd_safe::compress_bound(self.raw.len());
        self.comp.clear();
        self.comp.reserve(bound);
        self.compressor.compress_to_buffer(&self.raw, &mut self.comp)?;
        let lits = literal_sections(&self.comp);
        if !self.raw_literals {
            if lits.is_some_and(|l| l.huffman_weak()) {
                self.set_raw_literals(true)?;
                self.comp.clear();
                self.compressor.compress_to_buffer(&self.raw, &mut self.comp)?;
                self.since_probe = 0;
            }
            return Ok(());
        }
        self.since_probe += 1;
        let promising = lits.is_some_and(|l| l.raw_bytes > 0 && l.raw_bound * MIN_LITERAL_SAVING >= l.raw_bytes);
        if self.since_probe < LITERAL_PROBE && !promising {
            return Ok(());
        }
        self.since_probe = 0;
        self.set_raw_literals(false)?;
        self.alt.clear();
        self.alt.reserve(bound);
        self.compressor.compress_to_buffer(&self.raw, &mut self.alt)?;
        if literal_sections(&self.alt).is_some_and(|l| l.huffman_weak()) {
            // Still not worth it: keep the raw frame.
            self.set_raw_literals(true)?;
        } else {
            std::mem::swap(&mut self.comp, &mut self.alt);
        }
        Ok(())
    }

    fn set_raw_literals(&mut self, raw: bool) -> Result<()> {
        let mode = if raw { ParamSwitch::Disable } else { ParamSwitch::Auto };
        self.compressor.set_parameter(CParameter::LiteralCompressionMode(mode))?;
        self.raw_literals = raw;
        Ok(())
    }

    fn emit_block(&mut self, n_access: usize) -> Result<()> {
        let n_side = self.side_scratch.len();
        self.compress()?;
        // Version 1.2 on: the block's number after the tag, so that a reader sees blocks that
        // were reordered, repeated or dropped; the checksum covers it.
        let seq = self.footer.blocks.to_le_bytes();
        let mut frame = [0u8; 29];
        frame[0] = format::TAG_BLOCK;
        let (numbered, rest) = if self.numbered {
            frame[1..9].copy_from_slice(&seq);
            (&seq[..], 9)
        } else {
            (&[][..], 1)
        };
        let counts = [n_access as u32, n_side as u32, self.raw.len() as u32, self.comp.len() as u32];
        for (k, v) in counts.into_iter().enumerate() {
            frame[rest + 4 * k..rest + 4 * k + 4].copy_from_slice(&v.to_le_bytes());
        }
        // zstd's own checksum covers the content, not every bit of the frame (its header has an
        // unused bit a decoder ignores), so the compressed bytes get a checksum of their own.
        let mut crc = crc32fast::Hasher::new();
        crc.update(numbered);
        crc.update(&self.comp);
        frame[rest + 16..rest + 20].copy_from_slice(&crc.finalize().to_le_bytes());
        let frame = &frame[..rest + 20];
        self.out.write_all(frame)?;
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

/// What the literal sections of a zstd frame hold.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Literals {
    /// Literal bytes coded with Huffman tables (sections of type compressed or treeless), and
    /// how many bytes the coding saves (regenerated minus compressed size).
    coded: u64,
    saved: u64,
    /// Literal bytes stored raw, and a bound on what Huffman tables could save on them (each
    /// section's size less its order-0 entropy in bytes).
    raw_bytes: u64,
    raw_bound: u64,
}

impl Literals {
    /// Whether the frame's Huffman tables save less than 1/[`MIN_LITERAL_SAVING`] of the bytes
    /// they code.
    fn huffman_weak(&self) -> bool {
        self.coded > 0 && self.saved * MIN_LITERAL_SAVING < self.coded
    }
}

/// Read the literal section headers of a zstd frame (and the bytes of raw sections). `None` if
/// the frame is not one this parser follows (the caller then keeps it as it is).
fn literal_sections(frame: &[u8]) -> Option<Literals> {
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
    let mut l = Literals::default();
    loop {
        let h = le(p, 3)?;
        p += 3;
        let size = (h >> 3) as usize;
        match h >> 1 & 3 {
            0 => p += size,
            1 => p += 1,
            2 => {
                // A compressed block starts with its literal section's header: type (bits
                // 0-1), size format (bits 2-3), then the regenerated size (and the compressed
                // size for Huffman-coded sections).
                let b0 = le(p, 1)?;
                let format = b0 >> 2 & 3;
                match b0 & 3 {
                    0 => {
                        let (len, n) = match format {
                            0 | 2 => (1, b0 >> 3),
                            1 => (2, le(p, 2)? >> 4),
                            _ => (3, le(p, 3)? >> 4),
                        };
                        let bytes = frame.get(p + len..p + len + n as usize)?;
                        l.raw_bytes += n;
                        l.raw_bound += entropy_bound(bytes);
                    }
                    1 => {}
                    _ => {
                        let (len, bits) = match format {
                            0 | 1 => (3, 10),
                            2 => (4, 14),
                            _ => (5, 18),
                        };
                        let v = le(p, len)? >> 4;
                        let (regen, comp) = (v & ((1 << bits) - 1), v >> bits);
                        l.coded += regen;
                        l.saved += regen.saturating_sub(comp);
                    }
                }
                p += size;
            }
            _ => return None,
        }
        if h & 1 == 1 {
            return Some(l);
        }
    }
}

/// `bytes.len()` less the order-0 entropy of `bytes` in bytes: at least what a Huffman table
/// for them saves.
fn entropy_bound(bytes: &[u8]) -> u64 {
    let mut count = [0u32; 256];
    for &b in bytes {
        count[b as usize] += 1;
    }
    let n = bytes.len() as f64;
    let bits: f64 = count.iter().filter(|&&c| c > 0).map(|&c| c as f64 * (n / c as f64).log2()).sum();
    (n - bits / 8.0).max(0.0) as u64
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
    fn literal_sections_reads_headers() {
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
            let l = literal_sections(&huff).unwrap();
            // The same matches either way: the frames differ by what the tables saved (and a
            // few bytes of literal section headers).
            assert!((raw.len() as i64 - huff.len() as i64 - l.saved as i64).abs() < 64, "{l:?}");
            // The literals are the random bytes (two thirds of the data), less those that
            // happen to extend or form a match.
            let n = data.len() as u64 * 2 / 3;
            assert!(l.coded > n * least / 100 && l.coded <= n, "{l:?}");
            assert_eq!((l.raw_bytes, l.raw_bound), (0, 0));
            let f = l.saved as f64 / l.coded as f64;
            assert!(f > lo && f < hi, "saving {f}");
            assert_eq!(l.huffman_weak(), f < 1.0 / 12.0);
            // Stored raw: the same literals, and the entropy bounds what the tables saved.
            let r = literal_sections(&raw).unwrap();
            assert_eq!((r.coded, r.saved, r.raw_bytes), (0, 0, l.coded), "{r:?}");
            assert!(r.raw_bound >= l.saved && r.raw_bound < l.saved + l.coded / 50, "{r:?} {l:?}");
        }
        assert_eq!(literal_sections(b"not a frame"), None);
        let f = frame(&flat, ParamSwitch::Auto);
        assert_eq!(literal_sections(&f[..f.len() / 2]), None);
    }

    #[test]
    fn random_addresses_get_raw_literals() {
        // (blocks whose frames hold Huffman literals, blocks)
        let write = |spec: &str| {
            let mut src = crate::source::open(spec).unwrap();
            let mut w = TraceWriter::new(Vec::new(), src.header()).unwrap();
            let mut b = Batch::default();
            let mut huffman = (0, 0);
            while src.next_batch(&mut b).unwrap() {
                w.write_batch(&b).unwrap();
                let l = literal_sections(&w.comp).unwrap();
                huffman = (huffman.0 + (l.coded > 0) as u32, huffman.1 + 1);
            }
            huffman
        };
        // gups: no block keeps a Huffman table; zipf's skewed addresses do.
        assert_eq!(write("workload:gups?size=8GiB&accesses=200000").0, 0);
        let (huff, blocks) = write("workload:zipf?size=64MiB&accesses=200000");
        assert_eq!(huff, blocks, "zipf blocks keep Huffman literals");
    }

    #[test]
    fn literal_choice_follows_the_data() {
        // Random addresses, then a zipf phase, then random again, in one trace: each phase's
        // blocks get the literals they would get alone (a zipf block is probed at once, as its
        // raw literals look compressible).
        let batches = |spec: &str| {
            let mut src = crate::source::open(spec).unwrap();
            let (mut all, mut b) = (Vec::new(), Batch::default());
            while src.next_batch(&mut b).unwrap() {
                all.push(b.clone());
            }
            all
        };
        let (gups, zipf) =
            (batches("workload:gups?size=8GiB&accesses=100000"), batches("workload:zipf?size=64MiB&accesses=100000"));
        let mut w = TraceWriter::new(Vec::new(), &Header::new("t")).unwrap();
        let mut icount = 0;
        let mut kinds = Vec::new();
        for b in gups.iter().chain(&zipf).chain(&gups) {
            // Instruction counts must not go backwards across the phases.
            let mut b = b.clone();
            b.side.clear();
            let base = icount;
            for c in &mut b.icount {
                *c += base;
                icount = *c;
            }
            w.write_batch(&b).unwrap();
            kinds.push(literal_sections(&w.comp).unwrap().coded > 0);
        }
        let g = gups.len();
        assert!(kinds[..g].iter().all(|&h| !h), "{kinds:?}");
        assert!(kinds[g..g + zipf.len()].iter().all(|&h| h), "{kinds:?}");
        assert!(kinds[g + zipf.len()..].iter().all(|&h| !h), "{kinds:?}");
    }
}
