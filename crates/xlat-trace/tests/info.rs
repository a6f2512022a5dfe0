//! `trace-info`'s counts (xlat_trace::info), above all instructions, which must be counted as the
//! simulator counts them.

use std::collections::HashMap;
use std::io::Write;
use xlat_trace::info::{trace_info, InfoBuilder, ThreadInfo};
use xlat_trace::{source, text, Batch, Event};

/// The simulator's rule (xlat-core `Simulator::set_icount`, called for every access and never
/// for a side event): a thread's first access counts 1 instruction, then every rise of its
/// instruction count counts the rise.
fn simulator_instructions(events: &[Event]) -> u64 {
    let mut seen: HashMap<u32, u64> = HashMap::new();
    let mut n = 0;
    for e in events {
        if let Event::Access(a) = e {
            match seen.get_mut(&a.tid) {
                None => {
                    seen.insert(a.tid, a.icount);
                    n += 1;
                }
                Some(last) if a.icount > *last => {
                    n += a.icount - *last;
                    *last = a.icount;
                }
                Some(_) => {}
            }
        }
    }
    n
}

fn parse(lines: &str) -> Vec<Event> {
    lines.lines().map(|l| text::parse_event(l).unwrap()).collect()
}

#[test]
fn syscalls_before_the_first_access_are_not_instructions() {
    // As in a trace recorded with `xlat trace --skip N`: the setup syscalls carry small counts,
    // the first access comes a million instructions later.
    let evs = parse(
        "S 7 150 brk 0x0 93824992608256\n\
         S 7 300 mmap 0x0 0x1000 0x3 0x22 0xffffffffffffffff 0x0 140737349943296\n\
         A 7 1000000 L 0x7ffff7ff0000 8\n\
         A 7 1000004 S 0x7ffff7ff0008 8\n\
         A 7 1000009 L 0x7ffff7ff0010 8\n\
         S 7 1000100 exit 0x0 0\n",
    );
    let mut b = Batch::default();
    for e in &evs {
        b.push_event(e.clone());
    }
    let mut ib = InfoBuilder::default();
    ib.add(&b);
    let info = ib.finish();
    assert_eq!(info.instructions, 10, "1000009 - 1000000 + 1, not counted from the syscall at 150");
    assert_eq!(info.instructions, simulator_instructions(&evs));
    let t = &info.threads[&7];
    assert_eq!(
        *t,
        ThreadInfo {
            accesses: 3,
            side_events: 3,
            first_icount: Some(1_000_000),
            last_icount: Some(1_000_009),
            instructions: 10
        }
    );
}

#[test]
fn instructions_equal_the_simulators_on_a_multithreaded_text_trace() {
    // Three threads interleaved over more than two text-reader batches, each starting late and
    // after syscalls of its own; thread 9 has side events only.
    let mut t = String::from("#xlat-text 1\n#header {\"format\":\"xlat-trace\",\"producer\":\"test\"}\n");
    let mut ic: HashMap<u32, u64> = HashMap::from([(1, 0), (2, 5_000), (3, 70_000)]);
    for tid in [1u32, 2, 3] {
        t += &format!("S {tid} {} brk 0x0 4096\n", ic[&tid] / 2);
    }
    t += "M 9 12 ctx 4\nM 9 40 phase 1 roi\n";
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for k in 0..40_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let tid = [1, 2, 3, 1][(x % 4) as usize];
        let c = ic.get_mut(&tid).unwrap();
        *c += x >> 61; // 0..7 instructions later, sometimes none
        let kind = ["L", "S", "I"][(k % 3) as usize];
        t += &format!("A {tid} {c} {kind} {:#x} 8\n", 0x10_0000 + 8 * (x % 100_000));
        if k % 10_000 == 9_999 {
            t += &format!("S {tid} {} madvise 0x100000 0x1000 0x4 0\n", *c + 50);
            *c += 50;
        }
    }
    let path = std::env::temp_dir().join(format!("xlat-trace-test-{}-threads.txt", std::process::id()));
    std::fs::File::create(&path).unwrap().write_all(t.as_bytes()).unwrap();
    let mut src = source::open(path.to_str().unwrap()).unwrap();
    let mut batches = 0;
    let info = trace_info(src.as_mut(), |_| batches += 1).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(batches >= 3, "{batches} batches");

    let evs = parse(&t.lines().skip(2).collect::<Vec<_>>().join("\n"));
    assert_eq!(info.accesses, 40_000);
    assert_eq!(info.instructions, simulator_instructions(&evs));
    for tid in [1u32, 2, 3] {
        let mine: Vec<u64> = evs
            .iter()
            .filter_map(|e| match e {
                Event::Access(a) if a.tid == tid => Some(a.icount),
                _ => None,
            })
            .collect();
        let t = &info.threads[&tid];
        assert_eq!((t.first_icount, t.last_icount), (mine.first().copied(), mine.last().copied()));
        assert_eq!(t.instructions, mine.last().unwrap() - mine.first().unwrap() + 1);
    }
    let side_only = &info.threads[&9];
    assert_eq!(
        *side_only,
        ThreadInfo { accesses: 0, side_events: 2, first_icount: None, last_icount: None, instructions: 0 }
    );
    assert_eq!(info.instructions, info.threads.values().map(|t| t.instructions).sum::<u64>());
}
