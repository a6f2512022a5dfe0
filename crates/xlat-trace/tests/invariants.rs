//! Invariants of batches that every producer keeps: access kinds are 0, 1 or 2 (inputs with any
//! other kind are rejected, naming where), and `len()`/`is_empty()` count accesses.

use xlat_trace::{
    source, Access, AccessKind, Batch, Error, Header, Marker, SideBody, Syscall, SyscallKind, TraceReader, TraceWriter,
};

fn access(addr: u64, icount: u64) -> Access {
    Access { addr, icount, tid: 1, size: 8, kind: AccessKind::Load }
}

use crate::TempFile;

fn read_all(spec: &str) -> xlat_trace::Result<Batch> {
    let mut src = source::open(spec)?;
    source::collect(|b| src.next_batch(b))
}

const TEXT_HEAD: &str = "#xlat-text 1\n#header {\"format\":\"xlat-trace\",\"producer\":\"test\"}\n";

#[test]
fn binary_trace_with_kind_3_is_rejected_naming_the_block() {
    let mut b = Batch::default();
    for (k, a) in [0x7f00_1234_5678u64, 0x1000, 0x5555_0000_0040].into_iter().enumerate() {
        b.push_access(access(a, k as u64 * 3));
    }
    let mut w = TraceWriter::new(Vec::new(), &Header::new("test")).unwrap();
    w.write_batch(&b).unwrap();
    let mut bytes = w.finish().unwrap().0;
    // The block record follows the header: magic and version (12 bytes), u32 length, JSON, CRC.
    let block = 16 + u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize + 4;
    assert_eq!(bytes[block], b'B');
    // Its tag, u64 sequence number (format 1.2), then five u32: counts, lengths, checksum.
    let field = |bytes: &[u8], k: usize| u32::from_le_bytes(bytes[block + 9 + 4 * k..][..4].try_into().unwrap());
    let (raw_len, comp_len) = (field(&bytes, 2) as usize, field(&bytes, 3) as usize);
    let frame = block + 29;
    let mut raw = zstd::bulk::decompress(&bytes[frame..frame + comp_len], raw_len).unwrap();
    // The payload's seven u32 lengths, then the meta column: access 1 gets kind bits 3.
    assert_eq!(u32::from_le_bytes(raw[8..12].try_into().unwrap()), 3, "all three accesses in the columns");
    raw[28 + 1] |= 3;
    let comp = zstd::bulk::compress(&raw, 3).unwrap();
    let mut damaged = bytes[..frame].to_vec();
    damaged[block + 21..block + 25].copy_from_slice(&(comp.len() as u32).to_le_bytes());
    // The checksum covers the sequence number (0) and the frame.
    let mut crc = crc32fast::Hasher::new();
    crc.update(&0u64.to_le_bytes());
    crc.update(&comp);
    damaged[block + 25..block + 29].copy_from_slice(&crc.finalize().to_le_bytes());
    damaged.extend_from_slice(&comp);
    damaged.extend_from_slice(&bytes.split_off(frame + comp_len));
    let mut r = TraceReader::new(&damaged[..], "t.xlat").unwrap();
    let e = r.next_batch(&mut Batch::default()).unwrap_err();
    assert!(matches!(e, Error::Corrupt { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains(&format!("t.xlat is corrupt at byte offset {block}")), "{msg}");
    assert!(
        msg.ends_with("the block holds an access of kind 3, not 0 (load), 1 (store) or 2 (instruction fetch)"),
        "{msg}"
    );
    assert_eq!(msg.lines().count(), 1);
}

#[test]
fn text_trace_with_kind_3_is_rejected_naming_the_line() {
    let t = TempFile::new("kind3.txt", format!("{TEXT_HEAD}A 1 5 L 0x1000 8\n\nA 1 6 3 0x1008 8\n").as_bytes());
    let e = read_all(t.path()).unwrap_err();
    assert!(matches!(e, Error::Text { line: 5, .. }), "{e:?}");
    assert!(e.to_string().ends_with("line 5: access kind '3' is not L, S or I"), "{e}");
}

#[test]
fn lackey_line_of_unknown_kind_is_rejected_naming_offset_and_line() {
    let t = TempFile::new("kind3.lackey", b"I  1000,4\n L 2000,8\n 3 2000,8\n");
    let e = read_all(&format!("lackey:{}", t.path())).unwrap_err().to_string();
    assert!(e.contains("(line 3)") && e.contains("byte offset 20") && e.contains("' 3 2000,8'"), "{e}");
}

#[test]
fn writer_rejects_a_batch_with_kind_3_naming_the_access() {
    let mut b = Batch::default();
    b.push_access(access(0x1000, 1));
    b.push_access(access(0x2000, 2));
    b.kind[1] = 3;
    let mut w = TraceWriter::new(Vec::new(), &Header::new("test")).unwrap();
    let e = w.write_batch(&b).unwrap_err();
    assert!(matches!(e, Error::InvalidEvent(_)), "{e:?}");
    assert!(e.to_string().contains("access 1 has kind 3"), "{e}");
}

#[test]
#[should_panic(expected = "access 0 of a batch has kind 3")]
fn batch_access_refuses_a_broken_kind() {
    let mut b = Batch::default();
    b.push_access(access(0x1000, 1));
    b.kind[0] = 3;
    let _ = b.access(0);
}

#[test]
fn is_empty_agrees_with_len_and_has_no_events_counts_side_events() {
    let mut b = Batch::default();
    assert!(b.is_empty() && b.has_no_events());
    let exit = Syscall { kind: SyscallKind::Exit, args: [0; 6], ret: 0 };
    b.push_side(1, 10, SideBody::Syscall(exit));
    assert_eq!(b.len(), 0);
    assert!(b.is_empty(), "is_empty() is len() == 0");
    assert!(!b.has_no_events(), "a side event is an event");
    b.push_access(access(0x1000, 11));
    assert!(!b.is_empty() && !b.has_no_events());
}

#[test]
fn batches_of_side_events_only_are_read_and_written() {
    // A text trace whose only events are side events: one batch of them, then the end.
    let t = TempFile::new("sides.txt", format!("{TEXT_HEAD}S 1 5 exit 0x0 0\nM 1 6 ctx 2\n").as_bytes());
    let mut src = source::open(t.path()).unwrap();
    let mut b = Batch::default();
    assert!(src.next_batch(&mut b).unwrap());
    assert_eq!((b.len(), b.side.len()), (0, 2));
    assert_eq!(b.side[1].body, SideBody::Marker(Marker::ContextSwitch { asid: 2 }));
    // The writer writes such a batch (it skips only batches with no events at all).
    let mut w = TraceWriter::new(Vec::new(), src.header()).unwrap();
    w.write_batch(&b).unwrap();
    w.write_batch(&Batch::default()).unwrap();
    let (bytes, footer) = w.finish().unwrap();
    assert_eq!((footer.accesses, footer.side_events, footer.blocks), (0, 2, 1));
    let mut r = TraceReader::new(&bytes[..], "mem").unwrap();
    assert_eq!(source::collect(|x| r.next_batch(x)).unwrap(), b);
    assert!(!src.next_batch(&mut b).unwrap());
}
