//! The text form's end line (versions 2 and 3), its checks and the version 1 files without one;
//! version 3's hex syscall results.

use xlat_trace::{info, source, text, Batch, Error, TraceWriter};

use crate::TempFile;

fn read_all(spec: &str) -> xlat_trace::Result<Batch> {
    let mut src = source::open(spec)?;
    source::collect(|b| src.next_batch(b))
}

/// Every way a trace is read: the events (sim), trace-info's summary, and convert's writer.
fn every_reader(spec: &str) -> [xlat_trace::Result<u64>; 3] {
    let events = read_all(spec).map(|b| b.len() as u64);
    let info = source::open(spec).and_then(|mut s| info::trace_info(s.as_mut(), |_| {})).map(|i| i.accesses);
    let convert = (|| {
        let mut s = source::open(spec)?;
        let mut w = TraceWriter::new(Vec::new(), s.header())?;
        let mut b = Batch::default();
        while s.next_batch(&mut b)? {
            w.write_batch(&b)?;
        }
        Ok(w.finish()?.1.accesses)
    })();
    [events, info, convert]
}

/// Three accesses of thread 1 and a syscall of thread 2, written by the text writer.
fn small() -> String {
    let mut b = Batch::default();
    for (k, ic) in [10u64, 12, 12].into_iter().enumerate() {
        b.push_access(xlat_trace::Access {
            addr: 0x1000 + 64 * k as u64,
            icount: ic,
            tid: 1,
            size: 8,
            kind: xlat_trace::AccessKind::Load,
        });
    }
    b.push_side(
        2,
        7,
        xlat_trace::SideBody::Syscall(xlat_trace::Syscall {
            kind: xlat_trace::SyscallKind::Brk,
            args: [0x5000, 0, 0, 0, 0, 0],
            ret: 0x5000,
        }),
    );
    let mut w = text::TextWriter::new(Vec::new(), &xlat_trace::Header::new("t")).unwrap();
    w.write_batch(&b).unwrap();
    String::from_utf8(w.finish().unwrap()).unwrap()
}

#[test]
fn the_writer_ends_with_the_totals() {
    let t = small();
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines[0], "#xlat-text 3");
    assert_eq!(lines[5], "S 2 7 brk 0x5000 0x5000"); // version 3: the result in hex, as the arguments
    assert_eq!(lines.len(), 2 + 4 + 1);
    assert_eq!(
        lines[6],
        r#"#end {"accesses":3,"side_events":1,"threads":[{"tid":1,"accesses":3,"instructions":12},{"tid":2,"accesses":0,"instructions":7}]}"#
    );
    let f = TempFile::new("small.txt", &t);
    assert_eq!(every_reader(f.path()).map(|r| r.unwrap()), [3, 3, 3]);
    assert_eq!(source::open(f.path()).unwrap().format().as_deref(), Some("text 3"));
}

#[test]
fn a_cut_text_trace_is_truncated() {
    let t = small();
    // Cut at a line boundary before the end line: 2 of the 3 accesses remain.
    let cut: String = t.lines().take(4).map(|l| format!("{l}\n")).collect();
    let f = TempFile::new("cut.txt", &cut);
    for r in every_reader(f.path()) {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::Truncated { accesses: 2, .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!(
                "{} is truncated: it ends after 2 accesses without the end-of-trace record (was the writer interrupted?)",
                f.path()
            )
        );
    }
}

#[test]
fn a_dropped_or_repeated_line_disagrees_with_the_end_line() {
    let t = small();
    let mut lines: Vec<&str> = t.lines().collect();
    lines.remove(3); // the second access
    let f = TempFile::new("dropped.txt", &(lines.join("\n") + "\n"));
    let e = read_all(f.path()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{} line 6: the end line counts 3 accesses and 1 side events, but 2 and 1 precede it (lines were dropped or repeated)",
            f.path()
        )
    );
    let mut lines: Vec<&str> = t.lines().collect();
    lines.push("A 1 20 L 0x1000 8");
    let f = TempFile::new("after.txt", &(lines.join("\n") + "\n"));
    assert_eq!(
        read_all(f.path()).unwrap_err().to_string(),
        format!("{} line 8: an event follows the end line", f.path())
    );
}

#[test]
fn an_instruction_count_jumping_to_the_top_is_refused_by_every_reader() {
    let body = "#xlat-text 1\n#header {\"producer\":\"x\"}\nA 1 5 L 0x10 8\nA 1 18446744073709551615 L 0x18 8\nA 1 6 L 0x20 8\n";
    let f = TempFile::new("jump.txt", body);
    for r in every_reader(f.path()) {
        assert_eq!(
            r.unwrap_err().to_string(),
            format!("{} line 5: instruction count of thread 1 went backwards from 18446744073709551615 to 6", f.path())
        );
    }
}

#[test]
fn whitespace_only_lines_are_ignored_and_version_1_files_read() {
    let body = "#xlat-text 1\n#header {\"producer\":\"x\"}\n  \nA 1 5 L 0x10 8\n\t\n\nA 1 6 L 0x20 8\n \t \n";
    let f = TempFile::new("v1.txt", body);
    assert_eq!(every_reader(f.path()).map(|r| r.unwrap()), [2, 2, 2]);
    let fmt = source::open(f.path()).unwrap().format().unwrap();
    assert!(fmt.starts_with("text 1 (no end line: a file cut at a line boundary reads as complete"), "{fmt}");
}

#[test]
fn syscall_results_read_in_hex_and_in_decimal() {
    // version 3 writes hex (an error as -0x..); versions 1 and 2 wrote decimal: both read
    let head = "#header {\"producer\":\"x\"}\nA 1 5 L 0x10 8\n";
    let end = "#end {\"accesses\":1,\"side_events\":2,\"threads\":[{\"tid\":1,\"accesses\":1,\"instructions\":7}]}\n";
    for (magic, brk, err) in
        [("#xlat-text 3", "0x5000", "-0xc"), ("#xlat-text 2", "20480", "-12"), ("#xlat-text 3", "20480", "-12")]
    {
        let body = format!("{magic}\n{head}S 1 6 brk 0x5000 {brk}\nS 1 7 munmap 0x6000 0x1000 {err}\n{end}");
        let f = TempFile::new("rets.txt", &body);
        let b = read_all(f.path()).unwrap();
        let rets: Vec<i64> = b
            .events()
            .filter_map(|e| match e {
                xlat_trace::Event::Side { body: xlat_trace::SideBody::Syscall(s), .. } => Some(s.ret),
                _ => None,
            })
            .collect();
        assert_eq!(rets, [0x5000, -12], "{magic} {brk} {err}");
    }
    let body = format!("#xlat-text 3\n{head}S 1 6 brk 0x5000 0xz\n{end}");
    let f = TempFile::new("bad-ret.txt", &body);
    let e = read_all(f.path()).unwrap_err().to_string();
    assert!(e.contains("syscall result '0xz' is not a signed number"), "{e}");
}
