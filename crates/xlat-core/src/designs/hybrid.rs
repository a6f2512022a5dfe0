//! HSCC's hybrid DRAM/NVM memory and its baselines (seed 003 section IV-A, `[hybrid]` with
//! `migration` "none" or "utility"): the hybrid backend (`mem/hybrid.rs`), utility-based
//! migration (`sim/hybrid.rs`), its counting at the memory controller or in the TLB
//! (`sim/tlbcount.rs`, an access observer).

use super::design::{no_hooks, Backend, Claims, Design, Observer};
use crate::config::{Counting, MigrationPolicy};
use crate::sim::epoch::EpochController;

pub const DESIGN: Design = Design {
    name: "[hybrid]",
    claim: "the hybrid DRAM/NVM memory",
    present: |c| c.hybrid.as_ref().is_some_and(|h| h.migration != MigrationPolicy::Rainbow),
    claims: |c| {
        let h = c.hybrid.as_ref().expect("present");
        let observer = (h.counting == Counting::Tlb).then_some(Observer::TlbCounts);
        Claims { backend: Some(Backend::Hybrid), observer, ..Claims::default() }
    },
    controllers: |c| {
        let h = c.hybrid.as_ref().expect("present");
        match h.migration {
            MigrationPolicy::Utility => {
                vec![Box::new(crate::sim::hybrid::Migration::new(h)) as Box<dyn EpochController>]
            }
            _ => Vec::new(),
        }
    },
    walk_hooks: no_hooks,
};
