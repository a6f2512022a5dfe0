//! Decoding a block payload into a batch: the columns are checked up front, then decoded by
//! unchecked, vectorised loops; repeat records are expanded by doubling copies.

use super::block::{escaped, ThreadState, PAD, PAYLOAD_HEADER, SIDE_MARKER, SIDE_REPEAT, SIDE_SYSCALL, SIDE_THREAD};
use super::header::MAX_BLOCK_ACCESSES;
use crate::event::{Batch, Marker, SideBody, SideEvent, Syscall, SyscallKind};
use crate::varint;
use std::mem::MaybeUninit;

/// Masks keeping the low `k` bytes, for address deltas of `k` bytes.
const BYTE_MASK: [u64; 9] =
    [0, 0xff, 0xffff, 0xff_ffff, 0xffff_ffff, 0xff_ffff_ffff, 0xffff_ffff_ffff, 0xff_ffff_ffff_ffff, u64::MAX];

/// Write the addresses of the accesses whose address lengths are `al` into `out` (as many as
/// both hold), starting from `addr` and the address column's byte `*pa`; advance `*pa` past
/// their deltas and return the last address.
///
/// Each delta is one unaligned 8-byte load masked to its length: no bounds check, no branch,
/// unrolled by four. (The checked version, a slice and a table lookup per access, took about
/// 25 instructions an access; this one about 12.)
///
/// # Safety
/// Every byte of `al` is at most 8, and `tail` holds at least 8 bytes beyond `*pa` plus the sum
/// of `al`: `decode_block` checked that the lengths are at most 8 and add up to the address
/// column, which at least [`PAD`] bytes follow.
#[inline(always)]
unsafe fn decode_addrs(out: &mut [MaybeUninit<u64>], al: &[u8], tail: &[u8], pa: &mut usize, mut addr: u64) -> u64 {
    let n = out.len().min(al.len());
    let o = out.as_mut_ptr() as *mut u64;
    let l = al.as_ptr();
    let start = tail.as_ptr().add(*pa);
    let mut p = start;
    let mut step = |k: usize| {
        let len = *l.add(k) as usize;
        let w = u64::from_le((p as *const u64).read_unaligned());
        p = p.add(len);
        addr = addr.wrapping_add(varint::unzigzag(w & *BYTE_MASK.get_unchecked(len)) as u64);
        o.add(k).write(addr);
    };
    let mut k = 0;
    while k + 4 <= n {
        step(k);
        step(k + 1);
        step(k + 2);
        step(k + 3);
        k += 4;
    }
    while k < n {
        step(k);
        k += 1;
    }
    *pa += p.offset_from(start) as usize;
    addr
}

