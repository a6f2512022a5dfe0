//! Event types and the columnar [`Batch`] that every producer and consumer exchanges.
//!
//! Memory accesses dominate every trace, so they are stored as columns (struct of arrays) that the
//! simulator and numpy read directly. The rare other events (syscalls, markers) are *side events*
//! that carry the position in the access columns before which they happened.

use serde::{Deserialize, Serialize};

/// What a memory access does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum AccessKind {
    Load = 0,
    Store = 1,
    IFetch = 2,
}

impl AccessKind {
    #[inline]
    pub fn from_u8(v: u8) -> Option<AccessKind> {
        match v {
            0 => Some(AccessKind::Load),
            1 => Some(AccessKind::Store),
            2 => Some(AccessKind::IFetch),
            _ => None,
        }
    }
    pub fn letter(self) -> char {
        match self {
            AccessKind::Load => 'L',
            AccessKind::Store => 'S',
            AccessKind::IFetch => 'I',
        }
    }
}

/// One memory access, as an owned value (the batch stores these as columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub addr: u64,
    /// Instructions retired by this thread when the access happened (non-decreasing per thread).
    pub icount: u64,
    pub tid: u32,
    /// Bytes accessed (1..=65535).
    pub size: u16,
    pub kind: AccessKind,
}

/// The syscalls that shape an address space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum SyscallKind {
    /// args: addr, length, prot, flags, fd, offset; ret: mapped address or -errno.
    Mmap = 0,
    /// args: addr, length.
    Munmap = 1,
    /// args: requested break; ret: the new break.
    Brk = 2,
    /// args: old_addr, old_length, new_length, flags, new_addr; ret: the new address.
    Mremap = 3,
    /// args: addr, length, advice.
    Madvise = 4,
    /// args: shmid, addr, shmflg, segment size; ret: the attached address.
    Shmat = 5,
    /// args: addr.
    Shmdt = 6,
    /// args: status (exit or exit_group).
    Exit = 7,
}

impl SyscallKind {
    pub const ALL: [SyscallKind; 8] = [
        SyscallKind::Mmap,
        SyscallKind::Munmap,
        SyscallKind::Brk,
        SyscallKind::Mremap,
        SyscallKind::Madvise,
        SyscallKind::Shmat,
        SyscallKind::Shmdt,
        SyscallKind::Exit,
    ];
    pub fn from_u8(v: u8) -> Option<SyscallKind> {
        Self::ALL.get(v as usize).copied()
    }
    pub fn name(self) -> &'static str {
        match self {
            SyscallKind::Mmap => "mmap",
            SyscallKind::Munmap => "munmap",
            SyscallKind::Brk => "brk",
            SyscallKind::Mremap => "mremap",
            SyscallKind::Madvise => "madvise",
            SyscallKind::Shmat => "shmat",
            SyscallKind::Shmdt => "shmdt",
            SyscallKind::Exit => "exit",
        }
    }
    pub fn from_name(name: &str) -> Option<SyscallKind> {
        Self::ALL.iter().copied().find(|k| k.name() == name)
    }
    /// How many of the six argument slots this syscall uses.
    pub fn nargs(self) -> usize {
        match self {
            SyscallKind::Mmap => 6,
            SyscallKind::Munmap => 2,
            SyscallKind::Brk => 1,
            SyscallKind::Mremap => 5,
            SyscallKind::Madvise => 3,
            SyscallKind::Shmat => 4,
            SyscallKind::Shmdt => 1,
            SyscallKind::Exit => 1,
        }
    }
}

/// A syscall with its arguments and result (unused argument slots are zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Syscall {
    pub kind: SyscallKind,
    pub args: [u64; 6],
    pub ret: i64,
}

/// Markers: events that are not memory accesses or syscalls but matter to the translation path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    /// The CPU switched to another address space (process / ASID).
    ContextSwitch { asid: u32 },
    /// An IPC message was sent to `peer` (a task or port id) carrying `bytes`.
    IpcSend { peer: u32, bytes: u64 },
    /// An IPC message was received from `peer`.
    IpcRecv { peer: u32, bytes: u64 },
    /// A user-defined program phase begins (e.g. "warmup", "roi").
    Phase { id: u32, name: String },
}

impl Marker {
    pub fn name(&self) -> &'static str {
        match self {
            Marker::ContextSwitch { .. } => "ctx",
            Marker::IpcSend { .. } => "ipc-send",
            Marker::IpcRecv { .. } => "ipc-recv",
            Marker::Phase { .. } => "phase",
        }
    }
}

/// A non-access event's payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SideBody {
    Syscall(Syscall),
    Marker(Marker),
}

/// A non-access event, placed before access number `pos` of its batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideEvent {
    /// Index into the batch's access columns: the event happened before that access
    /// (`pos == batch.len()` means after the last access).
    pub pos: u32,
    pub tid: u32,
    pub icount: u64,
    pub body: SideBody,
}

/// Any event, for APIs that iterate one event at a time (text form, Python iteration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Access(Access),
    Side { tid: u32, icount: u64, body: SideBody },
}

