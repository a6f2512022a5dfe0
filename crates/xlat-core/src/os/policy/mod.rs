//! Policies of the OS model, each behind a small trait, each with the default that models
//! today's Linux, each called by the OS at one place (`docs/os-model.md`):
//!
//! | trait | asked | default | other |
//! |---|---|---|---|
//! | [`PageSizePolicy`] | on a fault, per page of an eager population | `4k` | `thp`, `mosaic` |
//! | [`AllocationTiming`] | when a mapping is created or grows | demand | eager |
//! | [`RangeCreation`] | after pages are mapped or unmapped | none | contiguous |
//! | [`Tiering`] | on every frame allocation | lowest-first | highest-first, interleave |
//! | [`Reclaim`] | when no free block is left | none | fifo |
//! | [`MetadataGranularity`] | when a page-table page is created | page | registry |

mod metadata;
mod pagesize;
mod ranges;
mod reclaim;
mod tiering;
mod timing;

pub use metadata::{MetadataGranularity, PerPage, Registry};
pub use pagesize::{BasePages, Huge1g, MosaicLayout, PageSizePolicy, Thp};
pub use ranges::{ContiguousRanges, NoRanges, RangeCreation};
pub use reclaim::{FifoReclaim, NoReclaim, Reclaim};
pub use tiering::{HighestFirst, Interleave, LowestFirst, Tiering, ZoneOrder};
pub use timing::{AllocationTiming, DemandPaging, EagerPaging};

use crate::config::{
    Allocation, Config, EagerPlacement, MetadataPolicy, Policy, RangePolicy, ReclaimPolicy, TieringPolicy,
};

/// The policies an OS runs with: from the configuration ([`Policies::from_config`]), or any
/// implementations installed from Rust before the run (`Os::with_policies`).
pub struct Policies {
    pub page_size: Box<dyn PageSizePolicy>,
    pub timing: Box<dyn AllocationTiming>,
    pub ranges: Box<dyn RangeCreation>,
    pub tiering: Box<dyn Tiering>,
    pub reclaim: Box<dyn Reclaim>,
    pub metadata: Box<dyn MetadataGranularity>,
}

impl Policies {
    /// The policies `cfg` selects (`os.policy`, `os.allocation`, `os.ranges`, `os.tiering`,
    /// `os.reclaim`, `os.metadata`).
    pub fn from_config(cfg: &Config) -> Policies {
        let o = &cfg.os;
        Policies {
            page_size: match (o.policy, &cfg.layout) {
                (Policy::Base, _) => Box::new(BasePages),
                (Policy::Thp, _) => Box::new(Thp(o.thp)),
                (Policy::Huge1g, _) => Box::new(Huge1g(o.thp)),
                (Policy::Mosaic, Some(l)) => Box::new(MosaicLayout(l.clone())),
                (Policy::Mosaic, None) => Box::new(BasePages),
            },
            timing: match o.allocation {
                Allocation::Demand => Box::new(DemandPaging),
                Allocation::Eager => Box::new(EagerPaging {
                    max_order: o.eager_max_order.unwrap_or(cfg.memory.max_order),
                    aligned: o.eager_placement == EagerPlacement::Aligned,
                    files: o.eager_files,
                    promote: o.eager_promote && o.eager_placement == EagerPlacement::Aligned,
                }),
            },
            ranges: match o.ranges {
                RangePolicy::None => Box::new(NoRanges),
                RangePolicy::Contiguous => Box::new(ContiguousRanges { threshold: o.range_threshold.0 }),
            },
            tiering: match o.tiering {
                TieringPolicy::LowestFirst => Box::new(LowestFirst),
                TieringPolicy::HighestFirst => Box::new(HighestFirst),
                TieringPolicy::Interleave => {
                    Box::new(Interleave::new(cfg.memory.kinds.iter().map(|k| k.frames()).collect()))
                }
            },
            reclaim: match o.reclaim {
                ReclaimPolicy::None => Box::new(NoReclaim),
                ReclaimPolicy::Fifo => Box::new(FifoReclaim::default()),
            },
            metadata: match o.metadata {
                MetadataPolicy::Page => Box::new(PerPage),
                MetadataPolicy::Registry => Box::new(Registry),
            },
        }
    }
}
