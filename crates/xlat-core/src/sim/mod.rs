//! The simulator: the engine that drives the OS, MMU and memory models over a trace's events,
//! and what it reports.
//!
//! - [`engine`]: the hot loop, side events, the choice of the compiled copy ([`Variant`],
//!   [`shape`]);
//! - [`epoch`]: controllers run every N instructions or accesses, and the counter sampling;
//!   [`contiguity`]: the one the configuration can ask for (`sim.contiguity_every`); [`lite`]:
//!   Lite's way-disabling of the L1 TLBs (`[lite]`, with the [`engine::LiteLoop`] copy);
//!   [`hybrid`]: utility-based migration between DRAM and NVM (HSCC), with [`tlbcount`], its
//!   counting in the TLB; [`rainbow`]: Rainbow's caching of NVM superpages' hot 4KB pages
//!   (with the [`engine::RainbowLoop`] copy);
//! - [`observer`]: code that sees every access (zero-size by default);
//! - [`result`]: the counters of every component, derived figures, invariants, the result;
//! - [`parallel`]: several configurations over one trace on several threads.
//!
//! [`Simulator`] is the public face: it builds the copy of the loop a configuration needs
//! (the plain one, or the general one for range TLBs, a software miss handler, several memory
//! kinds or an observer) and dispatches to it once per batch.

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
