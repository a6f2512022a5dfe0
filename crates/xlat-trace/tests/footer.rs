//! The end record's figures and the header's `format`, edited with their checksums recomputed
//! (issue 38, items 5 and 6): every figure of the end record is checked against the blocks read
//! (totals, and per thread its accesses and largest instruction count), and a binary header
//! must say `"format": "xlat-trace"`. Each edit is one sentence naming the figure and both
//! values, from the reader and from trace-info alike.

use serde_json::{json, Value};
use xlat_trace::{
    format, info, source, text, workload, Access, AccessKind, Batch, Error, Header, SideBody, Syscall, SyscallKind,
    TraceReader, TraceWriter,
};

/// The first 20,000 accesses (and 574 syscalls and markers) of a real trace, one thread (15112).
const REAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/trace/dict-lookups-20k.xlat");

use crate::TempFile;

/// The byte offset of a trace's end record.
fn end_at(bytes: &[u8]) -> usize {
    let minor = u16::from_le_bytes([bytes[10], bytes[11]]);
    // A block record: tag, u64 sequence number (1.2 on), u32 counts and lengths, checksum.
    let counts = if minor >= 2 { 9 } else { 1 };
    let mut at = 16 + u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize + 4;
    while bytes[at] == format::TAG_BLOCK {
        let comp = u32::from_le_bytes(bytes[at + counts + 12..][..4].try_into().unwrap()) as usize;
        at += counts + 20 + comp;
    }
    assert_eq!(bytes[at], format::TAG_END);
    at
}

/// The end record's JSON.
fn footer_json(bytes: &[u8]) -> Value {
    let at = end_at(bytes);
    let len = u32::from_le_bytes(bytes[at + 1..at + 5].try_into().unwrap()) as usize;
    serde_json::from_slice(&bytes[at + 5..at + 5 + len]).unwrap()
}

/// The trace with its end record's JSON edited by `edit`, its length and checksum recomputed,
/// and the offset of the end record.
fn with_footer(bytes: &[u8], edit: impl FnOnce(&mut Value)) -> (Vec<u8>, u64) {
    let at = end_at(bytes);
    let mut v = footer_json(bytes);
    edit(&mut v);
    let json = serde_json::to_vec(&v).unwrap();
    let mut out = bytes[..at].to_vec();
    out.push(format::TAG_END);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
    out.extend_from_slice(format::END_MAGIC);
    (out, at as u64)
}

