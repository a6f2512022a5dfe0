//! Hashed page tables (`[hashed_pt]`): elastic cuckoo or chained hashing in place of the
//! radix walk (`mmu/walker/hashed.rs`), in the general copy of the loop.

use super::design::{no_hooks, none, Claims, Design, Handler};

pub const DESIGN: Design = Design {
    name: "[hashed_pt]",
    claim: "a hashed page table's lookup",
    present: |c| c.hashed_pt.is_some(),
    claims: |_| Claims { handler: Some(Handler::Hashed), ..Claims::default() },
    controllers: none,
    walk_hooks: no_hooks,
};
