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
    write_version(evs, batch_len, format::VERSION_MINOR)
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
    assert!(e.to_string().contains("version 9.2"), "{e}");
    // A newer minor version may hold records this reader cannot skip.
    let mut bytes = write(&[], 1);
    bytes[10] = 99;
    let e = TraceReader::new(&bytes[..], "x").err().unwrap();
    assert!(matches!(e, Error::Version { major: 1, minor: 99, .. }), "{e}");
    assert!(e.to_string().contains("reads versions 1.0 to 1.2"), "{e}");
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
        let extra = match w.name {
            "bfs" => "scale=10&",
            "clientserver" => "servers=3&",
            _ => "size=64MiB&",
        };
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
        // clientserver: its kernel data in kseg2 is the Mach machine's wired memory, never
        // mapped by the trace; with kernel=user every process maps it.
        let extra = match w.name {
            "bfs" => "scale=12",
            "clientserver" => "kernel=user",
            _ => "size=3GiB",
        };
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

// ---------------------------------------------------------------- repeat records (format 1.1)

/// Loops: each repeats a body of `p` accesses (per-access stride, kind, size, instruction
/// delta) for some iterations on one thread; loops are separated by thread switches, syscalls
/// or nothing, and some iterations have one access disturbed.
#[derive(Debug, Clone)]
struct Loop {
    tid: u32,
    body: Vec<(u64, i64, AccessKind, u16, u64)>,
    iters: usize,
    disturb: Option<(usize, u64)>,
    sys_after: bool,
}

fn arb_loop() -> impl Strategy<Value = Loop> {
    let access = (
        0u64..1 << 40,
        prop_oneof![Just(0i64), Just(8i64), Just(-64i64), any::<i32>().prop_map(|x| x as i64)],
        arb_kind(),
        prop_oneof![Just(8u16), Just(4u16), Just(3u16)],
        prop_oneof![0u64..4, Just(9u64)],
    );
    (
        prop_oneof![Just(1u32), Just(2u32)],
        prop::collection::vec(access, 1..20),
        1usize..120,
        prop::option::of((0usize..2000, any::<u64>())),
        any::<bool>(),
    )
        .prop_map(|(tid, body, iters, disturb, sys_after)| Loop { tid, body, iters, disturb, sys_after })
}

fn loop_events(loops: &[Loop]) -> Vec<Event> {
    let mut ic = std::collections::HashMap::<u32, u64>::new();
    let mut evs = Vec::new();
    for l in loops {
        let mut k = 0;
        for it in 0..l.iters {
            for &(base, stride, kind, size, dic) in &l.body {
                let c = ic.entry(l.tid).or_insert(0);
                *c += dic;
                let mut addr = base.wrapping_add((it as i64 * stride) as u64);
                if l.disturb.is_some_and(|(at, _)| at == k) {
                    addr ^= l.disturb.unwrap().1;
                }
                evs.push(Event::Access(Access { addr, icount: *c, tid: l.tid, size, kind }));
                k += 1;
            }
        }
        if l.sys_after {
            let s = Syscall { kind: SyscallKind::Brk, args: [0x1000, 0, 0, 0, 0, 0], ret: 0x1000 };
            evs.push(Event::Side { tid: l.tid, icount: ic[&l.tid], body: SideBody::Syscall(s) });
        }
    }
    evs
}

fn write_version(evs: &[Event], batch_len: usize, minor: u16) -> Vec<u8> {
    let mut w = TraceWriter::with_options(Vec::new(), &Header::new("test"), 3, minor).unwrap();
    for chunk in evs.chunks(batch_len.max(1)) {
        let mut b = Batch::default();
        for e in chunk {
            b.push_event(e.clone());
        }
        w.write_batch(&b).unwrap();
    }
    w.finish().unwrap().0
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Loops written with repeat records (1.1) and without (1.0) read back exactly.
    #[test]
    fn repeating_loops_round_trip(loops in prop::collection::vec(arb_loop(), 1..12), batch_len in prop_oneof![1usize..40, Just(5000usize)]) {
        let evs = loop_events(&loops);
        prop_assert_eq!(read(&write_version(&evs, batch_len, 1)).unwrap(), evs.clone());
        let v10 = write_version(&evs, batch_len, 0);
        prop_assert_eq!(u16::from_le_bytes([v10[10], v10[11]]), 0);
        prop_assert_eq!(read(&v10).unwrap(), evs);
    }
}

/// The raw payload of a block (see docs/trace-format.md) from its columns.
fn payload(n: usize, meta: &[u8], alen: &[u8], addr: &[u8], side: &[u8], n_side: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for v in [n, n_side, meta.len(), addr.len(), 0, 0, side.len()] {
        out.extend_from_slice(&(v as u32).to_le_bytes());
    }
    for col in [meta, alen, addr, side, &[0u8; 8][..]] {
        out.extend_from_slice(col);
    }
    out
}

