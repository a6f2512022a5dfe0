//! The xlat trace format, version 1 (see `docs/trace-format.md` for the byte-level description).
//!
//! A file is a header (magic, version, JSON), a sequence of independently decodable blocks, and an
//! end record (JSON footer with totals). Each block is one zstd frame (with its content checksum)
//! holding the accesses as columns: one meta byte per access (kind, size code, small instruction
//! delta), per-thread zigzag address deltas as varints, escaped instruction deltas and sizes, and
//! the side events with their positions. Delta state is reset at every block so blocks stand alone.
//!
//! [`header`] holds what the file around the blocks needs (magic, versions, limits, the JSON
//! header and footer); [`block`] the payload layout that the [`encode`]r and the [`decode`]r
//! share. This module only re-exports them, so that `xlat_trace::format::X` names all of it.

pub mod block;
pub mod decode;
pub mod encode;
pub mod header;

pub use block::{MAX_REPEAT_PERIOD, MIN_REPEAT};
pub use decode::{decode_block, decode_block_spans, ThreadSpan};
pub use encode::BlockEncoder;
pub(crate) use header::threads_disagreement;
pub use header::{
    kind_from_letter, Footer, Header, ThreadTotals, END_MAGIC, FORMAT_NAME, MAGIC, MAX_BLOCK_ACCESSES, MAX_BLOCK_RAW,
    SEQ_MINOR, TAG_BLOCK, TAG_END, VERSION_MAJOR, VERSION_MINOR,
};
