//! Miss handlers: what happens when every TLB missed. The [`radix`] hardware walker of x86-64
//! (paging-structure caches, then one load per remaining page-table level through the caches),
//! or a [`software`] handler (a trap whose own load of the page-table entry is translated by
//! the TLBs and may miss in turn). Each counts its misses, loads and cycles, and reports them
//! through [`Counters`].
//!
//! A new handler (Mach's software TLB with its STLB, say) is a struct implementing
//! [`MissHandler`], a variant of [`AnyHandler`] and a `walker.kind` value.

mod handler;
pub mod hashed;
pub mod nested;
pub mod radix;
pub mod software;

use crate::mem::backend::Backend;
use crate::mem::Caches;
use crate::mmu::Shape;
use crate::os::{Invalidation, Os, SimError};
use crate::stats::{Counters, Sink};
use crate::units::PageSize;
pub use handler::{MissCx, MissHandler};
pub use hashed::HashedWalker;
pub use nested::NestedWalker;
pub use radix::RadixWalker;
pub use software::SoftwareHandler;
use xlat_trace::SideBody;

/// The handler of a configuration, chosen at run time (the general loop).
pub enum AnyHandler {
    Radix(RadixWalker),
    Software(SoftwareHandler),
    /// Boxed: it holds the host's OS model.
    Nested(Box<NestedWalker>),
    Hashed(Box<HashedWalker>),
}

impl MissHandler for AnyHandler {
    #[inline]
    fn handle<S: Shape, B: Backend>(
        &mut self,
        cx: &mut MissCx<'_, B>,
        r: usize,
        va: u64,
    ) -> Result<(u64, PageSize), SimError> {
        match self {
            AnyHandler::Radix(h) => h.handle::<S, B>(cx, r, va),
            AnyHandler::Software(h) => h.handle::<S, B>(cx, r, va),
            AnyHandler::Nested(h) => h.handle::<S, B>(cx, r, va),
            AnyHandler::Hashed(h) => h.handle::<S, B>(cx, r, va),
        }
    }
    fn misses(&self) -> u64 {
        match self {
            AnyHandler::Radix(h) => h.misses(),
            AnyHandler::Software(h) => h.misses(),
            AnyHandler::Nested(h) => h.misses(),
            AnyHandler::Hashed(h) => h.misses(),
        }
    }
    fn invalidated(&mut self, inval: &[Invalidation]) {
        match self {
            AnyHandler::Radix(h) => h.invalidated(inval),
            AnyHandler::Software(h) => h.invalidated(inval),
            AnyHandler::Nested(h) => h.invalidated(inval),
            AnyHandler::Hashed(h) => h.invalidated(inval),
        }
    }
    fn flush(&mut self) {
        match self {
            AnyHandler::Radix(h) => h.flush(),
            AnyHandler::Software(h) => h.flush(),
            AnyHandler::Nested(h) => h.flush(),
            AnyHandler::Hashed(h) => h.flush(),
        }
    }
    #[inline]
    fn prefetch(&self, os: &Os, caches: &Caches, va: u64) {
        match self {
            AnyHandler::Radix(h) => h.prefetch(os, caches, va),
            AnyHandler::Software(_) => {}
            AnyHandler::Nested(h) => h.prefetch(os, caches, va),
            AnyHandler::Hashed(h) => h.prefetch(os, caches, va),
        }
    }
    fn prefetches(&self) -> bool {
        !matches!(self, AnyHandler::Software(_))
    }
    fn settle(&mut self, caches: &mut Caches) {
        match self {
            AnyHandler::Radix(h) => h.settle(caches),
            AnyHandler::Software(h) => h.settle(caches),
            AnyHandler::Nested(h) => h.settle(caches),
            AnyHandler::Hashed(h) => h.settle(caches),
        }
    }
    fn side(&mut self, body: &SideBody) {
        match self {
            AnyHandler::Radix(h) => h.side(body),
            AnyHandler::Software(h) => h.side(body),
            AnyHandler::Nested(h) => h.side(body),
            AnyHandler::Hashed(h) => h.side(body),
        }
    }
    fn check(&self) -> Result<(), String> {
        match self {
            AnyHandler::Radix(h) => h.check(),
            AnyHandler::Software(h) => h.check(),
            AnyHandler::Nested(h) => h.check(),
            AnyHandler::Hashed(h) => h.check(),
        }
    }
    fn cycles(&self) -> u64 {
        match self {
            AnyHandler::Radix(h) => h.cycles(),
            AnyHandler::Software(h) => h.cycles(),
            AnyHandler::Nested(h) => h.cycles(),
            AnyHandler::Hashed(h) => h.cycles(),
        }
    }
    fn miss_profile(&self) -> Option<Vec<(u64, u64)>> {
        match self {
            AnyHandler::Radix(h) => h.miss_profile(),
            AnyHandler::Software(h) => h.miss_profile(),
            AnyHandler::Nested(h) => h.miss_profile(),
            AnyHandler::Hashed(h) => h.miss_profile(),
        }
    }
    fn walk_log(&self) -> Option<Vec<[u64; 5]>> {
        match self {
            AnyHandler::Nested(h) => h.walk_log(),
            _ => None,
        }
    }
}

impl Counters for AnyHandler {
    fn counters(&self, out: &mut dyn Sink) {
        match self {
            AnyHandler::Radix(h) => h.counters(out),
            AnyHandler::Software(h) => h.counters(out),
            AnyHandler::Nested(h) => h.counters(out),
            AnyHandler::Hashed(h) => h.counters(out),
        }
    }
}