/// Write the instruction counts of accesses with meta bytes `m` (none escaped) into `out`,
/// starting from `icount`; return the last. Eight at a time: the 3-bit deltas of eight meta
/// bytes are summed up inside one word (a multiplication by 0x0101..01 leaves in byte `j` the
/// sum of deltas 0..=j, at most 8 x 6 < 256), whose bytes SSE2 widens to 64-bit lanes and adds
/// to the running count: about 3.5 instructions an access, where the scalar prefix sum takes
/// 5.5.
#[inline(always)]
fn icount_prefix(out: &mut [MaybeUninit<u64>], m: &[u8], mut icount: u64) -> u64 {
    let mut oc = out.chunks_exact_mut(8);
    let mut mc = m.chunks_exact(8);
    #[cfg(target_arch = "x86_64")]
    for (o, mm) in (&mut oc).zip(&mut mc) {
        use std::arch::x86_64::*;
        let x = u64::from_le_bytes(mm.try_into().unwrap());
        let p = ((x >> 5) & 0x0707_0707_0707_0707).wrapping_mul(0x0101_0101_0101_0101);
        let v = o.as_mut_ptr() as *mut __m128i;
        // SAFETY: SSE2 is part of x86-64; `o` is 8 u64 (64 bytes), stored unaligned.
        unsafe {
            let z = _mm_setzero_si128();
            let base = _mm_set1_epi64x(icount as i64);
            let b = _mm_unpacklo_epi8(_mm_cvtsi64_si128(p as i64), z);
            let (w0, w1) = (_mm_unpacklo_epi16(b, z), _mm_unpackhi_epi16(b, z));
            _mm_storeu_si128(v, _mm_add_epi64(base, _mm_unpacklo_epi32(w0, z)));
            _mm_storeu_si128(v.add(1), _mm_add_epi64(base, _mm_unpackhi_epi32(w0, z)));
            _mm_storeu_si128(v.add(2), _mm_add_epi64(base, _mm_unpacklo_epi32(w1, z)));
            _mm_storeu_si128(v.add(3), _mm_add_epi64(base, _mm_unpackhi_epi32(w1, z)));
        }
        icount += p >> 56;
    }
    #[cfg(not(target_arch = "x86_64"))]
    for (o, mm) in (&mut oc).zip(&mut mc) {
        let x = u64::from_le_bytes(mm.try_into().unwrap());
        let p = ((x >> 5) & 0x0707_0707_0707_0707).wrapping_mul(0x0101_0101_0101_0101);
        for (j, o) in o.iter_mut().enumerate() {
            o.write(icount + ((p >> (8 * j)) & 0xff));
        }
        icount += p >> 56;
    }
    for (o, &mm) in oc.into_remainder().iter_mut().zip(mc.remainder()) {
        icount += (mm >> 5) as u64;
        o.write(icount);
    }
    icount
}

/// Write the sizes `1 << c` of accesses with meta bytes `m` (size code `c` in bits 2-4) into
/// `out`. Sixteen at a time in SSE2 byte lanes: `1 << c` is `1 + (c & 1)`, multiplied by 4 where
/// bit 1 of `c` is set and by 16 where bit 2 is (each a doubling twice or four times, selected
/// by a compare mask), then widened to 16 bits: about 1.7 instructions an access, where the
/// compiler's vectorised shift takes 2.6.
#[inline(always)]
fn sizes_from_meta(out: &mut [MaybeUninit<u16>], m: &[u8]) {
    let mut oc = out.chunks_exact_mut(16);
    let mut mc = m.chunks_exact(16);
    #[cfg(target_arch = "x86_64")]
    for (o, mm) in (&mut oc).zip(&mut mc) {
        use std::arch::x86_64::*;
        let v = o.as_mut_ptr() as *mut __m128i;
        // SAFETY: SSE2 is part of x86-64; `mm` is 16 bytes and `o` 16 u16 (32 bytes), both
        // loaded and stored unaligned.
        unsafe {
            let z = _mm_setzero_si128();
            let (one, two, four) = (_mm_set1_epi8(1), _mm_set1_epi8(2), _mm_set1_epi8(4));
            let c = _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128(mm.as_ptr() as *const __m128i), 2), _mm_set1_epi8(7));
            let x = _mm_add_epi8(one, _mm_and_si128(c, one));
            let mb = _mm_cmpeq_epi8(_mm_and_si128(c, two), two);
            let x2 = _mm_add_epi8(x, x);
            let x4 = _mm_add_epi8(x2, x2);
            let x = _mm_xor_si128(x, _mm_and_si128(mb, _mm_xor_si128(x, x4)));
            let md = _mm_cmpeq_epi8(_mm_and_si128(c, four), four);
            let x2 = _mm_add_epi8(x, x);
            let x4 = _mm_add_epi8(x2, x2);
            let x8 = _mm_add_epi8(x4, x4);
            let x16 = _mm_add_epi8(x8, x8);
            let x = _mm_xor_si128(x, _mm_and_si128(md, _mm_xor_si128(x, x16)));
            _mm_storeu_si128(v, _mm_unpacklo_epi8(x, z));
            _mm_storeu_si128(v.add(1), _mm_unpackhi_epi8(x, z));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    for (o, mm) in (&mut oc).zip(&mut mc) {
        for (o, &mm) in o.iter_mut().zip(mm) {
            o.write(1u16 << ((mm >> 2) & 7));
        }
    }
    for (o, &mm) in oc.into_remainder().iter_mut().zip(mc.remainder()) {
        o.write(1u16 << ((mm >> 2) & 7));
    }
}

