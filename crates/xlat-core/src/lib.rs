//! xlat-core: the functional ("partial") simulator of the address-translation path.
//!
//! An OS model ([`os`]: VMAs from the trace's syscalls, a buddy allocator, radix page tables in
//! simulated physical memory, page-size policies), an MMU model ([`mmu`]: TLB hierarchy,
//! paging-structure caches; the walker is in [`sim`]) and a memory model ([`mem`]: caches the
//! walk loads go through), driven by any [`EventSource`] and producing counters.
//!
//! ```
//! use xlat_core::{config::Config, presets, sim};
//! let cfg = Config::from_toml("skylake", presets::get("skylake").unwrap(), &["os.policy=thp".into()]).unwrap();
//! let mut src = xlat_trace::source::open("workload:gups?size=1GiB&accesses=10000").unwrap();
//! let r = sim::simulate(src.as_mut(), "gups", &cfg, |_| {}).unwrap();
//! assert_eq!(r.counters["accesses"], 10000);
//! assert!(r.counters["walker.walks"] <= r.counters["tlb_level1.data.misses"]);
//! ```

pub mod config;
pub mod layout;
pub mod mem;
pub mod mmu;
pub mod os;
pub mod pipeline;
pub mod presets;
pub mod setassoc;
pub mod sim;

pub use config::{Config, ConfigError};
pub use sim::{simulate, simulate_many, SimResult, Simulator};

use serde::Serialize;
use std::collections::HashSet;
use xlat_trace::{Batch, EventSource, SideBody};

/// Something that consumes events batch by batch.
pub trait Model {
    fn batch(&mut self, b: &Batch);
}

/// Feed every batch of `src` to `model`; `on_batch` is called after each (for progress).
pub fn run<M: Model>(
    src: &mut dyn EventSource,
    model: &mut M,
    mut on_batch: impl FnMut(&dyn EventSource),
) -> xlat_trace::Result<()> {
    let mut b = Batch::default();
    while src.next_batch(&mut b)? {
        model.batch(&b);
        on_batch(src);
    }
    Ok(())
}

/// Counts accesses, syscalls and distinct 4 KiB pages; models no translation hardware.
#[derive(Debug, Default, Serialize)]
pub struct PassThrough {
    pub accesses: u64,
    pub loads: u64,
    pub stores: u64,
    pub ifetches: u64,
    pub syscalls: u64,
    pub markers: u64,
    pub distinct_4k_pages: u64,
    #[serde(skip)]
    pages: HashSet<u64>,
}

impl Model for PassThrough {
    fn batch(&mut self, b: &Batch) {
        self.accesses += b.len() as u64;
        for (&k, &a) in b.kind.iter().zip(&b.addr) {
            match k {
                0 => self.loads += 1,
                1 => self.stores += 1,
                _ => self.ifetches += 1,
            }
            self.pages.insert(a >> 12);
        }
        for s in &b.side {
            match s.body {
                SideBody::Syscall(_) => self.syscalls += 1,
                SideBody::Marker(_) => self.markers += 1,
            }
        }
        self.distinct_4k_pages = self.pages.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn counts_a_workload() {
        let mut src = xlat_trace::source::open("workload:gups?size=4KiB&accesses=1000").unwrap();
        let mut m = PassThrough::default();
        run(src.as_mut(), &mut m, |_| {}).unwrap();
        assert_eq!(m.accesses, 1000);
        assert_eq!(m.loads, 500);
        assert_eq!(m.stores, 500);
        // brk(0), brk(grow) and exit; the 4 KiB table is served from the heap.
        assert_eq!(m.syscalls, 3);
        assert!(m.distinct_4k_pages <= 2);
    }
}
