//! xlat-core: the functional ("partial") simulator of the address-translation path.
//!
//! An OS model ([`os`]: VMAs from the trace's syscalls, a buddy allocator, radix page tables in
//! simulated physical memory, page-size policies), an MMU model ([`mmu`]: TLB hierarchy,
//! paging-structure caches, range TLBs, the miss handlers) and a memory model ([`mem`]: caches
//! the walk loads go through, the memory backends), driven by any [`EventSource`] through the
//! engine ([`sim`]) and producing counters. The designs of the reference documents plug into
//! the engine's seams from the wing [`designs`]; the assembly room ([`assembly`]) picks the copy
//! of the loop their claims need and refuses what none serves.
//!
//! ```
//! use xlat_core::{config::Config, presets, sim};
//! let cfg = Config::from_toml("skylake", presets::get("skylake").unwrap(), &["os.policy=thp".into()]).unwrap();
//! let mut src = xlat_trace::source::open("workload:gups?size=1GiB&accesses=10000").unwrap();
//! let r = sim::simulate(src.as_mut(), "gups", &cfg, |_| {}).unwrap();
//! assert_eq!(r.counters["accesses"], 10000);
//! assert!(r.counters["walker.walks"] <= r.counters["tlb_level1.data.misses"]);
//! ```

pub mod analysis;
pub mod array;
pub mod assembly;
pub mod config;
pub mod designs;
pub mod host;
pub mod mem;
pub mod mmu;
pub mod os;
pub mod pipeline;
pub mod presets;
pub mod sim;
pub mod stats;
pub mod time;
pub mod units;

/// The mosaic layout format (`config::layout`).
pub use config::layout;

pub use config::{Config, ConfigError};
pub use sim::{simulate, simulate_many, SimResult, Simulator};
