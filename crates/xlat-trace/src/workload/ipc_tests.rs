//! The client/server benchmark (`ipc.rs`): a tiny instance event by event, the chain and the
//! counts of a larger one, the address regions, determinism and bad input.

use super::ipc::{CODE, KMSG, KSEG2, KUSER, MSGBUF, STACK_SIZE, STACK_TOP, TABLE, TABLE_SIZE};
use crate::event::{AccessKind, Batch, Event, Marker, SideBody, SyscallKind};
use crate::source;

fn events(spec: &str) -> Batch {
    let mut src = source::open(spec).unwrap();
    let mut all = Batch::default();
    let mut b = Batch::default();
    while src.next_batch(&mut b).unwrap() {
        all.append(&b);
    }
    all
}

/// One line per event: `tid icount` and what (`I/L/S addr`, `ctx`, `send`, `recv`, `mmap`).
fn render(b: &Batch) -> String {
    let mut out = String::new();
    for e in b.events() {
        let line = match e {
            Event::Access(a) => format!("{} {} {} {:#x}", a.tid, a.icount, a.kind.letter(), a.addr),
            Event::Side { tid, icount, body } => {
                let what = match body {
                    SideBody::Marker(Marker::ContextSwitch { asid }) => format!("ctx {asid}"),
                    SideBody::Marker(Marker::IpcSend { peer, .. }) => format!("send {peer}"),
                    SideBody::Marker(Marker::IpcRecv { peer, .. }) => format!("recv {peer}"),
                    SideBody::Syscall(s) if s.kind == SyscallKind::Mmap => {
                        format!("mmap {:#x} {:#x}", s.args[0], s.args[1])
                    }
                    SideBody::Syscall(_) => "exit".to_string(),
                    SideBody::Marker(m) => m.name().to_string(),
                };
                format!("{tid} {icount} {what}")
            }
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// 1 client, 2 servers, 2 words per IPC, 1 round, a 4-byte message, an 80-instruction IPC path.
/// Seed 2 picks server 1: client -> server 1 (asid 2) -> server 2 (asid 3) -> 2 -> client.
/// By hand: code fetches at the first instruction of each 8-instruction block; a table word
/// costs 4 instructions, a message word 2 (1 for the copy-out store after the receive); the
/// send marker 1; the kernel path's 80 instructions spread as 10 over its 8 accesses (sender's
/// port, thread, thread state, copy-in store to the sender's kernel buffer, the receiver's
/// three, copy-out load); each process maps its four regions after its first switch; the exit
/// comes 100 instructions after the last access's thread's last event.
const TINY: &str = r"1 0 ctx 1
1 0 mmap 0x400000 0x4000
1 0 mmap 0x10000000 0x400000
1 0 mmap 0x20000000 0x2000
1 0 mmap 0x7ffffffee000 0x2000
1 1 I 0x400000
1 4 L 0x102d629c
1 8 L 0x1017485c
1 9 I 0x400020
1 10 S 0x20000000
1 11 send 2
1 21 L 0xffffc00000010000
1 31 L 0xffffc00000011000
1 41 S 0xffffc00000011008
1 51 S 0xffffc00010002000
1 61 L 0xffffc00000020000
1 71 L 0xffffc00000021000
1 81 S 0xffffc00000021008
1 91 L 0xffffc00010002000
2 0 ctx 2
2 0 mmap 0x400000 0x4000
2 0 mmap 0x10000000 0x400000
2 0 mmap 0x20000000 0x2000
2 0 mmap 0x7ffffffee000 0x2000
2 1 recv 1
2 2 I 0x400000
2 2 S 0x20000000
2 4 L 0x20000000
2 8 L 0x1029ff4c
2 10 I 0x400020
2 12 L 0x1033fc84
2 14 S 0x20000000
2 15 send 3
2 25 L 0xffffc00000020000
2 35 L 0xffffc00000021000
2 45 S 0xffffc00000021008
2 55 S 0xffffc00010004000
2 65 L 0xffffc00000030000
2 75 L 0xffffc00000031000
2 85 S 0xffffc00000031008
2 95 L 0xffffc00010004000
3 0 ctx 3
3 0 mmap 0x400000 0x4000
3 0 mmap 0x10000000 0x400000
3 0 mmap 0x20000000 0x2000
3 0 mmap 0x7ffffffee000 0x2000
3 1 recv 2
3 2 I 0x400000
3 2 S 0x20000000
3 4 L 0x20000000
3 8 L 0x100db770
3 10 I 0x400020
3 12 L 0x100a6034
3 14 S 0x20000000
3 15 send 2
3 25 L 0xffffc00000030000
3 35 L 0xffffc00000031000
3 45 S 0xffffc00000031008
3 55 S 0xffffc00010006000
3 65 L 0xffffc00000020000
3 75 L 0xffffc00000021000
3 85 S 0xffffc00000021008
3 95 L 0xffffc00010006000
2 95 ctx 2
2 96 recv 3
2 97 S 0x20000000
2 99 L 0x20000000
2 100 I 0x400040
2 103 L 0x100300f8
2 107 L 0x103e2374
2 108 I 0x400060
2 109 S 0x20000000
2 110 send 1
2 120 L 0xffffc00000020000
2 130 L 0xffffc00000021000
2 140 S 0xffffc00000021008
2 150 S 0xffffc00010004000
2 160 L 0xffffc00000010000
2 170 L 0xffffc00000011000
2 180 S 0xffffc00000011008
2 190 L 0xffffc00010004000
1 91 ctx 1
1 92 recv 2
1 93 S 0x20000000
1 95 L 0x20000000
1 195 exit
";

#[test]
fn tiny_instance_event_by_event() {
    let b = events("workload:clientserver?servers=2&words=2&rounds=1&msg=4&tipc=80&seed=2");
    assert_eq!(render(&b), TINY);
    // Accesses: the client 5, four kernel paths of 8, the three server turns 7 each, the client 2.
    assert_eq!(b.len(), 5 + 4 * 8 + 3 * 7 + 2);
}

#[test]
fn same_seed_same_trace_and_another_seed_another() {
    let spec = "workload:clientserver?clients=2&servers=5&words=9&granularity=medium&accesses=30000&seed=7";
    let (a, b) = (events(spec), events(spec));
    assert_eq!(a, b);
    assert_eq!(a.len(), 30_000);
    assert_ne!(a.addr, events(&spec.replace("seed=7", "seed=8")).addr);
}

/// Whether `addr` lies in one of the user regions of the contract.
fn user_region(addr: u64) -> bool {
    let r = |base: u64, len: u64| (base..base + len).contains(&addr);
    r(CODE, 16 << 10) || r(TABLE, TABLE_SIZE) || r(MSGBUF, 8 << 10) || r(STACK_TOP - STACK_SIZE, STACK_SIZE)
}

#[test]
fn chain_counts_and_regions_of_a_larger_instance() {
    let (clients, servers, words, rounds) = (2u32, 4u32, 7u64, 60u64);
    let b = events(&format!(
        "workload:clientserver?clients={clients}&servers={servers}&words={words}&rounds={rounds}&quantum=5&tipc=500&seed=3"
    ));
    // The processes' order of running, and the accesses between the switches.
    let mut running: Option<u32> = None;
    let mut visits: Vec<u32> = Vec::new();
    let (mut sends, mut recvs, mut table, mut kernel) = (0u64, 0u64, 0u64, 0u64);
    for e in b.events() {
        match e {
            Event::Access(a) => {
                assert_eq!(Some(a.tid), running, "every access is the running process's");
                if a.addr >= KSEG2 {
                    assert!(a.addr < 0xFFFF_E000_0000_0000 && a.kind != AccessKind::IFetch, "{a:?}");
                    kernel += 1;
                } else {
                    assert!(a.addr < 1 << 47 && user_region(a.addr), "{a:?}");
                    table += (TABLE..TABLE + TABLE_SIZE).contains(&a.addr) as u64;
                }
            }
            Event::Side { tid, body: SideBody::Marker(m), .. } => match m {
                Marker::ContextSwitch { asid } => {
                    assert_eq!(tid, asid, "thread id = asid");
                    running = Some(asid);
                    visits.push(asid);
                }
                Marker::IpcSend { .. } => sends += 1,
                Marker::IpcRecv { .. } => recvs += 1,
                Marker::Phase { .. } => panic!("no phases"),
            },
            Event::Side { .. } => {}
        }
    }
    // Every IPC: one send, one receive, words table loads before it, 6 + 2 * 16 kernel accesses.
    assert_eq!((sends, recvs), (sends, sends));
    assert_eq!(table, words * sends);
    assert_eq!(kernel, (6 + 2 * 16) * sends);
    // Rounds: [a switch to the next client when its quantum starts,] servers i..N up and
    // N-1..i down, the switch back to the client.
    let mut c = visits[0];
    let mut k = 1;
    let mut round = 0u64;
    let mut ipcs = 0u64;
    while k < visits.len() {
        if visits[k] <= clients {
            c = visits[k];
            k += 1;
        }
        // Client c runs rounds 5q..5q+4 of its quanta: clients alternate every 5 rounds.
        assert_eq!(c, 1 + ((round / 5) % 2) as u32, "round {round}");
        let i = visits[k] - clients;
        let up: Vec<u32> = (i..=servers).chain((i..servers).rev()).map(|s| s + clients).collect();
        assert_eq!(&visits[k..k + up.len()], &up[..], "round {round}");
        assert_eq!(visits[k + up.len()], c, "round {round} ends at its client");
        ipcs += 2 * (servers - i + 1) as u64;
        k += up.len() + 1;
        round += 1;
    }
    assert_eq!(round, rounds);
    assert_eq!(ipcs, sends);
}

#[test]
fn granularity_adds_its_computation_per_ipc() {
    // Instructions of all threads: the largest count of each thread, summed.
    let total = |g: &str| {
        let b = events(&format!("workload:clientserver?servers=3&words=5&rounds=20&tipc=1000&granularity={g}&seed=5"));
        let mut last = std::collections::HashMap::new();
        let mut ipcs = 0u64;
        for e in b.events() {
            let (tid, ic) = match &e {
                Event::Access(a) => (a.tid, a.icount),
                Event::Side { tid, icount, body } => {
                    if matches!(body, SideBody::Syscall(_)) {
                        continue; // the exit
                    }
                    ipcs += matches!(body, SideBody::Marker(Marker::IpcSend { .. })) as u64;
                    (*tid, *icount)
                }
            };
            let l = last.entry(tid).or_insert(0u64);
            *l = (*l).max(ic);
        }
        (last.values().sum::<u64>(), ipcs)
    };
    let (fine, n) = total("fine");
    let (medium, n2) = total("medium");
    let (coarse, n5) = total("coarse");
    // The same seed picks the same chains; medium computes 2 * tipc more per IPC, coarse 5 *.
    assert_eq!((n, n2, n5), (n, n, n));
    assert_eq!(medium - fine, 2 * 1000 * n);
    assert_eq!(coarse - fine, 5 * 1000 * n);
    // Fine, per IPC: 1000 kernel instructions, 1 for the send, 1 for the receive, 16 copy-out
    // stores (1 each), then the turn before the next IPC: 16 message reads (2 each; not in the
    // client's first turn of a round), 5 words (4 each), 16 message writes (2 each). The client's
    // reading of the reply at the end of a round (16 * 2) makes up for the reads its turn lacks:
    // 1000 + 1 + 1 + 16 + 32 + 20 + 32 = 1102 per IPC.
    assert_eq!(fine, 1102 * n, "{n} IPCs");
}

#[test]
fn kernel_user_moves_the_kernel_data_below_2_47_and_maps_it() {
    let b = events("workload:clientserver?servers=3&words=4&rounds=10&kernel=user&seed=1");
    let window = KUSER..KUSER + KMSG + 5 * 0x2000;
    let mut kernel = 0;
    for e in b.events() {
        if let Event::Access(a) = e {
            assert!(a.addr < 1 << 47);
            kernel += window.contains(&a.addr) as u64;
        }
    }
    assert!(kernel > 0);
    let maps: Vec<(u32, u64, u64)> = b
        .side
        .iter()
        .filter_map(|s| match &s.body {
            SideBody::Syscall(c) if c.kind == SyscallKind::Mmap && c.args[0] == KUSER => {
                Some((s.tid, c.args[0], c.args[1]))
            }
            _ => None,
        })
        .collect();
    // Each of the 4 processes maps the window once: up to the message buffer of asid 5, rounded.
    let len = KMSG + 5 * 0x2000;
    let tids: Vec<u32> = maps.iter().map(|m| m.0).collect();
    let mut sorted = tids.clone();
    sorted.sort();
    assert_eq!(sorted, vec![1, 2, 3, 4]);
    assert!(maps.iter().all(|m| m.2 == len));
}

#[test]
fn bad_input_is_one_sentence() {
    for (q, want) in [
        ("servers=0", "servers=0"),
        ("clients=0", "clients=0"),
        ("words=0", "words=0"),
        ("msg=6", "msg=6 must be a multiple of 4"),
        ("clients=3000&servers=2000", "more than the 4095 processes"),
        ("granularity=huge", "one of fine, medium, coarse"),
    ] {
        let err = source::open(&format!("workload:clientserver?{q}")).err().expect(q).to_string();
        assert!(err.contains(want), "{q}: {err}");
        assert!(!err.contains('\n'), "{err}");
    }
}