/// The trace with its header's JSON object edited by `edit`, its length and checksum
/// recomputed.
fn with_header(bytes: &[u8], edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Vec<u8> {
    let len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let mut v: Value = serde_json::from_slice(&bytes[16..16 + len]).unwrap();
    edit(v.as_object_mut().unwrap());
    let json = serde_json::to_vec(&v).unwrap();
    let mut out = bytes[..12].to_vec();
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
    out.extend_from_slice(&bytes[16 + len + 4..]);
    out
}

fn read_all(bytes: &[u8]) -> xlat_trace::Result<u64> {
    let mut r = TraceReader::new(bytes, "t.xlat")?;
    let mut b = Batch::default();
    while r.next_batch(&mut b)? {}
    Ok(r.accesses_read())
}

/// Every way a trace file is read: the events (sim) and trace-info's summary.
fn every_reader(path: &str) -> [xlat_trace::Result<u64>; 2] {
    let events = source::open(path).and_then(|mut s| source::collect(|b| s.next_batch(b))).map(|b| b.len() as u64);
    let info = source::open(path).and_then(|mut s| info::trace_info(s.as_mut(), |_| {})).map(|i| i.accesses);
    [events, info]
}

/// The corruption `bytes` is reported as, by the reader in memory and by every reader of the
/// file: the same one-sentence error at `offset`, whose detail is returned.
fn corrupt_at(bytes: &[u8], offset: u64) -> String {
    let detail = match read_all(bytes) {
        Err(Error::Corrupt { offset: o, detail, .. }) if o == offset => detail,
        other => panic!("expected a corrupt-file error at byte offset {offset}, got {other:?}"),
    };
    let f = TempFile::new("edited.xlat", bytes);
    for r in every_reader(f.path()) {
        let msg = r.unwrap_err().to_string();
        assert_eq!(msg, format!("{} is corrupt at byte offset {offset}: {detail}", f.path()));
        assert_eq!(msg.lines().count(), 1, "{msg}");
    }
    detail
}

fn real() -> Vec<u8> {
    std::fs::read(REAL).expect("the checked-in real trace")
}

#[test]
fn the_real_trace_and_its_footer_rewritten_unchanged_read() {
    let bytes = real();
    assert_eq!(
        footer_json(&bytes),
        json!({"accesses": 20000, "side_events": 574, "blocks": 10,
               "threads": [{"tid": 15112, "accesses": 20000, "instructions": 26500045774u64}]})
    );
    // The edit helper itself keeps the trace readable.
    let (same, _) = with_footer(&bytes, |_| {});
    assert_eq!(read_all(&same).unwrap(), 20_000);
    let f = TempFile::new("real.xlat", &bytes);
    assert_eq!(every_reader(f.path()).map(|r| r.unwrap()), [20_000, 20_000]);
}

#[test]
fn every_edit_of_the_end_record_is_reported_naming_the_figure() {
    let bytes = real();
    type Edit = fn(&mut Value);
    let cases: [(&str, Edit, &str); 12] = [
        ("thread accesses + 1", |v| v["threads"][0]["accesses"] = json!(20001),
         "the end record says thread 15112 made 20001 accesses but the trace holds 20000"),
        ("thread accesses - 1", |v| v["threads"][0]["accesses"] = json!(19999),
         "the end record says thread 15112 made 19999 accesses but the trace holds 20000"),
        ("instructions + 1000", |v| v["threads"][0]["instructions"] = json!(26500046774u64),
         "the end record says thread 15112's largest instruction count is 26500046774 but the trace's is 26500045774"),
        ("a changed tid", |v| v["threads"][0]["tid"] = json!(16004),
         "the end record does not list thread 15112, which made 20000 accesses in the trace"),
        ("a smaller tid", |v| v["threads"][0]["tid"] = json!(7),
         "the end record lists thread 7, which has no events in the trace"),
        ("an extra thread", |v| v["threads"].as_array_mut().unwrap().push(json!({"tid": 16004, "accesses": 0, "instructions": 0})),
         "the end record lists thread 16004, which has no events in the trace"),
        ("no threads", |v| v["threads"] = json!([]),
         "the end record does not list thread 15112, which made 20000 accesses in the trace"),
        ("a thread listed twice", |v| {
            let t = v["threads"][0].clone();
            v["threads"].as_array_mut().unwrap().push(t);
        }, "the end record lists thread 15112 twice"),
        ("total accesses + 1", |v| v["accesses"] = json!(20001),
         "the end record counts 20001 accesses but the blocks before it hold 20000"),
        ("side events - 1", |v| v["side_events"] = json!(573),
         "the end record counts 573 side events but the blocks before it hold 574"),
        // (The message goes on with serde's list of fields and the column.)
        ("an unknown field", |v| v["comment"] = json!("x"),
         "end record JSON is invalid (unknown field `comment`, expected one of `accesses`, `side_events`, `blocks`, `threads`"),
        ("an unknown thread field", |v| v["threads"][0]["cpu"] = json!(3),
         "end record JSON is invalid (unknown field `cpu`, expected one of `tid`, `accesses`, `instructions`"),
    ];
    for (what, edit, want) in cases {
        let (edited, at) = with_footer(&bytes, edit);
        let detail = corrupt_at(&edited, at);
        if what.starts_with("an unknown") {
            assert!(detail.starts_with(want) && detail.ends_with(')'), "{what}: {detail}");
        } else {
            assert_eq!(detail, want, "{what}");
        }
    }
}

fn access(tid: u32, icount: u64, addr: u64) -> Access {
    Access { addr, icount, tid, size: 8, kind: AccessKind::Load }
}

fn syscall(kind: SyscallKind, args: [u64; 6], ret: i64) -> SideBody {
    SideBody::Syscall(Syscall { kind, args, ret })
}

/// Three threads over several blocks: thread 1 runs a strided loop (repeat records), thread 2
/// has side events only, thread 3 accesses and then exits at a count above its last access.
fn three_threads() -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), &Header::new("t")).unwrap();
    let mut ic = 100;
    for round in 0..4u64 {
        let mut b = Batch::default();
        b.push_side(2, 50 + round, syscall(SyscallKind::Brk, [0, 0, 0, 0, 0, 0], 0x5000));
        for k in 0..300u64 {
            ic += 2;
            b.push_access(access(1, ic, 0x10_0000 + 8 * (round * 300 + k)));
        }
        for k in 0..5u64 {
            b.push_access(access(3, 1000 * round + k, 0x20_0000 + 4096 * k));
        }
        w.write_batch(&b).unwrap();
    }
    let mut b = Batch::default();
    b.push_side(3, 9000, syscall(SyscallKind::Exit, [0; 6], 0));
    w.write_batch(&b).unwrap();
    w.finish().unwrap().0
}

