//! The simulator: the engine that drives the OS, MMU and memory models over a trace's events,
//! and what it reports.
//!
//! - [`engine`]: the hot loop and side events, compiled per copy ([`Variant`]: handler, backend,
//!   observer, staged probe) and per [`shape`];
//! - [`epoch`]: controllers run every N instructions or accesses, and the counter sampling; the
//!   controllers the designs (`crate::designs`) register: [`contiguity`]
//!   (`sim.contiguity_every`), [`lite`] (Lite's way-disabling of the L1 TLBs), [`hybrid`]
//!   (utility-based migration between DRAM and NVM, HSCC; [`tlbcount`], its counting in the
//!   TLB, is an observer), [`rainbow`] (Rainbow's caching of NVM superpages' hot 4KB pages);
//! - [`observer`]: code that sees every access (zero-size by default);
//! - [`result`]: the counters of every component, derived figures, invariants, the result;
//! - [`parallel`]: several configurations over one trace on several threads.
//!
//! [`Simulator`] is the public face: it builds the copy of the loop that the assembly room's
//! plan (`crate::assembly`) names for the configuration's designs, adds their controllers, and
//! dispatches to the copy once per batch.

pub mod contiguity;
pub mod engine;
pub mod epoch;
pub mod hybrid;
pub mod lite;
pub mod observer;
mod parallel;
pub mod rainbow;
pub mod result;
pub mod shape;
mod simulator;
pub mod tlbcount;

pub use crate::mmu::walker::radix::TABLE_NAMES;
pub use parallel::simulate_many;
pub use result::{Series, SimResult, SCHEMA, SCHEMA_VERSION};
pub use simulator::{open_source, run, simulate, Error, Simulator};
