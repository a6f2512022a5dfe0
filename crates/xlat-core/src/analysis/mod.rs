//! Analyses of a trace that need no simulated machine: one pass over the events, their own
//! counts, nothing in the simulator's loop.
//!
//! - [`fidelity`]: how well access and dirty bits kept at G bits per 2MB page approximate the
//!   4KB bits (PRISM, seed 004 Section 3).
//! - [`reclaim`]: eviction under memory pressure with the bits at G per 2MB page (PRISM, seed
//!   004 Section 6.5).

mod clock;
pub mod fidelity;
pub mod reclaim;
