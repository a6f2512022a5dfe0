//! Summary statistics of a trace (`xlat trace-info`): counts, threads, syscalls, footprint.

use crate::error::Result;
use crate::event::{Batch, SideBody, SyscallKind};
use crate::event_source::EventSource;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// One thread's part of a trace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ThreadInfo {
    pub accesses: u64,
    pub side_events: u64,
    /// Instruction counts of the thread's first and last access (`None` without accesses).
    pub first_icount: Option<u64>,
    pub last_icount: Option<u64>,
    /// `last_icount - first_icount + 1`, or 0 without accesses: the simulator's count.
    pub instructions: u64,
}

/// What `xlat trace-info` reports.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TraceInfo {
    pub accesses: u64,
    pub loads: u64,
    pub stores: u64,
    pub ifetches: u64,
    pub bytes_accessed: u64,
    /// Instructions executed, summed over threads, counted as the simulator counts them: from
    /// each thread's first access to its last, both included (`last - first + 1`); side events
    /// do not count, so a thread with side events only adds 0.
    pub instructions: u64,
    pub threads: BTreeMap<u32, ThreadInfo>,
    pub syscalls: BTreeMap<String, u64>,
    pub markers: BTreeMap<String, u64>,
    /// Distinct 4 KiB pages, 2 MiB regions and 1 GiB regions touched.
    pub touched_4k_pages: u64,
    pub touched_2m_regions: u64,
    pub touched_1g_regions: u64,
    /// Bytes of virtual memory mapped (mmap, brk, mremap, shmat) at the end and at the peak.
    pub mapped_bytes: u64,
    pub peak_mapped_bytes: u64,
    pub min_addr: Option<u64>,
    pub max_addr: Option<u64>,
}

/// Non-overlapping half-open intervals.
#[derive(Default)]
struct Intervals {
    map: BTreeMap<u64, u64>,
    total: u64,
}

impl Intervals {
    fn remove(&mut self, lo: u64, hi: u64) {
        if lo >= hi {
            return;
        }
        let hit: Vec<(u64, u64)> =
            self.map.range(..hi).rev().take_while(|(_, &e)| e > lo).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in hit {
            self.map.remove(&s);
            self.total -= e - s;
            if s < lo {
                self.map.insert(s, lo);
                self.total += lo - s;
            }
            if e > hi {
                self.map.insert(hi, e);
                self.total += e - hi;
            }
        }
    }
    fn insert(&mut self, lo: u64, hi: u64) {
        if lo >= hi {
            return;
        }
        self.remove(lo, hi);
        self.map.insert(lo, hi);
        self.total += hi - lo;
    }
}

/// Accumulates [`TraceInfo`] batch by batch in memory bounded by the touched footprint
/// (64 bytes per touched 2 MiB region).
#[derive(Default)]
pub struct InfoBuilder {
    info: TraceInfo,
    pages: HashMap<u64, [u64; 8]>,
    mapped: Intervals,
    brk_base: Option<u64>,
    brk: u64,
    shm: HashMap<u64, u64>,
}

impl InfoBuilder {
    pub fn add(&mut self, b: &Batch) {
        let mut si = 0;
        for i in 0..=b.len() {
            while si < b.side.len() && b.side[si].pos as usize == i {
                self.side(&b.side[si]);
                si += 1;
            }
            if i == b.len() {
                break;
            }
            let (addr, tid, ic) = (b.addr[i], b.tid[i], b.icount[i]);
            match b.kind[i] {
                0 => self.info.loads += 1,
                1 => self.info.stores += 1,
                _ => self.info.ifetches += 1,
            }
            self.info.bytes_accessed += b.size[i] as u64;
            let t = self.info.threads.entry(tid).or_default();
            t.accesses += 1;
            t.first_icount.get_or_insert(ic);
            t.last_icount = Some(t.last_icount.map_or(ic, |l| l.max(ic)));
            let page = addr >> 12;
            self.pages.entry(page >> 9).or_insert([0; 8])[((page >> 6) & 7) as usize] |= 1 << (page & 63);
            self.info.min_addr = Some(self.info.min_addr.map_or(addr, |m| m.min(addr)));
            self.info.max_addr = Some(self.info.max_addr.map_or(addr, |m| m.max(addr)));
        }
        self.info.accesses += b.len() as u64;
    }

