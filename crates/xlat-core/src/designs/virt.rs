//! Virtualised translation (`[virt]`): nested paging's two-dimensional walker
//! (`mmu/walker/nested.rs`) with the host's OS model, in the general copy of the loop.

use super::design::{no_hooks, none, Claims, Design, Handler};

pub const DESIGN: Design = Design {
    name: "[virt]",
    claim: "the two-dimensional walker of nested paging",
    present: |c| c.virt.is_some(),
    claims: |_| Claims { handler: Some(Handler::Nested), ..Claims::default() },
    controllers: none,
    walk_hooks: no_hooks,
};
