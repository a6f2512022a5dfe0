//! The assembly room: a configuration is built and checked here ([`build`]: parsed and each
//! section checked by `config/`, then the plan), the plan picks the copy of the loop its
//! designs' claims need or refuses what none serves ([`plan`]), and the simulator is built from
//! the plan, each part from its own section, with the designs' controllers and walk hooks
//! ([`simulator`]); several configurations over one trace on several threads ([`parallel`]).

mod build;
pub mod parallel;
pub mod plan;
pub mod simulator;

pub use plan::{plan, Copy, Plan, Serves, COPIES, EXTERNAL};
