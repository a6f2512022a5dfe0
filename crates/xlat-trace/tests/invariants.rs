//! Invariants of batches that every producer keeps: `len()`/`is_empty()` count accesses.

use xlat_trace::{source, Access, AccessKind, Batch, Marker, SideBody, Syscall, SyscallKind, TraceReader, TraceWriter};

fn access(addr: u64, icount: u64) -> Access {
    Access { addr, icount, tid: 1, size: 8, kind: AccessKind::Load }
}

/// A file in the temporary directory, removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, contents: &[u8]) -> TempFile {
        let p = std::env::temp_dir().join(format!("xlat-trace-test-{}-{name}", std::process::id()));
        std::fs::write(&p, contents).unwrap();
        TempFile(p)
    }
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

const TEXT_HEAD: &str = "#xlat-text 1\n#header {\"format\":\"xlat-trace\",\"producer\":\"test\"}\n";

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
