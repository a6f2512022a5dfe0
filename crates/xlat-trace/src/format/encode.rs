//! Encoding a batch's accesses and side events into a block payload: meta bytes, per-thread
//! address deltas, escaped columns, side records and (format 1.1) repeat records.

use super::block::{
    escaped, ThreadState, MAX_REPEAT_PERIOD, MIN_REPEAT, PAD, SIDE_MARKER, SIDE_REPEAT, SIDE_SYSCALL, SIDE_THREAD,
};
use super::header::ThreadTotals;
use crate::event::{Batch, Marker, SideBody, SideEvent};
use crate::varint;

/// Encoder scratch space, reused across blocks.
#[derive(Default)]
pub struct BlockEncoder {
    meta: Vec<u8>,
    alen: Vec<u8>,
    addr: Vec<u8>,
    icount: Vec<u8>,
    size: Vec<u8>,
    side: Vec<u8>,
    threads: Vec<ThreadState>,
    /// Every access's meta byte and zigzag address delta, before repeats are taken out.
    km: Vec<u8>,
    kz: Vec<u64>,
    /// Both in one word (see [`repeat_key`]).
    key: Vec<u64>,
    /// The previous access whose key hashes alike (u32::MAX: none), and the last access of
    /// each hash: chains that find the earlier accesses an access may repeat.
    prev: Vec<u32>,
    head: Vec<u32>,
    /// Side and thread records in position order: (position, byte range in `recs_bytes`).
    recs: Vec<(u32, usize, usize)>,
    recs_bytes: Vec<u8>,
    /// Whether to write repeat records (format 1.1; 1.0 has none).
    repeats: bool,
    /// Each thread's instruction count at its last access in the blocks encoded so far: counts
    /// must not go back from one block to the next either (the reader checks it too).
    last_icount: std::collections::HashMap<u32, u64>,
}

impl BlockEncoder {
    /// An encoder for format 1.1 (`repeats`: with repeat records) or 1.0 (without).
    pub fn new(repeats: bool) -> BlockEncoder {
        BlockEncoder { repeats, ..BlockEncoder::default() }
    }