/// A run of events: accesses as columns plus side events in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    pub addr: Vec<u64>,
    pub icount: Vec<u64>,
    pub tid: Vec<u32>,
    pub size: Vec<u16>,
    /// [`AccessKind`] as `u8`: every value is 0 (load), 1 (store) or 2 (instruction fetch).
    ///
    /// Invariant: whatever fills this column from outside data checks it and rejects any other
    /// value with an error naming where it was found (the trace decoder a block's byte offset,
    /// the text reader a line; the importers only produce kinds from [`AccessKind`]), and the
    /// writer rejects a batch that breaks it. Consumers rely on it: [`Batch::access`] asserts
    /// it, the simulator and `trace-info` read the column as is.
    pub kind: Vec<u8>,
    /// Sorted by `pos`.
    pub side: Vec<SideEvent>,
}

impl Batch {
    pub fn with_capacity(n: usize) -> Batch {
        Batch {
            addr: Vec::with_capacity(n),
            icount: Vec::with_capacity(n),
            tid: Vec::with_capacity(n),
            size: Vec::with_capacity(n),
            kind: Vec::with_capacity(n),
            side: Vec::new(),
        }
    }

    /// Number of accesses.
    #[inline]
    pub fn len(&self) -> usize {
        self.addr.len()
    }

    /// No accesses (`len() == 0`); the batch may still hold side events (see
    /// [`Batch::has_no_events`]).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Neither accesses nor side events.
    #[inline]
    pub fn has_no_events(&self) -> bool {
        self.addr.is_empty() && self.side.is_empty()
    }

    pub fn clear(&mut self) {
        self.addr.clear();
        self.icount.clear();
        self.tid.clear();
        self.size.clear();
        self.kind.clear();
        self.side.clear();
    }

    /// Keep the first `n` accesses and the side events placed before or right after them.
    pub fn truncate(&mut self, n: usize) {
        if self.len() <= n {
            return;
        }
        self.addr.truncate(n);
        self.icount.truncate(n);
        self.tid.truncate(n);
        self.size.truncate(n);
        self.kind.truncate(n);
        self.side.retain(|s| (s.pos as usize) <= n);
    }

    /// Split at access `at`: this batch keeps the accesses before it and the side events placed
    /// before them (position < `at`); the returned batch holds the rest, side events placed
    /// before access `at` (or after this batch's last) first.
    pub fn split_off(&mut self, at: usize) -> Batch {
        let at = at.min(self.len());
        let k = self.side.partition_point(|s| (s.pos as usize) < at);
        let side = self.side.split_off(k).into_iter().map(|s| SideEvent { pos: s.pos - at as u32, ..s }).collect();
        Batch {
            addr: self.addr.split_off(at),
            icount: self.icount.split_off(at),
            tid: self.tid.split_off(at),
            size: self.size.split_off(at),
            kind: self.kind.split_off(at),
            side,
        }
    }

    /// Append `other`'s events after this batch's (side-event positions are rebased).
    pub fn append(&mut self, other: &Batch) {
        let base = self.len() as u32;
        self.addr.extend_from_slice(&other.addr);
        self.icount.extend_from_slice(&other.icount);
        self.tid.extend_from_slice(&other.tid);
        self.size.extend_from_slice(&other.size);
        self.kind.extend_from_slice(&other.kind);
        self.side.extend(other.side.iter().map(|s| SideEvent { pos: s.pos + base, ..s.clone() }));
    }

    /// Append one access. Always inlined: out of line (as `#[inline]` left it) it cost a
    /// workload about 25 instructions an access in argument passing and call overhead.
    #[inline(always)]
    pub fn push_access(&mut self, a: Access) {
        self.addr.push(a.addr);
        self.icount.push(a.icount);
        self.tid.push(a.tid);
        self.size.push(a.size);
        self.kind.push(a.kind as u8);
    }

    /// Append a side event after the accesses pushed so far.
    pub fn push_side(&mut self, tid: u32, icount: u64, body: SideBody) {
        let pos = self.addr.len() as u32;
        self.side.push(SideEvent { pos, tid, icount, body });
    }

    pub fn push_event(&mut self, e: Event) {
        match e {
            Event::Access(a) => self.push_access(a),
            Event::Side { tid, icount, body } => self.push_side(tid, icount, body),
        }
    }

    /// Access `i` as a value. Panics if its kind is not 0, 1 or 2, which only a producer that
    /// broke the invariant of [`Batch::kind`] can cause (no trace, text or import input can).
    #[inline]
    pub fn access(&self, i: usize) -> Access {
        let k = self.kind[i];
        Access {
            addr: self.addr[i],
            icount: self.icount[i],
            tid: self.tid[i],
            size: self.size[i],
            kind: AccessKind::from_u8(k)
                .unwrap_or_else(|| panic!("access {i} of a batch has kind {k}: Batch::kind holds only 0, 1 and 2")),
        }
    }

    /// All events in order.
    pub fn events(&self) -> impl Iterator<Item = Event> + '_ {
        BatchEvents { batch: self, next_access: 0, next_side: 0 }
    }
}

struct BatchEvents<'a> {
    batch: &'a Batch,
    next_access: usize,
    next_side: usize,
}

impl Iterator for BatchEvents<'_> {
    type Item = Event;
    fn next(&mut self) -> Option<Event> {
        if let Some(s) = self.batch.side.get(self.next_side) {
            if s.pos as usize <= self.next_access {
                self.next_side += 1;
                return Some(Event::Side { tid: s.tid, icount: s.icount, body: s.body.clone() });
            }
        }
        if self.next_access < self.batch.len() {
            self.next_access += 1;
            return Some(Event::Access(self.batch.access(self.next_access - 1)));
        }
        None
    }
}
