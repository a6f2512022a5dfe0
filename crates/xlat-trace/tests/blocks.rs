//! Blocks reordered, repeated or dropped (each keeping its own valid checksum) are reported as
//! corruption naming the byte offset: format 1.2 numbers its blocks; in every version the end
//! record counts them and instruction counts may not go back from one block to the next.

use xlat_trace::{format, source, Batch, Error, TraceReader, TraceWriter};

/// The first 20,000 accesses (and 574 syscalls and markers before them) of a real trace
/// (`python dict-lookups.py` under `xlat trace`), in ten blocks of 2,000 accesses, format 1.2.
const REAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/trace/dict-lookups-20k.xlat");

/// The byte ranges of a trace's header, its blocks and its end record.
struct Layout {
    head: std::ops::Range<usize>,
    blocks: Vec<std::ops::Range<usize>>,
    end: std::ops::Range<usize>,
}

fn layout(bytes: &[u8]) -> Layout {
    let minor = u16::from_le_bytes([bytes[10], bytes[11]]);
    // A block record: tag, u64 sequence number (1.2 on), u32 counts and lengths, checksum.
    let counts = if minor >= 2 { 9 } else { 1 };
    let mut at = 16 + u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize + 4;
    let head = 0..at;
    let mut blocks = Vec::new();
    while bytes[at] == format::TAG_BLOCK {
        let comp = u32::from_le_bytes(bytes[at + counts + 12..][..4].try_into().unwrap()) as usize;
        blocks.push(at..at + counts + 20 + comp);
        at += counts + 20 + comp;
    }
    assert_eq!(bytes[at], format::TAG_END);
    Layout { head, blocks, end: at..bytes.len() }
}

/// The file with its blocks in the order `order` (indices into the original's blocks).
fn reassemble(bytes: &[u8], order: &[usize]) -> (Vec<u8>, Vec<usize>) {
    let l = layout(bytes);
    let mut out = bytes[l.head].to_vec();
    let mut offsets = Vec::new();
    for &k in order {
        offsets.push(out.len());
        out.extend_from_slice(&bytes[l.blocks[k].clone()]);
    }
    offsets.push(out.len());
    out.extend_from_slice(&bytes[l.end]);
    (out, offsets)
}

fn read_all(bytes: &[u8]) -> xlat_trace::Result<u64> {
    let mut r = TraceReader::new(bytes, "t.xlat")?;
    let mut b = Batch::default();
    while r.next_batch(&mut b)? {}
    Ok(r.accesses_read())
}

fn corrupt(bytes: &[u8]) -> (u64, String, String) {
    match read_all(bytes) {
        Err(e @ Error::Corrupt { .. }) => {
            let msg = e.to_string();
            assert_eq!(msg.lines().count(), 1, "{msg}");
            let Error::Corrupt { offset, detail, .. } = e else { unreachable!() };
            (offset, detail, msg)
        }
        other => panic!("expected a corrupt-file error, got {other:?}"),
    }
}

fn real() -> Vec<u8> {
    std::fs::read(REAL).expect("the checked-in real trace")
}

#[test]
fn the_real_trace_reads_whole() {
    let bytes = real();
    assert_eq!(layout(&bytes).blocks.len(), 10);
    assert_eq!(read_all(&bytes).unwrap(), 20_000);
    let r = TraceReader::new(&bytes[..], "t").unwrap();
    assert_eq!(r.version(), (1, 2));
    assert!(r.order_verified());
}

#[test]
fn swapped_blocks_are_reported_at_the_first_out_of_place_block() {
    let bytes = real();
    let (swapped, at) = reassemble(&bytes, &[0, 1, 2, 4, 3, 5, 6, 7, 8, 9]);
    let (offset, detail, msg) = corrupt(&swapped);
    assert_eq!(offset, at[3] as u64);
    assert_eq!(detail, "block 4 stands where block 3 belongs (blocks were reordered, repeated or dropped)");
    assert!(msg.starts_with(&format!("t.xlat is corrupt at byte offset {}: ", at[3])), "{msg}");
}

