//! RMM's range TLBs (seed 000 chapter 4): `[[range_tlb]]` entries in the miss path, filled by
//! the range-table walk after a page walk. The range TLB is MMU hardware (`mmu/range.rs`,
//! shared with RMM_Lite); the OS side (eager paging, range tables) is `os.allocation` and
//! `os.ranges`.

use super::design::{no_hooks, none, Claims, Design};

pub const DESIGN: Design = Design {
    name: "[[range_tlb]]",
    claim: "range TLBs in the miss path",
    present: |c| !c.range_tlb.is_empty(),
    claims: |_| Claims { miss_path: true, ..Claims::default() },
    controllers: none,
    walk_hooks: no_hooks,
};
