//! Lite (seed 000 chapter 5): way-disabling of the L1 page TLBs by their hits' LRU distances,
//! an epoch controller (`sim/lite.rs`) over the MMU's LRU-distance counters.

use super::design::{no_hooks, Claims, Design};
use crate::sim::epoch::EpochController;

pub const DESIGN: Design = Design {
    name: "[lite]",
    claim: "first-level hits counted by LRU distance",
    present: |c| c.lite.is_some(),
    claims: |_| Claims { lru_distance: true, ..Claims::default() },
    controllers: |c| {
        let l = c.lite.as_ref().expect("present");
        vec![Box::new(crate::sim::lite::Lite::new(c, l)) as Box<dyn EpochController>]
    },
    walk_hooks: no_hooks,
};