#[test]
fn a_repeated_block_is_reported_where_it_repeats() {
    let bytes = real();
    let (dup, at) = reassemble(&bytes, &[0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9]);
    let (offset, detail, _) = corrupt(&dup);
    assert_eq!(
        (offset, detail.as_str()),
        (at[3] as u64, "block 2 stands where block 3 belongs (blocks were reordered, repeated or dropped)")
    );
}

#[test]
fn a_dropped_block_is_reported_where_it_is_missing() {
    let bytes = real();
    let (dropped, at) = reassemble(&bytes, &[0, 1, 2, 3, 4, 6, 7, 8, 9]);
    let (offset, detail, _) = corrupt(&dropped);
    assert_eq!(
        (offset, detail.as_str()),
        (at[5] as u64, "block 6 stands where block 5 belongs (blocks were reordered, repeated or dropped)")
    );
    // The last block dropped: the end record's count tells.
    let (dropped, at) = reassemble(&bytes, &[0, 1, 2, 3, 4, 5, 6, 7, 8]);
    let (offset, detail, _) = corrupt(&dropped);
    assert_eq!(offset, at[9] as u64);
    assert_eq!(detail, "the end record counts 10 blocks but 9 precede it (blocks were dropped or repeated)");
}

#[test]
fn a_damaged_sequence_number_fails_the_block_checksum() {
    let mut bytes = real();
    let b = layout(&bytes).blocks[4].start;
    bytes[b + 1] ^= 1; // block 4 claims to be block 5
    let (offset, detail, _) = corrupt(&bytes);
    assert_eq!((offset, detail.as_str()), (b as u64, "block checksum does not match"));
}

/// The same events in format 1.1 (no sequence numbers): `xlat convert --format-version 1.1`.
fn real_in_1_1() -> Vec<u8> {
    let mut src = source::open(REAL).unwrap();
    let mut w = TraceWriter::with_options(Vec::new(), src.header(), 3, 1).unwrap();
    let mut b = Batch::default();
    while src.next_batch(&mut b).unwrap() {
        w.write_batch(&b).unwrap();
    }
    w.finish().unwrap().0
}

#[test]
fn older_files_are_read_and_their_reordered_blocks_caught_by_instruction_counts() {
    let bytes = real_in_1_1();
    assert_eq!(read_all(&bytes).unwrap(), 20_000);
    let r = TraceReader::new(&bytes[..], "t").unwrap();
    assert_eq!((r.version(), r.order_verified()), ((1, 1), false));
    // One thread whose count grows: a swapped or repeated block sends it back.
    let (swapped, at) = reassemble(&bytes, &[0, 1, 2, 4, 3, 5, 6, 7, 8, 9]);
    let (offset, detail, _) = corrupt(&swapped);
    assert_eq!(offset, at[4] as u64);
    assert!(detail.starts_with("instruction count of thread 15112 goes back from "), "{detail}");
    let (dup, at) = reassemble(&bytes, &[0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(corrupt(&dup).0, at[3] as u64);
    // A dropped block: the end record's count.
    let (dropped, at) = reassemble(&bytes, &[0, 1, 2, 3, 4, 6, 7, 8, 9]);
    let (offset, detail, _) = corrupt(&dropped);
    assert_eq!(offset, at[9] as u64);
    assert_eq!(detail, "the end record counts 10 blocks but 9 precede it (blocks were dropped or repeated)");
}

#[test]
fn the_writer_refuses_counts_going_back_across_blocks() {
    use xlat_trace::{Access, AccessKind, Header};
    let one = |icount| {
        let mut b = Batch::default();
        b.push_access(Access { addr: 0x1000, icount, tid: 3, size: 8, kind: AccessKind::Load });
        b
    };
    let mut w = TraceWriter::new(Vec::new(), &Header::new("t")).unwrap();
    w.write_batch(&one(100)).unwrap();
    let e = w.write_batch(&one(99)).unwrap_err();
    assert_eq!(e.to_string(), "invalid event: instruction count of thread 3 went backwards from 100 to 99");
}
