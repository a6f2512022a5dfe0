//! Access observers: code that sees every access after its translation (PRISM's sub-page
//! access and dirty bits, `mmu/prism.rs`; HSCC's counting in the TLB, `designs/tlbcount.rs`).
//! The trait lives with the MMU, below the engine (`crate::sim::observer` re-exports it). The
//! simulator's loop is generic over the observer; [`NoObserver`] (the default) is zero-size and its calls
//! compile to nothing, so the plain loop carries no observer code.

use crate::mem::backend::Backend;
use crate::mem::Caches;
use crate::os::Os;
use crate::stats::{Counters, Sink};
use crate::units::PageSize;
use xlat_trace::SideBody;

/// Where an access was translated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Translated {
    /// By a TLB of route level `0` (first level; the memo of first-level hits included) or
    /// deeper (`1`, `2`, ...).
    Level(u8),
    /// By the miss handler (a walk): every TLB level missed.
    Walk,
    /// Not at all: no TLB serves the access kind (the access is counted as `untranslated`).
    Untranslated,
}

/// One access as an observer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed {
    /// The (masked, relocated) virtual address.
    pub va: u64,
    /// The first frame of the page holding `va` (0 when untranslated); see [`Observed::pfn`].
    pub page: u64,
    /// The size of the page (of the TLB entry that translated it: a splintered entry's size).
    pub size: PageSize,
    /// 0 load, 1 store, 2 instruction fetch.
    pub kind: u8,
    pub at: Translated,
    /// Which entry of the memo of first-level hits translated the access (`0..MEMO_HINTS - 1`),
    /// or `MEMO_HINTS - 1` when none did: a host-side key with no simulated meaning. Accesses
    /// of one hint are to one page while its entry lives (a stream's array keeps its entry), so
    /// an observer can keep per-hint state of the page last seen.
    pub hint: u8,
}

impl Observed {
    /// The frame of the 4KB page holding `va` (0 when untranslated).
    #[inline(always)]
    pub fn pfn(&self) -> u64 {
        self.page + ((self.va & (self.size.bytes() - 1)) >> 12)
    }
}

/// The number of values [`Observed::hint`] takes.
pub const MEMO_HINTS: usize = crate::mmu::MEMO + 1;

/// What sees every access. `ACTIVE = false` compiles the calls out.
pub trait AccessObserver: Counters + Send {
    const ACTIVE: bool = true;
    fn access(&mut self, a: &Observed);
    /// The miss handler translated `va` to the page at frame `pfn` (every TLB missed; called before [`access`] sees the
    /// access): the page's size, with the OS model, and the caches and memory the observer's
    /// own loads go through (PRISM's MRE load).
    ///
    /// [`access`]: AccessObserver::access
    #[inline(always)]
    fn walked<B: Backend>(
        &mut self,
        _va: u64,
        _pfn: u64,
        _size: PageSize,
        _os: &Os,
        _caches: &mut Caches,
        _backend: &mut B,
    ) {
    }
    /// A side event (syscall, context switch, IPC, phase) happened before the next access.
    fn side(&mut self, _body: &SideBody) {}
}

/// No observer: the plain loop.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl AccessObserver for NoObserver {
    const ACTIVE: bool = false;
    #[inline(always)]
    fn access(&mut self, _: &Observed) {}
}

impl Counters for NoObserver {
    fn counters(&self, _: &mut dyn Sink) {}
}
