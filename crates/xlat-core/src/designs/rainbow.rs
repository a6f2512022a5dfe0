//! Rainbow (seed 003 section III, `hybrid.migration = "rainbow"`): NVM superpages whose hot 4KB
//! pages are cached in DRAM without splintering; its memory controller (`mem/rainbow.rs`)
//! sees every translation, and its migration runs every interval (`sim/rainbow.rs`).

use super::design::{no_hooks, Backend, Claims, Design};
use crate::config::MigrationPolicy;
use crate::sim::epoch::EpochController;

pub const DESIGN: Design = Design {
    name: "[hybrid] with migration = \"rainbow\"",
    claim: "Rainbow's memory controller",
    present: |c| c.hybrid.as_ref().is_some_and(|h| h.migration == MigrationPolicy::Rainbow),
    claims: |_| Claims { backend: Some(Backend::Rainbow), no_memo: true, ..Claims::default() },
    controllers: |c| {
        let h = c.hybrid.as_ref().expect("present");
        vec![Box::new(crate::sim::rainbow::RainbowMigration::new(h)) as Box<dyn EpochController>]
    },
    walk_hooks: no_hooks,
};