#[test]
fn a_trace_of_several_threads_and_side_events_reads_and_its_footer_is_checked() {
    let bytes = three_threads();
    assert_eq!(
        footer_json(&bytes)["threads"],
        json!([{"tid": 1, "accesses": 1200, "instructions": 2500},
               {"tid": 2, "accesses": 0, "instructions": 53},
               {"tid": 3, "accesses": 20, "instructions": 9000}])
    );
    assert_eq!(read_all(&bytes).unwrap(), 1220);
    type Edit = fn(&mut Value);
    let cases: [(Edit, &str); 4] = [
        (
            |v| {
                v["threads"].as_array_mut().unwrap().remove(1);
            },
            "the end record does not list thread 2, which has side events in the trace",
        ),
        // The exit at 9000 counts, though it is no access.
        (
            |v| v["threads"][2]["instructions"] = json!(3004),
            "the end record says thread 3's largest instruction count is 3004 but the trace's is 9000",
        ),
        (
            |v| v["threads"][0]["accesses"] = json!(1199),
            "the end record says thread 1 made 1199 accesses but the trace holds 1200",
        ),
        // Accesses moved from one thread to another: the totals still agree.
        (
            |v| {
                v["threads"][0]["accesses"] = json!(1201);
                v["threads"][2]["accesses"] = json!(19);
            },
            "the end record says thread 1 made 1201 accesses but the trace holds 1200",
        ),
    ];
    for (edit, want) in cases {
        let (edited, at) = with_footer(&bytes, edit);
        assert_eq!(corrupt_at(&edited, at), want);
    }
    // The list in another order (an older or hand-made writer's) states the same figures.
    let (reordered, _) = with_footer(&bytes, |v| v["threads"].as_array_mut().unwrap().reverse());
    assert_eq!(read_all(&reordered).unwrap(), 1220);
}

#[test]
fn every_workload_reads_back_with_its_footer_in_every_format_version() {
    // The reader's per-thread figures (counted per run of accesses and per repeat record)
    // equal the writer's (counted per access), with and without repeat records.
    for w in workload::catalog() {
        let spec = format!("workload:{}?accesses=30000", w.name);
        for minor in 0..=format::VERSION_MINOR {
            let mut src = source::open(&spec).unwrap();
            let mut wr = TraceWriter::with_options(Vec::new(), src.header(), 3, minor).unwrap();
            let mut b = Batch::default();
            while src.next_batch(&mut b).unwrap() {
                wr.write_batch(&b).unwrap();
            }
            let (bytes, footer) = wr.finish().unwrap();
            let mut r = TraceReader::new(&bytes[..], "t").unwrap();
            while r.next_batch(&mut b).unwrap_or_else(|e| panic!("{spec} in 1.{minor}: {e}")) {}
            assert_eq!(r.footer(), Some(&footer), "{spec}");
        }
    }
}

