//! Hashed page tables (`[hashed_pt]`): elastic cuckoo or chained hashing in place of the
//! radix walk (`mmu/walker/hashed.rs`), in a copy of the loop of its own. With `[virt]` the
//! table is the guest's, and nested paging's walker looks it up (`designs/virt.rs`).

use super::design::{no_hooks, none, Claims, Design, Handler};

pub const DESIGN: Design = Design {
    name: "[hashed_pt]",
    claim: "a hashed page table's lookup",
    present: |c| c.hashed_pt.is_some() && c.virt.is_none(),
    claims: |_| Claims { handler: Some(Handler::Hashed), ..Claims::default() },
    controllers: none,
    walk_hooks: no_hooks,
};