    fn side(&mut self, s: &crate::event::SideEvent) {
        // Listed, but its instruction count (if any) comes from its accesses alone.
        self.info.threads.entry(s.tid).or_default().side_events += 1;
        match &s.body {
            SideBody::Marker(m) => *self.info.markers.entry(m.name().to_string()).or_default() += 1,
            SideBody::Syscall(sc) => {
                *self.info.syscalls.entry(sc.kind.name().to_string()).or_default() += 1;
                let a = sc.args;
                let ok = sc.ret >= 0 || (sc.ret as u64) < (-4095i64) as u64;
                if !ok {
                    return; // failed syscall: nothing changed
                }
                let ret = sc.ret as u64;
                let page_up = |x: u64| x.saturating_add(4095) & !4095;
                match sc.kind {
                    SyscallKind::Mmap => self.mapped.insert(ret, ret.saturating_add(page_up(a[1]))),
                    SyscallKind::Munmap => self.mapped.remove(a[0], a[0].saturating_add(page_up(a[1]))),
                    SyscallKind::Mremap => {
                        self.mapped.remove(a[0], a[0].saturating_add(page_up(a[1])));
                        self.mapped.insert(ret, ret.saturating_add(page_up(a[2])));
                    }
                    SyscallKind::Brk => {
                        let base = *self.brk_base.get_or_insert(ret);
                        if self.brk == 0 {
                            self.brk = base;
                        }
                        let (old, new) = (page_up(self.brk), page_up(ret));
                        if new > old {
                            self.mapped.insert(old, new);
                        } else {
                            self.mapped.remove(new, old);
                        }
                        self.brk = ret;
                    }
                    SyscallKind::Shmat => {
                        self.shm.insert(ret, page_up(a[3]));
                        self.mapped.insert(ret, ret.saturating_add(page_up(a[3])));
                    }
                    SyscallKind::Shmdt => {
                        if let Some(len) = self.shm.remove(&a[0]) {
                            self.mapped.remove(a[0], a[0] + len);
                        }
                    }
                    SyscallKind::Madvise | SyscallKind::Exit => {}
                }
                self.info.peak_mapped_bytes = self.info.peak_mapped_bytes.max(self.mapped.total);
            }
        }
    }

    pub fn finish(mut self) -> TraceInfo {
        self.info.touched_4k_pages =
            self.pages.values().map(|w| w.iter().map(|x| x.count_ones() as u64).sum::<u64>()).sum();
        self.info.touched_2m_regions = self.pages.len() as u64;
        let gig: std::collections::HashSet<u64> = self.pages.keys().map(|r| r >> 9).collect();
        self.info.touched_1g_regions = gig.len() as u64;
        self.info.mapped_bytes = self.mapped.total;
        for t in self.info.threads.values_mut() {
            if let (Some(first), Some(last)) = (t.first_icount, t.last_icount) {
                t.instructions = last - first + 1;
            }
        }
        self.info.instructions = self.info.threads.values().map(|t| t.instructions).sum();
        self.info
    }
}

/// Read a whole source and summarise it. `on_batch` sees each batch (for progress reporting).
pub fn trace_info(src: &mut dyn EventSource, mut on_batch: impl FnMut(&dyn EventSource)) -> Result<TraceInfo> {
    let mut b = Batch::default();
    let mut builder = InfoBuilder::default();
    while src.next_batch(&mut b)? {
        builder.add(&b);
        on_batch(src);
    }
    Ok(builder.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn intervals_merge_and_split() {
        let mut iv = Intervals::default();
        iv.insert(0, 100);
        iv.insert(50, 150);
        assert_eq!(iv.total, 150);
        iv.remove(20, 30);
        assert_eq!(iv.total, 140);
        iv.remove(0, 1000);
        assert_eq!(iv.total, 0);
        assert!(iv.map.is_empty());
    }
}