#[test]
fn repeat_records_are_used_and_checked() {
    // A stream triad, 3 arrays: after the first iteration the block is one repeat record.
    let mut b = Batch::default();
    for i in 0..10_000u64 {
        for (k, a) in [0x1000_0000u64, 0x2000_0000, 0x3000_0000].iter().enumerate() {
            let kind = if k == 2 { AccessKind::Store } else { AccessKind::Load };
            b.push_access(Access { addr: a + 8 * i, icount: 3 * i + k as u64, tid: 7, size: 8, kind });
        }
    }
    let mut raw = Vec::new();
    let mut totals = Vec::new();
    format::BlockEncoder::new(true).encode(&b, 0..b.len(), &[], &mut totals, &mut raw).unwrap();
    let word = |k: usize| u32::from_le_bytes(raw[4 * k..4 * k + 4].try_into().unwrap()) as usize;
    assert_eq!(word(0), 30_000);
    assert_eq!(word(2), 4, "accesses 0..4 in the columns (a repeat needs p + 1 earlier accesses)");
    let mut back = Batch::default();
    assert_eq!(format::decode_block(&raw, &mut back), Ok((30_000, 0)));
    assert_eq!(back.events().collect::<Vec<_>>(), b.events().collect::<Vec<_>>());

    // Hand-made blocks: thread 1 from address 0x100, 8 accesses of +8 in the columns, then a
    // repeat record (tag 3, position, period, length).
    let thread = [0u8, 0, 1, 1, 0x80, 0x02, 0]; // pos 0, tid 1, fresh, addr 0x100, icount 0
    let (meta, alen, addr) = ([3u8 << 2; 8], [1u8; 8], [16u8; 8]); // 8-byte loads, zigzag(+8)
    let block = |n: usize, rec: &[u8]| {
        let side: Vec<u8> = thread.iter().chain(rec).copied().collect();
        payload(n, &meta, &alen, &addr, &side, 0)
    };
    let mut out = Batch::default();
    assert_eq!(format::decode_block(&block(20, &[3, 8, 2, 12]), &mut out), Ok((20, 0)));
    let addrs: Vec<u64> = out.addr.clone();
    assert_eq!(addrs, (0..20).map(|i| 0x108 + 8 * i).collect::<Vec<u64>>());
    for (rec, what) in [
        (&[3u8, 8, 0, 12][..], "period 0"),
        (&[3, 8, 8, 12], "period reaching before the segment"),
        (&[3, 8, 2, 13], "longer than the block"),
        (&[3, 8, 2, 0], "empty"),
        // Period 2^64 - 1 and length 2^64 - 1 (where `period + 1` or `pos + len` would wrap).
        (&[3, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 12], "period wrapping"),
        (&[3, 8, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], "length wrapping"),
        (&[3, 8, 2, 6, 3, 12, 2, 6], "a second repeat inside the first"),
        (&[3, 8, 2], "cut short"),
    ] {
        let e = format::decode_block(&block(20, rec), &mut Batch::default());
        assert!(e.is_err(), "{what}: {e:?}");
    }
    // A damaged access count is refused before anything is reserved for it.
    let e = format::decode_block(&block(u32::MAX as usize, &[3, 8, 2, 12]), &mut Batch::default());
    assert!(e.unwrap_err().contains("more than the"));
    // The columns must hold exactly the accesses the records leave to them.
    assert!(format::decode_block(&block(21, &[3, 8, 2, 12]), &mut Batch::default()).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Any damage to a block payload (past the file's checksums, as a caller of
    /// `decode_block` could pass) is an error or a decode, never a panic or an access
    /// outside the block; the decoder writes repeats through raw pointers, so this matters.
    #[test]
    fn damaged_payloads_never_panic(
        loops in prop::collection::vec(arb_loop(), 1..6),
        hits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let evs = loop_events(&loops);
        let mut b = Batch::default();
        for e in &evs {
            b.push_event(e.clone());
        }
        let mut raw = Vec::new();
        format::BlockEncoder::new(true).encode(&b, 0..b.len(), &b.side, &mut Vec::new(), &mut raw).unwrap();
        let mut back = Batch::default();
        prop_assert!(format::decode_block(&raw, &mut back).is_ok());
        // Half of the damage goes to the side column (thread and repeat records), at the end.
        let side_len = u32::from_le_bytes(raw[24..28].try_into().unwrap()) as usize + 8;
        for (i, (at, v)) in hits.into_iter().enumerate() {
            let k = if i % 2 == 0 { at.index(raw.len()) } else { raw.len() - 1 - at.index(side_len.min(raw.len())) };
            raw[k] = v;
        }
        let mut out = Batch::default();
        if let Ok((n, _)) = format::decode_block(&raw, &mut out) {
            prop_assert_eq!(out.len(), n);
        }
    }
}