/// One thread's part of a block: the instruction counts it starts at (its thread record's) and
/// ends at (its last access's, or the start without accesses), and its number of accesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadSpan {
    pub tid: u32,
    pub first: u64,
    pub last: u64,
    pub accesses: u64,
}

/// Decode one uncompressed block payload, appending its events to `batch`.
/// Errors are a short description of what is wrong (the caller adds file and offset).
pub fn decode_block(buf: &[u8], batch: &mut Batch) -> Result<(usize, usize), String> {
    decode_block_spans(buf, batch, &mut Vec::new())
}

/// [`decode_block`], also setting `spans` to each thread's instruction counts and number of
/// accesses in the block (in order of first appearance), so that a reader checks that counts do
/// not go back from one block to the next, and the end record's per-thread totals, at a cost
/// per thread and run of accesses, not per access.
pub fn decode_block_spans(
    buf: &[u8],
    batch: &mut Batch,
    spans: &mut Vec<ThreadSpan>,
) -> Result<(usize, usize), String> {
    spans.clear();
    if buf.len() < PAYLOAD_HEADER + PAD {
        return Err("block payload is shorter than its header".into());
    }
    let word = |k: usize| u32::from_le_bytes(buf[4 * k..4 * k + 4].try_into().unwrap()) as usize;
    let (n, n_side, l_meta, l_addr, l_icount, l_size, l_side) =
        (word(0), word(1), word(2), word(3), word(4), word(5), word(6));
    let start = PAYLOAD_HEADER;
    let total =
        [l_meta, l_meta, l_addr, l_icount, l_size, l_side, PAD].iter().try_fold(start, |acc, &l| acc.checked_add(l));
    // The columns hold the accesses that repeat records do not cover: at most n. (n itself is
    // bounded before anything is reserved for it: a damaged count must not ask for gigabytes.)
    if n > MAX_BLOCK_ACCESSES {
        return Err(format!("block claims {n} accesses, more than the {MAX_BLOCK_ACCESSES} a block may hold"));
    }
    if l_meta > n || total != Some(buf.len()) {
        return Err("block column lengths do not add up to the block size".into());
    }
    let meta = &buf[start..start + l_meta];
    let alen = &buf[start + l_meta..start + 2 * l_meta];
    let a0 = start + 2 * l_meta;
    // The address column with the bytes after it (at least PAD), for 8-byte loads.
    let addr_tail = &buf[a0..];
    let ic_col = &buf[a0 + l_addr..a0 + l_addr + l_icount];
    let size_col = &buf[a0 + l_addr + l_icount..a0 + l_addr + l_icount + l_size];
    let side_col = &buf[buf.len() - PAD - l_side..buf.len() - PAD];

    // Validate the per-access columns up front (these passes vectorise), so that the hot loop
    // needs no checks: every kind is 0..=2, every address length 0..=8 and the lengths add up
    // to the address column. Blocks without escaped sizes or instruction deltas take a loop
    // with no branches at all.
    if meta.iter().fold(0u8, |acc, &m| acc | ((m & 3 == 3) as u8)) != 0 {
        // The reader names the block's byte offset. (A message naming the entry, formatted
        // here or in a cold function, cost the address loop below an instruction an access:
        // LLVM then rematerialised the mask table's address in it.)
        return Err("the block holds an access of kind 3, not 0 (load), 1 (store) or 2 (instruction fetch)".into());
    }
    // The sum in chunks of 256 bytes, each added up in u16 lanes (at most 255 x 256, no
    // overflow): a plain u64 sum of bytes does not vectorise.
    let alen_sum: u64 = alen.chunks(256).map(|ch| ch.iter().fold(0u16, |acc, &a| acc + a as u16) as u64).sum();
    if alen.iter().fold(0u8, |acc, &a| acc.max(a)) > 8 || alen_sum != l_addr as u64 {
        return Err("address-length column is malformed".into());
    }
    let escapes = l_size > 0 || l_icount > 0 || meta.iter().fold(0u8, |acc, &m| acc | escaped(m) as u8) != 0;
    let base = batch.len();
    batch.addr.reserve(n);
    batch.icount.reserve(n);
    batch.tid.reserve(n);
    batch.size.reserve(n);
    batch.kind.reserve(n);

    let mut threads: Vec<ThreadState> = Vec::new();
    let mut cur: Option<usize> = None;
    let mut st = ThreadState { tid: 0, addr: 0, icount: 0 };
    let (mut pa, mut pi, mut ps, mut pside) = (0usize, 0usize, 0usize, 0usize);
    let mut sides_seen = 0usize;
    let bad = |what: &str| format!("{what} column is malformed");
    // i: the next access of the block; c: the next access of the columns (i minus the
    // accesses repeat records produced); seg: where the current segment (the accesses since
    // the last side or thread record) started.
    let (mut i, mut c, mut seg) = (0usize, 0usize, 0usize);
    loop {
        // Apply every side record placed before access i.
        let mut next_pos = n;
        while pside < side_col.len() {
            let mut p = pside + 1;
            let pos = varint::get(side_col, &mut p).ok_or_else(|| bad("side-event"))? as usize;
            if pos < i || pos > n {
                return Err(format!("side record position {pos} is out of order"));
            }
            if pos > i {
                next_pos = pos;
                break;
            }
            match side_col[pside] {
                SIDE_REPEAT => {
                    let period = varint::get(side_col, &mut p).ok_or_else(|| bad("side-event"))? as usize;
                    let len = varint::get(side_col, &mut p).ok_or_else(|| bad("side-event"))? as usize;
                    if period == 0 || period >= i - seg || len == 0 || len > n - i {
                        return Err(format!("repeat record at access {i} is malformed"));
                    }
                    repeat(batch, base + i, period, len);
                    // The repeated accesses are the current thread's (those `period` before
                    // them lie in the current segment, which holds accesses, so there is one).
                    if let Some(t) = cur {
                        spans[t].accesses += len as u64;
                    }
                    i += len;
                    // SAFETY: access i - 1 was just written.
                    (st.addr, st.icount) =
                        unsafe { (written(&batch.addr, base + i - 1), written(&batch.icount, base + i - 1)) };
                }
                SIDE_THREAD => {
                    let tid = varint::get(side_col, &mut p).ok_or_else(|| bad("side-event"))?;
                    let tid = u32::try_from(tid).map_err(|_| bad("thread id"))?;
                    if let Some(c) = cur {
                        threads[c] = st;
                    }
                    let fresh = *side_col.get(p).ok_or_else(|| bad("side-event"))?;
                    p += 1;
                    let known = threads.iter().position(|t| t.tid == tid);
                    let c = match (fresh, known) {
                        (0, Some(c)) => c,
                        (1, None) => {
                            let addr = varint::get(side_col, &mut p).ok_or_else(|| bad("side-event"))?;
                            let icount = varint::get(side_col, &mut p).ok_or_else(|| bad("side-event"))?;
                            threads.push(ThreadState { tid, addr, icount });
                            spans.push(ThreadSpan { tid, first: icount, last: icount, accesses: 0 });
                            threads.len() - 1
                        }
                        _ => return Err(format!("thread record for thread {tid} disagrees with the threads seen")),
                    };
                    cur = Some(c);
                    st = threads[c];
                    seg = i;
                }
                tag => {
                    let body_start = p;
                    let ev = decode_side(tag, side_col, &mut p, (base + i) as u32)
                        .ok_or_else(|| format!("side event at column offset {body_start} is malformed"))?;
                    batch.side.push(ev);
                    sides_seen += 1;
                    seg = i;
                }
            }
            pside = p;
        }
        if i < n && cur.is_none() {
            return Err("accesses appear before any thread record".into());
        }
        // next_pos > i (a record's position) or n >= i (records and repeats stay within n).
        let k = next_pos - i;
        if c + k > l_meta {
            return Err("block holds fewer accesses in its columns than its records need".into());
        }
        // The hot loop: accesses i..next_pos all belong to the current thread. Outputs are
        // written into reserved capacity; the lengths are set once the block decoded cleanly.
        let (bi, bn) = (base + i, base + next_pos);
        let tid = st.tid;
        let mut icount = st.icount;
        let (m, al) = (&meta[c..c + k], &alen[c..c + k]);
        // SAFETY: checked above: every length is at most 8 and they add up to the address
        // column, which the payload's PAD bytes (and the other columns) follow.
        let addr =
            unsafe { decode_addrs(&mut batch.addr.spare_capacity_mut()[bi..bn], al, addr_tail, &mut pa, st.addr) };
        if escapes {
            let out = batch.icount.spare_capacity_mut()[bi..bn]
                .iter_mut()
                .zip(batch.size.spare_capacity_mut()[bi..bn].iter_mut())
                .zip(batch.kind.spare_capacity_mut()[bi..bn].iter_mut());
            for (&m, ((oi, os), ok)) in m.iter().zip(out) {
                let size = if (m >> 2) & 7 < 7 {
                    1u16 << ((m >> 2) & 7)
                } else {
                    let v = varint::get(size_col, &mut ps).ok_or_else(|| bad("size"))?;
                    u16::try_from(v).map_err(|_| bad("size"))?
                };
                let icode = (m >> 5) as u64;
                let d = if icode < 7 {
                    icode
                } else {
                    varint::get(ic_col, &mut pi).ok_or_else(|| bad("instruction-count"))?
                };
                // A count past 2^64 - 1 would wrap around and go back.
                icount = icount.checked_add(d).ok_or_else(|| bad("instruction-count"))?;
                oi.write(icount);
                os.write(size);
                ok.write(m & 3);
            }
        } else {
            // Column by column: fewer live registers per loop, and the kind and size maps
            // vectorise. Only the two prefix sums are serial.
            icount = icount_prefix(&mut batch.icount.spare_capacity_mut()[bi..bn], m, icount);
            for (o, &mm) in batch.kind.spare_capacity_mut()[bi..bn].iter_mut().zip(m) {
                o.write(mm & 3);
            }
            sizes_from_meta(&mut batch.size.spare_capacity_mut()[bi..bn], m);
        }
        for t in &mut batch.tid.spare_capacity_mut()[bi..bn] {
            t.write(tid);
        }
        st.addr = addr;
        st.icount = icount;
        // `spans` and `threads` are in the same order. (k > 0 only with a current thread.)
        if let Some(t) = cur {
            spans[t].accesses += k as u64;
        }
        i = next_pos;
        c += k;
        if i >= n && pside >= side_col.len() {
            break;
        }
    }
    if c != l_meta || pa != l_addr || pi != ic_col.len() || ps != size_col.len() {
        return Err("access columns hold more data than the block's accesses use".into());
    }
    // SAFETY: the loop above wrote elements base..base+n of all five columns (every index in
    // 0..n lies in exactly one i..next_pos run or one repeat), within the capacity reserved.
    unsafe {
        batch.addr.set_len(base + n);
        batch.icount.set_len(base + n);
        batch.tid.set_len(base + n);
        batch.size.set_len(base + n);
        batch.kind.set_len(base + n);
    }
    if sides_seen != n_side {
        return Err(format!("block announces {n_side} side events but holds {sides_seen}"));
    }
    if let Some(c) = cur {
        threads[c] = st;
    }
    for (span, t) in spans.iter_mut().zip(&threads) {
        span.last = t.icount;
    }
    Ok((n, n_side))
}

