//! Walk hooks: code that acts after each page walk with the MMU and the OS model (a TLB
//! prefetcher). The engine calls them in the copies of the loop with the staged probe only,
//! after the walk and before the walked page fills the TLBs, so the plain copy carries none.

use super::Mmu;
use crate::os::Os;
use crate::stats::Counters;
use crate::units::PageSize;

pub trait WalkHook: Counters + Send {
    /// The miss handler translated `va` (role `r`: 0 data, 1 instruction fetch) to the page at
    /// frame `pfn` of size `size`: every TLB missed.
    fn walked(&mut self, r: usize, va: u64, pfn: u64, size: PageSize, mmu: &mut Mmu, os: &Os);
}
