//! The integration tests of xlat-trace, one binary (one link, not one per file): each file below is
//! a module; `cargo test --release -p xlat-trace --test integration NAME::` runs one file's tests.

mod blocks;
mod footer;
mod format;
mod info;
mod invariants;
mod text_end;
