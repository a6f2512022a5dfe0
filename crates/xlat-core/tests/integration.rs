//! The integration tests of xlat-core, one binary (one link, not one per file): each file below is
//! a module; `cargo test --release -p xlat-core --test integration NAME::` runs one file's tests.

mod baselines;
mod common;
mod contiguity;
mod fidelity;
mod fuzz;
mod hashed;
mod hybrid;
mod layouts;
mod lite;
mod mach;
mod mach_frozen;
mod mrc;
mod os_events;
mod prefetch;
mod prism;
mod rainbow;
mod reclaim;
mod regress;
mod seams;
mod shapes;
mod sim;
mod time;
mod virt;
mod window;
