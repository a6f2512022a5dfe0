//! The generator API with side events and threads ([`Emit`]), on a test-only workload: a client
//! and a server in two address spaces taking turns, with an IPC send, a context switch and an
//! IPC receive at every turn.

use super::emit::{Emit, Generator, Threads, TID};
use super::process::Proc;
use super::synthetic::Synthetic;
use crate::event::{Access, AccessKind, Batch, Event, Marker, SideBody, SideEvent, Syscall, SyscallKind};
use crate::event_source::{EventSource, WORKLOAD_BATCH};
use crate::format::Header;
use crate::reader::TraceReader;
use crate::writer::TraceWriter;

const CLIENT: u32 = 10;
const SERVER: u32 = 20;
const CLIENT_ASID: u32 = 1;
const SERVER_ASID: u32 = 2;
const CLIENT_BASE: u64 = 0x10_0000;
const SERVER_BASE: u64 = 0x20_0000;
const MSG: u64 = 64;

/// Round `r`: the client touches its buffer (1 + r % 4 accesses), sends a request and hands the
/// CPU to the server, which receives it, reads (1 + r % 3 loads), replies and hands it back.
/// Each call emits whole rounds until at least `want + overshoot` accesses, so that the source
/// must carry events over to the next batch.
struct PingPong {
    round: u64,
    overshoot: usize,
}

impl Generator for PingPong {
    fn fill(&mut self, e: &mut Emit, want: usize) {
        let start = e.len();
        if self.round == 0 {
            e.switch_thread(CLIENT);
            e.context_switch(1, CLIENT_ASID);
            e.phase(0, 1, "ping-pong");
        }
        while e.len() - start < want + self.overshoot {
            let r = self.round;
            for k in 0..1 + r % 4 {
                let kind = if k % 2 == 0 { AccessKind::Load } else { AccessKind::Store };
                e.access(2, kind, CLIENT_BASE + 8 * ((4 * r + k) % 512), 8);
            }
            e.ipc_send(5, SERVER, MSG);
            e.switch_thread(SERVER);
            e.context_switch(1, SERVER_ASID);
            e.ipc_recv(3, CLIENT, MSG);
            for k in 0..1 + r % 3 {
                e.load(1, SERVER_BASE + 8 * ((r + k) % 512));
            }
            e.ipc_send(4, CLIENT, MSG);
            e.switch_thread(CLIENT);
            e.context_switch(1, CLIENT_ASID);
            e.ipc_recv(3, SERVER, MSG);
            self.round += 1;
        }
    }
}

fn source(target: u64, overshoot: usize) -> Synthetic {
    Synthetic::new(Header::new("test"), Box::new(PingPong { round: 0, overshoot }), Proc::new(), target)
}

fn batches(src: &mut Synthetic) -> Vec<Batch> {
    let mut out = Vec::new();
    let mut b = Batch::default();
    while src.next_batch(&mut b).unwrap() {
        out.push(b.clone());
    }
    out
}

fn all(batches: &[Batch]) -> Batch {
    let mut a = Batch::default();
    for b in batches {
        a.append(b);
    }
    a
}

/// The events the generator makes in one go, cut after access `target` (side events placed
/// right after it kept), as the source should deliver them before its `exit`.
fn reference(target: usize) -> Batch {
    let mut proc = Proc::new();
    let mut b = Batch::default();
    for (ic, s) in proc.syscalls.drain(..) {
        b.push_side(TID, ic, SideBody::Syscall(s));
    }
    let mut threads = Threads::new(TID, proc.icount);
    PingPong { round: 0, overshoot: 0 }.fill(&mut Emit::new(&mut b, &mut threads), target + 100);
    b.truncate(target);
    b
}

fn side(pos: u32, tid: u32, icount: u64, m: Marker) -> SideEvent {
    SideEvent { pos, tid, icount, body: SideBody::Marker(m) }
}

