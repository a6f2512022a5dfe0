//! The synthetic client/server benchmark of Bala's thesis (section 4.5), for the Mach 3.0
//! software-TLB machine: clients and servers in their own address spaces passing messages along
//! a chain, with Mach's handoff scheduling.
//!
//! One *round* is one iteration of the benchmark: the running client picks a server `i` of the
//! `N` uniformly at random and the request travels the chain
//! `client -> server_i -> server_i+1 -> ... -> server_N` (section 4.5); the replies come back
//! the same way (`server_N -> ... -> server_i -> client`: each hop is a Mach RPC, answered on its
//! reply port; the document names only the forward chain). Every hop is an IPC in which the
//! sender hands the CPU directly to the receiver (handoff scheduling, section 4.5.1). Between two
//! IPCs a process runs one *turn*: it reads the message it received, accesses `words` random
//! 4-byte words of a 4 MB table in its address space (section 4.5.2), computes for
//! `g * tipc` instructions (granularity, section 4.5.3: fine g = 0, medium g = 2, coarse
//! g = 5), and writes the message it sends. With several clients, a client keeps the CPU for
//! `quantum` rounds, then the scheduler switches to the next one (section 4.5.1).
//!
//! The addresses and markers follow the contract in `docs/mach-benchmark.md` ("Addresses"):
//! user regions below 2^47, the kernel's mapped data (IPC structures, kernel message buffers)
//! in kseg2 at `0xFFFF_C000_0000_0000`, and on every IPC: the sender's message writes,
//! `IpcSend`, the kernel's accesses on the IPC path, `ContextSwitch` to the receiver, `IpcRecv`,
//! the receiver's accesses. With `kernel=user` the kernel's mapped data moves to a window below
//! 2^47 that every process maps (`KUSER`), so that the plain x86 machines, whose OS model
//! refuses addresses above the user half, simulate the trace too.

use super::emit::{Emit, Generator};
use super::params::{ParamKind, ParamSpec, Params, WorkloadInfo};
use super::process::Proc;
use super::random::{below, rng, Rng};
use crate::error::Result;
use crate::event::{AccessKind, Marker, SideBody, Syscall, SyscallKind};
use rand::RngCore;

pub const CLIENTSERVER: WorkloadInfo = WorkloadInfo {
    name: "clientserver",
    help: "Mach client/server IPC benchmark (Bala, section 4.5): a client calls a chain of servers, handoff scheduling",
    params: &[
        ParamSpec { name: "clients", kind: ParamKind::Int, default: "1", help: "client processes (asids 1..clients)" },
        ParamSpec {
            name: "servers",
            kind: ParamKind::Int,
            default: "4",
            help: "server processes (asids after the clients); a round calls server_i..server_N",
        },
        ParamSpec { name: "words", kind: ParamKind::Int, default: "30", help: "random table words accessed per IPC" },
        ParamSpec {
            name: "granularity",
            kind: ParamKind::Choice(&["fine", "medium", "coarse"]),
            default: "fine",
            help: "computation between IPCs: fine 0, medium 2, coarse 5 times tipc instructions",
        },
        ParamSpec {
            name: "tipc",
            kind: ParamKind::Int,
            default: "3500",
            help: "instructions of one IPC's kernel path",
        },
        ParamSpec {
            name: "msg",
            kind: ParamKind::Int,
            default: "64",
            help: "message bytes (multiple of 4, up to 8192)",
        },
        ParamSpec {
            name: "quantum",
            kind: ParamKind::Int,
            default: "10",
            help: "rounds a client runs before the next",
        },
        ParamSpec {
            name: "rounds",
            kind: ParamKind::Int,
            default: "0",
            help: "rounds to emit (0: as many as `accesses` asks; otherwise it sets the access count)",
        },
        ParamSpec {
            name: "kernel",
            kind: ParamKind::Choice(&["kseg2", "user"]),
            default: "kseg2",
            help: "kseg2: kernel data at 0xffffc000...; user: in a window below 2^47 mapped by every process",
        },
    ],
};

// ---------------------------------------------------------------- the layout (the contract)

