//! Round trips and failure modes of the trace format.

use proptest::prelude::*;
use xlat_trace::{
    format, source, text, Access, AccessKind, Batch, Error, Event, Header, Marker, SideBody, Syscall, SyscallKind,
    TraceReader, TraceWriter,
};

fn arb_kind() -> impl Strategy<Value = AccessKind> {
    prop_oneof![Just(AccessKind::Load), Just(AccessKind::Store), Just(AccessKind::IFetch)]
}

fn arb_syscall() -> impl Strategy<Value = Syscall> {
    (0usize..8, any::<[u64; 6]>(), any::<i64>()).prop_map(|(k, mut args, ret)| {
        let kind = SyscallKind::ALL[k];
        for a in args.iter_mut().skip(kind.nargs()) {
            *a = 0;
        }
        Syscall { kind, args, ret }
    })
}

fn arb_marker() -> impl Strategy<Value = Marker> {
    prop_oneof![
        any::<u32>().prop_map(|asid| Marker::ContextSwitch { asid }),
        (any::<u32>(), any::<u64>()).prop_map(|(peer, bytes)| Marker::IpcSend { peer, bytes }),
        (any::<u32>(), any::<u64>()).prop_map(|(peer, bytes)| Marker::IpcRecv { peer, bytes }),
        (any::<u32>(), "[a-z0-9 _-]{0,12}").prop_map(|(id, name)| Marker::Phase { id, name }),
    ]
}

#[derive(Debug, Clone)]
enum Step {
    Access { tid: u32, dic: u64, kind: AccessKind, addr: u64, size: u16 },
    Sys { tid: u32, icount: u64, s: Syscall },
    Mark { tid: u32, icount: u64, m: Marker },
}

fn arb_step() -> impl Strategy<Value = Step> {
    let tid = prop_oneof![Just(1u32), Just(2u32), any::<u32>()];
    let dic = prop_oneof![0u64..8, any::<u32>().prop_map(|x| x as u64)];
    let addr = prop_oneof![any::<u64>(), (0u64..1 << 20).prop_map(|x| 0x7fff_0000_0000 + x * 8)];
    let size = prop_oneof![Just(1u16), Just(8u16), Just(64u16), any::<u16>()];
    prop_oneof![
        8 => (tid.clone(), dic, arb_kind(), addr, size).prop_map(|(tid, dic, kind, addr, size)| Step::Access { tid, dic, kind, addr, size }),
        1 => (tid.clone(), any::<u64>(), arb_syscall()).prop_map(|(tid, icount, s)| Step::Sys { tid, icount, s }),
        1 => (tid, any::<u64>(), arb_marker()).prop_map(|(tid, icount, m)| Step::Mark { tid, icount, m }),
    ]
}

/// Turn steps into events with per-thread non-decreasing instruction counts.
fn events(steps: &[Step]) -> Vec<Event> {
    let mut ic = std::collections::HashMap::<u32, u64>::new();
    steps
        .iter()
        .map(|s| match s.clone() {
            Step::Access { tid, dic, kind, addr, size } => {
                let c = ic.entry(tid).or_insert(0);
                *c = c.saturating_add(dic);
                Event::Access(Access { addr, icount: *c, tid, size, kind })
            }
            Step::Sys { tid, icount, s } => Event::Side { tid, icount, body: SideBody::Syscall(s) },
            Step::Mark { tid, icount, m } => Event::Side { tid, icount, body: SideBody::Marker(m) },
        })
        .collect()
}

fn write(evs: &[Event], batch_len: usize) -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), &Header::new("test")).unwrap();
    for chunk in evs.chunks(batch_len.max(1)) {
        let mut b = Batch::default();
        for e in chunk {
            b.push_event(e.clone());
        }
        w.write_batch(&b).unwrap();
    }
    w.finish().unwrap().0
}

fn read(bytes: &[u8]) -> xlat_trace::Result<Vec<Event>> {
    let mut r = TraceReader::new(bytes, "mem")?;
    let mut out = Vec::new();
    let mut b = Batch::default();
    while r.next_batch(&mut b)? {
        out.extend(b.events());
    }
    Ok(out)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn binary_round_trip(steps in prop::collection::vec(arb_step(), 0..400), batch_len in 1usize..50) {
        let evs = events(&steps);
        let bytes = write(&evs, batch_len);
        prop_assert_eq!(read(&bytes).unwrap(), evs);
    }

    #[test]
    fn text_round_trip(steps in prop::collection::vec(arb_step(), 0..200)) {
        let evs = events(&steps);
        let mut out = Vec::new();
        for e in &evs {
            text::write_event(&mut out, e).unwrap();
        }
        let parsed: Vec<Event> = String::from_utf8(out).unwrap().lines().map(|l| text::parse_event(l).unwrap()).collect();
        prop_assert_eq!(parsed, evs);
    }

    /// Any single flipped byte after the header is detected (never silently different events).
    #[test]
    fn flipped_byte_is_detected(steps in prop::collection::vec(arb_step(), 1..200), at in any::<prop::sample::Index>(), bit in 0u8..8) {
        let evs = events(&steps);
        let mut bytes = write(&evs, 64);
        let i = at.index(bytes.len());
        // Bytes 10-11 are the minor version, which readers accept whatever it is.
        prop_assume!(!(10..12).contains(&i));
        bytes[i] ^= 1 << bit;
        match read(&bytes) {
            Err(_) => {}
            Ok(got) => prop_assert!(false, "flip at {i} of {} gave {} events", bytes.len(), got.len()),
        }
    }

    #[test]
    fn truncation_is_detected(steps in prop::collection::vec(arb_step(), 1..200), at in any::<prop::sample::Index>()) {
        let evs = events(&steps);
        let bytes = write(&evs, 64);
        let cut = at.index(bytes.len());
        prop_assert!(read(&bytes[..cut]).is_err());
    }
}

