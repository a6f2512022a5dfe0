//! Writing an xlat trace as a ChampSim trace: one 64-byte `input_instr` record per instruction
//! (the layout [`crate::import::champsim`] reads).
//!
//! A ChampSim trace is one thread's instruction stream, and each record one instruction: the
//! writer takes one thread's accesses and writes a record for every instruction from the first
//! access's instruction count to the last access's, those without accesses included, so that
//! importing the result numbers instructions as the xlat trace did, shifted to start at 1.
//!
//! - `ip`: the address of the instruction's first instruction fetch, where the trace has one;
//!   otherwise (traces without fetches: most) a synthetic ip, `SYNTHETIC_IP_BASE + 4 * ((n - 1)
//!   % 1024)` for the record number `n`: straight-line code looping over one 4 KiB page, so
//!   ChampSim's instruction side (L1I, ITLB, branch predictor) sees a tiny, always-hit footprint.
//! - loads go to `source_memory[4]`, stores to `destination_memory[2]`, in trace order; loads
//!   and stores beyond the slots are dropped and counted (ChampSim has no place for them), as
//!   are accesses to address 0 (0 marks an empty slot). Sizes are not kept.
//! - `is_branch`, `branch_taken` and the registers are 0 (no branches, no register
//!   dependences): the trace carries none of them.
//! - side events (syscalls, markers) have no ChampSim form: counted and skipped.

use crate::error::{Error, Result};
use crate::event::{AccessKind, Batch};
use crate::event_source::EventSource;
use std::io::{BufWriter, Write};

/// Bytes per record.
pub const RECORD: usize = 64;
/// Base of the synthetic ips of instructions without a fetch access.
pub const SYNTHETIC_IP_BASE: u64 = 0x40_0000;
/// Slots of `source_memory` (loads) and `destination_memory` (stores).
pub const LOAD_SLOTS: usize = 4;
pub const STORE_SLOTS: usize = 2;
/// The largest run of instructions without accesses the writer fills with records (64 GiB of
/// records): a larger gap is refused rather than filling a disk.
pub const MAX_GAP: u64 = 1 << 30;

/// What a [`ChampSimWriter`] wrote and left out.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct ExportSummary {
    /// The thread exported (None: the trace had no accesses).
    pub tid: Option<u32>,
    /// Records written (= instructions).
    pub records: u64,
    /// Instruction count of the first record (record n is instruction `first_icount + n - 1`).
    pub first_icount: Option<u64>,
    pub loads: u64,
    pub stores: u64,
    /// Records whose ip is an instruction fetch's address / synthetic.
    pub fetch_ips: u64,
    pub synthetic_ips: u64,
    /// Loads beyond 4 and stores beyond 2 in one instruction.
    pub dropped_loads: u64,
    pub dropped_stores: u64,
    /// Accesses to address 0, which a slot cannot hold.
    pub dropped_zero: u64,
    /// Instruction fetches after an instruction's first (its ip).
    pub extra_fetches: u64,
    /// Side events skipped.
    pub side_events: u64,
}

/// Streams batches of one thread's accesses into ChampSim records.
pub struct ChampSimWriter<W: Write> {
    w: W,
    want_tid: Option<u32>,
    /// The instruction being gathered: its count, ip, loads and stores.
    cur: Option<u64>,
    ip: Option<u64>,
    loads: [u64; LOAD_SLOTS],
    n_loads: usize,
    stores: [u64; STORE_SLOTS],
    n_stores: usize,
    s: ExportSummary,
    buf: Vec<u8>,
}

impl<W: Write> ChampSimWriter<W> {
    /// Export thread `tid`'s accesses (None: the trace's only thread; a second one is an error).
    pub fn new(w: W, tid: Option<u32>) -> Self {
        ChampSimWriter {
            w,
            want_tid: tid,
            cur: None,
            ip: None,
            loads: [0; LOAD_SLOTS],
            n_loads: 0,
            stores: [0; STORE_SLOTS],
            n_stores: 0,
            s: ExportSummary { tid, ..Default::default() },
            buf: Vec::with_capacity(RECORD * 4096),
        }
    }