/// Code (the PC region): 16 KB.
pub const CODE: u64 = 0x0000_0000_0040_0000;
pub const CODE_SIZE: u64 = 16 << 10;
/// The 4 MB data table (section 4.5.2: "a 4MB table in its address space").
pub const TABLE: u64 = 0x0000_0000_1000_0000;
pub const TABLE_SIZE: u64 = 4 << 20;
/// The user message buffer: 8 KB.
pub const MSGBUF: u64 = 0x0000_0000_2000_0000;
pub const MSGBUF_SIZE: u64 = 8 << 10;
/// The stack's top (it grows down; 8 KB used).
pub const STACK_TOP: u64 = 0x0000_7FFF_FFFF_0000;
pub const STACK_SIZE: u64 = 8 << 10;
/// The kernel's mapped data (kseg2-like: misses there are L1K misses).
pub const KSEG2: u64 = 0xFFFF_C000_0000_0000;
/// Offset (from the kernel base) of a process's kernel IPC structures: `asid * KIPC_STRIDE`.
pub const KIPC_STRIDE: u64 = 0x1_0000;
/// Offset (from the kernel base) of the kernel message buffers, `asid * KMSG_STRIDE` apart.
pub const KMSG: u64 = 0x1000_0000;
pub const KMSG_STRIDE: u64 = 0x2000;
/// The kernel window below 2^47 used with `kernel=user`.
pub const KUSER: u64 = 0x0000_6000_0000_0000;
/// Processes at most: every process's kernel IPC structures below the message buffers.
pub const MAX_PROCS: u64 = KMSG / KIPC_STRIDE - 1;

/// Instructions per code fetch: one fetch of a 32-byte block of eight 4-byte MIPS instructions.
pub const BLOCK: u64 = 8;
/// Instructions per stack access while computing (one load or store every 32 instructions).
pub const STACK_EVERY: u64 = 32;
/// Instructions per table word (compute a random index, load).
pub const WORD_INSNS: u64 = 4;
/// Instructions per message word copied (load or store, loop).
pub const COPY_INSNS: u64 = 2;

const PAGE: u64 = 4096;
/// mmap flags: MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED.
const MAP_FIXED_ANON: u64 = 0x32;

/// Where a generator's events go: the trace ([`Emit`]) or a counter of accesses (for `rounds`).
trait Sink {
    fn access(&mut self, insns: u64, kind: AccessKind, addr: u64, size: u16);
    fn side(&mut self, insns: u64, body: SideBody);
    fn advance(&mut self, insns: u64);
    fn switch_thread(&mut self, tid: u32);
}

impl Sink for Emit<'_> {
    fn access(&mut self, insns: u64, kind: AccessKind, addr: u64, size: u16) {
        Emit::access(self, insns, kind, addr, size)
    }
    fn side(&mut self, insns: u64, body: SideBody) {
        Emit::side(self, insns, body)
    }
    fn advance(&mut self, insns: u64) {
        Emit::advance(self, insns)
    }
    fn switch_thread(&mut self, tid: u32) {
        Emit::switch_thread(self, tid)
    }
}

/// Counts accesses, drops everything else.
#[derive(Default)]
struct Count(u64);

impl Sink for Count {
    fn access(&mut self, _: u64, _: AccessKind, _: u64, _: u16) {
        self.0 += 1;
    }
    fn side(&mut self, _: u64, _: SideBody) {}
    fn advance(&mut self, _: u64) {}
    fn switch_thread(&mut self, _: u32) {}
}

/// A process's own state: where its PC and stack pointer are, instructions run of its current code block.
#[derive(Clone, Default)]
struct ProcState {
    started: bool,
    pc: u64,
    in_block: u64,
    stack: u64,
}

/// The benchmark's generator (see the module documentation).
#[derive(Clone)]
pub struct ClientServer {
    clients: u32,
    servers: u32,
    words: u64,
    compute: u64,
    tipc: u64,
    msg: u64,
    quantum: u64,
    kbase: u64,
    /// Random server choice per round.
    choose: Rng,
    /// Random table words.
    data: Rng,
    procs: Vec<ProcState>,
    /// The running process (asid = thread id).
    cur: u32,
    /// The client whose quantum runs, and rounds it has run in it.
    client: u32,
    in_quantum: u64,
    round: u64,
    rounds: u64,
}

