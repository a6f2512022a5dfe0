//! Tiered memory (`memory.kinds` without `[hybrid]`): several memory kinds, pages placed by
//! `os.tiering`, each kind's latency and energy (`mem/backend.rs`).

use super::design::{no_hooks, none, Backend, Claims, Design};

pub const DESIGN: Design = Design {
    name: "memory.kinds",
    claim: "several memory kinds",
    present: |c| !c.memory.kinds.is_empty() && c.hybrid.is_none(),
    claims: |_| Claims { backend: Some(Backend::Kinds), ..Claims::default() },
    controllers: none,
    walk_hooks: no_hooks,
};