    pub fn write_batch(&mut self, b: &Batch) -> Result<()> {
        self.s.side_events += b.side.len() as u64;
        for i in 0..b.len() {
            let tid = b.tid[i];
            match self.s.tid {
                None => self.s.tid = Some(tid),
                Some(t) if t == tid => {}
                Some(t) => {
                    if self.want_tid.is_some() {
                        continue;
                    }
                    return Err(Error::Import(format!(
                        "the trace has accesses of threads {t} and {tid}, but a ChampSim trace is one thread's instructions: choose one thread (--tid)"
                    )));
                }
            }
            let icount = b.icount[i];
            match self.cur {
                Some(c) if c == icount => {}
                Some(c) if icount < c => {
                    return Err(Error::InvalidEvent(format!(
                        "instruction count of thread {tid} went backwards from {c} to {icount}"
                    )))
                }
                Some(c) => {
                    self.flush_instruction()?;
                    let gap = icount - c - 1;
                    if gap > MAX_GAP {
                        return Err(Error::Import(format!(
                            "thread {tid} runs {gap} instructions without an access (from instruction {c} to {icount}), more than the {MAX_GAP} empty records the ChampSim export writes for a gap"
                        )));
                    }
                    for _ in 0..gap {
                        self.flush_instruction()?;
                    }
                    self.cur = Some(icount);
                }
                None => {
                    self.s.first_icount = Some(icount);
                    self.cur = Some(icount);
                }
            }
            let addr = b.addr[i];
            match AccessKind::from_u8(b.kind[i]) {
                Some(AccessKind::IFetch) => {
                    if self.ip.is_none() {
                        self.ip = Some(addr);
                    } else {
                        self.s.extra_fetches += 1;
                    }
                }
                Some(AccessKind::Load) if addr == 0 => self.s.dropped_zero += 1,
                Some(AccessKind::Store) if addr == 0 => self.s.dropped_zero += 1,
                Some(AccessKind::Load) => {
                    if self.n_loads < LOAD_SLOTS {
                        self.loads[self.n_loads] = addr;
                        self.n_loads += 1;
                    } else {
                        self.s.dropped_loads += 1;
                    }
                }
                Some(AccessKind::Store) => {
                    if self.n_stores < STORE_SLOTS {
                        self.stores[self.n_stores] = addr;
                        self.n_stores += 1;
                    } else {
                        self.s.dropped_stores += 1;
                    }
                }
                None => return Err(Error::InvalidEvent(format!("access kind {} is not 0, 1 or 2", b.kind[i]))),
            }
        }
        Ok(())
    }

