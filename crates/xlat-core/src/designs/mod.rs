//! The designs wing: every design of the reference documents (and the baselines they compare
//! against) as one entry of [`DESIGNS`], in a file of its own, saying when a configuration has
//! it, what it claims of the engine's seams ([`Claims`]) and which epoch controllers it runs.
//! The structures a design uses stay in their layers (range TLBs in `mmu/`, the hybrid memory
//! in `mem/`); a design file only plugs them in.
//!
//! The assembly room (`crate::assembly`) reads the claims of every design a configuration
//! has, picks the compiled copy of the loop that serves them all, and when none does, names the
//! designs that cannot run together in one sentence: the conflicts are generated from the
//! claims, not listed pair by pair.
//!
//! Adding a design: a file here with its `DESIGN` constant, one line in [`DESIGNS`], its
//! structure in its layer (docs/architecture.md, "Adding a design").

use crate::config::Config;

mod baselines;
pub mod contiguity;
mod design;
mod hashed;
pub mod hybrid;
mod kinds;
pub mod lite;
mod mach;
mod prefetch;
mod prism;
pub mod rainbow;
mod ranges;
mod software;
pub mod tlbcount;
mod virt;

pub use design::{no_hooks, none, Backend, Claims, Design, Handler, Observer};

/// Every design, in the order their controllers are added.
pub const DESIGNS: &[&Design] = &[
    &ranges::DESIGN,
    &baselines::CLUSTER,
    &baselines::SEGMENT,
    &lite::DESIGN,
    &prism::DESIGN,
    &mach::DESIGN,
    &software::DESIGN,
    &virt::DESIGN,
    &hashed::DESIGN,
    &kinds::DESIGN,
    &hybrid::DESIGN,
    &rainbow::DESIGN,
    &contiguity::DESIGN,
    &prefetch::DESIGN,
];

/// The designs `cfg` has.
pub fn present(cfg: &Config) -> impl Iterator<Item = &'static Design> + '_ {
    DESIGNS.iter().copied().filter(move |d| (d.present)(cfg))
}