#[test]
fn empty_wrong_magic_wrong_version() {
    assert!(matches!(TraceReader::new(&b""[..], "x"), Err(Error::Empty(_))));
    assert!(matches!(TraceReader::new(&b"hello world, not a trace"[..], "x"), Err(Error::BadMagic(_))));
    let mut bytes = write(&[], 1);
    bytes[8] = 9; // major version 9
    let e = TraceReader::new(&bytes[..], "x").err().unwrap();
    assert!(matches!(e, Error::Version { major: 9, .. }), "{e}");
    assert!(e.to_string().contains("version 9.0"), "{e}");
}

#[test]
fn backwards_instruction_count_is_rejected() {
    let mut b = Batch::default();
    b.push_access(Access { addr: 1, icount: 10, tid: 1, size: 8, kind: AccessKind::Load });
    b.push_access(Access { addr: 2, icount: 5, tid: 1, size: 8, kind: AccessKind::Load });
    let mut w = TraceWriter::new(Vec::new(), &Header::new("t")).unwrap();
    let e = w.write_batch(&b).unwrap_err();
    assert!(e.to_string().contains("went backwards"), "{e}");
}

#[test]
fn large_batches_split_into_blocks() {
    let mut b = Batch::default();
    let n = format::MAX_BLOCK_ACCESSES + 10;
    for i in 0..n as u64 {
        b.push_access(Access { addr: i * 64, icount: i, tid: 7, size: 8, kind: AccessKind::Store });
    }
    b.push_side(7, n as u64, SideBody::Marker(Marker::Phase { id: 1, name: "end".into() }));
    let mut w = TraceWriter::new(Vec::new(), &Header::new("t")).unwrap();
    w.write_batch(&b).unwrap();
    let (bytes, footer) = w.finish().unwrap();
    assert_eq!(footer.blocks, 2);
    assert_eq!(footer.accesses, n as u64);
    assert_eq!(footer.threads[0].instructions, n as u64);
    assert_eq!(read(&bytes).unwrap(), b.events().collect::<Vec<_>>());
}

fn generate(spec: &str) -> Vec<u8> {
    let mut src = source::open(spec).unwrap();
    let mut w = TraceWriter::new(Vec::new(), src.header()).unwrap();
    let mut b = Batch::default();
    while src.next_batch(&mut b).unwrap() {
        w.write_batch(&b).unwrap();
    }
    w.finish().unwrap().0
}

#[test]
fn workloads_are_deterministic_per_seed() {
    for w in xlat_trace::workload::catalog() {
        let extra = if w.name == "bfs" { "scale=10&" } else { "size=64MiB&" };
        let spec = |seed| format!("workload:{}?{extra}accesses=20000&seed={seed}", w.name);
        let a = generate(&spec(1));
        assert_eq!(a, generate(&spec(1)), "{} is not deterministic", w.name);
        let evs = read(&a).unwrap();
        let n = evs.iter().filter(|e| matches!(e, Event::Access(_))).count();
        assert_eq!(n, 20000, "{} emitted the wrong number of accesses", w.name);
        if !matches!(w.name, "stream" | "stride") {
            assert_ne!(a, generate(&spec(2)), "{} ignores its seed", w.name);
        }
    }
}

#[test]
fn workload_accesses_fall_inside_mapped_memory() {
    for w in xlat_trace::workload::catalog() {
        let extra = if w.name == "bfs" { "scale=12" } else { "size=3GiB" };
        let mut src = source::open(&format!("workload:{}?{extra}&accesses=300000", w.name)).unwrap();
        let mut b = Batch::default();
        let mut maps: Vec<(u64, u64)> = Vec::new();
        let mut heap = (0, 0);
        while src.next_batch(&mut b).unwrap() {
            for e in b.events() {
                match e {
                    Event::Side { body: SideBody::Syscall(s), .. } if s.kind == SyscallKind::Mmap => {
                        maps.push((s.ret as u64, s.ret as u64 + s.args[1]))
                    }
                    Event::Side { body: SideBody::Syscall(s), .. } if s.kind == SyscallKind::Brk => {
                        if s.args[0] == 0 {
                            heap = (s.ret as u64, s.ret as u64)
                        } else {
                            heap.1 = s.ret as u64
                        }
                    }
                    Event::Access(a) => {
                        let inside = |(lo, hi): (u64, u64)| a.addr >= lo && a.addr + a.size as u64 <= hi;
                        assert!(
                            maps.iter().any(|&m| inside(m)) || inside(heap),
                            "{}: {:#x} is unmapped",
                            w.name,
                            a.addr
                        );
                    }
                    _ => {}
                }
            }
        }
    }
}

#[test]
fn unknown_workloads_and_parameters_are_rejected() {
    let msg = |s: &str| source::open(s).err().unwrap().to_string();
    assert!(msg("workload:nope").contains("no workload named 'nope'"));
    assert!(msg("workload:gups?sise=1G").contains("no parameter 'sise'"));
    assert!(msg("workload:gups?size=lots").contains("size=lots"));
    assert!(msg("workload:stream?kernel=sum").contains("one of read, copy"));
    assert!(msg("workload:chase?size=1K&elem=2K").contains("elem=2048"));
}