/// Element `k` of a column being decoded, read back beyond the column's length.
///
/// # Safety
/// Element `k` must have been written, within the column's capacity.
#[inline(always)]
#[allow(clippy::ptr_arg)] // the Vec's pointer, whose provenance covers its spare capacity
unsafe fn written<T: Copy>(v: &Vec<T>, k: usize) -> T {
    *v.as_ptr().add(k)
}

/// Produce accesses `at..at + len` of `batch` (beyond its length, in reserved capacity) from a
/// repeat record of period `p`: each access is the one `p` before it, with the address and
/// instruction count advanced by what they advanced over the `p` accesses before `at`.
/// (If deltas repeat with period p from `at` on, `x[j] - x[j - p]` is the same for every
/// `j >= at - 1`, so this equals applying the repeated deltas one by one.)
fn repeat(batch: &mut Batch, at: usize, p: usize, len: usize) {
    // SAFETY (every call below): the caller checked that accesses at - 1 - p .. at were
    // written (they lie in the current segment) and that at + len is within the capacity
    // reserved for the block.
    unsafe {
        let a = batch.addr.as_mut_ptr();
        let step = (*a.add(at - 1)).wrapping_sub(*a.add(at - 1 - p));
        repeat_column(a, at, p, len, |v, k| v.wrapping_add(step.wrapping_mul(k)));
        let ic = batch.icount.as_mut_ptr();
        let step = (*ic.add(at - 1)).wrapping_sub(*ic.add(at - 1 - p));
        repeat_column(ic, at, p, len, |v, k| v.wrapping_add(step.wrapping_mul(k)));
        repeat_column(batch.tid.as_mut_ptr(), at, p, len, |v, _| v);
        repeat_column(batch.size.as_mut_ptr(), at, p, len, |v, _| v);
        repeat_column(batch.kind.as_mut_ptr(), at, p, len, |v, _| v);
    }
}

