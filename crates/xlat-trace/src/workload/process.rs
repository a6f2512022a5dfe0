//! The emulated process: a heap grown with brk and anonymous mappings placed top-down, as glibc
//! and the kernel place them.

use crate::event::{Syscall, SyscallKind};

/// Where the emulated process puts things (x86-64 Linux without ASLR).
const BRK_BASE: u64 = 0x5555_5556_0000;
const MMAP_TOP: u64 = 0x7fff_f7a0_0000;
/// glibc's default M_MMAP_THRESHOLD.
const MMAP_THRESHOLD: u64 = 128 << 10;

/// The emulated process: a heap grown with brk and anonymous mappings placed top-down.
pub struct Proc {
    brk: u64,
    heap_top: u64,
    mmap_next: u64,
    pub icount: u64,
    pub syscalls: Vec<(u64, Syscall)>,
    pub mapped: u64,
}

impl Proc {
    pub(crate) fn new() -> Proc {
        let mut p =
            Proc { brk: BRK_BASE, heap_top: BRK_BASE, mmap_next: MMAP_TOP, icount: 0, syscalls: Vec::new(), mapped: 0 };
        // glibc's first malloc: brk(0), then grow the main arena by 132 KiB.
        p.sys(SyscallKind::Brk, &[0], BRK_BASE as i64);
        p.grow_heap(0x21000);
        p
    }

    fn sys(&mut self, kind: SyscallKind, a: &[u64], ret: i64) {
        let mut args = [0u64; 6];
        args[..a.len()].copy_from_slice(a);
        self.icount += 150; // a syscall and its libc wrapper
        self.syscalls.push((self.icount, Syscall { kind, args, ret }));
    }

    fn grow_heap(&mut self, by: u64) {
        let new = self.heap_top + by;
        self.sys(SyscallKind::Brk, &[new], new as i64);
        self.heap_top = new;
    }

    /// `malloc(len)` as glibc serves it; returns the user pointer.
    pub fn malloc(&mut self, len: u64) -> u64 {
        if len >= MMAP_THRESHOLD {
            let map_len = (len + 16 + 4095) & !4095;
            let addr = self.mmap_next - map_len;
            self.mmap_next = addr;
            self.mapped += map_len;
            // PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, fd -1.
            self.sys(SyscallKind::Mmap, &[0, map_len, 3, 0x22, u64::MAX, 0], addr as i64);
            addr + 16
        } else {
            let p = (self.brk + 16 + 15) & !15;
            self.brk = p + len;
            if self.brk > self.heap_top {
                let need = (self.brk - self.heap_top + 0x20fff) & !0xfff;
                self.grow_heap(need);
            }
            p
        }
    }
}