    /// Encode accesses `range` of `batch` with the side events `side` into `out` (uncompressed
    /// payload). `totals` receives per-thread counts.
    pub fn encode(
        &mut self,
        batch: &Batch,
        range: std::ops::Range<usize>,
        side: &[SideEvent],
        totals: &mut Vec<ThreadTotals>,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        self.meta.clear();
        self.alen.clear();
        self.addr.clear();
        self.icount.clear();
        self.size.clear();
        self.side.clear();
        self.threads.clear();
        self.km.clear();
        self.kz.clear();
        self.key.clear();
        self.prev.clear();
        self.head.clear();
        self.head.resize(1 << HASH_BITS, u32::MAX);
        self.recs.clear();
        self.recs_bytes.clear();
        let base = range.start;
        let n = range.len();
        let mut cur: Option<usize> = None; // index into self.threads
        let mut st = ThreadState { tid: 0, addr: 0, icount: 0 };
        let mut si = 0;
        let mut tix = 0; // index of the current thread in `totals`

        // Pass 1: per-access meta bytes and deltas (escaped values go to their columns now:
        // repeats never cover an access with an escape), side and thread records by position.
        for i in range.clone() {
            let rel = (i - base) as u32;
            while si < side.len() && side[si].pos <= rel {
                let at = self.recs_bytes.len();
                encode_side(&mut self.recs_bytes, &side[si])?;
                self.recs.push((side[si].pos, at, self.recs_bytes.len()));
                si += 1;
            }
            let tid = batch.tid[i];
            if cur.is_none() || st.tid != tid {
                if let Some(c) = cur {
                    self.threads[c] = st;
                }
                let at = self.recs_bytes.len();
                let r = &mut self.recs_bytes;
                r.push(SIDE_THREAD);
                varint::put(r, rel as u64);
                varint::put(r, tid as u64);
                let c = match self.threads.iter().position(|t| t.tid == tid) {
                    Some(c) => {
                        r.push(0);
                        c
                    }
                    None => {
                        // First appearance in this block: the record carries the thread's start
                        // state, so that its first delta is small too.
                        let first = ThreadState { tid, addr: batch.addr[i], icount: batch.icount[i] };
                        if let Some(&prev) = self.last_icount.get(&tid).filter(|&&p| first.icount < p) {
                            return Err(format!(
                                "instruction count of thread {tid} went backwards from {prev} to {}",
                                first.icount
                            ));
                        }
                        r.push(1);
                        varint::put(r, first.addr);
                        varint::put(r, first.icount);
                        self.threads.push(first);
                        self.threads.len() - 1
                    }
                };
                self.recs.push((rel, at, self.recs_bytes.len()));
                cur = Some(c);
                st = self.threads[c];
                bump_thread(totals, tid);
                // Found once per thread switch, not once per access.
                tix = totals.iter().rposition(|t| t.tid == tid).expect("thread registered");
            }
            let kind = batch.kind[i];
            if kind > 2 {
                return Err(format!("access {i} has kind {kind}, not load (0), store (1) or ifetch (2)"));
            }
            let icount = batch.icount[i];
            if icount < st.icount {
                return Err(format!("instruction count of thread {tid} went backwards from {} to {icount}", st.icount));
            }
            let d = icount - st.icount;
            let icode = if d < 7 { d as u8 } else { 7 };
            if icode == 7 {
                varint::put(&mut self.icount, d);
            }
            let size = batch.size[i];
            let scode = if size.is_power_of_two() && size <= 64 { size.trailing_zeros() as u8 } else { 7 };
            if scode == 7 {
                varint::put(&mut self.size, size as u64);
            }
            let m = kind | (scode << 2) | (icode << 5);
            let a = batch.addr[i];
            let zz = varint::zigzag(a.wrapping_sub(st.addr) as i64);
            self.km.push(m);
            self.kz.push(zz);
            let key = repeat_key(m, zz);
            self.key.push(key);
            if key == NO_REPEAT {
                self.prev.push(u32::MAX);
            } else {
                let h = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - HASH_BITS)) as usize;
                self.prev.push(self.head[h]);
                self.head[h] = rel;
            }
            st.addr = a;
            st.icount = icount;
            let t = &mut totals[tix];
            t.accesses += 1;
            t.instructions = t.instructions.max(icount);
        }
        if let Some(c) = cur {
            self.threads[c] = st;
        }
        for t in &self.threads {
            self.last_icount.insert(t.tid, t.icount);
        }
        for s in &side[si..] {
            if s.pos as usize > n {
                return Err(format!("side event at position {} is beyond the {} accesses of its batch", s.pos, n));
            }
            let at = self.recs_bytes.len();
            encode_side(&mut self.recs_bytes, s)?;
            self.recs.push((s.pos, at, self.recs_bytes.len()));
        }
        for s in side {
            bump_thread(totals, s.tid);
            let t = totals.iter_mut().rev().find(|t| t.tid == s.tid).expect("thread registered");
            t.instructions = t.instructions.max(s.icount);
        }
        // Pass 2: the records in position order, and between them the accesses, as columns or
        // as repeat records.
        let mut r = 0;
        let mut seg = 0usize;
        let mut j = 0usize;
        loop {
            while r < self.recs.len() && self.recs[r].0 as usize == j {
                let (_, a, b) = self.recs[r];
                self.side.extend_from_slice(&self.recs_bytes[a..b]);
                seg = j;
                r += 1;
            }
            if j >= n {
                break;
            }
            let end = self.recs.get(r).map_or(n, |x| x.0 as usize);
            self.emit_segment(seg, j, end);
            j = end;
        }
        out.clear();
        for v in [n, side.len(), self.meta.len(), self.addr.len(), self.icount.len(), self.size.len()] {
            out.extend_from_slice(&(v as u32).to_le_bytes());
        }
        out.extend_from_slice(&(self.side.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.meta);
        out.extend_from_slice(&self.alen);
        out.extend_from_slice(&self.addr);
        out.extend_from_slice(&self.icount);
        out.extend_from_slice(&self.size);
        out.extend_from_slice(&self.side);
        out.extend_from_slice(&[0u8; PAD]);
        Ok(())
    }

    /// Emit accesses `a..b` of a segment (a run of one thread's accesses with no side record
    /// inside) that started at access `seg`: each access goes to the columns unless a repeat
    /// record covers it. A repeat of period `p` starts at the first access from which at least
    /// [`MIN_REPEAT`] accesses each equal (meta byte and address delta) the access `p` before
    /// them, `p` being the shortest such period and access `j - p - 1` still in the segment.
    fn emit_segment(&mut self, seg: usize, a: usize, b: usize) {
        // fail[p]: the first access x >= j (or b) that differs from access x - p, once found
        // (while fail[p] < j it is stale: 0 at first, and a repeat is only sought at j >= 2). It
        // stays right while j <= fail[p], so each period scans every access at most once,
        // except for the one check per access where a period fails.
        let mut fail = [0usize; MAX_REPEAT_PERIOD + 1];
        let key = &self.key;
        let same = |x: usize, p: usize| key[x] == key[x - p] && key[x] != NO_REPEAT;
        let mut j = a;
        while j < b {
            let mut found = None;
            if self.repeats && j >= seg + 2 && j + MIN_REPEAT <= b {
                let pmax = MAX_REPEAT_PERIOD.min(j - seg - 1);
                // Only periods at which access j equals an earlier access can start a repeat:
                // those are on j's hash chain, nearest (shortest period) first.
                let mut q = self.prev[j];
                while q != u32::MAX && j - (q as usize) <= pmax {
                    let p = j - q as usize;
                    q = self.prev[q as usize];
                    if fail[p] < j {
                        let mut x = j;
                        while x < b && same(x, p) {
                            x += 1;
                        }
                        fail[p] = x;
                    }
                    if fail[p] >= j + MIN_REPEAT {
                        found = Some((p, fail[p] - j));
                        break;
                    }
                }
            }
            if let Some((p, len)) = found {
                self.side.push(SIDE_REPEAT);
                varint::put(&mut self.side, j as u64);
                varint::put(&mut self.side, p as u64);
                varint::put(&mut self.side, len as u64);
                j += len;
                continue;
            }
            let zz = self.kz[j];
            self.meta.push(self.km[j]);
            let len = (64 - zz.leading_zeros()).div_ceil(8) as usize;
            self.alen.push(len as u8);
            // Append all 8 bytes and drop the unused ones: a fixed-size copy, where a
            // variable-length slice costs a memcpy call per access.
            let end = self.addr.len() + len;
            self.addr.extend_from_slice(&zz.to_le_bytes());
            self.addr.truncate(end);
            j += 1;
        }
    }
}