/// Write `col[at + x] = adv(col[at - p + x % p], x / p + 1)` for `x < len`, by doubling: the
/// first `p` from the `p` before `at`, then each time the part written so far (a multiple `d` of
/// `p`) again, advanced by `d / p` periods. Source and destination never overlap, so the copies
/// are plain vector loops, not one load per element waiting on the store `p` before it.
///
/// # Safety
/// `col[at - p .. at]` must be written and `col[.. at + len]` within one allocation.
#[inline(always)]
unsafe fn repeat_column<T: Copy>(col: *mut T, at: usize, p: usize, len: usize, adv: impl Fn(T, u64) -> T) {
    let first = p.min(len);
    let src = std::slice::from_raw_parts(col.add(at - p), first);
    let dst = std::slice::from_raw_parts_mut(col.add(at), first);
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = adv(s, 1);
    }
    let mut done = first;
    while done < len {
        // `done` is a multiple of p here (p, 2p, 4p, ...).
        let n = done.min(len - done);
        let src = std::slice::from_raw_parts(col.add(at), n);
        let dst = std::slice::from_raw_parts_mut(col.add(at + done), n);
        let k = (done / p) as u64;
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = adv(s, k);
        }
        done += n;
    }
}

fn decode_side(tag: u8, b: &[u8], p: &mut usize, pos: u32) -> Option<SideEvent> {
    let tid = u32::try_from(varint::get(b, p)?).ok()?;
    let icount = varint::get(b, p)?;
    let k = *b.get(*p)?;
    *p += 1;
    let body = match tag {
        SIDE_SYSCALL => {
            let kind = SyscallKind::from_u8(k)?;
            let mut args = [0u64; 6];
            for a in args.iter_mut().take(kind.nargs()) {
                *a = varint::get(b, p)?;
            }
            let ret = varint::unzigzag(varint::get(b, p)?);
            SideBody::Syscall(Syscall { kind, args, ret })
        }
        SIDE_MARKER => SideBody::Marker(match k {
            0 => Marker::ContextSwitch { asid: u32::try_from(varint::get(b, p)?).ok()? },
            1 | 2 => {
                let peer = u32::try_from(varint::get(b, p)?).ok()?;
                let bytes = varint::get(b, p)?;
                if k == 1 {
                    Marker::IpcSend { peer, bytes }
                } else {
                    Marker::IpcRecv { peer, bytes }
                }
            }
            3 => {
                let id = u32::try_from(varint::get(b, p)?).ok()?;
                let len = varint::get(b, p)? as usize;
                let end = p.checked_add(len)?;
                let name = std::str::from_utf8(b.get(*p..end)?).ok()?.to_string();
                *p = end;
                Marker::Phase { id, name }
            }
            _ => return None,
        }),
        _ => return None,
    };
    Some(SideEvent { pos, tid, icount, body })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The vectorised sizes equal `1 << c` for every size code and length.
        #[test]
        fn sizes_from_meta_matches_scalar(m in prop::collection::vec(any::<u8>(), 0..70)) {
            let mut out = vec![MaybeUninit::<u16>::uninit(); m.len()];
            sizes_from_meta(&mut out, &m);
            for (k, &mm) in m.iter().enumerate() {
                // SAFETY: sizes_from_meta writes every element of `out`.
                prop_assert_eq!(unsafe { out[k].assume_init() }, 1u16 << ((mm >> 2) & 7));
            }
        }

        /// The word-at-a-time instruction-count prefix sum equals the plain one, for every
        /// length (full groups of eight and remainders).
        #[test]
        fn icount_prefix_matches_scalar(m in prop::collection::vec(0u8..0xe0, 0..70), start in any::<u64>()) {
            let start = start >> 1;
            let mut out = vec![MaybeUninit::<u64>::uninit(); m.len()];
            let last = icount_prefix(&mut out, &m, start);
            let mut ic = start;
            for (k, &mm) in m.iter().enumerate() {
                ic += (mm >> 5) as u64;
                // SAFETY: icount_prefix writes every element of `out`.
                prop_assert_eq!(unsafe { out[k].assume_init() }, ic);
            }
            prop_assert_eq!(last, ic);
        }

        /// The unchecked address decoder equals one checked load per delta.
        #[test]
        fn decode_addrs_matches_checked(deltas in prop::collection::vec(any::<i64>(), 0..70), shift in 0u32..64, start in any::<u64>()) {
            let (mut al, mut col) = (Vec::new(), Vec::new());
            for d in &deltas {
                let z = varint::zigzag(d >> shift);
                let len = (64 - z.leading_zeros()).div_ceil(8) as usize;
                al.push(len as u8);
                col.extend_from_slice(&z.to_le_bytes()[..len]);
            }
            col.extend_from_slice(&[0; PAD]);
            let mut out = vec![MaybeUninit::<u64>::uninit(); al.len()];
            let mut pa = 0;
            // SAFETY: lengths at most 8, adding up to the column, PAD bytes after it.
            let last = unsafe { decode_addrs(&mut out, &al, &col, &mut pa, start) };
            prop_assert_eq!(pa, col.len() - PAD);
            let mut a = start;
            for (k, d) in deltas.iter().enumerate() {
                a = a.wrapping_add((d >> shift) as u64);
                // SAFETY: decode_addrs writes every element of `out`.
                prop_assert_eq!(unsafe { out[k].assume_init() }, a);
            }
            prop_assert_eq!(last, a);
        }
    }
}
