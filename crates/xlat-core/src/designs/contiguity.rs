//! The contiguity survey every `sim.contiguity_every` instructions (`sim/contiguity.rs`): an
//! epoch controller only; it claims no seam.

use super::design::{no_hooks, Claims, Design};
use crate::sim::epoch::EpochController;

pub const DESIGN: Design = Design {
    name: "sim.contiguity_every",
    claim: "contiguity epochs",
    present: |c| c.sim.contiguity_every > 0,
    claims: |_| Claims::default(),
    controllers: |c| {
        let s = &c.sim;
        let e = crate::sim::contiguity::ContiguityEpochs::new(s.contiguity_every, s.contiguity_threshold);
        vec![Box::new(e) as Box<dyn EpochController>]
    },
    walk_hooks: no_hooks,
};