/// Bits of the hash that chains accesses with equal keys.
const HASH_BITS: u32 = 12;

/// The repeat-detection key of an access that no other access matches.
const NO_REPEAT: u64 = u64::MAX;

/// An access's meta byte and zigzag address delta in one word, for repeat detection: exact
/// when the delta fits 56 bits; accesses with larger deltas or escaped values (which live in
/// other columns) get [`NO_REPEAT`] and never repeat.
#[inline(always)]
fn repeat_key(meta: u8, zz: u64) -> u64 {
    if escaped(meta) || zz >> 56 != 0 {
        NO_REPEAT
    } else {
        (zz << 8) | meta as u64
    }
}

fn bump_thread(totals: &mut Vec<ThreadTotals>, tid: u32) {
    if !totals.iter().any(|t| t.tid == tid) {
        totals.push(ThreadTotals { tid, accesses: 0, instructions: 0 });
    }
}

fn encode_side(out: &mut Vec<u8>, s: &SideEvent) -> Result<(), String> {
    match &s.body {
        SideBody::Syscall(sc) => {
            out.push(SIDE_SYSCALL);
            varint::put(out, s.pos as u64);
            varint::put(out, s.tid as u64);
            varint::put(out, s.icount);
            out.push(sc.kind as u8);
            for a in &sc.args[..sc.kind.nargs()] {
                varint::put(out, *a);
            }
            if sc.args[sc.kind.nargs()..].iter().any(|&a| a != 0) {
                return Err(format!("{} takes {} arguments but more were given", sc.kind.name(), sc.kind.nargs()));
            }
            varint::put(out, varint::zigzag(sc.ret));
        }
        SideBody::Marker(m) => {
            out.push(SIDE_MARKER);
            varint::put(out, s.pos as u64);
            varint::put(out, s.tid as u64);
            varint::put(out, s.icount);
            match m {
                Marker::ContextSwitch { asid } => {
                    out.push(0);
                    varint::put(out, *asid as u64);
                }
                Marker::IpcSend { peer, bytes } | Marker::IpcRecv { peer, bytes } => {
                    out.push(if matches!(m, Marker::IpcSend { .. }) { 1 } else { 2 });
                    varint::put(out, *peer as u64);
                    varint::put(out, *bytes);
                }
                Marker::Phase { id, name } => {
                    out.push(3);
                    varint::put(out, *id as u64);
                    varint::put(out, name.len() as u64);
                    out.extend_from_slice(name.as_bytes());
                }
            }
        }
    }
    Ok(())
}
