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
//! - [`parallel`]: several configurations over one trace on several threads.
//!
//! [`Simulator`] is the public face: it builds the copy of the loop that the assembly room's
//! plan (`crate::assembly`) names for the configuration's designs, adds their controllers, and
//! dispatches to the copy once per batch.

pub mod engine;
pub mod epoch;
mod parallel;
pub mod result;
pub mod shape;
mod simulator;

pub use crate::mmu::observer;
pub use crate::mmu::walker::radix::TABLE_NAMES;
pub use parallel::simulate_many;
pub use result::{Series, SimResult, SCHEMA, SCHEMA_VERSION};
pub use simulator::{open_source, run, simulate, Error, Simulator};
