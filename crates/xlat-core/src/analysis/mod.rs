//! Analyses of a trace that need no simulated machine: one pass over the events, their own
//! counts, nothing in the simulator's loop.
//!
//! - [`fidelity`]: how well access and dirty bits kept at G bits per 2MB page approximate the
//!   4KB bits (PRISM, seed 004 Section 3).
//! - [`reclaim`]: eviction under memory pressure with the bits at G per 2MB page (PRISM, seed
//!   004 Section 6.5).
//! - [`mrc`]: one-pass LRU miss-ratio curves of TLBs of every size (Mattson stack distances
//!   over the OS model's page sizes; per-set distances for set-associative TLBs, [`stack`]).
//! - [`touch`]: touched 4KB pages per 2MB superpage per interval (seed 003 Observation 1).

mod clock;
pub mod fidelity;
pub mod mrc;
mod pagemap;
pub mod reclaim;
mod stack;
pub mod touch;

/// Why an analysis did not run: its configuration (one sentence) or the trace.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Trace(#[from] xlat_trace::Error),
}

/// The checks both analyses make of their epoch and granularities (bits per 2MB page): the
/// problem, in one sentence, if any.
pub(crate) fn check_epoch_and_granularities(epoch: u64, granularities: &[u32]) -> Result<(), String> {
    if epoch == 0 {
        return Err("the epoch must be at least 1 instruction, not 0".into());
    }
    if granularities.is_empty() {
        return Err("give at least one granularity (bits per 2MB page: 1, 2, 4, ..., 512)".into());
    }
    if let Some(g) = granularities.iter().find(|g| !g.is_power_of_two() || **g > 512) {
        return Err(format!(
            "granularity {g} is not a power of two from 1 to 512 (bits per 2MB page: 1, 2, 4, ..., 512)"
        ));
    }
    Ok(())
}