impl ClientServer {
    pub fn new(p: &Params, proc: &mut Proc) -> Result<ClientServer> {
        let (clients, servers, words) = (p.int("clients"), p.int("servers"), p.int("words"));
        let (tipc, msg, quantum) = (p.int("tipc"), p.int("msg"), p.int("quantum"));
        for (name, v, what) in
            [("clients", clients, "client"), ("servers", servers, "server"), ("words", words, "table word per IPC")]
        {
            if v == 0 {
                return Err(p.error(format!("{name}=0: the benchmark needs at least one {what}")));
            }
        }
        if clients + servers > MAX_PROCS {
            return Err(p.error(format!(
                "clients + servers = {} is more than the {MAX_PROCS} processes the kernel layout holds",
                clients + servers
            )));
        }
        if msg == 0 || !msg.is_multiple_of(4) || msg > MSGBUF_SIZE {
            return Err(p.error(format!("msg={msg} must be a multiple of 4 bytes between 4 and {MSGBUF_SIZE}")));
        }
        if tipc == 0 || quantum == 0 {
            return Err(p.error(format!("tipc={tipc} and quantum={quantum} must be at least 1")));
        }
        let g = match p.str("granularity") {
            "fine" => 0,   // section 4.5.3: "continuously makes IPCs"
            "medium" => 2, // section 4.5.3: "compute for 2 TIpc before making an IPC"
            _ => 5,        // section 4.5.3: "compute for 5 TIPC before making an IPC"
        };
        // The processes are laid out by the contract, not by glibc: no heap, no setup syscalls.
        proc.syscalls.clear();
        proc.icount = 0;
        let nproc = clients + servers;
        proc.mapped = nproc * (CODE_SIZE + TABLE_SIZE + MSGBUF_SIZE + STACK_SIZE);
        let seed = p.int("seed");
        Ok(ClientServer {
            clients: clients as u32,
            servers: servers as u32,
            words,
            compute: g * tipc,
            tipc,
            msg,
            quantum,
            kbase: if p.str("kernel") == "user" { KUSER } else { KSEG2 },
            choose: rng(seed, 0x1_5e7e),
            data: rng(seed, 0x2_da7a),
            procs: vec![ProcState::default(); nproc as usize + 1],
            cur: 0,
            client: 1,
            in_quantum: 0,
            round: 0,
            rounds: p.int("rounds"),
        })
    }

    /// Thread ids (= asids) of the processes: clients first, then servers.
    pub fn threads(&self) -> Vec<u32> {
        (1..=self.clients + self.servers).collect()
    }

    /// With `rounds` set: the number of accesses of that many rounds (the trace's length).
    pub fn accesses_for_rounds(&self) -> Option<u64> {
        if self.rounds == 0 {
            return None;
        }
        let mut g = self.clone();
        let mut c = Count::default();
        for _ in 0..self.rounds {
            g.one_round(&mut c);
        }
        Some(c.0)
    }

    /// The kernel's IPC structures of process `asid` (port, thread, task: 2 pages).
    pub fn kipc(&self, asid: u32) -> u64 {
        self.kbase + asid as u64 * KIPC_STRIDE
    }
    /// The kernel message buffer of process `asid`.
    pub fn kmsg(&self, asid: u32) -> u64 {
        self.kbase + KMSG + asid as u64 * KMSG_STRIDE
    }
    /// Bytes of the kernel window mapped in each process with `kernel=user`.
    fn kwindow(&self) -> u64 {
        (KMSG + (self.clients + self.servers + 1) as u64 * KMSG_STRIDE).next_multiple_of(PAGE)
    }

    fn mmap<S: Sink>(&self, out: &mut S, addr: u64, len: u64, prot: u64) {
        let args = [addr, len, prot, MAP_FIXED_ANON, u64::MAX, 0];
        out.side(0, SideBody::Syscall(Syscall { kind: SyscallKind::Mmap, args, ret: addr as i64 }));
    }

    /// The CPU switches to process `asid` (its thread runs); on its first run, it maps its
    /// regions (and the kernel window with `kernel=user`).
    fn switch<S: Sink>(&mut self, out: &mut S, asid: u32) {
        out.switch_thread(asid);
        out.side(0, SideBody::Marker(Marker::ContextSwitch { asid }));
        self.cur = asid;
        let st = &mut self.procs[asid as usize];
        if !st.started {
            st.started = true;
            self.mmap(out, CODE, CODE_SIZE, 5); // PROT_READ | PROT_EXEC
            self.mmap(out, TABLE, TABLE_SIZE, 3); // PROT_READ | PROT_WRITE
            self.mmap(out, MSGBUF, MSGBUF_SIZE, 3);
            self.mmap(out, STACK_TOP - STACK_SIZE, STACK_SIZE, 3);
            if self.kbase == KUSER {
                self.mmap(out, KUSER, self.kwindow(), 3);
            }
        }
    }

    /// `insns` instructions of the running process, with a code fetch at the first instruction
    /// of every block of [`BLOCK`]; returns the instructions after the last fetch (to be
    /// charged to the next event).
    fn run<S: Sink>(&mut self, out: &mut S, insns: u64) -> u64 {
        let st = &mut self.procs[self.cur as usize];
        let (mut left, mut pending) = (insns, 0);
        while left > 0 {
            if st.in_block == BLOCK {
                st.in_block = 0;
            }
            if st.in_block == 0 {
                out.access(pending + 1, AccessKind::IFetch, CODE + st.pc, 32);
                st.pc = (st.pc + 32) % CODE_SIZE;
                (pending, left, st.in_block) = (0, left - 1, 1);
                continue;
            }
            let take = left.min(BLOCK - st.in_block);
            st.in_block += take;
            pending += take;
            left -= take;
        }
        pending
    }

    /// A user access of the running process `insns` instructions on, after the code fetches of
    /// the instruction blocks passed on the way.
    fn user<S: Sink>(&mut self, out: &mut S, insns: u64, kind: AccessKind, addr: u64, size: u16) {
        let left = self.run(out, insns);
        out.access(left, kind, addr, size);
    }

