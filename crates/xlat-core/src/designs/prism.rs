//! PRISM (seed 004): variable-granularity access and dirty bits per 2MB page, kept in the
//! metadata registry and set by every access to the page: the access observer
//! `mmu/prism.rs`.

use super::design::{no_hooks, none, Claims, Design, Observer};

pub const DESIGN: Design = Design {
    name: "[prism]",
    claim: "PRISM's access observer",
    present: |c| c.prism().is_some(),
    claims: |_| Claims { observer: Some(Observer::Prism), ..Claims::default() },
    controllers: none,
    walk_hooks: no_hooks,
};
