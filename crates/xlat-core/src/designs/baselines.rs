//! Section 4.8's baselines (seed 000): the clustered TLB (`[cluster_tlb]`, `mmu/cluster.rs`)
//! and the direct segment (`[direct_segment]`, `mmu/segment.rs`), both in the miss path.

use super::design::{no_hooks, none, Claims, Design};

pub const CLUSTER: Design = Design {
    name: "[cluster_tlb]",
    claim: "a clustered TLB in the miss path",
    present: |c| c.cluster_tlb().is_some(),
    claims: |_| Claims { miss_path: true, ..Claims::default() },
    controllers: none,
    walk_hooks: no_hooks,
};

pub const SEGMENT: Design = Design {
    name: "[direct_segment]",
    claim: "a direct segment in the miss path",
    present: |c| c.direct_segment().is_some(),
    claims: |_| Claims { miss_path: true, ..Claims::default() },
    controllers: none,
    walk_hooks: no_hooks,
};
