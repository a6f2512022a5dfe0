//! A MIPS-style software miss handler (`walker.kind = "software"`, `mmu/walker/`): a trap,
//! then a load of the leaf entry from a linear page table whose own translation may miss.

use super::design::{no_hooks, none, Claims, Design, Handler};
use crate::config::WalkerKind;

pub const DESIGN: Design = Design {
    name: "walker.kind = \"software\"",
    claim: "a software miss handler",
    present: |c| c.walker.kind == WalkerKind::Software,
    claims: |_| Claims { handler: Some(Handler::Software), ..Claims::default() },
    controllers: none,
    walk_hooks: no_hooks,
};