#[test]
fn first_rounds_have_the_positions_threads_and_counts_emitted() {
    let b = &batches(&mut source(7, 0))[0];
    // Proc::new: glibc's first malloc, brk(0) and brk(+132 KiB), 150 instructions each.
    let brk = |icount, arg, ret: u64| SideEvent {
        pos: 0,
        tid: TID,
        icount,
        body: SideBody::Syscall(Syscall { kind: SyscallKind::Brk, args: [arg, 0, 0, 0, 0, 0], ret: ret as i64 }),
    };
    let heap = 0x5555_5556_0000u64;
    let syscalls = [brk(150, 0, heap), brk(300, heap + 0x21000, heap + 0x21000)];
    let send = |peer| Marker::IpcSend { peer, bytes: MSG };
    let recv = |peer| Marker::IpcRecv { peer, bytes: MSG };
    let ctx = |asid| Marker::ContextSwitch { asid };
    let mut want = syscalls.to_vec();
    want.extend([
        side(0, CLIENT, 1, ctx(CLIENT_ASID)),
        side(0, CLIENT, 1, Marker::Phase { id: 1, name: "ping-pong".into() }),
        // Round 0: client access 0 (count 3), server access 1 (count 5).
        side(1, CLIENT, 8, send(SERVER)),
        side(1, SERVER, 1, ctx(SERVER_ASID)),
        side(1, SERVER, 4, recv(CLIENT)),
        side(2, SERVER, 9, send(CLIENT)),
        side(2, CLIENT, 9, ctx(CLIENT_ASID)),
        side(2, CLIENT, 12, recv(SERVER)),
        // Round 1: client accesses 2, 3 (counts 14, 16), server accesses 4, 5 (14, 15).
        side(4, CLIENT, 21, send(SERVER)),
        side(4, SERVER, 10, ctx(SERVER_ASID)),
        side(4, SERVER, 13, recv(CLIENT)),
        side(6, SERVER, 19, send(CLIENT)),
        side(6, CLIENT, 22, ctx(CLIENT_ASID)),
        side(6, CLIENT, 25, recv(SERVER)),
    ]);
    let a = |tid, icount, kind, addr| Access { addr, icount, tid, size: 8, kind };
    let (l, s) = (AccessKind::Load, AccessKind::Store);
    let accesses = [
        a(CLIENT, 3, l, CLIENT_BASE),
        a(SERVER, 5, l, SERVER_BASE),
        a(CLIENT, 14, l, CLIENT_BASE + 32),
        a(CLIENT, 16, s, CLIENT_BASE + 40),
        a(SERVER, 14, l, SERVER_BASE + 8),
        a(SERVER, 15, l, SERVER_BASE + 16),
    ];
    assert_eq!((0..6).map(|i| b.access(i)).collect::<Vec<_>>(), accesses);
    assert_eq!(&b.side[..want.len()], &want[..]);
}

/// Per thread, counts never decrease; every access belongs to the thread whose address space
/// is current, and lies in that thread's buffer; the markers follow the protocol.
fn check_protocol(b: &Batch) {
    let mut last = std::collections::HashMap::<u32, u64>::new();
    let mut current: Option<(u32, u32)> = None; // (thread, asid) of the last context switch
    let mut markers = Vec::new();
    for e in b.events() {
        let (tid, icount) = match &e {
            Event::Access(a) => (a.tid, a.icount),
            Event::Side { tid, icount, .. } => (*tid, *icount),
        };
        let l = last.entry(tid).or_insert(0);
        assert!(icount >= *l, "thread {tid}'s count went from {l} to {icount}");
        *l = icount;
        match e {
            Event::Access(a) => {
                let (t, asid) = current.expect("no access before the first context switch");
                let base = if asid == CLIENT_ASID { CLIENT_BASE } else { SERVER_BASE };
                assert_eq!(a.tid, t);
                assert!((base..base + 4096).contains(&a.addr), "{a:?} outside address space {asid}");
            }
            Event::Side { tid, body: SideBody::Marker(m), .. } => {
                if let Marker::ContextSwitch { asid } = m {
                    current = Some((tid, asid));
                }
                markers.push((tid, m));
            }
            Event::Side { .. } => {}
        }
    }
    let cycle = [
        (CLIENT, Marker::IpcSend { peer: SERVER, bytes: MSG }),
        (SERVER, Marker::ContextSwitch { asid: SERVER_ASID }),
        (SERVER, Marker::IpcRecv { peer: CLIENT, bytes: MSG }),
        (SERVER, Marker::IpcSend { peer: CLIENT, bytes: MSG }),
        (CLIENT, Marker::ContextSwitch { asid: CLIENT_ASID }),
        (CLIENT, Marker::IpcRecv { peer: SERVER, bytes: MSG }),
    ];
    assert_eq!(markers[0], (CLIENT, Marker::ContextSwitch { asid: CLIENT_ASID }));
    assert!(markers.len() > 20);
    for (k, m) in markers[2..].iter().enumerate() {
        assert_eq!(m, &cycle[k % cycle.len()], "marker {}", k + 2);
    }
}