    /// Append the record of the instruction gathered so far (or an empty one) and reset.
    fn flush_instruction(&mut self) -> Result<()> {
        self.s.records += 1;
        let ip = match self.ip.take() {
            Some(ip) => {
                self.s.fetch_ips += 1;
                ip
            }
            None => {
                self.s.synthetic_ips += 1;
                SYNTHETIC_IP_BASE + 4 * ((self.s.records - 1) % 1024)
            }
        };
        self.buf.extend_from_slice(&ip.to_le_bytes());
        self.buf.extend_from_slice(&[0u8; 8]); // is_branch, branch_taken, registers
        for a in &self.stores {
            self.buf.extend_from_slice(&a.to_le_bytes());
        }
        for a in &self.loads {
            self.buf.extend_from_slice(&a.to_le_bytes());
        }
        self.s.loads += self.n_loads as u64;
        self.s.stores += self.n_stores as u64;
        self.loads = [0; LOAD_SLOTS];
        self.stores = [0; STORE_SLOTS];
        self.n_loads = 0;
        self.n_stores = 0;
        if self.buf.len() >= RECORD * 4096 {
            self.w.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Write the last instruction and return the output and the summary.
    pub fn finish(mut self) -> Result<(W, ExportSummary)> {
        if self.cur.is_some() {
            self.flush_instruction()?;
        }
        self.w.write_all(&self.buf)?;
        self.w.flush()?;
        Ok((self.w, self.s))
    }
}

/// The compression of an output named `path`: `"xz"` for `.xz`, `"gzip"` for `.gz`, else
/// `"none"` (ChampSim reads all three).
pub fn compression_of(path: &str) -> &'static str {
    if path.ends_with(".xz") {
        "xz"
    } else if path.ends_with(".gz") {
        "gzip"
    } else {
        "none"
    }
}

/// Export `src` to the file `file` in `compression` (see [`compression_of`]) at `level` (xz
/// presets 0-9, gzip 1-9); `tick` runs after every batch (progress).
pub fn export_file(
    src: &mut dyn EventSource,
    file: std::fs::File,
    compression: &str,
    level: u32,
    tid: Option<u32>,
    mut tick: impl FnMut(&dyn EventSource),
) -> Result<ExportSummary> {
    let out = BufWriter::with_capacity(1 << 20, file);
    let mut b = Batch::default();
    macro_rules! pump {
        ($w:expr) => {{
            let mut w = ChampSimWriter::new($w, tid);
            while src.next_batch(&mut b)? {
                w.write_batch(&b)?;
                tick(&*src);
            }
            w.finish()?
        }};
    }
    let summary = match compression {
        "xz" => {
            let (w, s) = pump!(xz2::write::XzEncoder::new(out, level.min(9)));
            w.finish()?.flush()?;
            s
        }
        "gzip" => {
            let (w, s) = pump!(flate2::write::GzEncoder::new(out, flate2::Compression::new(level.clamp(1, 9))));
            w.finish()?.flush()?;
            s
        }
        _ => pump!(out).1,
    };
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Access;
    use crate::import::champsim::ChampSimSource;
    use crate::EventSource;

    fn acc(addr: u64, icount: u64, tid: u32, kind: AccessKind) -> Access {
        Access { addr, icount, tid, size: 4, kind }
    }

    #[test]
    fn records_per_instruction_and_round_trip() {
        let mut b = Batch::default();
        for a in [
            acc(0x1000, 5, 1, AccessKind::Load),
            acc(0x2000, 5, 1, AccessKind::Store),
            acc(0x3000, 5, 1, AccessKind::Load),
            acc(0x4000, 8, 1, AccessKind::IFetch),
            acc(0x5000, 8, 1, AccessKind::Store),
            acc(0x6000, 8, 1, AccessKind::Store),
            acc(0x7000, 8, 1, AccessKind::Store), // a third store: dropped
            acc(0, 9, 1, AccessKind::Load),       // address 0: dropped
        ] {
            b.push_access(a);
        }
        let mut w = ChampSimWriter::new(Vec::new(), None);
        w.write_batch(&b).unwrap();
        let (out, s) = w.finish().unwrap();
        assert_eq!(out.len(), 5 * RECORD); // instructions 5, 6, 7, 8, 9
        assert_eq!((s.records, s.first_icount, s.loads, s.stores), (5, Some(5), 2, 3));
        assert_eq!((s.dropped_stores, s.dropped_zero, s.fetch_ips, s.synthetic_ips), (1, 1, 1, 4));
        assert_eq!(u64::from_le_bytes(out[3 * RECORD..3 * RECORD + 8].try_into().unwrap()), 0x4000);
        assert_eq!(u64::from_le_bytes(out[RECORD..RECORD + 8].try_into().unwrap()), SYNTHETIC_IP_BASE + 4);
        let mut src = ChampSimSource::from_reader(Box::new(std::io::Cursor::new(out)), "t", "none", true);
        let got = crate::event_source::collect(|b| src.next_batch(b)).unwrap();
        let data: Vec<_> =
            (0..got.len()).filter(|&i| got.kind[i] != 2).map(|i| (got.addr[i], got.kind[i], got.icount[i])).collect();
        assert_eq!(data, vec![(0x1000, 0, 1), (0x3000, 0, 1), (0x2000, 1, 1), (0x5000, 1, 4), (0x6000, 1, 4)]);
        assert_eq!(got.icount.iter().max(), Some(&5));
    }

    #[test]
    fn a_second_thread_needs_a_choice() {
        let mut b = Batch::default();
        b.push_access(acc(0x1000, 1, 1, AccessKind::Load));
        b.push_access(acc(0x2000, 1, 2, AccessKind::Load));
        let e = ChampSimWriter::new(Vec::new(), None).write_batch(&b).unwrap_err().to_string();
        assert!(e.contains("threads 1 and 2") && e.contains("--tid"), "{e}");
        let mut w = ChampSimWriter::new(Vec::new(), Some(2));
        w.write_batch(&b).unwrap();
        let (out, s) = w.finish().unwrap();
        assert_eq!((out.len(), s.loads), (RECORD, 1));
        assert_eq!(u64::from_le_bytes(out[32..40].try_into().unwrap()), 0x2000);
    }
}
