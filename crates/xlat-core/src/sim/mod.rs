//! The simulator: the engine that drives the OS, MMU and memory models over a trace's events,
//! and what it reports.
//!
//! - [`engine`]: the hot loop and side events, compiled per copy ([`engine::Variant`]: handler, backend,
//!   observer, staged probe) and per [`shape`];
//! - [`epoch`]: controllers run every N instructions or accesses, and the counter sampling (the
//!   controllers themselves are the designs', in `crate::designs`: Lite's way-disabling, HSCC's
//!   and Rainbow's migration, the contiguity survey);
//! - [`observer`]: code that sees every access (zero-size by default; the trait lives with the
//!   MMU, `crate::mmu::observer`, whose PRISM implements it; re-exported here);
//! - [`result`]: the counters of every component, derived figures, invariants, the result;
//!
//! [`Simulator`], the public face, and [`simulate_many`] are the assembly room's
//! (`crate::assembly`), re-exported here: the simulator is built there, the copy of the loop
//! its plan names for the configuration's designs, with their controllers and walk hooks.

pub mod engine;
pub mod epoch;
pub mod result;
pub mod shape;
pub(crate) mod warm;

pub use crate::assembly::parallel::simulate_many;
pub use crate::assembly::simulator::{open_source, open_window, run, simulate, Error, Simulator};
pub use crate::mmu::observer;
pub use crate::mmu::walker::radix::TABLE_NAMES;
pub use result::{Series, SimResult, SCHEMA, SCHEMA_VERSION};
