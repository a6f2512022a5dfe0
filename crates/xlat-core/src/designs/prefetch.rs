//! A TLB prefetcher (`[tlb_prefetch]`): sequential or distance prefetching into the STLB after
//! each walk. The structure is `mmu/prefetch.rs`; it runs as a walk hook, in the copies of the
//! loop with the staged probe.

use super::design::{none, Claims, Design};
use crate::mmu::hook::WalkHook;
use crate::mmu::prefetch::TlbPrefetcher;

pub const DESIGN: Design = Design {
    name: "[tlb_prefetch]",
    claim: "a TLB prefetcher after each walk",
    present: |c| c.tlb_prefetch.is_some(),
    claims: |_| Claims { miss_path: true, ..Claims::default() },
    controllers: none,
    walk_hooks: |c| {
        let p = c.tlb_prefetch.as_ref().expect("present");
        let tlb = p.target(&c.tlb).expect("validated");
        vec![Box::new(TlbPrefetcher::new(p, tlb)) as Box<dyn WalkHook>]
    },
};
