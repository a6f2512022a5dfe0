//! Mach 3.0's software-managed TLB (seed 001): the handlers (`mmu/mach/`) hold the machine's
//! only TLB and translate every access themselves.

use super::design::{no_hooks, none, Claims, Design, Handler};

pub const DESIGN: Design = Design {
    name: "[mach]",
    claim: "Mach's software-managed TLB as the miss handler",
    present: |c| c.mach.is_some(),
    claims: |_| Claims { handler: Some(Handler::Mach), ..Claims::default() },
    controllers: none,
    walk_hooks: no_hooks,
};