#[test]
fn the_header_must_name_the_xlat_trace_format() {
    let bytes = real();
    let long = format!("xlat\ntrace{}", "-".repeat(100));
    let cases: [(Option<Value>, String); 5] = [
        (None, r#"the header names no format (it must hold "format": "xlat-trace")"#.into()),
        (Some(json!("other")), r#"the header names the format "other", not "xlat-trace""#.into()),
        (Some(json!("x")), r#"the header names the format "x", not "xlat-trace""#.into()),
        (Some(json!("")), r#"the header names the format "", not "xlat-trace""#.into()),
        // Shown on one line, its first 64 characters.
        (
            Some(json!(long)),
            format!(r#"the header names the format "xlat\ntrace{}"..., not "xlat-trace""#, "-".repeat(54)),
        ),
    ];
    for (value, want) in cases {
        let edited = with_header(&bytes, |h| {
            match &value {
                None => h.remove("format"),
                Some(v) => h.insert("format".into(), v.clone()),
            };
        });
        let e = TraceReader::new(&edited[..], "t.xlat").err().expect("refused");
        assert!(matches!(&e, Error::Corrupt { offset: 16, detail, .. } if *detail == want), "{e:?}");
        assert_eq!(e.to_string().lines().count(), 1);
        let f = TempFile::new("header.xlat", &edited);
        for r in every_reader(f.path()) {
            assert_eq!(r.unwrap_err().to_string(), format!("{} is corrupt at byte offset 16: {want}", f.path()));
        }
    }
    // A format that is not a string is invalid JSON for the header.
    let edited = with_header(&bytes, |h| {
        h.insert("format".into(), json!(1));
    });
    let e = TraceReader::new(&edited[..], "t.xlat").err().expect("refused").to_string();
    assert!(
        e.starts_with("t.xlat is corrupt at byte offset 16: header JSON is invalid (invalid type: integer `1`"),
        "{e}"
    );
    // The header rewritten as it was reads.
    assert_eq!(read_all(&with_header(&bytes, |_| {})).unwrap(), 20_000);
}

#[test]
fn writers_write_the_format_whatever_the_header_says() {
    let mut h = Header::new("t");
    h.format = "other".into();
    let mut b = Batch::default();
    b.push_access(access(1, 5, 0x1000));
    let mut w = TraceWriter::new(Vec::new(), &h).unwrap();
    w.write_batch(&b).unwrap();
    let bytes = w.finish().unwrap().0;
    let r = TraceReader::new(&bytes[..], "t").unwrap();
    assert_eq!(r.header().format, "xlat-trace");
    let mut w = text::TextWriter::new(Vec::new(), &h).unwrap();
    w.write_batch(&b).unwrap();
    let t = String::from_utf8(w.finish().unwrap()).unwrap();
    assert!(t.lines().nth(1).unwrap().starts_with(r#"#header {"format":"xlat-trace","#), "{t}");
}

#[test]
fn a_text_header_may_omit_the_format_but_not_name_another() {
    let body = |header: &str| format!("#xlat-text 1\n#header {header}\nA 1 5 L 0x10 8\n");
    let f = TempFile::new("omitted.txt", body(r#"{"producer":"x"}"#).as_bytes());
    assert_eq!(every_reader(f.path()).map(|r| r.unwrap()), [1, 1]);
    assert_eq!(source::open(f.path()).unwrap().header().format, "xlat-trace");
    let f = TempFile::new("other.txt", body(r#"{"format":"other","producer":"x"}"#).as_bytes());
    for r in every_reader(f.path()) {
        assert_eq!(
            r.unwrap_err().to_string(),
            format!(r#"{} line 2: the header names the format "other", not "xlat-trace""#, f.path())
        );
    }
}

#[test]
fn a_text_end_line_names_the_thread_figure_that_disagrees() {
    let mut b = Batch::default();
    for ic in [10, 12, 12] {
        b.push_access(access(1, ic, 0x1000));
    }
    b.push_side(2, 7, syscall(SyscallKind::Brk, [0x5000, 0, 0, 0, 0, 0], 0x5000));
    let mut w = text::TextWriter::new(Vec::new(), &Header::new("t")).unwrap();
    w.write_batch(&b).unwrap();
    let t = String::from_utf8(w.finish().unwrap()).unwrap();
    let end = r#""threads":[{"tid":1,"accesses":3,"instructions":12},{"tid":2,"accesses":0,"instructions":7}]"#;
    assert!(t.contains(end), "{t}");
    for (from, to, want) in [
        (
            r#""tid":1,"accesses":3"#,
            r#""tid":1,"accesses":4"#,
            "the end line says thread 1 made 4 accesses but the trace holds 3",
        ),
        (
            r#""instructions":7"#,
            r#""instructions":8"#,
            "the end line says thread 2's largest instruction count is 8 but the trace's is 7",
        ),
        (
            r#",{"tid":2,"accesses":0,"instructions":7}"#,
            "",
            "the end line does not list thread 2, which has side events in the trace",
        ),
    ] {
        let f = TempFile::new("end.txt", t.replace(from, to).as_bytes());
        for r in every_reader(f.path()) {
            assert_eq!(r.unwrap_err().to_string(), format!("{} line 7: {want}", f.path()));
        }
    }
}