    /// One turn of the running process between a receive and a send: read the message, touch
    /// `words` random table words, compute, write the message.
    fn turn<S: Sink>(&mut self, out: &mut S, read: bool) {
        let m = self.msg / 4;
        if read {
            for k in 0..m {
                self.user(out, COPY_INSNS, AccessKind::Load, MSGBUF + 4 * k, 4);
            }
        }
        for _ in 0..self.words {
            let w = below(self.data.next_u64(), TABLE_SIZE / 4);
            self.user(out, WORD_INSNS, AccessKind::Load, TABLE + 4 * w, 4);
        }
        for _ in 0..self.compute / STACK_EVERY {
            let st = &mut self.procs[self.cur as usize];
            let off = 8 + 8 * (st.stack % (STACK_SIZE / 8 - 1));
            let kind = if st.stack.is_multiple_of(2) { AccessKind::Store } else { AccessKind::Load };
            st.stack += 1;
            self.user(out, STACK_EVERY, kind, STACK_TOP - off, 8);
        }
        let left = self.run(out, self.compute % STACK_EVERY);
        out.advance(left);
        for k in 0..m {
            self.user(out, COPY_INSNS, AccessKind::Store, MSGBUF + 4 * k, 4);
        }
    }

    /// One IPC from the running process to `to`: the kernel path in the sender's context
    /// (its IPC structures, copy-in to its kernel message buffer, the receiver's structures,
    /// copy-out from the kernel buffer), the handoff, the copy-out's stores into the receiver's
    /// message buffer.
    fn ipc<S: Sink>(&mut self, out: &mut S, to: u32) {
        let from = self.cur;
        out.side(1, SideBody::Marker(Marker::IpcSend { peer: to, bytes: self.msg }));
        let m = self.msg / 4;
        let (ks, kr, kmsg) = (self.kipc(from), self.kipc(to), self.kmsg(from));
        let mut path: Vec<(AccessKind, u64, u16)> = Vec::with_capacity(6 + 2 * m as usize);
        path.push((AccessKind::Load, ks, 8)); // sender's port
        path.push((AccessKind::Load, ks + PAGE, 8)); // sender's thread
        path.push((AccessKind::Store, ks + PAGE + 8, 8)); // sender's thread state: waiting
        path.extend((0..m).map(|k| (AccessKind::Store, kmsg + 4 * k, 4))); // copy-in
        path.push((AccessKind::Load, kr, 8)); // receiver's port
        path.push((AccessKind::Load, kr + PAGE, 8)); // receiver's thread
        path.push((AccessKind::Store, kr + PAGE + 8, 8)); // receiver's thread state: running
        path.extend((0..m).map(|k| (AccessKind::Load, kmsg + 4 * k, 4))); // copy-out
                                                                          // The path's instructions spread over its accesses (the first takes the remainder).
        let n = path.len() as u64;
        let each = self.tipc / n;
        for (i, &(kind, addr, size)) in path.iter().enumerate() {
            let insns = if i == 0 { each + self.tipc % n } else { each };
            out.access(insns, kind, addr, size);
        }
        self.switch(out, to);
        out.side(1, SideBody::Marker(Marker::IpcRecv { peer: from, bytes: self.msg }));
        for k in 0..m {
            self.user(out, 1, AccessKind::Store, MSGBUF + 4 * k, 4);
        }
    }

    /// One round: the scheduler's pick of the client (quantum), the chain there and back.
    fn one_round<S: Sink>(&mut self, out: &mut S) {
        if self.in_quantum == self.quantum {
            self.in_quantum = 0;
            self.client = self.client % self.clients + 1;
        }
        if self.cur != self.client {
            self.switch(out, self.client);
        }
        self.in_quantum += 1;
        let n = self.servers;
        let i = 1 + below(self.choose.next_u64(), n as u64) as u32;
        let c = self.clients;
        // Forward: client -> server_i -> ... -> server_N.
        self.turn(out, false);
        for k in i..=n {
            self.ipc(out, c + k);
            self.turn(out, true);
        }
        // Back: server_N -> ... -> server_i -> client (server_N's turn was its last above).
        for k in (i..n).rev() {
            self.ipc(out, c + k);
            self.turn(out, true);
        }
        self.ipc(out, self.client);
        let m = self.msg / 4;
        for k in 0..m {
            self.user(out, COPY_INSNS, AccessKind::Load, MSGBUF + 4 * k, 4);
        }
        self.round += 1;
    }
}

impl Generator for ClientServer {
    fn fill(&mut self, e: &mut Emit, want: usize) {
        let start = e.len();
        while e.len() - start < want {
            self.one_round(e);
        }
    }
}
