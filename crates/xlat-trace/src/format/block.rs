//! The layout of a block payload that the encoder and the decoder share (see
//! `docs/trace-format.md`): its fixed header, closing padding, side-record tags, per-thread
//! delta state and meta-byte escapes, and the limits of repeat records.

/// Fixed part of a block payload: seven little-endian u32 counts/lengths.
pub(crate) const PAYLOAD_HEADER: usize = 28;
/// Zero bytes closing every payload, so the decoder may always load 8 bytes at an address delta.
pub(crate) const PAD: usize = 8;

pub(crate) const SIDE_THREAD: u8 = 0;
pub(crate) const SIDE_SYSCALL: u8 = 1;
pub(crate) const SIDE_MARKER: u8 = 2;
/// Version 1.1: the next accesses repeat the pattern of the accesses just before them.
pub(crate) const SIDE_REPEAT: u8 = 3;

/// Per-thread delta state while encoding or decoding one block.
#[derive(Clone, Copy)]
pub(crate) struct ThreadState {
    pub(crate) tid: u32,
    pub(crate) addr: u64,
    pub(crate) icount: u64,
}

/// Longest period a repeat record may have, in accesses.
pub const MAX_REPEAT_PERIOD: usize = 16;
/// Fewest accesses a repeat record covers (shorter runs stay in the columns).
pub const MIN_REPEAT: usize = 16;

/// Whether an access's size or instruction delta is escaped to its own column.
#[inline(always)]
pub(crate) fn escaped(meta: u8) -> bool {
    (meta >> 2) & 7 == 7 || meta >> 5 == 7
}