#[test]
fn batches_carry_side_events_and_threads_across_their_boundaries() {
    // 50,000 accesses: three full batches and a short one, each cut inside a round; then a
    // total that ends right before side events (an IPC send and the handover after it).
    let r = reference(60_000);
    let ends_at_send = (r.side.iter().rev().find(|s| s.pos <= 40_000 && s.pos > 0).unwrap().pos) as u64;
    for target in [50_000, ends_at_send] {
        let bs = batches(&mut source(target, 7));
        let sizes: Vec<usize> = bs.iter().map(|b| b.len()).collect();
        let full = target as usize / WORKLOAD_BATCH;
        assert!(sizes[..full].iter().all(|&n| n == WORKLOAD_BATCH), "{sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), target as usize);
        for b in &bs {
            assert!(
                b.side.windows(2).all(|w| w[0].pos <= w[1].pos) && b.side.iter().all(|s| s.pos as usize <= b.len())
            );
        }
        let mut got = all(&bs);
        // The last event is the exit of the last access's thread, after that thread's last event.
        let exit = got.side.pop().unwrap();
        assert!(matches!(exit.body, SideBody::Syscall(Syscall { kind: SyscallKind::Exit, .. })));
        let t = *got.tid.last().unwrap();
        let last = got.events().filter_map(|e| match e {
            Event::Access(a) if a.tid == t => Some(a.icount),
            Event::Side { tid, icount, .. } if tid == t => Some(icount),
            _ => None,
        });
        assert_eq!((exit.pos as u64, exit.tid, exit.icount), (target, t, last.max().unwrap() + 100));
        assert_eq!(got, reference(target as usize), "target {target}");
        check_protocol(&got);
    }
    assert!(reference(60_000).side.iter().any(|s| s.pos as u64 == ends_at_send));
}

#[test]
fn batches_round_trip_through_the_writer_and_reader() {
    let bs = batches(&mut source(40_000, 7));
    let mut w = TraceWriter::new(Vec::new(), &Header::new("test")).unwrap();
    for b in &bs {
        w.write_batch(b).unwrap();
    }
    let (bytes, footer) = w.finish().unwrap();
    assert_eq!(footer.blocks, bs.len() as u64);
    let mut r = TraceReader::new(&bytes[..], "mem").unwrap();
    let mut back = Vec::new();
    let mut b = Batch::default();
    while r.next_batch(&mut b).unwrap() {
        back.push(b.clone());
    }
    assert_eq!(back, bs);
}

#[test]
fn threads_keep_their_own_counts() {
    let mut t = Threads::new(1, 500);
    t.switch_to(2);
    assert_eq!((t.tid(), t.icount(), t.icount_of(1)), (2, 0, 500));
    let mut b = Batch::default();
    let mut e = Emit::new(&mut b, &mut t);
    e.advance(7);
    e.store(3, 0x40);
    e.switch_thread(1);
    e.load(1, 0x80);
    e.switch_thread(2);
    e.syscall(0, Syscall { kind: SyscallKind::Exit, args: [0; 6], ret: 0 });
    e.advance(5);
    assert_eq!((t.tid(), t.icount(), t.icount_of(1)), (2, 15, 501), "the next call goes on from here");
    assert_eq!((b.tid.clone(), b.icount.clone()), (vec![2, 1], vec![10, 501]));
    assert_eq!((b.side[0].pos, b.side[0].tid, b.side[0].icount), (2, 2, 10));
}
